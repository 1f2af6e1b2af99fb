/*
 * jobtemplate_internal: the walk over a job template. jobtemplate.c (the walk over the JSON,
 * the variables block, validate and render) and jobtemplate_subst.c (one string: references,
 * substitution, names and label values) are one module in two files around struct walk: the
 * walk owns the path and the errors, a string's substitution reads its values and variables.
 * jobtemplate_values.c (values and variable names) needs no walk, only its functions are
 * here. Not for use outside these files. A walk lives on the caller's stack for one validate
 * or render call; nothing here keeps state between calls.
 */
#ifndef TY_JOBTEMPLATE_INTERNAL_H
#define TY_JOBTEMPLATE_INTERNAL_H

#include <stdbool.h>

#include "core/buf.h"
#include "trigger/jobtemplate.h"

#define DEPTH_MAX   32
#define VALUE_MAX   (64 * 1024)
#define VARNAME_MAX 64

/* Where a string sits in the template, which decides what substitution does to it. */
enum place { PLACE_NONE, PLACE_NAME, PLACE_LABEL, PLACE_ARG, PLACE_ENV, PLACE_SCRIPT };

struct walk {
    const json_t *tmpl;
    const json_t *vars;                    /* "variables", or NULL */
    const struct jobtemplate_values *vals; /* NULL when only validating */
    long script_cmd, script_args;          /* index of a shell script in command / args */
    const char *tok[DEPTH_MAX];
    long index[DEPTH_MAX]; /* array index of tok[i], or -1 for an object key */
    char idx[DEPTH_MAX][24];
    int ntok;
    struct buf inline_names; /* "NAME\n" for each ${NAME:-default} seen */
    struct err *err;
};

/* A reference ${NAME} or ${NAME:-default}; the strings point into the template. */
struct ref {
    const char *name, *def;
    size_t nlen, dlen, len; /* len: bytes of the whole ${...} */
    bool has_def;
};

/* jobtemplate.c */
/* Records a problem (fmt with one %s, arg) at the walk's current JSON pointer; returns -1. */
int jobtemplate_problem(struct walk *w, const char *fmt, const char *arg);

/* jobtemplate_subst.c */
/* A built-in or a variable declared in /variables. */
bool jobtemplate_known(const struct walk *w, const struct ref *r);
/* True when s holds a well-formed reference (not escaped by "$$"). */
bool jobtemplate_has_ref(const char *s);
/* Appends s to out, its references substituted for its place (placeholders when validating);
 * strings outside the substitution places are copied unchanged and only checked. */
int jobtemplate_expand(struct walk *w, const char *s, enum place place, struct buf *out);
/* Checks (validating) or trims and checks (rendering) the name once expanded. */
int jobtemplate_check_name(struct walk *w, struct buf *b);
/* Checks (validating) or cuts and trims (rendering) a label value once expanded. */
int jobtemplate_finish_label(struct walk *w, struct buf *b);

/* jobtemplate_values.c */
bool jobtemplate_name_char(char c, bool first);
/* [A-Za-z_][A-Za-z0-9_]*, at most VARNAME_MAX bytes. */
bool jobtemplate_valid_name(const char *s);
bool jobtemplate_is_builtin(const char *name, size_t nlen);
/* The value of name (nlen bytes) in v, NULL when unset or v is NULL (borrowed from v). */
const char *jobtemplate_value_of(const struct jobtemplate_values *v, const char *name, size_t nlen);

#endif
