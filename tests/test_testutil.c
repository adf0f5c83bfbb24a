/*
 * test_testutil.c - the test helpers themselves (testutil.h): what a
 * failing client leaves for the test process to print.
 *
 *   last_words_read_back     a client's CL_REQUIRE message and exit code
 *                            come back to the test process exactly, once
 *   reap_names_the_reason    reap_clients() prints each failed client's own
 *                            words after its status; a client that exited
 *                            0 or was killed adds none
 *   words_of_many_clients    16 clients dying together: each one's words
 *                            come back under its own pid
 *   progress_counts_gaps     the no-progress bound and the gap count of
 *                            struct progress
 *   gaps_judged_held         with carriers, a gap its carriers spent
 *                            waiting for a core is excused; one they
 *                            spent asleep is counted
 */
#define _GNU_SOURCE
#include <check.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

START_TEST(last_words_read_back)
{
	char words[CL_WORDS_MAX];
	int st, code = -1;
	pid_t pid = h_fork();

	if (pid == 0) {
		cl_name = "liar";
		CL_REQUIRE(1 + 1 == 3, CL_E_DATA, "byte %d is %#x, want %#x", 7, 0xab, 0xcd);
		_exit(CL_OK);
	}
	h_wait_children(&pid, 1, 10000, &st);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == CL_E_DATA, "liar: %s", wait_status_str(st));
	H_ASSERT(cl_last_words(pid, &code, words, sizeof(words)), "no last words of pid %d",
		 (int)pid);
	ck_assert_str_eq(words, "byte 7 is 0xab, want 0xcd");
	H_EQ(code, CL_E_DATA);
	/* Read once: a later client with the same pid starts clean. */
	H_ASSERT(!cl_last_words(pid, &code, words, sizeof(words)), "words read twice: %s",
		 words);
}
END_TEST

START_TEST(reap_names_the_reason)
{
	static const char *const names[] = { "fine", "stuck", "killed" };
	char msg[CL_STATUS_MSG_MAX];
	pid_t pids[3];
	unsigned i;

	for (i = 0; i < 3; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			cl_name = names[i];
			if (i == 0)
				_exit(CL_OK);
			if (i == 1)
				CL_DIE(CL_E_TIMEOUT, "stalled: %u of %u sent, nothing for %d ms", 3u,
				       5u, 30000);
			pause();
			_exit(CL_E_SYNC);
		}
	}
	H_EQ(kill(pids[2], SIGKILL), 0);
	H_ASSERT(!reap_clients(pids, names, 3, 10000, msg, sizeof(msg)), "all exited 0");
	ck_assert_str_eq(msg, "client stuck: exit 18 (no progress (timeout)): \"stalled: 3 of 5 "
			      "sent, nothing for 30000 ms\"; client killed: killed by signal 9");
}
END_TEST

START_TEST(words_of_many_clients)
{
	char want[64], words[CL_WORDS_MAX];
	pid_t pids[CL_MAX_CLIENTS];
	int st[CL_MAX_CLIENTS], code;
	unsigned i;

	for (i = 0; i < CL_MAX_CLIENTS; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0)
			CL_DIE(CL_E_MISSING, "client %u of %u", i, CL_MAX_CLIENTS);
	}
	h_wait_children(pids, CL_MAX_CLIENTS, 20000, st);
	for (i = 0; i < CL_MAX_CLIENTS; i++) {
		H_ASSERT(WIFEXITED(st[i]) && WEXITSTATUS(st[i]) == CL_E_MISSING, "client %u: %s",
			 i, wait_status_str(st[i]));
		H_ASSERT(cl_last_words(pids[i], &code, words, sizeof(words)), "client %u: none",
			 i);
		snprintf(want, sizeof(want), "client %u of %u", i, CL_MAX_CLIENTS);
		ck_assert_str_eq(words, want);
		H_EQ(code, CL_E_MISSING);
	}
}
END_TEST

START_TEST(progress_counts_gaps)
{
	struct progress p;

	progress_start(&p, 5, 1000);
	H_EQ(progress_note(&p, 6), 0);
	h_sleep_ms(1100);
	H_ASSERT(progress_note(&p, 6) >= 1100, "no change, but the gap is not counted");
	H_EQ(progress_note(&p, 7), 0);		/* a gap of >= 1100 ms ended */
	H_EQ(p.gaps, 1);
	H_ASSERT(p.longest >= 1100, "longest gap %lld ms", (long long)p.longest);
	h_sleep_ms(1100);
	progress_excuse(&p);			/* that pause was on purpose */
	H_EQ(progress_note(&p, 8), 0);
	H_EQ(p.gaps, 1);
	H_EQ(p.count, 8);
}
END_TEST

#define SPINNERS 3

/* @n children on one core: busy (each waits for it most of the time) or
 * asleep (never waiting). */
static void start_carriers(pid_t *pids, unsigned n, bool busy)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		pids[i] = h_fork();
		if (pids[i] == 0) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(0, &one);
			if (sched_setaffinity(0, sizeof(one), &one) != 0)
				_exit(1);
			for (;;)
				if (!busy)
					pause();
		}
	}
}

static void stop_carriers(const pid_t *pids, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		int st;

		H_EQ(kill(pids[i], SIGKILL), 0);
		H_EQ(waitpid(pids[i], &st, 0), pids[i]);
		H_ASSERT(WIFSIGNALED(st), "carrier %u: %s", i, wait_status_str(st));
	}
}

/* A 400 ms gap (gap_ms 300) with SPINNERS carriers on one core, busy or
 * asleep: the progress after it. */
static struct progress gap_with_carriers(bool busy)
{
	pid_t pids[SPINNERS];
	struct progress p;

	start_carriers(pids, SPINNERS, busy);
	progress_start(&p, 0, 300);
	progress_carriers(&p, pids, SPINNERS);
	h_sleep_ms(400);
	H_EQ(progress_note(&p, 1), 0);
	stop_carriers(pids, SPINNERS);
	printf("gaps_judged_held: a 400 ms gap of %s carriers: %u counted, %lld ms excused, "
	       "longest held %lld ms\n", busy ? "busy" : "sleeping", p.gaps,
	       (long long)p.excused_ms, (long long)p.longest);
	return p;
}

START_TEST(gaps_judged_held)
{
	struct progress p;

	/* Three busy processes sharing one core wait for it about two
	 * thirds of the time each: together longer than the gap lasts. */
	p = gap_with_carriers(true);
	H_EQ(p.gaps, 0);
	H_ASSERT(p.excused_ms >= 100, "only %lld ms excused", (long long)p.excused_ms);
	H_ASSERT(p.longest < 300, "held %lld ms", (long long)p.longest);
	/* Asleep, they wait for nothing: the gap is the work's. */
	p = gap_with_carriers(false);
	H_EQ(p.gaps, 1);
	H_ASSERT(p.longest >= 390, "held %lld ms", (long long)p.longest);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("testutil");

	tcase_add_test(h_tcase(s, "last_words_read_back", 60), last_words_read_back);
	tcase_add_test(h_tcase(s, "reap_names_the_reason", 60), reap_names_the_reason);
	tcase_add_test(h_tcase(s, "words_of_many_clients", 60), words_of_many_clients);
	tcase_add_test(h_tcase(s, "progress_counts_gaps", 60), progress_counts_gaps);
	tcase_add_test(h_tcase(s, "gaps_judged_held", 60), gaps_judged_held);
	return h_run_suite(s);
}
