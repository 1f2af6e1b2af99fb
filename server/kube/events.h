/*
 * events: a Kubernetes Event (core/v1) about a job's object or one of its pods, as an entry of
 * the trainyard job's timeline (source "kubernetes"). The Event's uid is the entry's ext_id, so
 * the same Event seen again (a re-list, a daemon restart) is stored once.
 * Pure; thread-safe.
 */
#ifndef TY_KUBE_EVENTS_H
#define TY_KUBE_EVENTS_H

#include <jansson.h>
#include <stdbool.h>

#include "store/jobs.h"

/* Owns the strings a converted event points to. */
struct kube_event {
    struct job_event e;
    char type[32];
    char reason[128];
    char message[1024];
    char ext_id[64];
};

/* The involved object of ev: kind, name, uid (borrowed from ev; "" when absent). */
void kube_event_subject(const json_t *ev, const char **kind, const char **name, const char **uid);
/* Converts ev for the job timeline; rank is the pod's first rank (-1: the job). Returns false
 * when ev is not an event worth keeping. */
bool kube_event_convert(const json_t *ev, int rank, struct kube_event *out);

#endif
