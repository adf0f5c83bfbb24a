/*
 * test_encrypt.c - [security] mode encrypt on the tcp transport
 * (docs/encryption.md): TLS 1.3 after the authenticated handshake.
 *
 * The link between the two nodes under test runs through a relay: a
 * small TCP proxy, forked by the test, that the dialer is told is its
 * peer.  It records what crosses: how many times a known 64-byte
 * plaintext pattern, which every message carries, appears on the wire
 * (never in mode encrypt; many times in mode authenticate, so the check
 * can fail), and it can change one byte of one TLS record on its way
 * (the connection breaks, the link reconnects, every message arrives
 * once and exact).  A third node, linked to both directly, is the
 * bystander: its link keeps its one connection and its traffic.
 */
#include "autoconfig.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "harness.h"
#include "peer_auth.h"
#include "sl_wire.h"
#include "sluice.h"
#include "testutil.h"

enum { DIAL = 0, ACC = 1, BYS = 2 };

#define MIB (1ull << 20)
/* Fails a wait when no completion came and the daemons moved nothing for
 * this long (ms). */
#define STALL_MS 20000
/* The plaintext every message carries, 64 bytes, at each 128-byte block. */
static const char canary[65] =
	"sluice-plaintext-canary:if-you-can-read-this-the-wire-is-clear!!";
#define CANARY_LEN 64u
#define BLOCK 128u

/* ------------------------------------------------------------------ */
/* Nodes                                                                */
/* ------------------------------------------------------------------ */

/* Who dials: the lower node id (link_connect.c, link_add). */
static void roles(const char **names)
{
	bool a_dials = sl_node_id("a") < sl_node_id("b");

	names[DIAL] = a_dials ? "a" : "b";
	names[ACC] = a_dials ? "b" : "a";
	names[BYS] = "c";
}

struct keyfile {
	char path[128];
};

static void key_make(struct keyfile *kf)
{
	char err[512];

	snprintf(kf->path, sizeof(kf->path), "/tmp/sluice-test-encrypt-%d.key", (int)getpid());
	(void)unlink(kf->path);
	H_ASSERT(peer_key_generate(kf->path, err, sizeof(err)) == 0, "%s", err);
}

static const char *conf_mode(char *buf, size_t cap, const char *mode, const struct keyfile *k)
{
	snprintf(buf, cap, "[security]\nmode = %s\nkey_file = %s\n"
		 "[limits]\narena_bytes = 320M\n", mode, k->path);
	return buf;
}

static void peer_of(struct h_daemon *p, const struct h_daemon *d, uint16_t port)
{
	*p = *d;
	p->tcp_port = port;
}

/*
 * Start the accepter, the bystander (@with_bystander) and the dialer on
 * @ports, the dialer told that the accepter listens at @relay_port (0:
 * its own port); @confs[i] is node i's configuration text.
 */
static void nodes_start(struct h_daemon *nodes, const char **names, const uint16_t *ports,
			uint16_t relay_port, bool with_bystander, const char *const *confs)
{
	struct h_daemon peers[2];
	unsigned i, np = with_bystander ? 2 : 1;

	for (i = 0; i < 3; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		snprintf(nodes[i].name, sizeof(nodes[i].name), "%s", names[i]);
		nodes[i].node = sl_node_id(names[i]);
		nodes[i].tcp_port = ports[i];
	}
	peer_of(&peers[0], &nodes[DIAL], ports[DIAL]);
	peer_of(&peers[1], &nodes[BYS], ports[BYS]);
	h_daemon_start_conf(&nodes[ACC], names[ACC], ports[ACC], peers, np, confs[ACC]);
	if (with_bystander) {
		peer_of(&peers[0], &nodes[DIAL], ports[DIAL]);
		peer_of(&peers[1], &nodes[ACC], ports[ACC]);
		h_daemon_start_conf(&nodes[BYS], names[BYS], ports[BYS], peers, 2, confs[BYS]);
	}
	peer_of(&peers[0], &nodes[ACC], relay_port ? relay_port : ports[ACC]);
	peer_of(&peers[1], &nodes[BYS], ports[BYS]);
	h_daemon_start_conf(&nodes[DIAL], names[DIAL], ports[DIAL], peers, np, confs[DIAL]);
}

static void pick_ports(uint16_t *ports)
{
	do {
		for (int i = 0; i < 3; i++)
			ports[i] = h_free_port();
	} while (ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2]);
}

static void nodes_stop(struct h_daemon *nodes, bool with_bystander)
{
	h_daemon_stop(&nodes[DIAL]);
	h_daemon_stop(&nodes[ACC]);
	if (with_bystander)
		h_daemon_stop(&nodes[BYS]);
}

static uint64_t link_stat(const struct h_daemon *d, const char *peer, const char *what)
{
	char key[96];

	snprintf(key, sizeof(key), "link.%s.%s", peer, what);
	return h_daemon_stat(d, key);
}

static void expect_link_shows(const struct h_daemon *d, const char *peer, const char *how)
{
	char key[96], val[32];

	snprintf(key, sizeof(key), "link.%s.auth", peer);
	h_daemon_stat_str(d, key, val, sizeof(val));
	H_ASSERT(strcmp(val, how) == 0, "%s: link %s shows '%s', want '%s'", d->name, peer, val,
		 how);
}

static unsigned log_count(const struct h_daemon *d, const char *needle, const char *and1,
			  const char *and2)
{
	FILE *f = fopen(d->log, "r");
	char line[1024];
	unsigned n = 0;

	H_ASSERT(f, "%s: %s", d->log, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle) && (!and1 || strstr(line, and1)) &&
		    (!and2 || strstr(line, and2)))
			n++;
	fclose(f);
	return n;
}

/* ------------------------------------------------------------------ */
/* The relay                                                            */
/* ------------------------------------------------------------------ */

#define RELAY_PAIRS 8
#define RELAY_CHUNK (64u << 10)

struct relay_shared {
	_Atomic uint64_t conns;		/* connections relayed */
	_Atomic uint64_t bytes[2];	/* 0: dialer to accepter, 1: back */
	_Atomic uint64_t hits[2];	/* canaries seen on the wire */
	_Atomic uint64_t records[2];	/* TLS records seen (mode encrypt) */
	_Atomic int flip_req;		/* change a byte of the next large record */
	_Atomic int flipped;
	_Atomic uint64_t flip_at;	/* its offset in the dialer's stream */
	/* A man in the middle: when not 0, after the AUTH frames the
	 * dialer's stream goes to this port (a TLS server with a
	 * certificate) instead of the accepter. */
	uint16_t mitm_port;
	_Atomic uint64_t mitm_conns;
};

/* One direction of one relayed connection. */
struct relay_dir {
	uint8_t tail[CANARY_LEN - 1];	/* the last bytes, for canaries across reads */
	size_t tail_len;
	uint64_t off;			/* bytes so far */
	/* TLS record walk (@tls): after @auth_left AUTH frames (each sized
	 * by its common header: hdr_len at 4, payload_len at 8), records
	 * from stream offset @plain_end on. */
	bool tls, switched;
	unsigned auth_left, fh_have;
	uint8_t fh[12];
	uint64_t frame_left, plain_end;
	uint8_t hdr[5];
	unsigned hdr_have;
	uint32_t body_left, body_len;
	bool target;			/* the record to change */
};

struct relay_pair {
	int fd[2];			/* 0: from the dialer, 1: to the accepter */
	struct relay_dir dir[2];
};

static void relay_scan(struct relay_shared *sh, struct relay_dir *rd, int d, const uint8_t *p,
		       size_t n)
{
	uint8_t buf[CANARY_LEN - 1 + RELAY_CHUNK];
	size_t len = rd->tail_len + n, k;
	const uint8_t *at = buf, *end;

	memcpy(buf, rd->tail, rd->tail_len);
	memcpy(buf + rd->tail_len, p, n);
	end = buf + len;
	while ((at = memmem(at, (size_t)(end - at), canary, CANARY_LEN))) {
		atomic_fetch_add(&sh->hits[d], 1);
		at += CANARY_LEN;
	}
	k = len < sizeof(rd->tail) ? len : sizeof(rd->tail);
	memcpy(rd->tail, end - k, k);
	rd->tail_len = k;
}

/* Walk the TLS records of direction @d; on request, change one byte in
 * the middle of the next application-data record of 1 KiB or more from
 * the dialer. */
static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void relay_records(struct relay_shared *sh, struct relay_dir *rd, int d, uint8_t *p,
			  size_t n)
{
	size_t i = 0;

	while (rd->tls && i < n) {
		if (rd->auth_left && rd->fh_have < sizeof(rd->fh)) {
			rd->fh[rd->fh_have++] = p[i++];
			if (rd->fh_have == sizeof(rd->fh))
				rd->frame_left = (uint64_t)get_le32(rd->fh + 4) + get_le32(rd->fh + 8) -
						 sizeof(rd->fh);
			continue;
		}
		if (rd->auth_left) {
			size_t take = rd->frame_left < n - i ? (size_t)rd->frame_left : n - i;

			i += take;
			rd->frame_left -= take;
			if (rd->frame_left == 0) {
				rd->fh_have = 0;
				if (--rd->auth_left == 0)
					rd->plain_end = rd->off + i;
			}
			continue;
		}
		if (rd->hdr_have < 5) {
			rd->hdr[rd->hdr_have++] = p[i++];
			if (rd->hdr_have == 5) {
				rd->body_len = rd->body_left = (uint32_t)rd->hdr[3] << 8 | rd->hdr[4];
				atomic_fetch_add(&sh->records[d], 1);
				rd->target = d == 0 && rd->hdr[0] == 23 && rd->body_len >= 1024 &&
					     atomic_load(&sh->flip_req) && !atomic_load(&sh->flipped);
				if (rd->body_left == 0)
					rd->hdr_have = 0;
			}
			continue;
		}
		{
			size_t take = rd->body_left < n - i ? rd->body_left : n - i;
			uint32_t mid = rd->body_len / 2;
			uint32_t done = rd->body_len - rd->body_left;

			if (rd->target && mid >= done && mid < done + take) {
				p[i + (mid - done)] ^= 0x20;
				atomic_store(&sh->flip_at, rd->off + i + (mid - done));
				atomic_store(&sh->flipped, 1);
				atomic_store(&sh->flip_req, 0);
				rd->target = false;
			}
			i += take;
			rd->body_left -= (uint32_t)take;
			if (rd->body_left == 0)
				rd->hdr_have = 0;
		}
	}
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int connect_local(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(s);
		s = -1;
	}
	return s;
}

/* The man in the middle: once the dialer's AUTH 1 and 3 have passed,
 * what follows (its ClientHello) goes to the TLS server at mitm_port,
 * whose answers go back to the dialer.  @n bytes at @p are the chunk
 * being relayed; returns how many of them still go to the accepter. */
static size_t relay_mitm(struct relay_shared *sh, struct relay_pair *rp, const uint8_t *p,
			 size_t n)
{
	uint64_t auth = rp->dir[0].plain_end, off = rp->dir[0].off;
	size_t before;
	int s;

	if (!sh->mitm_port || rp->dir[0].switched || rp->dir[0].auth_left)
		return n;
	before = off >= auth ? 0 : (size_t)(auth - off < n ? auth - off : n);
	(void)write_all(rp->fd[1], p, before);
	s = connect_local(sh->mitm_port);
	close(rp->fd[1]);
	rp->fd[1] = s;
	rp->dir[0].switched = true;
	atomic_fetch_add(&sh->mitm_conns, 1);
	if (s >= 0)
		(void)write_all(s, p + before, n - before);
	return 0;
}

static void pair_close(struct relay_pair *rp)
{
	for (int k = 0; k < 2; k++)
		if (rp->fd[k] >= 0) {
			close(rp->fd[k]);
			rp->fd[k] = -1;
		}
}

/* The relay process: accept on @lfd, connect each to 127.0.0.1:@to,
 * copy both ways, scanning (@tls: walking records too). */
static void relay_run(int lfd, uint16_t to, bool tls, struct relay_shared *sh)
{
	struct relay_pair pairs[RELAY_PAIRS];
	static uint8_t buf[RELAY_CHUNK];
	int i;

	for (i = 0; i < RELAY_PAIRS; i++)
		pairs[i].fd[0] = pairs[i].fd[1] = -1;
	for (;;) {
		struct pollfd pfd[1 + 2 * RELAY_PAIRS];
		int n = 0;

		pfd[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < RELAY_PAIRS; i++) {
			pfd[n++] = (struct pollfd){ .fd = pairs[i].fd[0], .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = pairs[i].fd[1], .events = POLLIN };
		}
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(3);
		}
		if (pfd[0].revents & POLLIN) {
			int c = accept(lfd, NULL, NULL), s = -1;

			if (c >= 0 && (s = connect_local(to)) < 0) {
				close(c);
				c = -1;
			}
			for (i = 0; c >= 0 && i < RELAY_PAIRS; i++) {
				if (pairs[i].fd[0] >= 0)
					continue;
				memset(&pairs[i], 0, sizeof(pairs[i]));
				pairs[i].fd[0] = c;
				pairs[i].fd[1] = s;
				/* Before TLS: AUTH 1 and 3 from the dialer, AUTH 2 back. */
				pairs[i].dir[0].tls = pairs[i].dir[1].tls = tls;
				pairs[i].dir[0].auth_left = 2;
				pairs[i].dir[1].auth_left = 1;
				(void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
				(void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
				atomic_fetch_add(&sh->conns, 1);
				c = -1;
			}
			if (c >= 0) {
				close(c);
				close(s);
			}
		}
		for (i = 0; i < RELAY_PAIRS; i++) {
			for (int d = 0; d < 2; d++) {
				struct relay_pair *rp = &pairs[i];
				short re = pfd[1 + 2 * i + d].revents;
				ssize_t r;

				if (rp->fd[d] < 0 || !(re & (POLLIN | POLLHUP | POLLERR)))
					continue;
				r = read(rp->fd[d], buf, sizeof(buf));
				if (r <= 0) {
					pair_close(rp);
					break;
				}
				relay_scan(sh, &rp->dir[d], d, buf, (size_t)r);
				relay_records(sh, &rp->dir[d], d, buf, (size_t)r);
				atomic_fetch_add(&sh->bytes[d], (uint64_t)r);
				if (d == 0 && relay_mitm(sh, rp, buf, (size_t)r) == 0) {
					rp->dir[0].off += (uint64_t)r;
					if (rp->fd[1] < 0) {
						pair_close(rp);
						break;
					}
					continue;
				}
				rp->dir[d].off += (uint64_t)r;
				if (write_all(rp->fd[1 - d], buf, (size_t)r) < 0) {
					pair_close(rp);
					break;
				}
			}
		}
	}
}

struct relay {
	pid_t pid;
	uint16_t port;
	struct relay_shared *sh;
};

static void relay_start_mitm(struct relay *r, uint16_t to, bool tls, uint16_t mitm_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	H_ASSERT(lfd >= 0, "socket: %s", strerror(errno));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	H_EQ(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	H_EQ(listen(lfd, 16), 0);
	H_EQ(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	r->port = ntohs(sa.sin_port);
	r->sh = shared_alloc(sizeof(*r->sh));
	r->sh->mitm_port = mitm_port;
	r->pid = h_fork();
	if (r->pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		relay_run(lfd, to, tls, r->sh);
		_exit(0);
	}
	H_EQ(close(lfd), 0);
}

static void relay_start(struct relay *r, uint16_t to, bool tls)
{
	relay_start_mitm(r, to, tls, 0);
}

static void relay_stop(struct relay *r)
{
	int st;

	H_EQ(kill(r->pid, SIGKILL), 0);
	H_EQ(waitpid(r->pid, &st, 0), r->pid);
	shared_free(r->sh, sizeof(*r->sh));
}

static void relay_print(const struct relay *r, const char *what)
{
	const struct relay_shared *sh = r->sh;

	printf("%s: relay: %" PRIu64 " connections, %" PRIu64 " + %" PRIu64 " bytes, "
	       "canaries %" PRIu64 " + %" PRIu64 ", TLS records %" PRIu64 " + %" PRIu64 "\n",
	       what, atomic_load(&sh->conns), atomic_load(&sh->bytes[0]),
	       atomic_load(&sh->bytes[1]), atomic_load(&sh->hits[0]), atomic_load(&sh->hits[1]),
	       atomic_load(&sh->records[0]), atomic_load(&sh->records[1]));
}

/* ------------------------------------------------------------------ */
/* Traffic                                                              */
/* ------------------------------------------------------------------ */

/* Message @seed: a canary at each 128-byte block, position-unique words
 * between, so that a byte out of place shows. */
static void msg_make(uint8_t *p, uint64_t len, uint64_t seed)
{
	uint64_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = mix64(seed * 0x9e3779b97f4a7c15ull + i);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)mix64(seed + i);
	for (i = 0; i + BLOCK <= len; i += BLOCK)
		memcpy(p + i, canary, CANARY_LEN);
}

static bool msg_ok(const uint8_t *p, uint64_t len, uint64_t seed, uint8_t *scratch)
{
	msg_make(scratch, len, seed);
	return memcmp(p, scratch, len) == 0;
}

/* One way of traffic: @n messages of @sizes from a queue on @from to a
 * queue on @to, each message its own tag (its index), so that each
 * receive completes with exactly its message. */
struct flow {
	const char *name;
	const struct h_daemon *from, *to;
	uint32_t port;			/* the receiver's; the sender's is port + 1 */
	const uint64_t *sizes;
	unsigned n;
	struct sl_ctx *cs, *cr;
	struct sl_queue *qs, *qr;
	uint8_t *sbuf, *rbuf;
	uint64_t *off;			/* each message's offset in both buffers */
	unsigned posted, sent, received;
	uint8_t *seen;			/* completions per receive */
};

#define FLOW_DEPTH 512u

static void flow_open(struct flow *f)
{
	uint64_t total = 0;
	unsigned i;

	f->off = calloc(f->n, sizeof(*f->off));
	f->seen = calloc(f->n, 1);
	H_ASSERT(f->off && f->seen && f->n <= FLOW_DEPTH, "flow %s", f->name);
	for (i = 0; i < f->n; i++) {
		f->off[i] = total;
		total += (f->sizes[i] + 63) & ~63ull;
	}
	H_EQ(sl_open(f->from->sock, &f->cs), 0);
	H_EQ(sl_open(f->to->sock, &f->cr), 0);
	H_EQ(sl_queue_open(f->cs, f->port + 1, FLOW_DEPTH, &f->qs), 0);
	H_EQ(sl_queue_open(f->cr, f->port, FLOW_DEPTH, &f->qr), 0);
	f->sbuf = sl_alloc(f->qs, total);
	f->rbuf = sl_alloc(f->qr, total);
	H_ASSERT(f->sbuf && f->rbuf, "%s: sl_alloc %" PRIu64 " bytes", f->name, total);
	memset(f->rbuf, 0, total);
	for (i = 0; i < f->n; i++) {
		msg_make(f->sbuf + f->off[i], f->sizes[i], (uint64_t)f->port << 20 | i);
		H_EQ(sl_recv(f->qr, sl_queue_addr(f->qs), i, ~0ull, f->rbuf + f->off[i],
			     f->sizes[i], CTX_RECV | i), 0);
	}
}

static void flow_close(struct flow *f)
{
	H_EQ(sl_queue_close(f->qs), 0);
	H_EQ(sl_queue_close(f->qr), 0);
	sl_close(f->cs);
	sl_close(f->cr);
	free(f->off);
	free(f->seen);
}

/* What moves while transfers are under way, summed over the daemons. */
static uint64_t progress_mark(const struct h_daemon *ds, unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		struct h_stats st;

		h_daemon_stats(&ds[i], &st);
		sum += h_stats_u64(&st, "xport.writes_rx") + h_stats_u64(&st, "daemon.remote_msgs_rx");
	}
	return sum;
}

/* Post every send and collect every completion of @flows; each send and
 * each receive completes once, SL_OK, and each message is byte-exact.
 * Fails only after STALL_MS without a completion and without anything
 * moving in the daemons @ds. */
static void flows_run(struct flow *flows, unsigned nf, const struct h_daemon *ds, unsigned nd)
{
	int64_t last = h_now_ms(), last_check = last;
	uint64_t mark = progress_mark(ds, nd);
	uint8_t *scratch = NULL;
	uint64_t biggest = 0;

	for (unsigned k = 0; k < nf; k++)
		for (unsigned i = 0; i < flows[k].n; i++)
			biggest = flows[k].sizes[i] > biggest ? flows[k].sizes[i] : biggest;
	scratch = malloc(biggest ? biggest : 1);
	H_ASSERT(scratch, "malloc");
	for (;;) {
		bool done = true;

		for (unsigned k = 0; k < nf; k++) {
			struct flow *f = &flows[k];
			struct sl_cqe cqe[16];
			int n, rc;

			while (f->posted < f->n) {
				unsigned i = f->posted;

				rc = sl_send(f->qs, sl_queue_addr(f->qr), i, f->sbuf + f->off[i],
					     f->sizes[i], CTX_SEND | i);
				if (rc == -EAGAIN)
					break;
				H_ASSERT(rc == 0, "%s: sl_send %u: %s", f->name, i, strerror(-rc));
				f->posted++;
			}
			n = sl_poll(f->qs, cqe, 16);
			H_ASSERT(n >= 0, "%s: sl_poll: %s", f->name, strerror(-n));
			for (int j = 0; j < n; j++) {
				H_ASSERT(cqe[j].status == SL_OK && cqe[j].opcode == SL_OP_SEND,
					 "%s: send %u: %s", f->name, CTX_INDEX(cqe[j].user_ctx),
					 sl_strerror(cqe[j].status));
				f->sent++;
				last = h_now_ms();
			}
			n = sl_poll(f->qr, cqe, 16);
			H_ASSERT(n >= 0, "%s: sl_poll: %s", f->name, strerror(-n));
			for (int j = 0; j < n; j++) {
				unsigned i = CTX_INDEX(cqe[j].user_ctx);

				H_ASSERT(i < f->n && cqe[j].opcode == SL_OP_RECV, "%s: stray completion",
					 f->name);
				H_ASSERT(cqe[j].status == SL_OK && cqe[j].len == f->sizes[i],
					 "%s: receive %u: %s, %" PRIu64 " bytes of %" PRIu64, f->name, i,
					 sl_strerror(cqe[j].status), (uint64_t)cqe[j].len, f->sizes[i]);
				H_ASSERT(++f->seen[i] == 1, "%s: message %u completed twice", f->name, i);
				H_ASSERT(msg_ok(f->rbuf + f->off[i], f->sizes[i],
						(uint64_t)f->port << 20 | i, scratch),
					 "%s: message %u (%" PRIu64 " bytes) not byte-exact", f->name, i,
					 f->sizes[i]);
				f->received++;
				last = h_now_ms();
			}
			if (f->sent < f->n || f->received < f->n)
				done = false;
		}
		if (done)
			break;
		if (h_now_ms() - last_check >= 1000) {
			uint64_t m = progress_mark(ds, nd);

			last_check = h_now_ms();
			if (m != mark) {
				mark = m;
				last = h_now_ms();
			}
		}
		if (h_now_ms() - last > STALL_MS) {
			for (unsigned k = 0; k < nf; k++)
				fprintf(stderr, "%s: %u of %u sent, %u received\n", flows[k].name,
					flows[k].sent, flows[k].n, flows[k].received);
			h_fail(__FILE__, __LINE__, "progress", "nothing completed and nothing moved "
			       "for %d ms", STALL_MS);
		}
		h_sleep_ms(1);
	}
	free(scratch);
	/* Nothing more: no completion after the last. */
	for (unsigned k = 0; k < nf; k++) {
		expect_no_cqe(flows[k].qr, 100);
		expect_no_cqe(flows[k].qs, 100);
	}
}

/* Eager (up to the default eager_max of 64 KiB) and rendezvous sizes. */
static const uint64_t sizes_big[] = { 8, 4096, 60000, MIB, 64 * MIB };

/* Both ways between @x and @y through whatever links them. */
static void exchange(const struct h_daemon *x, const struct h_daemon *y, uint32_t port,
		     const uint64_t *sizes, unsigned n, const struct h_daemon *ds, unsigned nd)
{
	struct flow f[2] = {
		{ .name = "there", .from = x, .to = y, .port = port, .sizes = sizes, .n = n },
		{ .name = "back", .from = y, .to = x, .port = port + 2, .sizes = sizes, .n = n },
	};

	flow_open(&f[0]);
	flow_open(&f[1]);
	flows_run(f, 2, ds, nd);
	flow_close(&f[0]);
	flow_close(&f[1]);
}

/* ------------------------------------------------------------------ */
/* Cases                                                                */
/* ------------------------------------------------------------------ */

/* The two nodes under test through a relay, in @mode, and maybe the
 * bystander; every link up. */
struct rig {
	const char *names[3];
	struct h_daemon nodes[3];
	uint16_t ports[3];
	struct keyfile key;
	struct relay relay;
	bool bystander;
};

static void rig_start(struct rig *g, const char *mode, bool bystander)
{
	char conf[512];
	const char *confs[3];

	roles(g->names);
	key_make(&g->key);
	g->bystander = bystander;
	confs[DIAL] = confs[ACC] = confs[BYS] = conf_mode(conf, sizeof(conf), mode, &g->key);
	pick_ports(g->ports);
	relay_start(&g->relay, g->ports[ACC], strcmp(mode, "encrypt") == 0);
	nodes_start(g->nodes, g->names, g->ports, g->relay.port, bystander, confs);
	h_wait_link(&g->nodes[DIAL], &g->nodes[ACC]);
	h_wait_link(&g->nodes[ACC], &g->nodes[DIAL]);
	if (bystander) {
		h_wait_link(&g->nodes[DIAL], &g->nodes[BYS]);
		h_wait_link(&g->nodes[BYS], &g->nodes[DIAL]);
		h_wait_link(&g->nodes[ACC], &g->nodes[BYS]);
	}
}

static void rig_stop(struct rig *g)
{
	nodes_stop(g->nodes, g->bystander);
	relay_stop(&g->relay);
	H_EQ(unlink(g->key.path), 0);
}

/*
 * Mode encrypt through the relay: eager and rendezvous messages up to
 * 64 MiB each way arrive byte-exact, and not one canary crosses the wire
 * (while the messages carry 1,048,576 of them); both ends show the link
 * encrypted and count a TLS session each, no TLS failure, one connection.
 */
START_TEST(encrypted_on_the_wire)
{
	struct rig g;
	struct h_daemon *n = g.nodes;

	rig_start(&g, "encrypt", false);
	exchange(&n[DIAL], &n[ACC], 7000, sizes_big, 5, n, 2);
	relay_print(&g.relay, "encrypted_on_the_wire");
	H_EQ(atomic_load(&g.relay.sh->hits[0]), 0);
	H_EQ(atomic_load(&g.relay.sh->hits[1]), 0);
	/* Everything went through the relay: the payload bytes at least. */
	H_ASSERT(atomic_load(&g.relay.sh->bytes[0]) > 65 * MIB &&
		 atomic_load(&g.relay.sh->bytes[1]) > 65 * MIB, "the traffic bypassed the relay");
	H_ASSERT(atomic_load(&g.relay.sh->records[0]) > 4096 &&
		 atomic_load(&g.relay.sh->records[1]) > 4096, "too few TLS records");
	for (int i = DIAL; i <= ACC; i++) {
		const char *peer = g.names[i == DIAL ? ACC : DIAL];
		bool offload = h_daemon_stat(&n[i], "xport.tls_ktls_tx") > 0;

		printf("encrypted_on_the_wire: %s: records sealed by %s\n", n[i].name,
		       offload ? "the kernel" : "OpenSSL (no kTLS here)");
		expect_link_shows(&n[i], peer, offload ? "encrypted+ktls-tx" : "encrypted");
		H_EQ(h_daemon_stat(&n[i], "xport.tls_sessions"), 1);
		H_EQ(h_daemon_stat(&n[i], "xport.tls_failures"), 0);
		H_EQ(link_stat(&n[i], peer, "connects"), 1);
	}
	rig_stop(&g);
}
END_TEST

/*
 * The same relay in mode authenticate sees the canaries: the check above
 * can fail.
 */
START_TEST(plaintext_on_the_wire)
{
	static const uint64_t sizes[] = { 8, 4096, 60000, MIB };
	struct rig g;

	rig_start(&g, "authenticate", false);
	exchange(&g.nodes[DIAL], &g.nodes[ACC], 7000, sizes, 4, g.nodes, 2);
	relay_print(&g.relay, "plaintext_on_the_wire");
	/* (4096 + 60000 + 1 MiB) / 128 blocks each way, at the least. */
	H_ASSERT(atomic_load(&g.relay.sh->hits[0]) >= 8692 &&
		 atomic_load(&g.relay.sh->hits[1]) >= 8692, "canaries %" PRIu64 " and %" PRIu64,
		 atomic_load(&g.relay.sh->hits[0]), atomic_load(&g.relay.sh->hits[1]));
	expect_link_shows(&g.nodes[DIAL], g.names[ACC], "key");
	H_EQ(h_daemon_stat(&g.nodes[DIAL], "xport.tls_sessions"), 0);
	rig_stop(&g);
}
END_TEST

/*
 * The relay changes one byte in the middle of a TLS record from the
 * dialer while messages flow both ways: the accepter's TLS refuses the
 * record (one failure, reason record), the connection breaks, the link
 * reconnects (a second TLS session), and every message still arrives
 * exactly once and byte-exact; no corrupt byte is delivered.  The
 * bystander's links keep their one connection and their traffic.
 */
START_TEST(tampered_record)
{
	static const uint64_t sizes[] = {
		4096, 256 << 10, 4096, 8, 256 << 10, 60000, 4096, 256 << 10, 8, 4096,
		256 << 10, 60000, 4096, 256 << 10, 8, 4096, 256 << 10, 60000, 4096, 256 << 10,
		4 * MIB, 4096, 8, 60000, 256 << 10, 4096, 8, 256 << 10, 4096, 16 * MIB,
	};
	const unsigned n_sizes = sizeof(sizes) / sizeof(sizes[0]);
	struct rig g;
	struct h_daemon *n = g.nodes;
	struct flow f[4];
	uint64_t fails_dial, fails_acc;

	rig_start(&g, "encrypt", true);
	f[0] = (struct flow){ .name = "there", .from = &n[DIAL], .to = &n[ACC], .port = 7000,
			      .sizes = sizes, .n = n_sizes };
	f[1] = (struct flow){ .name = "back", .from = &n[ACC], .to = &n[DIAL], .port = 7010,
			      .sizes = sizes, .n = n_sizes };
	f[2] = (struct flow){ .name = "bystander there", .from = &n[DIAL], .to = &n[BYS],
			      .port = 7020, .sizes = sizes, .n = n_sizes };
	f[3] = (struct flow){ .name = "bystander back", .from = &n[BYS], .to = &n[DIAL],
			      .port = 7030, .sizes = sizes, .n = n_sizes };
	for (int i = 0; i < 4; i++)
		flow_open(&f[i]);
	atomic_store(&g.relay.sh->flip_req, 1);
	flows_run(f, 4, n, 3);
	relay_print(&g.relay, "tampered_record");
	H_EQ(atomic_load(&g.relay.sh->flipped), 1);
	printf("tampered_record: byte %" PRIu64 " of the dialer's stream changed\n",
	       atomic_load(&g.relay.sh->flip_at));
	fails_dial = h_daemon_stat(&n[DIAL], "xport.tls_failures");
	fails_acc = h_daemon_stat(&n[ACC], "xport.tls_failures");
	printf("tampered_record: TLS failures: %s %" PRIu64 ", %s %" PRIu64 " (record %" PRIu64
	       "); connects %" PRIu64 "\n", n[DIAL].name, fails_dial, n[ACC].name, fails_acc,
	       h_daemon_stat(&n[ACC], "xport.tls_failures_record"),
	       link_stat(&n[DIAL], g.names[ACC], "connects"));
	H_EQ(fails_acc, 1);
	H_EQ(h_daemon_stat(&n[ACC], "xport.tls_failures_record"), 1);
	/* The dialer hears of it only if the accepter's alert (bad record
	 * mac) crosses before the connection is gone: a protocol failure
	 * there, never a record of its own. */
	H_ASSERT(fails_dial <= 1, "%" PRIu64 " TLS failures at the dialer", fails_dial);
	H_EQ(h_daemon_stat(&n[DIAL], "xport.tls_failures_record"), 0);
	H_EQ(atomic_load(&g.relay.sh->conns), 2);
	H_EQ(link_stat(&n[DIAL], g.names[ACC], "connects"), 2);
	H_EQ(h_daemon_stat(&n[ACC], "xport.tls_sessions"), 3);	/* 2 + the bystander's */
	H_ASSERT(log_count(&n[ACC], "record failed to authenticate", NULL, NULL) == 1,
		 "no line for the bad record");
	/* The bystander: one connection each way, no TLS failure. */
	H_EQ(link_stat(&n[DIAL], g.names[BYS], "connects"), 1);
	H_EQ(link_stat(&n[BYS], g.names[DIAL], "connects"), 1);
	H_EQ(h_daemon_stat(&n[BYS], "xport.tls_failures"), 0);
	expect_link_shows(&n[BYS], g.names[DIAL], "encrypted");
	for (int i = 0; i < 4; i++)
		flow_close(&f[i]);
	rig_stop(&g);
}
END_TEST

/*
 * One node in mode encrypt, the other in authenticate (both ways round):
 * refused on both sides, each with one line naming the peer, its address
 * and both modes, counted as auth_failures_mode; the link never comes up.
 */
START_TEST(mode_mismatch_refused)
{
	for (int round = 0; round < 2; round++) {
		const char *names[3];
		const char *mode[2] = { round ? "authenticate" : "encrypt",
					round ? "encrypt" : "authenticate" };
		struct h_daemon nodes[3];
		struct keyfile k;
		char conf[2][512], line[2][256];
		const char *confs[3];
		uint16_t ports[3];
		int i;

		roles(names);
		key_make(&k);
		confs[DIAL] = conf_mode(conf[DIAL], sizeof(conf[DIAL]), mode[DIAL], &k);
		confs[ACC] = conf_mode(conf[ACC], sizeof(conf[ACC]), mode[ACC], &k);
		confs[BYS] = NULL;
		pick_ports(ports);
		nodes_start(nodes, names, ports, 0, false, confs);
		/* Bounded by the dialer's redials, each refused at once. */
		snprintf(line[DIAL], sizeof(line[DIAL]), "link %s (127.0.0.1:%u): %s refuses this "
			 "node: %s runs [security] mode %s, this node %s; set the same mode on both",
			 names[ACC], ports[ACC], names[ACC], names[ACC], mode[ACC], mode[DIAL]);
		snprintf(line[ACC], sizeof(line[ACC]), " refused: node %s runs [security] mode %s, "
			 "this node (%s) %s; set the same mode on both", names[DIAL], mode[DIAL],
			 names[ACC], mode[ACC]);
		for (i = 0; i < 200; i++) {
			if (log_count(&nodes[DIAL], line[DIAL], NULL, NULL) > 0 &&
			    log_count(&nodes[ACC], line[ACC], "link: 127.0.0.1:", NULL) > 0)
				break;
			h_sleep_ms(50);
		}
		H_ASSERT(log_count(&nodes[DIAL], line[DIAL], NULL, NULL) == 1,
			 "%s: no line \"%s\"", names[DIAL], line[DIAL]);
		H_ASSERT(log_count(&nodes[ACC], line[ACC], "link: 127.0.0.1:", NULL) == 1,
			 "%s: no line \"%s\"", names[ACC], line[ACC]);
		H_ASSERT(h_daemon_stat(&nodes[ACC], "daemon.auth_failures_mode") >= 1,
			 "accepter counted no mode refusal");
		H_EQ(h_daemon_stat(&nodes[DIAL], "daemon.auth_handshakes"), 0);
		H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_handshakes"), 0);
		H_EQ(link_stat(&nodes[DIAL], names[ACC], "connects"), 0);
		nodes_stop(nodes, false);
		H_EQ(unlink(k.path), 0);
	}
}
END_TEST

/*
 * A man in the middle who lets the AUTH frames pass and then answers the
 * dialer's ClientHello himself, with a certificate (openssl s_server):
 * the dialer refuses the certificate (the PSK is the only credential),
 * counts a handshake failure, and sends nothing: the link never comes up
 * and no canary reaches him.
 */
START_TEST(certificate_refused)
{
	char cert[128], key[128], port_s[32], out[4096];
	struct rig g;
	struct h_daemon *n = g.nodes;
	struct keyfile k;
	char conf[512];
	const char *confs[3];
	uint16_t mitm = h_free_port();
	pid_t srv;
	int i, st;

	snprintf(cert, sizeof(cert), "/tmp/sluice-test-encrypt-%d.crt", (int)getpid());
	snprintf(key, sizeof(key), "/tmp/sluice-test-encrypt-%d.pem", (int)getpid());
	{
		const char *argv[] = { "/usr/bin/openssl", "req", "-x509", "-newkey", "ec",
				       "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
				       "-subj", "/CN=mitm", "-days", "1", "-keyout", key,
				       "-out", cert, NULL };

		H_ASSERT(access(argv[0], X_OK) == 0, "%s: not there (the openssl package)", argv[0]);
		H_ASSERT(h_run(argv, out, sizeof(out), 30000) == 0, "openssl req: %s", out);
	}
	snprintf(port_s, sizeof(port_s), "127.0.0.1:%u", mitm);
	srv = h_fork();
	if (srv == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execl("/usr/bin/openssl", "openssl", "s_server", "-accept", port_s, "-cert", cert,
		      "-key", key, "-tls1_3", "-www", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 100; i++) {	/* until it listens */
		int s = connect_local(mitm);

		if (s >= 0) {
			close(s);
			break;
		}
		h_sleep_ms(50);
	}
	roles(g.names);
	key_make(&k);
	g.key = k;
	g.bystander = false;
	confs[DIAL] = confs[ACC] = conf_mode(conf, sizeof(conf), "encrypt", &k);
	pick_ports(g.ports);
	relay_start_mitm(&g.relay, g.ports[ACC], true, mitm);
	nodes_start(n, g.names, g.ports, g.relay.port, false, confs);
	for (i = 0; i < 200 && h_daemon_stat(&n[DIAL], "xport.tls_failures_handshake") < 2; i++)
		h_sleep_ms(50);
	relay_print(&g.relay, "certificate_refused");
	printf("certificate_refused: %s: %" PRIu64 " handshakes refused, %" PRIu64
	       " connections to the man in the middle\n", n[DIAL].name,
	       h_daemon_stat(&n[DIAL], "xport.tls_failures_handshake"),
	       atomic_load(&g.relay.sh->mitm_conns));
	H_ASSERT(h_daemon_stat(&n[DIAL], "xport.tls_failures_handshake") >= 2,
		 "the dialer did not refuse the certificate");
	H_ASSERT(atomic_load(&g.relay.sh->mitm_conns) >= 2, "the man in the middle saw no dialer");
	H_EQ(h_daemon_stat(&n[DIAL], "xport.tls_sessions"), 0);
	H_EQ(link_stat(&n[DIAL], g.names[ACC], "connects"), 0);
	H_EQ(atomic_load(&g.relay.sh->hits[0]), 0);
	H_ASSERT(log_count(&n[DIAL], "handshake failed", NULL, NULL) >= 1,
		 "no line for the refused handshake");
	rig_stop(&g);
	H_EQ(kill(srv, SIGKILL), 0);
	H_EQ(waitpid(srv, &st, 0), srv);
	H_EQ(unlink(cert), 0);
	H_EQ(unlink(key), 0);
}
END_TEST

/* Mode encrypt with the verbs transport is refused by --check-config,
 * with the reason and what the fabric must provide instead. */
START_TEST(verbs_refused)
{
	char bin[256], conf_path[160], out[4096];
	const char *top = getenv("top_builddir");
	struct keyfile k;
	FILE *f;
	int rc;

	key_make(&k);
	snprintf(bin, sizeof(bin), "%s/daemon/sluiced", top && *top ? top : ".");
	snprintf(conf_path, sizeof(conf_path), "/tmp/sluice-test-encrypt-%d.conf", (int)getpid());
	f = fopen(conf_path, "w");
	H_ASSERT(f, "%s", conf_path);
	fprintf(f, "[transport]\nkind = verbs\n[security]\nmode = encrypt\nkey_file = %s\n",
		k.path);
	H_EQ(fclose(f), 0);
	{
		const char *argv[] = { bin, "-c", conf_path, "--check-config", NULL };

		rc = h_run(argv, out, sizeof(out), 10000);
		printf("verbs_refused: exit %d: %s", rc, out);
		H_EQ(rc, 2);
		H_ASSERT(strstr(out, "encrypt needs [transport] kind = tcp") &&
			 strstr(out, "bypass the CPU") && strstr(out, "P_Key"),
			 "mode encrypt on verbs: %s", out);
	}
	H_EQ(unlink(conf_path), 0);
	H_EQ(unlink(k.path), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("encrypt");

	/* This file checks the handshakes of links that dial at start, with
	 * no traffic to wake them: links on demand would wait (harness.h). */
	h_links_always = true;

	tcase_add_test(h_tcase(s, "encrypted_on_the_wire", 240), encrypted_on_the_wire);
	tcase_add_test(h_tcase(s, "plaintext_on_the_wire", 120), plaintext_on_the_wire);
	tcase_add_test(h_tcase(s, "tampered_record", 240), tampered_record);
	tcase_add_test(h_tcase(s, "mode_mismatch_refused", 120), mode_mismatch_refused);
	tcase_add_test(h_tcase(s, "certificate_refused", 120), certificate_refused);
	tcase_add_test(h_tcase(s, "verbs_refused", 60), verbs_refused);
	return h_run_suite(s);
}
