/*
 * fuzz_daemon.h - the smallest daemon context the fuzz harnesses run the
 * daemon's own code in: one struct daemon on a libev loop, with its
 * configuration (node "fuzz-b", peers "fuzz-a" and "fuzz-c": one this node
 * accepts from, one it dials), the registration cache, the progress
 * engine, and a fake transport in place of tcp.c that the harness drives
 * by hand.
 *
 * The fake transport keeps the contract of xport.h: every posted WR gets
 * exactly one send completion (fuzz_xport_pump delivers them, 0 for a
 * live connection, XPORT_WR_UNSENT for one being closed), then closed()
 * once; a close requested inside an upcall happens at the next pump, as
 * tcp.c does it from the loop.  Every header the link layer posts is
 * checked with sl_wire_decode_hdr(): a frame the daemon sends that its
 * own decoder would refuse aborts the run (a finding).
 *
 * Single-threaded, as the daemon; the context lives for the whole process.
 */
#ifndef FUZZ_DAEMON_H
#define FUZZ_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "sl_shm.h"
#include "xport/xport.h"

/* Names of the configured nodes; the harness picks by role. */
#define FUZZ_NODE "fuzz-b"

/*
 * fuzz_daemon - the process's daemon context, created on first use
 * (aborts when it cannot be: the harness cannot run).  @sockets: also
 * listen on the control and admin sockets, in a private runtime
 * directory under $TMPDIR (removed at exit).  Links are not set up: see
 * fuzz_links_setup().
 */
struct daemon *fuzz_daemon(bool sockets);

/*
 * The handshake (link_auth.h) runs as in sluiced: the fake connections
 * come from 127.0.0.1, the configured peers' address, and the daemon has
 * a cluster key, byte i FUZZ_KEY_BYTE(i).  fuzz_security_from - [security]
 * mode for the next input: authenticate when @stream (the input after its
 * mode byte) starts with an AUTH frame of mode 1, else none.  In mode 1
 * an AUTH step 2 or 3 of the input whose proof is all 0 is given the
 * right proof on delivery (the daemon's nonce is fresh each time; the
 * harness knows the key); any other proof arrives as it is.
 */
#define FUZZ_KEY_BYTE(i) ((uint8_t)(0x5a ^ (i) * 7))
/*
 * The fake transport grants ranges for rendezvous writes as tcp.c does
 * (xport.h grant): a WRITE lands only inside a live grant of its
 * connection, else it is refused whole (write_refused) and the stream
 * goes on.  The n-th grant on a connection has rkey FUZZ_GRANT_RKEY0 + n,
 * and a WRITE's raddr below its grant's address is an offset into the
 * grant, so that inputs can name both.
 */
#define FUZZ_GRANT_RKEY0 0x100u
void fuzz_security_from(struct daemon *d, const uint8_t *stream, size_t len);

/* Create the links (link_setup_all, after a fresh link_auth_init) / tear
 * them down after closing every fake connection, so that each input
 * starts from links never seen. */
void fuzz_links_setup(struct daemon *d);
void fuzz_links_teardown(struct daemon *d);

/* The node id of the peer that dials us (accepter role here), and of the
 * one we dial. */
uint32_t fuzz_peer_dialing_us(const struct daemon *d);
uint32_t fuzz_peer_we_dial(const struct daemon *d);

/* A new inbound connection (accepted upcall); NULL when the fake's
 * connection table is full. */
struct xport_conn *fuzz_xport_accept(struct daemon *d);

/* The outbound connection a link dialled, or NULL. */
struct xport_conn *fuzz_xport_dialled(struct daemon *d);

/* Is @c still open (not closed by either side)? */
bool fuzz_xport_open(const struct xport_conn *c);

/*
 * fuzz_xport_deliver - hand frame @f with @payload (f->payload_len bytes)
 * up on @c as tcp.c does: refused (the connection breaks) when the payload
 * is over the connection's rx limit; the upcall's -EPROTO breaks it too.
 * Returns the upcall's result, or -EPROTO / -ENOTCONN.
 */
int fuzz_xport_deliver(struct xport_conn *c, const struct sl_wire_frame *f,
		       const uint8_t *payload);

/* Deliver an immediate (write_imm upcall) on @c. */
int fuzz_xport_deliver_imm(struct xport_conn *c, uint32_t imm);

/* Close @c from the peer's side (closed upcall at the next pump). */
void fuzz_xport_break(struct xport_conn *c);

/* Finish what a transport does from its loop: connects, send
 * completions, closes.  Returns the events delivered. */
unsigned fuzz_xport_pump(struct daemon *d);

/* Frames the link layer posted since the context was made (send WRs). */
uint64_t fuzz_xport_frames_posted(void);

/*
 * A client of the daemon without a socket: a session, and queues whose
 * shared segment the harness writes as a (hostile) client would.
 * fuzz_session_new - a session of uid 0 in d->sessions (aborts when out
 *   of memory).
 * fuzz_queue_open - queue_create() on @port with @depth SQEs; NULL when
 *   the daemon refuses (port taken, quota).
 * fuzz_sqe_post - write @sqe into the SQ slot at the shared tail and
 *   publish it, without any of libsluice's checks.
 * fuzz_cq_consume - mark every completion read (CQ head = tail).
 * fuzz_session_free - kill its queues, free it (no socket to close).
 */
struct session *fuzz_session_new(struct daemon *d);
struct queue *fuzz_queue_open(struct session *s, uint32_t port, uint32_t depth);
void fuzz_sqe_post(struct queue *q, const struct sl_sqe *sqe);
void fuzz_cq_consume(struct queue *q);
void fuzz_session_free(struct session *s);

/*
 * The traffic a link harness's stream meets, on a queue bound to
 * FUZZ_PORT: (@mode >> 1) & 3 receives of FUZZ_RECV_BYTES (any source,
 * any tag), and (@mode >> 3) & 3 sends to (@node, FUZZ_PORT), alternately
 * FUZZ_EAGER_BYTES (eager) and FUZZ_RNDV_BYTES (a rendezvous).
 */
#define FUZZ_PORT 7000u
#define FUZZ_RECV_BYTES (256u << 10)
#define FUZZ_EAGER_BYTES 1000u
#define FUZZ_RNDV_BYTES (200u << 10)	/* over the default eager_max */
void fuzz_link_traffic(struct queue *q, uint32_t node, uint8_t mode);

/* Run @rounds progress passes (queues drained, links flushed, the fake
 * transport pumped), as the loop would. */
void fuzz_progress(struct daemon *d, unsigned rounds);

/*
 * The driver (fuzz/replay.c, or libFuzzer) calls the harness's
 * LLVMFuzzerTestOneInput once per input.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
