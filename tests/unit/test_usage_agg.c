/*
 * Tests of api/usage_agg and api/usage_price: the arithmetic of GET /v1/usage on rows made
 * here. What a team lead relies on: groups by owner, day and a label (jobs without it as null);
 * filters; totals that count every group, also those past the limit; days in order, other
 * groups the biggest first; a cost from the price table by instance type and capacity type,
 * with "*" and the local machine's type, and unpriced GPU-seconds apart; the query parameters
 * (group_by, label, times) refused with the reason; the price table checked field by field.
 */
#include <math.h>

#include "api/usage_agg.h"
#include "api/usage_price.h"
#include "check.h"
#include "core/clock.h"
#include "core/jsonx.h"

#define DAY0       20000 /* 2024-10-04 */
#define NEAR(a, b) (fabs((a) - (b)) < 1e-6)

static const struct usage_group alice_local = { "alice", "", "local", "", "" };
static const struct usage_group alice_spot = { "alice", "research", "kubernetes", "p4d.24xlarge",
                                               "spot" };
static const struct usage_group bob_od = { "bob", "", "kubernetes", "p4d.24xlarge", "" };
static const struct usage_group bob_other = { "bob", "", "kubernetes", "g6.xlarge", "on-demand" };

static void add(struct usage_agg *a, int64_t day, const struct usage_group *g, const char *team,
                double gpu_hours, int64_t runs, int64_t jobs)
{
    struct usage_row r = { .day = day,
                           .group = g,
                           .label = team,
                           .f = { .gpu_seconds = gpu_hours * 3600,
                                  .rank_seconds = gpu_hours * 1800,
                                  .runs = runs,
                                  .jobs = jobs } };
    CHECK_INT(usage_agg_add(a, &r, NULL), 0);
}

static void rows(struct usage_agg *a)
{
    add(a, DAY0, &alice_local, "nlp", 10, 4, 1);
    add(a, DAY0 + 1, &alice_local, "nlp", 5, 2, 0);
    add(a, DAY0, &alice_spot, "nlp", 8, 8, 1);
    add(a, DAY0, &bob_od, NULL, 20, 1, 1);
    add(a, DAY0 + 1, &bob_other, "vision", 2, 1, 1);
}

static json_t *group_where(json_t *doc, const char *k, const char *v)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i, g)
    {
        const char *have = jsonx_str(g, k);
        if ((!v && json_is_null(json_object_get(g, k))) || (v && have && strcmp(have, v) == 0))
            return g;
    }
    return NULL;
}

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static struct usage_query query(const char *group_by, const char *label)
{
    struct usage_query q = { .from = (int64_t)DAY0 * USAGE_NS_PER_DAY,
                             .to = (int64_t)(DAY0 + 2) * USAGE_NS_PER_DAY,
                             .limit = 100 };
    CHECK_INT(usage_query_group_by(&q, group_by, NULL), 0);
    if (label)
        CHECK_INT(usage_query_label(&q, label, NULL), 0);
    return q;
}

static void by_owner_and_total(void)
{
    struct usage_query q = query("owner", NULL);
    struct usage_agg *a = usage_agg_new(&q, NULL);
    rows(a);
    json_t *doc = usage_agg_json(a);
    CHECK_INT(json_array_size(json_object_get(doc, "groups")), 2);
    json_t *alice = group_where(doc, "owner", "alice"), *bob = group_where(doc, "owner", "bob");
    CHECK(NEAR(num(alice, "gpu_hours"), 23) && NEAR(num(bob, "gpu_hours"), 22));
    CHECK(NEAR(num(alice, "gpu_seconds"), 23 * 3600.0));
    CHECK_INT(jsonx_int(alice, "runs", -1), 14);
    CHECK_INT(jsonx_int(bob, "jobs", -1), 2);
    CHECK(json_is_null(json_object_get(alice, "cost"))); /* no price table */
    CHECK(json_is_null(json_object_get(doc, "currency")));
    json_t *total = json_object_get(doc, "total");
    CHECK(NEAR(num(total, "gpu_hours"), 45) && jsonx_int(total, "jobs", 0) == 4);
    /* the biggest first */
    CHECK_STR(jsonx_str(json_array_get(json_object_get(doc, "groups"), 0), "owner"), "alice");
    json_decref(doc);
    usage_agg_free(a);
    /* a limit of 1: the total still counts both */
    q.limit = 1;
    a = usage_agg_new(&q, NULL);
    rows(a);
    doc = usage_agg_json(a);
    CHECK_INT(json_array_size(json_object_get(doc, "groups")), 1);
    CHECK(json_is_true(json_object_get(doc, "truncated")));
    CHECK(NEAR(num(json_object_get(doc, "total"), "gpu_hours"), 45));
    json_decref(doc);
    usage_agg_free(a);
}

static void by_label_and_day(void)
{
    struct usage_query q = query("label:team,day", NULL);
    struct usage_agg *a = usage_agg_new(&q, NULL);
    rows(a);
    json_t *doc = usage_agg_json(a), *groups = json_object_get(doc, "groups");
    CHECK_INT(json_array_size(groups), 4); /* nlp x2 days, none, vision */
    json_t *first = json_array_get(groups, 0), *last = json_array_get(groups, 3);
    CHECK_STR(jsonx_str(first, "day"), "2024-10-04"); /* by day, then the biggest */
    CHECK(json_is_null(json_object_get(json_object_get(first, "labels"), "team")));
    CHECK(NEAR(num(first, "gpu_hours"), 20));
    CHECK_STR(jsonx_str(last, "day"), "2024-10-05");
    CHECK_STR(jsonx_str(json_object_get(last, "labels"), "team"), "vision");
    CHECK_STR(json_string_value(json_array_get(json_object_get(doc, "group_by"), 0)), "label:team");
    json_decref(doc);
    usage_agg_free(a);
}

static void filters(void)
{
    struct usage_query q = query("queue", "team=nlp");
    q.owner = "alice";
    struct usage_agg *a = usage_agg_new(&q, NULL);
    rows(a);
    json_t *doc = usage_agg_json(a);
    CHECK(NEAR(num(group_where(doc, "queue", "default"), "gpu_hours"), 15));
    CHECK(NEAR(num(group_where(doc, "queue", "research"), "gpu_hours"), 8));
    CHECK(NEAR(num(json_object_get(doc, "total"), "gpu_hours"), 23));
    json_decref(doc);
    usage_agg_free(a);
    q = query("owner", NULL);
    q.queue = "default";
    q.executor = "kubernetes";
    a = usage_agg_new(&q, NULL);
    rows(a);
    doc = usage_agg_json(a);
    CHECK(NEAR(num(json_object_get(doc, "total"), "gpu_hours"), 22)); /* bob's */
    json_decref(doc);
    usage_agg_free(a);
}

static struct prices table(const char *text)
{
    json_t *doc = json_loads(text, 0, NULL);
    struct err err;
    err_init(&err);
    json_t *canon = prices_check(doc, &err);
    CHECK(canon != NULL);
    if (!canon)
        fprintf(stderr, "prices: %s (%s)\n", err.msg, err.nfields ? err.fields[0].message : "");
    struct prices p;
    prices_init(&p, canon);
    json_decref(canon);
    json_decref(doc);
    err_release(&err);
    return p;
}

static void cost(void)
{
    struct prices p = table("{\"currency\":\"EUR\",\"local\":{\"instance_type\":\"g5.48xlarge\"},"
                            "\"prices\":[{\"instance_type\":\"p4d.24xlarge\",\"capacity_type\":"
                            "\"spot\",\"gpu_hour\":1.5},{\"instance_type\":\"p4d.24xlarge\","
                            "\"gpu_hour\":4},{\"instance_type\":\"g5.48xlarge\",\"gpu_hour\":2}]}");
    double h = 0;
    CHECK(prices_lookup(&p, "kubernetes", "p4d.24xlarge", "spot", &h) && h == 1.5);
    CHECK(prices_lookup(&p, "kubernetes", "p4d.24xlarge", "", &h) && h == 4); /* on-demand */
    CHECK(prices_lookup(&p, "local", "", "", &h) && h == 2);                  /* the machine */
    CHECK(!prices_lookup(&p, "kubernetes", "g6.xlarge", "on-demand", &h));
    struct usage_query q = query("owner", NULL);
    struct usage_agg *a = usage_agg_new(&q, &p);
    rows(a);
    json_t *doc = usage_agg_json(a);
    json_t *alice = group_where(doc, "owner", "alice"), *bob = group_where(doc, "owner", "bob");
    CHECK(NEAR(num(alice, "cost"), 15 * 2 + 8 * 1.5));
    CHECK(NEAR(num(bob, "cost"), 20 * 4));
    CHECK(NEAR(num(bob, "unpriced_gpu_seconds"), 2 * 3600.0)); /* g6.xlarge has no price */
    CHECK_STR(jsonx_str(doc, "currency"), "EUR");
    CHECK(NEAR(num(json_object_get(doc, "total"), "cost"), 30 + 12 + 80));
    json_decref(doc);
    usage_agg_free(a);
    prices_release(&p);
    /* "*" prices whatever has no entry of its own */
    p = table("{\"prices\":[{\"instance_type\":\"*\",\"gpu_hour\":3},{\"instance_type\":\"*\","
              "\"capacity_type\":\"spot\",\"gpu_hour\":1}]}");
    CHECK(prices_lookup(&p, "kubernetes", "g6.xlarge", "", &h) && h == 3);
    CHECK(prices_lookup(&p, "kubernetes", "g6.xlarge", "spot", &h) && h == 1);
    CHECK(prices_lookup(&p, "local", "", "", &h) && h == 3);
    CHECK_STR(p.currency, "USD");
    prices_release(&p);
}

static void refused_prices(void)
{
    json_t *doc = json_loads("{\"currency\":\"usd\",\"extra\":1,\"prices\":[{\"instance_type\":"
                             "\"p4d.24xlarge\",\"gpu_hour\":-1},{\"instance_type\":\"a b\","
                             "\"capacity_type\":\"cheap\",\"gpu_hour\":1},{\"instance_type\":"
                             "\"p4d.24xlarge\",\"gpu_hour\":2}]}",
                             0, NULL);
    struct err err;
    err_init(&err);
    CHECK(prices_check(doc, &err) == NULL);
    CHECK_INT(err.code, ERR_VALIDATION);
    static const char *const want[] = { "/extra",
                                        "/currency",
                                        "/prices/0/gpu_hour",
                                        "/prices/1/instance_type",
                                        "/prices/1/capacity_type",
                                        "/prices/2" };
    CHECK_INT(err.nfields, 6);
    for (size_t i = 0; i < err.nfields && i < 6; i++)
        CHECK_STR(err.fields[i].pointer, want[i]);
    err_release(&err);
    json_decref(doc);
    err_init(&err);
    CHECK(prices_check(json_object_get(doc = json_loads("[]", 0, NULL), "x"), &err) == NULL);
    CHECK_INT(err.code, ERR_VALIDATION);
    json_decref(doc);
    err_release(&err);
}

static void parameters(void)
{
    struct usage_query q = { 0 };
    struct err err;
    err_init(&err);
    CHECK_INT(usage_query_group_by(&q, "owner,bogus", &err), -1);
    CHECK(strstr(err.msg, "'bogus' is unknown") != NULL);
    err_release(&err);
    memset(&q, 0, sizeof(q));
    err_init(&err);
    CHECK_INT(usage_query_group_by(&q, "day,day", &err), -1);
    err_release(&err);
    memset(&q, 0, sizeof(q));
    err_init(&err);
    CHECK_INT(usage_query_group_by(&q, "owner,queue,executor,day,label:team", &err), -1);
    err_release(&err);
    memset(&q, 0, sizeof(q));
    err_init(&err);
    CHECK_INT(usage_query_group_by(&q, "label:team", NULL), 0);
    CHECK_INT(usage_query_label(&q, "project=llama", &err), -1); /* a second label key */
    CHECK(strstr(err.msg, "one label key") != NULL);
    err_release(&err);
    CHECK_INT(usage_query_label(&q, "team=nlp", NULL), 0);
    CHECK_STR(q.label_value, "nlp");
    CHECK(usage_query_by_class(&q)); /* by a label: no owner, no queue */
    q.owner = "alice";
    CHECK(!usage_query_by_class(&q));
    memset(&q, 0, sizeof(q));
    CHECK_INT(usage_query_group_by(&q, "day,queue", NULL), 0);
    CHECK(!usage_query_by_class(&q));
    int64_t now = (int64_t)DAY0 * USAGE_NS_PER_DAY + 3600 * NS_PER_SEC, t = 0;
    CHECK(usage_time_parse("7d", now, &t) == 0 && t == now - 7 * USAGE_NS_PER_DAY);
    CHECK(usage_time_parse("-36h", now, &t) == 0 && t == now - 36 * 3600 * NS_PER_SEC);
    CHECK(usage_time_parse("now", now, &t) == 0 && t == now);
    CHECK(usage_time_parse("2024-10-04", now, &t) == 0 && t == (int64_t)DAY0 * USAGE_NS_PER_DAY);
    CHECK(usage_time_parse("2024-10-04T01:00:00Z", now, &t) == 0 && t == now);
    CHECK_INT(usage_time_parse("yesterday", now, &t), -1);
    CHECK_INT(usage_time_parse("2024-13-40", now, &t), -1);
    CHECK_INT(usage_time_parse("99999d", now, &t), -1);
}

int main(void)
{
    by_owner_and_total();
    by_label_and_day();
    filters();
    cost();
    refused_prices();
    parameters();
    return check_done();
}
