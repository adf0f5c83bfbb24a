/*
 * tls.h - TLS 1.3 on a tcp transport connection, for [security] mode
 * encrypt (docs/encryption.md).
 *
 * The link handshake (link_auth.h: AUTH frames, HMAC proofs) runs in
 * plaintext and proves both ends; then both switch the same socket to
 * TLS 1.3 keyed with an external pre-shared key that the handshake
 * derived for this connection (peer_auth_tls_psk): no certificates, the
 * PSK is the only credential, and (EC)DHE is kept on top of it
 * (psk_dhe_ke), so a cluster key that leaks later does not open recorded
 * traffic.  OpenSSL does the work (libssl) on the socket itself, with
 * SSL_OP_ENABLE_KTLS: where the kernel has the tls module, records are
 * sealed and opened by the kernel and the data path stays sendmsg and
 * recvmsg; elsewhere OpenSSL's user-space record layer does it, and the
 * records it seals are written in batches (many records per write(2)).
 *
 * Everything is non-blocking.  The calls below behave like read(2) and
 * writev(2) on the socket: -1 with errno EAGAIN when OpenSSL wants the
 * socket readable or writable (tls_conn_wants_write() says which), so the
 * transport's existing readiness handling drives the TLS handshake and
 * records too.  A record that does not authenticate (a byte changed on
 * the way) or any other TLS failure delivers nothing: -1 with errno
 * EBADMSG (a record) or EPROTO (the handshake or the protocol), counted
 * by reason and logged with OpenSSL's error text through a token bucket
 * (a man in the middle chooses how often); the transport then breaks the
 * connection like any other transport error.
 *
 * All calls on the daemon's loop thread.
 */
#ifndef SLD_XPORT_TLS_H
#define SLD_XPORT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "xport/xport.h"

#define TLS_PSK_LEN 32u		/* bytes of a connection's pre-shared key */

struct tls_ctx;
struct tls_conn;

/*
 * tls_ctx_new - the TLS 1.3 context of a transport (both roles).
 * Returns it, or NULL with the reason logged (libssl failed).
 * tls_ctx_free - free it (NULL is fine); every tls_conn of it first.
 */
struct tls_ctx *tls_ctx_new(void);
void tls_ctx_free(struct tls_ctx *t);

/* Add the TLS counters of @t (xport_stats tls_*) into @st. */
void tls_ctx_stats(const struct tls_ctx *t, struct xport_stats *st);

/*
 * tls_conn_new - TLS on the connected socket @fd (not owned: the caller
 * closes it after tls_conn_free()), as the server (the accepter) when
 * @server, keyed with @psk (copied, wiped at free).  @name, the peer's
 * address for logs, is copied.  No byte moves until the first read or
 * write call.  Returns it, or NULL (logged, counted as an internal
 * failure).
 */
struct tls_conn *tls_conn_new(struct tls_ctx *t, int fd, bool server,
			      const uint8_t psk[TLS_PSK_LEN], const char *name);

/*
 * tls_conn_free - free @tc.  @orderly: send TLS close_notify first (best
 * effort, never blocks): the orderly close of a stopping daemon.
 */
void tls_conn_free(struct tls_conn *tc, bool orderly);

/*
 * tls_conn_read - up to @len plaintext bytes into @buf, running the TLS
 * handshake first if it is not done.  Returns bytes (> 0), 0 at the end
 * of the stream (close_notify or EOF), or -1 with errno: EAGAIN (wait for
 * readiness), EBADMSG (a record failed to authenticate), EPROTO (another
 * TLS failure), or the socket's error.
 */
ssize_t tls_conn_read(struct tls_conn *tc, void *buf, size_t len);

/*
 * tls_conn_writev - seal and write the bytes of @iov (@iovcnt entries) as
 * records, running the handshake first if it is not done.  Returns the
 * bytes taken (> 0: each is in a record handed whole to the socket, as
 * writev's count; fewer than asked when the socket filled), or -1 with
 * errno: EAGAIN (nothing taken), EPROTO, or the socket's error.
 * The next call after a short count or EAGAIN must start with the bytes
 * that were not taken, at least as many of them (OpenSSL retries a
 * record it could not finish writing).
 */
ssize_t tls_conn_writev(struct tls_conn *tc, const struct iovec *iov, int iovcnt);

/*
 * tls_conn_flush - write what was sealed outside tls_conn_writev() (the
 * TLS handshake's flights, when the kernel has no kTLS and records wait
 * in the connection's batch buffer).  Returns 0 when nothing waits, or -1
 * with errno: EAGAIN (the socket is full: wait for writability), or the
 * connection's failure.
 */
int tls_conn_flush(struct tls_conn *tc);

/* Did the last call stop because OpenSSL waits for the socket to become
 * writable (arm the write watcher), rather than readable? */
bool tls_conn_wants_write(const struct tls_conn *tc);

/* Plaintext or sealed bytes buffered inside OpenSSL, which no readiness
 * event will announce: read again. */
bool tls_conn_pending(const struct tls_conn *tc);

/* Is the handshake done?  Then are records sealed (@tx) and opened (@rx)
 * by the kernel (kTLS)? */
bool tls_conn_up(const struct tls_conn *tc, bool *ktls_tx, bool *ktls_rx);

#endif
