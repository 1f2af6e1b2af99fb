/*
 * store/templates: named job templates (a job spec with ${VARIABLES}, see
 * trigger/jobtemplate.h). The store keeps the text; validation happens in the API.
 * Readers get heap copies that they free with template_def_free() / template_defs_free().
 */
#ifndef TY_STORE_TEMPLATES_H
#define TY_STORE_TEMPLATES_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

struct template_def {
    int64_t pk;
    char *name;
    char *description;
    char *spec; /* JSON text */
    char *created_by;
    int64_t created_at, updated_at;
    int ntriggers; /* triggers that run it (reads only) */
};

/* A new or replaced template; pointers are borrowed for the call. */
struct template_put {
    const char *name;
    const char *description;
    const char *spec;
    const char *actor;      /* for created_by and the audit trail */
    const char *request_id; /* for the audit trail */
    int64_t now;
};

/* Inserts; ERR_CONFLICT when the name is taken. Audits "template.create" in the same write. */
int store_template_insert(struct store *st, const struct template_put *t, struct err *err);
/* Replaces description and spec; ERR_NOT_FOUND when absent. Audits "template.update". */
int store_template_update(struct store *st, const struct template_put *t, struct err *err);
/* Deletes; ERR_NOT_FOUND, or ERR_CONFLICT while a trigger runs it. Audits "template.delete". */
int store_template_delete(struct store *st, const char *name, const char *actor,
                          const char *request_id, struct err *err);

/* The template (caller frees with template_def_free) or NULL with ERR_NOT_FOUND. */
struct template_def *store_template_get(struct store *st, const char *name, struct err *err);
/* Every template by name; caller frees with template_defs_free. */
int store_template_list(struct store *st, struct template_def ***out, size_t *n, struct err *err);
void template_def_free(struct template_def *t);
void template_defs_free(struct template_def **t, size_t n);

#endif
