/*
 * addrpolicy: which network addresses the daemon's own outbound requests (webhooks) may reach.
 * A webhook URL is an admin's, but the daemon sends from inside the cluster: pointed at
 * 127.0.0.1, a link-local address or a cloud's instance metadata service (169.254.169.254,
 * fd00:ec2::254, 100.100.100.200) it would reach what only the host should (the metadata
 * service hands out the node's cloud credentials). Refused: loopback, unspecified, link-local
 * (IPv4 169.254/16, IPv6 fe80::/10), the metadata addresses, multicast and broadcast, also
 * written as IPv4-mapped, IPv4-compatible or NAT64 (64:ff9b::/96) IPv6. Private ranges
 * (10/8, 172.16/12, 192.168/16, fc00::/7) stay allowed: in-house receivers live there.
 *
 * A name is checked by resolving it and checking every address (addrpolicy_check_host), but a
 * name can resolve differently the next time (DNS rebinding), so the sender also checks the
 * address it actually connects to (httpc's public_only). Pure apart from the resolver; thread
 * safe.
 */
#ifndef TY_ADDRPOLICY_H
#define TY_ADDRPOLICY_H

#include <sys/socket.h>

#include "core/err.h"

/* Why sa may not be reached ("loopback", "link-local", "cloud metadata", ...), or NULL. */
const char *addrpolicy_refuses(const struct sockaddr *sa);

/* Resolves host (a name or a literal address, brackets allowed) and checks every address: 0,
 * or -1 with ERR_INVALID naming the address and why. A name that does not resolve now is not
 * refused here (the send-time check covers it). */
int addrpolicy_check_host(const char *host, struct err *err);

#endif
