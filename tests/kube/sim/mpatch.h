/*
 * mpatch: JSON merge patches (RFC 7386), the only patch form custom resources take. The
 * simulator keeps its own changes to an object as the patch between the server's last version
 * and its local copy, sends that patch, and re-applies it to every newer version the server
 * reports (mirror.c), so that its copy is always the server's plus what it has not sent yet.
 */
#ifndef KSIM_MPATCH_H
#define KSIM_MPATCH_H

#include <stdbool.h>

#include <jansson.h>

/* The merge patch that turns from into to (new reference; an empty object when they are
 * equal). Fields the server owns are left out: apiVersion, kind, and metadata's uid,
 * resourceVersion, creationTimestamp, generation, managedFields, selfLink, deletionTimestamp
 * and deletionGracePeriodSeconds. A null member and a missing one are equal. */
json_t *mpatch_diff(const json_t *from, const json_t *to);
/* Applies patch to target in place: objects merge, null removes, anything else replaces. */
void mpatch_apply(json_t *target, const json_t *patch);
/* True when the patch changes nothing. */
bool mpatch_empty(const json_t *patch);

#endif
