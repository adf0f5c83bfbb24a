/*
 * test_spin.c - the learnt spin window of sl_spin.h (sl_wait() and the
 * progress engine): exact windows after given waits.
 *
 *   starts_within_bounds   a start outside [min, max] is brought inside
 *   follows_the_waits      the window becomes twice the running mean of
 *                          waits it could catch, up to max
 *   halves_on_long_waits   a wait longer than max halves it, down to min;
 *                          short waits bring it back
 */
#include <check.h>
#include <stdint.h>

#include "sl_spin.h"

#define US 1000

START_TEST(starts_within_bounds)
{
	struct sl_spin s;

	sl_spin_init(&s, 1, 20 * US, 200 * US);
	ck_assert_int_eq(s.window_ns, 20 * US);
	ck_assert_int_eq(s.mean_ns, 10 * US);
	sl_spin_init(&s, 1000000 * US, 20 * US, 200 * US);
	ck_assert_int_eq(s.window_ns, 200 * US);
	ck_assert_int_eq(s.mean_ns, 100 * US);
}
END_TEST

START_TEST(follows_the_waits)
{
	struct sl_spin s;
	int i;

	sl_spin_init(&s, 20 * US, 20 * US, 200 * US);
	/* Round trips of 30 µs: the mean moves a quarter of the way. */
	ck_assert_int_eq(sl_spin_learn(&s, 30 * US), 30 * US);
	ck_assert_int_eq(s.mean_ns, 15 * US);
	for (i = 1; i < 20; i++)
		sl_spin_learn(&s, 30 * US);
	ck_assert_int_eq(s.mean_ns, 29935);
	ck_assert_int_eq(s.window_ns, 59870);	/* catches them all */
	/* Waits of 150 µs: the window stops at max. */
	for (i = 0; i < 20; i++)
		sl_spin_learn(&s, 150 * US);
	ck_assert_int_eq(s.window_ns, 200 * US);
	ck_assert_int_eq(s.mean_ns, 149618);
	/* Short waits never take it under min. */
	sl_spin_init(&s, 20 * US, 20 * US, 200 * US);
	for (i = 0; i < 20; i++)
		sl_spin_learn(&s, 1 * US);
	ck_assert_int_eq(s.window_ns, 20 * US);
}
END_TEST

START_TEST(halves_on_long_waits)
{
	struct sl_spin s;

	sl_spin_init(&s, 200 * US, 20 * US, 200 * US);
	/* An idle peer: each wait of 1 ms halves the window. */
	ck_assert_int_eq(sl_spin_learn(&s, 1000 * US), 100 * US);
	ck_assert_int_eq(s.mean_ns, 50 * US);
	ck_assert_int_eq(sl_spin_learn(&s, 1000 * US), 50 * US);
	ck_assert_int_eq(sl_spin_learn(&s, 1000 * US), 25 * US);
	ck_assert_int_eq(sl_spin_learn(&s, 1000 * US), 20 * US);
	ck_assert_int_eq(s.mean_ns, 6250);
	ck_assert_int_eq(sl_spin_learn(&s, 1000 * US), 20 * US);
	ck_assert_int_eq(s.mean_ns, 5000);
	/* Traffic again: 30 µs waits after a mean of 5 µs. */
	ck_assert_int_eq(sl_spin_learn(&s, 30 * US), 22500);
	ck_assert_int_eq(s.mean_ns, 11250);
	ck_assert_int_eq(sl_spin_learn(&s, 30 * US), 31874);
	/* A wait of exactly max is one it could have caught. */
	ck_assert_int_eq(sl_spin_learn(&s, 200 * US), 123904);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spin");
	TCase *tc = tcase_create("spin");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, starts_within_bounds);
	tcase_add_test(tc, follows_the_waits);
	tcase_add_test(tc, halves_on_long_waits);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
