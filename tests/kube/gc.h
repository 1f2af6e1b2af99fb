/*
 * gc: deletion as the API server and the garbage collector do it. An object with finalizers,
 * a foreground deletion, or a running pod (graceful termination) is only marked with
 * metadata.deletionTimestamp; everything else is removed at once. Dependents (objects whose
 * ownerReferences name the owner's uid) are deleted (Background, Foreground) or released
 * (Orphan). All functions need the world lock held.
 */
#ifndef KS_GC_H
#define KS_GC_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"
#include "tests/kube/resource.h"

struct world;

/* propagation: "Background" (default), "Foreground" or "Orphan". grace_seconds < 0 takes the
 * pod's terminationGracePeriodSeconds; 0 removes a pod at once. Returns the object to answer
 * with (new reference): the marked object, or the last version of a removed one. */
json_t *gc_delete(struct world *w, const struct resource *res, const char *ns, const char *name,
                  const char *propagation, int64_t grace_seconds, struct err *err);
/* Removes obj when it is marked for deletion and has no finalizers left; true when removed. */
bool gc_finalize(struct world *w, const struct resource *res, const json_t *obj);
/* Completes foreground deletions whose dependents are gone (called by the simulation loop). */
void gc_tick(struct world *w);
/* The uid of an object a controller creates for owner_uid under name (a TrainJob's Job): a
 * deterministic UUID so that the garbage collector can find the grandchildren. out >= 37. */
char *gc_child_uid(const char *owner_uid, const char *name, char *out);

#endif
