/*
 * mesh-exchange - one node's part of a traffic pattern between daemons
 * (scripts/scale-bench's ring and alltoall): it sends --count messages to
 * each of a list of nodes and receives --count from each of another, and
 * checks them.  Built by make, not installed.
 *
 *   mesh-exchange --self NAME --port P --to NAME[,NAME...] --count C
 *                 [--from NAME[,NAME...]] [--size MIN[-MAX]] [--window W]
 *                 [--socket PATH] [--ready-file F] [--wait-go]
 *                 [--done-file F] [--hold] [--timeout S]
 *
 * It binds port P on its daemon (node NAME) and keeps W receives posted
 * from any source, for tags (id(NAME) << 32 | seq) only: messages addressed
 * to this node.  Then it writes the ready file; with --wait-go it waits
 * for SIGUSR1 before sending (the script starts every node's sends once
 * all have their receives posted: a message to a port not bound yet would
 * fail SL_ERR_NO_ENDPOINT).  Message seq (0 .. C-1) to node D, of the
 * sizes MIN..MAX a function of (sender, D, seq) picks, has tag
 * (id(D) << 32 | seq) and starts with the sender's node id and seq (le32
 * each), every other byte a function of the three; the sends go round the
 * --to list (seq 0 to every node, then seq 1, ...), W in flight.  A NAK
 * (SL_NAK_RECEIVER_FULL, SL_NAK_BUSY) is posted again after a back-off of
 * 100 us doubling to about 10 ms; any other status counts the send failed.
 * A received message is checked against the node it came from (in the
 * --from list, default the --to list), its tag, length and every byte.
 *
 * Once every send completed and every expected message came, or nothing
 * completed for --timeout seconds (default 30; it then says what it still
 * waited for), it prints
 *   SENT_OK SENDS RECEIVED EXPECTED DUPLICATES CORRUPT ERRORS EXCHANGE_MS
 * (sends completed SL_OK, sends it had to make, distinct messages
 * received, messages expected, messages received twice, messages with a
 * bad source, length or byte, sends and receives that failed, ms from the
 * start of the sends to the last completion) to standard output and the
 * done file.  With --hold it then keeps its queue open until SIGTERM or
 * SIGINT.  It exits 0 when every send went and every message came once
 * and whole.
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

#include "common.h"
#include "sluice.h"

#define HEADER_BYTES 8u			/* the sender's node id and seq */
#define SIZE_MAX_MSG (1u << 20)
#define NODES_MAX 65536u
#define COUNT_MAX (1u << 20)
#define WINDOW_MAX 2048u
#define POLL_BATCH 64
#define RECV_FLAG (1ull << 63)		/* user_ctx of a receive: RECV_FLAG | slot */
#define REPORTED_MAX 5			/* failures described on stderr */

struct peer {
	uint32_t id;
	unsigned index;			/* in the --from list, for seen[] */
	const char *name;
};

struct opts {
	const char *self, *sock, *ready, *done;
	uint32_t self_id;
	uint64_t port, count, size_min, size_max, window, timeout_s;
	struct peer *to, *from;		/* from: sorted by id */
	unsigned n_to, n_from;
	bool wait_go, hold;
};

struct counts {
	uint64_t sent_ok, send_failed, received, dups, corrupt, recv_failed;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mesh-exchange --self NAME --port P --to NAME[,NAME...] --count C\n"
		"                     [--from NAME[,NAME...]] [--size MIN[-MAX]] [--window W]\n"
		"                     [--socket PATH] [--ready-file F] [--wait-go]\n"
		"                     [--done-file F] [--hold] [--timeout S]\n"
		"\n"
		"Send C messages to each node of --to, receive C from each of --from, and\n"
		"check them; print SENT_OK SENDS RECEIVED EXPECTED DUPLICATES CORRUPT\n"
		"ERRORS EXCHANGE_MS.\n"
		"  --self NAME      this daemon's node name\n"
		"  --port P         the port bound here, and where the messages go\n"
		"  --to LIST        node names to send to, comma-separated\n"
		"  --from LIST      node names to expect messages from (default: --to)\n"
		"  --count C        messages to each node and from each, 1 to %u\n"
		"  --size MIN-MAX   bytes per message, %u to 1M, picked per message\n"
		"                   (default 8; one number: all that size)\n"
		"  --window W       sends in flight, and receives posted, 1 to %u\n"
		"                   (default 64)\n"
		"  --socket PATH    the daemon's control socket (default: $SLUICE_SOCKET,\n"
		"                   else " SL_DEFAULT_SOCKET ")\n"
		"  --ready-file F   created once the receives are posted\n"
		"  --wait-go        send only after SIGUSR1\n"
		"  --done-file F    the report, once it has it\n"
		"  --hold           after the report keep the queue open until SIGTERM\n"
		"  --timeout S      seconds without a completion before giving up, 1 to\n"
		"                   3600 (default 30)\n",
		COUNT_MAX, HEADER_BYTES, WINDOW_MAX);
}

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

/* The length of message @seq from @src to @dst. */
static size_t msg_size(const struct opts *o, uint32_t src, uint32_t dst, uint32_t seq)
{
	uint64_t span = o->size_max - o->size_min + 1;

	return (size_t)(o->size_min + mix(src ^ mix(dst ^ mix(seq))) % span);
}

static uint8_t pattern(uint32_t src, uint32_t dst, uint32_t seq, size_t i)
{
	return (uint8_t)(src * 131u + dst * 17u + seq * 7u + (uint32_t)i);
}

static void fill(uint8_t *p, size_t len, uint32_t src, uint32_t dst, uint32_t seq)
{
	put_le32(p, src);
	put_le32(p + 4, seq);
	for (size_t i = HEADER_BYTES; i < len; i++)
		p[i] = pattern(src, dst, seq, i);
}

static int cmp_peer_id(const void *a, const void *b)
{
	const struct peer *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Split @arg, a comma-separated list of node names, into peers (@arg is
 * kept: the names point into it).  A name twice, an empty name, this
 * node or two names of one id are usage errors.
 */
static struct peer *parse_nodes(const char *opt, char *arg, const struct opts *o, unsigned *n)
{
	struct peer *p, *sorted;
	unsigned cap = 1;
	char *save, *name;

	for (const char *c = arg; *c; c++)
		cap += *c == ',';
	if (cap > NODES_MAX)
		bad_usage("%s: at most %u nodes", opt, NODES_MAX);
	p = calloc(cap, sizeof(*p));
	sorted = calloc(cap, sizeof(*sorted));
	if (!p || !sorted)
		die("out of memory");
	*n = 0;
	if (*arg == ',' || (*arg && arg[strlen(arg) - 1] == ',') || strstr(arg, ",,"))
		bad_usage("%s: an empty node name in '%s'", opt, arg);
	for (name = strtok_r(arg, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		p[*n].name = name;
		p[*n].id = sl_node_id(name);
		p[*n].index = *n;
		if (p[*n].id == o->self_id)
			bad_usage("%s: %s is this node (--self)", opt, name);
		(*n)++;
	}
	if (*n == 0)
		bad_usage("%s: no node named", opt);
	memcpy(sorted, p, *n * sizeof(*p));
	qsort(sorted, *n, sizeof(*sorted), cmp_peer_id);
	for (unsigned i = 1; i < *n; i++)
		if (sorted[i].id == sorted[i - 1].id)
			bad_usage("%s: %s and %s have one node id (%#" PRIx32 "): a name twice?",
				  opt, sorted[i - 1].name, sorted[i].name, sorted[i].id);
	free(sorted);
	return p;
}

static const struct peer *find_from(const struct opts *o, uint32_t id)
{
	struct peer key = { .id = id };

	return bsearch(&key, o->from, o->n_from, sizeof(key), cmp_peer_id);
}

/*
 * Post a send (@to, @tag) or a receive (this node's tags), waiting out
 * -EAGAIN (the daemon's client_max_inflight; the queue's depth holds the
 * windows); dies on any other error or when -EAGAIN lasts @timeout_s.
 */
static void post(struct sl_queue *q, const struct opts *o, bool send, sl_addr_t to,
		 uint64_t tag, void *buf, size_t len, uint64_t user_ctx)
{
	uint64_t end = now_ns() + o->timeout_s * 1000000000ull;

	for (;;) {
		int rc = send ? sl_send(q, to, tag, buf, len, user_ctx)
			      : sl_recv(q, SL_ANY_SOURCE, (uint64_t)o->self_id << 32,
					0xffffffff00000000ull, buf, len, user_ctx);

		if (rc == 0)
			return;
		if (rc != -EAGAIN)
			die("%s: %s", send ? "sl_send" : "sl_recv", strerror(-rc));
		if (now_ns() >= end)
			die("%s: still EAGAIN after %" PRIu64 " s", send ? "sl_send" : "sl_recv",
			    o->timeout_s);
		sleep_us(100);
	}
}

/* A send slot: which message it carries and its NAKs in a row. */
struct send_slot {
	uint8_t *buf;
	uint64_t msg;			/* k: to o->to[k % n_to], seq k / n_to */
	unsigned naks;
};

static void post_message(struct sl_queue *q, const struct opts *o, struct send_slot *s,
			 uint64_t slot)
{
	const struct peer *dst = &o->to[s->msg % o->n_to];
	uint32_t seq = (uint32_t)(s->msg / o->n_to);
	size_t len = msg_size(o, o->self_id, dst->id, seq);

	fill(s->buf, len, o->self_id, dst->id, seq);
	post(q, o, true, (sl_addr_t){ dst->id, (uint32_t)o->port },
	     (uint64_t)dst->id << 32 | seq, s->buf, len, slot);
}

/* Whole and as sent by @src; the tag's upper half is this node (the mask). */
static bool message_ok(const struct opts *o, const uint8_t *p, uint64_t len, uint32_t src,
		       uint32_t seq)
{
	if (seq >= o->count || len != msg_size(o, src, o->self_id, seq) ||
	    get_le32(p) != src || get_le32(p + 4) != seq)
		return false;
	for (size_t i = HEADER_BYTES; i < len; i++)
		if (p[i] != pattern(src, o->self_id, seq, i))
			return false;
	return true;
}

/* What it still waits for, on stderr: sends, and the nodes short of messages. */
static void say_missing(const struct opts *o, uint64_t sends_left, const uint64_t *got_from)
{
	unsigned short_nodes = 0;

	fprintf(stderr, "%s: %s: nothing completed in %" PRIu64 " s; still waiting for %" PRIu64
		" of %" PRIu64 " sends to complete", tool_name, o->self, o->timeout_s, sends_left,
		o->count * o->n_to);
	for (unsigned i = 0; i < o->n_from; i++) {
		if (got_from[i] == o->count)
			continue;
		if (short_nodes < 8)
			fprintf(stderr, "%s %s (%" PRIu64 " of %" PRIu64 ")",
				short_nodes ? "," : "; for messages from", o->from[i].name,
				o->count - got_from[i], o->count);
		short_nodes++;
	}
	if (short_nodes > 8)
		fprintf(stderr, " and %u nodes more", short_nodes - 8);
	fputc('\n', stderr);
}

static void wait_signal(const sigset_t *sigs, bool go)
{
	int sig;

	do {
		if (sigwait(sigs, &sig) != 0)
			die("sigwait failed");
		if (go && sig != SIGUSR1)
			die("stopped before the go (SIGUSR1)");
	} while (sig == SIGUSR1 && !go);
}

static int exchange(const struct opts *o)
{
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe c[POLL_BATCH];
	uint64_t sends = o->count * o->n_to, expected = o->count * o->n_from;
	uint64_t sw = o->window < sends ? o->window : sends;
	uint64_t rw = o->window < expected ? o->window : expected;
	uint64_t next_msg = 0, sends_done = 0, t_go, t_last, last_progress;
	uint32_t depth = 16;
	struct send_slot *slots;
	uint8_t **rbufs, *seen;
	uint64_t *got_from;
	struct counts n = { 0 };
	const struct timespec no_wait = { 0, 0 };
	sigset_t sigs, stop;
	char line[200];
	int rc;

	if (sigemptyset(&sigs) < 0 || sigaddset(&sigs, SIGUSR1) < 0 ||
	    sigaddset(&sigs, SIGTERM) < 0 || sigaddset(&sigs, SIGINT) < 0 ||
	    sigprocmask(SIG_BLOCK, &sigs, NULL) < 0)
		die("cannot block SIGUSR1, SIGTERM and SIGINT: %s", strerror(errno));
	if (sigemptyset(&stop) < 0 || sigaddset(&stop, SIGTERM) < 0 ||
	    sigaddset(&stop, SIGINT) < 0)
		die("sigaddset failed");
	slots = calloc(sw, sizeof(*slots));
	rbufs = calloc(rw, sizeof(*rbufs));
	seen = calloc((expected + 7) / 8, 1);
	got_from = calloc(o->n_from, sizeof(*got_from));
	if (!slots || !rbufs || !seen || !got_from)
		die("out of memory");
	while (depth < sw + rw + 16)
		depth <<= 1;
	rc = sl_open(o->sock, &ctx);
	if (rc < 0)
		die("cannot connect to sluiced (%s): %s", o->sock ? o->sock : "default socket",
		    strerror(-rc));
	rc = sl_queue_open(ctx, (uint32_t)o->port, depth, &q);
	if (rc < 0)
		die("cannot open a queue on port %" PRIu64 ": %s", o->port, strerror(-rc));
	for (uint64_t s = 0; s < sw + rw; s++) {
		void *p = sl_alloc(q, o->size_max);

		if (!p)
			die("arena full: cannot allocate %" PRIu64 " buffers of %" PRIu64
			    " bytes (arena is %zu bytes; a smaller --window or --size)",
			    sw + rw, o->size_max, sl_arena_size(q));
		if (s < sw)
			slots[s].buf = p;
		else
			rbufs[s - sw] = p;
	}
	for (uint64_t s = 0; s < rw; s++)
		post(q, o, false, SL_ANY_SOURCE, 0, rbufs[s], o->size_max, RECV_FLAG | s);
	if (o->ready)
		write_ready_file(o->ready, "ready\n");
	if (o->wait_go)
		wait_signal(&sigs, true);

	t_go = t_last = last_progress = now_ns();
	for (uint64_t s = 0; s < sw; s++) {
		slots[s].msg = next_msg++;
		post_message(q, o, &slots[s], s);
	}
	while (sends_done < sends || n.received < expected) {
		int k, got = sl_poll(q, c, POLL_BATCH);

		if (got == 0) {
			rc = sl_wait(q, 100);
			if (rc < 0 && rc != -EINTR)
				die("sl_wait: %s", strerror(-rc));
			got = sl_poll(q, c, POLL_BATCH);
		}
		if (got < 0)
			die("sl_poll: %s", strerror(-got));
		for (k = 0; k < got; k++) {
			uint64_t s = c[k].user_ctx & ~RECV_FLAG;

			last_progress = now_ns();
			if (c[k].user_ctx & RECV_FLAG) {
				uint32_t seq = (uint32_t)c[k].tag;
				const struct peer *src = find_from(o, c[k].peer.node);
				uint64_t idx;

				if (s >= rw)
					die("a completion for no receive (user_ctx %#" PRIx64 ")",
					    c[k].user_ctx);
				if (c[k].status != SL_OK) {
					if (++n.recv_failed <= REPORTED_MAX)
						fprintf(stderr, "%s: %s: a receive completed %s\n",
							tool_name, o->self, sl_strerror(c[k].status));
				} else if (!src || !message_ok(o, rbufs[s], c[k].len, src->id, seq)) {
					if (++n.corrupt <= REPORTED_MAX)
						fprintf(stderr, "%s: %s: bad message from node %#" PRIx32
							"%s: tag %#" PRIx64 ", %" PRIu64 " bytes\n",
							tool_name, o->self, c[k].peer.node,
							src ? "" : " (not in --from)", c[k].tag, c[k].len);
				} else {
					idx = (uint64_t)src->index * o->count + seq;
					if (seen[idx / 8] & (1u << (idx % 8))) {
						n.dups++;
					} else {
						seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
						n.received++;
						got_from[src->index]++;
						t_last = last_progress;
					}
				}
				if (n.received < expected)
					post(q, o, false, SL_ANY_SOURCE, 0, rbufs[s], o->size_max, c[k].user_ctx);
				continue;
			}
			if (s >= sw)
				die("a completion for no send (user_ctx %" PRIu64 ")", s);
			if (c[k].status == SL_NAK_RECEIVER_FULL || c[k].status == SL_NAK_BUSY) {
				/* The same message again, after the back-off. */
				if (slots[s].naks < 7)
					slots[s].naks++;
				sleep_us(100u << slots[s].naks);
				post_message(q, o, &slots[s], s);
				continue;
			}
			if (c[k].status == SL_OK) {
				n.sent_ok++;
			} else if (++n.send_failed <= REPORTED_MAX) {
				fprintf(stderr, "%s: %s: the send of message %" PRIu64 " to %s completed %s\n",
					tool_name, o->self, slots[s].msg / o->n_to,
					o->to[slots[s].msg % o->n_to].name, sl_strerror(c[k].status));
			}
			sends_done++;
			t_last = last_progress;
			slots[s].naks = 0;
			if (next_msg < sends) {
				slots[s].msg = next_msg++;
				post_message(q, o, &slots[s], s);
			}
		}
		if (sigtimedwait(&stop, NULL, &no_wait) > 0)
			die("%s: stopped by a signal with %" PRIu64 " of %" PRIu64 " sends and %"
			    PRIu64 " of %" PRIu64 " messages done", o->self, sends_done, sends,
			    n.received, expected);
		if (now_ns() - last_progress > o->timeout_s * 1000000000ull) {
			say_missing(o, sends - sends_done, got_from);
			break;
		}
	}
	snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", n.sent_ok, sends, n.received, expected,
		 n.dups, n.corrupt, n.send_failed + n.recv_failed, (t_last - t_go) / 1000000);
	fputs(line, stdout);
	if (fflush(stdout) == EOF)
		die("cannot write the report: %s", strerror(errno));
	if (o->done)
		write_ready_file(o->done, line);
	if (o->hold)
		wait_signal(&sigs, false);
	sl_close(ctx);
	free(slots);
	free(rbufs);
	free(seen);
	free(got_from);
	return n.sent_ok == sends && n.received == expected && !n.dups && !n.corrupt &&
	       !n.recv_failed ? 0 : 1;
}

/* --size MIN or MIN-MAX. */
static void parse_sizes(const char *arg, struct opts *o)
{
	const char *dash = strchr(arg, '-');
	char min[32];

	if (!dash) {
		parse_opt_u64("--size", arg, HEADER_BYTES, SIZE_MAX_MSG, &o->size_min);
		o->size_max = o->size_min;
		return;
	}
	if ((size_t)(dash - arg) >= sizeof(min))
		bad_usage("--size: MIN-MAX, got '%s'", arg);
	memcpy(min, arg, (size_t)(dash - arg));
	min[dash - arg] = '\0';
	parse_opt_u64("--size", min, HEADER_BYTES, SIZE_MAX_MSG, &o->size_min);
	parse_opt_u64("--size", dash + 1, o->size_min, SIZE_MAX_MSG, &o->size_max);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "self", required_argument, NULL, 'n' },
		{ "port", required_argument, NULL, 'p' },
		{ "to", required_argument, NULL, 't' },
		{ "from", required_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 'z' },
		{ "window", required_argument, NULL, 'w' },
		{ "socket", required_argument, NULL, 's' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "wait-go", no_argument, NULL, 'g' },
		{ "done-file", required_argument, NULL, 'd' },
		{ "hold", no_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .size_min = 8, .size_max = 8, .window = 64, .timeout_s = 30 };
	char *to = NULL, *from = NULL;
	int c;

	tool_name = "mesh-exchange";
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': o.self = optarg; break;
		case 'p': parse_opt_u64("--port", optarg, 1, 65535, &o.port); break;
		case 't': to = optarg; break;
		case 'f': from = optarg; break;
		case 'c': parse_opt_u64("--count", optarg, 1, COUNT_MAX, &o.count); break;
		case 'z': parse_sizes(optarg, &o); break;
		case 'w': parse_opt_u64("--window", optarg, 1, WINDOW_MAX, &o.window); break;
		case 's': o.sock = optarg; break;
		case 'r': o.ready = optarg; break;
		case 'g': o.wait_go = true; break;
		case 'd': o.done = optarg; break;
		case 'H': o.hold = true; break;
		case 'T': parse_opt_u64("--timeout", optarg, 1, 3600, &o.timeout_s); break;
		case 'h': usage(stdout); return 0;
		default: return try_help();
		}
	}
	reject_operands(argc, argv);
	if (!o.self || !*o.self || !o.port || !to || !o.count)
		bad_usage("--self, --port, --to and --count are required");
	o.self_id = sl_node_id(o.self);
	o.to = parse_nodes("--to", to, &o, &o.n_to);
	if (from) {
		o.from = parse_nodes("--from", from, &o, &o.n_from);
	} else {
		o.from = calloc(o.n_to, sizeof(*o.from));
		if (!o.from)
			die("out of memory");
		memcpy(o.from, o.to, o.n_to * sizeof(*o.from));
		o.n_from = o.n_to;
	}
	qsort(o.from, o.n_from, sizeof(*o.from), cmp_peer_id);
	return exchange(&o);
}
