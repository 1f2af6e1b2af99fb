/*
 * Tests of store/usage: what a team lead's usage report rests on. Runs are recorded the way the
 * controller records them (store_job_update with the rank's end and its usage run) in a real
 * store, then read back by the scan behind GET /v1/usage and per job:
 *   - GPU-seconds = seconds x the GPUs of the rank (local: resources.gpus per rank;
 *     Kubernetes: the pod's share per rank); a run across midnight splits between the days;
 *   - any range is exact: whole days from the daily sums, the edge days run by run, runs still
 *     going up to now; grouped by a label, jobs without it come apart;
 *   - a run reported twice counts once, a corrected end corrects the sums and the totals;
 *   - usage stays when the job is deleted;
 *   - a change that fails records no usage (one transaction with the rank's end);
 *   - a run that never started counts nothing; a start of 1970 counts at most 400 days.
 */
#include <math.h>

#include "check.h"
#include "store/usage.h"
#include "store_fixture.h"

#define DAY  USAGE_NS_PER_DAY
#define HOUR (3600 * NS_PER_SEC)
static const int64_t T0 = 20000 * DAY; /* 2024-10-04T00:00:00Z */
#define NEAR(a, b) (fabs((a) - (b)) < 1e-6)

static int64_t job(struct store *st, const char *id, const char *owner, const char *spec,
                   const char *team)
{
    struct label l = { "team", team };
    struct job_new jn = { .id = id,
                          .name = id,
                          .executor = strstr(spec, "kubernetes") ? "kubernetes" : "local",
                          .spec = spec,
                          .nranks = 2,
                          .owner = owner,
                          .labels = team ? &l : NULL,
                          .nlabels = team ? 1 : 0,
                          .now = T0 };
    struct job_inserted out;
    return store_job_insert(st, &jn, &out, NULL) == 0 ? out.pk : 0;
}

static int set_state(struct store *st, int64_t pk, enum job_state s)
{
    struct job_update u = { .pk = pk, .set_state = true, .state = s, .now = T0 };
    return store_job_update(st, &u, NULL);
}

/* The rank runs from start to end, reported as the controller does; started 0: not reported. */
static int run(struct store *st, int64_t pk, const char *spec, int rank, int64_t start, int64_t end)
{
    struct rank_change up = {
        .rank = rank, .fields = RC_STATE | RC_STARTED, .state = RANK_RUNNING, .started_at = start
    };
    struct job_update u1 = { .pk = pk, .ranks = &up, .nranks = 1, .now = start };
    if (start && store_job_update(st, &u1, NULL) < 0)
        return -1;
    json_t *doc = json_loads(spec, 0, NULL);
    struct spec_view v;
    spec_view(doc, &v);
    struct usage_run r;
    usage_run_init(&r, &v, 0, rank, 0, end, "node-a", NULL, NULL);
    struct rank_change down = {
        .rank = rank, .fields = RC_STATE | RC_FINISHED, .state = RANK_SUCCEEDED, .finished_at = end
    };
    struct job_update u2 = { .pk = pk, .ranks = &down, .nranks = 1, .usage = &r, .now = end };
    int rc = store_job_update(st, &u2, NULL);
    json_decref(doc);
    return rc;
}

/* What a scan handed over, summed by the label's value (index 0: none, 1: "nlp"). */
struct sums {
    struct usage_figures all, by_label[2];
    double day_gpu[4]; /* days T0 .. T0+3 */
    int running_rows;
};

static int collect(void *ctx, const struct usage_row *r, struct err *err)
{
    (void)err;
    struct sums *s = ctx;
    struct usage_figures *parts[2] = { &s->all, &s->by_label[r->label ? 1 : 0] };
    for (int i = 0; i < 2; i++) {
        parts[i]->gpu_seconds += r->f.gpu_seconds;
        parts[i]->rank_seconds += r->f.rank_seconds;
        parts[i]->runs += r->f.runs;
        parts[i]->jobs += r->f.jobs;
    }
    if (r->day >= T0 / DAY && r->day < T0 / DAY + 4)
        s->day_gpu[r->day - T0 / DAY] += r->f.gpu_seconds;
    s->running_rows += r->running;
    return 0;
}

static bool by_class; /* read the sums per class (no owner, no queue) */

static struct sums scan(struct store *st, int64_t from, int64_t to, const char *key, int64_t now)
{
    struct sums s;
    memset(&s, 0, sizeof(s));
    struct usage_scan q = {
        .from = from, .to = to, .now = now, .label_key = key, .by_class = by_class
    };
    CHECK_INT(store_usage_scan(st, &q, collect, &s, NULL), 0);
    return s;
}

/* The sums per class are the sums per group, summed: the same answer, by either table. */
static void same_by_class(struct store *st, int64_t from, int64_t to, const char *key)
{
    by_class = false;
    struct sums g = scan(st, from, to, key, T0 + 3 * DAY);
    by_class = true;
    struct sums c = scan(st, from, to, key, T0 + 3 * DAY);
    by_class = false;
    CHECK(NEAR(g.all.gpu_seconds, c.all.gpu_seconds) &&
          NEAR(g.all.rank_seconds, c.all.rank_seconds));
    CHECK(g.all.runs == c.all.runs && g.all.jobs == c.all.jobs);
    CHECK(NEAR(g.by_label[0].gpu_seconds, c.by_label[0].gpu_seconds) &&
          NEAR(g.by_label[1].gpu_seconds, c.by_label[1].gpu_seconds));
    CHECK(NEAR(g.day_gpu[0], c.day_gpu[0]) && NEAR(g.day_gpu[1], c.day_gpu[1]));
}

static void total_row(void *ctx, const struct usage_group *g, const struct usage_figures *f)
{
    (void)g;
    struct usage_figures *t = ctx;
    t->gpu_seconds += f->gpu_seconds;
    t->rank_seconds += f->rank_seconds;
    t->runs += f->runs;
}

static struct usage_figures totals(struct store *st)
{
    struct usage_figures t = { 0 };
    CHECK_INT(store_usage_totals(st, total_row, &t, NULL), 0);
    return t;
}

static const char SPEC_A[] = "{\"name\":\"a\",\"executor\":\"local\",\"procs_per_node\":2,"
                             "\"resources\":{\"gpus\":2}}";
/* A pod of 2 ranks with 8 GPUs: 4 per rank. */
static const char SPEC_B[] = "{\"name\":\"b\",\"executor\":\"kubernetes\",\"procs_per_node\":2,"
                             "\"resources\":{\"gpus\":8},\"placement\":{\"instance_type\":"
                             "\"p4d.24xlarge\",\"capacity_type\":\"spot\"}}";

/* Job a: rank 0 from 23:00 to 01:00 the next day, rank 1 from 01:00 to 02:00 (2 GPUs each);
 * job b: rank 0 from 03:00 to 04:00 with 4 GPUs. */
static void ranges(struct store *st, int64_t a, int64_t b)
{
    CHECK_INT(run(st, a, SPEC_A, 1, T0 + 1 * HOUR, T0 + 2 * HOUR), 0);
    CHECK_INT(run(st, a, SPEC_A, 0, T0 + 23 * HOUR, T0 + 25 * HOUR), 0);
    CHECK_INT(run(st, b, SPEC_B, 0, T0 + 3 * HOUR, T0 + 4 * HOUR), 0);

    struct sums s = scan(st, T0, T0 + 2 * DAY, NULL, T0 + 3 * DAY); /* whole days */
    CHECK(NEAR(s.all.gpu_seconds, (3 * 2 + 1 * 4) * 3600.0));
    CHECK(NEAR(s.all.rank_seconds, 4 * 3600.0));
    CHECK_INT(s.all.runs, 3);
    CHECK_INT(s.all.jobs, 2);
    CHECK(NEAR(s.day_gpu[0], (2 * 2 + 4) * 3600.0)); /* 23:00-24:00 and 01:00-02:00, and b */
    CHECK(NEAR(s.day_gpu[1], 2 * 3600.0));           /* 00:00-01:00 */

    s = scan(st, T0 + 23 * HOUR + HOUR / 2, T0 + 24 * HOUR + HOUR / 2, NULL, T0 + 3 * DAY);
    CHECK(NEAR(s.all.gpu_seconds, 2 * 3600.0)); /* one hour of rank 0, across midnight */
    CHECK_INT(s.all.runs, 0);                   /* it ended after the range */
    s = scan(st, T0 + 24 * HOUR + HOUR / 2, T0 + 26 * HOUR, NULL, T0 + 3 * DAY);
    CHECK(NEAR(s.all.gpu_seconds, 3600.0));
    CHECK_INT(s.all.runs, 1);
    CHECK_INT(s.all.jobs, 0); /* job a counts where its first run ended: 02:00 on day 0 */
    s = scan(st, T0 + HOUR + HOUR / 4, T0 + 3 * HOUR + HOUR / 2, NULL, T0 + 3 * DAY);
    CHECK(NEAR(s.all.gpu_seconds, (0.75 * 2 + 0.5 * 4) * 3600.0));
    CHECK_INT(s.all.jobs, 1);
    /* a range over whole days and two edges: the same as its parts */
    struct sums all = scan(st, T0 - DAY / 2, T0 + 2 * DAY + DAY / 2, "team", T0 + 3 * DAY);
    CHECK(NEAR(all.all.gpu_seconds, (3 * 2 + 1 * 4) * 3600.0));
    CHECK(NEAR(all.by_label[1].gpu_seconds, 6 * 3600.0)); /* team nlp: job a */
    CHECK(NEAR(all.by_label[0].gpu_seconds, 4 * 3600.0)); /* no team: job b */
    CHECK_INT(all.by_label[1].runs, 2);
    CHECK_INT(all.by_label[0].jobs, 1);
    s = scan(st, T0, T0 + 2 * DAY, "team", T0 + 3 * DAY);
    CHECK(NEAR(s.by_label[0].gpu_seconds, 4 * 3600.0) &&
          NEAR(s.by_label[1].rank_seconds, 3 * 3600.0));
    /* only one value of the label: the rows of jobs with it, nothing of the others */
    struct usage_scan only = {
        .from = T0, .to = T0 + 2 * DAY, .now = T0, .label_key = "team", .label_value = "nlp"
    };
    memset(&s, 0, sizeof(s));
    CHECK_INT(store_usage_scan(st, &only, collect, &s, NULL), 0);
    CHECK(NEAR(s.by_label[1].gpu_seconds, 6 * 3600.0) && s.by_label[0].gpu_seconds == 0);
    only.by_class = true;
    memset(&s, 0, sizeof(s));
    CHECK_INT(store_usage_scan(st, &only, collect, &s, NULL), 0);
    CHECK(NEAR(s.by_label[1].gpu_seconds, 6 * 3600.0) && s.by_label[0].gpu_seconds == 0);
    by_class = true; /* per class, the whole days read with no owner or queue */
    s = scan(st, T0, T0 + 2 * DAY, "team", T0 + 3 * DAY);
    by_class = false;
    CHECK(NEAR(s.by_label[1].gpu_seconds, 6 * 3600.0) &&
          NEAR(s.by_label[0].gpu_seconds, 4 * 3600.0));
    CHECK_INT(s.all.jobs, 2);
    same_by_class(st, T0, T0 + 2 * DAY, NULL);
    same_by_class(st, T0 - DAY / 2, T0 + 2 * DAY + DAY / 2, "team");
}

static void per_job(struct store *st)
{
    struct usage_job_run *r = NULL;
    size_t n = 0;
    char executor[32] = "";
    CHECK_INT(store_usage_job(st, "job-a", T0 + 3 * DAY, &r, &n, executor, NULL), 0);
    CHECK_INT(n, 2);
    CHECK_STR(executor, "local");
    if (n == 2) {
        CHECK(r[0].rank == 0 && r[0].started_at == T0 + 23 * HOUR &&
              r[0].finished_at == T0 + 25 * HOUR && r[0].counted_ns == 2 * HOUR);
        CHECK(r[0].gpus == 2 && !r[0].running);
        CHECK_STR(r[0].node, "node-a");
    }
    free(r);
    CHECK_INT(store_usage_job(st, "job-b", T0 + 3 * DAY, &r, &n, executor, NULL), 0);
    CHECK(n == 1 && r[0].gpus == 4);
    CHECK_STR(n ? r[0].instance_type : NULL, "p4d.24xlarge"); /* from the placement */
    CHECK_STR(n ? r[0].capacity_type : NULL, "spot");
    free(r);
    struct err err;
    err_init(&err);
    executor[0] = '\0'; /* not a job the caller holds */
    CHECK_INT(store_usage_job(st, "nope", T0, &r, &n, executor, &err), -1);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    err_release(&err);
}

/* Reported again: counted once; with a later end: corrected, totals too. */
static void again(struct store *st, int64_t a)
{
    struct usage_figures before = totals(st);
    CHECK_INT(run(st, a, SPEC_A, 1, 0, T0 + 2 * HOUR), 0);
    struct usage_figures same = totals(st);
    CHECK(NEAR(same.gpu_seconds, before.gpu_seconds) && same.runs == before.runs);
    CHECK_INT(run(st, a, SPEC_A, 1, 0, T0 + 3 * HOUR), 0);
    struct usage_figures after = totals(st);
    CHECK(NEAR(after.gpu_seconds, before.gpu_seconds + 2 * 3600.0));
    CHECK_INT(after.runs, before.runs);
    struct sums s = scan(st, T0, T0 + DAY, NULL, T0 + 3 * DAY);
    CHECK(NEAR(s.day_gpu[0], (2 * 3 + 4) * 3600.0));
    CHECK_INT(s.all.runs, 2);
    CHECK(NEAR(after.gpu_seconds, (4 * 2 + 4) * 3600.0));
    same_by_class(st, T0, T0 + 2 * DAY, "team"); /* corrected in the class sums too */
}

/* A change that fails records nothing of its usage run. */
static void atomic(struct store *st, int64_t a)
{
    struct usage_figures before = totals(st);
    json_t *doc = json_loads(SPEC_A, 0, NULL);
    struct spec_view v;
    spec_view(doc, &v);
    struct usage_run r;
    usage_run_init(&r, &v, 0, 0, T0 + 5 * DAY, T0 + 6 * DAY, NULL, NULL, NULL);
    struct rank_change rc = { .rank = 0, .fields = RC_FINISHED, .finished_at = T0 + 6 * DAY };
    struct job_update u = {
        .pk = a, .set_state = true, .state = JOB_QUEUED, .ranks = &rc, .nranks = 1, .usage = &r
    }; /* succeeded -> queued is not a transition */
    struct err err;
    err_init(&err);
    CHECK_INT(store_job_update(st, &u, &err), -1);
    CHECK_INT(err.code, ERR_CONFLICT);
    err_release(&err);
    json_decref(doc);
    struct usage_figures after = totals(st);
    CHECK(NEAR(after.gpu_seconds, before.gpu_seconds) && after.runs == before.runs);
}

/* A rank running now counts up to now; one that never started counts nothing. */
static void live(struct store *st)
{
    int64_t c = job(st, "job-c", "carol", SPEC_A, "nlp");
    CHECK_INT(set_state(st, c, JOB_STARTING), 0);
    int64_t now = T0 + 2 * DAY + HOUR / 2;
    struct rank_change up = { .rank = 0,
                              .fields = RC_STATE | RC_STARTED,
                              .state = RANK_RUNNING,
                              .started_at = T0 + 2 * DAY - HOUR / 2 };
    struct job_update u = { .pk = c, .ranks = &up, .nranks = 1, .now = now };
    CHECK_INT(store_job_update(st, &u, NULL), 0);
    struct sums s = scan(st, T0 + 2 * DAY - HOUR, T0 + 3 * DAY, "team", now);
    CHECK(NEAR(s.all.gpu_seconds, 2 * 3600.0)); /* 1 h to now x 2 GPUs, across midnight */
    CHECK(NEAR(s.by_label[1].gpu_seconds, 2 * 3600.0));
    CHECK(NEAR(s.day_gpu[1], 3600.0) && NEAR(s.day_gpu[2], 3600.0));
    CHECK_INT(s.running_rows, 2);
    CHECK_INT(s.all.runs, 0);
    struct usage_job_run *r = NULL;
    size_t n = 0;
    char executor[32] = "";
    CHECK_INT(store_usage_job(st, "job-c", now, &r, &n, executor, NULL), 0);
    CHECK(n == 1 && r[0].running && r[0].counted_ns == HOUR && r[0].gpus == 2);
    free(r);
    /* rank 1 never started: its end counts nothing */
    struct usage_figures before = totals(st);
    CHECK_INT(run(st, c, SPEC_A, 1, 0, now), 0);
    CHECK_INT(totals(st).runs, before.runs);
}

static void deleted(struct store *st, int64_t a)
{
    struct sums before = scan(st, T0, T0 + 2 * DAY, "team", T0 + 3 * DAY);
    CHECK_INT(store_job_delete(st, a, NULL), 0);
    struct sums after = scan(st, T0, T0 + 2 * DAY, "team", T0 + 3 * DAY);
    CHECK(NEAR(after.all.gpu_seconds, before.all.gpu_seconds));
    CHECK(NEAR(after.by_label[1].gpu_seconds, before.by_label[1].gpu_seconds));
    after = scan(st, T0 + HOUR, T0 + 25 * HOUR, "team", T0 + 3 * DAY); /* edge days: runs */
    CHECK(NEAR(after.by_label[1].gpu_seconds, 8 * 3600.0));
    struct usage_job_run *r = NULL;
    size_t n = 0;
    char executor[32] = "";
    CHECK_INT(store_usage_job(st, "job-a", T0 + 3 * DAY, &r, &n, executor, NULL), 0);
    CHECK_INT(n, 2);
    free(r);
}

/* A start of 1970 (a clock gone wrong) counts USAGE_MAX_RUN_NS, not 55 years of rows. */
static void bounded(struct store *st)
{
    int64_t d = job(st, "job-d", "dave", SPEC_A, NULL);
    struct usage_figures before = totals(st);
    CHECK_INT(run(st, d, SPEC_A, 0, 1, T0), 0);
    struct usage_figures after = totals(st);
    CHECK(NEAR(after.rank_seconds - before.rank_seconds, USAGE_MAX_RUN_NS / 1e9));
}

int main(void)
{
    struct fixture f;
    struct store *st = fixture_open(&f);
    CHECK(st != NULL);
    if (!st)
        return check_done();
    int64_t a = job(st, "job-a", "alice", SPEC_A, "nlp"), b = job(st, "job-b", "bob", SPEC_B, NULL);
    CHECK(a > 0 && b > 0);
    ranges(st, a, b);
    per_job(st);
    again(st, a);
    CHECK_INT(set_state(st, a, JOB_STARTING), 0);
    CHECK_INT(set_state(st, a, JOB_SUCCEEDED), 0);
    atomic(st, a);
    live(st);
    deleted(st, a);
    bounded(st);
    fixture_close(&f);
    return check_done();
}
