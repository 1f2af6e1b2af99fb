/*
 * webhook_receiver: a real HTTP receiver for the outbound webhook tests. It listens on
 * 127.0.0.1 (a free port, written to DIR/port), answers every POST as DIR/mode says, and logs
 * each request it got, byte for byte, as one JSON line in DIR/requests.ndjson:
 *   {"n", "path", "status" (what it answered), "id", "timestamp", "signature",
 *    "content_type", "body", "ms" (wall clock)}
 * It checks nothing itself: the tests verify the logged signatures with independent
 * implementations (openssl, the npm standardwebhooks package).
 *
 * DIR/mode (read on every request, default ok):
 *   ok            200
 *   fail          503
 *   gone          410
 *   retry-after N 429 with Retry-After: N
 *   slow          answers 200 after 30 s (longer than any webhook timeout in the tests),
 *                 or at once when the receiver is stopped
 *
 *   webhook_receiver DIR        runs until SIGTERM/SIGINT
 */
#include <jansson.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/buf.h"

static const char *dir;
static volatile sig_atomic_t stop;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int count;

static void read_mode(char *mode, size_t size)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/mode", dir);
    snprintf(mode, size, "ok");
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(mode, (int)size, f))
            snprintf(mode, size, "ok");
        mode[strcspn(mode, "\r\n")] = '\0';
        fclose(f);
    }
}

static const char *header(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? v : "";
}

static void log_request(struct MHD_Connection *c, const char *url, const struct buf *body,
                        int status)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    pthread_mutex_lock(&lock);
    json_t *o = json_pack(
        "{s:i,s:s,s:i,s:s,s:s,s:s,s:s,s:s%,s:I}", "n", ++count, "path", url, "status", status, "id",
        header(c, "webhook-id"), "timestamp", header(c, "webhook-timestamp"), "signature",
        header(c, "webhook-signature"), "content_type", header(c, "Content-Type"), "body",
        buf_cstr(body), body->len, "ms", (json_int_t)tv.tv_sec * 1000 + tv.tv_usec / 1000);
    char path[512];
    snprintf(path, sizeof(path), "%s/requests.ndjson", dir);
    FILE *f = fopen(path, "a");
    if (f && o) {
        char *line = json_dumps(o, JSON_COMPACT);
        fprintf(f, "%s\n", line);
        free(line);
    }
    if (f)
        fclose(f);
    json_decref(o);
    pthread_mutex_unlock(&lock);
}

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static enum MHD_Result answer(struct MHD_Connection *c, int status, const char *retry_after)
{
    static const char ok[] = "{\"ok\":true}";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(ok), (void *)ok, MHD_RESPMEM_PERSISTENT);
    if (retry_after)
        MHD_add_response_header(r, "Retry-After", retry_after);
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state)
{
    (void)cls;
    (void)version;
    (void)method;
    struct buf *body = *state;
    if (!body) {
        body = calloc(1, sizeof(*body));
        *state = body;
        return MHD_YES;
    }
    if (*size) {
        buf_append(body, data, *size);
        *size = 0;
        return MHD_YES;
    }
    char mode[64];
    read_mode(mode, sizeof(mode));
    int status = 200;
    const char *retry_after = NULL;
    if (strcmp(mode, "fail") == 0)
        status = 503;
    else if (strcmp(mode, "gone") == 0)
        status = 410;
    else if (strncmp(mode, "retry-after ", 12) == 0) {
        status = 429;
        retry_after = mode + 12;
    } else if (strcmp(mode, "slow") == 0) {
        for (int i = 0; i < 300 && !stop; i++)
            usleep(100 * 1000);
    }
    log_request(c, url, body, status);
    return answer(c, status, retry_after);
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
                    enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct buf *body = *state;
    if (body) {
        buf_release(body);
        free(body);
    }
    *state = NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: webhook_receiver DIR\n");
        return 2;
    }
    dir = argv[1];
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0 };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
                         NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, &addr,
                         MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "webhook_receiver: cannot listen\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char path[512];
    snprintf(path, sizeof(path), "%s/port", dir);
    FILE *f = fopen(path, "w");
    if (!f || !info)
        return 1;
    fprintf(f, "%u\n", (unsigned)info->port);
    fclose(f);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    while (!stop)
        pause();
    MHD_stop_daemon(d);
    return 0;
}
