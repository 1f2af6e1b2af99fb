/*
 * Tests of store_snapshot_begin/end: the reads between them see one snapshot (a job committed
 * meanwhile is not there, then is once the snapshot ends), snapshots nest, and the thread's
 * next reads after the outermost end are current again. A snapshot left open would serve stale
 * jobs to every later request on that HTTP thread: these cases fail if end does not end it.
 */
#include "check.h"
#include "store_fixture.h"

static bool job_seen(struct store *st, const char *id)
{
    struct err err;
    err_init(&err);
    struct job *j = store_job_get(st, id, &err);
    bool seen = j != NULL;
    job_free(j);
    err_release(&err);
    return seen;
}

static void test_one_snapshot(struct store *st)
{
    struct err err;
    err_init(&err);
    CHECK(job_seen(st, "a00000000001"));
    CHECK_INT(store_snapshot_begin(st, &err), 0);
    CHECK(job_seen(st, "a00000000001")); /* the snapshot starts at the first read */
    CHECK(fixture_job(st, "a00000000002") > 0);
    CHECK(!job_seen(st, "a00000000002"));         /* committed after the snapshot began */
    CHECK_INT(store_snapshot_begin(st, &err), 0); /* nested: the same snapshot */
    CHECK(!job_seen(st, "a00000000002"));
    store_snapshot_end(st);
    CHECK(!job_seen(st, "a00000000002")); /* still inside the outer one */
    store_snapshot_end(st);
    CHECK(job_seen(st, "a00000000002"));
    CHECK(fixture_job(st, "a00000000003") > 0);
    CHECK(job_seen(st, "a00000000003")); /* no snapshot: every read is current */
    store_snapshot_end(st);              /* an end without a begin changes nothing */
    CHECK(fixture_job(st, "a00000000004") > 0);
    CHECK(job_seen(st, "a00000000004"));
    err_release(&err);
}

int main(void)
{
    struct fixture f;
    struct store *st = fixture_open(&f);
    CHECK(st != NULL);
    if (!st)
        return check_done();
    CHECK(fixture_job(st, "a00000000001") > 0);
    test_one_snapshot(st);
    fixture_close(&f);
    return check_done();
}
