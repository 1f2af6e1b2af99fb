/*
 * store_fixture: a store in a fresh temporary directory with one job, for the store module
 * tests. fixture_open() returns the store and the job's pk; fixture_close() removes it all.
 */
#ifndef TY_STORE_FIXTURE_H
#define TY_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/clock.h"
#include "store/jobs.h"
#include "store/store.h"

struct fixture {
    char dir[64];
    char path[96];
    struct store *st;
};

static inline int64_t fixture_job(struct store *st, const char *id)
{
    struct job_new jn = { .id = id,
                          .name = "fixture",
                          .executor = "local",
                          .spec = "{\"name\":\"fixture\"}",
                          .nranks = 2,
                          .owner = "test",
                          .now = clock_now_ns() };
    struct job_inserted out;
    struct err err;
    err_init(&err);
    int rc = store_job_insert(st, &jn, &out, &err);
    if (rc < 0)
        fprintf(stderr, "fixture: inserting a job: %s\n", err.msg);
    err_release(&err);
    return rc < 0 ? 0 : out.pk;
}

static inline struct store *fixture_open(struct fixture *f)
{
    snprintf(f->dir, sizeof(f->dir), "/tmp/ty-store-test.XXXXXX");
    if (!mkdtemp(f->dir))
        return NULL;
    snprintf(f->path, sizeof(f->path), "%s/t.db", f->dir);
    struct store_options so = { .busy_timeout_ms = 1000, .max_batch = 64 };
    struct err err;
    err_init(&err);
    f->st = store_open(f->path, &so, &err);
    if (!f->st)
        fprintf(stderr, "fixture: %s\n", err.msg);
    err_release(&err);
    return f->st;
}

static inline void fixture_close(struct fixture *f)
{
    store_close(f->st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fixture: could not remove %s\n", f->dir);
}

#endif
