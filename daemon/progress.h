/*
 * progress.h - the progress engine's fairness bound, shared with the tests
 * that check it (tests/test_pressure.c, round_robin_drain).
 */
#ifndef SLUICE_PROGRESS_H
#define SLUICE_PROGRESS_H

/*
 * SQEs taken from one queue per pass, before the next queue's turn.  A
 * queue with thousands of descriptors ahead of another's one delays that
 * one by at most PASS_BUDGET descriptors per other queue.  Smaller is
 * fairer: with one client flooding 8 B sends, another pair's ping-pong on
 * the same daemon ran at a median 4.1-5.0 us against 1.4 us idle with 16,
 * and 3-15 us with 64, for no measurable loss of the flood's rate (3-7 M/s
 * either way on the 2-core test VM; see scripts/fairness).
 */
#define PASS_BUDGET 16

#endif
