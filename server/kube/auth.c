/*
 * auth: credentials for the API server (see auth.h). The exec plugin runs with the daemon's
 * environment plus the kubeconfig's env and KUBERNETES_EXEC_INFO, stdin from /dev/null,
 * never interactively; its stdout is parsed as an ExecCredential, its stderr kept for the
 * error message.
 */
#include "server/kube/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"

extern char **environ;

#define PLUGIN_TIMEOUT_MS 60000
#define FILE_TOKEN_TTL    (60 * NS_PER_SEC) /* client-go re-reads token files every minute */
#define MAX_OUTPUT        (1 << 20)

struct kube_auth {
    const struct kube_config *cfg;
    pthread_mutex_t lock;
    char *token;
    char *cert, *key;
    int64_t expires; /* wall ns of the plugin token's expiry; 0: none */
    int64_t got_at;  /* wall ns when token was obtained */
    atomic_ullong runs;
};

struct kube_auth *kube_auth_new(const struct kube_config *cfg)
{
    struct kube_auth *a = XNEW(struct kube_auth);
    a->cfg = cfg;
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

void kube_auth_free(struct kube_auth *a)
{
    if (!a)
        return;
    free(a->token);
    free(a->cert);
    free(a->key);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int kube_auth_parse_credential(const char *out, size_t len, const char *api_version, char **token,
                               char **cert, char **key, int64_t *expires, struct err *err)
{
    *token = *cert = *key = NULL;
    *expires = 0;
    json_t *doc = jsonx_loadb(out, len, 16, err);
    if (!doc)
        return err_wrap(err, "the exec plugin printed no ExecCredential");
    int rc = -1;
    const char *kind = jsonx_str(doc, "kind"), *api = jsonx_str(doc, "apiVersion");
    json_t *st = json_object_get(doc, "status");
    const char *tok = jsonx_str(st, "token"), *exp = jsonx_str(st, "expirationTimestamp");
    const char *c = jsonx_str(st, "clientCertificateData"), *k = jsonx_str(st, "clientKeyData");
    if (!kind || strcmp(kind, "ExecCredential") != 0)
        err_set(err, ERR_UNAUTHORIZED, "the exec plugin printed kind %s, not ExecCredential",
                kind ? kind : "(none)");
    else if (api_version && (!api || strcmp(api, api_version) != 0))
        err_set(err, ERR_UNAUTHORIZED, "the exec plugin answered with apiVersion %s, not %s",
                api ? api : "(none)", api_version);
    else if (!json_is_object(st))
        err_set(err, ERR_UNAUTHORIZED, "the exec plugin's ExecCredential has no status");
    else if (!(tok && *tok) && !(c && k))
        err_set(err, ERR_UNAUTHORIZED,
                "the exec plugin returned neither a token nor a "
                "client certificate and key");
    else if (exp && clock_parse(exp, expires) < 0)
        err_set(err, ERR_UNAUTHORIZED, "the exec plugin's expirationTimestamp '%s' is invalid",
                exp);
    else
        rc = 0;
    if (rc == 0) {
        *token = tok && *tok ? xstrdup(tok) : NULL;
        *cert = c && k ? xstrdup(c) : NULL;
        *key = c && k ? xstrdup(k) : NULL;
    }
    json_decref(doc);
    return rc;
}

static char **plugin_env(const struct kube_exec *e)
{
    size_t n = 0, k = 0;
    for (char **p = environ; *p; p++)
        n++;
    for (char **p = e->env; p && *p; p++)
        n++;
    char **env = xcalloc(n + 2, sizeof(char *));
    for (char **p = environ; *p; p++)
        if (strncmp(*p, "KUBERNETES_EXEC_INFO=", 21) != 0)
            env[k++] = xstrdup(*p);
    for (char **p = e->env; p && *p; p++)
        env[k++] = xstrdup(*p);
    env[k++] = xasprintf("KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
                         "\"spec\":{\"interactive\":false}}",
                         e->api_version);
    return env;
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

/* Reads both pipes until EOF or the deadline. Returns 0, or -1 on timeout. */
static int drain(int out_fd, int err_fd, struct buf *out, struct buf *errs)
{
    int64_t deadline = clock_mono_ns() + PLUGIN_TIMEOUT_MS * NS_PER_MS;
    struct pollfd p[2] = { { .fd = out_fd, .events = POLLIN }, { .fd = err_fd, .events = POLLIN } };
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        int64_t left = (deadline - clock_mono_ns()) / NS_PER_MS;
        if (left <= 0)
            return -1;
        if (poll(p, 2, (int)left) < 0 && errno != EINTR)
            return -1;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            char chunk[4096];
            ssize_t n = read(p[i].fd, chunk, sizeof(chunk));
            struct buf *b = i == 0 ? out : errs;
            if (n > 0 && b->len < MAX_OUTPUT)
                buf_append(b, chunk, (size_t)n);
            else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                p[i].fd = -1;
        }
    }
    return 0;
}

static pid_t spawn_plugin(const struct kube_exec *e, int out[2], int errp[2], struct err *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    size_t nargs = 0;
    for (char **p = e->args; p && *p; p++)
        nargs++;
    char **argv = xcalloc(nargs + 2, sizeof(char *));
    argv[0] = e->command;
    for (size_t i = 0; i < nargs; i++)
        argv[i + 1] = e->args[i];
    char **env = plugin_env(e);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, e->command, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    strv_free(env);
    if (rc != 0) {
        err_set(err, ERR_UNAUTHORIZED, "cannot run the exec credential plugin %s: %s", e->command,
                strerror(rc));
        return -1;
    }
    return pid;
}

/* Runs the plugin; on success sets the token/cert under the lock (held by the caller). */
static int run_plugin(struct kube_auth *a, struct err *err)
{
    const struct kube_exec *e = a->cfg->exec;
    int out[2], errp[2];
    if (pipe2(out, O_CLOEXEC) < 0)
        return err_set(err, ERR_INTERNAL, "pipe: %s", strerror(errno));
    if (pipe2(errp, O_CLOEXEC) < 0) {
        close(out[0]);
        close(out[1]);
        return err_set(err, ERR_INTERNAL, "pipe: %s", strerror(errno));
    }
    pid_t pid = spawn_plugin(e, out, errp, err);
    close(out[1]);
    close(errp[1]);
    struct buf o = BUF_INIT, es = BUF_INIT;
    int status = 0, rc = -1;
    if (pid > 0) {
        atomic_fetch_add(&a->runs, 1);
        bool timed_out = drain(out[0], errp[0], &o, &es) < 0;
        if (timed_out)
            kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        if (timed_out)
            err_set(err, ERR_UNAUTHORIZED, "the exec plugin %s did not finish in %d s", e->command,
                    PLUGIN_TIMEOUT_MS / 1000);
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            err_set(err, ERR_UNAUTHORIZED, "the exec plugin %s failed (status %d): %.300s",
                    e->command, WIFEXITED(status) ? WEXITSTATUS(status) : -1, buf_cstr(&es));
        else
            rc = 0;
    }
    close(out[0]);
    close(errp[0]);
    char *tok = NULL, *cert = NULL, *key = NULL;
    int64_t exp = 0;
    if (rc == 0 && kube_auth_parse_credential(buf_cstr(&o), o.len, e->api_version, &tok, &cert,
                                              &key, &exp, err) < 0)
        rc = -1;
    if (rc == 0) {
        free(a->token);
        free(a->cert);
        free(a->key);
        a->token = tok;
        a->cert = cert;
        a->key = key;
        a->expires = exp;
        a->got_at = clock_now_ns();
    }
    buf_release(&o);
    buf_release(&es);
    return rc;
}

/* True when the cached token must be refreshed now. */
static bool due(const struct kube_auth *a, int64_t now)
{
    if (!a->token && !a->cert)
        return true;
    if (a->cfg->exec) {
        if (!a->expires)
            return false; /* kept until a 401 */
        int64_t margin = (a->expires - a->got_at) / 5;
        if (margin > 60 * NS_PER_SEC)
            margin = 60 * NS_PER_SEC;
        return now >= a->expires - margin;
    }
    return now - a->got_at >= FILE_TOKEN_TTL; /* a token file */
}

static int read_token_file(struct kube_auth *a, struct err *err)
{
    FILE *f = fopen(a->cfg->token_file, "r");
    if (!f)
        return err_set(err, ERR_UNAUTHORIZED, "cannot read the token file %s: %s",
                       a->cfg->token_file, strerror(errno));
    char line[16384] = "";
    char *ok = fgets(line, sizeof(line), f);
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!ok || !line[0])
        return err_set(err, ERR_UNAUTHORIZED, "the token file %s is empty", a->cfg->token_file);
    free(a->token);
    a->token = xstrdup(line);
    a->got_at = clock_now_ns();
    return 0;
}

char *kube_auth_token(struct kube_auth *a, struct err *err)
{
    const struct kube_config *cfg = a->cfg;
    if (!cfg->exec && !cfg->token_file)
        return cfg->token ? xstrdup(cfg->token) : NULL;
    pthread_mutex_lock(&a->lock);
    int rc = 0;
    if (due(a, clock_now_ns()))
        rc = cfg->exec ? run_plugin(a, err) : read_token_file(a, err);
    char *tok = rc == 0 && a->token ? xstrdup(a->token) : NULL;
    pthread_mutex_unlock(&a->lock);
    return tok;
}

void kube_auth_expired(struct kube_auth *a, const char *token)
{
    pthread_mutex_lock(&a->lock);
    if (a->token && token && strcmp(a->token, token) == 0) {
        free(a->token);
        a->token = NULL;
        free(a->cert);
        free(a->key);
        a->cert = a->key = NULL;
    }
    pthread_mutex_unlock(&a->lock);
}

int kube_auth_client_cert(struct kube_auth *a, struct buf *cert, struct buf *key)
{
    pthread_mutex_lock(&a->lock);
    int rc = -1;
    if (a->cert && a->key) {
        buf_puts(cert, a->cert);
        buf_puts(key, a->key);
        rc = 0;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

uint64_t kube_auth_plugin_runs(struct kube_auth *a)
{
    return atomic_load(&a->runs);
}
