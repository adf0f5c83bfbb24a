/*
 * raw_peer.c - a hand-written wire peer for tests; see raw_peer.h.
 */
#include "autoconfig.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "raw_peer.h"

bool raw_send(int fd, const struct sl_wire_frame *f, const void *payload)
{
	uint8_t hdr[SL_WIRE_HDR_MAX];
	int n = sl_wire_encode(f, hdr, sizeof(hdr));

	if (n <= 0 || send(fd, hdr, (size_t)n, MSG_NOSIGNAL) != n)
		return false;
	return f->payload_len == 0 ||
	       send(fd, payload, f->payload_len, MSG_NOSIGNAL) == (ssize_t)f->payload_len;
}

/* Exactly @n bytes within the deadline @end (h_now_ms); 1, 0 on EOF or
 * reset, -ETIMEDOUT. */
static int read_full(int fd, uint8_t *buf, size_t n, int64_t end)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = end - h_now_ms();
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) != 1)
			continue;
		r = read(fd, buf + got, n - got);
		if (r <= 0)
			return 0;
		got += (size_t)r;
	}
	return 1;
}

int raw_recv(int fd, struct sl_wire_frame *f, int ms)
{
	int64_t end = h_now_ms() + ms;
	uint8_t hdr[SL_WIRE_HDR_MAX], skip[4096];
	uint32_t hlen, left;
	int rc = read_full(fd, hdr, SL_WIRE_COMMON_LEN, end);

	if (rc <= 0)
		return rc;
	hlen = sl_wire_hdr_len(hdr[1]);
	if (hlen < SL_WIRE_COMMON_LEN)
		return -EPROTO;
	rc = read_full(fd, hdr + SL_WIRE_COMMON_LEN, hlen - SL_WIRE_COMMON_LEN, end);
	if (rc <= 0)
		return rc;
	if (sl_wire_decode_hdr(hdr, hlen, f) != (int)hlen)
		return -EPROTO;
	for (left = f->payload_len; left;) {
		uint32_t n = left < sizeof(skip) ? left : (uint32_t)sizeof(skip);

		rc = read_full(fd, skip, n, end);
		if (rc <= 0)
			return rc;
		left -= n;
	}
	return 1;
}

/* The next frame other than an ACK: 0, -ECONNRESET when the daemon closed
 * the connection, or raw_recv's error. */
static int recv_answer(int fd, struct sl_wire_frame *f, int ms)
{
	int rc;

	do
		rc = raw_recv(fd, f, ms);
	while (rc == 1 && f->type == SL_WIRE_ACK);
	if (rc == 0)
		return -ECONNRESET;
	return rc < 0 ? rc : 0;
}

int raw_handshake(int fd, struct raw_auth *a, int ms)
{
	struct sl_wire_frame f = { .type = SL_WIRE_AUTH }, in;
	uint8_t nonce_d[SL_WIRE_AUTH_NONCE_LEN];
	int rc;

	f.u.auth.node_id = a->node;
	f.u.auth.step = 1;
	f.u.auth.mode = a->key ? 1 : 0;
	f.u.auth.incarnation = a->incarnation;
	f.u.auth.key_id = a->key ? (a->key_id ? a->key_id : a->key->id) : 0;
	if (peer_auth_nonce(nonce_d) < 0)
		return -EIO;
	memcpy(f.u.auth.nonce, nonce_d, sizeof(nonce_d));
	if (sl_wire_encode(&f, a->step1, sizeof(a->step1)) != (int)SL_WIRE_AUTH_LEN)
		return -EPROTO;
	if (send(fd, a->step1, SL_WIRE_AUTH_LEN, MSG_NOSIGNAL) != SL_WIRE_AUTH_LEN)
		return -ECONNRESET;
	rc = recv_answer(fd, &in, ms);
	if (rc < 0)
		return rc;
	if (in.type == SL_WIRE_BYE && in.u.bye.reason) {
		a->refused = in.u.bye.reason;	/* it says why, then closes */
		return -ECONNRESET;
	}
	if (in.type != SL_WIRE_AUTH || in.u.auth.step != 2 || in.u.auth.node_id != a->to_node)
		return -EPROTO;
	if (a->key && !a->no_check &&
	    !peer_auth_proof_ok(a->key, PEER_ROLE_ACCEPTER, 1, nonce_d, in.u.auth.nonce, a->node,
				a->to_node, a->incarnation, in.u.auth.incarnation,
				in.u.auth.proof))
		return -EACCES;
	a->peer_incarnation = in.u.auth.incarnation;
	f = (struct sl_wire_frame){ .type = SL_WIRE_AUTH };
	f.u.auth.node_id = a->node;
	f.u.auth.step = 3;
	f.u.auth.mode = a->key ? 1 : 0;
	f.u.auth.incarnation = a->incarnation;
	if (a->key) {
		f.u.auth.key_id = a->key_id ? a->key_id : a->key->id;
		if (peer_auth_proof(a->key, PEER_ROLE_DIALER, 1, nonce_d, in.u.auth.nonce, a->node,
				    a->to_node, a->incarnation, in.u.auth.incarnation,
				    f.u.auth.proof) < 0)
			return -EIO;
	}
	if (sl_wire_encode(&f, a->step3, sizeof(a->step3)) != (int)SL_WIRE_AUTH_LEN)
		return -EPROTO;
	if (send(fd, a->step3, SL_WIRE_AUTH_LEN, MSG_NOSIGNAL) != SL_WIRE_AUTH_LEN)
		return -ECONNRESET;
	return 0;
}

int raw_hello(int fd, struct raw_auth *a, int ms)
{
	struct sl_wire_frame f = { .type = SL_WIRE_HELLO };
	int rc = raw_handshake(fd, a, ms);

	if (rc < 0)
		return rc;
	f.u.hello.node_id = a->node;
	f.u.hello.eager_max = 65536;
	f.u.hello.incarnation = a->incarnation;
	f.u.hello.credits = 256;
	if (!raw_send(fd, &f, NULL))
		return -ECONNRESET;
	rc = recv_answer(fd, &f, ms);
	if (rc < 0)
		return rc;
	return f.type == SL_WIRE_HELLO && f.u.hello.node_id == a->to_node ? 0 : -EPROTO;
}
