/*
 * sl_wire.h - the frame format between two sluiced over a link.
 *
 * Every frame is a fixed common header, a type-specific header, then
 * payload_len bytes of payload.  All integers are little-endian on the wire,
 * whatever the host.  Frames are decoded into struct sl_wire_frame, which
 * is host-order and never aliases the buffer; the decoder validates every
 * field before anything else looks at it, and never reads past the bytes it
 * was given (libfabric's xnet_proto.h and rsocket's rs_conn_data are the
 * models).
 *
 * Common header (32 bytes):
 *   0  u8  version       SL_WIRE_VERSION
 *   1  u8  type          enum sl_wire_type
 *   2  u16 flags         0 in versions 2 and 3, but for SL_WIRE_ACK_PING
 *                        on an ACK
 *   4  u32 hdr_len       common + type header, bytes; exact per type
 *   8  u32 payload_len   bytes after the header
 *  12  u32 rsvd          0
 *  16  u64 seq           sequenced frames (EAGER, RTS, NAK, RTR, FIN,
 *                        DONE): per-link, per-direction sequence number,
 *                        from 1, continuing across reconnects of the same
 *                        pair of incarnations; AUTH, HELLO, ACK, WRITE,
 *                        BYE: 0
 *  24  u64 ack           cumulative: every sequenced frame with seq <= ack
 *                        has been processed by the sender of this frame
 *
 * Sequence numbers and cumulative acks give exactly-once delivery across a
 * reconnect: each side keeps what it sent until an ack covers it, the
 * HELLO says how far the other's stream arrived, and the rest is sent
 * again, numbered on from there (RDS's and TCP's model, over connections
 * that may break).
 */
#ifndef SL_WIRE_H
#define SL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Version 2: HELLO, EAGER, ACK, NAK, RTS, RTR, FIN, WRITE, DONE as below;
 * control frames are sequenced (version 1 sent them unsequenced, and lost
 * them with their connection), and the HELLO names the incarnation its
 * last_rx_seq counts from.  BYE came later in version 2 (before any
 * release): a daemon that does not know it breaks the connection, which
 * is ending anyway. */
/* Version 3: a connection starts with the AUTH handshake (below), and
 * its HELLOs follow only once both sides have proven themselves; the
 * frames of version 2 are unchanged but for EAGER's and RTS's rsvd field,
 * which carries the sender's uid now.  A daemon refuses a connection of
 * any other version at its first byte.  Before any release of version 3,
 * AUTH steps 1 and 2 came to carry the sender's name (a payload), and a
 * BYE with a reason other than 0 came to refuse a handshake and say why
 * (docs/diagnosing-links.md). */
#define SL_WIRE_VERSION 3u

#define SL_WIRE_COMMON_LEN 32u
/* Largest header of any type; a receive buffer needs at least this. */
#define SL_WIRE_HDR_MAX 128u
/* Largest payload of any frame, bytes. */
#define SL_WIRE_PAYLOAD_MAX (16u << 20)
/* Largest credit window a HELLO may grant, frames. */
#define SL_WIRE_CREDITS_MAX 65536u
/* Largest rendezvous message, bytes (SL_MSG_MAX in sluice.h). */
#define SL_WIRE_RNDV_MAX (1ull << 30)

enum sl_wire_type {
	SL_WIRE_HELLO = 1,
	SL_WIRE_EAGER = 2,
	SL_WIRE_ACK = 3,
	SL_WIRE_NAK = 4,
	SL_WIRE_RTS = 5,
	SL_WIRE_RTR = 6,
	SL_WIRE_FIN = 7,
	SL_WIRE_WRITE = 8,
	SL_WIRE_DONE = 9,
	SL_WIRE_BYE = 10,
	SL_WIRE_AUTH = 11,
	SL_WIRE_TYPE_MAX = SL_WIRE_AUTH,
};

/*
 * AUTH (type header 96 bytes, no payload, unsequenced; version 3): the
 * mutual challenge-response that opens every connection (peer_auth.h has
 * the proof's construction).  Three steps, dialer (D) and accepter (A):
 *   1 D->A  D's node, incarnation, fresh nonce_D, the ids of the keys D
 *           holds (key_id: the key it proves with, key_id2: its previous
 *           one or 0)
 *   2 A->D  A's node, incarnation, fresh nonce_A, the key it chose
 *           (key_id), proof_A = HMAC(key, role A, both nonces, both
 *           nodes, both incarnations)
 *   3 D->A  D's node, incarnation, the same key_id, proof_D (role D)
 * then D's HELLO, then A's: the HELLOs of version 2, which a daemon acts
 * on only after the other side's proof checked out.  In mode 0 (none:
 * no key) key ids and proofs are 0 and only the peer's address is
 * checked.
 *   32 u32 node_id      sender's node id
 *   36 u16 step         1, 2 or 3
 *   38 u16 mode         0 none, 1 authenticate (HMAC-SHA256), 2 encrypt
 *                       (as 1, then TLS 1.3 from the byte after step 3:
 *                       the HELLOs and every later frame are inside it;
 *                       docs/encryption.md)
 *   40 u64 incarnation  sender's, not 0
 *   48 u64 key_id       see above; 0 in mode 0
 *   56 u64 key_id2      step 1 only (else 0)
 *   64 u8[32] nonce     steps 1 and 2 (all 0 in step 3)
 *   96 u8[32] proof     steps 2 and 3 in modes 1 and 2 (else all 0)
 * Payload: none in step 3; in steps 1 and 2 none or the sender's "who",
 * so that a refusal can name the node and the address to configure
 * (docs/diagnosing-links.md).  Not covered by the proof: a receiver uses
 * it for log lines only, and only when the name hashes to node_id.
 *   0 u16 listen_port   the port the sender accepts links on, 0 for none
 *   2 u8  name_len      1..SL_WIRE_AUTH_NAME_MAX
 *   3 u8  rsvd          0
 *   4 name_len bytes    the sender's node name, [A-Za-z0-9._-], no NUL
 */
#define SL_WIRE_AUTH_LEN 128u
#define SL_WIRE_AUTH_NONCE_LEN 32u
#define SL_WIRE_AUTH_PROOF_LEN 32u
#define SL_WIRE_AUTH_NAME_MAX 63u
#define SL_WIRE_AUTH_WHO_MAX (4u + SL_WIRE_AUTH_NAME_MAX)

/*
 * HELLO (type header 40 bytes, no payload): first frame each way on a new
 * connection after AUTH.
 *   32 u32 node_id      sender's node id (sl_node_id of its name)
 *   36 u32 eager_max    sender's largest eager payload, bytes
 *   40 u64 incarnation  sender's start id, not 0; changes on every start
 *   48 u64 last_rx_seq  last in-order seq the sender received on this link
 *                       from incarnation peer_incarnation of the receiver
 *   56 u32 credits      data frames (EAGER, RTS) the receiver of this HELLO
 *                       may have sent without the sender's cumulative ack
 *                       covering them: a sliding window that ACKs move
 *                       (1..65536)
 *   60 u32 rsvd         0
 *   64 u64 peer_incarnation  the receiver's incarnation as the sender last
 *                       knew it, 0 for none; last_rx_seq means nothing to
 *                       a receiver whose incarnation this is not (it
 *                       restarted), and is then 0
 */
#define SL_WIRE_HELLO_LEN 72u

/*
 * EAGER (type header 24 bytes, payload = the message): one tagged message.
 *   32 u32 src_port
 *   36 u32 dst_port
 *   40 u64 tag
 *   48 u32 dst_node     receiver checks it is its own id
 *   52 u32 sender_uid   uid of the process that opened the sending queue,
 *                       as the sending daemon learnt it (SO_PEERCRED), in
 *                       the sending node's user database; 0xffffffff
 *                       (SL_UID_UNKNOWN) when it has none.  Any value is
 *                       valid on the wire; the receiver believes it only
 *                       on a connection whose peer proved the cluster key
 *                       (sluice.h, struct sl_cqe.sender_uid).  (Came later
 *                       in version 3, before its release; before, rsvd 0.)
 */
#define SL_WIRE_EAGER_LEN 56u

/* ACK (no type header, no payload): carries only the common ack field. */
#define SL_WIRE_ACK_LEN 32u
/* The only flag of any frame, on an ACK only: the sender waits on the
 * receiver (frames unacknowledged, a rendezvous under way, a receive
 * naming its node) and asks for an ACK back at once, so that it hears
 * the receiver while the receiver has nothing to say: the keepalive is a
 * question, and a link on which neither side waits sends nothing at all
 * (TCP's keepalive probe, asked only by the side that needs the answer).
 * (Came later in version 3, before its release; before, every up link
 * sent an ACK every 0.25 s whatever it was doing.) */
#define SL_WIRE_ACK_PING 0x0001u

/*
 * NAK (type header 16 bytes, no payload; sequenced): the data frame
 * nak_seq was not delivered; status says why (an enum sl_status NAK or
 * error).  A NAK is sent before any ack that covers nak_seq, and a HELLO's
 * last_rx_seq does not complete anything: only acks carried in the stream
 * do, so a NAK sent again after a reconnect still comes first.
 *   32 u64 nak_seq
 *   40 u32 status
 *   44 u32 rsvd         0
 */
#define SL_WIRE_NAK_LEN 48u

/*
 * Rendezvous (messages above the receiver's eager_max; the model is the
 * RTS/RTR/RDMA-write protocol of MPI over verbs, e.g. Open MPI's ob1 and
 * UCX's rndv put):
 *
 * RTS (data frame: sequenced, acked or NAKed like EAGER; no payload): a
 * message of msg_len bytes waits at the sender.
 *   32 u32 src_port
 *   36 u32 dst_port
 *   40 u64 tag
 *   48 u32 dst_node
 *   52 u32 sender_uid   as in EAGER
 *   56 u64 msg_len      1..SL_WIRE_RNDV_MAX
 *   64 u64 send_id      sender's name for the operation, not 0
 */
#define SL_WIRE_RTS_LEN 72u

/*
 * RTR (control frame, sequenced, no payload): the receiver matched RTS send_id and
 * registered its buffer; write len bytes to (rkey, raddr), the last WRITE
 * carrying recv_id as its immediate.  status != 0 refuses instead (the
 * receiver could not register, or its endpoint went away): the sender
 * completes with that status and writes nothing.  status != 0 with the
 * recv_id of an RTR sent before aborts that rendezvous (the receiving
 * endpoint went away after the match): the sender stops writing,
 * completes with the status, and sends a FIN unless its last write is
 * already on its way; the receiver holds its buffer until one of them.
 * An RTR sent again after a reconnect names the same recv_id, raddr and
 * len; its offset says how many bytes from the start are already in
 * place (whole writes the receiver saw land), and the sender writes only
 * [offset, len) (offset came later in version 2; before, it was 0).
 *   32 u64 send_id      not 0
 *   40 u64 raddr        receiver's address, in its transport's terms
 *   48 u64 len          bytes to write, <= msg_len
 *   56 u32 rkey
 *   60 u32 recv_id      receiver's name for the operation, not 0
 *   64 u32 status       0, or an enum sl_status NAK or error
 *   68 u32 offset       bytes, <= len; 0 unless status is 0
 */
#define SL_WIRE_RTR_LEN 72u

/*
 * FIN (control frame, sequenced, no payload): the sender ends rendezvous recv_id
 * without the write-with-immediate; status 0 means the data was written,
 * anything else that it was not (the sender could not register its
 * buffer) and the receiver's receive stays posted.
 *   32 u32 recv_id      not 0
 *   36 u32 status
 *   40 u64 rsvd         0
 */
#define SL_WIRE_FIN_LEN 48u

/*
 * WRITE (transport frame, payload = the data): the tcp transport's RDMA
 * write.  The receiving transport checks (rkey, raddr, payload_len)
 * against the live grants of the connection (the ranges its RTRs
 * granted, docs/rendezvous-grants.md) before placing a byte; a write
 * outside them places nothing, its payload is read and dropped, and only
 * its rendezvous fails (the connection stays, unlike an RC QP's).
 *   32 u64 raddr
 *   40 u32 rkey
 *   44 u32 has_imm      0 or 1: write with immediate
 *   48 u32 imm          immediate data (0 unless has_imm)
 *   52 u32 rsvd         0
 */
#define SL_WIRE_WRITE_LEN 56u

/*
 * DONE (control frame, sequenced, no payload): the receiver has the data of
 * rendezvous send_id in the matched receive's buffer and has completed
 * it.  Only then does the send complete: a write that left the sender
 * (or that the peer's NIC acknowledged) may still die with its daemon.
 *   32 u64 send_id      not 0
 *   40 u32 status       0 in version 2
 *   44 u32 rsvd         0
 */
#define SL_WIRE_DONE_LEN 48u

/*
 * BYE (unsequenced, like ACK; no payload): the sender is stopping, after
 * its drain (sluiced(8), SIGTERM); the last frame it sends on the
 * connection, so everything before it has been processed when it is.  The
 * receiver fails what still waits on the sender with SL_ERR_PEER_DOWN at
 * once, instead of after peer_timeout_ms, and new operations naming it
 * until it is back (a HELLO).
 * In version 3 a BYE with a reason other than 0 is a refusal instead: a
 * side that refuses a handshake for a configuration mistake says which
 * (enum sl_wire_bye_reason) before it closes the connection, in place of
 * its next handshake step; the other side only logs it (the sender has
 * proven nothing).
 *   32 u64 incarnation  the sender's, as in its HELLO (not 0)
 *   40 u32 reason       enum sl_wire_bye_reason; 0 (stopping) in version 2
 *   44 u32 node_id      reason 0: 0; else the sender's node id
 */
#define SL_WIRE_BYE_LEN 48u

enum sl_wire_bye_reason {
	SL_WIRE_BYE_STOPPING = 0,	/* the sender stops (after its drain) */
	/* Refusals of an accepter, answering step 1 or 3: */
	SL_WIRE_BYE_UNKNOWN_NODE = 1,	/* the dialer's node is not among its peers */
	SL_WIRE_BYE_ADDRESS = 2,	/* listed at another address than it dials from */
	SL_WIRE_BYE_ROLE = 3,		/* the accepter dials that node itself */
	SL_WIRE_BYE_MODE = 4,		/* another [security] mode */
	SL_WIRE_BYE_KEY = 5,		/* no cluster key in common */
	SL_WIRE_BYE_LIVE = 6,		/* that node is up on another connection */
	SL_WIRE_BYE_SAME_NODE = 7,	/* the dialer claims the accepter's own node */
	/* The dialer's, answering step 2: */
	SL_WIRE_BYE_WRONG_NODE = 8,	/* not the node it dialed at that address */
	/* An accepter's refusal for another [security] mode that says its own
	 * (SL_WIRE_BYE_MODE could not, with three modes): */
	SL_WIRE_BYE_MODE_NONE = 9,
	SL_WIRE_BYE_MODE_AUTHENTICATE = 10,
	SL_WIRE_BYE_MODE_ENCRYPT = 11,
	/* Not a refusal: on an up link with nothing to do, the sender asks to
	 * close it, or agrees to the peer's asking; the sequence space goes
	 * on in the next connection (docs/link-lifecycle.md). */
	SL_WIRE_BYE_IDLE = 12,
	SL_WIRE_BYE_REASON_MAX = SL_WIRE_BYE_IDLE,
};

/* The refusal for another [security] mode saying that the sender runs
 * @mode (the AUTH mode field, 0..2). */
static inline enum sl_wire_bye_reason sl_wire_bye_mode_reason(uint16_t mode)
{
	return (enum sl_wire_bye_reason)(SL_WIRE_BYE_MODE_NONE + mode);
}

/* Is @reason a refusal for another [security] mode?  *@mode: the
 * sender's mode (0..2), or -1 when it did not say (SL_WIRE_BYE_MODE). */
static inline bool sl_wire_bye_is_mode(uint32_t reason, int *mode)
{
	*mode = reason >= SL_WIRE_BYE_MODE_NONE && reason <= SL_WIRE_BYE_MODE_ENCRYPT ?
		(int)(reason - SL_WIRE_BYE_MODE_NONE) : -1;
	return reason == SL_WIRE_BYE_MODE || *mode >= 0;
}

struct sl_wire_frame {
	uint8_t type;
	uint16_t flags;
	uint32_t hdr_len;
	uint32_t payload_len;
	uint64_t seq;
	uint64_t ack;
	union {
		struct {
			uint32_t node_id;
			uint32_t eager_max;
			uint64_t incarnation;
			uint64_t last_rx_seq;
			uint32_t credits;
			uint64_t peer_incarnation;
		} hello;
		struct {
			uint32_t src_port;
			uint32_t dst_port;
			uint64_t tag;
			uint32_t dst_node;
			uint32_t sender_uid;
		} eager;
		struct {
			uint64_t nak_seq;
			uint32_t status;
		} nak;
		struct {
			uint32_t src_port;
			uint32_t dst_port;
			uint64_t tag;
			uint32_t dst_node;
			uint32_t sender_uid;
			uint64_t msg_len;
			uint64_t send_id;
		} rts;
		struct {
			uint64_t send_id;
			uint64_t raddr;
			uint64_t len;
			uint32_t rkey;
			uint32_t recv_id;
			uint32_t status;
			uint32_t offset;
		} rtr;
		struct {
			uint32_t recv_id;
			uint32_t status;
		} fin;
		struct {
			uint64_t raddr;
			uint32_t rkey;
			uint32_t has_imm;
			uint32_t imm;
		} write;
		struct {
			uint64_t send_id;
			uint32_t status;
		} done;
		struct {
			uint64_t incarnation;
			uint32_t reason;
			uint32_t node_id;
		} bye;
		struct {
			uint32_t node_id;
			uint16_t step;
			uint16_t mode;
			uint64_t incarnation;
			uint64_t key_id;
			uint64_t key_id2;
			uint8_t nonce[SL_WIRE_AUTH_NONCE_LEN];
			uint8_t proof[SL_WIRE_AUTH_PROOF_LEN];
		} auth;
	} u;
};

/*
 * sl_wire_hdr_len - the exact header length of a frame type, or 0 for an
 * unknown type.
 */
uint32_t sl_wire_hdr_len(uint8_t type);

/*
 * sl_wire_encode - write the header of @f (common + type part) to @buf.
 * @f->hdr_len is ignored and taken from the type.  The payload is not
 * written; the caller sends @f->payload_len bytes after the header.
 * Returns the header length in bytes, -EINVAL when @f is not a frame that
 * sl_wire_decode_hdr() would accept (unknown type, flags other than
 * SL_WIRE_ACK_PING on an ACK, payload on a type that has none or over
 * SL_WIRE_PAYLOAD_MAX, seq 0 on a sequenced frame or non-zero on another,
 * a bad NAK status or nak_seq 0, a HELLO or AUTH node_id of SL_NODE_LOCAL
 * or SL_NODE_ANY, or any HELLO, AUTH, RTS, RTR, FIN, WRITE, DONE or BYE
 * field rule listed under sl_wire_decode_hdr()), or -ENOSPC when
 * @cap is too small.  Thread-safe (no state).
 */
int sl_wire_encode(const struct sl_wire_frame *f, void *buf, size_t cap);

/*
 * sl_wire_decode_hdr - decode and validate a frame header from a byte
 * stream.
 * @buf, @len: the bytes available so far (may hold less than a header).
 * Returns the header length (> 0) with @f filled, -EAGAIN when @len is too
 * short to hold the whole header (read more and call again), or -EPROTO
 * when the bytes can never be a valid header: wrong version, unknown type,
 * hdr_len not the type's length, flags other than SL_WIRE_ACK_PING on an
 * ACK, reserved fields non-zero, payload
 * length over SL_WIRE_PAYLOAD_MAX or on a type that carries none, a sequenced
 * frame with seq 0 or another with seq != 0, a NAK whose status is
 * not a NAK or error status or whose nak_seq is 0, a HELLO whose node_id is
 * SL_NODE_LOCAL or SL_NODE_ANY, whose incarnation is 0, or whose credits
 * are 0 or over SL_WIRE_CREDITS_MAX, an AUTH whose node_id is SL_NODE_LOCAL
 * or SL_NODE_ANY, whose step is not 1..3, mode not 0..2, incarnation 0,
 * key_id2 not 0 outside step 1, nonce not all 0 in step 3, proof not
 * all 0 in step 1 or in mode 0, or payload other than 0 or 5 to
 * SL_WIRE_AUTH_WHO_MAX bytes (0 in step 3), an RTS with msg_len 0 or over
 * SL_WIRE_RNDV_MAX or send_id 0, an RTR with send_id 0, a status that is
 * neither 0 nor a NAK/error status, or (status 0) recv_id 0 or len over
 * SL_WIRE_RNDV_MAX, a FIN with recv_id 0 or a bad status, a WRITE with
 * has_imm not 0/1 or an imm without has_imm, a DONE with send_id 0 or a
 * status other than 0, a BYE with incarnation 0, a reason over
 * SL_WIRE_BYE_REASON_MAX, or a node_id not 0 with reason 0 (or not a
 * node's with another reason).
 * A wrong version is refused as soon as the first byte is there (a
 * reader that sees -EPROTO with a first byte other than SL_WIRE_VERSION
 * can name the version the peer speaks).  Bytes after the frame are
 * not looked at.  Never reads past @buf + @len.  Thread-safe.  The wire
 * cannot check everything: a receiver checks an RTR's len against its
 * message, and a WRITE's (rkey, raddr, payload_len) against its grants.
 */
int sl_wire_decode_hdr(const void *buf, size_t len, struct sl_wire_frame *f);

/*
 * sl_wire_decode - decode one complete frame held in @buf (a datagram).
 * As sl_wire_decode_hdr(), but a buffer shorter than the header is -EPROTO
 * (truncated header), and one shorter than hdr_len + payload_len is
 * -EMSGSIZE (length beyond the buffer).  On success returns the header
 * length; the payload starts there.
 */
int sl_wire_decode(const void *buf, size_t len, struct sl_wire_frame *f);

/*
 * sl_wire_auth_who_encode - the payload of an AUTH step 1 or 2 (see AUTH
 * above) for node @name listening on @listen_port (0: none), into @buf
 * (@cap bytes).  Returns its length (5..SL_WIRE_AUTH_WHO_MAX), or -EINVAL
 * when @name is empty, longer than SL_WIRE_AUTH_NAME_MAX or has a byte
 * outside [A-Za-z0-9._-], or -ENOSPC when @cap is too small.  Thread-safe.
 *
 * sl_wire_auth_who_decode - check the AUTH payload @p (@len bytes, as
 * the decoder passed it) of the node whose AUTH said @node_id, and write
 * its name, NUL-terminated, to @name (@cap >= SL_WIRE_AUTH_NAME_MAX + 1)
 * and its port to *@listen_port.  Returns 0, or -EPROTO when @len is not
 * 4 + name_len, name_len is 0 or over SL_WIRE_AUTH_NAME_MAX, rsvd is not
 * 0, a byte of the name is outside [A-Za-z0-9._-], or sl_node_id(name) is
 * not @node_id; -ENOSPC when @cap is too small.  Never reads past
 * @p + @len.  Thread-safe.  The name comes from a peer that has proven
 * nothing: use it in log lines only.
 */
int sl_wire_auth_who_encode(const char *name, uint16_t listen_port, void *buf, size_t cap);
int sl_wire_auth_who_decode(const void *p, size_t len, uint32_t node_id, char *name, size_t cap,
			    uint16_t *listen_port);

#endif /* SL_WIRE_H */
