/* Unit tests of the label and field selector parser and matcher (tests/kube/selector.c). */
#include "tests/kube/selector.h"
#include "tests/unit/check.h"

static bool labels_match(const char *sel, const char *labels_json)
{
    struct selector s;
    selector_init(&s);
    struct err err;
    err_init(&err);
    json_t *labels = json_loads(labels_json, 0, NULL);
    bool ok = selector_parse_labels(&s, sel, &err) == 0 && selector_match_labels(&s, labels);
    json_decref(labels);
    selector_release(&s);
    err_release(&err);
    return ok;
}

static const char *parse_error(const char *sel)
{
    static char msg[ERR_MSG_MAX];
    struct selector s;
    selector_init(&s);
    struct err err;
    err_init(&err);
    msg[0] = '\0';
    if (selector_parse_labels(&s, sel, &err) < 0)
        snprintf(msg, sizeof(msg), "%s", err.msg);
    selector_release(&s);
    err_release(&err);
    return msg;
}

static void test_label_operators(void)
{
    const char *l = "{\"training.kubeflow.org/job-name\":\"mnist\","
                    "\"training.kubeflow.org/replica-type\":\"worker\",\"rank\":\"3\"}";
    CHECK(labels_match("", l));
    CHECK(labels_match("training.kubeflow.org/job-name=mnist", l));
    CHECK(labels_match("training.kubeflow.org/job-name==mnist", l));
    CHECK(!labels_match("training.kubeflow.org/job-name=other", l));
    CHECK(labels_match("training.kubeflow.org/job-name!=other", l));
    CHECK(labels_match("missing!=x", l)); /* != matches an absent label */
    CHECK(labels_match("training.kubeflow.org/replica-type in (master, worker)", l));
    CHECK(!labels_match("training.kubeflow.org/replica-type in (master)", l));
    CHECK(labels_match("training.kubeflow.org/replica-type notin (master)", l));
    CHECK(labels_match("missing notin (master)", l));
    CHECK(labels_match("rank", l));
    CHECK(!labels_match("!rank", l));
    CHECK(labels_match("!missing", l));
    CHECK(labels_match("rank>2,rank<4", l));
    CHECK(!labels_match("rank>3", l));
    CHECK(labels_match(" training.kubeflow.org/job-name = mnist , rank ", l));
    CHECK(!labels_match("training.kubeflow.org/job-name=mnist,!rank", l));
    CHECK(labels_match("missing=", l) == false);
    CHECK(labels_match("empty=", "{\"empty\":\"\"}"));
}

static void test_label_errors(void)
{
    CHECK_STR(parse_error("a in b"), "unable to parse requirement: found 'b', expected: '('");
    CHECK(parse_error("a,")[0] != '\0');
    CHECK(parse_error("=a")[0] != '\0');
    CHECK(parse_error("a in (b")[0] != '\0');
    CHECK(parse_error("a>b")[0] != '\0');
    CHECK_STR(parse_error("a in (b,c),d notin (e)"), "");
}

static bool fields_match(const char *sel, const char *obj_json)
{
    struct selector s;
    selector_init(&s);
    json_t *obj = json_loads(obj_json, 0, NULL);
    bool ok = selector_parse_fields(&s, sel, NULL) == 0 && selector_match_fields(&s, obj);
    json_decref(obj);
    selector_release(&s);
    return ok;
}

static void test_fields(void)
{
    const char *pod = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"
                      "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}";
    CHECK(fields_match("metadata.name=p,status.phase=Running", pod));
    CHECK(fields_match("spec.nodeName==n1", pod));
    CHECK(!fields_match("status.phase!=Running", pod));
    CHECK(fields_match("spec.nodeName=", "{\"spec\":{}}")); /* unscheduled */
    CHECK(fields_match("spec.unschedulable=false", "{\"spec\":{}}"));
    const char *ev = "{\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"a,b\"},"
                     "\"source\":{\"component\":\"kubelet\"}}";
    CHECK(fields_match("involvedObject.kind=Pod,involvedObject.name=a\\,b", ev));
    CHECK(fields_match("source=kubelet", ev));
    struct selector s;
    selector_init(&s);
    CHECK(selector_parse_fields(&s, "spec.nodeName=x,status.phase=y", NULL) == 0);
    CHECK(selector_fields_allowed(&s, "spec.nodeName status.phase") == NULL);
    CHECK_STR(selector_fields_allowed(&s, "spec.nodeName"), "status.phase");
    selector_release(&s);
    CHECK(selector_parse_fields(&s, "nooperator", NULL) < 0);
}

int main(void)
{
    test_label_operators();
    test_label_errors();
    test_fields();
    return check_done();
}
