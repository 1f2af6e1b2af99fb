/*
 * fabric: libfabric RDM endpoint, address exchange, tagged send/receive and a ring all-reduce.
 * The only file that includes <rdma/...>. Completions are polled (libfabric's manual progress):
 * a short spin, then sched_yield, then 20 us naps, so that four ranks on two cores still move.
 *
 * Tags: (sequence number of the message between this pair of ranks << 20) | sender rank. Both
 * sides count the messages of each pair, so a message can only match the receive meant for it.
 *
 * libfabric itself is loaded on first use (dynlib.h): fabric_open() and the provider queries
 * load it, so `run` and a single-rank `train` never map it (nor the providers it drags in). The
 * few exported functions used go through the table `lf`; everything else in <rdma/...> is an
 * inline call through the objects' operation tables. The table is filled once, from the first
 * caller's thread; struct fabric itself is not thread-safe.
 */
#include "worker/fabric.h"

#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "worker/dynlib.h"

#define FABRIC_VERSION FI_VERSION(1, 10)
#define PIECE_MAX      (8u << 20) /* bytes per message; larger transfers go in pieces */
#define MAX_RANKS      (1 << 20)

struct fabric {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t *peers;
    uint64_t *send_seq, *recv_seq; /* per peer */
    int rank, world;
    size_t piece;
    int mr_local; /* provider needs buffers registered */
    int timeout_ms;
    int broken;
    float *scratch;
    size_t scratch_n;
};

/* The exported functions this file calls (fi_allocinfo() is fi_dupinfo(NULL)). */
#define FABRIC_FUNCS(X) X(fi_getinfo) X(fi_freeinfo) X(fi_dupinfo) X(fi_fabric) X(fi_strerror)
#define FIELD(f)        __typeof__(&f) f;
static struct {
    FABRIC_FUNCS(FIELD)
} lf;
#undef FIELD
static int lf_loaded;

#define RESOLVE(f)                                                                                 \
    if (!(lf.f = (__typeof__(lf.f))dynlib_sym(lib, so, DYNLIB_STR(f), err)))                       \
        return -1;

/* ERR_NOT_FOUND when libfabric is not installed. */
static int load(struct err *err)
{
    char so[32];
    void *lib;
    if (lf_loaded)
        return 0;
    snprintf(so, sizeof(so), "libfabric.so.%d", FI_MAJOR_VERSION);
    if (!(lib = dynlib_open("libfabric", so, err)))
        return -1;
    FABRIC_FUNCS(RESOLVE)
    lf_loaded = 1;
    return 0;
}
#undef RESOLVE

struct op {
    struct fi_context2 ctx; /* first: libfabric hands &ctx back as op_context */
    int done;
    size_t len; /* completed length */
    struct fid_mr *mr;
};

static int fi_fail(struct err *err, const char *what, int rc)
{
    return err_set(err, ERR_IO, "libfabric %s: %s", what, lf.fi_strerror(rc < 0 ? -rc : rc));
}

struct fabric *fabric_open(const char *provider, struct err *err)
{
    if (load(err) < 0)
        return NULL;
    struct fabric *f = XNEW(struct fabric);
    struct fi_info *hints = lf.fi_dupinfo(NULL);
    f->timeout_ms = 60000;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->av_type = FI_AV_TABLE;
    if (provider)
        hints->fabric_attr->prov_name = xstrdup(provider);
    int rc = lf.fi_getinfo(FABRIC_VERSION, NULL, NULL, 0, hints, &f->info);
    lf.fi_freeinfo(hints);
    if (rc) {
        fi_fail(err, provider ? provider : "getinfo (no RDM provider with tagged messages)", rc);
        goto fail;
    }
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
    struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
    if ((rc = lf.fi_fabric(f->info->fabric_attr, &f->fabric, NULL)) ||
        (rc = fi_domain(f->fabric, f->info, &f->domain, NULL)) ||
        (rc = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL)) ||
        (rc = fi_av_open(f->domain, &av_attr, &f->av, NULL)) ||
        (rc = fi_endpoint(f->domain, f->info, &f->ep, NULL)) ||
        (rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_ep_bind(f->ep, &f->av->fid, 0)) || (rc = fi_enable(f->ep))) {
        fi_fail(err, "opening the endpoint", rc);
        goto fail;
    }
    f->mr_local = (f->info->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
    f->piece =
        f->info->ep_attr->max_msg_size < PIECE_MAX ? f->info->ep_attr->max_msg_size : PIECE_MAX;
    return f;
fail:
    fabric_close(f);
    return NULL;
}

void fabric_close(struct fabric *f)
{
    if (!f)
        return;
    if (f->ep)
        fi_close(&f->ep->fid);
    if (f->av)
        fi_close(&f->av->fid);
    if (f->cq)
        fi_close(&f->cq->fid);
    if (f->domain)
        fi_close(&f->domain->fid);
    if (f->fabric)
        fi_close(&f->fabric->fid);
    if (f->info)
        lf.fi_freeinfo(f->info);
    free(f->peers);
    free(f->send_seq);
    free(f->recv_seq);
    free(f->scratch);
    free(f);
}

const char *fabric_provider(const struct fabric *f)
{
    return f->info->fabric_attr->prov_name;
}

void fabric_set_timeout(struct fabric *f, int timeout_ms)
{
    f->timeout_ms = timeout_ms;
}

static int insert_peers(struct fabric *f, struct rdzv *r, const char *name, int wait_ms,
                        struct err *err)
{
    struct buf addr = BUF_INIT;
    int ret = 0;
    for (int i = 0; i < f->world && ret == 0; i++) {
        char key[160];
        snprintf(key, sizeof(key), "%s.addr.%d", name, i);
        if ((ret = rdzv_get_bytes(r, key, wait_ms, &addr, err)) < 0)
            break;
        if (fi_av_insert(f->av, addr.data, 1, &f->peers[i], 0, NULL) != 1)
            ret = err_set(err, ERR_IO, "libfabric: cannot insert the address of rank %d", i);
    }
    buf_release(&addr);
    return ret;
}

int fabric_connect(struct fabric *f, struct rdzv *r, const char *name, int rank, int world,
                   int timeout_ms, struct err *err)
{
    if (world < 1 || world > MAX_RANKS || rank < 0 || rank >= world || f->peers)
        return err_set(err, ERR_INVALID, "fabric_connect: rank %d of %d", rank, world);
    char addr[512], key[160];
    size_t alen = sizeof(addr);
    int rc = fi_getname(&f->ep->fid, addr, &alen);
    if (rc)
        return fi_fail(err, "getname", rc);
    f->rank = rank;
    f->world = world;
    f->peers = xcalloc((size_t)world, sizeof(*f->peers));
    f->send_seq = xcalloc((size_t)world, sizeof(*f->send_seq));
    f->recv_seq = xcalloc((size_t)world, sizeof(*f->recv_seq));
    snprintf(key, sizeof(key), "%s.addr.%d", name, rank);
    if (rdzv_set_bytes(r, key, addr, alen, err) < 0)
        return -1;
    /* The first barrier names ranks that never published an address. */
    snprintf(key, sizeof(key), "%s.published", name);
    if (rdzv_barrier(r, key, rank, world, timeout_ms, err) < 0 ||
        insert_peers(f, r, name, timeout_ms, err) < 0)
        return -1;
    snprintf(key, sizeof(key), "%s.ready", name);
    return rdzv_barrier(r, key, rank, world, timeout_ms, err);
}

/* Reads available completions and marks their operations done; returns fi_cq_read's result. */
static ssize_t drain(struct fabric *f)
{
    struct fi_cq_tagged_entry e[8];
    ssize_t n = fi_cq_read(f->cq, e, 8);
    for (ssize_t i = 0; i < n; i++) {
        struct op *o = e[i].op_context;
        o->done = 1;
        o->len = e[i].len;
    }
    return n;
}

/* Waits for the listed operations; cancels what is still posted on failure. */
static int wait_ops(struct fabric *f, struct op **ops, int nops, struct err *err)
{
    int64_t start = clock_mono_ns(), deadline = start + (int64_t)f->timeout_ms * NS_PER_MS;
    int64_t idle_since = start;
    for (long spins = 0;; spins++) {
        ssize_t n = drain(f);
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry ee = { 0 };
            fi_cq_readerr(f->cq, &ee, 0);
            if (ee.op_context)
                ((struct op *)ee.op_context)->done = -1;
            err_set(err, ERR_IO, "libfabric completion: %s",
                    fi_cq_strerror(f->cq, ee.prov_errno, ee.err_data, NULL, 0));
            goto fail;
        }
        int pending = 0;
        for (int i = 0; i < nops; i++)
            pending += ops[i]->done == 0;
        if (!pending)
            return 0;
        if (n > 0) {
            idle_since = clock_mono_ns();
        } else if (n != -FI_EAGAIN) {
            fi_fail(err, "cq read", (int)n);
            goto fail;
        } else if (spins > 200) {
            int64_t now = clock_mono_ns();
            if (now >= deadline) {
                err_set(err, ERR_TIMEOUT, "libfabric: no completion within %d ms", f->timeout_ms);
                goto fail;
            }
            if (now - idle_since > NS_PER_MS)
                usleep(20);
            else
                sched_yield();
        }
    }
fail:
    for (int i = 0; i < nops; i++)
        if (ops[i]->done == 0)
            fi_cancel(&f->ep->fid, &ops[i]->ctx);
    f->broken = 1;
    return -1;
}

static void *mr_desc(struct fabric *f, struct op *o, const void *buf, size_t len)
{
    if (!f->mr_local || len == 0)
        return NULL;
    if (fi_mr_reg(f->domain, buf, len, FI_SEND | FI_RECV, 0, 0, 0, &o->mr, NULL))
        return NULL;
    return fi_mr_desc(o->mr);
}

/* Posts one receive (from >= 0) and one send (to >= 0) of one piece and waits for both. */
static int piece(struct fabric *f, int to, const char *sbuf, size_t slen, int from, char *rbuf,
                 size_t rlen, struct err *err)
{
    struct op rop = { 0 }, sop = { 0 };
    struct op *ops[2];
    int nops = 0, rc = 0, ret = -1;
    if (from >= 0) {
        uint64_t tag = (f->recv_seq[from]++ << 20) | (uint64_t)from;
        void *desc = mr_desc(f, &rop, rbuf, rlen);
        while ((rc = (int)fi_trecv(f->ep, rbuf, rlen, desc, f->peers[from], tag, 0, &rop.ctx)) ==
               -FI_EAGAIN)
            drain(f);
        if (rc)
            goto out;
        ops[nops++] = &rop;
    }
    if (to >= 0) {
        uint64_t tag = (f->send_seq[to]++ << 20) | (uint64_t)f->rank;
        void *desc = mr_desc(f, &sop, sbuf, slen);
        while ((rc = (int)fi_tsend(f->ep, sbuf, slen, desc, f->peers[to], tag, &sop.ctx)) ==
               -FI_EAGAIN)
            drain(f);
        if (rc)
            goto out;
        ops[nops++] = &sop;
    }
    if (wait_ops(f, ops, nops, err) < 0)
        goto out;
    if (from >= 0 && rop.len != rlen) {
        err_set(err, ERR_IO, "libfabric: rank %d sent %zu bytes, expected %zu", from, rop.len,
                rlen);
        goto out;
    }
    ret = 0;
out:
    if (rc) {
        fi_fail(err, "post", rc);
        for (int i = 0; i < nops; i++)
            fi_cancel(&f->ep->fid, &ops[i]->ctx);
        f->broken = 1;
    }
    if (rop.mr)
        fi_close(&rop.mr->fid);
    if (sop.mr)
        fi_close(&sop.mr->fid);
    return ret;
}

static size_t npieces(const struct fabric *f, int peer, size_t len)
{
    if (peer < 0)
        return 0;
    return len == 0 ? 1 : (len + f->piece - 1) / f->piece;
}

int fabric_sendrecv(struct fabric *f, int to, const void *sbuf, size_t slen, int from, void *rbuf,
                    size_t rlen, struct err *err)
{
    if (!f->peers || f->broken)
        return err_set(err, ERR_INVALID, "fabric: endpoint not connected or broken");
    if (to >= f->world || from >= f->world)
        return err_set(err, ERR_INVALID, "fabric: no rank %d", to >= f->world ? to : from);
    /* Each side cuts its transfer into the same pieces as its peer, so tags stay in step. */
    size_t ns = npieces(f, to, slen), nr = npieces(f, from, rlen);
    for (size_t i = 0; i < ns || i < nr; i++) {
        size_t off = i * f->piece;
        size_t sn = i < ns ? (slen - off < f->piece ? slen - off : f->piece) : 0;
        size_t rn = i < nr ? (rlen - off < f->piece ? rlen - off : f->piece) : 0;
        if (piece(f, i < ns ? to : -1, (const char *)sbuf + (i < ns ? off : 0), sn,
                  i < nr ? from : -1, (char *)rbuf + (i < nr ? off : 0), rn, err) < 0)
            return -1;
    }
    return 0;
}

int fabric_allreduce_sum(struct fabric *f, float *data, size_t n, struct err *err)
{
    int w = f->world, r = f->rank;
    if (!f->peers)
        return err_set(err, ERR_INVALID, "fabric: endpoint not connected");
    if (w == 1)
        return 0;
    size_t maxc = n / (size_t)w + 1;
    if (f->scratch_n < maxc) {
        free(f->scratch);
        f->scratch = xmalloc(maxc * sizeof(float));
        f->scratch_n = maxc;
    }
    int right = (r + 1) % w, left = (r + w - 1) % w;
#define LO(c)  ((size_t)(c)*n / (size_t)w)
#define LEN(c) (LO((c) + 1) - LO(c))
    for (int s = 0; s < w - 1; s++) { /* reduce-scatter */
        int sc = (r - s + w) % w, rc = (r - s - 1 + 2 * w) % w;
        if (fabric_sendrecv(f, right, data + LO(sc), LEN(sc) * sizeof(float), left, f->scratch,
                            LEN(rc) * sizeof(float), err) < 0)
            return -1;
        float *d = data + LO(rc);
        for (size_t i = 0; i < LEN(rc); i++)
            d[i] += f->scratch[i];
    }
    for (int s = 0; s < w - 1; s++) { /* all-gather: rank r owns chunk r+1 */
        int sc = (r + 1 - s + w) % w, rc = (r - s + w) % w;
        if (fabric_sendrecv(f, right, data + LO(sc), LEN(sc) * sizeof(float), left, data + LO(rc),
                            LEN(rc) * sizeof(float), err) < 0)
            return -1;
    }
#undef LO
#undef LEN
    return 0;
}

int fabric_list_providers(struct buf *out, struct err *err)
{
    struct fi_info *list = NULL;
    if (load(err) < 0)
        return -1;
    int rc = lf.fi_getinfo(FABRIC_VERSION, NULL, NULL, 0, NULL, &list);
    if (rc == -FI_ENODATA)
        return 0;
    if (rc)
        return fi_fail(err, "getinfo", rc);
    size_t start = out->len;
    for (struct fi_info *i = list; i; i = i->next) {
        const char *p = i->fabric_attr->prov_name;
        const char *have = buf_cstr(out) + start;
        size_t plen = strlen(p);
        int dup = 0;
        for (const char *s = have; (s = strstr(s, p)) != NULL; s += plen)
            if ((s == have || s[-1] == ',') && (s[plen] == ',' || s[plen] == '\0'))
                dup = 1;
        if (!dup)
            buf_printf(out, "%s%s", out->len > start ? "," : "", p);
    }
    lf.fi_freeinfo(list);
    return 0;
}

int fabric_count_devices(const char *prov, int *count, struct err *err)
{
    *count = 0;
    if (load(err) < 0)
        return -1;
    struct fi_info *hints = lf.fi_dupinfo(NULL), *list = NULL;
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = xstrdup(prov);
    int rc = lf.fi_getinfo(FABRIC_VERSION, NULL, NULL, 0, hints, &list);
    lf.fi_freeinfo(hints);
    if (rc == -FI_ENODATA)
        return 0;
    if (rc)
        return fi_fail(err, "getinfo", rc);
    struct buf seen = BUF_INIT;
    for (struct fi_info *i = list; i; i = i->next) {
        const char *d = i->domain_attr->name;
        struct buf key = BUF_INIT;
        buf_printf(&key, "|%s|", d);
        if (!strstr(buf_cstr(&seen), buf_cstr(&key))) {
            buf_printf(&seen, "|%s|", d);
            (*count)++;
        }
        buf_release(&key);
    }
    buf_release(&seen);
    lf.fi_freeinfo(list);
    return 0;
}
