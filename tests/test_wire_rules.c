/*
 * test_wire_rules.c - each link frame type's field rules (sl_wire.h),
 * each rule both ways from a frame: the encoder refuses the broken frame
 * (-EINVAL, nothing written) and both decoders refuse its bytes
 * (expect_invalid), and the frames at the rule's edges go through
 * (expect_valid).  The same rules byte by byte on the wire are rows of
 * test_wire_decode.c's table, under the group of the same name.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sl_wire.h"
#include "sluice.h"
#include "wire_kit.h"

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
	}
}
END_TEST

/* A NAK must name a real data frame, a HELLO a real node. */
START_TEST(test_bad_nak_seq_and_hello_node)
{
	static const uint32_t bad_nodes[] = { SL_NODE_LOCAL, SL_NODE_ANY };
	struct sl_wire_frame f = { .type = SL_WIRE_NAK };
	uint8_t buf[SL_WIRE_HDR_MAX + 8];

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

	/* -EINVAL: flags other than the ACK's ping; seq on HELLO, ACK, WRITE or
	 * BYE; no seq on a sequenced frame. */
	for (size_t t = 0; t < N_TYPES; t++) {
		f = make_frame(all_types[t]);
		f.flags = 1;
		if (spec_flags_valid(all_types[t], 1))
			ck_assert_int_eq(sl_wire_encode(&f, buf, sizeof(buf)),
					 (int)spec_hdr_len(all_types[t]));
		else
			expect_invalid(&f);
		f.flags = 2;
		expect_invalid(&f);
		f.flags = 0x8000;
		expect_invalid(&f);
		f.flags = 0x8001;
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
 * HELLO: credits 1..SL_WIRE_CREDITS_MAX (65536), rsvd (60..63) 0, node_id
 * a real node, incarnation not 0, peer_incarnation (64..71) anything; an
 * unsequenced control frame (seq 0) without payload.  Each rule both ways:
 * the encoder refuses the frame, the decoders its bytes.
 */
START_TEST(test_hello_rules)
{
	static const uint64_t seqs[] = { 1, 1ull << 32, UINT64_MAX };
	struct sl_wire_frame f;

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

	/* A bad grant and a bad node: broken either way. */
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

	/* The offset of an RTR sent again: within len, and only on a grant. */
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

/* FIN: recv_id not 0, status 0 or a NAK/error; a sequenced control
 * frame (seq >= 1), no payload. */
START_TEST(test_fin_rules)
{
	struct sl_wire_frame f;

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
	size_t total, map_len;
	uint8_t *map, *p;

	for (size_t i = 0; i < sizeof(bad_has_imm) / sizeof(bad_has_imm[0]); i++) {
		f = make_frame(SL_WIRE_WRITE);
		f.u.write.has_imm = bad_has_imm[i];
		expect_invalid(&f);
		f.u.write.imm = 0;
		expect_invalid(&f);
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
	/* A control frame: no payload ... */
	for (size_t i = 0; i < sizeof(pls) / sizeof(pls[0]); i++) {
		f = make_frame(SL_WIRE_DONE);
		f.payload_len = pls[i];
		expect_invalid(&f);
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
	struct sl_wire_frame f;

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
	/* Any single byte of the 64-bit incarnation makes it one. */
	for (int b = 0; b < 8; b++) {
		f = make_frame(SL_WIRE_BYE);
		f.u.bye.incarnation = 1ull << (8 * b);
		expect_valid(&f);
		f.u.bye.incarnation = 0x80ull << (8 * b);
		expect_valid(&f);
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
	/* A control frame: no payload ... */
	for (size_t i = 0; i < sizeof(pls) / sizeof(pls[0]); i++) {
		f = make_frame(SL_WIRE_BYE);
		f.payload_len = pls[i];
		expect_invalid(&f);
	}
	/* ... and no seq: the last frame on the connection, outside the
	 * stream (like ACK). */
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		f = make_frame(SL_WIRE_BYE);
		f.seq = seqs[i];
		expect_invalid(&f);
		f.u.bye.incarnation = 1;
		expect_invalid(&f);
	}
	f = make_frame(SL_WIRE_BYE);
	f.seq = 0;
	expect_valid(&f);

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

static Suite *wire_rules_suite(void)
{
	Suite *s = suite_create("wire_rules");
	TCase *tc = tcase_create("rules");

	tcase_add_checked_fixture(tc, guard_setup, guard_teardown);
	tcase_add_test(tc, test_auth_rules);
	tcase_add_test(tc, test_auth_who);
	tcase_add_test(tc, test_bye_refusal);
	tcase_add_test(tc, test_seq_rules);
	tcase_add_test(tc, test_bad_nak_seq_and_hello_node);
	tcase_add_test(tc, test_hello_rules);
	tcase_add_test(tc, test_rts_rules);
	tcase_add_test(tc, test_rtr_rules);
	tcase_add_test(tc, test_fin_rules);
	tcase_add_test(tc, test_write_rules);
	tcase_add_test(tc, test_done_rules);
	tcase_add_test(tc, test_bye_rules);
	tcase_add_test(tc, test_encode_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wire_run_suite(wire_rules_suite());
}
