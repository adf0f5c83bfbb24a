/*
 * test_wire_fuzz.c - the link frame codec (sl_wire.h) on whole frames:
 * every type's round trip, its fields at their ends, and 300,000 buffers
 * of garbage and of mutated valid frames against the test's own reading
 * of the rules (ref_prefix_bad).
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
	if (HAVE(2, 2) && !spec_flags_valid(type, get_le(p + 2, 2)))
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

static Suite *wire_fuzz_suite(void)
{
	Suite *s = suite_create("wire_fuzz");
	TCase *tc;

	tc = tcase_create("round_trip");
	tcase_add_checked_fixture(tc, guard_setup, guard_teardown);
	tcase_add_loop_test(tc, test_round_trip, 0, (int)N_TYPES);
	tcase_add_test(tc, test_round_trip_extremes);
	tcase_add_test(tc, test_round_trip_extremes_rndv);
	tcase_add_test(tc, test_round_trip_extremes_hello);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_add_checked_fixture(tc, guard_setup, guard_teardown);
	/* Valgrind slows the fuzz loop by well over an order of magnitude. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_fuzz_garbage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wire_run_suite(wire_fuzz_suite());
}
