/*
 * cgroup: the ranks' cgroups (see cgroup.h). The daemon's own cgroups come from
 * /proc/self/cgroup: a v1 line "N:...memory...:/path" names one under /sys/fs/cgroup/memory,
 * the v2 line "0::/path" one under the unified mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified
 * on hybrid hosts).
 */
#include "server/local/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
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
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The first line of dir/file, without its newline, into out; false when unreadable. */
static bool read_line(const char *dir, const char *file, char *out, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        out[strcspn(out, "\n")] = '\0';
    return ok;
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

static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == ',') &&
            (p[n] == '\0' || p[n] == ' ' || p[n] == ','))
            return true;
    return false;
}

/* The daemon's cgroup paths from /proc/self/cgroup (caller frees each). */
static void own_cgroups(char **v1_memory, char **v1_pids, char **v2)
{
    *v1_memory = *v1_pids = *v2 = NULL;
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrl = c1 + 1, *path = strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1;
        if (!*ctrl && !*v2)
            *v2 = xstrdup(path);
        if (has_word(ctrl, "memory") && !*v1_memory)
            *v1_memory = xasprintf("/sys/fs/cgroup/memory%s", path);
        if (has_word(ctrl, "pids") && !*v1_pids)
            *v1_pids = xasprintf("/sys/fs/cgroup/pids%s", path);
    }
    fclose(f);
}

/* Whether children can be made in dir (tried, then removed); kill_too asks for cgroup.kill. */
static bool usable(const char *dir, bool kill_too)
{
    char *probe = xasprintf("%s/trainyard-probe-%d", dir, (int)getpid());
    bool ok = mkdir(probe, 0755) == 0 || errno == EEXIST;
    if (ok && kill_too)
        ok = exists(probe, "cgroup.kill");
    rmdir(probe);
    free(probe);
    return ok;
}

/* Enables memory and pids for the children of a pure v2 node. The kernel refuses while the
 * node itself holds processes (EBUSY): the daemon then moves into a "daemon" leaf first. */
static void enable_v2_controllers(struct cgroup_roots *r)
{
    char avail[512] = "", on[512] = "";
    read_line(r->unified, "cgroup.controllers", avail, sizeof(avail));
    read_line(r->unified, "cgroup.subtree_control", on, sizeof(on));
    char want[64] = "";
    if (has_word(avail, "memory") && !has_word(on, "memory"))
        strncat(want, "+memory ", sizeof(want) - strlen(want) - 1);
    if (has_word(avail, "pids") && !has_word(on, "pids"))
        strncat(want, "+pids", sizeof(want) - strlen(want) - 1);
    if (want[0] && write_file(r->unified, "cgroup.subtree_control", want) < 0 && errno == EBUSY) {
        char *leaf = xasprintf("%s/daemon", r->unified);
        if ((mkdir(leaf, 0755) == 0 || errno == EEXIST) &&
            write_file(leaf, "cgroup.procs", "0") == 0)
            write_file(r->unified, "cgroup.subtree_control", want);
        free(leaf);
    }
    read_line(r->unified, "cgroup.subtree_control", on, sizeof(on));
    r->v2_memory = has_word(on, "memory");
    r->v2_pids = has_word(on, "pids");
}

void cgroup_roots_probe(struct cgroup_roots *r)
{
    *r = (struct cgroup_roots){ 0 };
    char *v1_memory, *v1_pids, *v2;
    own_cgroups(&v1_memory, &v1_pids, &v2);
    bool pure_v2 = exists("/sys/fs/cgroup", "cgroup.controllers");
    const char *mount = pure_v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
    if (v2 && exists(mount, "cgroup.controllers")) {
        r->unified = xasprintf("%s%s", mount, v2);
        if (pure_v2)
            enable_v2_controllers(r);
        if (!usable(r->unified, true)) {
            free(r->unified);
            r->unified = NULL;
            r->v2_memory = r->v2_pids = false;
        }
    }
    if (!pure_v2 && v1_memory && exists(v1_memory, "memory.oom_control") &&
        usable(v1_memory, false))
        r->v1_memory = v1_memory, v1_memory = NULL;
    if (!pure_v2 && v1_pids && exists(v1_pids, "cgroup.procs") && usable(v1_pids, false))
        r->v1_pids = v1_pids, v1_pids = NULL;
    free(v1_memory);
    free(v1_pids);
    free(v2);
}

void cgroup_roots_release(struct cgroup_roots *r)
{
    free(r->unified);
    free(r->v1_memory);
    free(r->v1_pids);
    *r = (struct cgroup_roots){ 0 };
}

const char *cgroup_roots_missing(const struct cgroup_roots *r)
{
    if (!r->unified)
        return "no cgroup v2 node can be made (a writable, delegated cgroup2 tree with "
               "cgroup.kill, Linux 5.14+)";
    if (!r->v2_memory && !r->v1_memory)
        return "no memory cgroup can be made (memory controller not delegated)";
    if (!r->v2_pids && !r->v1_pids)
        return "no pids cgroup can be made (pids controller not delegated)";
    return NULL;
}

/* root/name made (or kept when it exists); NULL when it cannot be. */
static char *make_node(const char *root, const char *name)
{
    if (!root)
        return NULL;
    char *path = xasprintf("%s/%s", root, name);
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        free(path);
        return NULL;
    }
    return path;
}

static void set_limit(const char *dir, const char *file, int64_t v)
{
    char text[32];
    snprintf(text, sizeof(text), "%" PRId64, v);
    write_file(dir, file, text);
}

void cgroup_rank_create(const struct cgroup_roots *r, const char *name, int64_t memory_bytes,
                        int64_t pids_max, struct cgroup_rank *out)
{
    *out = (struct cgroup_rank){ 0 };
    out->unified = make_node(r->unified, name);
    if (out->unified && r->v2_memory)
        out->memory = xstrdup(out->unified);
    else
        out->memory = make_node(r->v1_memory, name);
    if (out->unified && r->v2_pids)
        out->pids = xstrdup(out->unified);
    else
        out->pids = make_node(r->v1_pids, name);
    bool v1_mem = out->memory && exists(out->memory, "memory.limit_in_bytes");
    if (out->memory && memory_bytes > 0) {
        set_limit(out->memory, v1_mem ? "memory.limit_in_bytes" : "memory.max", memory_bytes);
        if (!v1_mem)
            write_file(out->memory, "memory.swap.max", "0"); /* RAM, as in Kubernetes */
    }
    if (out->pids && pids_max > 0)
        set_limit(out->pids, "pids.max", pids_max);
}

/* root/name when it exists; NULL otherwise. */
static char *find_node(const char *root, const char *name)
{
    if (!root)
        return NULL;
    char *path = xasprintf("%s/%s", root, name);
    struct stat sb;
    if (stat(path, &sb) == 0)
        return path;
    free(path);
    return NULL;
}

void cgroup_rank_find(const struct cgroup_roots *r, const char *name, struct cgroup_rank *out)
{
    *out = (struct cgroup_rank){ 0 };
    out->unified = find_node(r->unified, name);
    out->memory =
        out->unified && r->v2_memory ? xstrdup(out->unified) : find_node(r->v1_memory, name);
    out->pids = out->unified && r->v2_pids ? xstrdup(out->unified) : find_node(r->v1_pids, name);
}

void cgroup_rank_release(struct cgroup_rank *cg)
{
    char *paths[] = { cg->memory, cg->pids, cg->unified };
    for (size_t i = 0; i < 3; i++) {
        bool seen = false; /* the v2 node may stand for several parts */
        for (size_t k = 0; k < i; k++)
            seen |= paths[k] && paths[i] && strcmp(paths[k], paths[i]) == 0;
        if (paths[i] && !seen)
            rmdir(paths[i]);
    }
    for (size_t i = 0; i < 3; i++)
        free(paths[i]);
    *cg = (struct cgroup_rank){ 0 };
}

int cgroup_enter(const char *path)
{
    return path ? write_file(path, "cgroup.procs", "0") : 0;
}

int cgroup_signal(const char *path, int sig, int skip)
{
    if (sig == SIGKILL && skip == 0 && exists(path, "cgroup.kill"))
        return write_file(path, "cgroup.kill", "1") == 0 ? 1 : -1;
    char file[4096];
    snprintf(file, sizeof(file), "%s/cgroup.procs", path);
    FILE *f = fopen(file, "re");
    if (!f)
        return -1;
    int n = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 0 && pid != skip && kill((pid_t)pid, sig) == 0)
            n++;
    fclose(f);
    return n;
}

bool cgroup_populated(const char *path)
{
    return keyed(path, "cgroup.events", "populated") == 1;
}

int64_t cgroup_oom_kills(const char *path)
{
    int64_t v = keyed(path, "memory.events", "oom_kill");
    return v >= 0 ? v : keyed(path, "memory.oom_control", "oom_kill");
}

int64_t cgroup_oom_kills_fallback(void)
{
    char *v1_memory, *v1_pids, *v2;
    own_cgroups(&v1_memory, &v1_pids, &v2);
    int64_t v = v1_memory ? cgroup_oom_kills(v1_memory) : -1;
    if (v < 0 && v2) {
        const char *mount = exists("/sys/fs/cgroup", "cgroup.controllers")
                                ? "/sys/fs/cgroup"
                                : "/sys/fs/cgroup/unified";
        char *dir = xasprintf("%s%s", mount, v2);
        v = cgroup_oom_kills(dir);
        free(dir);
    }
    free(v1_memory);
    free(v1_pids);
    free(v2);
    return v >= 0 ? v : keyed("/proc", "vmstat", "oom_kill");
}
