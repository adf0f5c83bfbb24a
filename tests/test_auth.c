/*
 * test_auth.c - who may become a peer: a stranger on
 * the listen port cannot take a link over, inject a message or reset a
 * link's sequence state; a HELLO from an address other than the configured
 * peer's is refused even without a key; with a cluster key the handshake
 * is a mutual challenge-response (wrong key, replayed handshake refused,
 * the previous key accepted, a reload applies a new one); a version-2 peer
 * is refused with one clear line; what outsiders trigger is logged with a
 * bound.  The attacks on a live two-node link run beside bystanders (a
 * stream and a ping-pong between the two real nodes) that must see
 * nothing: every operation SL_OK, byte-exact, no reconnect, no restart.
 * The cases that need the link down (its dialer absent: the address
 * rule, replays, versions, the log bound) run against the accepter alone
 * and check its link and counters instead.
 */
#include "autoconfig.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bystanders.h"
#include "harness.h"
#include "raw_peer.h"
#include "sl_wire.h"
#include "sluice.h"
#include "testutil.h"

enum { DIAL = 0, ACC = 1 };

#define VICTIM_PORT 7000
#define VICTIM_RECVS 8
#define ROGUE_SRC_PORT 5555

/* Who dials: the lower node id (link_connect.c, link_add). */
static void roles(const char **names)
{
	bool a_dials = sl_node_id("a") < sl_node_id("b");

	names[DIAL] = a_dials ? "a" : "b";
	names[ACC] = a_dials ? "b" : "a";
}

static char *link_key(char *buf, size_t cap, const char *peer, const char *what)
{
	snprintf(buf, cap, "link.%s.%s", peer, what);
	return buf;
}

static uint64_t link_stat(const struct h_daemon *d, const char *peer, const char *what)
{
	char key[96];

	return h_daemon_stat(d, link_key(key, sizeof(key), peer, what));
}

/* ------------------------------------------------------------------ */
/* The victim: a receiver on ACC port 7000 with receives posted          */
/* ------------------------------------------------------------------ */

struct victim {
	struct sl_ctx *ctx;
	struct sl_queue *q;
	uint8_t *buf;
};

static void victim_open(struct victim *v, const struct h_daemon *d)
{
	int i, rc;

	H_EQ(sl_open(d->sock, &v->ctx), 0);
	H_EQ(sl_queue_open(v->ctx, VICTIM_PORT, 16, &v->q), 0);
	v->buf = sl_alloc(v->q, VICTIM_RECVS * 4096);
	H_ASSERT(v->buf, "sl_alloc");
	memset(v->buf, 0x5a, VICTIM_RECVS * 4096);
	for (i = 0; i < VICTIM_RECVS; i++) {
		rc = sl_recv(v->q, SL_ANY_SOURCE, 0, 0, v->buf + i * 4096, 4096, (uint64_t)i);
		H_EQ(rc, 0);
	}
}

/* Nothing was delivered: no completion, every buffer untouched. */
static void victim_expect_nothing(struct victim *v)
{
	expect_no_cqe(v->q, 1000);
	H_ASSERT(all_bytes(v->buf, VICTIM_RECVS * 4096, 0x5a), "a receive buffer was written");
	H_EQ(sl_queue_close(v->q), 0);
	sl_close(v->ctx);
}

/* ------------------------------------------------------------------ */
/* The rogue: raw frames on the listen port                              */
/* ------------------------------------------------------------------ */

/* A TCP connection from @src_ip (any port) to 127.0.0.1:@port. */
static int rogue_connect(const char *src_ip, uint16_t port)
{
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	H_ASSERT(fd >= 0, "socket: %s", strerror(errno));
	H_EQ(inet_pton(AF_INET, src_ip, &src.sin_addr), 1);
	H_ASSERT(bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0, "bind %s: %s", src_ip,
		 strerror(errno));
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	H_ASSERT(connect(fd, (struct sockaddr *)&dst, sizeof(dst)) == 0, "connect: %s",
		 strerror(errno));
	return fd;
}

/* Step 1 of the handshake in mode none as @node, pipelined (the rogue
 * does not wait for the answer). */
static void rogue_auth1(int fd, uint32_t node, uint64_t incarnation)
{
	struct sl_wire_frame f = { .type = SL_WIRE_AUTH };

	f.u.auth.node_id = node;
	f.u.auth.step = 1;
	f.u.auth.incarnation = incarnation;
	H_EQ(peer_auth_nonce(f.u.auth.nonce), 0);
	raw_send(fd, &f, NULL);
}

static void rogue_hello(int fd, uint32_t node, uint64_t incarnation, uint64_t peer_incarnation)
{
	struct sl_wire_frame f = { .type = SL_WIRE_HELLO };

	f.u.hello.node_id = node;
	f.u.hello.eager_max = 65536;
	f.u.hello.incarnation = incarnation;
	f.u.hello.credits = 256;
	f.u.hello.peer_incarnation = peer_incarnation;
	raw_send(fd, &f, NULL);
}

/* @n EAGERs "INJECTED i" to @to's victim port, seq 1..n. */
static void rogue_eagers(int fd, uint32_t to, unsigned n)
{
	char text[32];
	unsigned i;

	for (i = 1; i <= n; i++) {
		struct sl_wire_frame f = { .type = SL_WIRE_EAGER, .seq = i };

		snprintf(text, sizeof(text), "INJECTED %u", i);
		f.payload_len = (uint32_t)strlen(text);
		f.u.eager.src_port = ROGUE_SRC_PORT;
		f.u.eager.dst_port = VICTIM_PORT;
		f.u.eager.dst_node = to;
		if (!raw_send(fd, &f, text))
			return;
	}
}

/* Wait (bounded) until the daemon closes @fd, reading and dropping what
 * it says; returns the ms it took, or -1 if it stayed open. */
static int64_t rogue_wait_closed(int fd, int bound_ms)
{
	int64_t t0 = h_now_ms();
	uint8_t b[512];

	while (h_now_ms() - t0 < bound_ms) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&pfd, 1, 100) != 1)
			continue;
		r = read(fd, b, sizeof(b));
		if (r <= 0)
			return h_now_ms() - t0;
	}
	return -1;
}

static unsigned log_lines(const struct h_daemon *d)
{
	FILE *f = fopen(d->log, "r");
	unsigned n = 0;
	int ch;

	H_ASSERT(f, "%s: %s", d->log, strerror(errno));
	while ((ch = getc(f)) != EOF)
		if (ch == '\n')
			n++;
	fclose(f);
	return n;
}

/* The real link kept its one connection and its peer's incarnation. */
struct link_snap {
	uint64_t connects[2];
	uint64_t restarts[2];
};

static void link_snap(const struct h_daemon *nodes, const char **names, struct link_snap *s)
{
	s->connects[DIAL] = link_stat(&nodes[DIAL], names[ACC], "connects");
	s->connects[ACC] = link_stat(&nodes[ACC], names[DIAL], "connects");
	s->restarts[DIAL] = link_stat(&nodes[DIAL], names[ACC], "peer_restarts");
	s->restarts[ACC] = link_stat(&nodes[ACC], names[DIAL], "peer_restarts");
}

static void link_expect_same(const struct h_daemon *nodes, const char **names,
			     const struct link_snap *before)
{
	struct link_snap after;

	link_snap(nodes, names, &after);
	H_EQ(after.connects[ACC], before->connects[ACC]);
	H_EQ(after.connects[DIAL], before->connects[DIAL]);
	H_EQ(after.restarts[ACC], 0);
	H_EQ(after.restarts[DIAL], 0);
}

/* ------------------------------------------------------------------ */
/* (a) the hijack                                                     */
/* ------------------------------------------------------------------ */

/*
 * A stranger connects to the accepter's listen port, says HELLO as the
 * dialer (a random incarnation) and pipelines an EAGER to the victim:
 * nothing is delivered, the connection is closed, the real link keeps its
 * connection (no reconnect, no restart), the bystanders see nothing, and
 * the refusal is counted.
 */
START_TEST(hijack_refused)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct bystanders bys;
	struct victim v;
	struct link_snap before;
	int64_t ms;
	int fd;

	roles(names);
	h_cluster_start(nodes, names, 2);
	victim_open(&v, &nodes[ACC]);
	bystanders_start(&bys, &nodes[DIAL], &nodes[ACC]);
	link_snap(nodes, names, &before);

	fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
	rogue_hello(fd, nodes[DIAL].node, 0x524f475545000001ull, 0);
	rogue_eagers(fd, nodes[ACC].node, 1);
	ms = rogue_wait_closed(fd, 7000);
	close(fd);

	victim_expect_nothing(&v);
	bystanders_finish(&bys);
	link_expect_same(nodes, names, &before);
	H_ASSERT(ms >= 0, "the rogue's connection stayed open");
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures"), 1);
	printf("hijack_refused: forged HELLO + EAGER closed after %lld ms, nothing delivered\n",
	       (long long)ms);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* (b) the address rule, without a key                                   */
/* ------------------------------------------------------------------ */

/*
 * The accepter alone (its dialer is configured but not running, so the
 * link is down and there is no live connection to protect): a HELLO as
 * the dialer from 127.0.0.2, which is not the dialer's configured address
 * 127.0.0.1, is refused in mode none, and its EAGER is not delivered.
 */
START_TEST(wrong_address_refused)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct victim v;
	int64_t ms;
	int fd;

	roles(names);
	memset(nodes, 0, sizeof(nodes));
	snprintf(nodes[DIAL].name, sizeof(nodes[DIAL].name), "%s", names[DIAL]);
	nodes[DIAL].node = sl_node_id(names[DIAL]);
	nodes[DIAL].tcp_port = h_free_port();
	h_daemon_start(&nodes[ACC], names[ACC], h_free_port(), &nodes[DIAL], 1);
	victim_open(&v, &nodes[ACC]);

	fd = rogue_connect("127.0.0.2", nodes[ACC].tcp_port);
	rogue_auth1(fd, nodes[DIAL].node, 0x524f475545000002ull);
	rogue_hello(fd, nodes[DIAL].node, 0x524f475545000002ull, 0);
	rogue_eagers(fd, nodes[ACC].node, 1);
	ms = rogue_wait_closed(fd, 7000);
	close(fd);

	victim_expect_nothing(&v);
	H_ASSERT(ms >= 0, "the connection from 127.0.0.2 stayed open");
	H_EQ(link_stat(&nodes[ACC], names[DIAL], "connects"), 0);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures_address"), 1);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures"), 1);
	printf("wrong_address_refused: HELLO from 127.0.0.2 closed after %lld ms\n",
	       (long long)ms);

	/* The same from the configured address is taken: only the address
	 * was wrong. */
	{
		struct raw_auth a = { .node = nodes[DIAL].node, .incarnation = 0x524f475545000003ull,
				      .to_node = nodes[ACC].node };

		fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
		H_EQ(raw_hello(fd, &a, 5000), 0);
		H_EQ(link_stat(&nodes[ACC], names[DIAL], "connects"), 1);
		close(fd);
	}
	h_daemon_stop(&nodes[ACC]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* (c) a second HELLO for a live link                                    */
/* ------------------------------------------------------------------ */

/*
 * Without a key, from the right address, with the dialer's real
 * incarnation and the accepter's (what a local client could learn): a
 * second HELLO for the live link, saying it received nothing, followed by
 * 50 EAGERs.  The link's sequence state is not reset (its connection,
 * sequence numbers and traffic go on), nothing is delivered.
 */
START_TEST(live_link_keeps_state)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct bystanders bys;
	struct victim v;
	struct link_snap before;
	char key[96], inc_dial[32], inc_acc[32];
	uint64_t tx_seq0, tx_seq1;
	int64_t ms;
	int fd;

	roles(names);
	h_cluster_start(nodes, names, 2);
	victim_open(&v, &nodes[ACC]);
	bystanders_start(&bys, &nodes[DIAL], &nodes[ACC]);
	link_snap(nodes, names, &before);
	h_daemon_stat_str(&nodes[ACC], link_key(key, sizeof(key), names[DIAL], "incarnation"),
			  inc_dial, sizeof(inc_dial));
	h_daemon_stat_str(&nodes[DIAL], link_key(key, sizeof(key), names[ACC], "incarnation"),
			  inc_acc, sizeof(inc_acc));
	tx_seq0 = link_stat(&nodes[ACC], names[DIAL], "tx_seq");

	fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
	rogue_auth1(fd, nodes[DIAL].node, strtoull(inc_dial, NULL, 16));
	rogue_hello(fd, nodes[DIAL].node, strtoull(inc_dial, NULL, 16),
		    strtoull(inc_acc, NULL, 16));
	rogue_eagers(fd, nodes[ACC].node, 50);
	ms = rogue_wait_closed(fd, 7000);
	close(fd);

	tx_seq1 = link_stat(&nodes[ACC], names[DIAL], "tx_seq");
	victim_expect_nothing(&v);
	bystanders_finish(&bys);
	link_expect_same(nodes, names, &before);
	H_ASSERT(tx_seq1 >= tx_seq0, "tx_seq went back from %llu to %llu",
		 (unsigned long long)tx_seq0, (unsigned long long)tx_seq1);
	H_ASSERT(ms >= 0, "the second connection stayed open");
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures_live"), 1);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures"), 1);
	printf("live_link_keeps_state: second HELLO closed after %lld ms; tx_seq %llu -> %llu\n",
	       (long long)ms, (unsigned long long)tx_seq0, (unsigned long long)tx_seq1);
	h_cluster_stop(nodes, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* (d) with a cluster key                                                */
/* ------------------------------------------------------------------ */

struct keyfile {
	char path[128];
	struct peer_key key;
};

/* A new key file (sluiced --keygen's code), read back. */
static void key_make(struct keyfile *kf, const char *tag)
{
	char err[512];

	snprintf(kf->path, sizeof(kf->path), "/tmp/sluice-test-auth-%d-%s.key", (int)getpid(),
		 tag);
	(void)unlink(kf->path);
	H_ASSERT(peer_key_generate(kf->path, err, sizeof(err)) == 0, "%s", err);
	H_ASSERT(peer_key_load(kf->path, &kf->key, err, sizeof(err)) == 0, "%s", err);
}

static void key_drop(struct keyfile *kf)
{
	H_EQ(unlink(kf->path), 0);
}

/* The [security] section of a keyed node. */
static const char *conf_keys(char *buf, size_t cap, const struct keyfile *key,
			     const struct keyfile *prev)
{
	int n = snprintf(buf, cap, "[security]\nmode = authenticate\nkey_file = %s\n", key->path);

	if (prev)
		snprintf(buf + n, cap - (size_t)n, "previous_key_file = %s\n", prev->path);
	return buf;
}

static void expect_auth_how(const struct h_daemon *d, const char *peer, const char *how)
{
	char key[96], val[32];

	h_daemon_stat_str(d, link_key(key, sizeof(key), peer, "auth"), val, sizeof(val));
	H_ASSERT(strcmp(val, how) == 0, "%s: link %s authenticated by '%s', want '%s'", d->name,
		 peer, val, how);
}

/*
 * Two keyed nodes link up, both sides by key.  A stranger with another
 * key is refused at step 1 (no key in common); one that claims the
 * cluster key's id but proves with its own is refused at step 3 (bad
 * proof), its pipelined HELLO and EAGER dropped.  Bystanders see nothing.
 */
START_TEST(wrong_key_refused)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct keyfile k, wrong;
	struct bystanders bys;
	struct victim v;
	struct link_snap before;
	char conf[512];
	int fd, rc;

	roles(names);
	key_make(&k, "k");
	key_make(&wrong, "wrong");
	h_cluster_start_conf(nodes, names, 2, conf_keys(conf, sizeof(conf), &k, NULL));
	expect_auth_how(&nodes[ACC], names[DIAL], "key");
	expect_auth_how(&nodes[DIAL], names[ACC], "key");
	victim_open(&v, &nodes[ACC]);
	bystanders_start(&bys, &nodes[DIAL], &nodes[ACC]);
	link_snap(nodes, names, &before);

	{
		struct raw_auth a = { .key = &wrong.key, .node = nodes[DIAL].node,
				      .incarnation = 0x4b45590000000001ull,
				      .to_node = nodes[ACC].node };

		fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
		rc = raw_handshake(fd, &a, 5000);
		H_ASSERT(rc == -ECONNRESET, "another key: handshake %d, want refused", rc);
		close(fd);
	}
	{
		struct raw_auth a = { .key = &wrong.key, .key_id = k.key.id, .no_check = true,
				      .node = nodes[DIAL].node,
				      .incarnation = 0x4b45590000000002ull,
				      .to_node = nodes[ACC].node };

		fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
		H_EQ(raw_handshake(fd, &a, 5000), 0);	/* step 3 went out */
		rogue_hello(fd, nodes[DIAL].node, a.incarnation, 0);
		rogue_eagers(fd, nodes[ACC].node, 1);
		H_ASSERT(rogue_wait_closed(fd, 7000) >= 0, "bad proof: connection stayed open");
		close(fd);
	}

	victim_expect_nothing(&v);
	bystanders_finish(&bys);
	link_expect_same(nodes, names, &before);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures_key"), 1);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures_proof"), 1);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures"), 2);
	printf("wrong_key_refused: another key refused at step 1, a bad proof at step 3\n");
	h_cluster_stop(nodes, 2);
	key_drop(&k);
	key_drop(&wrong);
}
END_TEST

/*
 * A keyed accepter alone (its dialer configured, not running).  A raw
 * peer with the key does the whole handshake and gets the daemon's HELLO
 * (the link comes up, by key).  Its recorded steps 1 and 3 sent again on
 * a new connection are refused as a replay; a fresh step 1 followed by
 * the old step 3 fails its proof.
 */
START_TEST(replayed_handshake_refused)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct keyfile k;
	char conf[512];
	struct raw_auth a;
	int fd, i;

	roles(names);
	key_make(&k, "k");
	memset(nodes, 0, sizeof(nodes));
	snprintf(nodes[DIAL].name, sizeof(nodes[DIAL].name), "%s", names[DIAL]);
	nodes[DIAL].node = sl_node_id(names[DIAL]);
	nodes[DIAL].tcp_port = h_free_port();
	h_daemon_start_conf(&nodes[ACC], names[ACC], h_free_port(), &nodes[DIAL], 1,
			    conf_keys(conf, sizeof(conf), &k, NULL));

	a = (struct raw_auth){ .key = &k.key, .node = nodes[DIAL].node,
			       .incarnation = 0x5245504c41590001ull, .to_node = nodes[ACC].node };
	fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
	H_EQ(raw_hello(fd, &a, 5000), 0);
	H_EQ(link_stat(&nodes[ACC], names[DIAL], "connects"), 1);
	expect_auth_how(&nodes[ACC], names[DIAL], "key");
	close(fd);
	for (i = 0; i < 100 && h_daemon_stat(&nodes[ACC], "daemon.auth_handshakes") != 1; i++)
		h_sleep_ms(50);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_handshakes"), 1);

	/* The recorded handshake, word for word. */
	fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
	H_EQ(send(fd, a.step1, sizeof(a.step1), MSG_NOSIGNAL), (ssize_t)sizeof(a.step1));
	(void)!send(fd, a.step3, sizeof(a.step3), MSG_NOSIGNAL);
	H_ASSERT(rogue_wait_closed(fd, 7000) >= 0, "replay: connection stayed open");
	close(fd);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures_replay"), 1);

	/* A fresh step 1 does not make the old step 3 good. */
	fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
	{
		struct sl_wire_frame f = { .type = SL_WIRE_AUTH };

		f.u.auth.node_id = nodes[DIAL].node;
		f.u.auth.step = 1;
		f.u.auth.mode = 1;
		f.u.auth.incarnation = a.incarnation;
		f.u.auth.key_id = k.key.id;
		H_EQ(peer_auth_nonce(f.u.auth.nonce), 0);
		H_ASSERT(raw_send(fd, &f, NULL), "send step 1");
	}
	(void)!send(fd, a.step3, sizeof(a.step3), MSG_NOSIGNAL);
	H_ASSERT(rogue_wait_closed(fd, 7000) >= 0, "old step 3: connection stayed open");
	close(fd);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures_proof"), 1);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures"), 2);
	printf("replayed_handshake_refused: the recorded handshake refused as a replay, "
	       "its step 3 after a fresh step 1 as a bad proof\n");
	h_daemon_stop(&nodes[ACC]);
	key_drop(&k);
}
END_TEST

/*
 * Rotation: a node that has the new key with the old one as
 * previous_key_file links with a node that has only the old key, in
 * either role; both prove with the key they share.
 */
START_TEST(previous_key_accepted)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct keyfile old, new;
	char conf_old[512], conf_both[512];
	const char *confs[2];
	int round;

	roles(names);
	key_make(&old, "old");
	key_make(&new, "new");
	conf_keys(conf_old, sizeof(conf_old), &old, NULL);
	conf_keys(conf_both, sizeof(conf_both), &new, &old);
	for (round = 0; round < 2; round++) {
		confs[DIAL] = round == 0 ? conf_old : conf_both;
		confs[ACC] = round == 0 ? conf_both : conf_old;
		h_cluster_start_confs(nodes, names, 2, confs);
		expect_auth_how(&nodes[ACC], names[DIAL], "key");
		expect_auth_how(&nodes[DIAL], names[ACC], "key");
		H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures"), 0);
		H_EQ(h_daemon_stat(&nodes[DIAL], "daemon.auth_failures"), 0);
		h_cluster_stop(nodes, 2);
	}
	printf("previous_key_accepted: old key <-> new key with the old as previous, "
	       "both roles\n");
	key_drop(&old);
	key_drop(&new);
}
END_TEST

/*
 * A reload applies a new key: the accepter's key file gets a new key
 * under the same name and SIGHUP; the live link stays; the dialer
 * restarted with the new key links up, which the old key alone would not
 * let it.
 */
START_TEST(reload_applies_key)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct keyfile acc, dial_old, dial_new;
	char conf_acc[512], conf_dial[512];
	const char *confs[2];
	char err[512];
	int i;

	roles(names);
	key_make(&acc, "acc");
	key_make(&dial_new, "dialnew");
	/* The dialer's old key: a copy of the accepter's first one. */
	snprintf(dial_old.path, sizeof(dial_old.path), "/tmp/sluice-test-auth-%d-dialold.key",
		 (int)getpid());
	{
		int fd;

		(void)unlink(dial_old.path);
		fd = open(dial_old.path, O_WRONLY | O_CREAT | O_EXCL, 0400);
		H_ASSERT(fd >= 0, "%s: %s", dial_old.path, strerror(errno));
		H_EQ(write(fd, acc.key.bytes, PEER_KEY_LEN), (ssize_t)PEER_KEY_LEN);
		H_EQ(close(fd), 0);
	}
	confs[ACC] = conf_keys(conf_acc, sizeof(conf_acc), &acc, NULL);
	confs[DIAL] = conf_keys(conf_dial, sizeof(conf_dial), &dial_old, NULL);
	h_cluster_start_confs(nodes, names, 2, confs);
	expect_auth_how(&nodes[ACC], names[DIAL], "key");

	/* The accepter's key file now holds dial_new's key. */
	H_EQ(unlink(acc.path), 0);
	{
		int fd = open(acc.path, O_WRONLY | O_CREAT | O_EXCL, 0400);

		H_ASSERT(fd >= 0, "%s: %s", acc.path, strerror(errno));
		H_EQ(write(fd, dial_new.key.bytes, PEER_KEY_LEN), (ssize_t)PEER_KEY_LEN);
		H_EQ(close(fd), 0);
	}
	H_EQ(kill(nodes[ACC].pid, SIGHUP), 0);
	for (i = 0; i < 100 && tu_log_lines(&nodes[ACC], "peer keys read again") == 0; i++)
		h_sleep_ms(50);
	H_EQ(tu_log_lines(&nodes[ACC], "peer keys read again"), 1);
	h_wait_link(&nodes[DIAL], &nodes[ACC]);	/* the live link stays */
	H_EQ(link_stat(&nodes[ACC], names[DIAL], "connects"), 1);

	h_daemon_kill(&nodes[DIAL]);
	h_daemon_restart(&nodes[DIAL], &nodes[ACC], 1,
			 conf_keys(conf_dial, sizeof(conf_dial), &dial_new, NULL));
	h_wait_link(&nodes[DIAL], &nodes[ACC]);
	h_wait_link(&nodes[ACC], &nodes[DIAL]);
	expect_auth_how(&nodes[ACC], names[DIAL], "key");
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_handshakes"), 2);
	H_ASSERT(peer_key_load(acc.path, &acc.key, err, sizeof(err)) == 0, "%s", err);
	H_EQ(acc.key.id, dial_new.key.id);
	printf("reload_applies_key: SIGHUP read the new key; the dialer with it linked up\n");
	h_cluster_stop(nodes, 2);
	key_drop(&acc);
	key_drop(&dial_old);
	key_drop(&dial_new);
}
END_TEST

/* The daemon's own checks of key files: a key others may read stops
 * the start with the fix, --keygen never overwrites, writes 0400, and
 * mode encrypt checks like authenticate. */
START_TEST(key_file_rules)
{
	char bin[256], conf_path[160], keypath[160], out[2048];
	const char *top = getenv("top_builddir");
	struct stat st;
	FILE *f;
	int rc;

	snprintf(bin, sizeof(bin), "%s/daemon/sluiced", top && *top ? top : ".");
	snprintf(keypath, sizeof(keypath), "/tmp/sluice-test-auth-%d-rules.key", (int)getpid());
	snprintf(conf_path, sizeof(conf_path), "/tmp/sluice-test-auth-%d-rules.conf",
		 (int)getpid());
	(void)unlink(keypath);
	{
		const char *argv[] = { bin, "--keygen", keypath, NULL };

		H_EQ(h_run(argv, out, sizeof(out), 10000), 0);
		H_EQ(stat(keypath, &st), 0);
		H_EQ(st.st_mode & 07777, 0400);
		H_EQ(st.st_size, 32);
		rc = h_run(argv, out, sizeof(out), 10000);
		H_EQ(rc, 1);
		H_ASSERT(strstr(out, "never overwritten"), "keygen over a key: %s", out);
	}
	f = fopen(conf_path, "w");
	H_ASSERT(f, "%s", conf_path);
	fprintf(f, "[security]\nmode = authenticate\nkey_file = %s\n", keypath);
	H_EQ(fclose(f), 0);
	{
		const char *argv[] = { bin, "-c", conf_path, "--check-config", NULL };

		H_EQ(h_run(argv, out, sizeof(out), 10000), 0);
		H_EQ(chmod(keypath, 0640), 0);
		rc = h_run(argv, out, sizeof(out), 10000);
		H_EQ(rc, 1);	/* as the start: a problem of this host, not of the file */
		H_ASSERT(strstr(out, keypath) && strstr(out, "chmod 0400"),
			 "group-readable key: %s", out);
	}
	f = fopen(conf_path, "w");
	H_ASSERT(f, "%s", conf_path);
	fprintf(f, "[security]\nmode = encrypt\nkey_file = %s\n", keypath);
	H_EQ(fclose(f), 0);
	{
		const char *argv[] = { bin, "-c", conf_path, "--check-config", NULL };

		/* Implemented now (test_encrypt.c): the key, still 0640 from
		 * above, is refused as in mode authenticate. */
		rc = h_run(argv, out, sizeof(out), 10000);
		H_EQ(rc, 1);
		H_ASSERT(strstr(out, keypath) && strstr(out, "chmod 0400"), "mode encrypt: %s", out);
	}
	H_EQ(unlink(keypath), 0);
	H_EQ(unlink(conf_path), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* (e) a version-2 peer                                                  */
/* ------------------------------------------------------------------ */

/* A HELLO of wire version 2 is refused: the connection is closed, one
 * line names the version, and it is counted. */
START_TEST(version2_refused)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct sl_wire_frame f = { .type = SL_WIRE_HELLO };
	uint8_t hdr[SL_WIRE_HDR_MAX];
	int64_t ms;
	int fd, n;

	roles(names);
	memset(nodes, 0, sizeof(nodes));
	snprintf(nodes[DIAL].name, sizeof(nodes[DIAL].name), "%s", names[DIAL]);
	nodes[DIAL].node = sl_node_id(names[DIAL]);
	nodes[DIAL].tcp_port = h_free_port();
	h_daemon_start(&nodes[ACC], names[ACC], h_free_port(), &nodes[DIAL], 1);

	f.u.hello.node_id = nodes[DIAL].node;
	f.u.hello.eager_max = 65536;
	f.u.hello.incarnation = 0x5632000000000001ull;
	f.u.hello.credits = 256;
	n = sl_wire_encode(&f, hdr, sizeof(hdr));
	H_ASSERT(n > 0, "encode %d", n);
	hdr[0] = 2;	/* what a version-2 daemon sends */
	fd = rogue_connect("127.0.0.1", nodes[ACC].tcp_port);
	H_EQ(write(fd, hdr, (size_t)n), n);
	ms = rogue_wait_closed(fd, 7000);
	close(fd);

	H_ASSERT(ms >= 0, "the version-2 connection stayed open");
	H_EQ(link_stat(&nodes[ACC], names[DIAL], "connects"), 0);
	H_EQ(h_daemon_stat(&nodes[ACC], "daemon.auth_failures_version"), 1);
	H_EQ(tu_log_lines(&nodes[ACC], "speaks wire version 2"), 1);
	printf("version2_refused: closed after %lld ms with one log line\n", (long long)ms);
	h_daemon_stop(&nodes[ACC]);
}
END_TEST

/*
 * The other way round: our dialer reaches a version-2 accepter (played
 * by a listening socket that reads the first frame and closes, as a
 * version-2 daemon does on a version byte it does not know).  The dialer
 * says why in its log, and keeps redialling with its back-off.
 */
START_TEST(version2_accepter_named)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	uint8_t first[SL_WIRE_AUTH_LEN];
	int lfd, fd, i, one = 1;

	roles(names);
	memset(nodes, 0, sizeof(nodes));
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	H_ASSERT(lfd >= 0, "socket: %s", strerror(errno));
	H_EQ(setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	H_EQ(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	H_EQ(listen(lfd, 4), 0);
	H_EQ(getsockname(lfd, (struct sockaddr *)&sin, &sl), 0);
	snprintf(nodes[ACC].name, sizeof(nodes[ACC].name), "%s", names[ACC]);
	nodes[ACC].node = sl_node_id(names[ACC]);
	nodes[ACC].tcp_port = ntohs(sin.sin_port);
	h_daemon_start(&nodes[DIAL], names[DIAL], h_free_port(), &nodes[ACC], 1);

	for (i = 0; i < 2; i++) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };

		H_ASSERT(poll(&pfd, 1, 10000) == 1, "the dialer did not dial (%d)", i);
		fd = accept(lfd, NULL, NULL);
		H_ASSERT(fd >= 0, "accept: %s", strerror(errno));
		H_EQ(recv(fd, first, sizeof(first), MSG_WAITALL), (ssize_t)sizeof(first));
		H_EQ(first[0], SL_WIRE_VERSION);
		H_EQ(first[1], SL_WIRE_AUTH);
		H_EQ(close(fd), 0);
	}
	for (i = 0; i < 100 && tu_log_lines(&nodes[DIAL], "before answering the handshake") == 0; i++)
		h_sleep_ms(50);
	H_ASSERT(tu_log_lines(&nodes[DIAL], "before answering the handshake (a daemon of another "
			   "wire version than 3") >= 1, "the dialer did not say why");
	printf("version2_accepter_named: the dialer named another wire version as the likely "
	       "reason\n");
	h_daemon_stop(&nodes[DIAL]);
	H_EQ(close(lfd), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* (f) what outsiders trigger is logged with a bound                     */
/* ------------------------------------------------------------------ */

#define LOG_CYCLES 1000
#define LOG_GARBAGE 200
/* Log lines the daemon may write for all of them. */
#define LOG_BOUND 60

START_TEST(outsider_logs_bounded)
{
	const char *names[2];
	struct h_daemon nodes[2];
	struct rng r = { 14 };
	uint8_t junk[256];
	unsigned before, after, i, j;
	int fd;

	roles(names);
	memset(nodes, 0, sizeof(nodes));
	snprintf(nodes[DIAL].name, sizeof(nodes[DIAL].name), "%s", names[DIAL]);
	nodes[DIAL].node = sl_node_id(names[DIAL]);
	nodes[DIAL].tcp_port = h_free_port();
	h_daemon_start(&nodes[ACC], names[ACC], h_free_port(), &nodes[DIAL], 1);
	h_sleep_ms(300);	/* its start-up lines are written */
	before = log_lines(&nodes[ACC]);
	for (i = 0; i < LOG_CYCLES; i++) {
		fd = h_tcp_connect(nodes[ACC].tcp_port);
		H_EQ(close(fd), 0);
	}
	for (i = 0; i < LOG_GARBAGE; i++) {
		for (j = 0; j < sizeof(junk); j++)
			junk[j] = (uint8_t)rng_next(&r);
		fd = h_tcp_connect(nodes[ACC].tcp_port);
		(void)!send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
		rogue_wait_closed(fd, 2000);
		H_EQ(close(fd), 0);
	}
	h_sleep_ms(1500);	/* the last closes are seen */
	after = log_lines(&nodes[ACC]);
	H_ASSERT(h_daemon_alive(&nodes[ACC]), "daemon died");
	printf("outsider_logs_bounded: %d connect/close cycles and %d garbage connections "
	       "wrote %u log lines\n", LOG_CYCLES, LOG_GARBAGE, after - before);
	H_ASSERT(after - before <= LOG_BOUND, "%u log lines for %d outsider connections",
		 after - before, LOG_CYCLES + LOG_GARBAGE);
	h_daemon_stop(&nodes[ACC]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("auth");

	/* This file checks the handshakes of links that dial at start, with
	 * no traffic to wake them: links on demand would wait (harness.h). */
	h_links_always = true;

	tcase_add_test(h_tcase(s, "hijack_refused", 120), hijack_refused);
	tcase_add_test(h_tcase(s, "wrong_address_refused", 60), wrong_address_refused);
	tcase_add_test(h_tcase(s, "live_link_keeps_state", 120), live_link_keeps_state);
	tcase_add_test(h_tcase(s, "wrong_key_refused", 120), wrong_key_refused);
	tcase_add_test(h_tcase(s, "replayed_handshake_refused", 60), replayed_handshake_refused);
	tcase_add_test(h_tcase(s, "previous_key_accepted", 120), previous_key_accepted);
	tcase_add_test(h_tcase(s, "reload_applies_key", 120), reload_applies_key);
	tcase_add_test(h_tcase(s, "key_file_rules", 60), key_file_rules);
	tcase_add_test(h_tcase(s, "version2_refused", 60), version2_refused);
	tcase_add_test(h_tcase(s, "version2_accepter_named", 60), version2_accepter_named);
	tcase_add_test(h_tcase(s, "outsider_logs_bounded", 120), outsider_logs_bounded);
	return h_run_suite(s);
}
