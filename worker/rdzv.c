/*
 * rdzv: backend selection, key checks, and the dir backend. The dir backend polls the file
 * system (1 ms growing to 20 ms), which is plenty for a handful of exchanges per run; it needs no
 * daemon and works for every process on one machine (or on a shared file system).
 */
#include "worker/rdzv_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/xalloc.h"

struct rdzv_dir {
    struct rdzv base;
    char *path;
};

int rdzv_valid_key(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > 128 || key[0] == '.')
        return 0;
    for (const char *p = key; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

void rdzv_format_missing(struct buf *out, const unsigned char *arrived, int world)
{
    int first = 1;
    buf_putc(out, '[');
    for (int i = 0; i < world; i++) {
        if (arrived[i])
            continue;
        buf_printf(out, first ? "%d" : ", %d", i);
        first = 0;
    }
    buf_putc(out, ']');
}

/* Sleep schedule for polling: 1, 2, 4 ... 20 ms, never past the deadline. */
static void poll_sleep(int64_t *delay_ms, int64_t deadline)
{
    int64_t left = (deadline - clock_mono_ns()) / NS_PER_MS;
    int64_t d = *delay_ms < left ? *delay_ms : left;
    if (d > 0)
        clock_sleep_ms(d);
    if (*delay_ms < 20)
        *delay_ms *= 2;
}

static int mkdirs(const char *path, struct err *err)
{
    char *p = xstrdup(path);
    int ret = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char saved = *s;
        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
            ret = err_set(err, ERR_IO, "mkdir %s: %s", p, strerror(errno));
            break;
        }
        *s = saved;
        if (saved == '\0')
            break;
    }
    free(p);
    return ret;
}

/* Writes data to path atomically: a temporary file in the same directory, then rename(2). */
static int write_atomic(const char *dir, const char *name, const char *data, size_t len,
                        struct err *err)
{
    char *tmp = xasprintf("%s/.%s.%ld.tmp", dir, name, (long)getpid());
    char *path = xasprintf("%s/%s", dir, name);
    int ret = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        ret = err_set(err, ERR_IO, "create %s: %s", tmp, strerror(errno));
        goto out;
    }
    ssize_t w = write(fd, data, len);
    if (w != (ssize_t)len || close(fd) < 0 || rename(tmp, path) < 0) {
        ret = err_set(err, ERR_IO, "write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
out:
    free(tmp);
    free(path);
    return ret;
}

static int dir_set(struct rdzv *r, const char *key, const char *value, struct err *err)
{
    struct rdzv_dir *d = (struct rdzv_dir *)r;
    char *kv = xasprintf("%s/kv", d->path);
    int ret = mkdirs(kv, err);
    if (ret == 0)
        ret = write_atomic(kv, key, value, strlen(value), err);
    free(kv);
    return ret;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    return buf_detach(&b, NULL);
}

static char *dir_get(struct rdzv *r, const char *key, int wait_ms, struct err *err)
{
    struct rdzv_dir *d = (struct rdzv_dir *)r;
    char *path = xasprintf("%s/kv/%s", d->path, key);
    int64_t deadline = clock_mono_ns() + (int64_t)wait_ms * NS_PER_MS, delay = 1;
    char *value;
    while (!(value = read_file(path)) && clock_mono_ns() < deadline)
        poll_sleep(&delay, deadline);
    if (!value)
        err_set(err, ERR_TIMEOUT, "rendezvous key '%s' not set after %d ms", key, wait_ms);
    free(path);
    return value;
}

/* Marks which of the world ranks have a file in dir; returns how many. */
static int count_arrived(const char *dir, unsigned char *arrived, int world)
{
    int n = 0;
    for (int i = 0; i < world; i++) {
        char *p = xasprintf("%s/%d", dir, i);
        arrived[i] = access(p, F_OK) == 0;
        n += arrived[i];
        free(p);
    }
    return n;
}

static int dir_barrier(struct rdzv *r, const char *name, int rank, int world, int timeout_ms,
                       struct err *err)
{
    struct rdzv_dir *d = (struct rdzv_dir *)r;
    char *dir = xasprintf("%s/barrier/%s", d->path, name);
    unsigned char *arrived = xcalloc((size_t)world, 1);
    char me[16];
    snprintf(me, sizeof(me), "%d", rank);
    int ret = mkdirs(dir, err);
    if (ret < 0 || (ret = write_atomic(dir, me, "", 0, err)) < 0)
        goto out;
    int64_t deadline = clock_mono_ns() + (int64_t)timeout_ms * NS_PER_MS, delay = 1;
    while (count_arrived(dir, arrived, world) < world) {
        if (clock_mono_ns() >= deadline) {
            struct buf m = BUF_INIT;
            rdzv_format_missing(&m, arrived, world);
            ret = err_set(err, ERR_TIMEOUT, "barrier '%s' timed out after %d ms: missing ranks %s",
                          name, timeout_ms, buf_cstr(&m));
            buf_release(&m);
            break;
        }
        poll_sleep(&delay, deadline);
    }
out:
    free(arrived);
    free(dir);
    return ret;
}

static void dir_close(struct rdzv *r)
{
    struct rdzv_dir *d = (struct rdzv_dir *)r;
    free(d->path);
    free(d);
}

static const struct rdzv_ops dir_ops = { dir_set, dir_get, dir_barrier, dir_close };

static struct rdzv *dir_open(const char *path, struct err *err)
{
    if (!*path)
        return err_set(err, ERR_INVALID, "rendezvous dir: empty path"), NULL;
    if (mkdirs(path, err) < 0)
        return NULL;
    struct rdzv_dir *d = XNEW(struct rdzv_dir);
    d->base.ops = &dir_ops;
    d->base.desc = xasprintf("dir:%s", path);
    d->path = xstrdup(path);
    return &d->base;
}

struct rdzv *rdzv_open(const char *spec, const struct rankenv *re, struct err *err)
{
    const char *url = rankenv_get("TRAINYARD_URL");
    if (!spec)
        spec = rankenv_get("TRAINYARD_RENDEZVOUS");
    if (!spec && url)
        spec = "http";
    if (spec && strncmp(spec, "dir:", 4) == 0)
        return dir_open(spec + 4, err);
    if (spec && strcmp(spec, "http") == 0) {
        if (!url || !re->job_id[0])
            return err_set(err, ERR_INVALID,
                           "http rendezvous needs TRAINYARD_URL and TRAINYARD_JOB_ID"),
                   NULL;
        return rdzv_http_open(url, rankenv_get("TRAINYARD_TOKEN"), re->job_id, err);
    }
    if (spec)
        return err_set(err, ERR_INVALID, "TRAINYARD_RENDEZVOUS=%s: expected http or dir:PATH",
                       spec),
               NULL;
    const char *attempt = rankenv_get("TRAINYARD_ATTEMPT");
    char path[512];
    snprintf(path, sizeof(path), "/tmp/trainyard-rdzv-%d-%s", re->master_port,
             attempt ? attempt : "0");
    if (strchr(attempt ? attempt : "", '/'))
        return err_set(err, ERR_INVALID, "TRAINYARD_ATTEMPT must not contain '/'"), NULL;
    return dir_open(path, err);
}

void rdzv_close(struct rdzv *r)
{
    if (!r)
        return;
    char *desc = r->desc;
    r->ops->close(r);
    free(desc);
}

static int bad_key(const char *key, struct err *err)
{
    return err_set(err, ERR_INVALID, "rendezvous key '%s': expected 1-128 of [A-Za-z0-9._-]", key);
}

int rdzv_set(struct rdzv *r, const char *key, const char *value, struct err *err)
{
    if (!rdzv_valid_key(key))
        return bad_key(key, err);
    return r->ops->set(r, key, value, err);
}

char *rdzv_get(struct rdzv *r, const char *key, int wait_ms, struct err *err)
{
    if (!rdzv_valid_key(key))
        return bad_key(key, err), NULL;
    return r->ops->get(r, key, wait_ms < 0 ? 0 : wait_ms, err);
}

int rdzv_set_bytes(struct rdzv *r, const char *key, const void *data, size_t len, struct err *err)
{
    struct buf b = BUF_INIT;
    crypto_base64_encode(&b, data, len);
    int ret = rdzv_set(r, key, buf_cstr(&b), err);
    buf_release(&b);
    return ret;
}

int rdzv_get_bytes(struct rdzv *r, const char *key, int wait_ms, struct buf *out, struct err *err)
{
    char *v = rdzv_get(r, key, wait_ms, err);
    if (!v)
        return -1;
    buf_reset(out);
    int ret = 0;
    if (crypto_base64_decode(out, v, strlen(v)) < 0)
        ret = err_set(err, ERR_INVALID, "rendezvous key '%s': value is not base64", key);
    free(v);
    return ret;
}

int rdzv_barrier(struct rdzv *r, const char *name, int rank, int world, int timeout_ms,
                 struct err *err)
{
    if (!rdzv_valid_key(name))
        return bad_key(name, err);
    if (world < 1 || rank < 0 || rank >= world)
        return err_set(err, ERR_INVALID, "barrier '%s': rank %d of %d", name, rank, world);
    return r->ops->barrier(r, name, rank, world, timeout_ms, err);
}
