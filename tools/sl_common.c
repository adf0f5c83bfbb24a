/*
 * sl_common.c - libsluice helpers shared by sluice-perf and sluice-copy;
 * see sl_common.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "sl_common.h"

#define ARENA_ALIGN 64u	/* libsluice's alignment and block header */

uint64_t arena_cost(uint64_t len)
{
	return ARENA_ALIGN + ((len + ARENA_ALIGN - 1) & ~(uint64_t)(ARENA_ALIGN - 1));
}

uint64_t arena_fits(uint64_t arena, uint64_t len)
{
	return arena > ARENA_RESERVE ? (arena - ARENA_RESERVE) / arena_cost(len) : 0;
}

uint64_t arena_needed(uint64_t n, uint64_t len)
{
	uint64_t mib = 1u << 20;

	return (n * arena_cost(len) + ARENA_RESERVE + mib - 1) / mib * mib;
}

void fmt_conf_bytes(char *b, size_t n, uint64_t v)
{
	if (v % (1u << 30) == 0 && v)
		snprintf(b, n, "%" PRIu64 "G", v >> 30);
	else if (v % (1u << 20) == 0 && v)
		snprintf(b, n, "%" PRIu64 "M", v >> 20);
	else
		snprintf(b, n, "%" PRIu64 "K", (v + 1023) >> 10);
}

void ep_open(struct ep *e, const char *sock, uint32_t port, unsigned window,
	     bool busy, const struct ep_conf *conf)
{
	uint32_t depth = 16;
	int rc;

	/* Room for the window plus the few control descriptors around it. */
	while (depth < window + 16)
		depth <<= 1;
	memset(e, 0, sizeof(*e));
	e->busy = busy;
	e->conf = conf;
	rc = sl_open(sock, &e->ctx);
	if (rc < 0)
		die("cannot connect to sluiced (%s): %s",
		    sock ? sock : "default socket", strerror(-rc));
	rc = sl_queue_open(e->ctx, port, depth, &e->q);
	if (rc < 0)
		die("cannot open a queue on port %" PRIu32 ": %s", port,
		    strerror(-rc));
	/* The CQ holds 2 x depth: a backlog that size always has room. */
	e->bl_cap = 2 * depth;
	e->bl = calloc(e->bl_cap, sizeof(*e->bl));
	if (!e->bl)
		die("out of memory");
}

void ep_close(struct ep *e)
{
	sl_queue_close(e->q);
	sl_close(e->ctx);
	free(e->bl);
}

void *ep_alloc(struct ep *e, size_t len)
{
	void *p = sl_alloc(e->q, len);

	if (!p)
		die("arena full: cannot allocate %zu bytes (arena is %zu bytes%s)",
		    len, sl_arena_size(e->q), e->conf->arena_hint);
	return p;
}

/* Move what the CQ holds into the backlog; returns how many. */
static unsigned ep_absorb(struct ep *e)
{
	int n;

	if (e->bl_head == e->bl_tail) {
		e->bl_head = e->bl_tail = 0;
	} else if (e->bl_tail == e->bl_cap && e->bl_head > 0) {
		memmove(e->bl, e->bl + e->bl_head,
			(e->bl_tail - e->bl_head) * sizeof(*e->bl));
		e->bl_tail -= e->bl_head;
		e->bl_head = 0;
	}
	if (e->bl_tail == e->bl_cap)
		return 0;
	n = sl_poll(e->q, e->bl + e->bl_tail, e->bl_cap - e->bl_tail);
	if (n < 0)
		die("sl_poll: %s", strerror(-n));
	e->bl_tail += (unsigned)n;
	return (unsigned)n;
}

static void ep_sleep(struct ep *e, int timeout_ms)
{
	int rc = sl_wait(e->q, timeout_ms);

	if (rc < 0 && rc != -EINTR)
		die("sl_wait: %s", strerror(-rc));
}

struct sl_cqe ep_next(struct ep *e)
{
	while (e->bl_head == e->bl_tail) {
		if (ep_absorb(e))
			break;
		if (!e->busy)
			ep_sleep(e, -1);
	}
	return e->bl[e->bl_head++];
}

void op_init(struct op *op, int kind, bool send, sl_addr_t peer,
	     uint64_t tag, void *buf, size_t len)
{
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->send = send;
	op->peer = peer;
	op->tag = tag;
	op->mask = UINT64_MAX;
	op->buf = buf;
	op->len = len;
}

void op_post(struct ep *e, struct op *op)
{
	for (;;) {
		int rc = op->send
			? sl_send(e->q, op->peer, op->tag, op->buf, op->len,
				  (uintptr_t)op)
			: sl_recv(e->q, op->peer, op->tag, op->mask, op->buf,
				  op->len, (uintptr_t)op);

		if (rc == 0) {
			op->inflight = true;
			return;
		}
		if (rc != -EAGAIN)
			die("%s: %s", op->send ? "sl_send" : "sl_recv",
			    strerror(-rc));
		/*
		 * SQ full.  The daemon takes a descriptor only when it holds
		 * a CQ slot for it, so free CQ slots by polling into the
		 * backlog, then retry.
		 */
		if (!ep_absorb(e)) {
			if (e->busy)
				sched_yield();
			else
				ep_sleep(e, 1);
		}
	}
}

struct op *op_complete(struct ep *e, const struct sl_cqe *c)
{
	struct op *op = (struct op *)(uintptr_t)c->user_ctx;
	const char *kind = e->conf->kind_name(op->kind);
	struct timespec ts = { 0, 0 };

	op->inflight = false;
	if (c->status == SL_OK) {
		op->naks = 0;
		return op;
	}
	if (c->status != SL_NAK_BUSY && c->status != SL_NAK_RECEIVER_FULL)
		die("%s %s (tag %#" PRIx64 ", %" PRIu64 " bytes, peer %#" PRIx32
		    ":%" PRIu32 ") failed: %s%s", kind,
		    op->send ? "send" : "receive", c->tag, c->len, c->peer.node,
		    c->peer.port, sl_strerror(c->status),
		    c->status == SL_ERR_INVALID && op->send
		    ? e->conf->invalid_hint : "");
	e->naks++;
	if (++op->naks > NAK_RETRIES)
		die("%s %s: still %s after %d retries", kind,
		    op->send ? "send" : "receive", sl_strerror(c->status),
		    NAK_RETRIES);
	/* 20 us doubling up to ~10 ms: short enough not to idle the link. */
	ts.tv_nsec = 20000L << (op->naks < 10 ? op->naks : 9);
	nanosleep(&ts, NULL);
	op_post(e, op);
	return NULL;
}

void check_len(const struct ep *e, const struct sl_cqe *c,
	       const struct op *op, uint64_t want)
{
	if (c->len != want)
		die("%s message of %" PRIu64 " bytes, expected %" PRIu64,
		    e->conf->kind_name(op->kind), c->len, want);
}

void unexpected(const struct ep *e, const struct op *op)
{
	die("unexpected completion of a %s %s", e->conf->kind_name(op->kind),
	    op->send ? "send" : "receive");
}

void parse_to(const char *arg, sl_addr_t *a)
{
	const char *colon = strrchr(arg, ':');
	uint64_t port;
	char *node;

	if (!colon || colon == arg)
		bad_usage("--to wants NODE:PORT, got '%s'", arg);
	if (parse_u64(colon + 1, 1, 65535, &port) < 0)
		bad_usage("--to: bad port in '%s' (1..65535)", arg);
	node = strndup(arg, (size_t)(colon - arg));
	if (!node)
		die("out of memory");
	a->node = strcmp(node, "local") == 0 ? SL_NODE_LOCAL : sl_node_id(node);
	a->port = (uint32_t)port;
	free(node);
}
