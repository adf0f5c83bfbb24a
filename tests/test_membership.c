/*
 * test_membership.c - peers that change without a restart: [daemon]
 * peers_file, read again on SIGHUP (daemon/link_table.c,
 * link_table_sync).  Real daemons on TCP loopback (tests/harness.c), read
 * through their statistics (SIGUSR1) and logs; the test process is the
 * client of each; every wait bounded.
 *   reload_adds_and_removes  three daemons on one peers file; the file
 *                            loses one and gains a fourth, the others
 *                            reload: the new one works without a restart,
 *                            what waited on the removed one fails
 *                            SL_ERR_PEER_DOWN once (a receive naming it, a
 *                            rendezvous past its RTS), later operations
 *                            naming it SL_ERR_UNKNOWN_NODE, and the other
 *                            links keep their connection (connects
 *                            unchanged) and a receive pending on them
 *   reload_readdresses       a peer restarted at another port: a reload
 *                            moves its link, which keeps what is posted
 *   readd_on_one_side        a peer removed and added again by two
 *                            reloads of one side only (the dialer, then
 *                            the accepter), after messages both ways:
 *                            the link's new stream starts from nothing
 *                            while the other side kept the old one; the
 *                            other side takes it as a restart of the
 *                            stream (peer_restarts 1) and messages flow
 *                            both ways again (the other side refused
 *                            every HELLO as a protocol error, for good)
 *   start_many_peers         a peers file of START_PEERS lines on
 *                            addresses nobody listens on, links on demand
 *                            and all dialled at start: the start, its
 *                            time and memory, every peer known
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "sluice.h"
#include "testutil.h"

#define PORT 10u		/* every test queue's */
#define RNDV_LEN (256u << 10)	/* above the default eager_max */
#define TAG_C 7u		/* the receive naming the peer that goes */
#define TAG_B 8u		/* the receive naming a peer that stays */
#define CTX_RECV_C 0xc1u
#define CTX_SEND_C 0xc2u
#define CTX_RECV_B 0xb1u
#define START_PEERS 2000u
#define WAIT_MS 5000

/* Quick redials; nobody times out during a test; links on demand (the
 * default) stay up once used: the test is shorter than idle_link_ms. */
#define CONF_TAIL "[transport]\nredial_min_ms = 20\nredial_max_ms = 200\npeer_timeout_ms = 600000\n"

/* A sluiced.conf naming @peers_path as [daemon] peers_file. */
static void conf_for(char *buf, size_t cap, const char *peers_path, const char *tail)
{
	snprintf(buf, cap, "[daemon]\npeers_file = %s\n%s", peers_path, tail);
}

static uint64_t link_stat(const struct h_stats *st, const char *peer, const char *what)
{
	char name[96];

	snprintf(name, sizeof(name), "link.%s.%s", peer, what);
	return h_stats_u64(st, name);
}

/* Does @st have any link.@peer.* line? */
static bool has_link(const struct h_stats *st, const char *peer)
{
	char needle[96];

	snprintf(needle, sizeof(needle), "\nlink.%s.", peer);
	return strstr(st->text, needle) != NULL;
}

static void open_queue(const struct h_daemon *d, struct sl_ctx **ctx, struct sl_queue **q)
{
	int rc = sl_open(d->sock, ctx);

	H_ASSERT(rc == 0, "sl_open %s: %s", d->name, strerror(-rc));
	rc = sl_queue_open(*ctx, PORT, 64, q);
	H_ASSERT(rc == 0, "sl_queue_open %s: %s", d->name, strerror(-rc));
}

/* Wait (bounded) until @d's link to @peer holds @n rendezvous sends. */
static void wait_rndv_tx(const struct h_daemon *d, const char *peer, uint64_t n)
{
	int64_t deadline = h_now_ms() + WAIT_MS;
	struct h_stats *st = malloc(sizeof(*st));
	uint64_t v;

	H_ASSERT(st, "malloc");
	for (;;) {
		h_daemon_stats(d, st);
		v = link_stat(st, peer, "rndv_tx");
		if (v == n)
			break;
		H_ASSERT(h_now_ms() < deadline, "%s: link.%s.rndv_tx %llu, want %llu", d->name, peer,
			 (unsigned long long)v, (unsigned long long)n);
		h_sleep_ms(10);
	}
	free(st);
}

/* The two completions of the operations that waited on the removed peer,
 * in either order, each SL_ERR_PEER_DOWN, each once. */
static void expect_failed_once(struct sl_queue *q, sl_addr_t gone)
{
	struct sl_cqe c[2];
	bool recv_seen = false, send_seen = false;
	unsigned i;

	wait_cqes(q, c, 2, WAIT_MS);
	for (i = 0; i < 2; i++) {
		H_ASSERT(c[i].status == SL_ERR_PEER_DOWN, "ctx %#llx: %s, want SL_ERR_PEER_DOWN",
			 (unsigned long long)c[i].user_ctx, sl_strerror(c[i].status));
		if (c[i].user_ctx == CTX_RECV_C) {
			H_ASSERT(!recv_seen && c[i].opcode == SL_OP_RECV, "the receive twice");
			recv_seen = true;
		} else {
			H_ASSERT(c[i].user_ctx == CTX_SEND_C && !send_seen &&
				 c[i].opcode == SL_OP_SEND && addr_eq(c[i].peer, gone),
				 "ctx %#llx opcode %u", (unsigned long long)c[i].user_ctx,
				 c[i].opcode);
			send_seen = true;
		}
	}
	/* Exactly once: nothing more comes for them. */
	expect_no_cqe(q, 300);
}

START_TEST(reload_adds_and_removes)
{
	struct h_daemon a, b, c, d;
	struct sl_ctx *ca, *cb, *cc, *cd;
	struct sl_queue *qa, *qb, *qc, *qd;
	struct h_stats *st = malloc(sizeof(*st));
	char path[64], conf[256], peers[512], want[160];
	uint16_t pa = h_free_port(), pb = h_free_port(), pc = h_free_port(), pd = h_free_port();
	uint64_t a_to_b, b_to_a;
	sl_addr_t at_c = { sl_node_id("mc"), PORT }, at_b = { sl_node_id("mb"), PORT };
	uint8_t *big, *rbuf, *small;
	struct sl_cqe cqe;

	H_ASSERT(st, "malloc");
	snprintf(path, sizeof(path), "/tmp/sluice-members-%d.peers", (int)getpid());
	snprintf(peers, sizeof(peers), "# the cluster\nma 127.0.0.1:%u\nmb 127.0.0.1:%u\n"
		 "mc 127.0.0.1:%u\n", pa, pb, pc);
	write_text(path, peers);
	conf_for(conf, sizeof(conf), path, CONF_TAIL);
	h_daemon_start_conf(&a, "ma", pa, NULL, 0, conf);
	h_daemon_start_conf(&b, "mb", pb, NULL, 0, conf);
	h_daemon_start_conf(&c, "mc", pc, NULL, 0, conf);
	h_wait_link(&a, &b);
	h_wait_link(&b, &a);
	h_wait_link(&a, &c);
	h_wait_link(&c, &a);
	h_wait_link(&b, &c);
	open_queue(&a, &ca, &qa);
	open_queue(&b, &cb, &qb);
	open_queue(&c, &cc, &qc);
	ping(qa, qb, 1, 1);
	ping(qb, qa, 1, 2);
	ping(qa, qc, 1, 3);
	h_daemon_stats(&a, st);
	a_to_b = link_stat(st, "mb", "connects");
	h_daemon_stats(&b, st);
	b_to_a = link_stat(st, "ma", "connects");

	/* What waits on mc: a receive naming it, and a rendezvous that mc
	 * holds (a queue, no receive) past its RTS; and one receive
	 * naming mb, which must not notice. */
	rbuf = sl_alloc(qa, 256);
	small = sl_alloc(qa, 256);
	big = sl_alloc(qa, RNDV_LEN);
	H_ASSERT(rbuf && small && big, "sl_alloc");
	memset(big, 0x5a, RNDV_LEN);
	H_EQ(sl_recv(qa, at_c, TAG_C, ~0ull, rbuf, 128, CTX_RECV_C), 0);
	H_EQ(sl_recv(qa, at_b, TAG_B, ~0ull, rbuf + 128, 128, CTX_RECV_B), 0);
	H_EQ(sl_send(qa, at_c, TAG_C, big, RNDV_LEN, CTX_SEND_C), 0);
	wait_rndv_tx(&a, "mc", 1);
	expect_no_cqe(qa, 50);

	/* mc leaves, md joins; ma and mb reload, md starts on the new file. */
	snprintf(peers, sizeof(peers), "ma 127.0.0.1:%u\nmb 127.0.0.1:%u\nmd 127.0.0.1:%u\n", pa,
		 pb, pd);
	write_text(path, peers);
	daemon_reload(&a, WAIT_MS);
	daemon_reload(&b, WAIT_MS);
	expect_failed_once(qa, at_c);
	snprintf(want, sizeof(want), "reload: [peers] mc: 127.0.0.1:%u -> (not set)", pc);
	H_EQ(tu_log_lines(&a, want), 1);
	snprintf(want, sizeof(want), "reload: [peers] md: (not set) -> 127.0.0.1:%u", pd);
	H_EQ(tu_log_lines(&a, want), 1);
	H_EQ(tu_log_lines(&a, "links: 1 added, 1 removed, 0 readdressed, 2 in all"), 1);
	h_daemon_stats(&a, st);
	H_ASSERT(!has_link(st, "mc"), "ma still shows a link to mc");
	H_ASSERT(has_link(st, "md"), "ma shows no link to md");

	h_daemon_start_conf(&d, "md", pd, NULL, 0, conf);
	h_wait_link(&d, &a);
	h_wait_link(&a, &d);
	h_wait_link(&d, &b);
	h_wait_link(&b, &d);
	open_queue(&d, &cd, &qd);
	ping(qa, qd, 2, 4);
	ping(qd, qa, 2, 5);
	ping(qd, qb, 2, 6);

	/* mc is unknown now, to sends and receives. */
	cqe = send_wait(qa, at_c, 3, small, 16, 0xc3, WAIT_MS);
	H_ASSERT(cqe.status == SL_ERR_UNKNOWN_NODE, "send to mc: %s", sl_strerror(cqe.status));
	H_EQ(sl_recv(qa, at_c, 3, ~0ull, small, 16, 0xc4), 0);
	expect_cqe(qa, SL_OP_RECV, 0xc4, SL_ERR_UNKNOWN_NODE, 16, 3, at_c);

	/* The link to mb kept its connection and its receive. */
	memset(small, 0, 16);
	{
		uint8_t *sb = sl_alloc(qb, 64);

		H_ASSERT(sb, "sl_alloc");
		memset(sb, 0x42, 64);
		cqe = send_wait(qb, sl_queue_addr(qa), TAG_B, sb, 64, 0xb2, WAIT_MS);
		H_ASSERT(cqe.status == SL_OK, "mb -> ma: %s", sl_strerror(cqe.status));
		sl_free(qb, sb);
	}
	expect_cqe(qa, SL_OP_RECV, CTX_RECV_B, SL_OK, 64, TAG_B, at_b);
	h_daemon_stats(&a, st);
	H_EQ(link_stat(st, "mb", "connects"), a_to_b);
	h_daemon_stats(&b, st);
	H_EQ(link_stat(st, "ma", "connects"), b_to_a);
	H_ASSERT(!has_link(st, "mc"), "mb still shows a link to mc");

	sl_close(ca);
	sl_close(cb);
	sl_close(cc);
	sl_close(cd);
	h_daemon_stop(&c);
	h_daemon_stop(&d);
	h_daemon_stop(&b);
	h_daemon_stop(&a);
	H_EQ(unlink(path), 0);
	free(st);
}
END_TEST

/*
 * mb dies (SIGKILL: no BYE, so nothing fails on ma) and comes back at
 * another port: after ma's reload the same link, with the receive naming
 * mb still posted, reaches it there.  A new incarnation, so the link
 * counts a restart, not a new link.
 */
START_TEST(reload_readdresses)
{
	struct h_daemon a, b;
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	struct h_stats *st = malloc(sizeof(*st));
	char path[64], conf[256], peers[256], want[160];
	uint16_t pa = h_free_port(), pb = h_free_port(), pb2 = h_free_port();
	sl_addr_t at_b = { sl_node_id("mb"), PORT };
	uint8_t *rbuf, *sb;
	struct sl_cqe cqe;

	H_ASSERT(st, "malloc");
	snprintf(path, sizeof(path), "/tmp/sluice-members-%d.peers", (int)getpid());
	snprintf(peers, sizeof(peers), "ma 127.0.0.1:%u\nmb 127.0.0.1:%u\n", pa, pb);
	write_text(path, peers);
	conf_for(conf, sizeof(conf), path, CONF_TAIL);
	h_daemon_start_conf(&a, "ma", pa, NULL, 0, conf);
	h_daemon_start_conf(&b, "mb", pb, NULL, 0, conf);
	h_wait_link(&a, &b);
	h_wait_link(&b, &a);
	open_queue(&a, &ca, &qa);
	rbuf = sl_alloc(qa, 128);
	H_ASSERT(rbuf, "sl_alloc");
	H_EQ(sl_recv(qa, at_b, TAG_B, ~0ull, rbuf, 128, CTX_RECV_B), 0);

	h_daemon_kill(&b);
	snprintf(peers, sizeof(peers), "ma 127.0.0.1:%u\nmb 127.0.0.1:%u\n", pa, pb2);
	write_text(path, peers);
	h_daemon_start_conf(&b, "mb", pb2, NULL, 0, conf);
	daemon_reload(&a, WAIT_MS);
	snprintf(want, sizeof(want), "reload: [peers] mb: 127.0.0.1:%u -> 127.0.0.1:%u", pb, pb2);
	H_EQ(tu_log_lines(&a, want), 1);
	snprintf(want, sizeof(want), "link mb: now at 127.0.0.1:%u (was 127.0.0.1:%u)", pb2, pb);
	H_EQ(tu_log_lines(&a, want), 1);
	H_EQ(tu_log_lines(&a, "links: 0 added, 0 removed, 1 readdressed, 1 in all"), 1);
	h_wait_link(&b, &a);
	h_wait_link(&a, &b);
	open_queue(&b, &cb, &qb);
	sb = sl_alloc(qb, 64);
	H_ASSERT(sb, "sl_alloc");
	memset(sb, 0x42, 64);
	cqe = send_wait(qb, sl_queue_addr(qa), TAG_B, sb, 64, 0xb2, WAIT_MS);
	H_ASSERT(cqe.status == SL_OK, "mb -> ma: %s", sl_strerror(cqe.status));
	expect_cqe(qa, SL_OP_RECV, CTX_RECV_B, SL_OK, 64, TAG_B, at_b);
	h_daemon_stats(&a, st);
	H_EQ(link_stat(st, "mb", "peer_restarts"), 1);

	sl_close(ca);
	sl_close(cb);
	h_daemon_stop(&b);
	h_daemon_stop(&a);
	H_EQ(unlink(path), 0);
	free(st);
}
END_TEST

START_TEST(readd_on_one_side)
{
	struct h_daemon d[2];
	struct sl_ctx *c[2];
	struct sl_queue *q[2];
	char path[2][64], conf[2][256], both[128], alone[2][64];
	uint16_t port[2] = { h_free_port(), h_free_port() };
	static const char *const names[] = { "ma", "mb" };
	struct h_stats *st = malloc(sizeof(*st));
	unsigned x, i, seq = 1;

	H_ASSERT(st, "malloc");
	/* ma's node id is the lower: it dials (the roles are checked). */
	H_ASSERT(sl_node_id("ma") < sl_node_id("mb"), "ma does not dial mb");
	snprintf(both, sizeof(both), "ma 127.0.0.1:%u\nmb 127.0.0.1:%u\n", port[0], port[1]);
	for (i = 0; i < 2; i++) {
		snprintf(path[i], sizeof(path[i]), "/tmp/sluice-readd-%d-%u.peers", (int)getpid(), i);
		snprintf(alone[i], sizeof(alone[i]), "%s 127.0.0.1:%u\n", names[i], port[i]);
		write_text(path[i], both);
		conf_for(conf[i], sizeof(conf[i]), path[i], CONF_TAIL);
		h_daemon_start_conf(&d[i], names[i], port[i], NULL, 0, conf[i]);
	}
	h_wait_link(&d[0], &d[1]);
	h_wait_link(&d[1], &d[0]);
	for (i = 0; i < 2; i++)
		open_queue(&d[i], &c[i], &q[i]);
	/* x: the side whose reloads remove the other and add it back (the
	 * dialer, then the accepter). */
	for (x = 0; x < 2; x++) {
		unsigned y = 1 - x;
		char key[64];

		/* Streams both ways, acknowledged. */
		ping(q[x], q[y], 20 + x, seq++);
		ping(q[y], q[x], 30 + x, seq++);
		write_text(path[x], alone[x]);
		daemon_reload(&d[x], WAIT_MS);
		write_text(path[x], both);
		daemon_reload(&d[x], WAIT_MS);
		/* The new link's stream starts from nothing; the other side's
		 * kept its old one: both ways work again. */
		ping(q[x], q[y], 40 + x, seq++);
		ping(q[y], q[x], 50 + x, seq++);
		h_daemon_stats(&d[y], st);
		snprintf(key, sizeof(key), "link.%s.peer_restarts", names[x]);
		printf("readd_on_one_side: %s (the %s) removed and added %s again: %s counted "
		       "%llu stream restart, %llu connects\n", names[x],
		       x == 0 ? "dialer" : "accepter", names[y], names[y],
		       (unsigned long long)h_stats_u64(st, key),
		       (unsigned long long)link_stat(st, names[x], "connects"));
		H_EQ(h_stats_u64(st, key), 1);
		/* How each learned it: y from x's HELLO naming none of its
		 * incarnations; x, when it accepts, from y's HELLO counting
		 * more of x's frames than x's new link sent. */
		H_EQ(tu_log_lines(&d[y], "the peer lost our stream (its configuration"), 1);
		H_EQ(tu_log_lines(&d[x], "our stream with it is newer"), x == 1);
	}
	for (i = 0; i < 2; i++) {
		sl_close(c[i]);
		h_daemon_stop(&d[i]);
		H_EQ(unlink(path[i]), 0);
	}
	free(st);
}
END_TEST

/* The peers file of start_many_peers: START_PEERS lines, this node's
 * among them, on 127.0.x.y:1 (port 1: nobody listens). */
static char *many_peers_file(const char *self, unsigned self_at)
{
	char *text = malloc(START_PEERS * 40);
	size_t off = 0;
	unsigned i;

	H_ASSERT(text, "malloc");
	for (i = 0; i < START_PEERS; i++) {
		if (i == self_at)
			off += (size_t)sprintf(text + off, "%s 127.0.0.1:1\n", self);
		else
			off += (size_t)sprintf(text + off, "p%04u 127.0.%u.%u:%u\n", i, i / 250,
					       i % 250 + 1, H_PORT_NOBODY);
	}
	return text;
}

/*
 * One daemon "big" on the START_PEERS-line file at @path, configured by
 * @tail: it starts (bounded by the harness's start timeout), every line
 * but its own made a link (a receive naming a peer waits, one naming a
 * node not in the file fails SL_ERR_UNKNOWN_NODE), and it stops cleanly.
 * Prints its start time and memory against @alone's (no peers).
 */
static void start_big(const char *path, const char *tail, const char *how,
		      const struct h_daemon *alone, int64_t t_none)
{
	static const unsigned probe[] = { 0, 1, START_PEERS / 2, START_PEERS - 1 };
	struct h_daemon d;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	char conf[512];
	int64_t t0, t_many;
	long rss_many, rss_none;
	uint8_t *buf;
	unsigned i, lines;

	conf_for(conf, sizeof(conf), path, tail);
	t0 = h_now_ms();
	h_daemon_start_conf(&d, "big", h_free_port(), NULL, 0, conf);
	t_many = h_now_ms() - t0;
	lines = tu_log_lines(&d, ":1: dialing") + tu_log_lines(&d, ":1: waiting") +
		tu_log_lines(&d, ":1: idle until needed");
	H_EQ(lines, START_PEERS - 1);
	open_queue(&d, &ctx, &q);
	buf = sl_alloc(q, 64);
	H_ASSERT(buf, "sl_alloc");
	for (i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
		char name[16];

		snprintf(name, sizeof(name), "p%04u", probe[i]);
		H_EQ(sl_recv(q, (sl_addr_t){ sl_node_id(name), PORT }, 1, ~0ull, buf, 64, i), 0);
	}
	expect_no_cqe(q, 200);	/* known peers: the receives wait */
	H_EQ(sl_recv(q, (sl_addr_t){ sl_node_id("p7"), PORT }, 1, ~0ull, buf, 64, 99), 0);
	expect_cqe(q, SL_OP_RECV, 99, SL_ERR_UNKNOWN_NODE, 64, 1,
		   ((sl_addr_t){ sl_node_id("p7"), PORT }));
	rss_many = h_proc_rss_kb(d.pid);
	rss_none = h_proc_rss_kb(alone->pid);
	H_ASSERT(rss_many > 0 && rss_none > 0, "VmRSS: %ld %ld", rss_many, rss_none);
	printf("start_many_peers, %s: %u peers: started in %lld ms (no peers: %lld ms), VmRSS "
	       "%ld KiB (no peers: %ld KiB, %.1f KiB a peer)\n", how, START_PEERS - 1,
	       (long long)t_many, (long long)t_none, rss_many, rss_none,
	       (double)(rss_many - rss_none) / (START_PEERS - 1));
	sl_close(ctx);
	h_daemon_term(&d);	/* its statistics do not fit struct h_stats */
}

/*
 * START_PEERS - 1 peers, with links on demand (each link idle until
 * needed: the default) and with every link dialled at start
 * (idle_link_ms = 0: each dials or nudges once and is refused by the
 * kernel at once; nobody redials within the test, redial after 10
 * minutes).  Either starts about as quickly as a daemon with none.
 */
START_TEST(start_many_peers)
{
	static const char tail[] = "[transport]\nredial_min_ms = 600000\nredial_max_ms = 600000\n"
				   "peer_timeout_ms = 600000\n";
	struct h_daemon alone;
	char path[64], *text, dial_all[256];
	int64_t t0, t_none;

	/* Idle links say so at debug only. */
	H_EQ(setenv("SLUICE_TEST_LOG_LEVEL", "debug", 1), 0);
	snprintf(path, sizeof(path), "/tmp/sluice-members-%d.peers", (int)getpid());
	text = many_peers_file("big", 7);
	write_text(path, text);
	free(text);
	t0 = h_now_ms();
	h_daemon_start_conf(&alone, "alone", h_free_port(), NULL, 0, tail);
	t_none = h_now_ms() - t0;
	start_big(path, tail, "links on demand", &alone, t_none);
	snprintf(dial_all, sizeof(dial_all), "%sidle_link_ms = 0\n", tail);
	start_big(path, dial_all, "all dialled at start", &alone, t_none);
	h_daemon_stop(&alone);
	H_EQ(unlink(path), 0);
}
END_TEST

int main(void)
{
	const char *level = getenv("SLUICE_TEST_LOG_LEVEL");
	Suite *s = suite_create("membership");
	TCase *tc;

	/* The tests read info lines ("reload: ...", "link ... dialing"):
	 * info unless debug is asked for. */
	if (!level || strcmp(level, "debug") != 0)
		H_EQ(setenv("SLUICE_TEST_LOG_LEVEL", "info", 1), 0);
	tc = h_tcase(s, "reload", 60);
	tcase_add_test(tc, reload_adds_and_removes);
	tcase_add_test(tc, reload_readdresses);
	tcase_add_test(tc, readd_on_one_side);
	tc = h_tcase(s, "scale", 60);
	tcase_add_test(tc, start_many_peers);
	return h_run_suite(s);
}
