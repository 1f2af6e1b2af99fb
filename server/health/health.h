/*
 * health: the daemon's live view of each active job's attempt, built on server/diag. One entry
 * per job holds the attempt's diagnosis (every stored log line is fed to it on the collector
 * thread), what the executors said about each rank's placement and end, worker heartbeats and
 * preflight reports, and the stall verdict. It stores what it learns: metric samples as lines
 * arrive, the diagnosis, progress, stall and per-rank health at most once per persist period
 * (store/findings.h), so the API serves everything from the store and a daemon restart loses
 * at most one period.
 *
 * After a daemon restart an adopted attempt's diagnosis starts from the lines that arrive from
 * then on; health_summarize() replays the attempt's stored lines when it needs the whole story
 * (deciding how a failed job ends), so the restart never changes a verdict.
 *
 * Threads: health_lines() runs on the collector thread (and hands the lines to the feeder
 * thread once health_start() ran), health_heartbeat()/health_preflight()
 * and health_metrics() on HTTP threads, everything else on the controller thread. Each entry
 * has its own lock; entries are removed only by health_forget() on the controller thread.
 */
#ifndef TY_HEALTH_H
#define TY_HEALTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "server/diag/diag.h"
#include "store/jobs.h"
#include "store/logs.h"

struct store;
struct health;

struct health_options {
    int64_t persist_ns; /* a changed entry is saved at most this often (default 1 s) */
    bool skip_logs;     /* log lines are not analysed (--diagnosis=off): no replay either */
};

/* The store is borrowed and must outlive h. Caller frees with health_free(). */
struct health *health_new(struct store *st, const struct health_options *o);
void health_free(struct health *h);

/* Starts the feeder thread: from then on health_lines() copies each batch into a queue (at
 * most 64 MiB; the collector waits beyond) and the feeder does the analysis, so diagnosis runs
 * beside ingest instead of in its way. Without it, health_lines() feeds on the caller's
 * thread. */
int health_start(struct health *h, struct err *err);

/* collect_stored.lines: feeds each line to its job's diagnosis and stores the metric samples
 * the progress parser finds. Lines of jobs or attempts without an entry are skipped. */
void health_lines(void *ctx, int64_t job_pk, const struct log_line *lines, size_t n);
/* True while lines of the job wait for (or are in) the feeder: its diagnosis is not up to date
 * with the stored log yet. Any thread. */
bool health_pending(struct health *h, int64_t job_pk);
/* Waits until every queued line has been fed (tests, benchmarks). */
void health_drain(struct health *h);

/* An attempt of job j starts (fresh diagnosis) or, with adopted, was found running after a
 * daemon restart (its earlier lines are replayed by health_summarize when needed). */
void health_attempt(struct health *h, const struct job *j, int attempt, int world_size,
                    bool adopted);
/* Where a rank runs (node may be NULL). */
void health_rank_placed(struct health *h, int64_t pk, int attempt, int rank, const char *node,
                        const char *pod);
/* How a rank ended, and platform events. Ignored for other attempts than the entry's. */
void health_rank_ended(struct health *h, int64_t pk, int attempt, const struct ending *e);
void health_event(struct health *h, int64_t pk, int attempt, const struct ending_event *ev);

/* A summary that owns its strings. */
struct health_summary {
    struct diag_summary s; /* s.node and s.pod point into node and pod below */
    char node[128];
    char pod[128];
};

/* The diagnosis of the job's current attempt, complete: when the daemon restarted during the
 * attempt, the stored lines and rank endings are replayed first. False when there is no entry
 * for the job. */
bool health_summarize(struct health *h, const struct job *j, struct health_summary *out);

/* The attempt ended. Saves its final state (and decision, may be NULL) and waits for COMMIT. */
void health_attempt_done(struct health *h, int64_t pk, const json_t *decision);
/* The job reached a terminal state: saves what changed and drops the entry. */
void health_forget(struct health *h, int64_t pk);

enum health_stall_change { HEALTH_STALL_SAME, HEALTH_STALL_BEGAN, HEALTH_STALL_ENDED };

struct health_stall_report {
    enum health_stall_change change;
    struct stall_result r;
    char message[1024]; /* the verdict and each rank's last line, for the job's timeline */
    int new_stragglers[8];
    size_t nnew_stragglers;
    char straggler_message[256];
};

/* Judges a running job's attempt (stall_check, stall_stragglers) at now; a new stall is also a
 * "hang" finding of the diagnosis. False when there is no entry. */
bool health_stall(struct health *h, int64_t pk, const struct stall_options *o, int64_t now,
                  struct health_stall_report *out);

/* Saves entries that changed and whose last save is older than the persist period. */
void health_tick(struct health *h);

/* Worker reports (HTTP threads). body is borrowed. health_heartbeat records liveness and the
 * worker's step; health_preflight records the report and, when it failed, a PreflightFailed
 * event of the diagnosis. Returns true when the preflight failed, with why in reason_out. */
void health_heartbeat(struct health *h, int64_t pk, int rank, const json_t *body);
bool health_preflight(struct health *h, int64_t pk, int rank, const char *node,
                      const json_t *report, char *reason_out, size_t cap);

/* GPU telemetry of a node (DCGM through Prometheus): steals gpus (array) and conditions
 * (array of strings). Jobs with ranks on the node show it in their health. */
void health_node_gpus(struct health *h, const char *node, json_t *gpus, json_t *conditions);
/* A line about a node that did not come from a rank's log (a GPU error DCGM reported): fed to
 * the diagnosis of every active job with a rank there, as a line of its first rank there. */
void health_node_line(struct health *h, const char *node, const char *text);
/* Nodes of every active job's ranks (caller frees each string and the array). */
size_t health_nodes(struct health *h, char ***out);

/* Prometheus text: per active job its step, total, loss, throughput, stalled flag and
 * findings; plus the registry's counters. */
void health_metrics(struct health *h, struct buf *out);

#endif
