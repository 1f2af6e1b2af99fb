/*
 * prom: the Prometheus text format (version 0.0.4) that GET /metrics answers with. Every family
 * is written the same way: "# HELP" and "# TYPE" once, then its samples, so a family cannot go
 * out without them; label values are escaped (\\, \", \n) so a job name cannot break a line.
 *
 *   struct prom p;
 *   prom_init(&p, out);
 *   prom_family(&p, "trainyard_jobs", PROM_GAUGE, "Jobs stored, by state.");
 *   prom_sample(&p, NULL, 3, "state", "running", NULL);   // trainyard_jobs{state="running"} 3
 *   prom_scalar(&p, "trainyard_job_starts_total", PROM_COUNTER, "Job attempts started.", 7);
 *
 * Names, label names and help texts are the caller's constants (checked by assert); label values
 * may be anything. Values are printed exactly: integers as integers, other numbers with the
 * fewest digits that read back the same, NaN and infinities as Prometheus spells them.
 *
 * Ownership: the buffer is the caller's; struct prom lives in the caller's storage and needs no
 * release. Not thread-safe (one writer per buffer).
 */
#ifndef TY_PROM_H
#define TY_PROM_H

#include "core/buf.h"

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM, PROM_SUMMARY };

struct prom {
    struct buf *out;
    const char *family; /* the family being written (borrowed), NULL before the first */
};

void prom_init(struct prom *p, struct buf *out);

/* Starts a family: its HELP and TYPE lines. name and help must outlive the family's samples. */
void prom_family(struct prom *p, const char *name, enum prom_type type, const char *help);

/* One sample of the current family: name, then suffix when not NULL ("_bucket", "_sum",
 * "_count" of a histogram or summary), then the labels, given as name, value pairs ended by a
 * NULL name (so an optional last label is left out by passing NULL as its name), then value. */
void prom_sample(struct prom *p, const char *suffix, double value, ...) __attribute__((sentinel));

/* A family with one sample and no labels. */
void prom_scalar(struct prom *p, const char *name, enum prom_type type, const char *help,
                 double value);

/* Appends v as a sample value. Exposed for tests. */
void prom_value(struct buf *out, double v);

#endif
