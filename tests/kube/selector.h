/*
 * selector: Kubernetes label selectors (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
 * `!a`, `a>1`, `a<1`, comma = AND) and field selectors (`f=v`, `f==v`, `f!=v`, comma = AND, `\`
 * escapes), parsed once and matched against many objects.
 *
 * Ownership: struct selector lives in the caller's storage (selector_init/selector_release) and
 * owns its strings.
 */
#ifndef KS_SELECTOR_H
#define KS_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

enum sel_op { SEL_EQ, SEL_NEQ, SEL_IN, SEL_NOTIN, SEL_EXISTS, SEL_NOT_EXISTS, SEL_GT, SEL_LT };

struct sel_req {
    char *key;
    enum sel_op op;
    char **values;
    size_t nvalues;
};

struct selector {
    struct sel_req *reqs;
    size_t n;
};

void selector_init(struct selector *s);
void selector_release(struct selector *s);

/* Parses text (NULL or "" selects everything). ERR_INVALID with the Kubernetes wording. */
int selector_parse_labels(struct selector *s, const char *text, struct err *err);
int selector_parse_fields(struct selector *s, const char *text, struct err *err);

/* Looks up the value of key on the object being matched; NULL when absent. */
typedef const char *(*selector_lookup_fn)(const char *key, void *ctx);

bool selector_match(const struct selector *s, selector_lookup_fn lookup, void *ctx);
/* Matches against a metadata.labels object (NULL = no labels). */
bool selector_match_labels(const struct selector *s, const json_t *labels);
/* Matches a field selector against obj: each key is a dotted path, an absent field is "", a
 * boolean is "true"/"false". Callers check the keys are allowed with selector_fields_allowed(). */
bool selector_match_fields(const struct selector *s, const json_t *obj);
/* Returns the first key not in the space separated allowed list, or NULL when all are allowed
 * (metadata.name and metadata.namespace always are). */
const char *selector_fields_allowed(const struct selector *s, const char *allowed);

#endif
