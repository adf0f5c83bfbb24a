/*
 * resolve.c - nodes named by clients, looked up off the loop and added as
 * peers; see resolve.h.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "daemon.h"
#include "link.h"
#include "link_table.h"
#include "log.h"
#include "resolve.h"
#include "xport/addr.h"

struct lookup;

/*
 * What the lookup threads and the loop share.  It outlives the resolver
 * while threads run after resolve_stop(): whoever lets go of it last
 * frees it.
 */
struct mailbox {
	pthread_mutex_t lock;
	TAILQ_HEAD(, lookup) done;	/* finished, for the loop; under lock */
	unsigned refs;			/* the loop's, and one per thread; under lock */
	bool closed;			/* resolve_stop(): nobody reads done; under lock */
	struct ev_loop *loop;
	ev_async *wake;			/* the resolver's; valid while !closed */
};

/* One name looked up for one client. */
struct lookup {
	/* Set before its thread starts, then the thread's until it posts. */
	char host[CONFIG_NAME_MAX];
	char serv[8];
	int gai_rc;
	int gai_errno;
	struct addrinfo *res;
	struct mailbox *mb;
	TAILQ_ENTRY(lookup) mail;	/* on mb->done */
	/* The loop's. */
	struct resolver *r;
	TAILQ_ENTRY(lookup) all;	/* on resolver.under_way */
	void *owner;			/* NULL: nobody waits (answered, or gone) */
	resolve_done_fn *done;
	uint32_t seq;
	bool started;			/* its thread runs (else [fault] delays it) */
	ev_timer timeout_w;
	ev_timer delay_w;
};

struct resolver {
	struct daemon *d;
	struct mailbox *mb;
	ev_async wake;
	TAILQ_HEAD(, lookup) under_way;	/* started or delayed, answered or not */
	unsigned n_under_way;
};

static void mailbox_free(struct mailbox *mb)
{
	pthread_mutex_destroy(&mb->lock);
	free(mb);
}

static void lookup_free(struct lookup *k)
{
	if (k->res)
		freeaddrinfo(k->res);
	free(k);
}

/* Off the loop: the lookup, then its answer posted (or, after
 * resolve_stop(), dropped). */
static void *lookup_thread(void *arg)
{
	struct lookup *k = arg;
	struct mailbox *mb = k->mb;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	bool last;

	k->gai_rc = getaddrinfo(k->host, k->serv, &hints, &k->res);
	k->gai_errno = errno;
	if (k->gai_rc)
		k->res = NULL;
	pthread_mutex_lock(&mb->lock);
	if (!mb->closed) {
		TAILQ_INSERT_TAIL(&mb->done, k, mail);
		ev_async_send(mb->loop, mb->wake);
		pthread_mutex_unlock(&mb->lock);
		return NULL;
	}
	last = --mb->refs == 0;
	pthread_mutex_unlock(&mb->lock);
	lookup_free(k);
	if (last)
		mailbox_free(mb);
	return NULL;
}

/* @k's thread, detached, every signal blocked in it (the loop takes
 * them).  Returns 0 or -errno (EAGAIN: no thread now). */
static int lookup_start(struct resolver *r, struct lookup *k)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int rc;

	rc = pthread_attr_init(&attr);
	if (rc)
		return -rc;
	rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&r->mb->lock);
	r->mb->refs++;
	pthread_mutex_unlock(&r->mb->lock);
	sigfillset(&all);
	if (rc == 0)
		rc = pthread_sigmask(SIG_SETMASK, &all, &old);
	if (rc == 0) {
		rc = pthread_create(&t, &attr, lookup_thread, k);
		(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_mutex_lock(&r->mb->lock);
		r->mb->refs--;	/* the loop's own is still there */
		pthread_mutex_unlock(&r->mb->lock);
		log_warn("resolve %s: no thread for the lookup: %s", k->host, strerror(rc));
		return rc == EAGAIN ? -EAGAIN : -rc;
	}
	k->started = true;
	return 0;
}

/* Tell @k's client @err (and @node), once. */
static void answer(struct lookup *k, int err, uint32_t node)
{
	void *owner = k->owner;

	if (!owner)
		return;
	k->owner = NULL;
	k->done(owner, k->seq, err, node);
}

static void lookup_end(struct resolver *r, struct lookup *k)
{
	TAILQ_REMOVE(&r->under_way, k, all);
	r->n_under_way--;
	ev_timer_stop(r->d->loop, &k->timeout_w);
	ev_timer_stop(r->d->loop, &k->delay_w);
	lookup_free(k);
}

/*
 * Is @name (node id @id) known: this node, or a peer?  0 with *@node;
 * -EEXIST when its node id is another name's; -ENOENT when not known.
 */
static int known(struct daemon *d, const char *name, uint32_t id, uint32_t *node)
{
	struct link *l;

	if (id == d->cfg.node_id) {
		if (strcmp(name, d->cfg.node_name) != 0)
			return -EEXIST;
		*node = id;
		return 0;
	}
	l = link_find(d, id);
	if (!l)
		return -ENOENT;
	if (strcmp(link_name(l), name) != 0)
		return -EEXIST;
	*node = id;
	return 0;
}

/* The port a peer without one gets, as a peers_file line without one. */
static uint16_t peer_port(const struct config *c)
{
	return c->default_port != UINT32_MAX ? (uint16_t)c->default_port : c->listen_port;
}

/* The address to dial among @res: the first of the family this daemon
 * listens on when that is a numeric IPv4 address (a name also known as
 * ::1 must not be dialled there by an IPv4 cluster), else the first. */
static const struct addrinfo *dial_address(const struct config *c, const struct addrinfo *res)
{
	struct in_addr a4;
	const struct addrinfo *ai;

	if (inet_pton(AF_INET, c->listen_host, &a4) != 1)
		return res;
	for (ai = res; ai; ai = ai->ai_next)
		if (ai->ai_family == AF_INET)
			return ai;
	return res;
}

/* getaddrinfo()'s failure as what sl_node_resolve() says. */
static int lookup_error(const struct lookup *k)
{
	switch (k->gai_rc) {
	case EAI_NONAME:
	case EAI_NODATA:
	case EAI_ADDRFAMILY:
	case EAI_FAIL:
	case EAI_AGAIN:		/* no name server answered: no address either */
		return ENOENT;
	case EAI_MEMORY:
		return ENOMEM;
	case EAI_SYSTEM:
		log_warn("resolve %s: %s", k->host, strerror(k->gai_errno));
		return EIO;
	default:
		log_warn("resolve %s: %s", k->host, gai_strerror(k->gai_rc));
		return EIO;
	}
}

/* @k's lookup succeeded: the peer, unless it came meanwhile (another
 * lookup, a reload).  Returns 0 with *@node, or a positive errno. */
static int add_peer(struct daemon *d, const struct lookup *k, uint32_t *node)
{
	struct peer_conf pc = { 0 };
	char addr[INET6_ADDRSTRLEN + 8];
	uint32_t id = sl_node_id(k->host);
	int rc = known(d, k->host, id, node);

	if (rc != -ENOENT)
		return -rc;
	if (d->stopping || d->draining)
		return ESHUTDOWN;
	if (d->n_resolved_peers >= d->cfg.max_resolved_peers)
		return ENOSPC;
	snprintf(pc.name, sizeof(pc.name), "%s", k->host);
	pc.node_id = id;
	xport_addr_name(dial_address(&d->cfg, k->res)->ai_addr, addr, sizeof(addr));
	xport_addr_host(addr, pc.host, sizeof(pc.host));
	pc.port = peer_port(&d->cfg);
	rc = link_add_resolved(d, &pc, k->res);
	if (rc < 0) {
		log_warn("resolve %s: cannot add the peer: %s", k->host, strerror(-rc));
		return -rc;
	}
	log_info("peer %s (%08x) at %s:%u: resolved for a client (%zu resolved peers of %u)",
		 pc.name, id, pc.host, pc.port, d->n_resolved_peers, d->cfg.max_resolved_peers);
	*node = id;
	return 0;
}

static void finish(struct resolver *r, struct lookup *k)
{
	uint32_t node = 0;
	int err;

	if (k->owner) {
		err = k->gai_rc ? lookup_error(k) : add_peer(r->d, k, &node);
		answer(k, err, node);
	}
	lookup_end(r, k);
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct resolver *r = w->data;
	TAILQ_HEAD(, lookup) got = TAILQ_HEAD_INITIALIZER(got);
	struct lookup *k;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&r->mb->lock);
	TAILQ_CONCAT(&got, &r->mb->done, mail);
	TAILQ_FOREACH(k, &got, mail)
		r->mb->refs--;	/* its thread has let go */
	pthread_mutex_unlock(&r->mb->lock);
	while ((k = TAILQ_FIRST(&got))) {
		TAILQ_REMOVE(&got, k, mail);
		finish(r, k);
	}
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct lookup *k = w->data;

	(void)loop;
	(void)revents;
	answer(k, ETIMEDOUT, 0);
	/* Not started yet ([fault] resolve_delay_ms): nothing left to wait for. */
	if (!k->started)
		lookup_end(k->r, k);
}

static void delay_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct lookup *k = w->data;
	int rc;

	(void)loop;
	(void)revents;
	rc = lookup_start(k->r, k);
	if (rc < 0) {
		answer(k, -rc, 0);
		lookup_end(k->r, k);
	}
}

/* d->resolver, made on first use.  NULL: out of memory (logged). */
static struct resolver *resolver_get(struct daemon *d)
{
	struct resolver *r = d->resolver;
	int rc;

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (r)
		r->mb = calloc(1, sizeof(*r->mb));
	if (!r || !r->mb) {
		log_warn("resolve: out of memory");
		free(r);
		return NULL;
	}
	rc = pthread_mutex_init(&r->mb->lock, NULL);
	if (rc) {
		log_warn("resolve: mutex: %s", strerror(rc));
		free(r->mb);
		free(r);
		return NULL;
	}
	r->d = d;
	TAILQ_INIT(&r->under_way);
	TAILQ_INIT(&r->mb->done);
	r->mb->refs = 1;
	r->mb->loop = d->loop;
	r->mb->wake = &r->wake;
	ev_async_init(&r->wake, wake_cb);
	r->wake.data = r;
	ev_async_start(d->loop, &r->wake);
	d->resolver = r;
	return r;
}

int resolve_node(struct daemon *d, const char *name, void *owner, uint32_t seq,
		 resolve_done_fn *done, uint32_t *node)
{
	uint32_t id = sl_node_id(name);
	struct resolver *r;
	struct lookup *k;
	unsigned under_way = resolve_in_flight(d);
	int rc;

	if (d->stopping || d->draining)
		return -ESHUTDOWN;
	rc = known(d, name, id, node);
	if (rc != -ENOENT)
		return rc;
	if (!d->cfg.listen_set)
		return -EOPNOTSUPP;
	if (d->n_resolved_peers + under_way >= d->cfg.max_resolved_peers)
		return -ENOSPC;
	if (under_way >= RESOLVE_MAX_INFLIGHT)
		return -EAGAIN;
	r = resolver_get(d);
	k = r ? calloc(1, sizeof(*k)) : NULL;
	if (!k)
		return -ENOMEM;
	snprintf(k->host, sizeof(k->host), "%s", name);
	snprintf(k->serv, sizeof(k->serv), "%u", peer_port(&d->cfg));
	k->mb = r->mb;
	k->r = r;
	k->owner = owner;
	k->done = done;
	k->seq = seq;
	ev_timer_init(&k->timeout_w, timeout_cb, RESOLVE_TIMEOUT_S, 0.0);
	k->timeout_w.data = k;
	ev_timer_init(&k->delay_w, delay_cb, d->cfg.fault_resolve_delay_ms / 1e3, 0.0);
	k->delay_w.data = k;
	TAILQ_INSERT_TAIL(&r->under_way, k, all);
	r->n_under_way++;
	if (d->cfg.fault_resolve_delay_ms) {
		ev_timer_start(d->loop, &k->delay_w);
	} else {
		rc = lookup_start(r, k);
		if (rc < 0) {
			k->owner = NULL;
			lookup_end(r, k);
			return rc;
		}
	}
	ev_timer_start(d->loop, &k->timeout_w);
	return -EINPROGRESS;
}

void resolve_forget(struct daemon *d, void *owner)
{
	struct resolver *r = d->resolver;
	struct lookup *k, *next;

	if (!r)
		return;
	for (k = TAILQ_FIRST(&r->under_way); k; k = next) {
		next = TAILQ_NEXT(k, all);
		if (k->owner != owner)
			continue;
		k->owner = NULL;
		ev_timer_stop(d->loop, &k->timeout_w);
		if (!k->started)
			lookup_end(r, k);	/* delayed: no thread holds it */
	}
}

unsigned resolve_in_flight(const struct daemon *d)
{
	return d->resolver ? d->resolver->n_under_way : 0;
}

void resolve_stop(struct daemon *d)
{
	struct resolver *r = d->resolver;
	struct mailbox *mb;
	struct lookup *k;
	bool last;

	if (!r)
		return;
	mb = r->mb;
	/* The started ones are the threads' (or on done, below) from now on. */
	while ((k = TAILQ_FIRST(&r->under_way))) {
		TAILQ_REMOVE(&r->under_way, k, all);
		ev_timer_stop(d->loop, &k->timeout_w);
		ev_timer_stop(d->loop, &k->delay_w);
		if (!k->started)
			lookup_free(k);
	}
	pthread_mutex_lock(&mb->lock);
	mb->closed = true;
	while ((k = TAILQ_FIRST(&mb->done))) {
		TAILQ_REMOVE(&mb->done, k, mail);
		mb->refs--;
		lookup_free(k);
	}
	last = --mb->refs == 0;
	pthread_mutex_unlock(&mb->lock);
	ev_async_stop(d->loop, &r->wake);
	free(r);
	d->resolver = NULL;
	if (last)
		mailbox_free(mb);
}
