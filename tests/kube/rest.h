/*
 * rest: the resource verbs of the API server (get, list, create, update, patch, delete,
 * deletecollection) on the store, with admission, selectors, pagination and Table output.
 * Watches go to watch.c and pods/log to logs.c; both are reached through rest_handle().
 */
#ifndef KS_REST_H
#define KS_REST_H

#include "tests/kube/http.h"
#include "tests/kube/resource.h"

struct target {
    const struct resource *res;
    const struct resource *store_res; /* whose objects are stored: res, or what res views */
    char ns[254];                     /* "" for cluster-scoped resources or all namespaces */
    char name[254];                   /* "" for a collection */
    char sub[32];                     /* "" or a subresource: status, log */
    const char *verb;
};

void rest_handle(struct request *req, const struct target *t, struct reply *rep);

/* The object as t's resource presents it (events.k8s.io/v1 converts). New reference. */
json_t *rest_present(const struct target *t, json_t *obj);
/* Answers with a Status for err (details from t). */
void rest_error(struct reply *rep, const struct target *t, const struct err *err);

#endif
