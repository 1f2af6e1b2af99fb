/* clock: wall and monotonic time, RFC 3339 formatting and parsing. Thread-safe. */
#include "core/clock.h"

#include <ctype.h>
#include <errno.h>
#include <time.h>

int64_t clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

int64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* Writes v as n digits (zero-padded) at p; returns the end. */
static char *put_digits(char *p, long v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
    return p + n;
}

/* Year, month and day of a day count since 1970-01-01 in the proleptic Gregorian calendar
 * (Howard Hinnant's civil_from_days): gmtime_r takes glibc's time zone lock on every call, and
 * every job, rank, event and log line in an answer has times. */
static void civil_from_days(int64_t z, long *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (long)(yoe + era * 400 + (*m <= 2));
}

char *clock_format(int64_t ns, char *out)
{
    int64_t sec = ns / NS_PER_SEC, frac = ns % NS_PER_SEC;
    if (frac < 0) {
        frac += NS_PER_SEC;
        sec -= 1;
    }
    int64_t days = sec / 86400, rem = sec % 86400;
    if (rem < 0) {
        rem += 86400;
        days -= 1;
    }
    long year;
    int month, day;
    civil_from_days(days, &year, &month, &day);
    if (year < 0 || year > 9999) { /* outside RFC 3339: written as C would */
        snprintf(out, CLOCK_RFC3339_MAX, "%04ld-%02d-%02dT%02d:%02d:%02d.%06ldZ", year, month, day,
                 (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), (long)(frac / 1000));
        return out;
    }
    char *p = put_digits(out, year, 4);
    *p++ = '-';
    p = put_digits(p, month, 2);
    *p++ = '-';
    p = put_digits(p, day, 2);
    *p++ = 'T';
    p = put_digits(p, (long)(rem / 3600), 2);
    *p++ = ':';
    p = put_digits(p, (long)(rem / 60 % 60), 2);
    *p++ = ':';
    p = put_digits(p, (long)(rem % 60), 2);
    *p++ = '.';
    p = put_digits(p, (long)(frac / 1000), 6);
    *p++ = 'Z';
    *p = '\0';
    return out;
}

/* Reads exactly n digits at *p into *v. */
static int digits(const char **p, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        x = x * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

static int expect(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

static int days_in_month(int year, int mon)
{
    static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return days[mon - 1] + (mon == 2 && leap);
}

int clock_parse(const char *text, int64_t *ns)
{
    const char *p = text;
    int y, mo, d, h, mi, s;
    if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) || expect(&p, '-') ||
        digits(&p, 2, &d))
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return -1;
    p++;
    if (digits(&p, 2, &h) || expect(&p, ':') || digits(&p, 2, &mi) || expect(&p, ':') ||
        digits(&p, 2, &s))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60)
        return -1;
    long frac = 0;
    if (*p == '.') {
        p++;
        int n = 0;
        while (isdigit((unsigned char)*p)) {
            if (n < 9) {
                frac = frac * 10 + (*p - '0');
                n++;
            }
            p++;
        }
        if (n == 0)
            return -1;
        while (n++ < 9)
            frac *= 10;
    }
    int offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh) || expect(&p, ':') || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        offset = sign * (oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    struct tm tm = {
        .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = s
    };
    time_t sec = timegm(&tm);
    /* int64 nanoseconds hold the years 1678 to 2261: outside them there is no such time. */
    int64_t secs = (int64_t)sec - offset;
    if (secs <= INT64_MIN / NS_PER_SEC || secs >= INT64_MAX / NS_PER_SEC)
        return -1;
    *ns = secs * NS_PER_SEC + frac;
    return 0;
}

void clock_sleep_ms(int64_t ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * NS_PER_MS };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}
