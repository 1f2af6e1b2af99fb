/*
 * kubeconfig: reading kubeconfig files (YAML through core/yamljson) and the in-cluster
 * service account. Relative file paths in a kubeconfig are relative to its directory, as in
 * client-go. Nothing here talks to the network or runs the exec plugin (auth.c does).
 */
#include "server/kube/kubeconfig.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "core/yamljson.h"

#define MAX_KUBECONFIG (4 << 20)

static char *dup_or_null(const char *s)
{
    return s && *s ? xstrdup(s) : NULL;
}

/* The `inner` object of the entry of list (clusters, users, contexts) named name. */
static json_t *named(const json_t *doc, const char *list, const char *name, const char *inner)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, list), i, e)
    {
        const char *n = jsonx_str(e, "name");
        if (n && name && strcmp(n, name) == 0) {
            json_t *v = json_object_get(e, inner);
            return json_is_object(v) ? v : NULL;
        }
    }
    return NULL;
}

/* A path from the kubeconfig: absolute as is, relative to the file's directory otherwise. */
static char *resolve_path(const char *base_file, const char *p)
{
    if (!p || !*p)
        return NULL;
    if (p[0] == '/')
        return xstrdup(p);
    if (p[0] == '~' && p[1] == '/' && getenv("HOME"))
        return xasprintf("%s%s", getenv("HOME"), p + 1);
    const char *slash = strrchr(base_file, '/');
    if (!slash)
        return xstrdup(p);
    return xasprintf("%.*s/%s", (int)(slash - base_file), base_file, p);
}

static int decode(const char *what, const char *b64, char **out, size_t *len, struct err *err)
{
    struct buf b = BUF_INIT;
    if (crypto_base64_decode(&b, b64, strlen(b64)) < 0) {
        buf_release(&b);
        return err_set(err, ERR_INVALID, "%s is not valid base64", what);
    }
    *out = buf_detach(&b, len);
    return 0;
}

static char **strv_from(const json_t *arr)
{
    size_t n = json_array_size(arr), k = 0;
    char **v = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        if (json_is_string(json_array_get(arr, i)))
            v[k++] = xstrdup(json_string_value(json_array_get(arr, i)));
    return v;
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static int load_exec(struct kube_config *cfg, const json_t *ex, const char *file, struct err *err)
{
    const char *cmd = jsonx_str(ex, "command");
    if (!cmd || !*cmd)
        return err_set(err, ERR_INVALID, "%s: the user's exec plugin has no command", file);
    struct kube_exec *e = XNEW(struct kube_exec);
    const char *api = jsonx_str(ex, "apiVersion");
    e->api_version = xstrdup(api ? api : "client.authentication.k8s.io/v1beta1");
    e->command = strchr(cmd, '/') ? resolve_path(file, cmd) : xstrdup(cmd);
    e->args = strv_from(json_object_get(ex, "args"));
    json_t *env = json_object_get(ex, "env");
    e->env = xcalloc(json_array_size(env) + 1, sizeof(char *));
    size_t i, k = 0;
    json_t *kv;
    json_array_foreach(env, i, kv)
    {
        const char *n = jsonx_str(kv, "name"), *v = jsonx_str(kv, "value");
        if (n)
            e->env[k++] = xasprintf("%s=%s", n, v ? v : "");
    }
    e->provide_cluster_info = jsonx_bool(ex, "provideClusterInfo", false);
    cfg->exec = e;
    return 0;
}

static int load_cluster(struct kube_config *cfg, const json_t *cl, const char *file,
                        struct err *err)
{
    const char *server = jsonx_str(cl, "server");
    if (!server || !*server)
        return err_set(err, ERR_INVALID, "%s: the cluster has no server", file);
    size_t n = strlen(server);
    while (n > 0 && server[n - 1] == '/')
        n--;
    cfg->server = xstrndup(server, n);
    const char *ca = jsonx_str(cl, "certificate-authority-data");
    if (ca && decode("certificate-authority-data", ca, &cfg->ca_data, &cfg->ca_len, err) < 0)
        return -1;
    cfg->ca_file = resolve_path(file, jsonx_str(cl, "certificate-authority"));
    cfg->insecure = jsonx_bool(cl, "insecure-skip-tls-verify", false);
    return 0;
}

static int load_user(struct kube_config *cfg, const json_t *u, const char *file, struct err *err)
{
    const char *cert = jsonx_str(u, "client-certificate-data");
    const char *key = jsonx_str(u, "client-key-data");
    if (cert && decode("client-certificate-data", cert, &cfg->cert_data, &cfg->cert_len, err) < 0)
        return -1;
    if (key && decode("client-key-data", key, &cfg->key_data, &cfg->key_len, err) < 0)
        return -1;
    cfg->cert_file = resolve_path(file, jsonx_str(u, "client-certificate"));
    cfg->key_file = resolve_path(file, jsonx_str(u, "client-key"));
    cfg->token = dup_or_null(jsonx_str(u, "token"));
    cfg->token_file = resolve_path(file, jsonx_str(u, "tokenFile"));
    if (json_object_get(u, "auth-provider"))
        return err_set(err, ERR_INVALID,
                       "%s: auth-provider plugins are not supported; use an exec plugin", file);
    json_t *ex = json_object_get(u, "exec");
    return json_is_object(ex) ? load_exec(cfg, ex, file, err) : 0;
}

int kube_config_load(struct kube_config *cfg, const char *path, const char *context,
                     struct err *err)
{
    memset(cfg, 0, sizeof(*cfg));
    json_t *doc = yamljson_load_file(path, MAX_KUBECONFIG, err);
    if (!doc)
        return -1;
    int rc = -1;
    const char *ctx_name = context && *context ? context : jsonx_str(doc, "current-context");
    json_t *ctx = ctx_name ? named(doc, "contexts", ctx_name, "context") : NULL;
    if (!json_is_object(ctx)) {
        err_set(err, ERR_INVALID, "%s: context \"%s\" not found", path, ctx_name ? ctx_name : "");
        goto out;
    }
    const char *cluster = jsonx_str(ctx, "cluster"), *user = jsonx_str(ctx, "user");
    json_t *cl = named(doc, "clusters", cluster, "cluster");
    json_t *u = user ? named(doc, "users", user, "user") : NULL;
    if (!json_is_object(cl)) {
        err_set(err, ERR_INVALID, "%s: cluster \"%s\" not found", path, cluster ? cluster : "");
        goto out;
    }
    cfg->source = xstrdup(path);
    cfg->context = xstrdup(ctx_name);
    const char *ns = jsonx_str(ctx, "namespace");
    cfg->namespace = xstrdup(ns && *ns ? ns : "default");
    if (load_cluster(cfg, cl, path, err) < 0 ||
        (json_is_object(u) && load_user(cfg, u, path, err) < 0))
        goto out;
    rc = 0;
out:
    json_decref(doc);
    if (rc < 0)
        kube_config_release(cfg);
    return rc;
}

static char *read_small_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    struct buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < (1 << 20))
        buf_append(&b, chunk, n);
    fclose(f);
    while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' '))
        b.data[--b.len] = '\0';
    return buf_detach(&b, NULL);
}

int kube_config_in_cluster(struct kube_config *cfg, const char *sa_dir, struct err *err)
{
    memset(cfg, 0, sizeof(*cfg));
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return err_set(err, ERR_INVALID,
                       "no kubeconfig found and not in a cluster (KUBERNETES_SERVICE_HOST/PORT "
                       "are not set)");
    char *token_file = xasprintf("%s/token", sa_dir);
    struct stat sb;
    if (stat(token_file, &sb) < 0) {
        err_set(err, ERR_INVALID, "in-cluster: cannot read %s: %s", token_file, strerror(errno));
        free(token_file);
        return -1;
    }
    cfg->source = xstrdup("in-cluster");
    cfg->context = xstrdup("");
    bool v6 = strchr(host, ':') != NULL;
    cfg->server = xasprintf("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    cfg->token_file = token_file;
    cfg->ca_file = xasprintf("%s/ca.crt", sa_dir);
    char *nsfile = xasprintf("%s/namespace", sa_dir);
    char *ns = read_small_file(nsfile);
    free(nsfile);
    cfg->namespace = ns && *ns ? ns : xstrdup("default");
    if (ns && !*ns)
        free(ns);
    return 0;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The first existing file of a ':'-separated KUBECONFIG list (caller frees), or NULL. */
static char *from_env_list(const char *list)
{
    char *copy = xstrdup(list), *found = NULL;
    for (char *p = copy, *end; p && !found; p = end ? end + 1 : NULL) {
        end = strchr(p, ':');
        if (end)
            *end = '\0';
        if (*p && exists(p))
            found = xstrdup(p);
    }
    free(copy);
    return found;
}

int kube_config_resolve(struct kube_config *cfg, const char *path, const char *context,
                        const char *namespace, struct err *err)
{
    char *file = NULL;
    const char *env = getenv("KUBECONFIG");
    if (path && *path)
        file = xstrdup(path);
    else if (env && *env)
        file = from_env_list(env);
    if (!file && getenv("HOME")) {
        char *home = xasprintf("%s/.kube/config", getenv("HOME"));
        if (exists(home))
            file = home;
        else
            free(home);
    }
    int rc = file ? kube_config_load(cfg, file, context, err)
                  : kube_config_in_cluster(cfg, KUBE_SA_DIR, err);
    free(file);
    if (rc == 0 && namespace && *namespace) {
        free(cfg->namespace);
        cfg->namespace = xstrdup(namespace);
    }
    return rc;
}

void kube_config_release(struct kube_config *cfg)
{
    free(cfg->source);
    free(cfg->context);
    free(cfg->server);
    free(cfg->namespace);
    free(cfg->ca_data);
    free(cfg->ca_file);
    free(cfg->cert_data);
    free(cfg->key_data);
    free(cfg->cert_file);
    free(cfg->key_file);
    free(cfg->token);
    free(cfg->token_file);
    if (cfg->exec) {
        free(cfg->exec->api_version);
        free(cfg->exec->command);
        strv_free(cfg->exec->args);
        strv_free(cfg->exec->env);
        free(cfg->exec);
    }
    memset(cfg, 0, sizeof(*cfg));
}
