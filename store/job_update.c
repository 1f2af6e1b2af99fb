/*
 * store/job_update: the one way a stored job changes after insertion (store_job_update) and the
 * job's event timeline. A state change is checked against the transition table of
 * job/jobstate in the same transaction that applies it, so two writers racing (a cancel
 * and an exit) cannot produce an impossible sequence.
 */
#include "core/clock.h"
#include "store/internal.h"
#include "store/jobs.h"

enum {
    U_EVENT,
    U_STATE_OF,
    U_SET_STATE,
    U_SET_FIELDS,
    U_RANK,
    U_EVENTS,
};

static const char *const sql[] = {
    [U_EVENT] = "INSERT OR IGNORE INTO events"
                " (job_pk, seq, time, type, reason, message, rank, source, ext_id)"
                " VALUES (:pk, (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE job_pk = :pk),"
                /* times never go back in seq order: a report that arrives late (a rank's
                 * exit read after another's) is stamped no earlier than the event before */
                " max(:time, (SELECT coalesce(max(time), 0) FROM events WHERE job_pk = :pk)),"
                " :type, :reason, :message, :rank, :source, :ext_id)",
    [U_STATE_OF] = "SELECT state FROM jobs WHERE pk = :pk",
    [U_SET_STATE] = "UPDATE jobs SET state = :state, reason = :reason, message = :message,"
                    " started_at = CASE WHEN :running AND started_at = 0 THEN :now"
                    "   ELSE started_at END,"
                    " finished_at = CASE WHEN :terminal THEN :now ELSE finished_at END,"
                    " updated_at = :now WHERE pk = :pk",
    [U_SET_FIELDS] = "UPDATE jobs SET"
                     " attempt = CASE WHEN :set_attempt THEN :attempt ELSE attempt END,"
                     " desired = coalesce(:desired, desired),"
                     " first_failure = coalesce(first_failure, :first_failure),"
                     " exec_state = coalesce(:exec_state, exec_state),"
                     " updated_at = :now WHERE pk = :pk",
    [U_RANK] = "UPDATE ranks SET"
               " state = CASE WHEN :f_state THEN :state ELSE state END,"
               " pid = CASE WHEN :f_pid THEN :pid ELSE pid END,"
               " node = CASE WHEN :f_node THEN :node ELSE node END,"
               " pod = CASE WHEN :f_pod THEN :pod ELSE pod END,"
               " exit_code = CASE WHEN :f_exit THEN :exit_code ELSE exit_code END,"
               " signal = CASE WHEN :f_exit THEN :signal ELSE signal END,"
               " restarts = CASE WHEN :f_restarts THEN :restarts ELSE restarts END,"
               " reason = CASE WHEN :f_reason THEN :reason ELSE reason END,"
               " message = CASE WHEN :f_reason THEN :message ELSE message END,"
               " started_at = CASE WHEN :f_started THEN :started_at ELSE started_at END,"
               " finished_at = CASE WHEN :f_finished THEN :finished_at ELSE finished_at END"
               " WHERE job_pk = :pk AND (:rank < 0 OR rank = :rank)",
    [U_EVENTS] = ("SELECT seq, time, type, reason, message, rank, source FROM events"
                  " WHERE job_pk = :pk AND seq > :after ORDER BY seq LIMIT :limit"),
};

#define STMT(c, i, err) stmt((c), MOD_JOB_UPDATES, (i), sql[(i)], (err))

int event_insert(struct conn *c, int64_t pk, const struct job_event *e, int64_t now,
                 struct err *err)
{
    sqlite3_stmt *s = STMT(c, U_EVENT, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    bind_int(s, ":time", e->time ? e->time : now);
    bind_text(s, ":type", e->type);
    bind_text(s, ":reason", e->reason ? e->reason : "");
    bind_text(s, ":message", e->message ? e->message : "");
    if (e->rank >= 0)
        bind_int(s, ":rank", e->rank);
    else
        bind_null(s, ":rank");
    bind_text(s, ":source", e->source ? e->source : "trainyard");
    if (e->ext_id)
        bind_text(s, ":ext_id", e->ext_id);
    else
        bind_null(s, ":ext_id");
    return sql_exec_stmt(c, s, err, "recording an event");
}

static int current_state(struct conn *c, int64_t pk, enum job_state *state, struct err *err)
{
    sqlite3_stmt *s = STMT(c, U_STATE_OF, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && jobstate_parse(col_text(s, 0), state) == 0) {
        sqlite3_reset(s);
        return 0;
    }
    sqlite3_reset(s);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        return err_set(err, ERR_NOT_FOUND, "no such job");
    return sql_fail(c, err, "reading a job's state");
}

static int set_state(struct conn *c, const struct job_update *u, enum job_state from,
                     struct err *err)
{
    if (!jobstate_can(from, u->state))
        return err_set(err, ERR_CONFLICT, "the job is %s and cannot become %s", jobstate_name(from),
                       jobstate_name(u->state));
    sqlite3_stmt *s = STMT(c, U_SET_STATE, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", u->pk);
    bind_text(s, ":state", jobstate_name(u->state));
    bind_text(s, ":reason", u->reason ? u->reason : "");
    bind_text(s, ":message", u->message ? u->message : "");
    bind_int(s, ":running", u->state == JOB_RUNNING);
    bind_int(s, ":terminal", jobstate_terminal(u->state));
    bind_int(s, ":now", u->now);
    if (sql_exec_stmt(c, s, err, "changing the job's state") < 0)
        return -1;
    struct job_event e = {
        .type = jobstate_name(u->state), .reason = u->reason, .message = u->message, .rank = -1
    };
    return event_insert(c, u->pk, &e, u->now, err);
}

/* The same state for a new reason (an executor saying why a starting job waits: an image
 * that cannot be pulled, pods no node fits): the job's reason and message change, nothing
 * else, and no event (the executor's own events tell the story). */
static int restate(struct conn *c, const struct job_update *u, enum job_state from, struct err *err)
{
    sqlite3_stmt *s = STMT(c, U_SET_STATE, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", u->pk);
    bind_text(s, ":state", jobstate_name(from));
    bind_text(s, ":reason", u->reason);
    bind_text(s, ":message", u->message ? u->message : "");
    bind_int(s, ":running", 0);
    bind_int(s, ":terminal", 0);
    bind_int(s, ":now", u->now);
    return sql_exec_stmt(c, s, err, "changing the job's reason");
}

static int set_fields(struct conn *c, const struct job_update *u, struct err *err)
{
    sqlite3_stmt *s = STMT(c, U_SET_FIELDS, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", u->pk);
    bind_int(s, ":set_attempt", u->set_attempt);
    bind_int(s, ":attempt", u->attempt);
    bind_text(s, ":desired", u->desired);
    bind_text(s, ":first_failure", u->first_failure);
    bind_text(s, ":exec_state", u->exec_state);
    bind_int(s, ":now", u->now);
    return sql_exec_stmt(c, s, err, "updating the job");
}

static int update_rank(struct conn *c, int64_t pk, const struct rank_change *r, struct err *err)
{
    sqlite3_stmt *s = STMT(c, U_RANK, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    bind_int(s, ":rank", r->rank);
    bind_int(s, ":f_state", (r->fields & RC_STATE) != 0);
    bind_text(s, ":state", rankstate_name(r->state));
    bind_int(s, ":f_pid", (r->fields & RC_PID) != 0);
    bind_int(s, ":pid", r->pid);
    bind_int(s, ":f_node", (r->fields & RC_NODE) != 0);
    bind_text(s, ":node", r->node ? r->node : "");
    bind_int(s, ":f_pod", (r->fields & RC_POD) != 0);
    bind_text(s, ":pod", r->pod ? r->pod : "");
    bind_int(s, ":f_exit", (r->fields & RC_EXIT) != 0);
    if (r->exit_code >= 0)
        bind_int(s, ":exit_code", r->exit_code);
    else
        bind_null(s, ":exit_code");
    if (r->signal > 0)
        bind_int(s, ":signal", r->signal);
    else
        bind_null(s, ":signal");
    bind_int(s, ":f_restarts", (r->fields & RC_RESTARTS) != 0);
    bind_int(s, ":restarts", r->restarts);
    bind_int(s, ":f_reason", (r->fields & RC_REASON) != 0);
    bind_text(s, ":reason", r->reason ? r->reason : "");
    bind_text(s, ":message", r->message ? r->message : "");
    bind_int(s, ":f_started", (r->fields & RC_STARTED) != 0);
    bind_int(s, ":started_at", r->started_at);
    bind_int(s, ":f_finished", (r->fields & RC_FINISHED) != 0);
    bind_int(s, ":finished_at", r->finished_at);
    return sql_exec_stmt(c, s, err, "updating a rank");
}

static int apply_update(struct conn *c, void *arg, struct err *err)
{
    const struct job_update *u = arg;
    enum job_state from;
    if (current_state(c, u->pk, &from, err) < 0)
        return -1;
    if (u->only_if_state && from != u->if_state)
        return err_set(err, ERR_CONFLICT, "the job is %s, not %s", jobstate_name(from),
                       jobstate_name(u->if_state));
    if (u->set_state && u->state != from && set_state(c, u, from, err) < 0)
        return -1;
    if (u->set_state && u->state == from && u->reason && restate(c, u, from, err) < 0)
        return -1;
    if (set_fields(c, u, err) < 0)
        return -1;
    for (size_t i = 0; i < u->nranks; i++)
        if (update_rank(c, u->pk, &u->ranks[i], err) < 0)
            return -1;
    for (size_t i = 0; i < u->nevents; i++)
        if (event_insert(c, u->pk, &u->events[i], u->now, err) < 0)
            return -1;
    /* usage: the rank's run is counted with its end, after the rank row has its times */
    if (u->usage && usage_record_run(c, u->pk, u->usage, err) < 0)
        return -1;
    return 0;
}

int store_job_update(struct store *st, const struct job_update *u, struct err *err)
{
    struct job_update copy = *u;
    if (!copy.now)
        copy.now = clock_now_ns();
    return store_write_wait(st, apply_update, &copy, err);
}

static json_t *event_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)ctx, (void)err;
    json_t *e = json_object();
    char ts[CLOCK_RFC3339_MAX];
    json_object_set_new(e, "seq", json_integer(col_int(s, 0)));
    json_object_set_new(e, "time", json_string(clock_format(col_int(s, 1), ts)));
    json_object_set_new(e, "type", json_string(col_text(s, 2)));
    json_object_set_new(e, "reason", json_string(col_text(s, 3)));
    json_object_set_new(e, "message", json_string(col_text(s, 4)));
    json_object_set_new(e, "rank",
                        sqlite3_column_type(s, 5) == SQLITE_NULL ? json_null()
                                                                 : json_integer(col_int(s, 5)));
    json_object_set_new(e, "source", json_string(col_text(s, 6)));
    return e;
}

json_t *store_events_list(struct store *st, int64_t pk, int64_t after, int limit, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, U_EVENTS, err) : NULL;
    if (s) {
        bind_int(s, ":pk", pk);
        bind_int(s, ":after", after);
        bind_int(s, ":limit", limit);
    }
    return sql_json_rows(c, s, "reading events", event_json, NULL, err);
}
