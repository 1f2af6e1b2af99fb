/*
 * list: LIST and DELETECOLLECTION with label and field selectors and pagination
 * (limit/continue, 410 Expired for a continue token older than the history), and the
 * filtering that watch.c shares.
 */
#ifndef KS_LIST_H
#define KS_LIST_H

#include <stdbool.h>

#include "tests/kube/rest.h"
#include "tests/kube/selector.h"

struct list_query {
    struct selector labels;
    struct selector fields;
};

/* Parses labelSelector and fieldSelector (400 BadRequest on error). Caller releases. */
int list_query_parse(struct request *req, const struct target *t, struct list_query *q,
                     struct err *err);
void list_query_release(struct list_query *q);
/* True when obj is in t's namespace (if any) and matches both selectors. */
bool list_query_match(const struct list_query *q, const struct target *t, const json_t *obj);

void list_handle(struct request *req, const struct target *t, struct reply *rep);
/* Deletes every namespaced object in ns (a namespace was deleted). World lock held. */
void list_delete_namespace(struct world *w, const char *ns);

#endif
