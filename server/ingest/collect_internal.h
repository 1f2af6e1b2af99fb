/*
 * collect_internal: the collector's state. collect.c (the collector thread and its rounds) and
 * collect_sources.c (the struct log_sources entry points executors call) are one module in two
 * files: the sources add to the file list and the pushed queue that each round walks, takes
 * from and puts back to, all under `lock`, so both see struct collect whole. Not for use
 * outside these two files.
 */
#ifndef TY_COLLECT_INTERNAL_H
#define TY_COLLECT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/ingest/collect.h"
#include "core/buf.h"
#include "store/logs.h"

/* A rank's log file, read from its committed offset. */
struct fsource {
    int64_t job_pk;
    char key[48];
    char *path;
    struct log_origin origin;
    int fd;
    int64_t offset;  /* committed */
    int64_t pending; /* offset after the lines of the round in progress */
    int64_t punched; /* bytes before this are stored and punched out of the file */
    bool punch;      /* the file is open for writing and its file system punches holes */
    bool positioned; /* offset loaded from the store */
    bool done;       /* will not grow: retire at end of file */
    int src;         /* -1 until resolved */
    bool src_new;
    struct fsource *next;
};

/* A batch pushed by a follower. */
struct pushed {
    int64_t job_pk;
    char key[48];
    struct log_origin origin;
    char *pod;
    char *position;
    struct log_line *lines; /* text in `text` */
    size_t n;
    struct buf text;
    struct pushed *next;
};

/* The lines of one job gathered in a round. */
struct gathered {
    int64_t job_pk;
    struct log_line *lines;
    size_t n, cap;
    struct buf text; /* line texts; lines[].text holds offsets until the round is stored */
    struct log_source_new *sources;
    size_t nsources;
    struct log_position *positions;
    size_t npositions;
};

struct collect {
    struct store *st;
    struct wakeups *wakeups;
    struct collect_options opts;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* wakes push() waiting for budget */
    bool stopping;
    bool adopted;
    struct fsource *files;
    struct pushed *pushed_head, *pushed_tail;
    int64_t pushed_bytes;
    struct gathered *jobs;
    size_t njobs, capjobs;
    char *buf;
    int64_t last_complete_check, last_retention;
    atomic_ullong lines_total, bytes_total, flushes_total, errors_total;
    atomic_llong last_flush_ns;
    int64_t retry_ns, retry_at, last_error_log; /* backing off after a failed commit */
};

/* Takes the pushed batches queued so far (the caller frees them with collect_pushed_free) and
 * wakes pushers waiting for budget. */
struct pushed *collect_take_pushed(struct collect *c);
void collect_pushed_free(struct pushed *p);

#endif
