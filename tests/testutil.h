/*
 * testutil.h - helpers shared by the integration tests that run clients
 * in forked processes (test_random_traffic.c, test_rndv.c, ...; their
 * loops are in client_kit.h): the clients' exit codes, opening and
 * closing a client queue, pipe signalling, pages shared with the test
 * process, deterministic randomness, self-describing message payloads, a
 * start barrier, and reaping the clients.
 *
 * Conventions, as in harness.h.  A client process never uses Check and
 * never aborts: functions meant for clients (cl_*, barrier_arrive) report
 * a failure by ending the client with _exit() and an enum cl_exit code,
 * after one line on stderr naming the client (cl_name), the failure and
 * the code's meaning; the test process reads that code from the wait
 * status.  Functions meant for the test process (shared_*, barrier_init,
 * barrier_release, reap_clients, expect_clients_ok, fail_clients,
 * wait_cqes, expect_no_cqe) are fatal: they fail the Check test through
 * h_fail().  The rest (rng_*, msg_*, addr_eq, cl_exit_name,
 * wait_status_str) only compute and may be called from either side.
 * Times are milliseconds.
 *
 * How the tests bound their waits.  The machine that runs them is shared
 * and busy (other suites, builds, fuzzers): a wall-clock bound on a total
 * time fails there for no fault of the daemon, so
 *  - a wait for ONE event or state (a socket, a counter reaching a value,
 *    a completion) has a generous bound, and its message names what was
 *    awaited and what was seen instead;
 *  - work of many steps is bound by its lack of progress (struct progress
 *    below; CL_STALL_MS in a client), never by its total time;
 *  - where a test's point is speed, it asserts the signature of the slow
 *    path rather than a total: the gaps a crawl leaves between steps
 *    (test_pressure c03), the work another party gets through while one
 *    starves (test_rndv writes_not_starved_by_sends), the CPU time a spin
 *    burns (test_lifecycle daemon_gone_is_reported), or a comparison with
 *    a baseline taken beside it under the same load (test_doorbell_hammer
 *    doorbell_hammer_does_not_starve); the figures are printed either way;
 *  - a client that gives up says why: cl_die()'s message comes back to the
 *    test process (cl_last_words) and into its failure message
 *    (client_status_str, reap_clients).
 * Check's own per-test limits (h_tcase, CK_DEFAULT_TIMEOUT) are backstops
 * against a hang, far above any of these bounds.
 */
#ifndef SL_TEST_TESTUTIL_H
#define SL_TEST_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"
#include "sluice.h"

/* ---- client processes: exit codes ---- */

/* A client's exit code: one per kind of failure (126: h_fork's child
 * could not be set up). */
enum cl_exit {
	CL_OK = 0,
	CL_E_SETUP = 10,	/* sl_open, sl_queue_open or sl_alloc failed */
	CL_E_POST = 11,		/* a post returned something other than 0 / -EAGAIN */
	CL_E_POLL = 12,		/* sl_poll / sl_wait failed */
	CL_E_STATUS = 13,	/* a completion with the wrong status */
	CL_E_CTX = 14,		/* unknown or duplicate user_ctx, or an extra completion */
	CL_E_META = 15,		/* wrong opcode, peer, tag or length in a completion */
	CL_E_DATA = 16,		/* payload differs from what was sent */
	CL_E_ORDER = 17,	/* matching broke MPI's order rules */
	CL_E_TIMEOUT = 18,	/* no progress for too long */
	CL_E_MISSING = 19,	/* completions missing at the end */
	CL_E_SYNC = 20,		/* pipe coordination with other processes failed */
	CL_E_STRANDED = 21,	/* a receive that must have matched did not */
	CL_E_DUP = 22,		/* a message delivered twice */
};

/* What an exit code means, for messages ("unknown exit code" if none). */
const char *cl_exit_name(int code);

/* Name of the current client process, for its messages; a client sets it
 * first thing after the fork ("test" until then). */
extern const char *cl_name;

/* End the client: print "[client NAME pid PID] <message> (<meaning of
 * code>)" to stderr, leave <message> as the client's last words for the
 * test process (cl_last_words) and _exit(@code).  Never returns. */
void cl_die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* Longest last words kept, with the NUL (longer messages are cut). */
#define CL_WORDS_MAX 256

/*
 * cl_last_words - test process, after reaping client @pid: copy the
 * message of its cl_die() to @buf (@cap bytes, NUL-terminated) and its
 * exit code to *@code (unless NULL), and forget them.  Returns false if
 * @pid left none (it exited 0, was killed, or died before the program's
 * last 64 cl_die() calls).  Any process of the program may call it; the
 * words live in memory every process of the program shares.
 */
bool cl_last_words(pid_t pid, int *code, char *buf, size_t cap);

#define CL_DIE(code, ...) cl_die(code, __VA_ARGS__)

/* Unless @cond holds, end the client with @code and the message. */
#define CL_REQUIRE(cond, code, ...) \
	do { \
		if (!(cond)) \
			cl_die(code, __VA_ARGS__); \
	} while (0)

/* A client gives up after this long without any completion. */
#define CL_STALL_MS 30000

/* user_ctx of the clients' operations: a kind in bits 40..47 and an
 * index in the low 32 bits. */
#define CTX_SEND (1ull << 40)
#define CTX_RECV (2ull << 40)
#define CTX_KIND(c) ((c) & (0xffull << 40))
#define CTX_INDEX(c) ((uint32_t)(c))

/* ---- client processes: queues and pipes (never abort) ---- */

struct cl {
	struct sl_ctx *ctx;
	struct sl_queue *q;
	sl_addr_t addr;		/* the queue's address */
};

/*
 * cl_open - connect to daemon @d and open a queue on @port (0: any free
 * port) with @depth SQ entries; the queue's address must be on @d's node
 * (and @port unless 0).  CL_E_SETUP on failure.
 * cl_close - close the queue (CL_E_SETUP if that fails) and the context.
 */
void cl_open(struct cl *c, const struct h_daemon *d, uint32_t port, uint32_t depth);
void cl_close(struct cl *c);

/* close(@fd); CL_E_SYNC if that fails. */
void cl_close_fd(int fd);

/* $top_builddir/tools/sluicectl (fatal if it is not there). */
const char *tu_sluicectl(void);

/* No completion may arrive on @c's queue within @ms: CL_E_CTX if one does
 * (or the wait fails). */
void cl_expect_quiet(struct cl *c, int ms);

/*
 * cl_signal - write one byte to @fd: an event for another process.
 * cl_await - read one byte from @fd, waiting up to @ms.
 * Either ends the client with CL_E_SYNC on failure (EOF, timeout, error),
 * the message starting with @what.
 */
void cl_signal(int fd, const char *what);
void cl_await(int fd, int ms, const char *what);

/* ---- test process: memory shared with the clients (fatal) ---- */

/* @len bytes of zeroed MAP_SHARED anonymous memory, created before the
 * fork so that clients write results the test process reads.  Fatal on
 * error. */
void *shared_alloc(size_t len);
/* Unmap what shared_alloc() returned (same @len).  Fatal on error. */
void shared_free(void *p, size_t len);

/* ---- deterministic randomness ---- */

/* splitmix64 finalizer: a well-mixed 64-bit function of @x. */
uint64_t mix64(uint64_t x);

/* A generator seeded with { seed }: the same seed, the same sequence. */
struct rng {
	uint64_t s;
};

uint64_t rng_next(struct rng *r);
/* Uniform in [0, @n); @n > 0. */
uint32_t rng_below(struct rng *r, uint32_t n);

/* ---- message payloads ---- */

/*
 * A payload is a function of (source, seq, tag, length): a 32-byte header
 * naming the message when it fits (so a receiver can tell which message it
 * got, and an overtaking one is told apart from corruption), then an
 * xorshift stream.  Lengths are bytes.
 */
#define MSG_MAGIC 0x4753534d45434c53ull
struct msg_hdr {
	uint64_t magic;
	uint32_t src;
	uint32_t seq;
	uint64_t tag;
	uint64_t len;
};

/* Write the @len-byte payload of message (@src, @seq, @tag) to @p. */
void msg_fill(uint8_t *p, size_t len, uint32_t src, uint32_t seq, uint64_t tag);
/* Does @p hold the first @n bytes of that message's payload (@len long)? */
bool msg_check_prefix(const uint8_t *p, size_t n, size_t len, uint32_t src, uint32_t seq,
		      uint64_t tag);
/* Does @p hold that message's whole @len-byte payload? */
bool msg_check(const uint8_t *p, size_t len, uint32_t src, uint32_t seq, uint64_t tag);
/* Are all @n bytes at @p equal to @b (a buffer left untouched)? */
bool all_bytes(const uint8_t *p, size_t n, uint8_t b);
/* If @p (@len bytes received) starts with a message header, copy it to @h
 * and return true: the (src, seq, tag, len) the payload names. */
bool msg_decode(const uint8_t *p, size_t len, struct msg_hdr *h);

/* ---- starting clients together ---- */

/*
 * Every client binds its port, then waits: a message to a port not bound
 * yet would complete SL_ERR_NO_ENDPOINT and spoil the plan.  The test
 * process releases all of them at once by closing the go pipe.
 *
 * barrier_init - the pipes, in the test process before the forks.  Fatal.
 * barrier_arrive - a client: report ready, wait (up to 30 s) for the
 * release.  CL_E_SYNC on failure.
 * barrier_release - the test process: wait (up to 20 s each) until the @n
 * clients @pids (named @names) are ready, then release them.  If one dies
 * or never gets ready, all are killed and reaped and the test fails with
 * their exit statuses.
 */
struct barrier {
	int ready[2];
	int go[2];
};

void barrier_init(struct barrier *b);
void barrier_arrive(struct barrier *b);
void barrier_release(struct barrier *b, const pid_t *pids, const char *const *names,
		     unsigned n);

/* ---- test process: reaping clients ---- */

/* A wait status in words, e.g. "exit 13 (wrong completion status)".
 * Returns a static buffer, overwritten by the next call. */
const char *wait_status_str(int st);
/* The same for client @pid, with its last words if it left any (they are
 * consumed), e.g. 'exit 18 (no progress (timeout)): "c03 A1: 12 of 40
 * sends done, nothing for 30000 ms"'.  A static buffer, as above. */
const char *client_status_str(pid_t pid, int st);

/* Room for the statuses of CL_MAX_CLIENTS clients with their words. */
#define CL_STATUS_MSG_MAX 3072

/* Most clients one call below takes. */
#define CL_MAX_CLIENTS 16

/*
 * reap_clients - reap the @n clients @pids (named @names), bounded by
 * @timeout_ms overall (h_wait_children: those still running then are
 * killed and the test fails).  @msg (@cap bytes) gets every client that
 * did not exit 0, with its status and last words (client_status_str; the
 * first to fail is often not the first in the list).  Returns true if all exited 0.
 * expect_clients_ok - reap_clients(), failing the test unless all exited 0.
 * fail_clients - SIGKILL the clients (entries of @pids that are 0 or less
 * are skipped), reap them, and fail the test with "@why: <statuses>".
 */
bool reap_clients(const pid_t *pids, const char *const *names, unsigned n, int timeout_ms,
		  char *msg, size_t cap);
void expect_clients_ok(const pid_t *pids, const char *const *names, unsigned n,
		       int timeout_ms);
void fail_clients(const pid_t *pids, const char *const *names, unsigned n, const char *why)
	__attribute__((noreturn));

/* ---- bounding the lack of progress ---- */

/*
 * A busy machine stretches total times without bound, so a wait is bound
 * by how long nothing moved, and a speed requirement by the signature of
 * the slow path (here: how many gaps between steps reach gap_ms) instead
 * of a total time.  @count is any measure of work done that only grows
 * (completions, bytes, states passed).  Either side may use it; it never
 * aborts.
 *
 * progress_start - begin at @count now; gaps of at least @gap_ms (0: none)
 * are counted in gaps.
 * progress_note - note the current @count; returns the milliseconds since
 * it last changed (0 when it just did).
 * progress_excuse - the gap running now is on purpose (a peer told to
 * stop): restart its clock without counting it.
 * progress_carriers - judge gaps by how long they were held: a gap counts
 * only if, less what the @n processes @pids (the caller, its peers, the
 * daemons between them; kept by reference) waited for a core during it,
 * it still reaches gap_ms.  A loaded machine delays everyone, a crawl
 * holds the work while its processes sleep or run.  Their schedstat is
 * read at most every PROGRESS_BASE_MS while work flows, so up to that
 * much waiting just before a gap may be excused with it.
 */
#define PROGRESS_BASE_MS 5
struct progress {
	uint64_t count;		/* the last value noted */
	int64_t at;		/* h_now_ms() when it last changed */
	int gap_ms;
	unsigned gaps;		/* changes that came after a gap >= gap_ms */
	int64_t longest;	/* the longest gap that ended, ms (held, with carriers) */
	const pid_t *carriers;	/* progress_carriers(), or NULL */
	unsigned n_carriers;
	int64_t base_at;	/* h_now_ms() when base_waited_us was read */
	int64_t base_waited_us;	/* the carriers' summed wait for a core then */
	int64_t excused_ms;	/* waiting taken off the gaps that ended */
};

void progress_start(struct progress *p, uint64_t count, int gap_ms);
int64_t progress_note(struct progress *p, uint64_t count);
void progress_excuse(struct progress *p);
void progress_carriers(struct progress *p, const pid_t *pids, unsigned n);

/* ---- completions ---- */

static inline bool addr_eq(sl_addr_t a, sl_addr_t b)
{
	return a.node == b.node && a.port == b.port;
}

/* Test process: collect @n completions from @q into @cqes, each within
 * @ms.  Fatal on a timeout or error. */
void wait_cqes(struct sl_queue *q, struct sl_cqe *cqes, unsigned n, int ms);
/* Test process: no completion may arrive on @q within @ms.  Fatal if one
 * does. */
void expect_no_cqe(struct sl_queue *q, int ms);

/* ---- daemon logs ---- */

/* Test process: the lines of @d's log that contain @needle (NULL: all
 * lines).  Fatal if the log cannot be read. */
unsigned tu_log_lines(const struct h_daemon *d, const char *needle);

#endif
