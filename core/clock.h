/*
 * clock: time in one unit everywhere, int64 nanoseconds since the Unix epoch (UTC), and the one
 * text form the API uses, RFC 3339 in UTC with microseconds ("2026-11-22T02:54:37.123456Z").
 */
#ifndef TY_CLOCK_H
#define TY_CLOCK_H

#include <stdint.h>

#define CLOCK_RFC3339_MAX 64
#define NS_PER_SEC        1000000000LL
#define NS_PER_MS         1000000LL

int64_t clock_now_ns(void);  /* wall clock */
int64_t clock_mono_ns(void); /* monotonic, for timeouts and durations */

/* Writes ns as RFC 3339 into out (CLOCK_RFC3339_MAX bytes); returns out. */
char *clock_format(int64_t ns, char *out);
/* Parses RFC 3339 (with 'Z' or an offset; fraction optional, up to 9 digits).
 * Returns 0 or -1 when text is not a valid timestamp. */
int clock_parse(const char *text, int64_t *ns);

/* Sleeps for ms milliseconds, restarting after signals. */
void clock_sleep_ms(int64_t ms);

#endif
