/*
 * bench_follow: follow latency. N clients follow one job's log over Server-Sent Events while
 * a rank writes lines carrying the time they were written ("t=<ns>"); each client notes when
 * the line reaches it. Prints p50/p99/max of write-to-receive latency over every line and
 * client. Started by bench-follow.sh (and bench-load.sh, with TY_TOKEN) with the daemon URL and
 * the job id.
 *
 *   bench_follow URL JOB_ID FOLLOWERS EXPECTED_LINES
 */
#include <curl/curl.h>
#include <time.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/xalloc.h"

struct follower {
    CURL *curl;
    struct buf pending;
    int64_t *lat; /* latencies in ns */
    size_t n, cap;
};

static void record(struct follower *f, int64_t ns)
{
    XGROW(f->lat, f->n, f->cap);
    f->lat[f->n++] = ns;
}

/* Consumes complete SSE lines; "data:" lines hold the JSON log line with "t=<ns>". */
static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ctx)
{
    struct follower *f = ctx;
    int64_t now = clock_now_ns();
    buf_append(&f->pending, ptr, size * nmemb);
    char *start = f->pending.data, *nl;
    while ((nl = memchr(start, '\n', f->pending.len - (size_t)(start - f->pending.data)))) {
        *nl = '\0';
        const char *t = strncmp(start, "data: ", 6) == 0 ? strstr(start, "t=") : NULL;
        if (t)
            record(f, now - strtoll(t + 2, NULL, 10));
        start = nl + 1;
    }
    buf_consume(&f->pending, (size_t)(start - f->pending.data));
    return size * nmemb;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_follow URL JOB_ID FOLLOWERS EXPECTED_LINES\n");
        return 2;
    }
    int nf = (int)strtol(argv[3], NULL, 10);
    long expected = strtol(argv[4], NULL, 10);
    char url[512];
    snprintf(url, sizeof(url), "%s/v1/jobs/%s/logs?follow=true&format=sse", argv[1], argv[2]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    /* TY_TOKEN: a bearer token, for a daemon with authentication on (bench-load.sh). */
    struct curl_slist *auth = NULL;
    char header[300];
    if (getenv("TY_TOKEN")) {
        snprintf(header, sizeof(header), "Authorization: Bearer %s", getenv("TY_TOKEN"));
        auth = curl_slist_append(NULL, header);
    }
    struct follower *fs = xcalloc((size_t)nf, sizeof(*fs));
    for (int i = 0; i < nf; i++) {
        fs[i].curl = curl_easy_init();
        curl_easy_setopt(fs[i].curl, CURLOPT_URL, url);
        curl_easy_setopt(fs[i].curl, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(fs[i].curl, CURLOPT_WRITEDATA, &fs[i]);
        curl_easy_setopt(fs[i].curl, CURLOPT_NOSIGNAL, 1L);
        if (auth)
            curl_easy_setopt(fs[i].curl, CURLOPT_HTTPHEADER, auth);
        curl_multi_add_handle(multi, fs[i].curl);
    }
    int running = nf;
    while (running > 0) {
        curl_multi_perform(multi, &running);
        curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    size_t total = 0;
    for (int i = 0; i < nf; i++)
        total += fs[i].n;
    int64_t *all = xmalloc((total ? total : 1) * sizeof(*all));
    size_t k = 0;
    int complete = 0;
    for (int i = 0; i < nf; i++) {
        memcpy(all + k, fs[i].lat, fs[i].n * sizeof(*all));
        k += fs[i].n;
        complete += (long)fs[i].n == expected;
    }
    qsort(all, total, sizeof(*all), cmp);
    printf("followers: %d, lines each: %ld, followers that got every line: %d\n", nf, expected,
           complete);
    if (total)
        printf("write-to-follower latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu samples)\n",
               all[total / 2] / 1e6, all[total * 99 / 100] / 1e6, all[total - 1] / 1e6, total);
    for (int i = 0; i < nf; i++) {
        curl_multi_remove_handle(multi, fs[i].curl);
        curl_easy_cleanup(fs[i].curl);
        buf_release(&fs[i].pending);
        free(fs[i].lat);
    }
    free(fs);
    free(all);
    curl_multi_cleanup(multi);
    curl_slist_free_all(auth);
    curl_global_cleanup();
    return 0;
}
