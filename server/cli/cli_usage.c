/*
 * cli_usage: `trainyard usage` (GET /v1/usage: GPU-hours, rank-hours, runs, jobs and cost by
 * owner, team label, queue, day...) and `trainyard usage ID` (GET /v1/usage/jobs/{id}: one job
 * per attempt, also after it was deleted). With -o json the API's document is printed as it
 * is; for people, a table with a total row.
 */
#include <ctype.h>

#include "server/cli/cli_internal.h"
#include "server/cli/cli_out.h"
#include "core/jsonx.h"
#include "core/xalloc.h"

#define MAX_COLS 12

/* A number of hours with the precision a person reads: 0.0012, 3.25, 1240.5. */
static void hours(struct buf *out, double h)
{
    buf_printf(out, h == 0 ? "0" : h < 0.01 ? "%.4f" : h < 100 ? "%.2f" : "%.1f", h);
}

static void cost(struct buf *out, const json_t *o, const char *currency)
{
    const json_t *v = json_object_get(o, "cost");
    if (json_is_number(v))
        buf_printf(out, json_number_value(v) < 1 ? "%.4f %s" : "%.2f %s", json_number_value(v),
                   currency ? currency : "");
}

struct row {
    struct buf cell[MAX_COLS];
    size_t n;
};

static void row_init(struct row *r)
{
    r->n = 0;
    for (size_t i = 0; i < MAX_COLS; i++)
        buf_init(&r->cell[i]);
}

static struct buf *next(struct row *r)
{
    return &r->cell[r->n++];
}

static void row_release(struct row *r)
{
    for (size_t i = 0; i < MAX_COLS; i++)
        buf_release(&r->cell[i]);
}

/* The figures' cells of o: GPU-HOURS RANK-HOURS RUNS JOBS [COST]. */
static void figures(struct row *r, const json_t *o, const char *currency, bool jobs)
{
    hours(next(r), json_number_value(json_object_get(o, "gpu_seconds")) / 3600);
    hours(next(r), json_number_value(json_object_get(o, "rank_seconds")) / 3600);
    buf_printf(next(r), "%lld", (long long)jsonx_int(o, "runs", 0));
    if (jobs)
        buf_printf(next(r), "%lld", (long long)jsonx_int(o, "jobs", 0));
    if (currency)
        cost(next(r), o, currency);
}

static void add(struct cli_table *t, struct row *r)
{
    const char *cells[MAX_COLS];
    for (size_t i = 0; i < r->n; i++)
        cells[i] = buf_cstr(&r->cell[i]);
    cli_table_add(t, cells);
}

/* "label:team" -> "TEAM", "instance_type" -> "INSTANCE_TYPE". */
static char *header(const char *dim)
{
    const char *colon = strchr(dim, ':');
    char *h = xstrdup(colon ? colon + 1 : dim);
    for (char *p = h; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return h;
}

/* The group's value of dim ("label:team" is labels.team). */
static const char *value(const json_t *g, const char *dim)
{
    if (strncmp(dim, "label:", 6) == 0)
        return jsonx_str(json_object_get(g, "labels"), dim + 6);
    return jsonx_str(g, dim);
}

static void print_groups(const json_t *doc)
{
    const json_t *by = json_object_get(doc, "group_by");
    const char *currency = jsonx_str(doc, "currency");
    size_t nd = json_array_size(by) < MAX_COLS - 5 ? json_array_size(by) : MAX_COLS - 5;
    const char *head[MAX_COLS];
    char *owned[MAX_COLS];
    size_t nh = 0;
    for (size_t k = 0; k < nd; k++)
        head[nh++] = owned[k] = header(json_string_value(json_array_get(by, k)));
    static const char *const cols[] = { "GPU-HOURS", "RANK-HOURS", "RUNS", "JOBS", "COST" };
    for (size_t k = 0; k < (currency ? 5u : 4u); k++)
        head[nh++] = cols[k];
    struct cli_table t;
    cli_table_init(&t, nh, head);
    struct row r;
    row_init(&r);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i, g)
    {
        for (size_t k = 0; k < r.n; k++)
            buf_reset(&r.cell[k]);
        r.n = 0;
        for (size_t k = 0; k < nd; k++) {
            const char *v = value(g, json_string_value(json_array_get(by, k)));
            buf_puts(next(&r), v ? v : "(none)"); /* a job without the label, a type unknown */
        }
        figures(&r, g, currency, true);
        add(&t, &r);
    }
    for (size_t k = 0; k < r.n; k++)
        buf_reset(&r.cell[k]);
    r.n = 0;
    for (size_t k = 0; k < nd; k++)
        buf_puts(next(&r), k ? "" : "total");
    figures(&r, json_object_get(doc, "total"), currency, true);
    add(&t, &r); /* with no grouping, the one row */
    struct buf out = BUF_INIT;
    buf_printf(&out, "usage from %s to %s%s\n", jsonx_str(doc, "from"), jsonx_str(doc, "to"),
               json_is_true(json_object_get(doc, "truncated")) ? " (more groups than --limit)"
                                                               : "");
    cli_table_render(&t, &out);
    double unpriced =
        json_number_value(json_object_get(json_object_get(doc, "total"), "unpriced_gpu_seconds"));
    if (currency && unpriced > 0) {
        buf_puts(&out, "without a price: ");
        hours(&out, unpriced / 3600);
        buf_puts(&out, " GPU-hours\n");
    }
    fputs(buf_cstr(&out), stdout);
    buf_release(&out);
    row_release(&r);
    cli_table_release(&t);
    for (size_t k = 0; k < nd; k++)
        free(owned[k]);
}

static void print_job(const json_t *doc)
{
    const char *currency = jsonx_str(doc, "currency");
    static const char *const cols[] = { "ATTEMPT", "GPU-HOURS", "RANK-HOURS", "RUNS", "COST" };
    struct cli_table t;
    cli_table_init(&t, currency ? 5 : 4, cols);
    struct row r;
    row_init(&r);
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(doc, "attempts"), i, a)
    {
        for (size_t k = 0; k < r.n; k++)
            buf_reset(&r.cell[k]);
        r.n = 0;
        buf_printf(next(&r), "%lld%s", (long long)jsonx_int(a, "attempt", 0),
                   jsonx_int(a, "running_ranks", 0) ? " (running)" : "");
        figures(&r, a, currency, false);
        add(&t, &r);
    }
    struct buf out = BUF_INIT;
    buf_printf(&out, "job %s (%s, %g GPUs per rank): ", jsonx_str(doc, "job_id"),
               jsonx_str(doc, "executor"),
               json_number_value(json_object_get(doc, "gpus_per_rank")));
    hours(&out, json_number_value(json_object_get(doc, "gpu_seconds")) / 3600);
    buf_puts(&out, " GPU-hours");
    if (currency && json_is_number(json_object_get(doc, "cost"))) {
        buf_puts(&out, ", ");
        cost(&out, doc, currency);
    }
    buf_putc(&out, '\n');
    cli_table_render(&t, &out);
    fputs(buf_cstr(&out), stdout);
    buf_release(&out);
    row_release(&r);
    cli_table_release(&t);
}

int cli_cmd_usage(struct cli *c)
{
    struct buf path = BUF_INIT;
    if (c->a.npos) {
        buf_puts(&path, "/v1/usage/jobs/");
        httpc_escape(&path, c->a.pos[0]);
    } else {
        buf_puts(&path, "/v1/usage");
        cli_query(&path, "from", c->a.from);
        cli_query(&path, "to", c->a.to);
        cli_query(&path, "group_by", c->a.by ? c->a.by : "owner");
        cli_query(&path, "owner", c->a.owner);
        cli_query(&path, "queue", c->a.queue);
        cli_query(&path, "executor", c->a.executor);
        cli_query(&path, "label", c->a.label);
        cli_query(&path, "limit", c->a.limit);
    }
    json_t *doc = NULL;
    int rc = cli_get(c, buf_cstr(&path), &doc);
    buf_release(&path);
    if (rc == 0 && c->json)
        cli_print_json(stdout, doc);
    else if (rc == 0 && c->a.npos)
        print_job(doc);
    else if (rc == 0)
        print_groups(doc);
    json_decref(doc);
    return rc;
}
