/*
 * Helpers shared by the tests of trigger (tests/unit/test_trigger_*.c): fixture files
 * and a fake request with a header table.
 */
#ifndef TY_TEST_TRIGGER_H
#define TY_TEST_TRIGGER_H

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "core/buf.h"
#include "trigger/hook.h"

#define FIXTURES "data/trigger/"

/* Reads a fixture (path relative to tests/unit) into b; aborts when missing. */
static inline void fixture(const char *name, struct buf *b)
{
    char path[256];
    snprintf(path, sizeof(path), FIXTURES "%s", name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "missing fixture %s\n", path);
        abort();
    }
    char chunk[4096];
    size_t n;
    buf_reset(b);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(b, chunk, n);
    fclose(f);
}

/* A request's headers: pairs of name, value, terminated by NULL. */
struct fake_headers {
    const char *kv[32];
};

static inline const char *fake_header(void *ctx, const char *name)
{
    struct fake_headers *h = ctx;
    for (int i = 0; h && h->kv[i]; i += 2)
        if (strcasecmp(h->kv[i], name) == 0)
            return h->kv[i + 1];
    return NULL;
}

static inline struct hook_request fake_request(struct fake_headers *h, const struct buf *body)
{
    struct hook_request r = { fake_header, h, body->data ? body->data : "", body->len };
    return r;
}

/*
 * A throw-away PKI made with the openssl CLI at test time, and `openssl s_server -WWW` serving
 * the files of its directory over HTTPS on 127.0.0.1 (the SNS certificate host in test mode):
 *   ca.pem/ca.key        the test CA (trusted by the fetcher and the chain check)
 *   srv.pem/srv.key      the TLS server certificate for 127.0.0.1
 *   signing.pem/.key     the SNS signing certificate, issued by the CA
 *   rogue.pem/.key       a self-signed certificate that no one trusts
 */
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

struct testpki {
    char dir[64];
    pid_t server;
    int port;
    char host[32]; /* "127.0.0.1:PORT" */
};

/* Runs a shell command inside the PKI directory; returns its exit status. */
static inline int testpki_sh(const struct testpki *p, const char *fmt, ...)
{
    char cmd[2048];
    int n = snprintf(cmd, sizeof(cmd), "cd '%s' && { ", p->dir);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
    va_end(ap);
    snprintf(cmd + n, sizeof(cmd) - (size_t)n, "; } >/dev/null 2>&1");
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static inline int testpki_make(struct testpki *p)
{
    const char *issue =
        "openssl req -newkey rsa:2048 -nodes -keyout %s.key -out %s.csr -subj /CN=%s"
        " && openssl x509 -req -in %s.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
        " -days 2 -out %s.pem -extfile %s.ext";
    FILE *f;
    char path[128];
    snprintf(path, sizeof(path), "%s/srv.ext", p->dir);
    if (!(f = fopen(path, "w")))
        return -1;
    fputs("subjectAltName=IP:127.0.0.1,DNS:localhost\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/signing.ext", p->dir);
    if (!(f = fopen(path, "w")))
        return -1;
    fputs("keyUsage=digitalSignature\n", f);
    fclose(f);
    if (testpki_sh(p, "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
                      "-days 2 -subj /CN=trainyard-test-ca") ||
        testpki_sh(p, issue, "srv", "srv", "127.0.0.1", "srv", "srv", "srv") ||
        testpki_sh(p, issue, "signing", "signing", "sns.test", "signing", "signing", "signing") ||
        testpki_sh(p, "openssl req -x509 -newkey rsa:2048 -nodes -keyout rogue.key -out rogue.pem "
                      "-days 2 -subj /CN=rogue") ||
        testpki_sh(p, "cp signing.pem SimpleNotificationService-test.pem && cp rogue.pem "
                      "SimpleNotificationService-rogue.pem && printf '%%s' "
                      "'<ConfirmSubscriptionResponse/>' > confirm.xml"))
        return -1;
    return 0;
}

/* Starts s_server on a free port; it prints "ACCEPT 127.0.0.1:PORT" into server.log (a file, not
 * a pipe: s_server keeps writing there and must not die of SIGPIPE). */
static inline int testpki_serve(struct testpki *p)
{
    char log[128];
    snprintf(log, sizeof(log), "%s/server.log", p->dir);
    p->server = fork();
    if (p->server == 0) {
        FILE *f = freopen(log, "w", stdout);
        if (!f || chdir(p->dir) < 0)
            _exit(127);
        dup2(1, 2);
        execlp("openssl", "openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", "srv.pem",
               "-key", "srv.key", "-WWW", (char *)NULL);
        _exit(127);
    }
    p->port = 0;
    for (int i = 0; i < 100 && p->port == 0; i++) {
        usleep(50 * 1000);
        FILE *f = fopen(log, "r");
        char line[128];
        while (f && fgets(line, sizeof(line), f))
            if (sscanf(line, "ACCEPT 127.0.0.1:%d", &p->port) == 1)
                break;
        if (f)
            fclose(f);
    }
    snprintf(p->host, sizeof(p->host), "127.0.0.1:%d", p->port);
    return p->port > 0 ? 0 : -1;
}

static inline int testpki_setup(struct testpki *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->dir, sizeof(p->dir), "/tmp/ty-trigger-XXXXXX");
    if (!mkdtemp(p->dir))
        return -1;
    if (testpki_make(p) < 0) {
        fprintf(stderr, "testpki: openssl could not make the test certificates\n");
        return -1;
    }
    return testpki_serve(p);
}

static inline void testpki_teardown(struct testpki *p)
{
    if (p->server > 0) {
        kill(p->server, SIGTERM);
        waitpid(p->server, NULL, 0);
    }
    if (p->dir[0])
        testpki_sh(p, "cd / && rm -rf '%s'", p->dir);
}

/* Signs data with <key>.key and openssl dgst -<md>; appends the base64 signature to out. */
static inline int testpki_sign(const struct testpki *p, const char *key, const char *md,
                               const void *data, size_t len, struct buf *out)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/tosign", p->dir);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    if (testpki_sh(p,
                   "openssl dgst -%s -sign %s.key -out sig.bin tosign && "
                   "openssl base64 -A -in sig.bin -out sig.b64",
                   md, key))
        return -1;
    snprintf(path, sizeof(path), "%s/sig.b64", p->dir);
    f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[1024];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(out, chunk, n);
    fclose(f);
    return 0;
}

#endif
