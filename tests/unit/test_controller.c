/*
 * Tests of server/control/controller: the real controller (its own thread) against a real store
 * in a temporary SQLite file and a fake executor that implements server/control/executor.h the
 * way the local one behaves: ranks hold slots, start() reports every rank running, stop() ends
 * the ranks it stops (as SIGTERM would), adopt() finds ranks a previous daemon left running.
 *
 * What users rely on: admission by priority within the slots, without small jobs overtaking a
 * large one that waits; a rank's failure stopping the others and ending the attempt with the
 * first failure named; a restart under restart.policy (and reports of the old attempt
 * ignored); a cancel that completes only once every rank ended; adoption of in-flight jobs by a
 * restarted controller.
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <time.h>

#include "check.h"
#include "server/control/controller.h"
#include "store_fixture.h"

#define WAIT_NS  (10 * NS_PER_SEC) /* sanitizers on a busy machine: generous */
#define QUIET_MS 300               /* ~30 controller ticks: long enough for a wrong move */
#define MAX_JOBS 16
#define MAX_RANK 8

/* ---- the fake executor ---- */

struct fake_job {
    int64_t pk;
    char id[32];
    int nranks, attempt;
    bool live[MAX_RANK];
    int starts, stops, adopts;
    int tokens; /* starts that handed the ranks a token to call the daemon with */
};

struct fake {
    struct executor ex;
    pthread_mutex_t lock;
    int slots;
    bool stop_ends_ranks; /* stop() ends every live rank at once, as SIGTERM would */
    bool start_reports;   /* start() reports every rank running (else the test does) */
    struct fake_job jobs[MAX_JOBS];
    size_t njobs;
    char started[256]; /* "id/attempt " per start(), in order */
};

/* The job's record, made on first use. Caller holds f->lock. */
static struct fake_job *fake_job(struct fake *f, int64_t pk, const char *id)
{
    for (size_t i = 0; i < f->njobs; i++)
        if (f->jobs[i].pk == pk)
            return &f->jobs[i];
    struct fake_job *fj = &f->jobs[f->njobs++];
    memset(fj, 0, sizeof(*fj));
    fj->pk = pk;
    snprintf(fj->id, sizeof(fj->id), "%s", id ? id : "");
    return fj;
}

static void report(struct fake *f, int64_t pk, int attempt, int rank, enum rank_state state,
                   int exit_code, int sig)
{
    struct rank_report r = { .job_pk = pk,
                             .attempt = attempt,
                             .rank = rank,
                             .state = state,
                             .pid = 1000 + rank,
                             .node = "node-a",
                             .exit_code = exit_code,
                             .signal = sig,
                             .reason = state == RANK_RUNNING     ? "Started"
                                       : state == RANK_SUCCEEDED ? "Completed"
                                       : sig                     ? "Signal"
                                                                 : "Error" };
    executor_report_rank(&f->ex, &r);
}

static int fake_fits(struct executor *ex, const struct job *j, const struct spec_view *v)
{
    (void)j;
    struct fake *f = ex->impl;
    pthread_mutex_lock(&f->lock);
    int used = 0;
    for (size_t i = 0; i < f->njobs; i++)
        for (int r = 0; r < f->jobs[i].nranks; r++)
            used += f->jobs[i].live[r];
    pthread_mutex_unlock(&f->lock);
    return used + v->nranks <= f->slots;
}

static int fake_start(struct executor *ex, const struct job *j, const struct spec_view *v,
                      int attempt, const char *token, struct err *err)
{
    (void)err;
    struct fake *f = ex->impl;
    pthread_mutex_lock(&f->lock);
    struct fake_job *fj = fake_job(f, j->pk, j->id);
    fj->tokens += token && token[0];
    fj->nranks = v->nranks;
    fj->attempt = attempt;
    fj->starts++;
    for (int r = 0; r < v->nranks; r++)
        fj->live[r] = true;
    size_t len = strlen(f->started);
    snprintf(f->started + len, sizeof(f->started) - len, "%s/%d ", j->id, attempt);
    bool reports = f->start_reports;
    pthread_mutex_unlock(&f->lock);
    for (int r = 0; r < v->nranks && reports; r++)
        report(f, j->pk, attempt, r, RANK_RUNNING, -1, 0);
    return 0;
}

static int fake_stop(struct executor *ex, const struct job *j, int64_t grace_ns, struct err *err)
{
    (void)grace_ns;
    (void)err;
    struct fake *f = ex->impl;
    bool end[MAX_RANK] = { false };
    pthread_mutex_lock(&f->lock);
    struct fake_job *fj = fake_job(f, j->pk, j->id);
    fj->stops++;
    int attempt = fj->attempt, n = fj->nranks;
    for (int r = 0; r < n && f->stop_ends_ranks; r++) {
        end[r] = fj->live[r];
        fj->live[r] = false;
    }
    pthread_mutex_unlock(&f->lock);
    for (int r = 0; r < n; r++)
        if (end[r])
            report(f, j->pk, attempt, r, RANK_FAILED, -1, SIGTERM);
    return 0;
}

/* Finds what fake_seed() left "running" from before the restart; 1 when nothing was started. */
static int fake_adopt(struct executor *ex, const struct job *j, const struct spec_view *v,
                      struct err *err)
{
    (void)v;
    (void)err;
    struct fake *f = ex->impl;
    pthread_mutex_lock(&f->lock);
    struct fake_job *fj = fake_job(f, j->pk, j->id);
    fj->adopts++;
    int n = fj->nranks, attempt = fj->attempt;
    bool live[MAX_RANK];
    memcpy(live, fj->live, sizeof(live));
    pthread_mutex_unlock(&f->lock);
    if (n == 0)
        return 1;
    for (int r = 0; r < n; r++)
        if (live[r])
            report(f, j->pk, attempt, r, RANK_RUNNING, -1, 0);
    return 0;
}

static void fake_poll(struct executor *ex)
{
    (void)ex;
}

static void fake_init(struct fake *f, int slots)
{
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->lock, NULL);
    f->slots = slots;
    f->stop_ends_ranks = true;
    f->start_reports = true;
    f->ex = (struct executor){ .name = "fake",
                               .fits = fake_fits,
                               .start = fake_start,
                               .stop = fake_stop,
                               .adopt = fake_adopt,
                               .poll = fake_poll,
                               .impl = f };
}

static void fake_release(struct fake *f)
{
    pthread_mutex_destroy(&f->lock);
}

/* A rank of the current attempt ends: exit code, or killed by sig. Any thread. */
static void fake_end(struct fake *f, int64_t pk, int rank, int exit_code, int sig)
{
    pthread_mutex_lock(&f->lock);
    struct fake_job *fj = fake_job(f, pk, NULL);
    fj->live[rank] = false;
    int attempt = fj->attempt;
    pthread_mutex_unlock(&f->lock);
    report(f, pk, attempt, rank, exit_code == 0 && !sig ? RANK_SUCCEEDED : RANK_FAILED,
           sig ? -1 : exit_code, sig);
}

/* Ranks of attempt `attempt` that a previous daemon left running (for adopt). */
static void fake_seed(struct fake *f, int64_t pk, int nranks, int attempt)
{
    pthread_mutex_lock(&f->lock);
    struct fake_job *fj = fake_job(f, pk, NULL);
    fj->nranks = nranks;
    fj->attempt = attempt;
    for (int r = 0; r < nranks; r++)
        fj->live[r] = true;
    pthread_mutex_unlock(&f->lock);
}

/* A counter of the job's record (starts, stops, adopts), read under the lock. */
#define FAKE_COUNT(f, pk, field) fake_count((f), (pk), offsetof(struct fake_job, field))

static int fake_count(struct fake *f, int64_t pk, size_t offset)
{
    pthread_mutex_lock(&f->lock);
    int n = *(int *)((char *)fake_job(f, pk, NULL) + offset);
    pthread_mutex_unlock(&f->lock);
    return n;
}

static void fake_started(struct fake *f, char *out, size_t size)
{
    pthread_mutex_lock(&f->lock);
    snprintf(out, size, "%s", f->started);
    pthread_mutex_unlock(&f->lock);
}

/* ---- the controller, the store, and what the callbacks saw ---- */

struct seen {
    pthread_mutex_t lock;
    int64_t pk[256];
    enum job_state state[256];
    int n;
};

static struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void on_job_state(void *ctx, int64_t pk, enum job_state state)
{
    (void)ctx;
    pthread_mutex_lock(&seen.lock);
    if (seen.n < 256) {
        seen.pk[seen.n] = pk;
        seen.state[seen.n++] = state;
    }
    pthread_mutex_unlock(&seen.lock);
}

/* The states the callback reported for pk, as "starting running ..." */
static void sleep_ms(int ms);

static void seen_states_now(int64_t pk, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    pthread_mutex_lock(&seen.lock);
    for (int i = 0; i < seen.n; i++)
        if (seen.pk[i] == pk && len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%s", len ? " " : "",
                                    jobstate_name(seen.state[i]));
    pthread_mutex_unlock(&seen.lock);
}

/* The states the callback saw for pk, once it has seen the one the store holds now: the callback
 * runs just after the commit, on the controller's thread, so a test that saw the store change
 * may ask before it has. */
static void seen_states(struct store *st, int64_t pk, char *out, size_t size)
{
    struct job *j = store_job_get_pk(st, pk, NULL);
    const char *now = j ? jobstate_name(j->state) : "";
    int64_t until = clock_mono_ns() + WAIT_NS;
    for (;;) {
        seen_states_now(pk, out, size);
        const char *last = strrchr(out, ' ');
        last = last ? last + 1 : out;
        if (strcmp(last, now) == 0 || clock_mono_ns() > until)
            break;
        sleep_ms(5);
    }
    job_free(j);
}

static struct controller *start_controller_with(struct store *st, struct executor **ex,
                                                struct controller_options o)
{
    struct controller_callbacks cb = { .job_state = on_job_state };
    struct controller *c = controller_new(st, ex, 1, &o, &cb);
    struct err err;
    err_init(&err);
    CHECK_INT(controller_start(c, &err), 0);
    err_release(&err);
    return c;
}

/* Restarts at once, as the daemon's --restart-backoff 0 would. */
static struct controller *start_controller(struct store *st, struct executor **ex)
{
    struct controller_options o = { .stop_grace_ns = NS_PER_SEC, .tick_ns = 10 * NS_PER_MS };
    return start_controller_with(st, ex, o);
}

/* A queued job for the fake executor; extra is more of the spec (",\"restart\":{...}"). */
static int64_t submit(struct store *st, const char *id, int nranks, int priority, const char *extra)
{
    char spec[512];
    snprintf(spec, sizeof(spec), "{\"name\":\"%s\",\"executor\":\"fake\",\"procs_per_node\":%d%s}",
             id, nranks, extra ? extra : "");
    struct job_new jn = { .id = id,
                          .name = id,
                          .executor = "fake",
                          .spec = spec,
                          .nranks = nranks,
                          .priority = priority,
                          .owner = "test",
                          .now = clock_now_ns() };
    struct job_inserted out = { 0 };
    struct err err;
    err_init(&err);
    if (store_job_insert(st, &jn, &out, &err) < 0)
        fprintf(stderr, "submit %s: %s\n", id, err.msg);
    err_release(&err);
    return out.pk;
}

static struct job *job(struct store *st, int64_t pk)
{
    return store_job_get_pk(st, pk, NULL);
}

static enum job_state state_of(struct store *st, int64_t pk)
{
    struct job *j = job(st, pk);
    enum job_state s = j ? j->state : JOB_STATE_COUNT;
    job_free(j);
    return s;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* Waits until the job is in state s; false (and says so) after WAIT_NS. */
static bool reach(struct store *st, int64_t pk, enum job_state s, int line)
{
    int64_t until = clock_mono_ns() + WAIT_NS;
    enum job_state now;
    while ((now = state_of(st, pk)) != s && clock_mono_ns() < until)
        sleep_ms(5);
    if (now != s)
        fprintf(stderr, "line %d: job %lld is %s, expected %s\n", line, (long long)pk,
                jobstate_name(now), jobstate_name(s));
    return now == s;
}
#define REACH(st, pk, s) CHECK(reach((st), (pk), (s), __LINE__))

/* The job stays in state s for QUIET_MS while the controller keeps reconciling. */
static bool stays(struct store *st, struct controller *c, int64_t pk, enum job_state s)
{
    controller_wake(c, pk);
    sleep_ms(QUIET_MS);
    return state_of(st, pk) == s;
}

static const char *rank_state_of(struct store *st, int64_t pk, int rank, char *out, size_t size)
{
    struct rank *ranks = NULL;
    size_t n = 0;
    snprintf(out, size, "none");
    if (store_ranks_get(st, pk, &ranks, &n, NULL) == 0 && (size_t)rank < n)
        snprintf(out, size, "%s", rankstate_name(ranks[rank].state));
    ranks_free(ranks, n);
    return out;
}

/* The API's cancel of a job that has ranks (api/jobs.c, cancel_once). */
static int cancel(struct store *st, struct controller *c, int64_t pk, enum job_state from)
{
    struct job_update u = { .pk = pk,
                            .only_if_state = true,
                            .if_state = from,
                            .set_state = true,
                            .state = JOB_CANCELLING,
                            .reason = "Cancelled",
                            .message = "cancelled by test",
                            .desired = "cancel" };
    int rc = store_job_update(st, &u, NULL);
    if (c)
        controller_wake(c, pk);
    return rc;
}

/* ---- the cases ---- */

/* Best priority first while slots last; a job that does not fit holds back the ones behind
 * it, so a large job is not overtaken forever by small ones. */
static void test_admission(struct store *st)
{
    struct fake f;
    fake_init(&f, 4);
    int64_t a = submit(st, "adm-a", 4, 0, NULL);  /* oldest, needs every slot */
    int64_t b = submit(st, "adm-b", 2, 10, NULL); /* best priority */
    int64_t cc = submit(st, "adm-c", 2, 5, NULL);
    int64_t d = submit(st, "adm-d", 1, -1, NULL); /* small, behind a */
    struct executor *ex[] = { &f.ex };
    struct controller *c = start_controller(st, ex);
    char buf[256];
    REACH(st, b, JOB_RUNNING);
    REACH(st, cc, JOB_RUNNING);
    CHECK(stays(st, c, a, JOB_QUEUED)); /* 4 slots, 4 used */
    CHECK(stays(st, c, d, JOB_QUEUED));
    fake_started(&f, buf, sizeof(buf));
    CHECK_STR(buf, "adm-b/0 adm-c/0 ");

    fake_end(&f, b, 0, 0, 0);
    fake_end(&f, b, 1, 0, 0);
    REACH(st, b, JOB_SUCCEEDED);
    /* Two slots free: d would fit, but a is first in line and needs four. */
    CHECK(stays(st, c, a, JOB_QUEUED));
    CHECK(stays(st, c, d, JOB_QUEUED));

    fake_end(&f, cc, 0, 0, 0);
    fake_end(&f, cc, 1, 0, 0);
    REACH(st, cc, JOB_SUCCEEDED);
    REACH(st, a, JOB_RUNNING);
    CHECK(stays(st, c, d, JOB_QUEUED));
    for (int r = 0; r < 4; r++)
        fake_end(&f, a, r, 0, 0);
    REACH(st, a, JOB_SUCCEEDED);
    REACH(st, d, JOB_RUNNING);
    fake_started(&f, buf, sizeof(buf));
    CHECK_STR(buf, "adm-b/0 adm-c/0 adm-a/0 adm-d/0 ");
    fake_end(&f, d, 0, 0, 0);
    REACH(st, d, JOB_SUCCEEDED);
    CHECK_INT(FAKE_COUNT(&f, d, tokens), 1);
    seen_states(st, b, buf, sizeof(buf));
    CHECK_STR(buf, "starting running succeeded");
    controller_free(c);
    fake_release(&f);
}

/* The job runs once every rank does. One rank fails: the others are stopped at once (once), and
 * the job fails naming the rank that failed first; the ranks trainyard stopped are "stopped",
 * not failures of their own. */
static void test_first_failure(struct store *st)
{
    struct fake f;
    fake_init(&f, 8);
    int64_t pk = submit(st, "ff", 3, 0, NULL);
    struct executor *ex[] = { &f.ex };
    f.start_reports = false;
    struct controller *c = start_controller(st, ex);
    /* Running means every rank runs. */
    int64_t until = clock_mono_ns() + WAIT_NS;
    while (FAKE_COUNT(&f, pk, starts) == 0 && clock_mono_ns() < until)
        sleep_ms(5);
    report(&f, pk, 0, 0, RANK_RUNNING, -1, 0);
    report(&f, pk, 0, 2, RANK_RUNNING, -1, 0);
    CHECK(stays(st, c, pk, JOB_STARTING));
    report(&f, pk, 0, 1, RANK_RUNNING, -1, 0);
    REACH(st, pk, JOB_RUNNING);
    fake_end(&f, pk, 1, 3, 0);
    REACH(st, pk, JOB_FAILED);
    CHECK_INT(FAKE_COUNT(&f, pk, stops), 1);
    struct job *j = job(st, pk);
    json_t *ff = j && j->first_failure ? json_loads(j->first_failure, 0, NULL) : NULL;
    CHECK(ff != NULL);
    CHECK_INT(json_integer_value(json_object_get(ff, "rank")), 1);
    CHECK_INT(json_integer_value(json_object_get(ff, "exit_code")), 3);
    CHECK(j && j->reason && j->reason[0]);
    json_decref(ff);
    job_free(j);
    char rs[32];
    CHECK_STR(rank_state_of(st, pk, 1, rs, sizeof(rs)), "failed");
    CHECK_STR(rank_state_of(st, pk, 0, rs, sizeof(rs)), "stopped");
    CHECK_STR(rank_state_of(st, pk, 2, rs, sizeof(rs)), "stopped");
    CHECK_INT(FAKE_COUNT(&f, pk, starts), 1); /* restart.policy is "never" by default */
    controller_free(c);
    fake_release(&f);
}

/* restart.policy on_failure with one restart: the first failure starts attempt 1 (after every
 * rank of attempt 0 ended); a late report of attempt 0 changes nothing; the second failure
 * ends the job, the budget spent. */
static void test_restart(struct store *st)
{
    struct fake f;
    fake_init(&f, 8);
    int64_t pk =
        submit(st, "rs", 2, 0, ",\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":1}");
    struct executor *ex[] = { &f.ex };
    struct controller *c = start_controller(st, ex);
    REACH(st, pk, JOB_RUNNING);
    fake_end(&f, pk, 0, 1, 0);
    int64_t until = clock_mono_ns() + WAIT_NS;
    while (FAKE_COUNT(&f, pk, starts) < 2 && clock_mono_ns() < until)
        sleep_ms(5);
    REACH(st, pk, JOB_RUNNING);
    struct job *j = job(st, pk);
    CHECK_INT(j ? j->attempt : -1, 1);
    job_free(j);
    char buf[256];
    fake_started(&f, buf, sizeof(buf));
    CHECK_STR(buf, "rs/0 rs/1 ");
    seen_states(st, pk, buf, sizeof(buf));
    CHECK_STR(buf, "starting running restarting starting running");

    report(&f, pk, 0, 1, RANK_FAILED, 9, 0); /* attempt 0's rank 1, reported late */
    CHECK(stays(st, c, pk, JOB_RUNNING));
    char rs[32];
    CHECK_STR(rank_state_of(st, pk, 1, rs, sizeof(rs)), "running");

    fake_end(&f, pk, 1, 1, 0);
    REACH(st, pk, JOB_FAILED);
    CHECK(stays(st, c, pk, JOB_FAILED));
    CHECK_INT(FAKE_COUNT(&f, pk, starts), 2);
    controller_free(c);
    fake_release(&f);
}

/* A cancel stops the ranks (once) and the job stays cancelling until every rank has ended. */
static void test_cancel(struct store *st)
{
    struct fake f;
    fake_init(&f, 8);
    f.stop_ends_ranks = false; /* ranks that take their time to exit */
    int64_t pk = submit(st, "cx", 2, 0, NULL);
    struct executor *ex[] = { &f.ex };
    struct controller *c = start_controller(st, ex);
    REACH(st, pk, JOB_RUNNING);
    CHECK_INT(cancel(st, c, pk, JOB_RUNNING), 0);
    int64_t until = clock_mono_ns() + WAIT_NS;
    while (FAKE_COUNT(&f, pk, stops) == 0 && clock_mono_ns() < until)
        sleep_ms(5);
    CHECK_INT(FAKE_COUNT(&f, pk, stops), 1);
    CHECK(stays(st, c, pk, JOB_CANCELLING));
    fake_end(&f, pk, 0, -1, SIGTERM);
    CHECK(stays(st, c, pk, JOB_CANCELLING)); /* rank 1 still runs */
    fake_end(&f, pk, 1, 0, 0);               /* exiting 0 meanwhile does not undo the cancel */
    REACH(st, pk, JOB_CANCELLED);
    CHECK_INT(FAKE_COUNT(&f, pk, stops), 1);
    char rs[32];
    CHECK_STR(rank_state_of(st, pk, 0, rs, sizeof(rs)), "stopped");
    char buf[128];
    seen_states(st, pk, buf, sizeof(buf));
    CHECK_STR(buf, "starting running cancelled");
    controller_free(c);
    fake_release(&f);
}

/* The type of the job's events, as "accepted starting ..." (the timeline users read). */
static void event_types(struct store *st, int64_t pk, char *out, size_t size)
{
    json_t *ev = store_events_list(st, pk, 0, 100, NULL);
    size_t len = 0, i;
    json_t *e;
    out[0] = '\0';
    json_array_foreach(ev, i, e)
    {
        if (len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%s", len ? " " : "",
                                    json_string_value(json_object_get(e, "type")));
    }
    json_decref(ev);
}

/* Past deadline_seconds the ranks are stopped (once), and the job stays running while they take
 * their grace period to exit, as a cancel stays cancelling: a `trainyard wait` must not return
 * before the processes ended. Once every rank has ended it fails, DeadlineExceeded. */
static void test_deadline(struct store *st)
{
    struct fake f;
    fake_init(&f, 8);
    f.stop_ends_ranks = false; /* ranks that trap SIGTERM */
    int64_t pk = submit(st, "dl", 2, 0, ",\"deadline_seconds\":1");
    struct executor *ex[] = { &f.ex };
    struct controller *c = start_controller(st, ex);
    REACH(st, pk, JOB_RUNNING);
    int64_t until = clock_mono_ns() + WAIT_NS;
    while (FAKE_COUNT(&f, pk, stops) == 0 && clock_mono_ns() < until)
        sleep_ms(5);
    CHECK_INT(FAKE_COUNT(&f, pk, stops), 1);
    CHECK(stays(st, c, pk, JOB_RUNNING)); /* both ranks still run */
    char buf[256];
    event_types(st, pk, buf, sizeof(buf));
    CHECK(strstr(buf, "deadline_exceeded") != NULL); /* why they are being stopped */
    fake_end(&f, pk, 0, -1, SIGTERM);
    CHECK(stays(st, c, pk, JOB_RUNNING)); /* rank 1 still runs */
    fake_end(&f, pk, 1, 0, 0);            /* exiting 0 meanwhile does not undo the deadline */
    REACH(st, pk, JOB_FAILED);
    struct job *j = job(st, pk);
    CHECK_STR(j ? j->reason : "", "DeadlineExceeded");
    CHECK_STR(j ? j->message : "", "ran longer than deadline_seconds (1 s)");
    job_free(j);
    CHECK_INT(FAKE_COUNT(&f, pk, stops), 1);
    CHECK_INT(FAKE_COUNT(&f, pk, starts), 1);
    char rs[32];
    CHECK_STR(rank_state_of(st, pk, 0, rs, sizeof(rs)), "stopped");
    seen_states(st, pk, buf, sizeof(buf));
    CHECK_STR(buf, "starting running failed");
    controller_free(c);
    fake_release(&f);
}

/* Waits until the fake has started the job n times; the wall clock then, or 0 after WAIT_NS. */
static int64_t wait_starts(struct fake *f, int64_t pk, int n)
{
    int64_t until = clock_mono_ns() + WAIT_NS;
    while (FAKE_COUNT(f, pk, starts) < n && clock_mono_ns() < until)
        sleep_ms(2);
    return FAKE_COUNT(f, pk, starts) >= n ? clock_now_ns() : 0;
}

/* One failure of the running job, then its restart: the job waits in `restarting`, its message
 * saying when the next attempt starts and after what backoff, and the attempt starts no sooner.
 * Returns the wait from the failure to the start, in ms (-1 when something else happened). */
static int64_t fail_and_restart(struct store *st, struct fake *f, int64_t pk, int restart,
                                const char *backoff)
{
    REACH(st, pk, JOB_RUNNING);
    int64_t failed = clock_now_ns();
    fake_end(f, pk, 0, 1, 0);
    if (!reach(st, pk, JOB_RESTARTING, __LINE__))
        return -1;
    struct job *j = job(st, pk);
    char want[64], at_text[CLOCK_RFC3339_MAX] = "";
    snprintf(want, sizeof(want), "; restart %d at ", restart);
    const char *at = j && j->message ? strstr(j->message, want) : NULL;
    CHECK(at != NULL);
    if (at)
        sscanf(at + strlen(want), "%63s", at_text);
    int64_t at_ns = 0;
    CHECK_INT(clock_parse(at_text, &at_ns), 0);
    snprintf(want, sizeof(want), "(backoff %s)", backoff);
    CHECK(j && j->message && strstr(j->message, want) != NULL);
    if (j && j->message && !strstr(j->message, want))
        fprintf(stderr, "message: %s\n", j->message);
    job_free(j);
    int64_t started = wait_starts(f, pk, restart + 1);
    CHECK(started >= at_ns); /* not before the time the message gave */
    return started ? (started - failed) / NS_PER_MS : -1;
}

/* Restarts back off: the daemon's first wait, doubled with each restart up to its longest; a
 * spec's restart.backoff_seconds and max_backoff_seconds replace the daemon's. */
static void test_backoff(struct store *st)
{
    struct fake f;
    fake_init(&f, 8);
    struct controller_options o = { .stop_grace_ns = NS_PER_SEC,
                                    .tick_ns = 10 * NS_PER_MS,
                                    .restart_backoff_ns = 300 * NS_PER_MS,
                                    .restart_backoff_max_ns = 500 * NS_PER_MS };
    int64_t pk =
        submit(st, "bo", 2, 0, ",\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":3}");
    struct executor *ex[] = { &f.ex };
    struct controller *c = start_controller_with(st, ex, o);
    CHECK(fail_and_restart(st, &f, pk, 1, "0.3s") >= 300);
    CHECK(fail_and_restart(st, &f, pk, 2, "0.5s") >= 500); /* 600 ms, capped */
    CHECK(fail_and_restart(st, &f, pk, 3, "0.5s") >= 500);
    REACH(st, pk, JOB_RUNNING);
    fake_end(&f, pk, 0, 1, 0); /* the restarts are spent */
    REACH(st, pk, JOB_FAILED);
    struct job *j = job(st, pk);
    CHECK(j && j->message && !strstr(j->message, "restart 4")); /* no restart to announce */
    job_free(j);

    /* The spec's own backoff: 1 s, doubling capped at 1 s; 0: at once, whatever the daemon's. */
    int64_t s1 = submit(st, "bo-spec", 1, 0,
                        ",\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":2,"
                        "\"backoff_seconds\":1,\"max_backoff_seconds\":1}");
    CHECK(fail_and_restart(st, &f, s1, 1, "1s") >= 1000);
    CHECK(fail_and_restart(st, &f, s1, 2, "1s") >= 1000);
    int64_t s0 = submit(st, "bo-zero", 1, 0,
                        ",\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":1,"
                        "\"backoff_seconds\":0}");
    REACH(st, s0, JOB_RUNNING);
    fake_end(&f, s0, 0, 1, 0);
    CHECK(wait_starts(&f, s0, 2) != 0);
    j = job(st, s0);
    CHECK(j && j->message && !strstr(j->message, "backoff"));
    job_free(j);
    controller_free(c);
    fake_release(&f);
}

/* A daemon restarted while a job waits out its backoff starts the next attempt when the job's
 * message said, not at once nor a whole backoff later: the time comes from the stored ranks. */
static void test_backoff_adopted(struct store *st)
{
    struct fake f1, f2;
    fake_init(&f1, 8);
    fake_init(&f2, 8);
    struct controller_options o = { .stop_grace_ns = NS_PER_SEC,
                                    .tick_ns = 10 * NS_PER_MS,
                                    .restart_backoff_ns = 2 * NS_PER_SEC,
                                    .restart_backoff_max_ns = 2 * NS_PER_SEC };
    int64_t pk =
        submit(st, "boa", 1, 0, ",\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":1}");
    struct executor *ex1[] = { &f1.ex }, *ex2[] = { &f2.ex };
    struct controller *c1 = start_controller_with(st, ex1, o);
    REACH(st, pk, JOB_RUNNING);
    int64_t failed = clock_now_ns();
    fake_end(&f1, pk, 0, 1, 0);
    REACH(st, pk, JOB_RESTARTING);
    controller_free(c1); /* the daemon stops while the job waits */
    struct job *j = job(st, pk);
    const char *at = j && j->message ? strstr(j->message, "; restart 1 at ") : NULL;
    char at_text[CLOCK_RFC3339_MAX] = "";
    if (at)
        sscanf(at + strlen("; restart 1 at "), "%63s", at_text);
    job_free(j);
    int64_t at_ns = 0;
    CHECK_INT(clock_parse(at_text, &at_ns), 0);
    sleep_ms(1500); /* down for most of the backoff */
    struct controller *c2 = start_controller_with(st, ex2, o);
    int64_t started = wait_starts(&f2, pk, 1);
    CHECK(started >= at_ns);
    CHECK(started - failed < 3 * NS_PER_SEC); /* not a whole backoff after the restart */
    REACH(st, pk, JOB_RUNNING);
    j = job(st, pk);
    CHECK_INT(j ? j->attempt : -1, 1);
    job_free(j);
    CHECK_INT(FAKE_COUNT(&f1, pk, starts), 1);
    controller_free(c2);
    fake_release(&f1);
    fake_release(&f2);
}

/* A deadline that passes while the job waits out a restart's backoff fails it there: the next
 * attempt would only be stopped at once. */
static void test_deadline_in_backoff(struct store *st)
{
    struct fake f;
    fake_init(&f, 8);
    int64_t pk = submit(st, "dlb", 1, 0,
                        ",\"deadline_seconds\":1,\"restart\":{\"policy\":\"on_failure\","
                        "\"max_restarts\":1,\"backoff_seconds\":30}");
    struct executor *ex[] = { &f.ex };
    struct controller *c = start_controller(st, ex);
    REACH(st, pk, JOB_RUNNING);
    fake_end(&f, pk, 0, 1, 0);
    REACH(st, pk, JOB_RESTARTING);
    REACH(st, pk, JOB_FAILED);
    struct job *j = job(st, pk);
    CHECK_STR(j ? j->reason : "", "DeadlineExceeded");
    job_free(j);
    CHECK_INT(FAKE_COUNT(&f, pk, starts), 1);
    controller_free(c);
    fake_release(&f);
}

/* A restarted controller adopts every in-flight job: ranks still running are driven on (not
 * started again), a job whose start was committed but never carried out starts, a cancel
 * whose ranks never started completes. */
static void test_adoption(struct store *st)
{
    struct fake f1, f2;
    fake_init(&f1, 8);
    fake_init(&f2, 8);
    int64_t p = submit(st, "ad-p", 2, 0, NULL);
    struct executor *ex1[] = { &f1.ex };
    struct controller *c1 = start_controller(st, ex1);
    REACH(st, p, JOB_RUNNING);
    controller_free(c1); /* the daemon stops; p's ranks keep running */

    /* What a daemon that died between committing and acting leaves behind. */
    int64_t s = submit(st, "ad-s", 2, 0, NULL), q = submit(st, "ad-q", 1, 0, NULL);
    struct job_update starting = { .pk = s, .set_state = true, .state = JOB_STARTING };
    CHECK_INT(store_job_update(st, &starting, NULL), 0);
    starting.pk = q;
    CHECK_INT(store_job_update(st, &starting, NULL), 0);
    CHECK_INT(cancel(st, NULL, q, JOB_STARTING), 0);

    fake_seed(&f2, p, 2, 0);
    struct executor *ex2[] = { &f2.ex };
    struct controller *c2 = start_controller(st, ex2);
    REACH(st, q, JOB_CANCELLED);
    REACH(st, s, JOB_RUNNING);
    CHECK(stays(st, c2, p, JOB_RUNNING));
    CHECK_INT(FAKE_COUNT(&f2, p, adopts), 1);
    CHECK_INT(FAKE_COUNT(&f2, s, adopts), 1);
    CHECK_INT(FAKE_COUNT(&f2, q, adopts), 1);
    CHECK_INT(FAKE_COUNT(&f2, p, starts), 0);
    CHECK_INT(FAKE_COUNT(&f2, q, starts), 0);
    char buf[128];
    fake_started(&f2, buf, sizeof(buf));
    CHECK_STR(buf, "ad-s/0 ");
    /* The adopted ranks are the new controller's: a failure ends the job as before. */
    fake_end(&f2, p, 1, 2, 0);
    REACH(st, p, JOB_FAILED);
    CHECK_INT(FAKE_COUNT(&f2, p, stops), 1);
    char rs[32];
    CHECK_STR(rank_state_of(st, p, 0, rs, sizeof(rs)), "stopped");
    controller_free(c2);
    fake_release(&f1);
    fake_release(&f2);
}

/* Each case on a store of its own, so that one case's leftovers cannot steer the next. */
static void run(void (*test)(struct store *st))
{
    struct fixture fx;
    struct store *st = fixture_open(&fx);
    CHECK(st != NULL);
    if (!st)
        return;
    pthread_mutex_lock(&seen.lock);
    seen.n = 0; /* pks start again at 1 */
    pthread_mutex_unlock(&seen.lock);
    test(st);
    fixture_close(&fx);
}

int main(void)
{
    run(test_admission);
    run(test_first_failure);
    run(test_restart);
    run(test_cancel);
    run(test_deadline);
    run(test_backoff);
    run(test_backoff_adopted);
    run(test_deadline_in_backoff);
    run(test_adoption);
    return check_done();
}
