/*
 * test_probe.c - sl_probe(), its SL_PROBE_CLAIM and SL_PROBE_DISCARD, and
 * sl_recv_claimed(), with eager and rendezvous messages (above
 * the daemons' eager_max), from the receiver's node and from another
 * node over the link: what a probe finds (the first match in arrival
 * order, with source, tag, full length and sender uid), that it takes
 * nothing, that a claimed message is out of every receive's reach and
 * is had by its claim only, that a claimed message whose queue closes is
 * freed (the unexpected charge back to 0, its rendezvous senders told
 * SL_ERR_NO_ENDPOINT), and what a discard tells the sender.
 *
 * Real daemons A and B on TCP loopback (tests/harness.c); the test
 * process is every client.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "probe_kit.h"
#include "sluice.h"
#include "testutil.h"

#define R_PORT 5001u		/* the receiver, on A */
#define S_PORT 5002u		/* a sender on A */
#define T_PORT 5003u		/* a sender on B */
#define R2_PORT 5004u		/* a receiver on A that closes with claims */
#define EAGER_MAX 65536u	/* the daemons' default eager_max */
#define BIG 100000u		/* above EAGER_MAX: a rendezvous */

/* The charges of sluiced.conf(5): an eager message its length + 64, a
 * rendezvous one 96 (docs/completions.md). */
#define CHARGE_EAGER(len) ((len) + 64u)
#define CHARGE_RNDV 96u

/* R, S and T; each buffer room for two rendezvous messages and 8 KiB. */
static const struct world_ports ports = { R_PORT, S_PORT, T_PORT };
#define BUF_LEN (2 * BIG + 8192)

/* A probe that found message (@from, @tag, @len) sent by @uid. */
static void expect_found(const struct sl_cqe *cqe, sl_addr_t from, uint64_t tag, uint64_t len,
			 uint32_t uid)
{
	H_ASSERT(cqe->status == SL_OK, "probe: %s", sl_strerror(cqe->status));
	H_ASSERT(addr_eq(cqe->peer, from), "probe found %08x:%u, want %08x:%u", cqe->peer.node,
		 cqe->peer.port, from.node, from.port);
	H_EQ(cqe->tag, tag);
	H_EQ(cqe->len, len);
	H_EQ(cqe->sender_uid, uid);
}

static void expect_none(const struct sl_cqe *cqe)
{
	H_ASSERT(cqe->status == SL_ERR_NO_MESSAGE, "probe: %s (tag %llu len %llu)",
		 sl_strerror(cqe->status), (unsigned long long)cqe->tag,
		 (unsigned long long)cqe->len);
	H_EQ(cqe->len, 0);
	H_EQ(cqe->claim, 0);
	H_EQ(cqe->sender_uid, SL_UID_UNKNOWN);
}

/* Receive completion @cqe of message (@from, @tag, @len) into @buf of
 * @cap bytes: status, fields and every byte of it (msg_fill(@seq)). */
static void expect_recv(const struct sl_cqe *cqe, uint64_t ctx, sl_addr_t from, uint64_t tag,
			uint64_t len, size_t cap, const uint8_t *buf, uint32_t seq)
{
	H_EQ(cqe->opcode, SL_OP_RECV);
	H_EQ(cqe->user_ctx, ctx);
	H_ASSERT(cqe->status == (len <= cap ? SL_OK : SL_ERR_TRUNCATED), "receive %llu: %s",
		 (unsigned long long)ctx, sl_strerror(cqe->status));
	H_ASSERT(addr_eq(cqe->peer, from), "receive from %08x:%u", cqe->peer.node,
		 cqe->peer.port);
	H_EQ(cqe->tag, tag);
	H_EQ(cqe->len, len);
	H_EQ(cqe->claim, 0);
	H_ASSERT(msg_check_prefix(buf, len < cap ? len : cap, len, from.port, seq, tag),
		 "receive %llu: payload", (unsigned long long)ctx);
}

static void send_ok(struct sl_queue *q, uint64_t ctx, uint64_t len)
{
	struct sl_cqe cqe = next_cqe(q);

	H_EQ(cqe.opcode, SL_OP_SEND);
	H_EQ(cqe.user_ctx, ctx);
	H_ASSERT(cqe.status == SL_OK, "send %llu: %s", (unsigned long long)ctx,
		 sl_strerror(cqe.status));
	H_EQ(cqe.len, len);
}

/* ------------------------------------------------------------------ */

/*
 * Nothing there: SL_ERR_NO_MESSAGE.  Then four messages, eager and
 * rendezvous, local and from B: a wildcard probe finds the first in
 * arrival order, a filtered one the first it accepts, each with source,
 * tag, full length and sender uid (the local user's for a local sender;
 * SL_UID_UNKNOWN from B, whose link has no key), again and again (a
 * probe takes nothing), and receives get them all afterwards.
 */
START_TEST(probe_finds_in_arrival_order)
{
	struct world w;
	struct sl_cqe cqe;
	uint8_t *sb2, *tb2;
	unsigned i;

	world_start(&w, ports, BUF_LEN, true);
	sb2 = w.sbuf + BIG + 4096;
	tb2 = w.tbuf + BIG + 4096;

	cqe = probe(w.r, SL_ANY_SOURCE, 0, 0, 0, 1);
	expect_none(&cqe);
	H_ASSERT(addr_eq(cqe.peer, ((sl_addr_t){ SL_NODE_ANY, SL_PORT_ANY })),
		 "a probe that found nothing names its filter");

	/* Arrival order: S eager 10, T eager 11, S rendezvous 12, T
	 * rendezvous 13, each seen before the next is sent. */
	msg_fill(w.sbuf, 100, S_PORT, 0, 10);
	H_EQ(sl_send(w.s, w.r_addr, 10, w.sbuf, 100, 100), 0);
	send_ok(w.s, 100, 100);
	msg_fill(w.tbuf, 200, T_PORT, 0, 11);
	H_EQ(sl_send(w.t, w.r_addr, 11, w.tbuf, 200, 200), 0);
	send_ok(w.t, 200, 200);
	wait_arrival(w.r, 11);
	msg_fill(sb2, BIG, S_PORT, 1, 12);
	H_EQ(sl_send(w.s, w.r_addr, 12, sb2, BIG, 101), 0);
	wait_arrival(w.r, 12);
	msg_fill(tb2, BIG, T_PORT, 1, 13);
	H_EQ(sl_send(w.t, w.r_addr, 13, tb2, BIG, 201), 0);
	wait_arrival(w.r, 13);

	for (i = 0; i < 2; i++) {
		cqe = probe(w.r, SL_ANY_SOURCE, 0, 0, 0, 2);
		expect_found(&cqe, w.s_addr, 10, 100, (uint32_t)getuid());
		H_EQ(cqe.claim, 0);
		cqe = probe(w.r, (sl_addr_t){ w.nodes[1].node, SL_PORT_ANY }, 0, 0, 0, 3);
		expect_found(&cqe, w.t_addr, 11, 200, SL_UID_UNKNOWN);
		cqe = probe(w.r, SL_ANY_SOURCE, 12, ~0ull, 0, 4);
		expect_found(&cqe, w.s_addr, 12, BIG, (uint32_t)getuid());
		cqe = probe(w.r, (sl_addr_t){ SL_NODE_ANY, T_PORT }, 0, 0x10, 0, 5);
		expect_found(&cqe, w.t_addr, 11, 200, SL_UID_UNKNOWN);
		/* Tag 13 under mask 0xf: the first with low bits 0xd. */
		cqe = probe(w.r, SL_ANY_SOURCE, 0xfd, 0xf, 0, 6);
		expect_found(&cqe, w.t_addr, 13, BIG, SL_UID_UNKNOWN);
		cqe = probe(w.r, w.t_addr, 10, ~0ull, 0, 7);
		expect_none(&cqe);
		cqe = probe(w.r, (sl_addr_t){ SL_NODE_LOCAL, S_PORT }, 11, ~0ull, 0, 8);
		expect_none(&cqe);
	}

	/* Nothing taken: the receives get all four, in order. */
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 0, 0, w.rbuf, BIG, 300), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 300, w.s_addr, 10, 100, BIG, w.rbuf, 0);
	cqe = probe(w.r, SL_ANY_SOURCE, 0, 0, 0, 9);
	expect_found(&cqe, w.t_addr, 11, 200, SL_UID_UNKNOWN);
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 0, 0, w.rbuf, BIG, 301), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 301, w.t_addr, 11, 200, BIG, w.rbuf, 0);
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 0, 0, w.rbuf, BIG, 302), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 302, w.s_addr, 12, BIG, BIG, w.rbuf, 1);
	send_ok(w.s, 101, BIG);
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 0, 0, w.rbuf, BIG, 303), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 303, w.t_addr, 13, BIG, BIG, w.rbuf, 1);
	send_ok(w.t, 201, BIG);
	cqe = probe(w.r, SL_ANY_SOURCE, 0, 0, 0, 10);
	expect_none(&cqe);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"), 0);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected"), 0);
	printf("probe: nothing, then S eager, B eager, S rendezvous, B rendezvous found in "
	       "arrival order by 6 filters twice over, then received in order\n");
	world_stop(&w);
}
END_TEST

/*
 * A claimed message is out of every receive's and probe's reach and is
 * had by its claim only, exactly: eager and rendezvous, local and from
 * B; a claim is received once; a wrong claim is SL_ERR_NOT_FOUND; a
 * claimed rendezvous into a smaller buffer truncates; a claim received
 * with capacity 0 is discarded (SL_ERR_TRUNCATED with the full length, SL_OK
 * for an empty message).  While claimed a message stays charged.
 */
START_TEST(claim_then_recv_claimed)
{
	struct world w;
	struct sl_cqe cqe;
	uint64_t c_eager, c_tbig, c_sbig, c_disc, c_empty;
	uint8_t *sb2, *tb2;

	world_start(&w, ports, BUF_LEN, true);
	sb2 = w.sbuf + BIG + 4096;
	tb2 = w.tbuf + BIG + 4096;

	/* Two eager messages of tag 20 from S: claim the first; a receive
	 * that would have matched it gets the second. */
	msg_fill(w.sbuf, 300, S_PORT, 0, 20);
	H_EQ(sl_send(w.s, w.r_addr, 20, w.sbuf, 300, 1), 0);
	send_ok(w.s, 1, 300);
	msg_fill(w.sbuf, 301, S_PORT, 1, 20);
	H_EQ(sl_send(w.s, w.r_addr, 20, w.sbuf, 301, 2), 0);
	send_ok(w.s, 2, 301);
	cqe = probe(w.r, SL_ANY_SOURCE, 20, ~0ull, SL_PROBE_CLAIM, 10);
	expect_found(&cqe, w.s_addr, 20, 300, (uint32_t)getuid());
	H_ASSERT(cqe.claim != 0, "a claim is nonzero");
	c_eager = cqe.claim;
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"),
	     CHARGE_EAGER(300) + CHARGE_EAGER(301));
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected"), 1);
	cqe = probe(w.r, SL_ANY_SOURCE, 20, ~0ull, 0, 11);
	expect_found(&cqe, w.s_addr, 20, 301, (uint32_t)getuid());
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 20, ~0ull, w.rbuf, 4096, 12), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 12, w.s_addr, 20, 301, 4096, w.rbuf, 1);
	/* Nothing else: the claimed one is out of reach. */
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 20, ~0ull, w.rbuf, 4096, 13), 0);
	expect_no_cqe(w.r, 100);
	cqe = probe(w.r, SL_ANY_SOURCE, 0, 0, 0, 14);
	expect_none(&cqe);
	/* The claim gets exactly its bytes; then it is spent. */
	memset(w.rbuf + 4096, 0xee, 4096);
	H_EQ(sl_recv_claimed(w.r, c_eager, w.rbuf + 4096, 4096, 15), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 15, w.s_addr, 20, 300, 4096, w.rbuf + 4096, 0);
	H_EQ(cqe.sender_uid, (uint32_t)getuid());
	H_ASSERT(all_bytes(w.rbuf + 4096 + 300, 4096 - 300, 0xee), "bytes past the message");
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"), 0);
	H_EQ(sl_recv_claimed(w.r, c_eager, w.rbuf + 4096, 4096, 16), 0);
	expect_cqe(w.r, SL_OP_RECV, 16, SL_ERR_NOT_FOUND, 4096, 0, ((sl_addr_t){ w.nodes[0].node, 0 }));
	H_EQ(sl_recv_claimed(w.r, c_eager + 1000, NULL, 0, 17), 0);
	expect_cqe(w.r, SL_OP_RECV, 17, SL_ERR_NOT_FOUND, 0, 0, ((sl_addr_t){ w.nodes[0].node, 0 }));
	/* The receive 13 still waits: the next tag-20 message is its. */
	msg_fill(w.sbuf, 50, S_PORT, 2, 20);
	H_EQ(sl_send(w.s, w.r_addr, 20, w.sbuf, 50, 3), 0);
	send_ok(w.s, 3, 50);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 13, w.s_addr, 20, 50, 4096, w.rbuf, 2);

	/* A rendezvous from B, claimed by its header: a receive posted
	 * after the claim stays posted; the claim moves the data. */
	msg_fill(tb2, BIG, T_PORT, 3, 21);
	H_EQ(sl_send(w.t, w.r_addr, 21, tb2, BIG, 4), 0);
	wait_arrival(w.r, 21);
	cqe = probe(w.r, w.t_addr, 21, ~0ull, SL_PROBE_CLAIM, 20);
	expect_found(&cqe, w.t_addr, 21, BIG, SL_UID_UNKNOWN);
	c_tbig = cqe.claim;
	H_ASSERT(c_tbig != 0 && c_tbig != c_eager, "claims %llu, %llu",
		 (unsigned long long)c_eager, (unsigned long long)c_tbig);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"), CHARGE_RNDV);
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 21, ~0ull, w.rbuf, BIG, 21), 0);
	cqe = probe(w.r, SL_ANY_SOURCE, 21, ~0ull, 0, 22);
	expect_none(&cqe);
	expect_no_cqe(w.t, 100);	/* nothing moved yet */
	H_EQ(sl_recv_claimed(w.r, c_tbig, w.rbuf + BIG + 4096, BIG, 23), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 23, w.t_addr, 21, BIG, BIG, w.rbuf + BIG + 4096, 3);
	send_ok(w.t, 4, BIG);
	/* Receive 21 is still posted: a cancel finds it. */
	H_EQ(sl_cancel(w.r, 21), 0);
	expect_cqe(w.r, SL_OP_RECV, 21, SL_ERR_CANCELED, BIG, 21, ((sl_addr_t){ SL_NODE_ANY, SL_PORT_ANY }));
	expect_cqe(w.r, SL_OP_CANCEL, 21, SL_OK, 0, 0, ((sl_addr_t){ w.nodes[0].node, 0 }));

	/* A local rendezvous, claimed, received into half its length. */
	msg_fill(sb2, BIG, S_PORT, 4, 22);
	H_EQ(sl_send(w.s, w.r_addr, 22, sb2, BIG, 5), 0);
	wait_arrival(w.r, 22);
	cqe = probe(w.r, w.s_addr, 22, ~0ull, SL_PROBE_CLAIM, 30);
	expect_found(&cqe, w.s_addr, 22, BIG, (uint32_t)getuid());
	c_sbig = cqe.claim;
	memset(w.rbuf, 0xee, BIG);
	H_EQ(sl_recv_claimed(w.r, c_sbig, w.rbuf, BIG / 2, 31), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 31, w.s_addr, 22, BIG, BIG / 2, w.rbuf, 4);
	H_ASSERT(all_bytes(w.rbuf + BIG / 2, BIG / 2, 0xee), "past the capacity");
	send_ok(w.s, 5, BIG);

	/* Claims received with capacity 0: discarded. */
	msg_fill(w.sbuf, 400, S_PORT, 5, 23);
	H_EQ(sl_send(w.s, w.r_addr, 23, w.sbuf, 400, 6), 0);
	send_ok(w.s, 6, 400);
	H_EQ(sl_send(w.s, w.r_addr, 24, NULL, 0, 7), 0);
	send_ok(w.s, 7, 0);
	cqe = probe(w.r, SL_ANY_SOURCE, 23, ~0ull, SL_PROBE_CLAIM, 40);
	expect_found(&cqe, w.s_addr, 23, 400, (uint32_t)getuid());
	c_disc = cqe.claim;
	cqe = probe(w.r, SL_ANY_SOURCE, 24, ~0ull, SL_PROBE_CLAIM, 41);
	expect_found(&cqe, w.s_addr, 24, 0, (uint32_t)getuid());
	c_empty = cqe.claim;
	H_EQ(sl_recv_claimed(w.r, c_disc, NULL, 0, 42), 0);
	expect_cqe(w.r, SL_OP_RECV, 42, SL_ERR_TRUNCATED, 400, 23, w.s_addr);
	H_EQ(sl_recv_claimed(w.r, c_empty, NULL, 0, 43), 0);
	expect_cqe(w.r, SL_OP_RECV, 43, SL_OK, 0, 24, w.s_addr);

	/* Arguments the library refuses. */
	H_EQ(sl_recv_claimed(w.r, 0, w.rbuf, 16, 50), -EINVAL);
	H_EQ(sl_recv_claimed(w.r, c_disc, &cqe, sizeof(cqe), 51), -EINVAL);	/* not in the arena */
	H_EQ(sl_probe(w.r, SL_ANY_SOURCE, 0, 0, SL_PROBE_CLAIM | SL_PROBE_DISCARD, 52), -EINVAL);
	H_EQ(sl_probe(w.r, SL_ANY_SOURCE, 0, 0, 4, 53), -EINVAL);
	H_EQ(sl_probe(NULL, SL_ANY_SOURCE, 0, 0, 0, 54), -EINVAL);
	expect_no_cqe(w.r, 50);

	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"), 0);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.posted_recvs"), 0);
	printf("claim: eager, B rendezvous, local rendezvous (truncated) each had by its claim "
	       "only; spent and wrong claims SL_ERR_NOT_FOUND; capacity 0 discards\n");
	world_stop(&w);
}
END_TEST

/*
 * Claimed messages whose queue closes are freed: the endpoint's charge
 * goes back to 0, the rendezvous senders (local and on B) complete
 * SL_ERR_NO_ENDPOINT, and the port then takes a new queue with nothing
 * left over.  (Under ASan the daemons' exit checks for leaks too.)
 */
START_TEST(claimed_freed_at_close)
{
	struct world w;
	struct sl_ctx *c2;
	struct sl_queue *r2;
	struct sl_cqe cqe;
	sl_addr_t r2_addr;
	uint8_t *sb2, *tb2;
	unsigned i;

	world_start(&w, ports, BUF_LEN, true);
	sb2 = w.sbuf + BIG + 4096;
	tb2 = w.tbuf + BIG + 4096;
	r2_addr = (sl_addr_t){ w.nodes[0].node, R2_PORT };
	H_EQ(sl_open(w.nodes[0].sock, &c2), 0);
	H_EQ(sl_queue_open(c2, R2_PORT, 16, &r2), 0);

	msg_fill(w.sbuf, 100, S_PORT, 0, 30);
	H_EQ(sl_send(w.s, r2_addr, 30, w.sbuf, 100, 1), 0);
	send_ok(w.s, 1, 100);
	msg_fill(sb2, BIG, S_PORT, 1, 31);
	H_EQ(sl_send(w.s, r2_addr, 31, sb2, BIG, 2), 0);
	msg_fill(tb2, BIG, T_PORT, 2, 32);
	H_EQ(sl_send(w.t, r2_addr, 32, tb2, BIG, 3), 0);
	msg_fill(w.tbuf, 200, T_PORT, 3, 33);
	H_EQ(sl_send(w.t, r2_addr, 33, w.tbuf, 200, 4), 0);
	send_ok(w.t, 4, 200);
	for (i = 30; i <= 33; i++)
		wait_arrival(r2, i);
	for (i = 30; i <= 32; i++) {
		cqe = probe(r2, SL_ANY_SOURCE, i, ~0ull, SL_PROBE_CLAIM, i);
		H_ASSERT(cqe.status == SL_OK && cqe.claim != 0, "claim %u: %s", i,
			 sl_strerror(cqe.status));
	}
	/* Three claimed, one (33) unexpected: all charged. */
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"),
	     CHARGE_EAGER(100) + 2 * CHARGE_RNDV + CHARGE_EAGER(200));
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected"), 1);
	expect_no_cqe(w.s, 100);
	expect_no_cqe(w.t, 100);

	H_EQ(sl_queue_close(r2), 0);
	expect_cqe(w.s, SL_OP_SEND, 2, SL_ERR_NO_ENDPOINT, BIG, 31, r2_addr);
	expect_cqe(w.t, SL_OP_SEND, 3, SL_ERR_NO_ENDPOINT, BIG, 32, r2_addr);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"), 0);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected"), 0);

	/* The port again: nothing of the old queue's is there. */
	H_EQ(sl_queue_open(c2, R2_PORT, 16, &r2), 0);
	cqe = probe(r2, SL_ANY_SOURCE, 0, 0, 0, 40);
	expect_none(&cqe);
	H_EQ(sl_recv_claimed(r2, 1, NULL, 0, 41), 0);
	cqe = next_cqe(r2);
	H_EQ(cqe.status, SL_ERR_NOT_FOUND);
	H_EQ(sl_queue_close(r2), 0);
	sl_close(c2);
	printf("claimed at close: 3 claims and 1 unexpected freed, charge %u -> 0, both "
	       "rendezvous senders SL_ERR_NO_ENDPOINT\n",
	       CHARGE_EAGER(100) + 2 * CHARGE_RNDV + CHARGE_EAGER(200));
	world_stop(&w);
}
END_TEST

/*
 * SL_PROBE_DISCARD: the first match goes and is reported; an eager one at
 * once, a rendezvous one (local and from B) with its sender completing
 * SL_OK as for a receive that took it; a later probe or receive finds
 * the next message, not the discarded one.
 */
START_TEST(probe_discard)
{
	struct world w;
	struct sl_cqe cqe;
	uint8_t *sb2, *tb2;

	world_start(&w, ports, BUF_LEN, true);
	sb2 = w.sbuf + BIG + 4096;
	tb2 = w.tbuf + BIG + 4096;

	cqe = probe(w.r, SL_ANY_SOURCE, 0, 0, SL_PROBE_DISCARD, 1);
	expect_none(&cqe);

	msg_fill(w.sbuf, 100, S_PORT, 0, 40);
	H_EQ(sl_send(w.s, w.r_addr, 40, w.sbuf, 100, 1), 0);
	send_ok(w.s, 1, 100);
	msg_fill(w.sbuf + 4096, 101, S_PORT, 1, 40);
	H_EQ(sl_send(w.s, w.r_addr, 40, w.sbuf + 4096, 101, 2), 0);
	send_ok(w.s, 2, 101);
	cqe = probe(w.r, SL_ANY_SOURCE, 40, ~0ull, SL_PROBE_DISCARD, 2);
	expect_found(&cqe, w.s_addr, 40, 100, (uint32_t)getuid());
	H_EQ(cqe.claim, 0);
	cqe = probe(w.r, SL_ANY_SOURCE, 40, ~0ull, 0, 3);
	expect_found(&cqe, w.s_addr, 40, 101, (uint32_t)getuid());
	H_EQ(sl_recv(w.r, SL_ANY_SOURCE, 40, ~0ull, w.rbuf, 4096, 4), 0);
	cqe = next_cqe(w.r);
	expect_recv(&cqe, 4, w.s_addr, 40, 101, 4096, w.rbuf, 1);

	msg_fill(sb2, BIG, S_PORT, 2, 41);
	H_EQ(sl_send(w.s, w.r_addr, 41, sb2, BIG, 3), 0);
	wait_arrival(w.r, 41);
	cqe = probe(w.r, SL_ANY_SOURCE, 41, ~0ull, SL_PROBE_DISCARD, 5);
	expect_found(&cqe, w.s_addr, 41, BIG, (uint32_t)getuid());
	send_ok(w.s, 3, BIG);

	msg_fill(tb2, BIG, T_PORT, 3, 42);
	H_EQ(sl_send(w.t, w.r_addr, 42, tb2, BIG, 4), 0);
	wait_arrival(w.r, 42);
	cqe = probe(w.r, w.t_addr, 0, 0, SL_PROBE_DISCARD, 6);
	expect_found(&cqe, w.t_addr, 42, BIG, SL_UID_UNKNOWN);
	send_ok(w.t, 4, BIG);

	cqe = probe(w.r, SL_ANY_SOURCE, 0, 0, 0, 7);
	expect_none(&cqe);
	expect_no_cqe(w.r, 50);
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"), 0);
	printf("discard: eager at once; local and B rendezvous senders SL_OK; nothing left\n");
	world_stop(&w);
}
END_TEST

/*
 * A claimed rendezvous message whose local sender's queue closes before
 * the claim is received: the claim stays as the record of why, and
 * sl_recv_claimed() completes SL_ERR_NO_ENDPOINT naming the message, its
 * buffer untouched; the charge goes with it.
 */
START_TEST(claimed_sender_gone)
{
	struct world w;
	struct sl_ctx *c2;
	struct sl_queue *s2;
	struct sl_cqe cqe;
	uint8_t *b2;
	uint64_t claim;
	sl_addr_t s2_addr;

	world_start(&w, ports, BUF_LEN, true);
	H_EQ(sl_open(w.nodes[0].sock, &c2), 0);
	H_EQ(sl_queue_open(c2, R2_PORT, 16, &s2), 0);
	s2_addr = (sl_addr_t){ w.nodes[0].node, R2_PORT };
	b2 = sl_alloc(s2, BIG);
	H_ASSERT(b2, "sl_alloc");
	msg_fill(b2, BIG, R2_PORT, 0, 50);
	H_EQ(sl_send(s2, w.r_addr, 50, b2, BIG, 1), 0);
	wait_arrival(w.r, 50);
	cqe = probe(w.r, SL_ANY_SOURCE, 50, ~0ull, SL_PROBE_CLAIM, 1);
	expect_found(&cqe, s2_addr, 50, BIG, (uint32_t)getuid());
	claim = cqe.claim;
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"), CHARGE_RNDV);
	H_EQ(sl_queue_close(s2), 0);
	sl_close(c2);
	memset(w.rbuf, 0xee, BIG);
	H_EQ(sl_recv_claimed(w.r, claim, w.rbuf, BIG, 2), 0);
	expect_cqe(w.r, SL_OP_RECV, 2, SL_ERR_NO_ENDPOINT, BIG, 50, s2_addr);
	H_ASSERT(all_bytes(w.rbuf, BIG, 0xee), "buffer written");
	H_EQ(h_daemon_stat(&w.nodes[0], "daemon.unexpected_bytes"), 0);
	H_EQ(sl_recv_claimed(w.r, claim, w.rbuf, BIG, 3), 0);
	expect_cqe(w.r, SL_OP_RECV, 3, SL_ERR_NOT_FOUND, BIG, 0, ((sl_addr_t){ w.nodes[0].node, 0 }));
	printf("claimed, then its sender's queue closed: SL_ERR_NO_ENDPOINT, then not found\n");
	world_stop(&w);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *probe_suite(void)
{
	Suite *s = suite_create("probe");
	TCase *tc;

	tc = h_tcase(s, "daemons", 120);
	tcase_add_test(tc, probe_finds_in_arrival_order);
	tcase_add_test(tc, claim_then_recv_claimed);
	tcase_add_test(tc, claimed_freed_at_close);
	tcase_add_test(tc, probe_discard);
	tcase_add_test(tc, claimed_sender_gone);
	return s;
}

int main(void)
{
	return h_run_suite(probe_suite());
}
