/*
 * The scheduler's decisions (server/control/scheduler.c): order by queue priority, priority and
 * age; quotas that hold up their own queue only; the head's reservation and the three ways a job
 * behind it may start (its deadline ends before the head could start, it fits in what the head
 * leaves, or as a preemptible backfill when the head cannot start soon); suspending backfills
 * for the head; positions and the messages people read.
 */
#include "server/control/scheduler.h"

#include "tests/unit/check.h"

#define S(n) ((int64_t)(n)*1000000000LL)
#define NOW  S(1000000)

static struct sched_job job(int64_t pk, int64_t slots, int64_t gpus)
{
    return (struct sched_job){ .pk = pk, .created = S(pk), .need = { slots, gpus } };
}

static struct sched_job running(int64_t pk, int64_t gpus, int64_t deadline_s)
{
    struct sched_job j = job(pk, 1, gpus);
    j.started = NOW - S(10);
    j.runtime_ns = S(deadline_s);
    return j;
}

struct run {
    struct sched_decision out[16];
    int64_t preempt[16];
    size_t npreempt;
};

static void decide(struct run *r, int64_t slots, int64_t gpus, const struct sched_job *run,
                   size_t nrun, const struct sched_job *wait, size_t nwait,
                   const struct sched_queue *q, size_t nq)
{
    struct sched_input in = { .capacity = { slots, gpus },
                              .queues = q,
                              .nqueues = nq,
                              .running = run,
                              .nrunning = nrun,
                              .waiting = wait,
                              .nwaiting = nwait,
                              .now = NOW };
    r->npreempt = sched_decide(&in, r->out, r->preempt);
}

/* Jobs start in order while they fit; the first that does not is the head, and a job behind
 * it that would fit waits when the head starts soon. */
static void test_order_and_head(void)
{
    struct sched_job run[] = { running(1, 6, 60) }; /* 6 of 8 GPUs, free in 50 s */
    struct sched_job wait[] = { job(10, 1, 1), job(11, 1, 7), job(12, 1, 1) };
    struct run r;
    decide(&r, 16, 8, run, 1, wait, 3, NULL, 0);
    CHECK_INT(r.out[0].why, SCHED_START);
    CHECK_INT(r.out[1].why, SCHED_RESOURCES);
    CHECK(r.out[1].head && r.out[1].reserved);
    CHECK_INT(r.out[1].position, 1);
    /* 1 GPU free, but the head starts in 50 s with 7 of the 8: 12 may not take it for good */
    CHECK_INT(r.out[2].why, SCHED_RESOURCES);
    CHECK_INT(r.out[2].position, 2);
    CHECK_INT(r.npreempt, 0);
    char msg[256];
    sched_message(&r.out[1], NULL, msg, sizeof(msg));
    CHECK_STR(msg, "waiting for 7 GPUs, 1 free; next to start (jobs behind it cannot delay it); "
                   "1st in queue default");
    CHECK_STR(sched_reason(&r.out[1]), "WaitingForResources");
}

/* EASY backfill: a job whose deadline ends before the head's shadow time starts; one that fits
 * in what the head leaves over starts; the rest wait. */
static void test_backfill_by_deadline(void)
{
    struct sched_job run[] = { running(1, 6, 110) }; /* ends in 100 s */
    struct sched_job wait[] = { job(10, 1, 6), job(11, 1, 2), job(12, 1, 2) };
    wait[1].runtime_ns = S(50); /* done before the head could start */
    struct run r;
    decide(&r, 16, 10, run, 1, wait, 3, NULL, 0);
    CHECK_INT(r.out[0].why, SCHED_RESOURCES); /* 4 free, needs 6 */
    CHECK_INT(r.out[1].why, SCHED_START);
    CHECK(r.out[1].backfill && !r.out[1].preemptible);
    /* at the shadow time 10 are free, the head takes 6: 2 of the 4 left are the extra */
    CHECK_INT(r.out[2].why, SCHED_START);
    CHECK(r.out[2].backfill && !r.out[2].preemptible);
    /* a longer job behind them would have to take what the head needs: it waits */
    struct sched_job wait2[] = { job(10, 1, 6), job(11, 1, 2), job(12, 1, 2), job(13, 1, 1) };
    wait2[1].runtime_ns = S(50);
    decide(&r, 16, 11, run, 1, wait2, 4, NULL, 0);
    CHECK_INT(r.out[3].why, SCHED_START); /* 11 GPUs: 3 extra at the shadow time */
    decide(&r, 16, 10, run, 1, wait2, 4, NULL, 0);
    CHECK_INT(r.out[3].why, SCHED_RESOURCES);
}

/* When nobody knows when the head can start, a job that fits runs as a preemptible backfill; when
 * the head would fit without the backfills, they are suspended, last in order first. */
static void test_preemptible_backfill(void)
{
    struct sched_job run[] = { running(1, 6, 0) }; /* no deadline: its end is unknown */
    struct sched_job wait[] = { job(10, 1, 4), job(11, 1, 2) };
    struct run r;
    decide(&r, 16, 8, run, 1, wait, 2, NULL, 0);
    CHECK_INT(r.out[0].why, SCHED_RESOURCES);
    CHECK_INT(r.out[1].why, SCHED_START);
    CHECK(r.out[1].backfill && r.out[1].preemptible);
    /* job 1 ended; 11 runs as a backfill, 12 too: the head (10) needs 4 of 8, 4 are free */
    struct sched_job run2[] = { running(11, 2, 0), running(12, 2, 0), running(13, 2, 0) };
    run2[0].preemptible = run2[1].preemptible = true;
    run2[0].created = S(11), run2[1].created = S(12);
    struct sched_job wait2[] = { job(10, 1, 4) };
    decide(&r, 16, 8, run2, 3, wait2, 1, NULL, 0);
    CHECK_INT(r.out[0].why, SCHED_RESOURCES); /* 2 free */
    CHECK_INT(r.npreempt, 1);
    CHECK_INT(r.preempt[0], 12); /* the last in order goes first; one is enough */
    CHECK_INT(r.out[0].preempting, 1);
    char msg[256];
    sched_message(&r.out[0], "research", msg, sizeof(msg));
    CHECK_STR(msg, "waiting for 4 GPUs, 2 free; next to start, suspending 1 backfilled job for "
                   "it; 1st in queue research");
    /* once 12 is stopping, nothing more is taken: what it frees is enough */
    run2[1].stopping = true;
    decide(&r, 16, 8, run2, 3, wait2, 1, NULL, 0);
    CHECK_INT(r.npreempt, 0);
    /* a non-preemptible job is never suspended, and suspending is pointless if it cannot help */
    run2[0].preemptible = run2[1].preemptible = false;
    run2[1].stopping = false;
    decide(&r, 16, 8, run2, 3, wait2, 1, NULL, 0);
    CHECK_INT(r.npreempt, 0);
}

/* Quotas hold up their own queue only; queue priority comes before job priority and age. */
static void test_queues(void)
{
    struct sched_queue q[] = { { "research", 0, 4 }, { "urgent", 10, -1 } };
    struct sched_job run[] = { running(1, 4, 0) };
    run[0].queue = "research";
    struct sched_job wait[] = { job(10, 1, 2), job(11, 1, 2), job(12, 1, 2) };
    wait[0].queue = "research";
    wait[2].queue = "urgent";
    wait[2].created = S(99); /* youngest, but its queue goes first */
    wait[1].priority = 5;
    struct run r;
    decide(&r, 16, 6, run, 1, wait, 3, q, 2);
    CHECK_INT(r.out[0].why, SCHED_QUOTA);
    CHECK_INT(r.out[0].queue_used, 4);
    CHECK_INT(r.out[0].queue_quota, 4);
    CHECK_INT(r.out[2].why, SCHED_START); /* urgent first: 2 of the 2 free GPUs */
    CHECK_INT(r.out[1].why, SCHED_RESOURCES);
    CHECK(r.out[1].head);
    CHECK_INT(r.out[0].position, 1); /* first of research's waiting jobs */
    char msg[256];
    sched_message(&r.out[0], "research", msg, sizeof(msg));
    CHECK_STR(msg, "waiting for queue research's GPU quota: 4 of 4 in use, it needs 2; 1st in "
                   "queue research");
    CHECK_STR(sched_reason(&r.out[0]), "QueueQuota");
}

/* Unbounded capacity (the Kubernetes executor: the cluster decides) starts everything. */
static void test_unbounded(void)
{
    struct sched_job wait[] = { job(10, 64, 512), job(11, 8, 64) };
    struct run r;
    decide(&r, -1, -1, NULL, 0, wait, 2, NULL, 0);
    CHECK_INT(r.out[0].why, SCHED_START);
    CHECK_INT(r.out[1].why, SCHED_START);
    CHECK(!r.out[1].backfill);
}

/* Slots count too; the message names what is short, and ordinals read as English does. */
static void test_slots_and_ordinals(void)
{
    struct sched_job wait[13];
    for (int i = 0; i < 13; i++)
        wait[i] = job(10 + i, 4, 0);
    struct run r;
    decide(&r, 2, 0, NULL, 0, wait, 13, NULL, 0);
    char msg[256];
    sched_message(&r.out[0], NULL, msg, sizeof(msg));
    CHECK_STR(msg, "waiting for 4 rank slots, 2 free; next to start (jobs behind it cannot delay "
                   "it); 1st in queue default");
    const char *want[] = { "1st", "2nd", "3rd", "4th", "11th", "12th", "13th" };
    int at[] = { 0, 1, 2, 3, 10, 11, 12 };
    for (size_t i = 0; i < 7; i++) {
        sched_message(&r.out[at[i]], NULL, msg, sizeof(msg));
        CHECK(strstr(msg, want[i]) != NULL);
    }
}

int main(void)
{
    test_order_and_head();
    test_backfill_by_deadline();
    test_preemptible_backfill();
    test_queues();
    test_unbounded();
    test_slots_and_ordinals();
    return check_done();
}
