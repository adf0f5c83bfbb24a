/*
 * release.c - large segments unmapped and closed by a helper thread; see
 * release.h.
 */
#include "autoconfig.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "release.h"

struct segment {
	struct segment *next;
	void *base;
	size_t len;
	int memfd;
};

struct releaser {
	pthread_mutex_t lock;
	pthread_cond_t more;		/* a segment was queued, or stop */
	struct segment *head, **tail;	/* under lock */
	bool stop;			/* under lock */
	pthread_t thread;
	_Atomic uint64_t pending_bytes;
	_Atomic uint64_t errors;
	uint64_t handed;		/* loop thread only */
};

/* Any thread; counts failures instead of logging (log.c is the loop's). */
static void release_now(_Atomic uint64_t *errors, void *base, size_t len, int memfd)
{
	if (base && munmap(base, len) < 0 && errors)
		atomic_fetch_add(errors, 1);
	if (memfd >= 0 && close(memfd) < 0 && errors)
		atomic_fetch_add(errors, 1);
}

static void *release_thread(void *arg)
{
	struct releaser *r = arg;

	for (;;) {
		struct segment *s;

		pthread_mutex_lock(&r->lock);
		while (!r->head && !r->stop)
			pthread_cond_wait(&r->more, &r->lock);
		s = r->head;
		if (s) {
			r->head = s->next;
			if (!r->head)
				r->tail = &r->head;
		}
		pthread_mutex_unlock(&r->lock);
		if (!s)
			return NULL;	/* stop, and nothing left */
		release_now(&r->errors, s->base, s->len, s->memfd);
		atomic_fetch_sub(&r->pending_bytes, s->len);
		free(s);
	}
}

/* The state and its thread, with every signal blocked in it (the loop
 * thread takes them); NULL when either cannot be made (logged). */
static struct releaser *releaser_start(void)
{
	struct releaser *r = calloc(1, sizeof(*r));
	sigset_t all, old;
	int rc;

	if (!r) {
		log_warn("release: out of memory: segments are released on the loop");
		return NULL;
	}
	r->tail = &r->head;
	atomic_init(&r->pending_bytes, 0);
	atomic_init(&r->errors, 0);
	rc = pthread_mutex_init(&r->lock, NULL);
	if (rc == 0) {
		rc = pthread_cond_init(&r->more, NULL);
		if (rc)
			pthread_mutex_destroy(&r->lock);
	}
	if (rc) {
		log_warn("release: mutex/cond: %s: segments are released on the loop",
			 strerror(rc));
		free(r);
		return NULL;
	}
	sigfillset(&all);
	rc = pthread_sigmask(SIG_SETMASK, &all, &old);
	if (rc == 0) {
		rc = pthread_create(&r->thread, NULL, release_thread, r);
		(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (rc) {
		log_warn("release: thread: %s: segments are released on the loop", strerror(rc));
		pthread_cond_destroy(&r->more);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return NULL;
	}
	return r;
}

void release_segment(struct daemon *d, void *base, size_t len, int memfd)
{
	static bool start_failed;
	struct releaser *r = d->releaser;
	struct segment *s;

	if (!base || len < RELEASE_ASYNC_MIN || d->stopping || start_failed) {
		release_now(r ? &r->errors : NULL, base, len, memfd);
		return;
	}
	if (!r) {
		r = d->releaser = releaser_start();
		if (!r) {
			start_failed = true;
			release_now(NULL, base, len, memfd);
			return;
		}
	}
	s = malloc(sizeof(*s));
	if (!s) {
		release_now(&r->errors, base, len, memfd);
		return;
	}
	*s = (struct segment){ .base = base, .len = len, .memfd = memfd };
	atomic_fetch_add(&r->pending_bytes, len);
	r->handed++;
	pthread_mutex_lock(&r->lock);
	*r->tail = s;
	r->tail = &s->next;
	pthread_cond_signal(&r->more);
	pthread_mutex_unlock(&r->lock);
}

uint64_t release_pending_bytes(const struct daemon *d)
{
	return d->releaser ? atomic_load(&d->releaser->pending_bytes) : 0;
}

uint64_t release_async_count(const struct daemon *d)
{
	return d->releaser ? d->releaser->handed : 0;
}

uint64_t release_errors(const struct daemon *d)
{
	return d->releaser ? atomic_load(&d->releaser->errors) : 0;
}

void release_stop(struct daemon *d)
{
	struct releaser *r = d->releaser;
	int rc;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_signal(&r->more);
	pthread_mutex_unlock(&r->lock);
	rc = pthread_join(r->thread, NULL);
	if (rc)
		log_warn("release: join: %s", strerror(rc));
	if (atomic_load(&r->errors))
		log_warn("release: %llu munmap/close failures",
			 (unsigned long long)atomic_load(&r->errors));
	pthread_cond_destroy(&r->more);
	pthread_mutex_destroy(&r->lock);
	free(r);
	d->releaser = NULL;
}
