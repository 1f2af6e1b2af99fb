/*
 * Tests of job templates (trigger/jobtemplate.c): save-time validation, substitution of
 * built-ins and user variables, and injection attempts through object keys.
 */
#include "tests/unit/check.h"

#include "core/jsonx.h"
#include "trigger/jobtemplate.h"

static json_t *load(const char *text)
{
    struct err err;
    err_init(&err);
    json_t *v = jsonx_loadb(text, strlen(text), 32, &err);
    if (!v)
        fprintf(stderr, "bad test JSON: %s\n", err.msg);
    err_release(&err);
    return v;
}

static struct s3event event(const char *bucket, const char *key)
{
    struct s3event e = { .bucket = (char *)bucket,
                         .key = (char *)key,
                         .size = 73400320,
                         .etag = (char *)"9b2c",
                         .version_id = (char *)"v1",
                         .sequencer = (char *)"0A",
                         .event_name = (char *)"ObjectCreated:Put",
                         .event_time = (char *)"2024-05-01T10:20:30.123Z" };
    return e;
}

/* Validates text; returns the number of field problems (0 when valid) and the first pointer. */
static size_t problems(const char *text, char *first, size_t len)
{
    struct err err;
    err_init(&err);
    json_t *t = load(text);
    int rc = jobtemplate_validate(t, &err);
    size_t n = err.nfields;
    if (first)
        snprintf(first, len, "%s", n ? err.fields[0].pointer : "");
    if (rc == 0 && n)
        n = 1000; /* must not happen: problems but success */
    if (rc < 0 && n == 0)
        n = 999;
    json_decref(t);
    err_release(&err);
    return n;
}

static const char *const good_template =
    "{\"name\": \"retrain-${S3_BUCKET}\","
    " \"command\": [\"python\", \"train.py\"],"
    " \"args\": [\"--data\", \"${S3_URI}\", \"--lr\", \"${LR:-0.001}\", \"--size\", "
    "\"${OBJECT_SIZE}\","
    "          \"--price=$$5\", \"$HOME\"],"
    " \"env\": {\"EPOCHS\": \"${EPOCHS}\", \"KEY\": \"${S3_KEY}\", \"AT\": \"${EVENT_TIME}\"},"
    " \"labels\": {\"dataset\": \"${S3_BUCKET}\", \"key\": \"${S3_KEY}\"},"
    " \"image\": \"registry/train:1\","
    " \"resources\": {\"gpus\": 8},"
    " \"variables\": {\"EPOCHS\": {\"default\": \"10\", \"description\": \"passes\"},"
    "                 \"DATASET\": null}}";

static void test_validate(void)
{
    char first[128];
    CHECK_INT(problems(good_template, first, sizeof(first)), 0);
    /* Unknown variable. */
    CHECK_INT(problems("{\"name\": \"a\", \"args\": [\"${NOPE}\"]}", first, sizeof(first)), 1);
    CHECK_STR(first, "/args/0");
    /* Substitution outside the allowed places. */
    CHECK_INT(problems("{\"name\": \"a\", \"image\": \"repo/${S3_BUCKET}\"}", first, sizeof(first)),
              1);
    CHECK_STR(first, "/image");
    CHECK_INT(
        problems("{\"name\": \"a\", \"resources\": {\"gpus\": \"${N:-1}\"}}", first, sizeof(first)),
        1);
    /* Keys are never substituted. */
    CHECK_INT(problems("{\"name\": \"a\", \"env\": {\"${S3_KEY}\": \"x\"}}", first, sizeof(first)),
              1);
    CHECK_STR(first, "/env/${S3_KEY}");
    CHECK_INT(problems("{\"name\": \"a\", \"labels\": {\"k/${X:-a}\": \"x\"}}", NULL, 0), 1);
    /* Malformed references. */
    CHECK_INT(problems("{\"name\": \"a\", \"args\": [\"${S3_KEY\"]}", NULL, 0), 1);
    CHECK_INT(problems("{\"name\": \"a\", \"args\": [\"${1X}\"]}", NULL, 0), 1);
    CHECK_INT(problems("{\"name\": \"a\", \"args\": [\"$${S3_KEY}\"]}", NULL, 0), 0);
    /* Names that can never be DNS-1035. */
    CHECK_INT(problems("{\"name\": \"Train-${S3_BUCKET}\"}", first, sizeof(first)), 1);
    CHECK_STR(first, "/name");
    CHECK_INT(problems("{\"name\": \"train_${S3_BUCKET}\"}", NULL, 0), 1);
    CHECK_INT(problems("{\"name\": \"1-${S3_BUCKET}\"}", NULL, 0), 1);
    CHECK_INT(problems("{\"name\": \"${S3_BUCKET}-\"}", NULL, 0), 1);
    CHECK_INT(problems("{\"name\": \"train\\\"${S3_BUCKET}\"}", NULL, 0), 1);
    CHECK_INT(problems("{\"name\": \"a-very-long-name-that-is-clearly-longer-than-sixty-three-"
                       "characters-${S3_BUCKET}\"}",
                       NULL, 0),
              1);
    CHECK_INT(problems("{\"name\": \"Bad_Name\"}", NULL, 0), 1);
    CHECK_INT(problems("{\"name\": \"${S3_BUCKET}\"}", NULL, 0), 0);
    /* Label values: fixed text must be label characters. */
    CHECK_INT(problems("{\"name\": \"a\", \"labels\": {\"k\": \"a b ${S3_KEY}\"}}", NULL, 0), 1);
    /* Shell scripts: no substitution, use env. */
    CHECK_INT(problems("{\"name\": \"a\", \"command\": [\"sh\", \"-c\", \"train ${S3_KEY}\"]}",
                       first, sizeof(first)),
              1);
    CHECK_STR(first, "/command/2");
    CHECK_INT(problems("{\"name\": \"a\", \"command\": [\"/bin/bash\", \"-euc\"],"
                       " \"args\": [\"train ${S3_URI}\"]}",
                       first, sizeof(first)),
              1);
    CHECK_STR(first, "/args/0");
    CHECK_INT(problems("{\"name\": \"a\", \"command\": \"python train.py ${S3_URI}\"}", NULL, 0),
              1);
    CHECK_INT(
        problems("{\"name\": \"a\", \"command\": [\"python3\", \"-c\", \"print('${S3_KEY}')\"]}",
                 NULL, 0),
        1);
    /* Shell variables of the script's own are left to the shell. */
    CHECK_INT(
        problems(
            "{\"name\": \"a\", \"command\": [\"sh\", \"-c\", \"echo ${HOME} \\\"$S3_KEY\\\"\"],"
            " \"env\": {\"S3_KEY\": \"${S3_KEY}\"}}",
            NULL, 0),
        0);
    /* The variables block. */
    CHECK_INT(
        problems("{\"name\": \"a\", \"variables\": {\"S3_KEY\": \"x\"}}", first, sizeof(first)), 1);
    CHECK_STR(first, "/variables/S3_KEY");
    CHECK_INT(problems("{\"name\": \"a\", \"variables\": {\"bad-name\": \"x\", \"N\": 3,"
                       " \"M\": {\"default\": \"1\", \"color\": \"red\"}}}",
                       NULL, 0),
              3);
    CHECK_INT(problems("{\"name\": \"a\", \"variables\": []}", NULL, 0), 1);
    CHECK_INT(problems("[1]", first, sizeof(first)), 1);
    CHECK_STR(first, "/");
}

static void test_render(void)
{
    struct jobtemplate_values vals;
    struct err err;
    jobtemplate_values_init(&vals);
    err_init(&err);
    struct s3event e = event("My.Datasets", "incoming/run 42/data=v2.tar");
    jobtemplate_values_from_event(&vals, &e);
    jobtemplate_values_set(&vals, "DATASET", "imagenet");
    json_t *t = load(good_template);
    json_t *spec = jobtemplate_render(t, &vals, &err);
    CHECK(spec != NULL);
    if (!spec) {
        fprintf(stderr, "render: %s (%s)\n", err.msg, err.nfields ? err.fields[0].message : "");
        goto out;
    }
    CHECK_STR(jsonx_str(spec, "name"), "retrain-my-datasets");
    json_t *args = json_object_get(spec, "args");
    CHECK_STR(json_string_value(json_array_get(args, 1)),
              "s3://My.Datasets/incoming/run 42/data=v2.tar");
    CHECK_STR(json_string_value(json_array_get(args, 3)), "0.001");
    CHECK_STR(json_string_value(json_array_get(args, 5)), "73400320");
    CHECK_STR(json_string_value(json_array_get(args, 6)), "--price=$5");
    CHECK_STR(json_string_value(json_array_get(args, 7)), "$HOME");
    json_t *env = json_object_get(spec, "env");
    CHECK_STR(jsonx_str(env, "EPOCHS"), "10");
    CHECK_STR(jsonx_str(env, "KEY"), "incoming/run 42/data=v2.tar");
    CHECK_STR(jsonx_str(env, "AT"), "2024-05-01T10:20:30.123Z");
    json_t *labels = json_object_get(spec, "labels");
    CHECK_STR(jsonx_str(labels, "dataset"), "My.Datasets");
    CHECK_STR(jsonx_str(labels, "key"), "incoming-run-42-data-v2.tar");
    CHECK(json_object_get(spec, "variables") == NULL);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(spec, "resources"), "gpus")), 8);
    CHECK_STR(jsonx_str(spec, "image"), "registry/train:1");
    json_decref(spec);

    /* User values win over declared defaults; inline defaults when nothing else. */
    jobtemplate_values_set(&vals, "EPOCHS", "3");
    jobtemplate_values_set(&vals, "LR", "0.1");
    spec = jobtemplate_render(t, &vals, &err);
    CHECK_STR(jsonx_str(json_object_get(spec, "env"), "EPOCHS"), "3");
    CHECK_STR(json_string_value(json_array_get(json_object_get(spec, "args"), 3)), "0.1");
    json_decref(spec);

    /* A value for a variable the template does not have is a typo. */
    jobtemplate_values_set(&vals, "EPOHCS", "3");
    spec = jobtemplate_render(t, &vals, &err);
    CHECK(spec == NULL);
    CHECK_STR(err.nfields ? err.fields[0].pointer : "", "/values/EPOHCS");
    err_release(&err);
out:
    json_decref(t);
    jobtemplate_values_release(&vals);
    err_release(&err);
}

static void test_missing_values(void)
{
    struct jobtemplate_values vals;
    struct err err;
    jobtemplate_values_init(&vals);
    err_init(&err);
    /* A manual submit: no event, so S3_KEY has no value and no default. */
    json_t *t = load("{\"name\": \"a\", \"args\": [\"${S3_KEY}\", \"${S3_BUCKET:-none}\"],"
                     " \"env\": {\"D\": \"${DATASET}\"}, \"variables\": {\"DATASET\": null}}");
    json_t *spec = jobtemplate_render(t, &vals, &err);
    CHECK(spec == NULL);
    CHECK_INT(err.nfields, 2);
    CHECK_STR(err.nfields ? err.fields[0].pointer : "", "/args/0");
    err_release(&err);
    jobtemplate_values_set(&vals, "S3_KEY", "k");
    jobtemplate_values_set(&vals, "DATASET", "d");
    spec = jobtemplate_render(t, &vals, &err);
    CHECK(spec != NULL);
    CHECK_STR(json_string_value(json_array_get(json_object_get(spec, "args"), 1)), "none");
    json_decref(spec);
    json_decref(t);

    json_t *obj = load("{\"EPOCHS\": 5, \"FAST\": true, \"NAME\": \"x\"}");
    CHECK_INT(jobtemplate_values_from_json(&vals, obj, "/values", &err), 0);
    json_decref(obj);
    obj = load("{\"bad-name\": \"x\", \"L\": [1], \"N\": \"a\\u0000b\"}");
    CHECK_INT(jobtemplate_values_from_json(&vals, obj, "/values", &err), -1);
    CHECK_INT(err.nfields, 3);
    json_decref(obj);
    jobtemplate_values_release(&vals);
    err_release(&err);
}

/* Object keys chosen by whoever can upload to the bucket. */
static void test_injection(void)
{
    struct jobtemplate_values vals;
    struct err err;
    jobtemplate_values_init(&vals);
    err_init(&err);
    json_t *t = load("{\"name\": \"job-${S3_KEY}\", \"args\": [\"--key\", \"${S3_KEY}\"],"
                     " \"env\": {\"K\": \"${S3_KEY}\"}, \"labels\": {\"k\": \"${S3_KEY}\"}}");
    const char *evil = "x\"; rm -rf / #\n${S3_BUCKET}$(id)`id`";
    struct s3event e = event("b", evil);
    jobtemplate_values_from_event(&vals, &e);
    json_t *spec = jobtemplate_render(t, &vals, &err);
    CHECK(spec != NULL);
    /* argv and env carry the key whole, byte for byte, never re-scanned for ${...}. */
    CHECK_STR(json_string_value(json_array_get(json_object_get(spec, "args"), 1)), evil);
    CHECK_STR(jsonx_str(json_object_get(spec, "env"), "K"), evil);
    /* The name folds to DNS-1035; no quote, newline or shell character survives. */
    CHECK_STR(jsonx_str(spec, "name"), "job-x-rm-rf-s3-bucket-id-id");
    json_decref(spec);
    json_decref(t);

    /* A name that folds to something invalid is refused rather than submitted. */
    t = load("{\"name\": \"${S3_KEY}\"}");
    jobtemplate_values_set(&vals, "S3_KEY", "2024/data");
    spec = jobtemplate_render(t, &vals, &err);
    CHECK(spec == NULL);
    CHECK_STR(err.nfields ? err.fields[0].pointer : "", "/name");
    err_release(&err);
    json_decref(t);

    /* A key that folds to a valid name, and one that makes it too long. */
    t = load("{\"name\": \"job-${S3_KEY}\", \"labels\": {\"k\": \"${S3_KEY}\"}}");
    jobtemplate_values_set(&vals, "S3_KEY", "Shards/Train 01");
    spec = jobtemplate_render(t, &vals, &err);
    CHECK_STR(spec ? jsonx_str(spec, "name") : "", "job-shards-train-01");
    json_decref(spec);
    char longkey[200];
    memset(longkey, 'a', 150);
    longkey[150] = '\0';
    jobtemplate_values_set(&vals, "S3_KEY", longkey);
    spec = jobtemplate_render(t, &vals, &err);
    CHECK(spec == NULL); /* name over 63 */
    err_release(&err);
    json_decref(t);
    /* Labels are cut to 63 and trimmed to alphanumeric ends. */
    t = load("{\"name\": \"a\", \"labels\": {\"k\": \"${S3_KEY}\"}}");
    jobtemplate_values_set(&vals, "S3_KEY", "/x");
    spec = jobtemplate_render(t, &vals, &err);
    CHECK_STR(spec ? jsonx_str(json_object_get(spec, "labels"), "k") : "", "x");
    json_decref(spec);
    jobtemplate_values_set(&vals, "S3_KEY", longkey);
    spec = jobtemplate_render(t, &vals, &err);
    CHECK_INT(spec ? strlen(jsonx_str(json_object_get(spec, "labels"), "k")) : 0, 63);
    json_decref(spec);
    json_decref(t);
    jobtemplate_values_release(&vals);
    err_release(&err);
}

/* Issue 17: the guard looked for a shell as the command's first word, so `env sh -c`, `timeout
 * 100 sh -c`, `busybox sh -c`, `bash --noprofile -c`, `python3 -c` and `perl -E` ran an object
 * key as code. A variable is now a whole argument, never the program nor the code of a flag. */
static void test_whole_arguments(void)
{
    static const char *const wrapped[] = {
        "[\"env\", \"sh\", \"-c\", \"echo ${S3_KEY}\"]",
        "[\"bash\", \"--noprofile\", \"-c\", \"echo ${S3_KEY}\"]",
        "[\"timeout\", \"100\", \"sh\", \"-c\", \"echo ${S3_KEY}\"]",
        "[\"busybox\", \"sh\", \"-c\", \"echo ${S3_KEY}\"]",
        "[\"python3\", \"-u\", \"-c\", \"print('${S3_KEY}')\"]",
        "[\"perl\", \"-E\", \"say '${S3_KEY}'\"]",
        "[\"train\", \"--data=${S3_URI}\"]",
        "[\"env\", \"sh\", \"-c\", \"${S3_KEY}\"]",
        "[\"perl\", \"-E\", \"${S3_KEY}\"]",
        "[\"node\", \"--eval\", \"${S3_KEY}\"]",
        "[\"${S3_KEY}\"]",
        "[\"${TOOL:-train}\", \"x\"]",
    };
    char text[512], first[64];
    for (size_t i = 0; i < sizeof(wrapped) / sizeof(wrapped[0]); i++) {
        snprintf(text, sizeof(text), "{\"name\": \"a\", \"command\": %s}", wrapped[i]);
        if (problems(text, first, sizeof(first)) != 1)
            fprintf(stderr, "accepted: %s\n", wrapped[i]);
        CHECK_INT(problems(text, NULL, 0), 1);
    }
    /* The same through args: the pointer names the argument. */
    CHECK_INT(problems("{\"name\": \"a\", \"command\": [\"env\", \"bash\", \"-lc\"],"
                       " \"args\": [\"${S3_KEY}\"]}",
                       first, sizeof(first)),
              1);
    CHECK_STR(first, "/args/0");
    /* Accepted: whole arguments, positional parameters after a fixed script, env. */
    CHECK_INT(problems("{\"name\": \"a\", \"command\": [\"env\", \"sh\", \"-c\","
                       " \"cat \\\"$1\\\"\", \"sh\", \"${S3_KEY}\"]}",
                       NULL, 0),
              0);
    CHECK_INT(problems("{\"name\": \"a\", \"command\": [\"timeout\", \"100\", \"train\","
                       " \"--data\", \"${S3_URI}\"], \"env\": {\"K\": \"s3://${S3_BUCKET}/x\"}}",
                       NULL, 0),
              0);
    /* Variables that programs read as code. */
    CHECK_INT(problems("{\"name\": \"a\", \"command\": [\"true\"],"
                       " \"env\": {\"BASH_ENV\": \"${S3_KEY}\"}}",
                       first, sizeof(first)),
              1);
    CHECK_STR(first, "/env/BASH_ENV");
    CHECK_INT(problems("{\"name\": \"a\", \"command\": [\"true\"],"
                       " \"env\": [{\"name\": \"LD_PRELOAD\", \"value\": \"${S3_KEY}\"}]}",
                       NULL, 0),
              1);

    /* Rendering: an object key that starts with '-' would be an option. */
    struct jobtemplate_values vals;
    struct err err;
    jobtemplate_values_init(&vals);
    err_init(&err);
    json_t *t = load("{\"name\": \"a\", \"command\": [\"train\", \"${S3_KEY}\"]}");
    struct s3event e = event("b", "--output=/etc/passwd");
    jobtemplate_values_from_event(&vals, &e);
    json_t *spec = jobtemplate_render(t, &vals, &err);
    CHECK(spec == NULL);
    CHECK_STR(err.nfields ? err.fields[0].pointer : "", "/command/1");
    json_decref(spec);
    json_decref(t);
    jobtemplate_values_release(&vals);
    err_release(&err);
}

int main(void)
{
    test_validate();
    test_render();
    test_missing_values();
    test_injection();
    test_whole_arguments();
    return check_done();
}
