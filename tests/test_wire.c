/*
 * test_wire.c - the link frame codec (sl_wire.h), sl_node_id and
 * sl_strerror.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sl_wire.h"
#include "sluice.h"

/*
 * ck_assert() marks a point on every pass, which in fork mode is a message
 * to the parent; loops of millions of checks test first and assert only on
 * failure.
 */
#define HOT_ASSERT(expr, ...) \
	do { \
		if (!(expr)) \
			ck_assert_msg(expr, __VA_ARGS__); \
	} while (0)

static const uint8_t all_types[] = {
	SL_WIRE_HELLO, SL_WIRE_EAGER, SL_WIRE_ACK, SL_WIRE_NAK,
	SL_WIRE_RTS, SL_WIRE_RTR, SL_WIRE_FIN, SL_WIRE_WRITE, SL_WIRE_DONE,
	SL_WIRE_BYE, SL_WIRE_AUTH,
};
#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

/* The types that carry a payload. */
static const uint8_t payload_types[] = { SL_WIRE_EAGER, SL_WIRE_WRITE };
#define N_PAYLOAD_TYPES (sizeof(payload_types) / sizeof(payload_types[0]))

/*
 * The documented properties of each type, written out here rather than
 * taken from wire.c, so that the tests check the code against sl_wire.h.
 */
static uint32_t spec_hdr_len(uint8_t type)
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
#define SPEC_VERSION 3u

/*
 * Sequenced frames (seq >= 1): the data frames EAGER and RTS and, since
 * version 2, the control frames NAK, RTR, FIN and DONE.  HELLO, ACK,
 * WRITE, BYE and (version 3) AUTH carry seq 0.
 */
static int spec_is_sequenced(uint8_t type)
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

static const uint8_t sequenced_types[] = {
	SL_WIRE_EAGER, SL_WIRE_NAK, SL_WIRE_RTS, SL_WIRE_RTR, SL_WIRE_FIN,
	SL_WIRE_DONE,
};
#define N_SEQUENCED_TYPES (sizeof(sequenced_types) / sizeof(sequenced_types[0]))

static const uint8_t unsequenced_types[] = {
	SL_WIRE_HELLO, SL_WIRE_ACK, SL_WIRE_WRITE, SL_WIRE_BYE, SL_WIRE_AUTH,
};
#define N_UNSEQUENCED_TYPES (sizeof(unsequenced_types) / sizeof(unsequenced_types[0]))

static int spec_has_payload(uint8_t type)
{
	return type == SL_WIRE_EAGER || type == SL_WIRE_WRITE;
}

/* A HELLO's credit grant: 1..65536 frames. */
#define SPEC_CREDITS_MAX 65536u

static int spec_credits_valid(uint64_t c)
{
	return c >= 1 && c <= SPEC_CREDITS_MAX;
}

/* Credit grants the HELLO must refuse: 0, and over 65536 in every byte. */
static const uint32_t bad_credits[] = {
	0, SPEC_CREDITS_MAX + 1, SPEC_CREDITS_MAX + 0x100, 0x0001ffffu, 0x20000,
	0x00ff0000u, 0x01000000u, 0x01000001u, 0x80000000u, 0xffff0000u,
	UINT32_MAX,
};
#define N_BAD_CREDITS (sizeof(bad_credits) / sizeof(bad_credits[0]))

/* ... and ones it must take, both ends included. */
static const uint32_t good_credits[] = {
	1, 2, 0xff, 0x100, 0x101, 256, 0x8000, 0xfffe, 0xffff,
	SPEC_CREDITS_MAX - 1, SPEC_CREDITS_MAX,
};
#define N_GOOD_CREDITS (sizeof(good_credits) / sizeof(good_credits[0]))

/* A NAK or error status: SL_NAK_* 1..2, SL_ERR_* 16..23. */
static int spec_nak_status(uint32_t s)
{
	return (s >= 1 && s <= 2) || (s >= 16 && s <= 23);
}

static const uint32_t nak_statuses[] = {
	SL_NAK_BUSY, SL_NAK_RECEIVER_FULL, SL_ERR_NO_ENDPOINT,
	SL_ERR_TRUNCATED, SL_ERR_PEER_DOWN, SL_ERR_PEER_RESTARTED,
	SL_ERR_CANCELED, SL_ERR_INVALID, SL_ERR_ACCESS, SL_ERR_REG_LIMIT,
};
#define N_NAK_STATUSES (sizeof(nak_statuses) / sizeof(nak_statuses[0]))

/* Neither 0 nor a NAK/error status; the high bytes matter too.  25,
 * SL_ERR_STALLED, is decided locally and never travels. */
static const uint32_t bad_statuses[] = {
	3, 15, 24, 25, 0x100, 0x101, 0x10001, 0x01000010u, 0x80000000u, UINT32_MAX,
};
#define N_BAD_STATUSES (sizeof(bad_statuses) / sizeof(bad_statuses[0]))

/*
 * Bytes placed at the very end of a readable page, followed by a PROT_NONE
 * page: any read past the given length faults at once, also outside
 * valgrind.
 */
static uint8_t *guard_area;
static size_t page_size;

static void guard_setup(void)
{
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	guard_area = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(guard_area, MAP_FAILED);
	ck_assert_int_eq(mprotect(guard_area + page_size, page_size, PROT_NONE), 0);
}

static void guard_teardown(void)
{
	munmap(guard_area, 2 * page_size);
	guard_area = NULL;
}

/* Copy @len bytes so that they end exactly at the guard page. */
static const uint8_t *guarded(const void *src, size_t len)
{
	uint8_t *dst = guard_area + page_size - len;

	memcpy(dst, src, len);
	return dst;
}

static struct sl_wire_frame make_frame(uint8_t type)
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
static int frames_equal(const struct sl_wire_frame *a,
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

static void assert_frames_equal(const struct sl_wire_frame *a,
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
static size_t encode_valid(uint8_t type, uint8_t *buf, size_t cap)
{
	struct sl_wire_frame f = make_frame(type);
	int rc = sl_wire_encode(&f, buf, cap);

	ck_assert_int_eq(rc, (int)sl_wire_hdr_len(type));
	ck_assert_uint_le((size_t)rc + f.payload_len, cap);
	memset(buf + rc, 0, f.payload_len);
	return (size_t)rc + f.payload_len;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Both decoders must reject @buf as malformed, whatever its length. */
static void expect_eproto(const uint8_t *buf, size_t len)
{
	struct sl_wire_frame f;
	const uint8_t *g = guarded(buf, len);

	ck_assert_int_eq(sl_wire_decode_hdr(g, len, &f), -EPROTO);
	ck_assert_int_eq(sl_wire_decode(g, len, &f), -EPROTO);
}

static void expect_ok(const uint8_t *buf, size_t len)
{
	struct sl_wire_frame f;
	const uint8_t *g = guarded(buf, len);

	ck_assert_int_gt(sl_wire_decode_hdr(g, len, &f), 0);
	ck_assert_int_gt(sl_wire_decode(g, len, &f), 0);
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static uint64_t get_le(const uint8_t *p, int width)
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
static size_t raw_encode(const struct sl_wire_frame *f, uint8_t *p)
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
#define SMALL_PAYLOAD 64

/*
 * @f is a valid frame: sl_wire_encode() writes exactly the documented bytes,
 * and both decoders give @f back, from a buffer that ends at the guard page.
 */
static void expect_valid(const struct sl_wire_frame *f)
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
static void expect_invalid(const struct sl_wire_frame *f)
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

/*
 * The test's own validator: 1 when the @len bytes at @p (a prefix of a
 * header, or a whole one) already break a rule of sl_wire.h, whatever
 * bytes follow.  Only the rules whose bytes are all present are applied.
 */
static int ref_prefix_bad(const uint8_t *p, size_t len)
{
#define HAVE(off, w) (len >= (size_t)(off) + (w))
	uint8_t type;
	uint32_t hlen;

	if (len >= 1 && p[0] != SPEC_VERSION)
		return 1;
	if (len < 2)
		return 0;
	type = p[1];
	hlen = spec_hdr_len(type);
	if (hlen == 0)
		return 1;
	if (HAVE(2, 2) && get_le(p + 2, 2) != 0)
		return 1;
	if (HAVE(4, 4) && get_le(p + 4, 4) != hlen)
		return 1;
	if (HAVE(8, 4)) {
		uint64_t pl = get_le(p + 8, 4);

		if (pl > SL_WIRE_PAYLOAD_MAX || (pl != 0 && !spec_has_payload(type) &&
						 (type != SL_WIRE_AUTH || pl > SL_WIRE_AUTH_WHO_MAX)))
			return 1;
	}
	if (HAVE(12, 4) && get_le(p + 12, 4) != 0)
		return 1;
	if (HAVE(16, 8) && (spec_is_sequenced(type) ? get_le(p + 16, 8) == 0 :
			     get_le(p + 16, 8) != 0))
		return 1;
	switch (type) {
	case SL_WIRE_HELLO:
		if (HAVE(32, 4) && (get_le(p + 32, 4) == SL_NODE_LOCAL ||
				    get_le(p + 32, 4) == SL_NODE_ANY))
			return 1;
		if (HAVE(40, 8) && get_le(p + 40, 8) == 0)
			return 1;
		if (HAVE(56, 4) && !spec_credits_valid(get_le(p + 56, 4)))
			return 1;
		if (HAVE(60, 4) && get_le(p + 60, 4) != 0)
			return 1;
		/* 64..71 peer_incarnation: any value, 0 included. */
		break;
	case SL_WIRE_EAGER:
		/* 52..55 sender_uid: any value. */
		break;
	case SL_WIRE_NAK:
		if (HAVE(32, 8) && get_le(p + 32, 8) == 0)
			return 1;
		if (HAVE(40, 4) && !spec_nak_status((uint32_t)get_le(p + 40, 4)))
			return 1;
		if (HAVE(44, 4) && get_le(p + 44, 4) != 0)
			return 1;
		break;
	case SL_WIRE_RTS:
		/* 52..55 sender_uid: any value. */
		if (HAVE(56, 8) && (get_le(p + 56, 8) == 0 ||
				    get_le(p + 56, 8) > SL_WIRE_RNDV_MAX))
			return 1;
		if (HAVE(64, 8) && get_le(p + 64, 8) == 0)
			return 1;
		break;
	case SL_WIRE_RTR:
		if (HAVE(32, 8) && get_le(p + 32, 8) == 0)
			return 1;
		if (HAVE(64, 4) && get_le(p + 64, 4) != 0 &&
		    !spec_nak_status((uint32_t)get_le(p + 64, 4)))
			return 1;
		/* offset: 0 on a refusal, else at most len. */
		if (HAVE(68, 4) && get_le(p + 64, 4) != 0 && get_le(p + 68, 4) != 0)
			return 1;
		if (HAVE(64, 4) && get_le(p + 64, 4) == 0) {
			if (get_le(p + 60, 4) == 0)
				return 1;
			if (get_le(p + 48, 8) > SL_WIRE_RNDV_MAX)
				return 1;
			if (HAVE(68, 4) && get_le(p + 68, 4) > get_le(p + 48, 8))
				return 1;
		}
		break;
	case SL_WIRE_FIN:
		if (HAVE(32, 4) && get_le(p + 32, 4) == 0)
			return 1;
		if (HAVE(36, 4) && get_le(p + 36, 4) != 0 &&
		    !spec_nak_status((uint32_t)get_le(p + 36, 4)))
			return 1;
		if (HAVE(40, 8) && get_le(p + 40, 8) != 0)
			return 1;
		break;
	case SL_WIRE_WRITE:
		if (HAVE(44, 4) && get_le(p + 44, 4) > 1)
			return 1;
		if (HAVE(48, 4) && get_le(p + 44, 4) == 0 && get_le(p + 48, 4) != 0)
			return 1;
		if (HAVE(52, 4) && get_le(p + 52, 4) != 0)
			return 1;
		break;
	case SL_WIRE_DONE:
		if (HAVE(32, 8) && get_le(p + 32, 8) == 0)
			return 1;
		if (HAVE(40, 4) && get_le(p + 40, 4) != 0)
			return 1;
		if (HAVE(44, 4) && get_le(p + 44, 4) != 0)
			return 1;
		break;
	case SL_WIRE_BYE:
		if (HAVE(32, 8) && get_le(p + 32, 8) == 0)
			return 1;	/* incarnation */
		if (HAVE(40, 4) && get_le(p + 40, 4) > SL_WIRE_BYE_REASON_MAX)
			return 1;	/* reason: 0 stopping, else a refusal (version 3) */
		if (HAVE(44, 4) && (get_le(p + 40, 4) == 0 ? get_le(p + 44, 4) != 0 :
				    get_le(p + 44, 4) == SL_NODE_LOCAL ||
				    get_le(p + 44, 4) == SL_NODE_ANY))
			return 1;	/* the refuser's node id */
		break;
	case SL_WIRE_AUTH:
		/* Judged on the whole header: the rules tie fields together. */
		if (HAVE(32, 4) && (get_le(p + 32, 4) == SL_NODE_LOCAL ||
				    get_le(p + 32, 4) == SL_NODE_ANY))
			return 1;
		if (HAVE(36, 2) && (get_le(p + 36, 2) < 1 || get_le(p + 36, 2) > 3))
			return 1;
		if (HAVE(38, 2) && get_le(p + 38, 2) > 2)
			return 1;
		if (HAVE(40, 8) && get_le(p + 40, 8) == 0)
			return 1;
		if (HAVE(128, 0)) {
			uint64_t step = get_le(p + 36, 2), mode = get_le(p + 38, 2);
			int nonce0 = 1, proof0 = 1;

			for (int i = 0; i < 32; i++) {
				nonce0 &= p[64 + i] == 0;
				proof0 &= p[96 + i] == 0;
			}
			if (step != 1 && get_le(p + 56, 8) != 0)
				return 1;
			if (step == 3 && !nonce0)
				return 1;
			if ((step == 1 || mode == 0) && !proof0)
				return 1;
			/* The "who" of steps 1 and 2: at least one name byte. */
			if (get_le(p + 8, 4) != 0 && (step == 3 || get_le(p + 8, 4) < 5))
				return 1;
		}
		break;
	default:
		break;
	}
	return 0;
#undef HAVE
}

/* ------------------------------------------------------------------ */

START_TEST(test_hdr_len)
{
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_HELLO), SL_WIRE_HELLO_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_EAGER), SL_WIRE_EAGER_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_ACK), SL_WIRE_ACK_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_NAK), SL_WIRE_NAK_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_RTS), SL_WIRE_RTS_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_RTR), SL_WIRE_RTR_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_FIN), SL_WIRE_FIN_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_WRITE), SL_WIRE_WRITE_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_DONE), SL_WIRE_DONE_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_BYE), SL_WIRE_BYE_LEN);
	ck_assert_uint_eq(SL_WIRE_DONE, 9);
	ck_assert_uint_eq(SL_WIRE_DONE_LEN, 48);
	ck_assert_uint_eq(SL_WIRE_BYE, 10);
	ck_assert_uint_eq(SL_WIRE_BYE_LEN, 48);
	ck_assert_uint_eq(SL_WIRE_HELLO_LEN, 72);	/* 64 in version 1 */
	ck_assert_uint_eq(SL_WIRE_AUTH, 11);
	ck_assert_uint_eq(SL_WIRE_AUTH_LEN, 128);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_AUTH), SL_WIRE_AUTH_LEN);
	ck_assert_uint_eq(SL_WIRE_VERSION, 3);
	ck_assert_uint_eq(sl_wire_hdr_len(0), 0);
	ck_assert_uint_eq(sl_wire_hdr_len(12), 0);
	ck_assert_uint_eq(sl_wire_hdr_len(13), 0);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_TYPE_MAX + 1), 0);
	ck_assert_uint_eq(sl_wire_hdr_len(255), 0);
	ck_assert_uint_eq(SL_WIRE_TYPE_MAX, 11);
	ck_assert_uint_eq(SL_WIRE_TYPE_MAX, SL_WIRE_AUTH);
	ck_assert_uint_eq(N_TYPES, SL_WIRE_TYPE_MAX);
	/* Every type byte: exactly 1..11 are known, with the documented
	 * lengths, and the largest is SL_WIRE_HDR_MAX. */
	uint32_t max = 0;
	for (unsigned t = 0; t < 256; t++) {
		uint32_t h = sl_wire_hdr_len((uint8_t)t);

		ck_assert_uint_eq(h, spec_hdr_len((uint8_t)t));
		ck_assert_int_eq(h != 0, t >= 1 && t <= SL_WIRE_TYPE_MAX);
		if (h > max)
			max = h;
	}
	ck_assert_uint_eq(max, SL_WIRE_HDR_MAX);
	for (size_t i = 0; i < N_TYPES; i++) {
		ck_assert_uint_le(sl_wire_hdr_len(all_types[i]), SL_WIRE_HDR_MAX);
		ck_assert_uint_ge(sl_wire_hdr_len(all_types[i]), SL_WIRE_COMMON_LEN);
		ck_assert_uint_eq(sl_wire_hdr_len(all_types[i]) % 8, 0);
	}
	ck_assert_uint_eq(SL_WIRE_RNDV_MAX, SL_MSG_MAX);
	ck_assert_uint_eq(SL_WIRE_CREDITS_MAX, SPEC_CREDITS_MAX);
	for (size_t i = 0, n = 0; i < N_TYPES; i++) {
		if (!spec_has_payload(all_types[i]))
			continue;
		ck_assert_uint_lt(n, N_PAYLOAD_TYPES);
		ck_assert_uint_eq(payload_types[n++], all_types[i]);
	}
}
END_TEST

START_TEST(test_round_trip)
{
	uint8_t type = all_types[_i];
	struct sl_wire_frame in = make_frame(type), out, out2;
	uint8_t buf[SL_WIRE_HDR_MAX + 16];
	size_t total;
	const uint8_t *g;
	int rc;

	/* hdr_len is documented as ignored on encode. */
	in.hdr_len = 12345;
	rc = sl_wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(rc, (int)sl_wire_hdr_len(type));
	in.hdr_len = (uint32_t)rc;
	total = (size_t)rc + in.payload_len;
	memset(buf + rc, 0x5a, in.payload_len);
	g = guarded(buf, total);

	memset(&out, 0xee, sizeof(out));
	ck_assert_int_eq(sl_wire_decode_hdr(g, total, &out), rc);
	assert_frames_equal(&in, &out);

	memset(&out2, 0xee, sizeof(out2));
	ck_assert_int_eq(sl_wire_decode(g, total, &out2), rc);
	assert_frames_equal(&in, &out2);

	/* decode_hdr needs only the header, never the payload. */
	g = guarded(buf, (size_t)rc);
	ck_assert_int_eq(sl_wire_decode_hdr(g, (size_t)rc, &out), rc);
	assert_frames_equal(&in, &out);
}
END_TEST

START_TEST(test_round_trip_extremes)
{
	struct sl_wire_frame in = make_frame(SL_WIRE_EAGER), out;
	uint8_t buf[SL_WIRE_HDR_MAX];
	int rc;

	in.seq = UINT64_MAX;
	in.ack = UINT64_MAX;
	in.payload_len = SL_WIRE_PAYLOAD_MAX;
	in.u.eager.src_port = UINT32_MAX;
	in.u.eager.dst_port = 0;
	in.u.eager.tag = UINT64_MAX;
	in.u.eager.dst_node = UINT32_MAX;
	in.u.eager.sender_uid = SL_UID_UNKNOWN;
	rc = sl_wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(rc, (int)SL_WIRE_EAGER_LEN);
	in.hdr_len = (uint32_t)rc;
	ck_assert_int_eq(sl_wire_decode_hdr(buf, (size_t)rc, &out), rc);
	assert_frames_equal(&in, &out);

	/* Every valid NAK status survives the trip. */
	for (size_t i = 0; i < N_NAK_STATUSES; i++) {
		in = make_frame(SL_WIRE_NAK);
		in.u.nak.status = nak_statuses[i];
		rc = sl_wire_encode(&in, buf, sizeof(buf));
		ck_assert_int_eq(rc, (int)SL_WIRE_NAK_LEN);
		ck_assert_int_eq(sl_wire_decode(buf, (size_t)rc, &out), rc);
		ck_assert_uint_eq(out.u.nak.status, nak_statuses[i]);
		ck_assert_uint_eq(out.seq, 0x1a1b1c1d1e1f1011ull);
	}

	/* A NAK is sequenced (version 2): seq and nak_seq at their ends. */
	in = make_frame(SL_WIRE_NAK);
	in.seq = UINT64_MAX;
	in.ack = UINT64_MAX;
	in.u.nak.nak_seq = UINT64_MAX;
	expect_valid(&in);
	in.seq = 1;
	in.ack = 0;
	in.u.nak.nak_seq = 1;
	expect_valid(&in);

	/* ACK: seq 0, any ack. */
	in = make_frame(SL_WIRE_ACK);
	in.ack = UINT64_MAX;
	expect_valid(&in);
	in.ack = 0;
	expect_valid(&in);

	/* BYE: seq 0, any ack, any incarnation but 0. */
	in = make_frame(SL_WIRE_BYE);
	in.ack = UINT64_MAX;
	in.u.bye.incarnation = UINT64_MAX;
	expect_valid(&in);
	in.ack = 0;
	in.u.bye.incarnation = 1;
	expect_valid(&in);
	in.u.bye.incarnation = 1ull << 63;
	expect_valid(&in);
}
END_TEST

/* Every field of the rendezvous frames at its largest, then its smallest
 * valid value. */
START_TEST(test_round_trip_extremes_rndv)
{
	struct sl_wire_frame f;

	f = make_frame(SL_WIRE_RTS);
	f.seq = UINT64_MAX;
	f.ack = UINT64_MAX;
	f.u.rts.src_port = UINT32_MAX;
	f.u.rts.dst_port = UINT32_MAX;
	f.u.rts.tag = UINT64_MAX;
	f.u.rts.dst_node = UINT32_MAX;
	f.u.rts.sender_uid = SL_UID_UNKNOWN;
	f.u.rts.msg_len = SL_WIRE_RNDV_MAX;
	f.u.rts.send_id = UINT64_MAX;
	expect_valid(&f);
	memset(&f.u, 0, sizeof(f.u));
	f.seq = 1;
	f.ack = 0;
	f.u.rts.msg_len = 1;
	f.u.rts.send_id = 1;
	expect_valid(&f);

	f = make_frame(SL_WIRE_RTR);
	f.seq = UINT64_MAX;
	f.ack = UINT64_MAX;
	f.u.rtr.send_id = UINT64_MAX;
	f.u.rtr.raddr = UINT64_MAX;
	f.u.rtr.len = SL_WIRE_RNDV_MAX;
	f.u.rtr.rkey = UINT32_MAX;
	f.u.rtr.recv_id = UINT32_MAX;
	f.u.rtr.status = SL_OK;
	expect_valid(&f);
	memset(&f.u, 0, sizeof(f.u));
	f.seq = 1;
	f.ack = 0;
	f.u.rtr.send_id = 1;
	f.u.rtr.recv_id = 1;
	expect_valid(&f);	/* raddr, len, rkey 0 */
	/* An RTR sent again: offset up to len, not past it. */
	f.u.rtr.len = 5u << 20;
	f.u.rtr.offset = 5u << 20;
	expect_valid(&f);
	f.u.rtr.offset = (5u << 20) + 1;
	expect_invalid(&f);
	f.u.rtr.len = SL_WIRE_RNDV_MAX;
	f.u.rtr.offset = SL_WIRE_RNDV_MAX;
	expect_valid(&f);
	f.u.rtr.offset = 0;
	/* A refusal: any status, and recv_id, len and the rest unchecked. */
	for (size_t i = 0; i < N_NAK_STATUSES; i++) {
		f = make_frame(SL_WIRE_RTR);
		f.u.rtr.status = nak_statuses[i];
		expect_valid(&f);
		f.u.rtr.send_id = UINT64_MAX;
		f.u.rtr.raddr = UINT64_MAX;
		f.u.rtr.len = UINT64_MAX;
		f.u.rtr.rkey = UINT32_MAX;
		f.u.rtr.recv_id = UINT32_MAX;
		expect_valid(&f);
		f.u.rtr.send_id = 1;
		f.u.rtr.raddr = 0;
		f.u.rtr.len = 0;
		f.u.rtr.rkey = 0;
		f.u.rtr.recv_id = 0;
		expect_valid(&f);
		f.u.rtr.offset = 1;	/* a refusal resumes nothing */
		expect_invalid(&f);
	}

	f = make_frame(SL_WIRE_FIN);
	f.seq = UINT64_MAX;
	f.ack = UINT64_MAX;
	f.u.fin.recv_id = UINT32_MAX;
	f.u.fin.status = SL_OK;
	expect_valid(&f);
	f.seq = 1;
	f.ack = 0;
	f.u.fin.recv_id = 1;
	expect_valid(&f);
	for (size_t i = 0; i < N_NAK_STATUSES; i++) {
		f.u.fin.status = nak_statuses[i];
		f.u.fin.recv_id = (i & 1) ? 1 : UINT32_MAX;
		expect_valid(&f);
	}

	f = make_frame(SL_WIRE_WRITE);
	f.ack = UINT64_MAX;
	f.payload_len = SL_WIRE_PAYLOAD_MAX;
	f.u.write.raddr = UINT64_MAX;
	f.u.write.rkey = UINT32_MAX;
	f.u.write.has_imm = 1;
	f.u.write.imm = UINT32_MAX;
	expect_valid(&f);
	memset(&f.u, 0, sizeof(f.u));
	f.ack = 0;
	f.payload_len = 0;
	expect_valid(&f);	/* no immediate, empty write */
	f.payload_len = 1;
	f.u.write.has_imm = 1;
	expect_valid(&f);	/* an immediate of 0 is still an immediate */

	f = make_frame(SL_WIRE_DONE);
	f.seq = UINT64_MAX;
	f.ack = UINT64_MAX;
	f.u.done.send_id = UINT64_MAX;
	f.u.done.status = SL_OK;
	expect_valid(&f);
	memset(&f.u, 0, sizeof(f.u));
	f.seq = 1;
	f.ack = 0;
	f.u.done.send_id = 1;
	expect_valid(&f);
	f.u.done.send_id = 1ull << 63;
	expect_valid(&f);
}
END_TEST

/*
 * Every HELLO field at its largest, then its smallest valid value: the
 * incarnation's is 1 (0 is refused), peer_incarnation's is 0 ("none").
 */
START_TEST(test_round_trip_extremes_hello)
{
	struct sl_wire_frame f;

	f = make_frame(SL_WIRE_HELLO);
	f.ack = UINT64_MAX;
	f.u.hello.node_id = SL_NODE_ANY - 1;
	f.u.hello.eager_max = UINT32_MAX;
	f.u.hello.incarnation = UINT64_MAX;
	f.u.hello.last_rx_seq = UINT64_MAX;
	f.u.hello.credits = SL_WIRE_CREDITS_MAX;
	f.u.hello.peer_incarnation = UINT64_MAX;
	expect_valid(&f);
	memset(&f.u, 0, sizeof(f.u));
	f.ack = 0;
	f.u.hello.node_id = SL_NODE_LOCAL + 1;
	f.u.hello.credits = 1;
	expect_invalid(&f);	/* incarnation 0 */
	f.u.hello.incarnation = 1;
	expect_valid(&f);	/* eager_max, last_rx_seq, peer_incarnation 0 */
	/* The ends of the window with the other fields at theirs. */
	f.u.hello.credits = SL_WIRE_CREDITS_MAX;
	expect_valid(&f);
	/* peer_incarnation at its largest with the rest at their smallest. */
	f.u.hello.peer_incarnation = UINT64_MAX;
	expect_valid(&f);
	f.u.hello.incarnation = 0;
	expect_invalid(&f);
	f = make_frame(SL_WIRE_HELLO);
	f.ack = UINT64_MAX;
	f.u.hello.node_id = UINT32_MAX - 1;
	f.u.hello.eager_max = UINT32_MAX;
	f.u.hello.incarnation = UINT64_MAX;
	f.u.hello.last_rx_seq = UINT64_MAX;
	f.u.hello.credits = 1;
	f.u.hello.peer_incarnation = 0;
	expect_valid(&f);
	f.u.hello.incarnation = 1;
	expect_valid(&f);
	f.u.hello.incarnation = 0;
	expect_invalid(&f);
	/* The same incarnation on both sides is nothing special. */
	f = make_frame(SL_WIRE_HELLO);
	f.u.hello.peer_incarnation = f.u.hello.incarnation;
	expect_valid(&f);
	/* Every good grant survives the trip. */
	for (size_t i = 0; i < N_GOOD_CREDITS; i++) {
		f = make_frame(SL_WIRE_HELLO);
		f.u.hello.credits = good_credits[i];
		expect_valid(&f);
	}
}
END_TEST

START_TEST(test_exact_bytes_eager)
{
	static const uint8_t want[SL_WIRE_EAGER_LEN] = {
		/* 0 version 3, type 2, flags */
		0x03, 0x02, 0x00, 0x00,
		/* 4 hdr_len = 56 */
		0x38, 0x00, 0x00, 0x00,
		/* 8 payload_len = 5 */
		0x05, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 src_port */
		0x24, 0x23, 0x22, 0x21,
		/* 36 dst_port */
		0x34, 0x33, 0x32, 0x31,
		/* 40 tag */
		0x48, 0x47, 0x46, 0x45, 0x44, 0x43, 0x42, 0x41,
		/* 48 dst_node */
		0x54, 0x53, 0x52, 0x51,
		/* 52 sender_uid */
		0x64, 0x63, 0x62, 0x61,
	};
	struct sl_wire_frame f = make_frame(SL_WIRE_EAGER);
	uint8_t buf[SL_WIRE_HDR_MAX];

	/* Garbage in the buffer shows the encoder clears the rsvd fields. */
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_EAGER_LEN);
	ck_assert_mem_eq(buf, want, sizeof(want));
	ck_assert_uint_eq(buf[0], 3);
	ck_assert_uint_eq(buf[0], SL_WIRE_VERSION);
	ck_assert_uint_eq(buf[16], 0x18);
	ck_assert_uint_eq(buf[23], 0x11);
	/* Nothing written past the header. */
	ck_assert_uint_eq(buf[SL_WIRE_EAGER_LEN], 0xff);
}
END_TEST

/*
 * make_frame(@type) encodes to exactly @want (over a buffer of 0xff, so the
 * reserved fields are shown cleared and nothing past the header written),
 * and @want decodes back to it.
 */
static void check_golden(uint8_t type, const uint8_t *want, size_t n)
{
	struct sl_wire_frame f = make_frame(type), out;
	uint8_t buf[SL_WIRE_HDR_MAX + 16];
	const uint8_t *g;

	ck_assert_uint_eq(n, spec_hdr_len(type));
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)n);
	ck_assert_mem_eq(buf, want, n);
	for (size_t i = n; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0xff);

	f.hdr_len = (uint32_t)n;
	g = guarded(want, n);
	memset(&out, 0xee, sizeof(out));
	ck_assert_int_eq(sl_wire_decode_hdr(g, n, &out), (int)n);
	assert_frames_equal(&f, &out);
	memcpy(buf, want, n);
	memset(buf + n, 0x33, f.payload_len);
	g = guarded(buf, n + f.payload_len);
	memset(&out, 0xee, sizeof(out));
	ck_assert_int_eq(sl_wire_decode(g, n + f.payload_len, &out), (int)n);
	assert_frames_equal(&f, &out);
}

START_TEST(test_exact_bytes_rts)
{
	static const uint8_t want[SL_WIRE_RTS_LEN] = {
		/* 0 version 3, type 5, flags */
		0x03, 0x05, 0x00, 0x00,
		/* 4 hdr_len = 72 */
		0x48, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 src_port */
		0x24, 0x23, 0x22, 0x21,
		/* 36 dst_port */
		0x34, 0x33, 0x32, 0x31,
		/* 40 tag */
		0x48, 0x47, 0x46, 0x45, 0x44, 0x43, 0x42, 0x41,
		/* 48 dst_node */
		0x54, 0x53, 0x52, 0x51,
		/* 52 sender_uid */
		0x64, 0x63, 0x62, 0x61,
		/* 56 msg_len */
		0x3d, 0x3c, 0x3b, 0x3a, 0x00, 0x00, 0x00, 0x00,
		/* 64 send_id */
		0x78, 0x77, 0x76, 0x75, 0x74, 0x73, 0x72, 0x71,
	};

	check_golden(SL_WIRE_RTS, want, sizeof(want));
}
END_TEST

START_TEST(test_exact_bytes_rtr)
{
	static const uint8_t want[SL_WIRE_RTR_LEN] = {
		/* 0 version 3, type 6, flags */
		0x03, 0x06, 0x00, 0x00,
		/* 4 hdr_len = 72 */
		0x48, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: a sequenced control frame */
		0x51, 0x50, 0x5f, 0x5e, 0x5d, 0x5c, 0x5b, 0x5a,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 send_id */
		0x88, 0x87, 0x86, 0x85, 0x84, 0x83, 0x82, 0x81,
		/* 40 raddr */
		0x98, 0x97, 0x96, 0x95, 0x94, 0x93, 0x92, 0x91,
		/* 48 len */
		0x2d, 0x2c, 0x2b, 0x2a, 0x00, 0x00, 0x00, 0x00,
		/* 56 rkey */
		0xa4, 0xa3, 0xa2, 0xa1,
		/* 60 recv_id */
		0xb4, 0xb3, 0xb2, 0xb1,
		/* 64 status = SL_OK */
		0x00, 0x00, 0x00, 0x00,
		/* 68 offset: a first RTR */
		0x00, 0x00, 0x00, 0x00,
	};
	struct sl_wire_frame f = make_frame(SL_WIRE_RTR);
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	check_golden(SL_WIRE_RTR, want, sizeof(want));

	/* The status field, with a value whose bytes are all non-zero. */
	f.u.rtr.status = 0x01000010u;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.u.rtr.status = SL_ERR_PEER_RESTARTED;
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_RTR_LEN);
	ck_assert_mem_eq(buf, want, 64);
	ck_assert_uint_eq(buf[64], SL_ERR_PEER_RESTARTED);
	for (int i = 65; i < 72; i++)
		ck_assert_uint_eq(buf[i], 0);
	ck_assert_uint_eq(buf[72], 0xff);

	/* An RTR sent again: the offset, little-endian at 68. */
	f = make_frame(SL_WIRE_RTR);
	f.u.rtr.offset = 0x2a2b2c2du;	/* = len */
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_RTR_LEN);
	ck_assert_mem_eq(buf, want, 68);
	ck_assert_uint_eq(buf[68], 0x2d);
	ck_assert_uint_eq(buf[69], 0x2c);
	ck_assert_uint_eq(buf[70], 0x2b);
	ck_assert_uint_eq(buf[71], 0x2a);
}
END_TEST

START_TEST(test_exact_bytes_fin)
{
	static const uint8_t want[SL_WIRE_FIN_LEN] = {
		/* 0 version 3, type 7, flags */
		0x03, 0x07, 0x00, 0x00,
		/* 4 hdr_len = 48 */
		0x30, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: a sequenced control frame */
		0x31, 0x30, 0x3f, 0x3e, 0x3d, 0x3c, 0x3b, 0x3a,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 recv_id */
		0xc4, 0xc3, 0xc2, 0xc1,
		/* 36 status = SL_ERR_ACCESS (22) */
		0x16, 0x00, 0x00, 0x00,
		/* 40 rsvd */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};

	check_golden(SL_WIRE_FIN, want, sizeof(want));
}
END_TEST

START_TEST(test_exact_bytes_write)
{
	static const uint8_t want[SL_WIRE_WRITE_LEN] = {
		/* 0 version 3, type 8, flags */
		0x03, 0x08, 0x00, 0x00,
		/* 4 hdr_len = 56 */
		0x38, 0x00, 0x00, 0x00,
		/* 8 payload_len = 7 */
		0x07, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: WRITE is not sequenced */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 raddr */
		0xd8, 0xd7, 0xd6, 0xd5, 0xd4, 0xd3, 0xd2, 0xd1,
		/* 40 rkey */
		0xe4, 0xe3, 0xe2, 0xe1,
		/* 44 has_imm */
		0x01, 0x00, 0x00, 0x00,
		/* 48 imm */
		0xf4, 0xf3, 0xf2, 0xf1,
		/* 52 rsvd */
		0x00, 0x00, 0x00, 0x00,
	};

	check_golden(SL_WIRE_WRITE, want, sizeof(want));
}
END_TEST

START_TEST(test_exact_bytes_done)
{
	static const uint8_t want[SL_WIRE_DONE_LEN] = {
		/* 0 version 3, type 9, flags */
		0x03, 0x09, 0x00, 0x00,
		/* 4 hdr_len = 48 */
		0x30, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: a sequenced control frame */
		0x41, 0x40, 0x4f, 0x4e, 0x4d, 0x4c, 0x4b, 0x4a,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 send_id */
		0xe8, 0xe7, 0xe6, 0xe5, 0xe4, 0xe3, 0xe2, 0xe1,
		/* 40 status = SL_OK, the only one in version 2 */
		0x00, 0x00, 0x00, 0x00,
		/* 44 rsvd */
		0x00, 0x00, 0x00, 0x00,
	};

	check_golden(SL_WIRE_DONE, want, sizeof(want));
}
END_TEST

START_TEST(test_exact_bytes_auth)
{
	static const uint8_t want[SL_WIRE_AUTH_LEN] = {
		/* 0 version 3, type 11, flags */
		0x03, 0x0b, 0x00, 0x00,
		/* 4 hdr_len = 128 */
		0x80, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: AUTH is not sequenced */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 node_id */
		0xa4, 0xa3, 0xa2, 0xa1,
		/* 36 step 2, 38 mode 1 */
		0x02, 0x00, 0x01, 0x00,
		/* 40 incarnation */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1,
		/* 48 key_id */
		0xc8, 0xc7, 0xc6, 0xc5, 0xc4, 0xc3, 0xc2, 0xc1,
		/* 56 key_id2: step 1 only */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* 64 nonce */
		0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
		0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
		0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,
		0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
		/* 96 proof */
		0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
		0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f,
		0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
		0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f,
	};

	check_golden(SL_WIRE_AUTH, want, sizeof(want));
}
END_TEST

/* The AUTH field rules of sl_wire.h, each broken once from a valid frame:
 * the encoder refuses it and the decoders refuse its bytes. */
START_TEST(test_auth_rules)
{
	struct sl_wire_frame f;

	f = make_frame(SL_WIRE_AUTH);
	f.u.auth.node_id = SL_NODE_LOCAL;
	expect_invalid(&f);
	f = make_frame(SL_WIRE_AUTH);
	f.u.auth.node_id = SL_NODE_ANY;
	expect_invalid(&f);
	f = make_frame(SL_WIRE_AUTH);
	f.u.auth.incarnation = 0;
	expect_invalid(&f);
	for (unsigned step = 0; step < 8; step++) {
		f = make_frame(SL_WIRE_AUTH);
		f.u.auth.step = (uint16_t)step;
		memset(f.u.auth.proof, 0, sizeof(f.u.auth.proof));	/* fits step 1 */
		if (step == 3)
			memset(f.u.auth.nonce, 0, sizeof(f.u.auth.nonce));
		if (step >= 1 && step <= 3)
			continue;	/* valid; checked below */
		expect_invalid(&f);
	}
	f = make_frame(SL_WIRE_AUTH);
	f.u.auth.mode = 3;
	expect_invalid(&f);
	/* key_id2 only in step 1. */
	f = make_frame(SL_WIRE_AUTH);
	f.u.auth.key_id2 = 1;
	expect_invalid(&f);
	/* No proof in step 1, none in mode 0; no nonce in step 3. */
	f = make_frame(SL_WIRE_AUTH);
	f.u.auth.step = 1;
	expect_invalid(&f);
	f = make_frame(SL_WIRE_AUTH);
	f.u.auth.mode = 0;
	expect_invalid(&f);
	f = make_frame(SL_WIRE_AUTH);
	f.u.auth.step = 3;
	expect_invalid(&f);
	/* ... and the frames that keep them are good. */
	{
		uint8_t buf[SL_WIRE_HDR_MAX];

		f = make_frame(SL_WIRE_AUTH);
		f.u.auth.step = 1;
		f.u.auth.key_id2 = 7;
		memset(f.u.auth.proof, 0, sizeof(f.u.auth.proof));
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_AUTH_LEN);
		expect_ok(buf, SL_WIRE_AUTH_LEN);
		f = make_frame(SL_WIRE_AUTH);
		f.u.auth.step = 3;
		memset(f.u.auth.nonce, 0, sizeof(f.u.auth.nonce));
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_AUTH_LEN);
		expect_ok(buf, SL_WIRE_AUTH_LEN);
		f = make_frame(SL_WIRE_AUTH);
		f.u.auth.mode = 0;
		f.u.auth.key_id = 0;
		memset(f.u.auth.proof, 0, sizeof(f.u.auth.proof));
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_AUTH_LEN);
		expect_ok(buf, SL_WIRE_AUTH_LEN);
	}
}
END_TEST

START_TEST(test_exact_bytes_bye)
{
	static const uint8_t want[SL_WIRE_BYE_LEN] = {
		/* 0 version 3, type 10, flags */
		0x03, 0x0a, 0x00, 0x00,
		/* 4 hdr_len = 48 */
		0x30, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: BYE is not sequenced */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 incarnation */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1,
		/* 40 reason = 0 (stopping), the only one in version 2 */
		0x00, 0x00, 0x00, 0x00,
		/* 44 rsvd */
		0x00, 0x00, 0x00, 0x00,
	};
	/* The incarnation at its ends: the smallest is 1. */
	static const struct {
		uint64_t inc;
		uint8_t bytes[8];
	} incs[] = {
		{ 1, { 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 } },
		{ 1ull << 63, { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80 } },
		{ UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } },
	};
	struct sl_wire_frame f, out;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	check_golden(SL_WIRE_BYE, want, sizeof(want));

	for (size_t i = 0; i < sizeof(incs) / sizeof(incs[0]); i++) {
		f = make_frame(SL_WIRE_BYE);
		f.u.bye.incarnation = incs[i].inc;
		memset(buf, 0xff, sizeof(buf));
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)),
				 (int)SL_WIRE_BYE_LEN);
		ck_assert_mem_eq(buf, want, 32);
		ck_assert_mem_eq(buf + 32, incs[i].bytes, 8);
		ck_assert_mem_eq(buf + 40, want + 40, 8);
		ck_assert_uint_eq(buf[48], 0xff);
		memset(&out, 0xee, sizeof(out));
		ck_assert_int_eq(sl_wire_decode(guarded(buf, SL_WIRE_BYE_LEN),
						SL_WIRE_BYE_LEN, &out),
				 (int)SL_WIRE_BYE_LEN);
		ck_assert_uint_eq(out.u.bye.incarnation, incs[i].inc);
		ck_assert_uint_eq(out.u.bye.reason, 0);
		ck_assert_uint_eq(out.seq, 0);
	}

	/* The golden bytes, each field broken alone: incarnation 0, a
	 * reason, the rsvd, a seq. */
	memcpy(buf, want, sizeof(want));
	memset(buf + 32, 0, 8);
	expect_eproto(buf, sizeof(want));
	memcpy(buf, want, sizeof(want));
	buf[40] = 0x01;
	expect_eproto(buf, sizeof(want));
	memcpy(buf, want, sizeof(want));
	buf[47] = 0x80;
	expect_eproto(buf, sizeof(want));
	memcpy(buf, want, sizeof(want));
	buf[16] = 0x01;
	expect_eproto(buf, sizeof(want));
	/* The same 48 bytes as a DONE (type 9) are not a DONE: seq 0. */
	memcpy(buf, want, sizeof(want));
	buf[1] = SL_WIRE_DONE;
	expect_eproto(buf, sizeof(want));

	/* A reason, with a value whose bytes are all non-zero: refused, and
	 * nothing written. */
	f = make_frame(SL_WIRE_BYE);
	f.u.bye.reason = 0x01020304u;
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0xff);
	f = make_frame(SL_WIRE_BYE);
	f.u.bye.incarnation = 0;
	expect_invalid(&f);
}
END_TEST

/* AUTH steps 1 and 2 may carry the sender's "who" (5..SL_WIRE_AUTH_WHO_MAX
 * bytes), step 3 none; the who names a node whose id the AUTH says. */
START_TEST(test_auth_who)
{
	uint8_t buf[SL_WIRE_HDR_MAX + SL_WIRE_AUTH_WHO_MAX], who[SL_WIRE_AUTH_WHO_MAX + 1];
	char name[SL_WIRE_AUTH_NAME_MAX + 1], long_name[SL_WIRE_AUTH_NAME_MAX + 2];
	struct sl_wire_frame f = make_frame(SL_WIRE_AUTH), out;
	uint16_t port = 0;

	for (uint16_t step = 1; step <= 3; step++) {
		static const uint32_t lens[] = { 1, 4, 5, SL_WIRE_AUTH_WHO_MAX,
						 SL_WIRE_AUTH_WHO_MAX + 1 };

		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			int ok = step != 3 && lens[i] >= 5 && lens[i] <= SL_WIRE_AUTH_WHO_MAX;

			f = make_frame(SL_WIRE_AUTH);
			f.u.auth.step = step;
			if (step != 2)
				memset(f.u.auth.proof, 0, sizeof(f.u.auth.proof));
			if (step == 3)
				memset(f.u.auth.nonce, 0, sizeof(f.u.auth.nonce));
			if (step != 1)
				f.u.auth.key_id2 = 0;
			f.payload_len = lens[i];
			ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)),
					 ok ? (int)SL_WIRE_AUTH_LEN : -EINVAL);
			f.payload_len = 0;
			ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_AUTH_LEN);
			put_le32(buf + 8, lens[i]);
			ck_assert_int_eq(sl_wire_decode_hdr(buf, SL_WIRE_AUTH_LEN, &out),
					 ok ? (int)SL_WIRE_AUTH_LEN : -EPROTO);
		}
	}

	/* The payload itself: exact bytes, and every rule. */
	ck_assert_int_eq(sl_wire_auth_who_encode("node-7.a_b", 7001, who, sizeof(who)), 14);
	ck_assert_mem_eq(who, "\x59\x1b\x0a\x00node-7.a_b", 14);
	ck_assert_int_eq(sl_wire_auth_who_decode(who, 14, sl_node_id("node-7.a_b"), name,
						 sizeof(name), &port), 0);
	ck_assert_str_eq(name, "node-7.a_b");
	ck_assert_uint_eq(port, 7001);
	/* Another node's id: no name. */
	ck_assert_int_eq(sl_wire_auth_who_decode(who, 14, sl_node_id("other"), name, sizeof(name),
						 &port), -EPROTO);
	ck_assert_str_eq(name, "");
	/* Lengths that do not match name_len, rsvd, a byte outside the set. */
	ck_assert_int_eq(sl_wire_auth_who_decode(who, 13, sl_node_id("node-7.a_b"), name,
						 sizeof(name), &port), -EPROTO);
	ck_assert_int_eq(sl_wire_auth_who_decode(who, 4, 1, name, sizeof(name), &port), -EPROTO);
	who[3] = 1;
	ck_assert_int_eq(sl_wire_auth_who_decode(who, 14, sl_node_id("node-7.a_b"), name,
						 sizeof(name), &port), -EPROTO);
	who[3] = 0;
	who[6] = ' ';
	ck_assert_int_eq(sl_wire_auth_who_decode(who, 14, sl_node_id("no e-7.a_b"), name,
						 sizeof(name), &port), -EPROTO);
	ck_assert_int_eq(sl_wire_auth_who_decode(who, 14, 1, name, 10, &port), -EPROTO);
	/* The encoder's rules. */
	ck_assert_int_eq(sl_wire_auth_who_encode("", 1, who, sizeof(who)), -EINVAL);
	ck_assert_int_eq(sl_wire_auth_who_encode("a b", 1, who, sizeof(who)), -EINVAL);
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	ck_assert_int_eq(sl_wire_auth_who_encode(long_name, 1, who, sizeof(who)), -EINVAL);
	long_name[SL_WIRE_AUTH_NAME_MAX] = '\0';
	ck_assert_int_eq(sl_wire_auth_who_encode(long_name, 1, who, sizeof(who)),
			 (int)SL_WIRE_AUTH_WHO_MAX);
	ck_assert_int_eq(sl_wire_auth_who_encode(long_name, 1, who, 10), -ENOSPC);
}
END_TEST

/* A BYE's reason (version 3): 0 stopping with node_id 0, or a refusal
 * naming its sender's node. */
START_TEST(test_bye_refusal)
{
	uint8_t buf[SL_WIRE_HDR_MAX];
	struct sl_wire_frame f = make_frame(SL_WIRE_BYE), out;

	for (uint32_t r = 0; r <= SL_WIRE_BYE_REASON_MAX + 1; r++) {
		f.u.bye.reason = r;
		f.u.bye.node_id = r ? sl_node_id("b") : 0;
		if (r > SL_WIRE_BYE_REASON_MAX) {
			ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
			continue;
		}
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_BYE_LEN);
		ck_assert_int_eq(sl_wire_decode(buf, SL_WIRE_BYE_LEN, &out), (int)SL_WIRE_BYE_LEN);
		ck_assert_uint_eq(out.u.bye.reason, r);
		ck_assert_uint_eq(out.u.bye.node_id, f.u.bye.node_id);
	}
	/* A refusal names a real node; a stop names none. */
	f.u.bye.reason = SL_WIRE_BYE_UNKNOWN_NODE;
	f.u.bye.node_id = SL_NODE_LOCAL;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.u.bye.node_id = SL_NODE_ANY;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.u.bye.reason = SL_WIRE_BYE_STOPPING;
	f.u.bye.node_id = sl_node_id("b");
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
}
END_TEST

START_TEST(test_exact_bytes_hello)
{
	static const uint8_t want[SL_WIRE_HELLO_LEN] = {
		/* 0 version 3, type 1, flags */
		0x03, 0x01, 0x00, 0x00,
		/* 4 hdr_len = 72 */
		0x48, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: HELLO is not sequenced */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 node_id */
		0xa4, 0xa3, 0xa2, 0xa1,
		/* 36 eager_max = 0x10000 */
		0x00, 0x00, 0x01, 0x00,
		/* 40 incarnation */
		0xb8, 0xb7, 0xb6, 0xb5, 0xb4, 0xb3, 0xb2, 0xb1,
		/* 48 last_rx_seq */
		0xc8, 0xc7, 0xc6, 0xc5, 0xc4, 0xc3, 0xc2, 0xc1,
		/* 56 credits = 0xd3d4 */
		0xd4, 0xd3, 0x00, 0x00,
		/* 60 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 64 peer_incarnation */
		0xe8, 0xe7, 0xe6, 0xe5, 0xe4, 0xe3, 0xe2, 0xe1,
	};
	/* The credits field at its ends: byte 2 is reached only by the
	 * largest grant. */
	static const struct {
		uint32_t credits;
		uint8_t bytes[4];
	} ends[] = {
		{ 1, { 0x01, 0x00, 0x00, 0x00 } },
		{ 0xffff, { 0xff, 0xff, 0x00, 0x00 } },
		{ SL_WIRE_CREDITS_MAX, { 0x00, 0x00, 0x01, 0x00 } },
	};
	struct sl_wire_frame f, out;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	check_golden(SL_WIRE_HELLO, want, sizeof(want));

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		f = make_frame(SL_WIRE_HELLO);
		f.u.hello.credits = ends[i].credits;
		memset(buf, 0xff, sizeof(buf));
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)),
				 (int)SL_WIRE_HELLO_LEN);
		ck_assert_mem_eq(buf, want, 56);
		ck_assert_mem_eq(buf + 56, ends[i].bytes, 4);
		ck_assert_mem_eq(buf + 60, want + 60, 12);
		ck_assert_uint_eq(buf[72], 0xff);
		memset(&out, 0xee, sizeof(out));
		ck_assert_int_eq(sl_wire_decode(guarded(buf, SL_WIRE_HELLO_LEN),
						SL_WIRE_HELLO_LEN, &out),
				 (int)SL_WIRE_HELLO_LEN);
		ck_assert_uint_eq(out.u.hello.credits, ends[i].credits);
	}

	/* The two incarnations at their ends: the smallest incarnation is 1,
	 * peer_incarnation takes 0 ("none") and all ones. */
	{
		static const struct {
			uint64_t inc, peer;
			uint8_t inc_bytes[8], peer_bytes[8];
		} incs[] = {
			{ 1, 0,
			  { 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 },
			  { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 } },
			{ UINT64_MAX, UINT64_MAX,
			  { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
			  { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } },
			{ 1ull << 63, 1,
			  { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80 },
			  { 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 } },
			{ 0x0102030405060708ull, 1ull << 63,
			  { 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01 },
			  { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80 } },
		};

		for (size_t i = 0; i < sizeof(incs) / sizeof(incs[0]); i++) {
			f = make_frame(SL_WIRE_HELLO);
			f.u.hello.incarnation = incs[i].inc;
			f.u.hello.peer_incarnation = incs[i].peer;
			memset(buf, 0xff, sizeof(buf));
			ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)),
					 (int)SL_WIRE_HELLO_LEN);
			ck_assert_mem_eq(buf, want, 40);
			ck_assert_mem_eq(buf + 40, incs[i].inc_bytes, 8);
			ck_assert_mem_eq(buf + 48, want + 48, 16);
			ck_assert_mem_eq(buf + 64, incs[i].peer_bytes, 8);
			ck_assert_uint_eq(buf[72], 0xff);
			memset(&out, 0xee, sizeof(out));
			ck_assert_int_eq(sl_wire_decode(guarded(buf, SL_WIRE_HELLO_LEN),
							SL_WIRE_HELLO_LEN, &out),
					 (int)SL_WIRE_HELLO_LEN);
			ck_assert_uint_eq(out.u.hello.incarnation, incs[i].inc);
			ck_assert_uint_eq(out.u.hello.peer_incarnation, incs[i].peer);
		}
	}

	/* The golden HELLO as version 1 sent it (64 bytes, hdr_len 64) is
	 * refused: by its version byte, and with version 2 by its length. */
	memcpy(buf, want, 64);
	buf[0] = 1;
	buf[4] = 64;
	expect_eproto(buf, 64);
	expect_eproto(buf, 1);
	buf[0] = SPEC_VERSION;
	expect_eproto(buf, 64);
	/* ... and so is the version 2 HELLO with a version 1 byte. */
	memcpy(buf, want, sizeof(want));
	buf[0] = 1;
	expect_eproto(buf, sizeof(want));
	/* An incarnation of 0 is refused; the golden bytes are otherwise good. */
	memcpy(buf, want, sizeof(want));
	memset(buf + 40, 0, 8);
	expect_eproto(buf, sizeof(want));
	f = make_frame(SL_WIRE_HELLO);
	f.u.hello.incarnation = 0;
	expect_invalid(&f);
}
END_TEST

START_TEST(test_exact_bytes_nak)
{
	static const uint8_t want[SL_WIRE_NAK_LEN] = {
		/* 0 version 3, type 4, flags */
		0x03, 0x04, 0x00, 0x00,
		/* 4 hdr_len = 48 */
		0x30, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: a sequenced control frame */
		0x11, 0x10, 0x1f, 0x1e, 0x1d, 0x1c, 0x1b, 0x1a,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		/* 32 nak_seq */
		0x68, 0x67, 0x66, 0x65, 0x64, 0x63, 0x62, 0x61,
		/* 40 status = SL_NAK_RECEIVER_FULL (2) */
		0x02, 0x00, 0x00, 0x00,
		/* 44 rsvd */
		0x00, 0x00, 0x00, 0x00,
	};

	check_golden(SL_WIRE_NAK, want, sizeof(want));
}
END_TEST

START_TEST(test_exact_bytes_ack)
{
	static const uint8_t want[SL_WIRE_ACK_LEN] = {
		/* 0 version 3, type 3, flags */
		0x03, 0x03, 0x00, 0x00,
		/* 4 hdr_len = 32 */
		0x20, 0x00, 0x00, 0x00,
		/* 8 payload_len = 0 */
		0x00, 0x00, 0x00, 0x00,
		/* 12 rsvd */
		0x00, 0x00, 0x00, 0x00,
		/* 16 seq: ACK is not sequenced */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* 24 ack */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	};

	check_golden(SL_WIRE_ACK, want, sizeof(want));
}
END_TEST

START_TEST(test_exact_bytes_hello_nak_ack)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	struct sl_wire_frame f;

	f = make_frame(SL_WIRE_HELLO);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), 72);
	ck_assert_uint_eq(buf[0], 3);
	ck_assert_uint_eq(buf[1], SL_WIRE_HELLO);
	ck_assert_uint_eq(buf[4], 72);
	for (int i = 16; i < 24; i++)
		ck_assert_uint_eq(buf[i], 0);	/* HELLO is not sequenced */
	ck_assert_uint_eq(buf[32], 0xa4);
	ck_assert_uint_eq(buf[35], 0xa1);
	ck_assert_uint_eq(buf[38], 0x01);	/* eager_max 0x10000 */
	ck_assert_uint_eq(buf[40], 0xb8);
	ck_assert_uint_eq(buf[47], 0xb1);
	ck_assert_uint_eq(buf[48], 0xc8);
	ck_assert_uint_eq(buf[55], 0xc1);
	ck_assert_uint_eq(buf[56], 0xd4);	/* credits 0xd3d4 */
	ck_assert_uint_eq(buf[57], 0xd3);
	ck_assert_uint_eq(buf[58], 0);
	ck_assert_uint_eq(buf[59], 0);
	for (int i = 60; i < 64; i++)
		ck_assert_uint_eq(buf[i], 0);	/* rsvd */
	ck_assert_uint_eq(buf[64], 0xe8);	/* peer_incarnation */
	ck_assert_uint_eq(buf[71], 0xe1);
	ck_assert_uint_eq(buf[72], 0xff);

	f = make_frame(SL_WIRE_NAK);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), 48);
	ck_assert_uint_eq(buf[0], 3);
	ck_assert_uint_eq(buf[4], 48);
	ck_assert_uint_eq(buf[16], 0x11);	/* NAK is sequenced */
	ck_assert_uint_eq(buf[23], 0x1a);
	ck_assert_uint_eq(buf[32], 0x68);
	ck_assert_uint_eq(buf[39], 0x61);
	ck_assert_uint_eq(buf[40], SL_NAK_RECEIVER_FULL);
	for (int i = 41; i < 48; i++)
		ck_assert_uint_eq(buf[i], 0);
	ck_assert_uint_eq(buf[48], 0xff);

	f = make_frame(SL_WIRE_ACK);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), 32);
	ck_assert_uint_eq(buf[0], 3);
	ck_assert_uint_eq(buf[4], 32);
	for (int i = 16; i < 24; i++)
		ck_assert_uint_eq(buf[i], 0);	/* ACK is not sequenced */
	ck_assert_uint_eq(buf[24], 0x08);
	ck_assert_uint_eq(buf[31], 0x01);
	ck_assert_uint_eq(buf[32], 0xff);
}
END_TEST

START_TEST(test_bad_version)
{
	/* 1 included: a version 1 peer's frames are refused outright. */
	static const uint8_t versions[] = { 0, 1, 2, 4, 0x81, 0x83, 255 };
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	for (size_t t = 0; t < N_TYPES; t++) {
		for (size_t v = 0; v < sizeof(versions); v++) {
			size_t len = encode_valid(all_types[t], buf, sizeof(buf));

			buf[0] = versions[v];
			expect_eproto(buf, len);
			/* Knowable from the first byte alone. */
			expect_eproto(buf, 1);
		}
		/* Every version byte: 3 and only 3. */
		for (unsigned v = 0; v < 256; v++) {
			size_t len = encode_valid(all_types[t], buf, sizeof(buf));

			buf[0] = (uint8_t)v;
			if (v == SPEC_VERSION) {
				expect_ok(buf, len);
			} else {
				expect_eproto(buf, len);
				expect_eproto(buf, 1);
			}
		}
	}
	ck_assert_uint_eq(SL_WIRE_VERSION, SPEC_VERSION);
}
END_TEST

START_TEST(test_bad_type)
{
	static const uint8_t types[] = {
		0, SL_WIRE_TYPE_MAX + 1, 12, 13, 0x19, 128, 0x89, 255,
	};
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	/* Really unknown: 0 or above the last type (AUTH, 11, is known). */
	ck_assert_uint_eq(SL_WIRE_TYPE_MAX + 1, 12);
	for (size_t i = 0; i < sizeof(types); i++) {
		ck_assert(types[i] == 0 || types[i] > SL_WIRE_TYPE_MAX);
		ck_assert_uint_eq(sl_wire_hdr_len(types[i]), 0);
	}
	for (size_t t = 0; t < N_TYPES; t++) {
		for (size_t i = 0; i < sizeof(types); i++) {
			size_t len = encode_valid(all_types[t], buf, sizeof(buf));

			buf[1] = types[i];
			expect_eproto(buf, len);
			expect_eproto(buf, 2);
		}
	}
}
END_TEST

START_TEST(test_bad_hdr_len)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	for (size_t t = 0; t < N_TYPES; t++) {
		uint8_t type = all_types[t];
		uint32_t hlen = sl_wire_hdr_len(type);
		uint32_t bad[] = {
			0, 1, hlen - 1, hlen + 1, hlen + 8, SL_WIRE_COMMON_LEN - 1,
			SL_WIRE_HDR_MAX + 8, UINT32_MAX, 0x80000000u,
			SL_WIRE_HELLO_LEN, SL_WIRE_EAGER_LEN, SL_WIRE_ACK_LEN,
			SL_WIRE_NAK_LEN, SL_WIRE_RTS_LEN, SL_WIRE_RTR_LEN,
			SL_WIRE_FIN_LEN, SL_WIRE_WRITE_LEN, SL_WIRE_DONE_LEN,
			SL_WIRE_BYE_LEN,
			64,	/* version 1's HELLO */
			hlen | 0x100,
			hlen | 0x01000000u,
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			size_t len;

			if (bad[i] == hlen)
				continue;
			len = encode_valid(type, buf, sizeof(buf));
			put_le32(buf + 4, bad[i]);
			expect_eproto(buf, len);
			/* Also with the buffer big enough for the claimed length. */
			if (bad[i] > len && bad[i] <= sizeof(buf)) {
				memset(buf + len, 0, bad[i] - len);
				expect_eproto(buf, bad[i]);
			}
		}
	}
}
END_TEST

START_TEST(test_bad_flags)
{
	static const uint16_t flags[] = { 1, 2, 0x100, 0x8000, 0xffff };
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	for (size_t t = 0; t < N_TYPES; t++) {
		for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
			size_t len = encode_valid(all_types[t], buf, sizeof(buf));

			buf[2] = (uint8_t)flags[i];
			buf[3] = (uint8_t)(flags[i] >> 8);
			expect_eproto(buf, len);
		}
	}
}
END_TEST

START_TEST(test_bad_rsvd)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	/* Every byte of every reserved field, one at a time. */
	for (size_t t = 0; t < N_TYPES; t++) {
		uint8_t type = all_types[t];
		size_t rs, re;

		for (size_t b = 12; b < 16; b++) {
			size_t len = encode_valid(type, buf, sizeof(buf));

			buf[b] = 0x01;
			expect_eproto(buf, len);
			buf[b] = 0x80;
			expect_eproto(buf, len);
		}
		switch (type) {
		case SL_WIRE_HELLO:
			rs = 60;	/* 56..59 are the credits */
			re = 64;	/* 64..71 peer_incarnation: any value */
			break;
		case SL_WIRE_EAGER:
			continue;	/* 52..55 sender_uid: any value */
		case SL_WIRE_NAK:
			rs = 44;
			re = 48;
			break;
		case SL_WIRE_RTS:
			continue;	/* 52..55 sender_uid: any value */
		case SL_WIRE_RTR:
			continue;	/* 68..71 the offset (test_rtr_rules) */
		case SL_WIRE_FIN:
			rs = 40;
			re = 48;
			break;
		case SL_WIRE_WRITE:
			rs = 52;
			re = 56;
			break;
		case SL_WIRE_DONE:
			rs = 44;
			re = 48;
			break;
		case SL_WIRE_BYE:
			rs = 44;
			re = 48;
			break;
		case SL_WIRE_AUTH:
			continue;	/* no rsvd field (test_auth_rules) */
		default:
			ck_assert_uint_eq(type, SL_WIRE_ACK);	/* no type header */
			continue;
		}
		for (size_t b = rs; b < re; b++) {
			size_t len = encode_valid(type, buf, sizeof(buf));

			buf[b] = 0x01;
			expect_eproto(buf, len);
			buf[b] = 0xff;
			expect_eproto(buf, len);
		}
	}
}
END_TEST

START_TEST(test_bad_payload_len)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	struct sl_wire_frame f;
	size_t len;
	const uint8_t *g;

	for (size_t t = 0; t < N_TYPES; t++) {
		uint8_t type = all_types[t];
		uint32_t hlen = spec_hdr_len(type);

		if (!spec_has_payload(type))
			continue;
		/* Over the maximum on a type that may carry payload. */
		len = encode_valid(type, buf, sizeof(buf));
		put_le32(buf + 8, SL_WIRE_PAYLOAD_MAX + 1);
		expect_eproto(buf, len);
		put_le32(buf + 8, UINT32_MAX);
		expect_eproto(buf, len);
		put_le32(buf + 8, 0x80000000u);
		expect_eproto(buf, len);
		put_le32(buf + 8, SL_WIRE_PAYLOAD_MAX << 1);
		expect_eproto(buf, len);

		/* Exactly the maximum is a valid header; the datagram is short. */
		put_le32(buf + 8, SL_WIRE_PAYLOAD_MAX);
		g = guarded(buf, hlen);
		ck_assert_int_eq(sl_wire_decode_hdr(g, hlen, &f), (int)hlen);
		ck_assert_uint_eq(f.payload_len, SL_WIRE_PAYLOAD_MAX);
		ck_assert_int_eq(sl_wire_decode(g, hlen, &f), -EMSGSIZE);

		/* An empty message or write is fine. */
		len = encode_valid(type, buf, sizeof(buf));
		put_le32(buf + 8, 0);
		expect_ok(buf, hlen);
	}

	/* Any payload on a type that has none. */
	for (size_t t = 0; t < N_TYPES; t++) {
		static const uint32_t pl[] = {
			1, 8, 0x100, SL_WIRE_PAYLOAD_MAX, UINT32_MAX,
		};

		if (spec_has_payload(all_types[t]))
			continue;
		for (size_t i = 0; i < sizeof(pl) / sizeof(pl[0]); i++) {
			/* An AUTH's "who": test_auth_who. */
			if (all_types[t] == SL_WIRE_AUTH && pl[i] >= 5 &&
			    pl[i] <= SL_WIRE_AUTH_WHO_MAX)
				continue;
			len = encode_valid(all_types[t], buf, sizeof(buf));
			put_le32(buf + 8, pl[i]);
			expect_eproto(buf, len);
			if (pl[i] == 1) {
				buf[len] = 0;
				expect_eproto(buf, len + 1);
			}
		}
	}
}
END_TEST

START_TEST(test_bad_seq)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	size_t len;

	/* Sequenced frames (data and, since version 2, NAK, RTR, FIN and
	 * DONE): seq from 1, any bit of all 64 counts. */
	for (size_t t = 0; t < N_TYPES; t++) {
		static const uint64_t seqs[] = { 1, 0x100, 1ull << 32, 1ull << 63,
						 UINT64_MAX };

		if (!spec_is_sequenced(all_types[t]))
			continue;
		len = encode_valid(all_types[t], buf, sizeof(buf));
		put_le64(buf + 16, 0);
		expect_eproto(buf, len);
		for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
			put_le64(buf + 16, seqs[i]);
			expect_ok(buf, len);
		}
	}

	/* HELLO, ACK, WRITE and BYE: seq 0 only. */
	for (size_t t = 0; t < N_TYPES; t++) {
		static const uint64_t seqs[] = { 1, 0x100, 1ull << 32, 1ull << 63,
						 UINT64_MAX };

		if (spec_is_sequenced(all_types[t]))
			continue;
		for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
			len = encode_valid(all_types[t], buf, sizeof(buf));
			put_le64(buf + 16, seqs[i]);
			expect_eproto(buf, len);
		}
	}
}
END_TEST

/*
 * The version 2 seq rule, type by type and both ways (the encoder refuses
 * the frame with -EINVAL, both decoders its bytes with -EPROTO): EAGER,
 * RTS, NAK, RTR, FIN and DONE are refused with seq 0 and take any other;
 * HELLO, ACK, WRITE and BYE are refused with any seq but 0.
 */
START_TEST(test_seq_rules)
{
	static const uint64_t seqs[] = {
		1, 2, 0xff, 0x100, 0x10000, 1ull << 32, (1ull << 32) | 1,
		1ull << 56, 1ull << 63, UINT64_MAX - 1, UINT64_MAX,
	};
	static const uint64_t acks[] = { 0, 1, UINT64_MAX };
	struct sl_wire_frame f;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	size_t len;

	/* The two lists are all the types, each once, as spec_is_sequenced()
	 * says. */
	ck_assert_uint_eq(N_SEQUENCED_TYPES, 6);
	ck_assert_uint_eq(N_UNSEQUENCED_TYPES, 5);
	ck_assert_uint_eq(N_SEQUENCED_TYPES + N_UNSEQUENCED_TYPES, N_TYPES);
	for (size_t t = 0; t < N_TYPES; t++) {
		int in_seq = 0, in_unseq = 0;

		for (size_t i = 0; i < N_SEQUENCED_TYPES; i++)
			in_seq += sequenced_types[i] == all_types[t];
		for (size_t i = 0; i < N_UNSEQUENCED_TYPES; i++)
			in_unseq += unsequenced_types[i] == all_types[t];
		ck_assert_int_eq(in_seq + in_unseq, 1);
		ck_assert_int_eq(in_seq, spec_is_sequenced(all_types[t]));
	}

	for (size_t t = 0; t < N_SEQUENCED_TYPES; t++) {
		uint8_t type = sequenced_types[t];

		/* seq 0, whatever the ack. */
		for (size_t a = 0; a < sizeof(acks) / sizeof(acks[0]); a++) {
			f = make_frame(type);
			ck_assert_uint_ne(f.seq, 0);
			f.ack = acks[a];
			expect_valid(&f);
			f.seq = 0;
			expect_invalid(&f);
		}
		/* Any other seq. */
		for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
			f = make_frame(type);
			f.seq = seqs[i];
			expect_valid(&f);
		}
		/* Any single bit of the 64 makes a seq. */
		for (int bit = 0; bit < 64; bit++) {
			f = make_frame(type);
			f.seq = 1ull << bit;
			expect_valid(&f);
		}
		/* On the wire: all 8 bytes 0 is refused, any one byte set is
		 * not, and the decoded seq is the field's value. */
		for (int b = 0; b < 8; b++) {
			len = encode_valid(type, buf, sizeof(buf));
			put_le64(buf + 16, 0);
			expect_eproto(buf, len);
			buf[16 + b] = 0x80;
			expect_ok(buf, len);
			memset(&f, 0xee, sizeof(f));
			ck_assert_int_eq(sl_wire_decode(guarded(buf, len), len, &f),
					 (int)spec_hdr_len(type));
			ck_assert_uint_eq(f.seq, 0x80ull << (8 * b));
		}
		/* Refused with seq 0 even when nothing else is wrong with it:
		 * the canonical bytes with just the seq cleared. */
		len = encode_valid(type, buf, sizeof(buf));
		expect_ok(buf, len);
		memset(buf + 16, 0, 8);
		expect_eproto(buf, len);
	}

	for (size_t t = 0; t < N_UNSEQUENCED_TYPES; t++) {
		uint8_t type = unsequenced_types[t];

		for (size_t a = 0; a < sizeof(acks) / sizeof(acks[0]); a++) {
			f = make_frame(type);
			ck_assert_uint_eq(f.seq, 0);
			f.ack = acks[a];
			expect_valid(&f);
		}
		for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
			f = make_frame(type);
			f.seq = seqs[i];
			expect_invalid(&f);
			f.ack = 0;
			expect_invalid(&f);
		}
		for (int bit = 0; bit < 64; bit++) {
			f = make_frame(type);
			f.seq = 1ull << bit;
			expect_invalid(&f);
		}
		/* On the wire: any byte of the field set is refused. */
		for (int b = 0; b < 8; b++) {
			static const uint8_t vals[] = { 0x01, 0x80, 0xff };

			for (size_t v = 0; v < sizeof(vals); v++) {
				len = encode_valid(type, buf, sizeof(buf));
				expect_ok(buf, len);
				buf[16 + b] = vals[v];
				expect_eproto(buf, len);
			}
		}
	}
}
END_TEST

START_TEST(test_bad_nak_status)
{
	static const uint32_t bad[] = {
		SL_OK, 3, 15, 24, 0x100, 0x10001, UINT32_MAX,
	};
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = encode_valid(SL_WIRE_NAK, buf, sizeof(buf));

		put_le32(buf + 40, bad[i]);
		expect_eproto(buf, len);
	}
	/* Every value 0..255 is valid exactly when it names a NAK or error. */
	for (uint32_t s = 0; s < 256; s++) {
		size_t len = encode_valid(SL_WIRE_NAK, buf, sizeof(buf));
		int valid = (s >= 1 && s <= 2) || (s >= 16 && s <= 23);

		put_le32(buf + 40, s);
		if (valid)
			expect_ok(buf, len);
		else
			expect_eproto(buf, len);
	}
}
END_TEST

/* A NAK must name a real data frame, a HELLO a real node. */
START_TEST(test_bad_nak_seq_and_hello_node)
{
	static const uint32_t bad_nodes[] = { SL_NODE_LOCAL, SL_NODE_ANY };
	struct sl_wire_frame f = { .type = SL_WIRE_NAK };
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	size_t len = encode_valid(SL_WIRE_NAK, buf, sizeof(buf));

	put_le64(buf + 32, 0);
	expect_eproto(buf, len);
	/* A sequenced frame: with seq 1 the nak_seq is the frame's only
	 * fault. */
	f.seq = 1;
	f.u.nak.status = SL_NAK_BUSY;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	expect_invalid(&f);
	f.u.nak.nak_seq = 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_NAK_LEN);
	for (size_t i = 0; i < 2; i++) {
		struct sl_wire_frame h = { .type = SL_WIRE_HELLO };

		len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
		put_le32(buf + 32, bad_nodes[i]);
		expect_eproto(buf, len);
		/* Valid credits and incarnation: the node id is the frame's
		 * only fault. */
		h.u.hello.credits = 1;
		h.u.hello.incarnation = 1;
		h.u.hello.node_id = 1;
		ck_assert_int_eq(sl_wire_encode(&h, buf, sizeof(buf)),
				 (int)SL_WIRE_HELLO_LEN);
		h.u.hello.node_id = bad_nodes[i];
		expect_invalid(&h);
		h = make_frame(SL_WIRE_HELLO);
		h.u.hello.node_id = bad_nodes[i];
		expect_invalid(&h);
	}
}
END_TEST

START_TEST(test_truncated_header)
{
	uint8_t type = all_types[_i];
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	size_t hlen = sl_wire_hdr_len(type);
	struct sl_wire_frame f;

	encode_valid(type, buf, sizeof(buf));
	for (size_t len = 0; len < hlen; len++) {
		const uint8_t *g = guarded(buf, len);

		memset(&f, 0xee, sizeof(f));
		ck_assert_int_eq(sl_wire_decode_hdr(g, len, &f), -EAGAIN);
		ck_assert_int_eq(sl_wire_decode(g, len, &f), -EPROTO);
	}
	/* NULL is fine for an empty buffer: nothing is read. */
	ck_assert_int_eq(sl_wire_decode_hdr(NULL, 0, &f), -EAGAIN);
	ck_assert_int_eq(sl_wire_decode(NULL, 0, &f), -EPROTO);
}
END_TEST

START_TEST(test_length_beyond_buffer)
{
	uint8_t type = payload_types[_i];
	struct sl_wire_frame in = make_frame(type), out;
	uint8_t buf[SL_WIRE_HDR_MAX + 64];
	int rc;

	ck_assert(spec_has_payload(type));
	in.payload_len = 40;
	rc = sl_wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(rc, (int)spec_hdr_len(type));
	memset(buf + rc, 0x77, in.payload_len);
	for (size_t len = (size_t)rc; len < (size_t)rc + in.payload_len; len++) {
		const uint8_t *g = guarded(buf, len);

		ck_assert_int_eq(sl_wire_decode(g, len, &out), -EMSGSIZE);
		/* A stream decoder only needs the header. */
		ck_assert_int_eq(sl_wire_decode_hdr(g, len, &out), rc);
		ck_assert_uint_eq(out.payload_len, 40);
	}
	ck_assert_int_eq(sl_wire_decode(guarded(buf, (size_t)rc + 40),
					(size_t)rc + 40, &out), rc);
}
END_TEST

START_TEST(test_encode_errors)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	struct sl_wire_frame f;

	/* -ENOSPC for every type and every short capacity, nothing written. */
	for (size_t t = 0; t < N_TYPES; t++) {
		uint32_t hlen = sl_wire_hdr_len(all_types[t]);

		f = make_frame(all_types[t]);
		for (size_t cap = 0; cap < hlen; cap++) {
			memset(buf, 0xaa, sizeof(buf));
			ck_assert_int_eq(sl_wire_encode(&f, buf, cap), -ENOSPC);
			for (size_t i = 0; i < sizeof(buf); i++)
				ck_assert_uint_eq(buf[i], 0xaa);
		}
		/* The exact size is enough; nothing beyond it is touched. */
		ck_assert_int_eq(sl_wire_encode(&f, guard_area + page_size - hlen,
						hlen), (int)hlen);
	}

	/* -EINVAL: payload on a type that has none. */
	for (size_t t = 0; t < N_TYPES; t++) {
		if (spec_has_payload(all_types[t]))
			continue;
		f = make_frame(all_types[t]);
		f.payload_len = 1;
		expect_invalid(&f);
		f.payload_len = SL_WIRE_PAYLOAD_MAX;
		expect_invalid(&f);
	}

	/* -EINVAL: unknown types. */
	f = make_frame(SL_WIRE_ACK);
	f.type = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.type = SL_WIRE_TYPE_MAX + 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.type = 11;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.type = 12;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.type = 255;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);

	/* -EINVAL: payload over the maximum. */
	for (size_t t = 0; t < N_TYPES; t++) {
		if (!spec_has_payload(all_types[t]))
			continue;
		f = make_frame(all_types[t]);
		f.payload_len = SL_WIRE_PAYLOAD_MAX + 1;
		expect_invalid(&f);
		f.payload_len = UINT32_MAX;
		expect_invalid(&f);
		f.payload_len = SL_WIRE_PAYLOAD_MAX;
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)),
				 (int)spec_hdr_len(all_types[t]));
	}

	/* -EINVAL: non-zero flags; seq on HELLO, ACK, WRITE or BYE; no seq on a
	 * sequenced frame. */
	for (size_t t = 0; t < N_TYPES; t++) {
		f = make_frame(all_types[t]);
		f.flags = 1;
		expect_invalid(&f);
		f.flags = 0x8000;
		expect_invalid(&f);
		f = make_frame(all_types[t]);
		if (spec_is_sequenced(all_types[t])) {
			f.seq = 0;
			expect_invalid(&f);
			continue;
		}
		f.seq = 1;
		expect_invalid(&f);
		f.seq = UINT64_MAX;
		expect_invalid(&f);
	}

	/*
	 * Frames the decoder would reject are not encoded either: seq 0 on a
	 * sequenced frame, non-zero flags, a NAK without a NAK or error
	 * status, a HELLO or a BYE with incarnation 0, a BYE with a reason.
	 */
	f = make_frame(SL_WIRE_EAGER);
	f.seq = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_RTS);
	f.seq = 0;
	expect_invalid(&f);
	f = make_frame(SL_WIRE_NAK);
	f.seq = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_RTR);
	f.seq = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_FIN);
	f.seq = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_DONE);
	f.seq = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_HELLO);
	f.u.hello.incarnation = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(sl_wire_encode(&f, buf, 0), -EINVAL);
	f = make_frame(SL_WIRE_HELLO);
	f.flags = 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_NAK);
	f.u.nak.status = SL_OK;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.u.nak.status = 3;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_BYE);
	f.u.bye.incarnation = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(sl_wire_encode(&f, buf, 0), -EINVAL);
	f = make_frame(SL_WIRE_BYE);
	f.u.bye.reason = 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_BYE);
	f.seq = 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);

	/* An invalid frame is -EINVAL even when the buffer is also too small. */
	f = make_frame(SL_WIRE_ACK);
	f.payload_len = 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, 0), -EINVAL);
}
END_TEST

/*
 * RTS: msg_len 1..SL_WIRE_RNDV_MAX, send_id not 0, a data frame without
 * payload.  Each rule both ways: the encoder refuses the frame, the
 * decoders its bytes.
 */
START_TEST(test_rts_rules)
{
	static const uint64_t bad_len[] = {
		0, SL_WIRE_RNDV_MAX + 1, SL_WIRE_RNDV_MAX << 1, 1ull << 32,
		(1ull << 32) | 1, (1ull << 56) | 1, 1ull << 63, UINT64_MAX,
	};
	static const uint64_t good_len[] = {
		1, 2, 0xff, 0x100, SL_WIRE_RNDV_MAX - 1, SL_WIRE_RNDV_MAX,
	};
	struct sl_wire_frame f;

	for (size_t i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++) {
		f = make_frame(SL_WIRE_RTS);
		f.u.rts.msg_len = bad_len[i];
		expect_invalid(&f);
	}
	for (size_t i = 0; i < sizeof(good_len) / sizeof(good_len[0]); i++) {
		f = make_frame(SL_WIRE_RTS);
		f.u.rts.msg_len = good_len[i];
		expect_valid(&f);
	}

	f = make_frame(SL_WIRE_RTS);
	f.u.rts.send_id = 0;
	expect_invalid(&f);
	f.u.rts.msg_len = 0;
	expect_invalid(&f);
	f.u.rts.send_id = 1;
	f.u.rts.msg_len = 1;
	expect_valid(&f);
	f.u.rts.send_id = 1ull << 63;
	expect_valid(&f);

	/* No payload: the message waits at the sender. */
	f = make_frame(SL_WIRE_RTS);
	f.payload_len = 1;
	expect_invalid(&f);
	f.payload_len = 8;
	expect_invalid(&f);
	f.payload_len = SL_WIRE_PAYLOAD_MAX;
	expect_invalid(&f);

	/* Sequenced like EAGER. */
	f = make_frame(SL_WIRE_RTS);
	f.seq = 0;
	expect_invalid(&f);
	f.seq = 1;
	expect_valid(&f);
}
END_TEST

/*
 * RTR: send_id not 0; status 0 or a NAK/error; when 0 (a grant), recv_id
 * not 0 and len <= SL_WIRE_RNDV_MAX; when not (a refusal), those are not
 * checked.  A sequenced control frame (seq >= 1) without payload.
 */
START_TEST(test_rtr_rules)
{
	static const uint64_t bad_len[] = {
		SL_WIRE_RNDV_MAX + 1, 1ull << 32, (1ull << 56) | 1, 1ull << 63,
		UINT64_MAX,
	};
	struct sl_wire_frame f;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	/* send_id 0, on a grant and on a refusal alike. */
	f = make_frame(SL_WIRE_RTR);
	f.u.rtr.send_id = 0;
	expect_invalid(&f);
	f.u.rtr.status = SL_NAK_BUSY;
	expect_invalid(&f);
	f.u.rtr.status = SL_ERR_ACCESS;
	f.u.rtr.recv_id = 0;
	expect_invalid(&f);

	/* Bad status, whatever else the frame holds. */
	for (size_t i = 0; i < N_BAD_STATUSES; i++) {
		f = make_frame(SL_WIRE_RTR);
		f.u.rtr.status = bad_statuses[i];
		expect_invalid(&f);
		f.u.rtr.recv_id = 0;
		f.u.rtr.len = UINT64_MAX;
		expect_invalid(&f);
	}
	/* Every status byte: 0 and the NAK/error statuses only. */
	for (uint32_t st = 0; st < 256; st++) {
		size_t len = encode_valid(SL_WIRE_RTR, buf, sizeof(buf));

		put_le32(buf + 64, st);
		if (st == 0 || spec_nak_status(st))
			expect_ok(buf, len);
		else
			expect_eproto(buf, len);
	}

	/* A grant names the receive and stays within a message. */
	f = make_frame(SL_WIRE_RTR);
	f.u.rtr.recv_id = 0;
	expect_invalid(&f);
	for (size_t i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++) {
		f = make_frame(SL_WIRE_RTR);
		f.u.rtr.len = bad_len[i];
		expect_invalid(&f);
	}
	f = make_frame(SL_WIRE_RTR);
	f.u.rtr.len = SL_WIRE_RNDV_MAX;
	expect_valid(&f);
	f.u.rtr.len = 0;
	expect_valid(&f);

	/* The offset of an RTR sent again: within len, and only on a grant;
	 * checked on the wire too, every byte. */
	f = make_frame(SL_WIRE_RTR);
	f.u.rtr.offset = (uint32_t)f.u.rtr.len;
	expect_valid(&f);
	f.u.rtr.offset++;
	expect_invalid(&f);
	f.u.rtr.len = 0;
	f.u.rtr.offset = 1;
	expect_invalid(&f);
	f.u.rtr.offset = 0;
	expect_valid(&f);
	for (size_t b = 68; b < 72; b++) {
		size_t len = encode_valid(SL_WIRE_RTR, buf, sizeof(buf));

		buf[b] = 0xff;	/* past len (0x2a2b2c2d) */
		if (b < 71)
			expect_ok(buf, len);
		else
			expect_eproto(buf, len);
		put_le32(buf + 64, SL_NAK_BUSY);	/* a refusal resumes nothing */
		expect_eproto(buf, len);
	}

	/* A refusal is accepted with recv_id 0 and any len. */
	for (size_t s = 0; s < N_NAK_STATUSES; s++) {
		f = make_frame(SL_WIRE_RTR);
		f.u.rtr.status = nak_statuses[s];
		f.u.rtr.recv_id = 0;
		expect_valid(&f);
		for (size_t i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++) {
			f.u.rtr.len = bad_len[i];
			expect_valid(&f);
		}
	}

	/* A control frame: no payload. */
	f = make_frame(SL_WIRE_RTR);
	f.payload_len = 1;
	expect_invalid(&f);
	f.payload_len = 8;
	expect_invalid(&f);
	f.payload_len = SL_WIRE_PAYLOAD_MAX;
	expect_invalid(&f);
	f.u.rtr.status = SL_NAK_BUSY;	/* a refusal carries nothing either */
	expect_invalid(&f);
	/* Sequenced since version 2: seq 0 refused, a grant or a refusal. */
	f = make_frame(SL_WIRE_RTR);
	f.seq = 0;
	expect_invalid(&f);
	f.u.rtr.status = SL_NAK_BUSY;
	expect_invalid(&f);
	f.seq = 1;
	expect_valid(&f);
	f.u.rtr.status = SL_OK;
	expect_valid(&f);
	f.seq = UINT64_MAX;
	expect_valid(&f);
}
END_TEST

/*
 * HELLO: credits 1..SL_WIRE_CREDITS_MAX (65536), rsvd (60..63) 0, node_id
 * a real node, incarnation not 0, peer_incarnation (64..71) anything; an
 * unsequenced control frame (seq 0) without payload.  Each rule both ways:
 * the encoder refuses the frame, the decoders its bytes.
 */
START_TEST(test_hello_rules)
{
	static const uint64_t seqs[] = { 1, 1ull << 32, UINT64_MAX };
	struct sl_wire_frame f;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	size_t len;

	/* Out of the window, whatever else the frame holds. */
	for (size_t i = 0; i < N_BAD_CREDITS; i++) {
		f = make_frame(SL_WIRE_HELLO);
		f.u.hello.credits = bad_credits[i];
		expect_invalid(&f);
		f.ack = UINT64_MAX;
		f.u.hello.eager_max = UINT32_MAX;
		f.u.hello.incarnation = UINT64_MAX;
		f.u.hello.last_rx_seq = UINT64_MAX;
		expect_invalid(&f);
		memset(&f.u, 0, sizeof(f.u));
		f.ack = 0;
		f.u.hello.node_id = 1;
		f.u.hello.incarnation = 1;
		f.u.hello.credits = bad_credits[i];
		expect_invalid(&f);
	}
	for (size_t i = 0; i < N_GOOD_CREDITS; i++) {
		f = make_frame(SL_WIRE_HELLO);
		f.u.hello.credits = good_credits[i];
		expect_valid(&f);
	}
	/* The boundaries exactly, from an otherwise empty HELLO. */
	memset(&f, 0, sizeof(f));
	f.type = SL_WIRE_HELLO;
	f.u.hello.node_id = 1;
	f.u.hello.incarnation = 1;
	expect_invalid(&f);		/* credits 0 */
	f.u.hello.credits = 1;
	expect_valid(&f);
	f.u.hello.credits = SL_WIRE_CREDITS_MAX;
	expect_valid(&f);
	f.u.hello.credits = SL_WIRE_CREDITS_MAX + 1;
	expect_invalid(&f);
	/* Any single bit: bits 0..16 are grants, 17..31 too many. */
	for (int bit = 0; bit < 32; bit++) {
		f = make_frame(SL_WIRE_HELLO);
		f.u.hello.credits = 1u << bit;
		if (bit <= 16)
			expect_valid(&f);
		else
			expect_invalid(&f);
	}

	/*
	 * On the wire: each byte of the field on its own, every value, and
	 * the values around both ends.  Valid exactly when 1..65536.
	 */
	for (int b = 0; b < 4; b++) {
		for (uint32_t v = 0; v < 256; v++) {
			uint32_t c = v << (8 * b);

			len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
			put_le32(buf + 56, c);
			if (spec_credits_valid(c))
				expect_ok(buf, len);
			else
				expect_eproto(buf, len);
		}
	}
	for (uint32_t c = SPEC_CREDITS_MAX - 300; c < SPEC_CREDITS_MAX + 300; c++) {
		len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
		put_le32(buf + 56, c);
		if (spec_credits_valid(c))
			expect_ok(buf, len);
		else
			expect_eproto(buf, len);
	}
	/* A decoded grant is the field's value, not a prefix of it. */
	for (size_t i = 0; i < N_GOOD_CREDITS; i++) {
		len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
		put_le32(buf + 56, good_credits[i]);
		memset(&f, 0xee, sizeof(f));
		ck_assert_int_eq(sl_wire_decode_hdr(guarded(buf, len), len, &f),
				 (int)SL_WIRE_HELLO_LEN);
		ck_assert_uint_eq(f.u.hello.credits, good_credits[i]);
		memset(&f, 0xee, sizeof(f));
		ck_assert_int_eq(sl_wire_decode(guarded(buf, len), len, &f),
				 (int)SL_WIRE_HELLO_LEN);
		ck_assert_uint_eq(f.u.hello.credits, good_credits[i]);
	}

	/* rsvd (60..63): every byte, any value, whatever the grant; it is not
	 * the high half of a 64-bit credits field. */
	for (size_t b = 60; b < 64; b++) {
		static const uint8_t vals[] = { 0x01, 0x80, 0xff };
		static const uint32_t grants[] = { 1, 0xd3d4, SPEC_CREDITS_MAX };

		for (size_t v = 0; v < sizeof(vals); v++) {
			for (size_t g = 0; g < sizeof(grants) / sizeof(grants[0]); g++) {
				len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
				put_le32(buf + 56, grants[g]);
				expect_ok(buf, len);
				buf[b] = vals[v];
				expect_eproto(buf, len);
			}
		}
	}
	len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
	put_le32(buf + 60, UINT32_MAX);
	expect_eproto(buf, len);
	/* Bytes past the 72-byte header are not the HELLO's. */
	len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
	ck_assert_uint_eq(len, 72);
	memset(buf + len, 0xff, 16);
	expect_ok(buf, len + 16);
	/* A HELLO cut at version 1's 64 bytes is 8 bytes short of a header:
	 * a stream waits for more, a datagram is truncated. */
	len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
	ck_assert_int_eq(sl_wire_decode_hdr(guarded(buf, 64), 64, &f), -EAGAIN);
	ck_assert_int_eq(sl_wire_decode(guarded(buf, 64), 64, &f), -EPROTO);

	/*
	 * incarnation (40..47): 0 is refused, whatever else the frame holds;
	 * any single bit is a start id.
	 */
	f = make_frame(SL_WIRE_HELLO);
	f.u.hello.incarnation = 0;
	expect_invalid(&f);
	f.u.hello.peer_incarnation = 0;
	expect_invalid(&f);
	f.u.hello.last_rx_seq = 0;
	expect_invalid(&f);
	f.u.hello.credits = SL_WIRE_CREDITS_MAX;
	expect_invalid(&f);
	f.u.hello.peer_incarnation = UINT64_MAX;
	f.u.hello.last_rx_seq = UINT64_MAX;
	f.ack = UINT64_MAX;
	expect_invalid(&f);
	memset(&f, 0, sizeof(f));
	f.type = SL_WIRE_HELLO;
	f.u.hello.node_id = 1;
	f.u.hello.credits = 1;
	expect_invalid(&f);		/* incarnation 0 */
	f.u.hello.incarnation = 1;
	expect_valid(&f);
	for (int bit = 0; bit < 64; bit++) {
		f = make_frame(SL_WIRE_HELLO);
		f.u.hello.incarnation = 1ull << bit;
		expect_valid(&f);
		f.u.hello.peer_incarnation = 0;
		expect_valid(&f);
	}
	/* On the wire: all 8 bytes 0 refused, any one byte set taken. */
	len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
	put_le64(buf + 40, 0);
	expect_eproto(buf, len);
	for (int b = 0; b < 8; b++) {
		static const uint8_t vals[] = { 0x01, 0x80, 0xff };

		for (size_t v = 0; v < sizeof(vals); v++) {
			len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
			put_le64(buf + 40, 0);
			buf[40 + b] = vals[v];
			expect_ok(buf, len);
			memset(&f, 0xee, sizeof(f));
			ck_assert_int_eq(sl_wire_decode(guarded(buf, len), len, &f),
					 (int)SL_WIRE_HELLO_LEN);
			ck_assert_uint_eq(f.u.hello.incarnation,
					  (uint64_t)vals[v] << (8 * b));
		}
	}

	/*
	 * peer_incarnation (64..71): any value, 0 ("none") included; it is
	 * not a reserved field, and its every byte reaches the frame.
	 */
	{
		static const uint64_t peers[] = {
			0, 1, 0xff, 0x100, 1ull << 32, 1ull << 63,
			0xb1b2b3b4b5b6b7b8ull,	/* make_frame's incarnation */
			UINT64_MAX - 1, UINT64_MAX,
		};

		for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
			f = make_frame(SL_WIRE_HELLO);
			f.u.hello.peer_incarnation = peers[i];
			expect_valid(&f);
			f.u.hello.last_rx_seq = 0;
			expect_valid(&f);
			/* ... but it does not excuse a bad incarnation. */
			f.u.hello.incarnation = 0;
			expect_invalid(&f);
		}
	}
	for (int bit = 0; bit < 64; bit++) {
		f = make_frame(SL_WIRE_HELLO);
		f.u.hello.peer_incarnation = 1ull << bit;
		expect_valid(&f);
	}
	for (int b = 0; b < 8; b++) {
		for (uint32_t v = 0; v < 256; v++) {
			uint64_t want = (uint64_t)v << (8 * b);

			len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
			put_le64(buf + 64, 0);
			buf[64 + b] = (uint8_t)v;
			memset(&f, 0xee, sizeof(f));
			ck_assert_int_eq(sl_wire_decode_hdr(guarded(buf, len), len, &f),
					 (int)SL_WIRE_HELLO_LEN);
			ck_assert_uint_eq(f.u.hello.peer_incarnation, want);
			memset(&f, 0xee, sizeof(f));
			ck_assert_int_eq(sl_wire_decode(guarded(buf, len), len, &f),
					 (int)SL_WIRE_HELLO_LEN);
			ck_assert_uint_eq(f.u.hello.peer_incarnation, want);
			/* The other fields are untouched by it. */
			ck_assert_uint_eq(f.u.hello.incarnation, 0xb1b2b3b4b5b6b7b8ull);
			ck_assert_uint_eq(f.u.hello.credits, 0xd3d4);
		}
	}
	len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
	put_le64(buf + 64, UINT64_MAX);
	expect_ok(buf, len);
	put_le64(buf + 64, 0);
	expect_ok(buf, len);

	/* A bad grant and a bad node: broken either way. */
	len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
	put_le32(buf + 56, 0);
	put_le32(buf + 32, SL_NODE_LOCAL);
	expect_eproto(buf, len);
	f = make_frame(SL_WIRE_HELLO);
	f.u.hello.credits = 0;
	f.u.hello.node_id = SL_NODE_ANY;
	expect_invalid(&f);

	/* Not sequenced, in version 2 still: no seq, with a good grant or
	 * not, whatever the incarnations. */
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		f = make_frame(SL_WIRE_HELLO);
		f.seq = seqs[i];
		expect_invalid(&f);
		f.u.hello.credits = SL_WIRE_CREDITS_MAX;
		expect_invalid(&f);
		f.u.hello.peer_incarnation = 0;
		expect_invalid(&f);
		f.u.hello.credits = 0;
		expect_invalid(&f);
	}
	/* A control frame: no payload. */
	f = make_frame(SL_WIRE_HELLO);
	f.payload_len = 1;
	expect_invalid(&f);
	f.u.hello.credits = 1;
	expect_invalid(&f);
	f.payload_len = SL_WIRE_PAYLOAD_MAX;
	expect_invalid(&f);
}
END_TEST

/* FIN: recv_id not 0, status 0 or a NAK/error; a sequenced control
 * frame (seq >= 1), no payload. */
START_TEST(test_fin_rules)
{
	struct sl_wire_frame f;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	f = make_frame(SL_WIRE_FIN);
	f.u.fin.recv_id = 0;
	expect_invalid(&f);
	f.u.fin.status = SL_OK;
	expect_invalid(&f);
	f.u.fin.recv_id = 1;
	expect_valid(&f);

	for (size_t i = 0; i < N_BAD_STATUSES; i++) {
		f = make_frame(SL_WIRE_FIN);
		f.u.fin.status = bad_statuses[i];
		expect_invalid(&f);
	}
	for (uint32_t st = 0; st < 256; st++) {
		size_t len = encode_valid(SL_WIRE_FIN, buf, sizeof(buf));

		put_le32(buf + 36, st);
		if (st == 0 || spec_nak_status(st))
			expect_ok(buf, len);
		else
			expect_eproto(buf, len);
	}

	f = make_frame(SL_WIRE_FIN);
	f.payload_len = 1;
	expect_invalid(&f);
	f.payload_len = SL_WIRE_PAYLOAD_MAX;
	expect_invalid(&f);
	f = make_frame(SL_WIRE_FIN);
	f.seq = 0;
	expect_invalid(&f);
	f.u.fin.status = SL_OK;
	expect_invalid(&f);
	f.seq = 1;
	expect_valid(&f);
	f.u.fin.status = SL_ERR_ACCESS;
	expect_valid(&f);
	f.seq = UINT64_MAX;
	expect_valid(&f);
}
END_TEST

/* WRITE: has_imm 0 or 1, imm 0 without it, payload up to the maximum. */
START_TEST(test_write_rules)
{
	static const uint32_t bad_has_imm[] = {
		2, 3, 0x100, 0x101, 0x10000, 0x01000001u, 0x80000000u, UINT32_MAX,
	};
	static const uint32_t imms[] = { 1, 0x100, 0x10000, 0x80000000u, UINT32_MAX };
	struct sl_wire_frame f;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	size_t total, map_len;
	uint8_t *map, *p;

	for (size_t i = 0; i < sizeof(bad_has_imm) / sizeof(bad_has_imm[0]); i++) {
		f = make_frame(SL_WIRE_WRITE);
		f.u.write.has_imm = bad_has_imm[i];
		expect_invalid(&f);
		f.u.write.imm = 0;
		expect_invalid(&f);
	}
	/* Every low byte of has_imm, with imm 0. */
	for (uint32_t h = 0; h < 256; h++) {
		size_t len = encode_valid(SL_WIRE_WRITE, buf, sizeof(buf));

		put_le32(buf + 44, h);
		put_le32(buf + 48, 0);
		if (h <= 1)
			expect_ok(buf, len);
		else
			expect_eproto(buf, len);
	}

	/* An immediate without has_imm. */
	for (size_t i = 0; i < sizeof(imms) / sizeof(imms[0]); i++) {
		f = make_frame(SL_WIRE_WRITE);
		f.u.write.has_imm = 0;
		f.u.write.imm = imms[i];
		expect_invalid(&f);
		f.u.write.has_imm = 1;
		expect_valid(&f);
	}
	f = make_frame(SL_WIRE_WRITE);
	f.u.write.has_imm = 0;
	f.u.write.imm = 0;
	expect_valid(&f);
	f.u.write.has_imm = 1;
	expect_valid(&f);

	/* Payload: 0 up to SL_WIRE_PAYLOAD_MAX, not beyond. */
	static const uint32_t good_pl[] = {
		0, 1, SMALL_PAYLOAD, 4096, SL_WIRE_PAYLOAD_MAX - 1, SL_WIRE_PAYLOAD_MAX,
	};
	for (size_t i = 0; i < sizeof(good_pl) / sizeof(good_pl[0]); i++) {
		f = make_frame(SL_WIRE_WRITE);
		f.payload_len = good_pl[i];
		expect_valid(&f);
	}
	f = make_frame(SL_WIRE_WRITE);
	f.payload_len = SL_WIRE_PAYLOAD_MAX + 1;
	expect_invalid(&f);

	/* Not sequenced: seq 0. */
	f = make_frame(SL_WIRE_WRITE);
	f.seq = 1;
	expect_invalid(&f);
	f.seq = UINT64_MAX;
	expect_invalid(&f);

	/*
	 * A whole datagram of the largest write, ending at a guard page: the
	 * decoder takes it, and one byte less is -EMSGSIZE.
	 */
	total = SL_WIRE_WRITE_LEN + SL_WIRE_PAYLOAD_MAX;
	map_len = (total + page_size - 1) / page_size * page_size;
	map = mmap(NULL, map_len + page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mprotect(map + map_len, page_size, PROT_NONE), 0);
	p = map + map_len - total;
	f = make_frame(SL_WIRE_WRITE);
	f.payload_len = SL_WIRE_PAYLOAD_MAX;
	ck_assert_int_eq(sl_wire_encode(&f, p, total), (int)SL_WIRE_WRITE_LEN);
	memset(p + SL_WIRE_WRITE_LEN, 0x5a, SL_WIRE_PAYLOAD_MAX);
	{
		struct sl_wire_frame out;

		f.hdr_len = SL_WIRE_WRITE_LEN;
		ck_assert_int_eq(sl_wire_decode(p, total, &out), (int)SL_WIRE_WRITE_LEN);
		assert_frames_equal(&f, &out);
		ck_assert_int_eq(sl_wire_decode(p + 1, total - 1, &out), -EPROTO);
		memmove(p + 1, p, SL_WIRE_WRITE_LEN);
		ck_assert_int_eq(sl_wire_decode(p + 1, total - 1, &out), -EMSGSIZE);
		ck_assert_int_eq(sl_wire_decode_hdr(p + 1, total - 1, &out),
				 (int)SL_WIRE_WRITE_LEN);
	}
	munmap(map, map_len + page_size);
}
END_TEST

/*
 * DONE: send_id not 0, status 0 (the only value in version 2), rsvd 0; a
 * sequenced control frame (seq >= 1) without payload.  Each rule both
 * ways: the encoder refuses the frame, the decoders its bytes.
 */
START_TEST(test_done_rules)
{
	static const uint64_t seqs[] = {
		1, 0x100, 1ull << 32, 1ull << 63, UINT64_MAX,
	};
	static const uint32_t pls[] = {
		1, 8, SMALL_PAYLOAD, SL_WIRE_PAYLOAD_MAX, SL_WIRE_PAYLOAD_MAX + 1,
		UINT32_MAX,
	};
	struct sl_wire_frame f;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	/* send_id 0, whatever else the frame holds. */
	f = make_frame(SL_WIRE_DONE);
	f.u.done.send_id = 0;
	expect_invalid(&f);
	f.ack = 0;
	expect_invalid(&f);
	f.ack = UINT64_MAX;
	expect_invalid(&f);
	f.u.done.status = SL_ERR_PEER_DOWN;
	expect_invalid(&f);
	/* Any single byte of the 64-bit send_id makes it a name. */
	for (int b = 0; b < 8; b++) {
		f = make_frame(SL_WIRE_DONE);
		f.u.done.send_id = 1ull << (8 * b);
		expect_valid(&f);
		f.u.done.send_id = 0x80ull << (8 * b);
		expect_valid(&f);
	}

	/* Status: 0 only.  Not even the NAK/error statuses FIN and RTR take. */
	for (size_t i = 0; i < N_BAD_STATUSES; i++) {
		f = make_frame(SL_WIRE_DONE);
		f.u.done.status = bad_statuses[i];
		expect_invalid(&f);
	}
	for (size_t i = 0; i < N_NAK_STATUSES; i++) {
		f = make_frame(SL_WIRE_DONE);
		f.u.done.status = nak_statuses[i];
		expect_invalid(&f);
		f.u.done.send_id = 1;
		expect_invalid(&f);
	}
	/* Any bit of any byte of the status. */
	for (int bit = 0; bit < 32; bit++) {
		f = make_frame(SL_WIRE_DONE);
		f.u.done.status = 1u << bit;
		expect_invalid(&f);
	}
	/* Every low status byte, on the wire: 0 only. */
	for (uint32_t st = 0; st < 256; st++) {
		size_t len = encode_valid(SL_WIRE_DONE, buf, sizeof(buf));

		put_le32(buf + 40, st);
		if (st == 0)
			expect_ok(buf, len);
		else
			expect_eproto(buf, len);
	}

	/* rsvd (44..47): every byte, any value; the encoder has no field for
	 * it and always writes 0 (see test_exact_bytes_done). */
	for (size_t b = 44; b < 48; b++) {
		static const uint8_t vals[] = { 0x01, 0x80, 0xff };

		for (size_t v = 0; v < sizeof(vals); v++) {
			size_t len = encode_valid(SL_WIRE_DONE, buf, sizeof(buf));

			buf[b] = vals[v];
			expect_eproto(buf, len);
		}
	}
	{
		size_t len = encode_valid(SL_WIRE_DONE, buf, sizeof(buf));

		put_le32(buf + 44, UINT32_MAX);
		expect_eproto(buf, len);
		/* Bytes past the 48-byte header are not the DONE's. */
		len = encode_valid(SL_WIRE_DONE, buf, sizeof(buf));
		memset(buf + len, 0xff, 16);
		expect_ok(buf, len + 16);
	}

	/* A control frame: no payload ... */
	for (size_t i = 0; i < sizeof(pls) / sizeof(pls[0]); i++) {
		size_t len;

		f = make_frame(SL_WIRE_DONE);
		f.payload_len = pls[i];
		expect_invalid(&f);
		len = encode_valid(SL_WIRE_DONE, buf, sizeof(buf));
		put_le32(buf + 8, pls[i]);
		expect_eproto(buf, len);
	}
	/* ... and a seq (version 2): any but 0. */
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		f = make_frame(SL_WIRE_DONE);
		f.seq = seqs[i];
		expect_valid(&f);
		f.u.done.send_id = 1;
		expect_valid(&f);
		f.u.done.send_id = 0;
		expect_invalid(&f);
	}
	f = make_frame(SL_WIRE_DONE);
	f.seq = 0;
	expect_invalid(&f);
	f.u.done.send_id = 1;
	expect_invalid(&f);
	{
		size_t len = encode_valid(SL_WIRE_DONE, buf, sizeof(buf));

		put_le64(buf + 16, 0);
		expect_eproto(buf, len);
	}

	/* Broken several ways at once is still broken. */
	f = make_frame(SL_WIRE_DONE);
	f.u.done.send_id = 0;
	f.u.done.status = 1;
	f.seq = 0;
	f.payload_len = 1;
	expect_invalid(&f);

	/* And the valid extremes of what is left: any ack, any send_id,
	 * seq 1 up. */
	f = make_frame(SL_WIRE_DONE);
	f.u.done.send_id = 1;
	f.seq = 1;
	f.ack = 0;
	expect_valid(&f);
	f.u.done.send_id = UINT64_MAX;
	f.seq = UINT64_MAX;
	f.ack = UINT64_MAX;
	expect_valid(&f);
}
END_TEST

/*
 * BYE: incarnation not 0, reason 0 (the only value in version 2), rsvd 0;
 * an unsequenced control frame (seq 0, like ACK) without payload.  Each
 * rule both ways: the encoder refuses the frame, the decoders its bytes.
 */
START_TEST(test_bye_rules)
{
	static const uint64_t seqs[] = {
		1, 0x100, 1ull << 32, 1ull << 63, UINT64_MAX,
	};
	static const uint32_t pls[] = {
		1, 8, SMALL_PAYLOAD, SL_WIRE_PAYLOAD_MAX, SL_WIRE_PAYLOAD_MAX + 1,
		UINT32_MAX,
	};
	static const uint32_t bad_hlens[] = {
		0, 1, SL_WIRE_COMMON_LEN, SL_WIRE_BYE_LEN - 1, SL_WIRE_BYE_LEN + 1,
		SL_WIRE_BYE_LEN + 8, SL_WIRE_EAGER_LEN, SL_WIRE_HELLO_LEN, 64,
		SL_WIRE_BYE_LEN | 0x100, SL_WIRE_BYE_LEN | 0x01000000u, UINT32_MAX,
	};
	struct sl_wire_frame f;
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

	/* incarnation 0, whatever else the frame holds. */
	f = make_frame(SL_WIRE_BYE);
	f.u.bye.incarnation = 0;
	expect_invalid(&f);
	f.ack = 0;
	expect_invalid(&f);
	f.ack = UINT64_MAX;
	expect_invalid(&f);
	f.u.bye.reason = 1;
	expect_invalid(&f);
	{
		size_t len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));

		put_le64(buf + 32, 0);
		expect_eproto(buf, len);
	}
	/* Any single byte of the 64-bit incarnation makes it one. */
	for (int b = 0; b < 8; b++) {
		size_t len;

		f = make_frame(SL_WIRE_BYE);
		f.u.bye.incarnation = 1ull << (8 * b);
		expect_valid(&f);
		f.u.bye.incarnation = 0x80ull << (8 * b);
		expect_valid(&f);
		len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));
		put_le64(buf + 32, 0);
		buf[32 + b] = 0x01;
		expect_ok(buf, len);
	}

	/* Reason: 0 only.  Not even SL_ERR_PEER_DOWN, what the receiver
	 * makes of it, nor any other NAK/error status. */
	for (size_t i = 0; i < N_BAD_STATUSES; i++) {
		f = make_frame(SL_WIRE_BYE);
		f.u.bye.reason = bad_statuses[i];
		expect_invalid(&f);
	}
	for (size_t i = 0; i < N_NAK_STATUSES; i++) {
		f = make_frame(SL_WIRE_BYE);
		f.u.bye.reason = nak_statuses[i];
		expect_invalid(&f);
		f.u.bye.incarnation = 1;
		expect_invalid(&f);
	}
	/* Any bit of any byte of the reason. */
	for (int bit = 0; bit < 32; bit++) {
		f = make_frame(SL_WIRE_BYE);
		f.u.bye.reason = 1u << bit;
		expect_invalid(&f);
	}
	/* Every low reason byte, on the wire: 0 only. */
	for (uint32_t r = 0; r < 256; r++) {
		size_t len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));

		put_le32(buf + 40, r);
		if (r == 0)
			expect_ok(buf, len);
		else
			expect_eproto(buf, len);
	}
	/* ... and every byte of the field. */
	for (size_t b = 40; b < 44; b++) {
		static const uint8_t vals[] = { 0x01, 0x80, 0xff };

		for (size_t v = 0; v < sizeof(vals); v++) {
			size_t len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));

			buf[b] = vals[v];
			expect_eproto(buf, len);
		}
	}

	/* rsvd (44..47): every byte, any value; the encoder has no field for
	 * it and always writes 0 (see test_exact_bytes_bye). */
	for (size_t b = 44; b < 48; b++) {
		static const uint8_t vals[] = { 0x01, 0x80, 0xff };

		for (size_t v = 0; v < sizeof(vals); v++) {
			size_t len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));

			buf[b] = vals[v];
			expect_eproto(buf, len);
		}
	}
	{
		size_t len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));

		put_le32(buf + 44, UINT32_MAX);
		expect_eproto(buf, len);
		/* Bytes past the 48-byte header are not the BYE's. */
		len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));
		memset(buf + len, 0xff, 16);
		expect_ok(buf, len + 16);
	}

	/* hdr_len: 48 and nothing else, also with the bytes for the claimed
	 * length present. */
	for (size_t i = 0; i < sizeof(bad_hlens) / sizeof(bad_hlens[0]); i++) {
		size_t len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));

		put_le32(buf + 4, bad_hlens[i]);
		expect_eproto(buf, len);
		if (bad_hlens[i] > len && bad_hlens[i] <= sizeof(buf)) {
			memset(buf + len, 0, bad_hlens[i] - len);
			expect_eproto(buf, bad_hlens[i]);
		}
	}

	/* A control frame: no payload ... */
	for (size_t i = 0; i < sizeof(pls) / sizeof(pls[0]); i++) {
		size_t len;

		f = make_frame(SL_WIRE_BYE);
		f.payload_len = pls[i];
		expect_invalid(&f);
		len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));
		put_le32(buf + 8, pls[i]);
		expect_eproto(buf, len);
	}
	/* ... and no seq: the last frame on the connection, outside the
	 * stream (like ACK). */
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		size_t len;

		f = make_frame(SL_WIRE_BYE);
		f.seq = seqs[i];
		expect_invalid(&f);
		f.u.bye.incarnation = 1;
		expect_invalid(&f);
		len = encode_valid(SL_WIRE_BYE, buf, sizeof(buf));
		put_le64(buf + 16, seqs[i]);
		expect_eproto(buf, len);
	}
	f = make_frame(SL_WIRE_BYE);
	f.seq = 0;
	expect_valid(&f);
	/* A DONE (48 bytes too, sequenced) retyped as a BYE is refused for
	 * its seq. */
	{
		size_t len = encode_valid(SL_WIRE_DONE, buf, sizeof(buf));

		buf[1] = SL_WIRE_BYE;
		expect_eproto(buf, len);
	}

	/* Broken several ways at once is still broken. */
	f = make_frame(SL_WIRE_BYE);
	f.u.bye.incarnation = 0;
	f.u.bye.reason = 1;
	f.seq = 1;
	f.payload_len = 1;
	expect_invalid(&f);

	/* And the valid extremes of what is left: any ack, any incarnation
	 * but 0. */
	f = make_frame(SL_WIRE_BYE);
	f.u.bye.incarnation = 1;
	f.ack = 0;
	expect_valid(&f);
	f.u.bye.incarnation = UINT64_MAX;
	f.ack = UINT64_MAX;
	expect_valid(&f);
}
END_TEST

/* xorshift64*: fixed seed, so a failure reproduces. */
static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

#define FUZZ_ITERS 300000
#define FUZZ_MAXLEN (SL_WIRE_HDR_MAX + 8)

/*
 * The complete header @g of @hl bytes breaks a rule (by the test's own
 * validator) but would not with the @width-byte field at @off set to @v:
 * it is bad for that field alone.
 */
static int ref_bad_for_field_alone(const uint8_t *g, size_t hl, size_t off,
				   int width, uint64_t v)
{
	uint8_t fixed[SL_WIRE_HDR_MAX];

	if (!ref_prefix_bad(g, hl))
		return 0;
	memcpy(fixed, g, hl);
	for (int i = 0; i < width; i++)
		fixed[off + (size_t)i] = (uint8_t)(v >> (8 * i));
	return !ref_prefix_bad(fixed, hl);
}

START_TEST(test_fuzz_garbage)
{
	uint8_t buf[FUZZ_MAXLEN + SL_WIRE_HDR_MAX];
	long ok_hdr = 0, ok_full = 0;
	/* Per type byte: headers accepted, and rejected at the type's own
	 * fields (full header present, version and type fine). */
	long ok_type[256] = { 0 }, bad_type[256] = { 0 };
	/* HELLO credit grants at the window's ends, and on either side. */
	static const uint32_t credit_edges[] = {
		0, 1, 2, SPEC_CREDITS_MAX - 1, SPEC_CREDITS_MAX,
		SPEC_CREDITS_MAX + 1, 0x0001ffffu, UINT32_MAX,
	};
	/* Whole HELLOs accepted with a grant of 1 and of 65536, and rejected
	 * for their grant alone. */
	long hello_min_ok = 0, hello_max_ok = 0, hello_credits_bad = 0;
	/* seq, HELLO incarnation and peer_incarnation at 0, 1 and all ones. */
	static const uint64_t u64_edges[] = { 0, 1, UINT64_MAX };
	/* Whole headers rejected for their seq alone: 0 on a sequenced type,
	 * not 0 on another; accepted sequenced frames with seq 1 and all ones. */
	long seq_zero_bad[256] = { 0 }, seq_set_bad[256] = { 0 };
	long seq_min_ok[256] = { 0 }, seq_max_ok[256] = { 0 };
	/* HELLOs rejected for an incarnation of 0 alone; accepted with an
	 * incarnation of 1, and with a peer_incarnation of 0 and all ones. */
	long hello_inc_bad = 0, hello_inc_min_ok = 0;
	long hello_peer_zero_ok = 0, hello_peer_max_ok = 0;
	/* BYEs rejected for an incarnation of 0 alone; accepted with an
	 * incarnation of 1 and of all ones. */
	long bye_inc_bad = 0, bye_inc_min_ok = 0, bye_inc_max_ok = 0;

	rng_state = 0x9e3779b97f4a7c15ull;
	for (long it = 0; it < FUZZ_ITERS; it++) {
		size_t len = (size_t)(rng() % (FUZZ_MAXLEN + 1));
		struct sl_wire_frame f, f2;
		uint8_t re[SL_WIRE_HDR_MAX];
		const uint8_t *g;
		uint32_t hl;
		int rh, rd, bad;

		if (it & 1) {
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rng();
		} else {
			/*
			 * Pure noise almost never gets past the version byte;
			 * a valid frame with a few bytes disturbed reaches the
			 * deeper checks.
			 */
			uint8_t type = all_types[rng() % N_TYPES];
			int nmut = (int)(rng() % 4);
			uint32_t pl = spec_has_payload(type) ? (uint32_t)(rng() % 24) : 0;

			encode_valid(type, buf, sizeof(buf));
			put_le32(buf + 8, pl);
			/* Random bytes seldom land on the credit window's
			 * ends: put them there, for the mutations to move. */
			if (type == SL_WIRE_HELLO && (rng() & 1))
				put_le32(buf + 56, credit_edges[rng() % (sizeof(credit_edges) /
									 sizeof(credit_edges[0]))]);
			/* Nor on seq 0 for a sequenced type (make_frame's seqs
			 * have no zero byte), nor on the incarnations' ends. */
			if ((rng() & 3) == 0)
				put_le64(buf + 16, u64_edges[rng() % 3]);
			if (type == SL_WIRE_HELLO && (rng() & 1))
				put_le64(buf + 40, u64_edges[rng() % 3]);
			if (type == SL_WIRE_HELLO && (rng() & 1))
				put_le64(buf + 64, u64_edges[rng() % 3]);
			if (type == SL_WIRE_BYE && (rng() & 1))
				put_le64(buf + 32, u64_edges[rng() % 3]);
			for (size_t i = SL_WIRE_HDR_MAX; i < sizeof(buf); i++)
				buf[i] = (uint8_t)rng();
			for (int m = 0; m < nmut; m++) {
				size_t pos = rng() % SL_WIRE_HDR_MAX;
				uint64_t r = rng();

				buf[pos] = (r & 0x100) ? (uint8_t)r : (uint8_t)(buf[pos] ^ (1u << (r % 8)));
			}
			/* Half the time a length near the frame's own, so that
			 * the long headers are complete often enough. */
			if (it & 2) {
				size_t want = spec_hdr_len(type) + pl;

				len = want + (size_t)(rng() % 5);
				len = len < 2 ? 0 : len - 2;
				if (len > FUZZ_MAXLEN)
					len = FUZZ_MAXLEN;
			}
		}
		g = guarded(buf, len);
		hl = len >= 2 ? spec_hdr_len(g[1]) : 0;

		rh = sl_wire_decode_hdr(g, len, &f);
		if (rh > 0) {
			ok_hdr++;
			ok_type[f.type]++;
			HOT_ASSERT(sl_wire_hdr_len(f.type) != 0, "iter %ld", it);
			HOT_ASSERT(rh == (int)sl_wire_hdr_len(f.type), "iter %ld", it);
			HOT_ASSERT(f.hdr_len == (uint32_t)rh, "iter %ld", it);
			HOT_ASSERT((size_t)rh <= len, "iter %ld", it);
			HOT_ASSERT(f.payload_len <= SL_WIRE_PAYLOAD_MAX, "iter %ld", it);
			/* A decoded header is canonical: it re-encodes to the
			 * same bytes, by wire.c and by the test's own layout. */
			HOT_ASSERT(sl_wire_encode(&f, re, sizeof(re)) == rh, "iter %ld", it);
			HOT_ASSERT(memcmp(re, g, (size_t)rh) == 0, "iter %ld", it);
			HOT_ASSERT(raw_encode(&f, re) == (size_t)rh, "iter %ld", it);
			HOT_ASSERT(memcmp(re, g, (size_t)rh) == 0, "iter %ld", it);
			/* Sequenced exactly when the type says so. */
			HOT_ASSERT(f.seq == get_le(g + 16, 8), "iter %ld", it);
			HOT_ASSERT((f.seq != 0) == spec_is_sequenced(f.type),
				   "iter %ld: type %u seq %llu", it, f.type,
				   (unsigned long long)f.seq);
			seq_min_ok[f.type] += f.seq == 1;
			seq_max_ok[f.type] += f.seq == UINT64_MAX;
		} else {
			HOT_ASSERT(rh == -EAGAIN || rh == -EPROTO, "iter %ld", it);
		}

		/*
		 * Against the test's own reading of sl_wire.h: a complete
		 * header is accepted exactly when it breaks no rule; a
		 * rejection always names a rule broken in the bytes given
		 * (never a prefix of a valid header); a bad version or type is
		 * rejected from its own byte on.
		 */
		bad = ref_prefix_bad(g, len < hl ? len : (hl ? hl : len));
		if (hl != 0 && len >= hl) {
			HOT_ASSERT(rh == (bad ? -EPROTO : (int)hl),
				   "iter %ld: rh %d, ref bad %d", it, rh, bad);
			if (bad && g[0] == SL_WIRE_VERSION &&
			    !ref_prefix_bad(g, SL_WIRE_COMMON_LEN))
				bad_type[g[1]]++;
		} else {
			HOT_ASSERT(rh != -EPROTO || bad, "iter %ld: -EPROTO on a valid prefix", it);
			HOT_ASSERT(rh == -EPROTO || rh == -EAGAIN, "iter %ld", it);
		}
		if (ref_prefix_bad(g, len < 2 ? len : 2))
			HOT_ASSERT(rh == -EPROTO, "iter %ld", it);
		if (rh > 0 && f.type == SL_WIRE_HELLO) {
			HOT_ASSERT(spec_credits_valid(f.u.hello.credits), "iter %ld", it);
			HOT_ASSERT(f.u.hello.credits == get_le(g + 56, 4), "iter %ld", it);
			hello_min_ok += f.u.hello.credits == 1;
			hello_max_ok += f.u.hello.credits == SPEC_CREDITS_MAX;
			HOT_ASSERT(f.u.hello.incarnation != 0, "iter %ld", it);
			HOT_ASSERT(f.u.hello.incarnation == get_le(g + 40, 8), "iter %ld", it);
			HOT_ASSERT(f.u.hello.peer_incarnation == get_le(g + 64, 8),
				   "iter %ld", it);
			hello_inc_min_ok += f.u.hello.incarnation == 1;
			hello_peer_zero_ok += f.u.hello.peer_incarnation == 0;
			hello_peer_max_ok += f.u.hello.peer_incarnation == UINT64_MAX;
		}
		if (rh > 0 && f.type == SL_WIRE_BYE) {
			HOT_ASSERT(f.u.bye.incarnation != 0, "iter %ld", it);
			HOT_ASSERT(f.u.bye.incarnation == get_le(g + 32, 8), "iter %ld", it);
			HOT_ASSERT(f.u.bye.reason == 0, "iter %ld", it);
			HOT_ASSERT(get_le(g + 44, 4) == 0, "iter %ld", it);
			bye_inc_min_ok += f.u.bye.incarnation == 1;
			bye_inc_max_ok += f.u.bye.incarnation == UINT64_MAX;
		}
		if (hl != 0 && len >= hl) {
			uint8_t type = g[1];
			uint64_t seq = get_le(g + 16, 8);

			/* Bad for the seq rule alone. */
			if (spec_is_sequenced(type) && seq == 0 &&
			    ref_bad_for_field_alone(g, hl, 16, 8, 1)) {
				seq_zero_bad[type]++;
				HOT_ASSERT(rh == -EPROTO, "iter %ld: type %u seq 0", it, type);
			}
			if (!spec_is_sequenced(type) && seq != 0 &&
			    ref_bad_for_field_alone(g, hl, 16, 8, 0)) {
				seq_set_bad[type]++;
				HOT_ASSERT(rh == -EPROTO, "iter %ld: type %u seq %llu", it,
					   type, (unsigned long long)seq);
			}
			/* A HELLO bad for its incarnation of 0 alone. */
			if (type == SL_WIRE_HELLO && get_le(g + 40, 8) == 0 &&
			    ref_bad_for_field_alone(g, hl, 40, 8, 1)) {
				hello_inc_bad++;
				HOT_ASSERT(rh == -EPROTO, "iter %ld: incarnation 0", it);
			}
			/* A BYE bad for its incarnation of 0 alone. */
			if (type == SL_WIRE_BYE && get_le(g + 32, 8) == 0 &&
			    ref_bad_for_field_alone(g, hl, 32, 8, 1)) {
				bye_inc_bad++;
				HOT_ASSERT(rh == -EPROTO, "iter %ld: BYE incarnation 0", it);
			}
		}
		if (hl == SL_WIRE_HELLO_LEN && len >= hl && g[1] == SL_WIRE_HELLO &&
		    !spec_credits_valid(get_le(g + 56, 4))) {
			uint8_t fixed[SL_WIRE_HELLO_LEN];

			/* Bad for its grant alone: the same bytes with a
			 * grant of 1 pass. */
			memcpy(fixed, g, sizeof(fixed));
			put_le32(fixed + 56, 1);
			if (!ref_prefix_bad(fixed, sizeof(fixed))) {
				hello_credits_bad++;
				HOT_ASSERT(rh == -EPROTO, "iter %ld: credits %u", it,
					   (unsigned)get_le(g + 56, 4));
			}
		}

		rd = sl_wire_decode(g, len, &f2);
		if (rd > 0) {
			ok_full++;
			HOT_ASSERT(rd == rh, "iter %ld", it);
			HOT_ASSERT(f2.hdr_len == (uint32_t)rd, "iter %ld", it);
			HOT_ASSERT((size_t)rd + f2.payload_len <= len, "iter %ld", it);
			HOT_ASSERT(frames_equal(&f2, &f), "iter %ld", it);
		} else {
			HOT_ASSERT(rd == -EPROTO || rd == -EMSGSIZE, "iter %ld", it);
			HOT_ASSERT(rd != -EMSGSIZE || rh > 0, "iter %ld", it);
			HOT_ASSERT(rh > 0 || rd == -EPROTO, "iter %ld", it);
			HOT_ASSERT(rh <= 0 || (size_t)rh + f.payload_len > len,
				   "iter %ld", it);
		}
	}
	/* The mutated half must actually exercise the success paths. */
	ck_assert_int_gt(ok_hdr, 1000);
	ck_assert_int_gt(ok_full, 1000);
	/* ... of every type, and the type-specific rejections too. */
	for (size_t t = 0; t < N_TYPES; t++) {
		ck_assert_msg(ok_type[all_types[t]] > 1000, "type %u: %ld accepted",
			      all_types[t], ok_type[all_types[t]]);
		/* No rule on their own fields: ACK has none, and every
		 * value of every EAGER field is valid (dst_node is checked
		 * by the receiving daemon, sender_uid is any uid). */
		if (all_types[t] != SL_WIRE_ACK && all_types[t] != SL_WIRE_EAGER)
			ck_assert_msg(bad_type[all_types[t]] > 100,
				      "type %u: %ld rejected", all_types[t],
				      bad_type[all_types[t]]);
	}
	ck_assert_msg(hello_min_ok > 100, "%ld HELLOs with credits 1", hello_min_ok);
	ck_assert_msg(hello_max_ok > 100, "%ld HELLOs with credits 65536", hello_max_ok);
	ck_assert_msg(hello_credits_bad > 100, "%ld HELLOs bad for their credits",
		      hello_credits_bad);
	/* The seq rule, both ways, for every type. */
	for (size_t t = 0; t < N_TYPES; t++) {
		uint8_t type = all_types[t];

		if (spec_is_sequenced(type)) {
			ck_assert_msg(seq_zero_bad[type] > 100,
				      "type %u: %ld bad for seq 0", type, seq_zero_bad[type]);
			ck_assert_msg(seq_min_ok[type] > 100,
				      "type %u: %ld with seq 1", type, seq_min_ok[type]);
			ck_assert_msg(seq_max_ok[type] > 100,
				      "type %u: %ld with seq all ones", type, seq_max_ok[type]);
			ck_assert_int_eq(seq_set_bad[type], 0);
		} else {
			ck_assert_msg(seq_set_bad[type] > 100,
				      "type %u: %ld bad for a seq", type, seq_set_bad[type]);
			ck_assert_int_eq(seq_zero_bad[type], 0);
			ck_assert_int_eq(seq_min_ok[type], 0);
			ck_assert_int_eq(seq_max_ok[type], 0);
		}
	}
	ck_assert_msg(hello_inc_bad > 100, "%ld HELLOs bad for incarnation 0",
		      hello_inc_bad);
	ck_assert_msg(hello_inc_min_ok > 100, "%ld HELLOs with incarnation 1",
		      hello_inc_min_ok);
	ck_assert_msg(hello_peer_zero_ok > 100, "%ld HELLOs with peer_incarnation 0",
		      hello_peer_zero_ok);
	ck_assert_msg(hello_peer_max_ok > 100,
		      "%ld HELLOs with peer_incarnation all ones", hello_peer_max_ok);
	ck_assert_msg(bye_inc_bad > 100, "%ld BYEs bad for incarnation 0", bye_inc_bad);
	ck_assert_msg(bye_inc_min_ok > 100, "%ld BYEs with incarnation 1", bye_inc_min_ok);
	ck_assert_msg(bye_inc_max_ok > 100, "%ld BYEs with incarnation all ones",
		      bye_inc_max_ok);
}
END_TEST

/* ------------------------------------------------------------------ */

static uint32_t fnv1a_ref(const char *s)
{
	uint32_t h = 0x811c9dc5u;

	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x01000193u;
	}
	return h;
}

START_TEST(test_node_id)
{
	ck_assert_uint_eq(sl_node_id("a"), 0xe40c292cu);
	ck_assert_uint_eq(sl_node_id(""), 0x811c9dc5u);
	ck_assert_uint_eq(sl_node_id("foobar"), 0xbf9cf968u);
	ck_assert_uint_eq(sl_node_id(NULL), SL_NODE_LOCAL);
	ck_assert_uint_eq(sl_node_id("node1"), sl_node_id("node1"));
	ck_assert_uint_ne(sl_node_id("node1"), sl_node_id("node2"));
	ck_assert_uint_ne(sl_node_id("a"), sl_node_id("b"));
	/* Bytes >= 0x80 are hashed unsigned. */
	ck_assert_uint_eq(sl_node_id("\xff"), fnv1a_ref("\xff"));
}
END_TEST

START_TEST(test_node_id_fold)
{
	/* Names found offline whose raw FNV-1a is 0 and all-ones. */
	ck_assert_uint_eq(fnv1a_ref("eSN.1"), 0);
	ck_assert_uint_eq(sl_node_id("eSN.1"), 1);
	ck_assert_uint_eq(fnv1a_ref("U[-_4"), 0xffffffffu);
	ck_assert_uint_eq(sl_node_id("U[-_4"), 0xfffffffeu);
}
END_TEST

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

START_TEST(test_node_id_distinct)
{
	enum { N = 10000 };
	static uint32_t ids[N];
	char name[32];

	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "node%d", i);
		ids[i] = sl_node_id(name);
		HOT_ASSERT(ids[i] != SL_NODE_LOCAL && ids[i] != SL_NODE_ANY, "%s", name);
		HOT_ASSERT(ids[i] == fnv1a_ref(name), "%s", name);
	}
	/* Not a property of every hash: a check that these names, typical of
	 * a cluster, happen not to collide. */
	qsort(ids, N, sizeof(ids[0]), cmp_u32);
	for (int i = 1; i < N; i++)
		HOT_ASSERT(ids[i - 1] != ids[i], "collision at %d", i);
}
END_TEST

START_TEST(test_strerror)
{
	static const int st[] = {
		SL_OK, SL_NAK_BUSY, SL_NAK_RECEIVER_FULL, SL_ERR_NO_ENDPOINT,
		SL_ERR_TRUNCATED, SL_ERR_PEER_DOWN, SL_ERR_PEER_RESTARTED,
		SL_ERR_CANCELED, SL_ERR_INVALID, SL_ERR_ACCESS, SL_ERR_REG_LIMIT,
		SL_ERR_UNKNOWN_NODE, SL_ERR_STALLED,
	};
	enum { N = sizeof(st) / sizeof(st[0]) };

	for (int i = 0; i < N; i++) {
		const char *s = sl_strerror(st[i]);

		ck_assert_ptr_nonnull(s);
		ck_assert_uint_gt(strlen(s), 0);
		ck_assert_str_ne(s, "unknown status");
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(s, sl_strerror(st[j]));
	}
	ck_assert_str_eq(sl_strerror(SL_OK), "ok");
	ck_assert_str_eq(sl_strerror(SL_NAK_BUSY), "busy (NAK)");
	ck_assert_str_eq(sl_strerror(9999), "unknown status");
	ck_assert_str_eq(sl_strerror(-1), "unknown status");
	ck_assert_str_eq(sl_strerror(3), "unknown status");
	ck_assert_str_eq(sl_strerror(SL_ERR_STALLED + 1), "unknown status");
}
END_TEST

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc;

	tc = tcase_create("codec");
	tcase_add_checked_fixture(tc, guard_setup, guard_teardown);
	tcase_add_test(tc, test_hdr_len);
	tcase_add_loop_test(tc, test_round_trip, 0, (int)N_TYPES);
	tcase_add_test(tc, test_round_trip_extremes);
	tcase_add_test(tc, test_round_trip_extremes_rndv);
	tcase_add_test(tc, test_round_trip_extremes_hello);
	tcase_add_test(tc, test_exact_bytes_eager);
	tcase_add_test(tc, test_exact_bytes_rts);
	tcase_add_test(tc, test_exact_bytes_rtr);
	tcase_add_test(tc, test_exact_bytes_fin);
	tcase_add_test(tc, test_exact_bytes_write);
	tcase_add_test(tc, test_exact_bytes_done);
	tcase_add_test(tc, test_exact_bytes_bye);
	tcase_add_test(tc, test_exact_bytes_auth);
	tcase_add_test(tc, test_auth_rules);
	tcase_add_test(tc, test_exact_bytes_hello);
	tcase_add_test(tc, test_exact_bytes_nak);
	tcase_add_test(tc, test_exact_bytes_ack);
	tcase_add_test(tc, test_exact_bytes_hello_nak_ack);
	tcase_add_test(tc, test_bad_version);
	tcase_add_test(tc, test_bad_type);
	tcase_add_test(tc, test_bad_hdr_len);
	tcase_add_test(tc, test_bad_flags);
	tcase_add_test(tc, test_bad_rsvd);
	tcase_add_test(tc, test_bad_payload_len);
	tcase_add_test(tc, test_auth_who);
	tcase_add_test(tc, test_bye_refusal);
	tcase_add_test(tc, test_bad_seq);
	tcase_add_test(tc, test_seq_rules);
	tcase_add_test(tc, test_bad_nak_status);
	tcase_add_test(tc, test_bad_nak_seq_and_hello_node);
	tcase_add_test(tc, test_hello_rules);
	tcase_add_test(tc, test_rts_rules);
	tcase_add_test(tc, test_rtr_rules);
	tcase_add_test(tc, test_fin_rules);
	tcase_add_test(tc, test_write_rules);
	tcase_add_test(tc, test_done_rules);
	tcase_add_test(tc, test_bye_rules);
	tcase_add_loop_test(tc, test_truncated_header, 0, (int)N_TYPES);
	tcase_add_loop_test(tc, test_length_beyond_buffer, 0, (int)N_PAYLOAD_TYPES);
	tcase_add_test(tc, test_encode_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_add_checked_fixture(tc, guard_setup, guard_teardown);
	/* Valgrind slows the fuzz loop by well over an order of magnitude. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_fuzz_garbage);
	suite_add_tcase(s, tc);

	tc = tcase_create("node_id");
	tcase_add_test(tc, test_node_id);
	tcase_add_test(tc, test_node_id_fold);
	tcase_add_test(tc, test_node_id_distinct);
	suite_add_tcase(s, tc);

	tc = tcase_create("strerror");
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
