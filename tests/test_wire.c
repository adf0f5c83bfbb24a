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
};
#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))

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
		break;
	case SL_WIRE_EAGER:
		f.seq = 0x1112131415161718ull;
		f.payload_len = 5;
		f.u.eager.src_port = 0x21222324u;
		f.u.eager.dst_port = 0x31323334u;
		f.u.eager.tag = 0x4142434445464748ull;
		f.u.eager.dst_node = 0x51525354u;
		break;
	case SL_WIRE_NAK:
		f.u.nak.nak_seq = 0x6162636465666768ull;
		f.u.nak.status = SL_NAK_RECEIVER_FULL;
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
		       a->u.hello.last_rx_seq == b->u.hello.last_rx_seq;
	case SL_WIRE_EAGER:
		return a->u.eager.src_port == b->u.eager.src_port &&
		       a->u.eager.dst_port == b->u.eager.dst_port &&
		       a->u.eager.tag == b->u.eager.tag &&
		       a->u.eager.dst_node == b->u.eager.dst_node;
	case SL_WIRE_NAK:
		return a->u.nak.nak_seq == b->u.nak.nak_seq &&
		       a->u.nak.status == b->u.nak.status;
	default:
		return 1;
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
		break;
	case SL_WIRE_EAGER:
		ck_assert_uint_eq(a->u.eager.src_port, b->u.eager.src_port);
		ck_assert_uint_eq(a->u.eager.dst_port, b->u.eager.dst_port);
		ck_assert_uint_eq(a->u.eager.tag, b->u.eager.tag);
		ck_assert_uint_eq(a->u.eager.dst_node, b->u.eager.dst_node);
		break;
	case SL_WIRE_NAK:
		ck_assert_uint_eq(a->u.nak.nak_seq, b->u.nak.nak_seq);
		ck_assert_uint_eq(a->u.nak.status, b->u.nak.status);
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

/* ------------------------------------------------------------------ */

START_TEST(test_hdr_len)
{
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_HELLO), SL_WIRE_HELLO_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_EAGER), SL_WIRE_EAGER_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_ACK), SL_WIRE_ACK_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(SL_WIRE_NAK), SL_WIRE_NAK_LEN);
	ck_assert_uint_eq(sl_wire_hdr_len(0), 0);
	ck_assert_uint_eq(sl_wire_hdr_len(9), 0);
	ck_assert_uint_eq(sl_wire_hdr_len(255), 0);
	for (size_t i = 0; i < N_TYPES; i++)
		ck_assert_uint_le(sl_wire_hdr_len(all_types[i]), SL_WIRE_HDR_MAX);
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
	rc = sl_wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(rc, (int)SL_WIRE_EAGER_LEN);
	in.hdr_len = (uint32_t)rc;
	ck_assert_int_eq(sl_wire_decode_hdr(buf, (size_t)rc, &out), rc);
	assert_frames_equal(&in, &out);

	/* Every valid NAK status survives the trip. */
	static const uint32_t st[] = {
		SL_NAK_BUSY, SL_NAK_RECEIVER_FULL, SL_ERR_NO_ENDPOINT,
		SL_ERR_TRUNCATED, SL_ERR_PEER_DOWN, SL_ERR_PEER_RESTARTED,
		SL_ERR_CANCELED, SL_ERR_INVALID, SL_ERR_ACCESS,
	};
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		in = make_frame(SL_WIRE_NAK);
		in.u.nak.status = st[i];
		rc = sl_wire_encode(&in, buf, sizeof(buf));
		ck_assert_int_eq(rc, (int)SL_WIRE_NAK_LEN);
		ck_assert_int_eq(sl_wire_decode(buf, (size_t)rc, &out), rc);
		ck_assert_uint_eq(out.u.nak.status, st[i]);
	}
}
END_TEST

START_TEST(test_exact_bytes_eager)
{
	static const uint8_t want[SL_WIRE_EAGER_LEN] = {
		/* 0 version, type, flags */
		0x01, 0x02, 0x00, 0x00,
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
		/* 52 rsvd */
		0x00, 0x00, 0x00, 0x00,
	};
	struct sl_wire_frame f = make_frame(SL_WIRE_EAGER);
	uint8_t buf[SL_WIRE_HDR_MAX];

	/* Garbage in the buffer shows the encoder clears the rsvd fields. */
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_EAGER_LEN);
	ck_assert_mem_eq(buf, want, sizeof(want));
	ck_assert_uint_eq(buf[0], 1);
	ck_assert_uint_eq(buf[16], 0x18);
	ck_assert_uint_eq(buf[23], 0x11);
	/* Nothing written past the header. */
	ck_assert_uint_eq(buf[SL_WIRE_EAGER_LEN], 0xff);
}
END_TEST

START_TEST(test_exact_bytes_hello_nak_ack)
{
	uint8_t buf[SL_WIRE_HDR_MAX];
	struct sl_wire_frame f;

	f = make_frame(SL_WIRE_HELLO);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), 64);
	ck_assert_uint_eq(buf[0], 1);
	ck_assert_uint_eq(buf[1], SL_WIRE_HELLO);
	ck_assert_uint_eq(buf[4], 64);
	for (int i = 16; i < 24; i++)
		ck_assert_uint_eq(buf[i], 0);	/* control frame: seq 0 */
	ck_assert_uint_eq(buf[32], 0xa4);
	ck_assert_uint_eq(buf[35], 0xa1);
	ck_assert_uint_eq(buf[38], 0x01);	/* eager_max 0x10000 */
	ck_assert_uint_eq(buf[40], 0xb8);
	ck_assert_uint_eq(buf[47], 0xb1);
	ck_assert_uint_eq(buf[48], 0xc8);
	ck_assert_uint_eq(buf[55], 0xc1);
	for (int i = 56; i < 64; i++)
		ck_assert_uint_eq(buf[i], 0);

	f = make_frame(SL_WIRE_NAK);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), 48);
	ck_assert_uint_eq(buf[4], 48);
	ck_assert_uint_eq(buf[32], 0x68);
	ck_assert_uint_eq(buf[39], 0x61);
	ck_assert_uint_eq(buf[40], SL_NAK_RECEIVER_FULL);
	for (int i = 41; i < 48; i++)
		ck_assert_uint_eq(buf[i], 0);
	ck_assert_uint_eq(buf[48], 0xff);

	f = make_frame(SL_WIRE_ACK);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), 32);
	ck_assert_uint_eq(buf[4], 32);
	ck_assert_uint_eq(buf[24], 0x08);
	ck_assert_uint_eq(buf[31], 0x01);
	ck_assert_uint_eq(buf[32], 0xff);
}
END_TEST

START_TEST(test_bad_version)
{
	static const uint8_t versions[] = { 0, 2, 0x81, 255 };
	uint8_t buf[128];

	for (size_t t = 0; t < N_TYPES; t++) {
		for (size_t v = 0; v < sizeof(versions); v++) {
			size_t len = encode_valid(all_types[t], buf, sizeof(buf));

			buf[0] = versions[v];
			expect_eproto(buf, len);
			/* Knowable from the first byte alone. */
			expect_eproto(buf, 1);
		}
	}
}
END_TEST

START_TEST(test_bad_type)
{
	static const uint8_t types[] = { 0, 9, 10, 128, 255 };
	uint8_t buf[128];

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
	uint8_t buf[128];

	for (size_t t = 0; t < N_TYPES; t++) {
		uint8_t type = all_types[t];
		uint32_t hlen = sl_wire_hdr_len(type);
		uint32_t bad[] = {
			0, 1, hlen - 1, hlen + 1, hlen + 8, SL_WIRE_COMMON_LEN - 1,
			SL_WIRE_HDR_MAX + 8, UINT32_MAX, 0x80000000u,
			SL_WIRE_HELLO_LEN, SL_WIRE_EAGER_LEN, SL_WIRE_ACK_LEN,
			SL_WIRE_NAK_LEN,
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
	uint8_t buf[128];

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
	uint8_t buf[128];

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
			rs = 56;
			re = 64;
			break;
		case SL_WIRE_EAGER:
			rs = 52;
			re = 56;
			break;
		case SL_WIRE_NAK:
			rs = 44;
			re = 48;
			break;
		default:
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
	uint8_t buf[128];
	struct sl_wire_frame f;
	size_t len;
	const uint8_t *g;

	/* Over the maximum on the one type that may carry payload. */
	len = encode_valid(SL_WIRE_EAGER, buf, sizeof(buf));
	put_le32(buf + 8, SL_WIRE_PAYLOAD_MAX + 1);
	expect_eproto(buf, len);
	put_le32(buf + 8, UINT32_MAX);
	expect_eproto(buf, len);
	put_le32(buf + 8, 0x80000000u);
	expect_eproto(buf, len);

	/* Exactly the maximum is a valid header; the datagram is short. */
	put_le32(buf + 8, SL_WIRE_PAYLOAD_MAX);
	g = guarded(buf, SL_WIRE_EAGER_LEN);
	ck_assert_int_eq(sl_wire_decode_hdr(g, SL_WIRE_EAGER_LEN, &f),
			 (int)SL_WIRE_EAGER_LEN);
	ck_assert_uint_eq(f.payload_len, SL_WIRE_PAYLOAD_MAX);
	ck_assert_int_eq(sl_wire_decode(g, SL_WIRE_EAGER_LEN, &f), -EMSGSIZE);

	/* An empty eager message is fine. */
	len = encode_valid(SL_WIRE_EAGER, buf, sizeof(buf));
	put_le32(buf + 8, 0);
	expect_ok(buf, SL_WIRE_EAGER_LEN);

	/* Any payload on a type that has none. */
	for (size_t t = 0; t < N_TYPES; t++) {
		static const uint32_t pl[] = { 1, 8, SL_WIRE_PAYLOAD_MAX, UINT32_MAX };

		if (all_types[t] == SL_WIRE_EAGER)
			continue;
		for (size_t i = 0; i < sizeof(pl) / sizeof(pl[0]); i++) {
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
	uint8_t buf[128];
	size_t len;

	len = encode_valid(SL_WIRE_EAGER, buf, sizeof(buf));
	put_le64(buf + 16, 0);
	expect_eproto(buf, len);
	put_le64(buf + 16, 1);
	expect_ok(buf, len);

	for (size_t t = 0; t < N_TYPES; t++) {
		static const uint64_t seqs[] = { 1, 0x100, 1ull << 63, UINT64_MAX };

		if (all_types[t] == SL_WIRE_EAGER)
			continue;
		for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
			len = encode_valid(all_types[t], buf, sizeof(buf));
			put_le64(buf + 16, seqs[i]);
			expect_eproto(buf, len);
		}
	}
}
END_TEST

START_TEST(test_bad_nak_status)
{
	static const uint32_t bad[] = {
		SL_OK, 3, 15, 23, 0x100, 0x10001, UINT32_MAX,
	};
	uint8_t buf[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = encode_valid(SL_WIRE_NAK, buf, sizeof(buf));

		put_le32(buf + 40, bad[i]);
		expect_eproto(buf, len);
	}
	/* Every value 0..255 is valid exactly when it names a NAK or error. */
	for (uint32_t s = 0; s < 256; s++) {
		size_t len = encode_valid(SL_WIRE_NAK, buf, sizeof(buf));
		int valid = (s >= 1 && s <= 2) || (s >= 16 && s <= 22);

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
	uint8_t buf[128];
	size_t len = encode_valid(SL_WIRE_NAK, buf, sizeof(buf));

	put_le64(buf + 32, 0);
	expect_eproto(buf, len);
	f.u.nak.status = SL_NAK_BUSY;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	for (size_t i = 0; i < 2; i++) {
		struct sl_wire_frame h = { .type = SL_WIRE_HELLO };

		len = encode_valid(SL_WIRE_HELLO, buf, sizeof(buf));
		put_le32(buf + 32, bad_nodes[i]);
		expect_eproto(buf, len);
		h.u.hello.node_id = bad_nodes[i];
		ck_assert_int_eq(sl_wire_encode(&h, buf, sizeof(buf)), -EINVAL);
	}
}
END_TEST

START_TEST(test_truncated_header)
{
	uint8_t type = all_types[_i];
	uint8_t buf[128];
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
	struct sl_wire_frame in = make_frame(SL_WIRE_EAGER), out;
	uint8_t buf[SL_WIRE_HDR_MAX + 64];
	int rc;

	in.payload_len = 40;
	rc = sl_wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(rc, (int)SL_WIRE_EAGER_LEN);
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
		if (all_types[t] == SL_WIRE_EAGER)
			continue;
		f = make_frame(all_types[t]);
		f.payload_len = 1;
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	}

	/* -EINVAL: unknown types. */
	f = make_frame(SL_WIRE_ACK);
	f.type = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.type = 9;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.type = 255;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);

	/* -EINVAL: payload over the maximum. */
	f = make_frame(SL_WIRE_EAGER);
	f.payload_len = SL_WIRE_PAYLOAD_MAX + 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.payload_len = SL_WIRE_PAYLOAD_MAX;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), (int)SL_WIRE_EAGER_LEN);

	/* -EINVAL: seq on a control frame. */
	for (size_t t = 0; t < N_TYPES; t++) {
		if (all_types[t] == SL_WIRE_EAGER)
			continue;
		f = make_frame(all_types[t]);
		f.seq = 1;
		ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	}

	/*
	 * Frames the decoder would reject are not encoded either: seq 0 on a
	 * data frame, non-zero flags, a NAK without a NAK or error status.
	 */
	f = make_frame(SL_WIRE_EAGER);
	f.seq = 0;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_HELLO);
	f.flags = 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f = make_frame(SL_WIRE_NAK);
	f.u.nak.status = SL_OK;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.u.nak.status = 3;
	ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)), -EINVAL);

	/* An invalid frame is -EINVAL even when the buffer is also too small. */
	f = make_frame(SL_WIRE_ACK);
	f.payload_len = 1;
	ck_assert_int_eq(sl_wire_encode(&f, buf, 0), -EINVAL);
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
#define FUZZ_MAXLEN 80

START_TEST(test_fuzz_garbage)
{
	uint8_t buf[FUZZ_MAXLEN + SL_WIRE_HDR_MAX];
	long ok_hdr = 0, ok_full = 0;

	rng_state = 0x9e3779b97f4a7c15ull;
	for (long it = 0; it < FUZZ_ITERS; it++) {
		size_t len = (size_t)(rng() % (FUZZ_MAXLEN + 1));
		struct sl_wire_frame f, f2;
		uint8_t re[SL_WIRE_HDR_MAX];
		const uint8_t *g;
		int rh, rd;

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

			encode_valid(type, buf, sizeof(buf));
			put_le32(buf + 8, type == SL_WIRE_EAGER ?
				 (uint32_t)(rng() % 24) : 0);
			for (size_t i = SL_WIRE_HDR_MAX; i < sizeof(buf); i++)
				buf[i] = (uint8_t)rng();
			for (int m = 0; m < nmut; m++) {
				size_t pos = rng() % SL_WIRE_HDR_MAX;
				uint64_t r = rng();

				buf[pos] = (r & 0x100) ? (uint8_t)r : (uint8_t)(buf[pos] ^ (1u << (r % 8)));
			}
		}
		g = guarded(buf, len);

		rh = sl_wire_decode_hdr(g, len, &f);
		if (rh > 0) {
			ok_hdr++;
			HOT_ASSERT(sl_wire_hdr_len(f.type) != 0, "iter %ld", it);
			HOT_ASSERT(rh == (int)sl_wire_hdr_len(f.type), "iter %ld", it);
			HOT_ASSERT(f.hdr_len == (uint32_t)rh, "iter %ld", it);
			HOT_ASSERT((size_t)rh <= len, "iter %ld", it);
			HOT_ASSERT(f.payload_len <= SL_WIRE_PAYLOAD_MAX, "iter %ld", it);
			/* A decoded header is canonical: it re-encodes to the
			 * same bytes. */
			HOT_ASSERT(sl_wire_encode(&f, re, sizeof(re)) == rh, "iter %ld", it);
			HOT_ASSERT(memcmp(re, g, (size_t)rh) == 0, "iter %ld", it);
		} else {
			HOT_ASSERT(rh == -EAGAIN || rh == -EPROTO, "iter %ld", it);
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
		}
	}
	/* The mutated half must actually exercise the success paths. */
	ck_assert_int_gt(ok_hdr, 1000);
	ck_assert_int_gt(ok_full, 1000);
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
		SL_ERR_CANCELED, SL_ERR_INVALID, SL_ERR_ACCESS,
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
	ck_assert_str_eq(sl_strerror(23), "unknown status");
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
	tcase_add_test(tc, test_exact_bytes_eager);
	tcase_add_test(tc, test_exact_bytes_hello_nak_ack);
	tcase_add_test(tc, test_bad_version);
	tcase_add_test(tc, test_bad_type);
	tcase_add_test(tc, test_bad_hdr_len);
	tcase_add_test(tc, test_bad_flags);
	tcase_add_test(tc, test_bad_rsvd);
	tcase_add_test(tc, test_bad_payload_len);
	tcase_add_test(tc, test_bad_seq);
	tcase_add_test(tc, test_bad_nak_status);
	tcase_add_test(tc, test_bad_nak_seq_and_hello_node);
	tcase_add_loop_test(tc, test_truncated_header, 0, (int)N_TYPES);
	tcase_add_test(tc, test_length_beyond_buffer);
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
