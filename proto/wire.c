/*
 * wire.c - encoding and validation of link frames; see sl_wire.h.
 *
 * Byte-by-byte little-endian access keeps the code independent of host
 * byte order and of the buffer's alignment (stream buffers are not
 * aligned).
 */
#include <errno.h>
#include <string.h>

#include "sl_wire.h"
#include "sluice.h"

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint32_t sl_wire_hdr_len(uint8_t type)
{
	switch (type) {
	case SL_WIRE_HELLO:
		return SL_WIRE_HELLO_LEN;
	case SL_WIRE_EAGER:
		return SL_WIRE_EAGER_LEN;
	case SL_WIRE_ACK:
		return SL_WIRE_ACK_LEN;
	case SL_WIRE_NAK:
		return SL_WIRE_NAK_LEN;
	case SL_WIRE_RTS:
		return SL_WIRE_RTS_LEN;
	case SL_WIRE_RTR:
		return SL_WIRE_RTR_LEN;
	case SL_WIRE_FIN:
		return SL_WIRE_FIN_LEN;
	case SL_WIRE_WRITE:
		return SL_WIRE_WRITE_LEN;
	case SL_WIRE_DONE:
		return SL_WIRE_DONE_LEN;
	case SL_WIRE_BYE:
		return SL_WIRE_BYE_LEN;
	case SL_WIRE_AUTH:
		return SL_WIRE_AUTH_LEN;
	default:
		return 0;
	}
}

/* Frames that take a sequence number: all but AUTH, HELLO, ACK, WRITE and
 * BYE. */
static int is_sequenced_type(uint8_t type)
{
	return type != SL_WIRE_HELLO && type != SL_WIRE_ACK && type != SL_WIRE_WRITE &&
	       type != SL_WIRE_BYE && type != SL_WIRE_AUTH;
}

static int all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	while (n--)
		acc |= *p++;
	return acc == 0;
}

static int has_payload_type(uint8_t type)
{
	return type == SL_WIRE_EAGER || type == SL_WIRE_WRITE;
}

static int nak_status_valid(uint32_t status)
{
	/* Listed explicitly so that adding a status to enum sl_status is a
	 * deliberate wire change, not a silent one. */
	switch (status) {
	case SL_NAK_BUSY:
	case SL_NAK_RECEIVER_FULL:
	case SL_ERR_NO_ENDPOINT:
	case SL_ERR_TRUNCATED:
	case SL_ERR_PEER_DOWN:
	case SL_ERR_PEER_RESTARTED:
	case SL_ERR_CANCELED:
	case SL_ERR_INVALID:
	case SL_ERR_ACCESS:
	case SL_ERR_REG_LIMIT:
		return 1;
	default:
		return 0;
	}
}

/*
 * The checks shared by encoder and decoder, on host-order fields, so that
 * whatever the encoder accepts the decoder accepts too.
 */
static int frame_valid(uint8_t type, uint16_t flags, uint32_t payload_len,
		       uint64_t seq)
{
	if (sl_wire_hdr_len(type) == 0)
		return 0;
	if (flags != 0 && (type != SL_WIRE_ACK || flags != SL_WIRE_ACK_PING))
		return 0;
	if (payload_len > SL_WIRE_PAYLOAD_MAX)
		return 0;
	if (payload_len != 0 && !has_payload_type(type) &&
	    (type != SL_WIRE_AUTH || payload_len > SL_WIRE_AUTH_WHO_MAX))
		return 0;
	if (is_sequenced_type(type) ? seq == 0 : seq != 0)
		return 0;
	return 1;
}

/* 0 (done) or a NAK/error status. */
static int status_or_ok_valid(uint32_t status)
{
	return status == SL_OK || nak_status_valid(status);
}

static int node_id_valid(uint32_t id);

/* Type-specific field rules, shared by encoder and decoder. */
static int fields_valid(const struct sl_wire_frame *f)
{
	switch (f->type) {
	case SL_WIRE_HELLO:
		return f->u.hello.credits >= 1 && f->u.hello.credits <= SL_WIRE_CREDITS_MAX &&
		       f->u.hello.incarnation != 0;
	case SL_WIRE_RTS:
		return f->u.rts.msg_len != 0 && f->u.rts.msg_len <= SL_WIRE_RNDV_MAX &&
		       f->u.rts.send_id != 0;
	case SL_WIRE_RTR:
		if (f->u.rtr.send_id == 0 || !status_or_ok_valid(f->u.rtr.status))
			return 0;
		if (f->u.rtr.status != SL_OK)
			return f->u.rtr.offset == 0;
		return f->u.rtr.recv_id != 0 && f->u.rtr.len <= SL_WIRE_RNDV_MAX &&
		       f->u.rtr.offset <= f->u.rtr.len;
	case SL_WIRE_FIN:
		return f->u.fin.recv_id != 0 && status_or_ok_valid(f->u.fin.status);
	case SL_WIRE_WRITE:
		return f->u.write.has_imm <= 1 && (f->u.write.has_imm || f->u.write.imm == 0);
	case SL_WIRE_DONE:
		return f->u.done.send_id != 0 && f->u.done.status == SL_OK;
	case SL_WIRE_BYE:
		if (f->u.bye.incarnation == 0 || f->u.bye.reason > SL_WIRE_BYE_REASON_MAX)
			return 0;
		return f->u.bye.reason == SL_WIRE_BYE_STOPPING ? f->u.bye.node_id == 0 :
		       node_id_valid(f->u.bye.node_id);
	case SL_WIRE_AUTH:
		if (f->u.auth.step < 1 || f->u.auth.step > 3 || f->u.auth.mode > 2 ||
		    f->u.auth.incarnation == 0)
			return 0;
		if (f->u.auth.step != 1 && f->u.auth.key_id2 != 0)
			return 0;
		if (f->u.auth.step == 3 && !all_zero(f->u.auth.nonce, sizeof(f->u.auth.nonce)))
			return 0;
		if ((f->u.auth.step == 1 || f->u.auth.mode == 0) &&
		    !all_zero(f->u.auth.proof, sizeof(f->u.auth.proof)))
			return 0;
		/* The "who" of steps 1 and 2: at least one byte of name. */
		if (f->payload_len != 0 && (f->u.auth.step == 3 || f->payload_len < 5))
			return 0;
		return 1;
	default:
		return 1;
	}
}

/* A real node's id: never SL_NODE_LOCAL nor SL_NODE_ANY (sl_node_id folds
 * them away). */
static int node_id_valid(uint32_t id)
{
	return id != SL_NODE_LOCAL && id != SL_NODE_ANY;
}

int sl_wire_encode(const struct sl_wire_frame *f, void *buf, size_t cap)
{
	uint32_t hlen = sl_wire_hdr_len(f->type);
	uint8_t *p = buf;

	if (!frame_valid(f->type, f->flags, f->payload_len, f->seq))
		return -EINVAL;
	if (f->type == SL_WIRE_NAK &&
	    (!nak_status_valid(f->u.nak.status) || f->u.nak.nak_seq == 0))
		return -EINVAL;
	if (f->type == SL_WIRE_HELLO && !node_id_valid(f->u.hello.node_id))
		return -EINVAL;
	if (f->type == SL_WIRE_AUTH && !node_id_valid(f->u.auth.node_id))
		return -EINVAL;
	if (!fields_valid(f))
		return -EINVAL;
	if (cap < hlen)
		return -ENOSPC;

	/* Zeroing first covers every rsvd field, whatever the layout. */
	memset(p, 0, hlen);
	p[0] = SL_WIRE_VERSION;
	p[1] = f->type;
	put_u16(p + 2, f->flags);
	put_u32(p + 4, hlen);
	put_u32(p + 8, f->payload_len);
	put_u64(p + 16, f->seq);
	put_u64(p + 24, f->ack);

	switch (f->type) {
	case SL_WIRE_HELLO:
		put_u32(p + 32, f->u.hello.node_id);
		put_u32(p + 36, f->u.hello.eager_max);
		put_u64(p + 40, f->u.hello.incarnation);
		put_u64(p + 48, f->u.hello.last_rx_seq);
		put_u32(p + 56, f->u.hello.credits);
		put_u64(p + 64, f->u.hello.peer_incarnation);
		break;
	case SL_WIRE_EAGER:
		put_u32(p + 32, f->u.eager.src_port);
		put_u32(p + 36, f->u.eager.dst_port);
		put_u64(p + 40, f->u.eager.tag);
		put_u32(p + 48, f->u.eager.dst_node);
		put_u32(p + 52, f->u.eager.sender_uid);
		break;
	case SL_WIRE_NAK:
		put_u64(p + 32, f->u.nak.nak_seq);
		put_u32(p + 40, f->u.nak.status);
		break;
	case SL_WIRE_RTS:
		put_u32(p + 32, f->u.rts.src_port);
		put_u32(p + 36, f->u.rts.dst_port);
		put_u64(p + 40, f->u.rts.tag);
		put_u32(p + 48, f->u.rts.dst_node);
		put_u32(p + 52, f->u.rts.sender_uid);
		put_u64(p + 56, f->u.rts.msg_len);
		put_u64(p + 64, f->u.rts.send_id);
		break;
	case SL_WIRE_RTR:
		put_u64(p + 32, f->u.rtr.send_id);
		put_u64(p + 40, f->u.rtr.raddr);
		put_u64(p + 48, f->u.rtr.len);
		put_u32(p + 56, f->u.rtr.rkey);
		put_u32(p + 60, f->u.rtr.recv_id);
		put_u32(p + 64, f->u.rtr.status);
		put_u32(p + 68, f->u.rtr.offset);
		break;
	case SL_WIRE_FIN:
		put_u32(p + 32, f->u.fin.recv_id);
		put_u32(p + 36, f->u.fin.status);
		break;
	case SL_WIRE_WRITE:
		put_u64(p + 32, f->u.write.raddr);
		put_u32(p + 40, f->u.write.rkey);
		put_u32(p + 44, f->u.write.has_imm);
		put_u32(p + 48, f->u.write.imm);
		break;
	case SL_WIRE_DONE:
		put_u64(p + 32, f->u.done.send_id);
		put_u32(p + 40, f->u.done.status);
		break;
	case SL_WIRE_BYE:
		put_u64(p + 32, f->u.bye.incarnation);
		put_u32(p + 40, f->u.bye.reason);
		put_u32(p + 44, f->u.bye.node_id);
		break;
	case SL_WIRE_AUTH:
		put_u32(p + 32, f->u.auth.node_id);
		put_u16(p + 36, f->u.auth.step);
		put_u16(p + 38, f->u.auth.mode);
		put_u64(p + 40, f->u.auth.incarnation);
		put_u64(p + 48, f->u.auth.key_id);
		put_u64(p + 56, f->u.auth.key_id2);
		memcpy(p + 64, f->u.auth.nonce, SL_WIRE_AUTH_NONCE_LEN);
		memcpy(p + 96, f->u.auth.proof, SL_WIRE_AUTH_PROOF_LEN);
		break;
	default:
		break;
	}
	return (int)hlen;
}

int sl_wire_decode_hdr(const void *buf, size_t len, struct sl_wire_frame *f)
{
	const uint8_t *p = buf;
	struct sl_wire_frame tmp;
	uint32_t hlen;

	/* Reject garbage as soon as the bytes that prove it are here, so a
	 * stream reader does not wait for a header that cannot come. */
	if (len >= 1 && p[0] != SL_WIRE_VERSION)
		return -EPROTO;
	if (len >= 2 && sl_wire_hdr_len(p[1]) == 0)
		return -EPROTO;
	if (len < SL_WIRE_COMMON_LEN)
		return -EAGAIN;

	memset(&tmp, 0, sizeof(tmp));
	tmp.type = p[1];
	tmp.flags = get_u16(p + 2);
	tmp.hdr_len = get_u32(p + 4);
	tmp.payload_len = get_u32(p + 8);
	tmp.seq = get_u64(p + 16);
	tmp.ack = get_u64(p + 24);
	hlen = sl_wire_hdr_len(tmp.type);

	if (tmp.hdr_len != hlen || get_u32(p + 12) != 0 ||
	    !frame_valid(tmp.type, tmp.flags, tmp.payload_len, tmp.seq))
		return -EPROTO;
	if (len < hlen)
		return -EAGAIN;

	switch (tmp.type) {
	case SL_WIRE_HELLO:
		if (get_u32(p + 60) != 0)
			return -EPROTO;
		tmp.u.hello.credits = get_u32(p + 56);
		tmp.u.hello.node_id = get_u32(p + 32);
		if (!node_id_valid(tmp.u.hello.node_id))
			return -EPROTO;
		tmp.u.hello.eager_max = get_u32(p + 36);
		tmp.u.hello.incarnation = get_u64(p + 40);
		tmp.u.hello.last_rx_seq = get_u64(p + 48);
		tmp.u.hello.peer_incarnation = get_u64(p + 64);
		break;
	case SL_WIRE_EAGER:
		tmp.u.eager.src_port = get_u32(p + 32);
		tmp.u.eager.dst_port = get_u32(p + 36);
		tmp.u.eager.tag = get_u64(p + 40);
		tmp.u.eager.dst_node = get_u32(p + 48);
		tmp.u.eager.sender_uid = get_u32(p + 52);
		break;
	case SL_WIRE_NAK:
		if (get_u32(p + 44) != 0)
			return -EPROTO;
		tmp.u.nak.nak_seq = get_u64(p + 32);
		tmp.u.nak.status = get_u32(p + 40);
		/* Data seqs start at 1: a NAK for 0 names no frame. */
		if (!nak_status_valid(tmp.u.nak.status) || tmp.u.nak.nak_seq == 0)
			return -EPROTO;
		break;
	case SL_WIRE_RTS:
		tmp.u.rts.src_port = get_u32(p + 32);
		tmp.u.rts.dst_port = get_u32(p + 36);
		tmp.u.rts.tag = get_u64(p + 40);
		tmp.u.rts.dst_node = get_u32(p + 48);
		tmp.u.rts.sender_uid = get_u32(p + 52);
		tmp.u.rts.msg_len = get_u64(p + 56);
		tmp.u.rts.send_id = get_u64(p + 64);
		break;
	case SL_WIRE_RTR:
		tmp.u.rtr.offset = get_u32(p + 68);
		tmp.u.rtr.send_id = get_u64(p + 32);
		tmp.u.rtr.raddr = get_u64(p + 40);
		tmp.u.rtr.len = get_u64(p + 48);
		tmp.u.rtr.rkey = get_u32(p + 56);
		tmp.u.rtr.recv_id = get_u32(p + 60);
		tmp.u.rtr.status = get_u32(p + 64);
		break;
	case SL_WIRE_FIN:
		if (get_u64(p + 40) != 0)
			return -EPROTO;
		tmp.u.fin.recv_id = get_u32(p + 32);
		tmp.u.fin.status = get_u32(p + 36);
		break;
	case SL_WIRE_WRITE:
		if (get_u32(p + 52) != 0)
			return -EPROTO;
		tmp.u.write.raddr = get_u64(p + 32);
		tmp.u.write.rkey = get_u32(p + 40);
		tmp.u.write.has_imm = get_u32(p + 44);
		tmp.u.write.imm = get_u32(p + 48);
		break;
	case SL_WIRE_DONE:
		if (get_u32(p + 44) != 0)
			return -EPROTO;
		tmp.u.done.send_id = get_u64(p + 32);
		tmp.u.done.status = get_u32(p + 40);
		break;
	case SL_WIRE_BYE:
		tmp.u.bye.incarnation = get_u64(p + 32);
		tmp.u.bye.reason = get_u32(p + 40);
		tmp.u.bye.node_id = get_u32(p + 44);
		break;
	case SL_WIRE_AUTH:
		tmp.u.auth.node_id = get_u32(p + 32);
		if (!node_id_valid(tmp.u.auth.node_id))
			return -EPROTO;
		tmp.u.auth.step = get_u16(p + 36);
		tmp.u.auth.mode = get_u16(p + 38);
		tmp.u.auth.incarnation = get_u64(p + 40);
		tmp.u.auth.key_id = get_u64(p + 48);
		tmp.u.auth.key_id2 = get_u64(p + 56);
		memcpy(tmp.u.auth.nonce, p + 64, SL_WIRE_AUTH_NONCE_LEN);
		memcpy(tmp.u.auth.proof, p + 96, SL_WIRE_AUTH_PROOF_LEN);
		break;
	default:
		break;
	}
	if (!fields_valid(&tmp))
		return -EPROTO;
	/* The caller's frame is touched only on success, so a failed decode
	 * never leaves half-validated fields behind. */
	*f = tmp;
	return (int)hlen;
}

int sl_wire_decode(const void *buf, size_t len, struct sl_wire_frame *f)
{
	struct sl_wire_frame tmp;
	int rc = sl_wire_decode_hdr(buf, len, &tmp);

	/* A datagram is all there will ever be: a short header is final. */
	if (rc == -EAGAIN)
		return -EPROTO;
	if (rc < 0)
		return rc;
	if (len - (size_t)rc < tmp.payload_len)
		return -EMSGSIZE;
	*f = tmp;
	return rc;
}

/* A node name's byte (config_name_valid's set). */
static int name_byte_valid(uint8_t ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '-';
}

int sl_wire_auth_who_encode(const char *name, uint16_t listen_port, void *buf, size_t cap)
{
	uint8_t *p = buf;
	size_t n = strlen(name);

	if (n == 0 || n > SL_WIRE_AUTH_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!name_byte_valid((uint8_t)name[i]))
			return -EINVAL;
	if (cap < 4 + n)
		return -ENOSPC;
	put_u16(p, listen_port);
	p[2] = (uint8_t)n;
	p[3] = 0;
	memcpy(p + 4, name, n);
	return (int)(4 + n);
}

int sl_wire_auth_who_decode(const void *buf, size_t len, uint32_t node_id, char *name, size_t cap,
			    uint16_t *listen_port)
{
	const uint8_t *p = buf;
	size_t n;

	if (len < 5 || len > SL_WIRE_AUTH_WHO_MAX)
		return -EPROTO;
	n = p[2];
	if (n + 4 != len || p[3] != 0)
		return -EPROTO;
	for (size_t i = 0; i < n; i++)
		if (!name_byte_valid(p[4 + i]))
			return -EPROTO;
	if (cap < n + 1)
		return -ENOSPC;
	memcpy(name, p + 4, n);
	name[n] = '\0';
	if (sl_node_id(name) != node_id) {
		name[0] = '\0';
		return -EPROTO;
	}
	*listen_port = get_u16(p);
	return 0;
}
