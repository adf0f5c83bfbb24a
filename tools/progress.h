/*
 * progress.h - a one-line progress report on a terminal, as cp(1)-like
 * tools (rsync --progress, pv, curl) show it: bytes done of the total,
 * the rate over the last seconds and the time left.
 *
 *   sluice-copy: sent 1.5 GiB of 4 GiB (37%), 812.4 MB/s, ETA 0:03
 *
 * The line is rewritten in place ("\r" and erase to the end of the line,
 * ESC [ K) at most PROGRESS_PERIOD_NS apart, so a fast copy does not
 * spend its time on the terminal; it is refreshed when the program calls
 * progress_update(), i.e. as the work advances.  Rates are MB/s, 1e6
 * bytes per second, as the tools' final reports; the rate is measured
 * over the last PROGRESS_SAMPLES refreshes (about 3 s), so that the ETA
 * follows a rate that changes.  While a line is on the screen, die()
 * (common.h) ends it before its message.  libc only; one report at a
 * time per process, not thread-safe.
 */
#ifndef SLUICE_TOOLS_PROGRESS_H
#define SLUICE_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PROGRESS_PERIOD_NS 250000000ull	/* 4 refreshes a second at most */
#define PROGRESS_SAMPLES 12u		/* x 250 ms: the rate's window */

struct progress {
	FILE *out;		/* NULL: off, every call does nothing */
	const char *prefix;	/* "sluice-copy: sent" */
	uint64_t total;		/* bytes, known when progress_start() runs */
	uint64_t last_ns;	/* when the line was last written, 0: never */
	bool shown;		/* a line is on the screen, not ended yet */
	/* The last refreshes, a ring: when and how far, for the rate. */
	uint64_t at_ns[PROGRESS_SAMPLES], at_bytes[PROGRESS_SAMPLES];
	unsigned n, head;
};

/*
 * Whether to show progress: @choice is 1 (--progress), 0 (--no-progress)
 * or -1 (neither given: only when @f is a terminal, isatty(3), so that
 * scripts, pipes and log files see none of it).
 */
bool progress_wanted(int choice, FILE *f);

/*
 * Start a report on @f (NULL: off) of @total bytes, each line beginning
 * with @prefix (kept by pointer: it must outlive @p).  @now_ns is the
 * start, CLOCK_MONOTONIC in ns (now_ns() of common.h).
 */
void progress_start(struct progress *p, FILE *f, const char *prefix,
		    uint64_t total, uint64_t now_ns);

/*
 * @done bytes of the total are done at @now_ns: rewrite the line when
 * PROGRESS_PERIOD_NS have passed since it was last written, or when
 * @done reached the total.
 */
void progress_update(struct progress *p, uint64_t done, uint64_t now_ns);

/*
 * End the line (a newline after the last one written), so that what the
 * program prints next starts on its own line.  Call it before any other
 * output to @f once a report has started, and at the end.
 */
void progress_end(struct progress *p);

#endif
