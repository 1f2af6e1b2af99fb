/*
 * addrpolicy: the addresses outbound requests may not reach (see addrpolicy.h). Works on the
 * address bytes; IPv6 forms that carry an IPv4 address are judged by that address.
 */
#include "core/addrpolicy.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *refuses_v4(uint32_t a) /* host byte order */
{
    if ((a >> 24) == 127)
        return "loopback";
    if ((a >> 24) == 0)
        return "unspecified (\"this host\")";
    if (a == 0xa9fea9fe || a == 0x646464c8) /* 169.254.169.254, 100.100.100.200 */
        return "cloud metadata";
    if ((a >> 16) == 0xa9fe)
        return "link-local";
    if ((a >> 28) == 0xe || a == 0xffffffff)
        return "multicast or broadcast";
    return NULL;
}

static const char *refuses_v6(const uint8_t b[16])
{
    static const uint8_t zero[16] = { 0 };
    static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
    static const uint8_t aws_imds[16] = { 0xfd, 0, 0x0e, 0xc2, 0, 0, 0,    0,
                                          0,    0, 0,    0,    0, 0, 0x02, 0x54 };
    if (memcmp(b, zero, 15) == 0 && b[15] <= 1)
        return b[15] ? "loopback" : "unspecified";
    if (memcmp(b, aws_imds, 16) == 0)
        return "cloud metadata";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return "link-local";
    if (b[0] == 0xff)
        return "multicast";
    if (memcmp(b, mapped, 12) == 0 || memcmp(b, zero, 12) == 0 || memcmp(b, nat64, 12) == 0) {
        uint32_t a = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15];
        return refuses_v4(a);
    }
    return NULL;
}

const char *addrpolicy_refuses(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return refuses_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family == AF_INET6)
        return refuses_v6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
    return "not an internet address";
}

int addrpolicy_check_host(const char *host, struct err *err)
{
    char name[256];
    size_t len = strlen(host);
    if (len >= sizeof(name))
        return err_set(err, ERR_INVALID, "the host name is too long");
    if (host[0] == '[' && len > 2 && host[len - 1] == ']') /* an IPv6 literal in a URL */
        snprintf(name, sizeof(name), "%.*s", (int)(len - 2), host + 1);
    else
        snprintf(name, sizeof(name), "%s", host);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    if (getaddrinfo(name, NULL, &hints, &res) != 0)
        return 0;
    int rc = 0;
    for (struct addrinfo *ai = res; ai && rc == 0; ai = ai->ai_next) {
        const char *why = addrpolicy_refuses(ai->ai_addr);
        if (!why)
            continue;
        char text[INET6_ADDRSTRLEN] = "?";
        const void *bytes = ai->ai_family == AF_INET
                                ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                                : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
        inet_ntop(ai->ai_family, bytes, text, sizeof(text));
        rc = err_set(err, ERR_INVALID, "%s resolves to %s, a %s address", host, text, why);
    }
    freeaddrinfo(res);
    return rc;
}
