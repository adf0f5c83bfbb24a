/*
 * progress.c - the one-line progress report of progress.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "progress.h"

bool progress_wanted(int choice, FILE *f)
{
	if (choice >= 0)
		return choice > 0;
	return isatty(fileno(f)) == 1;
}

/* The report whose line is on the screen, for die(). */
static struct progress *open_report;

static void end_open_report(void)
{
	if (open_report)
		progress_end(open_report);
}

void progress_start(struct progress *p, FILE *f, const char *prefix,
		    uint64_t total, uint64_t now_ns)
{
	memset(p, 0, sizeof(*p));
	p->out = f;
	p->prefix = prefix;
	p->total = total;
	p->at_ns[0] = now_ns;
	p->n = 1;
}

/* "1:02:03" or "2:03"; "--:--" when nothing says how long. */
static void fmt_eta(char *b, size_t n, double s)
{
	uint64_t t;

	if (!(s >= 0) || s > 359999.0) {
		snprintf(b, n, "--:--");
		return;
	}
	t = (uint64_t)(s + 0.5);
	if (t >= 3600)
		snprintf(b, n, "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64, t / 3600,
			 t / 60 % 60, t % 60);
	else
		snprintf(b, n, "%" PRIu64 ":%02" PRIu64, t / 60, t % 60);
}

void progress_update(struct progress *p, uint64_t done, uint64_t now_ns)
{
	unsigned oldest = (p->head + PROGRESS_SAMPLES + 1 - p->n) % PROGRESS_SAMPLES;
	char dsz[32], tsz[32], eta[32];
	double span, rate;
	unsigned pct;

	if (!p->out)
		return;
	if (done > p->total)
		done = p->total;
	if (p->last_ns && now_ns - p->last_ns < PROGRESS_PERIOD_NS &&
	    done < p->total)
		return;
	/* The rate since the oldest sample of the ring (about 3 s ago). */
	span = (double)(now_ns - p->at_ns[oldest]) / 1e9;
	rate = span > 0 ? (double)(done - p->at_bytes[oldest]) / span : 0.0;
	p->head = (p->head + 1) % PROGRESS_SAMPLES;
	p->at_ns[p->head] = now_ns;
	p->at_bytes[p->head] = done;
	if (p->n < PROGRESS_SAMPLES)
		p->n++;
	p->last_ns = now_ns;

	fmt_size(dsz, sizeof(dsz), done);
	fmt_size(tsz, sizeof(tsz), p->total);
	pct = p->total ? (unsigned)(done * 100 / p->total) : 100;
	fmt_eta(eta, sizeof(eta), done >= p->total ? 0.0
		: rate > 0 ? (double)(p->total - done) / rate : -1.0);
	fprintf(p->out, "\r%s %s of %s (%u%%), %.1f MB/s, ETA %s\033[K",
		p->prefix, dsz, tsz, pct, rate / 1e6, eta);
	fflush(p->out);
	p->shown = true;
	open_report = p;
	tool_before_die = end_open_report;
}

void progress_end(struct progress *p)
{
	if (!p->out || !p->shown)
		return;
	fputc('\n', p->out);
	fflush(p->out);
	p->shown = false;
	open_report = NULL;
	tool_before_die = NULL;
}
