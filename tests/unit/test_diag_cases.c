/*
 * Data-driven diagnosis cases: every directory under tests/unit/data/diag/ holds a job's
 * signals (`input`) and what the diagnosis must say (`expected`).
 *
 * input, one record a line ('#' comments and blank lines ignored):
 *   option world_size=N
 *   rank R pod=P node=N                 where a rank runs
 *   L T R text...                       a log line of rank R at T seconds (text: the rest of
 *                                       the line after one space); seqs count from 1
 *   E T R k=v ...                       an ending: exit= signal= reason= pod_reason= node= pod=
 *                                       stopped lost; message=... takes the rest of the line
 *   V T R|- k=v ...                     a platform event: reason= node= pod= message=...
 * expected, "key: value" lines checked against the summary JSON (arrays space-separated, null
 * as "-"), plus: restart/category/avoid_node/preempted (retry decision under the default
 * policy), findings (count) and "finding: kind@R" (a finding of that kind names rank R) or
 * "finding: kind@log:R" (a pod-level one in trainyard rank R's log).
 */
#include "tests/unit/check.h"

#include <dirent.h>
#include <stdlib.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "server/diag/diag.h"
#include "server/diag/retry.h"

#define BASE_NS (1714564800LL * NS_PER_SEC) /* 2024-05-01T12:00:00Z */
#define MAXLINE 8192

static int64_t at_time(const char *t)
{
    return BASE_NS + (int64_t)(strtod(t, NULL) * 1e9);
}

/* Value of key=value in s (up to the next space, or the rest for message=); NULL if absent. */
static const char *kv(const char *s, const char *key, char *out, size_t cap)
{
    size_t m = strlen(key);
    for (const char *p = s; (p = strstr(p, key)) != NULL; p += m) {
        if ((p != s && p[-1] != ' ') || p[m] != '=')
            continue;
        const char *v = p + m + 1;
        size_t n = strcmp(key, "message") == 0 ? strlen(v) : strcspn(v, " ");
        snprintf(out, cap, "%.*s", (int)n, v);
        return out;
    }
    return NULL;
}

static bool flag(const char *s, const char *word)
{
    size_t m = strlen(word);
    for (const char *p = s; (p = strstr(p, word)) != NULL; p += m)
        if ((p == s || p[-1] == ' ') && (p[m] == ' ' || p[m] == '\0'))
            return true;
    return false;
}

static void do_ending(struct diag *d, const char *t, int rank, const char *rest)
{
    char exit_s[16], sig[16], reason[64], preason[64], node[64], pod[64], msg[256];
    struct ending e = { .rank = rank, .time_ns = at_time(t) };
    if (kv(rest, "exit", exit_s, sizeof(exit_s))) {
        e.exited = true;
        e.exit_code = (int)strtol(exit_s, NULL, 10);
    }
    if (kv(rest, "signal", sig, sizeof(sig)))
        e.signal = (int)strtol(sig, NULL, 10);
    e.reason = kv(rest, "reason", reason, sizeof(reason));
    e.pod_reason = kv(rest, "pod_reason", preason, sizeof(preason));
    e.node = kv(rest, "node", node, sizeof(node));
    e.pod = kv(rest, "pod", pod, sizeof(pod));
    e.message = kv(rest, "message", msg, sizeof(msg));
    e.stopped = flag(rest, "stopped");
    e.lost = flag(rest, "lost");
    diag_ending(d, &e);
}

static void do_event(struct diag *d, const char *t, int rank, const char *rest)
{
    char reason[64], node[64], pod[64], msg[256];
    struct ending_event ev = { .rank = rank, .time_ns = at_time(t) };
    ev.reason = kv(rest, "reason", reason, sizeof(reason));
    ev.node = kv(rest, "node", node, sizeof(node));
    ev.pod = kv(rest, "pod", pod, sizeof(pod));
    ev.message = kv(rest, "message", msg, sizeof(msg));
    diag_event(d, &ev);
}

/* Splits "X T R rest" in place; returns rest (after exactly one space) or "". */
static char *fields(char *line, char **t, char **r)
{
    char *p = line + 2;
    *t = p;
    p = strchr(p, ' ');
    if (!p)
        return NULL;
    *p++ = '\0';
    *r = p;
    p = strchr(p, ' ');
    if (!p)
        return (char *)"";
    *p++ = '\0';
    return p;
}

static struct diag *load(const char *path, int *nlines)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    struct diag_options o;
    diag_options_default(&o);
    char line[MAXLINE], v[64];
    struct diag *d = NULL;
    int64_t seq = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "option ", 7) == 0 && kv(line + 7, "world_size", v, sizeof(v)))
            o.world_size = (int)strtol(v, NULL, 10);
        if (!d && (line[0] == 'L' || line[0] == 'E' || line[0] == 'V' || line[0] == 'r'))
            d = diag_new(&o);
        char *t, *r, *rest;
        if (strncmp(line, "rank ", 5) == 0) {
            char pod[64], node[64];
            diag_rank_info(d, (int)strtol(line + 5, NULL, 10), kv(line, "pod", pod, sizeof(pod)),
                           kv(line, "node", node, sizeof(node)));
        } else if ((line[0] == 'L' || line[0] == 'E' || line[0] == 'V') && line[1] == ' ' &&
                   (rest = fields(line, &t, &r)) != NULL) {
            int rank = strcmp(r, "-") == 0 ? -1 : (int)strtol(r, NULL, 10);
            if (line[0] == 'L') {
                /* An exact-size copy: nothing may read past a line (ASan checks). */
                size_t n = strlen(rest);
                char *copy = xmalloc(n ? n : 1);
                memcpy(copy, rest, n);
                struct diag_line ln = { rank, ++seq, at_time(t), copy, n };
                struct progress_sample s[8];
                diag_feed(d, &ln, s, 8);
                free(copy);
            } else if (line[0] == 'E') {
                do_ending(d, t, rank, rest);
            } else {
                do_event(d, t, rank, rest);
            }
        }
    }
    fclose(f);
    *nlines = (int)seq;
    return d ? d : diag_new(&o);
}

/* The summary field as the expected file writes it. */
static void field_text(const json_t *v, char *out, size_t cap)
{
    struct buf b = BUF_INIT;
    if (!v || json_is_null(v)) {
        buf_puts(&b, "-");
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            buf_printf(&b, "%s%lld", i ? " " : "", (long long)json_integer_value(e));
        }
    } else if (json_is_string(v)) {
        buf_puts(&b, json_string_value(v));
    } else if (json_is_integer(v)) {
        buf_printf(&b, "%lld", (long long)json_integer_value(v));
    } else {
        buf_puts(&b, json_is_true(v) ? "true" : "false");
    }
    snprintf(out, cap, "%s", buf_cstr(&b));
    buf_release(&b);
}

/* "kind@R": a finding of that kind naming rank R; "kind@log:R": a pod-level finding (no
 * process rank) in trainyard rank R's log. */
static bool has_finding(const json_t *findings, const char *want)
{
    char kind[64];
    int rank = -2;
    bool pod = strstr(want, "@log:") != NULL;
    if (sscanf(want, pod ? "%63[^@]@log:%d" : "%63[^@]@%d", kind, &rank) != 2)
        return false;
    for (size_t i = 0; i < json_array_size(findings); i++) {
        json_t *f = json_array_get(findings, i);
        if (strcmp(jsonx_str(f, "kind"), kind) != 0)
            continue;
        if (pod ? json_is_null(json_object_get(f, "rank")) && jsonx_int(f, "log_rank", -1) == rank
                : jsonx_int(f, "rank", -1) == rank)
            return true;
    }
    return false;
}

static void check_case(const char *name)
{
    char path[512], line[MAXLINE], got[1024];
    int nlines = 0;
    snprintf(path, sizeof(path), "data/diag/%s/input", name);
    struct diag *d = load(path, &nlines);
    if (!d)
        return;
    json_t *j = diag_json(d);
    json_t *sum = json_object_get(j, "summary");
    json_t *findings = json_object_get(j, "findings");
    struct diag_summary s;
    diag_summarize(d, &s);
    struct retry_policy pol;
    retry_policy_default(&pol);
    struct retry_decision dec;
    retry_decide(&s, &pol, 0, 0, &dec);
    json_t *dj = retry_decision_json(&dec);
    snprintf(path, sizeof(path), "data/diag/%s/expected", name);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    int checked = 0;
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *colon = strstr(line, ": ");
        if (line[0] == '#' || !colon)
            continue;
        *colon = '\0';
        const char *key = line, *want = colon + 2;
        checked++;
        if (strcmp(key, "finding") == 0) {
            if (!has_finding(findings, want))
                fprintf(stderr, "case %s: no finding %s\n", name, want);
            CHECK(has_finding(findings, want));
            continue;
        }
        if (strcmp(key, "findings") == 0)
            snprintf(got, sizeof(got), "%zu", json_array_size(findings));
        else if (strcmp(key, "restart") == 0 || strcmp(key, "category") == 0 ||
                 strcmp(key, "preempted") == 0 || strcmp(key, "avoid_node") == 0)
            field_text(json_object_get(dj, key), got, sizeof(got));
        else if (strcmp(key, "cause") == 0 && json_is_null(sum))
            snprintf(got, sizeof(got), "none");
        else
            field_text(json_object_get(sum, key), got, sizeof(got));
        if (strcmp(got, want) != 0)
            fprintf(stderr, "case %s: %s\n", name, key);
        CHECK_STR(got, want);
    }
    if (f)
        fclose(f);
    CHECK(checked > 0 && nlines >= 0);
    if (getenv("DIAG_DUMP")) {
        char *txt = json_dumps(j, JSON_INDENT(2));
        printf("== %s\n%s\n", name, txt);
        free(txt);
    }
    json_decref(dj);
    json_decref(j);
    diag_free(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    DIR *dir = opendir("data/diag");
    CHECK(dir != NULL);
    if (!dir)
        return check_done();
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL && n < 256)
        if (de->d_name[0] != '.' && (argc < 2 || strcmp(argv[1], de->d_name) == 0))
            names[n++] = xstrdup(de->d_name);
    closedir(dir);
    qsort(names, n, sizeof(names[0]), cmp_str);
    CHECK(n >= (argc < 2 ? 10 : 1));
    for (size_t i = 0; i < n; i++) {
        check_case(names[i]);
        free(names[i]);
    }
    return check_done();
}
