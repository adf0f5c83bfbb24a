/*
 * fuzz_sqe.c - what a client writes into its shared segment: descriptors
 * (engine_validate, then the engine: matching, local delivery, local
 * rendezvous, sends toward a peer whose link is down), ring indices
 * (queue_drain's reading of the SQ tail and CQ head) and the segment's
 * header, all rewritten at will as a hostile client may.
 *
 * Input: a program of operations, each an opcode byte and its operands
 * (little-endian), on two queues of one client, ports FUZZ_PORT_A and
 * FUZZ_PORT_B:
 *   0 q raw[64]            post 64 raw bytes as an SQE
 *   1 q op node port tag mask addr[4] len[4]
 *                          post a well-formed-looking SQE (node, port and
 *                          mask picked from a few meaningful values or
 *                          taken raw) of the kind (op >> 1) & 7 says
 *                          (post_shaped): a send or a receive, a probe
 *                          with no flag, SL_PROBE_CLAIM or
 *                          SL_PROBE_DISCARD, a RECV_CLAIMED of a claim
 *                          held on this queue or the other (real) or of
 *                          one never made or 0 (bogus), a CANCEL of a
 *                          posted receive's or a shaped descriptor's
 *                          user_ctx (real) or of one no descriptor has
 *   2 q v[4]               set the SQ tail to v
 *   3 q v[4]               set the CQ head to v
 *   4                      one progress pass
 *   5 q                    read every completion
 *   6 q off[2] v[4]        write v at byte off of the segment's control
 *                          part (header, ring controls, rings)
 *   7 q                    close the queue (its client goes on)
 * Missing operand bytes read as 0.  Then a few passes, the client closes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_daemon.h"
#include "engine.h"
#include "match.h"
#include "queue.h"
#include "session.h"
#include "sluice.h"

#define FUZZ_PORT_A 100u
#define FUZZ_PORT_B 101u
#define FUZZ_OPS_MAX 256

struct cursor {
	const uint8_t *p;
	size_t left;
};

static uint8_t u8(struct cursor *c)
{
	if (!c->left)
		return 0;
	c->left--;
	return *c->p++;
}

static uint32_t u32(struct cursor *c)
{
	uint32_t v = 0;
	unsigned i;

	for (i = 0; i < 4; i++)
		v |= (uint32_t)u8(c) << (8 * i);
	return v;
}

static uint32_t pick_node(const struct daemon *d, uint8_t b, struct cursor *c)
{
	switch (b % 6) {
	case 0:
		return SL_NODE_LOCAL;
	case 1:
		return d->cfg.node_id;
	case 2:
		return fuzz_peer_we_dial(d);
	case 3:
		return fuzz_peer_dialing_us(d);
	case 4:
		return SL_NODE_ANY;
	default:
		return u32(c);
	}
}

static uint32_t pick_port(uint8_t b, struct cursor *c)
{
	switch (b % 5) {
	case 0:
		return FUZZ_PORT_A;
	case 1:
		return FUZZ_PORT_B;
	case 2:
		return SL_PORT_ANY;
	case 3:
		return 0;
	default:
		return u32(c);
	}
}

/* A claim id of @q for a RECV_CLAIMED: its (@pick mod n)-th claim held
 * now, else the last one it gave (spent, or 0 when it gave none). */
static uint64_t real_claim(const struct queue *q, uint8_t pick)
{
	const struct match_claim *cl;
	unsigned i = 0, n = q->mq.n_claimed;

	if (!n)
		return q->mq.last_claim_id;
	TAILQ_FOREACH(cl, &q->mq.claimed, link)
		if (i++ == pick % n)
			return cl->id;
	return q->mq.last_claim_id;	/* n_claimed and the list disagree: not reached */
}

/* The user_ctx of @q's (@pick mod n)-th posted receive, or @pick. */
static uint64_t posted_ctx(const struct queue *q, uint8_t pick)
{
	const struct match_recv *r;
	unsigned i = 0, n = q->mq.n_posted;

	if (n)
		TAILQ_FOREACH(r, &q->mq.posted, link)
			if (i++ == pick % n)
				return r->desc.user_ctx;
	return pick;
}

/*
 * A well-formed-looking SQE on @q (@other: the client's other queue, or
 * NULL), its kind from bits 1-3 of the op byte, bit 0 a variant:
 *   0, 1  a send (op even) or a receive (odd), user_ctx op
 *   2     a probe: no flag (even), SL_PROBE_CLAIM (odd)
 *   3     a probe: SL_PROBE_CLAIM (even), SL_PROBE_DISCARD (odd)
 *   4     a RECV_CLAIMED of a claim of @q (even) or of @other (odd)
 *   5     a RECV_CLAIMED of a claim never given (even) or of 0 (odd)
 *   6     a CANCEL of a posted receive's user_ctx (even) or of the tag
 *         byte, which names the shaped sends and receives of that op
 *   7     a CANCEL of a user_ctx no descriptor here has (2^32 + addr)
 * Each reads the same operands; a kind leaves the fields it does not use
 * 0, as sl_shm.h asks.  (The raw op 0 covers everything else.)
 */
static void post_shaped(struct daemon *d, struct queue *q, const struct queue *other,
			struct cursor *c)
{
	uint8_t op = u8(c), node = u8(c), port = u8(c), tag = u8(c), mask = u8(c);
	bool odd = op & 1;
	struct sl_sqe sqe = { .tag = tag, .user_ctx = op };
	uint64_t ctx;

	sqe.peer.node = pick_node(d, node, c);
	sqe.peer.port = pick_port(port, c);
	sqe.tag_mask = mask & 1 ? ~0ull : mask;
	sqe.addr = u32(c);
	sqe.len = u32(c);
	if (!q)
		return;
	switch ((op >> 1) & 7) {
	case 0:
	case 1:
		sqe.opcode = odd ? SL_SQE_OP_RECV : SL_SQE_OP_SEND;
		break;
	case 2:
	case 3:
		sqe.opcode = SL_SQE_OP_PROBE;
		if ((op >> 1) & 1)
			sqe.flags = odd ? SL_PROBE_DISCARD : SL_PROBE_CLAIM;
		else
			sqe.flags = odd ? SL_PROBE_CLAIM : 0;
		sqe.addr = 0;
		sqe.len = 0;
		break;
	case 4:
	case 5:
		sqe.opcode = SL_SQE_OP_RECV_CLAIMED;
		if ((op >> 1) & 1)
			sqe.rsvd2 = odd ? 0 : q->mq.last_claim_id + 1 + tag;
		else if (odd)
			sqe.rsvd2 = other ? real_claim(other, tag) : 1;
		else
			sqe.rsvd2 = real_claim(q, tag);
		sqe.peer = (sl_addr_t){ 0, 0 };
		sqe.tag = 0;
		sqe.tag_mask = 0;
		break;
	default:
		if ((op >> 1) & 1)	/* above 2^32: no shaped descriptor's */
			ctx = (1ull << 32) | sqe.addr;
		else
			ctx = odd ? tag : posted_ctx(q, tag);
		sqe = (struct sl_sqe){ .opcode = SL_SQE_OP_CANCEL, .user_ctx = ctx };
		break;
	}
	fuzz_sqe_post(q, &sqe);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct daemon *d = fuzz_daemon(false);
	struct cursor c = { data, size };
	struct queue *qs[2];
	struct session *s;
	unsigned ops = 0;

	fuzz_links_setup(d);
	s = fuzz_session_new(d);
	qs[0] = fuzz_queue_open(s, FUZZ_PORT_A, 8);
	qs[1] = fuzz_queue_open(s, FUZZ_PORT_B, 8);
	while (c.left && ops++ < FUZZ_OPS_MAX) {
		uint8_t op = u8(&c), qi = u8(&c) & 1;
		struct queue *q = qs[qi];
		struct sl_sqe sqe;
		uint32_t off, v;
		unsigned i;

		switch (op % 8) {
		case 0:
			for (i = 0; i < sizeof(sqe); i++)
				((uint8_t *)&sqe)[i] = u8(&c);
			if (q)
				fuzz_sqe_post(q, &sqe);
			break;
		case 1:
			post_shaped(d, q, qs[qi ^ 1], &c);
			break;
		case 2:
			v = u32(&c);
			if (q)
				*q->sq.shm_tail = v;
			break;
		case 3:
			v = u32(&c);
			if (q)
				*q->cq.shm_head = v;
			break;
		case 4:
			fuzz_progress(d, 1);
			break;
		case 5:
			if (q)
				fuzz_cq_consume(q);
			break;
		case 6:
			off = u8(&c) | (uint32_t)u8(&c) << 8;
			v = u32(&c);
			/* The control part, below the arena: what a client may
			 * scribble on besides its data. */
			if (q && (uint64_t)off + 4 <= (uint64_t)(q->arena - q->base))
				memcpy(q->base + (off & ~3u), &v, 4);
			break;
		case 7:
			if (q) {
				TAILQ_REMOVE(&s->queues, q, by_session);
				s->n_queues--;
				engine_close_queue(q);
				qs[qi] = NULL;
			}
			break;
		}
		/* A corrupt ring drops the client (progress.c): stop there. */
		if (TAILQ_EMPTY(&d->sessions))
			break;
	}
	fuzz_progress(d, 4);
	fuzz_session_free(s);
	fuzz_links_teardown(d);
	fuzz_progress(d, 1);
	return 0;
}
