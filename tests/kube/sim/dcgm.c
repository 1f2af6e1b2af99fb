/*
 * dcgm: renders the exporter's text from the store's nodes (their nvidia.com/gpu capacity and
 * product label) and pods (which nodes are busy), plus the overrides the control API set,
 * kept in one JSON object {"node/gpu": {"xid": .., "temp": .., "dbe": ..}} under the world
 * lock.
 */
#include "tests/kube/sim/dcgm.h"

#include "core/jsonx.h"
#include "core/parse.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

static json_t *overrides; /* world lock */

static int gpus_of(const json_t *node)
{
    int n = 0;
    const char *v = kstr(kpath(node, "status.capacity"), "nvidia.com/gpu");
    if (v[0] && parse_int(v, 0, 64, &n) == 0)
        return n;
    return 0;
}

static json_t *busy_nodes(struct world *w)
{
    json_t *busy = json_object();
    size_t n;
    json_t **pods = store_list(w->store, resource_lookup("", "v1", "pods"), NULL, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(kstr(kpath(pods[i], "status"), "phase"), "Running"))
            json_object_set_new(busy, kstr(kpath(pods[i], "spec"), "nodeName"), json_true());
    store_list_free(pods, n);
    return busy;
}

void dcgm_serve(struct request *req, struct reply *rep)
{
    struct world *w = req->w;
    struct buf out = BUF_INIT;
    static const char *const names[][2] = {
        { "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)." },
        { "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)." },
        { "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)." },
        { "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Throttling reasons bitmask." },
        { "DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered." },
        { "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors." },
        { "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors." },
    };
    world_lock(w);
    json_t *busy = busy_nodes(w);
    size_t n;
    json_t **nodes = store_list(w->store, resource_lookup("", "v1", "nodes"), NULL, &n);
    for (size_t s = 0; s < sizeof(names) / sizeof(names[0]); s++) {
        buf_printf(&out, "# HELP %s %s\n# TYPE %s gauge\n", names[s][0], names[s][1], names[s][0]);
        for (size_t i = 0; i < n; i++) {
            const char *node = kstr(json_object_get(nodes[i], "metadata"), "name");
            const char *model = kstr(kpath(nodes[i], "metadata.labels"), "nvidia.com/gpu.product");
            bool on = json_object_get(busy, node) != NULL;
            for (int g = 0; g < gpus_of(nodes[i]); g++) {
                char key[300], labels[700];
                snprintf(key, sizeof(key), "%s/%d", node, g);
                const json_t *o = json_object_get(overrides, key);
                snprintf(labels, sizeof(labels),
                         "gpu=\"%d\",UUID=\"GPU-%08x-0000-4000-8000-%012d\",device=\"nvidia%d\","
                         "modelName=\"%s\",Hostname=\"%s\"",
                         g, (unsigned)(strlen(node) * 2654435761u), g, g, model, node);
                double v[] = { on ? 97 : 0,
                               (double)jsonx_int(o, "temp", on ? 64 : 38),
                               on ? 612.5 : 71.0,
                               (double)jsonx_int(o, "throttle", 0),
                               (double)jsonx_int(o, "xid", 0),
                               (double)jsonx_int(o, "dbe", 0),
                               (double)jsonx_int(o, "sbe", 0) };
                buf_printf(&out, "%s{%s} %g\n", names[s][0], labels, v[s]);
            }
        }
    }
    store_list_free(nodes, n);
    json_decref(busy);
    world_unlock(w);
    rep->content_type = "text/plain; version=0.0.4";
    reply_text(rep, 200, buf_cstr(&out), out.len);
    buf_release(&out);
}

void dcgm_control(struct request *req, struct reply *rep)
{
    json_t *body = json_loadb(req->body, req->body_len, 0, NULL);
    const char *node = kstr(body, "node");
    if (!node[0] || !json_is_integer(json_object_get(body, "gpu"))) {
        reply_json(rep, 400, json_pack("{s:s}", "message", "give \"node\" and \"gpu\""));
        json_decref(body);
        return;
    }
    char key[300];
    snprintf(key, sizeof(key), "%s/%lld", node, (long long)jsonx_int(body, "gpu", 0));
    world_lock(req->w);
    if (!overrides)
        overrides = json_object();
    json_t *o = json_object_get(overrides, key);
    if (!o)
        json_object_set_new(overrides, key, o = json_object());
    const char *k;
    json_t *v;
    json_object_foreach (body, k, v)
        if (json_is_integer(v) && strcmp(k, "gpu"))
            json_object_set(o, k, v);
    world_unlock(req->w);
    reply_json(rep, 200, json_pack("{s:s}", "status", "ok"));
    json_decref(body);
}

void dcgm_release(void)
{
    json_decref(overrides);
    overrides = NULL;
}
