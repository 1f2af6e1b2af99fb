/*
 * ckpt: checkpoint files. Layout: "TYCKPT01", u32 byte-order mark, struct ckpt_meta,
 * u64 nparams, params[n], m[n], v[n] (float32), SHA-256 of everything before it.
 * Not thread-safe; only rank 0 writes (every rank holds the same weights).
 */
#include "worker/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/crypto.h"
#include "core/xalloc.h"

#define MAGIC "TYCKPT01"
#define BOM   0x01020304u

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static void serialize(struct buf *b, const struct ckpt_meta *meta, const struct model *m)
{
    uint32_t bom = BOM;
    uint64_t n = m->nparams;
    buf_append(b, MAGIC, 8);
    buf_append(b, &bom, sizeof(bom));
    buf_append(b, meta, sizeof(*meta));
    buf_append(b, &n, sizeof(n));
    buf_append(b, m->params, n * sizeof(float));
    buf_append(b, m->m, n * sizeof(float));
    buf_append(b, m->v, n * sizeof(float));
    unsigned char sha[SHA256_LEN];
    crypto_sha256(b->data, b->len, sha);
    buf_append(b, sha, sizeof(sha));
}

static int parse_step(const char *name, long long *step)
{
    char tail[8];
    return sscanf(name, "ckpt-%lld.bi%1[n]%1s", step, tail, tail + 2) == 2 ? 0 : -1;
}

/* Removes all but the newest keep checkpoints. */
static void prune(const char *dir, int keep)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    long long steps[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096)
        if (parse_step(e->d_name, &steps[n]) == 0)
            n++;
    closedir(d);
    for (int i = 0; i < n; i++) {
        int newer = 0;
        for (int j = 0; j < n; j++)
            newer += steps[j] > steps[i];
        if (newer >= keep) {
            char *p = xasprintf("%s/ckpt-%010lld.bin", dir, steps[i]);
            unlink(p);
            free(p);
        }
    }
}

/* mkdir -p: the checkpoint path of a spec is usually a directory nobody has made yet. */
static int make_dirs(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

int ckpt_save(const char *dir, const struct ckpt_meta *meta, const struct model *m, int keep,
              struct err *err)
{
    struct buf b = BUF_INIT;
    char *tmp = xasprintf("%s/.ckpt-%010lld.tmp.%ld", dir, (long long)meta->step, (long)getpid());
    char *path = xasprintf("%s/ckpt-%010lld.bin", dir, (long long)meta->step);
    int ret = 0, fd = -1, dfd = -1;
    if (make_dirs(dir) < 0) {
        ret = err_set(err, ERR_IO, "mkdir %s: %s", dir, strerror(errno));
        goto out;
    }
    serialize(&b, meta, m);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write_all(fd, b.data, b.len) < 0 || fsync(fd) < 0) {
        ret = err_set(err, ERR_IO, "write %s: %s", tmp, strerror(errno));
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path) < 0) {
        ret = err_set(err, ERR_IO, "rename %s: %s", path, strerror(errno));
        goto out;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) < 0) {
        ret = err_set(err, ERR_IO, "fsync %s: %s", dir, strerror(errno));
        goto out;
    }
    prune(dir, keep < 1 ? 1 : keep);
out:
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    if (dfd >= 0)
        close(dfd);
    buf_release(&b);
    free(tmp);
    free(path);
    return ret;
}

/* Reads and verifies one file; 0 when valid, -1 otherwise (*why says why). */
static int load_one(const char *path, struct ckpt_meta *meta, float **state, size_t *nparams,
                    const char **why)
{
    struct buf b = BUF_INIT;
    FILE *f = fopen(path, "rb");
    int ret = -1;
    *why = "unreadable";
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    size_t head = 8 + sizeof(uint32_t) + sizeof(*meta) + sizeof(uint64_t);
    unsigned char sha[SHA256_LEN];
    uint32_t bom;
    uint64_t np;
    *why = "truncated or not a checkpoint";
    if (b.len < head + SHA256_LEN || memcmp(b.data, MAGIC, 8) != 0)
        goto out;
    memcpy(&bom, b.data + 8, sizeof(bom));
    memcpy(&np, b.data + head - sizeof(np), sizeof(np));
    if (bom != BOM || np > (b.len / sizeof(float)) || b.len != head + 3 * np * 4 + SHA256_LEN)
        goto out;
    crypto_sha256(b.data, b.len - SHA256_LEN, sha);
    *why = "checksum mismatch";
    if (memcmp(sha, b.data + b.len - SHA256_LEN, SHA256_LEN) != 0)
        goto out;
    memcpy(meta, b.data + 12, sizeof(*meta));
    *nparams = np;
    *state = xmalloc(3 * np * sizeof(float) + 1);
    memcpy(*state, b.data + head, 3 * np * sizeof(float));
    ret = 0;
out:
    buf_release(&b);
    return ret;
}

int ckpt_load_latest(const char *dir, struct ckpt_meta *meta, float **state, size_t *nparams,
                     char **path, int *skipped, struct err *err)
{
    *skipped = 0;
    *state = NULL;
    *path = NULL;
    for (long long below = -1;;) { /* newest first: the largest step under the last one tried */
        DIR *d = opendir(dir);
        if (!d)
            return errno == ENOENT ? 0 : err_set(err, ERR_IO, "open %s: %s", dir, strerror(errno));
        long long best = -1, s;
        struct dirent *e;
        while ((e = readdir(d)))
            if (parse_step(e->d_name, &s) == 0 && s > best && (below < 0 || s < below))
                best = s;
        closedir(d);
        if (best < 0)
            return 0;
        char *p = xasprintf("%s/ckpt-%010lld.bin", dir, best);
        const char *why;
        if (load_one(p, meta, state, nparams, &why) == 0) {
            *path = p;
            return 1;
        }
        free(p);
        (*skipped)++;
        below = best;
    }
}
