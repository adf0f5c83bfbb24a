/*
 * wire_kit.h - what the tests of the link frame codec (sl_wire.h) share:
 * test_wire_golden (the exact bytes of each frame), test_wire_decode (the
 * decoder's byte rules, one table), test_wire_rules (each type's field
 * rules, both ways) and test_wire_fuzz (round trips and garbage).
 *
 * The documented properties of each type are written out here rather
 * than taken from wire.c, so that the tests check the code against
 * sl_wire.h.  Functions that assert use Check (ck_assert) and are for the
 * tests themselves; the spec_* ones and get_le/put_le* only compute.
 */
#ifndef SL_TEST_WIRE_KIT_H
#define SL_TEST_WIRE_KIT_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "sl_wire.h"

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

/* Every frame type, each once; the types that carry a payload. */
extern const uint8_t all_types[11];
#define N_TYPES (sizeof(all_types) / sizeof(all_types[0]))
extern const uint8_t payload_types[2];
#define N_PAYLOAD_TYPES (sizeof(payload_types) / sizeof(payload_types[0]))

/* The header length of @type in bytes, 0 for an unknown type. */
uint32_t spec_hdr_len(uint8_t type);

/* The version byte of every frame. */
#define SPEC_VERSION 3u

/*
 * Sequenced frames (seq >= 1): the data frames EAGER and RTS and, since
 * version 2, the control frames NAK, RTR, FIN and DONE.  HELLO, ACK,
 * WRITE, BYE and (version 3) AUTH carry seq 0.  The two lists hold every
 * type once between them.
 */
int spec_is_sequenced(uint8_t type);
extern const uint8_t sequenced_types[6];
#define N_SEQUENCED_TYPES (sizeof(sequenced_types) / sizeof(sequenced_types[0]))
extern const uint8_t unsequenced_types[5];
#define N_UNSEQUENCED_TYPES (sizeof(unsequenced_types) / sizeof(unsequenced_types[0]))

/* EAGER and WRITE carry a payload. */
int spec_has_payload(uint8_t type);

/* The common header's flags: 0, and on an ACK also 1 (the keepalive that
 * asks for an answer, SL_WIRE_ACK_PING). */
#define SPEC_ACK_PING 1u
int spec_flags_valid(uint8_t type, uint64_t flags);

/* A HELLO's credit grant: 1..65536 frames. */
#define SPEC_CREDITS_MAX 65536u
int spec_credits_valid(uint64_t c);
/* Credit grants the HELLO must refuse (0, and over 65536 in every byte),
 * and ones it must take, both ends included. */
extern const uint32_t bad_credits[11];
#define N_BAD_CREDITS (sizeof(bad_credits) / sizeof(bad_credits[0]))
extern const uint32_t good_credits[11];
#define N_GOOD_CREDITS (sizeof(good_credits) / sizeof(good_credits[0]))

/* A NAK or error status: SL_NAK_* 1..2, SL_ERR_* 16..23. */
int spec_nak_status(uint32_t s);
extern const uint32_t nak_statuses[10];
#define N_NAK_STATUSES (sizeof(nak_statuses) / sizeof(nak_statuses[0]))
/* Neither 0 nor a NAK/error status; the high bytes matter too.  25,
 * SL_ERR_STALLED, is decided locally and never travels. */
extern const uint32_t bad_statuses[10];
#define N_BAD_STATUSES (sizeof(bad_statuses) / sizeof(bad_statuses[0]))

/*
 * Bytes placed at the very end of a readable page, followed by a PROT_NONE
 * page: any read past the given length faults at once, also outside
 * valgrind.  guard_setup and guard_teardown are a Check fixture; guarded()
 * copies @len bytes (at most a page) so that they end exactly at the
 * guard page and returns where.
 */
extern uint8_t *guard_area;
extern size_t page_size;
void guard_setup(void);
void guard_teardown(void);
const uint8_t *guarded(const void *src, size_t len);

/* A valid frame of @type whose fields have every byte distinct (swapped
 * or shifted bytes show), payload_len 5 for EAGER and 7 for WRITE. */
struct sl_wire_frame make_frame(uint8_t type);

/* Field by field (padding in the struct is unspecified): 1 if equal.
 * assert_frames_equal fails the test at the first field that differs. */
int frames_equal(const struct sl_wire_frame *a, const struct sl_wire_frame *b);
void assert_frames_equal(const struct sl_wire_frame *a, const struct sl_wire_frame *b);

/* make_frame(@type) encoded into @buf (@cap bytes), its payload zeroed;
 * returns header plus payload length. */
size_t encode_valid(uint8_t type, uint8_t *buf, size_t cap);

/* Little-endian stores, and a load of @width bytes. */
void put_le16(uint8_t *p, uint16_t v);
void put_le32(uint8_t *p, uint32_t v);
void put_le64(uint8_t *p, uint64_t v);
uint64_t get_le(const uint8_t *p, int width);

/* Both decoders must reject the @len bytes at @buf as malformed
 * (-EPROTO), or both must accept them (> 0); read from a guarded copy. */
void expect_eproto(const uint8_t *buf, size_t len);
void expect_ok(const uint8_t *buf, size_t len);

/*
 * The test's own encoder, straight from the layouts in sl_wire.h and with
 * no validation at all: it produces the bytes of frames that sl_wire_encode()
 * refuses, for the decoder to reject.  Returns the header length.
 */
size_t raw_encode(const struct sl_wire_frame *f, uint8_t *p);

/* Payloads up to this size are placed in full behind a guarded header. */
#define SMALL_PAYLOAD 64

/*
 * expect_valid - @f is a valid frame: sl_wire_encode() writes exactly the
 * documented bytes, and both decoders give @f back, from a buffer that
 * ends at the guard page.
 * expect_invalid - @f breaks a rule: sl_wire_encode() refuses it (before
 * looking at the capacity), and both decoders refuse its bytes, with or
 * without payload.
 */
void expect_valid(const struct sl_wire_frame *f);
void expect_invalid(const struct sl_wire_frame *f);

/* Run @s (forking per test) and free it: EXIT_SUCCESS when every test
 * passed, for main(). */
int wire_run_suite(Suite *s);

#endif
