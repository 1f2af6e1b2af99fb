/*
 * eventsv1: conversion after kubernetes/pkg/apis/events/v1 (regarding = involvedObject,
 * note = message, reportingController = reportingComponent or source.component,
 * deprecated* = the core timestamps, count and source). Pure functions; thread-safe.
 */
#include "tests/kube/eventsv1.h"

#include "core/xalloc.h"
#include "tests/kube/world.h"

static void copy(json_t *to, const char *to_key, const json_t *from, const char *from_key)
{
    json_t *v = json_object_get(from, from_key);
    if (v)
        json_object_set(to, to_key, v);
}

json_t *eventsv1_from_core(const json_t *core)
{
    json_t *e = json_pack("{s:s, s:s}", "apiVersion", "events.k8s.io/v1", "kind", "Event");
    copy(e, "metadata", core, "metadata");
    copy(e, "eventTime", core, "eventTime");
    copy(e, "regarding", core, "involvedObject");
    copy(e, "related", core, "related");
    copy(e, "note", core, "message");
    copy(e, "reason", core, "reason");
    copy(e, "type", core, "type");
    copy(e, "action", core, "action");
    const char *controller = kstr(core, "reportingComponent");
    const char *instance = kstr(core, "reportingInstance");
    json_object_set_new(
        e, "reportingController",
        json_string(controller[0] ? controller : kstr(kpath(core, "source"), "component")));
    json_object_set_new(e, "reportingInstance",
                        json_string(instance[0] ? instance : kstr(kpath(core, "source"), "host")));
    copy(e, "deprecatedSource", core, "source");
    copy(e, "deprecatedFirstTimestamp", core, "firstTimestamp");
    copy(e, "deprecatedLastTimestamp", core, "lastTimestamp");
    copy(e, "deprecatedCount", core, "count");
    return e;
}

void eventsv1_map_fields(struct selector *s)
{
    for (size_t i = 0; i < s->n; i++) {
        char *k = s->reqs[i].key;
        char *mapped = NULL;
        if (!strncmp(k, "regarding.", 10))
            mapped = xasprintf("involvedObject.%s", k + 10);
        else if (!strcmp(k, "reportingController"))
            mapped = xstrdup("reportingComponent");
        if (mapped) {
            free(k);
            s->reqs[i].key = mapped;
        }
    }
}
