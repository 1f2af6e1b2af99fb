/*
 * events: core/v1 Events as the kubelet, scheduler and controllers record them, aggregated like
 * client-go's EventRecorder: the same object, reason and message bump `count` and
 * `lastTimestamp` of one Event instead of creating another.
 */
#ifndef KS_EVENTS_H
#define KS_EVENTS_H

#include <jansson.h>

struct world;

struct event_source {
    const char *component; /* "kubelet", "default-scheduler", "pytorchjob-controller" */
    const char *host;      /* node name for the kubelet, else NULL */
};

/* Records an event about obj (borrowed). type: "Normal" or "Warning". field_path: e.g.
 * "spec.containers{pytorch}" or NULL. World lock held. */
void events_emit(struct world *w, const json_t *obj, const struct event_source *src,
                 const char *type, const char *reason, const char *field_path, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

#endif
