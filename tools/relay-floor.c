/*
 * relay-floor - the physical floor of sluice's process topology on this
 * machine: a small message's round trip through the same processes and
 * hops that sluice uses, with nothing of sluice in them (no descriptors,
 * no matching, no wire frames, no event loop), under a chosen wait policy.
 *
 *   relay-floor [--path ring|tcp|local|nodes] [--ends POLICY]
 *               [--relays POLICY] [--spin-us 20] [--iters 20000]
 *               [--warmup 1000] [--pin] [--rate N]
 *
 * Paths (A pings, B echoes; R, RA, RB relay, as sluiced does):
 *   ring   A <-> B over two shared-memory rings (proto/sl_ring.h, the
 *          rings of sluice's queues): the raw ring hop, 2 processes
 *   tcp    A <-> B over one loopback TCP connection (TCP_NODELAY), 2
 *          processes: what UCX over tcp does
 *   local  A <-> R <-> B, rings on both sides: a message within a node, 3
 *          processes
 *   nodes  A <-> RA <-tcp-> RB <-> B: a message between two nodes, 4
 *          processes
 * Policies (how a process waits for its next input):
 *   spin   poll without pause
 *   yield  poll, sched_yield() between empty polls (sluiced's spin)
 *   wait   yield-poll for --spin-us, then sleep: eventfd (the rings'
 *          NEED_WAKEUP handshake) or poll(2) on the socket (libsluice's
 *          sl_wait() and sluiced's progress engine)
 * Defaults: --ends wait --relays yield, sluice's own policy while it spins.
 * --pin: each side on a core of its own, as on two machines (A and R or
 * RA on CPU 0, B and RB on CPU 1).
 * --rate N (paths ring and local): A streams N messages instead, as many
 * at a time as its ring has room for (waiting for room by yielding, or
 * spinning with --ends spin), B takes them; prints messages per second.
 *
 * Prints one line: the path, the policies, the one-way latency (RTT/2)
 * median and 99th percentile in microseconds, and the round trips timed.
 * The message is 8 bytes in a 64-byte slot or frame.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "common.h"
#include "sl_ring.h"
#include "tcp_common.h"

#define PROG "relay-floor"
#define SLOT 64u		/* bytes per ring entry and per TCP frame */
#define RING_ENTRIES 64u
#define MAX_RINGS 4
#define MAX_INPUTS 2

enum policy { P_SPIN, P_YIELD, P_WAIT };
static const char *const policy_names[] = { "spin", "yield", "wait" };

enum path { PATH_RING, PATH_TCP, PATH_LOCAL, PATH_NODES };
static const char *const path_names[] = { "ring", "tcp", "local", "nodes" };

/* One ring in the shared page set: control words on their own lines. */
struct ring_mem {
	uint32_t head __attribute__((aligned(64)));
	uint32_t tail __attribute__((aligned(64)));
	uint32_t flags __attribute__((aligned(64)));
	uint8_t entries[RING_ENTRIES * SLOT] __attribute__((aligned(64)));
};

struct shared {
	struct ring_mem rings[MAX_RINGS];
};

/* A source of messages or a place to put them: a ring end or a socket. */
struct chan {
	struct sl_ring r;	/* ring ends */
	int efd;		/* the ring consumer's eventfd */
	int sock;		/* >= 0: a TCP socket instead */
};

static struct opts {
	enum path path;
	enum policy ends, relays;
	uint64_t spin_ns;
	uint64_t iters, warmup;
	bool pin;
	uint64_t rate;		/* messages to stream; 0: ping-pong */
} o = { PATH_NODES, P_WAIT, P_YIELD, 20000, 20000, 1000, false, 0 };

static struct shared *shm;
static int efds[MAX_RINGS];

static struct chan ring_end(unsigned i, bool producer)
{
	struct ring_mem *m = &shm->rings[i];
	struct sl_ring_offsets off = {
		.head = (uint64_t)((uint8_t *)&m->head - (uint8_t *)shm),
		.tail = (uint64_t)((uint8_t *)&m->tail - (uint8_t *)shm),
		.flags = (uint64_t)((uint8_t *)&m->flags - (uint8_t *)shm),
		.entries = (uint64_t)((uint8_t *)m->entries - (uint8_t *)shm),
		.ring_entries = RING_ENTRIES,
		.entry_size = SLOT,
	};
	struct chan c = { .efd = efds[i], .sock = -1 };

	if (sl_ring_init(&c.r, shm, sizeof(*shm), &off, SLOT, producer) != 0)
		die("ring %u: bad offsets", i);
	return c;
}

static struct chan sock_chan(int fd)
{
	return (struct chan){ .efd = -1, .sock = fd };
}

/* Take one message from @c into @msg if there is one: true if taken. */
static bool try_take(struct chan *c, uint8_t *msg)
{
	if (c->sock >= 0) {
		ssize_t k = recv(c->sock, msg, SLOT, MSG_DONTWAIT);

		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		if (k <= 0)
			die("recv: %s", k ? strerror(errno) : "peer closed");
		if ((size_t)k < SLOT && tcp_read_full(c->sock, msg + k, SLOT - (size_t)k, false) != 1)
			die("recv: %s", strerror(errno));
		return true;
	} else {
		int64_t n = sl_ring_cons_avail(&c->r);

		if (n < 0)
			die("ring corrupt");
		if (n == 0)
			return false;
		memcpy(msg, sl_ring_cons_slot(&c->r, 0), SLOT);
		sl_ring_cons_release(&c->r, 1);
		return true;
	}
}

static void put(struct chan *c, const uint8_t *msg)
{
	if (c->sock >= 0) {
		if (tcp_write_full(c->sock, msg, SLOT, false) != 0)
			die("send: %s", strerror(errno));
		return;
	}
	while (sl_ring_prod_space(&c->r, 1) <= 0)
		sched_yield();	/* cannot happen with one message in flight */
	memcpy(sl_ring_prod_slot(&c->r, 0), msg, SLOT);
	sl_ring_prod_commit(&c->r, 1);
	if (sl_ring_prod_needs_wakeup(&c->r)) {
		uint64_t one = 1;

		if (write(c->efd, &one, sizeof(one)) != sizeof(one))
			die("eventfd write: %s", strerror(errno));
	}
}

/* Sleep until one of @in has something (the wake-up handshake for rings;
 * no sleep if one had it already). */
static void sleep_on(struct chan **in, unsigned n)
{
	struct pollfd pfd[MAX_INPUTS];
	unsigned i;
	bool ready = false;

	for (i = 0; i < n; i++) {
		if (in[i]->sock >= 0) {
			pfd[i] = (struct pollfd){ .fd = in[i]->sock, .events = POLLIN };
			continue;
		}
		pfd[i] = (struct pollfd){ .fd = in[i]->efd, .events = POLLIN };
		if (sl_ring_cons_prepare_sleep(&in[i]->r) != 0)
			ready = true;
	}
	if (!ready && poll(pfd, n, -1) < 0 && errno != EINTR)
		die("poll: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		if (in[i]->sock >= 0)
			continue;
		sl_ring_cons_wake(&in[i]->r);
		if (pfd[i].revents & POLLIN) {
			uint64_t v;

			if (read(in[i]->efd, &v, sizeof(v)) != sizeof(v))
				die("eventfd read: %s", strerror(errno));
		}
	}
}

/* The index of the input of @in that gave a message into @msg. */
static unsigned take_next(struct chan **in, unsigned n, enum policy p, uint8_t *msg)
{
	uint64_t start = 0;

	for (;;) {
		unsigned i;

		for (i = 0; i < n; i++)
			if (try_take(in[i], msg))
				return i;
		if (p == P_SPIN) {
			sl_cpu_relax();
			continue;
		}
		if (p == P_WAIT) {
			uint64_t now = now_ns();

			if (!start)
				start = now;
			else if (now - start >= o.spin_ns) {
				sleep_on(in, n);
				start = 0;
				continue;
			}
		}
		sched_yield();
	}
}

/* A: ping @iters + @warmup times; prints the figures. */
static void pinger(struct chan *out, struct chan *in)
{
	uint64_t n = o.iters + o.warmup, i, *rtt = calloc(o.iters, sizeof(*rtt));
	uint8_t msg[SLOT] = { 0 };

	if (!rtt)
		die("out of memory");
	for (i = 0; i < n; i++) {
		uint64_t t0 = now_ns(), seq;

		memcpy(msg, &i, sizeof(i));
		put(out, msg);
		take_next(&in, 1, o.ends, msg);
		memcpy(&seq, msg, sizeof(seq));
		if (seq != i)
			die("echo %" PRIu64 " for ping %" PRIu64, seq, i);
		if (i >= o.warmup)
			rtt[i - o.warmup] = now_ns() - t0;
	}
	memset(msg, 0xff, sizeof(msg));	/* the end, and its echo */
	put(out, msg);
	take_next(&in, 1, o.ends, msg);
	qsort(rtt, o.iters, sizeof(*rtt), cmp_u64);
	printf("%s%s ends=%s relays=%s spin=%" PRIu64 "us: 8 B one-way p50 %.2f us p99 %.2f us "
	       "(%" PRIu64 " round trips)\n", path_names[o.path], o.pin ? " pinned" : "",
	       policy_names[o.ends],
	       o.path == PATH_RING || o.path == PATH_TCP ? "-" : policy_names[o.relays],
	       o.spin_ns / 1000, rtt[o.iters / 2] / 2000.0,
	       rtt[o.iters * 99 / 100] / 2000.0, o.iters);
	free(rtt);
}

static bool is_end(const uint8_t *msg)
{
	uint64_t v;

	memcpy(&v, msg, sizeof(v));
	return v == UINT64_MAX;
}

/* B: echo until the end; with --rate, take the stream and echo only its
 * end, having checked that every message came, in order. */
static void ponger(struct chan *out, struct chan *in)
{
	uint8_t msg[SLOT];
	uint64_t got = 0, seq;

	do {
		take_next(&in, 1, o.ends, msg);
		if (o.rate && !is_end(msg)) {
			memcpy(&seq, msg, sizeof(seq));
			if (seq != got)
				die("message %" PRIu64 " arrived as number %" PRIu64, seq, got);
			got++;
			continue;
		}
		if (o.rate && got != o.rate)
			die("%" PRIu64 " of %" PRIu64 " messages arrived", got, o.rate);
		put(out, msg);
	} while (!is_end(msg));
}

/* A with --rate: stream o.rate messages, then the end; prints the rate. */
static void streamer(struct chan *out, struct chan *in)
{
	uint64_t sent = 0, t0 = now_ns(), ns;
	uint8_t msg[SLOT];

	while (sent < o.rate) {
		int64_t space = sl_ring_prod_space(&out->r, 1);
		uint64_t k, i;

		if (space < 0)
			die("ring corrupt");
		if (space == 0) {
			if (o.ends == P_SPIN)
				sl_cpu_relax();
			else
				sched_yield();
			continue;
		}
		k = (uint64_t)space < o.rate - sent ? (uint64_t)space : o.rate - sent;
		for (i = 0; i < k; i++) {
			uint64_t seq = sent + i;

			memcpy(sl_ring_prod_slot(&out->r, (uint32_t)i), &seq, sizeof(seq));
		}
		sl_ring_prod_commit(&out->r, (uint32_t)k);
		if (sl_ring_prod_needs_wakeup(&out->r)) {
			uint64_t one = 1;

			if (write(out->efd, &one, sizeof(one)) != sizeof(one))
				die("eventfd write: %s", strerror(errno));
		}
		sent += k;
	}
	memset(msg, 0xff, sizeof(msg));
	put(out, msg);
	take_next(&in, 1, o.ends, msg);
	ns = now_ns() - t0;
	printf("%s%s ends=%s relays=%s: 8 B stream %.0f msg/s (%" PRIu64 " messages)\n",
	       path_names[o.path], o.pin ? " pinned" : "", policy_names[o.ends],
	       o.path == PATH_RING ? "-" : policy_names[o.relays], o.rate * 1e9 / (double)ns,
	       o.rate);
}

/* A relay: what comes on in[k] goes out on out[k], until the end passed
 * both ways (the end goes A to B, and B echoes it back). */
static void relay(struct chan *in0, struct chan *out0, struct chan *in1, struct chan *out1)
{
	struct chan *in[2] = { in0, in1 }, *out[2] = { out0, out1 };
	uint8_t msg[SLOT];
	unsigned ends = 0;

	while (ends < 2) {
		unsigned k = take_next(in, 2, o.relays, msg);

		put(out[k], msg);
		if (is_end(msg))
			ends++;
	}
}

/* Both ends of one loopback TCP connection, TCP_NODELAY (tcp_common.h). */
static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	char port[8];
	int l = tcp_listen("127.0.0.1", "0");

	if (getsockname(l, (struct sockaddr *)&sa, &len) != 0)
		die("getsockname: %s", strerror(errno));
	snprintf(port, sizeof(port), "%u", (unsigned)ntohs(sa.sin_port));
	*a = tcp_connect("127.0.0.1", port);
	*b = tcp_accept_one(l);
	tcp_set_opts(*a, false);
	tcp_set_opts(*b, false);
}

/* Rings: 0 A->R (or A->B), 1 R->A (or B->A), 2 R->B, 3 B->R. */
struct role { int who; int s0, s1; };

static pid_t spawn(void (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		const struct role *r = arg;

		if (o.pin) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(r->who == 'a' || r->who == 'A' || r->who == 'r' ? 0 : 1, &one);
			if (sched_setaffinity(0, sizeof(one), &one) != 0)
				die("sched_setaffinity: %s", strerror(errno));
		}
		fn(arg);
		fflush(stdout);
		_exit(0);
	}
	return pid;
}

static void run_role(void *arg)
{
	const struct role *r = arg;
	struct chan in, out, in1, out1;

	switch (r->who) {
	case 'a':	/* A: out ring 0 or socket, in ring 1 or socket */
		if (o.path == PATH_TCP) {
			in = out = sock_chan(r->s0);
		} else {
			out = ring_end(0, true);
			in = ring_end(1, false);
		}
		if (o.rate)
			streamer(&out, &in);
		else
			pinger(&out, &in);
		break;
	case 'b':
		if (o.path == PATH_TCP) {
			in = out = sock_chan(r->s0);
		} else if (o.path == PATH_RING) {
			in = ring_end(0, false);
			out = ring_end(1, true);
		} else {
			in = ring_end(2, false);
			out = ring_end(3, true);
		}
		ponger(&out, &in);
		break;
	case 'r':	/* local: A's ring to B's, B's to A's */
		in = ring_end(0, false);
		out = ring_end(2, true);
		in1 = ring_end(3, false);
		out1 = ring_end(1, true);
		relay(&in, &out, &in1, &out1);
		break;
	case 'A':	/* nodes, A's side: ring 0 to the socket, the socket to ring 1 */
		in = ring_end(0, false);
		out = sock_chan(r->s0);
		in1 = sock_chan(r->s0);
		out1 = ring_end(1, true);
		relay(&in, &out, &in1, &out1);
		break;
	case 'B':	/* nodes, B's side: the socket to ring 2, ring 3 to the socket */
		in = sock_chan(r->s1);
		out = ring_end(2, true);
		in1 = ring_end(3, false);
		out1 = sock_chan(r->s1);
		relay(&in, &out, &in1, &out1);
		break;
	}
}

static enum policy parse_policy(const char *opt, const char *s)
{
	unsigned i;

	for (i = 0; i < 3; i++)
		if (!strcmp(s, policy_names[i]))
			return (enum policy)i;
	bad_usage("%s: spin, yield or wait, not '%s'", opt, s);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [--path ring|tcp|local|nodes] [--ends POLICY] [--relays POLICY]\n"
		"                   [--spin-us US] [--iters N] [--warmup N]\n"
		"\n"
		"The floor of sluice's process topology: 8 B round trips through the same\n"
		"processes and hops (shared-memory rings, loopback TCP), nothing else.\n"
		"  --path     ring: A<->B over rings; tcp: A<->B over TCP; local: A<->R<->B\n"
		"             over rings; nodes: A<->RA<-tcp->RB<->B (default nodes)\n"
		"  --ends     how A and B wait: spin, yield or wait (default wait)\n"
		"  --relays   how the relays wait (default yield)\n"
		"  --spin-us  the yield-polling window of wait before sleeping (default 20)\n"
		"  --iters    round trips timed (default 20000), after --warmup (1000)\n"
		"  --pin      A's side on CPU 0, B's on CPU 1, as on two machines\n"
		"  --rate N   stream N messages A to B instead (paths ring and local)\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "path", required_argument, NULL, 'p' },
		{ "ends", required_argument, NULL, 'e' },
		{ "relays", required_argument, NULL, 'r' },
		{ "spin-us", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "pin", no_argument, NULL, 'P' },
		{ "rate", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct role roles[4];
	pid_t pids[4];
	unsigned i, n = 0, k;
	int opt, sa = -1, sb = -1, failed = 0;
	uint64_t v;

	tool_name = PROG;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			for (k = 0; k < 4 && strcmp(optarg, path_names[k]); k++)
				;
			if (k == 4)
				bad_usage("--path: ring, tcp, local or nodes, not '%s'", optarg);
			o.path = (enum path)k;
			break;
		case 'e': o.ends = parse_policy("--ends", optarg); break;
		case 'r': o.relays = parse_policy("--relays", optarg); break;
		case 's':
			parse_opt_u64("--spin-us", optarg, 0, 1000000, &v);
			o.spin_ns = v * 1000;
			break;
		case 'n': parse_opt_u64("--iters", optarg, 1, 100000000, &o.iters); break;
		case 'w': parse_opt_u64("--warmup", optarg, 0, 100000000, &o.warmup); break;
		case 'P': o.pin = true; break;
		case 'R': parse_opt_u64("--rate", optarg, 1, 1000000000, &o.rate); break;
		case 'h': usage(stdout); return 0;
		default: return try_help();
		}
	}
	reject_operands(argc, argv);
	if (o.rate && o.path != PATH_RING && o.path != PATH_LOCAL)
		bad_usage("--rate: paths ring and local only");
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	for (i = 0; i < MAX_RINGS; i++) {
		efds[i] = eventfd(0, EFD_CLOEXEC);
		if (efds[i] < 0)
			die("eventfd: %s", strerror(errno));
	}
	if (o.path == PATH_TCP || o.path == PATH_NODES)
		tcp_pair(&sa, &sb);
	roles[n++] = (struct role){ 'b', o.path == PATH_TCP ? sb : -1, -1 };
	if (o.path == PATH_LOCAL)
		roles[n++] = (struct role){ 'r', -1, -1 };
	if (o.path == PATH_NODES) {
		roles[n++] = (struct role){ 'A', sa, -1 };
		roles[n++] = (struct role){ 'B', -1, sb };
	}
	roles[n++] = (struct role){ 'a', sa, -1 };
	fflush(stdout);
	for (i = 0; i < n; i++)
		pids[i] = spawn(run_role, &roles[i]);
	for (i = 0; i < n; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	return failed;
}
