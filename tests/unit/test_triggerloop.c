/*
 * server/outbound/triggerloop against a real store: pending submissions become jobs through the
 * same path as POST /v1/jobs, the template rendered with the event and the trigger's values; a
 * submission whose job was already committed before a crash (the object not yet marked) gets
 * that job, not a second one; a template that cannot render marks the object failed with why;
 * a paused loop leaves everything pending; finished webhook messages older than 30 days are
 * pruned (docs/triggers.md), newer ones kept.
 */
#include "tests/unit/check.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/jobs.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "server/outbound/triggerloop.h"
#include "store/jobs.h"
#include "store/templates.h"
#include "store/triggers.h"
#include "store/webhooks.h"

static char dir[64];
static struct api api;

static struct store *open_store(void)
{
    snprintf(dir, sizeof(dir), "/tmp/ty-loop-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    char path[128];
    snprintf(path, sizeof(path), "%s/t.db", dir);
    struct store_options o = { .busy_timeout_ms = 1000, .max_batch = 64 };
    return store_open(path, &o, NULL);
}

static void setup(struct store *st)
{
    api.store = st;
    api.limits = (struct api_limits){ .spec = { .max_string_bytes = 65536,
                                                .max_ranks = 64,
                                                .max_nodes = 8,
                                                .max_procs_per_node = 8,
                                                .max_env = 64,
                                                .max_labels = 16,
                                                .max_args = 64 },
                                      .max_body_bytes = 1 << 20,
                                      .max_json_depth = 32,
                                      .max_list_limit = 100 };
    api.default_executor = "local";
    api.local_enabled = true;
    api.local_slots = 4;
    struct template_put tp = { .name = "tpl",
                               .spec =
                                   "{\"name\": \"ingest-${S3_BUCKET}\", \"command\": [\"true\"],"
                                   " \"env\": {\"KEY\": \"${S3_KEY}\", \"RUN\": \"${RUN}\"},"
                                   " \"variables\": {\"RUN\": null}}",
                               .now = 1 };
    struct trigger_put t = { .id = "trg_x",
                             .name = "x",
                             .template_name = "tpl",
                             .values = "{\"RUN\": \"r7\"}",
                             .enabled = true,
                             .now = 2 };
    CHECK_INT(store_template_insert(st, &tp, NULL), 0);
    CHECK_INT(store_trigger_insert(st, &t, NULL), 0);
    t.id = "trg_y";
    t.name = "y";
    t.values = "{}"; /* RUN has no value: its jobs cannot be rendered */
    CHECK_INT(store_trigger_insert(st, &t, NULL), 0);
}

static void deliver(struct store *st, const char *trigger, const char *key)
{
    struct trigger_def *t = store_trigger_get(st, trigger, NULL);
    char *event = xasprintf("{\"bucket\": \"datasets\", \"key\": \"%s\", \"size\": 1}", key);
    struct delivery_object o = { .dedupe_key = key, .event = event };
    struct delivery_new d = { .trigger_pk = t->pk,
                              .received_at = clock_now_ns(),
                              .sender = "s3",
                              .outcome = "accepted",
                              .status = 200,
                              .verified = true,
                              .dedupe = true,
                              .objects = &o,
                              .nobjects = 1 };
    struct delivery_recorded out;
    CHECK_INT(store_delivery_record(st, &d, &out, NULL), 0);
    CHECK_INT(out.nnew, 1);
    free(event);
    trigger_def_free(t);
}

struct wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    char id[32];
};

static void done(void *ctx, struct submission *s, const struct jobs_submitted *r)
{
    struct wait *w = ctx;
    pthread_mutex_lock(&w->lock);
    snprintf(w->id, sizeof(w->id), "%s", r->rc == 0 ? r->id : "");
    w->done = true;
    jobs_submission_free(s);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* What the loop would have committed just before a crash: the job, with the loop's key. */
static void crash_after_commit(const char *key, char id[32])
{
    char ikey[160], hash[SHA256_HEX_LEN];
    snprintf(ikey, sizeof(ikey), "trg_x/%s", key);
    crypto_sha256_hex(ikey, strlen(ikey), hash);
    json_t *spec = json_pack("{s:s,s:[s]}", "name", "other-content", "command", "true");
    struct jobs_submit_opts o = { .owner = "trigger/x",
                                  .scope = SCOPE_ADMIN,
                                  .idempotency_key = ikey,
                                  .idempotency_hash = hash,
                                  .request_id = "t" };
    struct err err;
    err_init(&err);
    struct submission *s = jobs_submission_new(&api, spec, &o, &err);
    CHECK(s != NULL);
    struct wait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, "" };
    jobs_submission_start(s, done, &w);
    pthread_mutex_lock(&w.lock);
    while (!w.done)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    snprintf(id, 32, "%s", w.id);
    json_decref(spec);
    err_release(&err);
}

static int64_t pending(struct store *st)
{
    int64_t n = -1;
    store_trigger_objects_pending(st, &n, NULL);
    return n;
}

/* Queues a webhook message of no job and records it delivered `age_ns` ago. */
static void delivered_message(struct store *st, int64_t wpk, const char *id, int64_t age_ns)
{
    struct outbox_new m = { wpk, id, "job.accepted", "", "{}" };
    int64_t at = clock_now_ns() - age_ns;
    CHECK_INT(store_outbox_add(st, &m, 1, 0, 0, at, NULL), 0);
    struct outbox_msg **due;
    size_t n = 0;
    CHECK_INT(store_outbox_due(st, INT64_MAX, 10, &due, &n, NULL), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        struct outbox_result r = { .pk = due[0]->pk,
                                   .webhook_pk = wpk,
                                   .attempt = 1,
                                   .state = "delivered",
                                   .status = 200,
                                   .error = "",
                                   .next_at = 0,
                                   .now = at };
        CHECK_INT(store_outbox_result(st, &r, NULL), 0);
    }
    outbox_msgs_free(due, n);
}

/* The ids of a webhook's messages, newest first, comma-separated. */
static void message_ids(struct store *st, int64_t wpk, char *ids, size_t size)
{
    json_t *list = store_outbox_list(st, wpk, 0, 10, NULL);
    size_t i;
    json_t *m;
    ids[0] = '\0';
    json_array_foreach(list, i, m)
        snprintf(ids + strlen(ids), size - strlen(ids), "%s%s", i ? "," : "", jsonx_str(m, "id"));
    json_decref(list);
}

static int64_t add_webhook(struct store *st)
{
    struct webhook_put w = { .id = "whk_1",
                             .url = "http://x",
                             .events = "[]",
                             .secret = "whsec_x",
                             .enabled = true,
                             .now = 1 };
    CHECK_INT(store_webhook_insert(st, &w, NULL), 0);
    struct webhook_def *def = store_webhook_get(st, "whk_1", NULL);
    int64_t pk = def ? def->pk : 0;
    webhook_def_free(def);
    return pk;
}

static void run_loop(struct store *st, bool paused)
{
    struct triggerloop_options o = { .paused = paused };
    struct triggerloop *l = triggerloop_new(st, &api, &o);
    CHECK_INT(triggerloop_start(l, NULL), 0);
    triggerloop_wake(l);
    for (int i = 0; i < 100 && pending(st) > 0 && !paused; i++)
        usleep(20 * 1000);
    usleep(paused ? 200 * 1000 : 0);
    triggerloop_free(l);
}

int main(void)
{
    struct store *st = open_store();
    CHECK(st != NULL);
    if (!st)
        return check_done();
    setup(st);
    deliver(st, "x", "a/one.tar");
    deliver(st, "x", "a/two.tar");
    deliver(st, "y", "a/three.tar");
    char before[32];
    crash_after_commit("a/one.tar", before);
    CHECK(before[0] != '\0');

    int64_t wpk = add_webhook(st);
    delivered_message(st, wpk, "old", 31LL * 24 * 3600 * NS_PER_SEC);
    delivered_message(st, wpk, "new", 29LL * 24 * 3600 * NS_PER_SEC);
    char ids[64];
    message_ids(st, wpk, ids, sizeof(ids));
    CHECK_STR(ids, "new,old");

    run_loop(st, true);
    CHECK_INT(pending(st), 3);
    message_ids(st, wpk, ids, sizeof(ids));
    CHECK_STR(ids, "new"); /* the loop prunes as it starts: finished over 30 days ago */

    run_loop(st, false);
    CHECK_INT(pending(st), 0);
    struct trigger_object **o;
    size_t n;
    CHECK_INT(store_trigger_objects_due(st, INT64_MAX, 10, &o, &n, NULL), 0);
    CHECK_INT(n, 0);
    trigger_objects_free(o, n);

    /* Exactly the jobs expected: one per object, the pre-crash one reused. */
    struct job_filter f = { .limit = 100 };
    struct job **jobs;
    size_t nj;
    int64_t next;
    CHECK_INT(store_job_list(st, &f, &jobs, &nj, &next, NULL), 0);
    CHECK_INT(nj, 2);
    bool reused = false, rendered = false;
    for (size_t i = 0; i < nj; i++) {
        reused |= strcmp(jobs[i]->id, before) == 0;
        json_t *spec = json_loads(jobs[i]->spec, 0, NULL);
        json_t *env = json_object_get(spec, "env");
        rendered |= jsonx_str(env, "KEY") && strcmp(jsonx_str(env, "KEY"), "a/two.tar") == 0 &&
                    strcmp(jsonx_str(env, "RUN"), "r7") == 0 &&
                    strcmp(jobs[i]->name, "ingest-datasets") == 0 &&
                    strcmp(jobs[i]->owner, "trigger/x") == 0;
        json_decref(spec);
    }
    CHECK(reused);
    CHECK(rendered);
    jobs_free(jobs, nj);

    /* The log tells which job each object got, and why y's got none. */
    struct trigger_def *y = store_trigger_get(st, "y", NULL);
    struct delivery_object obj = { .dedupe_key = "a/three.tar", .event = "{}" };
    struct delivery_new d = { .trigger_pk = y->pk,
                              .received_at = clock_now_ns(),
                              .sender = "s3",
                              .outcome = "accepted",
                              .status = 200,
                              .verified = true,
                              .dedupe = true,
                              .events = "[{\"matched\": true, \"dedupe_key\": \"a/three.tar\"}]",
                              .objects = &obj,
                              .nobjects = 1 };
    struct delivery_recorded out;
    CHECK_INT(store_delivery_record(st, &d, &out, NULL), 0);
    json_t *log = store_delivery_list(st, y->pk, 0, 1, NULL);
    json_t *ev = json_array_get(json_object_get(json_array_get(log, 0), "events"), 0);
    CHECK_STR(jsonx_str(ev, "submission"), "failed");
    CHECK(jsonx_str(ev, "submission_error") &&
          strstr(jsonx_str(ev, "submission_error"), "RUN") != NULL);
    json_decref(log);
    trigger_def_free(y);

    store_close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_INT(system(cmd), 0);
    return check_done();
}
