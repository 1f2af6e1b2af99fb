/*
 * check_fabric: the network between ranks, through fabric.h (the only libfabric file).
 *   fabric.providers     providers libfabric finds (FI_PROVIDER narrows them)
 *   fabric.efa_devices   EFA devices == the number requested (--efa / TRAINYARD_EFA)
 *   fabric.p2p.rankN     rank 0 against each other rank over an RDM endpoint: round-trip
 *                        latency of 8-byte messages and one-way bandwidth of 4 MiB messages;
 *                        below TRAINYARD_FABRIC_MIN_GBPS (when set) fails
 * The other ranks answer rank 0 and report fabric.p2p. Without libfabric on the machine every
 * fabric check says "skipped: libfabric not found (libfabric.so.1)", and fails when EFA devices
 * were requested.
 */
#include <stdlib.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "worker/checks.h"
#include "worker/fabric.h"

#define LAT_ITERS 200
#define BW_MSG    (4u << 20)
#define BW_ITERS  16

/* libfabric absent: 1 after reporting it under name; 0 for any other outcome. */
static int absent(struct check_ctx *c, const char *name, const struct err *err)
{
    if (err->code != ERR_NOT_FOUND)
        return 0;
    preflight_add(c->report, name, c->opts->efa > 0 ? PF_FAIL : PF_SKIP, NULL, "%s%s%s",
                  c->opts->efa > 0 ? "" : "skipped: ", err->msg,
                  c->opts->efa > 0 ? ", but EFA devices requested" : "");
    return 1;
}

static void check_providers(struct check_ctx *c)
{
    struct buf names = BUF_INIT;
    struct err err;
    err_init(&err);
    if (fabric_list_providers(&names, &err) < 0) {
        if (!absent(c, "fabric", &err))
            preflight_add(c->report, "fabric.providers", PF_FAIL, NULL, "%s", err.msg);
        goto out;
    }
    preflight_add(c->report, "fabric.providers", names.len ? PF_PASS : PF_FAIL,
                  json_pack("{s:s}", "providers", buf_cstr(&names)), "%s",
                  names.len ? buf_cstr(&names) : "no libfabric provider found");
    int n = 0;
    if (fabric_count_devices("efa", &n, &err) < 0) {
        preflight_add(c->report, "fabric.efa_devices", PF_FAIL, NULL, "%s", err.msg);
    } else if (c->opts->efa > 0) {
        preflight_add(c->report, "fabric.efa_devices", n == c->opts->efa ? PF_PASS : PF_FAIL,
                      json_pack("{s:i,s:i}", "found", n, "requested", c->opts->efa),
                      "%d EFA device(s), %d requested", n, c->opts->efa);
    } else {
        preflight_add(c->report, "fabric.efa_devices", n ? PF_PASS : PF_SKIP,
                      json_pack("{s:i}", "found", n),
                      n ? "%d EFA device(s)"
                        : "skipped: %d EFA "
                          "devices and none requested",
                      n);
    }
out:
    buf_release(&names);
    err_release(&err);
}

/* Rank 0's side against one peer: latency then bandwidth. */
static int measure(struct fabric *f, int peer, double *lat_us, double *gbps, char *big,
                   struct err *err)
{
    char ping[8] = { 0 }, pong[8];
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < LAT_ITERS; i++)
        if (fabric_sendrecv(f, peer, ping, 8, peer, pong, 8, err) < 0)
            return -1;
    int64_t t1 = clock_mono_ns();
    for (int i = 0; i < BW_ITERS; i++)
        if (fabric_sendrecv(f, peer, big, BW_MSG, -1, NULL, 0, err) < 0)
            return -1;
    if (fabric_sendrecv(f, -1, NULL, 0, peer, pong, 8, err) < 0) /* the peer has it all */
        return -1;
    int64_t t2 = clock_mono_ns();
    *lat_us = (double)(t1 - t0) / LAT_ITERS / 2 / 1e3; /* one way */
    *gbps = (double)BW_MSG * BW_ITERS / (double)(t2 - t1);
    return 0;
}

static int answer(struct fabric *f, char *big, struct err *err)
{
    char small[8];
    for (int i = 0; i < LAT_ITERS; i++)
        if (fabric_sendrecv(f, -1, NULL, 0, 0, small, 8, err) < 0 ||
            fabric_sendrecv(f, 0, small, 8, -1, NULL, 0, err) < 0)
            return -1;
    for (int i = 0; i < BW_ITERS; i++)
        if (fabric_sendrecv(f, -1, NULL, 0, 0, big, BW_MSG, err) < 0)
            return -1;
    return fabric_sendrecv(f, 0, small, 8, -1, NULL, 0, err);
}

static void report_peer(struct check_ctx *c, int peer, const char *prov, double lat, double gbps)
{
    const char *minv = getenv("TRAINYARD_FABRIC_MIN_GBPS");
    double min = minv ? strtod(minv, NULL) : 0;
    char name[64];
    snprintf(name, sizeof(name), "fabric.p2p.rank%d", peer);
    enum pf_status st = min > 0 ? preflight_judge(gbps, min, 1.0) : PF_PASS;
    preflight_add(c->report, name, st,
                  json_pack("{s:s,s:i,s:f,s:f}", "provider", prov, "peer", peer, "latency_us", lat,
                            "bandwidth_gbps", gbps),
                  "rank 0 <-> rank %d over %s: %.1f us, %.2f GB/s%s", peer, prov, lat, gbps,
                  st == PF_FAIL ? " (below TRAINYARD_FABRIC_MIN_GBPS)" : "");
}

static void check_p2p(struct check_ctx *c)
{
    const struct rankenv *re = c->re;
    struct err err;
    struct fabric *f = NULL;
    err_init(&err);
    if (re->world_size == 1) {
        preflight_add(c->report, "fabric.p2p", PF_SKIP, NULL, "skipped: single rank");
        return;
    }
    char *big = xcalloc(BW_MSG, 1);
    struct rdzv *r = checks_rdzv(c, &err);
    if (!r || !(f = fabric_open(NULL, &err))) {
        if (absent(c, "fabric.p2p", &err))
            goto out;
        goto fail;
    }
    fabric_set_timeout(f, c->opts->timeout_ms);
    if (fabric_connect(f, r, "preflight.fabric", re->rank, re->world_size, c->opts->timeout_ms,
                       &err) < 0)
        goto fail;
    for (int peer = 1; peer < re->world_size && re->rank == 0; peer++) {
        double lat, gbps;
        if (measure(f, peer, &lat, &gbps, big, &err) < 0)
            goto fail;
        report_peer(c, peer, fabric_provider(f), lat, gbps);
    }
    if (re->rank != 0 && answer(f, big, &err) < 0)
        goto fail;
    if (re->rank != 0)
        preflight_add(c->report, "fabric.p2p", PF_PASS, NULL, "answered rank 0 over %s",
                      fabric_provider(f));
    goto out;
fail:
    preflight_add(c->report, "fabric.p2p", PF_FAIL, NULL, "%s", err.msg);
out:
    fabric_close(f);
    free(big);
    err_release(&err);
}

void check_fabric(struct check_ctx *c)
{
    check_providers(c);
    check_p2p(c);
}
