/*
 * rndv.h - every rendezvous of the daemon, both sides, local and remote,
 * and every send to another node (which becomes a rendezvous only when
 * it is posted and the peer's eager_max is known).
 *
 * Within the node a message above eager_max waits as a header at its
 * receiver's endpoint (struct match_msg plus struct rndv_src, charged
 * ENDPOINT_RNDV_CHARGE), its data in the sender's arena, until a receive
 * takes it; then the one copy runs in slices (copy.h).
 *
 * Between nodes, over a link (link.h, a reliable frame channel):
 *   sending side (struct rsend): queued in the link as a message; posted
 *     as EAGER (done at its ACK or NAK) or as RTS; the RTS acknowledged,
 *     it waits for the receiver's RTR; the RTR names the destination and
 *     the grant; the source is registered (possibly waiting in the
 *     registration cache); its RDMA writes take turns with the link's
 *     other data (struct link_writer), the last one carrying the
 *     receiver's recv_id as its immediate; only the receiver's DONE
 *     completes the send SL_OK (a write that left, or that a NIC
 *     acknowledged, can still die with the receiving daemon).  An RTR with
 *     a status refuses or aborts it; a connection cut after the RTR makes
 *     it wait for the RTR sent again (rtr_stale), which says how many
 *     bytes from the start are in place, and the rest is written again.
 *     A send that failed is remembered (RNDV_GONE_MAX of them) so that a
 *     late RTR is answered with the reason.
 *   receiving side (struct rndv_recv): an RTS matched to a receive, or a
 *     receive that takes an unexpected RTS header; the destination
 *     registered (possibly waiting); an RTR with a grant of exactly the
 *     receive's range on the current connection (xport.h grant()); the
 *     data placed (the write's immediate, or a FIN from a peer that does
 *     not use it); the receive completes and a DONE goes back.  A failure
 *     before any data moved gives the receive back to its place among
 *     the posted receives (rndv_recv_giveback), unless a message it would
 *     also have taken met a later receive meanwhile (overtaken: MPI's
 *     non-overtaking rule), when it completes instead.  A receiving queue
 *     that dies aborts the rendezvous and holds the registration until
 *     the sender's FIN (or the immediate of a last write already on its
 *     way) says nothing more will land.
 * The state machines, with their states and legal moves, are drawn in
 * docs/state-machines.md.  All calls on the loop thread.
 */
#ifndef SLD_RNDV_H
#define SLD_RNDV_H

#include <stdbool.h>
#include <stdint.h>

#include "desc.h"
#include "endpoint.h"
#include "link.h"

struct daemon;
struct link;
struct queue;

/* What the links hand up to the rendezvous (link.h: attach, detach, rts,
 * rtr, fin, done, rtr_prepare, rtr_posted, write_imm, write_placed,
 * write_refused, flush, went_down, resumed, failed, peer_timed_out,
 * counts; engine.c puts them in its table beside its eager handler). */
void *rndv_link_attach(struct link *l);
void rndv_link_detach(struct link *l, void *upper);
int rndv_rx_rts(struct link *l, const struct sl_wire_frame *wf);
int rndv_rx_rtr(struct link *l, const struct sl_wire_frame *wf);
int rndv_rx_fin(struct link *l, uint32_t recv_id, uint32_t status);
int rndv_rx_done(struct link *l, uint64_t send_id);
int rndv_rtr_prepare(struct link *l, struct sl_wire_frame *wf);
void rndv_rtr_posted(struct link *l, const struct sl_wire_frame *wf, uint64_t seq);
int rndv_write_imm(struct link *l, uint32_t imm);
void rndv_write_placed(struct link *l, uint32_t rkey, uint64_t raddr, uint32_t len);
int rndv_write_refused(struct link *l, uint32_t rkey, bool has_imm, uint32_t imm);
void rndv_link_flush(struct link *l);
void rndv_link_down(struct link *l);
void rndv_link_resumed(struct link *l, uint64_t peer_rx);
void rndv_link_failed(struct link *l, int status, bool tell);
void rndv_peer_timed_out(struct link *l);
void rndv_link_counts(const struct link *l, uint32_t *sending, uint32_t *receiving,
		      uint32_t *past_rts);

/* What the endpoint asks of the rendezvous (endpoint.h). */
extern const struct endpoint_rndv_hooks rndv_endpoint_hooks;

/*
 * rndv_send_remote - validated send descriptor @dsc, for a port of @l's
 * peer, goes to the link (EAGER or RTS, decided when it is posted).
 * Takes a reference on its queue until it completes.  Returns 0,
 * -EHOSTDOWN when the link has been down past peer_timeout_ms (caller
 * completes SL_ERR_PEER_DOWN), -ENOBUFS when link_backlog_max sends
 * already wait, or -ENOMEM (caller completes SL_NAK_BUSY for both).
 */
int rndv_send_remote(struct link *l, const struct desc *dsc);

/*
 * rndv_send_local - a validated send @dsc above eager_max to a port of
 * this node: the one copy starts if a receive matches, or its header
 * waits unexpected at the destination.  Returns -EINPROGRESS (it
 * completes later), or the status to complete it with now
 * (SL_ERR_NO_ENDPOINT, SL_NAK_RECEIVER_FULL, SL_NAK_BUSY,
 * SL_ERR_PEER_DOWN while the daemon drains).
 */
int rndv_send_local(const struct desc *dsc);

/* Queue @q is closing (NULL: the daemon is stopping, every queue): its
 * local rendezvous sends still waiting unexpected at some endpoint
 * complete SL_ERR_CANCELED (discarded when @q is dead) and give their
 * queue reference back. */
void rndv_cancel_local(struct daemon *d, struct queue *q);

/* rndv_cancel_local() with @status instead: @q has failed
 * (engine_fail_queue). */
void rndv_fail_local(struct daemon *d, struct queue *q, int status);

/* A queue was closed: its sends still queued in a link go (those posted
 * complete normally, discarded), its rendezvous sends no receiver has
 * answered end, and the rendezvous its receives were matched to end:
 * each sender completes SL_ERR_NO_ENDPOINT. */
void rndv_cancel_queue(struct daemon *d, struct queue *q);

/*
 * What sl_cancel() asks when it found no posted receive to cancel
 * (engine.c): does a receive of @q with @user_ctx hold a rendezvous
 * (matched, its data under way), and does a send of @q with @user_ctx
 * wait anywhere here (a link's backlog or unacked frames, a rendezvous
 * sent, a local rendezvous send unexpected or claimed at an endpoint)?
 * Walks them all: for the cancel's rare miss, not the fast path.  The
 * daemon's internal receives (desc.h) do not count.
 */
bool rndv_queue_has_recv(const struct queue *q, uint64_t user_ctx);
bool rndv_queue_has_send(struct daemon *d, const struct queue *q, uint64_t user_ctx);

#endif
