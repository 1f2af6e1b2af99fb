/* sortid: time-ordered identifiers; see sortid.h. */
#include "api/sortid.h"

#include <pthread.h>
#include <string.h>

#include "core/clock.h"
#include "core/crypto.h"

#define EPOCH_MS   1577836800000LL /* 2020-01-01T00:00:00Z */
#define TIME_CHARS 8
#define SEQ_CHARS  (SORTID_LEN - TIME_CHARS)
#define SEQ_SPACE  (36 * 36 * 36 * 36) /* 36^SEQ_CHARS */
#define TIME_SPACE (26LL * 36 * 36 * 36 * 36 * 36 * 36 * 36)

/* In ASCII order, so that ids compare as the numbers they encode. */
static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t last_ms = -1;
static uint32_t seq;

/* A random start in the lower half of the counter's range leaves room to count up. */
static uint32_t random_start(void)
{
    uint32_t r;
    crypto_random(&r, sizeof(r));
    return r % (SEQ_SPACE / 2);
}

static void next(int64_t now_ms, int64_t *ms, uint32_t *n)
{
    pthread_mutex_lock(&lock);
    if (now_ms > last_ms) {
        last_ms = now_ms;
        seq = random_start();
    } else if (++seq >= SEQ_SPACE) { /* 840,000 ids in one millisecond: borrow the next one */
        last_ms++;
        seq = random_start();
    }
    *ms = last_ms;
    *n = seq;
    pthread_mutex_unlock(&lock);
}

void sortid_new(char out[SORTID_LEN + 1])
{
    int64_t now = clock_now_ns() / NS_PER_MS - EPOCH_MS, ms;
    uint32_t n;
    next(now < 0 ? 0 : now >= TIME_SPACE ? TIME_SPACE - 1 : now, &ms, &n);
    for (int i = SORTID_LEN - 1; i >= TIME_CHARS; i--, n /= 36)
        out[i] = digits[n % 36];
    for (int i = TIME_CHARS - 1; i >= 1; i--, ms /= 36)
        out[i] = digits[ms % 36];
    out[0] = (char)('a' + ms % 26);
    out[SORTID_LEN] = '\0';
}

int64_t sortid_time_ms(const char *text)
{
    if (strlen(text) != SORTID_LEN || text[0] < 'a' || text[0] > 'z')
        return -1;
    int64_t ms = text[0] - 'a';
    for (int i = 1; i < SORTID_LEN; i++) {
        const char *d = strchr(digits, text[i]);
        if (!d || !*d)
            return -1;
        if (i < TIME_CHARS)
            ms = ms * 36 + (d - digits);
    }
    return ms + EPOCH_MS;
}
