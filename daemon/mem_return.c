/*
 * mem_return.c - freed memory given back to the kernel after a burst; see
 * mem_return.h.
 */
#include "autoconfig.h"

#include <inttypes.h>
#include <malloc.h>

#include "log.h"
#include "mem_return.h"

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mem_return *mr = w->data;
	uint64_t held = *mr->held;

	(void)loop;
	(void)revents;
	/* The timer runs only while peak >= MEM_RETURN_MIN_BYTES. */
	if (held <= mr->peak / 2) {
		ev_tstamp t0 = ev_time();
		/* Its result says only whether anything was released. */
		int released = malloc_trim(0);

		log_debug("memory: unexpected messages down from %" PRIu64 " to %" PRIu64
			  " bytes: trimmed in %.1f ms%s", mr->peak, held, (ev_time() - t0) * 1e3,
			  released ? "" : ", nothing to release");
		mr->trims++;
		mr->peak = held;
	}
	if (mr->peak < MEM_RETURN_MIN_BYTES)
		ev_timer_stop(mr->loop, &mr->w);
}

void mem_return_init(struct mem_return *mr, struct ev_loop *loop, const uint64_t *held)
{
	*mr = (struct mem_return){ .loop = loop, .held = held };
	ev_timer_init(&mr->w, tick_cb, MEM_RETURN_PERIOD_S, MEM_RETURN_PERIOD_S);
	mr->w.data = mr;
}

void mem_return_grown(struct mem_return *mr)
{
	if (*mr->held <= mr->peak)
		return;
	mr->peak = *mr->held;
	if (mr->peak >= MEM_RETURN_MIN_BYTES && !ev_is_active(&mr->w))
		ev_timer_again(mr->loop, &mr->w);
}

void mem_return_stop(struct mem_return *mr)
{
	ev_timer_stop(mr->loop, &mr->w);
}
