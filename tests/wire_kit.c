/*
 * wire_kit.c - what the wire codec's tests share (wire_kit.h): the frame
 * types and their documented properties, written out from sl_wire.h; a
 * guard page; a frame of each type with every byte distinct; the test's
 * own encoder; and the checks that a frame is valid or broken both ways.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sl_wire.h"
#include "sluice.h"
#include "wire_kit.h"

const uint8_t all_types[] = {
	SL_WIRE_HELLO, SL_WIRE_EAGER, SL_WIRE_ACK, SL_WIRE_NAK,
	SL_WIRE_RTS, SL_WIRE_RTR, SL_WIRE_FIN, SL_WIRE_WRITE, SL_WIRE_DONE,
	SL_WIRE_BYE, SL_WIRE_AUTH,
};

/* The types that carry a payload. */
const uint8_t payload_types[] = { SL_WIRE_EAGER, SL_WIRE_WRITE };

/*
 * The documented properties of each type, written out here rather than
 * taken from wire.c, so that the tests check the code against sl_wire.h.
 */
uint32_t spec_hdr_len(uint8_t type)
{
	switch (type) {
	case SL_WIRE_HELLO:
		return 72;
	case SL_WIRE_EAGER:
		return 56;
	case SL_WIRE_ACK:
		return 32;
	case SL_WIRE_NAK:
		return 48;
	case SL_WIRE_RTS:
		return 72;
	case SL_WIRE_RTR:
		return 72;
	case SL_WIRE_FIN:
		return 48;
	case SL_WIRE_WRITE:
		return 56;
	case SL_WIRE_DONE:
		return 48;
	case SL_WIRE_BYE:
		return 48;
	case SL_WIRE_AUTH:
		return 128;
	default:
		return 0;
	}
}

/* The version byte of every frame. */

/*
 * Sequenced frames (seq >= 1): the data frames EAGER and RTS and, since
 * version 2, the control frames NAK, RTR, FIN and DONE.  HELLO, ACK,
 * WRITE, BYE and (version 3) AUTH carry seq 0.
 */
int spec_is_sequenced(uint8_t type)
{
	switch (type) {
	case SL_WIRE_EAGER:
	case SL_WIRE_NAK:
	case SL_WIRE_RTS:
	case SL_WIRE_RTR:
	case SL_WIRE_FIN:
	case SL_WIRE_DONE:
		return 1;
	default:
		return 0;
	}
}

const uint8_t sequenced_types[] = {
	SL_WIRE_EAGER, SL_WIRE_NAK, SL_WIRE_RTS, SL_WIRE_RTR, SL_WIRE_FIN,
	SL_WIRE_DONE,
};

const uint8_t unsequenced_types[] = {
	SL_WIRE_HELLO, SL_WIRE_ACK, SL_WIRE_WRITE, SL_WIRE_BYE, SL_WIRE_AUTH,
};

int spec_has_payload(uint8_t type)
{
	return type == SL_WIRE_EAGER || type == SL_WIRE_WRITE;
}

/* A HELLO's credit grant: 1..65536 frames. */

int spec_flags_valid(uint8_t type, uint64_t flags)
{
	return flags == 0 || (type == SL_WIRE_ACK && flags == SPEC_ACK_PING);
}

int spec_credits_valid(uint64_t c)
{
	return c >= 1 && c <= SPEC_CREDITS_MAX;
}

/* Credit grants the HELLO must refuse: 0, and over 65536 in every byte. */
const uint32_t bad_credits[] = {
	0, SPEC_CREDITS_MAX + 1, SPEC_CREDITS_MAX + 0x100, 0x0001ffffu, 0x20000,
	0x00ff0000u, 0x01000000u, 0x01000001u, 0x80000000u, 0xffff0000u,
	UINT32_MAX,
};

/* ... and ones it must take, both ends included. */
const uint32_t good_credits[] = {
	1, 2, 0xff, 0x100, 0x101, 256, 0x8000, 0xfffe, 0xffff,
	SPEC_CREDITS_MAX - 1, SPEC_CREDITS_MAX,
};

/* A NAK or error status: SL_NAK_* 1..2, SL_ERR_* 16..23. */
int spec_nak_status(uint32_t s)
{
	return (s >= 1 && s <= 2) || (s >= 16 && s <= 23);
}

const uint32_t nak_statuses[] = {
	SL_NAK_BUSY, SL_NAK_RECEIVER_FULL, SL_ERR_NO_ENDPOINT,
	SL_ERR_TRUNCATED, SL_ERR_PEER_DOWN, SL_ERR_PEER_RESTARTED,
	SL_ERR_CANCELED, SL_ERR_INVALID, SL_ERR_ACCESS, SL_ERR_REG_LIMIT,
};

/* Neither 0 nor a NAK/error status; the high bytes matter too.  25,
 * SL_ERR_STALLED, is decided locally and never travels. */
const uint32_t bad_statuses[] = {
	3, 15, 24, 25, 0x100, 0x101, 0x10001, 0x01000010u, 0x80000000u, UINT32_MAX,
};

/*
 * Bytes placed at the very end of a readable page, followed by a PROT_NONE
 * page: any read past the given length faults at once, also outside
 * valgrind.
 */
uint8_t *guard_area;
size_t page_size;

void guard_setup(void)
{
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	guard_area = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(guard_area, MAP_FAILED);
	ck_assert_int_eq(mprotect(guard_area + page_size, page_size, PROT_NONE), 0);
}

void guard_teardown(void)
{
	munmap(guard_area, 2 * page_size);
	guard_area = NULL;
}

/* Copy @len bytes so that they end exactly at the guard page. */
const uint8_t *guarded(const void *src, size_t len)
{
	uint8_t *dst = guard_area + page_size - len;

	memcpy(dst, src, len);
	return dst;
}

struct sl_wire_frame make_frame(uint8_t type)
{
	struct sl_wire_frame f;

	memset(&f, 0, sizeof(f));
	f.type = type;
	/* Values with every byte distinct catch swapped or shifted bytes. */
	f.ack = 0x0102030405060708ull;
	switch (type) {
	case SL_WIRE_HELLO:
		f.u.hello.node_id = 0xa1a2a3a4u;
		f.u.hello.eager_max = 0x00010000u;
		f.u.hello.incarnation = 0xb1b2b3b4b5b6b7b8ull;
		f.u.hello.last_rx_seq = 0xc1c2c3c4c5c6c7c8ull;
		f.u.hello.credits = 0x0000d3d4u;	/* <= SL_WIRE_CREDITS_MAX */
		f.u.hello.peer_incarnation = 0xe1e2e3e4e5e6e7e8ull;
		break;
	case SL_WIRE_EAGER:
		f.seq = 0x1112131415161718ull;
		f.payload_len = 5;
		f.u.eager.src_port = 0x21222324u;
		f.u.eager.dst_port = 0x31323334u;
		f.u.eager.tag = 0x4142434445464748ull;
		f.u.eager.dst_node = 0x51525354u;
		f.u.eager.sender_uid = 0x61626364u;
		break;
	case SL_WIRE_NAK:
		f.seq = 0x1a1b1c1d1e1f1011ull;
		f.u.nak.nak_seq = 0x6162636465666768ull;
		f.u.nak.status = SL_NAK_RECEIVER_FULL;
		break;
	case SL_WIRE_RTS:
		f.seq = 0x1112131415161718ull;
		f.u.rts.src_port = 0x21222324u;
		f.u.rts.dst_port = 0x31323334u;
		f.u.rts.tag = 0x4142434445464748ull;
		f.u.rts.dst_node = 0x51525354u;
		f.u.rts.sender_uid = 0x61626364u;
		f.u.rts.msg_len = 0x3a3b3c3dull;	/* <= SL_WIRE_RNDV_MAX */
		f.u.rts.send_id = 0x7172737475767778ull;
		break;
	case SL_WIRE_RTR:
		f.seq = 0x5a5b5c5d5e5f5051ull;
		f.u.rtr.send_id = 0x8182838485868788ull;
		f.u.rtr.raddr = 0x9192939495969798ull;
		f.u.rtr.len = 0x2a2b2c2dull;		/* <= SL_WIRE_RNDV_MAX */
		f.u.rtr.rkey = 0xa1a2a3a4u;
		f.u.rtr.recv_id = 0xb1b2b3b4u;
		f.u.rtr.status = SL_OK;
		break;
	case SL_WIRE_FIN:
		f.seq = 0x3a3b3c3d3e3f3031ull;
		f.u.fin.recv_id = 0xc1c2c3c4u;
		f.u.fin.status = SL_ERR_ACCESS;
		break;
	case SL_WIRE_WRITE:
		f.payload_len = 7;
		f.u.write.raddr = 0xd1d2d3d4d5d6d7d8ull;
		f.u.write.rkey = 0xe1e2e3e4u;
		f.u.write.has_imm = 1;
		f.u.write.imm = 0xf1f2f3f4u;
		break;
	case SL_WIRE_DONE:
		f.seq = 0x4a4b4c4d4e4f4041ull;
		f.u.done.send_id = 0xe1e2e3e4e5e6e7e8ull;
		f.u.done.status = SL_OK;		/* the only one in version 2 */
		break;
	case SL_WIRE_BYE:
		/* The sender's incarnation, as in its HELLO above. */
		f.u.bye.incarnation = 0xb1b2b3b4b5b6b7b8ull;
		f.u.bye.reason = 0;			/* the only one in version 2 */
		break;
	case SL_WIRE_AUTH:
		/* Step 2 in mode 1: nonce and proof both present. */
		f.u.auth.node_id = 0xa1a2a3a4u;
		f.u.auth.step = 2;
		f.u.auth.mode = 1;
		f.u.auth.incarnation = 0xb1b2b3b4b5b6b7b8ull;
		f.u.auth.key_id = 0xc1c2c3c4c5c6c7c8ull;
		for (int i = 0; i < 32; i++) {
			f.u.auth.nonce[i] = (uint8_t)(0x40 + i);
			f.u.auth.proof[i] = (uint8_t)(0x80 + i);
		}
		break;
	default:
		break;
	}
	return f;
}

/* Field by field: padding in the struct is unspecified. */
int frames_equal(const struct sl_wire_frame *a,
			const struct sl_wire_frame *b)
{
	if (a->type != b->type || a->flags != b->flags ||
	    a->hdr_len != b->hdr_len || a->payload_len != b->payload_len ||
	    a->seq != b->seq || a->ack != b->ack)
		return 0;
	switch (a->type) {
	case SL_WIRE_HELLO:
		return a->u.hello.node_id == b->u.hello.node_id &&
		       a->u.hello.eager_max == b->u.hello.eager_max &&
		       a->u.hello.incarnation == b->u.hello.incarnation &&
		       a->u.hello.last_rx_seq == b->u.hello.last_rx_seq &&
		       a->u.hello.credits == b->u.hello.credits &&
		       a->u.hello.peer_incarnation == b->u.hello.peer_incarnation;
	case SL_WIRE_EAGER:
		return a->u.eager.src_port == b->u.eager.src_port &&
		       a->u.eager.dst_port == b->u.eager.dst_port &&
		       a->u.eager.tag == b->u.eager.tag &&
		       a->u.eager.dst_node == b->u.eager.dst_node &&
		       a->u.eager.sender_uid == b->u.eager.sender_uid;
	case SL_WIRE_NAK:
		return a->u.nak.nak_seq == b->u.nak.nak_seq &&
		       a->u.nak.status == b->u.nak.status;
	case SL_WIRE_RTS:
		return a->u.rts.src_port == b->u.rts.src_port &&
		       a->u.rts.dst_port == b->u.rts.dst_port &&
		       a->u.rts.tag == b->u.rts.tag &&
		       a->u.rts.dst_node == b->u.rts.dst_node &&
		       a->u.rts.sender_uid == b->u.rts.sender_uid &&
		       a->u.rts.msg_len == b->u.rts.msg_len &&
		       a->u.rts.send_id == b->u.rts.send_id;
	case SL_WIRE_RTR:
		return a->u.rtr.send_id == b->u.rtr.send_id &&
		       a->u.rtr.raddr == b->u.rtr.raddr &&
		       a->u.rtr.len == b->u.rtr.len &&
		       a->u.rtr.rkey == b->u.rtr.rkey &&
		       a->u.rtr.recv_id == b->u.rtr.recv_id &&
		       a->u.rtr.status == b->u.rtr.status &&
		       a->u.rtr.offset == b->u.rtr.offset;
	case SL_WIRE_FIN:
		return a->u.fin.recv_id == b->u.fin.recv_id &&
		       a->u.fin.status == b->u.fin.status;
	case SL_WIRE_WRITE:
		return a->u.write.raddr == b->u.write.raddr &&
		       a->u.write.rkey == b->u.write.rkey &&
		       a->u.write.has_imm == b->u.write.has_imm &&
		       a->u.write.imm == b->u.write.imm;
	case SL_WIRE_DONE:
		return a->u.done.send_id == b->u.done.send_id &&
		       a->u.done.status == b->u.done.status;
	case SL_WIRE_BYE:
		return a->u.bye.incarnation == b->u.bye.incarnation &&
		       a->u.bye.reason == b->u.bye.reason;
	case SL_WIRE_AUTH:
		return a->u.auth.node_id == b->u.auth.node_id &&
		       a->u.auth.step == b->u.auth.step && a->u.auth.mode == b->u.auth.mode &&
		       a->u.auth.incarnation == b->u.auth.incarnation &&
		       a->u.auth.key_id == b->u.auth.key_id &&
		       a->u.auth.key_id2 == b->u.auth.key_id2 &&
		       memcmp(a->u.auth.nonce, b->u.auth.nonce, 32) == 0 &&
		       memcmp(a->u.auth.proof, b->u.auth.proof, 32) == 0;
	case SL_WIRE_ACK:
		return 1;
	default:
		return 0;
	}
}

void assert_frames_equal(const struct sl_wire_frame *a,
				const struct sl_wire_frame *b)
{
	ck_assert_uint_eq(a->type, b->type);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_uint_eq(a->hdr_len, b->hdr_len);
	ck_assert_uint_eq(a->payload_len, b->payload_len);
	ck_assert_uint_eq(a->seq, b->seq);
	ck_assert_uint_eq(a->ack, b->ack);
	switch (a->type) {
	case SL_WIRE_HELLO:
		ck_assert_uint_eq(a->u.hello.node_id, b->u.hello.node_id);
		ck_assert_uint_eq(a->u.hello.eager_max, b->u.hello.eager_max);
		ck_assert_uint_eq(a->u.hello.incarnation, b->u.hello.incarnation);
		ck_assert_uint_eq(a->u.hello.last_rx_seq, b->u.hello.last_rx_seq);
		ck_assert_uint_eq(a->u.hello.credits, b->u.hello.credits);
		ck_assert_uint_eq(a->u.hello.peer_incarnation,
				  b->u.hello.peer_incarnation);
		break;
	case SL_WIRE_EAGER:
		ck_assert_uint_eq(a->u.eager.src_port, b->u.eager.src_port);
		ck_assert_uint_eq(a->u.eager.dst_port, b->u.eager.dst_port);
		ck_assert_uint_eq(a->u.eager.tag, b->u.eager.tag);
		ck_assert_uint_eq(a->u.eager.dst_node, b->u.eager.dst_node);
		ck_assert_uint_eq(a->u.eager.sender_uid, b->u.eager.sender_uid);
		break;
	case SL_WIRE_NAK:
		ck_assert_uint_eq(a->u.nak.nak_seq, b->u.nak.nak_seq);
		ck_assert_uint_eq(a->u.nak.status, b->u.nak.status);
		break;
	case SL_WIRE_RTS:
		ck_assert_uint_eq(a->u.rts.src_port, b->u.rts.src_port);
		ck_assert_uint_eq(a->u.rts.dst_port, b->u.rts.dst_port);
		ck_assert_uint_eq(a->u.rts.tag, b->u.rts.tag);
		ck_assert_uint_eq(a->u.rts.dst_node, b->u.rts.dst_node);
		ck_assert_uint_eq(a->u.rts.sender_uid, b->u.rts.sender_uid);
		ck_assert_uint_eq(a->u.rts.msg_len, b->u.rts.msg_len);
		ck_assert_uint_eq(a->u.rts.send_id, b->u.rts.send_id);
		break;
	case SL_WIRE_RTR:
		ck_assert_uint_eq(a->u.rtr.send_id, b->u.rtr.send_id);
		ck_assert_uint_eq(a->u.rtr.raddr, b->u.rtr.raddr);
		ck_assert_uint_eq(a->u.rtr.len, b->u.rtr.len);
		ck_assert_uint_eq(a->u.rtr.rkey, b->u.rtr.rkey);
		ck_assert_uint_eq(a->u.rtr.recv_id, b->u.rtr.recv_id);
		ck_assert_uint_eq(a->u.rtr.status, b->u.rtr.status);
		ck_assert_uint_eq(a->u.rtr.offset, b->u.rtr.offset);
		break;
	case SL_WIRE_FIN:
		ck_assert_uint_eq(a->u.fin.recv_id, b->u.fin.recv_id);
		ck_assert_uint_eq(a->u.fin.status, b->u.fin.status);
		break;
	case SL_WIRE_WRITE:
		ck_assert_uint_eq(a->u.write.raddr, b->u.write.raddr);
		ck_assert_uint_eq(a->u.write.rkey, b->u.write.rkey);
		ck_assert_uint_eq(a->u.write.has_imm, b->u.write.has_imm);
		ck_assert_uint_eq(a->u.write.imm, b->u.write.imm);
		break;
	case SL_WIRE_DONE:
		ck_assert_uint_eq(a->u.done.send_id, b->u.done.send_id);
		ck_assert_uint_eq(a->u.done.status, b->u.done.status);
		break;
	case SL_WIRE_BYE:
		ck_assert_uint_eq(a->u.bye.incarnation, b->u.bye.incarnation);
		ck_assert_uint_eq(a->u.bye.reason, b->u.bye.reason);
		break;
	case SL_WIRE_AUTH:
		ck_assert_uint_eq(a->u.auth.node_id, b->u.auth.node_id);
		ck_assert_uint_eq(a->u.auth.step, b->u.auth.step);
		ck_assert_uint_eq(a->u.auth.mode, b->u.auth.mode);
		ck_assert_uint_eq(a->u.auth.incarnation, b->u.auth.incarnation);
		ck_assert_uint_eq(a->u.auth.key_id, b->u.auth.key_id);
		ck_assert_uint_eq(a->u.auth.key_id2, b->u.auth.key_id2);
		ck_assert_mem_eq(a->u.auth.nonce, b->u.auth.nonce, 32);
		ck_assert_mem_eq(a->u.auth.proof, b->u.auth.proof, 32);
		break;
	default:
		break;
	}
}

/* A valid frame of @type, header plus zero payload bytes, in @buf. */
size_t encode_valid(uint8_t type, uint8_t *buf, size_t cap)
{
	struct sl_wire_frame f = make_frame(type);
	int rc = sl_wire_encode(&f, buf, cap);

	ck_assert_int_eq(rc, (int)sl_wire_hdr_len(type));
	ck_assert_uint_le((size_t)rc + f.payload_len, cap);
	memset(buf + rc, 0, f.payload_len);
	return (size_t)rc + f.payload_len;
}

void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Both decoders must reject @buf as malformed, whatever its length. */
void expect_eproto(const uint8_t *buf, size_t len)
{
	struct sl_wire_frame f;
	const uint8_t *g = guarded(buf, len);

	ck_assert_int_eq(sl_wire_decode_hdr(g, len, &f), -EPROTO);
	ck_assert_int_eq(sl_wire_decode(g, len, &f), -EPROTO);
}

void expect_ok(const uint8_t *buf, size_t len)
{
	struct sl_wire_frame f;
	const uint8_t *g = guarded(buf, len);

	ck_assert_int_gt(sl_wire_decode_hdr(g, len, &f), 0);
	ck_assert_int_gt(sl_wire_decode(g, len, &f), 0);
}

void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

uint64_t get_le(const uint8_t *p, int width)
{
	uint64_t v = 0;

	for (int i = width - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/*
 * The test's own encoder, straight from the layouts in sl_wire.h and with
 * no validation at all: it produces the bytes of frames that sl_wire_encode()
 * refuses, for the decoder to reject.  Returns the header length.
 */
size_t raw_encode(const struct sl_wire_frame *f, uint8_t *p)
{
	uint32_t hlen = spec_hdr_len(f->type);

	ck_assert_uint_ne(hlen, 0);
	memset(p, 0, hlen);
	p[0] = SPEC_VERSION;
	p[1] = f->type;
	put_le16(p + 2, f->flags);
	put_le32(p + 4, hlen);
	put_le32(p + 8, f->payload_len);
	put_le64(p + 16, f->seq);
	put_le64(p + 24, f->ack);
	switch (f->type) {
	case SL_WIRE_HELLO:
		put_le32(p + 32, f->u.hello.node_id);
		put_le32(p + 36, f->u.hello.eager_max);
		put_le64(p + 40, f->u.hello.incarnation);
		put_le64(p + 48, f->u.hello.last_rx_seq);
		put_le32(p + 56, f->u.hello.credits);
		put_le64(p + 64, f->u.hello.peer_incarnation);
		break;
	case SL_WIRE_EAGER:
		put_le32(p + 32, f->u.eager.src_port);
		put_le32(p + 36, f->u.eager.dst_port);
		put_le64(p + 40, f->u.eager.tag);
		put_le32(p + 48, f->u.eager.dst_node);
		put_le32(p + 52, f->u.eager.sender_uid);
		break;
	case SL_WIRE_NAK:
		put_le64(p + 32, f->u.nak.nak_seq);
		put_le32(p + 40, f->u.nak.status);
		break;
	case SL_WIRE_RTS:
		put_le32(p + 32, f->u.rts.src_port);
		put_le32(p + 36, f->u.rts.dst_port);
		put_le64(p + 40, f->u.rts.tag);
		put_le32(p + 48, f->u.rts.dst_node);
		put_le32(p + 52, f->u.rts.sender_uid);
		put_le64(p + 56, f->u.rts.msg_len);
		put_le64(p + 64, f->u.rts.send_id);
		break;
	case SL_WIRE_RTR:
		put_le64(p + 32, f->u.rtr.send_id);
		put_le64(p + 40, f->u.rtr.raddr);
		put_le64(p + 48, f->u.rtr.len);
		put_le32(p + 56, f->u.rtr.rkey);
		put_le32(p + 60, f->u.rtr.recv_id);
		put_le32(p + 64, f->u.rtr.status);
		put_le32(p + 68, f->u.rtr.offset);
		break;
	case SL_WIRE_FIN:
		put_le32(p + 32, f->u.fin.recv_id);
		put_le32(p + 36, f->u.fin.status);
		break;
	case SL_WIRE_WRITE:
		put_le64(p + 32, f->u.write.raddr);
		put_le32(p + 40, f->u.write.rkey);
		put_le32(p + 44, f->u.write.has_imm);
		put_le32(p + 48, f->u.write.imm);
		break;
	case SL_WIRE_DONE:
		put_le64(p + 32, f->u.done.send_id);
		put_le32(p + 40, f->u.done.status);
		break;
	case SL_WIRE_BYE:
		put_le64(p + 32, f->u.bye.incarnation);
		put_le32(p + 40, f->u.bye.reason);
		break;
	case SL_WIRE_AUTH:
		put_le32(p + 32, f->u.auth.node_id);
		put_le16(p + 36, f->u.auth.step);
		put_le16(p + 38, f->u.auth.mode);
		put_le64(p + 40, f->u.auth.incarnation);
		put_le64(p + 48, f->u.auth.key_id);
		put_le64(p + 56, f->u.auth.key_id2);
		memcpy(p + 64, f->u.auth.nonce, 32);
		memcpy(p + 96, f->u.auth.proof, 32);
		break;
	default:
		break;
	}
	return hlen;
}

/* Payloads up to this size are placed in full behind a guarded header. */

/*
 * @f is a valid frame: sl_wire_encode() writes exactly the documented bytes,
 * and both decoders give @f back, from a buffer that ends at the guard page.
 */
void expect_valid(const struct sl_wire_frame *f)
{
	uint8_t buf[SL_WIRE_HDR_MAX + SMALL_PAYLOAD], want[SL_WIRE_HDR_MAX];
	struct sl_wire_frame in = *f, out;
	size_t hlen = raw_encode(f, want);
	const uint8_t *g;
	int rc;

	in.hdr_len = 0xdeadu;	/* ignored on encode */
	memset(buf, 0xff, sizeof(buf));
	rc = sl_wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(rc, (int)hlen);
	ck_assert_mem_eq(buf, want, hlen);
	ck_assert_uint_eq(buf[hlen], 0xff);
	in.hdr_len = (uint32_t)hlen;

	g = guarded(buf, hlen);
	memset(&out, 0xee, sizeof(out));
	ck_assert_int_eq(sl_wire_decode_hdr(g, hlen, &out), rc);
	assert_frames_equal(&in, &out);
	if (in.payload_len <= SMALL_PAYLOAD) {
		memset(buf + hlen, 0x5a, in.payload_len);
		g = guarded(buf, hlen + in.payload_len);
		memset(&out, 0xee, sizeof(out));
		ck_assert_int_eq(sl_wire_decode(g, hlen + in.payload_len, &out), rc);
		assert_frames_equal(&in, &out);
	}
	if (in.payload_len > 0)
		ck_assert_int_eq(sl_wire_decode(guarded(buf, hlen), hlen, &out),
				 -EMSGSIZE);
}

/*
 * @f breaks a rule: sl_wire_encode() refuses it (before looking at the
 * capacity), and both decoders refuse its bytes, with or without payload.
 */
void expect_invalid(const struct sl_wire_frame *f)
{
	uint8_t buf[SL_WIRE_HDR_MAX + SMALL_PAYLOAD];
	size_t hlen;

	memset(buf, 0xaa, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(f, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(sl_wire_encode(f, buf, 0), -EINVAL);
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0xaa);

	hlen = raw_encode(f, buf);
	expect_eproto(buf, hlen);
	if (f->payload_len > 0 && f->payload_len <= SMALL_PAYLOAD) {
		memset(buf + hlen, 0, f->payload_len);
		expect_eproto(buf, hlen + f->payload_len);
	}
}

int wire_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
