/*
 * testutil.c - helpers shared by the integration tests; see testutil.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* ---- client processes ---- */

const char *cl_exit_name(int code)
{
	switch (code) {
	case CL_OK: return "ok";
	case CL_E_SETUP: return "setup failed";
	case CL_E_POST: return "post failed";
	case CL_E_POLL: return "poll/wait failed";
	case CL_E_STATUS: return "wrong completion status";
	case CL_E_CTX: return "unknown, duplicate or extra completion";
	case CL_E_META: return "wrong peer/tag/length/opcode";
	case CL_E_DATA: return "payload mismatch";
	case CL_E_ORDER: return "matching order violated";
	case CL_E_TIMEOUT: return "no progress (timeout)";
	case CL_E_MISSING: return "completions missing";
	case CL_E_SYNC: return "coordination pipe failed";
	case CL_E_STRANDED: return "receive stranded";
	case CL_E_DUP: return "message delivered twice";
	case 126: return "fork setup failed";
	default: return "unknown exit code";
	}
}

const char *cl_name = "test";

/*
 * Last words: each client's cl_die() message, kept where the test process
 * can read it after the reap.  The table is MAP_SHARED and mapped when the
 * program starts (a constructor), so every process forked later (Check's
 * test process, the clients, their children) shares it.  A dying client
 * takes the next slot (a ring: the oldest words are overwritten after
 * CL_WORDS_SLOTS deaths), fills it, then publishes its pid; the reader
 * takes the newest slot naming the pid and clears it (pids are reused).
 */
#define CL_WORDS_SLOTS 64

struct cl_words_slot {
	pid_t pid;		/* 0: free or being written */
	int code;
	uint64_t seq;
	char text[CL_WORDS_MAX];
};

struct cl_words_table {
	uint64_t next;
	struct cl_words_slot slot[CL_WORDS_SLOTS];
};

static struct cl_words_table *cl_words;

__attribute__((constructor)) static void cl_words_map(void)
{
	void *p = mmap(NULL, sizeof(*cl_words), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	/* Without the table the reapers only lose the words, not the code. */
	cl_words = p == MAP_FAILED ? NULL : p;
}

static void cl_words_put(int code, const char *text)
{
	struct cl_words_slot *s;
	uint64_t seq;

	if (!cl_words)
		return;
	seq = __atomic_fetch_add(&cl_words->next, 1, __ATOMIC_RELAXED);
	s = &cl_words->slot[seq % CL_WORDS_SLOTS];
	__atomic_store_n(&s->pid, 0, __ATOMIC_RELEASE);
	s->code = code;
	s->seq = seq;
	snprintf(s->text, sizeof(s->text), "%s", text);
	__atomic_store_n(&s->pid, getpid(), __ATOMIC_RELEASE);
}

bool cl_last_words(pid_t pid, int *code, char *buf, size_t cap)
{
	struct cl_words_slot *best = NULL;
	unsigned i;

	if (!cl_words || pid <= 0)
		return false;
	for (i = 0; i < CL_WORDS_SLOTS; i++) {
		struct cl_words_slot *s = &cl_words->slot[i];

		if (__atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) == pid &&
		    (!best || s->seq > best->seq))
			best = s;
	}
	if (!best)
		return false;
	if (code)
		*code = best->code;
	snprintf(buf, cap, "%s", best->text);
	__atomic_store_n(&best->pid, 0, __ATOMIC_RELEASE);
	return true;
}

void cl_die(int code, const char *fmt, ...)
{
	char text[CL_WORDS_MAX], line[CL_WORDS_MAX + 128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	cl_words_put(code, text);
	/* One write(2): lines of clients dying together do not interleave. */
	n = snprintf(line, sizeof(line), "[client %s pid %d] %s (%s)\n", cl_name, (int)getpid(),
		     text, cl_exit_name(code));
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n
					     : sizeof(line) - 1);
	_exit(code);
}

void cl_open(struct cl *c, const struct h_daemon *d, uint32_t port, uint32_t depth)
{
	int rc = sl_open(d->sock, &c->ctx);

	CL_REQUIRE(rc == 0, CL_E_SETUP, "sl_open %s: %s", d->sock, strerror(-rc));
	rc = sl_queue_open(c->ctx, port, depth, &c->q);
	CL_REQUIRE(rc == 0, CL_E_SETUP, "sl_queue_open port %u: %s", port, strerror(-rc));
	c->addr = sl_queue_addr(c->q);
	CL_REQUIRE(c->addr.node == d->node && (port == 0 || c->addr.port == port), CL_E_SETUP,
		   "queue address %08x:%u, want %08x:%u", c->addr.node, c->addr.port, d->node,
		   port);
}

void cl_close(struct cl *c)
{
	int rc = sl_queue_close(c->q);

	CL_REQUIRE(rc == 0, CL_E_SETUP, "sl_queue_close: %s", strerror(-rc));
	sl_close(c->ctx);
}

void cl_close_fd(int fd)
{
	CL_REQUIRE(close(fd) == 0, CL_E_SYNC, "close %d: %s", fd, strerror(errno));
}

void cl_expect_quiet(struct cl *c, int ms)
{
	struct sl_cqe cqe;
	int rc = h_wait_cqe(c->q, &cqe, ms);

	CL_REQUIRE(rc == 0, CL_E_CTX, "extra completion: rc %d ctx %#llx status %s", rc,
		   (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
}

void cl_signal(int fd, const char *what)
{
	int rc = h_write_byte(fd, 1);

	CL_REQUIRE(rc == 0, CL_E_SYNC, "%s: %s", what, strerror(-rc));
}

void cl_await(int fd, int ms, const char *what)
{
	uint8_t x;
	int rc = h_read_byte(fd, &x, ms);

	CL_REQUIRE(rc == 1, CL_E_SYNC, "%s: rc %d", what, rc);
}

/* ---- test process: shared memory ---- */

void *shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	H_ASSERT(p != MAP_FAILED, "mmap: %s", strerror(errno));
	return p;
}

void shared_free(void *p, size_t len)
{
	H_ASSERT(munmap(p, len) == 0, "munmap: %s", strerror(errno));
}

/* ---- deterministic randomness and payloads ---- */

uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t rng_next(struct rng *r)
{
	return mix64(r->s++);
}

uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * n) >> 32);
}

static uint64_t msg_stream_seed(uint32_t src, uint32_t seq, uint64_t tag, size_t len)
{
	return mix64(((uint64_t)src << 40) ^ ((uint64_t)seq << 8) ^ mix64(tag) ^
		     ((uint64_t)len << 20)) | 1;
}

static uint64_t xs_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

void msg_fill(uint8_t *p, size_t len, uint32_t src, uint32_t seq, uint64_t tag)
{
	uint64_t s = msg_stream_seed(src, seq, tag, len), v;
	size_t off = 0;

	if (len >= sizeof(struct msg_hdr)) {
		struct msg_hdr h = { MSG_MAGIC, src, seq, tag, len };

		memcpy(p, &h, sizeof(h));
		off = sizeof(h);
	}
	for (; off + 8 <= len; off += 8) {
		v = xs_next(&s);
		memcpy(p + off, &v, 8);
	}
	if (off < len) {
		v = xs_next(&s);
		memcpy(p + off, &v, len - off);
	}
}

bool msg_check_prefix(const uint8_t *p, size_t n, size_t len, uint32_t src, uint32_t seq,
		      uint64_t tag)
{
	uint64_t s = msg_stream_seed(src, seq, tag, len), v;
	size_t off = 0;

	if (len >= sizeof(struct msg_hdr)) {
		struct msg_hdr h = { MSG_MAGIC, src, seq, tag, len };
		size_t k = n < sizeof(h) ? n : sizeof(h);

		if (memcmp(p, &h, k))
			return false;
		off = sizeof(h);
	}
	for (; off < n; off += 8) {
		size_t k = n - off < 8 ? n - off : 8;

		v = xs_next(&s);
		if (memcmp(p + off, &v, k))
			return false;
	}
	return true;
}

bool msg_check(const uint8_t *p, size_t len, uint32_t src, uint32_t seq, uint64_t tag)
{
	return msg_check_prefix(p, len, len, src, seq, tag);
}

bool all_bytes(const uint8_t *p, size_t n, uint8_t b)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != b)
			return false;
	return true;
}

bool msg_decode(const uint8_t *p, size_t len, struct msg_hdr *h)
{
	if (len < sizeof(*h))
		return false;
	memcpy(h, p, sizeof(*h));
	return h->magic == MSG_MAGIC;
}

/* ---- starting clients together ---- */

void barrier_init(struct barrier *b)
{
	H_ASSERT(pipe2(b->ready, O_CLOEXEC) == 0 && pipe2(b->go, O_CLOEXEC) == 0, "pipe: %s",
		 strerror(errno));
}

void barrier_arrive(struct barrier *b)
{
	uint8_t x;
	int rc;

	CL_REQUIRE(close(b->ready[0]) == 0 && close(b->go[1]) == 0, CL_E_SYNC, "close: %s",
		   strerror(errno));
	rc = h_write_byte(b->ready[1], 1);
	CL_REQUIRE(rc == 0, CL_E_SYNC, "barrier write: %s", strerror(-rc));
	CL_REQUIRE(close(b->ready[1]) == 0, CL_E_SYNC, "close: %s", strerror(errno));
	rc = h_read_byte(b->go[0], &x, 30000);
	CL_REQUIRE(rc == 0, CL_E_SYNC, "barrier release: rc %d", rc);
	CL_REQUIRE(close(b->go[0]) == 0, CL_E_SYNC, "close: %s", strerror(errno));
}

void barrier_release(struct barrier *b, const pid_t *pids, const char *const *names,
		     unsigned n)
{
	unsigned i;
	uint8_t x;
	int rc;

	H_ASSERT(close(b->ready[1]) == 0 && close(b->go[0]) == 0, "close: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		rc = h_read_byte(b->ready[0], &x, 20000);
		if (rc != 1) {
			char why[64];

			snprintf(why, sizeof(why), "only %u of %u clients got ready (rc %d)", i, n, rc);
			fail_clients(pids, names, n, why);
		}
	}
	H_ASSERT(close(b->go[1]) == 0 && close(b->ready[0]) == 0, "close: %s", strerror(errno));
}

/* ---- test process: reaping clients ---- */

const char *wait_status_str(int st)
{
	static char buf[96];

	if (WIFEXITED(st))
		snprintf(buf, sizeof(buf), "exit %d (%s)", WEXITSTATUS(st),
			 cl_exit_name(WEXITSTATUS(st)));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, sizeof(buf), "status 0x%x", st);
	return buf;
}

const char *client_status_str(pid_t pid, int st)
{
	static char buf[CL_WORDS_MAX + 160];
	char words[CL_WORDS_MAX];
	int n = snprintf(buf, sizeof(buf), "%s", wait_status_str(st));

	if (n > 0 && (size_t)n < sizeof(buf) && cl_last_words(pid, NULL, words, sizeof(words)))
		snprintf(buf + n, sizeof(buf) - (size_t)n, ": \"%s\"", words);
	return buf;
}

bool reap_clients(const pid_t *pids, const char *const *names, unsigned n, int timeout_ms,
		  char *msg, size_t cap)
{
	size_t len = 0;
	int st[CL_MAX_CLIENTS];
	unsigned i;

	H_ASSERT(n <= CL_MAX_CLIENTS, "%u clients, at most %d", n, CL_MAX_CLIENTS);
	msg[0] = '\0';
	h_wait_children(pids, n, timeout_ms, st);
	for (i = 0; i < n && len < cap; i++) {
		if (WIFEXITED(st[i]) && WEXITSTATUS(st[i]) == 0)
			continue;
		len += (size_t)snprintf(msg + len, cap - len, "%sclient %s: %s", len ? "; " : "",
					names[i], client_status_str(pids[i], st[i]));
	}
	return msg[0] == '\0';
}

void expect_clients_ok(const pid_t *pids, const char *const *names, unsigned n,
		       int timeout_ms)
{
	char msg[CL_STATUS_MSG_MAX];

	H_ASSERT(reap_clients(pids, names, n, timeout_ms, msg, sizeof(msg)), "%s", msg);
}

void fail_clients(const pid_t *pids, const char *const *names, unsigned n, const char *why)
{
	char msg[CL_STATUS_MSG_MAX];
	unsigned i;

	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			(void)kill(pids[i], SIGKILL);
	(void)reap_clients(pids, names, n, 5000, msg, sizeof(msg));
	h_fail(__FILE__, __LINE__, "clients", "%s: %s", why, msg);
}

/* ---- bounding the lack of progress ---- */

void progress_start(struct progress *p, uint64_t count, int gap_ms)
{
	*p = (struct progress){ .count = count, .at = h_now_ms(), .gap_ms = gap_ms };
}

/* The carriers' wait now, as the base of the gap that may follow;
 * false if schedstat cannot be read (then gaps are judged by wall time). */
static bool progress_rebase(struct progress *p, int64_t now)
{
	int64_t us = h_procs_runq_wait_us(p->carriers, p->n_carriers);

	if (us < 0) {
		p->carriers = NULL;
		return false;
	}
	p->base_waited_us = us;
	p->base_at = now;
	return true;
}

void progress_carriers(struct progress *p, const pid_t *pids, unsigned n)
{
	p->carriers = pids;
	p->n_carriers = n;
	progress_rebase(p, h_now_ms());
}

int64_t progress_note(struct progress *p, uint64_t count)
{
	int64_t now = h_now_ms(), gap = now - p->at, held = gap;

	if (count == p->count)
		return gap;
	p->count = count;
	p->at = now;
	if (p->carriers && p->gap_ms > 0 && gap >= p->gap_ms) {
		int64_t base = p->base_waited_us;

		if (progress_rebase(p, now)) {
			int64_t waited = (p->base_waited_us - base) / 1000;

			if (waited > gap)
				waited = gap;
			held = gap - waited;
			p->excused_ms += waited;
		}
	} else if (p->carriers && now - p->base_at >= PROGRESS_BASE_MS) {
		progress_rebase(p, now);
	}
	if (held > p->longest)
		p->longest = held;
	if (p->gap_ms > 0 && held >= p->gap_ms)
		p->gaps++;
	return 0;
}

void progress_excuse(struct progress *p)
{
	p->at = h_now_ms();
	if (p->carriers && p->at - p->base_at >= PROGRESS_BASE_MS)
		progress_rebase(p, p->at);
}

/* ---- completions ---- */

void wait_cqes(struct sl_queue *q, struct sl_cqe *cqes, unsigned n, int ms)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		int rc = h_wait_cqe(q, &cqes[i], ms);

		H_ASSERT(rc == 1, "completion %u of %u: rc %d", i + 1, n, rc);
	}
}

void expect_no_cqe(struct sl_queue *q, int ms)
{
	struct sl_cqe cqe;
	int rc = h_wait_cqe(q, &cqe, ms);

	H_ASSERT(rc == 0, "unexpected completion: rc %d ctx %#llx status %s", rc,
		 (unsigned long long)cqe.user_ctx, sl_strerror(cqe.status));
}

const char *tu_sluicectl(void)
{
	static char path[512];
	const char *top = getenv("top_builddir");

	snprintf(path, sizeof(path), "%s/tools/sluicectl", top && *top ? top : ".");
	H_ASSERT(access(path, X_OK) == 0, "%s: %s (set top_builddir)", path, strerror(errno));
	return path;
}

unsigned tu_log_lines(const struct h_daemon *d, const char *needle)
{
	FILE *f = fopen(d->log, "r");
	char line[2048];
	unsigned n = 0;

	H_ASSERT(f, "%s: %s", d->log, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!needle || strstr(line, needle))
			n++;
	fclose(f);
	return n;
}
