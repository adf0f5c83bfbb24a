/*
 * endpoint.h - a queue's endpoint: the port's posted receives and
 * unexpected messages (match.h), eager delivery, and what a receive does
 * with the message it takes.
 *
 * An eager message is delivered here: copied into the receive that
 * matches, or kept (payload and header) as unexpected.  A rendezvous
 * message is known here only by its header; what a receive does when it
 * takes one, and what happens to one nobody will take, is the
 * rendezvous's (rndv.h), which installs its hooks with endpoint_init().
 * So this file calls nothing above it.
 *
 * The charge of an unexpected message is the documented one
 * (sluiced.conf(5)): an eager message its length plus
 * ENDPOINT_UNEXPECTED_OVERHEAD, a rendezvous one ENDPOINT_RNDV_CHARGE.
 * The endpoint's unexpected_bytes gauge is the sum of these, the very
 * number the bound ([limits] unexpected_max_bytes) is compared with; the
 * daemon's (struct daemon's unexpected_bytes) is the sum over every
 * endpoint, compared with [limits] unexpected_total_bytes.
 * All calls on the loop thread.
 */
#ifndef SLD_ENDPOINT_H
#define SLD_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "match.h"
#include "sluice.h"

struct daemon;
struct queue;

/*
 * Bytes an unexpected message is charged beyond its payload, since a flood
 * of small messages costs memory too.  Fixed numbers, not sizeof, so that
 * the charge the manual gives does not move with a structure; asserts
 * (endpoint.c, rndv.c) keep them at least what is allocated.
 */
#define ENDPOINT_UNEXPECTED_OVERHEAD 64u
#define ENDPOINT_RNDV_CHARGE 96u

/* What the rendezvous does for the endpoint (rndv.c installs them). */
struct endpoint_rndv_hooks {
	/* Receive @r of @q takes rendezvous message @m (both unlinked; @m
	 * is freed by the caller).  Returns true when @r was used up (a
	 * copy or a rendezvous started, or @r completed), false when @r is
	 * still the caller's (the sender has been told). */
	bool (*take)(struct queue *q, struct match_recv *r, const struct match_msg *m);
	/* Rendezvous message @m of @q (unlinked) will never be received:
	 * its sender hears @status.  The caller frees @m. */
	void (*drop)(struct queue *q, const struct match_msg *m, int status);
	/* A message from @src with @tag met receive @r of @q: a rendezvous
	 * holding an earlier receive that would have taken it too has been
	 * overtaken (rndv.c, rndv_recv_giveback). */
	void (*matched)(struct queue *q, sl_addr_t src, uint64_t tag, const struct match_recv *r);
};

/* Install @h (static storage) for the daemon @d. */
void endpoint_init(struct daemon *d, const struct endpoint_rndv_hooks *h);

/* The queue that takes messages for @port: NULL when unbound, or when
 * its queue has failed (engine_fail_queue: it can receive nothing more). */
struct queue *endpoint_of(struct daemon *d, uint32_t port);

/*
 * endpoint_deliver - a message for local port @dst_port from @src: an
 * eager send of a local queue, or a message that arrived on a link.
 * @sender_uid: what its receive completion names (struct
 * sl_cqe.sender_uid): the local sending queue's uid, or what
 * link_auth_sender_uid() made of the frame's (SL_UID_UNKNOWN when the
 * link is not keyed); kept while the message waits unexpected.  The
 * payload is copied before return.
 * Returns SL_OK (delivered or queued unexpected), SL_ERR_NO_ENDPOINT,
 * SL_NAK_RECEIVER_FULL when queueing it unexpected would pass the
 * endpoint's [limits] unexpected_max_bytes or the daemon's
 * unexpected_total_bytes, SL_ERR_PEER_DOWN while the
 * daemon drains, or SL_NAK_BUSY when the daemon is out of memory.
 */
int endpoint_deliver(struct daemon *d, sl_addr_t src, uint32_t sender_uid, uint32_t dst_port,
		     uint64_t tag, const void *data, uint64_t len);

/*
 * endpoint_unexpected_new - an unexpected message for @dq from @src
 * holding @held bytes of payload (eager) or @rndv_bytes of rendezvous
 * header (@rndv_bytes > 0: m->rndv points at them, m->data is NULL), not
 * linked yet.  NULL with *@status set when its charge would take the
 * endpoint or the daemon past its bound (SL_NAK_RECEIVER_FULL: refused before
 * allocating, so the sender keeps its buffer and may retry once the
 * receiver has taken some messages), memory is short (SL_NAK_BUSY), or
 * the daemon drains (SL_ERR_PEER_DOWN: no receive could be posted for it
 * any more, and it would go with the daemon after its sender heard
 * SL_OK).
 */
struct match_msg *endpoint_unexpected_new(struct daemon *d, struct queue *dq, sl_addr_t src,
					  uint32_t sender_uid, uint64_t tag, uint64_t len,
					  uint64_t held, size_t rndv_bytes, int *status);

/* Link unexpected message @m at @dq and count it (and its charge, for
 * the memory returned after a burst: mem_return.h). */
void endpoint_add_unexpected(struct queue *dq, struct match_msg *m);

/* A message from @src with @tag arrives at @dq: the earliest posted
 * receive that accepts it, unlinked and told to the rendezvous hooks
 * (matched), or NULL. */
struct match_recv *endpoint_arrival(struct queue *dq, sl_addr_t src, uint64_t tag);

/*
 * endpoint_post_recv - receive @r of @q (its descriptor filled) is
 * posted: it takes the earliest unexpected message it accepts, or waits
 * among the posted receives.  Returns true when @r waits posted, false
 * when it was used up or completed.
 */
bool endpoint_post_recv(struct queue *q, struct match_recv *r);

/*
 * endpoint_repost - receive @r of @q, taken by a rendezvous that failed
 * before any data moved, goes back to its place among the posted
 * receives, or takes the earliest unexpected message it accepts.  On a
 * dead queue or a stopping daemon it completes SL_ERR_CANCELED instead.
 */
void endpoint_repost(struct queue *q, struct match_recv *r);

/*
 * endpoint_drop_unexpected - unexpected message @m of @q, already
 * unlinked, will never be received (@q is closing or has failed, or the
 * daemon stops).  A rendezvous sender is told (hooks' drop) with
 * SL_ERR_NO_ENDPOINT, or SL_ERR_CANCELED when the daemon stops.  Frees @m.
 */
void endpoint_drop_unexpected(struct queue *q, struct match_msg *m);

/*
 * endpoint_probe - probe descriptor @probe of @q (validated; flags
 * SL_PROBE_CLAIM or SL_PROBE_DISCARD or none) looks at @q's unexpected
 * messages in arrival order with a receive's rules and completes: SL_OK
 * naming the first that @probe's filter accepts (claimed, with its id,
 * or dropped, as the flags say), SL_ERR_NO_MESSAGE, or SL_NAK_BUSY when
 * memory for a claim or a discard is short (the message stays).  A
 * dropped rendezvous message is taken by an internal receive of
 * capacity 0 (desc.h), so that its sender completes as for any receive.
 */
void endpoint_probe(struct queue *q, const struct desc *probe);

/*
 * endpoint_recv_claimed - receive @r of @q (its desc.claim nonzero) takes
 * the message claimed under that id: delivered (eager) or a rendezvous
 * started (hooks' take); or it completes SL_ERR_NOT_FOUND (no such claim
 * on @q), or with the reason its claimed message was lost (its sender
 * went), naming the message.  @r is used up either way.
 */
void endpoint_recv_claimed(struct queue *q, struct match_recv *r);

/*
 * endpoint_cancel_recv - the earliest posted receive of @q with
 * @user_ctx that waits unmatched completes SL_ERR_CANCELED and goes.
 * Returns false when none waits (the caller's cancel did not find it).
 */
bool endpoint_cancel_recv(struct queue *q, uint64_t user_ctx);

/*
 * endpoint_drop_claimed - every message claimed on @q goes (@q is closing
 * or has failed): a rendezvous sender hears it as for an unexpected
 * message dropped (endpoint_drop_unexpected); the claims are freed.
 */
void endpoint_drop_claimed(struct queue *q);

/* Complete every posted receive that names node @node as its source
 * (SL_NODE_ANY ones stay) with @status: its link timed out. */
void endpoint_fail_recvs_from(struct daemon *d, uint32_t node, int status);

#endif
