/*
 * check_container: what the container gives the job, checked with libc only.
 *   container.shm          /dev/shm size >= need (Docker's 64 MiB default breaks NCCL and
 *                          PyTorch data loaders)
 *   container.disk         free space under the checkpoint directory (or, before the first
 *                          checkpoint made it, under its nearest existing parent)
 *   container.memlock      RLIMIT_MEMLOCK; EFA registers memory and needs it unlimited
 *   container.master_addr  MASTER_ADDR resolves
 *   container.master_port  MASTER_PORT can be bound (rank 0 only: it is the one that listens)
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "worker/checks.h"

#define MiB (1024.0 * 1024.0)

static void check_shm(struct check_ctx *c)
{
    struct statvfs sv;
    const char *path = c->opts->shm_path;
    if (statvfs(path, &sv) < 0) {
        preflight_add(c->report, "container.shm", PF_FAIL, NULL, "%s: %s", path, strerror(errno));
        return;
    }
    double size = (double)sv.f_blocks * (double)sv.f_frsize;
    json_t *d = json_pack("{s:s,s:f,s:I}", "path", path, "bytes", size, "need_bytes",
                          (json_int_t)c->opts->shm_min);
    enum pf_status st = size >= (double)c->opts->shm_min ? PF_PASS : PF_FAIL;
    preflight_add(c->report, "container.shm", st, d, "%s is %.0f MiB, need %.0f MiB%s", path,
                  size / MiB, (double)c->opts->shm_min / MiB,
                  st == PF_FAIL ? " (raise the pod's /dev/shm: an emptyDir with medium Memory)"
                                : "");
}

/* dir, or its nearest existing parent when it is still to be made (the first attempt of a job:
 * the trainer or the framework creates it), in buf. */
static const char *existing(const char *dir, char *buf, size_t size)
{
    struct stat st;
    snprintf(buf, size, "%s", dir);
    while (stat(buf, &st) < 0 && errno == ENOENT) {
        char *slash = strrchr(buf, '/');
        if (!slash)
            return ".";
        slash[slash == buf] = '\0'; /* "/a" -> "/" */
    }
    return buf;
}

static void check_disk(struct check_ctx *c)
{
    const char *dir = c->opts->ckpt_dir;
    char parent[4096];
    struct statvfs sv;
    if (!dir) {
        preflight_add(c->report, "container.disk", PF_SKIP, NULL,
                      "skipped: no checkpoint directory (TRAINYARD_CHECKPOINT_DIR)");
        return;
    }
    const char *at = existing(dir, parent, sizeof(parent));
    if (statvfs(at, &sv) < 0) {
        preflight_add(c->report, "container.disk", PF_FAIL, NULL, "%s: %s", at, strerror(errno));
        return;
    }
    double avail = (double)sv.f_bavail * (double)sv.f_frsize;
    int writable = access(at, W_OK) == 0;
    json_t *d = json_pack("{s:s,s:s,s:f,s:I,s:b}", "path", dir, "existing", at, "free_bytes", avail,
                          "need_bytes", (json_int_t)c->opts->disk_min, "writable", writable);
    enum pf_status st = avail >= (double)c->opts->disk_min && writable ? PF_PASS : PF_FAIL;
    char where[sizeof(parent) + 32] = "";
    if (strcmp(at, dir) != 0)
        snprintf(where, sizeof(where), " (to be made in %s)", at);
    preflight_add(c->report, "container.disk", st, d, "%s%s: %.0f MiB free, need %.0f MiB%s", dir,
                  where, avail / MiB, (double)c->opts->disk_min / MiB,
                  writable ? "" : ", not writable");
}

static void check_memlock(struct check_ctx *c)
{
    struct rlimit rl;
    getrlimit(RLIMIT_MEMLOCK, &rl);
    int unlimited = rl.rlim_cur == RLIM_INFINITY;
    json_t *d = json_pack("{s:b,s:I}", "unlimited", unlimited, "bytes",
                          (json_int_t)(unlimited ? -1 : (long long)rl.rlim_cur));
    if (unlimited)
        preflight_add(c->report, "container.memlock", PF_PASS, d, "memlock unlimited");
    else
        preflight_add(c->report, "container.memlock", c->opts->efa > 0 ? PF_FAIL : PF_WARN, d,
                      "memlock limited to %llu KiB; EFA needs unlimited (ulimit -l unlimited)",
                      (unsigned long long)rl.rlim_cur / 1024);
}

static void check_master(struct check_ctx *c)
{
    const struct rankenv *re = c->re;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
    if (!re->master_addr[0]) {
        preflight_add(c->report, "container.master_addr", re->world_size > 1 ? PF_FAIL : PF_SKIP,
                      NULL, "%s",
                      re->world_size > 1 ? "MASTER_ADDR is not set"
                                         : "skipped: single rank, MASTER_ADDR not set");
    } else {
        int rc = getaddrinfo(re->master_addr, NULL, &hints, &ai);
        preflight_add(c->report, "container.master_addr", rc ? PF_FAIL : PF_PASS,
                      json_pack("{s:s}", "host", re->master_addr), "MASTER_ADDR %s %s",
                      re->master_addr, rc ? gai_strerror(rc) : "resolves");
        freeaddrinfo(ai);
    }
    if (!re->master_port || re->rank != 0) {
        preflight_add(c->report, "container.master_port", PF_SKIP, NULL, "%s",
                      !re->master_port ? "skipped: MASTER_PORT not set"
                                       : "skipped: only rank 0 listens on MASTER_PORT");
        return;
    }
    /* SO_REUSEADDR: a socket in TIME_WAIT is no obstacle, a listener is. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, ok = 0, e = 0;
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons((uint16_t)re->master_port),
                              .sin_addr.s_addr = htonl(INADDR_ANY) };
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0;
        e = errno;
        close(fd);
    }
    preflight_add(c->report, "container.master_port", ok ? PF_PASS : PF_FAIL,
                  json_pack("{s:i}", "port", re->master_port), "MASTER_PORT %d %s", re->master_port,
                  ok ? "is free" : strerror(e));
}

void check_container(struct check_ctx *c)
{
    check_shm(c);
    check_disk(c);
    check_memlock(c);
    check_master(c);
}
