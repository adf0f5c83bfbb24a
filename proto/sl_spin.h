/*
 * sl_spin.h - how long to poll before sleeping, learnt from the waits.
 *
 * A process that waits for work polls for a window and then sleeps; a
 * wake-up through the scheduler costs 5-30 µs on the machines sluice was
 * measured on, so a window that catches the next event saves that, and a
 * window that catches nothing burns a core for nothing.  Both sides use
 * the same rule: libsluice's sl_wait() per queue, sluiced's progress
 * engine for its passes.  After each wait, the caller says how long it
 * took (to the event, or to a timeout).  The window becomes twice the
 * running mean (weight 1/4) of the recent waits, within [min, max]; a
 * wait longer than max (sparse traffic, an idle peer: spinning could not
 * have caught it) halves the window instead, so that an idle process soon
 * polls only min before it sleeps.  glibc's adaptive mutex
 * (PTHREAD_MUTEX_ADAPTIVE_NP) sizes its spin the same way, from a running
 * mean of the spins that succeeded, and Linux's hybrid block polling from
 * the mean completion time; docs/progress-engine.md has the figures.
 *
 * Plain data of one thread (no atomics): each waiter has its own.
 */
#ifndef SL_SPIN_H
#define SL_SPIN_H

#include <stdint.h>

struct sl_spin {
	int64_t window_ns;	/* poll this long before sleeping */
	int64_t mean_ns;	/* running mean of the waits that could be caught */
	int64_t min_ns, max_ns;	/* bounds of window_ns */
};

/* Start at @start_ns, kept within [@min_ns, @max_ns] (0 < min <= max). */
static inline void sl_spin_init(struct sl_spin *s, int64_t start_ns, int64_t min_ns,
				int64_t max_ns)
{
	s->min_ns = min_ns;
	s->max_ns = max_ns;
	s->window_ns = start_ns < min_ns ? min_ns : start_ns > max_ns ? max_ns : start_ns;
	s->mean_ns = s->window_ns / 2;
}

/* A wait took @took_ns (>= 0): learn from it; returns the new window. */
static inline int64_t sl_spin_learn(struct sl_spin *s, int64_t took_ns)
{
	int64_t w;

	if (took_ns > s->max_ns) {
		w = s->window_ns / 2;
		s->mean_ns = w / 2;
	} else {
		s->mean_ns += (took_ns - s->mean_ns) / 4;
		w = 2 * s->mean_ns;
	}
	s->window_ns = w < s->min_ns ? s->min_ns : w > s->max_ns ? s->max_ns : w;
	return s->window_ns;
}

#endif /* SL_SPIN_H */
