/*
 * preflight: report building, the expected-figure tables, and the subcommand. The tables hold
 * vendor peak figures; a healthy device reaches a known fraction of them (PF_MIN_*), so a GPU
 * or network far below that is reported as failing rather than just slow.
 */
#include "worker/preflight.h"

#include <getopt.h>
#include <stdarg.h>
#include <strings.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "worker/checks.h"
#include "worker/reporter.h"

/* Most specific first: the first entry whose match is in the device name wins. */
static const struct gpu_expected gpus[] = {
    { "A10G", "A10G", 600, 70 },
    { "L40S", "L40S", 864, 362 },
    { "L4", "L4", 300, 121 },
    { "A100 80GB", "A100-SXM4-80GB", 2039, 312 },
    { "A100 80GB PCIe", "A100 80GB PCIe", 1935, 312 },
    { "A100", "A100", 1555, 312 },
    { "H100 PCIe", "H100 PCIe", 2000, 756 },
    { "H100 NVL", "H100 NVL", 3900, 835 },
    { "H100", "H100", 3350, 989 },
    { "H200", "H200", 4800, 989 },
    { "B200", "B200", 8000, 2250 },
};

static const struct net_expected nets[] = {
    { "p4d.24xlarge", 4, 40 },   { "p4de.24xlarge", 4, 40 },   { "p5.48xlarge", 32, 300 },
    { "p5e.48xlarge", 32, 300 }, { "p5en.48xlarge", 16, 300 }, { "p6-b200.48xlarge", 8, 300 },
    { "g5.48xlarge", 1, 8 },     { "g6.48xlarge", 1, 8 },      { "g6e.48xlarge", 4, 30 },
};

const struct gpu_expected *preflight_gpu_expected(const char *device_name)
{
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++)
        if (strstr(device_name, gpus[i].match))
            return &gpus[i];
    return NULL;
}

const struct net_expected *preflight_net_expected(const char *instance_type)
{
    for (size_t i = 0; instance_type && i < sizeof(nets) / sizeof(nets[0]); i++)
        if (strcasecmp(instance_type, nets[i].instance) == 0)
            return &nets[i];
    return NULL;
}

enum pf_status preflight_judge(double measured, double expected, double min_fraction)
{
    if (!(expected > 0))
        return PF_WARN;
    return measured >= expected * min_fraction ? PF_PASS : PF_FAIL;
}

const char *pf_status_name(enum pf_status st)
{
    static const char *const names[] = { "pass", "warn", "skip", "fail" };
    return names[st];
}

void preflight_init(struct preflight *p)
{
    memset(p, 0, sizeof(*p));
    p->checks = json_array();
}

void preflight_release(struct preflight *p)
{
    json_decref(p->checks);
    memset(p, 0, sizeof(*p));
}

void preflight_add(struct preflight *p, const char *name, enum pf_status st, json_t *data,
                   const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    json_t *c =
        json_pack("{s:s,s:s,s:s}", "name", name, "status", pf_status_name(st), "detail", detail);
    if (data)
        json_object_set_new(c, "data", data);
    json_array_append_new(p->checks, c);
    p->counts[st]++;
}

json_t *preflight_report(const struct preflight *p, const struct rankenv *re, int64_t duration_ns)
{
    char host[256] = "", t[CLOCK_RFC3339_MAX];
    gethostname(host, sizeof(host) - 1);
    return json_pack("{s:i,s:i,s:i,s:s,s:s,s:I,s:b,s:{s:i,s:i,s:i,s:i},s:O}", "rank", re->rank,
                     "world_size", re->world_size, "local_rank", re->local_rank, "hostname", host,
                     "time", clock_format(clock_now_ns(), t), "duration_ms",
                     (json_int_t)(duration_ns / NS_PER_MS), "ok", p->counts[PF_FAIL] == 0,
                     "summary", "pass", p->counts[PF_PASS], "warn", p->counts[PF_WARN], "skip",
                     p->counts[PF_SKIP], "fail", p->counts[PF_FAIL], "checks", p->checks);
}

void preflight_opts_default(struct preflight_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->shm_min = 1LL << 30;
    o->disk_min = 1LL << 30;
    o->timeout_ms = 60000;
    o->shm_path = "/dev/shm";
}

static void print_table(FILE *out, const json_t *report)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(report, "checks"), i, c)
    {
        fprintf(out, "%-5s %-24s %s\n", jsonx_str(c, "status"), jsonx_str(c, "name"),
                jsonx_str(c, "detail"));
    }
    fprintf(out, "%s\n", jsonx_bool(report, "ok", false) ? "preflight: ok" : "preflight: FAILED");
}

/* Sends the report when TRAINYARD_URL is set; a daemon that is away only costs a warning. */
static void send_report(const char *json, const struct rankenv *re)
{
    const char *url = rankenv_get("TRAINYARD_URL");
    struct err err;
    err_init(&err);
    if (!url)
        return;
    struct reporter *r =
        reporter_new(url, rankenv_get("TRAINYARD_TOKEN"), re->job_id, re->rank, 1, &err);
    if (!r || reporter_send_preflight(r, json, &err) < 0)
        fprintf(stderr, "trainyard-worker: preflight report not delivered: %s\n", err.msg);
    reporter_free(r);
    err_release(&err);
}

/* Flags and their environment variables; 0, or 2 for bad usage. */
static int parse_opts(int argc, char **argv, struct preflight_opts *o, int *json)
{
    static const struct option opts[] = {
        { "json", 0, 0, 'j' },    { "gpus", 1, 0, 'g' },          { "efa", 1, 0, 'e' },
        { "shm-min", 1, 0, 's' }, { "disk-min", 1, 0, 'd' },      { "checkpoint-dir", 1, 0, 'c' },
        { "timeout", 1, 0, 't' }, { "instance-type", 1, 0, 'i' }, { 0, 0, 0, 0 }
    };
    const char *v[128] = { 0 };
    v['g'] = rankenv_get("TRAINYARD_GPUS");
    v['e'] = rankenv_get("TRAINYARD_EFA");
    v['s'] = rankenv_get("TRAINYARD_SHM_MIN");
    v['d'] = rankenv_get("TRAINYARD_DISK_MIN");
    v['t'] = rankenv_get("TRAINYARD_PREFLIGHT_TIMEOUT");
    o->ckpt_dir = rankenv_get("TRAINYARD_CHECKPOINT_DIR");
    o->instance_type = rankenv_get("TRAINYARD_INSTANCE_TYPE");
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == '?')
            return 2;
        if (c == 'j')
            *json = 1;
        else if (c == 'c')
            o->ckpt_dir = optarg;
        else if (c == 'i')
            o->instance_type = optarg;
        else
            v[c] = optarg;
    }
    int64_t t = (int64_t)o->timeout_ms * NS_PER_MS;
    if ((v['g'] && parse_int(v['g'], 0, 1024, &o->gpus) < 0) ||
        (v['e'] && parse_int(v['e'], 0, 1024, &o->efa) < 0) ||
        (v['s'] && parse_bytes(v['s'], &o->shm_min) < 0) ||
        (v['d'] && parse_bytes(v['d'], &o->disk_min) < 0) ||
        (v['t'] && (parse_duration(v['t'], &t) < 0 || t < NS_PER_MS)) || optind < argc) {
        fprintf(stderr, "trainyard-worker preflight: bad option value or argument\n");
        return 2;
    }
    o->timeout_ms = (int)(t / NS_PER_MS);
    return 0;
}

int preflight_main(int argc, char **argv, const struct rankenv *re)
{
    struct preflight_opts o;
    struct preflight p;
    int json = 0;
    preflight_opts_default(&o);
    if (parse_opts(argc, argv, &o, &json))
        return 2;
    int64_t start = clock_mono_ns();
    preflight_init(&p);
    struct check_ctx ctx = { .opts = &o, .re = re, .report = &p };
    checks_run_all(&ctx);
    json_t *report = preflight_report(&p, re, clock_mono_ns() - start);
    char *text = jsonx_dumps(report);
    if (json)
        printf("%s\n", text);
    else
        print_table(stdout, report);
    fflush(stdout);
    send_report(text, re);
    int rc = p.counts[PF_FAIL] ? 1 : 0;
    free(text);
    json_decref(report);
    preflight_release(&p);
    return rc;
}
