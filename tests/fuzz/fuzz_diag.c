/*
 * fuzz_diag: the failure diagnosis and progress parser on hostile log lines, rank endings and
 * platform events. Input: lines separated by '\n'. A line's first byte is its rank (mod 16) and
 * how much time passes; the rest is the text. Lines starting with 0x01 are a rank ending
 * (rank, exit code, signal, then the reason text) and 0x02 a platform event (rank, then
 * "reason message"), the way executors report them. Ends with the summary and the JSON the API
 * serves. Property: the summary's arrays stay within their bounds and the JSON is valid.
 */
#include "core/jsonx.h"
#include "server/diag/diag.h"
#include "tests/fuzz/fuzz.h"

#define T0 1700000000000000000LL

static void ending(struct diag *d, const uint8_t *p, size_t n, int64_t now)
{
    if (n < 4)
        return;
    char *reason = fuzz_cstr(p + 4, n - 4);
    struct ending e = { .rank = p[1] % 16,
                        .node = "node-a",
                        .time_ns = now,
                        .exited = p[2] != 0xff,
                        .exit_code = p[2],
                        .signal = p[3] % 40,
                        .reason = *reason ? reason : NULL,
                        .stopped = p[3] & 0x40,
                        .lost = p[3] & 0x80 };
    diag_ending(d, &e);
    free(reason);
}

static void event(struct diag *d, const uint8_t *p, size_t n, int64_t now)
{
    if (n < 2)
        return;
    char *text = fuzz_cstr(p + 2, n - 2);
    char *space = strchr(text, ' ');
    if (space)
        *space = '\0';
    struct ending_event ev = { .rank = (int)(p[1] % 17) - 1,
                               .pod = "pod-0",
                               .node = "node-b",
                               .time_ns = now,
                               .reason = text,
                               .message = space ? space + 1 : NULL };
    diag_event(d, &ev);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct diag_options o;
    diag_options_default(&o);
    o.world_size = data[0] % 9;
    o.max_findings = 32;
    struct diag *d = diag_new(&o);
    diag_rank_info(d, 0, NULL, "host-0");
    diag_rank_info(d, 1, "pod-1", "host-1");
    int64_t now = T0, seq = 0;
    struct progress_sample samples[16];
    data++;
    size--;
    while (size) {
        size_t n;
        const uint8_t *line = fuzz_take(&data, &size, '\n', &n);
        if (n == 0)
            continue;
        now += (int64_t)line[0] * 250000000LL;
        if (line[0] == 1) {
            ending(d, line, n, now);
        } else if (line[0] == 2) {
            event(d, line, n, now);
        } else {
            char *text = malloc(n - 1 ? n - 1 : 1); /* exact size: no terminator to lean on */
            memcpy(text, line + 1, n - 1);
            struct diag_line dl = { line[0] % 16, ++seq, now, text, n - 1 };
            size_t k = diag_feed(d, &dl, samples, 16);
            FUZZ_ASSERT(k <= 16);
            free(text);
        }
    }
    struct diag_summary s;
    diag_summarize(d, &s);
    FUZZ_ASSERT(s.nevidence <= DIAG_EVIDENCE_MAX && s.nranks <= DIAG_RANKS_MAX &&
                s.nsuspects <= DIAG_RANKS_MAX);
    json_t *j = diag_json(d);
    char *text = jsonx_dumps(j);
    json_t *back = text ? json_loads(text, 0, NULL) : NULL;
    FUZZ_ASSERT(back);
    json_decref(back);
    free(text);
    json_decref(j);
    diag_free(d);
    return 0;
}
