/*
 * test_ctlview.c - what sluicectl shows an operator (docs/operator-view.md):
 * memory, traffic and rates; the built sluicectl run against real daemons
 * (tests/harness.c) with known traffic, its output parsed, every value
 * checked against what the test did.
 *
 * Cases (CK_RUN_CASE=name):
 *   links_moved    two nodes: messages and payload bytes each way after
 *                  known eager and rendezvous traffic, the same per
 *                  queue; NAKs sent and received after a provoked
 *                  receiver-full NAK, in --json and in the table's
 *                  columns; `links NAME` one row, an unknown name exit 5
 *   memory         RSS > 0 and near /proc's, arena bytes equal to
 *                  sl_arena_size(), segment bytes to what this process
 *                  has mapped (/proc/self/maps), unexpected bytes
 *                  held, link buffers; `memory` and `status` views;
 *                  `clients` counts, `clients PID` and `queues ID`
 *   watch_rates    --watch --json during a known burst: a timestamp per
 *                  refresh, and the per-second rates times their
 *                  intervals add up to the burst, per link and queue
 *   claims         claimed messages (sl_probe SL_PROBE_CLAIM) held now
 *                  and claims taken, received and dropped at close, in
 *                  the statistics file, `counters --json`, `queues`
 *                  (--json, the CLAIMED column) and the Prometheus text:
 *                  2 claimed, then 1 after a receive, 0 after the close
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>

#include "harness.h"
#include "jsonutil.h"
#include "sluice.h"
#include "testutil.h"

#define OUT_CAP (256u << 10)	/* bytes of sluicectl output a test reads */
#define RUN_TIMEOUT_MS 10000
#define PORT_A 300u
#define PORT_B 301u

/* ------------------------------------------------------------------ */
/* Running sluicectl                                                    */
/* ------------------------------------------------------------------ */

/* sluicectl -r DIR of @d with the arguments after @out (NULL-terminated);
 * stdout and stderr in @out.  Returns its exit status. */
static int ctl(const struct h_daemon *d, char *out, size_t cap, ...)
{
	const char *argv[16];
	unsigned n = 0;
	va_list ap;
	int rc;

	argv[n++] = tu_sluicectl();
	argv[n++] = "-r";
	argv[n++] = d->dir;
	va_start(ap, cap);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	rc = h_run(argv, out, cap, RUN_TIMEOUT_MS);
	H_ASSERT(rc >= 0, "sluicectl %s: %s", argv[3], strerror(-rc));
	return rc;
}

/* `sluicectl --json CMD [ARG]` on @d, parsed; must succeed. */
static struct json_object *ctl_json(const struct h_daemon *d, const char *cmd, const char *arg)
{
	char *out = malloc(OUT_CAP);
	struct json_object *o;
	int rc;

	H_ASSERT(out, "out of memory");
	rc = ctl(d, out, OUT_CAP, "--json", cmd, arg, NULL);
	H_ASSERT(rc == 0, "sluicectl --json %s: exit %d: %.400s", cmd, rc, out);
	o = json_tokener_parse(out);
	H_ASSERT(o && json_object_is_type(o, json_type_object), "not a JSON object: %.400s",
		 out);
	free(out);
	return o;
}

/* The only element of array @key of @o. */
static struct json_object *only(struct json_object *o, const char *key)
{
	struct json_object *arr = jfield(o, key);

	H_EQ(json_object_array_length(arr), 1);
	return json_object_array_get_idx(arr, 0);
}

/*
 * The cell of column @col in the row of table @text whose first cell is
 * @row_key (the first line is the header), copied into @buf.  Cells are
 * separated by runs of spaces; the columns used here hold no spaces.
 */
static const char *table_cell(const char *text, const char *row_key, const char *col,
			      char *buf, size_t cap)
{
	char head[2048], line[2048];
	const char *p = text, *nl;
	int idx = -1, i = 0;
	char *tok, *save;

	nl = strchr(p, '\n');
	H_ASSERT(nl && (size_t)(nl - p) < sizeof(head), "no header in %.300s", text);
	memcpy(head, p, (size_t)(nl - p));
	head[nl - p] = '\0';
	for (tok = strtok_r(head, " ", &save); tok; tok = strtok_r(NULL, " ", &save), i++)
		if (!strcmp(tok, col))
			idx = i;
	H_ASSERT(idx >= 0, "no column %s in %.300s", col, text);
	for (p = nl + 1; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		H_ASSERT((size_t)(nl - p) < sizeof(line), "line too long");
		memcpy(line, p, (size_t)(nl - p));
		line[nl - p] = '\0';
		tok = strtok_r(line, " ", &save);
		if (!tok || strcmp(tok, row_key))
			continue;
		for (i = 0; tok && i < idx; i++)
			tok = strtok_r(NULL, " ", &save);
		H_ASSERT(tok, "row %s has no column %s", row_key, col);
		snprintf(buf, cap, "%s", tok);
		return buf;
	}
	h_fail(__FILE__, __LINE__, "table_cell", "no row %s in %.400s", row_key, text);
}

/* Bytes of the queue segments this process has mapped: the lengths of
 * its /proc/self/maps lines of the daemon's memfds ("sluice-queue"). */
static uint64_t mapped_segments(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uint64_t sum = 0;

	H_ASSERT(f, "/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (strstr(line, "memfd:sluice-queue") &&
		    sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			sum += hi - lo;
	}
	H_ASSERT(!ferror(f), "/proc/self/maps: read error");
	fclose(f);
	return sum;
}

static unsigned count_lines(const char *s)
{
	unsigned n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* ------------------------------------------------------------------ */
/* Traffic                                                              */
/* ------------------------------------------------------------------ */

static sl_addr_t addr_of(uint32_t node, uint32_t port)
{
	return (sl_addr_t){ .node = node, .port = port };
}

static void expect_cqe(struct sl_queue *q, int status, const char *what)
{
	struct sl_cqe c;

	wait_cqes(q, &c, 1, 5000);
	H_ASSERT(c.status == status, "%s: %s, expected %s", what, sl_strerror(c.status),
		 sl_strerror(status));
}

/* @n messages of @len bytes @qa -> @to:@port, each received by @qb (when
 * not NULL) into a posted receive; every completion SL_OK. */
static void move(struct sl_queue *qa, struct sl_queue *qb, const struct h_daemon *to,
		 uint32_t port, unsigned n, size_t len)
{
	void *sbuf = sl_alloc(qa, len), *rbuf = qb ? sl_alloc(qb, len) : NULL;
	unsigned i;
	int rc;

	H_ASSERT(sbuf && (!qb || rbuf), "sl_alloc %zu: %s", len, strerror(errno));
	memset(sbuf, 0x5a, len);
	for (i = 0; i < n; i++) {
		if (qb) {
			rc = sl_recv(qb, SL_ANY_SOURCE, 7, ~0ull, rbuf, len, i);
			H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
		}
		rc = sl_send(qa, addr_of(to->node, port), 7, sbuf, len, i);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		expect_cqe(qa, SL_OK, "send");
		if (qb)
			expect_cqe(qb, SL_OK, "receive");
	}
	sl_free(qa, sbuf);
	if (qb)
		sl_free(qb, rbuf);
}

/* The link of @d (one peer) as `sluicectl --json links`. */
static struct json_object *link_json(const struct h_daemon *d, struct json_object **owner)
{
	*owner = ctl_json(d, "links", NULL);
	return only(*owner, "links");
}

/* ------------------------------------------------------------------ */
/* links: bytes, messages, NAKs, since, filter                          */
/* ------------------------------------------------------------------ */

#define N_EAGER 10u
#define EAGER_LEN 200u
#define RNDV_LEN (256u * 1024u)
#define NAK_MSGS 62u		/* of 1000 bytes: 61 fit in 64K unexpected */
#define NAK_LEN 1000u

START_TEST(links_moved)
{
	static const char *const names[] = { "a", "b" };
	static const char conf[] = "[limits]\nunexpected_max_bytes = 64K\n";
	struct h_daemon ds[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb, *qfull;
	struct json_object *oa, *ob, *la, *lb, *qs;
	uint64_t naks_rx0, naks_tx0, moved = (uint64_t)N_EAGER * EAGER_LEN + RNDV_LEN;
	char *out = malloc(OUT_CAP), cellbuf[64], num[32];
	void *buf;
	unsigned i, ok = 0, naked = 0;
	int rc;

	H_ASSERT(out, "out of memory");
	h_cluster_start_conf(ds, names, 2, conf);
	H_ASSERT(sl_open(ds[0].sock, &ca) == 0 && sl_open(ds[1].sock, &cb) == 0, "sl_open");
	H_ASSERT(sl_queue_open(ca, PORT_A, 64, &qa) == 0 &&
		 sl_queue_open(cb, PORT_A, 64, &qb) == 0 &&
		 sl_queue_open(cb, PORT_B, 64, &qfull) == 0, "queues");

	/* h_wait_link's probes were NAKed (no endpoint): count from here. */
	la = link_json(&ds[0], &oa);
	H_EQ(ju64(la, "msgs_tx"), 0);
	H_EQ(ju64(la, "bytes_tx"), 0);
	naks_rx0 = ju64(la, "naks_rx");
	json_object_put(oa);
	lb = link_json(&ds[1], &ob);
	H_EQ(ju64(lb, "msgs_rx"), 0);
	naks_tx0 = ju64(lb, "naks_tx");
	json_object_put(ob);

	move(qa, qb, &ds[1], PORT_A, N_EAGER, EAGER_LEN);
	move(qa, qb, &ds[1], PORT_A, 1, RNDV_LEN);
	la = link_json(&ds[0], &oa);
	lb = link_json(&ds[1], &ob);
	H_EQ(ju64(la, "msgs_tx"), N_EAGER + 1);
	H_EQ(ju64(la, "bytes_tx"), moved);
	H_EQ(ju64(la, "msgs_rx"), 0);
	H_EQ(ju64(la, "bytes_rx"), 0);
	H_EQ(ju64(lb, "msgs_rx"), N_EAGER + 1);
	H_EQ(ju64(lb, "bytes_rx"), moved);
	H_EQ(ju64(lb, "msgs_tx"), 0);
	H_EQ(ju64(la, "naks_rx"), naks_rx0);
	H_ASSERT(ju64(la, "state_for_ms") > 0, "state_for_ms");
	H_ASSERT(!json_object_is_type(jfield(la, "heard_ago_ms"), json_type_null),
		 "heard_ago_ms null on an up link");
	json_object_put(oa);
	json_object_put(ob);
	/* The same per queue. */
	qs = ctl_json(&ds[0], "queues", NULL);
	H_EQ(ju64(only(qs, "queues"), "msgs_tx"), N_EAGER + 1);
	H_EQ(ju64(only(qs, "queues"), "bytes_tx"), moved);
	H_EQ(ju64(only(qs, "queues"), "naks"), 0);
	json_object_put(qs);
	qs = ctl_json(&ds[1], "queues", NULL);
	H_EQ(ju64(jfind(jfield(qs, "queues"), "port", PORT_A), "msgs_rx"), N_EAGER + 1);
	H_EQ(ju64(jfind(jfield(qs, "queues"), "port", PORT_A), "bytes_rx"), moved);
	json_object_put(qs);

	/* A NAK: b's PORT_B queue holds 61 unexpected messages of 1000
	 * bytes (64K), the 62nd is refused with SL_NAK_RECEIVER_FULL. */
	buf = sl_alloc(qa, NAK_LEN);
	H_ASSERT(buf, "sl_alloc");
	memset(buf, 1, NAK_LEN);
	for (i = 0; i < NAK_MSGS; i++) {
		rc = sl_send(qa, addr_of(ds[1].node, PORT_B), 8, buf, NAK_LEN, i);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		{
			struct sl_cqe c;

			wait_cqes(qa, &c, 1, 5000);
			ok += c.status == SL_OK;
			naked += c.status == SL_NAK_RECEIVER_FULL;
		}
	}
	H_EQ(ok, NAK_MSGS - 1);
	H_EQ(naked, 1);
	la = link_json(&ds[0], &oa);
	lb = link_json(&ds[1], &ob);
	H_EQ(ju64(la, "naks_rx"), naks_rx0 + 1);
	H_EQ(ju64(lb, "naks_tx"), naks_tx0 + 1);
	H_EQ(ju64(la, "msgs_tx"), N_EAGER + 1 + NAK_MSGS - 1);
	H_EQ(ju64(la, "bytes_tx"), moved + (uint64_t)(NAK_MSGS - 1) * NAK_LEN);
	json_object_put(oa);
	json_object_put(ob);
	qs = ctl_json(&ds[0], "queues", NULL);
	H_EQ(ju64(only(qs, "queues"), "naks"), 1);
	json_object_put(qs);

	/* The table: NAK, message and byte columns, one row for `links b`. */
	rc = ctl(&ds[0], out, OUT_CAP, "links", "b", NULL);
	H_ASSERT(rc == 0, "sluicectl links b: exit %d: %s", rc, out);
	H_EQ(count_lines(out), 2);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)(naks_rx0 + 1));
	ck_assert_str_eq(table_cell(out, "b", "NAKS_RX", cellbuf, sizeof(cellbuf)), num);
	snprintf(num, sizeof(num), "%u", N_EAGER + NAK_MSGS);
	ck_assert_str_eq(table_cell(out, "b", "MSGS_TX", cellbuf, sizeof(cellbuf)), num);
	snprintf(num, sizeof(num), "%llu",
		 (unsigned long long)(moved + (uint64_t)(NAK_MSGS - 1) * NAK_LEN));
	ck_assert_str_eq(table_cell(out, "b", "BYTES_TX", cellbuf, sizeof(cellbuf)), num);
	ck_assert_str_eq(table_cell(out, "b", "STATE", cellbuf, sizeof(cellbuf)), "up");
	H_ASSERT(strstr(out, "SINCE") && strstr(out, "HEARD"), "no SINCE/HEARD: %s", out);
	rc = ctl(&ds[1], out, OUT_CAP, "links", "a", NULL);
	H_ASSERT(rc == 0, "sluicectl links a: exit %d: %s", rc, out);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)(naks_tx0 + 1));
	ck_assert_str_eq(table_cell(out, "a", "NAKS_TX", cellbuf, sizeof(cellbuf)), num);
	/* An unknown peer: a clear error, exit 5 (1 is "not running"),
	 * nothing on stdout's table. */
	rc = ctl(&ds[0], out, OUT_CAP, "links", "nosuchpeer", NULL);
	H_EQ(rc, 5);
	H_ASSERT(strstr(out, "nosuchpeer") && strstr(out, "no link") && !strstr(out, "PEER"),
		 "unknown peer: %s", out);
	/* --json links NAME: the same one element. */
	oa = ctl_json(&ds[0], "links", "b");
	H_EQ(json_object_array_length(jfield(oa, "links")), 1);
	json_object_put(oa);

	sl_close(ca);
	sl_close(cb);
	free(out);
	h_cluster_stop(ds, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* memory, clients, filters                                             */
/* ------------------------------------------------------------------ */

#define N_UNEXP 5u
#define UNEXP_LEN 3000u
#define UNEXP_CHARGE 64u	/* bytes of bookkeeping per message, sluiced.conf(5) */

START_TEST(memory)
{
	static const char *const names[] = { "a", "b" };
	struct h_daemon ds[2];
	struct sl_ctx *c1, *c2;
	struct sl_queue *q1a, *q1b, *q2;
	struct json_object *m, *t, *st, *cl, *e, *l;
	char *out = malloc(OUT_CAP), arg[32], cellbuf[64], num[32];
	uint64_t arena1, arena2;
	long rss_kb;
	int rc;

	H_ASSERT(out, "out of memory");
	h_cluster_start(ds, names, 2);
	H_ASSERT(sl_open(ds[0].sock, &c1) == 0 && sl_open(ds[0].sock, &c2) == 0, "sl_open");
	H_ASSERT(sl_queue_open(c1, PORT_A, 64, &q1a) == 0 &&
		 sl_queue_open(c1, PORT_B, 64, &q1b) == 0 &&
		 sl_queue_open(c2, 0, 64, &q2) == 0, "queues");
	arena1 = (uint64_t)sl_arena_size(q1a) + sl_arena_size(q1b);
	arena2 = sl_arena_size(q2);
	/* Unexpected messages held at PORT_A: N_UNEXP, charged len + 64. */
	move(q2, NULL, &ds[0], PORT_A, N_UNEXP, UNEXP_LEN);

	m = ctl_json(&ds[0], "memory", NULL);
	t = jfield(m, "totals");
	rss_kb = h_proc_rss_kb(ds[0].pid);
	H_ASSERT(ju64(t, "rss_bytes") > 0 && rss_kb > 0, "rss %llu, /proc %ld kB",
		 (unsigned long long)ju64(t, "rss_bytes"), rss_kb);
	/* The same figure as /proc's VmRSS, a moment apart. */
	H_ASSERT(ju64(t, "rss_bytes") / 1024 < (uint64_t)rss_kb * 2 &&
		 ju64(t, "rss_bytes") / 1024 * 2 > (uint64_t)rss_kb, "rss %llu, /proc %ld kB",
		 (unsigned long long)ju64(t, "rss_bytes"), rss_kb);
	H_EQ(ju64(t, "arena_bytes"), arena1 + arena2);
	/* The segments: exactly what this process (all three queues' client)
	 * has mapped, header and rings beyond the arenas. */
	H_EQ(ju64(t, "mapped_bytes"), mapped_segments());
	H_ASSERT(ju64(t, "mapped_bytes") > arena1 + arena2, "mapped %llu",
		 (unsigned long long)ju64(t, "mapped_bytes"));
	H_EQ(ju64(t, "unexpected_bytes"), N_UNEXP * (UNEXP_LEN + UNEXP_CHARGE));
	/* The daemon-wide bound, at its default (sluiced.conf(5)). */
	H_EQ(ju64(t, "unexpected_limit_bytes"), 256ull << 20);
	H_ASSERT(ju64(t, "link_buffer_bytes") > 0, "link buffers of an up tcp link");
	H_EQ(ju64(t, "retransmit_bytes"), 0);
	/* Per client (both are this process): one with two queues, one with
	 * one, each with the arena bytes its queues mapped. */
	H_EQ(json_object_array_length(jfield(m, "clients")), 2);
	e = jfind(jfield(m, "clients"), "queue_count", 2);
	H_EQ(ju64(e, "pid"), getpid());
	H_EQ(ju64(e, "arena_bytes"), arena1);
	H_EQ(ju64(e, "unexpected_bytes"), N_UNEXP * (UNEXP_LEN + UNEXP_CHARGE));
	e = jfind(jfield(m, "clients"), "queue_count", 1);
	H_EQ(ju64(e, "arena_bytes"), arena2);
	H_EQ(ju64(e, "unexpected_bytes"), 0);
	H_EQ(json_object_array_length(jfield(m, "queues")), 3);
	l = only(m, "links");
	H_ASSERT(ju64(l, "xport_tx_bytes") > 0 && ju64(l, "xport_rx_bytes") > 0,
		 "transport buffers %llu/%llu", (unsigned long long)ju64(l, "xport_tx_bytes"),
		 (unsigned long long)ju64(l, "xport_rx_bytes"));
	H_EQ(ju64(l, "retransmit_frames"), 0);
	json_object_put(m);

	/* status carries the same totals. */
	st = ctl_json(&ds[0], "status", NULL);
	H_EQ(ju64(jfield(st, "memory"), "arena_bytes"), arena1 + arena2);
	H_EQ(ju64(jfield(st, "memory"), "unexpected_bytes"), N_UNEXP * (UNEXP_LEN + UNEXP_CHARGE));
	json_object_put(st);
	rc = ctl(&ds[0], out, OUT_CAP, "status", NULL);
	H_ASSERT(rc == 0 && strstr(out, "\nmemory ") && strstr(out, "RSS "),
		 "status: %d: %s", rc, out);
	H_ASSERT(strstr(out, " of 256.0 MiB, link buffers "), "status: %s", out);
	rc = ctl(&ds[0], out, OUT_CAP, "memory", NULL);
	H_ASSERT(rc == 0 && strstr(out, "RSS") && strstr(out, "ARENA_BYTES") &&
		 strstr(out, "XPORT_TX") && strstr(out, "\n  limit        256.0 MiB  (268435456"),
		 "memory: %d: %s", rc, out);

	/* clients: counts where queue ids were; one client by pid. */
	cl = ctl_json(&ds[0], "clients", NULL);
	H_EQ(json_object_array_length(jfield(cl, "clients")), 2);
	json_object_put(cl);
	snprintf(arg, sizeof(arg), "%d", (int)getpid());
	rc = ctl(&ds[0], out, OUT_CAP, "clients", arg, NULL);
	/* Both clients are this process: two rows, one with two queues. */
	H_ASSERT(rc == 0 && count_lines(out) == 3, "clients %s: %d: %s", arg, rc, out);
	H_ASSERT(strstr(out, "QUEUES") && strstr(out, "ARENA_BYTES") && strstr(out, "IN_FLIGHT"),
		 "clients columns: %s", out);
	rc = ctl(&ds[0], out, OUT_CAP, "clients", "999999999", NULL);
	H_ASSERT(rc == 5 && strstr(out, "999999999"), "unknown client: %d: %s", rc, out);
	rc = ctl(&ds[0], out, OUT_CAP, "clients", "x1", NULL);
	H_ASSERT(rc == 2, "clients x1: %d: %s", rc, out);
	/* queues ID: one row, its unexpected messages. */
	cl = ctl_json(&ds[0], "queues", NULL);
	e = jfind(jfield(cl, "queues"), "port", PORT_A);
	snprintf(arg, sizeof(arg), "%llu", (unsigned long long)ju64(e, "id"));
	json_object_put(cl);
	rc = ctl(&ds[0], out, OUT_CAP, "queues", arg, NULL);
	H_ASSERT(rc == 0 && count_lines(out) == 2, "queues %s: %d: %s", arg, rc, out);
	snprintf(num, sizeof(num), "%u", N_UNEXP);
	ck_assert_str_eq(table_cell(out, arg, "UNEXPECTED", cellbuf, sizeof(cellbuf)), num);
	rc = ctl(&ds[0], out, OUT_CAP, "queues", "4000000000", NULL);
	H_ASSERT(rc == 5 && strstr(out, "4000000000"), "unknown queue: %d: %s", rc, out);

	sl_close(c1);
	sl_close(c2);
	free(out);
	h_cluster_stop(ds, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* --watch: timestamps and rates                                        */
/* ------------------------------------------------------------------ */

#define BURST_MSGS 40u
#define BURST_LEN 1500u
#define WATCH_PERIOD "0.2"

struct watcher {
	pid_t pid;
	int fd;			/* its stdout, non-blocking */
	char *buf;
	size_t len;
};

static void watcher_start(struct watcher *w, const struct h_daemon *d, const char *cmd)
{
	int p[2];

	H_ASSERT(pipe2(p, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	w->buf = malloc(OUT_CAP);
	w->len = 0;
	H_ASSERT(w->buf, "out of memory");
	w->pid = h_fork();
	if (w->pid == 0) {
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		execl(tu_sluicectl(), "sluicectl", "-r", d->dir, "--json", "--watch",
		      WATCH_PERIOD, cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	w->fd = p[0];
	H_ASSERT(fcntl(w->fd, F_SETFL, O_NONBLOCK) == 0, "O_NONBLOCK");
}

/* Read what is there; returns the refreshes seen so far ("\"watch\"" keys). */
static unsigned watcher_poll(struct watcher *w, int ms)
{
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	unsigned n = 0;
	const char *s;
	ssize_t r;

	if (poll(&p, 1, ms) > 0) {
		while (w->len + 1 < OUT_CAP &&
		       (r = read(w->fd, w->buf + w->len, OUT_CAP - 1 - w->len)) > 0)
			w->len += (size_t)r;
	}
	w->buf[w->len] = '\0';
	for (s = w->buf; (s = strstr(s, "\"watch\"")); s++)
		n++;
	return n;
}

/* Wait until @n refreshes are out (bounded: none for 5 s fails). */
static void watcher_wait(struct watcher *w, unsigned n)
{
	struct progress pr;
	unsigned seen = watcher_poll(w, 0);

	progress_start(&pr, seen, 0);
	while (seen < n) {
		seen = watcher_poll(w, 50);
		H_ASSERT(progress_note(&pr, seen) < 5000, "sluicectl --watch: %u refreshes, "
			 "none more for 5 s: %.400s", seen, w->buf);
	}
}

static void watcher_stop(struct watcher *w)
{
	int st;

	H_ASSERT(kill(w->pid, SIGINT) == 0, "kill: %s", strerror(errno));
	H_ASSERT(waitpid(w->pid, &st, 0) == w->pid, "waitpid");
	watcher_poll(w, 0);
	close(w->fd);
	H_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sluicectl --watch: %s",
		 wait_status_str(st));
}

/*
 * Sum, over every refresh of @text (JSON objects one after another), of
 * rate @key of the element of array @arr whose @id_key is @id times the
 * refresh's interval: what moved while the watch ran.  Also checks each
 * refresh names its time.
 */
static double moved_in(const char *text, const char *arr, const char *id_key, const char *id,
		       const char *key, unsigned *refreshes)
{
	struct json_tokener *tok = json_tokener_new();
	const char *p = text;
	double sum = 0;

	H_ASSERT(tok, "json_tokener_new");
	*refreshes = 0;
	while (*p) {
		struct json_object *o, *w, *a, *rates;
		size_t i, n;

		while (*p == '\n' || *p == ' ')
			p++;
		if (!*p)
			break;
		o = json_tokener_parse_ex(tok, p, (int)strlen(p));
		H_ASSERT(o, "refresh %u: %s", *refreshes,
			 json_tokener_error_desc(json_tokener_get_error(tok)));
		p += json_tokener_get_parse_end(tok);
		json_tokener_reset(tok);
		(*refreshes)++;
		w = jfield(o, "watch");
		H_ASSERT(strlen(json_object_get_string(jfield(w, "time"))) >= 19, "time");
		a = jfield(o, arr);
		n = json_object_array_length(a);
		for (i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(a, i);

			if (strcmp(json_object_get_string(jfield(e, id_key)), id))
				continue;
			/* The first refresh has nothing to compare with. */
			if (!json_object_object_get_ex(e, "rates", &rates))
				break;
			H_ASSERT(json_object_get_double(jfield(rates, key)) >= 0, "rate < 0");
			sum += json_object_get_double(jfield(rates, key)) *
			       json_object_get_double(jfield(w, "interval_s"));
		}
		json_object_put(o);
	}
	json_tokener_free(tok);
	return sum;
}

START_TEST(watch_rates)
{
	static const char *const names[] = { "a", "b" };
	struct h_daemon ds[2];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qa, *qb;
	struct watcher wl, wq;
	struct json_object *qs;
	char qid[32];
	unsigned n;
	double v;

	h_cluster_start(ds, names, 2);
	H_ASSERT(sl_open(ds[0].sock, &ca) == 0 && sl_open(ds[1].sock, &cb) == 0, "sl_open");
	H_ASSERT(sl_queue_open(ca, PORT_A, 64, &qa) == 0 &&
		 sl_queue_open(cb, PORT_A, 64, &qb) == 0, "queues");
	qs = ctl_json(&ds[0], "queues", NULL);
	snprintf(qid, sizeof(qid), "%llu", (unsigned long long)ju64(only(qs, "queues"), "id"));
	json_object_put(qs);

	watcher_start(&wl, &ds[0], "links");
	watcher_start(&wq, &ds[0], "queues");
	/* Two refreshes before the burst, so it falls in rated intervals. */
	watcher_wait(&wl, 2);
	watcher_wait(&wq, 2);
	move(qa, qb, &ds[1], PORT_A, BURST_MSGS, BURST_LEN);
	/* Two after it: its last completion is in some interval. */
	n = watcher_poll(&wl, 0);
	watcher_wait(&wl, n + 2);
	n = watcher_poll(&wq, 0);
	watcher_wait(&wq, n + 2);
	watcher_stop(&wl);
	watcher_stop(&wq);

	/* Rates times intervals add up to the burst (the printed rates are
	 * rounded: within 1 %). */
	v = moved_in(wl.buf, "links", "peer", "b", "msgs_tx_per_s", &n);
	H_ASSERT(n >= 4, "%u refreshes", n);
	H_ASSERT(v > BURST_MSGS * 0.99 && v < BURST_MSGS * 1.01, "link msgs moved %.3f, sent %u",
		 v, BURST_MSGS);
	v = moved_in(wl.buf, "links", "peer", "b", "bytes_tx_per_s", &n);
	H_ASSERT(v > BURST_MSGS * BURST_LEN * 0.99 && v < BURST_MSGS * BURST_LEN * 1.01,
		 "link bytes moved %.1f, sent %u", v, BURST_MSGS * BURST_LEN);
	v = moved_in(wl.buf, "links", "peer", "b", "naks_rx_per_s", &n);
	H_ASSERT(v < 0.01, "NAKs %.3f", v);
	v = moved_in(wq.buf, "queues", "id", qid, "msgs_tx_per_s", &n);
	H_ASSERT(v > BURST_MSGS * 0.99 && v < BURST_MSGS * 1.01, "queue msgs moved %.3f, sent %u",
		 v, BURST_MSGS);
	v = moved_in(wq.buf, "queues", "id", qid, "bytes_tx_per_s", &n);
	H_ASSERT(v > BURST_MSGS * BURST_LEN * 0.99 && v < BURST_MSGS * BURST_LEN * 1.01,
		 "queue bytes moved %.1f, sent %u", v, BURST_MSGS * BURST_LEN);
	free(wl.buf);
	free(wq.buf);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(ds, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* claims: claimed messages held, claims taken, received, dropped       */
/* ------------------------------------------------------------------ */

#define CLAIM_LEN 100u
#define CLAIM_CHARGE (CLAIM_LEN + 64u)	/* an eager message's: sluiced.conf(5) */

/* Prometheus text @text has the line "@name @want", whole. */
static void expect_metric(const char *text, const char *name, uint64_t want)
{
	char line[256];
	const char *at = text;
	size_t n;

	n = (size_t)snprintf(line, sizeof(line), "%s %llu\n", name, (unsigned long long)want);
	while ((at = strstr(at, line)) && at != text && at[-1] != '\n')
		at += n;
	H_ASSERT(at, "no line '%s %llu' in the metrics: %.200s", name, (unsigned long long)want,
		 strstr(text, name) ? strstr(text, name) : "(no such family)");
}

/*
 * Every view of @d's claim figures says the same: @claimed held now (with
 * @unexp unexpected, all charged @unexp_bytes), @claims taken by probes,
 * @received by sl_recv_claimed, @dropped at close; queue @qid (0: it is
 * closed) on PORT_A holds all @claimed.
 */
static void expect_claims(const struct h_daemon *d, uint64_t qid, uint64_t claimed,
			  uint64_t unexp, uint64_t unexp_bytes, uint64_t claims, uint64_t received,
			  uint64_t dropped)
{
	struct h_stats *st = malloc(sizeof(*st));
	struct json_object *o, *dm;
	char *out = malloc(OUT_CAP), id[32], cellbuf[64], want[32], line[192];
	int rc;

	H_ASSERT(st && out, "out of memory");
	h_daemon_stats(d, st);
	H_EQ(h_stats_u64(st, "daemon.claimed"), claimed);
	H_EQ(h_stats_u64(st, "daemon.claims"), claims);
	H_EQ(h_stats_u64(st, "daemon.claims_received"), received);
	H_EQ(h_stats_u64(st, "daemon.claims_dropped"), dropped);
	H_EQ(h_stats_u64(st, "daemon.unexpected"), unexp);
	H_EQ(h_stats_u64(st, "daemon.unexpected_bytes"), unexp_bytes);

	o = ctl_json(d, "counters", NULL);
	dm = jfield(o, "daemon");
	H_EQ(ju64(dm, "claimed"), claimed);
	H_EQ(ju64(dm, "claims"), claims);
	H_EQ(ju64(dm, "claims_received"), received);
	H_EQ(ju64(dm, "claims_dropped"), dropped);
	json_object_put(o);

	rc = ctl(d, out, OUT_CAP, "counters", "--format", "prometheus", NULL);
	H_ASSERT(rc == 0, "counters --format prometheus: exit %d: %.300s", rc, out);
	expect_metric(out, "sluice_daemon_claimed_messages", claimed);
	expect_metric(out, "sluice_daemon_claims_total", claims);
	expect_metric(out, "sluice_daemon_claims_received_total", received);
	expect_metric(out, "sluice_daemon_claims_dropped_total", dropped);
	if (qid) {
		snprintf(line, sizeof(line),
			 "sluice_queue_claimed_messages{queue=\"%llu\",port=\"%u\",pid=\"%d\","
			 "uid=\"%u\"} %llu\n", (unsigned long long)qid, PORT_A, (int)getpid(),
			 (unsigned)getuid(), (unsigned long long)claimed);
		H_ASSERT(strstr(out, line), "no line %s in the metrics", line);
	}

	if (qid) {
		o = ctl_json(d, "queues", NULL);
		H_EQ(ju64(jfind(jfield(o, "queues"), "id", qid), "claimed"), claimed);
		H_EQ(ju64(jfind(jfield(o, "queues"), "id", qid), "unexpected"), unexp);
		json_object_put(o);
		snprintf(id, sizeof(id), "%llu", (unsigned long long)qid);
		rc = ctl(d, out, OUT_CAP, "queues", id, NULL);
		H_ASSERT(rc == 0, "queues %s: exit %d: %.300s", id, rc, out);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)claimed);
		ck_assert_str_eq(table_cell(out, id, "CLAIMED", cellbuf, sizeof(cellbuf)), want);
	}
	free(out);
	free(st);
}

START_TEST(claims)
{
	struct h_daemon d;
	struct sl_ctx *c;
	struct sl_queue *qr, *qs;
	struct json_object *o;
	struct sl_cqe cqe;
	uint64_t claim[2], qid;
	uint8_t *sbuf, *rbuf;
	unsigned i;

	h_daemon_start(&d, "a", 0, NULL, 0);
	H_ASSERT(sl_open(d.sock, &c) == 0, "sl_open");
	H_ASSERT(sl_queue_open(c, PORT_A, 64, &qr) == 0 &&
		 sl_queue_open(c, PORT_B, 64, &qs) == 0, "queues");
	sbuf = sl_alloc(qs, CLAIM_LEN);
	rbuf = sl_alloc(qr, CLAIM_LEN);
	H_ASSERT(sbuf && rbuf, "sl_alloc");
	memset(sbuf, 0x5a, CLAIM_LEN);
	o = ctl_json(&d, "queues", NULL);
	qid = ju64(jfind(jfield(o, "queues"), "port", PORT_A), "id");
	json_object_put(o);
	expect_claims(&d, qid, 0, 0, 0, 0, 0, 0);

	/* Three eager messages to PORT_A, tags 1, 2, 3: unexpected there (a
	 * local eager send completes once its message is queued). */
	for (i = 1; i <= 3; i++) {
		H_EQ(sl_send(qs, addr_of(d.node, PORT_A), i, sbuf, CLAIM_LEN, i), 0);
		expect_cqe(qs, SL_OK, "send");
	}
	expect_claims(&d, qid, 0, 3, 3 * CLAIM_CHARGE, 0, 0, 0);

	/* Claim tags 1 and 2: 2 claimed, 1 unexpected, all 3 still charged. */
	for (i = 0; i < 2; i++) {
		H_EQ(sl_probe(qr, SL_ANY_SOURCE, i + 1, ~0ull, SL_PROBE_CLAIM, 10 + i), 0);
		wait_cqes(qr, &cqe, 1, 5000);
		H_ASSERT(cqe.opcode == SL_OP_PROBE && cqe.status == SL_OK && cqe.tag == i + 1 &&
			 cqe.claim != 0, "probe %u: %s, tag %llu, claim %llu", i,
			 sl_strerror(cqe.status), (unsigned long long)cqe.tag,
			 (unsigned long long)cqe.claim);
		claim[i] = cqe.claim;
	}
	expect_claims(&d, qid, 2, 1, 3 * CLAIM_CHARGE, 2, 0, 0);

	/* Receive one: 1 claimed, 1 received; a spent claim counts nowhere. */
	H_EQ(sl_recv_claimed(qr, claim[0], rbuf, CLAIM_LEN, 20), 0);
	wait_cqes(qr, &cqe, 1, 5000);
	H_ASSERT(cqe.opcode == SL_OP_RECV && cqe.status == SL_OK && cqe.tag == 1 &&
		 cqe.len == CLAIM_LEN, "recv_claimed: %s, tag %llu, len %llu",
		 sl_strerror(cqe.status), (unsigned long long)cqe.tag,
		 (unsigned long long)cqe.len);
	H_EQ(sl_recv_claimed(qr, claim[0], rbuf, CLAIM_LEN, 21), 0);
	expect_cqe(qr, SL_ERR_NOT_FOUND, "spent claim");
	expect_claims(&d, qid, 1, 1, 2 * CLAIM_CHARGE, 2, 1, 0);

	/* Close the queue: its claim (tag 2) is dropped, tag 3 too. */
	H_EQ(sl_queue_close(qr), 0);
	expect_claims(&d, 0, 0, 0, 0, 2, 1, 1);

	sl_close(c);
	h_daemon_stop(&d);
	printf("claims: 2 of 3 unexpected claimed, 1 received, 1 dropped at close: claimed "
	       "2 -> 1 -> 0, claims 2, received 1, dropped 1, in every view\n");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctlview");
	TCase *tc;

	tc = h_tcase(s, "links_moved", 60);
	tcase_add_test(tc, links_moved);
	tc = h_tcase(s, "memory", 60);
	tcase_add_test(tc, memory);
	tc = h_tcase(s, "watch_rates", 60);
	tcase_add_test(tc, watch_rates);
	tc = h_tcase(s, "claims", 60);
	tcase_add_test(tc, claims);
	return h_run_suite(s);
}
