/*
 * controller_end: how a running attempt ends. When a rank fails (or a stall policy or the
 * deadline stops the job) the other ranks are stopped at once, and the end is decided once every
 * rank has ended and the attempt's logs are stored, so the diagnosis has seen every rank's last
 * lines: restart, preempted or failed, by outcome.c; failed (DeadlineExceeded) past the
 * deadline, whatever the ranks did. A job whose ranks all succeeded ends the same way, after its
 * logs are in. A job is in the `ending` set (controller_state.c) from the first of those until
 * its end is decided, at most the stop grace plus SETTLE_EXTRA_NS later. The
 * transitions themselves are controller_state.c's. Controller thread only.
 */
#include "server/control/controller_end.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/health/health.h"
#include "server/control/outcome.h"
#include "store/nodes.h"

#define SETTLE_EXTRA_NS (5 * NS_PER_SEC) /* beyond the stop grace, for the last log lines */

/* The node the diagnosis blames (Xid, ECC...) is this job's verdict, from its own log and exit:
 * recorded as evidence, which marks the node for every job only when the job is an admin's or
 * jobs of several owners agree (store/nodes.h). A mark already there is kept. */
static void mark_node(struct controller *c, const struct job *j, const struct outcome *o)
{
    if (!o->node_fault || !o->node[0])
        return;
    struct node_evidence e = { .node = o->node,
                               .job_id = j->id,
                               .owner_id = j->owner_id,
                               .owner = j->owner,
                               .reason = o->reason,
                               .message = o->message,
                               .source = "diagnosis" };
    struct err err;
    err_init(&err);
    if (store_node_evidence(c->st, &e, NULL, &err) < 0)
        log_warn("controller: evidence against node %s: %s", o->node, err.msg);
    err_release(&err);
}

/* Every rank of the attempt has ended and its logs are in: restart, preempted or failed. */
static void conclude_failure(struct controller *c, struct executor *ex, const struct job *j,
                             const struct spec_view *v)
{
    struct outcome o;
    outcome_decide(c->st, c->opts.health, j, v, &o);
    if (ex->manages_restarts)
        o.restart = false; /* the executor restarts ranks itself */
    if (c->opts.health)
        health_attempt_done(c->opts.health, j->pk, o.decision);
    mark_node(c, j, &o);
    const char *cat = retry_category_name(o.dec.category);
    struct job_event ev[2] = {
        { .type = "restart_decision", .reason = cat, .message = o.dec.reason, .rank = -1 },
        { .type = "node_avoided", .reason = "AvoidNode", .message = o.dec.avoid_node, .rank = -1 },
    };
    size_t nev = o.dec.avoid_node[0] ? 2 : 1;
    if (o.restart)
        controller_restart(c, ex, j, v, o.reason, o.message, o.first_failure, ev, nev);
    else
        controller_finish(c, j, o.state, o.reason, o.message, o.first_failure, ev, nev);
    outcome_release(&o);
}

static void deadline_message(const struct spec_view *v, char *out, size_t size)
{
    snprintf(out, size, "ran longer than deadline_seconds (%lld s)",
             (long long)v->deadline_seconds);
}

static bool logs_pending(struct controller *c, int64_t pk)
{
    return c->opts.logs_pending && c->opts.logs_pending(c->opts.logs_ctx, pk);
}

bool controller_past_deadline(const struct job *j, const struct spec_view *v, int64_t now)
{
    return v->deadline_seconds && j->started_at &&
           now - j->started_at > v->deadline_seconds * NS_PER_SEC;
}

void controller_next_attempt(struct controller *c, struct executor *ex, const struct job *j,
                             const struct spec_view *v, int64_t now)
{
    controller_stop_job(c, ex, j); /* once: what adoption found of the last attempt */
    struct rank_counts n = controller_count_ranks(c, j->pk);
    if (n.terminal < n.total)
        return;
    if (controller_past_deadline(j, v, now)) { /* the backoff outlasted the deadline */
        char msg[128];
        deadline_message(v, msg, sizeof(msg));
        controller_finish(c, j, JOB_FAILED, "DeadlineExceeded", msg, NULL, NULL, 0);
        return;
    }
    /* When the attempt ended, as controller_restart counted it (it knew no rank's end: then
     * about when it committed). */
    int64_t ended = n.last_finished ? n.last_finished : j->updated_at;
    int64_t at = controller_restart_at(c, v, j->attempt + 1, ended);
    if (at > now)
        controller_wake_at(c, clock_mono_ns() + (at - now));
    else
        controller_start_attempt(c, ex, j, v, j->attempt + 1);
}

/* Drives a starting or running job whose ranks are ending (see the top). */
void controller_settle(struct controller *c, struct executor *ex, const struct job *j,
                       const struct spec_view *v)
{
    struct ending_job *e = controller_ending_get(c, j->pk);
    if (ex->manages_restarts && !(e && e->stop))
        return; /* its executor decides from its own objects, unless trainyard stops the job */
    struct rank_counts n = controller_count_ranks(c, j->pk);
    bool all_ok = n.total && n.succeeded == n.total;
    bool failing = n.failed > 0 || (e && e->stop) || (n.terminal == n.total && !all_ok);
    if (!failing && !all_ok)
        return;
    e = controller_ending_add(c, j->pk, false);
    if (failing)
        controller_stop_job(c, ex, j);
    if (n.terminal < n.total)
        return;
    if (logs_pending(c, j->pk) &&
        clock_mono_ns() - e->since < c->opts.stop_grace_ns + SETTLE_EXTRA_NS)
        return;
    if (e->deadline) {
        char msg[128];
        deadline_message(v, msg, sizeof(msg));
        controller_finish(c, j, JOB_FAILED, "DeadlineExceeded", msg, NULL, NULL, 0);
    } else if (failing) {
        conclude_failure(c, ex, j, v);
    } else {
        controller_finish(c, j, JOB_SUCCEEDED, "Completed", "every rank exited with code 0", NULL,
                          NULL, 0);
    }
}

static void stall_event(struct controller *c, const struct job *j, const char *type,
                        const char *reason, int rank, const char *message)
{
    struct job_event e = { .type = type, .reason = reason, .message = message, .rank = rank };
    struct job_update u = { .pk = j->pk, .events = &e, .nevents = 1 };
    controller_commit(c, &u);
}

/* Stall and straggler detection of a running job, and its stall policy. */
void controller_watch(struct controller *c, struct executor *ex, const struct job *j,
                      const struct spec_view *v)
{
    if (!c->opts.health || controller_ending_get(c, j->pk))
        return;
    struct stall_options so;
    outcome_stall_options(v, c->opts.stall_floor_ns, &so);
    struct health_stall_report rep;
    if (!health_stall(c->opts.health, j->pk, &so, clock_now_ns(), &rep))
        return;
    if (rep.nnew_stragglers)
        stall_event(c, j, "straggler", "Straggler", rep.new_stragglers[0], rep.straggler_message);
    if (rep.change == HEALTH_STALL_SAME)
        return;
    bool began = rep.change == HEALTH_STALL_BEGAN;
    stall_event(c, j, began ? "stalled" : "progressing", began ? "Stalled" : "Progressing", -1,
                rep.message);
    c->stalls += began;
    if (c->cb.job_state)
        c->cb.job_state(c->cb.ctx, j->pk, j->state);
    if (began && strcmp(v->on_stall, "none") != 0) {
        controller_ending_add(c, j->pk, true);
        controller_stop_job(c, ex, j);
    }
}

/* The first pass past the deadline marks the job and stops its ranks (an event says so); it
 * fails, DeadlineExceeded, only once every rank has ended, as a cancel completes only then: a
 * `trainyard wait` must not return while the job's processes still run their grace period. */
void controller_deadline(struct controller *c, struct executor *ex, const struct job *j,
                         const struct spec_view *v, int64_t now)
{
    struct ending_job *e = controller_ending_get(c, j->pk);
    if (!e || !e->deadline) {
        controller_ending_add(c, j->pk, true)->deadline = true;
        char msg[128], stopping[192];
        deadline_message(v, msg, sizeof(msg));
        snprintf(stopping, sizeof(stopping), "%s: stopping its ranks", msg);
        if (c->opts.health) {
            struct ending_event ev = {
                .rank = -1, .time_ns = now, .reason = "DeadlineExceeded", .message = msg
            };
            health_event(c->opts.health, j->pk, j->attempt, &ev);
        }
        struct job_event ev = { .type = "deadline_exceeded",
                                .reason = "DeadlineExceeded",
                                .message = stopping,
                                .rank = -1 };
        struct job_update u = { .pk = j->pk, .events = &ev, .nevents = 1 };
        controller_commit(c, &u);
    }
    controller_settle(c, ex, j, v);
}
