/*
 * kubelet_script: builds struct script from annotations and env. Env wins over annotations
 * (it is per container); per-rank annotations win over both for their rank. Pure functions.
 */
#include "tests/kube/kubelet_script.h"

#include "core/buf.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/world.h"

#define ANN "testserver.trainyard.io/"

static const char *env_value(const json_t *container, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(container, "env"), i, e)
        if (!strcmp(kstr(e, "name"), name) && json_is_string(json_object_get(e, "value")))
            return kstr(e, "value");
    return NULL;
}

static const char *ann(const json_t *pod, const char *key)
{
    char full[128];
    snprintf(full, sizeof(full), ANN "%s", key);
    return json_string_value(json_object_get(kpath(pod, "metadata.annotations"), full));
}

/* env TESTSERVER_<NAME>, else the annotation <key>. */
static const char *setting(const json_t *pod, const json_t *container, const char *env,
                           const char *key)
{
    const char *v = env_value(container, env);
    return v ? v : ann(pod, key);
}

int script_rank(const json_t *pod, const json_t *container)
{
    int rank;
    const char *v = env_value(container, "RANK");
    if (!v)
        v = kstr(kpath(pod, "metadata.annotations"), "batch.kubernetes.io/job-completion-index");
    if (v && v[0] && parse_int(v, 0, 1 << 20, &rank) == 0)
        return rank;
    v = kstr(kpath(pod, "metadata.labels"), "training.kubeflow.org/replica-index");
    return v[0] && parse_int(v, 0, 1 << 20, &rank) == 0 ? rank : -1;
}

/* Looks rank up in "r=code,r=code"; returns true and sets *code when listed. */
static bool rank_listed(const char *list, int rank, int *code)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        char item[64];
        snprintf(item, sizeof(item), "%.*s", (int)len, p);
        char *eq = strchr(item, '=');
        if (eq)
            *eq = '\0';
        int r;
        if (parse_int(item, 0, 1 << 20, &r) == 0 && r == rank) {
            if (eq && code && parse_int(eq + 1, 0, 255, code) < 0)
                *code = 1;
            return true;
        }
        p += len + (p[len] == ',');
    }
    return false;
}

static void add_line(struct script *s, const char *text, size_t len)
{
    s->lines = xrealloc(s->lines, (s->n + 1) * sizeof(char *));
    s->lines[s->n++] = xstrndup(text, len);
}

/* A failing rank dies half-way through its steps, without the closing line: in a real job
 * the crash comes first and the other ranks hang or fail after it, so a job's first failure
 * must not depend on which pod the scheduler happened to start first. */
static void default_lines(struct script *s, const json_t *pod, const json_t *container, int rank,
                          int steps, bool failing)
{
    const char *world = env_value(container, "WORLD_SIZE");
    const char *nnodes = env_value(container, "PET_NNODES");
    const char *master = env_value(container, "MASTER_ADDR");
    if (!master)
        master = env_value(container, "PET_MASTER_ADDR");
    struct buf b = BUF_INIT;
    buf_printf(&b,
               "[rank %d] pod %s: initializing process group backend=nccl world_size=%s "
               "master=%s",
               rank < 0 ? 0 : rank, kstr(kpath(pod, "metadata"), "name"),
               world    ? world
               : nnodes ? nnodes
                        : "1",
               master ? master : "localhost");
    add_line(s, b.data, b.len);
    double loss = 2.3026;
    int last = failing ? steps / 2 : steps;
    for (int i = 1; i <= last; i++) {
        buf_reset(&b);
        buf_printf(&b, "[rank %d] step %d/%d loss=%.4f lr=0.000300 samples_per_sec=%.1f",
                   rank < 0 ? 0 : rank, i, steps, loss, 1180.0 + 13.0 * i);
        add_line(s, b.data, b.len);
        loss *= 0.82;
    }
    if (failing) {
        buf_release(&b);
        return;
    }
    buf_reset(&b);
    buf_printf(&b, "[rank %d] training finished: %d steps", rank < 0 ? 0 : rank, steps);
    add_line(s, b.data, b.len);
    buf_release(&b);
}

static bool settings_given(const json_t *pod)
{
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)kpath(pod, "metadata.annotations"), k, v)
        if (!strncmp(k, ANN, strlen(ANN)))
            return true;
    return false;
}

void script_load(struct script *s, const json_t *pod, const json_t *container, int attempt)
{
    memset(s, 0, sizeof(*s));
    int rank = script_rank(pod, container), steps = 5, ms = 100, fail_attempts = 0;
    const char *v;
    if ((v = setting(pod, container, "TESTSERVER_STEPS", "steps")))
        parse_int(v, 0, 100000, &steps);
    if ((v = setting(pod, container, "TESTSERVER_LINE_INTERVAL_MS", "line-interval-ms")))
        parse_int(v, 0, 3600000, &ms);
    if ((v = setting(pod, container, "TESTSERVER_EXIT_CODE", "exit-code")))
        parse_int(v, 0, 255, &s->exit_code);
    rank_listed(ann(pod, "rank-exit-codes"), rank, &s->exit_code);
    s->oom = rank_listed(ann(pod, "oom-ranks"), rank, NULL);
    if ((v = ann(pod, "fail-attempts")) && parse_int(v, 0, 1 << 20, &fail_attempts) == 0 &&
        attempt > fail_attempts) {
        s->exit_code = 0;
        s->oom = false;
    }
    /* run-forever: the healthy ranks never end (as in a job whose peer died: they hang in a
     * collective), a rank set to fail still fails. */
    v = ann(pod, "run-forever");
    s->forever = v && !strcmp(v, "true") && !s->oom && s->exit_code == 0;
    s->interval_ns = (int64_t)ms * 1000000LL;
    const char *text = setting(pod, container, "TESTSERVER_LINES", "lines");
    const json_t *labels = kpath(pod, "metadata.labels");
    bool trained = kstr(labels, "training.kubeflow.org/job-name")[0] ||
                   kstr(labels, "jobset.sigs.k8s.io/jobset-name")[0] || settings_given(pod);
    if (!text && !trained) { /* not a training pod (a Deployment's): runs, silent, until deleted */
        s->forever = true;
        return;
    }
    if (!text) {
        default_lines(s, pod, container, rank, steps, s->exit_code != 0 || s->oom);
        return;
    }
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        add_line(s, p, len);
        p += len + (p[len] == '\n');
    }
}

void script_release(struct script *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->lines[i]);
    free(s->lines);
    memset(s, 0, sizeof(*s));
}
