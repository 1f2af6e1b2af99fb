/* parse: strict text-to-number conversions. Thread-safe. */
#include "core/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <strings.h>

int parse_int64(const char *text, int64_t min, int64_t max, int64_t *out)
{
    if (!text || !*text || isspace((unsigned char)*text))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_int(const char *text, int min, int max, int *out)
{
    int64_t v;
    if (parse_int64(text, min, max, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

int parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = { "true", "1", "yes", "on" };
    static const char *const no[] = { "false", "0", "no", "off" };
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* Splits "12.5Mi" into 12.5 and "Mi"; the number must be finite and non-negative. */
static int number_and_suffix(const char *text, double *num, const char **suffix)
{
    if (!text || !*text || !(isdigit((unsigned char)*text) || *text == '.'))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !isfinite(v) || v < 0)
        return -1;
    *num = v;
    *suffix = end;
    return 0;
}

int parse_duration(const char *text, int64_t *ns)
{
    static const struct {
        const char *suffix;
        double ns;
    } units[] = { { "", 1e9 },  { "ns", 1 },   { "us", 1e3 },   { "ms", 1e6 },
                  { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 }, { "d", 86400e9 } };
    double v;
    const char *suffix;
    if (number_and_suffix(text, &v, &suffix) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(suffix, units[i].suffix) == 0) {
            double total = v * units[i].ns;
            if (total > 9.2e18)
                return -1;
            *ns = (int64_t)total;
            return 0;
        }
    }
    return -1;
}

struct unit {
    const char *suffix;
    double factor;
};

static const struct unit byte_units[] = {
    { "", 1 },
    { "B", 1 },
    { "Ki", 1024.0 },
    { "Mi", 1048576.0 },
    { "Gi", 1073741824.0 },
    { "Ti", 1099511627776.0 },
    { "K", 1e3 },
    { "k", 1e3 },
    { "M", 1e6 },
    { "G", 1e9 },
    { "T", 1e12 },
    { "KB", 1e3 },
    { "MB", 1e6 },
    { "GB", 1e9 },
    { "TB", 1e12 },
    { "KiB", 1024.0 },
    { "MiB", 1048576.0 },
    { "GiB", 1073741824.0 },
    { "TiB", 1099511627776.0 },
};

static int scaled(const char *text, const struct unit *units, size_t n, double mul, int64_t *out)
{
    double v;
    const char *suffix;
    if (number_and_suffix(text, &v, &suffix) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(suffix, units[i].suffix) == 0) {
            double total = v * units[i].factor * mul;
            if (total > 9.2e18)
                return -1;
            *out = (int64_t)llround(total);
            return 0;
        }
    }
    return -1;
}

int parse_bytes(const char *text, int64_t *bytes)
{
    return scaled(text, byte_units, sizeof(byte_units) / sizeof(byte_units[0]), 1, bytes);
}

int parse_quantity(const char *text, int64_t *milli)
{
    static const struct unit units[] = {
        { "", 1 },
        { "m", 1e-3 },
        { "k", 1e3 },
        { "M", 1e6 },
        { "G", 1e9 },
        { "T", 1e12 },
        { "P", 1e15 },
        { "Ki", 1024.0 },
        { "Mi", 1048576.0 },
        { "Gi", 1073741824.0 },
        { "Ti", 1099511627776.0 },
        { "Pi", 1125899906842624.0 },
    };
    /* Exponent form ("1e3") is a plain number to strtod; "1E" is not a Kubernetes suffix. */
    return scaled(text, units, sizeof(units) / sizeof(units[0]), 1000, milli);
}

int parse_ranges(const char *text, int64_t min, int64_t max,
                 int (*add)(int64_t lo, int64_t hi, void *ctx), void *ctx)
{
    if (!text || !*text)
        return -1;
    const char *p = text;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[48];
        if (len == 0 || len >= sizeof(item))
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        int64_t lo, hi;
        char *dash = strchr(item + 1, '-');
        if (dash) {
            *dash = '\0';
            if (parse_int64(item, min, max, &lo) < 0 || parse_int64(dash + 1, min, max, &hi) < 0 ||
                hi < lo)
                return -1;
        } else {
            if (parse_int64(item, min, max, &lo) < 0)
                return -1;
            hi = lo;
        }
        if (add(lo, hi, ctx) < 0)
            return -1;
        p += len;
        if (*p == ',')
            p++;
        else
            break;
        if (!*p)
            return -1;
    }
    return 0;
}
