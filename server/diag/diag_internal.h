/*
 * diag_internal: the state shared by diag.c (collecting findings) and diagsum.c (choosing the
 * first failure, JSON). Not for use outside server/diag/.
 */
#ifndef TY_DIAG_DIAG_INTERNAL_H
#define TY_DIAG_DIAG_INTERNAL_H

#include "server/diag/diag.h"
#include "server/diag/traceback.h"

enum finding_source {
    SRC_LOG,       /* one log line matched a pattern */
    SRC_TRACEBACK, /* a Python traceback's exception line */
    SRC_TORCHRUN,  /* an entry of torchrun's ChildFailedError report */
    SRC_EXIT,      /* how the rank ended (executor) */
    SRC_EVENT,     /* a platform event */
    SRC_PROGRESS,  /* a progress metric (NaN loss) */
    SRC_STALL,     /* a stall verdict */
};

struct finding {
    const char *id; /* pattern id or source name; static storage */
    enum diag_kind kind;
    enum diag_role role;
    enum diag_retry retry; /* resolved */
    bool node_fault;
    enum finding_source source;
    bool torchrun_root;
    const char *tmpl; /* summary template of the pattern; NULL: the kind's */
    int rank, prank;  /* trainyard rank (-1: job), process rank (-1: unknown) */
    int64_t time_ns, last_time_ns;
    int64_t evidence[DIAG_EVIDENCE_MAX];
    size_t nevidence;
    int64_t last_seq;
    uint64_t count;
    bool has_num;
    long num;
    bool has_exit;
    int exit_code, signal;
    char text[128]; /* Xid meaning, reason description, "exit code 1" */
    char detail[CLASSIFY_DETAIL_MAX];
    char *node, *pod, *reason, *message; /* owned; NULL: unknown (node/pod from rank info) */
    struct traceback_exc *exc;           /* owned; NULL unless from a traceback */
};

struct stream {
    int rank, prank;
    struct traceback *tb; /* allocated when the stream opens its first report */
};

struct rank_info {
    char *pod, *node;
    bool started; /* printed at least one line */
    int nprank;   /* distinct torchrun-prefixed process ranks in its log: 0, 1, 2 (many) */
    int prank;    /* the first of them */
};

struct diag {
    struct diag_options opt;
    struct progress *prog;
    struct finding *f;
    size_t nf, capf;
    uint64_t dropped;
    struct stream *streams;
    size_t nstreams, capstreams;
    size_t *shash; /* open addressing over streams: index + 1, 0 = empty */
    size_t shcap;
    size_t last_stream; /* index + 1 of the stream of the previous line */
    struct rank_info *ri;
    size_t nri;
    int64_t ended_ns; /* set by diag_summarize: when the first rank ended badly, 0: none */
};

/* The rank a person means for a line of trainyard rank `rank` with process-rank prefix
 * `prank` (-1: none): the prefix; else the rank itself when its log never carries prefixes;
 * -1 for the unprefixed lines of a rank whose log does (a pod running torchrun: its index is
 * not a process rank) and for the job itself. */
int diag_who(const struct diag *d, int rank, int prank);

static inline int finding_who(const struct diag *d, const struct finding *f)
{
    return diag_who(d, f->rank, f->prank);
}

/* Node of a finding: its own, else where its rank runs. May be NULL. */
const char *diag_finding_node(const struct diag *d, const struct finding *f);
const char *diag_finding_pod(const struct diag *d, const struct finding *f);
bool diag_rank_started(const struct diag *d, int rank);
/* Renders the one-line summary of a finding. */
void diag_finding_text(const struct diag *d, const struct finding *f, char *out, size_t cap);

#endif
