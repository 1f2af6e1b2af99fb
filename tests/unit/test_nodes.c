/*
 * Tests of store/nodes: marking, updating, listing and removing node marks; automatic sources
 * never downgrade an admin's `bad` mark.
 */
#include "check.h"
#include "store/nodes.h"
#include "store_fixture.h"

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
    fixture_close(&f);
    return check_done();
}
