/* controller_admit: admission (see controller_admit.c); controller thread only. */
#ifndef TY_CONTROLLER_ADMIT_H
#define TY_CONTROLLER_ADMIT_H

#include "server/control/controller_state.h"
#include "server/control/scheduler.h"

/* What runs on the executors this pass: each in-flight job's resources (filled while the pass
 * looks at it). */
struct admit_running {
    struct sched_job *jobs;
    struct executor **exec; /* jobs[i] runs on exec[i] */
    char (*queue)[64];      /* jobs[i].queue points here */
    size_t n, cap;
};

/* Adds the in-flight job j (spec v) to what runs. */
void controller_admit_running(struct admit_running *r, struct executor *ex, const struct job *j,
                              const struct spec_view *v);
void controller_admit_release(struct admit_running *r);
/* Starts what the scheduler picks among the waiting jobs, suspends the backfilled jobs it gives
 * up, and keeps why the others wait (controller_queue_status). */
void controller_admit(struct controller *c, const struct admit_running *r);

#endif
