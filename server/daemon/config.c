/*
 * config: the settings table and its three sources (YAML file, environment, flags). Runs once
 * in main() before any thread starts.
 */
#include "server/daemon/config.h"

#include <ctype.h>
#include <stddef.h>
#include <unistd.h>

#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "core/yamljson.h"

enum opt_type { O_STRING, O_INT, O_BOOL, O_DURATION, O_BYTES };

struct option_def {
    const char *name; /* flag --name, env TRAINYARD_NAME, YAML key name */
    enum opt_type type;
    size_t offset;
    const char *def;
    const char *help;
};

#define OPT(n, t, field, d, h)                                                                     \
    {                                                                                              \
        n, t, offsetof(struct config, field), d, h                                                 \
    }

static const struct option_def options[] = {
    OPT("listen", O_STRING, listen, "127.0.0.1:8080",
        "address to listen on, HOST:PORT; port 0 picks a free port"),
    OPT("data-dir", O_STRING, data_dir, "./trainyard-data", "database and rank logs live here"),
    OPT("executor", O_STRING, executor, "local", "default executor: local or kubernetes"),
    OPT("auth", O_BOOL, auth, "on", "require bearer tokens; off only on a loopback listener"),
    OPT("admin-token-file", O_STRING, admin_token_file, "",
        "file holding the admin token to accept (else TRAINYARD_ADMIN_TOKEN, else one is made)"),
    OPT("allow-insecure-http", O_BOOL, allow_insecure_http, "off",
        "allow plain HTTP on a non-loopback address"),
    OPT("tls-cert", O_STRING, tls_cert, "", "PEM certificate: serve HTTPS (reloaded on SIGHUP)"),
    OPT("tls-key", O_STRING, tls_key, "", "PEM private key for --tls-cert"),
    OPT("tls-client-ca", O_STRING, tls_client_ca, "", "PEM CA: require client certificates"),
    OPT("public-url", O_STRING, public_url, "", "URL clients reach the daemon at (for links)"),
    OPT("log-level", O_STRING, log_level, "info", "debug, info, warn or error"),
    OPT("http-threads", O_INT, http_threads, "2", "HTTP handler threads"),
    OPT("connection-limit", O_INT, connection_limit, "4096", "open connections at most"),
    OPT("per-ip-limit", O_INT, per_ip_limit, "256", "open connections per client address"),
    OPT("timeout", O_INT, timeout_seconds, "30",
        "seconds before an idle or stalled connection is closed (slow clients)"),
    OPT("header-timeout", O_INT, header_timeout_seconds, "10",
        "seconds a connection has to send a request's headers, from its start or its previous "
        "response, however slowly they trickle in (0: only --timeout)"),
    OPT("sync-full", O_BOOL, sync_full, "on",
        "fsync each commit (survives power loss); off: survives process crashes only"),
    OPT("local-slots", O_INT, local_slots, "0", "ranks the local executor runs at once (0: CPUs)"),
    OPT("local-gpus", O_STRING, local_gpus, "auto",
        "GPUs the local executor hands out: auto (every GPU NVML finds), none, or indices or "
        "UUIDs, comma-separated"),
    OPT("test-gpus", O_STRING, test_gpus, "",
        "TESTS ONLY: a JSON file listing GPUs ({index, uuid, name, memory_bytes}) used instead "
        "of NVML"),
    OPT("local-sandbox", O_STRING, local_sandbox, "auto",
        "sandbox local ranks: auto (when the host can; else only admins may run local jobs), "
        "required (refuse to start without), off (ranks run as the daemon: accepts the risk)"),
    OPT("local-uid-base", O_INT, local_uid_base, "1879048192",
        "sandboxed ranks run as uid (and gid) base + n, one n per running job"),
    OPT("local-uids", O_INT, local_uids, "65536", "how many identities from --local-uid-base"),
    OPT("local-pids-max", O_INT, local_pids_max, "16384", "processes and threads per rank"),
    OPT("local-checkpoint-roots", O_STRING, local_checkpoint_roots, "",
        "directories (comma-separated) under which non-admin tokens may set checkpoint.path"),
    OPT("stop-grace", O_DURATION, stop_grace_ns, "10s", "SIGTERM to SIGKILL when stopping ranks"),
    OPT("restart-backoff", O_DURATION, restart_backoff_ns, "10s",
        "wait before a job's first restart, doubling with each (spec: restart.backoff_seconds)"),
    OPT("restart-backoff-max", O_DURATION, restart_backoff_max_ns, "5m",
        "longest wait before a restart (spec: restart.max_backoff_seconds)"),
    OPT("log-max-bytes", O_BYTES, log_max_bytes, "1Gi", "log bytes kept per job (oldest go first)"),
    OPT("log-max-age", O_DURATION, log_max_age_ns, "30d", "log lines older than this are dropped"),
    OPT("log-max-line", O_BYTES, log_max_line, "64Ki", "bytes kept of one log line"),
    OPT("log-poll", O_DURATION, log_poll_ns, "20ms", "how often rank log files are read"),
    OPT("kubeconfig", O_STRING, kubeconfig, "",
        "kubeconfig (default: KUBECONFIG, ~/.kube/config, "
        "in-cluster)"),
    OPT("context", O_STRING, kube_context, "", "kubeconfig context (default: current)"),
    OPT("namespace", O_STRING, kube_namespace, "", "Kubernetes namespace (default: context's)"),
    OPT("kube-daemon-namespace", O_STRING, kube_daemon_namespace, "",
        "the daemon's own namespace, where only admin tokens may run jobs (default: its pod's)"),
    OPT("kube-daemon-service-accounts", O_STRING, kube_daemon_service_accounts, "trainyard",
        "the daemon's own service accounts (comma-separated): only admin tokens' jobs run as them"),
    OPT("kube-daemon-volume-claims", O_STRING, kube_daemon_volume_claims, "trainyard-data",
        "the daemon's own volume claims (comma-separated): only admin tokens' jobs mount them"),
    OPT("kube-log-streams", O_INT, kube_log_streams, "1000",
        "pod log streams followed at once; the others are read when a stream frees"),
    OPT("diagnosis", O_BOOL, diagnosis, "on",
        "analyse every log line (failures, progress, metrics); off: exit statuses only"),
    OPT("stall-floor", O_DURATION, stall_floor_ns, "5m", "a job is stalled after at least this"),
    OPT("prometheus-url", O_STRING, prometheus_url, "", "Prometheus to read DCGM GPU metrics from"),
    OPT("prometheus-interval", O_DURATION, prometheus_interval_ns, "15s",
        "how often DCGM GPU metrics are read from --prometheus-url"),
    OPT("max-body", O_BYTES, limits.max_body_bytes, "1Mi", "largest request body"),
    OPT("max-json-depth", O_INT, limits.max_json_depth, "32",
        "deepest JSON/YAML nesting (YAML aliases count what they expand to)"),
    OPT("max-spec", O_BYTES, limits.max_spec_bytes, "512Ki", "largest job spec, as stored"),
    OPT("max-url", O_BYTES, limits.max_url_bytes, "8Ki", "longest request path and query"),
    OPT("max-query-params", O_INT, limits.max_query_params, "64", "query parameters per request"),
    OPT("max-selector-terms", O_INT, limits.max_selector_terms, "32",
        "terms of a label selector (GET /v1/jobs?selector=)"),
    OPT("max-page-bytes", O_BYTES, limits.max_page_bytes, "8Mi",
        "a page of GET /v1/jobs ends (with a cursor) once it holds this much"),
    OPT("max-string", O_BYTES, limits.spec.max_string_bytes, "64Ki", "longest string in a spec"),
    OPT("max-ranks", O_INT, limits.spec.max_ranks, "4096", "ranks per job at most"),
    OPT("max-nodes", O_INT, limits.spec.max_nodes, "1024", "nodes per job at most"),
    OPT("max-procs-per-node", O_INT, limits.spec.max_procs_per_node, "64", "processes per node"),
    OPT("max-env", O_INT, limits.spec.max_env, "256", "environment variables per job"),
    OPT("max-labels", O_INT, limits.spec.max_labels, "64", "labels per job"),
    OPT("max-args", O_INT, limits.spec.max_args, "4096", "arguments per job"),
    OPT("max-list", O_INT, limits.max_list_limit, "1000", "largest page of a list"),
    OPT("max-log-lines", O_INT, limits.max_log_limit, "100000", "lines per log request"),
    OPT("max-followers", O_INT, limits.max_followers_per_client, "64",
        "log follows open per client"),
    OPT("rate", O_INT, limits.rate_per_second, "0", "requests per second per token (0: no limit)"),
    OPT("rate-burst", O_INT, limits.rate_burst, "0", "burst allowed above --rate"),
    OPT("hook-max-body", O_BYTES, hook_max_body, "1Mi",
        "largest S3 hook delivery (bigger ones are rejected and logged; at most --max-body)"),
    OPT("trigger-submit-paused", O_BOOL, trigger_submit_paused, "off",
        "keep jobs from S3 hook deliveries pending (submitted once this is off again)"),
    OPT("sns-cert-ca", O_STRING, sns_cert_ca, "",
        "PEM CAs that SNS signing certificates must chain to (default: not checked)"),
    OPT("test-sns-cert-host", O_STRING, test_sns_cert_host, "",
        "TESTS ONLY: accept SNS certificate and SubscribeURL host:port instead of "
        "sns.*.amazonaws.com"),
    OPT("test-sns-ca-file", O_STRING, test_sns_ca_file, "",
        "TESTS ONLY: CA to trust when fetching from --test-sns-cert-host"),
    OPT("webhook-workers", O_INT, webhook_workers, "4", "webhook messages sent at once at most"),
    OPT("webhook-timeout", O_DURATION, webhook_timeout_ns, "10s",
        "a webhook receiver must answer within this"),
    OPT("webhook-retry-base", O_DURATION, webhook_retry_base_ns, "5s",
        "delay after a failed webhook attempt (doubles each time)"),
    OPT("webhook-retry-max", O_DURATION, webhook_retry_max_ns, "1h",
        "longest delay between attempts"),
    OPT("webhook-attempts", O_INT, webhook_attempts, "12", "attempts per webhook message at most"),
    OPT("webhook-allow-local", O_BOOL, webhook_allow_local, "off",
        "let webhook URLs reach loopback, link-local and cloud metadata addresses (a receiver "
        "on this host, tests)"),
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))

/* The O_BYTES settings held in a size_t (the others are int64_t). */
static bool is_size_t(size_t offset)
{
    static const size_t fields[] = {
        offsetof(struct config, limits.max_body_bytes),
        offsetof(struct config, limits.spec.max_string_bytes),
        offsetof(struct config, limits.max_spec_bytes),
        offsetof(struct config, limits.max_url_bytes),
        offsetof(struct config, limits.max_page_bytes),
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (fields[i] == offset)
            return true;
    return false;
}

static int set_value(struct config *cfg, const struct option_def *o, const char *value,
                     const char *source, struct err *err)
{
    char *field = (char *)cfg + o->offset;
    int64_t v = 0;
    bool b = false;
    int ok = 0;
    switch (o->type) {
    case O_STRING:
        free(*(char **)field);
        *(char **)field = xstrdup(value);
        return 0;
    case O_INT:
        ok = parse_int64(value, 0, INT32_MAX, &v) == 0;
        if (ok)
            *(int *)field = (int)v;
        break;
    case O_BOOL:
        ok = parse_bool(value, &b) == 0;
        if (ok)
            *(bool *)field = b;
        break;
    case O_DURATION:
        ok = parse_duration(value, &v) == 0;
        if (ok)
            *(int64_t *)field = v;
        break;
    case O_BYTES:
        ok = parse_bytes(value, &v) == 0;
        if (ok && is_size_t(o->offset))
            *(size_t *)field = (size_t)v;
        else if (ok)
            *(int64_t *)field = v;
        break;
    }
    if (!ok)
        return err_set(err, ERR_INVALID, "%s: '%s' is not a valid value for %s", source, value,
                       o->name);
    return 0;
}

static const struct option_def *find(const char *name)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}

static void env_name(const char *name, char *out, size_t size)
{
    int n = snprintf(out, size, "TRAINYARD_");
    for (const char *p = name; *p && (size_t)n + 1 < size; p++)
        out[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    out[n] = '\0';
}

static int load_file(struct config *cfg, const char *path, struct err *err)
{
    json_t *doc = yamljson_load_file(path, 1 << 20, err);
    if (!doc)
        return -1;
    int rc = 0;
    const char *key;
    json_t *v;
    if (!json_is_object(doc))
        rc = err_set(err, ERR_INVALID, "%s: the config file must be a mapping", path);
    json_object_foreach(doc, key, v)
    {
        if (rc < 0)
            break;
        const struct option_def *o = find(key);
        char text[64];
        const char *value = NULL;
        if (json_is_string(v))
            value = json_string_value(v);
        else if (json_is_integer(v))
            value = (snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v)), text);
        else if (json_is_boolean(v))
            value = json_is_true(v) ? "true" : "false";
        if (!o)
            rc = err_set(err, ERR_INVALID, "%s: unknown setting '%s'", path, key);
        else if (!value)
            rc = err_set(err, ERR_INVALID, "%s: %s must be a scalar", path, key);
        else
            rc = set_value(cfg, o, value, path, err);
    }
    json_decref(doc);
    return rc;
}

static int load_env(struct config *cfg, struct err *err)
{
    for (size_t i = 0; i < NOPTIONS; i++) {
        char name[96];
        env_name(options[i].name, name, sizeof(name));
        const char *v = getenv(name);
        if (v && set_value(cfg, &options[i], v, name, err) < 0)
            return -1;
    }
    return 0;
}

/* Splits "--name=value" or "--name value"; "--no-name" / "--name" for booleans. */
static int load_flags(struct config *cfg, int argc, char **argv, struct err *err)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0)
            return err_set(err, ERR_INVALID, "unexpected argument '%s' (see --help)", arg);
        char name[96];
        const char *eq = strchr(arg, '=');
        size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        snprintf(name, sizeof(name), "%.*s", (int)n, arg + 2);
        if (strcmp(name, "config") == 0) {
            i += eq ? 0 : 1;
            continue;
        }
        const struct option_def *o = find(name);
        const char *value = eq ? eq + 1 : NULL;
        if (!o && strncmp(name, "no-", 3) == 0 && (o = find(name + 3)) && o->type == O_BOOL &&
            !value) {
            value = "false";
        } else if (o && o->type == O_BOOL && !value) {
            value = "true";
        } else if (o && !value) {
            if (i + 1 >= argc)
                return err_set(err, ERR_INVALID, "--%s needs a value", name);
            value = argv[++i];
        }
        if (!o)
            return err_set(err, ERR_INVALID, "unknown flag --%s (see --help)", name);
        if (set_value(cfg, o, value, "command line", err) < 0)
            return -1;
    }
    return 0;
}

static const char *config_flag(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--config=", 9) == 0)
            return argv[i] + 9;
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            return argv[i + 1];
    }
    return getenv("TRAINYARD_CONFIG");
}

void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < NOPTIONS; i++)
        set_value(cfg, &options[i], options[i].def, "default", NULL);
}

int config_load(struct config *cfg, int argc, char **argv, struct err *err)
{
    memset(cfg, 0, sizeof(*cfg));
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    config_defaults(cfg);
    const char *file = config_flag(argc, argv);
    cfg->config_file = file ? xstrdup(file) : NULL;
    if (file && load_file(cfg, file, err) < 0)
        return -1;
    if (load_env(cfg, err) < 0 || load_flags(cfg, argc, argv, err) < 0)
        return -1;
    if (cfg->local_slots <= 0)
        cfg->local_slots = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (strcmp(cfg->executor, "local") != 0 && strcmp(cfg->executor, "kubernetes") != 0)
        return err_set(err, ERR_INVALID, "--executor must be local or kubernetes");
    return 0;
}

void config_release(struct config *cfg)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (options[i].type == O_STRING)
            free(*(char **)((char *)cfg + options[i].offset));
    free(cfg->config_file);
    memset(cfg, 0, sizeof(*cfg));
}

void config_help(FILE *out)
{
    fprintf(out, "usage: trainyard serve [--config FILE] [--NAME VALUE]...\n\n"
                 "Settings (flag --NAME, environment TRAINYARD_NAME, or NAME: in the YAML file;\n"
                 "flags win over the environment, which wins over the file):\n\n");
    for (size_t i = 0; i < NOPTIONS; i++) {
        char env[96];
        env_name(options[i].name, env, sizeof(env));
        fprintf(out, "  --%-22s %s\n  %-24s default: %s; env %s\n", options[i].name,
                options[i].help, "", options[i].def[0] ? options[i].def : "(none)", env);
    }
}
