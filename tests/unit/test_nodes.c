/*
 * Tests of store/nodes: marking, updating, listing and removing node marks; automatic sources
 * never downgrade an admin's `bad` mark; a job's own evidence marks a node only when it is an
 * admin's job or jobs of several owners agree.
 */
#include "check.h"
#include "store/nodes.h"
#include "store/tokens.h"
#include "store_fixture.h"

static int evidence(struct store *st, const char *node, const char *job, const char *owner_id,
                    const char *owner, int64_t now, bool *marked)
{
    struct node_evidence e = { .node = node,
                               .job_id = job,
                               .owner_id = owner_id,
                               .owner = owner,
                               .reason = "GPUXidError",
                               .message = "Xid 79",
                               .source = "diagnosis",
                               .now = now };
    return store_node_evidence(st, &e, marked, NULL);
}

static bool has_mark(struct store *st, const char *node, const char *source)
{
    struct node_mark *m = store_node_mark_get(st, node, NULL);
    bool ok = m && strcmp(m->state, "suspect") == 0 && strcmp(m->source, source) == 0;
    node_mark_free(m);
    return ok;
}

/* Issue 17: a job printing a fake "NVRM: Xid 79" line got its node marked, and every later job
 * there reported failing. One submitter's jobs, however many, are one owner's word. */
static void test_evidence(struct store *st)
{
    struct token_new admin = { .id = "tok_admin", .name = "root", .hash = "h1", .scope = "admin" };
    struct token_new ci = { .id = "tok_ci", .name = "ci", .hash = "h2", .scope = "submit" };
    CHECK_INT(store_token_insert(st, &admin, NULL), 0);
    CHECK_INT(store_token_insert(st, &ci, NULL), 0);
    int64_t t0 = 1000 * NODE_EVIDENCE_WINDOW_NS;
    bool marked = true;
    CHECK_INT(evidence(st, "n1", "job1", "tok_ci", "ci", t0, &marked), 0);
    CHECK(!marked);
    CHECK(store_node_mark_get(st, "n1", NULL) == NULL);
    CHECK_INT(evidence(st, "n1", "job2", "tok_ci", "ci", t0 + 1, &marked), 0);
    CHECK(!marked);
    CHECK(store_node_mark_get(st, "n1", NULL) == NULL);
    /* A second owner (a trigger's jobs are the trigger's) agrees: the node is marked. */
    CHECK_INT(evidence(st, "n1", "job3", "", "trigger/uploads", t0 + 2, &marked), 0);
    CHECK(marked);
    CHECK(has_mark(st, "n1", "evidence"));
    struct node_mark *m = store_node_mark_get(st, "n1", NULL);
    CHECK(m && strstr(m->message, "job1") && strstr(m->message, "job3"));
    node_mark_free(m);
    /* Evidence older than the window does not count. */
    CHECK_INT(evidence(st, "n2", "job4", "tok_ci", "ci", t0, &marked), 0);
    CHECK_INT(
        evidence(st, "n2", "job5", "tok_other", "other", t0 + NODE_EVIDENCE_WINDOW_NS + 1, &marked),
        0);
    CHECK(!marked);
    CHECK(store_node_mark_get(st, "n2", NULL) == NULL);
    /* An admin's job (or any job while auth was off) is the admin's word. */
    CHECK_INT(evidence(st, "n3", "job6", "tok_admin", "root", t0, &marked), 0);
    CHECK(marked);
    CHECK(has_mark(st, "n3", "diagnosis"));
    CHECK_INT(evidence(st, "n4", "job7", "", "anonymous", t0, &marked), 0);
    CHECK(has_mark(st, "n4", "diagnosis"));
    /* A mark already there is kept as it is. */
    CHECK_INT(evidence(st, "n3", "job8", "tok_admin", "root", t0, &marked), 0);
    CHECK(!marked);
}

int main(void)
{
    struct fixture f;
    struct store *st = fixture_open(&f);
    CHECK(st != NULL);
    if (!st)
        return check_done();
    struct node_mark_new a = { .name = "ip-10-0-1-7",
                               .state = "suspect",
                               .reason = "GPUXidError",
                               .message = "Xid 79 on GPU 3",
                               .source = "diagnosis",
                               .job_id = "abc" };
    CHECK_INT(store_node_mark(st, &a, NULL), 0);
    struct node_mark *m = store_node_mark_get(st, "ip-10-0-1-7", NULL);
    CHECK(m != NULL);
    if (m) {
        CHECK_STR(m->state, "suspect");
        CHECK_STR(m->reason, "GPUXidError");
        CHECK_STR(m->job_id, "abc");
        CHECK(m->created_at > 0 && m->updated_at == m->created_at);
    }
    node_mark_free(m);
    struct node_mark_new bad = { .name = "ip-10-0-1-7",
                                 .state = "bad",
                                 .reason = "Replace",
                                 .source = "admin",
                                 .created_by = "admin" };
    CHECK_INT(store_node_mark(st, &bad, NULL), 0);
    struct node_mark_new again = { .name = "ip-10-0-1-7",
                                   .state = "suspect",
                                   .reason = "PreflightFailed",
                                   .source = "preflight" };
    CHECK_INT(store_node_mark(st, &again, NULL), 0);
    m = store_node_mark_get(st, "ip-10-0-1-7", NULL);
    CHECK_STR(m ? m->state : NULL, "bad"); /* not downgraded */
    CHECK_STR(m ? m->reason : NULL, "PreflightFailed");
    node_mark_free(m);
    struct node_mark_new other = {
        .name = "ip-10-0-1-5", .state = "suspect", .reason = "x", .source = "preflight"
    };
    CHECK_INT(store_node_mark(st, &other, NULL), 0);
    struct node_mark **list = NULL;
    size_t n = 0;
    CHECK_INT(store_node_marks_list(st, &list, &n, NULL), 0);
    CHECK_INT(n, 2);
    CHECK_STR(n ? list[0]->name : NULL, "ip-10-0-1-5");
    node_marks_free(list, n);
    CHECK_INT(store_node_unmark(st, "ip-10-0-1-5", NULL), 0);
    struct err err;
    err_init(&err);
    CHECK_INT(store_node_unmark(st, "ip-10-0-1-5", &err), -1);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    err_release(&err);
    err_init(&err);
    CHECK(store_node_mark_get(st, "nowhere", &err) == NULL);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    err_release(&err);
    test_evidence(st);
    fixture_close(&f);
    return check_done();
}
