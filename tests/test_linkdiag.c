/*
 * test_linkdiag.c - a link that cannot come up because of a configuration
 * mistake explains itself on both sides, by name and address, with the
 * fix (docs/diagnosing-links.md lists the messages):
 *   not_listed     a lists b, b does not list a
 *   not_listed_back b lists a, a (the dialer) does not list b
 *   wrong_daemon   a's entry for b is the address where c listens
 *   wrong_daemon_unlisted  the same, and c does not list a
 *   same_name      two daemons are named a
 *   same_name_keyed  the same with a cluster key: not refused, but said
 *   mode_differs   a authenticates, b runs [security] mode none
 *   key_differs    a and b hold different cluster keys
 * Each case watches both daemons for OBSERVE_MS: the diagnosis is logged
 * exactly once on each side (the dialer retries with its back-off, and
 * the lines are rate-limited), the refused link is never "up" (state,
 * connects), no per-retry transport line is logged, and a bystander link
 * between two correctly configured daemons carries byte-exact messages
 * without a reconnect.
 */
#include "autoconfig.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "sluice.h"
#include "testutil.h"

/* How long each case watches the refusals: several redials (50 ms back-off
 * doubling: 7 dials by 3.2 s) inside one rate-limit period (60 s). */
#define OBSERVE_MS 3500
#define BYS_PORT 4100
#define BYS_TAG 41
#define BYS_LEN 512u
/* A bystander gives up when one message takes this long. */
#define BYS_STALL_MS 15000

/* A daemon the others name but that is not started: its name and port. */
static void named(struct h_daemon *d, const char *name, uint16_t port)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->node = sl_node_id(name);
	d->tcp_port = port;
}

/* ---- the bystander: messages from one daemon to another over a good link ---- */

struct bystander {
	struct sl_ctx *tx_ctx, *rx_ctx;
	struct sl_queue *tx, *rx;
	uint8_t *tx_buf, *rx_buf;
	sl_addr_t to;
	uint32_t sent;
};

static void bys_open(struct bystander *b, const struct h_daemon *from, const struct h_daemon *to)
{
	memset(b, 0, sizeof(*b));
	H_EQ(sl_open(from->sock, &b->tx_ctx), 0);
	H_EQ(sl_open(to->sock, &b->rx_ctx), 0);
	H_EQ(sl_queue_open(b->tx_ctx, 0, 16, &b->tx), 0);
	H_EQ(sl_queue_open(b->rx_ctx, BYS_PORT, 16, &b->rx), 0);
	b->tx_buf = sl_alloc(b->tx, BYS_LEN);
	b->rx_buf = sl_alloc(b->rx, BYS_LEN);
	H_ASSERT(b->tx_buf && b->rx_buf, "sl_alloc");
	b->to = (sl_addr_t){ to->node, BYS_PORT };
}

/* One message, byte-exact, SL_OK on both sides. */
static void bys_round(struct bystander *b)
{
	struct sl_cqe cqe;
	int rc;

	msg_fill(b->tx_buf, BYS_LEN, 1, b->sent, BYS_TAG);
	memset(b->rx_buf, 0, BYS_LEN);
	H_EQ(sl_recv(b->rx, SL_ANY_SOURCE, BYS_TAG, ~0ull, b->rx_buf, BYS_LEN, CTX_RECV), 0);
	H_EQ(sl_send(b->tx, b->to, BYS_TAG, b->tx_buf, BYS_LEN, CTX_SEND), 0);
	rc = h_wait_cqe(b->tx, &cqe, BYS_STALL_MS);
	H_ASSERT(rc == 1 && cqe.status == SL_OK, "bystander send %u: rc %d status %s", b->sent,
		 rc, rc == 1 ? sl_strerror(cqe.status) : "-");
	rc = h_wait_cqe(b->rx, &cqe, BYS_STALL_MS);
	H_ASSERT(rc == 1 && cqe.status == SL_OK && cqe.len == BYS_LEN,
		 "bystander receive %u: rc %d status %s len %llu", b->sent, rc,
		 rc == 1 ? sl_strerror(cqe.status) : "-", rc == 1 ? (unsigned long long)cqe.len : 0);
	H_ASSERT(msg_check(b->rx_buf, BYS_LEN, 1, b->sent, BYS_TAG),
		 "bystander message %u not byte-exact", b->sent);
	b->sent++;
}

static void bys_close(struct bystander *b)
{
	sl_close(b->tx_ctx);
	sl_close(b->rx_ctx);
}

/* ---- watching a refused link ---- */

/* A link of a daemon that must never come up. */
struct refused {
	const struct h_daemon *d;
	const char *peer;
};

/*
 * Watch for OBSERVE_MS: each link of @r (@n) is never "up" and never
 * connected, while the bystander moves messages.  Then the bystander's
 * link (@bys_d's link to @bys_peer) has its one connection.
 */
static void observe(const struct refused *r, unsigned n, struct bystander *b,
		    const struct h_daemon *bys_d, const char *bys_peer)
{
	int64_t end = h_now_ms() + OBSERVE_MS;
	char key[96], state[32];
	unsigned samples = 0;

	while (h_now_ms() < end) {
		for (unsigned i = 0; i < n; i++) {
			snprintf(key, sizeof(key), "link.%s.state", r[i].peer);
			h_daemon_stat_str(r[i].d, key, state, sizeof(state));
			H_ASSERT(strcmp(state, "up") != 0, "%s's link %s is up", r[i].d->name,
				 r[i].peer);
		}
		bys_round(b);
		samples++;
		h_sleep_ms(100);
	}
	for (unsigned i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "link.%s.connects", r[i].peer);
		H_EQ(h_daemon_stat(r[i].d, key), 0);
	}
	snprintf(key, sizeof(key), "link.%s.connects", bys_peer);
	H_EQ(h_daemon_stat(bys_d, key), 1);
	printf("  %u samples, %u bystander messages byte-exact, link %s of %s: 1 connect\n",
	       samples, b->sent, bys_peer, bys_d->name);
}

/* @needle appears exactly once in @d's log (waited for, bounded). */
static void expect_once(const struct h_daemon *d, const char *needle)
{
	unsigned n = tu_log_lines(d, needle);

	for (int i = 0; i < 100 && n == 0; i++) {
		h_sleep_ms(50);
		n = tu_log_lines(d, needle);
	}
	H_ASSERT(n == 1, "%s's log has %u lines with \"%s\" in %d ms, want 1", d->name, n, needle,
		 OBSERVE_MS);
	printf("  %s: 1 line \"%s\"\n", d->name, needle);
}

/* `sluicectl links` of @d shows its link @peer down (never up), with
 * @last_error. */
static void expect_ctl_links(const struct h_daemon *d, const char *peer, const char *last_error)
{
	const char *argv[] = { tu_sluicectl(), "-r", d->dir, "--json", "links", NULL };
	char out[16384], want[256];
	int rc = h_run(argv, out, sizeof(out), 10000);

	H_ASSERT(rc == 0, "sluicectl links: %d: %s", rc, out);
	snprintf(want, sizeof(want), "\"peer\": \"%s\"", peer);
	H_ASSERT(strstr(out, want), "no link %s: %s", peer, out);
	snprintf(want, sizeof(want), "\"last_error\": \"%s\",\n      \"state\": \"down\"",
		 last_error);
	H_ASSERT(strstr(out, want), "link %s: want %s: %s", peer, want, out);
	H_ASSERT(!strstr(out, "\"state\": \"up\""), "a link is up: %s", out);
	printf("  %s: sluicectl links: %s down, \"%s\"\n", d->name, peer, last_error);
}

/* The dialer's transport said nothing per retry. */
static void expect_no_retry_noise(const struct h_daemon *d, uint16_t port)
{
	char needle[64];

	snprintf(needle, sizeof(needle), "tcp: 127.0.0.1:%u:", port);
	H_EQ(tu_log_lines(d, needle), 0);
	H_EQ(tu_log_lines(d, "before answering the handshake"), 0);
}

/* The accepter @d refused @min or more handshakes (the dialer did retry)
 * and at most @max (it backed off). */
static void expect_retries(const struct h_daemon *d, const char *counter, uint64_t min,
			   uint64_t max)
{
	char key[96];
	uint64_t n;

	snprintf(key, sizeof(key), "daemon.%s", counter);
	n = h_daemon_stat(d, key);
	H_ASSERT(n >= min && n <= max, "%s: %s %" PRIu64 ", want %" PRIu64 "..%" PRIu64, d->name,
		 key, n, min, max);
	printf("  %s: %s %" PRIu64 " in %d ms\n", d->name, key, n, OBSERVE_MS);
}

/* b and c linked (the bystanders' daemons, both reading @conf), b
 * listing a too, at @a_host ("": 127.0.0.1), unless @a_host is NULL; a is
 * started by the case. */
struct trio {
	struct h_daemon a, b, c;
	uint16_t pa, pb, pc;
};

static void trio_bc(struct trio *t, const char *conf, const char *a_host)
{
	struct h_daemon peers[2];

	t->pa = h_free_port();
	t->pb = h_free_port();
	t->pc = h_free_port();
	named(&peers[0], "c", t->pc);
	named(&peers[1], "a", t->pa);
	snprintf(peers[1].host, sizeof(peers[1].host), "%s", a_host ? a_host : "");
	h_daemon_start_conf(&t->b, "b", t->pb, peers, a_host ? 2 : 1, conf);
	h_daemon_start_conf(&t->c, "c", t->pc, &t->b, 1, conf);
	h_wait_link(&t->b, &t->c);
	h_wait_link(&t->c, &t->b);
}

/* a started (@a_conf) with its entry for b at @b_port, and its link b
 * watched, refused, beside the bystander b -> c (observe). */
static void trio_watch_a(struct trio *t, struct bystander *bys, uint16_t b_port,
			 const char *a_conf)
{
	struct h_daemon b_named;
	struct refused r = { &t->a, "b" };

	bys_open(bys, &t->b, &t->c);
	named(&b_named, "b", b_port);
	h_daemon_start_conf(&t->a, "a", t->pa, &b_named, 1, a_conf);
	observe(&r, 1, bys, &t->c, "b");
}

/* The bystander closed, then every daemon of @t stopped (their books
 * checked). */
static void trio_stop(struct trio *t, struct bystander *b)
{
	bys_close(b);
	h_daemon_stop(&t->a);
	h_daemon_stop(&t->b);
	h_daemon_stop(&t->c);
}

/*
 * not_listed: a lists b, b does not list a.  Before: a logged "the peer
 * closed the connection before answering the handshake" and a transport
 * line per retry, b "refused: unknown node: node e40c292c is not
 * configured" per retry, by hex id.
 */
START_TEST(not_listed)
{
	struct trio t;
	struct bystander bys;
	char needle[512];

	H_ASSERT(sl_node_id("a") < sl_node_id("b"), "a must dial b");
	trio_bc(&t, NULL, NULL);
	trio_watch_a(&t, &bys, t.pb, NULL);
	snprintf(needle, sizeof(needle), "link b (127.0.0.1:%u): b refuses this node: it does not "
		 "list node a under [peers]; add \"a = 127.0.0.1:%u\" under [peers] in b's "
		 "configuration", t.pb, t.pa);
	expect_once(&t.a, needle);
	snprintf(needle, sizeof(needle), " refused: node a is not under [peers] of this node (b); add "
		 "\"a = 127.0.0.1:%u\" under [peers] in b's configuration, or remove b from a's",
		 t.pa);
	expect_once(&t.b, needle);
	expect_once(&t.b, "link: 127.0.0.1:");
	expect_ctl_links(&t.a, "b", "refused: this node is not under its [peers]");
	expect_no_retry_noise(&t.a, t.pb);
	expect_retries(&t.b, "auth_failures_unknown_node", 3, 12);
	trio_stop(&t, &bys);
}
END_TEST

/*
 * not_listed_back: b lists a, but a, whose node id is lower and who
 * would dial, does not list b.  Before: a logged "refused: protocol:
 * HELLO before the handshake" for b's start-up nudge, b nothing but the
 * peer timeout.
 */
START_TEST(not_listed_back)
{
	struct h_daemon a, b, c, peers[2];
	struct bystander bys;
	struct refused r[1];
	uint16_t pa = h_free_port(), pb = h_free_port(), pc = h_free_port();
	char needle[512];

	H_ASSERT(sl_node_id("a") < sl_node_id("b"), "a must be the one to dial b");
	named(&peers[0], "b", pb);
	h_daemon_start(&c, "c", pc, peers, 1);
	h_daemon_start(&a, "a", pa, NULL, 0);
	named(&peers[0], "c", pc);
	named(&peers[1], "a", pa);
	h_daemon_start_conf(&b, "b", pb, peers, 2, "[transport]\npeer_timeout_ms = 3000\n");
	h_wait_link(&b, &c);
	h_wait_link(&c, &b);
	bys_open(&bys, &b, &c);
	r[0] = (struct refused){ &b, "a" };
	observe(r, 1, &bys, &c, "b");
	snprintf(needle, sizeof(needle), " refused: node %08x says it started and waits for this "
		 "node to dial it, but it is not under [peers] of this node (a); add \"<its name> = "
		 "127.0.0.1:<its listen port>\" under [peers] in a's configuration, or remove a "
		 "from its", sl_node_id("b"));
	expect_once(&a, needle);
	snprintf(needle, sizeof(needle), "link a (127.0.0.1:%u): a never dialed this node in 3 s "
		 "(the lower node id dials): is b under [peers] in a's configuration, at "
		 "127.0.0.1:%u?", pa, pb);
	expect_once(&b, needle);
	bys_close(&bys);
	h_daemon_stop(&a);
	h_daemon_stop(&b);
	h_daemon_stop(&c);
}
END_TEST

/*
 * wrong_daemon: a's entry for b names the address where c listens (c
 * lists a, and waits for it to dial).  Before: a logged "refused:
 * protocol: unexpected handshake step" and "bad stream: Protocol error"
 * per retry, c "read: Connection reset by peer".
 */
START_TEST(wrong_daemon)
{
	struct trio t;
	struct h_daemon b_at_c, c_peers[2];
	struct bystander bys;
	struct refused r[2];
	char needle[512];

	H_ASSERT(sl_node_id("a") < sl_node_id("b") && sl_node_id("a") < sl_node_id("c"),
		 "a must dial b and c");
	t.pa = h_free_port();
	t.pb = h_free_port();
	t.pc = h_free_port();
	named(&c_peers[0], "c", t.pc);
	h_daemon_start(&t.b, "b", t.pb, c_peers, 1);
	named(&c_peers[0], "b", t.pb);
	named(&c_peers[1], "a", t.pa);
	h_daemon_start(&t.c, "c", t.pc, c_peers, 2);
	h_wait_link(&t.b, &t.c);
	h_wait_link(&t.c, &t.b);
	bys_open(&bys, &t.b, &t.c);
	named(&b_at_c, "b", t.pc);
	h_daemon_start(&t.a, "a", t.pa, &b_at_c, 1);
	r[0] = (struct refused){ &t.a, "b" };
	r[1] = (struct refused){ &t.c, "a" };
	observe(r, 2, &bys, &t.c, "b");
	snprintf(needle, sizeof(needle), "link b (127.0.0.1:%u): this address is answered by node "
		 "c (%08x), not b: correct b's address under [peers] in a's configuration", t.pc,
		 sl_node_id("c"));
	expect_once(&t.a, needle);
	snprintf(needle, sizeof(needle), ": node a dialed this node (c, 127.0.0.1:%u) expecting "
		 "another node: an entry under [peers] in a's configuration names this address; "
		 "correct it there", t.pc);
	expect_once(&t.c, needle);
	expect_no_retry_noise(&t.a, t.pc);
	expect_ctl_links(&t.a, "b", "handshake: answered by node c");
	H_EQ(tu_log_lines(&t.c, "Connection reset by peer"), 0);
	trio_stop(&t, &bys);
}
END_TEST

/*
 * same_name: a second daemon named a (a2) dials b while a's link is up.
 * Before: b logged "refused: link up on another connection: without a key
 * a live link is never replaced" per retry, a2 the transport's line and
 * "closed the connection before answering".
 */
START_TEST(same_name)
{
	struct h_daemon a, a2, b, a_named, b_named;
	struct bystander bys;
	struct refused r[1];
	uint16_t pa = h_free_port(), pa2 = h_free_port(), pb = h_free_port();
	char needle[512];

	H_ASSERT(sl_node_id("a") < sl_node_id("b"), "a must dial b");
	named(&a_named, "a", pa);
	named(&b_named, "b", pb);
	h_daemon_start(&b, "b", pb, &a_named, 1);
	h_daemon_start(&a, "a", pa, &b_named, 1);
	h_wait_link(&a, &b);
	h_wait_link(&b, &a);
	bys_open(&bys, &a, &b);
	h_daemon_start(&a2, "a", pa2, &b_named, 1);
	r[0] = (struct refused){ &a2, "b" };
	observe(r, 1, &bys, &b, "a");
	snprintf(needle, sizeof(needle), "link b (127.0.0.1:%u): b refuses this node: node a is "
		 "up there on another connection; are two daemons named a? Give each daemon a "
		 "node name of its own", pb);
	expect_once(&a2, needle);
	expect_once(&b, " refused: node a is already up on another connection (127.0.0.1:");
	expect_once(&b, "are two daemons named a? Give each daemon a node name of its own");
	expect_no_retry_noise(&a2, pb);
	expect_retries(&b, "auth_failures_live", 3, 12);
	bys_close(&bys);
	h_daemon_stop(&a2);
	h_daemon_stop(&a);
	h_daemon_stop(&b);
}
END_TEST

/* A new key file by sluiced --keygen; the [security] text using it. */
static void key_conf(char *conf, size_t cap, char *path, size_t path_cap, const char *tag)
{
	char bin[512], out[512];
	const char *top = getenv("top_builddir");
	int rc;

	snprintf(path, path_cap, "/tmp/sluice-test-linkdiag-%d-%s.key", (int)getpid(), tag);
	(void)unlink(path);
	snprintf(bin, sizeof(bin), "%s/daemon/sluiced", top ? top : ".");
	{
		const char *argv[] = { bin, "--keygen", path, NULL };

		rc = h_run(argv, out, sizeof(out), 10000);
	}
	H_ASSERT(rc == 0, "keygen: %d: %s", rc, out);
	snprintf(conf, cap, "[security]\nmode = authenticate\nkey_file = %s\n", path);
}

/*
 * The security cases: a (keyed with @a_conf) dials b (@b_conf, as c's),
 * which lists it; b
 * refuses; what each side must log once (@a_why after a's prefix).
 */
static void security_case(const char *a_conf, const char *b_conf, const char *counter,
			  const char *a_why, const char *b_needle)
{
	struct trio t;
	struct bystander bys;
	char needle[512];

	trio_bc(&t, b_conf, "");
	trio_watch_a(&t, &bys, t.pb, a_conf);
	snprintf(needle, sizeof(needle), "link b (127.0.0.1:%u): b refuses this node: %s", t.pb,
		 a_why);
	expect_once(&t.a, needle);
	expect_once(&t.b, b_needle);
	expect_no_retry_noise(&t.a, t.pb);
	expect_retries(&t.b, counter, 3, 12);
	trio_stop(&t, &bys);
}

/* mode_differs: before, b logged "refused: other security mode" per retry
 * and a only "closed the connection before answering the handshake". */
START_TEST(mode_differs)
{
	char conf[512], path[128];

	key_conf(conf, sizeof(conf), path, sizeof(path), "mode");
	security_case(conf, NULL, "auth_failures_mode",
		      "b runs [security] mode none, this node authenticate; set the same mode on "
		      "both",
		      " refused: node a runs [security] mode authenticate, this node (b) none; set the "
		      "same mode on both");
	H_EQ(unlink(path), 0);
}
END_TEST

/* key_differs: before, b logged "refused: no common key" per retry and a
 * only "closed the connection before answering the handshake". */
START_TEST(key_differs)
{
	char conf_a[512], conf_b[512], path_a[128], path_b[128];

	key_conf(conf_a, sizeof(conf_a), path_a, sizeof(path_a), "ka");
	key_conf(conf_b, sizeof(conf_b), path_b, sizeof(path_b), "kb");
	security_case(conf_a, conf_b, "auth_failures_key",
		      "they share no cluster key; give both the same [security] key_file",
		      " refused: node a holds neither key_file nor previous_key_file of this node (b); "
		      "give both the same [security] key_file");
	H_EQ(unlink(path_a), 0);
	H_EQ(unlink(path_b), 0);
}
END_TEST

/*
 * wrong_address: b lists a at 127.0.0.2, but a dials from 127.0.0.1.
 * Before: b logged "refused: wrong address: claims node a, configured at
 * 127.0.0.2" per retry, a "closed the connection before answering the
 * handshake" and the transport's line per retry.
 */
START_TEST(wrong_address)
{
	struct trio t;
	struct bystander bys;
	char needle[512];

	H_ASSERT(sl_node_id("a") < sl_node_id("b"), "a must dial b");
	trio_bc(&t, NULL, "127.0.0.2");
	trio_watch_a(&t, &bys, t.pb, NULL);
	snprintf(needle, sizeof(needle), "link b (127.0.0.1:%u): b refuses this node: it lists "
		 "node a at another address than the one a dials from; correct a's address under "
		 "[peers] in b's configuration", t.pb);
	expect_once(&t.a, needle);
	expect_once(&t.b, " refused: node a is under [peers] of this node (b) at 127.0.0.2, but "
		    "dials from 127.0.0.1; correct a's address under [peers] in b's configuration");
	expect_no_retry_noise(&t.a, t.pb);
	expect_retries(&t.b, "auth_failures_address", 3, 12);
	trio_stop(&t, &bys);
}
END_TEST

/*
 * wrong_daemon_unlisted: as wrong_daemon, but c does not list a, and
 * refuses it.  a must not be told to change b's configuration: its own
 * entry for b is wrong.  Before: a logged "the peer closed the connection
 * before answering the handshake" per retry, c "unknown node: node
 * e40c292c is not configured".
 */
START_TEST(wrong_daemon_unlisted)
{
	struct trio t;
	struct bystander bys;
	char needle[512];

	trio_bc(&t, NULL, NULL);
	trio_watch_a(&t, &bys, t.pc, NULL);
	snprintf(needle, sizeof(needle), "link b (127.0.0.1:%u): this address is answered by node "
		 "%08x, not b, which refuses this node (this node is not under its [peers]): correct "
		 "b's address under [peers] in a's configuration", t.pc, sl_node_id("c"));
	expect_once(&t.a, needle);
	snprintf(needle, sizeof(needle), " refused: node a is not under [peers] of this node (c); "
		 "add \"a = 127.0.0.1:%u\" under [peers] in c's configuration, or remove c from a's",
		 t.pa);
	expect_once(&t.c, needle);
	expect_no_retry_noise(&t.a, t.pc);
	trio_stop(&t, &bys);
}
END_TEST

/*
 * same_name_keyed: two daemons named a, with the cluster key, dial b.
 * Both prove themselves, so each connection replaces the other's; b must
 * say that two daemons take turns as a.  Before: b logged only "peer
 * restarted" at every turn.
 */
START_TEST(same_name_keyed)
{
	struct trio t;
	struct h_daemon a2, b_named;
	struct bystander bys;
	char conf[512], path[128];
	uint16_t pa2 = h_free_port();
	int64_t end;

	key_conf(conf, sizeof(conf), path, sizeof(path), "same");
	trio_bc(&t, conf, "");
	bys_open(&bys, &t.b, &t.c);
	named(&b_named, "b", t.pb);
	h_daemon_start_conf(&t.a, "a", t.pa, &b_named, 1, conf);
	h_wait_link(&t.a, &t.b);
	h_daemon_start_conf(&a2, "a", pa2, &b_named, 1, conf);
	end = h_now_ms() + OBSERVE_MS;
	while (h_now_ms() < end) {
		bys_round(&bys);
		h_sleep_ms(100);
	}
	H_EQ(h_daemon_stat(&t.c, "link.b.connects"), 1);
	printf("  %u bystander messages byte-exact, link b of c: 1 connect\n", bys.sent);
	expect_once(&t.b, "are two daemons named a (with the same key)? Give each daemon a node "
		    "name of its own");
	expect_once(&t.b, "link a (127.0.0.1:");
	h_daemon_stop(&a2);
	trio_stop(&t, &bys);
	H_EQ(unlink(path), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("linkdiag");
	TCase *tc = h_tcase(s, "linkdiag", 90);

	/* This file diagnoses a peer's configuration as links come up at
	 * start, with no traffic to wake them: links on demand would wait
	 * (harness.h). */
	h_links_always = true;

	tcase_add_test(tc, not_listed);
	tcase_add_test(tc, not_listed_back);
	tcase_add_test(tc, wrong_daemon);
	tcase_add_test(tc, wrong_daemon_unlisted);
	tcase_add_test(tc, wrong_address);
	tcase_add_test(tc, same_name);
	tcase_add_test(tc, same_name_keyed);
	tcase_add_test(tc, mode_differs);
	tcase_add_test(tc, key_differs);
	return h_run_suite(s);
}
