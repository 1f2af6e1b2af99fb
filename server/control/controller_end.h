/*
 * controller_end: how a starting or running attempt ends (settling once the logs are in, the
 * outcome, stalls, deadlines). Private to server/control; called by controller.c and
 * controller_report.c, on the controller thread.
 */
#ifndef TY_CONTROLLER_END_H
#define TY_CONTROLLER_END_H

#include "server/control/controller_state.h"

/* Drives a starting or running job whose ranks are ending: stops the others when one failed,
 * and decides the end once every rank ended and the logs are in. */
void controller_settle(struct controller *c, struct executor *ex, const struct job *j,
                       const struct spec_view *v);
/* Stall and straggler detection of a running job, and its stall policy. */
void controller_watch(struct controller *c, struct executor *ex, const struct job *j,
                      const struct spec_view *v);
/* A restarting job (restarted by the controller, not by its executor): once every rank of the
 * last attempt has ended and the backoff has passed, starts the next attempt; fails the job
 * (DeadlineExceeded) instead when the deadline passed meanwhile. Until then asks the loop to
 * come back when the backoff ends. */
void controller_next_attempt(struct controller *c, struct executor *ex, const struct job *j,
                             const struct spec_view *v, int64_t now);
/* True when the job has run (since it first ran) longer than its deadline_seconds. */
bool controller_past_deadline(const struct job *j, const struct spec_view *v, int64_t now);
/* The job ran past its deadline_seconds: its ranks are stopped, and it fails (DeadlineExceeded)
 * once every one has ended. Called on every pass while the job is past its deadline. */
void controller_deadline(struct controller *c, struct executor *ex, const struct job *j,
                         const struct spec_view *v, int64_t now);

#endif
