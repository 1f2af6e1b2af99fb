/*
 * cli_sse: an incremental Server-Sent Events parser (the WHATWG rules the daemon's log follow
 * uses): bytes go in as they arrive, split anywhere; each complete event (ended by a blank
 * line) comes out through a callback with its id, event type and data. A partial event at the
 * end of a dropped connection is never delivered, so resuming from the last delivered id
 * neither loses nor repeats an event.
 */
#ifndef TY_CLI_SSE_H
#define TY_CLI_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

struct cli_sse_event {
    const char *id;    /* "" when the event had none; borrowed for the callback */
    const char *event; /* "message" when the event had none */
    const char *data;  /* data lines joined by '\n' */
    size_t data_len;
};

/* Returns 0 to go on, non-zero to stop (cli_sse_feed then returns that value). */
typedef int (*cli_sse_fn)(void *ctx, const struct cli_sse_event *ev);

struct cli_sse {
    struct buf line; /* the line being read */
    struct buf id, event, data;
    bool has_data;
    bool after_cr; /* the last byte was a CR: a LF next ends nothing */
    cli_sse_fn fn;
    void *ctx;
};

void cli_sse_init(struct cli_sse *s, cli_sse_fn fn, void *ctx);
void cli_sse_release(struct cli_sse *s);
/* Forgets any partial line or event (after a dropped connection). */
void cli_sse_reset(struct cli_sse *s);
/* Feeds len bytes; returns 0, or the first non-zero value a callback returned. */
int cli_sse_feed(struct cli_sse *s, const char *data, size_t len);

#endif
