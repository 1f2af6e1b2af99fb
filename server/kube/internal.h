/*
 * internal: the Kubernetes executor's state, shared by executor.c (thread, commands, watches),
 * objects.c (creating and deleting objects) and status.c (conditions and pods -> reports).
 * Everything below `lock` belongs to the loop thread alone.
 */
#ifndef TY_KUBE_INTERNAL_H
#define TY_KUBE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/buf.h"
#include "server/kube/client.h"
#include "server/kube/events.h"
#include "server/kube/kmap.h"
#include "server/kube/kube.h"
#include "server/kube/kubeconfig.h"
#include "server/kube/logs.h"
#include "server/kube/nodes.h"
#include "server/kube/render.h"
#include "server/kube/watch.h"

/* What the executor needs to know of a job besides its object. */
struct kjob_meta {
    int64_t pk;
    char id[32];
    char name[64]; /* the spec's name */
    char kind[16]; /* PyTorchJob | TrainJob */
    char ns[64];
    char obj[256];
    char container[64]; /* the training container: pytorch | node */
    int nodes, ppn;
    bool has_master;
    bool token; /* a worker-token Secret goes with the object */
};

/* The last thing reported for one node (pod slot) of a job. */
struct kslot {
    char uid[40];  /* the pod holding the slot */
    char key[192]; /* "<uid> <instance> <state>" last reported */
    int pods;      /* pods seen for the slot: re-creations count as restarts */
    int restarts;  /* reported */
    bool ended;    /* the last report was terminal */
    char node[256];
    char wait_reason[40]; /* why its pod cannot start (ImagePullBackOff, Unschedulable...) */
    char wait_msg[512];   /* in the kubelet's or the scheduler's words */
};

enum kphase { KJ_CREATING, KJ_LIVE, KJ_DELETING, KJ_GONE };

struct kjob {
    struct kube *k;
    struct kjob_meta m;
    char key[320]; /* ns/obj */
    int attempt;
    enum kphase phase;
    json_t *object, *secret; /* still to create */
    struct kube_call *call;  /* the creation or deletion step in flight */
    int step;
    int64_t next_try, backoff;
    int64_t start_mono; /* when start() queued it, for the creation latency */
    char uid[40];
    enum job_state reported; /* the state the controller was last told of */
    bool stop_requested, terminal, held, adopted;
    bool fail_listed;      /* pods re-read after a Failed condition */
    bool created_reported; /* the object's creation (or adoption) is on the timeline */
    struct kube_call *list_call;
    char fail_reason[64], fail_msg[256]; /* the first failing pod's */
    char wait_key[600];                  /* the waiting reason and message last reported */
    struct kslot *slots;
    struct job_event *events; /* Kubernetes events to hand over at the end of the round */
    struct kube_event *event_store;
    size_t nevents, capevents;
    int64_t held_checked;
};

struct kpod {
    char uid[40];
    char *name, *ns, *owner_key, *job_id;
    char node[256];
    char container[64];
    struct kjob *job;
    int slot;
    json_t *last;   /* {"status": ...} of the latest pod object */
    json_t *labels; /* the pod's labels */
    bool gone;      /* deleted; freed once its logs are read */
    bool deleting;  /* metadata.deletionTimestamp is set */
    bool reaped;    /* trainyard asked for its deletion (its job failed) */
    struct kube_follow *follow;
    bool retired;   /* another pod took its slot over */
    bool logs_done; /* its follower read everything and was released */
};

/* A job's object as the watch last saw it. */
struct kobj {
    char uid[40];
    char job_id[32];
    char kind[16];
    json_t *conditions;
    bool suspended;
};

struct kns {
    char *name;
    struct kube_watch *pytorchjobs, *trainjobs, *pods, *jobset_pods, *events;
};

enum kcmd_type { C_START, C_STOP, C_FORGET, C_ADOPT, C_HELD };

struct adopt_reply {
    int refs;
    bool done;
    int result;
};

struct kcmd {
    enum kcmd_type type;
    struct kjob_meta m;
    int attempt;
    enum job_state state;
    json_t *object, *secret;
    struct adopt_reply *reply;
    int64_t queued_at;
    struct kcmd *next;
};

struct kube {
    struct kube_options opts;
    struct kube_config cfg;
    struct kube_client *client;
    struct executor *ex;
    char describe[512];
    pthread_t thread;
    bool running;
    pthread_mutex_t lock; /* guards the fields down to `loop-only` */
    pthread_cond_t cond;
    bool stopping;
    struct kcmd *cmds, *cmds_tail;
    struct kmap held; /* job id -> 1: its object waits suspended */
    bool synced;      /* the default namespace's first lists are in */
    json_t *nodes_doc;
    char nodes_err[256];
    char *url;
    enum kube_trainer_api trainer_api;
    /* loop-only */
    struct kmap namespaces; /* name -> kns */
    struct kmap jobs;       /* ns/obj -> kjob */
    struct kmap jobs_by_id; /* trainyard id -> kjob */
    struct kmap objs;       /* ns/obj -> kobj */
    struct kmap pods;       /* uid -> kpod */
    struct kube_nodes *nodes;
    struct kube_watch *nodes_watch;
    bool nodes_dirty;
    int64_t nodes_published;
    struct kcmd *waiting; /* adopt and stop commands waiting for their namespace's lists */
    struct kjob **evjobs; /* jobs with Kubernetes events to hand over this round */
    size_t nevjobs, capevjobs;
    atomic_bool adopted_all; /* the controller finished adopting (its first poll) */
    int64_t last_tick, held_checked;
    atomic_ullong created, adopted_existing, create_errors, create_ns_total, create_count;
    atomic_ullong pods_reaped;
    atomic_llong adopt_waited; /* ns the controller spent waiting for adoptions */
    atomic_llong cmd_lag_ns;   /* how long the last commands waited for the loop (reconcile lag) */
    atomic_ullong jobs_tracked, pods_tracked, streams_open, streams_waiting;
    atomic_ullong watch_lists, watch_events, watch_closed, watch_expired, watch_errors;
};

#define KUBE(ex) ((struct kube *)(ex)->impl)

/* objects.c */
void kube_obj_create(struct kube *k, struct kjob *j);
void kube_obj_delete(struct kube *k, struct kjob *j, const char *propagation);
void kube_obj_tick(struct kube *k, struct kjob *j, int64_t now);
void kube_obj_list_pods(struct kube *k, struct kjob *j);
/* Deletes the job's pods that still run (or wait to), whatever the operator's cleanPodPolicy:
 * no pod may outlive a failed job and hold its GPUs. */
void kube_obj_reap(struct kube *k, struct kjob *j);
void kube_obj_reap_pod(struct kube *k, struct kpod *p);
/* Deletes (Background) an object and its token Secret without waiting for the outcome. */
void kube_obj_delete_detached(struct kube *k, const char *kind, const char *ns, const char *obj,
                              bool token);

/* status.c */
void kube_status_object(struct kube *k, struct kjob *j);
void kube_status_object_gone(struct kube *k, struct kjob *j);
void kube_status_pod(struct kube *k, struct kpod *p);
void kube_status_pod_gone(struct kube *k, struct kpod *p);
void kube_report_job(struct kube *k, struct kjob *j, enum job_state state, const char *reason,
                     const char *message);
void kube_report_event(struct kube *k, struct kjob *j, const char *type, const char *reason,
                       const char *message);
void kube_status_stopped(struct kube *k, struct kjob *j, const char *why);

/* pods.c (loop thread) */
#define KUBE_LABEL_JOBSET "jobset.sigs.k8s.io/jobset-name"
void kube_pod_upsert(struct kube *k, const json_t *pod);
/* Watch callbacks; ctx is the struct kube. */
void kube_pod_on_upsert(void *ctx, const json_t *pod);
void kube_pod_on_remove(void *ctx, const json_t *pod);
/* Pods seen before their job was registered now belong to it. */
void kube_pods_attach(struct kube *k, struct kjob *j);
/* Frees pods that are gone and whose logs are read; ticks the followers of the others. */
void kube_pods_tick(struct kube *k, int64_t now);
/* Frees p and its follower; force: its log source is marked done though not read to the end. */
void kube_pod_free(struct kpod *p, bool force);

/* commands.c (loop thread) */
/* Runs c and frees it, or parks it until its namespace's first lists are in. */
void kube_cmd_run(struct kube *k, struct kcmd *c);
void kube_cmds_resume(struct kube *k); /* runs the parked commands again */
/* Frees c unrun; an adopt waiting for it gets 0. */
void kube_cmd_drop(struct kube *k, struct kcmd *c);

/* loop.c */
void *kube_loop(void *arg);
/* The job's record, made on first use; pods seen before it are attached now. */
struct kjob *kube_job_register(struct kube *k, const struct kjob_meta *m, int attempt,
                               enum job_state reported);
void kube_job_free(struct kube *k, struct kjob *j);
struct kns *kube_ns_ensure(struct kube *k, const char *ns); /* watches started on first use */
bool kube_ns_synced(const struct kns *n);                   /* its first lists are in */
/* Marks job id as having an object (fits() then never starts it again). */
void kube_held_set(struct kube *k, const char *id, bool held);

#endif
