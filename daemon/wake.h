/*
 * wake.h - making the progress engine run soon: the one primitive any
 * file of the daemon may call, below everything that does work.
 *
 * daemon_wake() is what a doorbell, a frame, a completion or a timer
 * calls when it leaves work for the next pass: it starts the engine's
 * idle watcher.  It wakes no queue: which queues and links a pass visits
 * is their own business (queue_activate in queue.h, link_kick in
 * link.h: the ready lists of epoll and io_uring), so that a pass costs
 * what is active, not what exists.  It depends on nothing above it;
 * progress.c decides when the engine sleeps.  All calls on the loop
 * thread.
 */
#ifndef SLD_WAKE_H
#define SLD_WAKE_H

struct daemon;

/* Make sure the progress engine runs soon; marks the daemon kicked
 * (progress.c: try_sleep must not sleep after a kick). */
void daemon_wake(struct daemon *d);

#endif
