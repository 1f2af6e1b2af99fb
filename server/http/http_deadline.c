/*
 * http_deadline: the header deadline (see http_internal.h). libmicrohttpd closes a connection
 * only when it has been idle for --timeout, so a client that sends a header byte every few
 * seconds kept its slot for as long as it liked (300 of them held an address's 256 slots). Here
 * every connection is on a list from its start; it must bring a request's headers within the
 * deadline of its start or of its previous response, and a thread cuts those that do not.
 *
 * Cutting is shutdown(2) on the socket: libmicrohttpd sees the end of the stream and closes the
 * connection itself, on its own thread, so nothing of its state is touched from here. The entry
 * leaves the list in MHD's CLOSED notification, before MHD closes the descriptor, under the
 * lock the sweep holds: a descriptor number reused by a later connection is never cut.
 *
 * Threads: MHD's threads call the notifications and marks; the sweeper thread wakes four times a
 * second. Everything shared is under the lock.
 */
#include <errno.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/http/http_internal.h"

struct deadline_entry {
    int fd;
    int64_t since; /* monotonic: the connection's start, or its previous response */
    bool waiting;  /* for a request's headers */
    bool cut;
    struct deadline_entry *prev, *next;
};

struct http_deadlines {
    int64_t limit_ns;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct deadline_entry *list;
    bool stopping;
    pthread_t sweeper;
};

static void sweep(struct http_deadlines *d)
{
    int64_t now = clock_mono_ns();
    for (struct deadline_entry *e = d->list; e; e = e->next) {
        if (!e->waiting || e->cut || now - e->since < d->limit_ns)
            continue;
        e->cut = true;
        shutdown(e->fd, SHUT_RDWR);
    }
}

static void *sweeper(void *arg)
{
    struct http_deadlines *d = arg;
    pthread_mutex_lock(&d->lock);
    while (!d->stopping) {
        sweep(d);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&d->wake, &d->lock, &until);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

struct http_deadlines *http_deadlines_new(int seconds)
{
    struct http_deadlines *d = XNEW(struct http_deadlines);
    d->limit_ns = (int64_t)seconds * NS_PER_SEC;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->wake, NULL);
    if (seconds > 0 && pthread_create(&d->sweeper, NULL, sweeper, d) != 0) {
        log_warn("http: cannot start the header deadline thread: %s", strerror(errno));
        d->limit_ns = 0;
    }
    return d;
}

void http_deadlines_free(struct http_deadlines *d)
{
    if (!d)
        return;
    if (d->limit_ns > 0) {
        pthread_mutex_lock(&d->lock);
        d->stopping = true;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->sweeper, NULL);
    }
    while (d->list) { /* MHD stopped: what it did not report closed is gone now */
        struct deadline_entry *e = d->list;
        d->list = e->next;
        free(e);
    }
    pthread_cond_destroy(&d->wake);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

void http_deadlines_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode code)
{
    struct http_deadlines *d = cls;
    if (d->limit_ns <= 0)
        return;
    pthread_mutex_lock(&d->lock);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct deadline_entry *e = XNEW(struct deadline_entry);
        e->fd = ci ? ci->connect_fd : -1;
        e->since = clock_mono_ns();
        e->waiting = e->fd >= 0;
        e->next = d->list;
        if (d->list)
            d->list->prev = e;
        d->list = e;
        *socket_context = e;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct deadline_entry *e = *socket_context;
        if (e->prev)
            e->prev->next = e->next;
        else
            d->list = e->next;
        if (e->next)
            e->next->prev = e->prev;
        free(e);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&d->lock);
}

/* The connection's deadline entry, or NULL (no deadline, or not registered). */
static struct deadline_entry *entry_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void http_deadlines_mark(struct http_deadlines *d, struct MHD_Connection *conn, bool waiting)
{
    if (d->limit_ns <= 0)
        return;
    pthread_mutex_lock(&d->lock);
    struct deadline_entry *e = entry_of(conn);
    if (e) {
        e->waiting = waiting;
        e->since = clock_mono_ns();
    }
    pthread_mutex_unlock(&d->lock);
}
