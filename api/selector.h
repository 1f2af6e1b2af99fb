/*
 * selector: Kubernetes-style label selectors ("team=ml,env!=prod,tier in (a,b),!legacy") for
 * GET /v1/jobs?selector=..., parsed into store/jobs.h requirements.
 */
#ifndef TY_SELECTOR_H
#define TY_SELECTOR_H

#include "store/jobs.h"

/* Parses text into *out (caller frees with selector_free). ERR_INVALID naming the bad term;
 * more than max_terms terms, or a set of more than max_terms values, is ERR_INVALID with
 * err->reason "max_terms" (each is a clause of the store's query: ~1,000 of them passed
 * SQLite's expression depth and answered 500). */
int selector_parse(const char *text, size_t max_terms, struct label_req **out, size_t *n,
                   struct err *err);
void selector_free(struct label_req *reqs, size_t n);

#endif
