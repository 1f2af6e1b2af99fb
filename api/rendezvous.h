/* rendezvous: keys and barriers for a job's ranks (see rendezvous.c); handlers in handlers.h. */
#ifndef TY_RENDEZVOUS_H
#define TY_RENDEZVOUS_H

#include "api/api.h"

/* Starts the timer that ends waits whose time is up. */
void rendezvous_init(struct api *api);
/* Answers every parked wait with 503 and stops the timer; call before the HTTP layer stops. */
void rendezvous_release(struct api *api);

#endif
