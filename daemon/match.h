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
 * A third list holds the messages a probe claimed (MPI_Improbe,
 * FI_CLAIM): off the unexpected list, so nothing matches them any more,
 * each under a nonzero id unique on the endpoint, and still charged at
 * it until the claim is taken (a claimed message holds its memory as
 * before).
 *
 * The lists hold entries the caller allocated; this module only links and
 * unlinks them and never allocates.
 */
#ifndef SLD_MATCH_H
#define SLD_MATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "desc.h"
#include "sluice.h"

/* A posted receive: its descriptor (desc.h), whose peer, tag and
 * tag_mask are the filter (SL_NODE_ANY / SL_PORT_ANY allowed) and whose
 * addr and len (the capacity) say where the data goes. */
struct match_recv {
	TAILQ_ENTRY(match_recv) link;
	struct desc desc;
	uint64_t post_seq;	/* set by match_post_recv: posting order */
};

struct match_msg {
	TAILQ_ENTRY(match_msg) link;
	sl_addr_t src;		/* always a real address */
	uint64_t tag;
	uint64_t len;		/* bytes of the message */
	uint32_t charge;	/* bytes counted against the endpoint's
				 * unexpected_max_bytes (set by endpoint.c;
				 * at most eager_max + its overhead; their
				 * sum, unexpected_bytes, is 64-bit) */
	uint32_t sender_uid;	/* for the completion (queue_complete) */
	uint8_t *data;		/* owned by the caller (endpoint.c); NULL
				 * for rendezvous */
	void *rndv;		/* owned by the caller (rndv.c): where a rendezvous
				 * message's data waits; NULL for eager */
};

TAILQ_HEAD(match_recv_list, match_recv);
TAILQ_HEAD(match_msg_list, match_msg);

/* A claimed message.  A record of its own rather than a field of struct
 * match_msg, whose size is the per-message charge sluiced.conf(5)
 * documents (64 bytes, endpoint.h). */
struct match_claim {
	TAILQ_ENTRY(match_claim) link;
	uint64_t id;		/* nonzero */
	struct match_msg *m;	/* unlinked from the unexpected list, charged */
	/* 0, or why the message can no longer be received: its rendezvous
	 * sender went (its queue closed, its link failed) after the claim.
	 * @m then stays only to name the message and hold its charge until
	 * the claim is taken. */
	int status;
};
TAILQ_HEAD(match_claim_list, match_claim);

struct match_queues;
/* Told when a posted receive that names a node (its filter's peer.node is
 * not SL_NODE_ANY) joins the posted list (@delta +1) or leaves it (-1),
 * whatever the reason: the layer above keeps the links of the peers
 * that receives wait on connected and watched (engine.c). */
typedef void match_named_fn(struct match_queues *mq, uint32_t node, int delta);

struct match_queues {
	struct match_recv_list posted;
	struct match_msg_list unexpected;
	uint32_t n_posted;
	uint32_t n_unexpected;
	uint64_t unexpected_bytes;	/* sum of charge over unexpected */
	uint64_t *total_bytes;		/* the same sum over every endpoint that
					 * shares it (the daemon's); may be NULL */
	uint64_t next_post_seq;
	struct match_claim_list claimed;	/* in claim order */
	uint32_t n_claimed;
	uint64_t last_claim_id;
	match_named_fn *named;		/* may be NULL */
};

/* Empty queues; their charges also count in *@total_bytes (NULL: none),
 * a sum several endpoints may share; receives naming a node are told to
 * @named (NULL: to nobody). */
void match_init(struct match_queues *mq, uint64_t *total_bytes, match_named_fn *named);

/* Does receive @r accept a message from @src with @tag? */
bool match_accepts(const struct match_recv *r, sl_addr_t src, uint64_t tag);
/* The same for a filter in descriptor @filter (peer, tag, tag_mask). */
bool match_filter_accepts(const struct desc *filter, sl_addr_t src, uint64_t tag);

/*
 * match_probe - the earliest unexpected message that a receive with
 * @filter (peer, tag, tag_mask) would take, left linked; NULL when none.
 */
struct match_msg *match_probe(const struct match_queues *mq, const struct desc *filter);

/* A position in posting order, as a receive posted now would get: a
 * probe that takes a message counts as a receive posted then. */
uint64_t match_next_seq(struct match_queues *mq);

/*
 * match_claim - unexpected message @m (linked) is claimed: unlinked from
 * the unexpected list, still charged, recorded in @c (the caller's) under
 * a new nonzero id, which is returned.
 */
uint64_t match_claim(struct match_queues *mq, struct match_msg *m, struct match_claim *c);

/* The claim with @id, or NULL (any value of @id: it comes from a client). */
struct match_claim *match_find_claim(const struct match_queues *mq, uint64_t id);

/* Claim @c (linked) is taken: unlinked, its message's charge removed; the
 * message (c->m) and @c are the caller's. */
void match_unclaim(struct match_queues *mq, struct match_claim *c);

/* The first claim, unlinked as by match_unclaim(), or NULL (teardown). */
struct match_claim *match_pop_claim(struct match_queues *mq);

/* The earliest posted receive with @user_ctx, left linked, or NULL. */
struct match_recv *match_find_recv(const struct match_queues *mq, uint64_t user_ctx);

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

/*
 * match_repost - a receive taken by match_arrival() or match_post_recv()
 * did not get its message after all (a rendezvous that failed).  As
 * match_post_recv(), except that @r keeps its post_seq and, when no
 * unexpected message is accepted, goes back to its place among the
 * posted receives, so that it still precedes those posted after it.
 */
struct match_msg *match_repost(struct match_queues *mq, struct match_recv *r);

/* Unlink unexpected message @m (it is linked). */
void match_remove_unexpected(struct match_queues *mq, struct match_msg *m);

/* Unlink and return the first posted receive / unexpected message, or
 * NULL when empty (teardown). */
struct match_recv *match_pop_recv(struct match_queues *mq);
/* Take posted receive @r out of the posted list (the caller completes it). */
void match_remove_recv(struct match_queues *mq, struct match_recv *r);
struct match_msg *match_pop_unexpected(struct match_queues *mq);

#endif
