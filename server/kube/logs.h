/*
 * logs: follows one container of one pod into the log pipeline (server/ingest/collect.c through
 * struct log_sources), from the container's first line to its last, across dropped streams,
 * container restarts and daemon restarts, without losing or doubling a line.
 *
 * Every request asks for timestamps=true. The durable position stored with the lines is
 * "<ns of the last line's timestamp> <lines with exactly that timestamp already stored>":
 * the API server cuts sinceTime to whole seconds, so a resumed stream repeats the lines of that
 * second, and these are dropped by comparing each line's timestamp with the position (and
 * counting lines of the same instant). After a restart of the container the crashed run's last
 * lines are read with previous=true before the new run is followed. Lines go through
 * core/linesplit.h, so progress bars and very long lines are treated as for local ranks.
 *
 * Threads: the Kubernetes loop thread only. kube_follow_new() blocks on the store to read the
 * stored position.
 */
#ifndef TY_KUBE_LOGS_H
#define TY_KUBE_LOGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/kube/client.h"
#include "server/ingest/logsource.h"

/* What the pod's status says about the followed container. */
struct kube_cstatus {
    bool known; /* the container has a status */
    bool running, terminated, waiting;
    char cur_id[128];  /* the running or terminated instance (containerID, else startedAt) */
    char last_id[128]; /* lastState.terminated's instance, "" when none */
    bool final;        /* pod phase Succeeded or Failed: no more instances */
    bool gone;         /* the pod was deleted */
};

struct kube_follow_options {
    struct kube_client *client;
    struct log_sources sources;
    int64_t job_pk;
    int rank;
    int attempt;
    const char *ns, *pod, *uid, *container; /* copied */
    size_t max_line;
};

struct kube_follow;

struct kube_follow *kube_follow_new(const struct kube_follow_options *o);
/* Frees the follower; the source is marked done when the follower finished (or `force`). */
void kube_follow_free(struct kube_follow *f, bool force);
/* The pod's status changed. */
void kube_follow_update(struct kube_follow *f, const struct kube_cstatus *st);
/* Retries after a backoff; call often. */
void kube_follow_tick(struct kube_follow *f, int64_t now_mono);
/* Every line there will ever be has been read. */
bool kube_follow_done(const struct kube_follow *f);
/* At most this many follow streams at once across all followers (default 1000): an HTTP/1.1
 * API server needs a connection per stream. */
void kube_follow_set_limit(int max_streams);
/* Waiting for a free stream (for metrics). */
int kube_follow_waiting(const struct kube_follow *f);
/* Whether a stream is open (for metrics). */
bool kube_follow_streaming(const struct kube_follow *f);

/* The status of container `name` in pod (for kube_follow_update). */
void kube_cstatus_from_pod(const json_t *pod, const char *name, struct kube_cstatus *out);

/* Position arithmetic, exposed for tests. pos_ts/pos_n describe what is stored; *seen counts
 * lines at pos_ts in the current stream. Returns true when a line at ts is new (and moves the
 * position), false when it was stored before. */
bool kube_log_take(int64_t ts, int64_t *pos_ts, int *pos_n, int *seen);
/* Parses "<RFC3339Nano> <text>" from the API; returns the text's offset or -1. */
long kube_log_parse_ts(const char *line, size_t len, int64_t *ts);

/* Counters across all followers, for /metrics. */
struct kube_log_stats {
    uint64_t lines, duplicates, requests, previous_fetches;
    uint64_t
        push_ns; /* time the loop spent handing lines over (blocked when the pipeline is full) */
};
void kube_log_stats(struct kube_log_stats *out);

#endif
