/*
 * bench_hooks: S3 hook deliveries through the real daemon and its real HTTP path. It starts
 * build/trainyard on a free port with a fresh data directory, creates a template (jobs are
 * suspended, so nothing runs) and an hmac trigger, then measures:
 *   1. deliveries/s: C client threads (keep-alive) post N signed S3 deliveries, each a distinct
 *      object; every answer must be 200 "accepted" (verified, deduplicated, stored, committed);
 *   2. delivery -> job created (p50/p99) for those N, under that load (the job's created_at
 *      minus the client's send time of its delivery, same clock);
 *   3. the same latency for deliveries sent one at a time (an idle daemon);
 *   4. duplicate deliveries/s (the same objects again, new delivery ids).
 *
 *   build/bench/bench_hooks [N=2000] [C=8] [--no-sync-full]
 */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "trigger/stdwebhook.h"

#define TOKEN "ty_benchadmintoken0123456789abcdefghij"

static char url[128], hook[256], secret[128];
static int64_t *sent_ns; /* per object: when its delivery left the client */
static atomic_int next_obj, bad;
static int nobj, end_obj;
static bool duplicates;

static size_t sink(char *p, size_t size, size_t n, void *ctx)
{
    buf_append(ctx, p, size * n);
    return size * n;
}

/* One request; body may be NULL (GET). Returns the status; resp gets the body. */
static long request(CURL *c, const char *method, const char *path, const char *body,
                    struct curl_slist *extra, struct buf *resp)
{
    char full[512];
    snprintf(full, sizeof(full), "%s%s", url, path);
    struct curl_slist *h = curl_slist_append(extra, "Authorization: Bearer " TOKEN);
    h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    if (!body)
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    return status;
}

static void s3_body(struct buf *b, int i)
{
    buf_printf(
        b,
        "{\"Records\":[{\"eventVersion\":\"2.1\",\"eventSource\":\"aws:s3\",\"awsRegion\":"
        "\"eu-west-1\",\"eventTime\":\"2024-05-01T10:20:30.123Z\",\"eventName\":"
        "\"ObjectCreated:Put\",\"s3\":{\"s3SchemaVersion\":\"1.0\",\"bucket\":{\"name\":"
        "\"datasets\"},\"object\":{\"key\":\"bench/obj-%d.tar\",\"size\":73400320,"
        "\"eTag\":\"9b2cf535f27731c974343645a3985328\",\"sequencer\":\"00663219FE%08X\"}}}]}",
        i, (unsigned)i);
}

/* Posts object i's delivery, signed now; true when the answer is what the phase expects. */
static bool deliver(CURL *c, const struct buf *key, int i, int64_t *t_sent)
{
    struct buf body = BUF_INIT, sig = BUF_INIT, resp = BUF_INIT;
    s3_body(&body, i);
    char id[48], line[3][256];
    snprintf(id, sizeof(id), "msg_bench%d_%d", duplicates, i);
    int64_t now = clock_now_ns();
    stdwebhook_sign(key->data, key->len, id, now / NS_PER_SEC, body.data, body.len, &sig);
    snprintf(line[0], sizeof(line[0]), "webhook-id: %s", id);
    snprintf(line[1], sizeof(line[1]), "webhook-timestamp: %lld", (long long)(now / NS_PER_SEC));
    snprintf(line[2], sizeof(line[2]), "webhook-signature: %s", buf_cstr(&sig));
    struct curl_slist *h = NULL;
    for (int k = 0; k < 3; k++)
        h = curl_slist_append(h, line[k]);
    *t_sent = clock_now_ns();
    long status = request(c, "POST", hook, body.data, h, &resp);
    bool ok =
        status == 200 && strstr(buf_cstr(&resp), duplicates ? "\"duplicate\"" : "\"accepted\"");
    buf_release(&body);
    buf_release(&sig);
    buf_release(&resp);
    return ok;
}

static void *client(void *arg)
{
    const struct buf *key = arg;
    CURL *c = curl_easy_init();
    int i;
    while ((i = atomic_fetch_add(&next_obj, 1)) < end_obj) {
        int64_t t;
        if (!deliver(c, key, i, &t))
            atomic_fetch_add(&bad, 1);
        if (!duplicates)
            sent_ns[i] = t;
    }
    curl_easy_cleanup(c);
    return NULL;
}

static double burst(const struct buf *key, int from, int to, int nthreads)
{
    pthread_t t[64];
    atomic_store(&next_obj, from);
    end_obj = to;
    int64_t t0 = clock_mono_ns();
    for (int k = 0; k < nthreads; k++)
        pthread_create(&t[k], NULL, client, (void *)key);
    for (int k = 0; k < nthreads; k++)
        pthread_join(t[k], NULL);
    return (double)(clock_mono_ns() - t0) / NS_PER_SEC;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Waits until objects [from, to) all have jobs; prints their latency percentiles. */
static void latencies(CURL *c, const char *what, int from, int to)
{
    int n = to - from, have = 0;
    int64_t *lat = xcalloc((size_t)n, sizeof(*lat));
    for (int tries = 0; tries < 600 && have < n; tries++) {
        have = 0;
        char path[128] = "/v1/jobs?limit=1000";
        for (;;) {
            struct buf resp = BUF_INIT;
            request(c, "GET", path, NULL, NULL, &resp);
            json_t *doc = json_loads(buf_cstr(&resp), 0, NULL);
            size_t k;
            json_t *j;
            json_array_foreach(json_object_get(doc, "items"), k, j)
            {
                const char *key =
                    jsonx_str(json_object_get(json_object_get(j, "spec"), "env"), "KEY");
                int i;
                int64_t created;
                if (key && sscanf(key, "bench/obj-%d.tar", &i) == 1 && i >= from && i < to &&
                    clock_parse(jsonx_str(j, "created_at"), &created) == 0) {
                    lat[have++ % n] = created - sent_ns[i];
                }
            }
            const char *next = jsonx_str(doc, "next_cursor");
            if (next)
                snprintf(path, sizeof(path), "/v1/jobs?limit=1000&cursor=%s", next);
            json_decref(doc);
            buf_release(&resp);
            if (!next)
                break;
        }
        if (have < n)
            usleep(100 * 1000);
    }
    qsort(lat, (size_t)n, sizeof(*lat), cmp);
    printf("%-44s %d of %d jobs, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", what, have, n,
           lat[n / 2] / 1e6, lat[n * 99 / 100] / 1e6, lat[n - 1] / 1e6);
    free(lat);
}

static pid_t start_daemon(const char *self, const char *data, bool sync_full)
{
    char bin[512], log[600];
    snprintf(bin, sizeof(bin), "%.*s/../trainyard", (int)(strrchr(self, '/') - self), self);
    snprintf(log, sizeof(log), "%s/out", data);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        setenv("TRAINYARD_ADMIN_TOKEN", TOKEN, 1);
        execl(bin, bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", data, "--log-level",
              "warn", "--http-threads", "4", sync_full ? "--sync-full" : "--no-sync-full",
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200 && !url[0]; i++) {
        usleep(50 * 1000);
        FILE *f = fopen(log, "r");
        char line[256];
        while (f && fgets(line, sizeof(line), f))
            if (sscanf(line, "trainyard: listening on %127s", url) == 1)
                break;
        if (f)
            fclose(f);
    }
    return url[0] ? pid : -1;
}

static int setup(CURL *c)
{
    struct buf r = BUF_INIT;
    long s1 = request(c, "POST", "/v1/templates",
                      "{\"name\":\"bench\",\"spec\":{\"name\":\"ingest-${S3_BUCKET}\","
                      "\"command\":[\"true\"],\"suspend\":true,\"env\":{\"KEY\":\"${S3_KEY}\"}}}",
                      NULL, &r);
    buf_reset(&r);
    long s2 = request(c, "POST", "/v1/triggers",
                      "{\"name\":\"bench\",\"template\":\"bench\",\"sender\":\"s3\","
                      "\"rule\":{\"bucket\":\"datasets\",\"prefix\":\"bench/\"},"
                      "\"auth\":{\"mode\":\"hmac\"}}",
                      NULL, &r);
    json_t *t = json_loads(buf_cstr(&r), 0, NULL);
    snprintf(hook, sizeof(hook), "/v1/hooks/s3/%s", jsonx_str(t, "id") ? jsonx_str(t, "id") : "");
    json_t *sec = json_array_get(json_object_get(t, "secrets"), 0);
    snprintf(secret, sizeof(secret), "%s", json_string_value(sec) ? json_string_value(sec) : "");
    json_decref(t);
    buf_release(&r);
    return s1 == 201 && s2 == 201 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int nthreads = 8, npos = 0, idle = 200;
    bool sync_full = true;
    nobj = 2000;
    for (int i = 1; i < argc; i++) {
        int v;
        if (strcmp(argv[i], "--no-sync-full") == 0)
            sync_full = false;
        else if (parse_int(argv[i], 1, npos ? 64 : 1000000, &v) == 0)
            *(npos++ ? &nthreads : &nobj) = v;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char data[] = "/tmp/ty-bench-XXXXXX";
    pid_t pid = mkdtemp(data) ? start_daemon(argv[0], data, sync_full) : -1;
    CURL *c = curl_easy_init();
    struct buf key = BUF_INIT;
    if (pid < 0 || setup(c) < 0 || stdwebhook_key(secret, &key, NULL) < 0) {
        fprintf(stderr, "bench_hooks: cannot start or set up build/trainyard\n");
        return 1;
    }
    sent_ns = xcalloc((size_t)(nobj + idle), sizeof(*sent_ns));
    printf("bench_hooks: %d deliveries, %d client threads, sync-full %s\n", nobj, nthreads,
           sync_full ? "on" : "off");
    double secs = burst(&key, 0, nobj, nthreads);
    printf("%-44s %.0f/s (%d in %.2f s, %d not accepted)\n",
           "deliveries verified, deduplicated, stored", nobj / secs, nobj, secs, atomic_load(&bad));
    latencies(c, "delivery -> job created, under that load", 0, nobj);
    for (int i = nobj; i < nobj + idle; i++) {
        if (!deliver(c, &key, i, &sent_ns[i]))
            atomic_fetch_add(&bad, 1);
        usleep(20 * 1000);
    }
    latencies(c, "delivery -> job created, one at a time", nobj, nobj + idle);
    duplicates = true;
    atomic_store(&bad, 0);
    secs = burst(&key, 0, nobj, nthreads);
    printf("%-44s %.0f/s (%d not answered duplicate)\n", "duplicate deliveries", nobj / secs,
           atomic_load(&bad));
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", data);
    int rc = system(cmd);
    curl_easy_cleanup(c);
    buf_release(&key);
    free(sent_ns);
    curl_global_cleanup();
    return rc == 0 ? 0 : 1;
}
