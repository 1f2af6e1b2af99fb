/*
 * table: Table rendering. Pure functions of the objects and the clock; thread-safe.
 * The pod STATUS cell follows printPod(): the phase, overridden by the pod's reason, the last
 * container's waiting or terminated reason, "Terminating" when a deletion is pending.
 */
#include "tests/kube/table.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "tests/kube/world.h"

bool table_wanted(const char *accept)
{
    return accept && strstr(accept, "as=Table");
}

char *table_age(int64_t ns, char *out)
{
    int64_t s = ns / NS_PER_SEC, m = s / 60, h = s / 3600, d = h / 24;
    if (s < -1)
        snprintf(out, 32, "<invalid>");
    else if (s < 0)
        snprintf(out, 32, "0s");
    else if (s < 120)
        snprintf(out, 32, "%llds", (long long)s);
    else if (m < 10)
        snprintf(out, 32, s % 60 ? "%lldm%llds" : "%lldm", (long long)m, (long long)(s % 60));
    else if (m < 180)
        snprintf(out, 32, "%lldm", (long long)m);
    else if (h < 8)
        snprintf(out, 32, m % 60 ? "%lldh%lldm" : "%lldh", (long long)h, (long long)(m % 60));
    else if (h < 48)
        snprintf(out, 32, "%lldh", (long long)h);
    else if (h < 24 * 8)
        snprintf(out, 32, h % 24 ? "%lldd%lldh" : "%lldd", (long long)d, (long long)(h % 24));
    else if (d < 365 * 2)
        snprintf(out, 32, "%lldd", (long long)d);
    else
        snprintf(out, 32, "%lldy", (long long)(d / 365));
    return out;
}

static void age_since(const json_t *obj, const char *field, int64_t now, char *out)
{
    int64_t t;
    const char *text = json_string_value(kpath(obj, field));
    if (!text || clock_parse(text, &t) < 0)
        snprintf(out, 32, "<unknown>");
    else
        table_age(now - t, out);
}

static json_t *column(const char *name, const char *type, const char *format, int priority)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", name, "type", type, "format", format,
                     "description", "", "priority", priority);
}

static json_t *columns(const struct resource *res)
{
    json_t *c = json_array();
    json_array_append_new(c, column("Name", "string", "name", 0));
    switch (res->table) {
    case TABLE_POD:
        json_array_append_new(c, column("Ready", "string", "", 0));
        json_array_append_new(c, column("Status", "string", "", 0));
        json_array_append_new(c, column("Restarts", "string", "", 0));
        json_array_append_new(c, column("Age", "string", "", 0));
        json_array_append_new(c, column("IP", "string", "", 1));
        json_array_append_new(c, column("Node", "string", "", 1));
        break;
    case TABLE_NODE:
        json_array_append_new(c, column("Status", "string", "", 0));
        json_array_append_new(c, column("Roles", "string", "", 0));
        json_array_append_new(c, column("Age", "string", "", 0));
        json_array_append_new(c, column("Version", "string", "", 0));
        json_array_append_new(c, column("Internal-IP", "string", "", 1));
        break;
    case TABLE_EVENT: /* the event table leads with Last Seen, not Name */
        json_array_clear(c);
        json_array_append_new(c, column("Last Seen", "string", "", 0));
        json_array_append_new(c, column("Type", "string", "", 0));
        json_array_append_new(c, column("Reason", "string", "", 0));
        json_array_append_new(c, column("Object", "string", "", 0));
        json_array_append_new(c, column("Message", "string", "", 0));
        json_array_append_new(c, column("Name", "string", "name", 1));
        break;
    case TABLE_SERVICE:
        json_array_append_new(c, column("Type", "string", "", 0));
        json_array_append_new(c, column("Cluster-IP", "string", "", 0));
        json_array_append_new(c, column("Age", "string", "", 0));
        break;
    case TABLE_JOB:
        json_array_append_new(c, column("State", "string", "", 0));
        /* fall through */
    case TABLE_NAMESPACE:
    case TABLE_GENERIC:
        if (res->table == TABLE_NAMESPACE)
            json_array_append_new(c, column("Status", "string", "", 0));
        json_array_append_new(c, column("Age", "date", "", 0));
        break;
    }
    return c;
}

/* The STATUS, READY and RESTARTS cells of a pod, after printPod(). */
static void pod_cells(const json_t *pod, json_t *cells, int64_t now)
{
    const json_t *st = json_object_get(pod, "status");
    const char *reason = kstr(st, "phase");
    if (kstr(st, "reason")[0])
        reason = kstr(st, "reason");
    json_t *cs = json_object_get(st, "containerStatuses");
    size_t total = json_array_size(json_object_get(kpath(pod, "spec"), "containers"));
    int ready = 0, restarts = 0;
    int64_t last_restart = 0;
    bool running = false;
    for (size_t i = json_array_size(cs); i-- > 0;) {
        json_t *c = json_array_get(cs, i);
        restarts += (int)jsonx_int(c, "restartCount", 0);
        int64_t fin;
        const char *f = json_string_value(kpath(c, "lastState.terminated.finishedAt"));
        if (f && clock_parse(f, &fin) == 0 && fin > last_restart)
            last_restart = fin;
        const char *w = json_string_value(kpath(c, "state.waiting.reason"));
        const char *t = json_string_value(kpath(c, "state.terminated.reason"));
        if (w && w[0]) {
            reason = w;
        } else if (t && t[0]) {
            reason = t;
        } else if (kpath(c, "state.running") && json_is_true(json_object_get(c, "ready"))) {
            ready++;
            running = true;
        } else if (kpath(c, "state.running")) {
            running = true;
        }
    }
    if (!strcmp(reason, "Completed") && running)
        reason = "Running";
    if (kpath(pod, "metadata.deletionTimestamp"))
        reason = !strcmp(kstr(st, "reason"), "NodeLost") ? "Unknown" : "Terminating";
    char buf[64], age[32];
    snprintf(buf, sizeof(buf), "%d/%zu", ready, total);
    json_array_append_new(cells, json_string(buf));
    json_array_append_new(cells, json_string(reason));
    if (last_restart && restarts)
        snprintf(buf, sizeof(buf), "%d (%s ago)", restarts, table_age(now - last_restart, age));
    else
        snprintf(buf, sizeof(buf), "%d", restarts);
    json_array_append_new(cells, json_string(buf));
}

static const char *node_status(const json_t *node, char *out, size_t size)
{
    const char *ready = "Unknown";
    size_t i;
    json_t *c;
    json_array_foreach (kpath(node, "status.conditions"), i, c)
        if (!strcmp(kstr(c, "type"), "Ready"))
            ready = !strcmp(kstr(c, "status"), "True") ? "Ready" : "NotReady";
    snprintf(out, size, "%s%s", ready,
             json_is_true(kpath(node, "spec.unschedulable")) ? ",SchedulingDisabled" : "");
    return out;
}

static const char *internal_ip(const json_t *node)
{
    size_t i;
    json_t *a;
    json_array_foreach (kpath(node, "status.addresses"), i, a)
        if (!strcmp(kstr(a, "type"), "InternalIP"))
            return kstr(a, "address");
    return "<none>";
}

static json_t *row_cells(const struct resource *res, const json_t *o, int64_t now)
{
    json_t *cells = json_array();
    char age[32], buf[128];
    const char *name = kstr(json_object_get(o, "metadata"), "name");
    age_since(o, "metadata.creationTimestamp", now, age);
    if (res->table != TABLE_EVENT)
        json_array_append_new(cells, json_string(name));
    switch (res->table) {
    case TABLE_POD:
        pod_cells(o, cells, now);
        json_array_append_new(cells, json_string(age));
        json_array_append_new(cells, json_string(kstr(kpath(o, "status"), "podIP")[0]
                                                     ? kstr(kpath(o, "status"), "podIP")
                                                     : "<none>"));
        json_array_append_new(cells, json_string(kstr(kpath(o, "spec"), "nodeName")[0]
                                                     ? kstr(kpath(o, "spec"), "nodeName")
                                                     : "<none>"));
        break;
    case TABLE_NODE:
        json_array_append_new(cells, json_string(node_status(o, buf, sizeof(buf))));
        json_array_append_new(cells, json_string("<none>"));
        json_array_append_new(cells, json_string(age));
        json_array_append_new(cells,
                              json_string(kstr(kpath(o, "status.nodeInfo"), "kubeletVersion")));
        json_array_append_new(cells, json_string(internal_ip(o)));
        break;
    case TABLE_EVENT:
        age_since(o, json_string_value(kpath(o, "lastTimestamp")) ? "lastTimestamp" : "eventTime",
                  now, age);
        json_array_append_new(cells, json_string(age));
        json_array_append_new(cells, json_string(kstr(o, "type")));
        json_array_append_new(cells, json_string(kstr(o, "reason")));
        snprintf(buf, sizeof(buf), "%s/%s", kstr(kpath(o, "involvedObject"), "kind"),
                 kstr(kpath(o, "involvedObject"), "name"));
        for (char *p = buf; *p && *p != '/'; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        json_array_append_new(cells, json_string(buf));
        json_array_append_new(cells, json_string(kstr(o, "message")));
        json_array_append_new(cells, json_string(name));
        break;
    case TABLE_SERVICE:
        json_array_append_new(cells, json_string(kstr(kpath(o, "spec"), "type")[0]
                                                     ? kstr(kpath(o, "spec"), "type")
                                                     : "ClusterIP"));
        json_array_append_new(cells, json_string(kstr(kpath(o, "spec"), "clusterIP")));
        json_array_append_new(cells, json_string(age));
        break;
    case TABLE_JOB: {
        json_t *conds = kpath(o, "status.conditions");
        json_t *last = json_array_get(conds, json_array_size(conds) - 1);
        json_array_append_new(cells, json_string(kstr(last, "type")));
        json_array_append_new(cells, json_string(age));
        break;
    }
    case TABLE_NAMESPACE:
        json_array_append_new(cells, json_string(kstr(kpath(o, "status"), "phase")));
        /* fall through */
    case TABLE_GENERIC:
        json_array_append_new(cells, json_string(age));
        break;
    }
    return cells;
}

static json_t *row_object(const json_t *o, const char *include)
{
    if (include && !strcmp(include, "None"))
        return json_null();
    if (include && !strcmp(include, "Object"))
        return json_incref((json_t *)o);
    return json_pack("{s:s, s:s, s:O}", "kind", "PartialObjectMetadata", "apiVersion",
                     "meta.k8s.io/v1", "metadata", json_object_get(o, "metadata"));
}

json_t *table_render(const struct resource *res, json_t *const *objs, size_t n, const char *include,
                     int64_t now)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(rows, json_pack("{s:o, s:o}", "cells", row_cells(res, objs[i], now),
                                              "object", row_object(objs[i], include)));
    return json_pack("{s:s, s:s, s:{}, s:o, s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
                     "metadata", "columnDefinitions", columns(res), "rows", rows);
}
