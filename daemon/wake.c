/*
 * wake.c - the progress engine's wake-up primitive.  See wake.h.
 */
#include "autoconfig.h"

#include "daemon.h"
#include "sl_barrier.h"
#include "sl_ring.h"
#include "wake.h"

void wake_sleeper_sleep(struct daemon *d, struct wake_sleeper *s)
{
	if (s->asleep)
		return;
	s->asleep = true;
	TAILQ_INSERT_TAIL(&d->sleepers, s, link);
}

void wake_sleeper_forget(struct daemon *d, struct wake_sleeper *s)
{
	if (!s->asleep)
		return;
	s->asleep = false;
	TAILQ_REMOVE(&d->sleepers, s, link);
}

void wake_sleeper_wake(struct daemon *d, struct wake_sleeper *s)
{
	wake_sleeper_forget(d, s);
	sl_flags_andnot(s->flags, SL_RING_NEED_WAKEUP | SL_RING_CQ_STALLED);
}

void wake_all_sleepers(struct daemon *d)
{
	struct wake_sleeper *s;

	while ((s = TAILQ_FIRST(&d->sleepers)))
		wake_sleeper_wake(d, s);
}

void daemon_wake(struct daemon *d)
{
	/* Also while the engine runs: try_sleep must not stop it after a
	 * wake-up that came from its own flush. */
	d->kicked = true;
	if (ev_is_active(&d->progress_w))
		return;
	wake_all_sleepers(d);
	d->last_work = ev_time();
	ev_idle_start(d->loop, &d->progress_w);
}
