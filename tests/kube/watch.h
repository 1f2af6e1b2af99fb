/*
 * watch: the watch hub. A GET with watch=true becomes a chunked stream of
 * {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}} lines read from the store's
 * history, with resourceVersion semantics (unset or "0": current objects as ADDED first), label
 * and field selectors (objects entering or leaving the selection appear as ADDED or DELETED),
 * allowWatchBookmarks, sendInitialEvents, timeoutSeconds, and one ERROR event with a 410 Status
 * when the requested resourceVersion is older than the kept history.
 */
#ifndef KS_WATCH_H
#define KS_WATCH_H

#include "tests/kube/rest.h"

void watch_handle(struct request *req, const struct target *t, struct reply *rep);

#endif
