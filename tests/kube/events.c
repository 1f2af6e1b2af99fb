/*
 * events: Event objects named "<object>.<16 hex>", stored in the object's namespace ("default"
 * for cluster-scoped objects such as nodes). An index from (uid, reason, message) to the event
 * name implements aggregation. Lock: world lock held by callers.
 */
#include "tests/kube/events.h"

#include <stdarg.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

static const struct resource *events_res(void)
{
    return resource_lookup("", "v1", "events");
}

static bool bump(struct world *w, const char *ns, const char *name)
{
    json_t *ev = store_get(w->store, events_res(), ns, name);
    if (!ev)
        return false;
    json_t *copy = json_deep_copy(ev);
    json_object_set_new(copy, "count", json_integer(jsonx_int(copy, "count", 1) + 1));
    ktime_set(copy, "lastTimestamp", clock_now_ns());
    store_replace(w->store, events_res(), copy, NULL);
    return true;
}

void events_emit(struct world *w, const json_t *obj, const struct event_source *src,
                 const char *type, const char *reason, const char *field_path, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const json_t *m = json_object_get(obj, "metadata");
    const char *ns = kstr(m, "namespace")[0] ? kstr(m, "namespace") : "default";
    char key[1400];
    snprintf(key, sizeof(key), "%s/%s/%s", kstr(m, "uid"), reason, msg);
    const char *known = json_string_value(json_object_get(w->event_index, key));
    if (!w->remote && known && bump(w, ns, known))
        return;
    unsigned char rnd[8];
    char hex[17], name[320];
    crypto_random(rnd, sizeof(rnd));
    crypto_hex(rnd, sizeof(rnd), hex);
    snprintf(name, sizeof(name), "%s.%s", kstr(m, "name"), hex);
    json_t *involved =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", kstr(obj, "kind"), "name", kstr(m, "name"),
                  "uid", kstr(m, "uid"), "apiVersion", kstr(obj, "apiVersion"), "resourceVersion",
                  kstr(m, "resourceVersion"));
    if (kstr(m, "namespace")[0])
        json_object_set_new(involved, "namespace", json_string(kstr(m, "namespace")));
    if (field_path)
        json_object_set_new(involved, "fieldPath", json_string(field_path));
    json_t *source = json_pack("{s:s}", "component", src->component);
    if (src->host)
        json_object_set_new(source, "host", json_string(src->host));
    json_t *ev = json_pack("{s:{s:s, s:s}, s:o, s:s, s:s, s:o, s:i, s:s, s:n, s:s, s:s}",
                           "metadata", "name", name, "namespace", ns, "involvedObject", involved,
                           "reason", reason, "message", msg, "source", source, "count", 1, "type",
                           type, "eventTime", "reportingComponent", src->component,
                           "reportingInstance", src->host ? src->host : "");
    int64_t now = clock_now_ns();
    ktime_set(ev, "firstTimestamp", now);
    ktime_set(ev, "lastTimestamp", now);
    if (w->remote) {
        w->remote->event(w->remote->ctx, key, ev);
        return;
    }
    if (store_create(w->store, events_res(), ev, NULL))
        json_object_set_new(w->event_index, key, json_string(name));
}
