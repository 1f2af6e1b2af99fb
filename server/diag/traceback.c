/*
 * traceback: state machines for Python tracebacks and torchrun ChildFailedError reports that
 * span many log lines (see traceback.h). It only parses; what a report means is decided in
 * diag.c. Frames beyond TRACEBACK_HEAD + TRACEBACK_TAIL are counted, not kept, so a deep
 * recursion costs no memory.
 *
 * Not thread-safe: one struct traceback per stream, fed in line order.
 */
#include "server/diag/traceback.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/xalloc.h"

enum state { IDLE, FRAMES, TORCHRUN };

/* A report that never completes is given up after this many lines that are not its own
 * (interleaved output) or, for torchrun, this many lines in total. */
#define MAX_STRAY          40
#define MAX_TORCHRUN_LINES 400

struct traceback {
    enum state state;
    int stray;
    /* FRAMES */
    struct traceback_exc exc;
    struct traceback_frame tail[TRACEBACK_TAIL]; /* ring of the latest frames */
    size_t total;                                /* frames seen */
    struct traceback_frame *last;                /* frame that gets the next code line */
    bool wrapped; /* a "Caught X in ..." line was read: its original traceback may follow */
    /* TORCHRUN */
    struct traceback_report rep;
    int rules; /* "=====" lines seen */
    bool in_root;
    int lines;
};

struct traceback *traceback_new(void)
{
    return XNEW(struct traceback);
}

void traceback_free(struct traceback *tb)
{
    free(tb);
}

bool traceback_active(const struct traceback *tb)
{
    return tb && tb->state != IDLE;
}

void traceback_start(struct traceback *tb, int64_t seq)
{
    memset(&tb->exc, 0, sizeof(tb->exc));
    tb->state = FRAMES;
    tb->stray = 0;
    tb->total = 0;
    tb->last = NULL;
    tb->wrapped = false;
    tb->exc.first_seq = seq;
    tb->exc.last_seq = seq;
}

void traceback_start_torchrun(struct traceback *tb, int64_t seq)
{
    memset(&tb->rep, 0, sizeof(tb->rep));
    tb->state = TORCHRUN;
    tb->stray = 0;
    tb->rules = 0;
    tb->in_root = false;
    tb->lines = 0;
    tb->rep.first_seq = seq;
    tb->rep.last_seq = seq;
}

const struct traceback_exc *traceback_exc(const struct traceback *tb)
{
    return &tb->exc;
}

const struct traceback_report *traceback_report(const struct traceback *tb)
{
    return &tb->rep;
}

/* Length of the prefix of s[0..n) made of bytes in set (strspn for unterminated text). */
static size_t span(const char *s, size_t n, const char *set)
{
    size_t i = 0;
    while (i < n && s[i] && strchr(set, s[i]))
        i++;
    return i;
}

static bool starts(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    return n >= m && memcmp(s, lit, m) == 0;
}

bool traceback_parse_exception(const char *text, size_t len, size_t *type_len, size_t *msg_off)
{
    size_t i = 0, comp = 0;
    bool lower = false;
    if (len == 0 || !(isalpha((unsigned char)text[0]) || text[0] == '_'))
        return false;
    while (i < len && (isalnum((unsigned char)text[i]) || text[i] == '_' || text[i] == '.')) {
        if (text[i] == '.')
            comp = i + 1, lower = false;
        else if (islower((unsigned char)text[i]))
            lower = true;
        i++;
    }
    /* Exception classes are CamelCase: "INFO:root:..." or "E0501 ..." are not exceptions. */
    if (!lower || !isupper((unsigned char)text[comp]) || (i < len && text[i] != ':'))
        return false;
    *type_len = i;
    *msg_off = i;
    if (i < len) {
        *msg_off = i + 1;
        while (*msg_off < len && text[*msg_off] == ' ')
            (*msg_off)++;
    }
    return true;
}

/* '  File "/x/train.py", line 42, in forward' */
static void parse_frame(struct traceback_frame *f, const char *s, size_t n)
{
    memset(f, 0, sizeof(*f));
    const char *q = memchr(s, '"', n);
    const char *end = s + n;
    if (!q)
        return;
    const char *q2 = memchr(q + 1, '"', (size_t)(end - q - 1));
    if (!q2)
        return;
    size_t flen = (size_t)(q2 - q - 1);
    const char *fs = q + 1;
    if (flen >= sizeof(f->file)) { /* keep the tail: the file name matters most */
        fs += flen - (sizeof(f->file) - 1);
        flen = sizeof(f->file) - 1;
    }
    classify_clean(f->file, sizeof(f->file), fs, flen);
    const char *l = classify_find(q2, (size_t)(end - q2), ", line ", 7, false);
    if (l) {
        for (l += 7; l < end && isdigit((unsigned char)*l) && f->line < 10000000; l++)
            f->line = f->line * 10 + (*l - '0');
    }
    const char *in = classify_find(q2, (size_t)(end - q2), ", in ", 5, false);
    if (in)
        classify_clean(f->func, sizeof(f->func), in + 5, (size_t)(end - in - 5));
}

static void push_frame(struct traceback *tb, const char *s, size_t n)
{
    struct traceback_frame *f = tb->total < TRACEBACK_HEAD
                                    ? &tb->exc.frames[tb->total]
                                    : &tb->tail[(tb->total - TRACEBACK_HEAD) % TRACEBACK_TAIL];
    parse_frame(f, s, n);
    tb->total++;
    tb->last = f;
}

/* Copies the kept frames into exc.frames in call order. */
static void finish_frames(struct traceback *tb)
{
    size_t head = tb->total < TRACEBACK_HEAD ? tb->total : TRACEBACK_HEAD;
    size_t rest = tb->total - head;
    size_t keep = rest < TRACEBACK_TAIL ? rest : TRACEBACK_TAIL;
    for (size_t k = 0; k < keep; k++) {
        size_t idx = rest - keep + k; /* index among the frames after the head */
        tb->exc.frames[head + k] = tb->tail[idx % TRACEBACK_TAIL];
    }
    tb->exc.nframes = head + keep;
    tb->exc.omitted = rest - keep;
}

/* "KeyError: Caught KeyError in DataLoader worker process 3.": PyTorch re-raises the exception
 * of a DataLoader worker (or a DataParallel replica, a pin-memory thread) as "Caught <its type's
 * name> in <where>.", the message going on with "Original Traceback (most recent call last):"
 * and the original's frames and exception line. */
static bool rewrapped(const struct traceback_exc *e)
{
    const char *dot = strrchr(e->type, '.'), *name = dot ? dot + 1 : e->type;
    size_t n = strlen(name);
    return strncmp(e->message, "Caught ", 7) == 0 && strncmp(e->message + 7, name, n) == 0 &&
           strncmp(e->message + 7 + n, " in ", 4) == 0;
}

static enum traceback_event close_exception(struct traceback *tb)
{
    finish_frames(tb);
    tb->state = IDLE;
    return TRACEBACK_EXCEPTION;
}

static enum traceback_event feed_frames(struct traceback *tb, int64_t seq, const char *text,
                                        size_t len)
{
    size_t ind = 0;
    while (ind < len && (text[ind] == ' ' || text[ind] == '\t'))
        ind++;
    const char *t = text + ind;
    size_t n = len - ind;
    if (tb->wrapped && tb->exc.context[0] == '\0') {
        /* the line after a wrapper's: its original traceback, or the wrapper was all */
        if (ind == 0 && starts(t, n, "Original Traceback")) {
            snprintf(tb->exc.context, sizeof(tb->exc.context), "%s", tb->exc.message);
            tb->last = NULL;
            return TRACEBACK_CONSUMED;
        }
        tb->wrapped = false;
        close_exception(tb);
        return TRACEBACK_EXCEPTION_BEFORE;
    }
    if (ind > 0 && starts(t, n, "File \"")) {
        push_frame(tb, t, n);
        return TRACEBACK_CONSUMED;
    }
    if (ind > 0 || n == 0) { /* code line, caret line, "[Previous line repeated ...]" */
        bool caret = n > 0 && span(t, n, "^~ ") == n;
        if (n > 0 && tb->last && !tb->last->code[0] && !caret && t[0] != '[')
            classify_clean(tb->last->code, sizeof(tb->last->code), t, n);
        return TRACEBACK_CONSUMED;
    }
    size_t tl, mo;
    if (!traceback_parse_exception(t, n, &tl, &mo)) {
        if (++tb->stray > MAX_STRAY)
            tb->state = IDLE;
        return TRACEBACK_NOT_MINE;
    }
    classify_clean(tb->exc.type, sizeof(tb->exc.type), t, tl);
    classify_clean(tb->exc.message, sizeof(tb->exc.message), t + mo, n - mo);
    tb->exc.last_seq = seq;
    if (!tb->wrapped && rewrapped(&tb->exc)) {
        tb->wrapped = true; /* the original follows: its frames continue these */
        return TRACEBACK_CONSUMED;
    }
    if (tl >= 16 && memcmp(t + tl - 16, "ChildFailedError", 16) == 0) {
        finish_frames(tb);
        traceback_start_torchrun(tb, seq); /* torchrun's own stack: the report follows */
        return TRACEBACK_CONSUMED;
    }
    return close_exception(tb);
}

/* "  rank      : 5 (local_rank: 5)" -> fields of the current entry. */
static void torchrun_field(struct traceback_failure *f, const char *key, size_t klen, const char *v,
                           size_t vlen)
{
    char buf[64];
    size_t n = vlen < sizeof(buf) - 1 ? vlen : sizeof(buf) - 1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    if (klen == 4 && memcmp(key, "rank", 4) == 0) {
        f->rank = (int)strtol(buf, NULL, 10);
        const char *lr = strstr(buf, "local_rank: ");
        if (lr)
            f->local_rank = (int)strtol(lr + 12, NULL, 10);
    } else if (klen == 8 && memcmp(key, "exitcode", 8) == 0) {
        f->exitcode = (int)strtol(buf, NULL, 10);
        f->has_exit = true;
    } else if (klen == 4 && memcmp(key, "host", 4) == 0) {
        classify_clean(f->host, sizeof(f->host), v, vlen);
    } else if (klen == 4 && memcmp(key, "time", 4) == 0) {
        classify_clean(f->time, sizeof(f->time), v, vlen);
    } else if (klen == 9 && memcmp(key, "traceback", 9) == 0) {
        size_t at;
        const struct diag_pattern *p = classify_line(v, vlen, &at);
        if (p && p->role != DIAG_INFO && !(p->flags & (PAT_TRACEBACK | PAT_TORCHRUN)) &&
            (!f->pat || p < f->pat)) {
            f->pat = p;
            classify_detail(p, v, vlen, at, f->detail, sizeof(f->detail));
        }
    }
}

/* A line inside an entry: "key : value", or free text of the entry's traceback. */
static void torchrun_entry_line(struct traceback *tb, const char *t, size_t n)
{
    struct traceback_failure *f = &tb->rep.failures[tb->rep.n - 1];
    const char *colon = memchr(t, ':', n);
    size_t klen = 0;
    if (colon) {
        klen = (size_t)(colon - t);
        while (klen > 0 && t[klen - 1] == ' ')
            klen--;
    }
    bool field =
        colon && klen > 0 && klen <= 10 && span(t, n, "abcdefghijklmnopqrstuvwxyz_") >= klen;
    if (field) {
        const char *v = colon + 1;
        while (v < t + n && *v == ' ')
            v++;
        torchrun_field(f, t, klen, v, (size_t)(t + n - v));
    } else {
        torchrun_field(f, "traceback", 9, t, n); /* continuation of the entry's traceback */
    }
}

static enum traceback_event feed_torchrun(struct traceback *tb, int64_t seq, const char *text,
                                          size_t len)
{
    size_t ind = 0;
    while (ind < len && text[ind] == ' ')
        ind++;
    const char *t = text + ind;
    size_t n = len - ind;
    tb->lines++;
    if (tb->rules == 0 && tb->lines > 3) { /* no report followed the exception line */
        tb->state = IDLE;
        return TRACEBACK_NOT_MINE;
    }
    tb->rep.last_seq = seq;
    if (n >= 10 && span(t, n, "=") == n) {
        if (++tb->rules >= 2 && tb->in_root) {
            tb->state = IDLE;
            return TRACEBACK_TORCHRUN;
        }
    } else if (starts(t, n, "Root Cause")) {
        tb->in_root = true;
    } else if (ind == 0 && n >= 4 && t[0] == '[' && t[n - 1] == ':' && t[n - 2] == ']') {
        if (tb->rep.n < TRACEBACK_FAILURES) {
            struct traceback_failure *f = &tb->rep.failures[tb->rep.n++];
            memset(f, 0, sizeof(*f));
            f->root = tb->in_root;
            f->rank = f->local_rank = -1;
            f->seq = seq;
        }
    } else if (ind > 0 && tb->rep.n > 0) {
        torchrun_entry_line(tb, t, n);
    }
    if (tb->lines > MAX_TORCHRUN_LINES) {
        tb->state = IDLE;
        return TRACEBACK_TORCHRUN;
    }
    return TRACEBACK_CONSUMED;
}

enum traceback_event traceback_feed(struct traceback *tb, int64_t seq, const char *text, size_t len)
{
    switch (tb->state) {
    case FRAMES:
        return feed_frames(tb, seq, text, len);
    case TORCHRUN:
        return feed_torchrun(tb, seq, text, len);
    case IDLE:
        break;
    }
    return TRACEBACK_NOT_MINE;
}
