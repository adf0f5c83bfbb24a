/*
 * test_netfuzz.c - the network fuzzer (docs/security.md): a peer
 * that holds the cluster key and speaks the protocol, then lies in it.
 *
 * Nodes a and b, both in [security] mode authenticate with one key; b
 * also has node "f" configured, which dials it (f's node id is below
 * b's).  The fuzzer plays f from this process: for each case it
 * connects to b's listen port, completes the AUTH handshake and the
 * HELLO correctly (resuming the sequence state b keeps for f), then sends
 * a few generated frames, some mutated: bit flips, wrong header and
 * payload lengths, another version, seqs in and out of the window, bogus
 * acks and NAKs, RTS/RTR/WRITE/FIN/DONE with wild ids, keys and
 * addresses (and WRITEs near the ranges b's RTRs granted), truncated
 * frames, garbage after valid ones, a late HELLO or AUTH; it reads what b
 * answers (remembering b's grants) until b closes the connection or goes
 * quiet, and ends the connection (close, reset, or BYE first).  One case
 * in 16 is a stranger instead, with another key: refused at step 1.
 *
 * Beside it: a receiver on b port 7000 that takes whatever f sends
 * (receives reposted, contents not checked), and the bystanders
 * (bystanders.h) between a and b: a stream and a ping-pong that must see
 * nothing: every operation SL_OK, byte-exact, and the link a<->b keeps
 * its connection (no reconnect, no restart).  Passes when b lives with no
 * AddressSanitizer, LeakSanitizer or UBSan report in its log (the suite's
 * --sanitize build is where that means most) and stops cleanly, b's log
 * stays bounded (fewer than NF_LOG_LINES_PER_CASE lines per case, at log
 * level info), every stranger was refused and counted as such
 * (daemon.auth_failures_key), and no other handshake failed.
 *
 * Budget: SLUICE_NETFUZZ_CASES cases (default NF_CASES), at most
 * SLUICE_NETFUZZ_SECONDS seconds of them (default NF_SECONDS); seed
 * SLUICE_NETFUZZ_SEED (default: from the clock).  The seed is printed
 * first; case i depends on (seed, i) and on what b answered in cases
 * before it, so a run repeats with the same seed and case count.
 * SLUICE_NETFUZZ_VERBOSE=1 prints every frame sent.
 */
#include "autoconfig.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bystanders.h"
#include "harness.h"
#include "raw_peer.h"
#include "sl_wire.h"
#include "sluice.h"
#include "testutil.h"

#define NF_CASES 300u
#define NF_SECONDS 30
#define NF_PORT 7000		/* the receiver on b that f sends to */
#define NF_RECVS 8
#define NF_RECV_LEN (64u << 10)
#define NF_FRAMES_MAX 8		/* generated frames per case */
#define NF_QUIET_MS 40		/* b said nothing for this long: the case ends */
#define NF_GRANTS 8		/* b's RTRs remembered */
/* Lines b may log per case: "far below one". */
#define NF_LOG_LINES_PER_CASE 0.35

struct nf_grant {
	uint64_t raddr, len, send_id;
	uint32_t rkey, recv_id;
};

/* The fuzzer's side of its link to b. */
struct nf {
	uint64_t rng;
	uint32_t f_node, b_node, a_node;
	uint64_t incarnation;	/* f's */
	uint64_t b_incarnation;
	uint64_t next_seq;	/* of f's next sequenced frame */
	uint64_t rx_seq;	/* last in-order seq from b */
	struct nf_grant grants[NF_GRANTS];
	unsigned n_grants;
	bool verbose;		/* SLUICE_NETFUZZ_VERBOSE: each frame on stdout */
	/* what happened, for the report */
	unsigned frames, mutated, closed_by_b, truncated;
};

static uint64_t rnd(struct nf *z)
{
	/* splitmix64 */
	uint64_t x = (z->rng += 0x9e3779b97f4a7c15ull);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t below(struct nf *z, uint64_t n)
{
	return n ? rnd(z) % n : 0;
}

static unsigned env_or(const char *name, unsigned dflt)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned)strtoul(v, NULL, 0) : dflt;
}

/* ------------------------------------------------------------------ */
/* The receiver f sends to                                              */
/* ------------------------------------------------------------------ */

struct target_shared {
	_Atomic int stop;
	_Atomic uint64_t completions;
};

/* Receives of NF_RECV_LEN from anyone on b:NF_PORT, reposted as they
 * complete, whatever their status. */
static void target_run(const struct h_daemon *d, struct target_shared *sh)
{
	struct sl_cqe cqe;
	struct cl c;
	uint8_t *buf;
	int i, rc;

	cl_name = "target";
	cl_open(&c, d, NF_PORT, 32);
	buf = sl_alloc(c.q, NF_RECVS * NF_RECV_LEN);
	CL_REQUIRE(buf, CL_E_SETUP, "sl_alloc");
	for (i = 0; i < NF_RECVS; i++) {
		rc = sl_recv(c.q, SL_ANY_SOURCE, 0, 0, buf + (size_t)i * NF_RECV_LEN, NF_RECV_LEN,
			     CTX_RECV | (unsigned)i);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv: %s", strerror(-rc));
	}
	while (!atomic_load(&sh->stop)) {
		rc = h_wait_cqe(c.q, &cqe, 100);
		CL_REQUIRE(rc >= 0, CL_E_POLL, "wait: %s", strerror(-rc));
		if (rc == 0)
			continue;
		atomic_fetch_add(&sh->completions, 1);
		i = (int)CTX_INDEX(cqe.user_ctx);
		CL_REQUIRE(i < NF_RECVS, CL_E_CTX, "completion of an unknown receive %d", i);
		rc = sl_recv(c.q, SL_ANY_SOURCE, 0, 0, buf + (size_t)i * NF_RECV_LEN, NF_RECV_LEN,
			     CTX_RECV | (unsigned)i);
		CL_REQUIRE(rc == 0, CL_E_POST, "sl_recv again: %s", strerror(-rc));
	}
	cl_close(&c);
	_exit(CL_OK);
}

/* ------------------------------------------------------------------ */
/* Frames                                                               */
/* ------------------------------------------------------------------ */

static uint64_t pick_seq(struct nf *z)
{
	switch (below(z, 10)) {
	case 0:
		return z->next_seq > 1 ? z->next_seq - 1 : 1;	/* a duplicate */
	case 1:
		return z->next_seq + 1 + below(z, 4);		/* a gap */
	case 2:
		return below(z, 3) ? rnd(z) | 1 : (1ull << 63);	/* wild */
	default:
		return z->next_seq;
	}
}

static uint64_t pick_ack(struct nf *z)
{
	switch (below(z, 12)) {
	case 0:
		return rnd(z);			/* beyond anything b sent */
	case 1:
		return z->rx_seq + 1 + below(z, 3);
	default:
		return z->rx_seq;
	}
}

static uint32_t pick_status(struct nf *z)
{
	static const uint32_t st[] = { SL_NAK_BUSY, SL_NAK_RECEIVER_FULL, SL_ERR_NO_ENDPOINT,
				       SL_ERR_TRUNCATED, SL_ERR_PEER_DOWN, SL_ERR_ACCESS };

	return st[below(z, sizeof(st) / sizeof(st[0]))];
}

static uint32_t pick_port(struct nf *z)
{
	static const uint32_t ports[] = { NF_PORT, NF_PORT, NF_PORT, 7100, 7200, 7001, 0,
					  SL_PORT_ANY, 65535, 49152 };

	return below(z, 8) ? ports[below(z, sizeof(ports) / sizeof(ports[0]))]
			   : (uint32_t)rnd(z);
}

static uint32_t pick_len(struct nf *z, uint32_t max)
{
	static const uint32_t lens[] = { 0, 1, 7, 64, 1000, 4096, 65535, 65536, 65537 };
	uint32_t n = below(z, 3) ? (uint32_t)below(z, 300) : lens[below(z, 9)];

	return n < max ? n : max;
}

static struct nf_grant *pick_grant(struct nf *z)
{
	return z->n_grants ? &z->grants[below(z, z->n_grants)] : NULL;
}

/* A WRITE near a grant of b: inside, across its ends, 8 KiB before it,
 * with its key or another; or wild. */
static void make_write(struct nf *z, struct sl_wire_frame *f)
{
	struct nf_grant *g = pick_grant(z);
	uint64_t off;

	f->type = SL_WIRE_WRITE;
	f->payload_len = pick_len(z, 8192);
	if (!g || below(z, 5) == 0) {
		f->u.write.raddr = rnd(z);
		f->u.write.rkey = (uint32_t)rnd(z);
	} else {
		switch (below(z, 5)) {
		case 0:
			off = g->len > f->payload_len ? g->len - f->payload_len + below(z, 64) : 0;
			break;
		case 1:
			off = (uint64_t)-8192;
			break;
		case 2:
			off = g->len;
			break;
		default:
			off = below(z, g->len + 1);
			break;
		}
		f->u.write.raddr = g->raddr + off;
		f->u.write.rkey = g->rkey + (below(z, 6) == 0 ? 1 : 0);
	}
	if (below(z, 3) == 0) {
		f->u.write.has_imm = 1;
		f->u.write.imm = g && below(z, 2) ? g->recv_id : (uint32_t)rnd(z);
	}
}

/* One frame's header fields, valid for the encoder (it refuses what
 * the decoder would); sequenced ones numbered mostly in the window. */
static void make_frame(struct nf *z, struct sl_wire_frame *f)
{
	struct nf_grant *g;

	memset(f, 0, sizeof(*f));
	f->ack = pick_ack(z);
	switch (below(z, 14)) {
	case 0: case 1: case 2:
		f->type = SL_WIRE_EAGER;
		f->u.eager.src_port = (uint32_t)below(z, 70000);
		f->u.eager.dst_port = pick_port(z);
		f->u.eager.tag = below(z, 4) ? below(z, 8) : rnd(z);
		f->u.eager.dst_node = below(z, 10) ? z->b_node : (uint32_t)rnd(z);
		f->payload_len = pick_len(z, 70000);
		break;
	case 3: case 4:
		f->type = SL_WIRE_RTS;
		f->u.rts.src_port = 5555;
		f->u.rts.dst_port = pick_port(z);
		f->u.rts.tag = below(z, 8);
		f->u.rts.dst_node = below(z, 10) ? z->b_node : z->a_node;
		f->u.rts.msg_len = below(z, 4) ? 1 + below(z, NF_RECV_LEN * 2)
					      : 1 + below(z, SL_WIRE_RNDV_MAX);
		f->u.rts.send_id = below(z, 4) ? 1 + below(z, 16) : rnd(z) | 1;
		break;
	case 5:
		f->type = SL_WIRE_RTR;
		f->u.rtr.send_id = rnd(z) | 1;
		f->u.rtr.raddr = rnd(z);
		f->u.rtr.len = below(z, SL_WIRE_RNDV_MAX);
		f->u.rtr.rkey = (uint32_t)rnd(z);
		f->u.rtr.recv_id = (uint32_t)rnd(z) | 1;
		if (below(z, 3) == 0)
			f->u.rtr.status = pick_status(z);
		else
			f->u.rtr.offset = (uint32_t)below(z, f->u.rtr.len + 1);
		break;
	case 6:
		g = pick_grant(z);
		f->type = SL_WIRE_FIN;
		f->u.fin.recv_id = g && below(z, 2) ? g->recv_id : (uint32_t)rnd(z) | 1;
		f->u.fin.status = below(z, 2) ? 0 : pick_status(z);
		break;
	case 7:
		f->type = SL_WIRE_DONE;
		f->u.done.send_id = below(z, 2) ? 1 + below(z, 16) : rnd(z) | 1;
		break;
	case 8: case 9: case 10:
		make_write(z, f);
		f->ack = 0;
		return;
	case 11:
		f->type = SL_WIRE_NAK;
		f->u.nak.nak_seq = below(z, 2) ? 1 + below(z, z->rx_seq + 2) : rnd(z) | 1;
		f->u.nak.status = pick_status(z);
		break;
	case 12:
		f->type = SL_WIRE_ACK;
		return;
	default:
		switch (below(z, 3)) {
		case 0:
			f->type = SL_WIRE_BYE;
			f->u.bye.incarnation = below(z, 2) ? z->incarnation : rnd(z) | 1;
			return;
		case 1:
			f->type = SL_WIRE_HELLO;
			f->u.hello.node_id = z->f_node;
			f->u.hello.eager_max = 65536;
			f->u.hello.incarnation = below(z, 2) ? z->incarnation : rnd(z) | 1;
			f->u.hello.credits = 1 + (uint32_t)below(z, SL_WIRE_CREDITS_MAX);
			f->u.hello.last_rx_seq = below(z, 2) ? z->rx_seq : rnd(z);
			f->u.hello.peer_incarnation = z->b_incarnation;
			f->ack = 0;
			return;
		default:
			f->type = SL_WIRE_AUTH;
			f->u.auth.node_id = z->f_node;
			f->u.auth.step = 1 + (uint16_t)below(z, 3);
			f->u.auth.mode = 1;
			f->u.auth.incarnation = z->incarnation;
			f->ack = 0;
			return;
		}
	}
	f->seq = pick_seq(z);
}

/* Spoil the encoded frame @buf (@n bytes) in place; returns its new
 * length (a truncation, or garbage after it, up to @cap). */
static size_t mutate(struct nf *z, uint8_t *buf, size_t n, size_t cap, bool *last)
{
	uint32_t v;
	size_t i, k;

	z->mutated++;
	switch (below(z, 7)) {
	case 0: case 1:	/* bit flips, in the header mostly */
		for (k = 1 + below(z, 3); k; k--) {
			i = below(z, 4) ? below(z, n < SL_WIRE_HDR_MAX ? n : SL_WIRE_HDR_MAX)
					: below(z, n);
			buf[i] ^= (uint8_t)(1u << below(z, 8));
		}
		return n;
	case 2:		/* hdr_len or payload_len wrong */
		v = below(z, 2) ? (uint32_t)rnd(z) : (uint32_t)below(z, 256);
		memcpy(buf + (below(z, 2) ? 4 : 8), &v, 4);
		return n;
	case 3:		/* another version */
		buf[0] = (uint8_t)(below(z, 2) ? 2 : rnd(z));
		return n;
	case 4:		/* truncated: the connection ends in the middle of it */
		z->truncated++;
		*last = true;
		return below(z, n);
	default:	/* garbage after it */
		k = 1 + below(z, 64);
		if (n + k > cap)
			k = cap - n;
		for (i = 0; i < k; i++)
			buf[n + i] = (uint8_t)rnd(z);
		return n + k;
	}
}

/* ------------------------------------------------------------------ */
/* One case                                                             */
/* ------------------------------------------------------------------ */

/* Send all of @buf; false once b has closed the connection. */
static bool send_all(int fd, const uint8_t *buf, size_t n)
{
	while (n) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);

		if (w <= 0)
			return false;
		buf += w;
		n -= (size_t)w;
	}
	return true;
}

static void remember_grant(struct nf *z, const struct sl_wire_frame *f)
{
	struct nf_grant *g;

	if (f->u.rtr.status || !f->u.rtr.len)
		return;
	g = &z->grants[z->n_grants < NF_GRANTS ? z->n_grants++ : below(z, NF_GRANTS)];
	*g = (struct nf_grant){ .raddr = f->u.rtr.raddr, .len = f->u.rtr.len,
				.send_id = f->u.rtr.send_id, .rkey = f->u.rtr.rkey,
				.recv_id = f->u.rtr.recv_id };
}

/* What b sent on a case's connection, cut into frames as a peer does it:
 * a frame may span two reads, and two drains. */
struct nf_rx {
	uint8_t buf[4 * SL_WIRE_HDR_MAX];
	size_t len;
	uint32_t skip;		/* payload bytes still to drop */
};

static void take_frame(struct nf *z, const struct sl_wire_frame *f)
{
	if (f->seq == z->rx_seq + 1)
		z->rx_seq = f->seq;
	if (f->type == SL_WIRE_RTR)
		remember_grant(z, f);
}

/* Read what b sends until it closes the connection (true) or is quiet
 * for NF_QUIET_MS (false); every frame must decode. */
static bool drain(struct nf *z, struct nf_rx *rx, int fd, unsigned case_no)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct sl_wire_frame f;
		size_t n;
		ssize_t r;
		int rc;

		while (rx->len) {
			if (rx->skip) {
				n = rx->skip < rx->len ? rx->skip : rx->len;
				rx->skip -= (uint32_t)n;
			} else {
				rc = sl_wire_decode_hdr(rx->buf, rx->len, &f);
				if (rc == -EAGAIN)
					break;
				H_ASSERT(rc > 0, "case %u: b sent a frame that does not decode (%s): "
					 "%02x %02x %02x %02x %02x %02x %02x %02x, %zu bytes", case_no,
					 strerror(-rc), rx->buf[0], rx->buf[1], rx->buf[2], rx->buf[3],
					 rx->buf[4], rx->buf[5], rx->buf[6], rx->buf[7], rx->len);
				take_frame(z, &f);
				n = (size_t)rc;
				rx->skip = f.payload_len;
			}
			memmove(rx->buf, rx->buf + n, rx->len - n);
			rx->len -= n;
		}
		rc = poll(&pfd, 1, NF_QUIET_MS);
		if (rc == 0)
			return false;
		if (rc < 0) {
			H_ASSERT(errno == EINTR, "poll: %s", strerror(errno));
			continue;
		}
		r = read(fd, rx->buf + rx->len, sizeof(rx->buf) - rx->len);
		if (r <= 0)
			return true;	/* closed, or reset */
		rx->len += (size_t)r;
	}
}

/* Connect as f, handshake, HELLO; returns the fd. */
static int nf_connect(struct nf *z, const struct h_daemon *b, const struct peer_key *key,
		      unsigned case_no)
{
	struct raw_auth a = { .key = key, .node = z->f_node, .incarnation = z->incarnation,
			      .to_node = z->b_node };
	struct sl_wire_frame f = { .type = SL_WIRE_HELLO };
	int fd = h_tcp_connect(b->tcp_port), rc;

	rc = raw_handshake(fd, &a, 10000);
	H_ASSERT(rc == 0, "case %u: the handshake with the key failed: %s", case_no,
		 strerror(-rc));
	if (z->b_incarnation != a.peer_incarnation)
		z->rx_seq = 0;	/* b restarted?  (The test fails at its end.) */
	z->b_incarnation = a.peer_incarnation;
	f.u.hello.node_id = z->f_node;
	f.u.hello.eager_max = 65536;
	f.u.hello.incarnation = z->incarnation;
	f.u.hello.last_rx_seq = z->rx_seq;
	f.u.hello.credits = 256;
	f.u.hello.peer_incarnation = z->b_incarnation;
	H_ASSERT(raw_send(fd, &f, NULL), "case %u: b closed the connection before our HELLO",
		 case_no);
	do
		rc = raw_recv(fd, &f, 10000);
	while (rc == 1 && f.type != SL_WIRE_HELLO);
	H_ASSERT(rc == 1, "case %u: no HELLO from b (%d)", case_no, rc);
	H_EQ(f.u.hello.node_id, z->b_node);
	z->next_seq = (f.u.hello.peer_incarnation == z->incarnation ? f.u.hello.last_rx_seq : 0) + 1;
	return fd;
}

static void nf_case(struct nf *z, const struct h_daemon *b, const struct peer_key *key,
		    unsigned case_no)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 70000 + 64];
	unsigned k, frames = 1 + (unsigned)below(z, NF_FRAMES_MAX);
	bool last = false, closed = false;
	struct nf_rx rx = { .len = 0 };
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };
	int fd;

	/* Now and then f restarts: b must see a new incarnation. */
	if (below(z, 50) == 0) {
		z->incarnation = rnd(z) | 1;
		z->rx_seq = 0;
		z->n_grants = 0;
	}
	fd = nf_connect(z, b, key, case_no);
	for (k = 0; k < frames && !last && !closed; k++) {
		struct sl_wire_frame f;
		int n;
		size_t len;

		make_frame(z, &f);
		n = sl_wire_encode(&f, buf, sizeof(buf));
		H_ASSERT(n > 0, "case %u: made a frame of type %u the encoder refuses (%d)",
			 case_no, f.type, n);
		len = (size_t)n + f.payload_len;
		for (size_t i = (size_t)n; i < len; i++)
			buf[i] = (uint8_t)(i * 131 + case_no);
		if (f.seq == z->next_seq)
			z->next_seq++;
		if (below(z, 4) == 0)
			len = mutate(z, buf, len, sizeof(buf), &last);
		z->frames++;
		if (z->verbose)
			printf("  case %u frame %u: type %u seq %llu ack %llu payload %u, %zu bytes "
			       "sent%s\n", case_no, k, f.type, (unsigned long long)f.seq,
			       (unsigned long long)f.ack, f.payload_len, len,
			       len != (size_t)n + f.payload_len || buf[0] != SL_WIRE_VERSION ? " (mutated)" : "");
		closed = !send_all(fd, buf, len);
	}
	if (!closed)
		closed = drain(z, &rx, fd, case_no);
	z->closed_by_b += closed;
	switch (below(z, 3)) {
	case 0:		/* a reset */
		H_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)), 0);
		break;
	case 1:
		if (!closed && !last) {
			struct sl_wire_frame bye = { .type = SL_WIRE_BYE };

			bye.ack = z->rx_seq;
			bye.u.bye.incarnation = z->incarnation;
			if (raw_send(fd, &bye, NULL))
				(void)drain(z, &rx, fd, case_no);
		}
		break;
	default:
		break;
	}
	H_EQ(close(fd), 0);
}

/* A stranger with another key, as f: refused at step 1. */
static void stranger_case(const struct nf *z, const struct h_daemon *b,
			  const struct peer_key *wrong, unsigned case_no)
{
	struct raw_auth a = { .key = wrong, .node = z->f_node, .incarnation = z->incarnation,
			      .to_node = z->b_node };
	int fd = h_tcp_connect(b->tcp_port), rc;

	rc = raw_handshake(fd, &a, 10000);
	H_ASSERT(rc == -ECONNRESET, "case %u: a stranger's handshake: %s, want refused", case_no,
		 strerror(-rc));
	H_EQ(close(fd), 0);
}

/* ------------------------------------------------------------------ */
/* b's log                                                              */
/* ------------------------------------------------------------------ */

/* The sanitizers' and the daemon's own reports of a bug. */
static void expect_no_report(const struct h_daemon *d)
{
	static const char *const bad[] = { "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
					   "runtime error:", "assertion", "Assertion" };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		H_ASSERT(tu_log_lines(d, bad[i]) == 0, "%s's log has \"%s\"", d->name, bad[i]);
}

/* ------------------------------------------------------------------ */
/* The test                                                             */
/* ------------------------------------------------------------------ */

static void key_file(char *path, size_t cap, const char *tag, struct peer_key *k)
{
	char err[512];

	snprintf(path, cap, "/tmp/sluice-test-netfuzz-%d-%s.key", (int)getpid(), tag);
	(void)unlink(path);
	H_ASSERT(peer_key_generate(path, err, sizeof(err)) == 0, "%s", err);
	H_ASSERT(peer_key_load(path, k, err, sizeof(err)) == 0, "%s", err);
}

/* b listening, with peers a (which dials it, and is started) and f
 * (nobody listens at f's port: b never dials it), both keyed with the
 * key in @key_path; the link a<->b up. */
static void nf_cluster_start(struct h_daemon *a, struct h_daemon *b, const char *key_path)
{
	struct h_daemon peers_of_b[2];
	char conf[512];

	H_ASSERT(sl_node_id("f") < sl_node_id("b") && sl_node_id("a") < sl_node_id("b"),
		 "f and a must be the dialers of b");
	/* The daemons' operational level: what they log in production. */
	if (!getenv("SLUICE_TEST_LOG_LEVEL"))
		H_EQ(setenv("SLUICE_TEST_LOG_LEVEL", "info", 1), 0);
	snprintf(conf, sizeof(conf), "[security]\nmode = authenticate\nkey_file = %s\n", key_path);
	memset(peers_of_b, 0, sizeof(peers_of_b));
	snprintf(peers_of_b[0].name, sizeof(peers_of_b[0].name), "a");
	peers_of_b[0].tcp_port = h_free_port();
	snprintf(peers_of_b[1].name, sizeof(peers_of_b[1].name), "f");
	peers_of_b[1].tcp_port = h_free_port();
	h_daemon_start_conf(b, "b", h_free_port(), peers_of_b, 2, conf);
	h_daemon_start_conf(a, "a", peers_of_b[0].tcp_port, b, 1, conf);
	h_wait_link(a, b);
	h_wait_link(b, a);
}

/* f's link to b up, the target's receives posted, bystanders running. */
struct nf_stage {
	struct h_daemon a, b;
	struct bystanders bys;
	struct target_shared *tsh;
	pid_t tpid;
	struct peer_key key;
	char key_path[128];
	uint64_t connects_a, connects_b;
	struct nf z;
};

static void stage_start(struct nf_stage *st)
{
	key_file(st->key_path, sizeof(st->key_path), "key", &st->key);
	nf_cluster_start(&st->a, &st->b, st->key_path);
	st->tsh = shared_alloc(sizeof(*st->tsh));
	if ((st->tpid = h_fork()) == 0)
		target_run(&st->b, st->tsh);
	bystanders_start(&st->bys, &st->a, &st->b);
	st->connects_a = h_daemon_stat(&st->a, "link.b.connects");
	st->connects_b = h_daemon_stat(&st->b, "link.a.connects");
	st->z = (struct nf){ .rng = 1, .f_node = sl_node_id("f"), .b_node = st->b.node,
			     .a_node = st->a.node, .incarnation = 0x4e46000000000001ull };
}

/* b alive with no report, the bystanders and the real link untouched. */
static void stage_finish(struct nf_stage *st)
{
	const char *tname = "target";

	H_ASSERT(h_daemon_alive(&st->b), "b died");
	bystanders_finish(&st->bys);
	atomic_store(&st->tsh->stop, 1);
	expect_clients_ok(&st->tpid, &tname, 1, 10000);
	shared_free(st->tsh, sizeof(*st->tsh));
	expect_no_report(&st->b);
	H_EQ(h_daemon_stat(&st->a, "link.b.connects"), st->connects_a);
	H_EQ(h_daemon_stat(&st->b, "link.a.connects"), st->connects_b);
	H_EQ(h_daemon_stat(&st->b, "link.a.peer_restarts"), 0);
	h_daemon_stop(&st->a);
	h_daemon_stop(&st->b);
	H_EQ(unlink(st->key_path), 0);
}

/*
 * The fuzzer: SLUICE_NETFUZZ_CASES cases as the file's head says, one in
 * 16 a stranger with another key.
 */
START_TEST(netfuzz_live)
{
	struct nf_stage st;
	struct peer_key wrong;
	char wrong_path[128];
	unsigned cases = env_or("SLUICE_NETFUZZ_CASES", NF_CASES);
	unsigned seconds = env_or("SLUICE_NETFUZZ_SECONDS", NF_SECONDS);
	unsigned seed = env_or("SLUICE_NETFUZZ_SEED", (unsigned)time(NULL) ^ (unsigned)getpid());
	unsigned i, strangers = 0, lines0, lines;
	int64_t t0, end;

	printf("netfuzz_live: seed %u, up to %u cases in %u s (SLUICE_NETFUZZ_SEED, _CASES, "
	       "_SECONDS)\n", seed, cases, seconds);
	fflush(stdout);
	key_file(wrong_path, sizeof(wrong_path), "wrong", &wrong);
	stage_start(&st);
	st.z.verbose = env_or("SLUICE_NETFUZZ_VERBOSE", 0) != 0;
	st.z.incarnation = ((uint64_t)seed << 16) | 1;
	lines0 = tu_log_lines(&st.b, NULL);
	t0 = h_now_ms();
	end = t0 + (int64_t)seconds * 1000;
	for (i = 0; i < cases && h_now_ms() < end; i++) {
		st.z.rng = seed ^ ((uint64_t)i * 0xd1342543de82ef95ull);
		if (i % 16 == 15) {
			stranger_case(&st.z, &st.b, &wrong, i);
			strangers++;
		} else {
			nf_case(&st.z, &st.b, &st.key, i);
		}
		H_ASSERT(h_daemon_alive(&st.b), "case %u (seed %u): b died", i, seed);
	}
	lines = tu_log_lines(&st.b, NULL) - lines0;
	printf("netfuzz_live: %u cases in %lld ms (seed %u): %u frames, %u mutated, %u truncated, "
	       "b closed %u connections; %u strangers; the target got %llu completions; b logged "
	       "%u lines (%.3f per case)\n", i, (long long)(h_now_ms() - t0), seed, st.z.frames,
	       st.z.mutated, st.z.truncated, st.z.closed_by_b, strangers,
	       (unsigned long long)atomic_load(&st.tsh->completions), lines,
	       i ? (double)lines / i : 0.0);
	H_ASSERT(i >= 20, "only %u cases ran", i);
	H_ASSERT((double)lines < NF_LOG_LINES_PER_CASE * i,
		 "b logged %u lines in %u cases (bound %.2f per case)", lines, i,
		 NF_LOG_LINES_PER_CASE);
	/* Every stranger refused for its key, and nothing else failed a
	 * handshake. */
	H_EQ(h_daemon_stat(&st.b, "daemon.auth_failures_key"), strangers);
	H_EQ(h_daemon_stat(&st.b, "daemon.auth_failures"), strangers);
	stage_finish(&st);
	H_EQ(unlink(wrong_path), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Findings of the fuzzer, each alone                                   */
/* ------------------------------------------------------------------ */

/* Send @f (no payload); read b's frames until one of type @type comes
 * (1, into @f) or b closes the connection (0) or is quiet (-ETIMEDOUT). */
static int send_then_await(int fd, struct sl_wire_frame *f, uint8_t type)
{
	int rc;

	H_ASSERT(raw_send(fd, f, NULL), "b closed the connection before frame type %u", f->type);
	do
		rc = raw_recv(fd, f, 5000);
	while (rc == 1 && f->type != type);
	return rc;
}

/* f's RTS to the target, answered by b's RTR (the grant, into @f). */
static void rts_granted(struct nf_stage *st, int fd, uint64_t send_id, struct sl_wire_frame *f)
{
	int rc;

	*f = (struct sl_wire_frame){ .type = SL_WIRE_RTS, .seq = st->z.next_seq++ };
	f->u.rts.src_port = 5555;
	f->u.rts.dst_port = NF_PORT;
	f->u.rts.dst_node = st->b.node;
	f->u.rts.msg_len = 100000;
	f->u.rts.send_id = send_id;
	rc = send_then_await(fd, f, SL_WIRE_RTR);
	H_ASSERT(rc == 1 && f->u.rtr.status == 0 && f->u.rtr.send_id == send_id && f->u.rtr.len,
		 "b did not grant the RTS (%d, status %u)", rc, f->u.rtr.status);
}

/*
 * A NAK from the peer names the seq of a control frame of b's (the RTR
 * answering the peer's RTS) instead of a data frame: b took the RTR for
 * a send and completed it (seed 1 of netfuzz_live: b died, SIGSEGV in
 * the plain build at its case 84).  A NAK is for data frames only: the
 * connection is refused, b lives, and so do the others.
 */
START_TEST(nak_names_control_frame)
{
	struct nf_stage st;
	struct sl_wire_frame f;
	int fd, rc;

	stage_start(&st);
	fd = nf_connect(&st.z, &st.b, &st.key, 0);
	rts_granted(&st, fd, 77, &f);
	{
		struct sl_wire_frame nak = { .type = SL_WIRE_NAK, .seq = st.z.next_seq++ };

		nak.u.nak.nak_seq = f.seq;	/* the RTR's */
		nak.u.nak.status = SL_NAK_BUSY;
		rc = send_then_await(fd, &nak, SL_WIRE_TYPE_MAX + 1);
	}
	H_EQ(rc, 0);	/* refused: b closed the connection */
	H_EQ(close(fd), 0);
	stage_finish(&st);
	printf("nak_names_control_frame: the NAK of an RTR refused, b lives\n");
}
END_TEST

/*
 * A WRITE 8 KiB below the range b's RTR granted, with its key: b refuses
 * it and fails that rendezvous (the target's receive completes
 * SL_ERR_ACCESS), and the aborted rendezvous waits for the sender's FIN
 * with its receive gone.  The next EAGER to the same queue walked the
 * queue's claimed receives and read the gone one's (seed 1 of
 * netfuzz_live, with the NAK fixed: b died at case 84, SIGSEGV in
 * engine.c note_match, which is rndv.c hook_matched now).  Now the EAGER
 * is delivered, and the connection and b go on.
 */
START_TEST(eager_after_refused_write)
{
	struct nf_stage st;
	struct sl_wire_frame rtr, w = { .type = SL_WIRE_WRITE }, e = { .type = SL_WIRE_EAGER };
	static const char text[] = "after the refused write";
	uint8_t data[64];
	int64_t t0;
	int fd;

	stage_start(&st);
	fd = nf_connect(&st.z, &st.b, &st.key, 0);
	rts_granted(&st, fd, 78, &rtr);
	memset(data, 0xee, sizeof(data));
	w.payload_len = sizeof(data);
	w.u.write.raddr = rtr.u.rtr.raddr - 8192;
	w.u.write.rkey = rtr.u.rtr.rkey;
	H_ASSERT(raw_send(fd, &w, data), "b closed the connection at the WRITE");
	e.seq = st.z.next_seq++;
	e.ack = rtr.seq;
	e.payload_len = sizeof(text);
	e.u.eager.src_port = 5555;
	e.u.eager.dst_port = NF_PORT;
	e.u.eager.dst_node = st.b.node;
	H_ASSERT(raw_send(fd, &e, text), "b closed the connection at the EAGER");
	/* The receive of the refused rendezvous and the EAGER's complete. */
	for (t0 = h_now_ms(); atomic_load(&st.tsh->completions) < 2 && h_now_ms() - t0 < 10000;)
		h_sleep_ms(10);
	H_ASSERT(h_daemon_alive(&st.b), "b died");
	H_EQ(atomic_load(&st.tsh->completions), 2);
	H_EQ(close(fd), 0);
	stage_finish(&st);
	printf("eager_after_refused_write: the write refused, the EAGER after it delivered\n");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("netfuzz");

	/* The budget, plus the daemons' start and the bystanders' end. */
	tcase_add_test(h_tcase(s, "netfuzz_live", (int)env_or("SLUICE_NETFUZZ_SECONDS", NF_SECONDS) +
			       120), netfuzz_live);
	tcase_add_test(h_tcase(s, "nak_names_control_frame", 120), nak_names_control_frame);
	tcase_add_test(h_tcase(s, "eager_after_refused_write", 120), eager_after_refused_write);
	return h_run_suite(s);
}
