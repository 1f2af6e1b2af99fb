/*
 * store/deliveries: what a trigger's hook received (see store/triggers.h): the delivery log,
 * delivery-id and object dedupe, pending job submissions and SNS subscriptions. Writes run on
 * the writer thread, so the check-and-insert of a dedupe key cannot race another delivery;
 * reads on the caller's connection.
 */
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "store/internal.h"
#include "store/triggers.h"

enum {
    D_SEEN,
    D_INSERT,
    D_OBJECT,
    D_OUTCOME,
    D_SNS_PUT,
    D_LIST,
    D_OBJECT_GET,
    D_DUE,
    D_DONE,
    D_PENDING,
    D_SNS_DUE,
    D_SNS_RESULT,
    D_SNS_LIST,
    D_PRUNE_SEEN,
    D_PRUNE_LOG,
};

static const char *const sql[] = {
    [D_SEEN] = "INSERT OR IGNORE INTO trigger_seen (trigger_pk, delivery_id, first_seen)"
               " VALUES (:trigger_pk, :delivery_id, :now)",
    [D_INSERT] = "INSERT INTO trigger_deliveries (trigger_pk, received_at, sender, delivery_id,"
                 " outcome, status, verified, summary, error, events, request_id) VALUES"
                 " (:trigger_pk, :now, :sender, :delivery_id, :outcome, :status, :verified,"
                 " :summary, :error, :events, :request_id)",
    [D_OBJECT] = "INSERT OR IGNORE INTO trigger_objects (trigger_pk, dedupe_key, delivery_pk,"
                 " event, created_at) VALUES (:trigger_pk, :key, :delivery_pk, :event, :now)",
    [D_OUTCOME] = "UPDATE trigger_deliveries SET outcome = :outcome, summary = :summary"
                  " WHERE pk = :pk",
    [D_SNS_PUT] = "INSERT INTO trigger_sns (trigger_pk, topic_arn, state, subscribe_url,"
                  " updated_at) VALUES (:trigger_pk, :topic, :state, :url, :now)"
                  " ON CONFLICT (trigger_pk, topic_arn) DO UPDATE SET state = :state,"
                  " subscribe_url = CASE WHEN :url = '' THEN subscribe_url ELSE :url END,"
                  " attempts = 0, next_at = 0, error = '', updated_at = :now",
    [D_LIST] = "SELECT pk, received_at, sender, delivery_id, outcome, status, verified, summary,"
               " error, events, request_id FROM trigger_deliveries WHERE trigger_pk = :trigger_pk"
               " AND (:before = 0 OR pk < :before) ORDER BY pk DESC LIMIT :limit",
    [D_OBJECT_GET] = "SELECT state, job_id, error, delivery_pk, attempts FROM trigger_objects"
                     " WHERE trigger_pk = :trigger_pk AND dedupe_key = :key",
    [D_DUE] = "SELECT o.pk, o.trigger_pk, g.id, g.name, o.dedupe_key, o.event, o.attempts"
              " FROM trigger_objects o JOIN triggers g ON g.pk = o.trigger_pk"
              " WHERE o.state = 'pending' AND o.next_at <= :now ORDER BY o.next_at, o.pk"
              " LIMIT :limit",
    [D_DONE] = "UPDATE trigger_objects SET state = :state, job_id = :job_id, error = :error,"
               " next_at = :next_at, attempts = attempts + 1,"
               " submitted_at = CASE WHEN :state = 'submitted' THEN :now ELSE 0 END"
               " WHERE pk = :pk",
    [D_PENDING] = "SELECT count(*) FROM trigger_objects WHERE state = 'pending'",
    [D_SNS_DUE] = "SELECT trigger_pk, topic_arn, subscribe_url, attempts FROM trigger_sns"
                  " WHERE state = 'pending' AND next_at <= :now LIMIT :limit",
    [D_SNS_RESULT] = "UPDATE trigger_sns SET state = :state, subscription_arn = :arn,"
                     " error = :error, next_at = :next_at, attempts = attempts + 1,"
                     " updated_at = :now, confirmed_at = CASE WHEN :state = 'confirmed' THEN"
                     " :now ELSE confirmed_at END"
                     " WHERE trigger_pk = :trigger_pk AND topic_arn = :topic",
    [D_SNS_LIST] = "SELECT topic_arn, state, subscribe_url, subscription_arn, error, attempts,"
                   " updated_at, confirmed_at FROM trigger_sns WHERE trigger_pk = :trigger_pk"
                   " ORDER BY topic_arn",
    [D_PRUNE_SEEN] = "DELETE FROM trigger_seen WHERE first_seen < :before",
    [D_PRUNE_LOG] = "DELETE FROM trigger_deliveries WHERE received_at < :before",
};

#define STMT(c, i, err) stmt((c), MOD_DELIVERIES, (i), sql[(i)], (err))

struct record_op {
    const struct delivery_new *d;
    struct delivery_recorded *out;
};

/* True when d's delivery id was already seen for this trigger (and remembers it if not). */
static int seen_before(struct conn *c, const struct delivery_new *d, bool *seen, struct err *err)
{
    *seen = false;
    if (!d->dedupe || !d->delivery_id || !*d->delivery_id)
        return 0;
    sqlite3_stmt *s = STMT(c, D_SEEN, err);
    if (!s)
        return -1;
    bind_int(s, ":trigger_pk", d->trigger_pk);
    bind_text(s, ":delivery_id", d->delivery_id);
    bind_int(s, ":now", d->received_at);
    if (sql_exec_stmt(c, s, err, "remembering the delivery id") < 0)
        return -1;
    *seen = sqlite3_changes(c->db) == 0;
    return 0;
}

static int insert_log(struct conn *c, const struct delivery_new *d, bool dup, int64_t *pk,
                      struct err *err)
{
    sqlite3_stmt *s = STMT(c, D_INSERT, err);
    if (!s)
        return -1;
    char summary[320];
    if (dup)
        snprintf(summary, sizeof(summary), "duplicate: delivery id %.200s was seen before",
                 d->delivery_id);
    bind_int(s, ":trigger_pk", d->trigger_pk);
    bind_int(s, ":now", d->received_at);
    bind_text(s, ":sender", d->sender);
    bind_text(s, ":delivery_id", d->delivery_id ? d->delivery_id : "");
    bind_text(s, ":outcome", dup ? "duplicate" : d->outcome);
    bind_int(s, ":status", d->status);
    bind_int(s, ":verified", d->verified);
    bind_text(s, ":summary", dup ? summary : d->summary ? d->summary : "");
    bind_text(s, ":error", d->error ? d->error : "");
    bind_text(s, ":events", d->events ? d->events : "[]");
    bind_text(s, ":request_id", d->request_id ? d->request_id : "");
    if (sql_exec_stmt(c, s, err, "recording the delivery") < 0)
        return -1;
    *pk = sqlite3_last_insert_rowid(c->db);
    return 0;
}

/* Stores each matched object version once per trigger: a new row is a job to submit. */
static int insert_objects(struct conn *c, const struct delivery_new *d,
                          struct delivery_recorded *out, struct err *err)
{
    for (size_t i = 0; i < d->nobjects; i++) {
        struct delivery_object *o = &d->objects[i];
        sqlite3_stmt *s = STMT(c, D_OBJECT, err);
        if (!s)
            return -1;
        bind_int(s, ":trigger_pk", d->trigger_pk);
        bind_text(s, ":key", o->dedupe_key);
        bind_int(s, ":delivery_pk", out->pk);
        bind_text(s, ":event", o->event);
        bind_int(s, ":now", d->received_at);
        if (sql_exec_stmt(c, s, err, "storing an object to submit") < 0)
            return -1;
        o->is_new = sqlite3_changes(c->db) == 1;
        out->nnew += o->is_new;
    }
    if (d->nobjects == 0 || out->nnew == d->nobjects)
        return 0;
    char summary[320];
    const char *outcome = out->nnew ? d->outcome : "duplicate";
    if (out->nnew)
        snprintf(summary, sizeof(summary), "%.200s; %zu already seen", d->summary,
                 d->nobjects - out->nnew);
    else
        snprintf(summary, sizeof(summary), "duplicate: every matched object was seen before");
    out->duplicate = out->nnew == 0;
    snprintf(out->outcome, sizeof(out->outcome), "%s", outcome);
    sqlite3_stmt *s = STMT(c, D_OUTCOME, err);
    if (!s)
        return -1;
    bind_text(s, ":outcome", outcome);
    bind_text(s, ":summary", summary);
    bind_int(s, ":pk", out->pk);
    return sql_exec_stmt(c, s, err, "recording the delivery");
}

static int put_sns(struct conn *c, const struct delivery_new *d, struct err *err)
{
    if (!d->sns_topic || (!d->sns_subscribe_url && !d->sns_unsubscribed))
        return 0;
    sqlite3_stmt *s = STMT(c, D_SNS_PUT, err);
    if (!s)
        return -1;
    bind_int(s, ":trigger_pk", d->trigger_pk);
    bind_text(s, ":topic", d->sns_topic);
    bind_text(s, ":state", d->sns_subscribe_url ? "pending" : "unsubscribed");
    bind_text(s, ":url", d->sns_subscribe_url ? d->sns_subscribe_url : "");
    bind_int(s, ":now", d->received_at);
    return sql_exec_stmt(c, s, err, "recording the SNS subscription");
}

static int apply_record(struct conn *c, void *arg, struct err *err)
{
    struct record_op *op = arg;
    const struct delivery_new *d = op->d;
    struct delivery_recorded *out = op->out;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < d->nobjects; i++)
        d->objects[i].is_new = false;
    bool dup;
    if (seen_before(c, d, &dup, err) < 0 || insert_log(c, d, dup, &out->pk, err) < 0)
        return -1;
    snprintf(out->outcome, sizeof(out->outcome), "%s", dup ? "duplicate" : d->outcome);
    out->duplicate = dup;
    if (dup || !d->dedupe)
        return 0;
    if (insert_objects(c, d, out, err) < 0)
        return -1;
    return put_sns(c, d, err);
}

struct record_async {
    struct record_op op;
    store_done_fn done;
    void *ctx;
};

static void record_done(void *ctx, int rc, struct err *err)
{
    struct record_async *a = ctx;
    a->done(a->ctx, rc, err);
    free(a);
}

void store_delivery_record_async(struct store *st, const struct delivery_new *d,
                                 struct delivery_recorded *out, store_done_fn done, void *ctx)
{
    struct record_async *a = XNEW(struct record_async);
    a->op = (struct record_op){ d, out };
    a->done = done;
    a->ctx = ctx;
    store_write_async(st, apply_record, &a->op, record_done, a);
}

int store_delivery_record(struct store *st, const struct delivery_new *d,
                          struct delivery_recorded *out, struct err *err)
{
    struct record_op op = { d, out };
    return store_write_wait(st, apply_record, &op, err);
}

/* Adds what became of a matched event's object (state, job, first delivery). */
static int add_object(struct conn *c, int64_t trigger_pk, int64_t delivery_pk, json_t *ev,
                      struct err *err)
{
    const char *key = jsonx_str(ev, "dedupe_key");
    if (!key || !jsonx_bool(ev, "matched", false))
        return 0;
    sqlite3_stmt *s = STMT(c, D_OBJECT_GET, err);
    if (!s)
        return -1;
    bind_int(s, ":trigger_pk", trigger_pk);
    bind_text(s, ":key", key);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        int64_t first = col_int(s, 3);
        json_object_set_new(ev, "duplicate", json_boolean(first != delivery_pk));
        json_object_set_new(ev, "first_delivery", json_integer(first));
        json_object_set_new(ev, "submission", json_string(col_text(s, 0)));
        jsonx_set_str(ev, "job_id", *col_text(s, 1) ? col_text(s, 1) : NULL);
        if (*col_text(s, 2))
            json_object_set_new(ev, "submission_error", json_string(col_text(s, 2)));
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading an object");
}

struct list_ctx {
    struct conn *c;
    int64_t trigger_pk;
};

static json_t *delivery_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    const struct list_ctx *l = ctx;
    int64_t pk = col_int(s, 0);
    json_t *o = json_pack("{s:I}", "id", (json_int_t)pk);
    jsonx_set_time(o, "received_at", col_int(s, 1));
    jsonx_set_str(o, "sender", col_text(s, 2));
    jsonx_set_str(o, "delivery_id", *col_text(s, 3) ? col_text(s, 3) : NULL);
    jsonx_set_str(o, "outcome", col_text(s, 4));
    json_object_set_new(o, "status", json_integer(col_int(s, 5)));
    json_object_set_new(o, "verified", json_boolean(col_int(s, 6)));
    jsonx_set_str(o, "summary", col_text(s, 7));
    jsonx_set_str(o, "error", *col_text(s, 8) ? col_text(s, 8) : NULL);
    jsonx_set_str(o, "request_id", col_text(s, 10));
    json_t *events = json_loads(col_text(s, 9), 0, NULL);
    if (!json_is_array(events)) {
        json_decref(events);
        events = json_array();
    }
    size_t i;
    json_t *ev;
    json_object_set_new(o, "events", events);
    json_array_foreach(events, i, ev)
    {
        /* another statement of this connection, while the list's is still stepping */
        if (add_object(l->c, l->trigger_pk, pk, ev, err) < 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

json_t *store_delivery_list(struct store *st, int64_t trigger_pk, int64_t before, int limit,
                            struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, D_LIST, err) : NULL;
    if (!s)
        return NULL;
    bind_int(s, ":trigger_pk", trigger_pk);
    bind_int(s, ":before", before);
    bind_int(s, ":limit", limit);
    struct list_ctx l = { c, trigger_pk };
    return sql_json_rows(c, s, "listing deliveries", delivery_json, &l, err);
}

static void object_fill(void *slot, sqlite3_stmt *s)
{
    struct trigger_object *o = XNEW(struct trigger_object);
    o->pk = col_int(s, 0);
    o->trigger_pk = col_int(s, 1);
    o->trigger_id = xstrdup(col_text(s, 2));
    o->trigger_name = xstrdup(col_text(s, 3));
    o->dedupe_key = xstrdup(col_text(s, 4));
    o->event = xstrdup(col_text(s, 5));
    o->attempts = (int)col_int(s, 6);
    *(struct trigger_object **)slot = o;
}

static void object_drop(void *slot)
{
    struct trigger_object *o = *(struct trigger_object **)slot;
    free(o->trigger_id);
    free(o->trigger_name);
    free(o->dedupe_key);
    free(o->event);
    free(o);
}

int store_trigger_objects_due(struct store *st, int64_t now, int limit,
                              struct trigger_object ***out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, D_DUE, err) : NULL;
    if (s) {
        bind_int(s, ":now", now);
        bind_int(s, ":limit", limit);
    }
    return sql_array(c, s, "reading pending submissions", sizeof(**out), object_fill, object_drop,
                     out, n, err);
}

void trigger_objects_free(struct trigger_object **o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        object_drop(&o[i]);
    free(o);
}

struct done_op {
    const struct trigger_object_result *r;
    size_t n;
};

static int apply_done(struct conn *c, void *arg, struct err *err)
{
    const struct done_op *op = arg;
    for (size_t i = 0; i < op->n; i++) {
        const struct trigger_object_result *r = &op->r[i];
        sqlite3_stmt *s = STMT(c, D_DONE, err);
        if (!s)
            return -1;
        bind_text(s, ":state", r->state);
        bind_text(s, ":job_id", r->job_id ? r->job_id : "");
        bind_text(s, ":error", r->error ? r->error : "");
        bind_int(s, ":next_at", r->next_at);
        bind_int(s, ":now", r->now);
        bind_int(s, ":pk", r->pk);
        if (sql_exec_stmt(c, s, err, "recording a submission") < 0)
            return -1;
    }
    return 0;
}

int store_trigger_objects_done(struct store *st, const struct trigger_object_result *r, size_t n,
                               struct err *err)
{
    struct done_op op = { r, n };
    return store_write_wait(st, apply_done, &op, err);
}

int store_trigger_objects_pending(struct store *st, int64_t *count, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, D_PENDING, err) : NULL;
    if (!s)
        return -1;
    int rc = sqlite3_step(s);
    *count = rc == SQLITE_ROW ? col_int(s, 0) : 0;
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "counting pending submissions");
}

static void sns_fill(void *slot, sqlite3_stmt *s)
{
    struct sns_pending *p = XNEW(struct sns_pending);
    p->trigger_pk = col_int(s, 0);
    p->topic_arn = xstrdup(col_text(s, 1));
    p->subscribe_url = xstrdup(col_text(s, 2));
    p->attempts = (int)col_int(s, 3);
    *(struct sns_pending **)slot = p;
}

static void sns_drop(void *slot)
{
    struct sns_pending *p = *(struct sns_pending **)slot;
    free(p->topic_arn);
    free(p->subscribe_url);
    free(p);
}

int store_sns_due(struct store *st, int64_t now, int limit, struct sns_pending ***out, size_t *n,
                  struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, D_SNS_DUE, err) : NULL;
    if (s) {
        bind_int(s, ":now", now);
        bind_int(s, ":limit", limit);
    }
    return sql_array(c, s, "reading SNS subscriptions", sizeof(**out), sns_fill, sns_drop, out, n,
                     err);
}

void sns_pendings_free(struct sns_pending **p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sns_drop(&p[i]);
    free(p);
}

struct sns_op {
    int64_t trigger_pk;
    const char *topic, *state, *arn, *error;
    int64_t next_at, now;
};

static int apply_sns(struct conn *c, void *arg, struct err *err)
{
    const struct sns_op *op = arg;
    sqlite3_stmt *s = STMT(c, D_SNS_RESULT, err);
    if (!s)
        return -1;
    bind_int(s, ":trigger_pk", op->trigger_pk);
    bind_text(s, ":topic", op->topic);
    bind_text(s, ":state", op->state);
    bind_text(s, ":arn", op->arn ? op->arn : "");
    bind_text(s, ":error", op->error ? op->error : "");
    bind_int(s, ":next_at", op->next_at);
    bind_int(s, ":now", op->now);
    return sql_exec_stmt(c, s, err, "recording the SNS subscription");
}

int store_sns_result(struct store *st, int64_t trigger_pk, const char *topic_arn, const char *state,
                     const char *subscription_arn, const char *error, int64_t next_at, int64_t now,
                     struct err *err)
{
    struct sns_op op = { trigger_pk, topic_arn, state, subscription_arn, error, next_at, now };
    return store_write_wait(st, apply_sns, &op, err);
}

static json_t *sns_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)ctx, (void)err;
    json_t *o = json_pack("{s:s,s:s,s:s}", "topic_arn", col_text(s, 0), "state", col_text(s, 1),
                          "subscribe_url", col_text(s, 2));
    jsonx_set_str(o, "subscription_arn", *col_text(s, 3) ? col_text(s, 3) : NULL);
    jsonx_set_str(o, "error", *col_text(s, 4) ? col_text(s, 4) : NULL);
    json_object_set_new(o, "attempts", json_integer(col_int(s, 5)));
    jsonx_set_time(o, "updated_at", col_int(s, 6));
    jsonx_set_time(o, "confirmed_at", col_int(s, 7));
    return o;
}

json_t *store_sns_list(struct store *st, int64_t trigger_pk, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, D_SNS_LIST, err) : NULL;
    if (s)
        bind_int(s, ":trigger_pk", trigger_pk);
    return sql_json_rows(c, s, "listing SNS subscriptions", sns_json, NULL, err);
}

struct prune_op {
    int64_t seen_before, log_before;
};

static int apply_prune(struct conn *c, void *arg, struct err *err)
{
    const struct prune_op *op = arg;
    sqlite3_stmt *s = STMT(c, D_PRUNE_SEEN, err);
    if (!s)
        return -1;
    bind_int(s, ":before", op->seen_before);
    if (sql_exec_stmt(c, s, err, "pruning delivery ids") < 0 || !(s = STMT(c, D_PRUNE_LOG, err)))
        return -1;
    bind_int(s, ":before", op->log_before);
    return sql_exec_stmt(c, s, err, "pruning the delivery log");
}

int store_triggers_prune(struct store *st, int64_t seen_before, int64_t log_before, struct err *err)
{
    struct prune_op op = { seen_before, log_before };
    return store_write_wait(st, apply_prune, &op, err);
}
