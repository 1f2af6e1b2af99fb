/*
 * Tests of job/jobstate: the job state machine against a table kept as data
 * (data/jobstate/transitions lists every (from, to) pair and whether it is allowed). The same
 * file is checked against jobstate_can(), against the list in job/jobstate.h's diagram, and
 * against the store, which must apply exactly the allowed transitions (store_job_update), so a
 * transition added or removed anywhere fails here until the data says so. Also the names and
 * terminal sets the API shows.
 */
#include <stdlib.h>

#include "check.h"
#include "job/jobstate.h"
#include "store_fixture.h"

#define TRANSITIONS "data/jobstate/transitions"
#define HEADER      "../../job/jobstate.h"

/* want[from][to]: what the data file says (1 allowed, 0 refused, -1 not listed). */
static int want[JOB_STATE_COUNT][JOB_STATE_COUNT];

static int parse_state(const char *name, const char *where, int line)
{
    enum job_state s;
    if (jobstate_parse(name, &s) == 0)
        return (int)s;
    fprintf(stderr, "%s:%d: unknown state \"%s\"\n", where, line, name);
    return -1;
}

/* Reads the data file into want[][]; every pair must be listed exactly once. */
static void load_transitions(void)
{
    memset(want, -1, sizeof(want));
    FILE *f = fopen(TRANSITIONS, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char line[512];
    int lineno = 0, rows = 0, bad = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char from[32], to[32], allowed[8];
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%31s %31s %7s", from, to, allowed) != 3 ||
            (strcmp(allowed, "yes") != 0 && strcmp(allowed, "no") != 0)) {
            fprintf(stderr, "%s:%d: expected \"from to yes|no [who]\"\n", TRANSITIONS, lineno);
            bad++;
            continue;
        }
        int a = parse_state(from, TRANSITIONS, lineno), b = parse_state(to, TRANSITIONS, lineno);
        if (a < 0 || b < 0 || want[a][b] != -1) {
            if (a >= 0 && b >= 0)
                fprintf(stderr, "%s:%d: %s -> %s listed twice\n", TRANSITIONS, lineno, from, to);
            bad++;
            continue;
        }
        want[a][b] = strcmp(allowed, "yes") == 0;
        rows++;
    }
    fclose(f);
    CHECK_INT(bad, 0);
    CHECK_INT(rows, JOB_STATE_COUNT * JOB_STATE_COUNT); /* every pair, once */
}

static const char *name(int s)
{
    return jobstate_name((enum job_state)s);
}

/* jobstate_can() against the data, for every pair. */
static void test_table(void)
{
    for (int a = 0; a < JOB_STATE_COUNT; a++) {
        for (int b = 0; b < JOB_STATE_COUNT; b++) {
            bool can = jobstate_can((enum job_state)a, (enum job_state)b);
            if (want[a][b] != can)
                fprintf(stderr, "jobstate_can(%s, %s) is %s; %s says %s\n", name(a), name(b),
                        can ? "true" : "false", TRANSITIONS,
                        want[a][b] < 0 ? "nothing"
                        : want[a][b]   ? "yes"
                                       : "no");
            CHECK_INT(can, want[a][b]);
        }
    }
    /* Out of range is refused, never read past the table. */
    CHECK(!jobstate_can(JOB_STATE_COUNT, JOB_QUEUED));
    CHECK(!jobstate_can(JOB_QUEUED, JOB_STATE_COUNT));
    CHECK(!jobstate_can((enum job_state) - 1, JOB_STARTING));
}

/* A terminal state is one nothing leaves; every other state has a way out. */
static void test_terminal(void)
{
    for (int a = 0; a < JOB_STATE_COUNT; a++) {
        bool exits = false;
        for (int b = 0; b < JOB_STATE_COUNT; b++)
            exits = exits || want[a][b] == 1;
        if (jobstate_terminal((enum job_state)a) == exits)
            fprintf(stderr, "%s: terminal is %d but the data has %s way out\n", name(a),
                    jobstate_terminal((enum job_state)a), exits ? "a" : "no");
        CHECK(jobstate_terminal((enum job_state)a) != exits);
    }
}

/* Reads the diagram's list ("   from -> to to ...") from job/jobstate.h into got[][]. */
static int read_diagram(bool got[JOB_STATE_COUNT][JOB_STATE_COUNT])
{
    FILE *f = fopen(HEADER, "r");
    if (!f)
        return -1;
    char line[512];
    int rows = 0, lineno = 0;
    while (fgets(line, sizeof(line), f) && !strstr(line, "*/")) {
        char from[32];
        int used = 0;
        lineno++;
        if (sscanf(line, " * %31s -> %n", from, &used) != 1 || used == 0)
            continue;
        int a = parse_state(from, HEADER, lineno);
        if (a < 0)
            continue;
        rows++;
        char *save = NULL;
        for (char *t = strtok_r(line + used, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
            int b = parse_state(t, HEADER, lineno);
            if (b >= 0)
                got[a][b] = true;
        }
    }
    fclose(f);
    return rows;
}

/* The diagram in jobstate.h shows every transition the table allows, and no other. */
static void test_diagram(void)
{
    bool got[JOB_STATE_COUNT][JOB_STATE_COUNT] = { { false } };
    int rows = read_diagram(got);
    CHECK_INT(rows, 5); /* one line per state that is not terminal */
    for (int a = 0; a < JOB_STATE_COUNT; a++) {
        for (int b = 0; b < JOB_STATE_COUNT; b++) {
            if (got[a][b] != (want[a][b] == 1))
                fprintf(stderr, "%s: the diagram %s %s -> %s\n", HEADER,
                        got[a][b] ? "shows" : "omits", name(a), name(b));
            CHECK(got[a][b] == (want[a][b] == 1));
        }
    }
}

static void test_names(void)
{
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        enum job_state back = JOB_STATE_COUNT;
        CHECK_INT(jobstate_parse(jobstate_name((enum job_state)s), &back), 0);
        CHECK_INT(back, s);
    }
    enum job_state s = JOB_QUEUED;
    CHECK_INT(jobstate_parse("Running", &s), -1); /* names are exact */
    CHECK_INT(jobstate_parse("", &s), -1);
    CHECK_STR(jobstate_name(JOB_STATE_COUNT), "unknown");
    const char *ranks[] = { "pending", "starting", "running", "succeeded",
                            "failed",  "stopped",  "lost" };
    CHECK_INT(sizeof(ranks) / sizeof(ranks[0]), RANK_STATE_COUNT);
    for (int r = 0; r < RANK_STATE_COUNT; r++) {
        enum rank_state back = RANK_STATE_COUNT;
        CHECK_STR(rankstate_name((enum rank_state)r), ranks[r]);
        CHECK_INT(rankstate_parse(ranks[r], &back), 0);
        CHECK_INT(back, r);
        /* A rank is over once it succeeded, failed, was stopped or lost. */
        CHECK_INT(rankstate_terminal((enum rank_state)r), r >= RANK_SUCCEEDED);
    }
    enum rank_state rs;
    CHECK_INT(rankstate_parse("exited", &rs), -1);
}

/* The shortest way from queued to each state over the data's transitions: prev[s] is the state
 * before s on it (-1 for queued, or for a state that cannot be reached). */
static void paths(int prev[JOB_STATE_COUNT])
{
    bool seen[JOB_STATE_COUNT] = { false };
    int queue[JOB_STATE_COUNT], head = 0, tail = 0;
    for (int s = 0; s < JOB_STATE_COUNT; s++)
        prev[s] = -1;
    seen[JOB_QUEUED] = true;
    queue[tail++] = JOB_QUEUED;
    while (head < tail) {
        int a = queue[head++];
        for (int b = 0; b < JOB_STATE_COUNT; b++) {
            if (want[a][b] == 1 && !seen[b]) {
                seen[b] = true;
                prev[b] = a;
                queue[tail++] = b;
            }
        }
    }
    CHECK_INT(tail, JOB_STATE_COUNT); /* every state can be reached from queued */
}

static int update(struct store *st, int64_t pk, int to, enum err_code *code)
{
    struct job_update u = {
        .pk = pk, .set_state = true, .state = (enum job_state)to, .reason = "Test"
    };
    struct err err;
    err_init(&err);
    int rc = store_job_update(st, &u, &err);
    *code = err.code;
    err_release(&err);
    return rc;
}

/* Takes a new job from queued to `to` along prev[]; 0 when every step was applied. */
static int drive(struct store *st, int64_t pk, const int prev[JOB_STATE_COUNT], int to)
{
    if (to == JOB_QUEUED)
        return 0;
    if (prev[to] < 0 || drive(st, pk, prev, prev[to]) < 0)
        return -1;
    enum err_code code;
    return update(st, pk, to, &code);
}

static enum job_state stored_state(struct store *st, int64_t pk)
{
    struct job *j = store_job_get_pk(st, pk, NULL);
    enum job_state s = j ? j->state : JOB_STATE_COUNT;
    job_free(j);
    return s;
}

/* The store applies exactly the allowed transitions, refuses the others with ERR_CONFLICT
 * (changing nothing), and takes an update to the current state as no change. */
static void test_store(void)
{
    struct fixture fx;
    struct store *st = fixture_open(&fx);
    CHECK(st != NULL);
    if (!st)
        return;
    int prev[JOB_STATE_COUNT];
    paths(prev);
    for (int a = 0; a < JOB_STATE_COUNT; a++) {
        for (int b = 0; b < JOB_STATE_COUNT; b++) {
            char id[32];
            snprintf(id, sizeof(id), "j-%s-%s", name(a), name(b));
            int64_t pk = fixture_job(st, id);
            if (!pk || drive(st, pk, prev, a) < 0 || stored_state(st, pk) != (enum job_state)a) {
                fprintf(stderr, "%s: could not bring the job to %s\n", id, name(a));
                CHECK(false);
                continue;
            }
            enum err_code code = ERR_NONE;
            int rc = update(st, pk, b, &code);
            enum job_state now = stored_state(st, pk);
            bool ok = want[a][b] == 1 ? rc == 0 && now == (enum job_state)b
                      : a == b        ? rc == 0 && now == (enum job_state)a
                                      : rc < 0 && code == ERR_CONFLICT && now == (enum job_state)a;
            if (!ok)
                fprintf(stderr, "store: %s -> %s gave rc %d (code %d), state %s\n", name(a),
                        name(b), rc, code, jobstate_name(now));
            CHECK(ok);
        }
    }
    fixture_close(&fx);
}

int main(void)
{
    load_transitions();
    test_table();
    test_terminal();
    test_diagram();
    test_names();
    test_store();
    return check_done();
}
