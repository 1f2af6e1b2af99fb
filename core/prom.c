/*
 * prom: the text exposition format (see prom.h). Appends to the caller's buffer without
 * printf where it can: a scrape writes a few thousand lines and is done on an HTTP thread.
 */
#include "core/prom.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = { "counter", "gauge", "histogram", "summary" };

#ifndef NDEBUG
/* [a-zA-Z_:][a-zA-Z0-9_:]* (label names may not use ':', which callers do not). */
static bool valid_name(const char *s)
{
    if (!s || !*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == ':'))
            return false;
    return true;
}
#endif

void prom_init(struct prom *p, struct buf *out)
{
    p->out = out;
    p->family = NULL;
}

void prom_family(struct prom *p, const char *name, enum prom_type type, const char *help)
{
    assert(valid_name(name) && help && *help);
    assert(type >= PROM_COUNTER && type <= PROM_SUMMARY);
    p->family = name;
    buf_puts(p->out, "# HELP ");
    buf_puts(p->out, name);
    buf_putc(p->out, ' ');
    for (const char *c = help; *c; c++) {
        if (*c == '\\')
            buf_puts(p->out, "\\\\");
        else if (*c == '\n')
            buf_puts(p->out, "\\n");
        else
            buf_putc(p->out, *c);
    }
    buf_puts(p->out, "\n# TYPE ");
    buf_puts(p->out, name);
    buf_putc(p->out, ' ');
    buf_puts(p->out, type_names[type]);
    buf_putc(p->out, '\n');
}

static void label_value(struct buf *out, const char *v)
{
    const char *run = v;
    for (; *v; v++) {
        if (*v != '\\' && *v != '"' && *v != '\n')
            continue;
        buf_append(out, run, (size_t)(v - run));
        buf_puts(out, *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : "\\n");
        run = v + 1;
    }
    buf_append(out, run, (size_t)(v - run));
}

void prom_value(struct buf *out, double v)
{
    char text[32];
    if (isnan(v)) {
        buf_puts(out, "NaN");
    } else if (isinf(v)) {
        buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0) { /* 2^53: exact integers */
        buf_put_int(out, (int64_t)v);
    } else {
        /* The shortest of 15 or 17 significant digits that reads back as the same double. */
        snprintf(text, sizeof(text), "%.15g", v);
        if (strtod(text, NULL) != v)
            snprintf(text, sizeof(text), "%.17g", v);
        buf_puts(out, text);
    }
}

void prom_sample(struct prom *p, const char *suffix, double value, ...)
{
    assert(p->family);
    buf_puts(p->out, p->family);
    if (suffix)
        buf_puts(p->out, suffix);
    va_list ap;
    va_start(ap, value);
    const char *name = va_arg(ap, const char *);
    for (int n = 0; name; n++) {
        const char *v = va_arg(ap, const char *);
        assert(valid_name(name) && v);
        buf_putc(p->out, n ? ',' : '{');
        buf_puts(p->out, name);
        buf_puts(p->out, "=\"");
        label_value(p->out, v ? v : "");
        buf_putc(p->out, '"');
        name = va_arg(ap, const char *);
        if (!name)
            buf_putc(p->out, '}');
    }
    va_end(ap);
    buf_putc(p->out, ' ');
    prom_value(p->out, value);
    buf_putc(p->out, '\n');
}

void prom_scalar(struct prom *p, const char *name, enum prom_type type, const char *help,
                 double value)
{
    prom_family(p, name, type, help);
    prom_sample(p, NULL, value, NULL);
}
