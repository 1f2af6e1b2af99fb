/*
 * bench_usage: GET /v1/usage over a year of 1,000 jobs a day (goal: <= 100 ms a query).
 *
 * Fills a store through the real write path (store_job_insert, then each rank's end with its
 * usage run, as the controller records it): 365 days of 1,000 jobs, each 1, 2, 4 or 8 ranks for
 * 10 min to 6 h (some across midnight), from 40 owners in 8 teams (label team) and 30 projects
 * (label project), 3 queues, local (30%) and Kubernetes jobs on 3 instance types, on-demand or
 * spot. Then times what the handler does (the scan, the sums, pricing, the JSON text) for the
 * queries a team lead asks, each the best of 7, with the rows the scan read and the groups:
 *
 *   year, totals           from a year ago (not at midnight: two edge days read run by run)
 *   year by owner          ... and so on, see queries[] below
 *
 *   bench_usage [DIR [QUERY]]  DIR keeps the database: a second run reuses it (filling takes
 *                              minutes); QUERY: only the queries whose name holds it
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/usage_agg.h"
#include "api/usage_price.h"
#include "core/clock.h"
#include "core/xalloc.h"
#include "store/jobs.h"
#include "store/usage.h"

#define DAYS     365
#define PER_DAY  1000
#define THREADS  4
#define OWNERS   40
#define RUNS     7
#define MAX_RANK 8

static const char *const teams[] = { "nlp",   "vision",  "speech", "rl",
                                     "infra", "ranking", "ads",    "research" };
static const char *const queues[] = { "", "research", "prod" };
static const char *const types[] = { "p4d.24xlarge", "p5.48xlarge", "g6e.12xlarge" };

struct filler {
    struct store *st;
    int64_t day0;
    int first_day, last_day; /* [first, last) */
    int64_t writes;
};

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void one_job(struct filler *f, int day, int n, uint64_t *seed)
{
    int owner = (int)(rnd(seed) % OWNERS), ranks = 1 << (rnd(seed) % 4);
    bool local = owner % 10 < 3;
    char id[32], name[32], owner_name[16], project[16], spec[256];
    snprintf(id, sizeof(id), "b%03d%08d", day, n);
    snprintf(name, sizeof(name), "train-%d", n);
    snprintf(owner_name, sizeof(owner_name), "user-%02d", owner);
    snprintf(project, sizeof(project), "proj-%02d", (int)(rnd(seed) % 30));
    const char *capacity = (owner + day) % 4 == 0 ? "spot" : "on-demand";
    if (local)
        snprintf(spec, sizeof(spec),
                 "{\"name\":\"%s\",\"executor\":\"local\",\"procs_per_node\":%d,"
                 "\"resources\":{\"gpus\":1}}",
                 name, ranks);
    else
        snprintf(spec, sizeof(spec),
                 "{\"name\":\"%s\",\"executor\":\"kubernetes\",\"procs_per_node\":%d,"
                 "\"resources\":{\"gpus\":8},\"placement\":{\"instance_type\":\"%s\","
                 "\"capacity_type\":\"%s\"}}",
                 name, ranks, types[owner % 3], capacity);
    struct label labels[2] = { { "team", teams[owner % 8] }, { "project", project } };
    int64_t start =
        f->day0 + (int64_t)day * USAGE_NS_PER_DAY + (int64_t)(rnd(seed) % 86400) * NS_PER_SEC;
    int64_t end = start + (int64_t)(600 + rnd(seed) % (6 * 3600 - 600)) * NS_PER_SEC;
    struct job_new jn = { .id = id,
                          .name = name,
                          .executor = local ? "local" : "kubernetes",
                          .spec = spec,
                          .nranks = ranks,
                          .queue = queues[owner % 3],
                          .owner = owner_name,
                          .labels = labels,
                          .nlabels = 2,
                          .now = start };
    struct job_inserted out;
    if (store_job_insert(f->st, &jn, &out, NULL) < 0)
        abort();
    json_t *doc = json_loads(spec, 0, NULL);
    struct spec_view v;
    spec_view(doc, &v);
    for (int r = 0; r < ranks; r++) {
        struct usage_run run;
        int64_t s = start + r * NS_PER_MS, e = end - r * NS_PER_MS;
        usage_run_init(&run, &v, 0, r, s, e, "node-1", NULL, NULL);
        struct rank_change rc = {
            .rank = r, .fields = RC_STATE | RC_FINISHED, .state = RANK_SUCCEEDED, .finished_at = e
        };
        struct job_update u = { .pk = out.pk, .ranks = &rc, .nranks = 1, .usage = &run, .now = e };
        if (store_job_update(f->st, &u, NULL) < 0)
            abort();
    }
    json_decref(doc);
    f->writes += 1 + ranks;
}

static void *fill(void *arg)
{
    struct filler *f = arg;
    uint64_t seed = 88172645463325252ULL ^ (uint64_t)f->first_day;
    for (int d = f->first_day; d < f->last_day; d++)
        for (int n = 0; n < PER_DAY; n++)
            one_job(f, d, n, &seed);
    return NULL;
}

struct query {
    const char *what;
    int64_t days;   /* the range: this many days before now */
    const char *by; /* group_by */
    const char *label;
};

static const struct query queries[] = {
    { "year, totals", 365, "", NULL },
    { "year by owner", 365, "owner", NULL },
    { "year by team", 365, "label:team", NULL },
    { "year by team and day", 365, "label:team,day", NULL },
    { "year by project (30, any owner)", 365, "label:project", NULL },
    { "year of project proj-07 by owner", 365, "owner", "project=proj-07" },
    { "year by instance type, capacity", 365, "instance_type,capacity_type", NULL },
    { "30 days by owner and day", 30, "owner,day", NULL },
    { "1 day by owner", 1, "owner", NULL },
};

struct counted {
    struct usage_agg *agg;
    int64_t rows;
};

static int count_row(void *ctx, const struct usage_row *r, struct err *err)
{
    struct counted *c = ctx;
    c->rows++;
    return usage_agg_add(c->agg, r, err);
}

/* One query as usage_get() answers it, without HTTP. Returns ns; fills rows and groups. */
static int64_t run_query(struct store *st, const struct query *q, int64_t now,
                         const struct prices *p, int64_t *rows, size_t *groups, size_t *bytes)
{
    int64_t t0 = clock_mono_ns();
    struct usage_query uq = { .from = now - q->days * USAGE_NS_PER_DAY, .to = now, .limit = 1000 };
    if (usage_query_group_by(&uq, q->by, NULL) < 0 ||
        (q->label && usage_query_label(&uq, q->label, NULL) < 0))
        abort();
    struct counted c = { .agg = usage_agg_new(&uq, p) };
    struct usage_scan scan = { .from = uq.from,
                               .to = uq.to,
                               .now = now,
                               .label_key = uq.label_key[0] ? uq.label_key : NULL,
                               .label_value = uq.label_value,
                               .by_class = usage_query_by_class(&uq) };
    if (store_usage_scan(st, &scan, count_row, &c, NULL) < 0)
        abort();
    json_t *doc = usage_agg_json(c.agg);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(12));
    int64_t ns = clock_mono_ns() - t0;
    *rows = c.rows;
    *groups = json_array_size(json_object_get(doc, "groups"));
    *bytes = strlen(text);
    free(text);
    json_decref(doc);
    usage_agg_free(c.agg);
    return ns;
}

static void fill_store(struct store *st, int64_t day0)
{
    struct filler f[THREADS];
    pthread_t th[THREADS];
    int64_t t0 = clock_mono_ns(), writes = 0;
    for (int i = 0; i < THREADS; i++) {
        f[i] = (struct filler){ .st = st,
                                .day0 = day0,
                                .first_day = DAYS * i / THREADS,
                                .last_day = DAYS * (i + 1) / THREADS };
        pthread_create(&th[i], NULL, fill, &f[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        writes += f[i].writes;
    }
    double s = (double)(clock_mono_ns() - t0) / 1e9;
    printf("filled %d days x %d jobs: %lld writes in %.0f s (%.0f writes/s)\n", DAYS, PER_DAY,
           (long long)writes, s, (double)writes / s);
}

int main(int argc, char **argv)
{
    char dir[256], path[300];
    snprintf(dir, sizeof(dir), "%s", argc > 1 ? argv[1] : "/tmp/ty-bench-usage");
    mkdir(dir, 0700);
    snprintf(path, sizeof(path), "%s/trainyard.db", dir);
    bool fresh = access(path, F_OK) != 0;
    struct store_options so = { .busy_timeout_ms = 5000, .max_batch = 256 };
    struct err err;
    err_init(&err);
    struct store *st = store_open(path, &so, &err);
    if (!st) {
        fprintf(stderr, "bench_usage: %s\n", err.msg);
        return 1;
    }
    /* the year ends today; "now" is the middle of today so that both ends are edge days */
    int64_t today = clock_now_ns() / USAGE_NS_PER_DAY * USAGE_NS_PER_DAY;
    int64_t day0 = today - (DAYS - 1) * USAGE_NS_PER_DAY, now = today + USAGE_NS_PER_DAY / 2;
    if (fresh)
        fill_store(st, day0);
    else
        printf("reusing %s\n", path);
    json_t *pdoc = json_loads("{\"prices\":[{\"instance_type\":\"p4d.24xlarge\",\"gpu_hour\":4.1},"
                              "{\"instance_type\":\"p5.48xlarge\",\"gpu_hour\":6.9},"
                              "{\"instance_type\":\"*\",\"capacity_type\":\"spot\",\"gpu_hour\":"
                              "1.5},{\"instance_type\":\"g6e.12xlarge\",\"gpu_hour\":2.2}]}",
                              0, NULL);
    json_t *canon = prices_check(pdoc, NULL);
    struct prices p;
    prices_init(&p, canon);
    printf("%-34s %10s %10s %8s %8s\n", "query", "best ms", "median ms", "rows", "groups");
    for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
        if (argc > 2 && !strstr(queries[i].what, argv[2]))
            continue;
        int64_t t[RUNS], rows = 0;
        size_t groups = 0, bytes = 0;
        for (int k = 0; k < RUNS; k++)
            t[k] = run_query(st, &queries[i], now, &p, &rows, &groups, &bytes);
        for (int a = 0; a < RUNS; a++) /* sort the times */
            for (int b = a + 1; b < RUNS; b++)
                if (t[b] < t[a]) {
                    int64_t x = t[a];
                    t[a] = t[b];
                    t[b] = x;
                }
        printf("%-34s %10.1f %10.1f %8lld %8zu\n", queries[i].what, (double)t[0] / 1e6,
               (double)t[RUNS / 2] / 1e6, (long long)rows, groups);
    }
    prices_release(&p);
    json_decref(canon);
    json_decref(pdoc);
    store_close(st);
    err_release(&err);
    return 0;
}
