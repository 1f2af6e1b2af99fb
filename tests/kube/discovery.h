/*
 * discovery: the documents kubectl reads before anything else: /version, /api, /apis,
 * /apis/<group>, the APIResourceList of each group/version, and a minimal OpenAPI v3 that tells
 * kubectl the server validates fields itself (so `kubectl create -f` needs no schema).
 */
#ifndef KS_DISCOVERY_H
#define KS_DISCOVERY_H

#include <stdbool.h>

#include "tests/kube/http.h"

/* Answers a discovery or OpenAPI path; returns false when path is not one. */
bool discovery_handle(struct request *req, struct reply *rep);
/* The APIResourceList of a served group/version. New reference. */
json_t *discovery_resource_list(const char *group, const char *version);

#endif
