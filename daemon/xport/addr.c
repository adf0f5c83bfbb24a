/*
 * addr.c - socket addresses for the transports.  See addr.h.
 */
#include "autoconfig.h"

#include <string.h>

#include <errno.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "xport/addr.h"

int xport_resolve(const char *host, uint16_t port, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	char serv[8];
	int rc;

	snprintf(serv, sizeof(serv), "%u", port);
	rc = getaddrinfo(host, serv, &hints, res);
	if (rc)
		return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	return 0;
}

void xport_addr_name(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(buf, len, "%s:%u", host, port);
}

void xport_addr_host(const char *name, char *buf, size_t len)
{
	const char *colon = strrchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : strlen(name);

	if (n > 7 && strncmp(name, "::ffff:", 7) == 0 && memchr(name + 7, '.', n - 7)) {
		name += 7;
		n -= 7;
	}
	if (n >= len)
		n = len - 1;
	memcpy(buf, name, n);
	buf[n] = '\0';
}
