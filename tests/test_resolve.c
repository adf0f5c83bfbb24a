/*
 * test_resolve.c - sl_node_resolve() (daemon/resolve.c): a node in
 * neither [peers] nor peers_file, named by a client, looked up with the
 * system resolver and added as a peer.
 *   resolve_and_send   daemon b is node "localhost" (a name every system
 *                      resolves, to 127.0.0.1 here) and lists a; a lists
 *                      nobody, its default_port is b's port.  A client on
 *                      a resolves "localhost": sl_node_id("localhost"),
 *                      and a message each way arrives once, whichever of
 *                      the two dials (a runs once as each); a second call, a's own name and b's
 *                      name again answer at once; a reload keeps the
 *                      resolved peer and its connection
 *   bad_names          "", 64 characters, a blank, a slash, a name that
 *                      does not resolve: EINVAL, EINVAL, EINVAL, EINVAL,
 *                      ENOENT; a forged request with bytes after the
 *                      name's NUL: EINVAL
 *   cap                [limits] max_resolved_peers = 1: the first numeric
 *                      name resolves, the second ENOSPC; 0: at once ENOSPC
 *   in_flight_bound    [fault] resolve_delay_ms: 17 requests pipelined on
 *                      one control socket: the 17th EAGAIN at once, the
 *                      16 others each their node id
 *   timeout            a lookup that takes longer than 5 s: ETIMEDOUT
 *   client_leaves      a client closes while its lookup is under way: the
 *                      daemon's descriptors return to their baseline, and
 *                      its place under max_resolved_peers = 1 is free again
 *                      for the next client
 * Numeric names (127.0.0.x) resolve without a name server anywhere.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_kit.h"
#include "harness.h"
#include "sl_shm.h"
#include "sluice.h"
#include "testutil.h"

#define PORT_A 4101
#define PORT_B 4102

static struct sl_ctx *ctx_open(const struct h_daemon *d)
{
	struct sl_ctx *ctx;
	int rc = sl_open(d->sock, &ctx);

	H_ASSERT(rc == 0, "sl_open %s: %s", d->name, strerror(-rc));
	return ctx;
}

static int resolve(struct sl_ctx *ctx, const char *name, uint32_t *node)
{
	*node = 0;
	return sl_node_resolve(ctx, name, node);
}

/* The scenario of resolve_and_send with a named @name_a. */
static void resolve_and_send_as(const char *name_a)
{
	struct h_daemon a, b;
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	uint32_t node;
	char conf[128];
	uint64_t connects;
	unsigned before;
	int64_t t0;
	int rc;

	/* a first: b's --peer needs a's port; a's default_port is b's. */
	b.tcp_port = h_free_port();
	snprintf(conf, sizeof(conf), "[transport]\ndefault_port = %u\n", b.tcp_port);
	h_daemon_start_conf(&a, name_a, h_free_port(), NULL, 0, conf);
	h_daemon_start(&b, "localhost", b.tcp_port, &a, 1);
	ca = ctx_open(&a);
	cb = ctx_open(&b);
	t0 = h_now_ms();
	rc = resolve(ca, "localhost", &node);
	H_ASSERT(rc == 0, "sl_node_resolve(localhost): %s", strerror(-rc));
	printf("resolve_and_send: localhost resolved in %" PRId64 " ms; %s dials\n",
	       h_now_ms() - t0, a.node < b.node ? "a" : "b");
	H_EQ(node, sl_node_id("localhost"));
	H_EQ(node, b.node);
	H_EQ(sl_queue_open(ca, PORT_A, 16, &qa), 0);
	H_EQ(sl_queue_open(cb, PORT_B, 16, &qb), 0);
	ping(qa, qb, 7, 1);
	ping(qb, qa, 8, 2);
	ping(qa, qb, 9, 3);
	/* A reload keeps the resolved peer, and its connection. */
	connects = h_daemon_stat(&a, "link.localhost.connects");
	before = tu_log_lines(&a, "changes applied");
	H_ASSERT(kill(a.pid, SIGHUP) == 0, "kill: %s", strerror(errno));
	t0 = h_now_ms();
	while (tu_log_lines(&a, "changes applied") == before) {
		H_ASSERT(h_now_ms() - t0 < 10000, "no reload summary within 10 s");
		h_sleep_ms(10);
	}
	H_EQ(tu_log_lines(&a, "0 removed"), 1);
	ping(qa, qb, 10, 4);
	H_EQ(h_daemon_stat(&a, "link.localhost.connects"), connects);
	/* Known now: no lookup, the same id. */
	H_EQ(resolve(ca, "localhost", &node), 0);
	H_EQ(node, b.node);
	H_EQ(resolve(ca, name_a, &node), 0);
	H_EQ(node, a.node);
	/* b's configured peer. */
	H_EQ(resolve(cb, name_a, &node), 0);
	H_EQ(node, a.node);
	H_EQ(sl_queue_close(qa), 0);
	H_EQ(sl_queue_close(qb), 0);
	sl_close(ca);
	sl_close(cb);
	h_daemon_stop(&b);
	h_daemon_stop(&a);
}

/* Once with a dialing (its node id below localhost's), once with b. */
START_TEST(resolve_and_send)
{
	uint32_t lh = sl_node_id("localhost");
	char names[2][8] = { "", "" };
	unsigned i;

	for (i = 0; i < 100 && (!names[0][0] || !names[1][0]); i++) {
		char n[8];

		snprintf(n, sizeof(n), "r%u", i);
		snprintf(names[sl_node_id(n) < lh ? 0 : 1], sizeof(names[0]), "%s", n);
	}
	H_ASSERT(names[0][0] && names[1][0], "no names on both sides of localhost's id");
	resolve_and_send_as(names[0]);
	resolve_and_send_as(names[1]);
}
END_TEST

/* A control connection of our own, past its HELLO (what a client that
 * does not use libsluice would send). */
static int raw_ctl(const struct h_daemon *d)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct sl_ctl_req req = { .hdr = { .version = SL_CTL_VERSION, .op = SL_CTL_HELLO,
					   .seq = 1 } };
	struct sl_ctl_rep rep;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	H_ASSERT(fd >= 0, "socket: %s", strerror(errno));
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", d->sock);
	H_ASSERT(connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0, "connect: %s",
		 strerror(errno));
	H_EQ(send(fd, &req, sizeof(req), 0), sizeof(req));
	H_EQ(recv(fd, &rep, sizeof(rep), 0), sizeof(rep));
	H_EQ(rep.error, 0);
	return fd;
}

static void raw_resolve_send(int fd, uint32_t seq, const char *name)
{
	struct sl_ctl_resolve_req rr = { .req.hdr = { .version = SL_CTL_VERSION,
						      .op = SL_CTL_NODE_RESOLVE, .seq = seq } };

	snprintf(rr.name, sizeof(rr.name), "%s", name);
	H_EQ(send(fd, &rr, sizeof(rr), 0), sizeof(rr));
}

/* The next reply on @fd, within @ms. */
static struct sl_ctl_rep raw_reply(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	struct sl_ctl_rep rep;

	H_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	H_ASSERT(recv(fd, &rep, sizeof(rep), 0) == (ssize_t)sizeof(rep),
		 "no reply within %d ms: %s", ms, strerror(errno));
	H_EQ(rep.hdr.op, SL_CTL_NODE_RESOLVE);
	return rep;
}

START_TEST(bad_names)
{
	static const char *const bad[] = { "", "a b", "a/b", "x\xc3\xa9" };
	struct sl_ctl_resolve_req rr = { .req.hdr = { .version = SL_CTL_VERSION,
						      .op = SL_CTL_NODE_RESOLVE, .seq = 9 } };
	struct sl_ctl_rep rep;
	struct h_daemon a;
	struct sl_ctx *ctx;
	char longname[65];
	uint32_t node;
	unsigned i;
	int fd;

	h_daemon_start(&a, "ra", h_free_port(), NULL, 0);
	ctx = ctx_open(&a);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		H_EQ(resolve(ctx, bad[i], &node), -EINVAL);
	memset(longname, 'n', 64);
	longname[64] = '\0';
	H_EQ(resolve(ctx, longname, &node), -EINVAL);
	memcpy(longname + 55, ".invalid", 9);	/* 63: a name, that does not resolve */
	H_EQ(resolve(ctx, longname, &node), -ENOENT);
	H_EQ(resolve(ctx, NULL, &node), -EINVAL);
	H_EQ(resolve(ctx, "no-such-host.invalid", &node), -ENOENT);
	/* The daemon checks what libsluice would not send. */
	fd = raw_ctl(&a);
	memcpy(rr.name, "ok\0x", 4);
	H_EQ(send(fd, &rr, sizeof(rr), 0), sizeof(rr));
	rep = raw_reply(fd, 5000);
	H_EQ(rep.hdr.seq, 9);
	H_EQ(rep.error, EINVAL);
	rr.req.hdr.seq = 10;
	memset(rr.name, 'n', sizeof(rr.name));	/* no NUL */
	H_EQ(send(fd, &rr, sizeof(rr), 0), sizeof(rr));
	rep = raw_reply(fd, 5000);
	H_EQ(rep.error, EINVAL);
	close(fd);
	/* The context still works. */
	H_EQ(resolve(ctx, "ra", &node), 0);
	H_EQ(node, a.node);
	sl_close(ctx);
	h_daemon_stop(&a);
}
END_TEST

START_TEST(cap)
{
	struct h_daemon a, z;
	struct sl_ctx *ctx;
	uint32_t node;

	h_daemon_start_conf(&a, "ra", h_free_port(), NULL, 0, "[limits]\nmax_resolved_peers = 1\n");
	ctx = ctx_open(&a);
	H_EQ(resolve(ctx, "127.0.0.2", &node), 0);
	H_EQ(node, sl_node_id("127.0.0.2"));
	H_EQ(resolve(ctx, "127.0.0.3", &node), -ENOSPC);
	H_EQ(resolve(ctx, "127.0.0.2", &node), 0);	/* known: no room needed */
	sl_close(ctx);
	h_daemon_stop(&a);

	h_daemon_start_conf(&z, "rz", h_free_port(), NULL, 0, "[limits]\nmax_resolved_peers = 0\n");
	ctx = ctx_open(&z);
	H_EQ(resolve(ctx, "127.0.0.2", &node), -ENOSPC);
	H_EQ(resolve(ctx, "rz", &node), 0);
	H_EQ(node, z.node);
	sl_close(ctx);
	h_daemon_stop(&z);
}
END_TEST

START_TEST(in_flight_bound)
{
	struct sl_ctl_rep rep;
	struct h_daemon a;
	char name[32];
	unsigned i, ok = 0;
	int fd;

	h_daemon_start_conf(&a, "ra", h_free_port(), NULL, 0, "[fault]\nresolve_delay_ms = 2000\n");
	fd = raw_ctl(&a);
	for (i = 1; i <= SL_NODE_RESOLVE_MAX_INFLIGHT + 1; i++) {
		snprintf(name, sizeof(name), "127.0.1.%u", i);
		raw_resolve_send(fd, 100 + i, name);
	}
	/* The one past the bound is answered first, at once. */
	rep = raw_reply(fd, 1500);
	H_EQ(rep.hdr.seq, 100 + SL_NODE_RESOLVE_MAX_INFLIGHT + 1);
	H_EQ(rep.error, EAGAIN);
	for (i = 0; i < SL_NODE_RESOLVE_MAX_INFLIGHT; i++) {
		rep = raw_reply(fd, 10000);
		H_ASSERT(rep.hdr.seq >= 101 && rep.hdr.seq <= 100 + SL_NODE_RESOLVE_MAX_INFLIGHT,
			 "seq %u", rep.hdr.seq);
		H_EQ(rep.error, 0);
		snprintf(name, sizeof(name), "127.0.1.%u", rep.hdr.seq - 100);
		H_EQ(rep.node, sl_node_id(name));
		ok++;
	}
	H_EQ(ok, SL_NODE_RESOLVE_MAX_INFLIGHT);
	close(fd);
	h_daemon_stop(&a);
}
END_TEST

START_TEST(timeout)
{
	struct h_daemon a;
	struct sl_ctx *ctx;
	uint32_t node;
	int64_t t0, ms;

	h_daemon_start_conf(&a, "ra", h_free_port(), NULL, 0, "[fault]\nresolve_delay_ms = 8000\n");
	ctx = ctx_open(&a);
	t0 = h_now_ms();
	H_EQ(resolve(ctx, "127.0.0.2", &node), -ETIMEDOUT);
	ms = h_now_ms() - t0;
	printf("timeout: ETIMEDOUT after %" PRId64 " ms\n", ms);
	H_ASSERT(ms >= SL_NODE_RESOLVE_TIMEOUT_MS - 100, "answered after %" PRId64 " ms", ms);
	H_EQ(node, 0);
	sl_close(ctx);
	h_daemon_stop(&a);
}
END_TEST

START_TEST(client_leaves)
{
	struct h_daemon a;
	struct sl_ctl_rep rep;
	struct sl_ctx *ctx;
	int fds, maps, fd;
	uint32_t node;

	h_daemon_start_conf(&a, "ra", h_free_port(), NULL, 0,
			    "[limits]\nmax_resolved_peers = 1\n[fault]\nresolve_delay_ms = 300\n");
	settle_baseline(&a, &fds, &maps);
	fd = raw_ctl(&a);
	raw_resolve_send(fd, 5, "127.0.0.7");
	/* Under way: it holds the one place (answered after it was read). */
	raw_resolve_send(fd, 6, "127.0.0.8");
	rep = raw_reply(fd, 250);
	H_EQ(rep.hdr.seq, 6);
	H_EQ(rep.error, ENOSPC);
	close(fd);
	expect_baseline(&a, fds, maps);
	/* Its place is free at once, its peer never added. */
	ctx = ctx_open(&a);
	H_EQ(resolve(ctx, "127.0.0.8", &node), 0);
	H_EQ(node, sl_node_id("127.0.0.8"));
	H_EQ(resolve(ctx, "127.0.0.7", &node), -ENOSPC);
	sl_close(ctx);
	expect_baseline(&a, fds, maps);
	h_daemon_stop(&a);
}
END_TEST

static Suite *resolve_suite(void)
{
	Suite *s = suite_create("resolve");
	TCase *tc = tcase_create("resolve");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, resolve_and_send);
	tcase_add_test(tc, bad_names);
	tcase_add_test(tc, cap);
	tcase_add_test(tc, in_flight_bound);
	tcase_add_test(tc, timeout);
	tcase_add_test(tc, client_leaves);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return h_run_suite(resolve_suite());
}
