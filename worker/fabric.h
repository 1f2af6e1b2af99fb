/*
 * fabric: the worker's only door to libfabric. One reliable-datagram (RDM) endpoint with tagged
 * messages, the peers' addresses exchanged through the rendezvous, point-to-point send/receive,
 * and a ring all-reduce (sum of floats) whose result is bitwise identical on every rank.
 *
 * Works with any RDM provider: efa on AWS, tcp (FI_PROVIDER=tcp FI_TCP_IFACE=lo) and shm on one
 * machine. Messages between two ranks match in the order they are posted, so every rank must
 * make the same sequence of calls with a given peer. After a failed or timed-out operation the
 * endpoint is unusable: close it. Not thread-safe: one thread per struct fabric.
 *
 * libfabric is loaded when fabric_open() or a provider query first needs it (dynlib.h); those
 * fail with ERR_NOT_FOUND, "libfabric not found (libfabric.so.1)", where it is not installed.
 */
#ifndef TY_WORKER_FABRIC_H
#define TY_WORKER_FABRIC_H

#include <stddef.h>

#include "core/buf.h"
#include "core/err.h"
#include "worker/rdzv.h"

struct fabric;

/* provider NULL: libfabric's choice (FI_PROVIDER honoured). Caller frees with fabric_close(). */
struct fabric *fabric_open(const char *provider, struct err *err);
void fabric_close(struct fabric *f);
/* Provider name as libfabric reports it ("tcp;ofi_rxm", "shm", "efa"); borrowed. */
const char *fabric_provider(const struct fabric *f);
/* Timeout of each send/receive/collective step; default 60 s. */
void fabric_set_timeout(struct fabric *f, int timeout_ms);

/* Publishes this endpoint's address under "<name>.addr.<rank>", reads every rank's, and meets
 * the others at barrier "<name>.ready". Missing ranks are named in the ERR_TIMEOUT message. */
int fabric_connect(struct fabric *f, struct rdzv *r, const char *name, int rank, int world,
                   int timeout_ms, struct err *err);

/* Sends slen bytes to rank `to` and receives exactly rlen bytes from rank `from`, both at
 * once; to or from may be -1 for a one-way operation. */
int fabric_sendrecv(struct fabric *f, int to, const void *sbuf, size_t slen, int from, void *rbuf,
                    size_t rlen, struct err *err);

/* data[i] = sum over ranks of data[i], identical bits on every rank and from run to run: a ring
 * reduce-scatter (each element summed along one fixed chain of ranks) then an all-gather. */
int fabric_allreduce_sum(struct fabric *f, float *data, size_t n, struct err *err);

/* Appends the unique provider names libfabric offers here, comma-separated. */
int fabric_list_providers(struct buf *out, struct err *err);
/* Number of distinct RDM domains (devices) of provider prov; 0 when it has none. */
int fabric_count_devices(const char *prov, int *count, struct err *err);

#endif
