/*
 * test_openmetrics.c - sluicectl counters --format openmetrics|prometheus
 * (tools/openmetrics.c) and --output (tools/atomic_file.c): documents read
 * back with the reference parsers of the Prometheus Python client
 * (tests/metrics_parse.py; Debian python3-prometheus-client) and checked
 * against known traffic; the file replaced atomically; the systemd units
 * of conf/ and, where prometheus-node-exporter is installed, a scrape of
 * its textfile collector.
 *
 * Cases (CK_RUN_CASE=name):
 *   known_traffic   three nodes; N messages of S bytes a -> b, K more that
 *                   nobody receives: exact per-queue, per-link (peer
 *                   label), daemon and completion values in both formats;
 *                   every family has HELP and a TYPE other than unknown
 *   output_atomic   --output: a reader never sees a partial file while it
 *                   is rewritten; a write that fails (RLIMIT_FSIZE) leaves
 *                   the old file and no temporary one, where a shell
 *                   redirection leaves half a file; sluice_up 0 when the
 *                   daemon is gone
 *   usage           --format and --output combinations; --format json and
 *                   text are --json and the tables
 *   formatter       the formatter alone on crafted replies: label and
 *                   HELP escaping, fields it does not know (TYPE unknown),
 *                   milliseconds as seconds exactly, 64-bit counters, a
 *                   link state it does not know, a failed query
 *   node_exporter   prometheus-node-exporter on 127.0.0.1 reading the
 *                   file: every sample and type comes through (SKIPPED
 *                   when it is not installed)
 *   units           systemd-analyze verify of conf/sluice-metrics.service
 *                   and .timer
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <json-c/json.h>

#include "harness.h"
#include "openmetrics.h"
#include "sluice.h"
#include "testutil.h"

#define RUN_TIMEOUT_MS 20000
#define DUMP_MAX (4u << 20)	/* bytes of a parsed document's listing */
#define DOC_MAX (1u << 20)	/* bytes of a document */
#define UNEXP_OVERHEAD 64u	/* unexpected_bytes per message beyond its payload
				 * (sluiced.conf(5)) */
#define PORT_RECV 300u
#define PORT_UNEXP 301u
#define PORT_SEND 310u
#define N_MSGS 20u
#define MSG_LEN 1000u
#define K_UNEXP 3u
#define UNEXP_LEN 700u

/* ------------------------------------------------------------------ */
/* Running sluicectl and the parser                                     */
/* ------------------------------------------------------------------ */

static const char *src_dir(void)
{
	const char *s = getenv("top_srcdir");

	return s && *s ? s : "..";
}

/* The Python with Debian's python3-prometheus-client: /usr/bin/python3
 * first (a python3 earlier in $PATH, pyenv's, does not see Debian's
 * modules). */
static const char *python(void)
{
	static char path[PATH_MAX];

	if (access("/usr/bin/python3", X_OK) == 0)
		return "/usr/bin/python3";
	H_ASSERT(h_tool("python3", path, sizeof(path)), "python3 is not installed (scripts/deps)");
	return path;
}

/* sluicectl with the arguments after @cap (NULL-terminated); stdout and
 * stderr in @out.  Returns its exit status or -errno. */
static int ctl_run(char *out, size_t cap, ...)
{
	const char *argv[20];
	unsigned n = 0;
	va_list ap;

	argv[n++] = tu_sluicectl();
	va_start(ap, cap);
	while (n < 19 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return h_run(argv, out, cap, RUN_TIMEOUT_MS);
}

static const char *fmt_name(enum metrics_format f)
{
	return f == METRICS_OPENMETRICS ? "openmetrics" : "prometheus";
}

/* A parsed document: metrics_parse.py's listing, one line per family
 * ("F\tname\ttype\tunit\thelp") and sample ("S\tfamily\tname\tlabels\tvalue"). */
struct parsed {
	char *text;
	size_t len;
};

static void parse_file(const char *file, enum metrics_format f, struct parsed *p)
{
	char script[PATH_MAX];
	int rc;

	snprintf(script, sizeof(script), "%s/tests/metrics_parse.py", src_dir());
	p->text = malloc(DUMP_MAX);
	H_ASSERT(p->text, "out of memory");
	rc = h_run((const char *const[]){ python(), script, fmt_name(f), file, NULL }, p->text,
		   DUMP_MAX, RUN_TIMEOUT_MS);
	H_ASSERT(rc == 0, "%s parser: exit %d: %.2000s", fmt_name(f), rc, p->text);
	p->len = strlen(p->text);
	H_ASSERT(p->len + 1 < DUMP_MAX, "parser listing cut at %u bytes", DUMP_MAX);
}

static void parsed_free(struct parsed *p)
{
	free(p->text);
	p->text = NULL;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = malloc(DOC_MAX);
	size_t n;

	H_ASSERT(f && buf, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, DOC_MAX - 1, f);
	H_ASSERT(!ferror(f) && n < DOC_MAX - 1, "%s: read error or larger than %u", path,
		 DOC_MAX);
	H_EQ(fclose(f), 0);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* sluicectl counters --format @f --output @file against @d; exit 0. */
static void export_to(const struct h_daemon *d, enum metrics_format f, const char *file)
{
	static char out[8192];
	int rc = ctl_run(out, sizeof(out), "-r", d->dir, "counters", "--format", fmt_name(f),
			 "--output", file, NULL);

	H_ASSERT(rc == 0 && out[0] == '\0', "%s: sluicectl --format %s --output %s: exit %d: %s",
		 d->name, fmt_name(f), file, rc, out);
}

/* Export @d's metrics in format @f and parse them into @p. */
static void scrape(const struct h_daemon *d, enum metrics_format f, struct parsed *p)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s/metrics.%s", d->dir, fmt_name(f));
	export_to(d, f, file);
	parse_file(file, f, p);
	H_ASSERT(unlink(file) == 0, "unlink %s: %s", file, strerror(errno));
}

/*
 * The sample named @name whose labels contain every "k=\"v\"" pair of
 * @labels (comma-separated; "" matches any, NULL only none): its value.
 * Fatal unless exactly one sample matches.  *@labels_out (when not
 * NULL) gets a copy of its labels, the caller frees it.
 */
static double sample_labels(const struct parsed *p, const char *name, const char *labels,
			    char **labels_out)
{
	char *copy = strdup(p->text), *save = NULL, *line, *found_labels = NULL;
	unsigned matches = 0;
	double value = 0;

	H_ASSERT(copy, "out of memory");
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5], *s = line, *tab;
		unsigned i;
		bool ok = true;

		if (line[0] != 'S')
			continue;
		for (i = 0; i < 5; i++) {
			f[i] = s;
			tab = strchr(s, '\t');
			if (i < 4) {
				H_ASSERT(tab, "bad listing line: %s", line);
				*tab = '\0';
				s = tab + 1;
			}
		}
		if (strcmp(f[2], name))
			continue;
		if (!labels) {
			ok = !*f[3];
		} else if (*labels) {
			char *want = strdup(labels), *ws = NULL, *w;

			H_ASSERT(want, "out of memory");
			/* Each wanted pair must be one of the sample's (as a
			 * whole pair: preceded by start or ',' and followed
			 * by end or ','). */
			for (w = strtok_r(want, ",", &ws); w && ok; w = strtok_r(NULL, ",", &ws)) {
				char *at = f[3];
				size_t wl = strlen(w);

				ok = false;
				while ((at = strstr(at, w))) {
					if ((at == f[3] || at[-1] == ',') &&
					    (at[wl] == '\0' || at[wl] == ',')) {
						ok = true;
						break;
					}
					at++;
				}
			}
			free(want);
		}
		if (!ok)
			continue;
		matches++;
		value = strtod(f[4], NULL);
		free(found_labels);
		found_labels = strdup(f[3]);
	}
	free(copy);
	H_ASSERT(matches == 1, "%u samples %s{%s}, expected 1", matches, name,
		 labels ? labels : "(none)");
	if (labels_out)
		*labels_out = found_labels;
	else
		free(found_labels);
	return value;
}

static double sample(const struct parsed *p, const char *name, const char *labels)
{
	return sample_labels(p, name, labels, NULL);
}

/* How many samples are named @name. */
static unsigned count_samples(const struct parsed *p, const char *name)
{
	char pat[256];
	unsigned n = 0;
	const char *at = p->text;

	snprintf(pat, sizeof(pat), "\t%s\t", name);
	while ((at = strstr(at, pat))) {
		const char *bol = at;

		while (bol > p->text && bol[-1] != '\n')
			bol--;
		if (bol[0] == 'S' && strchr(bol + 2, '\t') == at)
			n++;
		at++;
	}
	return n;
}

/* The family line of @name ("F\tname\ttype\t..."), or fatal. */
static void family(const struct parsed *p, const char *name, const char *type)
{
	char pat[256];

	snprintf(pat, sizeof(pat), "F\t%s\t%s\t", name, type);
	H_ASSERT(strstr(p->text, pat) && (strstr(p->text, pat) == p->text ||
					   strstr(p->text, pat)[-1] == '\n'),
		 "no family %s of type %s", name, type);
}

/* Every family has a HELP text and a TYPE this sluicectl chose (not
 * unknown, untyped: a field the formatter's table does not describe).
 * Returns how many families. */
static unsigned all_typed(const struct parsed *p, const char *who)
{
	char *copy = strdup(p->text), *save = NULL, *line;
	unsigned n = 0;

	H_ASSERT(copy, "out of memory");
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[256], type[32], help[1024];

		if (line[0] != 'F')
			continue;
		n++;
		/* F name type unit help: unit may be empty. */
		H_ASSERT(sscanf(line, "F\t%255[^\t]\t%31[^\t]\t%*[^\t]\t%1023[^\n]", name, type,
				help) == 3 ||
			 sscanf(line, "F\t%255[^\t]\t%31[^\t]\t\t%1023[^\n]", name, type, help) == 3,
			 "%s: family without HELP: %s", who, line);
		H_ASSERT(strcmp(type, "unknown") && strcmp(type, "untyped"),
			 "%s: %s has TYPE %s: describe its field in tools/openmetrics.c's table",
			 who, name, type);
	}
	free(copy);
	return n;
}

/* ------------------------------------------------------------------ */
/* known_traffic                                                        */
/* ------------------------------------------------------------------ */

static sl_addr_t addr_of(uint32_t node, uint32_t port)
{
	return (sl_addr_t){ .node = node, .port = port };
}

/* Wait (bounded: one state) until @d's queue on @port has @n receives
 * posted, read through the metrics themselves. */
static void wait_posted(const struct h_daemon *d, unsigned port, unsigned n)
{
	int64_t deadline = h_now_ms() + 10000;
	char labels[64];
	double got = -1;

	snprintf(labels, sizeof(labels), "port=\"%u\"", port);
	while (h_now_ms() < deadline) {
		struct parsed p;

		scrape(d, METRICS_OPENMETRICS, &p);
		got = sample(&p, "sluice_queue_posted_recvs", labels);
		parsed_free(&p);
		if (got == n)
			return;
		h_sleep_ms(20);
	}
	H_ASSERT(false, "%s port %u: %.0f receives posted, not %u", d->name, port, got, n);
}

/* Wait (bounded) until @d's link to @peer has every frame acknowledged. */
static void wait_acked(const struct h_daemon *d, const char *peer)
{
	int64_t deadline = h_now_ms() + 10000;
	char labels[64];
	double tx = 0, acked = -1;

	snprintf(labels, sizeof(labels), "peer=\"%s\"", peer);
	while (h_now_ms() < deadline) {
		struct parsed p;

		scrape(d, METRICS_OPENMETRICS, &p);
		tx = sample(&p, "sluice_link_tx_seq", labels);
		acked = sample(&p, "sluice_link_acked", labels);
		parsed_free(&p);
		if (tx == acked)
			return;
		h_sleep_ms(20);
	}
	H_ASSERT(false, "%s -> %s: tx_seq %.0f, acked %.0f", d->name, peer, tx, acked);
}

START_TEST(known_traffic)
{
	static const char *const names[] = { "a", "b", "c" };
	struct h_daemon ds[3];
	struct sl_ctx *ca, *cb;
	struct sl_queue *qs, *qr, *qu;
	struct parsed a0, b0, a1, b1, bp;
	struct sl_cqe cqes[N_MSGS];
	char mine[64], lab[128], uid[32], *qlabels = NULL;
	uint8_t *sbuf, *ubuf, *rbuf;
	unsigned i;
	int rc;

	h_cluster_start(ds, names, 3);
	H_ASSERT(sl_open(ds[0].sock, &ca) == 0 && sl_open(ds[1].sock, &cb) == 0, "sl_open");
	H_ASSERT(sl_queue_open(ca, PORT_SEND, 64, &qs) == 0, "queue a:%u", PORT_SEND);
	H_ASSERT(sl_queue_open(cb, PORT_RECV, 64, &qr) == 0, "queue b:%u", PORT_RECV);
	H_ASSERT(sl_queue_open(cb, PORT_UNEXP, 16, &qu) == 0, "queue b:%u", PORT_UNEXP);
	sbuf = sl_alloc(qs, MSG_LEN);
	ubuf = sl_alloc(qs, UNEXP_LEN);
	rbuf = sl_alloc(qr, (size_t)MSG_LEN * N_MSGS);
	H_ASSERT(sbuf && ubuf && rbuf, "sl_alloc: %s", strerror(errno));
	memset(sbuf, 0x5a, MSG_LEN);
	memset(ubuf, 0xa5, UNEXP_LEN);
	for (i = 0; i < N_MSGS; i++) {
		rc = sl_recv(qr, addr_of(ds[0].node, PORT_SEND), 1, ~0ull,
			     rbuf + (size_t)i * MSG_LEN, MSG_LEN, i);
		H_ASSERT(rc == 0, "sl_recv: %s", strerror(-rc));
	}
	wait_posted(&ds[1], PORT_RECV, N_MSGS);
	wait_acked(&ds[0], "b");
	wait_acked(&ds[1], "a");
	scrape(&ds[0], METRICS_OPENMETRICS, &a0);
	scrape(&ds[1], METRICS_OPENMETRICS, &b0);

	for (i = 0; i < N_MSGS; i++) {
		rc = sl_send(qs, addr_of(ds[1].node, PORT_RECV), 1, sbuf, MSG_LEN, 100 + i);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		wait_cqes(qs, cqes, 1, 10000);
		H_ASSERT(cqes[0].status == SL_OK, "send %u: %s", i, sl_strerror(cqes[0].status));
	}
	wait_cqes(qr, cqes, N_MSGS, 10000);
	for (i = 0; i < N_MSGS; i++)
		H_ASSERT(cqes[i].status == SL_OK && cqes[i].len == MSG_LEN,
			 "receive %u: %s, %u bytes", i, sl_strerror(cqes[i].status),
			 (unsigned)cqes[i].len);
	for (i = 0; i < K_UNEXP; i++) {
		rc = sl_send(qs, addr_of(ds[1].node, PORT_UNEXP), 2, ubuf, UNEXP_LEN, 200 + i);
		H_ASSERT(rc == 0, "sl_send: %s", strerror(-rc));
		wait_cqes(qs, cqes, 1, 10000);
		H_ASSERT(cqes[0].status == SL_OK, "unexpected send %u: %s", i,
			 sl_strerror(cqes[0].status));
	}
	wait_acked(&ds[0], "b");
	scrape(&ds[0], METRICS_OPENMETRICS, &a1);
	scrape(&ds[1], METRICS_OPENMETRICS, &b1);
	scrape(&ds[1], METRICS_PROMETHEUS, &bp);

	/* Every family described, on both nodes, in both formats. */
	H_ASSERT(all_typed(&a1, "a") > 100, "a: fewer than 100 families");
	all_typed(&b1, "b");
	all_typed(&bp, "b (prometheus)");
	H_EQ(sample(&a1, "sluice_up", NULL), 1);
	H_ASSERT(sample(&a1, "sluice_uptime_seconds", NULL) > 0, "uptime");
	H_EQ(sample(&a1, "sluice_node_info", "node=\"a\""), 1);
	H_EQ(sample(&a1, "sluice_links", NULL), 2);
	H_EQ(sample(&a1, "sluice_links_up", NULL), 2);

	/* a: the sending queue, by its labels. */
	snprintf(mine, sizeof(mine), "pid=\"%d\",uid=\"%u\"", (int)getpid(), (unsigned)getuid());
	snprintf(lab, sizeof(lab), "port=\"%u\",%s", PORT_SEND, mine);
	H_EQ(sample_labels(&a1, "sluice_queue_sqes_total", lab, &qlabels), N_MSGS + K_UNEXP);
	H_ASSERT(strncmp(qlabels, "pid=", 4) == 0 && strstr(qlabels, ",queue=\""),
		 "queue labels %s", qlabels);
	free(qlabels);
	H_EQ(sample(&a1, "sluice_queue_cqes_total", lab), N_MSGS + K_UNEXP);
	H_EQ(sample(&a1, "sluice_queue_in_flight", lab), 0);
	H_EQ(sample(&a1, "sluice_daemon_sqes_total", NULL) -
	     sample(&a0, "sluice_daemon_sqes_total", NULL), N_MSGS + K_UNEXP);
	H_EQ(sample(&a1, "sluice_completions_total", "status=\"ok\"") -
	     sample(&a0, "sluice_completions_total", "status=\"ok\""), N_MSGS + K_UNEXP);
	/* a's links: one sample per peer, the peer a label. */
	H_EQ(count_samples(&a1, "sluice_link_frames_tx_total"), 2);
	H_EQ(count_samples(&a1, "sluice_link_state"), 2 * 4);
	H_EQ(count_samples(&a1, "sluice_link_info"), 2);
	H_EQ(sample(&a1, "sluice_link_state", "peer=\"b\",sluice_link_state=\"up\""), 1);
	H_EQ(sample(&a1, "sluice_link_state", "peer=\"b\",sluice_link_state=\"down\""), 0);
	H_EQ(sample(&a1, "sluice_link_state", "peer=\"c\",sluice_link_state=\"up\""), 1);
	H_EQ(sample(&a1, "sluice_link_tx_seq", "peer=\"b\"") -
	     sample(&a0, "sluice_link_tx_seq", "peer=\"b\""), N_MSGS + K_UNEXP);
	H_EQ(sample(&a1, "sluice_link_tx_seq", "peer=\"c\"") -
	     sample(&a0, "sluice_link_tx_seq", "peer=\"c\""), 0);
	H_EQ(sample(&a1, "sluice_link_unacked", "peer=\"b\""), 0);
	snprintf(lab, sizeof(lab), "peer=\"b\",address=\"127.0.0.1:%u\"", ds[1].tcp_port);
	H_EQ(sample(&a1, "sluice_link_info", lab), 1);

	/* b: what arrived, per queue and in all. */
	H_EQ(sample(&b1, "sluice_daemon_remote_msgs_rx_total", NULL) -
	     sample(&b0, "sluice_daemon_remote_msgs_rx_total", NULL), N_MSGS + K_UNEXP);
	H_EQ(sample(&b1, "sluice_link_rx_seq", "peer=\"a\"") -
	     sample(&b0, "sluice_link_rx_seq", "peer=\"a\""), N_MSGS + K_UNEXP);
	H_EQ(sample(&b1, "sluice_link_rx_seq", "peer=\"c\"") -
	     sample(&b0, "sluice_link_rx_seq", "peer=\"c\""), 0);
	snprintf(lab, sizeof(lab), "port=\"%u\",%s", PORT_RECV, mine);
	H_EQ(sample(&b1, "sluice_queue_sqes_total", lab), N_MSGS);
	H_EQ(sample(&b1, "sluice_queue_cqes_total", lab), N_MSGS);
	H_EQ(sample(&b1, "sluice_queue_posted_recvs", lab), 0);
	H_EQ(sample(&b1, "sluice_queue_unexpected_messages", lab), 0);
	snprintf(lab, sizeof(lab), "port=\"%u\",%s", PORT_UNEXP, mine);
	H_EQ(sample(&b1, "sluice_queue_unexpected_messages", lab), K_UNEXP);
	H_EQ(sample(&b1, "sluice_queue_unexpected_bytes", lab),
	     K_UNEXP * (UNEXP_LEN + UNEXP_OVERHEAD));
	H_EQ(sample(&b1, "sluice_queue_sqes_total", lab), 0);
	H_EQ(sample(&b1, "sluice_daemon_unexpected_bytes", NULL),
	     K_UNEXP * (UNEXP_LEN + UNEXP_OVERHEAD));
	H_EQ(sample(&b1, "sluice_daemon_unexpected_total", NULL) -
	     sample(&b0, "sluice_daemon_unexpected_total", NULL), K_UNEXP);
	snprintf(uid, sizeof(uid), "uid=\"%u\"", (unsigned)getuid());
	H_EQ(sample(&b1, "sluice_uid_queues", uid), 2);

	/* Bytes and messages moved, as the daemon counts them per link and
	 * per queue (docs/operator-view.md): exact. */
	if (count_samples(&a1, "sluice_link_tx_bytes_total")) {
		double sent = (double)N_MSGS * MSG_LEN + (double)K_UNEXP * UNEXP_LEN;

		H_EQ(sample(&a1, "sluice_link_tx_bytes_total", "peer=\"b\"") -
		     sample(&a0, "sluice_link_tx_bytes_total", "peer=\"b\""), sent);
		H_EQ(sample(&a1, "sluice_link_msgs_tx_total", "peer=\"b\"") -
		     sample(&a0, "sluice_link_msgs_tx_total", "peer=\"b\""), N_MSGS + K_UNEXP);
		H_EQ(sample(&b1, "sluice_link_rx_bytes_total", "peer=\"a\"") -
		     sample(&b0, "sluice_link_rx_bytes_total", "peer=\"a\""), sent);
		H_EQ(sample(&a1, "sluice_link_tx_bytes_total", "peer=\"c\"") -
		     sample(&a0, "sluice_link_tx_bytes_total", "peer=\"c\""), 0);
		snprintf(lab, sizeof(lab), "port=\"%u\",%s", PORT_SEND, mine);
		H_EQ(sample(&a1, "sluice_queue_tx_bytes_total", lab), sent);
		snprintf(lab, sizeof(lab), "port=\"%u\",%s", PORT_RECV, mine);
		H_EQ(sample(&b1, "sluice_queue_rx_bytes_total", lab), (double)N_MSGS * MSG_LEN);
		H_EQ(sample(&b1, "sluice_queue_msgs_rx_total", lab), N_MSGS);
		H_ASSERT(sample(&a1, "sluice_memory_rss_bytes", NULL) > 0, "RSS");
		snprintf(lab, sizeof(lab), "port=\"%u\",%s", PORT_UNEXP, mine);
	} else {
		fprintf(stderr, "known_traffic: this sluiced counts no bytes per link yet\n");
	}

	/* The same through the Prometheus format's parser. */
	family(&bp, "sluice_daemon_remote_msgs_rx", "counter");
	family(&bp, "sluice_queue_unexpected_bytes", "gauge");
	family(&bp, "sluice_link_state", "gauge");
	H_EQ(sample(&bp, "sluice_queue_unexpected_bytes", lab), K_UNEXP * (UNEXP_LEN + UNEXP_OVERHEAD));
	H_EQ(sample(&bp, "sluice_daemon_remote_msgs_rx_total", NULL),
	     sample(&b1, "sluice_daemon_remote_msgs_rx_total", NULL));
	H_EQ(sample(&bp, "sluice_link_state", "peer=\"a\",sluice_link_state=\"up\""), 1);
	family(&a1, "sluice_daemon_sqes", "counter");
	family(&a1, "sluice_link_state", "stateset");
	family(&a1, "sluice_node", "info");

	parsed_free(&a0);
	parsed_free(&b0);
	parsed_free(&a1);
	parsed_free(&b1);
	parsed_free(&bp);
	H_EQ(sl_queue_close(qs), 0);
	H_EQ(sl_queue_close(qr), 0);
	H_EQ(sl_queue_close(qu), 0);
	sl_close(ca);
	sl_close(cb);
	h_cluster_stop(ds, 3);
}
END_TEST

/* ------------------------------------------------------------------ */
/* output_atomic                                                        */
/* ------------------------------------------------------------------ */

/* The names in @dir, "|"-separated and sorted, in @buf. */
static void dir_list(const char *dir, char *buf, size_t cap)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort), i;
	size_t len = 0;

	H_ASSERT(n >= 0, "scandir %s: %s", dir, strerror(errno));
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (strcmp(ents[i]->d_name, ".") && strcmp(ents[i]->d_name, ".."))
			len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s",
						len ? "|" : "", ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
}

/* A complete OpenMetrics document from sluicectl. */
static bool whole_doc(const char *t, size_t len)
{
	static const char head[] = "# HELP sluice_up ";
	static const char tail[] = "\n# EOF\n";

	return len > sizeof(head) + sizeof(tail) && !memcmp(t, head, sizeof(head) - 1) &&
	       !memcmp(t + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
}

/*
 * Run sluicectl (arguments @args, NULL-terminated) with RLIMIT_FSIZE
 * @fsize bytes (SIGXFSZ ignored, so a write past it fails EFBIG), its
 * stdout to @stdout_file (NULL: a pipe to @out, with stderr).  Returns
 * its exit status.
 */
static int run_limited(const char *const *args, rlim_t fsize, const char *stdout_file,
		       char *out, size_t cap)
{
	char errfile[] = "/tmp/sl-om-err-XXXXXX";
	const char *argv[16];
	int efd = mkstemp(errfile), status, n = 0;
	pid_t pid;
	size_t len;
	char *t;

	H_ASSERT(efd >= 0, "mkstemp: %s", strerror(errno));
	argv[n++] = tu_sluicectl();
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = h_fork();
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = fsize, .rlim_max = fsize };
		int ofd = stdout_file ? open(stdout_file, O_WRONLY | O_CREAT | O_TRUNC, 0644)
				      : efd;

		if (ofd < 0 || signal(SIGXFSZ, SIG_IGN) == SIG_ERR ||
		    setrlimit(RLIMIT_FSIZE, &rl) < 0 || dup2(ofd, 1) < 0 || dup2(efd, 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	h_wait_children(&pid, 1, RUN_TIMEOUT_MS, &status);
	H_EQ(close(efd), 0);
	t = read_file(errfile, &len);
	snprintf(out, cap, "%s", t);
	free(t);
	H_EQ(unlink(errfile), 0);
	H_ASSERT(WIFEXITED(status), "sluicectl: wait status %d", status);
	return WEXITSTATUS(status);
}

START_TEST(output_atomic)
{
	char dir[] = "/tmp/sl-om-XXXXXX", file[PATH_MAX], partial[PATH_MAX], list[512];
	char out[4096];
	struct h_daemon d;
	struct stat st;
	struct parsed p;
	char *before, *after;
	size_t blen, alen;
	int pfd[2], rc, status, i;
	pid_t reader;

	h_daemon_start(&d, "solo", 0, NULL, 0);
	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(file, sizeof(file), "%s/sluice.prom", dir);
	export_to(&d, METRICS_OPENMETRICS, file);
	H_ASSERT(stat(file, &st) == 0, "%s: %s", file, strerror(errno));
	H_EQ(st.st_mode & 07777, 0644);
	dir_list(dir, list, sizeof(list));
	ck_assert_str_eq(list, "sluice.prom");
	before = read_file(file, &blen);
	H_ASSERT(whole_doc(before, blen), "not a whole document: %.200s", before);

	/* A reader that reads the file as fast as it can while it is
	 * replaced 40 times: every read is a whole document. */
	H_EQ(pipe(pfd), 0);
	reader = h_fork();
	if (reader == 0) {
		unsigned reads = 0;
		uint8_t b;

		if (close(pfd[1]) < 0 || fcntl(pfd[0], F_SETFL, O_NONBLOCK) < 0) {
			fprintf(stderr, "reader: %s\n", strerror(errno));
			_exit(3);
		}
		while (read(pfd[0], &b, 1) < 0 && errno == EAGAIN) {
			static char t[DOC_MAX];
			FILE *rf = fopen(file, "re");
			size_t len = rf ? fread(t, 1, sizeof(t), rf) : 0;

			if (!rf || ferror(rf) || fclose(rf) != 0) {
				fprintf(stderr, "reader: %s: %s\n", file, strerror(errno));
				_exit(3);
			}
			if (!whole_doc(t, len)) {
				fprintf(stderr, "reader: a partial file of %zu bytes after %u reads\n",
					len, reads);
				_exit(1);
			}
			reads++;
		}
		fprintf(stderr, "reader: %u whole documents read\n", reads);
		_exit(reads > 0 ? 0 : 2);
	}
	H_EQ(close(pfd[0]), 0);
	for (i = 0; i < 40; i++)
		export_to(&d, METRICS_OPENMETRICS, file);
	H_EQ(close(pfd[1]), 0);
	h_wait_children(&reader, 1, RUN_TIMEOUT_MS, &status);
	H_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader: wait status %d", status);
	dir_list(dir, list, sizeof(list));
	ck_assert_str_eq(list, "sluice.prom");

	/* A write that fails half way (the file size limit below the
	 * document): exit 4, the old file whole, no temporary file left. */
	free(before);
	before = read_file(file, &blen);
	rc = run_limited((const char *const[]){ "-r", d.dir, "counters", "--format", "openmetrics",
						"--output", file, NULL },
			 blen / 2, NULL, out, sizeof(out));
	H_ASSERT(rc == 4 && strstr(out, file) && strstr(out, strerror(EFBIG)),
		 "exit %d: %s", rc, out);
	after = read_file(file, &alen);
	H_ASSERT(alen == blen && !memcmp(before, after, blen), "the old file changed: %zu bytes, "
		 "was %zu", alen, blen);
	free(after);
	dir_list(dir, list, sizeof(list));
	ck_assert_str_eq(list, "sluice.prom");
	/* What that limit does to a shell's "> file": half a document,
	 * which a collector would read. */
	snprintf(partial, sizeof(partial), "%s.redirect", dir);
	rc = run_limited((const char *const[]){ "-r", d.dir, "counters", "--format", "openmetrics",
						NULL },
			 blen / 2, partial, out, sizeof(out));
	after = read_file(partial, &alen);
	H_ASSERT(rc == 4 && alen == blen / 2 && !whole_doc(after, alen),
		 "redirect: exit %d, %zu bytes: %s", rc, alen, out);
	free(after);
	H_EQ(unlink(partial), 0);

	/* Into a directory that is not there: exit 4, said. */
	snprintf(partial, sizeof(partial), "%s/none/sluice.prom", dir);
	rc = ctl_run(out, sizeof(out), "-r", d.dir, "counters", "--format", "prometheus",
		     "--output", partial, NULL);
	H_ASSERT(rc == 4 && strstr(out, partial) && strstr(out, strerror(ENOENT)),
		 "exit %d: %s", rc, out);

	/* The daemon gone: the file says so (sluice_up 0 and nothing
	 * else), exit 1. */
	h_daemon_stop(&d);
	rc = ctl_run(out, sizeof(out), "-r", d.dir, "counters", "--format", "openmetrics",
		     "--output", file, NULL);
	H_ASSERT(rc == 1 && strstr(out, "not running"), "exit %d: %s", rc, out);
	parse_file(file, METRICS_OPENMETRICS, &p);
	H_EQ(sample(&p, "sluice_up", NULL), 0);
	H_EQ(count_samples(&p, "sluice_up"), 1);
	H_ASSERT(!strchr(strchr(p.text, '\n') + 1, '\n') ||
		 !strstr(strchr(strchr(p.text, '\n') + 1, '\n'), "\nS\t"),
		 "more than sluice_up: %s", p.text);
	parsed_free(&p);
	free(before);
	H_EQ(unlink(file), 0);
	H_EQ(rmdir(dir), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* usage                                                                */
/* ------------------------------------------------------------------ */

START_TEST(usage)
{
	static char a[1 << 16], b[1 << 16];
	struct h_daemon d;
	int rc;

	rc = ctl_run(a, sizeof(a), "counters", "--format", "xml", NULL);
	H_ASSERT(rc == 2 && strstr(a, "openmetrics"), "exit %d: %s", rc, a);
	rc = ctl_run(a, sizeof(a), "links", "--format", "openmetrics", NULL);
	H_ASSERT(rc == 2 && strstr(a, "counters"), "exit %d: %s", rc, a);
	rc = ctl_run(a, sizeof(a), "counters", "--output", "/tmp/x.prom", NULL);
	H_ASSERT(rc == 2 && strstr(a, "--output"), "exit %d: %s", rc, a);
	rc = ctl_run(a, sizeof(a), "counters", "--json", "--format", "text", NULL);
	H_ASSERT(rc == 2 && strstr(a, "--json"), "exit %d: %s", rc, a);
	rc = ctl_run(a, sizeof(a), "counters", "--format", "prometheus", "--watch", "1", NULL);
	H_ASSERT(rc == 2 && strstr(a, "--watch"), "exit %d: %s", rc, a);
	rc = ctl_run(a, sizeof(a), "--help", NULL);
	H_ASSERT(rc == 0 && strstr(a, "--format FORMAT") && strstr(a, "--output FILE"),
		 "--help: exit %d: %s", rc, a);

	h_daemon_start(&d, "solo", 0, NULL, 0);
	rc = ctl_run(a, sizeof(a), "-r", d.dir, "counters", "--json", NULL);
	H_EQ(rc, 0);
	rc = ctl_run(b, sizeof(b), "-r", d.dir, "counters", "--format", "json", NULL);
	H_EQ(rc, 0);
	ck_assert_str_eq(a, b);
	rc = ctl_run(a, sizeof(a), "-r", d.dir, "status", "--format", "text", NULL);
	H_EQ(rc, 0);
	H_ASSERT(strstr(a, "node         solo"), "--format text: %s", a);
	rc = ctl_run(a, sizeof(a), "-r", d.dir, "rcache", NULL);
	H_EQ(rc, 0);
	rc = ctl_run(b, sizeof(b), "-r", d.dir, "rcache", "--format", "text", NULL);
	H_EQ(rc, 0);
	ck_assert_str_eq(a, b);
	/* To stdout, as --output writes it. */
	rc = ctl_run(a, sizeof(a), "-r", d.dir, "counters", "--format", "openmetrics", NULL);
	H_ASSERT(rc == 0 && whole_doc(a, strlen(a)), "exit %d: %.300s", rc, a);
	h_daemon_stop(&d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* formatter: tools/openmetrics.c alone, on crafted replies              */
/* ------------------------------------------------------------------ */

static const char *fail_cmd;	/* the command whose query fails, or NULL */

static const char *const crafted[][2] = {
	{ "status", "{\"node\": \"n\\\"1\\\\x\\ny\", \"node_id\": \"00000001\", "
		    "\"incarnation\": \"ab\", \"version\": \"v\", \"transport\": \"tcp\", "
		    "\"clients\": 2, \"queues\": 1, \"links\": 1, \"links_up\": 0, "
		    "\"uptime_s\": 1.5, \"pid\": 5, \"listen\": null, \"brand_new\": 7, "
		    "\"loop\": {\"iteration_max_ms\": 1234, \"stalls\": 1, "
		    "\"stall_max_ms\": 250, \"watchdog_gap_max_ms\": 0}}" },
	{ "counters", "{\"daemon\": {\"sqes\": 18446744073709551615, \"future_gauge\": 3, "
		      "\"unexpected_messages\": 9, \"unexpected\": 4, \"flag\": true}, "
		      "\"completions\": {\"ok\": 5, \"status_77\": 1}, \"xport\": {}}" },
	{ "rcache", "{}" },
	{ "links", "{\"links\": [{\"peer\": \"p\\\"q\\\\r\\ns\", \"node_id\": \"1\", "
		   "\"address\": \"h:1\", \"auth\": \"key\", \"incarnation\": \"ab\", "
		   "\"last_error\": \"boom\", \"state\": \"wedged\", \"tx_seq\": 9, "
		   "\"tx_gap_max_ms\": 1500, \"nested\": {\"x\": 1}}]}" },
	{ "queues", "{\"queues\": [{\"id\": 3, \"port\": 7, \"pid\": null, \"uid\": 1000, "
		    "\"sqes\": 4}]}" },
	{ "uids", "{\"uids\": [], \"limits\": {\"queues\": 64}}" },
	{ "clients", "{\"clients\": []}" },
};

static int fake_query(const char *path, const char *cmd, struct json_object **reply)
{
	size_t i;

	ck_assert_str_eq(path, "/fake");
	if (fail_cmd && !strcmp(cmd, fail_cmd))
		return 1;
	for (i = 0; i < sizeof(crafted) / sizeof(crafted[0]); i++) {
		if (!strcmp(cmd, crafted[i][0])) {
			*reply = json_tokener_parse(crafted[i][1]);
			H_ASSERT(*reply, "crafted %s does not parse", cmd);
			return 0;
		}
	}
	H_ASSERT(false, "no crafted reply for %s", cmd);
}

START_TEST(formatter)
{
	char dir[] = "/tmp/sl-omf-XXXXXX", file[PATH_MAX];
	enum metrics_format f;
	struct parsed p;
	char *text;

	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(file, sizeof(file), "%s/m.prom", dir);
	for (f = METRICS_OPENMETRICS; f <= METRICS_PROMETHEUS; f++) {
		bool om = f == METRICS_OPENMETRICS;

		fail_cmd = NULL;
		H_EQ(metrics_export("/fake", f, file, fake_query), 0);
		text = read_file(file, NULL);
		/* 2^64 - 1 exactly (the parser's float would round it). */
		H_ASSERT(strstr(text, "\nsluice_daemon_sqes_total 18446744073709551615\n"),
			 "%s", text);
		H_ASSERT(om == (strstr(text, "\n# EOF\n") != NULL), "# EOF in %s", fmt_name(f));
		H_ASSERT(strstr(text, om ? "\n# TYPE sluice_daemon_future_gauge unknown\n"
					 : "\n# TYPE sluice_daemon_future_gauge untyped\n"),
			 "TYPE of an unknown field in %s", fmt_name(f));
		free(text);
		parse_file(file, f, &p);
		/* Label values escaped and read back as they were. */
		H_EQ(sample(&p, "sluice_node_info", "node=\"n\\\"1\\\\x\\ny\""), 1);
		H_EQ(sample(&p, "sluice_link_tx_seq", "peer=\"p\\\"q\\\\r\\ns\""), 9);
		H_EQ(sample(&p, "sluice_link_info", "auth=\"key\",incarnation=\"ab\""), 1);
		/* Milliseconds as seconds, exactly. */
		H_ASSERT(sample(&p, "sluice_loop_iteration_max_seconds", NULL) == 1.234, "1.234");
		H_ASSERT(sample(&p, "sluice_loop_stall_max_seconds", NULL) == 0.25, "0.25");
		H_ASSERT(sample(&p, "sluice_link_tx_gap_max_seconds", "") == 1.5, "1.5");
		H_ASSERT(sample(&p, "sluice_uptime_seconds", NULL) == 1.5, "uptime");
		/* A state it does not know: one more sample of the set. */
		H_EQ(count_samples(&p, "sluice_link_state"), 5);
		H_EQ(sample(&p, "sluice_link_state", "sluice_link_state=\"wedged\""), 1);
		H_EQ(sample(&p, "sluice_link_state", "sluice_link_state=\"up\""), 0);
		/* Fields it does not know: shown, TYPE unknown, said in HELP. */
		/* (The Python client reads Prometheus' "untyped" as unknown.) */
		family(&p, "sluice_status_brand_new", "unknown");
		family(&p, "sluice_daemon_future_gauge", "unknown");
		H_EQ(sample(&p, "sluice_daemon_future_gauge", NULL), 3);
		H_EQ(sample(&p, "sluice_daemon_flag", NULL), 1);
		H_ASSERT(strstr(p.text, "does not describe it"), "HELP of an unknown field");
		/* ... unless its made name is a described family's: left out. */
		H_EQ(sample(&p, "sluice_daemon_unexpected_messages", NULL), 4);
		H_EQ(sample(&p, "sluice_completions_total", "status=\"status_77\""), 1);
		H_EQ(sample(&p, "sluice_queue_sqes_total", "pid=\"\",port=\"7\",queue=\"3\""), 4);
		H_EQ(sample(&p, "sluice_uid_limit_queues", NULL), 64);
		H_EQ(count_samples(&p, "sluice_status_queues"), 0);
		H_EQ(count_samples(&p, "sluice_link_nested"), 0);
		H_ASSERT(!strstr(p.text, "boom"), "last_error is not a label");
		parsed_free(&p);

		/* A query that fails: its status, and a document that says
		 * only that the daemon is not up. */
		fail_cmd = "links";
		H_EQ(metrics_export("/fake", f, file, fake_query), 1);
		parse_file(file, f, &p);
		H_EQ(sample(&p, "sluice_up", NULL), 0);
		H_ASSERT(!strstr(p.text, "sluice_daemon"), "a failed export shows values: %s",
			 p.text);
		parsed_free(&p);
	}
	H_EQ(unlink(file), 0);
	H_EQ(rmdir(dir), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* node_exporter                                                        */
/* ------------------------------------------------------------------ */

/* GET /metrics from 127.0.0.1:@port into @buf (the body); false when
 * nothing answers yet. */
static bool http_get(uint16_t port, char *buf, size_t cap)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t len = 0;
	char *body;

	H_ASSERT(fd >= 0, "socket: %s", strerror(errno));
	H_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = 10 },
			sizeof(struct timeval)), 0);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		H_ASSERT(errno == ECONNREFUSED, "connect: %s", strerror(errno));
		H_EQ(close(fd), 0);
		return false;
	}
	H_EQ(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(req) - 1));
	for (;;) {
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);

		H_ASSERT(n >= 0, "recv: %s", strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
		H_ASSERT(len + 1 < cap, "reply larger than %zu bytes", cap);
	}
	H_EQ(close(fd), 0);
	buf[len] = '\0';
	H_ASSERT(!strncmp(buf, "HTTP/1.", 7) && strstr(buf, " 200 "), "reply: %.300s", buf);
	body = strstr(buf, "\r\n\r\n");
	H_ASSERT(body, "no body: %.300s", buf);
	memmove(buf, body + 4, strlen(body + 4) + 1);
	return true;
}

START_TEST(node_exporter)
{
	static const char *const names[] = { "a", "b" };
	char tool[PATH_MAX], dir[] = "/tmp/sl-omx-XXXXXX", file[PATH_MAX], scraped[PATH_MAX];
	char dirarg[PATH_MAX + 64], listen[64], *body, *copy, *line, *save = NULL;
	struct parsed mine, theirs;
	struct h_daemon ds[2];
	uint16_t port;
	int64_t deadline;
	pid_t pid;
	unsigned n = 0;
	int status;
	FILE *f;

	if (!h_tool("prometheus-node-exporter", tool, sizeof(tool))) {
		fprintf(stderr, "SKIPPED: node_exporter: prometheus-node-exporter is not installed\n");
		return;
	}
	h_cluster_start(ds, names, 2);
	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(file, sizeof(file), "%s/sluice.prom", dir);
	export_to(&ds[0], METRICS_PROMETHEUS, file);
	parse_file(file, METRICS_PROMETHEUS, &mine);

	port = h_free_port();
	snprintf(dirarg, sizeof(dirarg), "--collector.textfile.directory=%s", dir);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%u", port);
	pid = h_fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0 || dup2(null, 1) < 0)
			_exit(126);
		execl(tool, tool, "--collector.disable-defaults", "--collector.textfile", dirarg,
		      listen, "--log.level=warn", (char *)NULL);
		_exit(127);
	}
	body = malloc(DOC_MAX);
	H_ASSERT(body, "out of memory");
	deadline = h_now_ms() + 10000;
	while (!http_get(port, body, DOC_MAX)) {
		H_ASSERT(h_now_ms() < deadline && waitpid(pid, &status, WNOHANG) == 0,
			 "prometheus-node-exporter did not listen on 127.0.0.1:%u", port);
		h_sleep_ms(50);
	}
	H_EQ(kill(pid, SIGTERM), 0);
	h_wait_children(&pid, 1, RUN_TIMEOUT_MS, &status);
	snprintf(scraped, sizeof(scraped), "%s.scraped", dir);
	f = fopen(scraped, "w");
	H_ASSERT(f && fputs(body, f) >= 0 && fclose(f) == 0, "%s: %s", scraped, strerror(errno));
	H_ASSERT(strstr(body, "\nnode_textfile_scrape_error 0\n"), "scrape error: %.2000s", body);
	parse_file(scraped, METRICS_PROMETHEUS, &theirs);

	/* Every family (name, type, help) and every sample of the file,
	 * as the exporter serves them. */
	copy = strdup(mine.text);
	H_ASSERT(copy, "out of memory");
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *at = strstr(theirs.text, line);

		H_ASSERT(at && (at == theirs.text || at[-1] == '\n') &&
			 (at[strlen(line)] == '\n' || at[strlen(line)] == '\0'),
			 "the exporter lost or changed: %s", line);
		n++;
	}
	free(copy);
	H_ASSERT(n > 200, "only %u lines", n);
	fprintf(stderr, "node_exporter: %u families and samples served as written\n", n);
	family(&theirs, "sluice_daemon_sqes", "counter");
	free(body);
	parsed_free(&mine);
	parsed_free(&theirs);
	H_EQ(unlink(scraped), 0);
	H_EQ(unlink(file), 0);
	H_EQ(rmdir(dir), 0);
	h_cluster_stop(ds, 2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* units                                                                */
/* ------------------------------------------------------------------ */

START_TEST(units)
{
	char tool[PATH_MAX], bin[PATH_MAX], path[PATH_MAX], dir[] = "/tmp/sl-omu-XXXXXX";
	char svc[PATH_MAX], tmr[PATH_MAX], *t, *p;
	static char out[1 << 16];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/conf/sluice-metrics.service", src_dir());
	t = read_file(path, NULL);
	H_ASSERT(strstr(t, "\nType=oneshot\n") &&
		 strstr(t, "\nExecStart=/usr/bin/sluicectl counters --format prometheus "
			   "--output /var/lib/prometheus/node-exporter/sluice.prom\n") &&
		 strstr(t, "\nReadWritePaths=/var/lib/prometheus/node-exporter\n"),
		 "%s: not the documented unit", path);
	snprintf(path, sizeof(path), "%s/conf/sluice-metrics.timer", src_dir());
	p = read_file(path, NULL);
	H_ASSERT(strstr(p, "\nOnUnitActiveSec=15s\n") && strstr(p, "\nWantedBy=timers.target\n"),
		 "%s: not every 15 s", path);
	if (!h_tool("systemd-analyze", tool, sizeof(tool))) {
		fprintf(stderr, "SKIPPED: units: systemd-analyze is not installed\n");
		free(t);
		free(p);
		return;
	}
	/* verify wants ExecStart's program to exist: the built one. */
	H_ASSERT(realpath(tu_sluicectl(), bin), "realpath: %s", strerror(errno));
	H_ASSERT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(svc, sizeof(svc), "%s/sluice-metrics.service", dir);
	snprintf(tmr, sizeof(tmr), "%s/sluice-metrics.timer", dir);
	f = fopen(svc, "w");
	H_ASSERT(f, "%s: %s", svc, strerror(errno));
	{
		char *at = strstr(t, "/usr/bin/sluicectl");

		H_ASSERT(fwrite(t, 1, (size_t)(at - t), f) == (size_t)(at - t) &&
			 fputs(bin, f) >= 0 && fputs(at + strlen("/usr/bin/sluicectl"), f) >= 0,
			 "%s: %s", svc, strerror(errno));
	}
	H_EQ(fclose(f), 0);
	f = fopen(tmr, "w");
	H_ASSERT(f && fputs(p, f) >= 0 && fclose(f) == 0, "%s: %s", tmr, strerror(errno));
	rc = h_run((const char *const[]){ tool, "verify", "--man=no", svc, tmr, NULL }, out,
		   sizeof(out), 30000);
	H_ASSERT(rc == 0 && !strstr(out, "sluice-metrics"), "systemd-analyze verify: %d\n%s", rc,
		 out);
	H_EQ(unlink(svc), 0);
	H_EQ(unlink(tmr), 0);
	H_EQ(rmdir(dir), 0);
	free(t);
	free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("openmetrics");

	tcase_add_test(h_tcase(s, "known_traffic", 120), known_traffic);
	tcase_add_test(h_tcase(s, "output_atomic", 120), output_atomic);
	tcase_add_test(h_tcase(s, "usage", 60), usage);
	tcase_add_test(h_tcase(s, "formatter", 60), formatter);
	tcase_add_test(h_tcase(s, "node_exporter", 60), node_exporter);
	tcase_add_test(h_tcase(s, "units", 60), units);
	return h_run_suite(s);
}
