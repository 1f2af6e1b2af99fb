/*
 * usage_price: checking the admin's price table and pricing runs by it (see usage_price.h).
 * Pure: no store, no HTTP.
 */
#include "api/usage_price.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "core/xalloc.h"
#include "job/names.h"

static const char *const capacity_types[] = { "on-demand", "spot", "reserved", NULL };

static bool known_capacity(const char *s)
{
    for (const char *const *c = capacity_types; *c; c++)
        if (strcmp(*c, s) == 0)
            return true;
    return false;
}

/* Every member of o is one of names (NULL-ended); the others are reported at prefix/member. */
static void only_members(const json_t *o, const char *prefix, const char *const *names,
                         struct err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        const char *const *n = names;
        while (*n && strcmp(*n, k) != 0)
            n++;
        if (!*n) {
            struct buf ptr = BUF_INIT;
            buf_puts(&ptr, prefix);
            buf_putc(&ptr, '/');
            jsonx_pointer_append(&ptr, k);
            err_field(err, buf_cstr(&ptr), "is not a known field");
            buf_release(&ptr);
        }
    }
}

/* An instance type ("*" allowed when any): NULL when fine, else why not. */
static const char *instance_type_problem(const json_t *v, bool any)
{
    const char *s = json_string_value(v);
    if (!s)
        return "is required: an instance type such as p4d.24xlarge";
    if (any && strcmp(s, "*") == 0)
        return NULL;
    return names_label_value(s) || !*s ? "must be an instance type such as p4d.24xlarge (a "
                                         "Kubernetes label value, 1 to 63 characters)"
                                       : NULL;
}

/* Checks the optional capacity_type of o at ptr; copies it into out. */
static json_t *capacity_of(const json_t *o, const char *ptr, struct err *err)
{
    json_t *v = json_object_get(o, "capacity_type");
    if (v && (!json_is_string(v) || !known_capacity(json_string_value(v))))
        err_field(err, ptr, "must be on-demand, spot or reserved");
    return v && json_is_string(v) ? json_incref(v) : NULL;
}

static json_t *check_entry(const json_t *e, size_t i, struct err *err)
{
    char ptr[96];
    snprintf(ptr, sizeof(ptr), "/prices/%zu", i);
    if (!json_is_object(e)) {
        err_field(err, ptr, "must be an object {instance_type, capacity_type, gpu_hour}");
        return NULL;
    }
    static const char *const names[] = { "instance_type", "capacity_type", "gpu_hour", NULL };
    only_members(e, ptr, names, err);
    json_t *out = json_object(), *it = json_object_get(e, "instance_type");
    const char *why = instance_type_problem(it, true);
    snprintf(ptr, sizeof(ptr), "/prices/%zu/instance_type", i);
    if (why)
        err_field(err, ptr, "%s", why);
    else
        json_object_set(out, "instance_type", it);
    snprintf(ptr, sizeof(ptr), "/prices/%zu/capacity_type", i);
    json_t *ct = capacity_of(e, ptr, err);
    if (ct)
        json_object_set_new(out, "capacity_type", ct);
    json_t *price = json_object_get(e, "gpu_hour");
    double p = json_number_value(price);
    snprintf(ptr, sizeof(ptr), "/prices/%zu/gpu_hour", i);
    if (!json_is_number(price) || !isfinite(p) || p < 0 || p > 1e6)
        err_field(err, ptr, "is required: the price of one GPU for an hour, 0 to 1000000");
    else
        json_object_set_new(out, "gpu_hour", json_real(p));
    return out;
}

static json_t *check_prices(const json_t *list, struct err *err)
{
    json_t *out = json_array();
    if (!json_is_array(list) || json_array_size(list) > PRICES_MAX) {
        err_field(err, "/prices", "is required: a list of at most %d prices", PRICES_MAX);
        return out;
    }
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *e = check_entry(json_array_get(list, i), i, err);
        const char *it = jsonx_str(e, "instance_type"), *ct = jsonx_str(e, "capacity_type");
        for (size_t k = 0; it && k < json_array_size(out); k++) {
            json_t *o = json_array_get(out, k);
            const char *oit = jsonx_str(o, "instance_type"), *oct = jsonx_str(o, "capacity_type");
            if (oit && strcmp(oit, it) == 0 && strcmp(oct ? oct : "", ct ? ct : "") == 0) {
                char ptr[64];
                snprintf(ptr, sizeof(ptr), "/prices/%zu", i);
                err_field(err, ptr, "prices %s%s%s a second time", it, ct ? " " : "", ct ? ct : "");
                break;
            }
        }
        if (e)
            json_array_append_new(out, e);
    }
    return out;
}

static json_t *check_local(const json_t *local, struct err *err)
{
    if (!json_is_object(local)) {
        err_field(err, "/local", "must be an object {instance_type, capacity_type}");
        return NULL;
    }
    static const char *const names[] = { "instance_type", "capacity_type", NULL };
    only_members(local, "/local", names, err);
    json_t *out = json_object(), *it = json_object_get(local, "instance_type");
    const char *why = instance_type_problem(it, false);
    if (why)
        err_field(err, "/local/instance_type", "%s", why);
    else
        json_object_set(out, "instance_type", it);
    json_t *ct = capacity_of(local, "/local/capacity_type", err);
    if (ct)
        json_object_set_new(out, "capacity_type", ct);
    return out;
}

json_t *prices_check(const json_t *doc, struct err *err)
{
    if (!json_is_object(doc)) {
        err_field(err, "", "must be an object {currency, local, prices}");
        return NULL;
    }
    static const char *const names[] = { "currency", "local", "prices", NULL };
    struct err mine;
    err_init(&mine);
    only_members(doc, "", names, &mine);
    json_t *out = json_object(), *cur = json_object_get(doc, "currency");
    const char *c = cur ? json_string_value(cur) : "USD";
    bool code = c && strlen(c) == 3;
    for (size_t i = 0; code && i < 3; i++)
        code = c[i] >= 'A' && c[i] <= 'Z';
    if (!code)
        err_field(&mine, "/currency", "must be an ISO 4217 code such as USD or EUR");
    json_object_set_new(out, "currency", json_string(code ? c : "USD"));
    json_t *local = json_object_get(doc, "local");
    json_t *lout = local ? check_local(local, &mine) : NULL;
    if (lout)
        json_object_set_new(out, "local", lout);
    json_object_set_new(out, "prices", check_prices(json_object_get(doc, "prices"), &mine));
    if (err_is_set(&mine)) {
        err_move(err, &mine);
        json_decref(out);
        out = NULL;
    }
    err_release(&mine);
    return out;
}

static int cmp_key(const char *it, const char *ct, const struct price *p)
{
    int c = strcmp(it, p->instance_type);
    return c ? c : strcmp(ct, p->capacity_type);
}

static int by_key(const void *a, const void *b)
{
    const struct price *y = b;
    return cmp_key(((const struct price *)a)->instance_type,
                   ((const struct price *)a)->capacity_type, y);
}

void prices_init(struct prices *out, const json_t *doc)
{
    memset(out, 0, sizeof(*out));
    if (!doc)
        return;
    const char *cur = jsonx_str(doc, "currency");
    snprintf(out->currency, sizeof(out->currency), "%s", cur ? cur : "USD");
    const json_t *local = json_object_get(doc, "local");
    const char *lit = jsonx_str(local, "instance_type"), *lct = jsonx_str(local, "capacity_type");
    snprintf(out->local_instance_type, sizeof(out->local_instance_type), "%s", lit ? lit : "");
    snprintf(out->local_capacity_type, sizeof(out->local_capacity_type), "%s", lct ? lct : "");
    const json_t *list = json_object_get(doc, "prices");
    out->p = xcalloc(json_array_size(list) + 1, sizeof(*out->p));
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *it = jsonx_str(e, "instance_type"), *ct = jsonx_str(e, "capacity_type");
        struct price *p = &out->p[out->n++];
        snprintf(p->instance_type, sizeof(p->instance_type), "%s", it ? it : "*");
        snprintf(p->capacity_type, sizeof(p->capacity_type), "%s", ct ? ct : "");
        p->gpu_hour = json_number_value(json_object_get(e, "gpu_hour"));
    }
    qsort(out->p, out->n, sizeof(*out->p), by_key);
}

void prices_copy(struct prices *dst, const struct prices *src)
{
    *dst = *src;
    dst->p = xcalloc(src->n + 1, sizeof(*dst->p));
    if (src->n)
        memcpy(dst->p, src->p, src->n * sizeof(*dst->p));
}

void prices_release(struct prices *p)
{
    free(p->p);
    memset(p, 0, sizeof(*p));
}

static const struct price *find(const struct prices *p, const char *it, const char *ct)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = cmp_key(it, ct, &p->p[mid]);
        if (c == 0)
            return &p->p[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

bool prices_lookup(const struct prices *p, const char *executor, const char *instance_type,
                   const char *capacity_type, double *gpu_hour)
{
    const char *it = instance_type ? instance_type : "", *ct = capacity_type ? capacity_type : "";
    if (!*it && executor && strcmp(executor, "local") == 0) {
        it = p->local_instance_type;
        ct = *ct ? ct : p->local_capacity_type;
    }
    if (!*ct)
        ct = "on-demand";
    const char *types[2] = { it, "*" }, *caps[2] = { ct, "" };
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 2; c++) {
            const struct price *hit = *types[t] ? find(p, types[t], caps[c]) : NULL;
            if (hit) {
                *gpu_hour = hit->gpu_hour;
                return true;
            }
        }
    return false;
}
