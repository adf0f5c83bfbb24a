/*
 * engine.h - what happens to a validated descriptor: receives are matched
 * at their endpoint, sends are delivered locally with one copy or handed
 * to the link of the destination node; frames from links are delivered.
 */
#ifndef SLD_ENGINE_H
#define SLD_ENGINE_H

#include <stdint.h>

#include "desc.h"
#include "match.h"
#include "sluice.h"

struct daemon;
struct queue;

/*
 * engine_validate - check descriptor @dsc, as queue_drain() took it,
 * against its queue: opcode, flags and reserved fields, arena bounds,
 * addresses.  Returns SL_OK or SL_ERR_INVALID.
 */
int engine_validate(const struct desc *dsc);

/*
 * engine_submit - carry out descriptor @dsc of dsc->q (queue_drain()
 * took it and counts it in flight): validated, refused at once while the
 * daemon drains or when its queue has failed, else matched, delivered,
 * or handed to a link.  Always leads to exactly one queue_complete().
 */
void engine_submit(struct desc *dsc);

/*
 * engine_close_queue - @q's owner closed it or died: queue_kill(), then
 * what refers to it is unwound: its unexpected messages (their senders
 * told), its local rendezvous sends and copies, its frames and
 * rendezvous on links, its registrations; then the owner's reference
 * goes.  Nothing when @q is dead already.
 */
void engine_close_queue(struct queue *q);

/*
 * engine_fail_queue - the client of @q made the daemon's work on it
 * impossible (copy.h: it removed the pages under a copy again and
 * again).  The queue stays open but has failed: its local copies under
 * way, its local rendezvous sends still waiting for a receive and its
 * posted receives complete @status now, and every descriptor it posts
 * from now on completes @status at once; the other side of an ended copy
 * gets SL_ERR_NO_ENDPOINT.  Work of it already on a link finishes as it
 * would.  One log line with @why (rate-limited across queues).  Nothing
 * when @q is dead or failed already.
 */
void engine_fail_queue(struct queue *q, int status, const char *why);

/*
 * engine_deliver - a message for local port @dst_port from @src: an
 * eager send of a local queue, or a message that arrived on a link.
 * @sender_uid: what its receive completion names (struct
 * sl_cqe.sender_uid): the local sending queue's uid, or what
 * link_auth_sender_uid() made of the frame's (SL_UID_UNKNOWN when the
 * link is not keyed); kept while the message waits unexpected.  The
 * payload is copied before return.
 * Returns SL_OK (delivered or queued unexpected), SL_ERR_NO_ENDPOINT,
 * SL_NAK_RECEIVER_FULL when queueing it unexpected would pass the
 * endpoint's [limits] unexpected_max_bytes, or SL_NAK_BUSY when the daemon
 * is out of memory.
 */
int engine_deliver(struct daemon *d, sl_addr_t src, uint32_t sender_uid, uint32_t dst_port,
		   uint64_t tag, const void *data, uint64_t len);

/*
 * engine_deliver_rts - an RTS from remote @src for local port @dst_port:
 * a @msg_len-byte message that waits at the sender as its rendezvous
 * @send_id; @sender_uid as for engine_deliver(), named by the receive
 * completion when the data is in.  A posted receive that accepts it
 * starts the rendezvous; otherwise its header (only) is queued
 * unexpected.  Returns SL_OK, SL_ERR_NO_ENDPOINT, SL_NAK_RECEIVER_FULL
 * (the header would pass unexpected_max_bytes) or SL_NAK_BUSY (out of
 * memory).
 */
int engine_deliver_rts(struct daemon *d, sl_addr_t src, uint32_t sender_uid, uint32_t dst_port,
		       uint64_t tag, uint64_t msg_len, uint64_t send_id);

/*
 * engine_repost - receive @r of @q, taken by a rendezvous that failed
 * before any data moved, goes back to its place among the posted
 * receives, or takes the earliest unexpected message it accepts.  On a
 * dead queue it completes (discarded) instead.
 */
void engine_repost(struct queue *q, struct match_recv *r);

/*
 * engine_drop_unexpected - unexpected message @m of @q, already unlinked,
 * will never be received (@q is closing or the daemon stopping).  Its
 * sender is told: a local rendezvous send completes SL_ERR_NO_ENDPOINT
 * (SL_ERR_CANCELED when stopping), a remote one gets an RTR with that
 * status.  Frees @m.
 */
void engine_drop_unexpected(struct queue *q, struct match_msg *m);

/* Forget the unexpected rendezvous messages whose data waits on node
 * @node: its link timed out (@status SL_ERR_PEER_DOWN) or it restarted
 * (SL_ERR_PEER_RESTARTED).  @tell: refuse each to its sender with
 * @status (an RTR that waits for the link like every control frame). */
void engine_drop_rndv_from(struct daemon *d, uint32_t node, int status, bool tell);

/* Complete every posted receive that names node @node as its source
 * (SL_NODE_ANY ones stay) with @status: its link timed out. */
void engine_fail_recvs_from(struct daemon *d, uint32_t node, int status);

/* Queue @q is closing (NULL: the daemon is stopping, every queue): its
 * local rendezvous sends still waiting unexpected at some endpoint
 * complete SL_ERR_CANCELED (discarded when @q is dead) and give their
 * queue reference back. */
void engine_cancel_local_rndv(struct daemon *d, struct queue *q);

/* engine_cancel_local_rndv() with @status instead: @q has failed
 * (engine_fail_queue). */
void engine_fail_local_rndv(struct daemon *d, struct queue *q, int status);

/* What the links hand up to the engine (link.h): deliver,
 * deliver_rts, repost, drop_rndv_from, fail_recvs_from above. */
extern const struct link_handlers engine_link_handlers;

#endif
