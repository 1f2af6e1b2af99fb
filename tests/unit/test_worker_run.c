/*
 * `trainyard-worker run --preflight` end to end: the real binary (TY_WORKER_BIN) against the
 * in-process fake daemon. A passing preflight POSTs its report and the command runs; a failing
 * one (TRAINYARD_PREFLIGHT=1 this time) POSTs its report with the failed check, the command is
 * not started and run exits 1 without a heartbeat; in a PyTorchJob pod (PET_NNODES set, no
 * LOCAL_RANK, WORLD_SIZE counting processes) the preflight is the node's: two "pods" meet as
 * ranks 0 and 1 of 2 through the daemon's rendezvous and test the fabric between them.
 */
#include "tests/unit/check.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/xalloc.h"
#include "tests/unit/test_worker_fakedaemon.h"

static char dir[] = "/tmp/ty-test-run-XXXXXX";
static char url[64];

/* Starts the worker with argv after the fixed environment plus extra (NULL-terminated). */
static pid_t start(char *const argv[], const char *const extra[])
{
    char *env[32];
    int n = 0;
    env[n++] = xasprintf("PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    env[n++] = xasprintf("TRAINYARD_URL=%s", url);
    env[n++] = xstrdup("TRAINYARD_TOKEN=tok");
    env[n++] = xstrdup("TRAINYARD_JOB_ID=job1");
    env[n++] = xstrdup("TRAINYARD_HEARTBEAT_INTERVAL=50ms");
    env[n++] = xstrdup("FI_PROVIDER=tcp");
    env[n++] = xstrdup("FI_TCP_IFACE=lo");
    for (int i = 0; extra[i] && n < 31; i++)
        env[n++] = xstrdup(extra[i]);
    env[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execve(TY_WORKER_BIN, argv, env);
        _exit(127);
    }
    for (int i = 0; i < n; i++)
        free(env[i]);
    return pid;
}

static int status_of(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int exists(const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static const json_t *check_named(const json_t *report, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(report, "checks"), i, c)
    {
        if (!strcmp(jsonx_str(c, "name"), name))
            return c;
    }
    return NULL;
}

static void test_pass_and_fail(struct fake_daemon *f)
{
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "touch %s/ran1", dir);
    char *argv1[] = { "trainyard-worker", "run", "--preflight", "--", "sh", "-c", cmd, NULL };
    const char *ok_env[] = { "TRAINYARD_SHM_MIN=1Mi", NULL };
    CHECK_INT(status_of(start(argv1, ok_env)), 0);
    CHECK(exists("ran1"));
    pthread_mutex_lock(&f->mu);
    CHECK_INT(json_array_size(f->preflights), 1);
    const json_t *r = json_array_get(f->preflights, 0);
    CHECK(jsonx_bool(r, "ok", false));
    CHECK_INT(jsonx_int(r, "_rank", -1), 0);
    CHECK_STR(jsonx_str(check_named(r, "container.shm"), "status"), "pass");
    size_t beats = json_array_size(f->heartbeats);
    CHECK(beats >= 1); /* the command ran under the reporter: its exit went out */
    CHECK_INT(jsonx_int(json_array_get(f->heartbeats, beats - 1), "exit_code", -1), 0);
    pthread_mutex_unlock(&f->mu);

    snprintf(cmd, sizeof(cmd), "touch %s/ran2", dir);
    char *argv2[] = { "trainyard-worker", "run", "--", "sh", "-c", cmd, NULL };
    const char *bad_env[] = { "TRAINYARD_PREFLIGHT=1", "TRAINYARD_SHM_MIN=900Ti", NULL };
    CHECK_INT(status_of(start(argv2, bad_env)), 1);
    CHECK(!exists("ran2"));
    pthread_mutex_lock(&f->mu);
    CHECK_INT(json_array_size(f->preflights), 2);
    r = json_array_get(f->preflights, 1);
    CHECK(!jsonx_bool(r, "ok", true));
    CHECK_STR(jsonx_str(check_named(r, "container.shm"), "status"), "fail");
    CHECK_INT(json_array_size(f->heartbeats), beats); /* the command never started */
    pthread_mutex_unlock(&f->mu);
}

static void test_per_node(struct fake_daemon *f)
{
    char cmd[160], port[32];
    snprintf(cmd, sizeof(cmd), "touch %s/node$PET_NODE_RANK", dir);
    snprintf(port, sizeof(port), "MASTER_PORT=%d", fake_free_port());
    char *argv[] = { "trainyard-worker", "run", "--preflight", "--", "sh", "-c", cmd, NULL };
    const char *node0[] = { "RANK=0",
                            "WORLD_SIZE=16",
                            "PET_NNODES=2",
                            "PET_NODE_RANK=0",
                            "MASTER_ADDR=127.0.0.1",
                            port,
                            "TRAINYARD_SHM_MIN=1Mi",
                            NULL };
    const char *node1[] = { "RANK=1",
                            "WORLD_SIZE=16",
                            "PET_NNODES=2",
                            "PET_NODE_RANK=1",
                            "MASTER_ADDR=127.0.0.1",
                            port,
                            "TRAINYARD_SHM_MIN=1Mi",
                            NULL };
    pid_t p0 = start(argv, node0), p1 = start(argv, node1);
    CHECK_INT(status_of(p0), 0);
    CHECK_INT(status_of(p1), 0);
    CHECK(exists("node0") && exists("node1"));
    pthread_mutex_lock(&f->mu);
    CHECK_INT(json_array_size(f->preflights), 4);
    for (size_t i = 2; i < json_array_size(f->preflights); i++) {
        const json_t *r = json_array_get(f->preflights, i);
        CHECK_INT(jsonx_int(r, "world_size", 0), 2);
        CHECK(jsonx_bool(r, "ok", false));
        if (jsonx_int(r, "rank", -1) == 0)
            CHECK_STR(jsonx_str(check_named(r, "fabric.p2p.rank1"), "status"), "pass");
    }
    pthread_mutex_unlock(&f->mu);
}

int main(void)
{
    struct fake_daemon f;
    alarm(300); /* a hang fails the test instead of stalling CI */
    CHECK(mkdtemp(dir) != NULL);
    CHECK_INT(fake_start(&f, 0, "tok"), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", f.port);
    test_pass_and_fail(&f);
    test_per_node(&f);
    fake_stop(&f);
    char rm[96];
    snprintf(rm, sizeof(rm), "rm -rf %s", dir);
    CHECK_INT(system(rm), 0);
    return check_done();
}
