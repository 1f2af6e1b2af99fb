/*
 * main: the trainyard command. `trainyard serve` brings the daemon up in this order: config,
 * signals, store, tokens, executors, controller, log pipeline, HTTP; and takes it down in
 * reverse. Other subcommands: token (manage API tokens in the server's database), shim (the
 * local executor's rank supervisor, not for people), version, and the CLI client (cli.c).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/auth.h"
#include "api/ratelimit.h"
#include "api/rendezvous.h"
#include "server/cli/cli.h"
#include "server/ingest/collect.h"
#include "server/daemon/config.h"
#include "server/control/controller.h"
#include "server/health/dcgm.h"
#include "server/health/health.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/wakeups.h"
#include "core/xalloc.h"
#include "server/http/http.h"
#include "server/kube/kube.h"
#include "server/local/local.h"
#include "server/outbound/notifier.h"
#include "server/local/shim.h"
#include "server/daemon/signals.h"
#include "trigger/sns.h"
#include "server/outbound/triggerloop.h"
#include "store/jobs.h"
#include "store/nodes.h"
#include "store/tokens.h"
#include "server/daemon/token_cmd.h"

struct daemon {
    struct config cfg;
    struct store *store;
    struct wakeups *wakeups;
    struct collect *collect;
    struct health *health;
    struct dcgm *dcgm;
    struct executor *executors[2];
    size_t nexec;
    struct executor *kube; /* also in executors[], when enabled */
    struct controller *controller;
    struct sns_verifier *sns;
    struct triggerloop *triggers;
    struct notifier *notifier;
    struct api api;
    struct http *http;
    char url[128];
    char *jobs_namespace; /* where Kubernetes jobs that name none run (the policy's default) */
    int lock_fd;          /* DATA_DIR/trainyard.lock, held while the daemon runs */
    const char *hide[6];  /* the secrets ranks must not see */
};

static int usage(FILE *out)
{
    fprintf(out, "usage: trainyard <command> [options]\n\n"
                 "daemon:\n"
                 "  serve            run the daemon (serve --help lists every setting)\n"
                 "  token            create, list or revoke API tokens in the daemon's database\n"
                 "  version          print the version\n");
    cli_usage(out);
    return 2;
}

static void on_job_changed(void *ctx, int64_t pk)
{
    struct daemon *d = ctx;
    controller_wake(d->controller, pk);
    notifier_job(d->notifier, pk);
}

/* Called on the controller thread after each committed state change: only marks the job. */
static void on_job_state(void *ctx, int64_t pk, enum job_state state)
{
    (void)state;
    struct daemon *d = ctx;
    notifier_job(d->notifier, pk);
}

static void on_triggers_pending(void *ctx)
{
    struct daemon *d = ctx;
    triggerloop_wake(d->triggers);
}

static void on_webhooks_pending(void *ctx)
{
    struct daemon *d = ctx;
    notifier_wake(d->notifier);
}

static void on_job_deleted(void *ctx, const char *job_id)
{
    struct daemon *d = ctx;
    for (size_t i = 0; i < d->nexec; i++)
        if (d->executors[i]->forget)
            d->executors[i]->forget(d->executors[i], job_id);
}

static json_t *on_dry_run(void *ctx, const json_t *spec, const char *job_id, struct err *err)
{
    struct daemon *d = ctx;
    struct spec_view v;
    spec_view(spec, &v);
    for (size_t i = 0; i < d->nexec; i++) {
        if (strcmp(d->executors[i]->name, v.executor) != 0)
            continue;
        json_t *obj = d->executors[i]->render(d->executors[i], spec, job_id, err);
        /* The API server validates it too (webhooks, schemas), without creating anything. */
        if (obj && d->executors[i] == d->kube && kube_server_dry_run(d->kube, obj, err) < 0) {
            json_decref(obj);
            return NULL;
        }
        return obj;
    }
    err_set(err, ERR_VALIDATION, "executor %s is not enabled", v.executor);
    return NULL;
}

static bool on_queue_status(void *ctx, int64_t pk, char *reason, size_t rlen, char *message,
                            size_t mlen, int *position)
{
    struct daemon *d = ctx;
    return controller_queue_status(d->controller, pk, reason, rlen, message, mlen, position);
}

static json_t *on_nodes(void *ctx, struct err *err)
{
    struct daemon *d = ctx;
    json_t *out = d->kube ? kube_nodes_snapshot(d->kube, err) : json_pack("{s:[]}", "items");
    json_t *local = local_node(d->executors[0]);
    /* This machine, where the local executor runs ranks: listed when that is the default
     * executor, or while it runs any (a daemon in a cluster's pod is not a node of it). */
    if (out && (strcmp(d->cfg.executor, "local") == 0 ||
                jsonx_int(json_object_get(local, "slots"), "used", 0) > 0))
        json_array_append_new(json_object_get(out, "items"), json_incref(local));
    json_decref(local);
    return out;
}

/* trainyard's state of a job, for the Kubernetes executor's suspended objects. */
static int kube_job_state(void *ctx, int64_t pk, enum job_state *state)
{
    struct daemon *d = ctx;
    struct job *j = store_job_get_pk(d->store, pk, NULL);
    if (!j)
        return -1;
    *state = j->state;
    job_free(j);
    return 0;
}

/* The nodes with a mark of `state`, for the Kubernetes executor's placement (see kube.h). */
static char **kube_marked_nodes(void *ctx, const char *state)
{
    struct daemon *d = ctx;
    struct node_mark **marks = NULL;
    size_t n = 0, k = 0;
    if (store_node_marks_list(d->store, &marks, &n, NULL) < 0)
        return NULL;
    char **names = xcalloc(n + 1, sizeof(*names));
    for (size_t i = 0; i < n; i++)
        if (strcmp(marks[i]->state, state) == 0)
            names[k++] = xstrdup(marks[i]->name);
    node_marks_free(marks, n);
    return names;
}

static void on_metrics(void *ctx, struct buf *out)
{
    struct daemon *d = ctx;
    controller_metrics(d->controller, out);
    collect_metrics(d->collect, out);
    health_metrics(d->health, out);
    if (d->dcgm)
        dcgm_metrics(d->dcgm, out);
    triggerloop_metrics(d->triggers, out);
    notifier_metrics(d->notifier, out);
    for (size_t i = 0; i < d->nexec; i++)
        if (d->executors[i]->metrics)
            d->executors[i]->metrics(d->executors[i], out);
}

/* Heartbeats and preflight reports of ranks (HTTP threads): recorded by the health registry;
 * a failed preflight fails the rank at once. */
static void on_rank_report(void *ctx, int64_t pk, int attempt, int rank, const char *kind,
                           const json_t *body)
{
    struct daemon *d = ctx;
    if (strcmp(kind, "heartbeat") == 0) {
        health_heartbeat(d->health, pk, rank, body);
        return;
    }
    char why[512];
    if (health_preflight(d->health, pk, rank, NULL, body, why, sizeof(why)))
        controller_rank_failed(d->controller, pk, attempt, rank, "PreflightFailed", why);
}

/* Lines of the job still to be stored, or stored but not yet fed to its diagnosis. */
static bool logs_pending(void *ctx, int64_t pk)
{
    struct daemon *d = ctx;
    return collect_pending(d->collect, pk) || health_pending(d->health, pk);
}

static int check_listener(const struct config *cfg, struct err *err)
{
    if (http_listen_check(cfg->listen, err) < 0)
        return -1;
    bool loopback = http_is_loopback(cfg->listen);
    if (!cfg->auth && !loopback)
        return err_set(err, ERR_INVALID,
                       "--auth=off is only allowed on a loopback address (not %s)", cfg->listen);
    if (!loopback && !cfg->tls_cert[0] && !cfg->allow_insecure_http)
        return err_set(err, ERR_INVALID,
                       "plain HTTP on %s would send tokens in clear text: give --tls-cert and "
                       "--tls-key, or --allow-insecure-http",
                       cfg->listen);
    if (!cfg->tls_cert[0] != !cfg->tls_key[0])
        return err_set(err, ERR_INVALID, "--tls-cert and --tls-key go together");
    return 0;
}

static char *read_secret_file(const char *path, struct err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        err_set(err, ERR_IO, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char line[256] = "";
    char *ok = fgets(line, sizeof(line), f);
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!ok || strlen(line) < 16) {
        err_set(err, ERR_INVALID, "%s must hold a token of at least 16 characters", path);
        return NULL;
    }
    return xstrdup(line);
}

/* The admin token: given (environment or file), or made once on first start and printed. */
static int bootstrap_admin(struct daemon *d, struct err *err)
{
    char *given = NULL;
    const char *env = getenv("TRAINYARD_ADMIN_TOKEN");
    if (d->cfg.admin_token_file[0])
        given = read_secret_file(d->cfg.admin_token_file, err);
    else if (env && *env)
        given = xstrdup(env);
    if (err_is_set(err))
        return -1;
    if (given) {
        int rc = auth_token_ensure(d->store, "admin-bootstrap", given, err);
        free(given);
        return rc;
    }
    int64_t active;
    if (store_token_count_active(d->store, clock_now_ns(), &active, err) < 0)
        return -1;
    if (active > 0)
        return 0;
    char secret[TOKEN_SECRET_MAX], id[32];
    if (auth_token_create(d->store, "admin", SCOPE_ADMIN, 0, 0, "bootstrap", secret, id, err) < 0)
        return -1;
    printf("trainyard: created the admin token (shown once, keep it safe):\n  %s\n", secret);
    fflush(stdout);
    return 0;
}

/* One daemon per data directory: a second one would share the database with the first and
 * start the same jobs twice. The lock goes with the process (kill -9 included). */
static int lock_data_dir(struct daemon *d, struct err *err)
{
    char *path = xasprintf("%s/trainyard.lock", d->cfg.data_dir);
    d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int rc = 0;
    if (d->lock_fd < 0)
        rc = err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
    else if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        char pid[32] = "";
        ssize_t n = pread(d->lock_fd, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        rc = err_set(err, ERR_CONFLICT, "another daemon (pid %s) uses the data directory %s",
                     pid[0] ? pid : "unknown", d->cfg.data_dir);
    } else {
        char pid[32];
        int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
        if (ftruncate(d->lock_fd, 0) < 0 || pwrite(d->lock_fd, pid, (size_t)len, 0) < 0)
            log_warn("cannot write the pid into %s: %s", path, strerror(errno));
    }
    free(path);
    return rc;
}

/* The data directory and everything in it are the daemon's alone: a sandboxed rank sees its
 * own job's directories through its mounts, never through the data directory's path. */
static void tighten_data_dir(struct daemon *d)
{
    chmod(d->cfg.data_dir, 0700);
    const char *files[] = { "trainyard.db", "trainyard.db-wal", "trainyard.db-shm" };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char *path = xasprintf("%s/%s", d->cfg.data_dir, files[i]);
        chmod(path, 0600); /* made 0644 by daemons before 0.2 */
        free(path);
    }
}

static int open_store(struct daemon *d, struct err *err)
{
    if (mkdir(d->cfg.data_dir, 0700) < 0 && errno != EEXIST)
        return err_set(err, ERR_IO, "cannot create %s: %s", d->cfg.data_dir, strerror(errno));
    if (lock_data_dir(d, err) < 0)
        return -1;
    tighten_data_dir(d);
    char *path = xasprintf("%s/trainyard.db", d->cfg.data_dir);
    struct store_options so = { .sync_full = d->cfg.sync_full,
                                .busy_timeout_ms = 5000,
                                .max_batch = 512 };
    d->store = store_open(path, &so, err);
    free(path);
    return d->store ? 0 : -1;
}

/* S3 triggers and webhooks: made before anything can call them, started once HTTP is up. */
static void open_triggers(struct daemon *d)
{
    const struct config *c = &d->cfg;
    struct sns_policy policy = { .cert_ca_file = *c->sns_cert_ca ? c->sns_cert_ca : NULL };
    if (*c->test_sns_cert_host) {
        policy.test_host = c->test_sns_cert_host;
        policy.test_ca_file = *c->test_sns_ca_file ? c->test_sns_ca_file : NULL;
        log_warn("TEST MODE: SNS certificates and SubscribeURLs accepted from %s",
                 c->test_sns_cert_host);
    }
    d->sns = sns_verifier_new(&policy, NULL);
    struct triggerloop_options to = { .paused = c->trigger_submit_paused,
                                      .ca_file = policy.test_ca_file };
    d->triggers = triggerloop_new(d->store, &d->api, &to);
    struct notifier_options no = {
        .workers = c->webhook_workers,
        .timeout_ms = (long)(c->webhook_timeout_ns / NS_PER_MS),
        .retry = { .base_ms = c->webhook_retry_base_ns / NS_PER_MS,
                   .max_ms = c->webhook_retry_max_ns / NS_PER_MS,
                   .max_attempts = c->webhook_attempts },
        .allow_local = c->webhook_allow_local,
    };
    d->notifier = notifier_new(d->store, &no);
}

static int start_triggers(struct daemon *d, struct err *err)
{
    if (d->cfg.trigger_submit_paused)
        log_warn("jobs from S3 hook deliveries are held (--trigger-submit-paused)");
    if (triggerloop_start(d->triggers, err) < 0)
        return -1;
    return notifier_start(d->notifier, d->api.public_url, err);
}

/* --local-sandbox, and the files ranks must not see: the daemon's secrets outside its data
 * directory (which ranks never see). */
static int local_sandbox_mode(struct daemon *d, enum local_sandbox *mode, struct err *err)
{
    const char *m = d->cfg.local_sandbox;
    if (strcmp(m, "auto") == 0)
        *mode = LOCAL_SANDBOX_AUTO;
    else if (strcmp(m, "required") == 0)
        *mode = LOCAL_SANDBOX_REQUIRED;
    else if (strcmp(m, "off") == 0)
        *mode = LOCAL_SANDBOX_OFF;
    else
        return err_set(err, ERR_INVALID, "--local-sandbox: '%s' is not auto, required or off", m);
    const char *secrets[] = { d->cfg.admin_token_file, d->cfg.config_file, d->cfg.kubeconfig,
                              d->cfg.tls_key };
    size_t n = 0;
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        if (secrets[i] && secrets[i][0])
            d->hide[n++] = secrets[i];
    d->hide[n] = NULL;
    return 0;
}

static int start_executors(struct daemon *d, struct err *err)
{
    struct health_options hopt = { .skip_logs = !d->cfg.diagnosis };
    d->health = health_new(d->store, &hopt);
    struct collect_options co = { .max_bytes = d->cfg.log_max_bytes,
                                  .max_age_ns = d->cfg.log_max_age_ns,
                                  .poll_ns = d->cfg.log_poll_ns,
                                  .stored = { .ctx = d->health,
                                              .lines = d->cfg.diagnosis ? health_lines : NULL } };
    d->collect = collect_new(d->store, d->wakeups, &co);
    struct local_options lo = { .data_dir = d->cfg.data_dir,
                                .slots = d->cfg.local_slots,
                                .uid_base = (unsigned)d->cfg.local_uid_base,
                                .uid_count = (unsigned)d->cfg.local_uids,
                                .pids_max = d->cfg.local_pids_max,
                                .hide = d->hide,
                                .gpus = d->cfg.local_gpus,
                                .gpus_file = d->cfg.test_gpus,
                                .max_line = d->cfg.log_max_line,
                                .max_log_bytes = d->cfg.log_max_bytes,
                                .logs = collect_sources(d->collect) };
    if (local_sandbox_mode(d, &lo.sandbox, err) < 0)
        return -1;
    d->executors[d->nexec] = local_new(&lo, err);
    if (!d->executors[d->nexec])
        return -1;
    d->nexec++;
    const char *why;
    if (!local_sandboxed(d->executors[0], &why))
        log_warn("local ranks are not sandboxed: %s%s", why,
                 lo.sandbox == LOCAL_SANDBOX_AUTO ? "; only admin tokens may run local jobs" : "");
    if (strcmp(d->cfg.executor, "kubernetes") == 0 || d->cfg.kubeconfig[0]) {
        struct kube_options ko = { .kubeconfig = d->cfg.kubeconfig,
                                   .context = d->cfg.kube_context,
                                   .namespace = d->cfg.kube_namespace,
                                   .max_line = d->cfg.log_max_line,
                                   .max_log_streams = d->cfg.kube_log_streams,
                                   .logs = lo.logs,
                                   .ctx = d,
                                   .job_state = kube_job_state,
                                   .marked_nodes = kube_marked_nodes };
        d->kube = d->executors[d->nexec] = kube_new(&ko, err);
        if (!d->kube)
            return err_wrap(err, "the kubernetes executor");
        d->nexec++;
        log_info("kubernetes executor: %s", kube_describe(d->kube));
    }
    struct controller_options opts = { .stop_grace_ns = d->cfg.stop_grace_ns,
                                       .restart_backoff_ns = d->cfg.restart_backoff_ns,
                                       .restart_backoff_max_ns = d->cfg.restart_backoff_max_ns,
                                       .health = d->health,
                                       .stall_floor_ns = d->cfg.stall_floor_ns,
                                       .logs_pending = logs_pending,
                                       .logs_ctx = d };
    struct controller_callbacks cb = { .ctx = d, .job_state = on_job_state };
    d->controller = controller_new(d->store, d->executors, d->nexec, &opts, &cb);
    if (d->cfg.prometheus_url[0]) {
        struct dcgm_options dop = { .url = d->cfg.prometheus_url,
                                    .interval_ns = d->cfg.prometheus_interval_ns,
                                    .bearer = getenv("TRAINYARD_PROMETHEUS_TOKEN") };
        d->dcgm = dcgm_new(d->health, d->store, &dop);
    }
    return 0;
}

/* Where the kubernetes executor puts a job that names no namespace: what it renders for one. */
static char *kube_jobs_namespace(struct executor *kube)
{
    json_t *probe =
        json_pack("{s:s,s:s,s:s}", "name", "probe", "image", "probe", "executor", "kubernetes");
    json_t *obj = kube->render(kube, probe, "probe", NULL);
    const char *ns = jsonx_str(json_object_get(obj, "metadata"), "namespace");
    char *out = ns && *ns ? xstrdup(ns) : NULL;
    json_decref(obj);
    json_decref(probe);
    return out;
}

/* The daemon's own namespace: --kube-daemon-namespace, else its pod's (its service account's),
 * so that in a cluster it is known without being said. */
static void daemon_namespace(struct config *cfg)
{
    char ns[256] = "";
    FILE *f = cfg->kube_daemon_namespace[0]
                  ? NULL
                  : fopen("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "r");
    if (f && !fgets(ns, sizeof(ns), f))
        ns[0] = '\0';
    if (f)
        fclose(f);
    ns[strcspn(ns, "\r\n")] = '\0';
    if (ns[0]) {
        free(cfg->kube_daemon_namespace);
        cfg->kube_daemon_namespace = xstrdup(ns);
    }
}

static void setup_cluster(struct daemon *d)
{
    daemon_namespace(&d->cfg);
    d->jobs_namespace = d->kube ? kube_jobs_namespace(d->kube) : NULL;
    d->api.cluster = (struct api_cluster){ .jobs_namespace = d->jobs_namespace,
                                           .namespace = d->cfg.kube_daemon_namespace,
                                           .service_accounts = d->cfg.kube_daemon_service_accounts,
                                           .volume_claims = d->cfg.kube_daemon_volume_claims };
    if (d->kube)
        log_info("cluster policy: jobs that name no namespace run in %s; the daemon's own "
                 "(namespace %s, service accounts %s, volume claims %s) are for admin tokens",
                 d->jobs_namespace ? d->jobs_namespace : "(unknown: they must name one)",
                 d->cfg.kube_daemon_namespace[0] ? d->cfg.kube_daemon_namespace : "(none known)",
                 d->cfg.kube_daemon_service_accounts, d->cfg.kube_daemon_volume_claims);
}

static void setup_api(struct daemon *d)
{
    struct api *a = &d->api;
    a->store = d->store;
    a->wakeups = d->wakeups;
    a->limits = d->cfg.limits;
    a->auth_enabled = d->cfg.auth;
    a->default_executor = d->cfg.executor;
    a->local_enabled = true;
    a->local_checkpoint_roots = d->cfg.local_checkpoint_roots;
    a->data_dir = d->cfg.data_dir;
    if (!local_sandboxed(d->executors[0], &a->local_sandbox_why))
        a->local_unsandboxed_refused = strcmp(d->cfg.local_sandbox, "off") != 0;
    a->kubernetes_enabled = d->kube != NULL;
    setup_cluster(d);
    a->local_slots = d->cfg.local_slots;
    a->webhook_allow_local = d->cfg.webhook_allow_local;
    a->local_gpus = local_gpu_count(d->executors[0]);
    a->started_at = clock_now_ns();
    a->daemon = (struct api_daemon){ .ctx = d,
                                     .job_changed = on_job_changed,
                                     .job_deleted = on_job_deleted,
                                     .dry_run = on_dry_run,
                                     .nodes = on_nodes,
                                     .queue_status = on_queue_status,
                                     .metrics = on_metrics,
                                     .rank_report = on_rank_report,
                                     .triggers_pending = on_triggers_pending,
                                     .webhooks_pending = on_webhooks_pending };
    a->sns = d->sns;
    a->hook_max_body = (size_t)d->cfg.hook_max_body;
    ratelimit_init(a);
    rendezvous_init(a);
}

static int start_http(struct daemon *d, struct err *err)
{
    struct http_options ho = { .listen = d->cfg.listen,
                               .threads = d->cfg.http_threads,
                               .connection_limit = d->cfg.connection_limit,
                               .per_ip_limit = d->cfg.per_ip_limit,
                               .timeout_seconds = d->cfg.timeout_seconds,
                               .header_timeout_seconds = d->cfg.header_timeout_seconds,
                               .max_body_bytes = d->cfg.limits.max_body_bytes,
                               .tls_cert_file = d->cfg.tls_cert[0] ? d->cfg.tls_cert : NULL,
                               .tls_key_file = d->cfg.tls_key[0] ? d->cfg.tls_key : NULL,
                               .tls_client_ca_file =
                                   d->cfg.tls_client_ca[0] ? d->cfg.tls_client_ca : NULL };
    d->http = http_start(&d->api, &ho, err);
    if (!d->http)
        return -1;
    snprintf(d->url, sizeof(d->url), "%s://%s", ho.tls_cert_file ? "https" : "http",
             http_address(d->http));
    d->api.public_url = d->cfg.public_url[0] ? d->cfg.public_url : d->url;
    local_set_url(d->executors[0], d->url);
    if (d->kube)
        kube_set_url(d->kube, d->api.public_url);
    printf("trainyard: listening on %s (web page: %s/)\n", d->url, d->url);
    if (!d->cfg.auth)
        printf("trainyard: auth is OFF: anyone on this machine can use the API as admin\n");
    fflush(stdout);
    return 0;
}

static void run_until_stopped(struct daemon *d, int sigfd)
{
    int64_t last_flush = clock_mono_ns();
    for (;;) {
        enum signal_event ev = signals_wait(sigfd, 1000);
        if (ev == SIGNAL_STOP)
            break;
        if (ev == SIGNAL_RELOAD) {
            struct err err;
            err_init(&err);
            if (http_reload_tls(d->http, &err) < 0)
                log_error("reload: %s", err.msg);
            else
                log_info("reload: TLS certificate re-read");
            err_release(&err);
        }
        if (clock_mono_ns() - last_flush > 10 * NS_PER_SEC) {
            store_tokens_flush(d->store, NULL);
            last_flush = clock_mono_ns();
        }
    }
}

static void teardown(struct daemon *d)
{
    rendezvous_release(&d->api);
    http_stop(d->http);
    dcgm_free(d->dcgm);
    triggerloop_free(d->triggers);
    kube_stop(d->kube); /* it reports to the controller and feeds the log pipeline */
    controller_free(d->controller);
    notifier_free(d->notifier);
    sns_verifier_free(d->sns);
    collect_free(d->collect);
    health_free(d->health);
    for (size_t i = 0; i < d->nexec; i++)
        d->executors[i]->free(d->executors[i]);
    if (d->store)
        store_tokens_flush(d->store, NULL);
    store_close(d->store);
    if (d->lock_fd >= 0)
        close(d->lock_fd); /* after the store: the next daemon must find it closed */
    ratelimit_release(&d->api);
    wakeups_free(d->wakeups);
    free(d->jobs_namespace);
    config_release(&d->cfg);
}

static int cmd_serve(int argc, char **argv)
{
    /* What the daemon writes (database, logs, rank files) is its own unless said otherwise. */
    umask(077);
    struct daemon d = { .lock_fd = -1 };
    struct err err;
    err_init(&err);
    int rc = config_load(&d.cfg, argc, argv, &err);
    if (rc == 1) {
        config_help(stdout);
        return 0;
    }
    enum log_level level;
    if (rc == 0 && log_parse_level(d.cfg.log_level, &level) == 0)
        log_set_level(level);
    int sigfd = rc == 0 && check_listener(&d.cfg, &err) == 0 ? signals_open(&err) : -1;
    d.wakeups = wakeups_new();
    if (sigfd < 0 || open_store(&d, &err) < 0 || bootstrap_admin(&d, &err) < 0 ||
        (open_triggers(&d), start_executors(&d, &err)) < 0) {
        fprintf(stderr, "trainyard: %s\n", err.msg);
        teardown(&d);
        err_release(&err);
        return 1;
    }
    setup_api(&d);
    int started = health_start(d.health, &err) == 0 && collect_start(d.collect, &err) == 0 &&
                  controller_start(d.controller, &err) == 0 &&
                  (!d.dcgm || dcgm_start(d.dcgm, &err) == 0);
    if (started)
        collect_adopted(d.collect); /* running jobs have their log sources again */
    if (!started || start_http(&d, &err) < 0 || start_triggers(&d, &err) < 0) {
        fprintf(stderr, "trainyard: %s\n", err.msg);
        teardown(&d);
        err_release(&err);
        return 1;
    }
    log_info("trainyard %s serving %s with data in %s", TY_VERSION, d.url, d.cfg.data_dir);
    run_until_stopped(&d, sigfd);
    log_info("stopping");
    teardown(&d);
    close(sigfd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr);
    const char *cmd = argv[1];
    if (strcmp(cmd, "serve") == 0) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        int rc = cmd_serve(argc - 1, argv + 1);
        curl_global_cleanup();
        return rc;
    }
    if (strcmp(cmd, "shim") == 0)
        return shim_main(argc - 1, argv + 1);
    if (strcmp(cmd, "token") == 0)
        return token_main(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("trainyard %s\n", TY_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    return cli_main(argc - 1, argv + 1);
}
