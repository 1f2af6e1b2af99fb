/*
 * Helpers shared by the tests of server/trigger (tests/unit/test_trigger_*.c): fixture files
 * and a fake request with a header table.
 */
#ifndef TY_TEST_TRIGGER_H
#define TY_TEST_TRIGGER_H

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "server/core/buf.h"
#include "server/trigger/hook.h"

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

#endif
