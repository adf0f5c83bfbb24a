/*
 * fanin-burst - many senders into one receiver that consumes late, so that
 * the messages wait in the receiving daemon as unexpected ones
 * (scripts/scale-bench).  Built by make, not installed.
 *
 *   fanin-burst --receive --port P --senders K --messages M [--size B]
 *               [--window W] [--socket PATH] [--ready-file F] [--done-file F]
 *               [--timeout S]
 *   fanin-burst --send --to NODE:PORT --first-id I --count C --messages M
 *               [--size B] [--window W] [--socket PATH] [--timeout S]
 *
 * A sender process forks C senders, ids I .. I+C-1, each with its own
 * context and queue; sender i sends messages 0 .. M-1 of B bytes (8 to 1M)
 * with tag (i << 32 | seq), the message starting with i and seq (le32
 * each), every other byte a function of both.  Each keeps W sends in
 * flight; a send NAKed (SL_NAK_RECEIVER_FULL, SL_NAK_BUSY) is posted again
 * after a back-off of 100 us doubling to about 10 ms.  Any other status
 * fails the sender; so does no send completing SL_OK for --timeout seconds
 * (default 60).  When all have ended the process prints
 *   SENT_OK EXPECTED NAKS FAILED_SENDERS
 * and exits 0 when every message was sent OK.
 *
 * The receiver binds P, writes the ready file, and posts nothing until
 * SIGUSR1: what arrives meanwhile queues as unexpected in its daemon (up
 * to [limits] unexpected_max_bytes; past it the senders are NAKed and
 * retry).  Then it keeps W receives of B bytes posted, any source and tag,
 * and checks every message: status, length, tag against the header, ids
 * and sequence numbers in range, every byte, and whether it came before.
 * Once all K x M messages came, or none for --timeout seconds, it prints
 *   DELIVERED EXPECTED DUPLICATES CORRUPT ERRORS CONSUME_MS
 * (distinct messages delivered, K x M, seen twice, bad bytes or header,
 * receive completions not SL_OK, milliseconds from SIGUSR1 to the last
 * message) to standard output and to the done file, keeps its queue open
 * until SIGTERM or SIGINT (the daemon's memory is measured meanwhile) and
 * exits 0 when every message came once and whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "common.h"
#include "sl_common.h"
#include "sluice.h"

#define SIZE_MIN 8u			/* the id and sequence number header */
#define SIZE_MAX_MSG (1u << 20)
#define SENDERS_MAX 4096u
#define MESSAGES_MAX (1u << 24)
#define WINDOW_MAX 2048u
#define POLL_BATCH 64

struct opts {
	bool receive, send;
	const char *sock, *ready, *done;
	uint64_t port, senders, messages, size, window, first_id, count, timeout_s;
	sl_addr_t to;
	bool have_to;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fanin-burst --receive --port P --senders K --messages M [--size B]\n"
		"                   [--window W] [--socket PATH] [--ready-file F] [--done-file F]\n"
		"                   [--timeout S]\n"
		"       fanin-burst --send --to NODE:PORT --first-id I --count C --messages M\n"
		"                   [--size B] [--window W] [--socket PATH] [--timeout S]\n"
		"\n"
		"Senders into one receiver that posts its receives only at SIGUSR1.\n"
		"  --receive        bind --port P; consume K x M messages after SIGUSR1,\n"
		"                   print DELIVERED EXPECTED DUPLICATES CORRUPT ERRORS\n"
		"                   CONSUME_MS, then wait for SIGTERM\n"
		"  --send           fork C senders (ids I .. I+C-1), M messages each;\n"
		"                   print SENT_OK EXPECTED NAKS FAILED_SENDERS\n"
		"  --size B         bytes per message, 8 to 1M (default 1K)\n"
		"  --window W       sends in flight per sender, receives posted,\n"
		"                   1 to %u (default 64)\n"
		"  --socket PATH    the daemon's control socket (default: $SLUICE_SOCKET,\n"
		"                   else " SL_DEFAULT_SOCKET ")\n"
		"  --ready-file F   receiver: created once the port is bound\n"
		"  --done-file F    receiver: its report, once it has it\n"
		"  --timeout S      seconds without progress before giving up, 1 to 3600\n"
		"                   (default 60)\n",
		WINDOW_MAX);
}

static uint8_t pattern(uint32_t id, uint32_t seq, size_t i)
{
	return (uint8_t)(id * 131u + seq * 7u + (uint32_t)i);
}

static void fill(uint8_t *p, size_t len, uint32_t id, uint32_t seq)
{
	put_le32(p, id);
	put_le32(p + 4, seq);
	for (size_t i = SIZE_MIN; i < len; i++)
		p[i] = pattern(id, seq, i);
}

static void open_queue(const char *sock, uint32_t port, uint64_t window,
		       struct sl_ctx **ctx, struct sl_queue **q)
{
	uint32_t depth = 16;
	int rc;

	while (depth < window)
		depth <<= 1;
	rc = sl_open(sock, ctx);
	if (rc < 0)
		die("cannot connect to sluiced (%s): %s", sock ? sock : "default socket",
		    strerror(-rc));
	rc = sl_queue_open(*ctx, port, depth, q);
	if (rc < 0)
		die("cannot open a queue on port %" PRIu32 ": %s", port, strerror(-rc));
}

static void *alloc_or_die(struct sl_queue *q, size_t len)
{
	void *p = sl_alloc(q, len);

	if (!p)
		die("arena full: cannot allocate %zu bytes (arena is %zu bytes; a smaller "
		    "--window or --size, or a larger [limits] arena_bytes)",
		    len, sl_arena_size(q));
	return p;
}

/*
 * Post a send or a receive, waiting out -EAGAIN (the daemon's
 * client_max_inflight; the SQ itself holds the window); dies on any other
 * error or when -EAGAIN lasts @timeout_s.
 */
static void post(struct sl_queue *q, bool send, sl_addr_t to, uint64_t tag, void *buf,
		 size_t len, uint64_t user_ctx, uint64_t timeout_s)
{
	uint64_t end = now_ns() + timeout_s * 1000000000ull;

	for (;;) {
		int rc = send ? sl_send(q, to, tag, buf, len, user_ctx)
			      : sl_recv(q, SL_ANY_SOURCE, 0, 0, buf, len, user_ctx);

		if (rc == 0)
			return;
		if (rc != -EAGAIN)
			die("%s: %s", send ? "sl_send" : "sl_recv", strerror(-rc));
		if (now_ns() >= end)
			die("%s: still EAGAIN after %" PRIu64 " s", send ? "sl_send" : "sl_recv",
			    timeout_s);
		sleep_us(100);
	}
}

/* Wait for completions (100 ms at most) and take up to POLL_BATCH. */
static int take(struct sl_queue *q, struct sl_cqe *c)
{
	int n = sl_poll(q, c, POLL_BATCH);

	if (n == 0) {
		int rc = sl_wait(q, 100);

		if (rc < 0 && rc != -EINTR)
			die("sl_wait: %s", strerror(-rc));
		n = sl_poll(q, c, POLL_BATCH);
	}
	if (n < 0)
		die("sl_poll: %s", strerror(-n));
	return n;
}

/* One sender: returns its NAK count, dies (exit 1) on a failure. */
static uint64_t send_all(const struct opts *o, uint32_t id)
{
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe c[POLL_BATCH];
	uint8_t **bufs;
	unsigned *naks_in_row;
	uint64_t next = 0, done = 0, naks = 0, last_ok = now_ns();
	uint64_t w = o->window < o->messages ? o->window : o->messages;

	open_queue(o->sock, 0, w, &ctx, &q);
	bufs = calloc(w, sizeof(*bufs));
	naks_in_row = calloc(w, sizeof(*naks_in_row));
	if (!bufs || !naks_in_row)
		die("out of memory");
	for (uint64_t s = 0; s < w; s++) {
		bufs[s] = alloc_or_die(q, o->size);
		fill(bufs[s], o->size, id, (uint32_t)next);
		post(q, true, o->to, (uint64_t)id << 32 | next, bufs[s], o->size, s, o->timeout_s);
		next++;
	}
	while (done < o->messages) {
		int n = take(q, c);

		for (int k = 0; k < n; k++) {
			uint64_t s = c[k].user_ctx;
			uint32_t seq;

			if (s >= w)
				die("sender %" PRIu32 ": a completion for no send (user_ctx %" PRIu64 ")",
				    id, s);
			if (c[k].status == SL_NAK_RECEIVER_FULL || c[k].status == SL_NAK_BUSY) {
				/* The same message again, after the back-off. */
				naks++;
				if (naks_in_row[s] < 7)
					naks_in_row[s]++;
				sleep_us(100u << naks_in_row[s]);
				post(q, true, o->to, c[k].tag, bufs[s], o->size, s, o->timeout_s);
				continue;
			}
			if (c[k].status != SL_OK)
				die("sender %" PRIu32 ": message %" PRIu64 " completed %s", id,
				    c[k].tag & 0xffffffffu, sl_strerror(c[k].status));
			naks_in_row[s] = 0;
			done++;
			last_ok = now_ns();
			if (next < o->messages) {
				seq = (uint32_t)next++;
				fill(bufs[s], o->size, id, seq);
				post(q, true, o->to, (uint64_t)id << 32 | seq, bufs[s], o->size, s,
				     o->timeout_s);
			}
		}
		if (now_ns() - last_ok > o->timeout_s * 1000000000ull)
			die("sender %" PRIu32 ": no send completed OK in %" PRIu64 " s (%" PRIu64
			    " of %" PRIu64 " done)", id, o->timeout_s, done, o->messages);
	}
	sl_close(ctx);
	free(bufs);
	free(naks_in_row);
	return naks;
}

static int run_senders(const struct opts *o)
{
	/* Each child writes its NAK count here before it exits 0. */
	uint64_t *naks = mmap(NULL, o->count * sizeof(*naks), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t ok = 0, nak_sum = 0;
	unsigned failed = 0, children = 0;

	if (naks == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	if (fflush(stdout) == EOF)
		die("cannot flush standard output: %s", strerror(errno));
	for (uint64_t i = 0; i < o->count; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "%s: fork of sender %" PRIu64 ": %s\n", tool_name,
				o->first_id + i, strerror(errno));
			failed += (unsigned)(o->count - i);
			break;
		}
		if (pid == 0) {
			naks[i] = send_all(o, (uint32_t)(o->first_id + i));
			_exit(0);
		}
		children++;
	}
	while (children > 0) {
		int st;
		pid_t pid = wait(&st);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			die("wait: %s", strerror(errno));
		}
		children--;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok += o->messages;
		else
			failed++;
	}
	for (uint64_t i = 0; i < o->count; i++)
		nak_sum += naks[i];
	printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %u\n", ok, o->count * o->messages, nak_sum,
	       failed);
	if (fflush(stdout) == EOF)
		die("cannot write the report: %s", strerror(errno));
	munmap(naks, o->count * sizeof(*naks));
	return failed ? 1 : 0;
}

/* Whole and as sent: header matches the tag, every byte the pattern. */
static bool message_ok(const uint8_t *p, uint64_t len, uint64_t tag, const struct opts *o)
{
	uint32_t id = (uint32_t)(tag >> 32), seq = (uint32_t)tag;

	if (len != o->size || id >= o->senders || seq >= o->messages ||
	    get_le32(p) != id || get_le32(p + 4) != seq)
		return false;
	for (size_t i = SIZE_MIN; i < len; i++)
		if (p[i] != pattern(id, seq, i))
			return false;
	return true;
}

static int receive_all(const struct opts *o)
{
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe c[POLL_BATCH];
	uint64_t total = o->senders * o->messages, got = 0, dups = 0, bad = 0, errs = 0;
	uint64_t t_go, t_last, last_progress;
	uint8_t *seen, **bufs;
	char line[160];
	sigset_t sigs;
	int sig;

	if (sigemptyset(&sigs) < 0 || sigaddset(&sigs, SIGUSR1) < 0 ||
	    sigaddset(&sigs, SIGTERM) < 0 || sigaddset(&sigs, SIGINT) < 0 ||
	    sigprocmask(SIG_BLOCK, &sigs, NULL) < 0)
		die("cannot block SIGUSR1, SIGTERM and SIGINT: %s", strerror(errno));
	seen = calloc((total + 7) / 8, 1);
	bufs = calloc(o->window, sizeof(*bufs));
	if (!seen || !bufs)
		die("out of memory");
	open_queue(o->sock, (uint32_t)o->port, o->window, &ctx, &q);
	for (uint64_t s = 0; s < o->window; s++)
		bufs[s] = alloc_or_die(q, o->size);
	if (o->ready)
		write_ready_file(o->ready, "ready\n");

	do {
		if (sigwait(&sigs, &sig) != 0)
			die("sigwait failed");
		if (sig != SIGUSR1) {
			fprintf(stderr, "%s: stopped before consuming\n", tool_name);
			sl_close(ctx);
			return 1;
		}
	} while (sig != SIGUSR1);

	t_go = t_last = last_progress = now_ns();
	for (uint64_t s = 0; s < o->window; s++)
		post(q, false, SL_ANY_SOURCE, 0, bufs[s], o->size, s, o->timeout_s);
	while (got < total) {
		int n = take(q, c);

		for (int k = 0; k < n; k++) {
			uint64_t s = c[k].user_ctx, idx;

			if (s >= o->window)
				die("a completion for no receive (user_ctx %" PRIu64 ")", s);
			last_progress = now_ns();
			if (c[k].status != SL_OK) {
				errs++;
				if (errs <= 5)
					fprintf(stderr, "%s: a receive completed %s\n", tool_name,
						sl_strerror(c[k].status));
			} else if (!message_ok(bufs[s], c[k].len, c[k].tag, o)) {
				bad++;
				if (bad <= 5)
					fprintf(stderr, "%s: bad message: tag %#" PRIx64 ", %" PRIu64
						" bytes\n", tool_name, c[k].tag, c[k].len);
			} else {
				idx = (c[k].tag >> 32) * o->messages + (uint32_t)c[k].tag;
				if (seen[idx / 8] & (1u << (idx % 8))) {
					dups++;
				} else {
					seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
					got++;
					t_last = last_progress;
				}
			}
			if (got < total)
				post(q, false, SL_ANY_SOURCE, 0, bufs[s], o->size, s, o->timeout_s);
		}
		if (now_ns() - last_progress > o->timeout_s * 1000000000ull) {
			fprintf(stderr, "%s: nothing arrived in %" PRIu64 " s; %" PRIu64 " of %"
				PRIu64 " messages missing\n", tool_name, o->timeout_s, total - got,
				total);
			break;
		}
	}
	snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		 " %" PRIu64 "\n", got, total, dups, bad, errs, (t_last - t_go) / 1000000);
	fputs(line, stdout);
	if (fflush(stdout) == EOF)
		die("cannot write the report: %s", strerror(errno));
	if (o->done)
		write_ready_file(o->done, line);

	do {
		if (sigwait(&sigs, &sig) != 0)
			die("sigwait failed");
	} while (sig == SIGUSR1);
	sl_close(ctx);
	free(seen);
	free(bufs);
	return got == total && !dups && !bad && !errs ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "receive", no_argument, NULL, 'R' },
		{ "send", no_argument, NULL, 'S' },
		{ "port", required_argument, NULL, 'p' },
		{ "to", required_argument, NULL, 't' },
		{ "senders", required_argument, NULL, 'k' },
		{ "first-id", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ "messages", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 'z' },
		{ "window", required_argument, NULL, 'w' },
		{ "socket", required_argument, NULL, 's' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "done-file", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .size = 1024, .window = 64, .timeout_s = 60, .first_id = UINT64_MAX };
	int c;

	tool_name = "fanin-burst";
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'R': o.receive = true; break;
		case 'S': o.send = true; break;
		case 'p': parse_opt_u64("--port", optarg, 1, 65535, &o.port); break;
		case 't': parse_to(optarg, &o.to); o.have_to = true; break;
		case 'k': parse_opt_u64("--senders", optarg, 1, SENDERS_MAX, &o.senders); break;
		case 'i': parse_opt_u64("--first-id", optarg, 0, SENDERS_MAX - 1, &o.first_id); break;
		case 'c': parse_opt_u64("--count", optarg, 1, SENDERS_MAX, &o.count); break;
		case 'm': parse_opt_u64("--messages", optarg, 1, MESSAGES_MAX, &o.messages); break;
		case 'z': parse_opt_u64("--size", optarg, SIZE_MIN, SIZE_MAX_MSG, &o.size); break;
		case 'w': parse_opt_u64("--window", optarg, 1, WINDOW_MAX, &o.window); break;
		case 's': o.sock = optarg; break;
		case 'r': o.ready = optarg; break;
		case 'd': o.done = optarg; break;
		case 'T': parse_opt_u64("--timeout", optarg, 1, 3600, &o.timeout_s); break;
		case 'h': usage(stdout); return 0;
		default: return try_help();
		}
	}
	reject_operands(argc, argv);
	if (o.receive == o.send)
		bad_usage("one of --receive and --send");
	if (!o.messages)
		bad_usage("--messages is required");
	if (o.receive) {
		if (!o.port || !o.senders)
			bad_usage("--receive needs --port and --senders");
		return receive_all(&o);
	}
	if (!o.have_to || o.first_id == UINT64_MAX || !o.count)
		bad_usage("--send needs --to, --first-id and --count");
	if (o.first_id + o.count > SENDERS_MAX)
		bad_usage("--first-id + --count: at most %u senders", SENDERS_MAX);
	return run_senders(&o);
}
