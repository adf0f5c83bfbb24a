/*
 * test_names.c - the names libslproto gives: a node's id from its name
 * (sl_node_id, FNV-1a folded off the two reserved ids) and a status's
 * text (sl_strerror).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"

/* Loops of many checks test first and assert only on failure (a passing
 * ck_assert is a message to the parent in fork mode). */
#define HOT_ASSERT(expr, ...) \
	do { \
		if (!(expr)) \
			ck_assert_msg(expr, __VA_ARGS__); \
	} while (0)

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
		SL_ERR_UNKNOWN_NODE, SL_ERR_STALLED, SL_ERR_NO_MESSAGE, SL_ERR_NOT_FOUND,
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
	ck_assert_str_eq(sl_strerror(SL_ERR_NOT_FOUND + 1), "unknown status");
}
END_TEST

static Suite *names_suite(void)
{
	Suite *s = suite_create("names");
	TCase *tc;

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
	SRunner *sr = srunner_create(names_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
