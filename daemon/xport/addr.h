/*
 * addr.h - socket addresses for the transports: resolving a configured
 * host:port, and naming a peer for the logs.  Shared by tcp.c and verbs.c
 * (rdma_cm addresses connections with the same sockaddrs).
 */
#ifndef SLD_XPORT_ADDR_H
#define SLD_XPORT_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <netdb.h>
#include <sys/socket.h>

/*
 * xport_resolve - getaddrinfo() of @host (name or numeric address) and
 * @port for a stream socket.  Returns 0 with *@res to be freed with
 * freeaddrinfo(), -errno for a system error, or -EHOSTUNREACH when the
 * name does not resolve.  Blocking when @host is a name (only at startup
 * and on a redial, which configured names make rare).
 */
int xport_resolve(const char *host, uint16_t port, struct addrinfo **res);

/* Write "address:port" of IPv4 or IPv6 @sa into @buf (@len bytes; "?:0"
 * for another family); a NULL @sa leaves @buf as it is. */
void xport_addr_name(const struct sockaddr *sa, char *buf, size_t len);

/* The numeric host of @name ("host:port" as xport_addr_name writes it)
 * into @buf (@len bytes, at least 1), an IPv4-mapped IPv6 address as
 * IPv4. */
void xport_addr_host(const char *name, char *buf, size_t len);

#endif
