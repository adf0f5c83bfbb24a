/*
 * wake.h - making the progress engine run soon: the one primitive any
 * file of the daemon may call, below everything that does work.
 *
 * daemon_wake() is what a doorbell, a frame, a completion or a timer
 * calls when it leaves work for the next pass.  It starts the engine's
 * idle watcher and wakes every sleeping SQ (clears NEED_WAKEUP, so that
 * clients stop ringing while the engine spins: io_uring's SQPOLL rule).
 * It knows the SQs only as sleepers, a flags word each, so that it
 * depends on nothing above it; progress.c decides when the engine sleeps.
 * All calls on the loop thread.
 */
#ifndef SLD_WAKE_H
#define SLD_WAKE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

struct daemon;

/* One SQ that may sleep: NEED_WAKEUP (and CQ_STALLED) set in *flags. */
struct wake_sleeper {
	TAILQ_ENTRY(wake_sleeper) link;	/* daemon->sleepers while asleep */
	uint32_t *flags;		/* the ring's shared flags word */
	bool asleep;
};
/* struct daemon holds the list of sleepers (struct wake_sleeper_list,
 * daemon.h). */

/* Make sure the progress engine runs soon; marks the daemon kicked
 * (progress.c: try_sleep must not sleep after a kick). */
void daemon_wake(struct daemon *d);

/* @s announced sleep (its flags are set by the caller): on the list. */
void wake_sleeper_sleep(struct daemon *d, struct wake_sleeper *s);

/* @s is awake: NEED_WAKEUP and CQ_STALLED cleared, off the list. */
void wake_sleeper_wake(struct daemon *d, struct wake_sleeper *s);

/* @s goes away (its queue died): off the list, flags untouched. */
void wake_sleeper_forget(struct daemon *d, struct wake_sleeper *s);

/* Wake every sleeping SQ: the engine spins now. */
void wake_all_sleepers(struct daemon *d);

#endif
