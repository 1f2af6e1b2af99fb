/*
 * store/findings: diagnoses (one row per job attempt) and their findings (see findings.h).
 * Saves are serialised on the caller's thread into a heap record that the writer applies and
 * frees, so a caller never waits for the writer unless it asks to. Reads run on the caller's
 * connection.
 */
#include "store/findings.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "store/internal.h"

enum {
    D_UPSERT,
    F_UPSERT,
    D_GET,
    F_LIST,
    D_ATTEMPTS,
    D_PROGRESS,
    F_NODE,
};

static const char *const sql[] = {
    [D_UPSERT] =
        "INSERT INTO diagnoses (job_pk, attempt, summary, findings_dropped, progress, stalled,"
        " stall, health, decision, updated_at) VALUES (:pk, :attempt, :summary, :dropped,"
        " :progress, max(:stalled, 0), :stall, :health, :decision, :now)"
        " ON CONFLICT (job_pk, attempt) DO UPDATE SET"
        " summary = CASE WHEN :has_diag THEN excluded.summary ELSE summary END,"
        " findings_dropped = CASE WHEN :has_diag THEN excluded.findings_dropped"
        "   ELSE findings_dropped END,"
        " progress = coalesce(excluded.progress, progress),"
        " stalled = CASE WHEN :stalled >= 0 THEN excluded.stalled ELSE stalled END,"
        " stall = coalesce(excluded.stall, stall),"
        " health = coalesce(excluded.health, health),"
        " decision = coalesce(excluded.decision, decision),"
        " updated_at = excluded.updated_at",
    [F_UPSERT] = "INSERT INTO findings (job_pk, attempt, key, time, ord, kind, role, rank, node,"
                 " body) VALUES (:pk, :attempt, :key, :time, :ord, :kind, :role, :rank, :node,"
                 " :body) ON CONFLICT (job_pk, attempt, key) DO UPDATE SET time = excluded.time,"
                 " ord = excluded.ord, kind = excluded.kind, role = excluded.role,"
                 " rank = excluded.rank, node = excluded.node, body = excluded.body",
    [D_GET] = "SELECT attempt, summary, findings_dropped, progress, stalled, stall, health,"
              " decision, updated_at FROM diagnoses WHERE job_pk = :pk"
              " AND (:attempt < 0 OR attempt = :attempt) ORDER BY attempt DESC LIMIT 1",
    [F_LIST] = "SELECT body FROM findings WHERE job_pk = :pk AND attempt = :attempt"
               " ORDER BY time, ord, key",
    [D_ATTEMPTS] = "SELECT attempt, summary, decision FROM diagnoses WHERE job_pk = :pk"
                   " ORDER BY attempt",
    [D_PROGRESS] = "SELECT progress, stalled FROM diagnoses WHERE job_pk = :pk"
                   " ORDER BY attempt DESC LIMIT 1",
    [F_NODE] = "SELECT j.id, f.attempt, f.kind, f.time, f.body FROM findings f"
               " JOIN jobs j ON j.pk = f.job_pk WHERE f.node = :node AND f.time >= :since"
               " AND f.role = 'cause' ORDER BY f.time DESC LIMIT :limit",
};

#define STMT(c, i, err) stmt((c), MOD_FINDINGS, (i), sql[(i)], (err))

struct frow {
    char key[192];
    int64_t time;
    const char *kind, *role, *node; /* borrowed from the body's parse, freed with it */
    bool has_rank;
    int64_t rank;
    char *body;
};

/* A save serialised for the writer; owns everything. */
struct pending {
    int64_t pk;
    int attempt;
    bool has_diag;
    char *summary;
    int64_t dropped;
    char *progress, *stall, *health, *decision;
    int stalled;
    int64_t now;
    struct frow *rows;
    size_t n;
    json_t *findings; /* keeps the rows' borrowed strings alive */
};

static char *dump_or_null(const json_t *v)
{
    return v && !json_is_null(v) ? jsonx_dumps(v) : NULL;
}

static void pending_free(struct pending *p)
{
    free(p->summary);
    free(p->progress);
    free(p->stall);
    free(p->health);
    free(p->decision);
    for (size_t i = 0; i < p->n; i++)
        free(p->rows[i].body);
    free(p->rows);
    json_decref(p->findings);
    free(p);
}

static const char *str_or_empty(const json_t *o, const char *key)
{
    const char *s = jsonx_str(o, key);
    return s ? s : "";
}

/* The stable identity of a finding: what it is, whose it is, and where it started. */
static void finding_row(json_t *f, struct frow *r)
{
    const char *t = jsonx_str(f, "time");
    if (!t || clock_parse(t, &r->time) < 0)
        r->time = 0;
    json_t *ev = json_object_get(f, "evidence");
    json_t *log_rank = json_object_get(f, "log_rank");
    json_t *rank = json_object_get(f, "rank");
    long long start = json_array_size(ev) ? (long long)json_integer_value(json_array_get(ev, 0))
                                          : (long long)r->time;
    long long lr = json_is_integer(log_rank) ? (long long)json_integer_value(log_rank) : -1;
    snprintf(r->key, sizeof(r->key), "%s|%s|%lld|%lld|%s", str_or_empty(f, "pattern"),
             str_or_empty(f, "kind"), lr, start,
             str_or_empty(json_object_get(f, "exception"), "type"));
    r->kind = str_or_empty(f, "kind");
    r->role = str_or_empty(f, "role");
    r->node = str_or_empty(f, "node");
    r->has_rank = json_is_integer(rank);
    r->rank = json_integer_value(rank);
    r->body = jsonx_dumps(f);
}

static struct pending *pending_new(const struct diag_save *s)
{
    struct pending *p = XNEW(struct pending);
    p->pk = s->job_pk;
    p->attempt = s->attempt;
    p->now = s->now ? s->now : clock_now_ns();
    p->stalled = s->stalled;
    p->progress = dump_or_null(s->progress);
    p->stall = dump_or_null(s->stall);
    p->health = dump_or_null(s->health);
    p->decision = dump_or_null(s->decision);
    if (!s->diagnosis)
        return p;
    p->has_diag = true;
    p->summary = dump_or_null(json_object_get(s->diagnosis, "summary"));
    p->dropped = jsonx_int(s->diagnosis, "findings_dropped", 0);
    p->findings = json_deep_copy(json_object_get(s->diagnosis, "findings"));
    p->n = json_array_size(p->findings);
    p->rows = xcalloc(p->n ? p->n : 1, sizeof(*p->rows));
    for (size_t i = 0; i < p->n; i++)
        finding_row(json_array_get(p->findings, i), &p->rows[i]);
    return p;
}

static int put_row(struct conn *c, const struct pending *p, const struct frow *r, size_t ord,
                   struct err *err)
{
    sqlite3_stmt *s = STMT(c, F_UPSERT, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", p->pk);
    bind_int(s, ":attempt", p->attempt);
    bind_text(s, ":key", r->key);
    bind_int(s, ":time", r->time);
    bind_int(s, ":ord", (int64_t)ord);
    bind_text(s, ":kind", r->kind);
    bind_text(s, ":role", r->role);
    if (r->has_rank)
        bind_int(s, ":rank", r->rank);
    else
        bind_null(s, ":rank");
    bind_text(s, ":node", r->node);
    bind_text(s, ":body", r->body);
    return sql_exec_stmt(c, s, err, "storing a finding");
}

static int apply_save(struct conn *c, void *arg, struct err *err)
{
    const struct pending *p = arg;
    sqlite3_stmt *s = STMT(c, D_UPSERT, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", p->pk);
    bind_int(s, ":attempt", p->attempt);
    bind_int(s, ":has_diag", p->has_diag);
    bind_text(s, ":summary", p->summary);
    bind_int(s, ":dropped", p->dropped);
    bind_text(s, ":progress", p->progress);
    bind_int(s, ":stalled", p->stalled);
    bind_text(s, ":stall", p->stall);
    bind_text(s, ":health", p->health);
    bind_text(s, ":decision", p->decision);
    bind_int(s, ":now", p->now);
    if (sql_exec_stmt(c, s, err, "storing a diagnosis") < 0)
        return -1;
    for (size_t i = 0; i < p->n; i++)
        if (put_row(c, p, &p->rows[i], i, err) < 0)
            return -1;
    return 0;
}

static void saved(void *ctx, int rc, struct err *err)
{
    (void)rc;
    (void)err;
    pending_free(ctx);
}

int store_diag_save(struct store *st, const struct diag_save *s, bool wait, struct err *err)
{
    struct pending *p = pending_new(s);
    if (!wait) {
        store_write_async(st, apply_save, p, saved, p);
        return 0;
    }
    int rc = store_write_wait(st, apply_save, p, err);
    pending_free(p);
    return rc;
}

/* Column i parsed as JSON (new reference), JSON null when NULL or not JSON. */
static json_t *col_json(sqlite3_stmt *s, int i)
{
    const char *t = col_text_or_null(s, i);
    json_t *v = t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
    return v ? v : json_null();
}

static json_t *finding_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)ctx, (void)err;
    return col_json(s, 0);
}

static json_t *findings_of(struct conn *c, int64_t pk, int attempt, struct err *err)
{
    sqlite3_stmt *s = STMT(c, F_LIST, err);
    if (s) {
        bind_int(s, ":pk", pk);
        bind_int(s, ":attempt", attempt);
    }
    return sql_json_rows(c, s, "reading findings", finding_json, NULL, err);
}

json_t *store_diag_get(struct store *st, int64_t job_pk, int attempt, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, D_GET, err) : NULL;
    if (!s)
        return NULL;
    bind_int(s, ":pk", job_pk);
    bind_int(s, ":attempt", attempt);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(s);
        if (rc == SQLITE_DONE)
            err_set(err, ERR_NOT_FOUND, "no diagnosis recorded for this job%s",
                    attempt >= 0 ? " attempt" : " yet");
        else
            sql_fail(c, err, "reading a diagnosis");
        return NULL;
    }
    int found = (int)col_int(s, 0);
    json_t *o = json_object();
    json_object_set_new(o, "attempt", json_integer(found));
    json_object_set_new(o, "summary", col_json(s, 1));
    json_object_set_new(o, "findings_dropped", json_integer(col_int(s, 2)));
    json_object_set_new(o, "progress", col_json(s, 3));
    json_object_set_new(o, "stalled", json_boolean(col_int(s, 4) != 0));
    json_object_set_new(o, "stall", col_json(s, 5));
    json_object_set_new(o, "health", col_json(s, 6));
    json_object_set_new(o, "decision", col_json(s, 7));
    jsonx_set_time(o, "updated_at", col_int(s, 8));
    sqlite3_reset(s);
    json_t *f = findings_of(c, job_pk, found, err);
    if (!f) {
        json_decref(o);
        return NULL;
    }
    json_object_set_new(o, "findings", f);
    return o;
}

static json_t *attempt_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)ctx, (void)err;
    return json_pack("{s:I,s:o,s:o}", "attempt", (json_int_t)col_int(s, 0), "summary",
                     col_json(s, 1), "decision", col_json(s, 2));
}

json_t *store_diag_attempts(struct store *st, int64_t job_pk, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, D_ATTEMPTS, err) : NULL;
    if (s)
        bind_int(s, ":pk", job_pk);
    return sql_json_rows(c, s, "reading diagnoses", attempt_json, NULL, err);
}

int store_diag_progress(struct store *st, int64_t job_pk, json_t **progress, bool *stalled,
                        struct err *err)
{
    *progress = NULL;
    *stalled = false;
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, D_PROGRESS, err) : NULL;
    if (!s)
        return -1;
    bind_int(s, ":pk", job_pk);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        json_t *p = col_json(s, 0);
        if (json_is_null(p))
            json_decref(p);
        else
            *progress = p;
        *stalled = col_int(s, 1) != 0;
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading progress");
}

static json_t *node_finding_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)ctx, (void)err;
    json_t *body = col_json(s, 4);
    json_t *o = json_pack("{s:s,s:I,s:s}", "job_id", col_text(s, 0), "attempt",
                          (json_int_t)col_int(s, 1), "kind", col_text(s, 2));
    jsonx_set_time(o, "time", col_int(s, 3));
    jsonx_set_str(o, "summary", jsonx_str(body, "summary"));
    json_decref(body);
    return o;
}

json_t *store_findings_on_node(struct store *st, const char *node, int64_t since, int limit,
                               struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, F_NODE, err) : NULL;
    if (!s)
        return NULL;
    bind_text(s, ":node", node);
    bind_int(s, ":since", since);
    bind_int(s, ":limit", limit);
    return sql_json_rows(c, s, "reading findings of a node", node_finding_json, NULL, err);
}
