/*
 * test_senderuid.c - the sender's uid in the receive completion of a
 * message from another node: the sender's uid (and its node) in the
 * receive completion where the daemon knows it, so that a server can
 * authorize requests (docs/limits.md; struct sl_cqe in sluice.h).
 *
 * Two daemons on TCP loopback, node S (the sender's) and node R (the
 * receiver's), with client_group = users so that a forked client that
 * became uid OTHER_UID may use them.  The receiver is root's queue on R.
 *   keyed_paths       [security] mode authenticate: eager and rendezvous
 *                     messages from S, received expected (receive posted
 *                     first) and unexpected (posted after the message
 *                     arrived), complete with sender_uid OTHER_UID and
 *                     peer.node S; the same user's local messages on R
 *                     keep their uid; root's bystander messages S -> R
 *                     carry uid 0, byte-exact; once with R dialling
 *                     the link, once with R accepting it
 *   no_key_paths      the same in mode none: every message from S
 *                     completes SL_UID_UNKNOWN (anyone who reaches the
 *                     port could claim any uid), local ones keep theirs
 *   keyed_resent      R cuts the connection every 13th frame it receives:
 *                     messages sent again after a reconnect (eager and
 *                     rendezvous) still carry OTHER_UID
 *   keyed_restart     a message waits unexpected on R; S is killed and
 *                     restarted; the receive matched afterwards still
 *                     names OTHER_UID and S, and so does a message from
 *                     the new incarnation
 */
#include "autoconfig.h"

#include <check.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "peer_auth.h"
#include "sluice.h"
#include "testutil.h"

enum { NODE_S = 0, NODE_R = 1 };

#define OTHER_UID 4242		/* no such user: only its number matters */
#define UID_PORT 6100u		/* root's receiver on R */
#define BY_PORT 6200u		/* root's bystander receiver on R */
#define EAGER_LEN 1000u
#define RNDV_LEN (128u << 10)	/* above eager_max (64 KiB): a rendezvous */
#define MAX_TAGS 64u
#define QUIET_MS 20000		/* longest wait without a completion */
#define N_PATHS_MAX 8u		/* plans up to this long print every message */

/* The configuration of both nodes; @key NULL: mode none. */
static const char *conf_text(char *buf, size_t cap, const char *key, const char *extra)
{
	snprintf(buf, cap, "[daemon]\nclient_group = users\n%s%s%s%s", key ? "[security]\n" : "",
		 key ? "mode = authenticate\nkey_file = " : "", key ? key : "",
		 key ? "\n" : "");
	if (extra)
		strncat(buf, extra, cap - strlen(buf) - 1);
	return buf;
}

/* A fresh cluster key (sluiced --keygen's code) at @path. */
static void key_make(char *path, size_t cap)
{
	char err[512];

	snprintf(path, cap, "/tmp/sluice-test-senderuid-%d.key", (int)getpid());
	(void)unlink(path);
	H_ASSERT(peer_key_generate(path, err, sizeof(err)) == 0, "%s", err);
}

static gid_t group_users(void)
{
	struct group *g = getgrnam("users");

	H_ASSERT(g, "no group 'users' to share the control socket with");
	return g->gr_gid;
}

/* Let another uid reach @d's control socket (the socket's group does
 * the rest). */
static void open_dir(const struct h_daemon *d)
{
	H_EQ(chmod(d->dir, 0711), 0);
}

/* What one message is: its tag, length and the node its sender is on. */
struct msg_plan {
	uint64_t tag;
	uint32_t len;
	unsigned from;		/* NODE_S or NODE_R (local to the receiver) */
	bool late;		/* its receive is posted after it arrived */
};

static uint32_t plan_total(const struct msg_plan *p, unsigned n)
{
	uint32_t t = 0;

	for (unsigned i = 0; i < n; i++)
		t += p[i].len;
	return t;
}

/*
 * The sender, uid OTHER_UID: one queue on each node; posts every message
 * of @p (payload msg_fill(OTHER_UID, tag)) to R:UID_PORT, waits for the
 * completions of those that are not late rendezvous (their receivers
 * wait), signals @ready_fd, then waits for the rest.  Every send must
 * complete SL_OK with no uid (a send's completion names none).  Exits 0
 * or a CL_E_* code with its last words.
 */
static void __attribute__((noreturn)) sender(const struct h_daemon *ds, const struct msg_plan *p,
					     unsigned n, int ready_fd)
{
	sl_addr_t to = { ds[NODE_R].node, UID_PORT };
	struct sl_queue *q[2];
	struct sl_ctx *ctx[2];
	uint8_t *buf[2];
	uint32_t off[2] = { 0, 0 }, total = plan_total(p, n);
	unsigned i, done = 0, early = 0;
	bool signalled = false;
	int64_t last = h_now_ms();

	cl_name = "sender";
	if (setgroups(0, NULL) < 0 || setgid(group_users()) < 0 || setuid(OTHER_UID) < 0)
		cl_die(CL_E_SETUP, "cannot become uid %d: %s", OTHER_UID, strerror(errno));
	for (i = 0; i < 2; i++) {
		int rc = sl_open(ds[i].sock, &ctx[i]);

		if (!rc)
			rc = sl_queue_open(ctx[i], 0, 64, &q[i]);
		CL_REQUIRE(!rc, CL_E_SETUP, "node %s: %s", ds[i].name, strerror(-rc));
		buf[i] = sl_alloc(q[i], total);
		CL_REQUIRE(buf[i], CL_E_SETUP, "sl_alloc(%u)", total);
	}
	for (i = 0; i < n; i++) {
		unsigned f = p[i].from;
		uint8_t *b = buf[f] + off[f];
		int rc;

		msg_fill(b, p[i].len, OTHER_UID, (uint32_t)p[i].tag, p[i].tag);
		rc = sl_send(q[f], to, p[i].tag, b, p[i].len, p[i].tag);
		CL_REQUIRE(rc == 0, CL_E_POST, "send tag %llu: %s", (unsigned long long)p[i].tag,
			   strerror(-rc));
		off[f] += p[i].len;
		early += !(p[i].late && p[i].len > EAGER_LEN);
	}
	while (done < n) {
		struct sl_cqe cqe;
		int got = 0;

		if (done == early && !signalled) {
			cl_signal(ready_fd, "ready");
			signalled = true;
		}
		for (i = 0; i < 2; i++) {
			int rc = sl_poll(q[i], &cqe, 1);

			CL_REQUIRE(rc >= 0, CL_E_POLL, "sl_poll: %s", strerror(-rc));
			if (rc == 0)
				continue;
			got = 1;
			CL_REQUIRE(cqe.status == SL_OK, CL_E_STATUS, "send tag %llu: %s",
				   (unsigned long long)cqe.tag, sl_strerror(cqe.status));
			CL_REQUIRE(cqe.opcode == SL_OP_SEND && cqe.sender_uid == SL_UID_UNKNOWN,
				   CL_E_META, "send tag %llu: opcode %u, sender_uid %u",
				   (unsigned long long)cqe.tag, cqe.opcode, cqe.sender_uid);
			done++;
		}
		if (got) {
			last = h_now_ms();
			continue;
		}
		CL_REQUIRE(h_now_ms() - last < QUIET_MS, CL_E_TIMEOUT,
			   "%u of %u sends complete, nothing for %d ms", done, n, QUIET_MS);
		h_sleep_ms(1);
	}
	if (!signalled)
		cl_signal(ready_fd, "ready");
	for (i = 0; i < 2; i++)
		sl_close(ctx[i]);
	_exit(0);
}

/* Root's receiver on R: one buffer slot per tag. */
struct receiver {
	struct sl_ctx *ctx;
	struct sl_queue *q;
	uint8_t *buf;
	struct sl_cqe cqe[MAX_TAGS];	/* by tag */
	bool got[MAX_TAGS];
};

static void receiver_open(struct receiver *rv, const struct h_daemon *d, uint32_t port)
{
	memset(rv, 0, sizeof(*rv));
	H_EQ(sl_open(d->sock, &rv->ctx), 0);
	H_EQ(sl_queue_open(rv->ctx, port, 128, &rv->q), 0);
	rv->buf = sl_alloc(rv->q, (size_t)MAX_TAGS * RNDV_LEN);
	H_ASSERT(rv->buf, "sl_alloc");
}

static void receiver_post(struct receiver *rv, uint64_t tag)
{
	H_ASSERT(tag < MAX_TAGS, "tag %llu", (unsigned long long)tag);
	H_EQ(sl_recv(rv->q, SL_ANY_SOURCE, tag, ~0ull, rv->buf + tag * RNDV_LEN, RNDV_LEN, tag),
	     0);
}

/* Completions until the messages of @p with @late are all in (bounded by
 * the lack of progress). */
static void receiver_collect(struct receiver *rv, const struct msg_plan *p, unsigned n, bool late)
{
	unsigned want = 0, have = 0, i;
	struct sl_cqe cqe;

	for (i = 0; i < n; i++) {
		want += p[i].late == late;
		have += p[i].late == late && rv->got[p[i].tag];
	}
	while (have < want) {
		int rc = h_wait_cqe(rv->q, &cqe, QUIET_MS);

		H_ASSERT(rc == 1, "receiver: %u of %u receives complete, then nothing for %d ms (%d)",
			 have, want, QUIET_MS, rc);
		H_ASSERT(cqe.opcode == SL_OP_RECV && cqe.tag < MAX_TAGS && !rv->got[cqe.tag],
			 "receiver: unexpected completion: opcode %u tag %llu", cqe.opcode,
			 (unsigned long long)cqe.tag);
		rv->cqe[cqe.tag] = cqe;
		rv->got[cqe.tag] = true;
		have++;
	}
}

/* Every message of @p arrived whole from its node, naming
 * @remote_uid when it came from S and OTHER_UID when local. */
static void receiver_check(const struct receiver *rv, const struct h_daemon *ds,
			   const struct msg_plan *p, unsigned n, uint32_t remote_uid,
			   const char *test)
{
	for (unsigned i = 0; i < n; i++) {
		const struct sl_cqe *c = &rv->cqe[p[i].tag];
		uint32_t want = p[i].from == NODE_S ? remote_uid : OTHER_UID;

		H_ASSERT(rv->got[p[i].tag], "%s: tag %llu never completed", test,
			 (unsigned long long)p[i].tag);
		if (n <= N_PATHS_MAX)
			fprintf(stderr, "%s: tag %llu (%s, %s, %s) sender_uid %u from node %s\n", test,
				(unsigned long long)p[i].tag, p[i].from == NODE_S ? "remote" : "local",
				p[i].len > EAGER_LEN ? "rendezvous" : "eager",
				p[i].late ? "unexpected" : "expected", c->sender_uid,
				c->peer.node == ds[NODE_S].node ? "S" :
				c->peer.node == ds[NODE_R].node ? "R" : "?");
		H_ASSERT(c->status == SL_OK, "%s: tag %llu: %s", test,
			 (unsigned long long)p[i].tag, sl_strerror(c->status));
		H_EQ(c->len, p[i].len);
		H_EQ(c->peer.node, ds[p[i].from].node);
		H_EQ(c->sender_uid, want);
		H_ASSERT(msg_check(rv->buf + p[i].tag * RNDV_LEN, p[i].len, OTHER_UID,
				   (uint32_t)p[i].tag, p[i].tag),
			 "%s: tag %llu: payload differs", test, (unsigned long long)p[i].tag);
	}
}

/*
 * Root's bystander traffic S -> R: @n messages (eager and rendezvous),
 * each SL_OK, byte-exact, naming uid @want_uid and node S.
 */
static void bystander_root(const struct h_daemon *ds, unsigned n, uint32_t want_uid)
{
	struct receiver rv;
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe cqe;
	uint8_t *sbuf;
	unsigned i;

	receiver_open(&rv, &ds[NODE_R], BY_PORT);
	H_EQ(sl_open(ds[NODE_S].sock, &ctx), 0);
	H_EQ(sl_queue_open(ctx, 0, 64, &q), 0);
	sbuf = sl_alloc(q, (size_t)n * RNDV_LEN);
	H_ASSERT(sbuf, "sl_alloc");
	for (i = 0; i < n; i++) {
		uint32_t len = i % 2 ? RNDV_LEN : EAGER_LEN;

		receiver_post(&rv, i);
		msg_fill(sbuf + i * RNDV_LEN, len, 0, i, i);
		H_EQ(sl_send(q, (sl_addr_t){ ds[NODE_R].node, BY_PORT }, i, sbuf + i * RNDV_LEN, len,
			     i), 0);
	}
	for (i = 0; i < n; i++) {
		H_ASSERT(h_wait_cqe(q, &cqe, QUIET_MS) == 1, "bystander: send %u of %u", i, n);
		H_ASSERT(cqe.status == SL_OK, "bystander: send: %s", sl_strerror(cqe.status));
		H_ASSERT(h_wait_cqe(rv.q, &cqe, QUIET_MS) == 1, "bystander: receive %u of %u", i, n);
		H_ASSERT(cqe.status == SL_OK && cqe.tag < n, "bystander: receive: %s",
			 sl_strerror(cqe.status));
		H_EQ(cqe.len, cqe.tag % 2 ? RNDV_LEN : EAGER_LEN);
		H_EQ(cqe.peer.node, ds[NODE_S].node);
		H_EQ(cqe.sender_uid, want_uid);
		H_ASSERT(msg_check(rv.buf + cqe.tag * RNDV_LEN, cqe.len, 0, (uint32_t)cqe.tag,
				   cqe.tag), "bystander: message %llu differs",
			 (unsigned long long)cqe.tag);
	}
	sl_close(ctx);
	sl_close(rv.ctx);
}

/* Fork the sender of @p; its pid.  @ready: the pipe it signals on. */
static pid_t sender_start(const struct h_daemon *ds, const struct msg_plan *p, unsigned n,
			  int ready[2])
{
	pid_t pid;

	H_EQ(pipe(ready), 0);
	pid = h_fork();
	if (pid == 0) {
		close(ready[0]);
		sender(ds, p, n, ready[1]);
	}
	close(ready[1]);
	return pid;
}

/* Wait until @d has counted @want unexpected messages in all (bounded);
 * never more. */
static void unexpected_wait(const struct h_daemon *d, uint64_t want)
{
	int64_t start = h_now_ms();
	uint64_t n;

	while ((n = h_daemon_stat(d, "daemon.unexpected_total")) < want &&
	       h_now_ms() - start < QUIET_MS)
		h_sleep_ms(10);
	H_EQ(n, want);
}

/*
 * Run plan @p against the cluster @ds: post the receives of the messages
 * that are not late, start the sender, wait for its signal (every late
 * message is then held unexpected on R), post the late receives, and
 * check every completion.
 */
static void run_plan(const struct h_daemon *ds, struct receiver *rv, const struct msg_plan *p,
		     unsigned n, uint32_t remote_uid, const char *test)
{
	const char *names[] = { "sender" };
	uint64_t unexpected0 = h_daemon_stat(&ds[NODE_R], "daemon.unexpected_total");
	unsigned i, late = 0;
	int ready[2];
	uint8_t b;
	pid_t pid;
	int rc;

	for (i = 0; i < n; i++) {
		if (!p[i].late)
			receiver_post(rv, p[i].tag);
		late += p[i].late;
	}
	pid = sender_start(ds, p, n, ready);
	receiver_collect(rv, p, n, false);
	rc = h_read_byte(ready[0], &b, 3 * QUIET_MS);
	if (rc != 1)
		fail_clients(&pid, names, 1, "the sender never signalled");
	/* The late ones wait unexpected (counted as they arrive; a late
	 * rendezvous' RTS may still be on its way). */
	unexpected_wait(&ds[NODE_R], unexpected0 + late);
	for (i = 0; i < n; i++)
		if (p[i].late)
			receiver_post(rv, p[i].tag);
	receiver_collect(rv, p, n, true);
	expect_clients_ok(&pid, names, 1, 3 * QUIET_MS);
	close(ready[0]);
	receiver_check(rv, ds, p, n, remote_uid, test);
}

/* Every path of a first message: eager and rendezvous, expected and
 * unexpected, from S; and the same user's local messages on R. */
static const struct msg_plan paths[] = {
	{ 1, EAGER_LEN, NODE_S, false },
	{ 2, RNDV_LEN, NODE_S, false },
	{ 3, EAGER_LEN, NODE_S, true },
	{ 4, RNDV_LEN, NODE_S, true },
	{ 5, EAGER_LEN, NODE_R, false },
	{ 6, RNDV_LEN, NODE_R, false },
	{ 7, EAGER_LEN, NODE_R, true },
	{ 8, RNDV_LEN, NODE_R, true },
};
#define N_PATHS (sizeof(paths) / sizeof(paths[0]))

/* Node names for S and R such that R dials (the lower node id dials,
 * link.c) or accepts: the uid is believed on either side of the
 * handshake. */
static void names_for(const char **names, bool receiver_dials)
{
	bool a_dials = sl_node_id("uid-a") < sl_node_id("uid-b");

	names[NODE_R] = a_dials == receiver_dials ? "uid-a" : "uid-b";
	names[NODE_S] = a_dials == receiver_dials ? "uid-b" : "uid-a";
}

static void paths_test(bool keyed, bool receiver_dials, const char *test)
{
	const char *names[2];
	struct h_daemon ds[2];
	struct receiver *rv = calloc(1, sizeof(*rv));
	char key[128], conf[512];

	H_ASSERT(rv, "calloc");
	names_for(names, receiver_dials);
	fprintf(stderr, "%s: the receiver's node %s\n", test, receiver_dials ? "dials" : "accepts");
	if (keyed)
		key_make(key, sizeof(key));
	h_cluster_start_conf(ds, names, 2, conf_text(conf, sizeof(conf), keyed ? key : NULL, NULL));
	open_dir(&ds[NODE_S]);
	open_dir(&ds[NODE_R]);
	bystander_root(ds, 4, keyed ? 0 : SL_UID_UNKNOWN);
	receiver_open(rv, &ds[NODE_R], UID_PORT);
	run_plan(ds, rv, paths, N_PATHS, keyed ? OTHER_UID : SL_UID_UNKNOWN, test);
	bystander_root(ds, 4, keyed ? 0 : SL_UID_UNKNOWN);
	sl_close(rv->ctx);
	free(rv);
	h_cluster_stop(ds, 2);
	if (keyed)
		H_EQ(unlink(key), 0);
}

/* Before: every message from another node completed SL_UID_UNKNOWN (the
 * wire did not carry the uid), also between keyed daemons. */
START_TEST(keyed_paths)
{
	paths_test(true, false, "keyed_paths");
	paths_test(true, true, "keyed_paths");
}
END_TEST

/* Without a key a uid on the wire proves nothing: unknown, as before. */
START_TEST(no_key_paths)
{
	paths_test(false, false, "no_key_paths");
	paths_test(false, true, "no_key_paths");
}
END_TEST

#define RESENT_MSGS 48u

/*
 * Messages sent again after a reconnect: R breaks its connection on every
 * 13th frame it receives (the frame is lost), so unacknowledged EAGERs
 * and RTSs go again on the next connection, rebuilt from the send.
 */
START_TEST(keyed_resent)
{
	const char *names[] = { "uid-s", "uid-r" };
	const char *confs[2];
	struct h_daemon ds[2];
	struct receiver *rv = calloc(1, sizeof(*rv));
	struct msg_plan p[RESENT_MSGS];
	char key[128], conf_s[512], conf_r[512], stat[64];
	uint64_t resent, cuts;
	unsigned i;

	H_ASSERT(rv, "calloc");
	key_make(key, sizeof(key));
	confs[NODE_S] = conf_text(conf_s, sizeof(conf_s), key, NULL);
	confs[NODE_R] = conf_text(conf_r, sizeof(conf_r), key, "[fault]\ncut_every_frames = 13\n");
	h_cluster_start_confs(ds, names, 2, confs);
	open_dir(&ds[NODE_S]);
	open_dir(&ds[NODE_R]);
	for (i = 0; i < RESENT_MSGS; i++)
		p[i] = (struct msg_plan){ i + 1, i % 4 == 3 ? RNDV_LEN : EAGER_LEN, NODE_S,
					  i % 3 == 2 };
	receiver_open(rv, &ds[NODE_R], UID_PORT);
	run_plan(ds, rv, p, RESENT_MSGS, OTHER_UID, "keyed_resent");
	snprintf(stat, sizeof(stat), "link.%s.retransmits", names[NODE_R]);
	resent = h_daemon_stat(&ds[NODE_S], stat);
	cuts = h_daemon_stat(&ds[NODE_R], "xport.cuts");
	fprintf(stderr, "keyed_resent: %u messages, %llu cuts, %llu frames sent again\n",
		RESENT_MSGS, (unsigned long long)cuts, (unsigned long long)resent);
	H_ASSERT(cuts > 0 && resent > 0, "no frame was sent again (%llu cuts)",
		 (unsigned long long)cuts);
	sl_close(rv->ctx);
	free(rv);
	h_cluster_stop(ds, 2);
	H_EQ(unlink(key), 0);
}
END_TEST

/*
 * A receive matched after the sender's daemon restarted: the message
 * that waited unexpected keeps the uid it arrived with; a message from
 * the new incarnation, on its new (authenticated) connection, names it
 * too.
 */
START_TEST(keyed_restart)
{
	const char *names[] = { "uid-s", "uid-r" };
	static const struct msg_plan before[] = { { 1, EAGER_LEN, NODE_S, true } };
	static const struct msg_plan after[] = { { 2, RNDV_LEN, NODE_S, false },
						 { 3, EAGER_LEN, NODE_S, false } };
	const char *cnames[] = { "sender" };
	struct h_daemon ds[2];
	struct receiver *rv = calloc(1, sizeof(*rv));
	char key[128], conf[512];
	int ready[2];
	pid_t pid;

	H_ASSERT(rv, "calloc");
	key_make(key, sizeof(key));
	conf_text(conf, sizeof(conf), key, NULL);
	h_cluster_start_conf(ds, names, 2, conf);
	open_dir(&ds[NODE_S]);
	open_dir(&ds[NODE_R]);
	receiver_open(rv, &ds[NODE_R], UID_PORT);
	/* The eager message waits unexpected on R; its sender is done. */
	pid = sender_start(ds, before, 1, ready);
	expect_clients_ok(&pid, cnames, 1, 3 * QUIET_MS);
	close(ready[0]);
	unexpected_wait(&ds[NODE_R], 1);

	h_daemon_kill(&ds[NODE_S]);
	h_daemon_restart(&ds[NODE_S], &ds[NODE_R], 1, conf);
	open_dir(&ds[NODE_S]);
	h_wait_link(&ds[NODE_S], &ds[NODE_R]);
	h_wait_link(&ds[NODE_R], &ds[NODE_S]);

	receiver_post(rv, 1);
	receiver_collect(rv, before, 1, true);
	receiver_check(rv, ds, before, 1, OTHER_UID, "keyed_restart");
	run_plan(ds, rv, after, 2, OTHER_UID, "keyed_restart");
	sl_close(rv->ctx);
	free(rv);
	h_cluster_stop(ds, 2);
	H_EQ(unlink(key), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("senderuid");

	tcase_add_test(h_tcase(s, "keyed_paths", 120), keyed_paths);
	tcase_add_test(h_tcase(s, "no_key_paths", 120), no_key_paths);
	tcase_add_test(h_tcase(s, "keyed_resent", 180), keyed_resent);
	tcase_add_test(h_tcase(s, "keyed_restart", 120), keyed_restart);
	return h_run_suite(s);
}
