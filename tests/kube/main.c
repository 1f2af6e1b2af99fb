/*
 * testserver: a test Kubernetes API server for trainyard's Kubernetes executor and for anyone
 * who wants to point kubectl at a simulated GPU cluster:
 *
 *   testserver --port 0 --kubeconfig /tmp/kc [--tls] [--token-ttl SECONDS] [--exec-plugin[=PATH]]
 *              [--nodes N] [--gpus-per-node N] [--instance-type T] [--history N] [--speed X]
 *              [--watch-timeout SECONDS] [--bookmark-interval-ms MS] [--host ADDR]
 *
 * It writes a kubeconfig pointing at itself, prints its URL on stdout, and serves until
 * SIGINT or SIGTERM. main() wires the modules together and tears them down in reverse.
 */
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/parse.h"
#include "tests/kube/auth.h"
#include "tests/kube/http.h"
#include "tests/kube/sim.h"
#include "tests/kube/tls.h"
#include "tests/kube/world.h"

struct options {
    const char *host, *kubeconfig, *exec_plugin, *instance_type;
    int port, nodes, gpus, history;
    bool tls;
    int64_t token_ttl, watch_timeout, bookmark_ms;
    double speed;
};

static void usage(void)
{
    fprintf(
        stderr,
        "usage: testserver --kubeconfig FILE [--port PORT] [--host ADDR] [--tls]\n"
        "                  [--token-ttl SECONDS] [--exec-plugin[=PATH]] [--nodes N]\n"
        "                  [--gpus-per-node N] [--instance-type TYPE] [--history EVENTS]\n"
        "                  [--speed X] [--watch-timeout SECONDS] [--bookmark-interval-ms MS]\n");
}

/* The plugin shipped beside the binary (CMake copies tests/kube/testserver-token there). */
static const char *default_plugin(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    snprintf(out, size, "%s/testserver-token", dirname(exe));
    return out;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    static char plugin[PATH_MAX];
    *o = (struct options){ .host = "127.0.0.1",
                           .nodes = 4,
                           .gpus = 8,
                           .history = 10000,
                           .instance_type = "p4d.24xlarge",
                           .speed = 1.0,
                           .watch_timeout = 1800,
                           .bookmark_ms = 1000 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t n;
        bool used = true;
        if (!strcmp(a, "--tls"))
            o->tls = true, used = false;
        else if (!strcmp(a, "--exec-plugin"))
            o->exec_plugin = default_plugin(plugin, sizeof(plugin)), used = false;
        else if (!strncmp(a, "--exec-plugin=", 14))
            o->exec_plugin = realpath(a + 14, plugin) ? plugin : a + 14, used = false;
        else if (!v)
            return -1;
        else if (!strcmp(a, "--port") && parse_int(v, 0, 65535, &o->port) == 0)
            ;
        else if (!strcmp(a, "--host"))
            o->host = v;
        else if (!strcmp(a, "--kubeconfig"))
            o->kubeconfig = v;
        else if (!strcmp(a, "--instance-type"))
            o->instance_type = v;
        else if (!strcmp(a, "--token-ttl") && parse_int64(v, 0, INT32_MAX, &o->token_ttl) == 0)
            ;
        else if (!strcmp(a, "--nodes") && parse_int(v, 0, 10000, &o->nodes) == 0)
            ;
        else if (!strcmp(a, "--gpus-per-node") && parse_int(v, 0, 64, &o->gpus) == 0)
            ;
        else if (!strcmp(a, "--history") && parse_int(v, 16, 10000000, &o->history) == 0)
            ;
        else if (!strcmp(a, "--watch-timeout") &&
                 parse_int64(v, 1, INT32_MAX, &o->watch_timeout) == 0)
            ;
        else if (!strcmp(a, "--bookmark-interval-ms") &&
                 parse_int64(v, 10, INT32_MAX, &o->bookmark_ms) == 0)
            ;
        else if (!strcmp(a, "--speed") && parse_int64(v, 1, 10000, &n) == 0)
            o->speed = (double)n;
        else
            return -1;
        i += used;
    }
    return o->kubeconfig ? 0 : -1;
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
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* every thread inherits it; main waits below */
    signal(SIGPIPE, SIG_IGN);

    struct err err;
    err_init(&err);
    struct world w;
    world_init(&w, (size_t)o.history);
    w.speed = o.speed;
    w.max_watch_ns = o.watch_timeout * NS_PER_SEC;
    w.bookmark_ns = o.bookmark_ms * 1000000LL;
    w.auth = auth_new(o.token_ttl);
    struct fleet_options fleet = { o.nodes, o.gpus, o.instance_type };
    sim_seed(&w, &fleet);
    struct tls_material tls = { 0 };
    struct http *http = NULL;
    int rc = 1;
    if (o.tls && tls_generate(&tls, &err) < 0)
        goto out;
    struct http_options ho = { o.host, o.port, tls.cert_pem, tls.key_pem };
    if (!(http = http_open(&w, &ho, &err)))
        goto out;
    char url[128];
    snprintf(url, sizeof(url), "%s://%s:%d", o.tls ? "https" : "http", o.host, http_port(http));
    struct kubeconfig_options ko = { o.kubeconfig, url, tls.ca_pem, o.exec_plugin };
    if (auth_write_kubeconfig(w.auth, &ko, &err) < 0 || sim_start(&w, &err) < 0)
        goto out;
    printf("%s\n", url);
    fflush(stdout);
    int sig;
    sigwait(&sigs, &sig);
    rc = 0;
out:
    if (err_is_set(&err))
        fprintf(stderr, "testserver: %s\n", err.msg);
    sim_stop(&w); /* sets w.stopping: open streams end, so MHD can join their threads */
    http_close(http);
    tls_release(&tls);
    auth_free(w.auth);
    world_release(&w);
    err_release(&err);
    return rc;
}
