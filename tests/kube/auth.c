/*
 * auth: HMAC-signed tokens and the kubeconfig writer. The secret is random per server run and
 * reaches the exec plugin through the kubeconfig's exec.env (TESTSERVER_SECRET), as an EKS
 * kubeconfig hands the AWS profile to `aws eks get-token`. Thread-safety: auth_check() takes
 * the world lock; the rest is called from main() before serving or under the lock.
 */
#include "tests/kube/auth.h"

#include <fcntl.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/world.h"

#define PREFIX "testserver-v1."

struct auth {
    char secret[65]; /* hex; used as the HMAC key text, as `openssl dgst -hmac` does */
    int64_t ttl;
    int64_t not_before; /* unix seconds */
    char token[160];    /* the static token of a kubeconfig without exec plugin */
};

struct auth *auth_new(int64_t ttl_seconds)
{
    struct auth *a = XNEW(struct auth);
    unsigned char raw[32];
    crypto_random(raw, sizeof(raw));
    crypto_hex(raw, sizeof(raw), a->secret);
    a->ttl = ttl_seconds;
    return a;
}

void auth_free(struct auth *a)
{
    free(a);
}

static void sign(const struct auth *a, const char *claims, char out[SHA256_HEX_LEN])
{
    unsigned char mac[SHA256_LEN];
    crypto_hmac_sha256(a->secret, strlen(a->secret), claims, strlen(claims), mac);
    crypto_hex(mac, sizeof(mac), out);
}

char *auth_mint(struct auth *a, int64_t ttl_seconds, char *out)
{
    int64_t now = clock_now_ns() / NS_PER_SEC;
    int64_t ttl = ttl_seconds < 0 ? a->ttl : ttl_seconds;
    char claims[64], mac[SHA256_HEX_LEN];
    snprintf(claims, sizeof(claims), "%lld.%lld", (long long)now, (long long)(ttl ? now + ttl : 0));
    sign(a, claims, mac);
    snprintf(out, 160, PREFIX "%s.%s", claims, mac);
    return out;
}

void auth_revoke(struct auth *a)
{
    a->not_before = clock_now_ns() / NS_PER_SEC;
}

/* Checks one token against the secret and the clock. */
static int verify(const struct auth *a, const char *token)
{
    if (strncmp(token, PREFIX, strlen(PREFIX)))
        return -1;
    const char *claims = token + strlen(PREFIX);
    const char *dot1 = strchr(claims, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2 || strlen(dot2 + 1) != SHA256_HEX_LEN - 1)
        return -1;
    char text[64], iat_s[32], exp_s[32], mac[SHA256_HEX_LEN];
    snprintf(text, sizeof(text), "%.*s", (int)(dot2 - claims), claims);
    snprintf(iat_s, sizeof(iat_s), "%.*s", (int)(dot1 - claims), claims);
    snprintf(exp_s, sizeof(exp_s), "%.*s", (int)(dot2 - dot1 - 1), dot1 + 1);
    int64_t iat, exp, now = clock_now_ns() / NS_PER_SEC;
    if (parse_int64(iat_s, 0, INT64_MAX, &iat) < 0 || parse_int64(exp_s, 0, INT64_MAX, &exp) < 0)
        return -1;
    sign(a, text, mac);
    if (!crypto_equal(mac, dot2 + 1, SHA256_HEX_LEN - 1))
        return -1;
    if ((exp && now >= exp) || iat < a->not_before || iat > now + 60)
        return -1;
    return 0;
}

int auth_check(struct world *w, const char *authorization)
{
    if (!authorization || strncmp(authorization, "Bearer ", 7))
        return -1;
    world_lock(w);
    int rc = verify(w->auth, authorization + 7);
    world_unlock(w);
    return rc;
}

static void user_block(struct auth *a, const struct kubeconfig_options *o, struct buf *b)
{
    if (!o->exec_plugin) {
        auth_mint(a, -1, a->token);
        buf_printf(b, "    token: %s\n", a->token);
        return;
    }
    buf_printf(b,
               "    exec:\n"
               "      apiVersion: client.authentication.k8s.io/v1beta1\n"
               "      command: %s\n"
               "      args: [--cluster-name, testserver, --output, json]\n"
               "      env:\n"
               "      - {name: TESTSERVER_SECRET, value: \"%s\"}\n"
               "      - {name: TESTSERVER_TOKEN_TTL, value: \"%lld\"}\n"
               "      interactiveMode: Never\n"
               "      provideClusterInfo: false\n",
               o->exec_plugin, a->secret, (long long)(a->ttl ? a->ttl : 900));
}

int auth_write_kubeconfig(struct auth *a, const struct kubeconfig_options *o, struct err *err)
{
    struct buf b = BUF_INIT;
    buf_printf(&b,
               "apiVersion: v1\nkind: Config\nclusters:\n- name: testserver\n  cluster:\n"
               "    server: %s\n",
               o->server);
    if (o->ca_pem) {
        buf_puts(&b, "    certificate-authority-data: ");
        crypto_base64_encode(&b, o->ca_pem, strlen(o->ca_pem));
        buf_putc(&b, '\n');
    }
    buf_puts(&b, "users:\n- name: testserver-user\n  user:\n");
    user_block(a, o, &b);
    buf_puts(&b, "contexts:\n- name: testserver\n  context:\n    cluster: testserver\n"
                 "    user: testserver-user\n    namespace: default\n"
                 "current-context: testserver\npreferences: {}\n");
    int rc = -1;
    int fd = open(o->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len) {
        err_set(err, ERR_IO, "cannot write kubeconfig %s", o->path);
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    buf_release(&b);
    return rc;
}
