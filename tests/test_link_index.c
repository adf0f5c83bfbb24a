/*
 * test_link_index.c - the hash table under link_find() (daemon/link_table.c,
 * link_index_*): random inserts and removals checked against a plain
 * array after every step, with node ids as they come (sl_node_id() of
 * names that differ in one character) and as they may be chosen to
 * collide in the low bits; the table stays at most half full and finds
 * every key that is in it and none that is not.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "link_table.h"
#include "sluice.h"

#define N_KEYS 4096
#define N_STEPS 200000

/* A link pointer the table only stores: never dereferenced. */
static struct link *fake(unsigned i)
{
	return (struct link *)(uintptr_t)(0x1000u + 16u * i);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* Every key and its presence, as the table should have it. */
static void check_all(const struct link_index *ix, const uint32_t *keys, const bool *in,
		      unsigned n, unsigned n_in)
{
	unsigned i;

	ck_assert_uint_eq(ix->used, n_in);
	ck_assert(ix->slot == NULL || 2 * ix->used <= ix->mask + 1);
	for (i = 0; i < n; i++)
		ck_assert_ptr_eq(link_index_get(ix, keys[i]), in[i] ? fake(i) : NULL);
}

static void run(const uint32_t *keys, unsigned n, unsigned steps, unsigned check_every)
{
	struct link_index ix = { 0 };
	bool *in = calloc(n, sizeof(*in));
	unsigned step, k, n_in = 0;

	ck_assert_ptr_nonnull(in);
	for (step = 0; step < steps; step++) {
		k = next_rand() % n;
		if (in[k]) {
			ck_assert(link_index_remove(&ix, keys[k]));
			ck_assert(!link_index_remove(&ix, keys[k]));
			in[k] = false;
			n_in--;
		} else {
			ck_assert_ptr_null(link_index_get(&ix, keys[k]));
			ck_assert_int_eq(link_index_insert(&ix, keys[k], fake(k)), 0);
			in[k] = true;
			n_in++;
		}
		if (step % check_every == 0)
			check_all(&ix, keys, in, n, n_in);
	}
	check_all(&ix, keys, in, n, n_in);
	/* Empty it: every key comes out once. */
	for (k = 0; k < n; k++)
		ck_assert(link_index_remove(&ix, keys[k]) == in[k]);
	ck_assert_uint_eq(ix.used, 0);
	for (k = 0; k < n; k++)
		ck_assert_ptr_null(link_index_get(&ix, keys[k]));
	link_index_free(&ix);
	ck_assert_ptr_null(ix.slot);
	free(in);
}

/* Node ids of names like a cluster's: node0000 .. node4095. */
START_TEST(names)
{
	static uint32_t keys[N_KEYS];
	char name[32];
	unsigned i;

	for (i = 0; i < N_KEYS; i++) {
		snprintf(name, sizeof(name), "node%04u", i);
		keys[i] = sl_node_id(name);
	}
	run(keys, N_KEYS, N_STEPS, 997);
}
END_TEST

/* Keys equal in their low 20 bits, and keys one apart: long runs of
 * probes, where a wrong removal shows first. */
START_TEST(clustered)
{
	static uint32_t keys[N_KEYS];
	unsigned i;

	for (i = 0; i < N_KEYS / 2; i++)
		keys[i] = (i + 1) << 20 | 0x5a5a5u;
	for (; i < N_KEYS; i++)
		keys[i] = 0x10000u + i;
	run(keys, N_KEYS, N_STEPS, 997);
}
END_TEST

/* A small table, checked after every step: growth from empty, and
 * removals wrapping around its end. */
START_TEST(small)
{
	uint32_t keys[24];
	unsigned i;

	for (i = 0; i < 24; i++)
		keys[i] = next_rand();
	run(keys, 24, 20000, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("link_index");
	TCase *tc = tcase_create("index");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, names);
	tcase_add_test(tc, clustered);
	tcase_add_test(tc, small);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
