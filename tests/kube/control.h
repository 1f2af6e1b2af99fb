/*
 * control: the test-only API under /_test/ (never used by kubectl, no authentication), with
 * which tests steer the simulated cluster: make a rank exit or be OOM-killed, restart a
 * container, make a container print lines, lose/delete/recover a node or set a node condition,
 * expire every watch (so the next watch from an old resourceVersion gets 410), refuse the next
 * N requests with a chosen Status, change the simulation speed, revoke or mint tokens, and
 * read counters. Every call is a POST with a JSON body (GET for /_test/state); see
 * docs/kube-testserver.md.
 */
#ifndef KS_CONTROL_H
#define KS_CONTROL_H

#include "tests/kube/http.h"

void control_handle(struct request *req, struct reply *rep);

#endif
