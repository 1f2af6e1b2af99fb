/*
 * cgroup: per-rank memory cgroups and OOM kill counters (see cgroup.h). The daemon's own
 * cgroup comes from /proc/self/cgroup: a v1 line "N:...memory...:/path" names it under
 * /sys/fs/cgroup/memory; the v2 line "0::/path" under the unified mount (/sys/fs/cgroup, or
 * /sys/fs/cgroup/unified on hybrid systems).
 */
#include "server/local/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/xalloc.h"

static bool exists(const char *dir, const char *file)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    return access(path, F_OK) == 0;
}

static int write_file(const char *dir, const char *file, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The value of `key` in a "key value" per line file; -1 when absent. */
static int64_t keyed(const char *dir, const char *file, const char *key)
{
    char path[4096], line[256];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int64_t v = -1;
    size_t klen = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
            v = strtoll(line + klen + 1, NULL, 10);
    fclose(f);
    return v;
}

/* The daemon's cgroup directory for the memory controller (caller frees), or NULL; *v2 tells
 * which hierarchy. */
static char *own_cgroup(bool *v2)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return NULL;
    char line[1024], *v1path = NULL, *v2path = NULL;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrl = c1 + 1, *path = c2 + 1;
        if (!*ctrl && !v2path)
            v2path = xstrdup(path);
        for (const char *p = ctrl; p && !v1path; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
            if (strncmp(p, "memory", 6) == 0 && (p[6] == ',' || p[6] == '\0'))
                v1path = xasprintf("/sys/fs/cgroup/memory%s", path);
    }
    fclose(f);
    char *out = NULL;
    *v2 = false;
    if (v1path && exists(v1path, "memory.oom_control")) {
        out = v1path;
        v1path = NULL;
    } else if (v2path) {
        const char *mount = exists("/sys/fs/cgroup", "cgroup.controllers")
                                ? "/sys/fs/cgroup"
                                : "/sys/fs/cgroup/unified";
        out = xasprintf("%s%s", mount, strcmp(v2path, "/") == 0 ? "" : v2path);
        *v2 = true;
    }
    free(v1path);
    free(v2path);
    return out;
}

char *cgroup_memory_root(void)
{
    bool v2;
    char *dir = own_cgroup(&v2);
    if (!dir || access(dir, W_OK) != 0) {
        free(dir);
        return NULL;
    }
    if (v2) {
        int64_t on = -1; /* memory must be enabled for children: "memory" in subtree_control */
        char path[4096], text[512] = "";
        snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
        FILE *f = fopen(path, "re");
        if (f) {
            on = fgets(text, sizeof(text), f) && strstr(text, "memory") ? 1 : 0;
            fclose(f);
        }
        if (on != 1) {
            free(dir);
            return NULL;
        }
    }
    return dir;
}

char *cgroup_create(const char *root, const char *name, int64_t limit_bytes)
{
    char *path = xasprintf("%s/%s", root, name);
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        free(path);
        return NULL;
    }
    bool v1 = exists(path, "memory.limit_in_bytes");
    if (limit_bytes > 0) {
        char v[32];
        snprintf(v, sizeof(v), "%" PRId64, limit_bytes);
        if (write_file(path, v1 ? "memory.limit_in_bytes" : "memory.max", v) < 0) {
            rmdir(path);
            free(path);
            return NULL;
        }
        if (!v1)
            write_file(path, "memory.swap.max", "0"); /* the limit means RAM, as in Kubernetes */
    }
    return path;
}

int cgroup_enter(const char *path)
{
    return write_file(path, "cgroup.procs", "0");
}

int64_t cgroup_oom_kills(const char *path)
{
    int64_t v = keyed(path, "memory.events", "oom_kill");
    return v >= 0 ? v : keyed(path, "memory.oom_control", "oom_kill");
}

int64_t cgroup_oom_kills_fallback(void)
{
    bool v2;
    char *dir = own_cgroup(&v2);
    int64_t v = dir ? cgroup_oom_kills(dir) : -1;
    free(dir);
    return v >= 0 ? v : keyed("/proc", "vmstat", "oom_kill");
}

void cgroup_remove(const char *path)
{
    if (path)
        rmdir(path);
}
