/*
 * healthsave: persistence of health entries (see health.h). What an entry would save is built
 * as JSON under its lock and compared, part by part, with what was saved last (a hash of the
 * text), so an unchanged diagnosis is not rewritten every period; the store write is queued
 * after the lock is released.
 */
#include "server/health/health_internal.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "store/findings.h"

enum { PART_DIAG, PART_PROGRESS, PART_STALL, PART_HEALTH };

struct health_save {
    struct diag_save save;
    json_t *parts[4]; /* owned; NULL: unchanged */
    json_t *decision;
};

static uint64_t text_hash(const json_t *v)
{
    char *t = jsonx_dumps(v);
    uint64_t x = 1469598103934665603ull;
    for (const char *p = t; *p; p++)
        x = (x ^ (unsigned char)*p) * 1099511628211ull;
    free(t);
    return x | 1; /* never 0: 0 means "never saved" */
}

/* Keeps part i in p when it differs from what was saved (or force); else drops it. */
static void take(struct health_save *p, struct entry *e, int i, json_t *v, bool force)
{
    if (!v)
        return;
    uint64_t hash = text_hash(v);
    if (!force && hash == e->saved_hash[i]) {
        json_decref(v);
        return;
    }
    e->saved_hash[i] = hash;
    p->parts[i] = v;
}

static void rank_line_info(json_t *o, const struct stall_rank *tl)
{
    jsonx_set_time(o, "last_line_time", tl->last_line_ns);
    json_object_set_new(o, "last_seq", tl->last_seq > 0 ? json_integer(tl->last_seq) : json_null());
    json_object_set_new(o, "last_step", tl->n ? json_integer(tl->steps[tl->n - 1]) : json_null());
}

static json_t *rank_json(const struct entry *e, int rank, const struct stall_rank *tl)
{
    const struct hrank *r = (size_t)rank < e->nranks ? &e->ranks[rank] : NULL;
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(rank));
    jsonx_set_str(o, "node", r && r->node[0] ? r->node : NULL);
    jsonx_set_str(o, "pod", r && r->pod[0] ? r->pod : NULL);
    if (tl) {
        rank_line_info(o, tl);
    } else {
        json_object_set_new(o, "last_line_time", json_null());
        json_object_set_new(o, "last_seq", json_null());
        json_object_set_new(o, "last_step", json_null());
    }
    jsonx_set_time(o, "heartbeat_time", r ? r->heartbeat_ns : 0);
    json_object_set_new(o, "heartbeat_step",
                        r && r->heartbeat_ns ? json_integer(r->heartbeat_step) : json_null());
    json_object_set_new(o, "metrics_dropped", json_integer(r ? r->dropped : 0));
    json_object_set_new(o, "straggler", json_boolean(r && r->straggler));
    if (r && r->preflight)
        json_object_set_new(
            o, "preflight",
            json_pack("{s:b,s:s}", "ok", r->preflight > 0, "detail", r->preflight_detail));
    else
        json_object_set_new(o, "preflight", json_null());
    return o;
}

/* The GPUs and conditions of the nodes the entry's ranks run on. */
static json_t *nodes_json(struct health *h, const struct entry *e)
{
    json_t *nodes = json_object();
    pthread_mutex_lock(&h->nodes_lock);
    for (size_t i = 0; i < e->nranks; i++) {
        const char *name = e->ranks[i].node;
        if (!name[0] || json_object_get(nodes, name))
            continue;
        json_t *o = json_object();
        for (struct nodegpu *n = h->nodes; n; n = n->next) {
            if (strcmp(n->name, name) != 0)
                continue;
            json_object_set(o, "gpus", n->gpus);
            json_object_set(o, "conditions", n->conditions);
            jsonx_set_time(o, "gpus_updated", n->at);
        }
        json_object_set_new(nodes, name, o);
    }
    pthread_mutex_unlock(&h->nodes_lock);
    return nodes;
}

json_t *health_entry_json(struct health *h, struct entry *e)
{
    size_t world = e->world > 0 ? (size_t)e->world : 0;
    size_t max = world > e->nranks ? world : e->nranks;
    struct stall_rank *tl = xcalloc(max + 1, sizeof(*tl));
    size_t k = progress_timelines(diag_progress(e->d), tl, max + 1);
    json_t *ranks = json_array();
    for (size_t r = 0; r < max; r++) {
        const struct stall_rank *mine = NULL;
        for (size_t i = 0; i < k && !mine; i++)
            if (tl[i].rank == (int)r)
                mine = &tl[i];
        json_array_append_new(ranks, rank_json(e, (int)r, mine));
    }
    free(tl);
    return json_pack("{s:o,s:o}", "ranks", ranks, "nodes", nodes_json(h, e));
}

static json_t *progress_json(struct entry *e)
{
    struct progress_state ps;
    progress_state(diag_progress(e->d), &ps);
    /* An adopted attempt knows no progress until its next progress line: keep the stored. */
    return ps.updated_ns ? progress_state_json(&ps) : NULL;
}

struct health_save *health_save_prepare(struct health *h, struct entry *e, bool force,
                                        const json_t *decision)
{
    struct health_save *p = XNEW(struct health_save);
    take(p, e, PART_DIAG, diag_json(e->d), force);
    take(p, e, PART_PROGRESS, progress_json(e), force);
    take(p, e, PART_STALL, e->stall ? json_incref(e->stall) : NULL, force);
    take(p, e, PART_HEALTH, health_entry_json(h, e), force);
    p->decision = decision ? json_deep_copy(decision) : NULL;
    p->save = (struct diag_save){ .job_pk = e->pk,
                                  .attempt = e->attempt,
                                  .diagnosis = p->parts[PART_DIAG],
                                  .progress = p->parts[PART_PROGRESS],
                                  .stalled = e->stalled,
                                  .stall = p->parts[PART_STALL],
                                  .health = p->parts[PART_HEALTH],
                                  .decision = p->decision };
    e->dirty = false;
    e->saved_ns = clock_mono_ns();
    return p;
}

void health_save_commit(struct health *h, struct health_save *p, bool wait)
{
    if (!p)
        return;
    struct err err;
    err_init(&err);
    store_diag_save(h->st, &p->save, wait, &err);
    err_release(&err);
    atomic_fetch_add(&h->saves, 1);
    for (int i = 0; i < 4; i++)
        json_decref(p->parts[i]);
    json_decref(p->decision);
    free(p);
}

void health_tick(struct health *h)
{
    int64_t now = clock_mono_ns();
    struct entry **due = NULL;
    size_t n = 0;
    pthread_mutex_lock(&h->lock);
    for (size_t b = 0; b < HEALTH_BUCKETS; b++) {
        for (struct entry *e = h->buckets[b]; e; e = e->next) {
            due = xrealloc(due, (n + 1) * sizeof(*due));
            due[n++] = e;
        }
    }
    pthread_mutex_unlock(&h->lock);
    /* Entries are freed only on this (the controller's) thread: the pointers stay valid. */
    for (size_t i = 0; i < n; i++) {
        struct entry *e = due[i];
        pthread_mutex_lock(&e->lock);
        struct health_save *p = NULL;
        if (e->dirty && now - e->saved_ns >= h->o.persist_ns)
            p = health_save_prepare(h, e, false, NULL);
        pthread_mutex_unlock(&e->lock);
        health_save_commit(h, p, false);
    }
    free(due);
}
