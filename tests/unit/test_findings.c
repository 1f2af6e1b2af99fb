/*
 * Tests of store/findings: a real diagnosis (server/diag) saved and read back; saving again
 * (also a partial diagnosis, as after a daemon restart) updates instead of losing or
 * duplicating findings; NULL members keep what is stored; attempts; findings by node; deleting
 * the job deletes its diagnosis.
 */
#include "check.h"
#include "core/jsonx.h"
#include "server/diag/diag.h"
#include "store/findings.h"
#include "store_fixture.h"

static const int64_t T0 = 1714564800LL * NS_PER_SEC; /* 2024-05-01T12:00:00Z */

static void feed(struct diag *d, int rank, int64_t seq, int64_t t, const char *text)
{
    struct diag_line l = {
        .rank = rank, .seq = seq, .time_ns = t, .text = text, .len = strlen(text)
    };
    diag_feed(d, &l, NULL, 0);
}

/* Rank 1 runs out of GPU memory; rank 0 then times out in NCCL. */
static struct diag *cascade(bool with_nccl)
{
    struct diag *d = diag_new(NULL);
    diag_rank_info(d, 0, NULL, "node-a");
    diag_rank_info(d, 1, NULL, "node-b");
    feed(d, 1, 10, T0 + NS_PER_SEC,
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
         "total capacity of 79.11 GiB");
    if (with_nccl)
        feed(d, 0, 11, T0 + 30 * NS_PER_SEC,
             "[rank0]:[E501 12:10:01.123456 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
             "collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, "
             "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before "
             "timing out.");
    return d;
}

static json_t *get(struct store *st, int64_t pk, int attempt)
{
    struct err err;
    err_init(&err);
    json_t *o = store_diag_get(st, pk, attempt, &err);
    if (!o)
        fprintf(stderr, "get: %s\n", err.msg);
    err_release(&err);
    return o;
}

static void test_save_and_get(struct store *st, int64_t pk)
{
    struct diag *d = cascade(true);
    json_t *doc = diag_json(d);
    json_t *progress = json_pack("{s:i,s:i}", "step", 120, "total_steps", 1000);
    struct diag_save s = {
        .job_pk = pk, .attempt = 0, .diagnosis = doc, .progress = progress, .stalled = 0
    };
    struct err err;
    err_init(&err);
    CHECK_INT(store_diag_save(st, &s, true, &err), 0);
    json_t *o = get(st, pk, 0);
    CHECK(o != NULL);
    CHECK_STR(jsonx_str(json_object_get(o, "summary"), "cause"), "cuda_oom");
    CHECK_INT(jsonx_int(json_object_get(o, "summary"), "rank", -9), 1);
    json_t *f = json_object_get(o, "findings");
    CHECK_INT(json_array_size(f), json_array_size(json_object_get(doc, "findings")));
    CHECK_STR(jsonx_str(json_array_get(f, 0), "kind"), "cuda_oom"); /* time order */
    CHECK_STR(jsonx_str(json_array_get(f, 1), "kind"), "nccl_timeout");
    CHECK_INT(jsonx_int(json_object_get(o, "progress"), "step", 0), 120);
    CHECK(json_is_false(json_object_get(o, "stalled")));
    CHECK(json_is_null(json_object_get(o, "decision")));
    json_decref(o);
    json_decref(progress);
    json_decref(doc);
    diag_free(d);

    /* A partial diagnosis (the NCCL line only was seen again) must not lose the OOM. */
    d = cascade(false);
    doc = diag_json(d);
    struct diag_save again = { .job_pk = pk, .attempt = 0, .diagnosis = doc, .stalled = -1 };
    CHECK_INT(store_diag_save(st, &again, true, &err), 0);
    o = get(st, pk, 0);
    CHECK_INT(json_array_size(json_object_get(o, "findings")), 2);
    CHECK_INT(jsonx_int(json_object_get(o, "progress"), "step", 0), 120); /* kept */
    json_decref(o);
    json_decref(doc);
    diag_free(d);
    err_release(&err);
}

static void test_keep_and_attempts(struct store *st, int64_t pk)
{
    json_t *stall = json_pack("{s:b,s:f}", "stalled", 1, "idle_seconds", 400.0);
    json_t *decision = json_pack("{s:b,s:s}", "restart", 1, "category", "nccl");
    struct diag_save s = {
        .job_pk = pk, .attempt = 0, .stalled = 1, .stall = stall, .decision = decision
    };
    CHECK_INT(store_diag_save(st, &s, true, NULL), 0);
    json_t *o = get(st, pk, -1);
    CHECK_STR(jsonx_str(json_object_get(o, "summary"), "cause"), "cuda_oom"); /* kept */
    CHECK(json_is_true(json_object_get(o, "stalled")));
    CHECK_STR(jsonx_str(json_object_get(o, "decision"), "category"), "nccl");
    json_decref(o);
    /* Attempt 1: nothing went wrong. The latest is attempt 1; attempt 0 keeps its findings. */
    struct diag *d = diag_new(NULL);
    json_t *doc = diag_json(d);
    struct diag_save s1 = { .job_pk = pk, .attempt = 1, .diagnosis = doc, .stalled = 0 };
    CHECK_INT(store_diag_save(st, &s1, false, NULL), 0);
    struct diag_save sync = { .job_pk = pk, .attempt = 1, .stalled = -1 };
    store_diag_save(st, &sync, true, NULL); /* the writer runs in order */
    o = get(st, pk, -1);
    CHECK_INT(jsonx_int(o, "attempt", -1), 1);
    CHECK(json_is_null(json_object_get(o, "summary")));
    CHECK_INT(json_array_size(json_object_get(o, "findings")), 0);
    json_decref(o);
    o = get(st, pk, 0);
    CHECK_INT(json_array_size(json_object_get(o, "findings")), 2);
    json_decref(o);
    json_t *att = store_diag_attempts(st, pk, NULL);
    CHECK_INT(json_array_size(att), 2);
    CHECK_STR(jsonx_str(json_object_get(json_array_get(att, 0), "decision"), "category"), "nccl");
    json_decref(att);
    json_t *progress = NULL;
    bool stalled = true;
    CHECK_INT(store_diag_progress(st, pk, &progress, &stalled, NULL), 0);
    CHECK(progress == NULL); /* attempt 1 has none */
    CHECK(!stalled);
    json_decref(doc);
    diag_free(d);
    json_decref(stall);
    json_decref(decision);
}

static void test_node_and_missing(struct store *st, int64_t pk)
{
    json_t *on = store_findings_on_node(st, "node-b", 0, 10, NULL);
    CHECK_INT(json_array_size(on), 1);
    CHECK_STR(jsonx_str(json_array_get(on, 0), "kind"), "cuda_oom");
    CHECK_STR(jsonx_str(json_array_get(on, 0), "job_id"), "job-findings");
    json_decref(on);
    on = store_findings_on_node(st, "node-a", 0, 10, NULL); /* consequences are not counted */
    CHECK_INT(json_array_size(on), 0);
    json_decref(on);
    struct err err;
    err_init(&err);
    CHECK(store_diag_get(st, pk + 1000, -1, &err) == NULL);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    err_release(&err);
    err_init(&err);
    CHECK(store_diag_get(st, pk, 7, &err) == NULL);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    err_release(&err);
}

static void test_delete_cascades(struct store *st, int64_t pk)
{
    struct job_update u = { .pk = pk, .set_state = true, .state = JOB_CANCELLED };
    CHECK_INT(store_job_update(st, &u, NULL), 0);
    CHECK_INT(store_job_delete(st, pk, NULL), 0);
    struct err err;
    err_init(&err);
    CHECK(store_diag_get(st, pk, -1, &err) == NULL);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    err_release(&err);
    json_t *on = store_findings_on_node(st, "node-b", 0, 10, NULL);
    CHECK_INT(json_array_size(on), 0);
    json_decref(on);
}

int main(void)
{
    struct fixture f;
    struct store *st = fixture_open(&f);
    CHECK(st != NULL);
    if (!st)
        return check_done();
    int64_t pk = fixture_job(st, "job-findings");
    CHECK(pk > 0);
    test_save_and_get(st, pk);
    test_keep_and_attempts(st, pk);
    test_node_and_missing(st, pk);
    test_delete_cascades(st, pk);
    fixture_close(&f);
    return check_done();
}
