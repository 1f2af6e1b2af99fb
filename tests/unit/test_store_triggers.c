/*
 * store/templates, store/triggers, store/deliveries and store/outbox against a real database:
 * the dedupe of delivery ids and of object versions (what makes one job per object version),
 * outcomes rewritten to "duplicate", pending submissions and their retries, SNS subscriptions,
 * pruning, and the webhook outbox's per-(webhook, job) order and cursor.
 */
#include "tests/unit/check.h"

#include <stdlib.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "store/jobs.h"
#include "store/templates.h"
#include "store/tokens.h"
#include "store/triggers.h"
#include "store/webhooks.h"

static char dir[64];

static struct store *open_store(void)
{
    snprintf(dir, sizeof(dir), "/tmp/ty-store-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    char path[128];
    snprintf(path, sizeof(path), "%s/t.db", dir);
    struct store_options o = { .busy_timeout_ms = 1000, .max_batch = 64 };
    struct err err;
    err_init(&err);
    struct store *st = store_open(path, &o, &err);
    if (!st)
        fprintf(stderr, "store_open: %s\n", err.msg);
    err_release(&err);
    return st;
}

static enum err_code code_of(int rc, struct err *err)
{
    enum err_code c = rc < 0 ? err->code : ERR_NONE;
    err_release(err);
    return c;
}

static int64_t setup_trigger(struct store *st)
{
    struct err err;
    err_init(&err);
    struct template_put tp = { .name = "tpl", .spec = "{\"command\":[\"true\"]}", .now = 1 };
    CHECK_INT(store_template_insert(st, &tp, &err), 0);
    CHECK_INT(code_of(store_template_insert(st, &tp, &err), &err), ERR_CONFLICT);
    struct trigger_put t = { .id = "trg_a",
                             .name = "a",
                             .template_name = "nope",
                             .secrets = "[\"sha256:00\"]",
                             .enabled = true,
                             .now = 2 };
    CHECK_INT(store_trigger_insert(st, &t, &err), -1);
    CHECK_INT(err.code, ERR_VALIDATION);
    CHECK_STR(err.nfields ? err.fields[0].pointer : "", "/template");
    err_release(&err);
    t.template_name = "tpl";
    CHECK_INT(store_trigger_insert(st, &t, &err), 0);
    t.id = "trg_b";
    CHECK_INT(code_of(store_trigger_insert(st, &t, &err), &err), ERR_CONFLICT);
    CHECK_INT(code_of(store_template_delete(st, "tpl", "me", "r", &err), &err), ERR_CONFLICT);
    t.id = "trg_a";
    t.secrets = NULL; /* an update without secrets keeps them */
    t.rule = "{\"bucket\":\"b\"}";
    CHECK_INT(store_trigger_update(st, &t, &err), 0);
    struct trigger_def *d = store_trigger_get(st, "a", &err);
    CHECK(d != NULL);
    CHECK_STR(d ? d->secrets : "", "[\"sha256:00\"]");
    CHECK_STR(d ? d->rule : "", "{\"bucket\":\"b\"}");
    int64_t pk = d ? d->pk : 0;
    trigger_def_free(d);
    d = store_trigger_get(st, "trg_a", &err);
    CHECK(d && d->pk == pk);
    trigger_def_free(d);
    struct template_def *tpl = store_template_get(st, "tpl", &err);
    CHECK_INT(tpl ? tpl->ntriggers : -1, 1);
    template_def_free(tpl);
    err_release(&err);
    return pk;
}

/* Records a delivery of the given objects; returns the result. */
static struct delivery_recorded record(struct store *st, int64_t tpk, const char *id,
                                       const char *const *keys, size_t n, bool authentic)
{
    struct delivery_object objs[4];
    for (size_t i = 0; i < n; i++)
        objs[i] = (struct delivery_object){ .dedupe_key = keys[i], .event = "{}" };
    struct delivery_new d = { .trigger_pk = tpk,
                              .received_at = clock_now_ns(),
                              .sender = "s3",
                              .delivery_id = id,
                              .outcome = authentic ? "accepted" : "rejected",
                              .summary = "accepted: n of n events matched",
                              .status = authentic ? 200 : 401,
                              .verified = authentic,
                              .dedupe = authentic,
                              .objects = objs,
                              .nobjects = n };
    struct delivery_recorded out;
    struct err err;
    err_init(&err);
    CHECK_INT(store_delivery_record(st, &d, &out, &err), 0);
    err_release(&err);
    return out;
}

static void test_dedupe(struct store *st, int64_t tpk)
{
    const char *k12[] = { "k1", "k2" }, *k23[] = { "k2", "k3" }, *k1[] = { "k1" };
    struct delivery_recorded r = record(st, tpk, "m1", k12, 2, true);
    CHECK_INT(r.nnew, 2);
    CHECK_STR(r.outcome, "accepted");
    r = record(st, tpk, "m1", k12, 2, true);
    CHECK(r.duplicate);
    CHECK_STR(r.outcome, "duplicate");
    CHECK_INT(r.nnew, 0);
    r = record(st, tpk, "m2", k23, 2, true);
    CHECK_INT(r.nnew, 1);
    CHECK_STR(r.outcome, "accepted");
    r = record(st, tpk, "m3", k1, 1, true);
    CHECK_STR(r.outcome, "duplicate");
    /* A rejected delivery does not poison its id, nor store objects. */
    r = record(st, tpk, "m4", k1, 1, false);
    CHECK_INT(r.nnew, 0);
    r = record(st, tpk, "m4", NULL, 0, true);
    CHECK(!r.duplicate);
    struct err err;
    err_init(&err);
    json_t *log = store_delivery_list(st, tpk, 0, 10, &err);
    CHECK_INT(json_array_size(log), 6);
    json_t *third = json_array_get(log, 3); /* m2: newest first */
    CHECK_STR(jsonx_str(third, "delivery_id"), "m2");
    CHECK(strstr(jsonx_str(third, "summary"), "1 already seen") != NULL);
    json_decref(log);
    /* Paging */
    log = store_delivery_list(st, tpk, 3, 10, &err);
    CHECK_INT(json_array_size(log), 2);
    json_decref(log);
    err_release(&err);
}

static void test_submissions(struct store *st)
{
    struct err err;
    err_init(&err);
    struct trigger_object **o;
    size_t n;
    int64_t now = clock_now_ns();
    CHECK_INT(store_trigger_objects_due(st, now, 10, &o, &n, &err), 0);
    CHECK_INT(n, 3);
    CHECK_STR(n ? o[0]->dedupe_key : "", "k1");
    CHECK_STR(n ? o[0]->trigger_name : "", "a");
    struct trigger_object_result res[3] = {
        { .pk = o[0]->pk, .state = "submitted", .job_id = "job1", .now = now },
        { .pk = o[1]->pk, .state = "pending", .error = "busy", .next_at = now + 1000, .now = now },
        { .pk = o[2]->pk, .state = "failed", .error = "bad template", .now = now },
    };
    CHECK_INT(store_trigger_objects_done(st, res, 3, &err), 0);
    trigger_objects_free(o, n);
    CHECK_INT(store_trigger_objects_due(st, now, 10, &o, &n, &err), 0);
    CHECK_INT(n, 0);
    trigger_objects_free(o, n);
    CHECK_INT(store_trigger_objects_due(st, now + 1000, 10, &o, &n, &err), 0);
    CHECK_INT(n, 1);
    CHECK_INT(n ? o[0]->attempts : 0, 1);
    trigger_objects_free(o, n);
    int64_t pending;
    CHECK_INT(store_trigger_objects_pending(st, &pending, &err), 0);
    CHECK_INT(pending, 1);
    err_release(&err);
}

static void test_log_shows_jobs(struct store *st, int64_t tpk)
{
    /* d1 listed its events; its k1 became job1; d3 (m2) has k2 as a duplicate of d1's. */
    struct delivery_object objs[1] = { { .dedupe_key = "k1", .event = "{}" } };
    struct delivery_new d = { .trigger_pk = tpk,
                              .received_at = clock_now_ns(),
                              .sender = "s3",
                              .delivery_id = "m9",
                              .outcome = "accepted",
                              .summary = "s",
                              .status = 200,
                              .verified = true,
                              .dedupe = true,
                              .events = "[{\"matched\":true,\"dedupe_key\":\"k1\"},"
                                        "{\"matched\":false,\"why\":\"no\"}]",
                              .objects = objs,
                              .nobjects = 1 };
    struct delivery_recorded out;
    struct err err;
    err_init(&err);
    CHECK_INT(store_delivery_record(st, &d, &out, &err), 0);
    json_t *log = store_delivery_list(st, tpk, 0, 1, &err);
    json_t *ev = json_array_get(json_object_get(json_array_get(log, 0), "events"), 0);
    CHECK_STR(jsonx_str(ev, "job_id"), "job1");
    CHECK_STR(jsonx_str(ev, "submission"), "submitted");
    CHECK(jsonx_bool(ev, "duplicate", false));
    CHECK_STR(jsonx_str(json_array_get(log, 0), "outcome"), "duplicate");
    json_decref(log);
    err_release(&err);
}

static void test_sns_and_prune(struct store *st, int64_t tpk)
{
    struct delivery_new d = { .trigger_pk = tpk,
                              .received_at = clock_now_ns(),
                              .sender = "sns",
                              .delivery_id = "s1",
                              .outcome = "subscribe",
                              .summary = "s",
                              .status = 200,
                              .verified = true,
                              .dedupe = true,
                              .sns_topic = "arn:t",
                              .sns_subscribe_url = "https://x/confirm" };
    struct delivery_recorded out;
    struct err err;
    err_init(&err);
    CHECK_INT(store_delivery_record(st, &d, &out, &err), 0);
    struct sns_pending **p;
    size_t n;
    CHECK_INT(store_sns_due(st, clock_now_ns(), 8, &p, &n, &err), 0);
    CHECK_INT(n, 1);
    CHECK_STR(n ? p[0]->subscribe_url : "", "https://x/confirm");
    sns_pendings_free(p, n);
    CHECK_INT(
        store_sns_result(st, tpk, "arn:t", "confirmed", "arn:sub", "", 0, clock_now_ns(), &err), 0);
    json_t *subs = store_sns_list(st, tpk, &err);
    CHECK_STR(jsonx_str(json_array_get(subs, 0), "state"), "confirmed");
    CHECK_STR(jsonx_str(json_array_get(subs, 0), "subscription_arn"), "arn:sub");
    json_decref(subs);
    d.delivery_id = "s2";
    d.sns_subscribe_url = NULL;
    d.sns_unsubscribed = true;
    CHECK_INT(store_delivery_record(st, &d, &out, &err), 0);
    subs = store_sns_list(st, tpk, &err);
    CHECK_STR(jsonx_str(json_array_get(subs, 0), "state"), "unsubscribed");
    CHECK_STR(jsonx_str(json_array_get(subs, 0), "subscribe_url"), "https://x/confirm");
    json_decref(subs);
    /* Pruning forgets delivery ids and log rows, never the objects. */
    CHECK_INT(store_triggers_prune(st, clock_now_ns() + 1, clock_now_ns() + 1, &err), 0);
    json_t *log = store_delivery_list(st, tpk, 0, 10, &err);
    CHECK_INT(json_array_size(log), 0);
    json_decref(log);
    const char *k1[] = { "k1" };
    struct delivery_recorded r = record(st, tpk, "m1", k1, 1, true);
    CHECK_STR(r.outcome, "duplicate"); /* by object, the id was forgotten */
    CHECK_INT(r.nnew, 0);
    err_release(&err);
}

static int64_t add_job(struct store *st, const char *id)
{
    struct job_new jn = { .id = id,
                          .name = id,
                          .executor = "local",
                          .spec = "{}",
                          .nranks = 1,
                          .owner = "t",
                          .now = clock_now_ns() };
    struct job_inserted out;
    struct err err;
    err_init(&err);
    CHECK_INT(store_job_insert(st, &jn, &out, &err), 0);
    err_release(&err);
    return out.pk;
}

static size_t due(struct store *st, int64_t now, char *ids, size_t size)
{
    struct outbox_msg **m;
    size_t n;
    struct err err;
    err_init(&err);
    CHECK_INT(store_outbox_due(st, now, 10, &m, &n, &err), 0);
    ids[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(ids + strlen(ids), size - strlen(ids), "%s%s", i ? "," : "", m[i]->msg_id);
    outbox_msgs_free(m, n);
    err_release(&err);
    return n;
}

static void test_outbox(struct store *st)
{
    struct err err;
    err_init(&err);
    struct webhook_put w = { .id = "whk_1",
                             .url = "http://x",
                             .events = "[]",
                             .secret = "whsec_x",
                             .enabled = true,
                             .now = 1 };
    CHECK_INT(store_webhook_insert(st, &w, &err), 0);
    struct webhook_def *def = store_webhook_get(st, "whk_1", &err);
    int64_t wpk = def ? def->pk : 0;
    webhook_def_free(def);
    int64_t ja = add_job(st, "joba"), jb = add_job(st, "jobb");
    struct outbox_new a[2] = { { wpk, "a1", "job.accepted", "joba", "{}" },
                               { wpk, "a2", "job.started", "joba", "{}" } };
    struct outbox_new b[1] = { { wpk, "b1", "job.accepted", "jobb", "{}" } };
    int64_t now = clock_now_ns();
    CHECK_INT(store_outbox_add(st, a, 2, ja, 5, now, &err), 0);
    CHECK_INT(store_outbox_add(st, b, 1, jb, 2, now, &err), 0);
    CHECK_INT(store_outbox_add(st, NULL, 0, ja, 3, now, &err), 0);
    int64_t cursor;
    CHECK_INT(store_webhook_cursor(st, ja, &cursor, &err), 0);
    CHECK_INT(cursor, 5); /* never moves back */
    char ids[128];
    CHECK_INT(due(st, now, ids, sizeof(ids)), 2);
    CHECK_STR(ids, "a1,b1"); /* a2 waits behind a1 */
    struct webhook_def *d = store_webhook_get(st, "whk_1", &err);
    struct outbox_msg **m;
    size_t n;
    store_outbox_due(st, now, 10, &m, &n, &err);
    struct outbox_result r = { .pk = m[0]->pk,
                               .webhook_pk = wpk,
                               .attempt = 1,
                               .state = "pending",
                               .status = 503,
                               .error = "HTTP 503",
                               .next_at = now + 5000,
                               .now = now };
    CHECK_INT(store_outbox_result(st, &r, &err), 0);
    CHECK_INT(due(st, now, ids, sizeof(ids)), 1);
    CHECK_STR(ids, "b1"); /* a1 is waiting, and a2 may not overtake it */
    int64_t next;
    CHECK_INT(store_outbox_next_at(st, &next, &err), 0);
    CHECK_INT(next, now); /* b1 */
    r.state = "delivered";
    r.attempt = 2;
    r.status = 200;
    CHECK_INT(store_outbox_result(st, &r, &err), 0);
    CHECK_INT(due(st, now, ids, sizeof(ids)), 2);
    CHECK_STR(ids, "a2,b1");
    json_t *log = store_outbox_list(st, wpk, 0, 10, &err);
    json_t *a1 = json_array_get(log, 2);
    CHECK_STR(jsonx_str(a1, "id"), "a1");
    CHECK_STR(jsonx_str(a1, "state"), "delivered");
    CHECK_INT(json_array_size(json_object_get(a1, "attempt_log")), 2);
    json_decref(log);
    /* 410: the webhook is disabled and its messages wait. */
    r.pk = m[1]->pk;
    r.state = "failed";
    r.status = 410;
    r.disable = true;
    r.reason = "gone";
    CHECK_INT(store_outbox_result(st, &r, &err), 0);
    CHECK_INT(due(st, now, ids, sizeof(ids)), 0);
    webhook_def_free(d);
    d = store_webhook_get(st, "whk_1", &err);
    CHECK(d && !d->enabled);
    CHECK_STR(d ? d->disabled_reason : "", "gone");
    webhook_def_free(d);
    outbox_msgs_free(m, n);
    int64_t *behind;
    size_t nb;
    CHECK_INT(store_webhook_behind(st, 0, &behind, &nb, &err), 0);
    CHECK_INT(nb, 0); /* both jobs' cursors are at or past their one "accepted" event */
    free(behind);
    err_release(&err);
}

/* The audit trail's actions on one target, oldest first, comma-separated. */
static void audit_of(struct store *st, const char *target, char *out, size_t size)
{
    json_t *arr = store_audit_list(st, target, 0, 10, NULL);
    out[0] = '\0';
    for (size_t i = json_array_size(arr); i-- > 0;)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? "," : "",
                 jsonx_str(json_array_get(arr, i), "action"));
    json_decref(arr);
}

/* A webhook update keeps the secret unless it brings one; each change is audited; a delete of
 * one that is not there is ERR_NOT_FOUND and audits nothing. */
static void test_webhook_changes(struct store *st)
{
    struct err err;
    err_init(&err);
    struct webhook_put w = { .id = "whk_c",
                             .url = "http://x",
                             .events = "[]",
                             .secret = "whsec_1",
                             .enabled = true,
                             .actor = "me",
                             .now = 1 };
    CHECK_INT(store_webhook_insert(st, &w, &err), 0);
    w.secret = NULL;
    w.url = "http://y";
    CHECK_INT(store_webhook_update(st, &w, &err), 0);
    struct webhook_def *d = store_webhook_get(st, "whk_c", &err);
    CHECK_STR(d ? d->secret : "", "whsec_1");
    CHECK_STR(d ? d->url : "", "http://y");
    webhook_def_free(d);
    w.secret = "whsec_2";
    CHECK_INT(store_webhook_update(st, &w, &err), 0);
    d = store_webhook_get(st, "whk_c", &err);
    CHECK_STR(d ? d->secret : "", "whsec_2");
    webhook_def_free(d);
    CHECK_INT(store_webhook_delete(st, "whk_c", "me", "req-1", &err), 0);
    CHECK_INT(code_of(store_webhook_delete(st, "whk_c", "me", "req-2", &err), &err), ERR_NOT_FOUND);
    CHECK(store_webhook_get(st, "whk_c", &err) == NULL);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    char actions[128];
    audit_of(st, "webhook/whk_c", actions, sizeof(actions));
    CHECK_STR(actions, "webhook.create,webhook.update,webhook.update,webhook.delete");
    CHECK_INT(code_of(store_trigger_delete(st, "trg_none", "me", "r", &err), &err), ERR_NOT_FOUND);
    audit_of(st, "trigger/trg_none", actions, sizeof(actions));
    CHECK_STR(actions, "");
    err_release(&err);
}

int main(void)
{
    struct store *st = open_store();
    CHECK(st != NULL);
    if (!st)
        return check_done();
    int64_t tpk = setup_trigger(st);
    test_dedupe(st, tpk);
    test_submissions(st);
    test_log_shows_jobs(st, tpk);
    test_sns_and_prune(st, tpk);
    test_outbox(st);
    test_webhook_changes(st);
    store_close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_INT(system(cmd), 0);
    return check_done();
}
