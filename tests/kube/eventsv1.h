/*
 * eventsv1: the events.k8s.io/v1 view of core/v1 Events. kube-apiserver stores one kind of
 * Event and serves it under both groups; so do we: events.k8s.io/v1 reads (get, list, watch)
 * convert the stored core/v1 Event on the way out, and its field selectors (regarding.*,
 * reportingController) are mapped onto the core fields. Writes through this group are refused.
 */
#ifndef KS_EVENTSV1_H
#define KS_EVENTSV1_H

#include <jansson.h>

#include "tests/kube/selector.h"

/* The events.k8s.io/v1 form of a core/v1 Event. New reference. */
json_t *eventsv1_from_core(const json_t *core);
/* Renames events.k8s.io/v1 field selector keys to the core/v1 ones, in place. */
void eventsv1_map_fields(struct selector *s);

#endif
