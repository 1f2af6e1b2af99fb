/*
 * controller_report: the queue of executors' reports (a rank started or ended, a job's own
 * conditions) and what each one changes. Private to server/control; the queue is filled from
 * any thread, everything else runs on the controller thread (controller.c's loop).
 */
#ifndef TY_CONTROLLER_REPORT_H
#define TY_CONTROLLER_REPORT_H

#include "server/control/controller_state.h"

/* Makes c the receiver of ex's reports (ex->events). */
void controller_listen(struct controller *c, struct executor *ex);
/* Handles the queued reports in order; while the store refuses writes they wait (see the
 * function). */
void controller_drain(struct controller *c);
/* Frees the reports still queued (at controller_free). */
void controller_reports_free(struct controller *c);

#endif
