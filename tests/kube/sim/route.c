/*
 * route: what the simulator serves over TLS on its one port (the certificate up.sh made for
 * 127.0.0.1, which the API server trusts through --kubelet-certificate-authority):
 *   GET  /containerLogs/NS/POD/CONTAINER   the kubelet's log endpoint, which kube-apiserver
 *        calls for GET .../pods/POD/log (follow, previous, timestamps, sinceTime, sinceSeconds,
 *        tailLines, limitBytes); errors in the kubelet's words as text/plain, which the API
 *        server turns into its Status
 *   POST /validate-kubeflow-org-v1-pytorchjob   the Training Operator's webhook (webhook.c)
 *   GET  /metrics                          the DCGM exporter (dcgm.c)
 *   GET  /_test/mirror                     the mirror's counters (requests, retries, drops)
 *   /_test/...                             the control API (tests/kube/control.c,
 *                                          docs/kube-testserver.md)
 */
#include "tests/kube/sim/route.h"

#include "core/jsonx.h"
#include "core/xalloc.h"
#include "tests/kube/control.h"
#include "tests/kube/logs.h"
#include "tests/kube/rest.h"
#include "tests/kube/sim/dcgm.h"
#include "tests/kube/sim/mirror.h"
#include "tests/kube/sim/webhook.h"
#include "tests/kube/world.h"

/* The kubelet answers a refused log read with plain text (go-restful's WriteError). */
static void as_text(struct reply *rep)
{
    if (rep->stream || rep->code < 400)
        return;
    json_t *st = json_loadb(buf_cstr(&rep->body), rep->body.len, 0, NULL);
    const char *msg = kstr(st, "message");
    if (msg[0]) {
        char *copy = xstrdup(msg);
        buf_reset(&rep->body);
        buf_printf(&rep->body, "%s", copy);
        free(copy);
        rep->content_type = "text/plain";
    }
    json_decref(st);
}

static void container_logs(struct request *req, struct reply *rep)
{
    char ns[254], pod[254], ctr[254];
    const char *p = req->path + strlen("/containerLogs/");
    if (sscanf(p, "%253[^/]/%253[^/]/%253[^/?]", ns, pod, ctr) != 3) {
        reply_text(rep, 404, "404 page not found\n", 19);
        return;
    }
    const struct resource *res = resource_lookup("", "v1", "pods");
    struct target t = { .res = res, .store_res = res, .verb = "get" };
    snprintf(t.ns, sizeof(t.ns), "%s", ns);
    snprintf(t.name, sizeof(t.name), "%s", pod);
    snprintf(t.sub, sizeof(t.sub), "log");
    logs_serve(req, &t, ctr, rep);
    as_text(rep);
}

static struct mirror *the_mirror;

void sim_route_mirror(struct mirror *m)
{
    the_mirror = m;
}

static void mirror_state(struct request *req, struct reply *rep)
{
    struct buf b = BUF_INIT;
    buf_putc(&b, '{');
    world_lock(req->w);
    if (the_mirror)
        mirror_stats(the_mirror, &b);
    world_unlock(req->w);
    buf_puts(&b, "}\n");
    rep->content_type = "application/json";
    reply_text(rep, 200, buf_cstr(&b), b.len);
    buf_release(&b);
}

void sim_route(struct request *req, struct reply *rep)
{
    const char *path = req->path;
    if (!strcmp(path, "/_test/mirror")) {
        mirror_state(req, rep);
        return;
    }
    if (!strncmp(path, "/containerLogs/", 15) && !strcmp(req->method, "GET"))
        container_logs(req, rep);
    else if (!strcmp(path, WEBHOOK_PATH) && !strcmp(req->method, "POST"))
        webhook_handle(req, rep);
    else if (!strcmp(path, "/metrics"))
        dcgm_serve(req, rep);
    else if (!strcmp(path, "/_test/gpus") && !strcmp(req->method, "POST"))
        dcgm_control(req, rep);
    else if (!strncmp(path, "/_test/", 7))
        control_handle(req, rep);
    else if (!strcmp(path, "/healthz"))
        reply_text(rep, 200, "ok", 2);
    else
        reply_text(rep, 404, "404 page not found\n", 19);
}
