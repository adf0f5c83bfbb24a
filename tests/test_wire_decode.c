/*
 * test_wire_decode.c - what the link frame decoders (sl_wire_decode_hdr,
 * sl_wire_decode) make of bytes, as one table: each row takes the valid
 * encoding of make_frame() for every type it names, writes values into
 * one field (the whole field, or each of its bytes alone with the rest of
 * it zero), and says what both decoders must answer.  The rows are
 * grouped by the rule they test; each group is one Check test, named in
 * its failure messages: the header's own fields (bad_version ...
 * bad_nak_seq_and_hello_node), and the wire half of each type's rules,
 * whose frame half is in test_wire_rules.c under the same name
 * (seq_rules, hello_rules, ...).  Then a header cut short, and a payload
 * longer than the buffer.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_wire.h"
#include "sluice.h"
#include "wire_kit.h"

/* Sets of frame types, one bit per type byte. */
#define T(x) (1u << SL_WIRE_##x)
#define T_ALL (T(HELLO) | T(EAGER) | T(ACK) | T(NAK) | T(RTS) | T(RTR) | T(FIN) | T(WRITE) | \
	       T(DONE) | T(BYE) | T(AUTH))
#define T_SEQ (T(EAGER) | T(NAK) | T(RTS) | T(RTR) | T(FIN) | T(DONE))
#define T_UNSEQ (T_ALL & ~T_SEQ)
#define T_PAYLOAD (T(EAGER) | T(WRITE))
#define T_NO_PAYLOAD (T_ALL & ~T_PAYLOAD)

/* What both decoders must answer. */
enum outcome {
	O_EPROTO,	/* both -EPROTO: malformed */
	O_OK,		/* both accept */
	O_FIELD,	/* both return the header length, and the frame they give
			 * is make_frame()'s with .field set to the value */
	O_HDR_ONLY,	/* sl_wire_decode_hdr returns the header length with
			 * payload_len the value; sl_wire_decode -EMSGSIZE */
	O_SHORT,	/* sl_wire_decode_hdr -EAGAIN (a stream waits for more),
			 * sl_wire_decode -EPROTO (a datagram is short) */
	O_SKIP,		/* from a judge: not this row's business */
};

/* How a row writes its value. */
enum poke {
	P_NONE,		/* the valid bytes as they are */
	P_WHOLE,	/* the field, little-endian */
	P_BYTES,	/* the field zeroed, then each byte alone set to the
			 * value (the value judged is that byte's weight) */
};

/* The value, or one relative to the type's header length. */
enum rel { R_ABS, R_HLEN_PLUS, R_HLEN_OR };

/* A decoded field, for O_FIELD rows. */
enum field { F_NONE, F_SEQ, F_CREDITS, F_INCARNATION, F_PEER_INCARNATION };

struct decode_rule {
	const char *group;
	uint32_t types;			/* T_* */
	enum poke poke;
	uint8_t off, width;		/* the field: bytes [off, off + width) */
	enum rel rel;
	/* The values: a list, a list of 32-bit ones, or lo..hi. */
	const uint64_t *vals;
	size_t n_vals;
	const uint32_t *vals32;
	uint64_t lo, hi;
	/* Written before the value (also_width 0: nothing). */
	uint8_t also_off, also_width;
	uint64_t also_val;
	enum outcome out;		/* unless judge says */
	enum outcome (*judge)(uint8_t type, uint64_t v);
	enum field field;
	/* Bytes decoded: 0 the frame (header and payload), -1 the header
	 * only, else that many. */
	int len;
	uint8_t tail, tail_fill;	/* then this many bytes of tail_fill */
	uint8_t prefix;			/* O_EPROTO: refused from its first
					 * prefix bytes too */
	bool claimed;			/* O_EPROTO on hdr_len: refused also
					 * with the claimed length present */
};

#define VALS(...) .vals = (const uint64_t[]){ __VA_ARGS__ }, \
	.n_vals = sizeof((const uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t)
#define RANGE(a, b) .lo = (a), .hi = (b)
#define WHOLE(o, w) .poke = P_WHOLE, .off = (o), .width = (w)
#define BYTES(o, w) .poke = P_BYTES, .off = (o), .width = (w)
#define ALSO(o, w, v) .also_off = (o), .also_width = (w), .also_val = (v)

static enum outcome judge_version(uint8_t type, uint64_t v)
{
	(void)type;
	return v == SPEC_VERSION ? O_OK : O_EPROTO;
}

/* A header length that is not the type's own. */
static enum outcome judge_other_hdr_len(uint8_t type, uint64_t v)
{
	return v == sl_wire_hdr_len(type) ? O_SKIP : O_EPROTO;
}

/* A payload on a type that has none; an AUTH's "who" is test_auth_who's. */
static enum outcome judge_no_payload(uint8_t type, uint64_t v)
{
	return type == SL_WIRE_AUTH && v >= 5 && v <= SL_WIRE_AUTH_WHO_MAX ? O_SKIP : O_EPROTO;
}

/* A NAK's status names a NAK or an error: 1..2, 16..23. */
static enum outcome judge_nak_status(uint8_t type, uint64_t v)
{
	(void)type;
	return (v >= 1 && v <= 2) || (v >= 16 && v <= 23) ? O_OK : O_EPROTO;
}

static enum outcome judge_ok_or_nak_status(uint8_t type, uint64_t v)
{
	(void)type;
	return v == 0 || spec_nak_status((uint32_t)v) ? O_OK : O_EPROTO;
}

static enum outcome judge_flags(uint8_t type, uint64_t v)
{
	return spec_flags_valid(type, v) ? O_OK : O_EPROTO;
}

static enum outcome judge_zero(uint8_t type, uint64_t v)
{
	(void)type;
	return v == 0 ? O_OK : O_EPROTO;
}

static enum outcome judge_credits(uint8_t type, uint64_t v)
{
	(void)type;
	return spec_credits_valid(v) ? O_OK : O_EPROTO;
}

static enum outcome judge_has_imm(uint8_t type, uint64_t v)
{
	(void)type;
	return v <= 1 ? O_OK : O_EPROTO;
}

/* An RTR's offset is at most its len (make_frame's: 0x2a2b2c2d). */
static enum outcome judge_rtr_offset(uint8_t type, uint64_t v)
{
	return v <= make_frame(type).u.rtr.len ? O_OK : O_EPROTO;
}

static const struct decode_rule rules[] = {
	/* The common header: version, type, flags, length, reserved bytes,
	 * payload length and seq, for every type. */
	{ "bad_version", T_ALL, WHOLE(0, 1), VALS(0, 1, 2, 4, 0x81, 0x83, 255), .out = O_EPROTO,
	  .prefix = 1 },	/* 1 included: version 1's frames are refused outright */
	{ "bad_version", T_ALL, WHOLE(0, 1), RANGE(0, 255), .judge = judge_version,
	  .prefix = 1 },	/* knowable from the first byte alone */
	{ "bad_type", T_ALL, WHOLE(1, 1),
	  VALS(0, SL_WIRE_TYPE_MAX + 1, 12, 13, 0x19, 128, 0x89, 255), .out = O_EPROTO,
	  .prefix = 2 },
	{ "bad_hdr_len", T_ALL, WHOLE(4, 4),
	  VALS(0, 1, SL_WIRE_COMMON_LEN - 1, SL_WIRE_HDR_MAX + 8, UINT32_MAX, 0x80000000u,
	       SL_WIRE_HELLO_LEN, SL_WIRE_EAGER_LEN, SL_WIRE_ACK_LEN, SL_WIRE_NAK_LEN,
	       SL_WIRE_RTS_LEN, SL_WIRE_RTR_LEN, SL_WIRE_FIN_LEN, SL_WIRE_WRITE_LEN,
	       SL_WIRE_DONE_LEN, SL_WIRE_BYE_LEN,
	       64),	/* version 1's HELLO */
	  .judge = judge_other_hdr_len, .claimed = true },
	{ "bad_hdr_len", T_ALL, WHOLE(4, 4), .rel = R_HLEN_PLUS, VALS(UINT64_MAX, 1, 8),
	  .out = O_EPROTO, .claimed = true },	/* hlen - 1, + 1, + 8 */
	{ "bad_hdr_len", T_ALL, WHOLE(4, 4), .rel = R_HLEN_OR, VALS(0x100, 0x01000000u),
	  .out = O_EPROTO, .claimed = true },
	{ "bad_flags", T_ALL, WHOLE(2, 2), VALS(1, 2, 3, 0x100, 0x101, 0x8000, 0x8001, 0xffff),
	  .judge = judge_flags },	/* every one refused, but 1 on an ACK */
	/* Every byte of every reserved field, one at a time (test_decode_table
	 * names the types that have none). */
	{ "bad_rsvd", T_ALL, BYTES(12, 4), VALS(0x01, 0x80), .out = O_EPROTO },
	{ "bad_rsvd", T(HELLO), BYTES(60, 4), VALS(0x01, 0xff), .out = O_EPROTO },
	{ "bad_rsvd", T(NAK), BYTES(44, 4), VALS(0x01, 0xff), .out = O_EPROTO },
	{ "bad_rsvd", T(FIN), BYTES(40, 8), VALS(0x01, 0xff), .out = O_EPROTO },
	{ "bad_rsvd", T(WRITE), BYTES(52, 4), VALS(0x01, 0xff), .out = O_EPROTO },
	{ "bad_rsvd", T(DONE), BYTES(44, 4), VALS(0x01, 0xff), .out = O_EPROTO },
	{ "bad_rsvd", T(BYE), BYTES(44, 4), VALS(0x01, 0xff), .out = O_EPROTO },
	/* Over the maximum on a type that may carry payload; exactly the
	 * maximum is a valid header of a short datagram; an empty message or
	 * write is fine.  Any payload on a type that has none. */
	{ "bad_payload_len", T_PAYLOAD, WHOLE(8, 4),
	  VALS(SL_WIRE_PAYLOAD_MAX + 1, UINT32_MAX, 0x80000000u, SL_WIRE_PAYLOAD_MAX << 1),
	  .out = O_EPROTO },
	{ "bad_payload_len", T_PAYLOAD, WHOLE(8, 4), VALS(SL_WIRE_PAYLOAD_MAX), .out = O_HDR_ONLY,
	  .len = -1 },
	{ "bad_payload_len", T_PAYLOAD, WHOLE(8, 4), VALS(0), .out = O_OK, .len = -1 },
	{ "bad_payload_len", T_NO_PAYLOAD, WHOLE(8, 4),
	  VALS(1, 8, 0x100, SL_WIRE_PAYLOAD_MAX, UINT32_MAX), .judge = judge_no_payload },
	{ "bad_payload_len", T_NO_PAYLOAD, WHOLE(8, 4), VALS(1), .out = O_EPROTO, .tail = 1 },
	/* Sequenced frames (data and, since version 2, NAK, RTR, FIN and
	 * DONE): seq from 1, any bit of all 64 counts; the others seq 0 only. */
	{ "bad_seq", T_SEQ, WHOLE(16, 8), VALS(0), .out = O_EPROTO },
	{ "bad_seq", T_SEQ, WHOLE(16, 8), VALS(1, 0x100, 1ull << 32, 1ull << 63, UINT64_MAX),
	  .out = O_OK },
	{ "bad_seq", T_UNSEQ, WHOLE(16, 8), VALS(1, 0x100, 1ull << 32, 1ull << 63, UINT64_MAX),
	  .out = O_EPROTO },
	/* Statuses of a NAK: bad ones, then every value 0..255, valid exactly
	 * when it names a NAK or error. */
	{ "bad_nak_status", T(NAK), WHOLE(40, 4), VALS(SL_OK, 3, 15, 24, 0x100, 0x10001, UINT32_MAX),
	  .out = O_EPROTO },
	{ "bad_nak_status", T(NAK), WHOLE(40, 4), RANGE(0, 255), .judge = judge_nak_status },
	/* A NAK must name a real data frame, a HELLO a real node. */
	{ "bad_nak_seq_and_hello_node", T(NAK), WHOLE(32, 8), VALS(0), .out = O_EPROTO },
	{ "bad_nak_seq_and_hello_node", T(HELLO), WHOLE(32, 4), VALS(SL_NODE_LOCAL, SL_NODE_ANY),
	  .out = O_EPROTO },

	/* The seq rule on the wire: all 8 bytes 0 refused, any one byte set
	 * taken on a sequenced type (decoded as the field's value) and
	 * refused on another; the valid bytes as they are pass. */
	{ "seq_rules", T_SEQ, WHOLE(16, 8), VALS(0), .out = O_EPROTO },
	{ "seq_rules", T_SEQ, BYTES(16, 8), VALS(0x80), .out = O_FIELD, .field = F_SEQ },
	{ "seq_rules", T_ALL, .poke = P_NONE, .out = O_OK },
	{ "seq_rules", T_UNSEQ, BYTES(16, 8), VALS(0x01, 0x80, 0xff), .out = O_EPROTO },

	/* HELLO credits: each byte of the field on its own, every value, and
	 * the values around both ends; valid exactly when 1..65536, and a
	 * decoded grant is the field's value, not a prefix of it. */
	{ "hello_rules", T(HELLO), BYTES(56, 4), RANGE(0, 255), .judge = judge_credits },
	{ "hello_rules", T(HELLO), WHOLE(56, 4), RANGE(SPEC_CREDITS_MAX - 300, SPEC_CREDITS_MAX + 299),
	  .judge = judge_credits },
	{ "hello_rules", T(HELLO), WHOLE(56, 4), .vals32 = good_credits, .n_vals = N_GOOD_CREDITS,
	  .out = O_FIELD, .field = F_CREDITS },
	/* rsvd (60..63): every byte, any value, whatever the grant; it is not
	 * the high half of a 64-bit credits field. */
	{ "hello_rules", T(HELLO), WHOLE(56, 4), VALS(1, 0xd3d4, SPEC_CREDITS_MAX), .out = O_OK },
	{ "hello_rules", T(HELLO), BYTES(60, 4), VALS(0x01, 0x80, 0xff), ALSO(56, 4, 1),
	  .out = O_EPROTO },
	{ "hello_rules", T(HELLO), BYTES(60, 4), VALS(0x01, 0x80, 0xff), ALSO(56, 4, 0xd3d4),
	  .out = O_EPROTO },
	{ "hello_rules", T(HELLO), BYTES(60, 4), VALS(0x01, 0x80, 0xff),
	  ALSO(56, 4, SPEC_CREDITS_MAX), .out = O_EPROTO },
	{ "hello_rules", T(HELLO), WHOLE(60, 4), VALS(UINT32_MAX), .out = O_EPROTO },
	/* Bytes past the 72-byte header are not the HELLO's. */
	{ "hello_rules", T(HELLO), .poke = P_NONE, .out = O_OK, .tail = 16, .tail_fill = 0xff },
	/* A HELLO cut at version 1's 64 bytes is 8 bytes short of a header. */
	{ "hello_rules", T(HELLO), .poke = P_NONE, .out = O_SHORT, .len = 64 },
	/* incarnation (40..47): all 8 bytes 0 refused, any one byte set taken. */
	{ "hello_rules", T(HELLO), WHOLE(40, 8), VALS(0), .out = O_EPROTO },
	{ "hello_rules", T(HELLO), BYTES(40, 8), VALS(0x01, 0x80, 0xff), .out = O_FIELD,
	  .field = F_INCARNATION },
	/* peer_incarnation (64..71): every byte, every value, reaches the
	 * frame and touches no other field. */
	{ "hello_rules", T(HELLO), BYTES(64, 8), RANGE(0, 255), .out = O_FIELD,
	  .field = F_PEER_INCARNATION },
	{ "hello_rules", T(HELLO), WHOLE(64, 8), VALS(UINT64_MAX, 0), .out = O_OK },
	/* A bad grant and a bad node. */
	{ "hello_rules", T(HELLO), WHOLE(32, 4), VALS(SL_NODE_LOCAL), ALSO(56, 4, 0),
	  .out = O_EPROTO },

	/* RTR: every status byte, 0 and the NAK/error statuses only; the
	 * offset, every byte, within len, and nothing on a refusal. */
	{ "rtr_rules", T(RTR), WHOLE(64, 4), RANGE(0, 255), .judge = judge_ok_or_nak_status },
	{ "rtr_rules", T(RTR), BYTES(68, 4), VALS(0xff), .judge = judge_rtr_offset },
	{ "rtr_rules", T(RTR), BYTES(68, 4), VALS(0xff), ALSO(64, 4, SL_NAK_BUSY),
	  .out = O_EPROTO },
	/* FIN: every status byte, 0 and the NAK/error statuses only. */
	{ "fin_rules", T(FIN), WHOLE(36, 4), RANGE(0, 255), .judge = judge_ok_or_nak_status },
	/* WRITE: every low byte of has_imm, with imm 0. */
	{ "write_rules", T(WRITE), WHOLE(44, 4), RANGE(0, 255), ALSO(48, 4, 0),
	  .judge = judge_has_imm },
	/* DONE: status 0 only; rsvd 0, every byte; bytes past the header are
	 * not its own; no payload, no seq 0. */
	{ "done_rules", T(DONE), WHOLE(40, 4), RANGE(0, 255), .judge = judge_zero },
	{ "done_rules", T(DONE), BYTES(44, 4), VALS(0x01, 0x80, 0xff), .out = O_EPROTO },
	{ "done_rules", T(DONE), WHOLE(44, 4), VALS(UINT32_MAX), .out = O_EPROTO },
	{ "done_rules", T(DONE), .poke = P_NONE, .out = O_OK, .tail = 16, .tail_fill = 0xff },
	{ "done_rules", T(DONE), WHOLE(8, 4),
	  VALS(1, 8, SMALL_PAYLOAD, SL_WIRE_PAYLOAD_MAX, SL_WIRE_PAYLOAD_MAX + 1, UINT32_MAX),
	  .out = O_EPROTO },
	{ "done_rules", T(DONE), WHOLE(16, 8), VALS(0), .out = O_EPROTO },
	/* BYE: incarnation not 0, any one byte of it makes one; reason 0
	 * only, every byte of it; rsvd 0; bytes past the header not its own;
	 * hdr_len 48 and nothing else; no payload; no seq.  And a DONE (48
	 * bytes too, sequenced) retyped as a BYE is refused for its seq. */
	{ "bye_rules", T(BYE), WHOLE(32, 8), VALS(0), .out = O_EPROTO },
	{ "bye_rules", T(BYE), BYTES(32, 8), VALS(0x01), .out = O_OK },
	{ "bye_rules", T(BYE), WHOLE(40, 4), RANGE(0, 255), .judge = judge_zero },
	{ "bye_rules", T(BYE), BYTES(40, 4), VALS(0x01, 0x80, 0xff), .out = O_EPROTO },
	{ "bye_rules", T(BYE), BYTES(44, 4), VALS(0x01, 0x80, 0xff), .out = O_EPROTO },
	{ "bye_rules", T(BYE), WHOLE(44, 4), VALS(UINT32_MAX), .out = O_EPROTO },
	{ "bye_rules", T(BYE), .poke = P_NONE, .out = O_OK, .tail = 16, .tail_fill = 0xff },
	{ "bye_rules", T(BYE), WHOLE(4, 4),
	  VALS(0, 1, SL_WIRE_COMMON_LEN, SL_WIRE_BYE_LEN - 1, SL_WIRE_BYE_LEN + 1,
	       SL_WIRE_BYE_LEN + 8, SL_WIRE_EAGER_LEN, SL_WIRE_HELLO_LEN, 64,
	       SL_WIRE_BYE_LEN | 0x100, SL_WIRE_BYE_LEN | 0x01000000u, UINT32_MAX),
	  .out = O_EPROTO, .claimed = true },
	{ "bye_rules", T(BYE), WHOLE(8, 4),
	  VALS(1, 8, SMALL_PAYLOAD, SL_WIRE_PAYLOAD_MAX, SL_WIRE_PAYLOAD_MAX + 1, UINT32_MAX),
	  .out = O_EPROTO },
	{ "bye_rules", T(BYE), WHOLE(16, 8), VALS(1, 0x100, 1ull << 32, 1ull << 63, UINT64_MAX),
	  .out = O_EPROTO },
	{ "bye_rules", T(DONE), WHOLE(1, 1), VALS(SL_WIRE_BYE), .out = O_EPROTO },
};
#define N_RULES (sizeof(rules) / sizeof(rules[0]))

static uint64_t field_get(const struct sl_wire_frame *f, enum field field)
{
	switch (field) {
	case F_SEQ:
		return f->seq;
	case F_CREDITS:
		return f->u.hello.credits;
	case F_INCARNATION:
		return f->u.hello.incarnation;
	case F_PEER_INCARNATION:
		return f->u.hello.peer_incarnation;
	default:
		ck_abort_msg("no field %d", (int)field);
	}
	return 0;
}

static void field_set(struct sl_wire_frame *f, enum field field, uint64_t v)
{
	switch (field) {
	case F_SEQ:
		f->seq = v;
		break;
	case F_CREDITS:
		f->u.hello.credits = (uint32_t)v;
		break;
	case F_INCARNATION:
		f->u.hello.incarnation = v;
		break;
	case F_PEER_INCARNATION:
		f->u.hello.peer_incarnation = v;
		break;
	default:
		ck_abort_msg("no field %d", (int)field);
	}
}

static void put_le(uint8_t *p, uint64_t v, unsigned width)
{
	for (unsigned i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static size_t rule_values(const struct decode_rule *r)
{
	if (r->poke == P_NONE)
		return 1;
	return r->vals || r->vals32 ? r->n_vals : (size_t)(r->hi - r->lo + 1);
}

static uint64_t rule_value(const struct decode_rule *r, size_t i, uint8_t type)
{
	uint64_t v = r->vals ? r->vals[i] : r->vals32 ? r->vals32[i] : r->lo + i;
	uint32_t hlen = sl_wire_hdr_len(type);

	if (r->rel == R_HLEN_PLUS)
		return (uint32_t)(hlen + v);
	if (r->rel == R_HLEN_OR)
		return hlen | v;
	return v;
}

static const char *const outcome_names[] = {
	[O_EPROTO] = "-EPROTO from both", [O_OK] = "accepted by both",
	[O_FIELD] = "the frame with that value", [O_HDR_ONLY] = "a header, -EMSGSIZE",
	[O_SHORT] = "-EAGAIN and -EPROTO", [O_SKIP] = "skipped",
};

/*
 * Row @k on @type with value @v (byte @b of the field alone when @b >= 0):
 * build the bytes and require the outcome.
 */
static void check_rule(const struct decode_rule *r, size_t k, uint8_t type, uint64_t v, int b)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	size_t len = encode_valid(type, buf, sizeof(buf)), hlen = spec_hdr_len(type);
	struct sl_wire_frame f, f2, want;
	enum outcome out;
	const uint8_t *g;
	int rh, rd;
	char where[128];

	if (r->also_width)
		put_le(buf + r->also_off, r->also_val, r->also_width);
	if (r->poke == P_WHOLE) {
		put_le(buf + r->off, v, r->width);
	} else if (r->poke == P_BYTES) {
		memset(buf + r->off, 0, r->width);
		buf[r->off + b] = (uint8_t)v;
		v <<= 8 * b;
	}
	out = r->judge ? r->judge(type, v) : r->out;
	if (out == O_SKIP)
		return;
	if (r->len < 0)
		len = hlen;
	else if (r->len > 0)
		len = (size_t)r->len;
	memset(buf + len, r->tail_fill, r->tail);
	len += r->tail;
	snprintf(where, sizeof(where), "%s, row %zu: type %u, bytes %u-%u = %#llx, %zu bytes",
		 r->group, k, type, r->off, r->off + r->width - 1, (unsigned long long)v, len);

	g = guarded(buf, len);
	memset(&f, 0xee, sizeof(f));
	memset(&f2, 0xee, sizeof(f2));
	rh = sl_wire_decode_hdr(g, len, &f);
	rd = sl_wire_decode(g, len, &f2);
	switch (out) {
	case O_EPROTO:
		HOT_ASSERT(rh == -EPROTO && rd == -EPROTO, "%s: decode_hdr %d, decode %d, want %s",
			   where, rh, rd, outcome_names[out]);
		break;
	case O_OK:
		HOT_ASSERT(rh > 0 && rd > 0, "%s: decode_hdr %d, decode %d, want %s", where, rh, rd,
			   outcome_names[out]);
		break;
	case O_FIELD:
		want = make_frame(type);
		field_set(&want, r->field, v);
		want.hdr_len = (uint32_t)hlen;
		HOT_ASSERT(rh == (int)hlen && rd == (int)hlen, "%s: decode_hdr %d, decode %d, want %zu",
			   where, rh, rd, hlen);
		HOT_ASSERT(field_get(&f, r->field) == v && field_get(&f2, r->field) == v,
			   "%s: decoded %#llx and %#llx", where,
			   (unsigned long long)field_get(&f, r->field),
			   (unsigned long long)field_get(&f2, r->field));
		HOT_ASSERT(frames_equal(&f, &want) && frames_equal(&f2, &want),
			   "%s: another field changed", where);
		break;
	case O_HDR_ONLY:
		HOT_ASSERT(rh == (int)hlen && f.payload_len == v && rd == -EMSGSIZE,
			   "%s: decode_hdr %d (payload_len %u), decode %d, want %s", where, rh,
			   f.payload_len, rd, outcome_names[out]);
		break;
	case O_SHORT:
		HOT_ASSERT(rh == -EAGAIN && rd == -EPROTO, "%s: decode_hdr %d, decode %d, want %s",
			   where, rh, rd, outcome_names[out]);
		break;
	default:
		ck_abort_msg("%s: outcome %d", where, (int)out);
	}
	if (out != O_EPROTO)
		return;
	if (r->prefix) {
		g = guarded(buf, r->prefix);
		rh = sl_wire_decode_hdr(g, r->prefix, &f);
		rd = sl_wire_decode(g, r->prefix, &f2);
		HOT_ASSERT(rh == -EPROTO && rd == -EPROTO,
			   "%s: from its first %u bytes: decode_hdr %d, decode %d", where, r->prefix,
			   rh, rd);
	}
	if (r->claimed && v > len && v <= sizeof(buf)) {
		memset(buf + len, 0, v - len);
		g = guarded(buf, v);
		rh = sl_wire_decode_hdr(g, v, &f);
		rd = sl_wire_decode(g, v, &f2);
		HOT_ASSERT(rh == -EPROTO && rd == -EPROTO,
			   "%s: with the %llu bytes it claims: decode_hdr %d, decode %d", where,
			   (unsigned long long)v, rh, rd);
	}
}

/* The groups, in the table's order. */
static size_t n_groups(void)
{
	size_t n = 0;

	for (size_t k = 0; k < N_RULES; k++)
		n += k == 0 || strcmp(rules[k].group, rules[k - 1].group) != 0;
	return n;
}

static const char *group_name(size_t i)
{
	for (size_t k = 0, n = 0; k < N_RULES; k++) {
		if (k > 0 && strcmp(rules[k].group, rules[k - 1].group) == 0)
			continue;
		if (n++ == i)
			return rules[k].group;
	}
	ck_abort_msg("no group %zu", i);
	return NULL;
}

/* Group @_i of the table: every row, on every type it names, with every
 * value (and, for a row of bytes, in every byte of the field). */
START_TEST(test_decode_rules)
{
	const char *group = group_name((size_t)_i);
	size_t rows = 0, cases = 0;

	for (size_t k = 0; k < N_RULES; k++) {
		const struct decode_rule *r = &rules[k];

		if (strcmp(r->group, group) != 0)
			continue;
		rows++;
		for (size_t t = 0; t < N_TYPES; t++) {
			uint8_t type = all_types[t];

			if (!(r->types & (1u << type)))
				continue;
			for (size_t i = 0; i < rule_values(r); i++) {
				uint64_t v = rule_value(r, i, type);

				if (r->poke != P_BYTES) {
					check_rule(r, k, type, v, -1);
					cases++;
					continue;
				}
				for (int b = 0; b < r->width; b++, cases++)
					check_rule(r, k, type, v, b);
			}
		}
	}
	ck_assert_msg(rows > 0 && cases > 0, "group %s: %zu rows, %zu cases", group, rows, cases);
}
END_TEST

/*
 * What the table stands on: the type sets agree with the documented
 * properties, the unknown types of bad_type are unknown, the reserved
 * fields of bad_rsvd leave out only the types that have none, and
 * the constants the rows name are the documented ones.
 */
START_TEST(test_decode_table)
{
	uint8_t buf[SL_WIRE_HDR_MAX + 8];
	uint32_t rsvd_types = 0;

	ck_assert_uint_eq(SL_WIRE_VERSION, SPEC_VERSION);
	/* Really unknown: 0 or above the last type (AUTH, 11, is known). */
	ck_assert_uint_eq(SL_WIRE_TYPE_MAX + 1, 12);
	for (size_t t = 0; t < N_TYPES; t++) {
		uint8_t type = all_types[t];

		ck_assert(T_ALL & (1u << type));
		ck_assert_int_eq(!!(T_SEQ & (1u << type)), spec_is_sequenced(type));
		ck_assert_int_eq(!!(T_PAYLOAD & (1u << type)), spec_has_payload(type));
	}
	ck_assert_uint_eq(__builtin_popcount(T_ALL), N_TYPES);
	for (size_t k = 0; k < N_RULES; k++) {
		const struct decode_rule *r = &rules[k];

		if (strcmp(r->group, "bad_type") == 0) {
			for (size_t i = 0; i < r->n_vals; i++) {
				ck_assert(r->vals[i] == 0 || r->vals[i] > SL_WIRE_TYPE_MAX);
				ck_assert_uint_eq(sl_wire_hdr_len((uint8_t)r->vals[i]), 0);
			}
		}
		if (strcmp(r->group, "bad_rsvd") == 0 && r->types != T_ALL)
			rsvd_types |= r->types;
		ck_assert_msg(r->poke == P_NONE ||
			      (r->width >= 1 && r->width <= 8 && r->off + r->width <= SL_WIRE_HDR_MAX),
			      "row %zu: bytes %u..%u", k, r->off, r->off + r->width);
	}
	/* No reserved field: EAGER and RTS (52..55 is the sender_uid, any
	 * value), RTR (68..71 is the offset, rtr_rules), AUTH (auth_rules) and
	 * ACK (no type header). */
	ck_assert_uint_eq(rsvd_types | T(EAGER) | T(RTS) | T(RTR) | T(AUTH) | T(ACK), T_ALL);
	ck_assert_uint_eq(rsvd_types & (T(EAGER) | T(RTS) | T(RTR) | T(AUTH) | T(ACK)), 0);
	ck_assert_uint_eq(encode_valid(SL_WIRE_HELLO, buf, sizeof(buf)), 72);
	/* Each group is one run of rows, so that it is one Check test. */
	for (size_t i = 0; i < n_groups(); i++)
		for (size_t j = i + 1; j < n_groups(); j++)
			ck_assert_str_ne(group_name(i), group_name(j));
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

static Suite *wire_decode_suite(void)
{
	Suite *s = suite_create("wire_decode");
	TCase *tc = tcase_create("decode");

	tcase_add_checked_fixture(tc, guard_setup, guard_teardown);
	tcase_add_test(tc, test_decode_table);
	tcase_add_loop_test(tc, test_decode_rules, 0, (int)n_groups());
	tcase_add_loop_test(tc, test_truncated_header, 0, (int)N_TYPES);
	tcase_add_loop_test(tc, test_length_beyond_buffer, 0, (int)N_PAYLOAD_TYPES);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wire_run_suite(wire_decode_suite());
}
