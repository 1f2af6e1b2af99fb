/*
 * resource: the table of every resource the test API server serves, the one place that says
 * which group, version, kind and scope each has. Discovery, routing, selectors, tables and the
 * store are all driven by it.
 */
#ifndef KS_RESOURCE_H
#define KS_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>

enum table_kind {
    TABLE_GENERIC, /* NAME, AGE */
    TABLE_JOB,     /* NAME, STATE (last condition type), AGE: the Kubeflow CRDs */
    TABLE_POD,
    TABLE_NODE,
    TABLE_NAMESPACE,
    TABLE_EVENT,
    TABLE_SERVICE,
};

struct resource {
    const char *group; /* "" for the core group */
    const char *version;
    const char *api_version; /* "v1" or "group/version" */
    const char *plural;
    const char *singular;
    const char *kind;
    const char *qualified; /* "pods", "pytorchjobs.kubeflow.org": used in messages */
    bool namespaced;
    bool custom;              /* a CRD: no strategic merge patch, updates need resourceVersion */
    const char *short_names;  /* space separated, "" when none */
    const char *subresources; /* space separated: "status", "log" */
    const char *fields; /* selectable fields beyond metadata.name/namespace, space separated */
    enum table_kind table;
    const char *view_of; /* a read-only view of another core/v1 resource's objects, or NULL */
};

extern const struct resource resource_table[];
extern const size_t resource_count;

/* NULL when the group/version does not serve that plural. */
const struct resource *resource_lookup(const char *group, const char *version, const char *plural);
/* NULL when no served resource has this apiVersion and kind. */
const struct resource *resource_by_kind(const char *api_version, const char *kind);
/* Index into resource_table, for per-resource arrays. */
size_t resource_index(const struct resource *r);
/* True when the group/version is served at all. */
bool resource_group_version(const char *group, const char *version);
/* True when word occurs in the space separated list. */
bool resource_word_in(const char *list, const char *word);

#endif
