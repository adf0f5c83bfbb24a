/*
 * xport.h - the verbs-shaped transport interface under the links.
 *
 * A transport moves whole frames (sl_wire.h) over connections with RC
 * semantics: frames arrive in order, once, or the connection breaks.  The
 * shape follows ibverbs so that the tcp and verbs implementations sit
 * behind one const ops table chosen at setup time (rdma-core's provider
 * ops, libfabric's per-provider dispatch):
 *   - post_send() queues one frame (header + one payload segment) on a
 *     bounded send queue and returns -ENOMEM when it is full, like
 *     ibv_post_send(); nothing is written until flush() (batching: many
 *     frames of many clients leave in one writev()).
 *   - post_write() is an RDMA write from a registered local range (lkey)
 *     to a registered remote one (rkey, raddr), optionally with a 32-bit
 *     immediate that the remote side sees as a write_imm() upcall once
 *     the data is in place (IBV_WR_RDMA_WRITE_WITH_IMM).  It takes an SQ
 *     slot like a send.  Writes and sends on a connection are executed
 *     in posting order (RC ordering).
 *   - Each posted WR gets exactly one send completion, with a status
 *     that also says whether the peer may have it (when the peer turns
 *     out to have restarted, the link fails only the frames it may have
 *     had, and sends the others to the new incarnation):
 *       0                its bytes have left the daemon (tcp: all written
 *                        to the socket; verbs: IBV_WC_SUCCESS);
 *       XPORT_WR_UNSENT  the connection broke before the peer could have
 *                        it (tcp: not all of its bytes were written to the
 *                        socket, and a peer acts on whole frames only;
 *                        verbs: never handed to the device);
 *       other < 0        the connection broke and the peer may have it
 *                        (tcp: written, completion not yet reported;
 *                        verbs: a flush error, IBV_WC_WR_FLUSH_ERR, of a WR
 *                        the device had: it may have been executed with
 *                        only its acknowledgement lost).
 *   - reg_mr()/dereg_mr() register daemon memory with the transport (the
 *     protection domain); a registration alone admits no remote write.
 *   - grant()/revoke() open and close remote write access to exactly one
 *     range of a registration, on one connection, for one rendezvous
 *     (the RTR carries the grant's key; docs/rendezvous-grants.md).  A
 *     write whose key is no live grant of its connection, or whose range
 *     is not inside the grant, places no byte: tcp discards its payload,
 *     reports it through write_refused() and keeps the connection; verbs
 *     (memory windows) breaks the QP, as RC does (IBV_WC_REM_ACCESS_ERR).
 *   - Received frames are handed up whole and already validated by
 *     sl_wire_decode_hdr(); the payload pointer is valid only during the
 *     upcall.
 *   - Send completions are reported before received frames are handed up.
 *   - After closed() the connection object is gone.
 *
 * Ownership: the link layer owns each conn's ctx pointer; the transport
 * owns the conn.  All calls happen on the daemon's loop thread.
 */
#ifndef SLD_XPORT_H
#define SLD_XPORT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <ev.h>

#include "sl_wire.h"

struct xport;
struct xport_conn;

/* Send completion status of a WR that cannot have reached the peer. */
#define XPORT_WR_UNSENT (-ECANCELED)

/* Seconds an accepted connection may stay anonymous (no link attached). */
#define XPORT_HELLO_TIMEOUT 5.0

struct xport_upcalls {
	/* An outbound connect finished; @err is 0 or -errno (then the conn
	 * is gone after this call). */
	void (*connected)(struct xport_conn *c, void *ctx, int err);
	/* A new inbound connection; its ctx is NULL until set. */
	void (*accepted)(struct xport *x, struct xport_conn *c);
	/* One per posted frame, in posting order. */
	void (*send_done)(struct xport_conn *c, void *ctx, uint64_t wr_id, int status);
	/* One received frame; return 0, or -EPROTO to break the connection. */
	int (*recv)(struct xport *x, struct xport_conn *c, void *ctx,
		    const struct sl_wire_frame *f, const uint8_t *payload);
	/* An RDMA write with immediate @imm has placed all its data (and
	 * every write posted before it on the connection).  Return 0, or
	 * -EPROTO to break the connection. */
	int (*write_imm)(struct xport_conn *c, void *ctx, uint32_t imm);
	/* Optional for a transport: RDMA write of @len bytes to (@rkey,
	 * @raddr) is wholly in place, with or without an immediate (before
	 * its write_imm).  A transport that does not see the target side of
	 * a write (verbs: the NIC places it) never calls it, so the link
	 * cannot resume a cut rendezvous from the middle there. */
	void (*write_placed)(struct xport_conn *c, void *ctx, uint32_t rkey, uint64_t raddr,
			     uint32_t len);
	/* Optional for a transport: an RDMA write on @c was refused before
	 * any byte was placed (its key no live grant of @c, or its range
	 * outside the grant; the transport counted and logged it) and its
	 * payload is being discarded; the connection stays in sync.  @rkey
	 * as the write named it; @has_imm and @imm its immediate, which is
	 * not delivered through write_imm().  Return 0, or -EPROTO to break
	 * the connection.  A transport that cannot keep the connection
	 * (verbs: the NIC fails the QP) never calls it. */
	int (*write_refused)(struct xport_conn *c, void *ctx, uint32_t rkey, bool has_imm,
			     uint32_t imm);
	/* The connection broke or was closed by the peer; every posted frame
	 * has already had its send completion.  The conn is freed after. */
	void (*closed)(struct xport_conn *c, void *ctx, int err);	/* Optional for the link layer: the bytes on @c, an accepted
	 * connection with no ctx yet, break the protocol before recv()
	 * could refuse them (@err: no frame, from sl_wire_decode_hdr, or a
	 * frame this connection may not carry; @first_byte the frame's first
	 * byte, its wire version).  The link layer counts and logs it
	 * (rate-limited: anyone can cause it); the transport logs nothing
	 * for it and closes the connection after this call. */
	void (*stranger)(struct xport *x, struct xport_conn *c, int err, uint8_t first_byte);
};

struct xport_send_wr {
	uint64_t wr_id;
	const void *hdr;	/* encoded header; copied at post time */
	uint32_t hdr_len;	/* bytes, <= SL_WIRE_HDR_MAX */
	const void *payload;	/* must stay valid until send_done */
	uint32_t payload_len;	/* bytes */
};

struct xport_write_wr {
	uint64_t wr_id;
	const void *laddr;	/* local source, inside the lkey's region */
	uint32_t lkey;
	uint32_t len;		/* bytes, <= SL_WIRE_PAYLOAD_MAX; 0 allowed */
	uint64_t raddr;		/* remote destination, the peer's RTR value */
	uint32_t rkey;
	bool has_imm;
	uint32_t imm;
};

/* Fault injection (tcp only; all zero / CONFIG_FAULT_OFF = off). */
struct xport_faults {
	uint32_t post_enomem_every;	/* every Nth post per conn fails -ENOMEM */
	uint64_t reg_fail_after;	/* reg_mr calls after the first N fail */
	uint32_t delay_completions_us;	/* send completions this much later */
	/* Frames received are counted over every connection of the
	 * transport; the connection that receives the counted frame breaks
	 * as if the network failed (the frame is not delivered). */
	uint64_t cut_after_frames;	/* 0 off; the Nth frame, once */
	uint32_t cut_every_frames;	/* 0 off; every Nth frame */
	/* A buggy peer, on the sending side: every RDMA write posted goes
	 * this many bytes from its raddr (0 off). */
	int32_t write_shift_bytes;
	/* A write after the rendezvous ended: each write with an immediate
	 * is followed by up to XPORT_REPLAY_MAX bytes of 0xee to the same
	 * (rkey, raddr), without one. */
	bool write_replay;
};

#define XPORT_REPLAY_MAX 4096	/* bytes of a write_replay fault's write */

struct xport_params {
	uint32_t sq_depth;		/* WRs per connection SQ */
	uint32_t max_mr;		/* live registrations */
	uint32_t socket_buffer;		/* tcp: SO_SNDBUF/SO_RCVBUF bytes, 0 = kernel's */
	/* verbs: bytes of the largest frame the link layer sends, header
	 * included (eager_max + SL_WIRE_HDR_MAX): the size of each posted
	 * receive buffer, and the largest post_send() frame. */
	uint32_t max_frame;
	/* verbs: receive buffers per connection (eager_credits plus room for
	 * ACK and control frames; see main.c).  Correctness does not depend
	 * on it: with none posted the sender's QP backs off (RNR) and retries
	 * without limit, so it only sizes the steady state. */
	uint32_t recv_depth;
	/* verbs: device name, NULL or "" = the first with an active port. */
	const char *device;
	/* tcp: connections may switch to TLS (start_tls; [security] mode
	 * encrypt): until one does, its reads stop at each AUTH frame's end,
	 * so that no TLS byte is read as a frame. */
	bool tls;
	struct xport_faults faults;	/* tcp only */
};

/* Counters of a transport, for stats. */
struct xport_stats {
	uint64_t mrs;			/* live registrations now */
	uint64_t reg_fails;		/* reg_mr calls that failed */
	uint64_t post_enomem;		/* posts refused with -ENOMEM (SQ full) */
	uint64_t faults_injected;	/* of those and reg_fails, injected */
	uint64_t writes_rx;		/* RDMA writes placed */
	uint64_t access_errors;		/* writes refused: bad rkey or range */
	uint64_t grants;		/* live grants now, every connection */
	uint64_t grant_fails;		/* grant() calls that failed */
	uint64_t grant_mw_binds;	/* grants made as memory windows (verbs) */
	/* Writes refused by the grant check (tcp), by reason: the sum of
	 * the four (grant.h, enum grant_verdict). */
	uint64_t grant_violations;
	uint64_t grant_below, grant_above, grant_revoked, grant_unknown;
	uint64_t cuts;			/* connections broken by [fault] cut_* */
	/* [security] mode encrypt (tcp, xport/tls.h): TLS handshakes done,
	 * of them with records sealed / opened by the kernel (kTLS), and
	 * TLS failures (each broke its connection), the sum of the four
	 * reasons. */
	uint64_t tls_sessions, tls_ktls_tx, tls_ktls_rx;
	uint64_t tls_failures;
	uint64_t tls_failures_handshake, tls_failures_record;
	uint64_t tls_failures_protocol, tls_failures_internal;
};

/* xport_ops.tls_state() bits. */
#define XPORT_TLS_UP 1u		/* the TLS handshake is done */
#define XPORT_TLS_KTLS_TX 2u	/* records are sealed by the kernel */
#define XPORT_TLS_KTLS_RX 4u	/* records are opened by the kernel */

struct xport_ops {
	const char *name;
	/* A short extra connection to a peer (the link's nudge of a starting
	 * node, link.c) is cheap and harmless: tcp.  Not on verbs: each is a
	 * QP and a CM exchange, and on Soft-RoCE the nudge left the device
	 * answering no connection request after a later port flap (rxe-suite's
	 * flap test failed 4 runs of 14 with it, 0 of 8 without). */
	bool short_connections;
	/* Listen on host:port.  Returns 0 or -errno. */
	int (*listen)(struct xport *x, const char *host, uint16_t port);
	/* Start a connect; completion through upcalls->connected.
	 * Returns 0 or -errno (then no upcall follows). */
	int (*connect)(struct xport *x, const char *host, uint16_t port, void *ctx,
		       struct xport_conn **c_p);
	/* Queue a frame.  Returns 0, -ENOMEM when the SQ is full, -EINVAL
	 * for a bad wr, -ENOTCONN when the conn is broken. */
	int (*post_send)(struct xport_conn *c, const struct xport_send_wr *wr);
	/* Write what was posted, without blocking.  Completions follow. */
	void (*flush)(struct xport_conn *c);
	/* Optional (NULL: everything arrives through the loop's fds): reap
	 * completions now, without waiting for their event; the progress
	 * engine calls it on every pass while it spins.  Returns the
	 * completions handled (its work). */
	unsigned (*poll)(struct xport *x);
	/* Queue an RDMA write.  Returns 0, -ENOMEM when the SQ is full,
	 * -EINVAL for a bad wr (len too large, laddr..len outside the lkey's
	 * region), -ENOTCONN when the conn is broken. */
	int (*post_write)(struct xport_conn *c, const struct xport_write_wr *wr);
	/* Free slots in the SQ, and posted WRs not yet completed. */
	uint32_t (*sq_space)(const struct xport_conn *c);
	uint32_t (*sq_outstanding)(const struct xport_conn *c);
	/* Payload bytes of the posted WRs not yet completed (send payloads
	 * and RDMA write lengths; headers are not counted): what a frame
	 * posted now waits behind, since the SQ is executed in order.  The
	 * link bounds it for data (link.c, LINK_TX_BUDGET). */
	uint64_t (*sq_bytes)(const struct xport_conn *c);
	/* Register [addr, addr + len) for local and remote-write access.
	 * Returns 0 with *handle, *lkey, *rkey set; -ENOMEM when the MR
	 * table (max_mr) or the device is out of room, -EINVAL (len 0). */
	int (*reg_mr)(struct xport *x, void *addr, uint64_t len, uint64_t *handle,
		      uint32_t *lkey, uint32_t *rkey);
	/* Deregister; the keys are dead at once.  Never fails.  Grants in
	 * it must have been revoked first. */
	void (*dereg_mr)(struct xport *x, uint64_t handle);
	/*
	 * Let the peer on @c write exactly [addr, addr + len) of registration
	 * @mr_handle (reg_mr's handle; the range inside it), until revoke():
	 * for one rendezvous, whose RTR carries *rkey.  Writes are accepted
	 * on @c only; the grant dies with @c.  On verbs the range becomes
	 * writable once the WRs posted on @c before this call are executed
	 * (a memory-window bind WR ahead of the RTR: RC order), or at once
	 * (the fallback, a registration of the exact range).  Returns 0;
	 * -ENOMEM when the connection's grants are all taken (tcp:
	 * GRANT_TABLE_MAX), the SQ is full or the device is out of room (try
	 * again after a revoke or a completion); -EINVAL for a range outside
	 * the registration or len 0; -ENOTCONN when @c is broken.
	 */
	int (*grant)(struct xport_conn *c, uint64_t mr_handle, uint64_t addr, uint64_t len,
		     uint32_t *rkey);
	/* End grant @rkey of @c: no write with it is placed after this
	 * returns (tcp: checked at each write's header and again before each
	 * read of its payload; verbs: the window is invalidated or its
	 * registration dropped).  Never fails; an unknown key is ignored. */
	void (*revoke)(struct xport_conn *c, uint32_t rkey);
	void (*get_stats)(const struct xport *x, struct xport_stats *st);
	/* Attach the link; an accepted conn must get one within
	 * XPORT_HELLO_TIMEOUT or it is closed. */
	void (*set_ctx)(struct xport_conn *c, void *ctx);
	/* Largest payload the conn accepts, bytes; larger frames break it
	 * before anything is buffered.  0 (HELLO only) until set. */
	void (*set_rx_limit)(struct xport_conn *c, uint32_t bytes);
	/* Break the connection now; posted frames complete with an error,
	 * then closed() is called.  @err < 0 is abortive (tcp: RST, unsent
	 * bytes dropped, as a QP in error); 0 is the orderly close of a
	 * stopping daemon, whose frames already completed must arrive. */
	void (*close)(struct xport_conn *c, int err);
	/* Peer address as text, for logs. */
	const char *(*peer_name)(const struct xport_conn *c);
	/* Optional (NULL: the transport cannot tell; then only whole frames
	 * and immediates count): ev_now() of the last read that brought the
	 * connection any byte (part of a frame, part of an RDMA write's
	 * payload), 0 before the first.  The link counts it as hearing the
	 * peer, so a frame or write that takes longer than the silence limit
	 * to cross does not make a talking peer look silent. */
	ev_tstamp (*last_rx)(const struct xport_conn *c);
	/* Optional (NULL: the transport does not tell): bytes of memory this
	 * transport allocated for @c and holds now, as allocated: *tx_bytes
	 * for sending (tcp: the WR ring; verbs: the WR slots and the
	 * registered staging ring), *rx_bytes for receiving (tcp: the frame
	 * buffer, grown to the largest frame seen; verbs: the connection's
	 * own receive buffers, 0 with a shared receive queue).  Kernel
	 * socket buffers and device memory are not counted.  For sluicectl
	 * memory (admin.c). */
	void (*buffer_bytes)(const struct xport_conn *c, uint64_t *tx_bytes, uint64_t *rx_bytes);
	/*
	 * Optional (NULL: the transport cannot encrypt; verbs): from now on
	 * @c is TLS 1.3 keyed with @psk (PEER_TLS_PSK_LEN bytes; the server
	 * side when @server): the frames posted after this call are sent in
	 * TLS records, those posted before in plaintext; and the bytes
	 * received after the frame whose recv() upcall is running are TLS
	 * records (call it from that upcall; a stream that already carries
	 * more than that frame breaks).  Needs params.tls.  Returns 0, or
	 * -EOPNOTSUPP (no params.tls), -ENOMEM, -ENOTCONN.
	 */
	int (*start_tls)(struct xport_conn *c, bool server, const uint8_t *psk);
	/* Optional: XPORT_TLS_* bits of @c, 0 while it is plaintext. */
	unsigned (*tls_state)(const struct xport_conn *c);
	void (*destroy)(struct xport *x);
};

struct xport {
	const struct xport_ops *ops;
	struct ev_loop *loop;
	const struct xport_upcalls *up;
	void *ctx;		/* the daemon */
	struct xport_params params;
};

/*
 * xport_tcp_create - the tcp transport: verbs semantics over TCP sockets.
 * Returns a transport or NULL (errno set).
 */
struct xport *xport_tcp_create(struct ev_loop *loop, const struct xport_upcalls *up,
			       void *ctx, const struct xport_params *params);

/*
 * xport_verbs_create - the verbs transport: RC QPs on an RDMA device
 * (params->device, or the first with an active port), connected with
 * librdmacm.  Returns a transport or NULL (errno set: ENODEV when there is
 * no such device or no active port, else the failing call's).
 */
struct xport *xport_verbs_create(struct ev_loop *loop, const struct xport_upcalls *up,
				 void *ctx, const struct xport_params *params);

/*
 * xport_verbs_probe - is there an RDMA device with an active port (named
 * @device unless NULL or "")?  Returns 0 with its name in @name (at most
 * @namelen bytes), or -ENODEV.  For [transport] kind = auto.
 */
int xport_verbs_probe(const char *device, char *name, size_t namelen);

/*
 * xport_verbs_list_devices - print every RDMA device to @out: its ports,
 * their state, link layer and GIDs (sluiced --list-devices).  Returns the
 * number of devices, or -errno when the list cannot be read.
 */
int xport_verbs_list_devices(FILE *out);

#endif
