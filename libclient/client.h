/*
 * client.h - libsluice internals shared by context.c and queue.c.
 */
#ifndef SL_CLIENT_H
#define SL_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "arena.h"
#include "sl_ring.h"
#include "sl_shm.h"
#include "sl_spin.h"
#include "sluice.h"

#define SL_EXPORT __attribute__((visibility("default")))

struct sl_ctx {
	int fd;			/* control socket */
	pthread_mutex_t lock;	/* serialises control transactions */
	uint32_t seq;
	uint32_t node;
	uint64_t incarnation;
	_Atomic bool dead;	/* the daemon closed the control socket */
	LIST_HEAD(, sl_queue) queues;
};

struct sl_queue {
	struct sl_ctx *ctx;
	LIST_ENTRY(sl_queue) link;
	uint32_t id;
	sl_addr_t addr;
	uint8_t *base;		/* our mapping of the segment */
	uint64_t seg_size;
	uint8_t *arena_base;
	uint64_t arena_size;
	uint32_t eager_max;
	struct sl_ring sq;	/* we produce */
	struct sl_ring cq;	/* we consume */
	int sq_efd;		/* we write to wake the daemon */
	int cq_efd;		/* the daemon writes to wake us */
	struct arena arena;
	int64_t gone_checked_ns;	/* last daemon_gone() poll */
	struct sl_spin spin;	/* sl_wait()'s window (queue.c) */
};

/*
 * daemon_gone - has the daemon closed the control socket?  Polls it at
 * most once per millisecond (callers are slow paths that may spin).
 */
bool daemon_gone(struct sl_queue *q);

/*
 * ctl_call - one request/reply on the control socket, under ctx->lock.
 * Receives up to @max_fds fds into @fds (*nfds set).  Returns 0 or -errno
 * (transport errors; the reply's own error field is left to the caller).
 */
int ctl_call(struct sl_ctx *ctx, struct sl_ctl_req *req, struct sl_ctl_rep *rep,
	     int *fds, unsigned max_fds, unsigned *nfds);

/* ctl_call() of a request @len bytes long that starts with @req
 * (NODE_RESOLVE's is longer than struct sl_ctl_req). */
int ctl_call_len(struct sl_ctx *ctx, struct sl_ctl_req *req, size_t len,
		 struct sl_ctl_rep *rep, int *fds, unsigned max_fds, unsigned *nfds);

#endif
