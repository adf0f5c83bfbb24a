/*
 * test_wire_golden.c - the exact bytes of every link frame (sl_wire.h):
 * each type's header lengths and constants, make_frame() of each type
 * encoded to its golden bytes over a buffer of 0xff (the reserved fields
 * cleared, nothing written past the header), the golden bytes decoded
 * back, and the fields at their ends byte by byte.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_wire.h"
#include "sluice.h"
#include "wire_kit.h"

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
/* @f0 encodes to exactly @want, and @want decodes to @f0. */
static void check_golden_frame(const struct sl_wire_frame *f0, const uint8_t *want, size_t n)
{
	struct sl_wire_frame f = *f0, out;
	uint8_t buf[SL_WIRE_HDR_MAX + 16];
	const uint8_t *g;

	ck_assert_uint_eq(n, spec_hdr_len(f.type));
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

static void check_golden(uint8_t type, const uint8_t *want, size_t n)
{
	struct sl_wire_frame f = make_frame(type);

	check_golden_frame(&f, want, n);
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

/* The keepalive that asks for an answer: an ACK with flag 1. */
START_TEST(test_exact_bytes_ack_ping)
{
	static const uint8_t want[SL_WIRE_ACK_LEN] = {
		/* 0 version 3, type 3, flags = 1 (SL_WIRE_ACK_PING) */
		0x03, 0x03, 0x01, 0x00,
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
	struct sl_wire_frame f = make_frame(SL_WIRE_ACK);

	ck_assert_uint_eq(SL_WIRE_ACK_PING, SPEC_ACK_PING);
	f.flags = SL_WIRE_ACK_PING;
	check_golden_frame(&f, want, sizeof(want));
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

static Suite *wire_golden_suite(void)
{
	Suite *s = suite_create("wire_golden");
	TCase *tc = tcase_create("golden");

	tcase_add_checked_fixture(tc, guard_setup, guard_teardown);
	tcase_add_test(tc, test_hdr_len);
	tcase_add_test(tc, test_exact_bytes_eager);
	tcase_add_test(tc, test_exact_bytes_rts);
	tcase_add_test(tc, test_exact_bytes_rtr);
	tcase_add_test(tc, test_exact_bytes_fin);
	tcase_add_test(tc, test_exact_bytes_write);
	tcase_add_test(tc, test_exact_bytes_done);
	tcase_add_test(tc, test_exact_bytes_bye);
	tcase_add_test(tc, test_exact_bytes_auth);
	tcase_add_test(tc, test_exact_bytes_hello);
	tcase_add_test(tc, test_exact_bytes_nak);
	tcase_add_test(tc, test_exact_bytes_ack);
	tcase_add_test(tc, test_exact_bytes_ack_ping);
	tcase_add_test(tc, test_exact_bytes_hello_nak_ack);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wire_run_suite(wire_golden_suite());
}
