/*
 * podlog: what the simulated containers have printed, per pod uid and container: the current
 * instance and the one before it (the kubelet keeps one terminated instance for previous=true).
 * Each line keeps the time it was written, for sinceTime and timestamps=true.
 * All functions need the world lock held; returned pointers are borrowed until it is released.
 */
#ifndef KS_PODLOG_H
#define KS_PODLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct podlog_line {
    int64_t ts; /* wall clock, ns */
    char *text; /* without the newline */
};

struct podlog_instance {
    struct podlog_line *lines;
    size_t n, cap;
    bool done;   /* the container instance has terminated: followers stop */
    int64_t seq; /* which instance of the container this is, 1-based */
};

struct podlog {
    struct podlog_instance cur, prev;
};

struct podlogs;

/* Caller frees with podlogs_free(). */
struct podlogs *podlogs_new(void);
void podlogs_free(struct podlogs *p);

/* NULL when the container never started. */
const struct podlog *podlogs_get(struct podlogs *p, const char *uid, const char *container);
/* Starts a container instance: the current one (if any) becomes the previous one. */
void podlogs_start(struct podlogs *p, const char *uid, const char *container);
void podlogs_append(struct podlogs *p, const char *uid, const char *container, int64_t ts,
                    const char *text);
/* The current instance terminated. */
void podlogs_end(struct podlogs *p, const char *uid, const char *container);
/* Forgets every container of a deleted pod (its logs are gone, as on a node). */
void podlogs_drop(struct podlogs *p, const char *uid);
/* A counter bumped by every change above, so the simulation wakes log followers only when
 * there is something new. */
int64_t podlogs_seq(const struct podlogs *p);

#endif
