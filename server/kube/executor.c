/*
 * executor: the `kubernetes` struct executor (see kube.h). Its functions run on the
 * controller's thread: they render objects (pure) and queue commands for the loop thread
 * (loop.c), which does the I/O. adopt() waits for the loop's answer, since the controller must
 * know whether anything of the job exists before it decides to start it again.
 */
#include <stdlib.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "server/kube/internal.h"

#define ADOPT_WAIT (30 * NS_PER_SEC)

static void meta_from(const struct kube *k, int64_t pk, const char *id, const struct spec_view *v,
                      struct kjob_meta *m)
{
    memset(m, 0, sizeof(*m));
    m->pk = pk;
    snprintf(m->id, sizeof(m->id), "%s", id);
    snprintf(m->name, sizeof(m->name), "%s", v->name ? v->name : "");
    snprintf(m->kind, sizeof(m->kind), "%s", kube_render_kind(v));
    snprintf(m->ns, sizeof(m->ns), "%s", kube_render_namespace(v, k->cfg.namespace));
    kube_render_name(v, id, m->obj, sizeof(m->obj));
    bool tj = !strcmp(m->kind, "TrainJob");
    snprintf(m->container, sizeof(m->container), "%s", tj ? "node" : "pytorch");
    m->nodes = v->nodes > 0 ? v->nodes : 1;
    m->ppn = v->procs_per_node > 0 ? v->procs_per_node : 1;
    const json_t *manifest = json_object_get(v->kubernetes, "manifest");
    const json_t *specs = json_object_get(json_object_get(manifest, "spec"), "pytorchReplicaSpecs");
    if (manifest)
        m->has_master = !tj && json_object_get(specs, "Master") != NULL;
    else
        m->has_master = !tj && !json_object_get(v->kubernetes, "elastic");
    m->token = manifest == NULL;
}

static void push(struct kube *k, struct kcmd *c)
{
    c->queued_at = clock_mono_ns();
    pthread_mutex_lock(&k->lock);
    if (k->cmds_tail)
        k->cmds_tail->next = c;
    else
        k->cmds = c;
    k->cmds_tail = c;
    pthread_mutex_unlock(&k->lock);
    kube_client_wakeup(k->client);
}

static struct kcmd *cmd_for(struct kube *k, enum kcmd_type type, const struct job *j,
                            const struct spec_view *v)
{
    struct kcmd *c = XNEW(struct kcmd);
    c->type = type;
    meta_from(k, j->pk, j->id, v, &c->m);
    c->attempt = j->attempt;
    c->state = j->state;
    return c;
}

static int kube_fits(struct executor *ex, const struct job *j, const struct spec_view *v)
{
    struct kube *k = KUBE(ex);
    pthread_mutex_lock(&k->lock);
    bool synced = k->synced, present = kmap_get(&k->held, j->id) != NULL;
    pthread_mutex_unlock(&k->lock);
    if (!synced)
        return 0; /* the first lists are not in: do not create what may exist */
    if (!present)
        return 1;
    push(k, cmd_for(k, C_HELD, j, v)); /* its object exists (Kueue holds it): follow it */
    return -1;
}

static char **marked(struct kube *k, const char *state)
{
    return k->opts.marked_nodes ? k->opts.marked_nodes(k->opts.ctx, state) : NULL;
}

/* Release with render_ctx_release(). */
static void render_ctx(struct kube *k, const char *id, int attempt, bool token,
                       struct kube_render_ctx *rc)
{
    char **bad = marked(k, "bad"), **suspect = marked(k, "suspect");
    pthread_mutex_lock(&k->lock);
    *rc = (struct kube_render_ctx){ .job_id = id,
                                    .namespace = k->cfg.namespace,
                                    .attempt = attempt,
                                    .url = k->url ? xstrdup(k->url) : NULL,
                                    .with_token = token,
                                    .trainer_api = k->trainer_api,
                                    .avoid_nodes = (const char *const *)bad,
                                    .prefer_not_nodes = (const char *const *)suspect };
    pthread_mutex_unlock(&k->lock);
}

static void strv_free(const char *const *v)
{
    for (const char *const *p = v; p && *p; p++)
        free((char *)*p);
    free((void *)v);
}

static void render_ctx_release(struct kube_render_ctx *rc)
{
    free((char *)rc->url);
    strv_free(rc->avoid_nodes);
    strv_free(rc->prefer_not_nodes);
}

static int kube_start(struct executor *ex, const struct job *j, const struct spec_view *v,
                      int attempt, const char *token, struct err *err)
{
    struct kube *k = KUBE(ex);
    struct kcmd *c = cmd_for(k, C_START, j, v);
    c->attempt = attempt;
    struct kube_render_ctx rc;
    render_ctx(k, j->id, attempt, c->m.token, &rc);
    c->object = kube_render(v, &rc, err);
    render_ctx_release(&rc);
    if (!c->object) {
        free(c);
        return -1;
    }
    if (c->m.token) {
        char name[300];
        kube_render_secret_name(c->m.obj, name, sizeof(name));
        c->secret = kube_render_secret(name, c->m.ns, j->id, c->m.name, token ? token : "");
    }
    push(k, c);
    return 0;
}

static int with_spec(struct kube *k, const struct job *j, enum kcmd_type type)
{
    json_t *spec = json_loads(j->spec, 0, NULL);
    struct spec_view v;
    spec_view(spec, &v);
    push(k, cmd_for(k, type, j, &v));
    json_decref(spec);
    return 0;
}

static int kube_stop_job(struct executor *ex, const struct job *j, int64_t grace_ns,
                         struct err *err)
{
    (void)grace_ns; /* pods keep their own terminationGracePeriodSeconds */
    (void)err;
    return with_spec(KUBE(ex), j, C_STOP);
}

static int kube_adopt(struct executor *ex, const struct job *j, const struct spec_view *v,
                      struct err *err)
{
    struct kube *k = KUBE(ex);
    struct kcmd *c = cmd_for(k, C_ADOPT, j, v);
    struct adopt_reply *r = XNEW(struct adopt_reply);
    r->refs = 2;
    c->reply = r;
    push(k, c);
    /* One budget for all the jobs adopted at start: an unreachable API server must not hold
     * the daemon for ADOPT_WAIT per job. Those not answered in time are adopted later. */
    int64_t t0 = clock_mono_ns(), left = ADOPT_WAIT - atomic_load(&k->adopt_waited);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ns = until.tv_nsec + (left > 0 ? left : 0);
    until.tv_sec += ns / NS_PER_SEC;
    until.tv_nsec = ns % NS_PER_SEC;
    pthread_mutex_lock(&k->lock);
    while (!r->done && !k->stopping && left > 0)
        if (pthread_cond_timedwait(&k->cond, &k->lock, &until) != 0)
            break;
    atomic_fetch_add(&k->adopt_waited, clock_mono_ns() - t0);
    bool done = r->done;
    int result = r->result;
    if (--r->refs == 0)
        free(r);
    pthread_mutex_unlock(&k->lock);
    if (!done)
        err_set(err, ERR_TIMEOUT,
                "the Kubernetes API server did not answer in time; the job is "
                "adopted once it does");
    return done ? result : -1;
}

static void kube_poll(struct executor *ex)
{
    atomic_store(&KUBE(ex)->adopted_all, true);
}

static void kube_forget(struct executor *ex, const char *job_id)
{
    struct kube *k = KUBE(ex);
    struct kcmd *c = XNEW(struct kcmd);
    c->type = C_FORGET;
    snprintf(c->m.id, sizeof(c->m.id), "%s", job_id);
    push(k, c);
}

static json_t *kube_render_dry(struct executor *ex, const json_t *spec, const char *job_id,
                               struct err *err)
{
    struct kube *k = KUBE(ex);
    struct spec_view v;
    spec_view(spec, &v);
    struct kube_render_ctx rc;
    render_ctx(k, job_id, 0, !json_object_get(v.kubernetes, "manifest"), &rc);
    json_t *obj = kube_render(&v, &rc, err);
    render_ctx_release(&rc);
    return obj;
}

/* A counter or gauge read from an atomic of struct kube. */
#define KUBE_SCALAR(p, name, type, help, field)                                                    \
    prom_scalar(p, name, type, help, (double)atomic_load(&k->field))

static void kube_metrics(struct executor *ex, struct buf *out)
{
    struct kube *k = KUBE(ex);
    kube_client_metrics(k->client, out);
    struct kube_log_stats ls;
    kube_log_stats(&ls);
    struct prom p;
    prom_init(&p, out);
    prom_family(&p, "trainyard_kube_watch_restarts_total", PROM_COUNTER,
                "Watches started again, by why the last ended: closed by the server (resumed), "
                "expired (410: listed again), error.");
    prom_sample(&p, NULL, (double)atomic_load(&k->watch_closed), "reason", "closed", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&k->watch_expired), "reason", "expired", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&k->watch_errors), "reason", "error", NULL);
    KUBE_SCALAR(&p, "trainyard_kube_watch_events_total", PROM_COUNTER, "Watch events received.",
                watch_events);
    prom_scalar(&p, "trainyard_kube_reconcile_lag_seconds", PROM_GAUGE,
                "How long the controller's last commands waited for the Kubernetes loop.",
                (double)atomic_load(&k->cmd_lag_ns) / 1e9);
    prom_family(&p, "trainyard_kube_create_seconds", PROM_SUMMARY,
                "Time from start() to the job object created.");
    prom_sample(&p, "_sum", (double)atomic_load(&k->create_ns_total) / 1e9, NULL);
    prom_sample(&p, "_count", (double)atomic_load(&k->create_count), NULL);
    prom_family(&p, "trainyard_kube_objects_total", PROM_COUNTER,
                "Job objects created, adopted after a restart, refused.");
    prom_sample(&p, NULL, (double)atomic_load(&k->created), "outcome", "created", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&k->adopted_existing), "outcome", "adopted", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&k->create_errors), "outcome", "failed", NULL);
    KUBE_SCALAR(&p, "trainyard_kube_jobs", PROM_GAUGE, "Jobs followed.", jobs_tracked);
    KUBE_SCALAR(&p, "trainyard_kube_pods", PROM_GAUGE, "Pods followed.", pods_tracked);
    KUBE_SCALAR(&p, "trainyard_kube_log_streams", PROM_GAUGE, "Pod log streams open.",
                streams_open);
    KUBE_SCALAR(&p, "trainyard_kube_log_streams_waiting", PROM_GAUGE,
                "Running containers waiting for a free stream (--kube-log-streams).",
                streams_waiting);
    prom_scalar(&p, "trainyard_kube_log_lines_total", PROM_COUNTER,
                "Pod log lines read (duplicates dropped).", (double)ls.lines);
    prom_scalar(&p, "trainyard_kube_log_duplicates_total", PROM_COUNTER,
                "Pod log lines read again after a reconnection, already stored: dropped.",
                (double)ls.duplicates);
    prom_scalar(&p, "trainyard_kube_loop_busy_seconds_total", PROM_COUNTER,
                "Time the Kubernetes loop thread worked (parsing, reporting), not waiting for "
                "the network.",
                (double)kube_client_busy_ns(k->client) / 1e9);
    prom_scalar(&p, "trainyard_kube_log_push_seconds_total", PROM_COUNTER,
                "Time the loop spent handing lines to the log pipeline (it waits when the "
                "pipeline is full).",
                (double)ls.push_ns / 1e9);
    KUBE_SCALAR(&p, "trainyard_kube_pods_reaped_total", PROM_COUNTER,
                "Pods trainyard deleted because their job failed while they still ran.",
                pods_reaped);
}

void kube_stop(struct executor *ex)
{
    struct kube *k = ex ? KUBE(ex) : NULL;
    if (!k || !k->running)
        return;
    pthread_mutex_lock(&k->lock);
    k->stopping = true;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    kube_client_wakeup(k->client);
    pthread_join(k->thread, NULL);
    k->running = false;
}

static void kube_free(struct executor *ex)
{
    if (!ex)
        return;
    struct kube *k = KUBE(ex);
    kube_stop(ex);
    while (k->cmds) {
        struct kcmd *c = k->cmds;
        k->cmds = c->next;
        json_decref(c->object);
        json_decref(c->secret);
        free(c);
    }
    kube_client_free(k->client);
    kmap_release(&k->held);
    json_decref(k->nodes_doc);
    kube_config_release(&k->cfg);
    free(k->url);
    pthread_cond_destroy(&k->cond);
    pthread_mutex_destroy(&k->lock);
    free(k);
    free(ex);
}

struct executor *kube_new(const struct kube_options *opts, struct err *err)
{
    struct kube *k = XNEW(struct kube);
    k->opts = *opts;
    if (kube_config_resolve(&k->cfg, opts->kubeconfig, opts->context, opts->namespace, err) < 0) {
        free(k);
        return NULL;
    }
    snprintf(k->describe, sizeof(k->describe), "%s (%s%s%s, namespace %s)", k->cfg.server,
             k->cfg.source, k->cfg.context[0] ? ", context " : "", k->cfg.context,
             k->cfg.namespace);
    k->url = opts->url ? xstrdup(opts->url) : NULL;
    kube_follow_set_limit(opts->max_log_streams);
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->cond, NULL);
    kmap_init(&k->held);
    struct executor *ex = XNEW(struct executor);
    *ex = (struct executor){ .name = "kubernetes",
                             .manages_restarts = true,
                             .fits = kube_fits,
                             .start = kube_start,
                             .stop = kube_stop_job,
                             .adopt = kube_adopt,
                             .poll = kube_poll,
                             .forget = kube_forget,
                             .render = kube_render_dry,
                             .metrics = kube_metrics,
                             .free = kube_free,
                             .impl = k };
    k->ex = ex;
    k->client = kube_client_new(&k->cfg, err);
    if (!k->client || pthread_create(&k->thread, NULL, kube_loop, k) != 0) {
        err_set(err, ERR_INTERNAL, "cannot start the Kubernetes executor");
        kube_free(ex);
        return NULL;
    }
    k->running = true;
    return ex;
}

void kube_set_url(struct executor *ex, const char *url)
{
    struct kube *k = KUBE(ex);
    pthread_mutex_lock(&k->lock);
    free(k->url);
    k->url = url ? xstrdup(url) : NULL;
    pthread_mutex_unlock(&k->lock);
}

json_t *kube_nodes_snapshot(struct executor *ex, struct err *err)
{
    struct kube *k = KUBE(ex);
    pthread_mutex_lock(&k->lock);
    json_t *doc = json_incref(k->nodes_doc);
    if (!doc)
        err_set(err, ERR_UNAVAILABLE, "the cluster's nodes are not listed yet%s%s",
                k->nodes_err[0] ? ": " : "", k->nodes_err);
    pthread_mutex_unlock(&k->lock);
    return doc;
}

const char *kube_describe(struct executor *ex)
{
    return KUBE(ex)->describe;
}

int kube_server_dry_run(struct executor *ex, const json_t *object, struct err *err)
{
    struct kube *k = KUBE(ex);
    const char *kind = jsonx_str(object, "kind");
    const char *ns = jsonx_str(json_object_get(object, "metadata"), "namespace");
    char base[300], path[400];
    kube_render_path(kind ? kind : "", ns ? ns : k->cfg.namespace, base, sizeof(base));
    snprintf(path, sizeof(path), "%s?dryRun=All", base);
    char *body = jsonx_dumps(object);
    struct kube_request r = { .method = "POST", .path = path, .body = body, .timeout_ms = 10000 };
    int rc = kube_client_do(k->client, &r, NULL, err);
    free(body);
    return rc;
}
