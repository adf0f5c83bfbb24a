/*
 * sluice-stress - many clients on many nodes sending verified messages of
 * random sizes to each other at once, to catch loss, duplication,
 * reordering, corruption, hangs and daemon memory growth under load.
 *
 *   sluice-stress [--socket PATH[,PATH...]]... [--clients N] [--concurrency K]
 *                 [--recvs R] [--max-size BYTES] [--tags T]
 *                 [--duration S | --messages N] [--seed N] [--timeout S]
 *                 [--daemon-pid PID[,PID...]]... [--verbose]
 *
 * Clients.  Each --socket is one node (its daemon's control socket); on
 * each, N clients run, every one a process of its own (forked) with its
 * own context and one queue bound to an ephemeral port.  Client ids are
 * global: node index x N + client index.  Every client is sender and
 * receiver at once: it keeps K sends in flight ("logically concurrent")
 * and R wildcard receives (any source, tag mask 0) of capacity --max-size
 * posted, reposting each as soon as it completes.
 *
 * Messages.  A source numbers its messages 0, 1, 2, ... (seq); the
 * destination, size and tag class of message (src, seq) are functions of
 * (--seed, src, seq) only, so the receiver can check them:
 *   destination: any client of any node, the sender itself included;
 *   size:        0..--max-size, log-uniform: a bucket b in 0..bits(max)
 *                is picked uniformly, b = 0 gives 0 bytes, b >= 1 a size
 *                in [2^(b-1), 2^b) (capped at max); so about a quarter
 *                of the messages are under 16 bytes and, with the 1M
 *                default, 23% above 64 KiB (rendezvous at the default
 *                eager_max) and 77% eager, while most bytes go by
 *                rendezvous;
 *   tag:         class (0..T-1) | retried << 12 | seq << 16.
 * The payload starts with a 16-byte header when it fits: source id (u32),
 * length (u32), seq (u64), little-endian.  Every other byte comes from a
 * PRNG (splitmix64) seeded by (--seed, src, seq).  The receiver takes the
 * source from the completion's peer address and seq from the tag, and
 * checks status, destination, length, tag class, header and every byte;
 * any difference is a verification failure (the first few per client are
 * printed on stderr).
 *
 * Back-pressure.  A send that completes SL_NAK_BUSY or SL_NAK_RECEIVER_FULL
 * is posted again, same seq and bytes, with the "retried" bit of its tag
 * set, after a back-off of 100 us doubling to 10 ms; it is retried for as
 * long as the run makes progress (see --timeout).  -EAGAIN from sl_send()
 * or sl_recv() (SQ full) leaves the descriptor for the next turn of the
 * loop, after the completions have been polled.  The loop sleeps in
 * sl_wait() (at most 10 ms at a time, or until the next back-off ends)
 * whenever a pass found no completion; it never spins without it.
 *
 * Checks.  Bookkeeping lives in shared memory mapped before the fork
 * (MAP_SHARED): per source, one bitmap of the seqs whose send completed
 * SL_OK and one of the seqs delivered (set by the receiver, atomically).
 *   lost:        sent OK, never delivered;
 *   duplicated:  delivered twice (the bit was already set);
 *   delivered without an OK send: delivered, but the send's final status
 *                was not SL_OK (or it never completed);
 *   out of order per source: receives match in the order they were posted,
 *                so the receiver walks its receives in post order and
 *                counts a message of seq s from X that follows one of a
 *                larger seq from X, neither of them retried (a NAKed send
 *                may legitimately arrive after its successors).  Not
 *                completion order: a rendezvous completes after the eager
 *                messages behind it.  A daemon that gave a matched
 *                receive back to its place (a rendezvous failing before
 *                any data) while later messages met later receives would
 *                show up here: to the client, it is a reordering (the
 *                daemon completes such a receive SL_NAK_BUSY instead;
 *                the tool counts and reposts it);
 *   completion errors: a completion whose user_ctx names no descriptor in
 *                flight (a duplicate or a stray), or whose opcode, length,
 *                tag or peer differ from what was posted; and sends still
 *                without a completion at the end;
 *   errors:      any other completion status, counted by status.
 * A client stops sending after --duration or --messages, waits for its own
 * sends to complete, and then until every client has done so and it has
 * received every message sent to it OK.  When nothing completes SL_OK on
 * any client for --timeout seconds, the run ends as a hang and what is
 * missing is reported.  The clients publish their counts in the shared
 * memory and the parent adds them up.
 *
 * Daemon memory.  Each daemon's pid comes from --daemon-pid, in --socket
 * order, or else from SO_PEERCRED of a connection to its control socket
 * (the daemon calls listen(); a bare connect and close is harmless to it,
 * and runtime_dir/sluiced.lock holds no pid).  VmRSS and RssAnon of
 * /proc/PID/status are read before the clients start, sampled every
 * 100 ms during the run (VmRSS peak), at the end of the traffic with the
 * clients still connected, and after they all closed.  VmRSS includes the
 * pages of the clients' arenas the daemon has touched (shared memory, gone
 * with the clients); RssAnon is the daemon's own heap, which malloc keeps
 * at its high-water mark, so growth that repeats run after run is what
 * points to a leak.
 *
 * Exit status: 0 when every check passed; 1 on any loss, duplicate,
 * misorder, verification failure, delivery without an OK send, completion
 * error, error status, hang, or a client that failed; 2 on a bad command
 * line.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sluice.h"
#include "common.h"
#include "sl_common.h"

#define PROG "sluice-stress"

#define MAX_NODES 64u
#define MAX_CLIENTS 256u		/* in all */
#define CONC_MAX 1024u
#define RECVS_MAX 2048u
#define TAGS_MAX 4096u
#define DURATION_MAX 3600u
#define MESSAGES_MAX (1ull << 28)
/* Bookkeeping per client in --duration mode: 1 Mi seqs a second, <= 64 Mi. */
#define SEQS_PER_SEC (1ull << 20)
#define SEQS_CAP (1ull << 26)

#define HDR_LEN 16u
#define TAG_CLASS_MASK ((uint64_t)0xfff)
#define TAG_RETRIED ((uint64_t)1 << 12)
#define TAG_SEQ_SHIFT 16
#define TAG_RSVD_MASK ((uint64_t)0xe000)

#define BACKOFF_MIN_NS 100000ull	/* 100 us ... */
#define BACKOFF_MAX_NS 10000000ull	/* ... doubling to 10 ms */
#define WAIT_MAX_MS 10
#define EVCAP (1u << 15)		/* receives awaiting the order check */
#define BATCH 64u
#define NSTATUS 32u
#define REPORT_MAX 5u			/* failures of a kind printed per client */
#define RNDV_HINT (64u << 10)		/* the default eager_max */
#define SAMPLE_NS 100000000ull		/* daemon RSS sampling period */

/* ------------------------------------------------------------------ */
/* Shared memory                                                        */
/* ------------------------------------------------------------------ */

/* What a client reports; written by it just before it exits. */
struct cstats {
	uint64_t seqs;			/* messages started: seqs 0..seqs-1 */
	uint64_t posts;			/* sl_send() posts, retries included */
	uint64_t sent_ok, sent_bytes, sent_big;
	uint64_t naks_busy, naks_full, max_naks;
	uint64_t send_err[NSTATUS], recv_err[NSTATUS];
	uint64_t delivered, delivered_bytes, dups, verify_fail, misorder;
	uint64_t recv_naks;	/* receives given back with a NAK: reposted */
	uint64_t compl_err;
	uint64_t unfinished;		/* sends with no final completion */
	uint64_t missing;		/* expected but not delivered at the end */
	uint64_t late;			/* deliveries after the client drained */
	uint64_t t_sent, t_drained;	/* ns, CLOCK_MONOTONIC */
	bool capped, timed_out, aborted, done;
};

struct cslot {
	sl_addr_t addr;
	_Atomic uint64_t expected_in;	/* sends to this client completed OK */
	struct cstats st;
};

struct shm {
	_Atomic uint32_t registered;	/* clients whose addr is published */
	_Atomic uint32_t go;		/* parent: t0 set, start */
	_Atomic uint32_t senders_done;	/* clients whose sends all completed */
	_Atomic uint32_t drained;	/* clients done receiving */
	_Atomic uint32_t close;		/* parent: close the queues and exit */
	_Atomic uint32_t abort;		/* parent: a client failed, stop */
	_Atomic uint64_t last_progress;	/* ns of the latest SL_OK anywhere */
	uint64_t t0;
	struct cslot c[];
};

/* The run, as the command line set it; shared read-only by the children. */
struct run {
	char **socks;
	unsigned nnodes, per_node, nclients;
	unsigned conc, recvs, tags;
	uint64_t max_size, seed, seed_mix;
	uint64_t duration_s, messages, timeout_s;
	uint64_t seq_cap, words;	/* bitmap bits and u64 words per client */
	pid_t *dpids;			/* given by --daemon-pid, or 0 */
	unsigned ndpids;
	bool verbose;
	struct shm *shm;
	_Atomic uint64_t *ok_map, *dl_map;	/* [nclients][words] */
};

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ */
/* What a message is: functions of (seed, src, seq)                      */
/* ------------------------------------------------------------------ */

static uint64_t msg_key(const struct run *r, uint32_t src, uint64_t seq)
{
	return mix64(r->seed_mix ^ ((uint64_t)src << 48 | seq));
}

static uint32_t msg_dst(const struct run *r, uint64_t key)
{
	return (uint32_t)(mix64(key + 1) % r->nclients);
}

static uint64_t msg_size(const struct run *r, uint64_t key)
{
	uint64_t x = mix64(key + 2), lo, hi;
	unsigned nb = r->max_size ? 64 - (unsigned)__builtin_clzll(r->max_size) : 0;
	unsigned b = (unsigned)((x & 0xffff) % (nb + 1));

	if (b == 0)
		return 0;
	lo = 1ull << (b - 1);
	hi = b < 64 ? (1ull << b) - 1 : UINT64_MAX;
	if (hi > r->max_size)
		hi = r->max_size;
	return lo + (x >> 16) % (hi - lo + 1);
}

static uint64_t msg_tag(const struct run *r, uint64_t key, uint64_t seq,
			bool retried)
{
	return mix64(key + 3) % r->tags | (retried ? TAG_RETRIED : 0) |
	       seq << TAG_SEQ_SHIFT;
}

/* Payload bytes from @off on: splitmix64 seeded by the key. */
static void content_fill(uint8_t *p, uint64_t off, uint64_t len, uint64_t key)
{
	uint64_t x = key ^ 0x5851f42d4c957f2dull, v;

	for (; off + 8 <= len; off += 8) {
		v = htole64(mix64(x += 0x9e3779b97f4a7c15ull));
		memcpy(p + off, &v, 8);
	}
	if (off < len) {
		v = htole64(mix64(x += 0x9e3779b97f4a7c15ull));
		memcpy(p + off, &v, len - off);
	}
}

/* The offset of the first wrong byte at or after @off, or @len. */
static uint64_t content_check(const uint8_t *p, uint64_t off, uint64_t len,
			      uint64_t key, uint8_t *want)
{
	uint64_t x = key ^ 0x5851f42d4c957f2dull, v, n;

	for (; off < len; off += 8) {
		v = htole64(mix64(x += 0x9e3779b97f4a7c15ull));
		n = len - off < 8 ? len - off : 8;
		if (memcmp(p + off, &v, n) != 0) {
			const uint8_t *w = (const uint8_t *)&v;
			uint64_t i = 0;

			while (p[off + i] == w[i])
				i++;
			*want = w[i];
			return off + i;
		}
	}
	return len;
}

static void msg_fill(uint8_t *p, uint64_t len, uint32_t src, uint64_t seq,
		     uint64_t key)
{
	uint64_t off = 0;

	if (len >= HDR_LEN) {
		put_le32(p, src);
		put_le32(p + 4, (uint32_t)len);
		put_le64(p + 8, seq);
		off = HDR_LEN;
	}
	content_fill(p, off, len, key);
}

/* Set @bit; returns whether it was set already. */
static bool bit_set(_Atomic uint64_t *map, uint64_t bit)
{
	uint64_t m = 1ull << (bit % 64);

	return atomic_fetch_or_explicit(&map[bit / 64], m,
					memory_order_relaxed) & m;
}

/* ------------------------------------------------------------------ */
/* Client                                                               */
/* ------------------------------------------------------------------ */

enum { S_IDLE, S_READY, S_INFLIGHT };

struct tx {
	int state;
	uint32_t gen, dst;
	uint64_t seq, len, tag, due;	/* due: S_READY, post at or after */
	unsigned naks;
	uint8_t *buf;
};

struct rx {
	bool inflight;
	uint32_t gen;
	uint64_t post_idx;
	uint8_t *buf;
};

/* A receive awaiting the order check, by post index. */
struct ev {
	uint64_t seq;
	uint32_t src;
	uint8_t state;		/* 0 pending, 1 check, 2 skip */
	bool retried;
};

struct cl {
	const struct run *r;
	struct shm *shm;
	unsigned me;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct tx *tx;
	struct rx *rx;
	unsigned tx_busy;	/* slots not idle */
	unsigned rx_idle;	/* receives to post */
	uint64_t next_seq, rx_post_next, ev_head;
	struct ev *ev;
	uint64_t *maxseq;	/* per source, +1; 0: none yet */
	uint64_t distinct_in;	/* deliveries to me, duplicates not counted */
	uint64_t last_store;	/* when I last stored last_progress */
	uint32_t *ht;		/* addr -> client id + 1 */
	unsigned ht_mask;
	bool drained;
	unsigned rep_verify, rep_order, rep_compl, rep_err;
	struct cstats st;
};

/* user_ctx: generation << 32 | receive << 31 | slot */
#define UC(gen, recv, slot) \
	((uint64_t)(gen) << 32 | (uint64_t)(recv) << 31 | (uint64_t)(slot))

static uint32_t addr_hash(sl_addr_t a)
{
	return (uint32_t)(mix64((uint64_t)a.node << 32 | a.port) >> 7);
}

static void ht_build(struct cl *c)
{
	unsigned n = 16, i;

	while (n < 4 * c->r->nclients)
		n <<= 1;
	c->ht = calloc(n, sizeof(*c->ht));
	if (!c->ht)
		die("out of memory");
	c->ht_mask = n - 1;
	for (i = 0; i < c->r->nclients; i++) {
		uint32_t h = addr_hash(c->shm->c[i].addr) & c->ht_mask;

		while (c->ht[h])
			h = (h + 1) & c->ht_mask;
		c->ht[h] = i + 1;
	}
}

/* The client id of address @a, or -1. */
static int ht_find(const struct cl *c, sl_addr_t a)
{
	uint32_t h = addr_hash(a) & c->ht_mask;

	while (c->ht[h]) {
		sl_addr_t b = c->shm->c[c->ht[h] - 1].addr;

		if (b.node == a.node && b.port == a.port)
			return (int)c->ht[h] - 1;
		h = (h + 1) & c->ht_mask;
	}
	return -1;
}

static void progress(struct cl *c, uint64_t now)
{
	if (now - c->last_store > 1000000) {
		atomic_store(&c->shm->last_progress, now);
		c->last_store = now;
	}
}

static void __attribute__((format(printf, 3, 4)))
report(unsigned *count, const char *what, const char *fmt, ...)
{
	va_list ap;

	if ((*count)++ >= REPORT_MAX)
		return;
	fprintf(stderr, "%s: %s: ", tool_name, what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Post receive slot @i; false on -EAGAIN. */
static bool rx_post(struct cl *c, unsigned i)
{
	struct rx *x = &c->rx[i];
	int rc;

	rc = sl_recv(c->q, SL_ANY_SOURCE, 0, 0, x->buf, c->r->max_size,
		     UC(x->gen + 1, 1, i));
	if (rc == -EAGAIN)
		return false;
	if (rc < 0)
		die("sl_recv: %s", strerror(-rc));
	x->gen++;
	x->inflight = true;
	x->post_idx = c->rx_post_next++;
	c->rx_idle--;
	return true;
}

/* Post the idle receives the order check has room for; false on -EAGAIN. */
static bool rx_post_idle(struct cl *c)
{
	unsigned i;

	for (i = 0; i < c->r->recvs && c->rx_idle; i++) {
		if (c->rx[i].inflight)
			continue;
		if (c->rx_post_next - c->ev_head >= EVCAP)
			return true;	/* reposted as the check moves on */
		if (!rx_post(c, i))
			return false;
	}
	return true;
}

/* Start message next_seq in idle slot @t. */
static void tx_start(struct cl *c, struct tx *t)
{
	const struct run *r = c->r;
	uint64_t seq = c->next_seq++, key = msg_key(r, c->me, seq);

	t->seq = seq;
	t->dst = msg_dst(r, key);
	t->len = msg_size(r, key);
	t->tag = msg_tag(r, key, seq, false);
	t->naks = 0;
	t->due = 0;
	msg_fill(t->buf, t->len, c->me, seq, key);
	t->state = S_READY;
	c->tx_busy++;
}

/* Post send slot @i; false on -EAGAIN. */
static bool tx_post(struct cl *c, unsigned i)
{
	struct tx *t = &c->tx[i];
	int rc = sl_send(c->q, c->shm->c[t->dst].addr, t->tag, t->buf, t->len,
			 UC(t->gen + 1, 0, i));

	if (rc == -EAGAIN)
		return false;
	if (rc < 0)
		die("sl_send: %s", strerror(-rc));
	t->gen++;
	t->state = S_INFLIGHT;
	c->st.posts++;
	return true;
}

static void status_count(uint64_t *by, int status)
{
	by[status >= 0 && (unsigned)status < NSTATUS ? (unsigned)status
						       : NSTATUS - 1]++;
}

static void tx_complete(struct cl *c, unsigned i, const struct sl_cqe *e,
			uint64_t now)
{
	struct tx *t = &c->tx[i];
	sl_addr_t d = c->shm->c[t->dst].addr;

	if (e->opcode != SL_OP_SEND || e->len != t->len || e->tag != t->tag ||
	    e->peer.node != d.node || e->peer.port != d.port) {
		c->st.compl_err++;
		report(&c->rep_compl, "completion error",
		       "send of seq %" PRIu64 " to client %u (%" PRIu64
		       " B, tag %#" PRIx64 ") completed as opcode %u, %" PRIu64
		       " B, tag %#" PRIx64 ", peer %08" PRIx32 ":%" PRIu32,
		       t->seq, t->dst, t->len, t->tag, e->opcode, e->len,
		       e->tag, e->peer.node, e->peer.port);
	}
	if (e->status == SL_NAK_BUSY || e->status == SL_NAK_RECEIVER_FULL) {
		uint64_t wait = BACKOFF_MIN_NS << (t->naks < 8 ? t->naks : 8);

		if (e->status == SL_NAK_BUSY)
			c->st.naks_busy++;
		else
			c->st.naks_full++;
		if (++t->naks > c->st.max_naks)
			c->st.max_naks = t->naks;
		t->tag |= TAG_RETRIED;
		t->due = now + (wait < BACKOFF_MAX_NS ? wait : BACKOFF_MAX_NS);
		t->state = S_READY;
		return;
	}
	t->state = S_IDLE;
	c->tx_busy--;
	if (e->status != SL_OK) {
		status_count(c->st.send_err, e->status);
		report(&c->rep_err, "error", "send of seq %" PRIu64
		       " (%" PRIu64 " B) to client %u: %s", t->seq,
		       t->len, t->dst, sl_strerror(e->status));
		return;
	}
	c->st.sent_ok++;
	c->st.sent_bytes += t->len;
	if (t->len > RNDV_HINT)
		c->st.sent_big++;
	bit_set(&c->r->ok_map[(uint64_t)c->me * c->r->words], t->seq);
	atomic_fetch_add(&c->shm->c[t->dst].expected_in, 1);
	progress(c, now);
}

/* Move the order check on over the receives completed in post order. */
static void order_advance(struct cl *c)
{
	struct ev *v;

	while (c->ev_head < c->rx_post_next &&
	       (v = &c->ev[c->ev_head & (EVCAP - 1)])->state) {
		if (v->state == 1 && !v->retried) {
			uint64_t *m = &c->maxseq[v->src];

			if (*m > v->seq + 1) {
				c->st.misorder++;
				report(&c->rep_order, "out of order",
				       "seq %" PRIu64 " from client %u"
				       " matched after its seq %" PRIu64
				       " (neither retried)", v->seq,
				       v->src, *m - 1);
			} else {
				*m = v->seq + 1;
			}
		}
		v->state = 0;
		c->ev_head++;
	}
}

/*
 * Check a delivered message.  Returns 1 when it is fine, 2 (skip the
 * order check) otherwise; counts everything.
 */
static int rx_verify(struct cl *c, const struct rx *x, const struct sl_cqe *e,
		     struct ev *v)
{
	const struct run *r = c->r;
	uint64_t seq = e->tag >> TAG_SEQ_SHIFT, key, want_len, off;
	int src = ht_find(c, e->peer);
	char why[200];
	uint8_t wb = 0;

	if (src < 0) {
		snprintf(why, sizeof(why), "from unknown address %08" PRIx32
			 ":%" PRIu32, e->peer.node, e->peer.port);
		goto bad;
	}
	if (seq >= r->seq_cap || (e->tag & TAG_RSVD_MASK)) {
		snprintf(why, sizeof(why), "from client %d: bad tag %#" PRIx64,
			 src, e->tag);
		goto bad;
	}
	v->src = (uint32_t)src;
	v->seq = seq;
	v->retried = e->tag & TAG_RETRIED;
	/* Identified: it counts as delivered, whatever its bytes. */
	c->distinct_in++;
	if (bit_set(&r->dl_map[(uint64_t)src * r->words], seq)) {
		c->distinct_in--;
		c->st.dups++;
		report(&c->rep_verify, "duplicate", "seq %" PRIu64
		       " from client %d delivered again (%" PRIu64 " B, tag %#"
		       PRIx64 ")", seq, src, e->len, e->tag);
	}
	c->st.delivered++;
	c->st.delivered_bytes += e->len;
	if (c->drained)
		c->st.late++;
	key = msg_key(r, (uint32_t)src, seq);
	want_len = msg_size(r, key);
	if (e->status != SL_OK) {
		snprintf(why, sizeof(why), "seq %" PRIu64 " from client %d: %s"
			 " (%" PRIu64 " B, sent %" PRIu64 " B)", seq, src,
			 sl_strerror(e->status), e->len, want_len);
		goto bad;
	}
	if (msg_dst(r, key) != c->me) {
		snprintf(why, sizeof(why), "seq %" PRIu64 " from client %d was"
			 " for client %u", seq, src, msg_dst(r, key));
		goto bad;
	}
	if (e->len != want_len ||
	    (e->tag & TAG_CLASS_MASK) != (msg_tag(r, key, seq, false) & TAG_CLASS_MASK)) {
		snprintf(why, sizeof(why), "seq %" PRIu64 " from client %d: %"
			 PRIu64 " B, tag %#" PRIx64 "; sent %" PRIu64 " B, tag"
			 " class %#" PRIx64, seq, src, e->len, e->tag, want_len,
			 msg_tag(r, key, seq, false) & TAG_CLASS_MASK);
		goto bad;
	}
	off = 0;
	if (e->len >= HDR_LEN) {
		if (get_le32(x->buf) != (uint32_t)src ||
		    get_le32(x->buf + 4) != (uint32_t)e->len ||
		    get_le64(x->buf + 8) != seq) {
			snprintf(why, sizeof(why), "seq %" PRIu64 " from client"
				 " %d: header says client %" PRIu32 ", %" PRIu32
				 " B, seq %" PRIu64, seq, src, get_le32(x->buf),
				 get_le32(x->buf + 4), get_le64(x->buf + 8));
			goto bad;
		}
		off = HDR_LEN;
	}
	off = content_check(x->buf, off, e->len, key, &wb);
	if (off < e->len) {
		snprintf(why, sizeof(why), "seq %" PRIu64 " from client %d (%"
			 PRIu64 " B): byte %" PRIu64 " is %#x, expected %#x",
			 seq, src, e->len, off, x->buf[off], wb);
		goto bad;
	}
	return 1;
bad:
	c->st.verify_fail++;
	report(&c->rep_verify, "verification failure", "message %s", why);
	return 2;
}

static void rx_complete(struct cl *c, unsigned i, const struct sl_cqe *e,
			uint64_t now)
{
	struct rx *x = &c->rx[i];
	struct ev *v = &c->ev[x->post_idx & (EVCAP - 1)];

	x->inflight = false;
	c->rx_idle++;
	memset(v, 0, sizeof(*v));
	if (e->opcode != SL_OP_RECV) {
		c->st.compl_err++;
		report(&c->rep_compl, "completion error", "receive completed"
		       " with opcode %u", e->opcode);
	}
	if (e->status == SL_NAK_BUSY) {
		/* The large message it met could not be moved and later ones
		 * had met later receives: the daemon hands the receive back
		 * rather than reorder.  It is posted again like any idle one. */
		c->st.recv_naks++;
		v->state = 2;
	} else if (e->status != SL_OK && e->status != SL_ERR_TRUNCATED) {
		status_count(c->st.recv_err, e->status);
		report(&c->rep_err, "error", "receive: %s",
		       sl_strerror(e->status));
		v->state = 2;
	} else {
		v->state = (uint8_t)rx_verify(c, x, e, v);
		if (v->state == 1)
			progress(c, now);
	}
	order_advance(c);
}

static void handle(struct cl *c, const struct sl_cqe *e, uint64_t now)
{
	unsigned slot = (unsigned)(e->user_ctx & 0x7fffffffu);
	uint32_t gen = (uint32_t)(e->user_ctx >> 32);
	bool recv = e->user_ctx & (1ull << 31);

	if (recv ? slot >= c->r->recvs || !c->rx[slot].inflight ||
		   c->rx[slot].gen != gen
		 : slot >= c->r->conc || c->tx[slot].state != S_INFLIGHT ||
		   c->tx[slot].gen != gen) {
		c->st.compl_err++;
		report(&c->rep_compl, "completion error", "completion for no"
		       " descriptor in flight (user_ctx %#" PRIx64
		       ", opcode %u, %s, %" PRIu64 " B, tag %#" PRIx64 ")",
		       e->user_ctx, e->opcode, sl_strerror(e->status),
		       e->len, e->tag);
		return;
	}
	if (recv)
		rx_complete(c, slot, e, now);
	else
		tx_complete(c, slot, e, now);
}

/* Poll and handle a batch; returns how many. */
static int poll_some(struct cl *c)
{
	struct sl_cqe e[BATCH];
	uint64_t now;
	int n = sl_poll(c->q, e, BATCH), i;

	if (n < 0)
		die("sl_poll: %s", strerror(-n));
	if (n > 0)
		now = now_ns();
	for (i = 0; i < n; i++)
		handle(c, &e[i], now);
	return n;
}

static void wait_q(struct cl *c, int ms)
{
	int rc = sl_wait(c->q, ms);

	if (rc < 0 && rc != -EINTR)
		die("sl_wait: %s", strerror(-rc));
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

static void client_open(struct cl *c)
{
	const struct run *r = c->r;
	const char *sock = r->socks[c->me / r->per_node];
	uint64_t arena, need;
	uint32_t depth = 16;
	unsigned i;
	int rc;

	while (depth < r->conc + r->recvs + 16)
		depth <<= 1;
	rc = sl_open(sock, &c->ctx);
	if (rc < 0)
		die("cannot connect to sluiced (%s): %s", sock, strerror(-rc));
	rc = sl_queue_open(c->ctx, 0, depth, &c->q);
	if (rc < 0)
		die("cannot open a queue (depth %" PRIu32 ") on %s: %s", depth,
		    sock, strerror(-rc));
	arena = sl_arena_size(c->q);
	need = arena_needed(r->conc + r->recvs, r->max_size);
	if (need > arena) {
		char have[32], want[32], sz[32];

		fmt_conf_bytes(have, sizeof(have), arena);
		fmt_conf_bytes(want, sizeof(want), need);
		fmt_size(sz, sizeof(sz), r->max_size);
		die("%u sends + %u receives of %s do not fit the arena of %s"
		    " (%s): lower --concurrency, --recvs or --max-size, or raise"
		    " [limits] arena_bytes to at least %s", r->conc, r->recvs,
		    sz, sock, have, want);
	}
	c->tx = calloc(r->conc, sizeof(*c->tx));
	c->rx = calloc(r->recvs, sizeof(*c->rx));
	c->ev = calloc(EVCAP, sizeof(*c->ev));
	c->maxseq = calloc(r->nclients, sizeof(*c->maxseq));
	if (!c->tx || !c->rx || !c->ev || !c->maxseq)
		die("out of memory");
	for (i = 0; i < r->conc; i++)
		if (!(c->tx[i].buf = sl_alloc(c->q, r->max_size)))
			die("arena of %s full after %u buffers", sock, i);
	for (i = 0; i < r->recvs; i++)
		if (!(c->rx[i].buf = sl_alloc(c->q, r->max_size)))
			die("arena of %s full after %u buffers", sock,
			    r->conc + i);
	c->rx_idle = r->recvs;
}

static void client_run(struct cl *c)
{
	const struct run *r = c->r;
	struct shm *s = c->shm;
	uint64_t t_end = UINT64_MAX, timeout = r->timeout_s * 1000000000ull;
	bool stop_sending = false, counted = false, sq_full;
	unsigned i;

	if (r->duration_s)
		t_end = s->t0 + r->duration_s * 1000000000ull;
	for (;;) {
		uint64_t now = now_ns(), due = UINT64_MAX;
		int ms;

		if (atomic_load(&s->abort)) {
			c->st.aborted = true;
			break;
		}
		sq_full = !rx_post_idle(c);
		if (!stop_sending && now >= t_end)
			stop_sending = true;
		for (i = 0; i < r->conc; i++) {
			struct tx *t = &c->tx[i];

			if (t->state == S_IDLE && !stop_sending) {
				if (c->next_seq >= r->seq_cap) {
					/* --messages done, or the bookkeeping full */
					stop_sending = true;
					c->st.capped = !r->messages;
				} else {
					tx_start(c, t);
				}
			}
			if (t->state != S_READY)
				continue;
			if (t->due > now) {
				if (t->due < due)
					due = t->due;
			} else if (!sq_full && !tx_post(c, i)) {
				sq_full = true;
			}
		}
		if (poll_some(c) > 0)
			continue;

		/* Nothing completed: done, hung, or time to sleep. */
		if (stop_sending && !counted && c->tx_busy == 0) {
			counted = true;
			c->st.t_sent = now;
			atomic_fetch_add(&s->senders_done, 1);
		}
		if (counted && atomic_load(&s->senders_done) == r->nclients &&
		    c->distinct_in >= atomic_load(&s->c[c->me].expected_in))
			break;
		if (now > atomic_load(&s->last_progress) + timeout) {
			c->st.timed_out = true;
			break;
		}
		if (sq_full) {
			wait_q(c, 1);
		} else if (due != UINT64_MAX && due - now < 1000000) {
			/* A back-off ends within the millisecond. */
			if (sl_wait(c->q, 0) == 0)
				sleep_ns(due - now);
		} else {
			ms = WAIT_MAX_MS;
			if (due != UINT64_MAX && (due - now) / 1000000 < (uint64_t)ms)
				ms = (int)((due - now) / 1000000);
			if (!stop_sending && t_end - now < (uint64_t)ms * 1000000)
				ms = (int)((t_end - now) / 1000000) + 1;
			wait_q(c, ms);
		}
	}
	c->st.t_drained = now_ns();
	if (!counted)
		c->st.t_sent = c->st.t_drained;
	for (i = 0; i < r->conc; i++)
		if (c->tx[i].state != S_IDLE)
			c->st.unfinished++;
	{
		uint64_t want = atomic_load(&s->c[c->me].expected_in);

		c->st.missing = want > c->distinct_in ? want - c->distinct_in : 0;
	}
	c->drained = true;
	atomic_fetch_add(&s->drained, 1);
	/* Anything that still arrives is counted (late, duplicated, ...). */
	while (!atomic_load(&s->close) && !atomic_load(&s->abort))
		if (poll_some(c) == 0)
			wait_q(c, WAIT_MAX_MS);
}

static int client_main(struct run *r, unsigned me)
{
	static char name[64], errbuf[1024];
	struct shm *s = r->shm;
	struct cl c;

	snprintf(name, sizeof(name), PROG "[client %u]", me);
	tool_name = name;
	/* Whole lines: the clients share the parent's stderr. */
	setvbuf(stderr, errbuf, _IOLBF, sizeof(errbuf));
	memset(&c, 0, sizeof(c));
	c.r = r;
	c.shm = s;
	c.me = me;
	client_open(&c);
	s->c[me].addr = sl_queue_addr(c.q);
	atomic_fetch_add(&s->registered, 1);
	while (!atomic_load(&s->go)) {
		if (atomic_load(&s->abort))
			_exit(1);
		sleep_ns(1000000);
	}
	ht_build(&c);
	client_run(&c);
	c.st.seqs = c.next_seq;
	c.st.done = true;
	s->c[me].st = c.st;
	sl_queue_close(c.q);
	sl_close(c.ctx);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Daemons                                                              */
/* ------------------------------------------------------------------ */

struct dmem {
	pid_t pid;
	const char *how;
	uint64_t before, peak, end, after;		/* VmRSS, KiB */
	uint64_t anon_before, anon_end, anon_after;	/* RssAnon, KiB */
};

/* The pid of the process listening on UNIX socket @path, or 0. */
static pid_t peer_pid(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pid_t pid = 0;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return 0;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		pid = cred.pid;
	close(fd);
	return pid;
}

/* KiB of "@key:" in /proc/@pid/status, or 0 when unreadable. */
static uint64_t proc_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	uint64_t v = 0;
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			v = strtoull(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static void fmt_kb(char *b, size_t n, uint64_t kb)
{
	if (kb == 0)
		snprintf(b, n, "?");
	else
		snprintf(b, n, "%.1f MiB", (double)kb / 1024);
}

/* ------------------------------------------------------------------ */
/* Parent                                                               */
/* ------------------------------------------------------------------ */

struct totals {
	struct cstats t;
	uint64_t lost, phantom;
	unsigned timed_out, capped, aborted, failed;
};

static void add_stats(struct cstats *t, const struct cstats *s)
{
	unsigned i;

	t->seqs += s->seqs;
	t->posts += s->posts;
	t->sent_ok += s->sent_ok;
	t->sent_bytes += s->sent_bytes;
	t->sent_big += s->sent_big;
	t->naks_busy += s->naks_busy;
	t->naks_full += s->naks_full;
	if (s->max_naks > t->max_naks)
		t->max_naks = s->max_naks;
	for (i = 0; i < NSTATUS; i++) {
		t->send_err[i] += s->send_err[i];
		t->recv_err[i] += s->recv_err[i];
	}
	t->recv_naks += s->recv_naks;
	t->delivered += s->delivered;
	t->delivered_bytes += s->delivered_bytes;
	t->dups += s->dups;
	t->verify_fail += s->verify_fail;
	t->misorder += s->misorder;
	t->compl_err += s->compl_err;
	t->unfinished += s->unfinished;
	t->missing += s->missing;
	t->late += s->late;
	if (s->t_drained > t->t_drained)
		t->t_drained = s->t_drained;
	if (s->t_sent > t->t_sent)
		t->t_sent = s->t_sent;
}

/* Lost (sent OK, not delivered) and phantom (the reverse) of client @i. */
static void bitmap_diff(const struct run *r, unsigned i, uint64_t seqs,
			uint64_t *lost, uint64_t *phantom)
{
	_Atomic uint64_t *ok = &r->ok_map[(uint64_t)i * r->words];
	_Atomic uint64_t *dl = &r->dl_map[(uint64_t)i * r->words];
	uint64_t w, n = (seqs + 63) / 64, first = UINT64_MAX;

	for (w = 0; w < n && w < r->words; w++) {
		uint64_t o = atomic_load(&ok[w]), d = atomic_load(&dl[w]);
		uint64_t l = o & ~d;

		*lost += (uint64_t)__builtin_popcountll(l);
		*phantom += (uint64_t)__builtin_popcountll(d & ~o);
		if (l && first == UINT64_MAX)
			first = w * 64 + (uint64_t)__builtin_ctzll(l);
	}
	/* Anything delivered past the seqs the sender says it started. */
	for (; w < r->words; w++)
		*phantom += (uint64_t)__builtin_popcountll(atomic_load(&dl[w]));
	if (first != UINT64_MAX) {
		uint64_t key = msg_key(r, i, first);

		fprintf(stderr, PROG ": lost: client %u seq %" PRIu64 " (%"
			PRIu64 " B to client %u) sent OK, never delivered\n",
			i, first, msg_size(r, key), msg_dst(r, key));
	}
}

static void print_status_counts(const char *label, const uint64_t *by)
{
	bool any = false;
	unsigned i;

	printf("%-30s", label);
	for (i = 0; i < NSTATUS; i++)
		if (by[i]) {
			printf("%s%" PRIu64 " %s", any ? ", " : "", by[i],
			       i == NSTATUS - 1 ? "other" : sl_strerror((int)i));
			any = true;
		}
	printf("%s\n", any ? "" : "0");
}

static uint64_t sum(const uint64_t *by)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < NSTATUS; i++)
		n += by[i];
	return n;
}

static void sample_rss(const struct run *r, struct dmem *dm)
{
	unsigned i;

	for (i = 0; i < r->nnodes; i++) {
		uint64_t v = proc_kb(dm[i].pid, "VmRSS");

		if (v > dm[i].peak)
			dm[i].peak = v;
	}
}

static void print_client(const struct run *r, unsigned i,
			 const struct cstats *s)
{
	printf("  client %3u node %2u %08" PRIx32 ":%-5" PRIu32 " sent %9"
	       PRIu64 " delivered %9" PRIu64 " naks %6" PRIu64 "/%-6" PRIu64
	       " max-naks %4" PRIu64 "%s%s%s\n", i, i / r->per_node,
	       r->shm->c[i].addr.node, r->shm->c[i].addr.port, s->sent_ok,
	       s->delivered, s->naks_busy, s->naks_full, s->max_naks,
	       s->timed_out ? " TIMED-OUT" : "", s->capped ? " CAPPED" : "",
	       !s->done ? " NO-REPORT" : "");
}

static int run_parent(struct run *r)
{
	struct shm *s = r->shm;
	struct dmem *dm = calloc(r->nnodes, sizeof(*dm));
	pid_t *pids = calloc(r->nclients, sizeof(*pids));
	int *wstat = calloc(r->nclients, sizeof(*wstat));
	bool *exited = calloc(r->nclients, sizeof(*exited));
	unsigned i, nexited = 0, failed = 0;
	uint64_t t_kill = 0, next_sample = 0, elapsed_ns;
	bool end_measured = false;
	struct totals tot;
	char sz[32];
	int rc = 0;

	if (!dm || !pids || !wstat || !exited)
		die("out of memory");
	for (i = 0; i < r->nnodes; i++) {
		if (i < r->ndpids) {
			dm[i].pid = r->dpids[i];
			dm[i].how = "--daemon-pid";
		} else {
			dm[i].pid = peer_pid(r->socks[i]);
			dm[i].how = "SO_PEERCRED";
		}
		dm[i].before = dm[i].peak = proc_kb(dm[i].pid, "VmRSS");
		dm[i].anon_before = proc_kb(dm[i].pid, "RssAnon");
	}

	fmt_size(sz, sizeof(sz), r->max_size);
	printf(PROG ": %u node%s x %u clients, %u sends in flight and %u"
	       " receives posted per client, sizes 0..%s, %u tags, seed %"
	       PRIu64 ", ", r->nnodes, r->nnodes > 1 ? "s" : "", r->per_node,
	       r->conc, r->recvs, sz, r->tags, r->seed);
	if (r->messages)
		printf("%" PRIu64 " messages per client\n", r->messages);
	else
		printf("%" PRIu64 " s\n", r->duration_s);
	fflush(stdout);
	fflush(stderr);

	for (i = 0; i < r->nclients; i++) {
		pid_t p = fork();

		if (p < 0) {
			atomic_store(&s->abort, 1);
			die("fork: %s", strerror(errno));
		}
		if (p == 0)
			_exit(client_main(r, i));
		pids[i] = p;
	}

	/*
	 * Start when every client is registered; then watch: a client that
	 * exits early aborts the run, the end of the traffic is measured
	 * when all drained, and a run that outlives its clients' own
	 * timeout by 10 s is killed.
	 */
	for (;;) {
		uint64_t now = now_ns();

		for (i = 0; i < r->nclients; i++) {
			if (exited[i] || waitpid(pids[i], &wstat[i], WNOHANG) <= 0)
				continue;
			exited[i] = true;
			nexited++;
			if (!WIFEXITED(wstat[i]) || WEXITSTATUS(wstat[i]) != 0 ||
			    !s->c[i].st.done) {
				if (!atomic_load(&s->abort))
					fprintf(stderr, PROG ": client %u (pid %d)"
						" failed: %s %d; stopping the"
						" others\n", i, (int)pids[i],
						WIFEXITED(wstat[i]) ? "exit status"
						: "signal",
						WIFEXITED(wstat[i]) ? WEXITSTATUS(wstat[i])
						: WTERMSIG(wstat[i]));
				failed++;
				atomic_store(&s->abort, 1);
			}
		}
		if (nexited == r->nclients)
			break;
		if (!atomic_load(&s->go) &&
		    atomic_load(&s->registered) == r->nclients) {
			s->t0 = now_ns();
			atomic_store(&s->last_progress, s->t0);
			atomic_store(&s->go, 1);
		}
		if (atomic_load(&s->go) && now >= next_sample) {
			sample_rss(r, dm);
			next_sample = now + SAMPLE_NS;
		}
		if (!end_measured && atomic_load(&s->drained) == r->nclients) {
			for (i = 0; i < r->nnodes; i++) {
				dm[i].end = proc_kb(dm[i].pid, "VmRSS");
				dm[i].anon_end = proc_kb(dm[i].pid, "RssAnon");
				if (dm[i].end > dm[i].peak)
					dm[i].peak = dm[i].end;
			}
			end_measured = true;
			atomic_store(&s->close, 1);
		}
		if (atomic_load(&s->go) && !t_kill &&
		    now > atomic_load(&s->last_progress) +
			  (r->timeout_s + 10) * 1000000000ull) {
			fprintf(stderr, PROG ": no progress for %" PRIu64 " s and"
				" the clients did not stop: stopping them\n",
				r->timeout_s + 10);
			atomic_store(&s->abort, 1);
			t_kill = now + 2000000000ull;
		}
		if (t_kill && now > t_kill) {
			for (i = 0; i < r->nclients; i++)
				if (!exited[i])
					kill(pids[i], SIGKILL);
			t_kill = UINT64_MAX;
		}
		sleep_ns(10000000);
	}
	if (!atomic_load(&s->go)) {
		printf("result: FAILED (%u clients failed before the start)\n",
		       failed);
		rc = 1;
		goto out;
	}
	/* Let the daemon release the sessions before "after". */
	sleep_ns(300000000);
	for (i = 0; i < r->nnodes; i++) {
		dm[i].after = proc_kb(dm[i].pid, "VmRSS");
		dm[i].anon_after = proc_kb(dm[i].pid, "RssAnon");
	}

	memset(&tot, 0, sizeof(tot));
	for (i = 0; i < r->nclients; i++) {
		const struct cstats *c = &s->c[i].st;

		if (!c->done) {
			tot.failed++;
			continue;
		}
		add_stats(&tot.t, c);
		bitmap_diff(r, i, c->seqs, &tot.lost, &tot.phantom);
		tot.timed_out += c->timed_out;
		tot.capped += c->capped;
		tot.aborted += c->aborted;
	}
	if (failed > tot.failed)
		tot.failed = failed;

	if (r->verbose)
		for (i = 0; i < r->nclients; i++)
			print_client(r, i, &s->c[i].st);
	elapsed_ns = tot.t.t_drained > s->t0 ? tot.t.t_drained - s->t0 : 1;
	printf("%-30s%" PRIu64 " messages, %" PRIu64 " bytes (%" PRIu64
	       " above 64 KiB); %" PRIu64 " posts with the retries\n",
	       "sent (completed OK)", tot.t.sent_ok, tot.t.sent_bytes,
	       tot.t.sent_big, tot.t.posts);
	printf("%-30s%" PRIu64 " messages, %" PRIu64 " bytes\n", "delivered",
	       tot.t.delivered, tot.t.delivered_bytes);
	printf("%-30s%" PRIu64 " %s, %" PRIu64 " %s (most for one message: %"
	       PRIu64 ")\n", "retried NAKs", tot.t.naks_busy,
	       sl_strerror(SL_NAK_BUSY), tot.t.naks_full,
	       sl_strerror(SL_NAK_RECEIVER_FULL), tot.t.max_naks);
	printf("%-30s%" PRIu64 "\n", "lost", tot.lost);
	printf("%-30s%" PRIu64 "\n", "duplicated", tot.t.dups);
	printf("%-30s%" PRIu64 "\n", "out of order per source", tot.t.misorder);
	printf("%-30s%" PRIu64 "\n", "verification failures", tot.t.verify_fail);
	printf("%-30s%" PRIu64 "\n", "delivered without an OK send", tot.phantom);
	printf("%-30s%" PRIu64 " (+ %" PRIu64 " sends never completed)\n",
	       "completion errors", tot.t.compl_err, tot.t.unfinished);
	print_status_counts("send errors", tot.t.send_err);
	print_status_counts("receive errors", tot.t.recv_err);
	printf("%-30s%" PRIu64 "\n", "receives NAKed, reposted", tot.t.recv_naks);
	if (tot.t.late)
		printf("%-30s%" PRIu64 "\n", "late deliveries", tot.t.late);
	printf("%-30s%.0f messages/s, %.1f MB/s over %.2f s (sending %.2f s,"
	       " draining %.2f s)\n", "throughput (delivered)",
	       (double)tot.t.delivered * 1e9 / (double)elapsed_ns,
	       (double)tot.t.delivered_bytes * 1e3 / (double)elapsed_ns,
	       (double)elapsed_ns / 1e9,
	       (double)((tot.t.t_sent > s->t0 ? tot.t.t_sent : s->t0) - s->t0) / 1e9,
	       (double)(tot.t.t_drained > tot.t.t_sent ?
			tot.t.t_drained - tot.t.t_sent : 0) / 1e9);
	for (i = 0; i < r->nnodes; i++) {
		char b[32], p[32], e[32], a[32], ab[32], ae[32], aa[32];
		char pid[48] = "pid unknown";

		fmt_kb(b, sizeof(b), dm[i].before);
		fmt_kb(p, sizeof(p), dm[i].peak);
		fmt_kb(e, sizeof(e), dm[i].end);
		fmt_kb(a, sizeof(a), dm[i].after);
		fmt_kb(ab, sizeof(ab), dm[i].anon_before);
		fmt_kb(ae, sizeof(ae), dm[i].anon_end);
		fmt_kb(aa, sizeof(aa), dm[i].anon_after);
		if (dm[i].pid > 0)
			snprintf(pid, sizeof(pid), "pid %d (%s)", (int)dm[i].pid,
				 dm[i].how);
		printf("daemon %u RSS                  %s %s: before %s, peak %s,"
		       " end of traffic %s, after close %s; anon %s -> %s ->"
		       " %s\n", i, pid, r->socks[i], b, p, e, a, ab, ae, aa);
	}
	if (tot.t.missing)
		printf("%-30s%" PRIu64 "\n", "missing at the end", tot.t.missing);
	if (tot.capped)
		printf("note: %u clients stopped at the bookkeeping limit of %"
		       PRIu64 " messages\n", tot.capped, r->seq_cap);

	if (tot.lost || tot.t.dups || tot.t.misorder || tot.t.verify_fail ||
	    tot.phantom || tot.t.compl_err || tot.t.unfinished ||
	    tot.t.missing || sum(tot.t.send_err) || sum(tot.t.recv_err) ||
	    tot.timed_out || tot.failed || tot.aborted)
		rc = 1;
	if (rc) {
		printf("result: FAILED");
		if (tot.timed_out)
			printf(" (%u clients gave up after %" PRIu64 " s without"
			       " progress anywhere: a hang, or messages lost)",
			       tot.timed_out, r->timeout_s);
		if (tot.failed)
			printf(" (%u clients failed)", tot.failed);
		printf("\n");
	} else {
		printf("result: OK\n");
	}
out:
	free(dm);
	free(pids);
	free(wstat);
	free(exited);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Command line                                                         */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [--socket PATH[,PATH...]]... [--clients N]\n"
		"                     [--concurrency K] [--recvs R] [--max-size BYTES]\n"
		"                     [--tags T] [--duration S | --messages N] [--seed N]\n"
		"                     [--timeout S] [--daemon-pid PID[,PID...]]... [--verbose]\n"
		"\n"
		"Stress test over libsluice: N clients per node (each a process with\n"
		"its own context and queue) send messages of random sizes and tags to\n"
		"random clients of all nodes, verify every byte received, and count\n"
		"losses, duplicates, reordering and daemon memory.\n"
		"  --socket PATH     a node: its daemon's control socket; repeat the\n"
		"                    option or separate paths with commas (default one\n"
		"                    node: $SLUICE_SOCKET, else " SL_DEFAULT_SOCKET ")\n"
		"  --clients N       clients per node, 1..%u in all (default 2)\n"
		"  --concurrency K   sends in flight per client, 1..%u (default 16)\n"
		"  --recvs R         wildcard receives posted per client, each of\n"
		"                    --max-size bytes, 1..%u (default 2 x K)\n"
		"  --max-size BYTES  largest message, 0..1G, K/M/G suffix allowed\n"
		"                    (default 1M); sizes are log-uniform over\n"
		"                    0..BYTES, so mostly small: 64K keeps every\n"
		"                    message eager at the default eager_max, and\n"
		"                    with 1M about 23%% go by rendezvous\n"
		"  --tags T          distinct tag values, 1..%u (default 16)\n"
		"  --duration S      send for S seconds, 1..%u (default 10)\n"
		"  --messages N      instead: send N messages per client, 1..%llu\n"
		"  --seed N          seed of sizes, destinations, tags and bytes\n"
		"                    (default 1); a message is a function of (seed,\n"
		"                    source, sequence number)\n"
		"  --timeout S       no message completing OK anywhere for S seconds\n"
		"                    is a hang: the run stops and fails (default 30)\n"
		"  --daemon-pid PID  the daemons' pids, in --socket order, for the RSS\n"
		"                    figures (default: SO_PEERCRED of a connection to\n"
		"                    each socket)\n"
		"  --verbose         one line per client too\n"
		"  --help            this text\n"
		"Each client needs (K + R) x BYTES of its queue's arena, [limits]\n"
		"arena_bytes of sluiced (default 64M).  NAKed sends are retried with\n"
		"back-off (100 us doubling to 10 ms), same sequence number.\n"
		"Prints sent, delivered, retried NAKs by status, lost, duplicated,\n"
		"out of order per source (neither message retried), verification\n"
		"failures, throughput and each daemon's RSS before, at its peak, at\n"
		"the end of the traffic and after the clients closed.\n"
		"Exit status: 0 all checks passed, 1 any loss, duplicate, misorder,\n"
		"verification failure, error, hang or failed client, 2 bad usage.\n",
		MAX_CLIENTS, CONC_MAX, RECVS_MAX, TAGS_MAX, DURATION_MAX,
		(unsigned long long)MESSAGES_MAX);
}

/* The copies split_list() cut up, freed at the end of main(). */
static char **copies;
static unsigned ncopies;

/* Append the comma-separated items of @arg to *@v (*@n of them). */
static void split_list(const char *opt, const char *arg, char ***v,
		       unsigned *n, unsigned cap)
{
	char *copy = strdup(arg), *save = NULL, *tok, **grown;

	grown = realloc(copies, (ncopies + 1) * sizeof(*copies));
	if (!copy || !grown)
		die("out of memory");
	copies = grown;
	copies[ncopies++] = copy;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*n == cap)
			bad_usage("%s: at most %u", opt, cap);
		(*v)[(*n)++] = tok;
	}
	if (!*n)
		bad_usage("%s: empty list", opt);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "clients", required_argument, NULL, 'c' },
		{ "concurrency", required_argument, NULL, 'k' },
		{ "recvs", required_argument, NULL, 'r' },
		{ "max-size", required_argument, NULL, 'z' },
		{ "tags", required_argument, NULL, 'T' },
		{ "duration", required_argument, NULL, 'd' },
		{ "messages", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 't' },
		{ "daemon-pid", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run r = { .per_node = 2, .conc = 16, .max_size = 1u << 20,
			 .tags = 16, .seed = 1, .timeout_s = 30 };
	char **pidstr = calloc(MAX_NODES, sizeof(*pidstr));
	unsigned npid = 0, i;
	uint64_t v, dur = 0;
	size_t shm_len, map_len;
	uint8_t *mem;
	int c;

	tool_name = PROG;
	r.socks = calloc(MAX_NODES, sizeof(*r.socks));
	r.dpids = calloc(MAX_NODES, sizeof(*r.dpids));
	if (!r.socks || !r.dpids || !pidstr)
		die("out of memory");
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			split_list("--socket", optarg, &r.socks, &r.nnodes,
				   MAX_NODES);
			break;
		case 'c':
			if (parse_u64(optarg, 1, MAX_CLIENTS, &v) < 0)
				bad_usage("bad --clients '%s' (1..%u)", optarg,
					  MAX_CLIENTS);
			r.per_node = (unsigned)v;
			break;
		case 'k':
			if (parse_u64(optarg, 1, CONC_MAX, &v) < 0)
				bad_usage("bad --concurrency '%s' (1..%u)", optarg,
					  CONC_MAX);
			r.conc = (unsigned)v;
			break;
		case 'r':
			if (parse_u64(optarg, 1, RECVS_MAX, &v) < 0)
				bad_usage("bad --recvs '%s' (1..%u)", optarg,
					  RECVS_MAX);
			r.recvs = (unsigned)v;
			break;
		case 'z':
			if (parse_u64(optarg, 0, SL_MSG_MAX, &r.max_size) < 0)
				bad_usage("bad --max-size '%s' (0..1G, K/M/G"
					  " suffix allowed)", optarg);
			break;
		case 'T':
			if (parse_u64(optarg, 1, TAGS_MAX, &v) < 0)
				bad_usage("bad --tags '%s' (1..%u)", optarg,
					  TAGS_MAX);
			r.tags = (unsigned)v;
			break;
		case 'd':
			if (parse_u64(optarg, 1, DURATION_MAX, &dur) < 0)
				bad_usage("bad --duration '%s' (1..%u seconds)",
					  optarg, DURATION_MAX);
			break;
		case 'n':
			if (parse_u64(optarg, 1, MESSAGES_MAX, &r.messages) < 0)
				bad_usage("bad --messages '%s' (1..%llu)", optarg,
					  (unsigned long long)MESSAGES_MAX);
			break;
		case 'S':
			if (parse_u64(optarg, 0, UINT64_MAX, &r.seed) < 0)
				bad_usage("bad --seed '%s' (an unsigned number)",
					  optarg);
			break;
		case 't':
			if (parse_u64(optarg, 1, 3600, &r.timeout_s) < 0)
				bad_usage("bad --timeout '%s' (1..3600 seconds)",
					  optarg);
			break;
		case 'p':
			split_list("--daemon-pid", optarg, &pidstr, &npid,
				   MAX_NODES);
			break;
		case 'v':
			r.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			/* getopt_long has already said what was wrong. */
			return try_help();
		}
	}
	reject_operands(argc, argv);
	if (dur && r.messages)
		bad_usage("--duration and --messages are exclusive");
	if (!r.messages)
		r.duration_s = dur ? dur : 10;
	if (!r.nnodes) {
		const char *env = getenv("SLUICE_SOCKET");

		r.socks[r.nnodes++] = (char *)(env && *env ? env : SL_DEFAULT_SOCKET);
	}
	if (npid && npid != r.nnodes)
		bad_usage("--daemon-pid: %u pids for %u sockets", npid, r.nnodes);
	for (i = 0; i < npid; i++) {
		if (parse_u64(pidstr[i], 1, INT32_MAX, &v) < 0)
			bad_usage("--daemon-pid: bad pid '%s'", pidstr[i]);
		r.dpids[i] = (pid_t)v;
	}
	r.ndpids = npid;
	if ((uint64_t)r.nnodes * r.per_node > MAX_CLIENTS)
		bad_usage("%u nodes x %u clients: at most %u clients in all",
			  r.nnodes, r.per_node, MAX_CLIENTS);
	r.nclients = r.nnodes * r.per_node;
	if (!r.recvs)
		r.recvs = 2 * r.conc < RECVS_MAX ? 2 * r.conc : RECVS_MAX;
	r.seed_mix = mix64(r.seed ^ 0x243f6a8885a308d3ull);
	if (r.messages) {
		r.seq_cap = r.messages;
	} else {
		r.seq_cap = r.duration_s * SEQS_PER_SEC;
		if (r.seq_cap > SEQS_CAP)
			r.seq_cap = SEQS_CAP;
	}
	r.words = (r.seq_cap + 63) / 64;

	/* Everything the clients share, mapped before the fork. */
	shm_len = (sizeof(struct shm) + r.nclients * sizeof(struct cslot) + 63) &
		  ~(size_t)63;
	map_len = shm_len + 2 * (size_t)r.nclients * r.words * sizeof(uint64_t);
	mem = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		die("cannot map %zu bytes of shared memory: %s", map_len,
		    strerror(errno));
	r.shm = (struct shm *)mem;
	r.ok_map = (_Atomic uint64_t *)(mem + shm_len);
	r.dl_map = r.ok_map + (size_t)r.nclients * r.words;
	c = run_parent(&r);
	munmap(mem, map_len);
	for (i = 0; i < ncopies; i++)
		free(copies[i]);
	free(copies);
	free(pidstr);
	free(r.socks);
	free(r.dpids);
	return c;
}
