/*
 * logquery: the query parameters of the log routes, checked strictly: an unknown parameter or
 * a bad value is a 400 naming the parameter.
 */
#ifndef TY_LOGQUERY_H
#define TY_LOGQUERY_H

#include "api/api.h"
#include "api/logfmt.h"
#include "store/logmatch.h"
#include "store/jobs.h"
#include "store/logs.h"

enum logq_kind { LOGQ_READ, LOGQ_DOWNLOAD, LOGQ_SEARCH };

struct logquery {
    struct log_query q;
    struct logfmt fmt;
    bool follow;
    int context; /* search: lines of context before and after a match */
    uint64_t *ranks;
    struct logmatch match;
    bool has_match;
};

/* Fills out from the request; -1 with a 400 response when a parameter is wrong. */
int logquery_parse(struct request *req, struct response *res, const struct job *job,
                   enum logq_kind kind, struct logquery *out);
void logquery_release(struct logquery *lq);

#endif
