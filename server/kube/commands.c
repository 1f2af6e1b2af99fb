/*
 * commands: what the controller asked the Kubernetes executor (executor.c queues them), carried
 * out on its loop thread: start (create the object), adopt (after a daemon restart: is the
 * object there?), stop, forget (a deleted job), held (an object Kueue keeps suspended). An
 * adopt's caller waits for its answer (struct adopt_reply, under k->lock). Commands about
 * objects that may exist wait until their namespace's first lists are in.
 */
#include "server/kube/internal.h"

/* Answers an adopt; returns true when nobody waits for the answer any more. */
static bool answer(struct kube *k, struct kcmd *c, int result)
{
    struct adopt_reply *r = c->reply;
    if (!r)
        return true;
    pthread_mutex_lock(&k->lock);
    bool abandoned = r->refs == 1;
    r->result = result;
    r->done = true;
    if (--r->refs == 0)
        free(r);
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    c->reply = NULL;
    return abandoned;
}

static void do_start(struct kube *k, struct kcmd *c)
{
    struct kjob *j = kube_job_register(k, &c->m, c->attempt, JOB_STARTING);
    j->stop_requested = j->terminal = j->fail_listed = j->adopted = j->created_reported = false;
    j->fail_reason[0] = j->fail_msg[0] = j->uid[0] = j->wait_key[0] = '\0';
    memset(j->slots, 0, (size_t)j->m.nodes * sizeof(*j->slots));
    json_decref(j->object);
    json_decref(j->secret);
    j->object = c->object;
    j->secret = c->secret;
    c->object = c->secret = NULL;
    j->start_mono = c->queued_at;
    kube_held_set(k, j->m.id, true);
    kube_obj_create(k, j);
}

static void do_adopt(struct kube *k, struct kcmd *c)
{
    char key[320];
    snprintf(key, sizeof(key), "%s/%s", c->m.ns, c->m.obj);
    const struct kobj *o = kmap_get(&k->objs, key);
    bool exists = o && (!o->job_id[0] || !strcmp(o->job_id, c->m.id));
    if (!exists && (c->state == JOB_STARTING || c->state == JOB_CANCELLING)) {
        /* Nothing was created: the controller starts it (or ends the cancel). */
        if (answer(k, c, 1) && c->state == JOB_STARTING) {
            struct kjob *j = kube_job_register(k, &c->m, c->attempt, c->state);
            j->phase = KJ_GONE;
            kube_report_job(k, j, JOB_QUEUED, "Requeued",
                            "the object was never created (the daemon stopped first): queued "
                            "again to create it");
        }
        return;
    }
    struct kjob *j = kube_job_register(k, &c->m, c->attempt, c->state);
    j->stop_requested = c->state == JOB_CANCELLING;
    if (exists) {
        snprintf(j->uid, sizeof(j->uid), "%s", o->uid);
        kube_status_object(k, j);
    } else {
        kube_status_object_gone(k, j);
    }
    answer(k, c, 0);
}

static void do_stop(struct kube *k, struct kcmd *c)
{
    struct kjob *j = kmap_get(&k->jobs_by_id, c->m.id);
    if (!j)
        j = kube_job_register(k, &c->m, c->attempt, c->state);
    j->stop_requested = true;
    kube_obj_delete(k, j, "Foreground");
}

static void do_forget(struct kube *k, struct kcmd *c)
{
    struct kjob *j = kmap_get(&k->jobs_by_id, c->m.id);
    if (j) {
        kube_obj_delete_detached(k, j->m.kind, j->m.ns, j->m.obj, j->m.token);
        kube_job_free(k, j);
    }
    for (struct kmap_iter it = kmap_first(&k->objs); it.e; kmap_next(&k->objs, &it)) {
        struct kobj *o = it.e->value;
        if (j || strcmp(o->job_id, c->m.id) != 0)
            continue;
        const char *slash = strchr(it.e->key, '/');
        char ns[64];
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - it.e->key), it.e->key);
        kube_obj_delete_detached(k, o->kind, ns, slash + 1, true);
    }
    kube_held_set(k, c->m.id, false);
}

static void do_held(struct kube *k, struct kcmd *c)
{
    if (kmap_get(&k->jobs_by_id, c->m.id))
        return;
    struct kjob *j = kube_job_register(k, &c->m, c->attempt, JOB_QUEUED);
    kube_status_object(k, j);
}

static void cmd_free(struct kcmd *c)
{
    json_decref(c->object);
    json_decref(c->secret);
    free(c);
}

void kube_cmd_run(struct kube *k, struct kcmd *c)
{
    if ((c->type == C_ADOPT || c->type == C_STOP || c->type == C_HELD) &&
        !kube_ns_synced(kube_ns_ensure(k, c->m.ns))) {
        c->next = k->waiting;
        k->waiting = c;
        return;
    }
    switch (c->type) {
    case C_START:
        do_start(k, c);
        break;
    case C_ADOPT:
        do_adopt(k, c);
        break;
    case C_STOP:
        do_stop(k, c);
        break;
    case C_FORGET:
        do_forget(k, c);
        break;
    case C_HELD:
        do_held(k, c);
        break;
    }
    answer(k, c, 0);
    cmd_free(c);
}

void kube_cmds_resume(struct kube *k)
{
    struct kcmd *c = k->waiting;
    k->waiting = NULL;
    while (c) {
        struct kcmd *next = c->next;
        kube_cmd_run(k, c);
        c = next;
    }
}

void kube_cmd_drop(struct kube *k, struct kcmd *c)
{
    answer(k, c, 0);
    cmd_free(c);
}
