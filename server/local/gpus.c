/*
 * gpus: the machine's GPUs through NVML, loaded at run time (see gpus.h). The few NVML entry
 * points used are declared here with NVML's own signatures (nvml.h is not needed to build); each
 * call is checked, and any failure means "no GPUs from NVML", with the reason in g->source.
 */
#include "server/local/gpus.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/jsonx.h"

typedef int nvml_return;                 /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t */
struct nvml_memory {                     /* nvmlMemory_t */
    unsigned long long total, free, used;
};

struct nvml {
    void *lib;
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    nvml_return (*count)(unsigned *n);
    nvml_return (*by_index)(unsigned i, nvml_device *d);
    nvml_return (*uuid)(nvml_device d, char *out, unsigned len);
    nvml_return (*name)(nvml_device d, char *out, unsigned len);
    nvml_return (*memory)(nvml_device d, struct nvml_memory *m);
};

static int load(struct nvml *n, struct gpus *g)
{
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(g->source, sizeof(g->source), "none (no NVIDIA driver: libnvidia-ml.so.1)");
        return -1;
    }
    *(void **)&n->init = dlsym(n->lib, "nvmlInit_v2");
    *(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
    *(void **)&n->count = dlsym(n->lib, "nvmlDeviceGetCount_v2");
    *(void **)&n->by_index = dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&n->uuid = dlsym(n->lib, "nvmlDeviceGetUUID");
    *(void **)&n->name = dlsym(n->lib, "nvmlDeviceGetName");
    *(void **)&n->memory = dlsym(n->lib, "nvmlDeviceGetMemoryInfo");
    if (!n->init || !n->shutdown || !n->count || !n->by_index || !n->uuid || !n->name ||
        !n->memory) {
        snprintf(g->source, sizeof(g->source), "none (libnvidia-ml.so.1 lacks an entry point)");
        dlclose(n->lib);
        return -1;
    }
    int rc = n->init();
    if (rc != 0) {
        snprintf(g->source, sizeof(g->source), "none (nvmlInit failed: %d)", rc);
        dlclose(n->lib);
        return -1;
    }
    return 0;
}

static void from_nvml(struct gpus *g)
{
    struct nvml n = { 0 };
    if (load(&n, g) < 0)
        return;
    unsigned count = 0;
    int rc = n.count(&count);
    for (unsigned i = 0; rc == 0 && i < count && g->n < GPUS_MAX; i++) {
        nvml_device d;
        struct nvml_memory m = { 0 };
        struct gpu *x = &g->gpu[g->n];
        *x = (struct gpu){ .index = (int)i };
        if (n.by_index(i, &d) != 0 || n.uuid(d, x->uuid, sizeof(x->uuid)) != 0)
            continue; /* a GPU NVML cannot name (lost, in reset) is not given to jobs */
        if (n.name(d, x->name, sizeof(x->name)) != 0)
            snprintf(x->name, sizeof(x->name), "NVIDIA GPU");
        if (n.memory(d, &m) == 0)
            x->memory_bytes = (int64_t)m.total;
        g->n++;
    }
    snprintf(g->source, sizeof(g->source), rc == 0 ? "nvml" : "none (nvmlDeviceGetCount failed)");
    n.shutdown();
    dlclose(n.lib);
}

static const char *str_or(const json_t *o, const char *key, const char *def)
{
    const char *v = jsonx_str(o, key);
    return v ? v : def;
}

static int from_file(struct gpus *g, const char *path, struct err *err)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!json_is_array(doc)) {
        json_decref(doc);
        return err_set(err, ERR_INVALID, "--test-gpus %s: not a JSON array of GPUs", path);
    }
    size_t i;
    json_t *e;
    json_array_foreach(doc, i, e)
    {
        if (g->n >= GPUS_MAX)
            break;
        struct gpu *x = &g->gpu[g->n++];
        *x = (struct gpu){ .index = (int)jsonx_int(e, "index", (int64_t)i),
                           .memory_bytes = jsonx_int(e, "memory_bytes", 0) };
        snprintf(x->uuid, sizeof(x->uuid), "%s", str_or(e, "uuid", ""));
        snprintf(x->name, sizeof(x->name), "%s", str_or(e, "name", "NVIDIA GPU"));
    }
    json_decref(doc);
    snprintf(g->source, sizeof(g->source), "test file");
    return 0;
}

/* Whether the GPU is named in the comma-separated list (by index or UUID). */
static bool listed(const struct gpu *x, const char *list)
{
    char idx[16];
    snprintf(idx, sizeof(idx), "%d", x->index);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if ((len == strlen(idx) && strncmp(p, idx, len) == 0) ||
            (len == strlen(x->uuid) && strncmp(p, x->uuid, len) == 0))
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

/* Keeps only the listed GPUs; every listed name must be one of them. */
static int restrict_list(struct gpus *g, const char *list, struct err *err)
{
    size_t kept = 0, named = 1;
    for (const char *p = list; *p; p++)
        named += *p == ',';
    for (size_t i = 0; i < g->n; i++)
        if (listed(&g->gpu[i], list))
            g->gpu[kept++] = g->gpu[i];
    if (kept != named)
        return err_set(err, ERR_INVALID,
                       "--local-gpus %s: %zu of the %zu GPUs named are not on this machine "
                       "(found %zu: %s)",
                       list, named - kept, named, g->n, g->source);
    g->n = kept;
    return 0;
}

int gpus_discover(struct gpus *g, const char *restrict_to, const char *test_file, struct err *err)
{
    *g = (struct gpus){ 0 };
    if (restrict_to && strcmp(restrict_to, "none") == 0) {
        snprintf(g->source, sizeof(g->source), "none (--local-gpus none)");
        return 0;
    }
    if (test_file && *test_file) {
        if (from_file(g, test_file, err) < 0)
            return -1;
    } else {
        from_nvml(g);
    }
    if (restrict_to && *restrict_to && strcmp(restrict_to, "auto") != 0)
        return restrict_list(g, restrict_to, err);
    return 0;
}
