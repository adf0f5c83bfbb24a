/*
 * tls.c - TLS 1.3 with a per-connection external PSK on a tcp transport
 * connection; see tls.h and docs/encryption.md.
 */
#include "autoconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "log.h"
#include "xport/tls.h"

/* The PSK's identity on the wire: one per protocol version, not a secret
 * (the key itself is per connection). */
#define TLS_PSK_IDENTITY "sluice-v3"
/* TLS_AES_128_GCM_SHA256: the PSK's hash must be the suite's. */
static const unsigned char tls_suite_id[2] = { 0x13, 0x01 };
/* Bytes gathered into one record from small iovec entries (headers and
 * eager payloads); an entry with at least this much left is sealed
 * straight from its own memory, a record at a time. */
#define TLS_STAGE_LEN (16u << 10)

/* Bytes OpenSSL reads from the socket at once (read-ahead): several
 * records per read(2) in a stream. */
#define TLS_READ_BUFFER (128u << 10)
/*
 * Without kTLS the records are sealed into a buffer of the connection and
 * written to the socket in batches: OpenSSL writes each record with its
 * own write(2), which on a 1 MiB stream made 64 small TCP sends where
 * plaintext makes a few large ones (the daemons' CPU per MiB was 3.9 times
 * mode none's; docs/encryption.md).  TLS_OUT_CAP bytes of ciphertext at
 * most wait there; a record is sealed only with TLS_RECORD_ROOM free.
 */
#define TLS_OUT_CAP (256u << 10)
#define TLS_RECORD_ROOM ((16u << 10) + 256u)
#define TLS_SEALED_MAX 64u	/* records waiting in the buffer */
#define TLS_ULP_PATH "/proc/sys/net/ipv4/tcp_available_ulp"

enum tls_failure { TF_HANDSHAKE, TF_RECORD, TF_PROTOCOL, TF_INTERNAL };

struct tls_ctx {
	SSL_CTX *ssl_ctx;
	BIO_METHOD *out_method;	/* the batch buffer's BIO; NULL with kTLS */
	uint64_t sessions, ktls_tx, ktls_rx;
	uint64_t failures[TF_INTERNAL + 1];
};

struct tls_conn {
	struct tls_ctx *t;
	SSL *ssl;
	bool server;
	bool up;		/* handshake done */
	bool want_write;	/* the last call waits for writability */
	bool ktls_tx, ktls_rx;
	int dead;		/* errno of a failure already counted, or 0 */
	int fd;
	/* Batched writes (no kTLS): sealed bytes [out_off, out_len) of out
	 * are still to be written; out_written counts those written ever.
	 * sealed[] are the application records among them, oldest first:
	 * where each one's ciphertext ends (in out_written's terms) and its
	 * plaintext bytes.  sealed_plain: plaintext sealed and not yet
	 * returned by tls_conn_writev(), the first bytes of the caller's next
	 * iovec; written_plain: of those, the bytes whose records are wholly
	 * written. */
	bool batched;
	uint8_t *out;
	size_t out_off, out_len;
	uint64_t out_total, out_written;
	struct { uint64_t end; uint32_t plain; } sealed[TLS_SEALED_MAX];
	unsigned sealed_head, sealed_n;
	uint64_t sealed_plain, written_plain;
	uint8_t psk[TLS_PSK_LEN];
	char name[64];
	uint8_t stage[TLS_STAGE_LEN];
};

/* A man in the middle decides how often these come. */
static struct log_limit tls_log = LOG_LIMIT_INIT("tls failures", 10, 1);

static int conn_index = -1;	/* SSL ex_data slot of the struct tls_conn */

static const char *failure_name(enum tls_failure f)
{
	static const char *const names[] = {
		[TF_HANDSHAKE] = "handshake failed", [TF_RECORD] = "record failed to authenticate",
		[TF_PROTOCOL] = "protocol error", [TF_INTERNAL] = "internal error",
	};

	return names[f];
}

/* Count failure @f and log it with OpenSSL's queued errors (which this
 * empties).  Returns -1 with errno set for the caller to return. */
static int fail(struct tls_ctx *t, const char *name, enum tls_failure f)
{
	char text[256] = "";
	unsigned long e;
	size_t n = 0;

	t->failures[f]++;
	while ((e = ERR_get_error()) != 0) {
		if (n + 3 < sizeof(text)) {
			if (n)
				text[n++] = ';', text[n++] = ' ', text[n] = '\0';
			ERR_error_string_n(e, text + n, sizeof(text) - n);
			n = strlen(text);
		}
	}
	log_limited(&tls_log, LOG_LVL_WARN, "tls: %s: %s: %s", name, failure_name(f),
		    n ? text : "no detail from OpenSSL");
	errno = f == TF_RECORD ? EBADMSG : EPROTO;
	return -1;
}

/* The session that carries the connection's PSK, for either callback. */
static SSL_SESSION *psk_session(SSL *ssl, const struct tls_conn *tc)
{
	const SSL_CIPHER *suite = SSL_CIPHER_find(ssl, tls_suite_id);
	SSL_SESSION *s = SSL_SESSION_new();

	if (!s)
		return NULL;
	if (!suite || !SSL_SESSION_set1_master_key(s, tc->psk, sizeof(tc->psk)) ||
	    !SSL_SESSION_set_cipher(s, suite) ||
	    !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
		SSL_SESSION_free(s);
		return NULL;
	}
	return s;
}

/* A client never accepts a certificate: the PSK is the only credential,
 * and with SSL_VERIFY_NONE a man in the middle could have answered the
 * ClientHello with any certificate of his. */
static int reject_certificate(int preverify_ok, X509_STORE_CTX *x)
{
	(void)preverify_ok;
	(void)x;
	return 0;
}

/* Client (the dialer): offer the connection's PSK. */
static int use_session_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
			  SSL_SESSION **sess)
{
	const struct tls_conn *tc = SSL_get_ex_data(ssl, conn_index);

	(void)md;	/* first call: NULL; then the suite's, which is ours */
	*sess = tc ? psk_session(ssl, tc) : NULL;
	if (!*sess)
		return 0;
	*id = (const unsigned char *)TLS_PSK_IDENTITY;
	*idlen = sizeof(TLS_PSK_IDENTITY) - 1;
	return 1;
}

/* Server (the accepter): the PSK of the identity, which must be ours. */
static int find_session_cb(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
	const struct tls_conn *tc = SSL_get_ex_data(ssl, conn_index);

	*sess = NULL;
	if (!tc || idlen != sizeof(TLS_PSK_IDENTITY) - 1 ||
	    memcmp(id, TLS_PSK_IDENTITY, idlen) != 0)
		return 1;	/* no such PSK: the handshake fails */
	*sess = psk_session(ssl, tc);
	return *sess ? 1 : 0;
}

/* The batch buffer's BIO: OpenSSL's records are appended to tc->out. */
static int out_write(BIO *b, const char *data, int len)
{
	struct tls_conn *tc = BIO_get_data(b);

	BIO_clear_retry_flags(b);
	if (len <= 0)
		return 0;
	if ((size_t)len > TLS_OUT_CAP + TLS_RECORD_ROOM - tc->out_len) {
		BIO_set_retry_write(b);	/* never expected: room is kept */
		return -1;
	}
	memcpy(tc->out + tc->out_len, data, (size_t)len);
	tc->out_len += (size_t)len;
	tc->out_total += (uint64_t)len;
	return len;
}

static long out_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b;
	(void)num;
	(void)ptr;
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;	/* written by drain(), not here */
}

/* Can this kernel seal TLS records (kTLS, the tls upper-layer protocol)? */
static bool kernel_has_ktls(void)
{
	char ulps[256] = "";
	FILE *f = fopen(TLS_ULP_PATH, "r");
	bool tls = false;

	if (!f)
		return false;
	if (fgets(ulps, sizeof(ulps), f))
		for (char *w = strtok(ulps, " \n"); w; w = strtok(NULL, " \n"))
			tls = tls || strcmp(w, "tls") == 0;
	fclose(f);
	return tls;
}

struct tls_ctx *tls_ctx_new(void)
{
	struct tls_ctx *t = calloc(1, sizeof(*t));
	SSL_CTX *c;

	if (!t) {
		log_err("tls: out of memory");
		return NULL;
	}
	if (conn_index < 0)
		conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	c = SSL_CTX_new(TLS_method());
	/* TLS 1.3 only, one AEAD suite (AES-GCM: AES-NI, and what kTLS
	 * offloads); no tickets (no resumption: every connection has a fresh
	 * PSK); an EOF without close_notify is the end of the stream, as the
	 * transport treats a plain one (the link layer decides what was
	 * delivered, by its sequence numbers). */
	if (conn_index < 0 || !c ||
	    !SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION) ||
	    !SSL_CTX_set_ciphersuites(c, "TLS_AES_128_GCM_SHA256") ||
	    !SSL_CTX_set_num_tickets(c, 0)) {
		fail(t, "context", TF_INTERNAL);
		SSL_CTX_free(c);
		free(t);
		return NULL;
	}
	SSL_CTX_set_options(c, SSL_OP_ENABLE_KTLS | SSL_OP_NO_TICKET |
			       SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	/* Records are sealed from the caller's memory a record at a time
	 * and retried from wherever that memory is now (tls_conn_writev). */
	SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* Read whole records (and what follows) per read(2), not the header
	 * and the body apart. */
	SSL_CTX_set_read_ahead(c, 1);
	SSL_CTX_set_default_read_buffer_len(c, TLS_READ_BUFFER);
	/* The PSK is the credential; a client refuses any certificate. */
	SSL_CTX_set_verify(c, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_psk_use_session_callback(c, use_session_cb);
	SSL_CTX_set_psk_find_session_callback(c, find_session_cb);
	t->ssl_ctx = c;
	if (kernel_has_ktls()) {
		log_info("tls: the kernel has kTLS: OpenSSL hands it the records' keys");
		return t;
	}
	t->out_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sluice tls out");
	if (!t->out_method || !BIO_meth_set_write(t->out_method, out_write) ||
	    !BIO_meth_set_ctrl(t->out_method, out_ctrl)) {
		fail(t, "context", TF_INTERNAL);
		tls_ctx_free(t);
		return NULL;
	}
	log_info("tls: no kTLS in this kernel (%s has no tls; modprobe tls before the start "
		 "for it): records sealed in user space, written in batches", TLS_ULP_PATH);
	return t;
}

void tls_ctx_free(struct tls_ctx *t)
{
	if (!t)
		return;
	BIO_meth_free(t->out_method);
	SSL_CTX_free(t->ssl_ctx);
	free(t);
}

void tls_ctx_stats(const struct tls_ctx *t, struct xport_stats *st)
{
	st->tls_sessions += t->sessions;
	st->tls_ktls_tx += t->ktls_tx;
	st->tls_ktls_rx += t->ktls_rx;
	st->tls_failures_handshake += t->failures[TF_HANDSHAKE];
	st->tls_failures_record += t->failures[TF_RECORD];
	st->tls_failures_protocol += t->failures[TF_PROTOCOL];
	st->tls_failures_internal += t->failures[TF_INTERNAL];
	st->tls_failures += t->failures[TF_HANDSHAKE] + t->failures[TF_RECORD] +
			    t->failures[TF_PROTOCOL] + t->failures[TF_INTERNAL];
}

/* Point the SSL's writes at the batch buffer.  Returns 0 or -1. */
static int set_batched(struct tls_conn *tc)
{
	BIO *b;

	tc->out = malloc(TLS_OUT_CAP + TLS_RECORD_ROOM);
	b = tc->out ? BIO_new(tc->t->out_method) : NULL;
	if (!b)
		return -1;
	BIO_set_data(b, tc);
	BIO_set_init(b, 1);
	SSL_set0_wbio(tc->ssl, b);	/* the SSL owns it */
	tc->batched = true;
	return 0;
}

/* Count the application records now wholly written. */
static void sealed_retire(struct tls_conn *tc)
{
	while (tc->sealed_n && tc->sealed[tc->sealed_head].end <= tc->out_written) {
		tc->written_plain += tc->sealed[tc->sealed_head].plain;
		tc->sealed_head = (tc->sealed_head + 1) % TLS_SEALED_MAX;
		tc->sealed_n--;
	}
}

/* Write the batch buffer to the socket.  Returns 0 when it is empty, or
 * -1 with errno (EAGAIN: the socket is full; want_write is set). */
static int drain(struct tls_conn *tc)
{
	int rc = 0;

	while (tc->out_off < tc->out_len) {
		ssize_t w = write(tc->fd, tc->out + tc->out_off, tc->out_len - tc->out_off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0 || errno == EWOULDBLOCK)
				errno = EAGAIN;
			tc->want_write = errno == EAGAIN;
			rc = -1;
			break;
		}
		tc->out_off += (size_t)w;
		tc->out_written += (uint64_t)w;
	}
	if (tc->out_off == tc->out_len) {
		tc->out_off = tc->out_len = 0;
		tc->want_write = false;
	}
	sealed_retire(tc);
	return rc;
}

struct tls_conn *tls_conn_new(struct tls_ctx *t, int fd, bool server,
			      const uint8_t psk[TLS_PSK_LEN], const char *name)
{
	struct tls_conn *tc = calloc(1, sizeof(*tc));

	if (!tc) {
		t->failures[TF_INTERNAL]++;
		log_limited(&tls_log, LOG_LVL_WARN, "tls: %s: out of memory", name);
		return NULL;
	}
	tc->t = t;
	tc->server = server;
	tc->fd = fd;
	memcpy(tc->psk, psk, TLS_PSK_LEN);
	snprintf(tc->name, sizeof(tc->name), "%s", name);
	ERR_clear_error();
	tc->ssl = SSL_new(t->ssl_ctx);
	/* Socket BIOs on the fd: kTLS needs them.  Without kTLS the records
	 * go to the batch buffer instead, and are read from the socket. */
	if (!tc->ssl || !SSL_set_fd(tc->ssl, fd) || !SSL_set_ex_data(tc->ssl, conn_index, tc) ||
	    (t->out_method && set_batched(tc) < 0)) {
		fail(t, name, TF_INTERNAL);
		tls_conn_free(tc, false);
		return NULL;
	}
	if (server) {
		SSL_set_accept_state(tc->ssl);
	} else {
		SSL_set_connect_state(tc->ssl);
		SSL_set_verify(tc->ssl, SSL_VERIFY_PEER, reject_certificate);
	}
	return tc;
}

void tls_conn_free(struct tls_conn *tc, bool orderly)
{
	if (!tc)
		return;
	if (tc->ssl && orderly && tc->up) {
		ERR_clear_error();
		/* 0: close_notify sent (or queued), the peer's not awaited;
		 * < 0: the socket is full or broken, and the stream ends
		 * anyway with the close that follows. */
		if (SSL_shutdown(tc->ssl) < 0 || (tc->batched && drain(tc) < 0)) {
			log_debug("tls: %s: close_notify not sent", tc->name);
			ERR_clear_error();
		}
	}
	SSL_free(tc->ssl);
	OPENSSL_cleanse(tc->psk, sizeof(tc->psk));
	free(tc->out);
	free(tc);
}

/* Classify a failed SSL call (@ret its return).  Returns -1 with errno. */
static int ssl_failed(struct tls_conn *tc, int ret)
{
	int e = SSL_get_error(tc->ssl, ret), saved = errno;

	switch (e) {
	case SSL_ERROR_WANT_READ:
		tc->want_write = false;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		tc->want_write = true;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_SYSCALL:
		/* The socket's own error (a reset, say): a transport error,
		 * not a TLS failure. */
		ERR_clear_error();
		errno = saved ? saved : ECONNRESET;
		return -1;
	case SSL_ERROR_SSL:
		if (!tc->up)
			return fail(tc->t, tc->name, TF_HANDSHAKE);
		if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC)
			return fail(tc->t, tc->name, TF_RECORD);
		return fail(tc->t, tc->name, TF_PROTOCOL);
	default:
		return fail(tc->t, tc->name, TF_PROTOCOL);
	}
}

/* Run the handshake on.  Returns 0 once it is done, else -1 with errno. */
static int handshake(struct tls_conn *tc)
{
	int rc;

	if (tc->up)
		return 0;
	ERR_clear_error();
	rc = SSL_do_handshake(tc->ssl);
	/* The flight it sealed goes out now; a full socket is the write
	 * watcher's (want_write), any other error the next call's. */
	if (tc->batched && drain(tc) < 0 && errno != EAGAIN) {
		tc->dead = errno;
		return -1;
	}
	if (rc != 1)
		return ssl_failed(tc, rc);
	/* Only the PSK may have authenticated the peer: a server that
	 * answered with a certificate instead (which the client refuses
	 * anyway, reject_certificate) is no peer of ours. */
	if (!SSL_session_reused(tc->ssl)) {
		ERR_raise_data(ERR_LIB_SSL, SSL_R_BAD_PSK, "the handshake did not use the PSK");
		tc->dead = EPROTO;
		return fail(tc->t, tc->name, TF_HANDSHAKE);
	}
	tc->up = true;
	tc->want_write = false;
	tc->ktls_tx = BIO_get_ktls_send(SSL_get_wbio(tc->ssl));
	tc->ktls_rx = BIO_get_ktls_recv(SSL_get_rbio(tc->ssl));
	tc->t->sessions++;
	tc->t->ktls_tx += tc->ktls_tx;
	tc->t->ktls_rx += tc->ktls_rx;
	/* One line per link connection, of an authenticated peer. */
	log_info("tls: %s: %s, %s as %s; records sealed %s, opened %s", tc->name,
		 SSL_get_version(tc->ssl), SSL_get_cipher_name(tc->ssl),
		 tc->server ? "server" : "client", tc->ktls_tx ? "by the kernel (kTLS)" : "in user space",
		 tc->ktls_rx ? "by the kernel (kTLS)" : "in user space");
	return 0;
}

ssize_t tls_conn_read(struct tls_conn *tc, void *buf, size_t len)
{
	size_t n = 0;
	int rc;

	if (handshake(tc) < 0)
		return -1;
	ERR_clear_error();
	rc = SSL_read_ex(tc->ssl, buf, len, &n);
	if (tc->batched && tc->out_off < tc->out_len && drain(tc) < 0 && errno != EAGAIN) {
		tc->dead = errno;
		return -1;
	}
	if (rc == 1) {
		tc->want_write = false;
		return (ssize_t)n;
	}
	if (SSL_get_error(tc->ssl, rc) == SSL_ERROR_ZERO_RETURN)
		return 0;
	return ssl_failed(tc, rc);
}

/* The next plaintext to seal from @iov at (*@i, *@off): a pointer and a
 * length (> 0), staged when small; false when the iovec is used up. */
static bool next_chunk(struct tls_conn *tc, const struct iovec *iov, int iovcnt, int *i,
		       size_t *off, const uint8_t **src, size_t *len)
{
	while (*i < iovcnt && iov[*i].iov_len == *off) {
		(*i)++;
		*off = 0;
	}
	if (*i >= iovcnt)
		return false;
	*src = (const uint8_t *)iov[*i].iov_base + *off;
	*len = iov[*i].iov_len - *off;
	/* Small entries are gathered into one record.  Both choices depend
	 * only on the bytes from here on, so a retry after EAGAIN presents
	 * the record OpenSSL holds again, at least as long. */
	if (*len < TLS_STAGE_LEN) {
		size_t o = *off;

		*len = 0;
		for (int j = *i; j < iovcnt && *len < TLS_STAGE_LEN; j++, o = 0) {
			size_t take = iov[j].iov_len - o;

			if (take > TLS_STAGE_LEN - *len)
				take = TLS_STAGE_LEN - *len;
			memcpy(tc->stage + *len, (const uint8_t *)iov[j].iov_base + o, take);
			*len += take;
		}
		*src = tc->stage;
	}
	return true;
}

/* Move (*@i, *@off) on by @n bytes of @iov. */
static void iov_skip(const struct iovec *iov, int iovcnt, int *i, size_t *off, uint64_t n)
{
	while (n && *i < iovcnt) {
		size_t left = iov[*i].iov_len - *off;

		if (n < left) {
			*off += n;
			return;
		}
		n -= left;
		(*i)++;
		*off = 0;
	}
}

/*
 * tls_conn_writev() without kTLS: drain the batch buffer; when it is
 * empty, seal what follows the bytes already sealed, a record at a time,
 * up to TLS_OUT_CAP, and drain again.  Returns the plaintext bytes whose
 * records are wholly written (-1 EAGAIN: none yet).
 */
static ssize_t writev_batched(struct tls_conn *tc, const struct iovec *iov, int iovcnt)
{
	const uint8_t *src;
	size_t off = 0, len;
	uint64_t r;
	int i = 0;

	for (;;) {
		if (drain(tc) < 0 && errno != EAGAIN) {
			tc->dead = errno;
			break;
		}
		if (tc->out_off < tc->out_len)
			break;	/* the socket is full */
		i = 0;
		off = 0;
		iov_skip(iov, iovcnt, &i, &off, tc->sealed_plain);
		if (!next_chunk(tc, iov, iovcnt, &i, &off, &src, &len))
			break;	/* all of it sealed and written */
		while (tc->out_len + TLS_RECORD_ROOM <= TLS_OUT_CAP &&
		       tc->sealed_n < TLS_SEALED_MAX) {
			size_t written = 0;
			int rc;

			ERR_clear_error();
			rc = SSL_write_ex(tc->ssl, src, len, &written);
			if (rc != 1) {
				/* Not expected (room is kept): stop either way. */
				(void)ssl_failed(tc, rc);
				tc->dead = errno != EAGAIN ? errno : EPROTO;
				break;
			}
			tc->sealed[(tc->sealed_head + tc->sealed_n) % TLS_SEALED_MAX].end = tc->out_total;
			tc->sealed[(tc->sealed_head + tc->sealed_n) % TLS_SEALED_MAX].plain =
				(uint32_t)written;
			tc->sealed_n++;
			tc->sealed_plain += written;
			iov_skip(iov, iovcnt, &i, &off, written);
			if (!next_chunk(tc, iov, iovcnt, &i, &off, &src, &len))
				break;
		}
		if (tc->dead)
			break;
	}
	r = tc->written_plain;
	tc->written_plain = 0;
	tc->sealed_plain -= r;
	if (r)
		return (ssize_t)r;
	errno = tc->dead ? tc->dead : EAGAIN;
	if (errno == EAGAIN)
		tc->want_write = true;
	return -1;
}

int tls_conn_flush(struct tls_conn *tc)
{
	if (tc->dead) {
		errno = tc->dead;
		return -1;
	}
	if (!tc->batched || tc->out_off == tc->out_len)
		return 0;
	if (drain(tc) < 0 && errno != EAGAIN)
		tc->dead = errno;
	if (tc->dead) {
		errno = tc->dead;
		return -1;
	}
	if (tc->out_off < tc->out_len) {
		errno = EAGAIN;
		return -1;
	}
	return 0;
}

ssize_t tls_conn_writev(struct tls_conn *tc, const struct iovec *iov, int iovcnt)
{
	size_t total = 0, off = 0, len;
	const uint8_t *src;
	int i = 0;

	if (tc->dead) {
		errno = tc->dead;
		return -1;
	}
	if (handshake(tc) < 0)
		return -1;
	if (tc->batched)
		return writev_batched(tc, iov, iovcnt);
	/* kTLS: OpenSSL writes each record to the socket itself. */
	while (next_chunk(tc, iov, iovcnt, &i, &off, &src, &len)) {
		size_t written = 0;
		int rc;

		ERR_clear_error();
		rc = SSL_write_ex(tc->ssl, src, len, &written);
		if (rc != 1) {
			int r = ssl_failed(tc, rc);

			if (errno != EAGAIN)
				tc->dead = errno;
			if (total)
				break;	/* report what was taken; the error comes next */
			return r;
		}
		tc->want_write = false;
		total += written;
		iov_skip(iov, iovcnt, &i, &off, written);
	}
	return (ssize_t)total;
}

bool tls_conn_wants_write(const struct tls_conn *tc)
{
	return tc->want_write;
}

bool tls_conn_pending(const struct tls_conn *tc)
{
	return SSL_has_pending(tc->ssl) != 0;
}

bool tls_conn_up(const struct tls_conn *tc, bool *ktls_tx, bool *ktls_rx)
{
	*ktls_tx = tc->ktls_tx;
	*ktls_rx = tc->ktls_rx;
	return tc->up;
}
