/*
 * dcgm: the Prometheus poller for DCGM exporter series (see dcgm.h). One HTTP client
 * (core/httpc), reused; one instant query per interval covering every node and metric:
 *   {__name__=~"DCGM_FI_DEV_(...)", Hostname=~"node1|node2"}
 * A poll that fails is counted and retried at the next interval; it never blocks a job.
 */
#include "server/health/dcgm.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/clock.h"
#include "core/httpc.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "server/diag/kinds.h"
#include "server/health/health.h"
#include "store/nodes.h"

#define METRICS                                                                                    \
    "DCGM_FI_DEV_(GPU_UTIL|GPU_TEMP|POWER_USAGE|CLOCK_THROTTLE_REASONS|CLOCKS_EVENT_REASONS|"      \
    "XID_ERRORS|ECC_DBE_VOL_TOTAL|ECC_SBE_VOL_TOTAL)"
/* Clock event (throttle) reasons that mean the GPU is slowed down against its will. */
#define BAD_THROTTLE (0x8 | 0x20 | 0x40 | 0x80)
/* An answer this large is not what we asked for. */
#define ANSWER_MAX (16u << 20)

struct dcgm {
    struct health *h;
    struct store *st;
    char *url, *bearer;
    struct httpc *http; /* the poller thread's, once started */
    int64_t interval_ns;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    char **marked; /* "node|xid" already marked, so a node is marked once per cause */
    size_t nmarked;
    atomic_ullong polls, errors;
    atomic_llong last_ok;
};

struct dcgm *dcgm_new(struct health *h, struct store *st, const struct dcgm_options *o)
{
    struct dcgm *d = XNEW(struct dcgm);
    d->h = h;
    d->st = st;
    d->url = xstrdup(o->url);
    d->bearer = o->bearer && *o->bearer ? xstrdup(o->bearer) : NULL;
    d->interval_ns = o->interval_ns > 0 ? o->interval_ns : 15 * NS_PER_SEC;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->cond, NULL);
    return d;
}

static const char *field_of(const char *name)
{
    static const struct {
        const char *metric, *field;
    } map[] = {
        { "DCGM_FI_DEV_GPU_UTIL", "utilization" },
        { "DCGM_FI_DEV_GPU_TEMP", "temperature" },
        { "DCGM_FI_DEV_POWER_USAGE", "power_watts" },
        { "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "throttle_reasons" },
        { "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "throttle_reasons" },
        { "DCGM_FI_DEV_XID_ERRORS", "xid" },
        { "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc_uncorrectable" },
        { "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "ecc_corrected" },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (name && strcmp(map[i].metric, name) == 0)
            return map[i].field;
    return NULL;
}

static json_t *throttle_names(long bits)
{
    static const char *const names[] = { "gpu_idle",    "applications_clocks", "sw_power_cap",
                                         "hw_slowdown", "sync_boost",          "sw_thermal",
                                         "hw_thermal",  "hw_power_brake",      "display_clocks" };
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (bits & (1L << i))
            json_array_append_new(a, json_string(names[i]));
    return a;
}

/* The GPU object of node/gpu in nodes (created on first use). */
static json_t *gpu_of(json_t *nodes, const char *node, const json_t *metric)
{
    json_t *n = json_object_get(nodes, node);
    if (!n) {
        n = json_object();
        json_object_set_new(nodes, node, n);
    }
    const char *gpu = jsonx_str(metric, "gpu") ? jsonx_str(metric, "gpu") : "0";
    json_t *g = json_object_get(n, gpu);
    if (!g) {
        g = json_object();
        char *end;
        long idx = strtol(gpu, &end, 10);
        json_object_set_new(g, "gpu", *end ? json_string(gpu) : json_integer(idx));
        jsonx_set_str(g, "uuid", jsonx_str(metric, "UUID"));
        jsonx_set_str(g, "model", jsonx_str(metric, "modelName"));
        jsonx_set_str(g, "pci_bus_id", jsonx_str(metric, "pci_bus_id"));
        json_object_set_new(n, gpu, g);
    }
    return g;
}

static void add_sample(json_t *nodes, const json_t *item)
{
    const json_t *metric = json_object_get(item, "metric");
    const char *field = field_of(jsonx_str(metric, "__name__"));
    const char *node = jsonx_str(metric, "Hostname");
    if (!node)
        node = jsonx_str(metric, "node");
    const char *text = json_string_value(json_array_get(json_object_get(item, "value"), 1));
    char *end = NULL;
    double v = text ? strtod(text, &end) : NAN;
    if (!field || !node || !text || end == text || !isfinite(v))
        return;
    json_t *g = gpu_of(nodes, node, metric);
    if (strcmp(field, "throttle_reasons") == 0) {
        json_object_set_new(g, "throttle_bits", json_integer((json_int_t)v));
        json_object_set_new(g, field, throttle_names((long)v));
    } else if (strcmp(field, "xid") == 0 || strncmp(field, "ecc", 3) == 0) {
        json_object_set_new(g, field, json_integer((json_int_t)v));
    } else {
        json_object_set_new(g, field, json_real(v));
    }
}

static void add_condition(json_t *conds, const char *c)
{
    size_t i;
    json_t *x;
    json_array_foreach(conds, i, x) if (strcmp(json_string_value(x), c) == 0) return;
    json_array_append_new(conds, json_string(c));
}

/* {gpu-index: {...}} of a node into {"gpus": [...], "conditions": [...]}. */
static json_t *node_view(json_t *bygpu)
{
    json_t *gpus = json_array(), *conds = json_array();
    const char *k;
    json_t *g;
    json_object_foreach(bygpu, k, g)
    {
        json_array_append(gpus, g);
        if (jsonx_int(g, "xid", 0) != 0)
            add_condition(conds, "GPUXidError");
        if (jsonx_int(g, "ecc_uncorrectable", 0) > 0)
            add_condition(conds, "GPUECCError");
        if (jsonx_int(g, "throttle_bits", 0) & BAD_THROTTLE)
            add_condition(conds, "GPUThrottled");
        json_t *u = json_object_get(g, "utilization");
        if (u && json_number_value(u) == 0)
            add_condition(conds, "GPUIdle");
    }
    return json_pack("{s:o,s:o}", "gpus", gpus, "conditions", conds);
}

json_t *dcgm_parse(const char *body, size_t len)
{
    json_t *doc = json_loadb(body, len, 0, NULL);
    json_t *data = json_object_get(doc, "data");
    const char *status = jsonx_str(doc, "status");
    const char *type = jsonx_str(data, "resultType");
    if (!status || strcmp(status, "success") != 0 || !type || strcmp(type, "vector") != 0) {
        json_decref(doc);
        return NULL;
    }
    json_t *nodes = json_object();
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(data, "result"), i, item) add_sample(nodes, item);
    json_decref(doc);
    json_t *out = json_object();
    const char *name;
    json_t *bygpu;
    json_object_foreach(nodes, name, bygpu) json_object_set_new(out, name, node_view(bygpu));
    json_decref(nodes);
    return out;
}

/* The node names as one regular expression (dots and other specials escaped). */
static void node_regex(struct buf *b, char **nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_putc(b, '|');
        for (const char *p = nodes[i]; *p; p++) {
            if (strchr(".+*?()[]{}|^$\\", *p))
                buf_puts(b, "\\\\");
            buf_putc(b, *p);
        }
    }
}

/* GETs the instant query; the answer's body into out. */
static int query(struct httpc *http, const char *promql, struct buf *out, struct err *err)
{
    struct buf url = BUF_INIT;
    buf_puts(&url, "/api/v1/query?query=");
    httpc_escape(&url, promql);
    struct httpc_request rq = { .url = buf_cstr(&url) };
    struct httpc_response r;
    httpc_response_init(&r);
    int rc = httpc_do(http, &rq, &r, err);
    if (rc == 0 && r.status != 200)
        rc = err_set(err, ERR_UPSTREAM, "prometheus answered HTTP %ld", r.status);
    else if (rc == 0 && r.truncated)
        rc = err_set(err, ERR_UPSTREAM, "prometheus: an answer over %u bytes", ANSWER_MAX);
    if (rc == 0)
        buf_append(out, r.body.data, r.body.len);
    httpc_response_release(&r);
    buf_release(&url);
    return rc;
}

static bool marked_once(struct dcgm *d, const char *node, const char *cause)
{
    char key[256];
    snprintf(key, sizeof(key), "%s|%s", node, cause);
    for (size_t i = 0; i < d->nmarked; i++)
        if (strcmp(d->marked[i], key) == 0)
            return true;
    d->marked = xrealloc(d->marked, (d->nmarked + 1) * sizeof(*d->marked));
    d->marked[d->nmarked++] = xstrdup(key);
    return false;
}

static void mark(struct dcgm *d, const char *node, const char *reason, const char *message)
{
    if (marked_once(d, node, message))
        return;
    struct node_mark_new m = {
        .name = node, .state = "suspect", .reason = reason, .message = message, .source = "dcgm"
    };
    struct err err;
    err_init(&err);
    if (store_node_mark(d->st, &m, &err) < 0)
        log_warn("dcgm: marking node %s: %s", node, err.msg);
    err_release(&err);
}

/* Xid and uncorrectable ECC counts become findings of the node's jobs, as the kernel's lines
 * would, and a suspect mark when the hardware is to blame. */
static void hardware_findings(struct dcgm *d, const char *node, const json_t *gpus)
{
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        const char *pci = jsonx_str(g, "pci_bus_id");
        long gpu = (long)jsonx_int(g, "gpu", (json_int_t)i);
        long xid = (long)jsonx_int(g, "xid", 0);
        char line[256], msg[128];
        if (xid) {
            snprintf(line, sizeof(line), "NVRM: Xid (PCI:%s): %ld, reported by DCGM for GPU %ld",
                     pci ? pci : "?", xid, gpu);
            health_node_line(d->h, node, line);
            snprintf(msg, sizeof(msg), "Xid %ld on GPU %ld (%s)", xid, gpu, kinds_xid(xid)->text);
            if (kinds_xid(xid)->node_fault)
                mark(d, node, "GPUXidError", msg);
        }
        if (jsonx_int(g, "ecc_uncorrectable", 0) > 0) {
            snprintf(line, sizeof(line),
                     "uncorrectable ECC error count %lld reported by DCGM for GPU %ld",
                     (long long)jsonx_int(g, "ecc_uncorrectable", 0), gpu);
            health_node_line(d->h, node, line);
            snprintf(msg, sizeof(msg), "uncorrectable ECC errors on GPU %ld", gpu);
            mark(d, node, "GPUECCError", msg);
        }
    }
}

static void poll_once(struct dcgm *d, struct httpc *http)
{
    char **nodes = NULL;
    size_t n = health_nodes(d->h, &nodes);
    if (n == 0)
        return;
    struct buf promql = BUF_INIT, body = BUF_INIT;
    buf_puts(&promql, "{__name__=~\"" METRICS "\",Hostname=~\"");
    node_regex(&promql, nodes, n);
    buf_puts(&promql, "\"}");
    struct err err;
    err_init(&err);
    atomic_fetch_add(&d->polls, 1);
    json_t *parsed = NULL;
    if (query(http, buf_cstr(&promql), &body, &err) == 0 &&
        !(parsed = dcgm_parse(body.data ? body.data : "", body.len)))
        err_set(&err, ERR_UPSTREAM, "prometheus: not a successful instant vector");
    if (err_is_set(&err)) {
        atomic_fetch_add(&d->errors, 1);
        log_debug("dcgm: %s", err.msg);
    } else {
        atomic_store(&d->last_ok, clock_now_ns());
        const char *node;
        json_t *v;
        json_object_foreach(parsed, node, v)
        {
            hardware_findings(d, node, json_object_get(v, "gpus"));
            health_node_gpus(d->h, node, json_incref(json_object_get(v, "gpus")),
                             json_incref(json_object_get(v, "conditions")));
        }
    }
    json_decref(parsed);
    err_release(&err);
    buf_release(&promql);
    buf_release(&body);
    for (size_t i = 0; i < n; i++)
        free(nodes[i]);
    free(nodes);
}

static void *dcgm_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-dcgm");
    struct dcgm *d = arg;
    for (;;) {
        poll_once(d, d->http);
        pthread_mutex_lock(&d->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t ns = until.tv_nsec + d->interval_ns;
        until.tv_sec += ns / NS_PER_SEC;
        until.tv_nsec = ns % NS_PER_SEC;
        if (!d->stopping)
            pthread_cond_timedwait(&d->cond, &d->lock, &until);
        bool stop = d->stopping;
        pthread_mutex_unlock(&d->lock);
        if (stop)
            break;
    }
    return NULL;
}

int dcgm_start(struct dcgm *d, struct err *err)
{
    /* A URL without a scheme is http, as libcurl used to guess before the client checked. */
    char *url = strstr(d->url, "://") ? xstrdup(d->url) : xasprintf("http://%s", d->url);
    struct httpc_options o = {
        .base_url = url, .bearer = d->bearer, .timeout_ms = 5000, .max_body = ANSWER_MAX
    };
    d->http = httpc_new(&o, err);
    free(url);
    if (!d->http)
        return err_wrap(err, "--prometheus-url");
    if (pthread_create(&d->thread, NULL, dcgm_main, d) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the GPU metrics poller");
    d->running = true;
    return 0;
}

void dcgm_free(struct dcgm *d)
{
    if (!d)
        return;
    if (d->running) {
        pthread_mutex_lock(&d->lock);
        d->stopping = true;
        pthread_cond_signal(&d->cond);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
    }
    for (size_t i = 0; i < d->nmarked; i++)
        free(d->marked[i]);
    free(d->marked);
    pthread_cond_destroy(&d->cond);
    pthread_mutex_destroy(&d->lock);
    httpc_free(d->http);
    free(d->url);
    free(d->bearer);
    free(d);
}

void dcgm_metrics(struct dcgm *d, struct buf *out)
{
    struct prom p;
    prom_init(&p, out);
    prom_scalar(&p, "trainyard_dcgm_polls_total", PROM_COUNTER,
                "Queries of Prometheus for DCGM GPU metrics.", (double)atomic_load(&d->polls));
    prom_scalar(&p, "trainyard_dcgm_errors_total", PROM_COUNTER, "Queries that failed.",
                (double)atomic_load(&d->errors));
    prom_scalar(&p, "trainyard_dcgm_last_success_seconds", PROM_GAUGE,
                "Unix time of the last good query.", (double)atomic_load(&d->last_ok) / 1e9);
}
