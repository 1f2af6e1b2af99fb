/* test_cli_set: `trainyard submit --set` overrides and spec file parsing (server/cli/cli_set.c). */
#include "server/cli/cli_set.h"
#include "core/jsonx.h"
#include "tests/unit/check.h"

/* Applies sets to the JSON spec text and returns the compact result (static buffer), or the
 * error message prefixed with "error: ". */
static const char *apply(const char *spec, const char *const *sets)
{
    static char out[2048];
    json_t *doc = json_loads(spec, 0, NULL);
    struct err err;
    err_init(&err);
    for (size_t i = 0; sets[i] && !err_is_set(&err); i++)
        cli_set_apply(doc, sets[i], &err);
    if (err_is_set(&err)) {
        snprintf(out, sizeof(out), "error: %s", err.msg);
    } else {
        char *s = jsonx_dumps(doc);
        snprintf(out, sizeof(out), "%s", s);
        free(s);
    }
    err_release(&err);
    json_decref(doc);
    return out;
}

#define SETS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void typed_values(void)
{
    /* The examples of the brief: numbers where the spec wants numbers, strings where it wants
     * strings, even when the text looks like a number. */
    CHECK_STR(
        apply("{\"name\":\"a\"}", SETS("nodes=2", "env.LR=3e-4", "labels.team=nlp")),
        "{\"name\":\"a\",\"nodes\":2,\"env\":{\"LR\":\"3e-4\"},\"labels\":{\"team\":\"nlp\"}}");
    CHECK_STR(apply("{}", SETS("suspend=true", "priority=-3", "resources.cpu=1.5")),
              "{\"suspend\":true,\"priority\":-3,\"resources\":{\"cpu\":1.5}}");
    CHECK_STR(apply("{}", SETS("labels.version=2", "env.N=007", "name=123", "queue=true")),
              "{\"labels\":{\"version\":\"2\"},\"env\":{\"N\":\"007\"},\"name\":\"123\","
              "\"queue\":\"true\"}");
    CHECK_STR(apply("{}", SETS("resources.memory=64Gi", "restart.policy=on_failure",
                               "restart.max_restarts=3")),
              "{\"resources\":{\"memory\":\"64Gi\"},\"restart\":{\"policy\":\"on_failure\","
              "\"max_restarts\":3}}");
    /* Words that only look special stay strings; inf/nan/hex are not numbers. */
    CHECK_STR(apply("{}", SETS("a=inf", "b=0x10", "c=nan", "d=1e5", "e=null", "f=")),
              "{\"a\":\"inf\",\"b\":\"0x10\",\"c\":\"nan\",\"d\":100000.0,\"e\":null,\"f\":\"\"}");
    /* A string already in the document keeps the value a string. */
    CHECK_STR(apply("{\"x\":{\"y\":\"old\"}}", SETS("x.y=42")), "{\"x\":{\"y\":\"42\"}}");
    /* JSON values are taken as such: arrays, objects, quoted strings. */
    CHECK_STR(apply("{}", SETS("command=[\"python\",\"train.py\"]", "placement={\"zone\":\"z1\"}",
                               "deadline_seconds=\"60\"")),
              "{\"command\":[\"python\",\"train.py\"],\"placement\":{\"zone\":\"z1\"},"
              "\"deadline_seconds\":\"60\"}");
    /* Something that only starts like JSON is a string. */
    CHECK_STR(apply("{}", SETS("labels.x=[oops")), "{\"labels\":{\"x\":\"[oops\"}}");
    /* The value may hold '=' and dots. */
    CHECK_STR(apply("{}", SETS("env.OPTS=a=b.c")), "{\"env\":{\"OPTS\":\"a=b.c\"}}");
}

static void paths(void)
{
    /* Array elements by index; the index equal to the length appends. */
    CHECK_STR(apply("{\"args\":[\"--lr\",\"1\"]}", SETS("args.1=2", "args.2=--bf16")),
              "{\"args\":[\"--lr\",\"2\",\"--bf16\"]}");
    CHECK_STR(apply("{\"args\":[\"a\"]}", SETS("args.5=x")),
              "error: --set args.5=x: 5 is past the end of the array (1)");
    /* Escaped dots stay in the key. */
    CHECK_STR(apply("{}", SETS("labels.app\\.kubernetes\\.io/name=x")),
              "{\"labels\":{\"app.kubernetes.io/name\":\"x\"}}");
    /* Deep paths are created; existing siblings stay. */
    CHECK_STR(apply("{\"kubernetes\":{\"kind\":\"TrainJob\"}}",
                    SETS("kubernetes.node_selector.pool=gpu", "kubernetes.elastic.max_nodes=4")),
              "{\"kubernetes\":{\"kind\":\"TrainJob\",\"node_selector\":{\"pool\":\"gpu\"},"
              "\"elastic\":{\"max_nodes\":4}}}");
    /* Replacing a whole value. */
    CHECK_STR(apply("{\"env\":{\"A\":\"1\"}}", SETS("env={}")), "{\"env\":{}}");
}

static void errors(void)
{
    CHECK_STR(apply("{}", SETS("nodes")), "error: --set nodes: expected path=value");
    CHECK_STR(apply("{}", SETS("=3")), "error: --set =3: empty name in the path");
    CHECK_STR(apply("{}", SETS("env..X=3")), "error: --set env..X=3: empty name in the path");
    CHECK_STR(apply("{}", SETS("labels.=3")), "error: --set labels.=3: empty name in the path");
    CHECK_STR(apply("{\"name\":\"a\"}", SETS("name.first=x")),
              "error: --set name.first=x: name is a string, not an object");
    CHECK_STR(apply("{\"nodes\":2}", SETS("nodes.x.y=1")),
              "error: --set nodes.x.y=1: nodes is an integer, not an object");
    /* A failure leaves the document as it was, created parents included. */
    json_t *doc = json_loads("{\"name\":\"a\"}", 0, NULL);
    struct err err;
    err_init(&err);
    CHECK_INT(cli_set_apply(doc, "placement.zone.x.y=1", &err), 0);
    CHECK_INT(cli_set_apply(doc, "resources.gpus.extra.deep=1", &err) == 0, 1);
    err_release(&err);
    err_init(&err);
    CHECK_INT(cli_set_apply(doc, "labels.a.b=1", &err), 0);
    CHECK_INT(cli_set_apply(doc, "labels.a.b.c=1", &err), -1);
    err_release(&err);
    char *s = jsonx_dumps(doc);
    CHECK(strstr(s, "\"labels\":{\"a\":{\"b\":1}}") != NULL);
    free(s);
    json_decref(doc);
}

static void spec_files(void)
{
    struct err err;
    err_init(&err);
    json_t *a = cli_spec_parse("job.yaml", "name: x\nnodes: 2\n", 16, &err);
    CHECK(a && json_integer_value(json_object_get(a, "nodes")) == 2);
    json_decref(a);
    /* No extension: '{' means JSON, anything else YAML. */
    a = cli_spec_parse("-", " {\"name\":\"x\"}", 13, &err);
    CHECK(a && json_is_object(a));
    json_decref(a);
    a = cli_spec_parse("spec", "name: y\n", 8, &err);
    CHECK_STR(a ? jsonx_str(a, "name") : "", "y");
    json_decref(a);
    /* JSON errors name the file and the position; YAML files parse YAML flow as well. */
    a = cli_spec_parse("job.json", "{\"name\":", 8, &err);
    CHECK(!a && strncmp(err.msg, "job.json: ", 10) == 0);
    err_release(&err);
    err_init(&err);
    a = cli_spec_parse("job.yml", "name: [x\n", 9, &err);
    CHECK(!a && strstr(err.msg, "job.yml") && strstr(err.msg, "line"));
    err_release(&err);
    err_init(&err);
    a = cli_spec_parse("job.yaml", "- a\n- b\n", 8, &err);
    CHECK(!a && strstr(err.msg, "not a list"));
    err_release(&err);
    err_init(&err);
    a = cli_spec_load("/nonexistent/job.yaml", &err);
    CHECK(!a && err.code == ERR_IO && strstr(err.msg, "/nonexistent/job.yaml"));
    err_release(&err);
}

int main(void)
{
    typed_values();
    paths();
    errors();
    spec_files();
    return check_done();
}
