/*
 * kubesim: what cannot run on our machines, simulated as clients of a real Kubernetes API
 * server (tests/kube/cluster/up.sh), the way kwok does: GPU nodes and their Leases, a kubelet
 * per node (pods run scripted containers; logs served on /containerLogs over TLS), the
 * PyTorchJob and TrainJob operators (and the PyTorchJob webhook), and a DCGM exporter.
 *
 *   kubesim --kubeconfig ADMIN_KUBECONFIG --pki DIR [--nodes N] [--gpus-per-node N]
 *           [--instance-type T] [--port PORT] [--speed X]
 *
 * DIR holds ca.crt, serving.crt and serving.key (up.sh's). It removes the nodes an earlier
 * kubesim left, makes its own, and prints its URL (https://127.0.0.1:PORT: the control API
 * under /_test/, the DCGM exporter on /metrics) once they are Ready on the server. SIGINT or
 * SIGTERM: it deletes its nodes (their pods are the pod garbage collector's) and its webhook,
 * and exits 0. docs/kube-testserver.md.
 *
 * Threads: main is the loop (watches, writes, the simulation tick); HTTP threads serve logs,
 * the webhook and the control API under the world lock.
 */
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "server/kube/kubeconfig.h"
#include "tests/kube/http.h"
#include "tests/kube/nodes.h"
#include "tests/kube/sim.h"
#include "tests/kube/sim/dcgm.h"
#include "tests/kube/sim/leases.h"
#include "tests/kube/sim/mirror.h"
#include "tests/kube/sim/route.h"
#include "tests/kube/sim/webhook.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

#define TICK_MS 20

struct options {
    const char *kubeconfig, *pki, *instance_type;
    int port, nodes, gpus;
    double speed;
};

static void usage(void)
{
    fprintf(stderr, "usage: kubesim --kubeconfig FILE --pki DIR [--nodes N] [--gpus-per-node N]\n"
                    "               [--instance-type TYPE] [--port PORT] [--speed X]\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    *o = (struct options){ .nodes = 4, .gpus = 8, .instance_type = "p4d.24xlarge", .speed = 1.0 };
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        int64_t n;
        if (!strcmp(a, "--kubeconfig"))
            o->kubeconfig = v;
        else if (!strcmp(a, "--pki"))
            o->pki = v;
        else if (!strcmp(a, "--instance-type"))
            o->instance_type = v;
        else if (!strcmp(a, "--port") && parse_int(v, 0, 65535, &o->port) == 0)
            ;
        else if (!strcmp(a, "--nodes") && parse_int(v, 0, 10000, &o->nodes) == 0)
            ;
        else if (!strcmp(a, "--gpus-per-node") && parse_int(v, 0, 64, &o->gpus) == 0)
            ;
        else if (!strcmp(a, "--speed") && parse_int64(v, 1, 10000, &n) == 0)
            o->speed = (double)n;
        else
            return -1;
    }
    return o->kubeconfig && o->pki && argc % 2 == 1 ? 0 : -1;
}

static char *read_pem(const char *dir, const char *name, struct err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        err_set(err, ERR_IO, "cannot read %s", path);
        return NULL;
    }
    struct buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    return buf_detach(&b, NULL);
}

/* Every simulated node exists on the server with its status (Ready). */
static bool nodes_ready(struct world *w, struct mirror *m, int want)
{
    if (mirror_pending(m))
        return false;
    world_lock(w);
    size_t n = store_count(w->store, resource_lookup("", "v1", "nodes"));
    world_unlock(w);
    return (int)n >= want;
}

struct sim_state {
    struct world *w;
    struct kube_client *c;
    struct mirror *m;
    struct leases *l;
    int sigfd;
};

/* The loop: until a signal arrives. */
static void run(struct sim_state *s, const struct options *o, const char *url)
{
    bool seeded = false, announced = false;
    int64_t last = clock_mono_ns(), last_tick = 0;
    for (;;) {
        struct signalfd_siginfo si;
        if (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            return;
        int64_t now = clock_mono_ns();
        mirror_tick(s->m, now);
        if (!seeded && mirror_synced(s->m)) {
            struct fleet_options fleet = { o->nodes, o->gpus, o->instance_type };
            world_lock(s->w);
            nodes_seed(s->w, &fleet);
            world_unlock(s->w);
            seeded = true;
        }
        if (seeded && now - last_tick >= TICK_MS * 1000000LL) {
            world_lock(s->w);
            s->w->sim_ns += (int64_t)((double)(now - last) * s->w->speed);
            last = now;
            sim_tick(s->w);
            world_unlock(s->w);
            last_tick = now;
            leases_tick(s->l, now);
        }
        if (seeded && !announced && nodes_ready(s->w, s->m, o->nodes)) {
            printf("%s\n", url);
            fflush(stdout);
            announced = true;
        }
        kube_client_run(s->c, TICK_MS);
    }
}

int main(int argc, char **argv)
{
    struct options o;
    if (parse_args(argc, argv, &o) < 0) {
        usage();
        return 2;
    }
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct err err;
    err_init(&err);
    struct world w;
    /* The loop reads the history every tick, so a short one is enough (a longer one holds every
     * version of every pod: 20,000 events took 600 MB with 800 pods). */
    world_init(&w, 2000);
    w.speed = o.speed;
    w.sim = sim_new();
    struct kube_config cfg = { 0 };
    struct sim_state s = { .w = &w, .sigfd = signalfd(-1, &sigs, SFD_NONBLOCK) };
    struct http *http = NULL;
    char *ca = read_pem(o.pki, "ca.crt", &err),
         *crt = ca ? read_pem(o.pki, "serving.crt", &err) : NULL;
    char *key = crt ? read_pem(o.pki, "serving.key", &err) : NULL;
    int rc = 1;
    if (!key || kube_config_load(&cfg, o.kubeconfig, NULL, &err) < 0 ||
        !(s.c = kube_client_new(&cfg, &err)))
        goto out;
    struct http_options ho = { .host = "127.0.0.1",
                               .port = o.port,
                               .tls_cert_pem = crt,
                               .tls_key_pem = key,
                               .route = sim_route,
                               .open = true };
    if (!(http = http_open(&w, &ho, &err)) || leases_clean_nodes(s.c, &err) < 0 ||
        webhook_register(s.c, http_port(http), ca, &err) < 0)
        goto out;
    char url[64];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d", http_port(http));
    s.m = mirror_new(&w, s.c, http_port(http));
    sim_route_mirror(s.m);
    s.l = leases_new(&w, s.c);
    const char *plurals[][3] = { { "", "v1", "nodes" },
                                 { "", "v1", "pods" },
                                 { "", "v1", "services" },
                                 { "", "v1", "secrets" },
                                 { "kubeflow.org", "v1", "pytorchjobs" },
                                 { "trainer.kubeflow.org", "v1alpha1", "trainjobs" },
                                 { "trainer.kubeflow.org", "v1alpha1", "trainingruntimes" },
                                 { "trainer.kubeflow.org", "v1alpha1",
                                   "clustertrainingruntimes" } };
    for (size_t i = 0; i < sizeof(plurals) / sizeof(plurals[0]); i++)
        mirror_watch(s.m, resource_lookup(plurals[i][0], plurals[i][1], plurals[i][2]),
                     i == 0 ? NODES_SIM_LABEL : NULL);
    run(&s, &o, url);
    rc = 0;
out:
    if (err_is_set(&err))
        fprintf(stderr, "kubesim: %s\n", err.msg);
    world_lock(&w);
    w.stopping = true; /* open log streams end, so the HTTP threads can be joined */
    world_changed(&w);
    world_unlock(&w);
    http_close(http);
    mirror_free(s.m);
    leases_free(s.l);
    if (s.c) {
        webhook_unregister(s.c);
        leases_clean_nodes(s.c, &err);
    }
    kube_client_free(s.c);
    kube_config_release(&cfg);
    dcgm_release();
    world_release(&w);
    free(ca);
    free(crt);
    free(key);
    close(s.sigfd);
    err_release(&err);
    return rc;
}
