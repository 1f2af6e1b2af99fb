/*
 * Unit tests of worker/rdzv: both backends (dir, and http against the fake daemon) give the same
 * answers: values round-trip (text and bytes), a missing key times out, a barrier returns once
 * every rank arrived, and a barrier with a missing rank times out naming that rank.
 */
#include "tests/unit/check.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "tests/unit/test_worker_fakedaemon.h"
#include "worker/rdzv.h"

static struct rankenv re0;

static void test_keys(void)
{
    CHECK(rdzv_valid_key("fabric.train.addr.3"));
    CHECK(rdzv_valid_key("a-b_c"));
    CHECK(!rdzv_valid_key(""));
    CHECK(!rdzv_valid_key(".hidden"));
    CHECK(!rdzv_valid_key("a/b"));
    CHECK(!rdzv_valid_key("../x"));
}

static void test_kv(const char *spec)
{
    struct err err;
    err_init(&err);
    struct rdzv *r = rdzv_open(spec, &re0, &err);
    CHECK(r != NULL);
    if (!r) {
        fprintf(stderr, "%s: %s\n", spec, err.msg);
        return;
    }
    CHECK_INT(rdzv_set(r, "k1", "v1", &err), 0);
    char *v = rdzv_get(r, "k1", 0, &err);
    CHECK_STR(v, "v1");
    free(v);
    CHECK_INT(rdzv_set(r, "k1", "v2", &err), 0); /* overwrite */
    v = rdzv_get(r, "k1", 100, &err);
    CHECK_STR(v, "v2");
    free(v);
    const unsigned char bytes[] = { 0, 1, 2, 255, '\n', 0 };
    struct buf b = BUF_INIT;
    CHECK_INT(rdzv_set_bytes(r, "bin", bytes, sizeof(bytes), &err), 0);
    CHECK_INT(rdzv_get_bytes(r, "bin", 0, &b, &err), 0);
    CHECK(b.len == sizeof(bytes) && memcmp(b.data, bytes, sizeof(bytes)) == 0);
    buf_release(&b);
    int64_t t0 = clock_mono_ns();
    CHECK(rdzv_get(r, "absent", 1000, &err) == NULL);
    CHECK_INT(err.code, ERR_TIMEOUT);
    CHECK((clock_mono_ns() - t0) >= 900 * NS_PER_MS);
    err_release(&err);
    CHECK_INT(rdzv_set(r, "bad/key", "x", &err), -1);
    CHECK_INT(err.code, ERR_INVALID);
    err_release(&err);
    rdzv_close(r);
}

/* world ranks in child processes, except `absent`; returns how many exited 0, and puts rank 0's
 * error message in msg0. */
static int barrier_run(const char *spec, const char *name, int world, int absent, char *msg0,
                       size_t msglen)
{
    int pipefd[2], ok = 0;
    if (pipe(pipefd) < 0)
        return -1;
    pid_t pids[8];
    for (int rank = 0; rank < world; rank++) {
        pids[rank] = -1;
        if (rank == absent)
            continue;
        pids[rank] = fork();
        if (pids[rank] == 0) {
            struct err err;
            err_init(&err);
            struct rdzv *r = rdzv_open(spec, &re0, &err);
            int rc = r ? rdzv_barrier(r, name, rank, world, 1500, &err) : -1;
            if (rank == 0 && write(pipefd[1], err.msg, strlen(err.msg) + 1) < 0)
                rc = -1;
            rdzv_close(r);
            err_release(&err);
            _exit(rc == 0 ? 0 : 1);
        }
    }
    close(pipefd[1]);
    ssize_t n = read(pipefd[0], msg0, msglen - 1);
    msg0[n > 0 ? n : 0] = '\0';
    close(pipefd[0]);
    for (int rank = 0; rank < world; rank++) {
        int st;
        if (pids[rank] > 0 && waitpid(pids[rank], &st, 0) > 0 && WIFEXITED(st) &&
            WEXITSTATUS(st) == 0)
            ok++;
    }
    return ok;
}

static void test_barriers(const char *spec)
{
    char msg[ERR_MSG_MAX];
    CHECK_INT(barrier_run(spec, "all-there", 3, -1, msg, sizeof(msg)), 3);
    CHECK_STR(msg, "");
    int64_t t0 = clock_mono_ns();
    CHECK_INT(barrier_run(spec, "one-missing", 4, 2, msg, sizeof(msg)), 0);
    CHECK(strstr(msg, "missing ranks [2]") != NULL);
    CHECK(strstr(msg, "one-missing") != NULL);
    CHECK((clock_mono_ns() - t0) < 10 * NS_PER_SEC);
    if (!strstr(msg, "missing ranks [2]"))
        fprintf(stderr, "%s: got \"%s\"\n", spec, msg);
}

int main(void)
{
    char dir[] = "/tmp/ty-rdzv-test-XXXXXX";
    char spec[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(spec, sizeof(spec), "dir:%s", dir);
    test_keys();
    test_kv(spec);
    test_barriers(spec);

    struct fake_daemon f;
    CHECK_INT(fake_start(&f, 0, "tok"), 0);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", f.port);
    setenv("TRAINYARD_URL", url, 1);
    setenv("TRAINYARD_TOKEN", "tok", 1);
    snprintf(re0.job_id, sizeof(re0.job_id), "job1");
    test_kv(NULL); /* TRAINYARD_URL set: http is the default */
    test_barriers("http");
    CHECK_INT(f.unauthorized, 0);
    fake_stop(&f);

    /* An http rendezvous needs the job id. */
    struct err err;
    err_init(&err);
    re0.job_id[0] = '\0';
    CHECK(rdzv_open("http", &re0, &err) == NULL);
    err_release(&err);
    CHECK(rdzv_open("bogus", &re0, &err) == NULL);
    CHECK_INT(err.code, ERR_INVALID);
    err_release(&err);
    char *cmd = xasprintf("rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
    free(cmd);
    return check_done();
}
