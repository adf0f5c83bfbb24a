/*
 * test_ctl.c - the admin socket (daemon/admin.c) and sluicectl against
 * real daemons (tests/harness.c) with known traffic: every number the
 * replies carry is checked against what the test did, and against the
 * SIGUSR1 statistics file where both have it.
 *
 * Cases (CK_RUN_CASE=name):
 *   status_clients_queues  one node, two clients, three queues: exact
 *                          counts of sends, receives, unexpected messages
 *                          and bytes, ring occupancy, completions by status
 *   links_rcache           two nodes: sequence numbers equal the frames
 *                          sent, rendezvous through the registration
 *                          cache, last_error once the peer dies
 *   access                 (root only) who may use the socket: admin_group
 *                          by gid and by supplementary group, others
 *                          refused by the daemon and by the socket's mode
 *   cli_errors             exit codes 1 (not running), 2 (usage, an
 *                          unknown command too), the daemon's replies to
 *                          unknown and malformed requests, --watch
 *   slow_reader_many_conns a client that never reads a large reply does
 *                          not stall the daemon and is dropped after 5 s;
 *                          17 connections at once: 16 served, one refused
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>

#include "harness.h"
#include "jsonutil.h"
#include "sluice.h"
#include "testutil.h"

#define REPLY_CAP (1u << 20)	/* bytes: the largest reply a test reads */
#define RUN_TIMEOUT_MS 10000
#define ADMIN_SOCK "sluiced-admin.sock"
#define DEFAULT_CREDITS 256u	/* [transport] eager_credits default */

/* ------------------------------------------------------------------ */
/* Helpers                                                              */
/* ------------------------------------------------------------------ */

static const char *ctl_bin(void)
{
	return tu_sluicectl();
}

static void admin_path(const struct h_daemon *d, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s/%s", d->dir, ADMIN_SOCK);

	H_ASSERT(n > 0 && (size_t)n < cap, "admin path too long");
}

static int admin_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* Read until EOF (a reset after data counts as EOF), bounded.  Returns
 * the bytes read into @out (NUL-terminated) or -errno.  Never aborts. */
static ssize_t read_all(int fd, char *out, size_t cap, int timeout_ms)
{
	int64_t deadline = h_now_ms() + timeout_ms;
	size_t len = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - h_now_ms();
		ssize_t n;
		int rc;

		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, (int)left);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc <= 0)
			continue;
		if (len + 1 >= cap)
			return -EMSGSIZE;
		/* read(): @fd is a socket or a pipe. */
		n = read(fd, out + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (errno == ECONNRESET && len)
				break;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	return (ssize_t)len;
}

/* One exchange: send @req (@len bytes; half-close after it when
 * @shut_wr), read the reply.  Returns its length or -errno. */
static ssize_t admin_raw(const char *path, const char *req, size_t len, bool shut_wr,
			 char *out, size_t cap)
{
	ssize_t n;
	int fd = admin_connect(path);

	if (fd < 0)
		return fd;
	if (len && send(fd, req, len, MSG_NOSIGNAL) < 0 && errno != EPIPE) {
		n = -errno;
		close(fd);
		return n;
	}
	if (shut_wr && shutdown(fd, SHUT_WR) < 0 && errno != ENOTCONN) {
		n = -errno;
		close(fd);
		return n;
	}
	n = read_all(fd, out, cap, RUN_TIMEOUT_MS);
	close(fd);
	return n;
}

static struct json_object *parse(const char *text)
{
	struct json_object *o = json_tokener_parse(text);

	H_ASSERT(o && json_object_is_type(o, json_type_object), "not a JSON object: %.300s",
		 text);
	return o;
}

/* @cmd's reply from @d, which must not be an error.  The caller puts it. */
static struct json_object *admin_json(const struct h_daemon *d, const char *cmd)
{
	char path[H_PATH_MAX + 32], req[80];
	char *buf = malloc(REPLY_CAP);
	struct json_object *o, *err;
	ssize_t n;

	H_ASSERT(buf, "out of memory");
	admin_path(d, path, sizeof(path));
	snprintf(req, sizeof(req), "%s\n", cmd);
	n = admin_raw(path, req, strlen(req), false, buf, REPLY_CAP);
	H_ASSERT(n > 0, "%s: %s: %s", d->name, cmd, strerror(n ? (int)-n : EPROTO));
	H_ASSERT(buf[n - 1] == '\n' && !memchr(buf, '\n', (size_t)n - 1),
		 "%s: reply is not one line", cmd);
	o = parse(buf);
	H_ASSERT(!json_object_object_get_ex(o, "error", &err), "%s: %s: error reply %s",
		 d->name, cmd, json_object_get_string(err));
	free(buf);
	return o;
}

/* sluicectl with the arguments after @out (NULL-terminated); its stdout
 * and stderr in @out.  Returns its exit status or -errno. */
static int ctl_run(char *out, size_t cap, ...)
{
	const char *argv[16];
	unsigned n = 0;
	va_list ap;

	argv[n++] = ctl_bin();
	va_start(ap, cap);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return h_run(argv, out, cap, RUN_TIMEOUT_MS);
}

/* Compare every numeric field of @o with the statistics file's
 * "@prefix.KEY" lines. */
static void expect_same_as_file(const struct h_stats *st, const char *prefix,
				struct json_object *o)
{
	char name[128];

	json_object_object_foreach(o, key, val) {
		if (!json_object_is_type(val, json_type_int))
			continue;
		snprintf(name, sizeof(name), "%s.%s", prefix, key);
		if (json_object_get_uint64(val) != h_stats_u64(st, name))
			h_fail(__FILE__, __LINE__, name, "JSON %llu, stats file %llu",
			       (unsigned long long)json_object_get_uint64(val),
			       (unsigned long long)h_stats_u64(st, name));
	}
}

static sl_addr_t addr_of(uint32_t node, uint32_t port)
{
	return (sl_addr_t){ .node = node, .port = port };
}

static void *alloc_filled(struct sl_queue *q, size_t len, uint8_t byte)
{
	void *p = sl_alloc(q, len);

	H_ASSERT(p, "sl_alloc %zu: %s", len, strerror(errno));
	memset(p, byte, len);
	return p;
}

static void expect_cqe(struct sl_queue *q, int status, const char *what)
{
	struct sl_cqe c;

	wait_cqes(q, &c, 1, 5000);
	H_ASSERT(c.status == status, "%s: %s, expected %s", what, sl_strerror(c.status),
		 sl_strerror(status));
}

static const char *log_level(void)
{
	const char *l = getenv("SLUICE_TEST_LOG_LEVEL");

	return l ? l : "debug";
}

/* ------------------------------------------------------------------ */
/* status, clients, queues, counters on one node                        */
/* ------------------------------------------------------------------ */

#define N_UNEXP 5u
#define UNEXP_LEN 300u
#define UNEXP_CHARGE (UNEXP_LEN + 64u)	/* unexpected_bytes each: sluiced.conf(5) */

/* Wait (bounded) until the queue on @port of @d has @n posted receives. */
static void wait_posted(const struct h_daemon *d, uint64_t port, uint64_t n)
{
	int64_t deadline = h_now_ms() + 5000;

	for (;;) {
		struct json_object *o = admin_json(d, "queues");
		uint64_t got = ju64(jfind(jfield(o, "queues"), "port", port), "posted_recvs");

		json_object_put(o);
		if (got == n)
			return;
		H_ASSERT(h_now_ms() < deadline, "port %llu: %llu receives posted, not %llu",
			 (unsigned long long)port, (unsigned long long)got,
			 (unsigned long long)n);
		h_sleep_ms(5);
	}
}

START_TEST(status_clients_queues)
{
	struct h_daemon d;
	struct sl_ctx *c1, *c2;
	struct sl_queue *qa, *qb, *qc;
	struct json_object *st, *cl, *qs, *ctr, *j, *arr, *ids;
	char out[16384], hex[16], ver[64], path[H_PATH_MAX + 32];
	struct h_stats stats;
	uint64_t qa_id, qb_id, qc_id;
	void *sbuf, *rbuf;
	unsigned i;
	int rc;

	h_daemon_start(&d, "solo", 0, NULL, 0);
	admin_path(&d, path, sizeof(path));
	H_ASSERT(sl_open(d.sock, &c1) == 0 && sl_open(d.sock, &c2) == 0, "sl_open");
	H_ASSERT(sl_queue_open(c1, 100, 64, &qa) == 0, "queue 100");
	H_ASSERT(sl_queue_open(c2, 200, 16, &qb) == 0, "queue 200");
	H_ASSERT(sl_queue_open(c2, 201, 16, &qc) == 0, "queue 201");
	sbuf = alloc_filled(qa, UNEXP_LEN, 0x5a);

	/* qc: three receives nobody sends to. */
	for (i = 0; i < 3; i++) {
		rbuf = sl_alloc(qc, 64);
		H_ASSERT(rbuf, "sl_alloc");
		rc = sl_recv(qc, SL_ANY_SOURCE, 99, ~0ull, rbuf, 64, i);
		H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	}
	wait_posted(&d, 201, 3);
	/* qb: N_UNEXP messages no receive is posted for. */
	for (i = 0; i < N_UNEXP; i++) {
		rc = sl_send(qa, addr_of(SL_NODE_LOCAL, 200), 7, sbuf, UNEXP_LEN, i);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		expect_cqe(qa, SL_OK, "unexpected send");
	}
	rc = sl_send(qa, addr_of(SL_NODE_LOCAL, H_PORT_NOBODY), 7, sbuf, 10, 50);
	H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
	expect_cqe(qa, SL_ERR_NO_ENDPOINT, "send to nobody");
	/* qb: one message received, its completion left in the CQ. */
	rbuf = sl_alloc(qb, UNEXP_LEN);
	H_ASSERT(rbuf, "sl_alloc");
	rc = sl_recv(qb, SL_ANY_SOURCE, 9, ~0ull, rbuf, UNEXP_LEN, 60);
	H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	/* qa's and qb's rings are drained in either order: the message must
	 * find its receive posted, not be one more unexpected one. */
	wait_posted(&d, 200, 1);
	rc = sl_send(qa, addr_of(SL_NODE_LOCAL, 200), 9, sbuf, UNEXP_LEN, 61);
	H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
	expect_cqe(qa, SL_OK, "send to a posted receive");

	/* status */
	st = admin_json(&d, "status");
	snprintf(hex, sizeof(hex), "%08x", d.node);
	ck_assert_str_eq(jstr(st, "node"), "solo");
	ck_assert_str_eq(jstr(st, "node_id"), hex);
	ck_assert_uint_eq(strlen(jstr(st, "incarnation")), 16);
	H_EQ(ju64(st, "pid"), d.pid);
	ck_assert_str_eq(jstr(st, "transport"), "tcp");
	H_ASSERT(jnull(st, "listen"), "listen without --listen");
	H_EQ(ju64(st, "clients"), 2);
	H_EQ(ju64(st, "queues"), 3);
	H_EQ(ju64(st, "links"), 0);
	H_EQ(ju64(st, "links_up"), 0);
	ck_assert_str_eq(jstr(st, "log_level"), log_level());
	H_ASSERT(json_object_is_type(jfield(st, "uptime_s"), json_type_double), "uptime_s");
	rc = ctl_run(ver, sizeof(ver), "--version", NULL);
	H_EQ(rc, 0);
	snprintf(out, sizeof(out), "sluicectl %s\n", jstr(st, "version"));
	ck_assert_str_eq(ver, out);

	/* queues */
	qs = admin_json(&d, "queues");
	arr = jfield(qs, "queues");
	H_EQ(json_object_array_length(arr), 3);
	j = jfind(arr, "port", 100);
	qa_id = ju64(j, "id");
	H_EQ(ju64(j, "pid"), getpid());
	H_EQ(ju64(j, "sq_depth"), 64);
	H_EQ(ju64(j, "cq_depth"), 128);
	H_EQ(ju64(j, "sq_used"), 0);
	H_EQ(ju64(j, "cq_used"), 0);	/* polled */
	H_EQ(ju64(j, "in_flight"), 0);
	H_EQ(ju64(j, "sqes"), N_UNEXP + 2);
	H_EQ(ju64(j, "cqes"), N_UNEXP + 2);
	j = jfind(arr, "port", 200);
	qb_id = ju64(j, "id");
	H_EQ(ju64(j, "sq_depth"), 16);
	H_EQ(ju64(j, "cq_depth"), 32);
	H_EQ(ju64(j, "cq_used"), 1);	/* not polled */
	H_EQ(ju64(j, "in_flight"), 0);
	H_EQ(ju64(j, "posted_recvs"), 0);
	H_EQ(ju64(j, "unexpected"), N_UNEXP);
	H_EQ(ju64(j, "unexpected_bytes"), N_UNEXP * UNEXP_CHARGE);
	H_EQ(ju64(j, "sqes"), 1);
	H_EQ(ju64(j, "cqes"), 1);
	j = jfind(arr, "port", 201);
	qc_id = ju64(j, "id");
	H_EQ(ju64(j, "posted_recvs"), 3);
	H_EQ(ju64(j, "in_flight"), 3);
	H_EQ(ju64(j, "unexpected"), 0);
	H_EQ(ju64(j, "unexpected_bytes"), 0);
	H_EQ(ju64(j, "cq_used"), 0);
	H_EQ(ju64(j, "sqes"), 3);
	H_EQ(ju64(j, "cqes"), 0);

	/* clients: one with qa, one with qb and qc and the three receives */
	cl = admin_json(&d, "clients");
	arr = jfield(cl, "clients");
	H_EQ(json_object_array_length(arr), 2);
	for (i = 0; i < 2; i++) {
		j = json_object_array_get_idx(arr, i);
		ids = jfield(j, "queues");
		H_EQ(ju64(j, "pid"), getpid());
		H_EQ(ju64(j, "uid"), geteuid());
		H_EQ(ju64(j, "gid"), getegid());
		if (json_object_array_length(ids) == 1) {
			H_EQ(json_object_get_uint64(json_object_array_get_idx(ids, 0)), qa_id);
			H_EQ(ju64(j, "in_flight"), 0);
		} else {
			uint64_t x = json_object_get_uint64(json_object_array_get_idx(ids, 0));
			uint64_t y = json_object_get_uint64(json_object_array_get_idx(ids, 1));

			H_EQ(json_object_array_length(ids), 2);
			H_ASSERT((x == qb_id && y == qc_id) || (x == qc_id && y == qb_id),
				 "queues %llu %llu", (unsigned long long)x, (unsigned long long)y);
			H_EQ(ju64(j, "in_flight"), 3);
		}
	}

	/* counters: every send, receive and completion the test made */
	ctr = admin_json(&d, "counters");
	j = jfield(ctr, "daemon");
	H_EQ(ju64(j, "sqes"), 3 + N_UNEXP + 1 + 1 + 1);
	H_EQ(ju64(j, "cqes"), N_UNEXP + 1 + 1 + 1);
	H_EQ(ju64(j, "no_endpoint"), 1);
	H_EQ(ju64(j, "invalid"), 0);
	H_EQ(ju64(j, "local_msgs"), N_UNEXP + 1);
	H_EQ(ju64(j, "unexpected_total"), N_UNEXP);
	H_EQ(ju64(j, "unexpected"), N_UNEXP);
	H_EQ(ju64(j, "unexpected_bytes"), N_UNEXP * UNEXP_CHARGE);
	H_EQ(ju64(j, "posted_recvs"), 3);
	H_EQ(ju64(j, "queues"), 3);
	j = jfield(ctr, "completions");
	H_EQ(ju64(j, "ok"), N_UNEXP + 2);
	H_EQ(ju64(j, "no_endpoint"), 1);
	H_EQ(ju64(j, "nak_busy"), 0);
	H_EQ(ju64(j, "nak_receiver_full"), 0);
	H_EQ(ju64(j, "canceled"), 0);
	H_EQ(ju64(j, "invalid"), 0);
	H_EQ(ju64(j, "peer_down"), 0);
	/* The same numbers as the statistics file. */
	h_daemon_stats(&d, &stats);
	expect_same_as_file(&stats, "daemon", jfield(ctr, "daemon"));
	expect_same_as_file(&stats, "xport", jfield(ctr, "xport"));
	{
		struct json_object *rcj = admin_json(&d, "rcache");

		expect_same_as_file(&stats, "rcache", rcj);
		json_object_put(rcj);
	}

	/* sluicectl: tables, --json, the socket options and the default (5 x
	 * 364 charged bytes = 1820 B, shown as 1.8 KiB) */
	rc = ctl_run(out, sizeof(out), "-r", d.dir, "queues", NULL);
	H_ASSERT(rc == 0, "sluicectl queues: %d: %s", rc, out);
	H_ASSERT(strstr(out, "UNEXP_BYTES") && strstr(out, "1.8 KiB") && strstr(out, " 1/32"),
		 "sluicectl queues:\n%s", out);
	rc = ctl_run(out, sizeof(out), "-r", d.dir, "clients", NULL);
	H_ASSERT(rc == 0 && strstr(out, "IN_FLIGHT"), "sluicectl clients: %d: %s", rc, out);
	rc = ctl_run(out, sizeof(out), "-r", d.dir, "status", NULL);
	H_ASSERT(rc == 0 && strstr(out, "solo (") && strstr(out, "single node"),
		 "sluicectl status: %d: %s", rc, out);
	rc = ctl_run(out, sizeof(out), "-r", d.dir, "counters", NULL);
	H_ASSERT(rc == 0 && strstr(out, "completions:") && strstr(out, "unexpected_bytes"),
		 "sluicectl counters: %d: %s", rc, out);
	rc = ctl_run(out, sizeof(out), "-s", path, "--json", "counters", NULL);
	H_ASSERT(rc == 0, "sluicectl --json counters: %d: %s", rc, out);
	{
		struct json_object *again = parse(out);

		H_ASSERT(json_object_equal(again, ctr), "--json differs:\n%s\nfrom\n%s", out,
			 json_object_to_json_string(ctr));
		json_object_put(again);
	}
	H_ASSERT(setenv("SLUICE_RUNTIME_DIR", d.dir, 1) == 0, "setenv");
	rc = ctl_run(out, sizeof(out), "-j", "status", NULL);
	H_ASSERT(unsetenv("SLUICE_RUNTIME_DIR") == 0, "unsetenv");
	H_ASSERT(rc == 0 && strstr(out, "\"solo\""), "SLUICE_RUNTIME_DIR: %d: %s", rc, out);

	json_object_put(st);
	json_object_put(qs);
	json_object_put(cl);
	json_object_put(ctr);
	sl_close(c1);
	sl_close(c2);
	h_daemon_stop(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* links and rcache on two nodes                                        */
/* ------------------------------------------------------------------ */

#define N_EAGER 10u
#define RNDV_LEN (256u * 1024u)

static struct json_object *link_of(const struct h_daemon *d, struct json_object **owner)
{
	*owner = admin_json(d, "links");
	H_EQ(json_object_array_length(jfield(*owner, "links")), 1);
	return json_object_array_get_idx(jfield(*owner, "links"), 0);
}

/* Wait (bounded) until @d's link has every frame acknowledged. */
static void wait_acked(const struct h_daemon *d)
{
	int64_t deadline = h_now_ms() + 5000;

	for (;;) {
		struct json_object *o, *l = link_of(d, &o);
		bool done = ju64(l, "acked") == ju64(l, "tx_seq") && ju64(l, "unacked") == 0 &&
			    ju64(l, "backlog") == 0;

		json_object_put(o);
		if (done)
			return;
		H_ASSERT(h_now_ms() < deadline, "%s: frames still unacknowledged", d->name);
		h_sleep_ms(20);
	}
}

START_TEST(links_rcache)
{
	static const char *const names[] = { "a", "b" };
	struct h_daemon ds[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	struct json_object *oa, *ob, *la, *lb, *sb, *ra, *rb, *ctr;
	uint64_t a_tx, a_rx, b_tx, b_rx;
	char addr[64], out[8192];
	struct h_stats stats;
	void *sbuf, *rbuf;
	unsigned i;
	int rc;

	h_cluster_start(ds, names, 2);
	H_ASSERT(sl_open(ds[0].sock, &ca) == 0 && sl_open(ds[1].sock, &cb) == 0, "sl_open");
	H_ASSERT(sl_queue_open(ca, 300, 64, &qa) == 0 && sl_queue_open(cb, 300, 64, &qb) == 0,
		 "queues");
	wait_acked(&ds[0]);
	wait_acked(&ds[1]);

	la = link_of(&ds[0], &oa);
	sb = admin_json(&ds[1], "status");
	ck_assert_str_eq(jstr(la, "peer"), "b");
	ck_assert_str_eq(jstr(la, "state"), "up");
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ds[1].tcp_port);
	ck_assert_str_eq(jstr(la, "address"), addr);
	ck_assert_str_eq(jstr(la, "incarnation"), jstr(sb, "incarnation"));
	H_ASSERT(jnull(la, "last_error") ||
		 json_object_is_type(jfield(la, "last_error"), json_type_string), "last_error");
	H_EQ(ju64(la, "credits"), DEFAULT_CREDITS);
	H_EQ(ju64(la, "retransmits"), 0);
	H_ASSERT(ju64(la, "connects") >= 1, "connects");
	a_tx = ju64(la, "tx_seq");
	a_rx = ju64(la, "rx_seq");
	json_object_put(oa);
	json_object_put(sb);
	lb = link_of(&ds[1], &ob);
	b_tx = ju64(lb, "tx_seq");
	b_rx = ju64(lb, "rx_seq");
	H_EQ(b_rx, a_tx);
	H_EQ(a_rx, b_tx);
	json_object_put(ob);

	/* N_EAGER eager messages a -> b: a numbers exactly that many frames,
	 * b receives them in order, and b numbers none (ACKs are not). */
	sbuf = alloc_filled(qa, 200, 1);
	for (i = 0; i < N_EAGER; i++) {
		rbuf = sl_alloc(qb, 256);
		H_ASSERT(rbuf, "sl_alloc");
		rc = sl_recv(qb, SL_ANY_SOURCE, 5, ~0ull, rbuf, 256, i);
		H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	}
	for (i = 0; i < N_EAGER; i++) {
		rc = sl_send(qa, addr_of(ds[1].node, 300), 5, sbuf, 200, i);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
	}
	for (i = 0; i < N_EAGER; i++) {
		expect_cqe(qa, SL_OK, "eager send");
		expect_cqe(qb, SL_OK, "eager receive");
	}
	wait_acked(&ds[0]);
	la = link_of(&ds[0], &oa);
	lb = link_of(&ds[1], &ob);
	H_EQ(ju64(la, "tx_seq") - a_tx, N_EAGER);
	H_EQ(ju64(lb, "rx_seq") - b_rx, N_EAGER);
	H_EQ(ju64(lb, "tx_seq"), b_tx);
	H_EQ(ju64(la, "rx_seq"), a_rx);
	H_EQ(ju64(la, "acked"), ju64(la, "tx_seq"));
	H_EQ(ju64(la, "unacked"), 0);
	H_EQ(ju64(la, "backlog"), 0);
	H_EQ(ju64(la, "credits"), DEFAULT_CREDITS);
	/* The values that do not move by themselves (keepalives do move
	 * frames_tx/rx) are the statistics file's too. */
	h_daemon_stats(&ds[0], &stats);
	{
		static const char *const keys[] = { "tx_seq", "rx_seq", "acked", "credits",
						    "backlog", "unacked", "retransmits" };
		char name[64], buf[64];

		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			snprintf(name, sizeof(name), "link.b.%s", keys[i]);
			H_EQ(ju64(la, keys[i]), h_stats_u64(&stats, name));
		}
		ck_assert_str_eq(jstr(la, "state"), h_stats_str(&stats, "link.b.state", buf,
								 sizeof(buf)));
		ck_assert_str_eq(jstr(la, "incarnation"),
				 h_stats_str(&stats, "link.b.incarnation", buf, sizeof(buf)));
	}
	json_object_put(oa);
	json_object_put(ob);

	/* Two rendezvous from one buffer into one buffer: one registration
	 * on each side, used twice. */
	sbuf = alloc_filled(qa, RNDV_LEN, 2);
	rbuf = sl_alloc(qb, RNDV_LEN);
	H_ASSERT(rbuf, "sl_alloc");
	for (i = 0; i < 2; i++) {
		rc = sl_recv(qb, SL_ANY_SOURCE, 6, ~0ull, rbuf, RNDV_LEN, 100 + i);
		H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
		rc = sl_send(qa, addr_of(ds[1].node, 300), 6, sbuf, RNDV_LEN, 100 + i);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		expect_cqe(qb, SL_OK, "rendezvous receive");
		expect_cqe(qa, SL_OK, "rendezvous send");
	}
	wait_acked(&ds[0]);
	wait_acked(&ds[1]);
	ra = admin_json(&ds[0], "rcache");
	rb = admin_json(&ds[1], "rcache");
	H_EQ(ju64(ra, "misses"), 1);
	H_EQ(ju64(ra, "hits"), 1);
	H_EQ(ju64(ra, "regs"), 1);
	H_EQ(ju64(ra, "regions"), 1);
	H_EQ(ju64(ra, "deregs"), 0);
	H_EQ(ju64(ra, "waiting"), 0);
	H_EQ(ju64(ra, "naks"), 0);
	H_EQ(ju64(rb, "misses"), 1);
	H_EQ(ju64(rb, "hits"), 1);
	H_EQ(ju64(rb, "regs"), ju64(rb, "deregs") + ju64(rb, "regions"));
	h_daemon_stats(&ds[0], &stats);
	expect_same_as_file(&stats, "rcache", ra);
	h_daemon_stats(&ds[1], &stats);
	expect_same_as_file(&stats, "rcache", rb);
	la = link_of(&ds[0], &oa);
	lb = link_of(&ds[1], &ob);
	H_EQ(ju64(la, "rndv_tx_done"), 2);
	H_EQ(ju64(lb, "rndv_rx_done"), 2);
	H_EQ(ju64(lb, "rx_seq"), ju64(la, "tx_seq"));
	H_EQ(ju64(la, "rx_seq"), ju64(lb, "tx_seq"));
	json_object_put(oa);
	json_object_put(ob);
	json_object_put(ra);
	json_object_put(rb);
	/* Completions by status: a's sends, b's receives. */
	ctr = admin_json(&ds[0], "counters");
	H_EQ(ju64(jfield(ctr, "completions"), "ok"), N_EAGER + 2);
	json_object_put(ctr);
	ctr = admin_json(&ds[1], "counters");
	H_EQ(ju64(jfield(ctr, "completions"), "ok"), N_EAGER + 2);
	json_object_put(ctr);
	rc = ctl_run(out, sizeof(out), "-r", ds[0].dir, "links", NULL);
	H_ASSERT(rc == 0 && strstr(out, "TX_SEQ") && strstr(out, addr),
		 "sluicectl links: %d: %s", rc, out);
	rc = ctl_run(out, sizeof(out), "-r", ds[0].dir, "rcache", NULL);
	H_ASSERT(rc == 0 && strstr(out, "MISSES") && strstr(out, "2.0 MiB"),
		 "sluicectl rcache: %d: %s", rc, out);

	/* The peer dies: the link says why it went down. */
	sl_close(ca);
	sl_close(cb);
	h_daemon_kill(&ds[1]);
	{
		int64_t deadline = h_now_ms() + 5000;

		for (;;) {
			bool down;

			la = link_of(&ds[0], &oa);
			down = strcmp(jstr(la, "state"), "up") != 0;
			if (down) {
				const char *e = jstr(la, "last_error");

				H_ASSERT(!strncmp(e, "connection lost: ", 17) ||
					 !strncmp(e, "connect: ", 9), "last_error '%s'", e);
				json_object_put(oa);
				break;
			}
			json_object_put(oa);
			H_ASSERT(h_now_ms() < deadline, "link still up after the peer died");
			h_sleep_ms(20);
		}
	}
	h_daemon_stop(&ds[0]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* access                                                               */
/* ------------------------------------------------------------------ */

#define OTHER_GID 65533u
#define OTHER_GID2 65532u

struct creds {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t n_groups;
};

/*
 * As @cr in a child: with @argv, exec it (sluicectl) and return its exit
 * status; with @argv NULL, send "status" to @path and put the raw reply
 * in @out.  The child's stdout and stderr go to @out.  Returns the exit
 * status (the raw query exits 0 when it got a reply, 1 when connect()
 * failed with EACCES, 2 otherwise).
 */
static int run_as(const struct creds *cr, const char *path, const char *const *argv,
		  char *out, size_t cap)
{
	int pfd[2], st;
	ssize_t n;
	pid_t pid;

	H_ASSERT(pipe2(pfd, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	pid = h_fork();
	if (pid == 0) {
		if (dup2(pfd[1], 1) < 0 || dup2(pfd[1], 2) < 0 ||
		    setgroups(cr->n_groups, cr->groups) < 0 ||
		    setresgid(cr->gid, cr->gid, cr->gid) < 0 ||
		    setresuid(cr->uid, cr->uid, cr->uid) < 0)
			_exit(126);
		if (argv) {
			execv(argv[0], (char *const *)argv);
			_exit(127);
		} else {
			static char buf[4096];
			ssize_t r = admin_raw(path, "status\n", 7, false, buf, sizeof(buf));

			if (r == -EACCES)
				_exit(1);
			if (r <= 0)
				_exit(2);
			if (write(1, buf, (size_t)r) != r)
				_exit(2);
			_exit(0);
		}
	}
	close(pfd[1]);
	n = read_all(pfd[0], out, cap, RUN_TIMEOUT_MS);
	close(pfd[0]);
	H_ASSERT(n >= 0, "child output: %s", strerror((int)-n));
	h_wait_children(&pid, 1, RUN_TIMEOUT_MS, &st);
	H_ASSERT(WIFEXITED(st), "child: %s", wait_status_str(st));
	return WEXITSTATUS(st);
}

/* An existing group other than root's, for admin_group. */
static const struct group *some_group(void)
{
	static const char *const names[] = { "nogroup", "nobody", "users", "daemon" };
	const struct group *g;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		g = getgrnam(names[i]);
		if (g && g->gr_gid != 0 && g->gr_gid != OTHER_GID && g->gr_gid != OTHER_GID2)
			return g;
	}
	return NULL;
}

START_TEST(access_check)
{
	const struct passwd *pw = getpwnam("nobody");
	uid_t nobody = pw ? pw->pw_uid : 65534;
	const struct group *g;
	struct h_daemon d, d2;
	char conf[256], path[H_PATH_MAX + 32], out[4096], group[64];
	const char *argv[6];
	gid_t gid, sup[1], other[1] = { OTHER_GID2 };
	struct stat sst;
	int rc;

	if (geteuid() != 0) {
		printf("SKIPPED: access: needs root (to run clients as other users)\n");
		return;
	}
	g = some_group();
	if (!g) {
		printf("SKIPPED: access: no group to use as admin_group\n");
		return;
	}
	gid = g->gr_gid;
	snprintf(group, sizeof(group), "%s", g->gr_name);
	sup[0] = gid;
	snprintf(conf, sizeof(conf), "[daemon]\nadmin_group = %s\n", group);
	h_daemon_start_conf(&d, "guarded", 0, NULL, 0, conf);
	admin_path(&d, path, sizeof(path));
	/* mkdtemp made it 0700: let others reach the socket. */
	H_ASSERT(chmod(d.dir, 0755) == 0, "chmod: %s", strerror(errno));
	H_ASSERT(stat(path, &sst) == 0, "stat %s: %s", path, strerror(errno));
	H_EQ(sst.st_mode & 07777, 0660);
	H_EQ(sst.st_gid, gid);
	argv[0] = ctl_bin();
	argv[1] = "-s";
	argv[2] = path;
	argv[3] = "status";
	argv[4] = NULL;

	{
		/* The socket's mode keeps others out: EACCES at connect. */
		struct creds stranger = { nobody, OTHER_GID, NULL, 0 };

		rc = run_as(&stranger, path, argv, out, sizeof(out));
		H_ASSERT(rc == 3 && strstr(out, "sluicectl: permission denied: ") &&
			 strstr(out, "admin_group"), "stranger, mode 0660: %d: %s", rc, out);
		/* Past the mode, the daemon's own check refuses. */
		H_ASSERT(chmod(path, 0666) == 0, "chmod: %s", strerror(errno));
		rc = run_as(&stranger, path, NULL, out, sizeof(out));
		H_EQ(rc, 0);
		ck_assert_str_eq(out, "{\"error\":\"permission denied\"}\n");
		rc = run_as(&stranger, path, argv, out, sizeof(out));
		H_ASSERT(rc == 3 && strstr(out, "permission denied"), "stranger: %d: %s", rc, out);
	}
	{
		/* Supplementary groups that are not admin_group do not help. */
		struct creds s2 = { nobody, OTHER_GID, other, 1 };

		rc = run_as(&s2, path, NULL, out, sizeof(out));
		H_EQ(rc, 0);
		ck_assert_str_eq(out, "{\"error\":\"permission denied\"}\n");
	}
	{
		/* admin_group as the primary group. */
		struct creds member = { nobody, gid, NULL, 0 };

		rc = run_as(&member, path, argv, out, sizeof(out));
		H_ASSERT(rc == 0 && strstr(out, "guarded"), "member by gid: %d: %s", rc, out);
	}
	{
		/* admin_group as a supplementary group. */
		struct creds member = { nobody, OTHER_GID, sup, 1 };

		rc = run_as(&member, path, NULL, out, sizeof(out));
		H_ASSERT(rc == 0 && strstr(out, "\"node\":\"guarded\""),
			 "member by supplementary group: %d: %s", rc, out);
	}
	H_ASSERT(strstr(out, "\"clients\""), "status reply");
	h_daemon_stop(&d);

	/* Without admin_group only root and the daemon's uid get in. */
	h_daemon_start(&d2, "open", 0, NULL, 0);
	admin_path(&d2, path, sizeof(path));
	H_ASSERT(chmod(d2.dir, 0755) == 0 && chmod(path, 0666) == 0, "chmod: %s",
		 strerror(errno));
	{
		struct creds member = { nobody, gid, sup, 1 };

		rc = run_as(&member, path, NULL, out, sizeof(out));
		H_EQ(rc, 0);
		ck_assert_str_eq(out, "{\"error\":\"permission denied\"}\n");
	}
	h_daemon_stop(&d2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* sluicectl's exit codes and the request line's checks                 */
/* ------------------------------------------------------------------ */

START_TEST(cli_errors)
{
	char out[8192], path[H_PATH_MAX + 32], dead[H_PATH_MAX + 32], req[128];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct h_daemon d;
	struct json_object *o;
	ssize_t n;
	int rc, fd, count;
	char *p;

	/* Not running: no socket, or a socket nobody listens on. */
	rc = ctl_run(out, sizeof(out), "-s", "/nonexistent/sluiced-admin.sock", "status", NULL);
	H_EQ(rc, 1);
	ck_assert_str_eq(out, "sluicectl: sluiced is not running (no socket at "
		      "/nonexistent/sluiced-admin.sock)\n");
	rc = ctl_run(out, sizeof(out), "-r", "/nonexistent", "links", NULL);
	H_ASSERT(rc == 1 && strstr(out, "/nonexistent/sluiced-admin.sock"), "%d: %s", rc, out);
	snprintf(dead, sizeof(dead), "/tmp/sluice-ctl-dead-%d.sock", (int)getpid());
	strcpy(sun.sun_path, dead);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	H_ASSERT(fd >= 0 && bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0, "bind: %s",
		 strerror(errno));
	close(fd);
	rc = ctl_run(out, sizeof(out), "-s", dead, "status", NULL);
	unlink(dead);
	H_ASSERT(rc == 1 && strstr(out, "not running"), "stale socket: %d: %s", rc, out);

	/* Usage errors. */
	rc = ctl_run(out, sizeof(out), NULL);
	H_ASSERT(rc == 2 && strstr(out, "COMMAND"), "no command: %d: %s", rc, out);
	rc = ctl_run(out, sizeof(out), "--frobnicate", "status", NULL);
	H_ASSERT(rc == 2 && strstr(out, "--help"), "bad option: %d: %s", rc, out);
	rc = ctl_run(out, sizeof(out), "status", "links", NULL);
	H_EQ(rc, 2);
	rc = ctl_run(out, sizeof(out), "--watch", "soon", "status", NULL);
	H_EQ(rc, 2);
	rc = ctl_run(out, sizeof(out), "-w", "0", "status", NULL);
	H_EQ(rc, 2);
	rc = ctl_run(out, sizeof(out), "-s", "/x", "-r", "/y", "status", NULL);
	H_EQ(rc, 2);
	rc = ctl_run(out, sizeof(out), "Status!", NULL);
	H_EQ(rc, 2);
	rc = ctl_run(out, sizeof(out), "--help", NULL);
	H_ASSERT(rc == 0 && strstr(out, "Usage: sluicectl") && strstr(out, "counters"),
		 "--help: %d: %s", rc, out);

	h_daemon_start(&d, "cli", 0, NULL, 0);
	admin_path(&d, path, sizeof(path));
	/* An unknown command: a usage error, exit 2, the daemon not asked;
	 * the daemon answers one with an error reply. */
	rc = ctl_run(out, sizeof(out), "-r", d.dir, "frobnicate", NULL);
	H_ASSERT(rc == 2 && strstr(out, "not 'frobnicate'"), "unknown: %d: %s", rc, out);
	n = admin_raw(path, "frobnicate\n", 11, false, out, sizeof(out));
	H_ASSERT(n > 0, "raw: %s", strerror((int)-n));
	ck_assert_str_eq(out, "{\"error\":\"unknown command 'frobnicate'\"}\n");
	/* Malformed request lines. */
	n = admin_raw(path, "STATUS\n", 7, false, out, sizeof(out));
	H_ASSERT(n > 0 && strstr(out, "\"error\":\"malformed request"), "STATUS: %s", out);
	n = admin_raw(path, "status links\n", 13, false, out, sizeof(out));
	H_ASSERT(n > 0 && strstr(out, "\"error\":\"malformed request"), "two words: %s", out);
	n = admin_raw(path, "\n", 1, false, out, sizeof(out));
	H_ASSERT(n > 0 && strstr(out, "\"error\":\"empty request\""), "empty: %s", out);
	n = admin_raw(path, "status\nstatus\n", 14, false, out, sizeof(out));
	H_ASSERT(n > 0 && strstr(out, "\"error\":\"one request line per connection\""),
		 "two lines: %s", out);
	memset(req, 'a', sizeof(req));
	req[64] = '\n';
	n = admin_raw(path, req, 65, false, out, sizeof(out));
	H_ASSERT(n > 0 && strstr(out, "\"error\":\"request longer than 64 bytes\""),
		 "65 bytes: %s", out);
	n = admin_raw(path, req, sizeof(req), false, out, sizeof(out));
	H_ASSERT(n > 0 && strstr(out, "\"error\":\"request longer than 64 bytes\""),
		 "128 bytes: %s", out);
	req[63] = '\n';
	n = admin_raw(path, req, 64, false, out, sizeof(out));
	H_ASSERT(n > 0 && strstr(out, "\"error\":\"unknown command 'aaaa"), "64 bytes: %s",
		 out);
	/* A half-closed request without its newline; CRLF. */
	n = admin_raw(path, "status", 6, true, out, sizeof(out));
	H_ASSERT(n > 0, "half-close: %s", strerror((int)-n));
	o = parse(out);
	ck_assert_str_eq(jstr(o, "node"), "cli");
	json_object_put(o);
	n = admin_raw(path, "rcache\r\n", 8, false, out, sizeof(out));
	H_ASSERT(n > 0 && strstr(out, "\"hits\":0"), "CRLF: %s", out);

	/* --watch repeats until interrupted (here: killed at the deadline). */
	{
		const char *argv[] = { ctl_bin(), "-r", d.dir, "-w", "0.2", "status", NULL };

		rc = h_run(argv, out, sizeof(out), 1100);
		H_EQ(rc, -ETIMEDOUT);
		for (count = 0, p = out; (p = strstr(p, "log level")); p++)
			count++;
		H_ASSERT(count >= 3, "--watch printed %d rounds:\n%s", count, out);
	}
	h_daemon_stop(&d);
	/* Gone: not running again. */
	rc = ctl_run(out, sizeof(out), "-r", d.dir, "status", NULL);
	H_EQ(rc, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A client that does not read; many connections at once               */
/* ------------------------------------------------------------------ */

#define N_PEERS 255u
#define N_HELD 16u	/* ADMIN_CONNS_MAX */

/* Has the daemon closed its end of @fd? */
static bool peer_closed(int fd, int wait_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	int rc = poll(&p, 1, wait_ms);

	H_ASSERT(rc >= 0, "poll: %s", strerror(errno));
	return rc > 0 && (p.revents & (POLLRDHUP | POLLHUP));
}

START_TEST(slow_reader_many_conns)
{
	char path[H_PATH_MAX + 32], out[8192];
	char *conf = malloc(N_PEERS * 96 + 128), *big = malloc(REPLY_CAP);
	uint16_t port = h_free_port();
	int held[N_HELD], slow, fds0, fds1, maps;
	struct sl_ctx *ctx;
	struct sl_queue *q1, *q2;
	struct json_object *o;
	struct h_daemon d;
	size_t off;
	ssize_t full, n;
	int64_t t0;
	unsigned i;
	int rc;

	H_ASSERT(conf && big, "out of memory");
	/* Many peers (nothing listens on port 1) make a links reply larger
	 * than the admin connection's socket buffer.  They redial only after
	 * 10 minutes: a dial's socket is open until the loop sees the refusal,
	 * and on a busy machine 29 of them were in the first descriptor count
	 * and none in the last. */
	off = (size_t)sprintf(conf, "[transport]\nlisten = 127.0.0.1:%u\nredial_min_ms = 600000\n"
			      "redial_max_ms = 600000\n[peers]\n", port);
	for (i = 0; i < N_PEERS; i++)
		off += (size_t)sprintf(conf + off, "peer-%03u-%s = 127.0.0.1:1\n", i,
				       "padding-padding-padding-padding-padding-padding-pad");
	h_daemon_start_conf(&d, "big", port, NULL, 0, conf);
	admin_path(&d, path, sizeof(path));
	h_daemon_settle(&d, &fds0, &maps);
	full = admin_raw(path, "links\n", 6, false, big, REPLY_CAP);
	H_ASSERT(full > 150000, "links reply of %zd bytes", full);
	o = parse(big);
	H_EQ(json_object_array_length(jfield(o, "links")), N_PEERS);
	json_object_put(o);

	/* A client asks for it and never reads. */
	slow = admin_connect(path);
	H_ASSERT(slow >= 0, "connect: %s", strerror(-slow));
	t0 = h_now_ms();
	H_ASSERT(send(slow, "links\n", 6, MSG_NOSIGNAL) == 6, "send: %s", strerror(errno));
	H_ASSERT(!peer_closed(slow, 300), "the daemon wrote a %zd-byte reply at once", full);

	/* The daemon goes on: admin requests, client traffic. */
	o = admin_json(&d, "status");
	H_EQ(ju64(o, "links"), N_PEERS);
	json_object_put(o);
	H_ASSERT(sl_open(d.sock, &ctx) == 0, "sl_open");
	H_ASSERT(sl_queue_open(ctx, 400, 16, &q1) == 0 && sl_queue_open(ctx, 401, 16, &q2) == 0,
		 "queues");
	{
		void *s = alloc_filled(q1, 100, 3), *r = sl_alloc(q2, 100);

		H_ASSERT(r, "sl_alloc");
		H_ASSERT(sl_recv(q2, SL_ANY_SOURCE, 1, ~0ull, r, 100, 1) == 0, "sl_recv");
		H_ASSERT(sl_send(q1, addr_of(SL_NODE_LOCAL, 401), 1, s, 100, 2) == 0, "sl_send");
		expect_cqe(q1, SL_OK, "send beside a stalled admin client");
		expect_cqe(q2, SL_OK, "receive beside a stalled admin client");
	}
	sl_close(ctx);

	/* 15 more connections that send nothing: one uid holds at most
	 * ADMIN_CONNS_PER_UID (8) slots, so each one past the slow client
	 * and 7 more evicts the oldest of its uid without a request: the
	 * first 8 are closed without a word, the slow one (its request is
	 * in) is kept. */
	for (i = 0; i + 1 < N_HELD; i++) {
		held[i] = admin_connect(path);
		H_ASSERT(held[i] >= 0, "connect %u: %s", i, strerror(-held[i]));
	}
	for (i = 0; i + 1 < N_HELD; i++) {
		bool evicted = i < N_HELD - 8;

		H_ASSERT(peer_closed(held[i], evicted ? RUN_TIMEOUT_MS : 0) == evicted,
			 "held %u: %s", i, evicted ? "not evicted" : "evicted");
		if (evicted) {
			n = read_all(held[i], out, sizeof(out), RUN_TIMEOUT_MS);
			H_ASSERT(n == 0, "evicted %u: %zd bytes", i, n);
			close(held[i]);
			continue;
		}
		/* The survivors are answered as usual (each sends within its
		 * ADMIN_REQUEST_TIMEOUT_S). */
		H_ASSERT(send(held[i], "status\n", 7, MSG_NOSIGNAL) == 7, "send: %s",
			 strerror(errno));
	}
	for (i = N_HELD - 8; i + 1 < N_HELD; i++) {
		n = read_all(held[i], out, sizeof(out), RUN_TIMEOUT_MS);
		close(held[i]);
		H_ASSERT(n > 0, "held %u: %s", i, strerror((int)-n));
		o = parse(out);
		ck_assert_str_eq(jstr(o, "node"), "big");
		json_object_put(o);
	}
	H_ASSERT(!peer_closed(slow, 0), "the slow client was evicted");
	rc = ctl_run(out, sizeof(out), "-s", path, "status", NULL);
	H_ASSERT(rc == 0, "sluicectl status beside them: %d: %s", rc, out);
	/* Not h_daemon_stat(): 255 links make the statistics file too large. */
	o = admin_json(&d, "counters");
	H_EQ(ju64(jfield(o, "daemon"), "admin_evicted"), N_HELD - 8);
	json_object_put(o);
	o = admin_json(&d, "status");
	json_object_put(o);

	/* The slow client is dropped ADMIN_TIMEOUT_S (5 s) after it came,
	 * with only part of its reply. */
	H_ASSERT(peer_closed(slow, 7000), "slow client not dropped");
	H_ASSERT(h_now_ms() - t0 >= 4500, "dropped after %lld ms",
		 (long long)(h_now_ms() - t0));
	n = read_all(slow, big, REPLY_CAP, RUN_TIMEOUT_MS);
	close(slow);
	H_ASSERT(n > 0 && n < full, "the slow client got %zd of %zd bytes", n, full);
	h_daemon_settle(&d, &fds1, &maps);
	H_EQ(fds1, fds0);
	free(conf);
	free(big);
	/* h_daemon_stop() would read a statistics file that 255 links make
	 * larger than H_STATS_MAX: stop it here, as it does. */
	{
		int64_t deadline = h_now_ms() + H_STOP_TIMEOUT_MS;
		pid_t w;
		int st = 0;

		H_ASSERT(kill(d.pid, SIGTERM) == 0, "kill: %s", strerror(errno));
		while ((w = waitpid(d.pid, &st, WNOHANG)) == 0) {
			H_ASSERT(h_now_ms() < deadline, "big did not stop");
			h_sleep_ms(5);
		}
		H_ASSERT(w == d.pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "big: %s",
			 wait_status_str(st));
		H_ASSERT(access(path, F_OK) < 0 && errno == ENOENT, "%s left behind", path);
		d.pid = 0;
		h_remove_dir(d.dir);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc;

	tc = h_tcase(s, "status_clients_queues", 30);
	tcase_add_test(tc, status_clients_queues);
	tc = h_tcase(s, "links_rcache", 60);
	tcase_add_test(tc, links_rcache);
	tc = h_tcase(s, "access", 30);
	tcase_add_test(tc, access_check);
	tc = h_tcase(s, "cli_errors", 30);
	tcase_add_test(tc, cli_errors);
	tc = h_tcase(s, "slow_reader_many_conns", 60);
	tcase_add_test(tc, slow_reader_many_conns);
	return h_run_suite(s);
}
