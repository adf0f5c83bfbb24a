/*
 * sluice.h - public API of libsluice, the client library of the sluice
 * node communication service.
 *
 * Model.  One daemon per node (sluiced) owns the network.  A process opens a
 * context (one UNIX-socket connection to the daemon) and, per thread, one or
 * more queues.  A queue is bound to a port; (node, port) is an endpoint
 * address, like a reliable-datagram socket (RDS).  A queue is a submission
 * ring (SQ), a completion ring (CQ) and a data arena, all in one shared
 * memory segment created by the daemon (io_uring's SQ/CQ pair).  Posting a
 * send or a receive writes one descriptor into the SQ; the daemon drains it,
 * and later writes exactly one completion (CQE) for it into the CQ.
 *
 * Messages are tagged and matched at the receiving endpoint on (source,
 * tag & mask) with MPI's rules: receives are matched in the order they were
 * posted, and messages from one source are matched in the order they were
 * sent (non-overtaking).
 *
 * Back-pressure.  A post returns -EAGAIN when the SQ is full (no system call
 * is made on that path).  A descriptor the daemon accepted but could not
 * carry out completes with a NAK status (SL_NAK_*): the buffer was left
 * untouched and the post may be retried.  Nothing is dropped silently
 * while the daemons run; SL_OK on a send is the destination daemon's word
 * (see sl_send()).
 * A NAKed message was not delivered, but sends posted after it may have
 * been: a retry arrives after them.  Senders that need order across NAKs
 * keep one send per destination in flight, or number their messages (as
 * tools/sluice-copy does).
 *
 * Errors.  Functions return 0 or a count on success and a negative errno on
 * failure.  Completion statuses (enum sl_status) are a separate, positive
 * space carried in struct sl_cqe.
 *
 * Thread-safety.  A context may be shared by threads for sl_queue_open()
 * and sl_queue_close() (they serialise on an internal lock).  A queue and
 * everything done with it (post, poll, wait, alloc, free) belongs to one
 * thread at a time: the rings are single-producer single-consumer.  Open
 * one queue per thread; queues are cheap.
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Version                                                              */
/* ------------------------------------------------------------------ */

/*
 * The version of sluice this header belongs to, as MAJOR.MINOR.PATCH: the
 * package's version (configure.ac's AC_INIT, and `pkg-config --modversion
 * sluice`).  The build fails when they disagree (libclient/Makefile.am.inc).
 * A program that needs a function added in a later version tests these at
 * compile time.
 */
#define SLUICE_VERSION_MAJOR 0
#define SLUICE_VERSION_MINOR 1
#define SLUICE_VERSION_PATCH 0

/* ------------------------------------------------------------------ */
/* Addresses                                                            */
/* ------------------------------------------------------------------ */

/*
 * An endpoint address.  node is a 32-bit node id: sl_node_id() of the node's
 * configured name, or SL_NODE_LOCAL for the node the caller runs on.  port
 * is the port a queue bound with sl_queue_open().
 */
typedef struct sl_addr {
	uint32_t node;
	uint32_t port;
} sl_addr_t;

/* "This node" in a destination or a receive's source filter; completions
 * always carry the real id. */
#define SL_NODE_LOCAL 0u
/* Wildcards, valid only in sl_recv()'s source filter. */
#define SL_NODE_ANY   0xffffffffu
#define SL_PORT_ANY   0xffffffffu
/* Matches a message from any endpoint. */
#define SL_ANY_SOURCE ((sl_addr_t){ SL_NODE_ANY, SL_PORT_ANY })

/* Ports below this need root (CAP_NET_BIND_SERVICE), as with IP ports. */
#define SL_PORT_PRIVILEGED 1024u
/* sl_queue_open() with port 0 binds a free port in this range. */
#define SL_PORT_EPHEMERAL_MIN 49152u
#define SL_PORT_EPHEMERAL_MAX 65535u

/*
 * sl_node_id - the node id of a node name.
 * @name: NUL-terminated node name as in the daemons' configuration.
 *
 * Pure function (32-bit FNV-1a, folded away from SL_NODE_LOCAL and
 * SL_NODE_ANY); every daemon and client computes the same id.  Returns the
 * id; a NULL name returns SL_NODE_LOCAL.  Thread-safe.
 */
uint32_t sl_node_id(const char *name);

/* ------------------------------------------------------------------ */
/* Completions                                                          */
/* ------------------------------------------------------------------ */

/*
 * Completion status, one per descriptor.  A status never describes more
 * than its own descriptor: one failure never fails its neighbours.
 */
enum sl_status {
	SL_OK = 0,
	/* Back-pressure: buffer untouched, the post may be retried. */
	SL_NAK_BUSY = 1,          /* a daemon or link resource is exhausted */
	SL_NAK_RECEIVER_FULL = 2, /* receiver's unexpected messages over a bound */
	/* Definite errors. */
	SL_ERR_NO_ENDPOINT = 16,  /* nothing bound at the destination address */
	SL_ERR_TRUNCATED = 17,    /* receive buffer too small; len = full length */
	SL_ERR_PEER_DOWN = 18,    /* link to the node down past peer_timeout_ms */
	SL_ERR_PEER_RESTARTED = 19, /* peer daemon came back as a new incarnation */
	SL_ERR_CANCELED = 20,     /* daemon stopping (a closed queue gets none),
				   * or a receive ended by sl_cancel() */
	SL_ERR_INVALID = 21,      /* bad descriptor: opcode, length, buffer */
	SL_ERR_ACCESS = 22,       /* bad key on a one-sided operation */
	SL_ERR_REG_LIMIT = 23,    /* a rendezvous between nodes would register more
				   * than a daemon's [rcache] max_bytes */
	SL_ERR_UNKNOWN_NODE = 24, /* the node is not in the daemon's configuration */
	SL_ERR_STALLED = 25,      /* the daemon could not copy from or into this
				   * queue's arena in time, again and again (its
				   * pages were removed under the copy): the queue
				   * has failed, every descriptor on it ends so */
	SL_ERR_NO_MESSAGE = 26,   /* sl_probe(): no unexpected message matched */
	SL_ERR_NOT_FOUND = 27,    /* sl_cancel(): no posted, unmatched receive
				   * with that user_ctx; sl_recv_claimed(): no
				   * message claimed on this queue by that id */
};

/* Largest message, bytes. */
#define SL_MSG_MAX (1ull << 30)

/* Completion opcodes (sl_cqe.opcode): what the descriptor was. */
enum sl_opcode {
	SL_OP_SEND = 1,
	SL_OP_RECV = 2,		/* sl_recv() and sl_recv_claimed() */
	SL_OP_PROBE = 3,	/* sl_probe() */
	SL_OP_CANCEL = 4,	/* sl_cancel() */
};

/*
 * One completion.  This is also the shared-memory CQ entry layout (ABI):
 * 64 bytes, fields at fixed offsets, never reordered.
 *
 * @user_ctx: the value given to the post, returned unchanged.
 * @len:      bytes.  For a receive: the full length the sender sent, also
 *            when the receive was truncated (then min(len, capacity) bytes
 *            were written).  For a send: the length sent.
 * @tag:      for a receive, the tag the message carried; for a send, the
 *            tag sent.
 * @peer:     for a receive, the sender's address; for a send, the
 *            destination (SL_NODE_LOCAL resolved to the real node id).
 * @status:   enum sl_status.
 * @opcode:   enum sl_opcode.
 * @sender_uid: for a receive that got a message (SL_OK, SL_ERR_TRUNCATED),
 *            the uid of the process that opened the sending queue, as
 *            the sending node's daemon learnt it from the kernel
 *            (SO_PEERCRED): a server may authorize a request by it.
 *            From another node only when the daemons link with the
 *            cluster key ([security] mode authenticate): the peer daemon
 *            proved it holds the key, so it is trusted to say which of
 *            its users sent (and so is every holder of the key, root of
 *            every node included).  Without a key (mode none) a message
 *            from another node reads SL_UID_UNKNOWN: anything that
 *            reaches the listen port from the peer's address could claim
 *            any uid.  The uid is the sending node's, not mapped:
 *            peer.node says which node that is, and where the nodes'
 *            user databases differ a server must map (peer.node,
 *            sender_uid) itself, as an NFS server does with AUTH_SYS and
 *            no idmap.  SL_UID_UNKNOWN also for a send, and for every
 *            other status.  A probe that found a message (SL_OK) names
 *            its sender's uid the same way.
 * @claim:    for a probe with SL_PROBE_CLAIM that completed SL_OK, the
 *            nonzero id sl_recv_claimed() takes; 0 in every other
 *            completion.
 */
#define SL_UID_UNKNOWN 0xffffffffu
struct sl_cqe {
	uint64_t user_ctx;
	uint64_t len;
	uint64_t tag;
	sl_addr_t peer;
	int32_t status;
	uint8_t opcode;
	uint8_t flags;     /* reserved, 0 */
	uint16_t rsvd0;
	uint32_t sender_uid;
	uint32_t rsvd1;
	uint64_t claim;
	uint64_t rsvd;
};

/*
 * sl_strerror - a short English name for a completion status.
 * Returns a static string; unknown values give "unknown status".
 * Thread-safe.
 */
const char *sl_strerror(int status);

/* ------------------------------------------------------------------ */
/* Context and queues                                                   */
/* ------------------------------------------------------------------ */

struct sl_ctx;
struct sl_queue;

/* Default control socket, under the daemon's default runtime directory. */
#define SL_DEFAULT_SOCKET "/run/sluice/sluiced.sock"

/*
 * sl_open - connect to the local daemon.
 * @path:  path of the daemon's control socket, or NULL for $SLUICE_SOCKET
 *         if set, else SL_DEFAULT_SOCKET.
 * @ctx_p: on success, the new context.
 *
 * Waits at most $SLUICE_OPEN_TIMEOUT_MS milliseconds (0: no bound;
 * default SL_OPEN_TIMEOUT_MS) for the daemon to accept and answer.
 *
 * Returns 0, or -ENOENT / -ECONNREFUSED (no daemon there), -EACCES (not
 * allowed to connect), -EPROTO (daemon speaks another ABI version),
 * -ENFILE (the daemon is out of file descriptors: it refused this
 * connection at once; try again later), -EDQUOT (this user holds its
 * quota of contexts: [limits] uid_max_contexts), -ETIMEDOUT (no answer within the
 * timeout: the daemon is stopped or stuck), -ENAMETOOLONG (path too long
 * for a UNIX socket), -EMFILE (this process has no free descriptor),
 * -ENOMEM.
 * Thread-safe; each call makes an independent context.
 */
#define SL_OPEN_TIMEOUT_MS 10000
int sl_open(const char *path, struct sl_ctx **ctx_p);

/*
 * sl_close - close a context and every queue still open on it.
 * Outstanding descriptors of those queues are discarded by the daemon.
 * Accepts NULL.  Not thread-safe against other calls on the same context.
 */
void sl_close(struct sl_ctx *ctx);

/*
 * sl_local_node - the node id of the daemon this context is connected to.
 */
uint32_t sl_local_node(const struct sl_ctx *ctx);

/*
 * sl_node_resolve - the node id of node @name, which the daemon then
 * knows as a peer, even when its configuration does not list it.
 * @ctx:  an open context.
 * @name: NUL-terminated node name, 1..63 characters from A-Z a-z 0-9 . _ -
 *        (the daemons' rule for node names).
 * @node: on success, sl_node_id(@name).
 *
 * The local node's name and every peer of [peers] and [daemon] peers_file
 * (and any node resolved before) answer at once.  For any other name the
 * daemon asks the system resolver (getaddrinfo(3): /etc/hosts, DNS, ...)
 * for @name as a host, without holding up its other work, and on success
 * adds a peer @name at the address found and the port [transport]
 * default_port (listen's port when that is not set), as a peers_file line
 * "@name" without a port would: sends to @node may follow at once (the
 * link connects on first use).  The peer stays until the daemon stops,
 * or until a reload lists @name (then it is a configured peer, at the
 * file's address) or another name with the same node id (then that one
 * replaces it); see sluiced.conf(5), [limits] max_resolved_peers.  The
 * other node must know this one to let its link up (its own [peers],
 * peers_file, or an sl_node_resolve() of its own).
 *
 * Blocks the calling thread until the daemon answers: at most about
 * SL_NODE_RESOLVE_TIMEOUT_MS milliseconds for a name it resolves.
 * Returns 0, or
 *   -EINVAL     @name is not a node name (or @ctx, @name, @node NULL);
 *   -ENOENT     the resolver knows no address for @name;
 *   -ETIMEDOUT  the resolver gave no answer within
 *               SL_NODE_RESOLVE_TIMEOUT_MS;
 *   -EAGAIN     SL_NODE_RESOLVE_MAX_INFLIGHT resolutions (of all clients)
 *               are under way at the daemon: try again later;
 *   -ENOSPC     the daemon holds [limits] max_resolved_peers resolved
 *               peers (those under way included);
 *   -EEXIST     another node already known (or this one) has the node id
 *               of @name: two names with one hash cannot both be nodes;
 *   -EOPNOTSUPP the daemon has no [transport] listen, so no peers at all;
 *   -ESHUTDOWN  the daemon is stopping;
 *   -ENOMEM, -EIO (the resolver failed otherwise), -EPROTO (malformed
 *   reply), -ECONNRESET (the daemon went away).
 * A daemon older than this library does not know the request and closes
 * the context (-EPROTO or -ECONNRESET; the context is unusable after).
 * Thread-safe: calls on one @ctx serialise with each other and with
 * sl_queue_open() and sl_queue_close() (the context's lock, held while
 * the daemon resolves), so a thread that must not wait resolves on a
 * context of its own.
 */
#define SL_NODE_RESOLVE_TIMEOUT_MS 5000
#define SL_NODE_RESOLVE_MAX_INFLIGHT 16
int sl_node_resolve(struct sl_ctx *ctx, const char *name, uint32_t *node);

/*
 * sl_queue_open - open a queue bound to a port.
 * @ctx:   an open context.
 * @port:  1..65535, or 0 for a free ephemeral port.  Ports below
 *         SL_PORT_PRIVILEGED need root.
 * @depth: SQ entries wanted, 1..4096; rounded up to a power of two.  The CQ
 *         has twice as many entries, and at most that many descriptors can
 *         be in flight (posted and not yet polled): the daemon accepts a
 *         descriptor only when it holds a CQ slot for its completion.
 * @q_p:   on success, the new queue.
 *
 * The queue's arena size is set by the daemon ([limits] arena_bytes).
 * A queue holds two file descriptors of the calling process (its
 * doorbells; sl_fd() is one) until sl_queue_close(), and needs a third
 * while it opens: a process with many queues raises its own
 * RLIMIT_NOFILE (setrlimit(2), ulimit -n) to twice their number and more.
 *
 * Returns 0, or -EINVAL (port or depth out of range), -EADDRINUSE (port
 * bound), -EACCES (privileged port, or one the daemon's [ports] reserves
 * for another user or group), -EADDRNOTAVAIL (no free ephemeral
 * port).  The limits, each with an error of its own:
 *   -ENOSPC   the daemon holds its [limits] max_queues queues, of all
 *             clients together;
 *   -EDQUOT   this context, or all the contexts of this user together,
 *             hold their quota of queues or arena bytes: [limits]
 *             client_max_queues, client_max_arena_bytes, uid_max_queues,
 *             uid_max_arena_bytes;
 *   -ENFILE   the daemon is out of file descriptors (its RLIMIT_NOFILE,
 *             systemd's LimitNOFILE=, or the system's file table); it
 *             logs the limit and the fix;
 *   -EMFILE   this process is out of file descriptors (its own
 *             RLIMIT_NOFILE): the queue's descriptors could not all be
 *             received; none is kept, and the daemon's half is undone.
 * Or -ESHUTDOWN (the daemon is stopping: see sluiced(8), SIGTERM),
 * -ENOMEM, -EPROTO (malformed reply), -ECONNRESET (daemon went away).
 * Thread-safe with respect to other queue opens/closes on @ctx.
 */
int sl_queue_open(struct sl_ctx *ctx, uint32_t port, uint32_t depth,
		  struct sl_queue **q_p);

/*
 * sl_queue_close - unbind the port and free the queue.
 * Descriptors still in flight are cancelled by the daemon and complete
 * nowhere: the completion ring goes with the queue, so none is ever read
 * for them (what their peers see: sl_send, sl_recv).  Their buffers must
 * not be used afterwards (the arena is unmapped).  Accepts NULL.
 * Returns 0 or -ECONNRESET if the daemon had already gone (the queue is
 * freed in both cases).
 */
int sl_queue_close(struct sl_queue *q);

/*
 * sl_queue_addr - the queue's own address (real node id, bound port).
 */
sl_addr_t sl_queue_addr(const struct sl_queue *q);

/* ------------------------------------------------------------------ */
/* Arena                                                                */
/* ------------------------------------------------------------------ */

/*
 * sl_alloc - allocate @len bytes in the queue's shared arena.
 * Buffers passed to sl_send() and sl_recv() must lie in the arena of the
 * queue they are posted on; the daemon reads and writes them there without
 * a further copy.  Alignment is 64 bytes.  @len 0 returns a valid minimal
 * buffer.  Returns NULL (errno ENOMEM) when the arena has no room.
 * Owner thread of @q only.
 */
void *sl_alloc(struct sl_queue *q, size_t len);

/*
 * sl_free - return a buffer from sl_alloc().  NULL is ignored.  The buffer
 * must not be in use by a descriptor still in flight.
 */
void sl_free(struct sl_queue *q, void *buf);

/*
 * sl_arena_size - bytes of the queue's arena.
 */
size_t sl_arena_size(const struct sl_queue *q);

/* ------------------------------------------------------------------ */
/* Posting                                                              */
/* ------------------------------------------------------------------ */

/*
 * sl_send - post a tagged send.
 * @q:        the queue.
 * @dst:      destination address; node SL_NODE_LOCAL means this node.
 * @tag:      64-bit tag matched by the receiver.
 * @buf:      payload in @q's arena (may be NULL when @len is 0).  It must
 *            stay unchanged until the send completes.
 * @len:      bytes, at most SL_MSG_MAX.
 * @user_ctx: returned in the completion.
 *
 * Messages up to the daemons' eager_max are copied out at once (eager).
 * Larger ones go by rendezvous (the RTS/RTR/RDMA-write protocol of MPI
 * over verbs): the destination daemon holds only the message's header
 * until a receive matches, and the data then moves once, from this
 * buffer straight into the receive buffer.  Within a node that is one
 * copy; between nodes it is an RDMA write (or its tcp emulation).
 *
 * The send completes SL_OK when the destination daemon has accepted the
 * message (eager: delivered it or queued it as unexpected; rendezvous:
 * written it into the matched receive's buffer), SL_ERR_NO_ENDPOINT
 * when nothing is bound at @dst (or the endpoint went away before the
 * message was in a receive's buffer: a rendezvous whose receiver dies
 * after the match ends with it too), SL_ERR_INVALID for a bad descriptor (over SL_MSG_MAX,
 * for instance), SL_ERR_REG_LIMIT when a rendezvous between nodes would
 * register more than the sender's or the receiver's daemon allows at once
 * ([rcache] max_bytes: the chunks the written part of @buf, or of the
 * receive buffer, touches; never for eager messages or within a node),
 * SL_ERR_ACCESS when the sending daemon wrote a rendezvous outside the
 * range the receiver's daemon granted for it (sluice(7), Rendezvous
 * grants; the receive completes SL_ERR_ACCESS too), or
 * with a NAK: SL_NAK_BUSY when a registration, a buffer or a link queue
 * could not be had within the daemon's limits ([rcache] max_waiters and
 * max_wait_ms, [limits] link_backlog_max), SL_NAK_RECEIVER_FULL when the
 * receiving endpoint holds [limits] unexpected_max_bytes of unexpected
 * messages, or its daemon unexpected_total_bytes over all its endpoints;
 * the buffer is then untouched and the send may be posted again.
 * SL_OK is the destination daemon's word: a message it queued as
 * unexpected is lost if that daemon dies or stops, or the endpoint
 * closes, before a receive takes it.
 *
 * A broken connection between the daemons fails nothing by itself: they
 * reconnect, send again what was not acknowledged, and deliver every
 * message once, in order (a rendezvous restarts).  Two failures do end
 * sends, each send on its own: SL_ERR_PEER_DOWN when the link to @dst's
 * node stays down for [transport] peer_timeout_ms (and at once for sends
 * posted while it stays down), SL_ERR_PEER_RESTARTED when @dst's daemon
 * comes back as a new incarnation (a restart) before confirming the
 * message.  For these two the outcome at @dst is not known: a message the
 * peer had taken just before, whose confirmation was lost with the link,
 * may have been delivered (for PEER_RESTARTED: to a receiver of the old
 * incarnation).  It is never delivered twice, and never to the new
 * incarnation.
 * Returns 0 when posted, -EAGAIN when the SQ is full (also when the
 * daemon has stopped taking this context's descriptors because
 * [limits] client_max_inflight of them are pending: reap completions and
 * retry; no system call made,
 * but for one poll(2) of the control socket per millisecond to notice a
 * daemon that has gone), -EINVAL when @buf..@buf+@len is not inside the
 * arena, -ENOTCONN when the daemon has gone (a descriptor posted just
 * before that was noticed never completes; sl_wait() reports -ECONNRESET).
 * Owner thread of @q only.
 */
int sl_send(struct sl_queue *q, sl_addr_t dst, uint64_t tag,
	    const void *buf, size_t len, uint64_t user_ctx);

/*
 * sl_recv - post a tagged receive.
 * @src:      sender filter; SL_ANY_SOURCE, or a node/port where either half
 *            may be SL_NODE_ANY / SL_PORT_ANY.
 * @tag, @tag_mask: a message with tag t matches when
 *            (t & tag_mask) == (tag & tag_mask); tag_mask 0 matches any.
 * @buf, @capacity: where the payload goes, in @q's arena (NULL if 0).
 *
 * Completes SL_OK, or SL_ERR_TRUNCATED when the message was longer than
 * @capacity (the first @capacity bytes are written and the CQE's len is the
 * full length), SL_ERR_REG_LIMIT when a rendezvous from another node
 * would write more of @buf than this daemon may register at once ([rcache]
 * max_bytes; @buf untouched, the sender gets it too), SL_ERR_ACCESS when
 * the sending daemon wrote outside the range granted for this receive
 * (@buf may hold part of the message; the sender gets it too; over verbs
 * the device refuses the write and the receive stays posted instead), or
 * SL_ERR_CANCELED
 * when the daemon stops.  A receive still posted when its queue is closed
 * never completes (sl_queue_close).  A receive
 * that met a large (rendezvous) message which then could not be moved
 * stays posted in its place, as if nothing had matched it, unless a
 * message it would also have taken has meanwhile met a receive posted
 * after it: then, so that one source's messages still meet the receives
 * in send order (MPI's non-overtaking rule), it completes with the
 * failure, its buffer untouched, and may be posted again: SL_NAK_BUSY (no
 * registration in time, at either end), SL_ERR_PEER_DOWN (the link stayed
 * down past peer_timeout_ms), SL_ERR_PEER_RESTARTED (the sender's daemon
 * restarted), SL_ERR_NO_ENDPOINT (the sender's queue closed),
 * SL_ERR_REG_LIMIT (the sender's daemon may not register that much).  peer, tag
 * and len then describe the message that failed.
 * A receive whose @src names a node (not SL_NODE_ANY) completes
 * SL_ERR_PEER_DOWN when the link to that node has been down for
 * [transport] peer_timeout_ms, and at once when posted while it stays
 * down and nothing from that node already waits for it; wildcard
 * receives stay posted.
 * Returns as sl_send().  Owner thread of @q only.
 */
int sl_recv(struct sl_queue *q, sl_addr_t src, uint64_t tag,
	    uint64_t tag_mask, void *buf, size_t capacity, uint64_t user_ctx);

/* sl_probe() flags. */
#define SL_PROBE_CLAIM   0x1u  /* set the message aside for sl_recv_claimed() */
#define SL_PROBE_DISCARD 0x2u  /* drop the first matching message, report it */

/*
 * sl_probe - look for a message that has arrived and no receive has taken.
 * @q:        the queue.
 * @src, @tag, @tag_mask: the filter, with sl_recv()'s rules (@src may hold
 *            SL_NODE_ANY / SL_PORT_ANY; tag_mask 0 matches any tag).
 * @flags:    0, SL_PROBE_CLAIM or SL_PROBE_DISCARD (not both).
 * @user_ctx: returned in the completion.
 *
 * Looks at @q's unexpected messages (the eager ones with their data, and
 * the rendezvous ones by their header alone: no data moves) in arrival
 * order and takes the first the filter accepts: the message a receive
 * posted now would get.  Messages from other nodes are probed at this
 * node's daemon like local ones: only those that have arrived count.
 * The probe completes once, opcode SL_OP_PROBE, with @user_ctx:
 *   SL_OK              peer, tag, len (the full length, in bytes) and
 *                      sender_uid (as for a receive) of that message;
 *   SL_ERR_NO_MESSAGE  none matched (peer, tag and len are the probe's
 *                      own filter, len 0);
 *   SL_NAK_BUSY        SL_PROBE_CLAIM and the daemon out of memory (the
 *                      message stays where it was);
 *   SL_ERR_INVALID     a bad descriptor (a raw client's);
 *   and the statuses every descriptor may get: SL_ERR_CANCELED while the
 *   daemon stops, SL_ERR_STALLED on a failed queue.
 * Without flags the message stays: a later receive or probe finds it.
 * SL_PROBE_CLAIM sets it aside: no receive or probe can match it any
 * more, and the completion's claim is a nonzero id, unique on @q, for
 * sl_recv_claimed().  A claimed message still counts against [limits]
 * unexpected_max_bytes until it is received; one whose queue closes is
 * freed (its rendezvous sender completes SL_ERR_NO_ENDPOINT, as for any
 * unexpected message dropped at a close).
 * SL_PROBE_DISCARD drops it, as if a receive of capacity 0 had taken it
 * and thrown it away: its sender completes as for a normal receive (a
 * rendezvous sender SL_OK, once its daemon has heard), and the probe
 * reports it (SL_OK) at once.
 * A probe does not wait: a message still on its way (another node's, or
 * a local send the daemon has not taken yet) is not seen; probe again to
 * wait for one, as with MPI_Iprobe.
 *
 * The idea is MPI_Iprobe and MPI_Improbe (the claim is MPI's message
 * handle) and libfabric's FI_PEEK, FI_PEEK | FI_CLAIM and
 * FI_PEEK | FI_DISCARD.
 * Returns 0 when posted, -EINVAL (@q NULL, unknown @flags, or
 * SL_PROBE_CLAIM with SL_PROBE_DISCARD), -EAGAIN, -ENOTCONN as
 * sl_send().  Owner thread of @q only.
 */
int sl_probe(struct sl_queue *q, sl_addr_t src, uint64_t tag, uint64_t tag_mask,
	     unsigned flags, uint64_t user_ctx);

/*
 * sl_recv_claimed - receive the message a probe claimed.
 * @claim:    the nonzero claim of an SL_OK completion of
 *            sl_probe(SL_PROBE_CLAIM) on @q; each claim is received once.
 * @buf, @capacity: where the payload goes, in @q's arena (NULL if 0).
 *
 * Takes exactly that message, as sl_recv() would have taken it, and
 * completes as a receive (opcode SL_OP_RECV) with @user_ctx: SL_OK,
 * SL_ERR_TRUNCATED (the first @capacity bytes written, len the full
 * length), or the failures of a rendezvous as for sl_recv()
 * (SL_NAK_BUSY, SL_ERR_PEER_DOWN, SL_ERR_PEER_RESTARTED,
 * SL_ERR_NO_ENDPOINT when the sender's queue or daemon went away,
 * SL_ERR_REG_LIMIT, SL_ERR_ACCESS), with peer, tag and len naming the
 * message; such a failure ends the claim (the message is gone; nothing
 * is posted in its place).  SL_ERR_NOT_FOUND when @claim names no
 * message claimed on @q (never claimed, or received already).
 * @capacity 0 with @buf NULL discards a claimed message: it completes
 * SL_ERR_TRUNCATED with the full len (SL_OK when len is 0), and its
 * sender completes as for a normal receive.
 * The receive waits nowhere: it is never among the posted receives, no
 * other message can match it, and sl_cancel() cannot cancel it.
 *
 * The idea is MPI_Mrecv and libfabric's FI_CLAIM (with FI_DISCARD for a
 * capacity of 0).
 * Returns 0 when posted, -EINVAL (@q NULL, @claim 0, @buf..@buf+@capacity
 * not inside the arena), -EAGAIN, -ENOTCONN as sl_send().  Owner thread
 * of @q only.
 */
int sl_recv_claimed(struct sl_queue *q, uint64_t claim, void *buf, size_t capacity,
		    uint64_t user_ctx);

/*
 * sl_cancel - cancel a posted receive that has not matched.
 * @user_ctx: the user_ctx of the receive to cancel; also the cancel's own.
 *
 * The oldest receive posted on @q with sl_recv() with that @user_ctx that
 * still waits among the posted receives (no message has matched it) is
 * taken out, and two completions follow, in this order: the receive's
 * (opcode SL_OP_RECV, SL_ERR_CANCELED, its buffer untouched, peer, tag
 * and len its own filter and capacity) and the cancel's (opcode
 * SL_OP_CANCEL, @user_ctx, SL_OK).  Otherwise only the cancel completes:
 *   SL_ERR_NOT_FOUND  no such receive waits: it has matched a message
 *                     already (its data may be moving; it completes as it
 *                     would have), it has completed, it was posted with
 *                     sl_recv_claimed(), or none has that user_ctx;
 *   SL_ERR_INVALID    @user_ctx names sends of @q in flight and no
 *                     receive: a send belongs to the daemons once posted
 *                     and cannot be cancelled (it completes as it would);
 *   and SL_ERR_CANCELED, SL_ERR_STALLED as every descriptor.
 * A receive and a cancel race with a message arriving: either the cancel
 * wins (SL_ERR_CANCELED, and the message waits for a later receive) or
 * the message does (the receive completes with it, the cancel
 * SL_ERR_NOT_FOUND); the message is never lost.  The daemon takes @q's
 * descriptors in order, so a receive posted before the cancel is always
 * seen by it.  Telling SL_ERR_INVALID from SL_ERR_NOT_FOUND walks what
 * the daemon holds for @q: use sl_cancel() for receives, not as a query.
 *
 * The idea is MPI_Cancel of a receive and libfabric's fi_cancel() (whose
 * cancelled operation completes with FI_ECANCELED).
 * Returns 0 when posted, -EINVAL (@q NULL), -EAGAIN, -ENOTCONN as
 * sl_send().  Owner thread of @q only.
 */
int sl_cancel(struct sl_queue *q, uint64_t user_ctx);

/* ------------------------------------------------------------------ */
/* Completions                                                          */
/* ------------------------------------------------------------------ */

/*
 * sl_poll - take up to @max completions, oldest first.
 * Returns the number copied into @cqes (0 if none, never blocks), or
 * -EPROTO if the CQ ring is corrupt.  Makes no system call, except one
 * eventfd write when the daemon had stopped taking descriptors because the
 * CQ was full and went to sleep.
 * Owner thread of @q only.
 */
int sl_poll(struct sl_queue *q, struct sl_cqe *cqes, unsigned max);

/*
 * sl_wait - wait until at least one completion is ready.
 * @timeout_ms: milliseconds; 0 checks once, -1 waits forever.
 *
 * Polls for a window (yielding the CPU between polls, so that the daemon
 * and the peer make progress on a loaded machine) before sleeping on the
 * queue's eventfd, following io_uring's need-wakeup protocol: the daemon
 * writes the eventfd only when this side announced it is going to sleep.
 * The window is learnt per queue from how long its recent waits took:
 * twice their running mean, 20 to 200 µs; a wait longer than 200 µs
 * halves it (an idle peer soon costs 20 µs of polling per wait).
 * $SLUICE_WAIT_SPIN_US (0..1000000, read once per process) fixes the
 * window instead; 0 sleeps at once.
 * Returns the number of completions ready (> 0), 0 on timeout, -EINTR when
 * a signal arrived, -ECONNRESET when the daemon went away (completions it
 * wrote before going, such as SL_ERR_CANCELED at shutdown, are returned
 * first).
 * Owner thread of @q only.
 */
int sl_wait(struct sl_queue *q, int timeout_ms);

/*
 * sl_fd - a file descriptor that becomes readable when completions arrive,
 * for applications with their own event loop.  Before polling it, call
 * sl_arm(); after it fires, call sl_poll() until it returns 0.
 * The fd belongs to the queue: do not close it.
 */
int sl_fd(const struct sl_queue *q);

/*
 * sl_arm - ask the daemon to signal sl_fd() on the next completion.
 * Returns 0 when armed, or the number of completions already ready (> 0),
 * in which case the caller should poll instead of sleeping.
 * Owner thread of @q only.
 */
int sl_arm(struct sl_queue *q);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_H */
