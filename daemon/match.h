/*
 * match.h - tag matching for one endpoint (MPI's rules).
 *
 * Two FIFO lists: posted receives, in posting order, and unexpected
 * messages, in arrival order.  An arriving message takes the first posted
 * receive that accepts it; a posted receive takes the first unexpected
 * message it accepts.  Messages from one source arrive in send order (per
 * link stream, or per SQ locally), so scanning from the head gives MPI's
 * non-overtaking rule.  The daemon runs one loop thread, so there are none
 * of the posted/unexpected insert races of multi-threaded matchers.
 *
 * The lists hold entries the caller allocated; this module only links and
 * unlinks them and never allocates.
 */
#ifndef SLD_MATCH_H
#define SLD_MATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "sluice.h"

struct match_recv {
	TAILQ_ENTRY(match_recv) link;
	sl_addr_t src;		/* filter; SL_NODE_ANY / SL_PORT_ANY allowed */
	uint64_t tag;
	uint64_t tag_mask;
	/* Owned by the caller (the engine): where the data goes. */
	uint64_t addr;		/* arena offset */
	uint64_t capacity;	/* bytes */
	uint64_t user_ctx;
};

struct match_msg {
	TAILQ_ENTRY(match_msg) link;
	sl_addr_t src;		/* always a real address */
	uint64_t tag;
	uint64_t len;		/* bytes of payload */
	uint8_t *data;		/* owned by the caller (the engine) */
};

TAILQ_HEAD(match_recv_list, match_recv);
TAILQ_HEAD(match_msg_list, match_msg);

struct match_queues {
	struct match_recv_list posted;
	struct match_msg_list unexpected;
	uint32_t n_posted;
	uint32_t n_unexpected;
	uint64_t unexpected_bytes;	/* sum of len over unexpected */
};

void match_init(struct match_queues *mq);

/* Does receive @r accept a message from @src with @tag? */
bool match_accepts(const struct match_recv *r, sl_addr_t src, uint64_t tag);

/*
 * match_post_recv - a receive is posted.  If an unexpected message is
 * accepted by @r, the earliest such is unlinked and returned and @r is not
 * linked.  Otherwise @r is appended to the posted list and NULL returned.
 */
struct match_msg *match_post_recv(struct match_queues *mq, struct match_recv *r);

/*
 * match_arrival - a message from @src with @tag arrives.  Returns the
 * earliest posted receive that accepts it, unlinked, or NULL; on NULL the
 * caller links the message with match_add_unexpected().
 */
struct match_recv *match_arrival(struct match_queues *mq, sl_addr_t src, uint64_t tag);

void match_add_unexpected(struct match_queues *mq, struct match_msg *m);

/* Unlink and return the first posted receive / unexpected message, or
 * NULL when empty (teardown). */
struct match_recv *match_pop_recv(struct match_queues *mq);
struct match_msg *match_pop_unexpected(struct match_queues *mq);

#endif
