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
 *   2  u16 flags         0 in version 1
 *   4  u32 hdr_len       common + type header, bytes; exact per type
 *   8  u32 payload_len   bytes after the header
 *  12  u32 rsvd          0
 *  16  u64 seq           data frames: per-link sequence number (from 1);
 *                        control frames: 0
 *  24  u64 ack           cumulative: every data frame with seq <= ack has
 *                        been processed by the sender of this frame
 *
 * Sequence numbers and cumulative acks give exactly-once delivery across a
 * reconnect (the HELLO carries the last in-order seq received).
 */
#ifndef SL_WIRE_H
#define SL_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Version 1: HELLO, EAGER, ACK, NAK with the layouts below. */
#define SL_WIRE_VERSION 1u

#define SL_WIRE_COMMON_LEN 32u
/* Largest header of any type; a receive buffer needs at least this. */
#define SL_WIRE_HDR_MAX 64u
/* Largest payload of any frame, bytes. */
#define SL_WIRE_PAYLOAD_MAX (16u << 20)

enum sl_wire_type {
	SL_WIRE_HELLO = 1,
	SL_WIRE_EAGER = 2,
	SL_WIRE_ACK = 3,
	SL_WIRE_NAK = 4,
	SL_WIRE_TYPE_MAX = SL_WIRE_NAK,
};

/*
 * HELLO (type header 32 bytes, no payload): first frame each way on a new
 * connection.
 *   32 u32 node_id      sender's node id (sl_node_id of its name)
 *   36 u32 eager_max    sender's largest eager payload, bytes
 *   40 u64 incarnation  sender's start id; changes on every daemon start
 *   48 u64 last_rx_seq  last in-order data seq the sender received on this
 *                       link from the receiver's current incarnation
 *   56 u64 rsvd         0
 */
#define SL_WIRE_HELLO_LEN 64u

/*
 * EAGER (type header 24 bytes, payload = the message): one tagged message.
 *   32 u32 src_port
 *   36 u32 dst_port
 *   40 u64 tag
 *   48 u32 dst_node     receiver checks it is its own id
 *   52 u32 rsvd         0
 */
#define SL_WIRE_EAGER_LEN 56u

/* ACK (no type header, no payload): carries only the common ack field. */
#define SL_WIRE_ACK_LEN 32u

/*
 * NAK (type header 16 bytes, no payload): the data frame nak_seq was not
 * delivered; status says why (an enum sl_status NAK or error).  A NAK is
 * sent before any ack that covers nak_seq.
 *   32 u64 nak_seq
 *   40 u32 status
 *   44 u32 rsvd         0
 */
#define SL_WIRE_NAK_LEN 48u

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
		} hello;
		struct {
			uint32_t src_port;
			uint32_t dst_port;
			uint64_t tag;
			uint32_t dst_node;
		} eager;
		struct {
			uint64_t nak_seq;
			uint32_t status;
		} nak;
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
 * sl_wire_decode_hdr() would accept (unknown type, non-zero flags, payload
 * on a type that has none or over SL_WIRE_PAYLOAD_MAX, seq 0 on a data
 * frame or non-zero on a control frame, a bad NAK status or nak_seq 0, a
 * HELLO node_id of SL_NODE_LOCAL or SL_NODE_ANY), or -ENOSPC when @cap is
 * too small.  Thread-safe (no state).
 */
int sl_wire_encode(const struct sl_wire_frame *f, void *buf, size_t cap);

/*
 * sl_wire_decode_hdr - decode and validate a frame header from a byte
 * stream.
 * @buf, @len: the bytes available so far (may hold less than a header).
 * Returns the header length (> 0) with @f filled, -EAGAIN when @len is too
 * short to hold the whole header (read more and call again), or -EPROTO
 * when the bytes can never be a valid header: wrong version, unknown type,
 * hdr_len not the type's length, flags or reserved fields non-zero, payload
 * length over SL_WIRE_PAYLOAD_MAX or on a type that carries none, a data
 * frame with seq 0 or a control frame with seq != 0, a NAK whose status is
 * not a NAK or error status or whose nak_seq is 0, a HELLO whose node_id is
 * SL_NODE_LOCAL or SL_NODE_ANY.  Bytes after the frame are not looked at.  Never reads past @buf + @len.  Thread-safe.
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

#endif /* SL_WIRE_H */
