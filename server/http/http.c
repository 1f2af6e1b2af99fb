/*
 * http: the daemon's HTTP(S) listener (see http.h): the listen address, the libmicrohttpd
 * daemon and its options, TLS certificates (loaded at start, reloaded on SIGHUP by handing the
 * listening socket to a new daemon), and the stop. What happens to each request is
 * http_exchange.c, which keeps the requests in flight to itself (http_internal.h). The
 * daemon's main thread calls every function here and is the only one to touch struct http.
 */
#include "server/http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/socket.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/http/http_internal.h"

struct http {
    struct MHD_Daemon *mhd;
    struct http_options opts;
    char address[96];
    char *tls_cert, *tls_key, *tls_ca; /* PEM text kept alive for MHD */
    struct http_exchanges *exchanges;  /* MHD's handlers' state (cls) */
    struct http_deadlines *deadlines;  /* every open connection, for the header deadline */
};

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_warn("http: %s", msg);
}

bool http_is_loopback(const char *listen)
{
    return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "[::1]", 5) == 0 ||
           strncmp(listen, "localhost:", 10) == 0;
}

/* Parses "host:port" / "[v6]:port" into a socket address. */
static int parse_listen(const char *text, struct sockaddr_storage *ss, socklen_t *len,
                        struct err *err)
{
    char host[80];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || (size_t)(colon - text) >= sizeof(host))
        return err_set(err, ERR_INVALID, "listen address '%s' must be HOST:PORT", text);
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || colon[1] == '\0')
        return err_set(err, ERR_INVALID, "listen address '%s' has a bad port", text);
    memset(ss, 0, sizeof(*ss));
    if (host[0] == '[') {
        size_t n = strlen(host);
        if (n < 3 || host[n - 1] != ']')
            return err_set(err, ERR_INVALID, "listen address '%s' is not valid", text);
        host[n - 1] = '\0';
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
            return err_set(err, ERR_INVALID, "listen address '%s' is not valid", text);
        *len = sizeof(*a);
        return 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return err_set(err, ERR_INVALID, "listen address '%s' is not an IP address", text);
    *len = sizeof(*a);
    return 0;
}

int http_listen_check(const char *listen, struct err *err)
{
    struct sockaddr_storage ss;
    socklen_t len;
    return parse_listen(listen, &ss, &len, err);
}

static char *read_pem(const char *path, struct err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, ERR_IO, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    struct buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < (1 << 20))
        buf_append(&b, chunk, n);
    fclose(f);
    return buf_detach(&b, NULL);
}

static int load_tls(struct http *h, struct err *err)
{
    if (!h->opts.tls_cert_file)
        return 0;
    h->tls_cert = read_pem(h->opts.tls_cert_file, err);
    h->tls_key = h->tls_cert ? read_pem(h->opts.tls_key_file, err) : NULL;
    if (h->tls_key && h->opts.tls_client_ca_file)
        h->tls_ca = read_pem(h->opts.tls_client_ca_file, err);
    return err_is_set(err) ? -1 : 0;
}

static struct MHD_Daemon *start_daemon(struct http *h, const struct sockaddr_storage *ss,
                                       int listen_fd)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC;
    if (((const struct sockaddr *)ss)->sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (h->tls_cert)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem opts[20];
    int n = 0;
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL };
    opts[n++] =
        (struct MHD_OptionItem){ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)http_on_uri, h->exchanges };
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)http_on_completed,
                                         h->exchanges };
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION,
                                         (intptr_t)http_deadlines_notify, h->deadlines };
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE,
                                         h->opts.threads > 0 ? h->opts.threads : 2, NULL };
    opts[n++] =
        (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, h->opts.connection_limit, NULL };
    opts[n++] =
        (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT, h->opts.per_ip_limit, NULL };
    opts[n++] =
        (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, h->opts.timeout_seconds, NULL };
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL };
    if (listen_fd >= 0)
        opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL };
    else
        opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, (void *)ss };
    if (h->tls_cert) {
        opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert };
        opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key };
        if (h->tls_ca)
            opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, h->tls_ca };
    }
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    return MHD_start_daemon(flags, 0, NULL, NULL, http_on_request, h->exchanges, MHD_OPTION_ARRAY,
                            opts, MHD_OPTION_END);
}

static void describe_address(struct http *h, const struct sockaddr_storage *ss)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : 0;
    char host[64];
    if (((const struct sockaddr *)ss)->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host, sizeof(host));
        snprintf(h->address, sizeof(h->address), "[%s]:%u", host, port);
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
        snprintf(h->address, sizeof(h->address), "%s:%u", host, port);
    }
}

struct http *http_start(struct api *api, const struct http_options *opts, struct err *err)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (parse_listen(opts->listen, &ss, &len, err) < 0)
        return NULL;
    struct http *h = XNEW(struct http);
    h->opts = *opts;
    if (load_tls(h, err) < 0)
        goto fail;
    h->deadlines = http_deadlines_new(opts->header_timeout_seconds);
    h->exchanges = http_exchanges_new(api, opts->max_body_bytes, h->tls_ca != NULL, h->deadlines);
    h->mhd = start_daemon(h, &ss, -1);
    if (!h->mhd) {
        err_set(err, ERR_UNAVAILABLE, "cannot listen on %s (address in use, or not local?)",
                opts->listen);
        goto fail;
    }
    describe_address(h, &ss);
    return h;
fail:
    free(h->tls_cert);
    free(h->tls_key);
    free(h->tls_ca);
    http_exchanges_free(h->exchanges);
    http_deadlines_free(h->deadlines);
    free(h);
    return NULL;
}

const char *http_address(const struct http *h)
{
    return h->address;
}

int http_reload_tls(struct http *h, struct err *err)
{
    if (!h->opts.tls_cert_file)
        return 0;
    char *cert = read_pem(h->opts.tls_cert_file, err);
    char *key = cert ? read_pem(h->opts.tls_key_file, err) : NULL;
    if (!key) {
        free(cert);
        return -1;
    }
    /* Hand the listening socket to a new daemon with the new certificate, then close the old
     * one; clients that were streaming reconnect (and resume by sequence number). */
    MHD_socket fd = MHD_quiesce_daemon(h->mhd);
    if (fd == MHD_INVALID_SOCKET) {
        free(cert);
        free(key);
        return err_set(err, ERR_INTERNAL, "cannot hand over the listening socket");
    }
    char *old_cert = h->tls_cert, *old_key = h->tls_key;
    struct MHD_Daemon *old = h->mhd;
    h->tls_cert = cert;
    h->tls_key = key;
    struct sockaddr_storage ss;
    socklen_t len;
    parse_listen(h->opts.listen, &ss, &len, NULL);
    h->mhd = start_daemon(h, &ss, fd);
    if (!h->mhd) {
        h->mhd = old;
        h->tls_cert = old_cert;
        h->tls_key = old_key;
        free(cert);
        free(key);
        return err_set(err, ERR_INTERNAL, "cannot restart the listener with the new certificate");
    }
    http_exchanges_resume_all(h->exchanges);
    MHD_stop_daemon(old);
    http_exchanges_go_on(h->exchanges);
    free(old_cert);
    free(old_key);
    return 0;
}

void http_stop(struct http *h)
{
    if (!h)
        return;
    http_exchanges_resume_all(h->exchanges);
    MHD_stop_daemon(h->mhd);
    free(h->tls_cert);
    free(h->tls_key);
    free(h->tls_ca);
    http_exchanges_free(h->exchanges);
    http_deadlines_free(h->deadlines);
    free(h);
}
