/* names: Kubernetes and POSIX naming rules. Pure functions; thread-safe. */
#include "job/names.h"

#include <ctype.h>
#include <stdbool.h>

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? of n bytes; first_alpha requires a letter first. */
static bool dns_label(const char *s, size_t n, bool first_alpha)
{
    if (n == 0 || n > 63)
        return false;
    if (first_alpha ? !(s[0] >= 'a' && s[0] <= 'z') : !lower_alnum(s[0]))
        return false;
    if (!lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

const char *names_dns1035_label(const char *s)
{
    if (dns_label(s, strlen(s), true))
        return NULL;
    return "must be a DNS-1035 label: at most 63 lowercase letters, digits and '-', starting with "
           "a letter and ending with a letter or digit (e.g. \"bert-finetune\")";
}

const char *names_dns1123_label(const char *s)
{
    if (dns_label(s, strlen(s), false))
        return NULL;
    return "must be a DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and "
           "ending with a letter or digit (e.g. \"ml-team\")";
}

static bool subdomain(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!dns_label(s + start, i - start, false))
                return false;
            start = i + 1;
        }
    }
    return true;
}

const char *names_dns1123_subdomain(const char *s)
{
    if (subdomain(s, strlen(s)))
        return NULL;
    return "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', at most 253 "
           "characters (e.g. \"checkpoints-pvc\")";
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63. */
static bool label_name(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

const char *names_label_key(const char *s)
{
    const char *slash = strchr(s, '/');
    bool ok = slash ? subdomain(s, (size_t)(slash - s)) && label_name(slash + 1, strlen(slash + 1))
                    : label_name(s, strlen(s));
    if (ok)
        return NULL;
    return "must be a label key: an optional DNS subdomain prefix and '/', then at most 63 "
           "letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
}

const char *names_label_value(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || label_name(s, n))
        return NULL;
    return "must be a label value: empty, or at most 63 letters, digits, '-', '_' or '.', "
           "starting and ending with a letter or digit";
}

const char *names_env_var(const char *s)
{
    bool ok = (isalpha((unsigned char)s[0]) || s[0] == '_') && strlen(s) <= 256;
    for (const char *p = s; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '_';
    return ok ? NULL
              : "must be an environment variable name: letters, digits and '_', not starting "
                "with a digit";
}

const char *names_image(const char *s)
{
    size_t n = strlen(s);
    bool ok = n > 0 && n <= 512 && s[0] != '-';
    for (const char *p = s; ok && *p; p++)
        ok = (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f;
    return ok ? NULL
              : "must be an image reference such as \"nvcr.io/nvidia/pytorch:24.10-py3\" (no "
                "spaces, at most 512 characters)";
}

const char *names_abs_path(const char *s)
{
    size_t n = strlen(s);
    bool ok = n > 0 && n <= 4096 && s[0] == '/' && !strstr(s, "/../") &&
              !(n >= 3 && strcmp(s + n - 3, "/..") == 0);
    for (const char *p = s; ok && *p; p++)
        ok = (unsigned char)*p >= 0x20;
    return ok ? NULL : "must be an absolute path without '..' (e.g. \"/checkpoints/run-1\")";
}
