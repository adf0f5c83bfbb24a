/*
 * sl_common.h - libsluice helpers shared by sluice-perf and sluice-copy:
 * an endpoint (a queue plus a backlog of completions), descriptors that
 * are posted again after a NAK, and NODE:PORT parsing.
 *
 * Posting.  When a post finds the SQ full (-EAGAIN), completions are polled
 * into the endpoint's backlog (handed out later, in order, by ep_next()) to
 * give the daemon CQ room, and the post is retried.
 *
 * Completions.  user_ctx of every descriptor points to the struct op that
 * describes it, so a NAK (SL_NAK_BUSY, SL_NAK_RECEIVER_FULL: the buffer is
 * untouched) is retried by posting the same op again after a back-off of
 * 20 us doubling up to ~10 ms, at most NAK_RETRIES times in a row.  Every
 * other status but SL_OK is fatal.
 *
 * Every error here ends the program through die() (common.h): exit 1.
 */
#ifndef SLUICE_TOOLS_SL_COMMON_H
#define SLUICE_TOOLS_SL_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/*
 * Largest message sl_send() takes (between nodes messages above the
 * daemon's eager_max go by rendezvous).  sluice.h defines it once the
 * daemon has rendezvous; until then, the same value here.
 */
#ifndef SL_MSG_MAX
#define SL_MSG_MAX (1ull << 30)
#endif

/*
 * Arena sizing.  ARENA_RESERVE is what a tool keeps free in its arena for
 * its small control buffers.  arena_cost() is what sl_alloc(@len) takes
 * from an arena: @len rounded up to libsluice's 64-byte alignment plus a
 * 64-byte block header.  arena_fits() is how many buffers of @len bytes
 * an arena of @arena bytes holds next to the reserve; arena_needed() the
 * [limits] arena_bytes that holds @n of them, rounded up to a MiB.  These
 * are for advice; whether sl_alloc() succeeds is what counts.
 */
#define ARENA_RESERVE (64u << 10)
uint64_t arena_cost(uint64_t len);
uint64_t arena_fits(uint64_t arena, uint64_t len);
uint64_t arena_needed(uint64_t n, uint64_t len);

/*
 * Write @v, a byte count for sluiced.conf, into @b (@n bytes) in the
 * config's own notation: "256M", "2G", "1040M" ("64K" below a MiB).
 */
void fmt_conf_bytes(char *b, size_t n, uint64_t v);

/* Consecutive NAKs of one op after which op_complete() gives up. */
#define NAK_RETRIES 1000

/* One descriptor; its address is the user_ctx of every post of it. */
struct op {
	int kind;		/* the program's message kind */
	bool send;
	bool inflight;		/* posted, completion not handled yet */
	unsigned slot;		/* free for the program's use */
	unsigned naks;		/* consecutive NAKs of this op */
	sl_addr_t peer;		/* send: destination; receive: source filter */
	uint64_t tag, mask;
	void *buf;
	size_t len;		/* send: length; receive: capacity */
};

/* How a program words the messages of the helpers below. */
struct ep_conf {
	/* The name of a message kind, e.g. "ctrl"; "?" for an unknown one. */
	const char *(*kind_name)(int kind);
	/*
	 * Appended after "arena is N bytes" inside the parentheses of the
	 * "arena full" error of ep_alloc(): "" or e.g. "; use a smaller ...".
	 */
	const char *arena_hint;
	/* Appended to the error of a send that fails SL_ERR_INVALID. */
	const char *invalid_hint;
};

/* A queue plus the completions polled but not handled yet. */
struct ep {
	struct sl_ctx *ctx;
	struct sl_queue *q;
	bool busy;		/* spin instead of sleeping in sl_wait() */
	const struct ep_conf *conf;
	struct sl_cqe *bl;	/* backlog: bl[bl_head .. bl_tail) */
	unsigned bl_cap, bl_head, bl_tail;
	uint64_t naks;		/* NAKs retried, over the endpoint's life */
};

/*
 * Connect to the daemon at @sock (NULL: $SLUICE_SOCKET, else the default
 * socket) and open a queue bound to @port (0: an ephemeral port) deep
 * enough for @window descriptors in flight plus 16 more (the depth is the
 * smallest power of two >= 16 that holds them).  @busy makes ep_next() and
 * the retries of op_post() spin instead of sleeping.  @conf must outlive
 * the endpoint.  Dies when the daemon or the queue cannot be had.
 */
void ep_open(struct ep *e, const char *sock, uint32_t port, unsigned window,
	     bool busy, const struct ep_conf *conf);

/* Close the queue and the connection; every buffer of the arena goes. */
void ep_close(struct ep *e);

/*
 * @len bytes from the queue's arena (sl_alloc()); dies when the arena
 * cannot hold them.  Free with sl_free(e->q, ...) or let ep_close() drop it.
 */
void *ep_alloc(struct ep *e, size_t len);

/*
 * The next completion, from the backlog first, else from the CQ; blocks
 * in sl_wait() until one comes (spins with e->busy).
 */
struct sl_cqe ep_next(struct ep *e);

/*
 * Fill @op for a send (@send true: @len bytes of @buf to @peer with @tag)
 * or a receive (@send false: up to @len bytes into @buf from a source that
 * matches @peer, with a tag equal to @tag under mask, which is set to all
 * ones: set op->mask after this call for another).  @kind is the
 * program's message kind; slot, naks and inflight are zeroed.
 */
void op_init(struct op *op, int kind, bool send, sl_addr_t peer,
	     uint64_t tag, void *buf, size_t len);

/*
 * Post @op (sl_send() or sl_recv(), user_ctx = @op) and mark it in flight.
 * While the SQ is full (-EAGAIN) completions are moved into the backlog
 * and the post is retried; any other error is fatal.
 */
void op_post(struct ep *e, struct op *op);

/*
 * Account completion @c of an op posted on @e; marks the op no longer in
 * flight.  Returns the op when it completed SL_OK.  On a NAK the same op
 * is posted again after the back-off, e->naks counted, and NULL returned;
 * more than NAK_RETRIES NAKs in a row, or any other status, is fatal.
 */
struct op *op_complete(struct ep *e, const struct sl_cqe *c);

/* Die unless completion @c of @op carried exactly @want bytes. */
void check_len(const struct ep *e, const struct sl_cqe *c,
	       const struct op *op, uint64_t want);

/* Die: @op completed where the program expected no such completion. */
void __attribute__((noreturn))
unexpected(const struct ep *e, const struct op *op);

/*
 * Parse the argument of --to, "NODE:PORT" (the last colon separates them):
 * NODE is a node name or "local" (SL_NODE_LOCAL), PORT is 1..65535 (K/M
 * suffixes as for parse_u64()).  Stores the address in *@a; a malformed
 * argument is a usage error (bad_usage(): exit 2).
 */
void parse_to(const char *arg, sl_addr_t *a);

#endif
