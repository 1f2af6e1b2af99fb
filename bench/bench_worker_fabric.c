/*
 * bench_worker_fabric: all-reduce bandwidth between 2 local ranks over libfabric (FI_PROVIDER,
 * default tcp on loopback), against a plain TCP socket exchanging the same bytes in the same run
 * (each side sends its whole buffer and receives the other's, what a naive all-reduce does).
 * algbw = bytes / time; busbw = algbw * 2(n-1)/n as nccl-tests reports it (n = 2: equal).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "worker/fabric.h"

static const size_t sizes[] = { 1u << 20, 16u << 20, 64u << 20 };
#define NSIZES 3

static int iters(size_t bytes)
{
    return bytes <= (1u << 20) ? 50 : bytes <= (16u << 20) ? 10 : 4;
}

/* Returns seconds per all-reduce for each size, written to fd by rank 0. */
static int fabric_rank(int rank, const char *spec, int fd)
{
    struct err err;
    struct rankenv re = { .rank = rank, .world_size = 2 };
    err_init(&err);
    struct rdzv *r = rdzv_open(spec, &re, &err);
    struct fabric *f = r ? fabric_open(NULL, &err) : NULL;
    if (!f || fabric_connect(f, r, "bench", rank, 2, 30000, &err) < 0) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        return 1;
    }
    for (int s = 0; s < NSIZES; s++) {
        size_t n = sizes[s] / sizeof(float);
        float *buf = xcalloc(n, sizeof(float));
        fabric_allreduce_sum(f, buf, n, &err); /* warm-up */
        int64_t t0 = clock_mono_ns();
        for (int i = 0; i < iters(sizes[s]); i++)
            fabric_allreduce_sum(f, buf, n, &err);
        double sec = (double)(clock_mono_ns() - t0) / 1e9 / iters(sizes[s]);
        if (rank == 0 && write(fd, &sec, sizeof(sec)) != sizeof(sec))
            return 1;
        free(buf);
    }
    fabric_close(f);
    rdzv_close(r);
    return err_is_set(&err);
}

static void xfer(int fd, char *out, char *in, size_t n)
{
    size_t sent = 0, got = 0;
    while (sent < n || got < n) { /* both directions at once, non-blocking */
        if (sent < n) {
            ssize_t w = send(fd, out + sent, n - sent, MSG_DONTWAIT);
            sent += w > 0 ? (size_t)w : 0;
        }
        if (got < n) {
            ssize_t r = recv(fd, in + got, n - got, MSG_DONTWAIT);
            got += r > 0 ? (size_t)r : 0;
        }
    }
}

static double tcp_exchange(int fd, size_t bytes)
{
    char *out = xcalloc(bytes, 1), *in = xcalloc(bytes, 1);
    xfer(fd, out, in, bytes);
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < iters(bytes); i++)
        xfer(fd, out, in, bytes);
    double sec = (double)(clock_mono_ns() - t0) / 1e9 / iters(bytes);
    free(out);
    free(in);
    return sec;
}

static int tcp_pair(int *a, int *b)
{
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&sa, &len) < 0)
        return -1;
    *a = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*a, (struct sockaddr *)&sa, sizeof(sa)) < 0 || (*b = accept(l, NULL, NULL)) < 0)
        return -1;
    setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    close(l);
    return 0;
}

int main(void)
{
    setenv("FI_PROVIDER", "tcp", 0);
    setenv("FI_TCP_IFACE", "lo", 0);
    char dir[] = "/tmp/ty-bench-fabric-XXXXXX", spec[64];
    int p[2], a, b;
    if (!mkdtemp(dir) || pipe(p) < 0 || tcp_pair(&a, &b) < 0)
        return 1;
    snprintf(spec, sizeof(spec), "dir:%s", dir);
    pid_t kids[2];
    for (int r = 0; r < 2; r++)
        if ((kids[r] = fork()) == 0)
            _exit(fabric_rank(r, spec, p[1]));
    double fab[NSIZES], tcp[NSIZES];
    for (int s = 0; s < NSIZES; s++)
        if (read(p[0], &fab[s], sizeof(double)) != sizeof(double))
            return 1;
    for (int r = 0; r < 2; r++)
        waitpid(kids[r], NULL, 0);
    pid_t peer = fork();
    if (peer == 0) {
        for (int s = 0; s < NSIZES; s++)
            tcp_exchange(b, sizes[s]);
        _exit(0);
    }
    for (int s = 0; s < NSIZES; s++)
        tcp[s] = tcp_exchange(a, sizes[s]);
    waitpid(peer, NULL, 0);
    printf(
        "all-reduce between 2 local ranks, libfabric %s vs plain TCP exchange of the same bytes\n",
        getenv("FI_PROVIDER"));
    printf("  %8s %16s %16s %16s\n", "bytes", "fabric algbw", "fabric busbw", "tcp copy");
    for (int s = 0; s < NSIZES; s++)
        printf("  %7zuM %11.2f GB/s %11.2f GB/s %11.2f GB/s\n", sizes[s] >> 20,
               sizes[s] / fab[s] / 1e9, sizes[s] / fab[s] / 1e9, sizes[s] / tcp[s] / 1e9);
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
