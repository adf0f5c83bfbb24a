/*
 * sluicectl - ask a running sluiced what it is doing, through its admin
 * socket (daemon/admin.h: one request line, one JSON reply line).
 *
 *   sluicectl [-s|--socket PATH] [-r|--runtime-dir DIR] [-j|--json]
 *             [-f|--format FORMAT] [-o|--output FILE]
 *             [-w|--watch SECONDS] [-h|--help] [-V|--version] COMMAND [WHICH]
 *
 * Exit status: 0 success; 1 sluiced is not running (no socket, or the
 * connection refused), or WHICH names no link, queue or client; 2 usage
 * error; 3 permission denied; 4 any other error (no or bad reply, an
 * error reply from the daemon).
 */
#define _GNU_SOURCE
#include "autoconfig.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "common.h"
#include "openmetrics.h"
#include "ctl_rates.h"

#define ADMIN_SOCKET_NAME "sluiced-admin.sock"
#define DEFAULT_RUNTIME_DIR "/run/sluice"
#define REQUEST_MAX 64			/* bytes, "\n" included (admin.h) */
#define REPLY_MAX (64u << 20)		/* bytes: larger is a bad reply */
#define REPLY_TIMEOUT_MS 10000		/* the daemon answers at once */
#define WATCH_MAX_S 86400.0

enum exit_code {
	EXIT_OK = 0,
	EXIT_NOT_RUNNING = 1,
	EXIT_USAGE = 2,
	EXIT_DENIED = 3,
	EXIT_ERROR = 4,
	EXIT_NO_MATCH = 5,	/* a WHICH filter named nothing: not "not running" */
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sluicectl [OPTION]... COMMAND [WHICH]\n"
		"Show what the running sluiced is doing, from its admin socket.\n\n"
		"Commands:\n"
		"  status        node, transport, uptime, how many clients, queues, links,\n"
		"                memory\n"
		"  clients [PID] connected client processes: queues, arena bytes, in flight\n"
		"  uids          per user: contexts, queues, arena bytes, in flight, and limits\n"
		"  queues [ID]   every queue: ring occupancy, in flight, receives, unexpected,\n"
		"                messages, bytes and NAKs\n"
		"  links [PEER]  every peer link: state and since when, last heard, messages,\n"
		"                bytes and NAKs each way, sequence numbers, credits, backlog\n"
		"  memory        RSS, arenas, unexpected messages, link buffers\n"
		"  rcache        registration cache counters\n"
		"  counters      daemon counters, completions by status, transport counters\n\n"
		"Options:\n"
		"  -s, --socket PATH       admin socket (default: $SLUICE_RUNTIME_DIR/%s,\n"
		"                          else %s/%s)\n"
		"  -r, --runtime-dir DIR   the daemon's runtime directory: DIR/%s\n"
		"  -j, --json              print the daemon's JSON reply (pretty)\n"
		"  -f, --format FORMAT     text (tables, the default), json (= --json); for\n"
		"                          counters also openmetrics or prometheus: every\n"
		"                          number of the daemon as metrics (sluicectl(8))\n"
		"  -o, --output FILE       with openmetrics or prometheus: replace FILE\n"
		"                          atomically instead of printing (a textfile\n"
		"                          collector's .prom file)\n"
		"  -w, --watch SECONDS     repeat every SECONDS until interrupted, with a\n"
		"                          timestamp and, for links and queues, rates per\n"
		"                          second since the last refresh\n"
		"  -h, --help              show this help\n"
		"  -V, --version           show the version\n\n"
		"Exit status: 0 success, 1 sluiced not running or no such PEER, ID or PID,\n"
		"2 usage error, 3 permission denied, 4 other error.\n",
		ADMIN_SOCKET_NAME, DEFAULT_RUNTIME_DIR, ADMIN_SOCKET_NAME, ADMIN_SOCKET_NAME);
}

/* ------------------------------------------------------------------ */
/* Talking to the daemon                                                */
/* ------------------------------------------------------------------ */

static int denied(const char *path)
{
	fprintf(stderr, "sluicectl: permission denied: %s: root or a member of the admin "
		"group may use it (sluiced.conf(5), admin_group)\n", path);
	return EXIT_DENIED;
}

/* Not an exit status: the daemon closed without a word or had no slot
 * (admin.h: a connection may be evicted); query() tries again. */
#define RETRY_BUSY 100
#define QUERY_TRIES 3

/* Read the reply line into *@buf_p (malloc'd, NUL-terminated).  Returns
 * EXIT_OK or EXIT_ERROR (said why), or RETRY_BUSY (quietly) when @may_retry
 * and the daemon closed without a reply. */
static int read_reply(int fd, const char *path, char **buf_p, bool may_retry)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nb;
	int64_t left = REPLY_TIMEOUT_MS;
	struct timespec t0, t1;

	if (!buf) {
		fprintf(stderr, "sluicectl: out of memory\n");
		return EXIT_ERROR;
	}
	if (clock_gettime(CLOCK_MONOTONIC, &t0) < 0) {
		fprintf(stderr, "sluicectl: clock_gettime: %s\n", strerror(errno));
		free(buf);
		return EXIT_ERROR;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int rc;

		if (len + 1 >= cap) {
			if (cap >= REPLY_MAX) {
				fprintf(stderr, "sluicectl: %s: reply larger than %u bytes\n", path,
					REPLY_MAX);
				goto err;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				fprintf(stderr, "sluicectl: out of memory\n");
				goto err;
			}
			buf = nb;
			cap *= 2;
		}
		rc = poll(&p, 1, (int)left);
		if (rc < 0 && errno != EINTR) {
			fprintf(stderr, "sluicectl: poll: %s\n", strerror(errno));
			goto err;
		}
		if (clock_gettime(CLOCK_MONOTONIC, &t1) < 0) {
			fprintf(stderr, "sluicectl: clock_gettime: %s\n", strerror(errno));
			goto err;
		}
		left = REPLY_TIMEOUT_MS - ((int64_t)(t1.tv_sec - t0.tv_sec) * 1000 +
					   (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (rc == 0 || left <= 0) {
			fprintf(stderr, "sluicectl: %s: no reply within %d s\n", path,
				REPLY_TIMEOUT_MS / 1000);
			goto err;
		}
		if (rc < 0)
			continue;
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			/* A reset after the whole line is still the whole line. */
			if (errno == ECONNRESET && len && buf[len - 1] == '\n')
				break;
			fprintf(stderr, "sluicectl: %s: read: %s\n", path, strerror(errno));
			goto err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (buf[len - 1] == '\n')
			break;
	}
	buf[len] = '\0';
	if (len == 0 && may_retry) {
		free(buf);
		return RETRY_BUSY;
	}
	if (len == 0 || buf[len - 1] != '\n') {
		fprintf(stderr, "sluicectl: %s: %s\n", path,
			len ? "reply cut short" : "the daemon closed without a reply");
		goto err;
	}
	*buf_p = buf;
	return EXIT_OK;
err:
	free(buf);
	return EXIT_ERROR;
}

/*
 * Send @cmd to the admin socket at @path and parse the reply into
 * *@reply_p (an object without "error").  Returns an enum exit_code, with
 * the message printed, or RETRY_BUSY (nothing printed) when @may_retry and
 * the daemon had no slot for this connection.
 */
static int query_once(const char *path, const char *cmd, struct json_object **reply_p,
		      bool may_retry)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char req[REQUEST_MAX + 1];
	struct json_tokener *tok;
	struct json_object *o, *err;
	char *buf = NULL;
	size_t reqlen;
	int fd, rc;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "sluicectl: %s: path too long for a UNIX socket\n", path);
		return EXIT_USAGE;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "sluicectl: socket: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	/* A daemon that stopped accepting leaves connect() waiting on a full
	 * backlog: bound it like the reply. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO,
		       &(struct timeval){ .tv_sec = REPLY_TIMEOUT_MS / 1000 },
		       sizeof(struct timeval)) < 0) {
		fprintf(stderr, "sluicectl: SO_SNDTIMEO: %s\n", strerror(errno));
		close(fd);
		return EXIT_ERROR;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int e = errno;

		close(fd);
		if (e == EAGAIN) {
			fprintf(stderr, "sluicectl: %s: not accepted within %d s\n", path,
				REPLY_TIMEOUT_MS / 1000);
			return EXIT_ERROR;
		}
		if (e == ENOENT || e == ECONNREFUSED || e == ENOTDIR) {
			fprintf(stderr, "sluicectl: sluiced is not running (no socket at %s)\n",
				path);
			return EXIT_NOT_RUNNING;
		}
		if (e == EACCES || e == EPERM)
			return denied(path);
		fprintf(stderr, "sluicectl: %s: %s\n", path, strerror(e));
		return EXIT_ERROR;
	}
	reqlen = (size_t)snprintf(req, sizeof(req), "%s\n", cmd);
	/* A daemon that refuses at once may have closed already: its reply
	 * is still there to read, so a failed send is not the end. */
	if (send(fd, req, reqlen, MSG_NOSIGNAL) < 0 && errno != EPIPE &&
	    errno != ECONNRESET) {
		fprintf(stderr, "sluicectl: %s: send: %s\n", path, strerror(errno));
		close(fd);
		return EXIT_ERROR;
	}
	rc = read_reply(fd, path, &buf, may_retry);
	if (close(fd) < 0 && rc == EXIT_OK)
		fprintf(stderr, "sluicectl: %s: close: %s\n", path, strerror(errno));
	if (rc != EXIT_OK)
		return rc;
	tok = json_tokener_new();
	if (!tok) {
		fprintf(stderr, "sluicectl: out of memory\n");
		free(buf);
		return EXIT_ERROR;
	}
	o = json_tokener_parse_ex(tok, buf, (int)strlen(buf));
	if (!o || !json_object_is_type(o, json_type_object)) {
		fprintf(stderr, "sluicectl: %s: bad reply (%s)\n", path,
			o ? "not a JSON object"
			  : json_tokener_error_desc(json_tokener_get_error(tok)));
		json_object_put(o);
		json_tokener_free(tok);
		free(buf);
		return EXIT_ERROR;
	}
	json_tokener_free(tok);
	free(buf);
	if (json_object_object_get_ex(o, "error", &err)) {
		const char *msg = json_object_get_string(err);

		if (msg && !strcmp(msg, "permission denied"))
			rc = denied(path);
		else if (msg && may_retry && !strcmp(msg, "too many admin connections"))
			rc = RETRY_BUSY;
		else {
			fprintf(stderr, "sluicectl: sluiced: %s\n", msg ? msg : "error");
			rc = EXIT_ERROR;
		}
		json_object_put(o);
		return rc;
	}
	*reply_p = o;
	return EXIT_OK;
}

/* query_once(), tried again (after 20 ms, then 40 ms) while the daemon
 * had no slot for it. */
static int query(const char *path, const char *cmd, struct json_object **reply_p)
{
	int i, rc = RETRY_BUSY;

	for (i = 1; i <= QUERY_TRIES && rc == RETRY_BUSY; i++) {
		if (i > 1 && nanosleep(&(struct timespec){ .tv_nsec = 20000000L * (i - 1) },
				       NULL) < 0 && errno != EINTR) {
			fprintf(stderr, "sluicectl: nanosleep: %s\n", strerror(errno));
			return EXIT_ERROR;
		}
		rc = query_once(path, cmd, reply_p, i < QUERY_TRIES);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Tables                                                               */
/* ------------------------------------------------------------------ */

#define TABLE_COLS_MAX 25
#define CELL_MAX 128

struct table {
	unsigned ncols;
	const char *head[TABLE_COLS_MAX];
	bool right[TABLE_COLS_MAX];	/* numbers: right-aligned */
	size_t width[TABLE_COLS_MAX];
	char (*cells)[TABLE_COLS_MAX][CELL_MAX];
	size_t nrows, cap;
	bool oom;
};

static void table_init(struct table *t, const char *const *head, const bool *right,
		       unsigned ncols)
{
	unsigned i;

	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	for (i = 0; i < ncols; i++) {
		t->head[i] = head[i];
		t->right[i] = right[i];
		t->width[i] = strlen(head[i]);
	}
}

/* A new row, its cells empty; NULL when out of memory (then printed
 * as far as it got, with a note). */
static char (*table_row(struct table *t))[CELL_MAX]
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		void *p = realloc(t->cells, cap * sizeof(*t->cells));

		if (!p) {
			t->oom = true;
			return NULL;
		}
		t->cells = p;
		t->cap = cap;
	}
	memset(t->cells[t->nrows], 0, sizeof(*t->cells));
	return t->cells[t->nrows++];
}

static void table_print(struct table *t)
{
	size_t r;
	unsigned i;

	for (r = 0; r < t->nrows; r++)
		for (i = 0; i < t->ncols; i++)
			if (strlen(t->cells[r][i]) > t->width[i])
				t->width[i] = strlen(t->cells[r][i]);
	for (r = 0; r <= t->nrows; r++) {
		for (i = 0; i < t->ncols; i++) {
			/* The last column, left-aligned, is not padded. */
			int w = t->right[i] ? (int)t->width[i]
					    : (i + 1 == t->ncols ? 0 : -(int)t->width[i]);

			printf("%s%*s", i ? "  " : "", w, r ? t->cells[r - 1][i] : t->head[i]);
		}
		printf("\n");
	}
	if (t->oom)
		printf("(out of memory: rows missing)\n");
	free(t->cells);
	t->cells = NULL;
}

/* ------------------------------------------------------------------ */
/* Reading the reply                                                    */
/* ------------------------------------------------------------------ */

static struct json_object *field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

/* The text of field @key: numbers in decimal, null and missing as "-". */
static void cell(char *buf, struct json_object *o, const char *key)
{
	struct json_object *v = field(o, key);

	if (!v)
		snprintf(buf, CELL_MAX, "-");
	else if (json_object_is_type(v, json_type_int))
		snprintf(buf, CELL_MAX, "%" PRIu64, json_object_get_uint64(v));
	else
		snprintf(buf, CELL_MAX, "%s", json_object_get_string(v));
}

static uint64_t num(struct json_object *o, const char *key)
{
	struct json_object *v = field(o, key);

	return v ? json_object_get_uint64(v) : 0;
}

/* Bytes for people: "512 B", "1.5 KiB", "64.0 MiB". */
static void fmt_bytes(char *buf, size_t len, uint64_t b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	unsigned u = 0;

	if (b < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", b);
		return;
	}
	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
}

static void fmt_duration(char *buf, size_t len, double s)
{
	uint64_t t = s > 0 ? (uint64_t)s : 0;
	uint64_t d = t / 86400, h = t / 3600 % 24, m = t / 60 % 60, sec = t % 60;

	if (d)
		snprintf(buf, len, "%" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m", d, h, m);
	else if (h)
		snprintf(buf, len, "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", h, m, sec);
	else if (m)
		snprintf(buf, len, "%" PRIu64 "m %02" PRIu64 "s", m, sec);
	else
		snprintf(buf, len, "%.1f s", s);
}

/* A table cell's duration, without spaces: "0.4s", "5m03s", "2h05m",
 * "3d04h"; "-" for a missing or null @key (milliseconds). */
static void cell_age(char *buf, struct json_object *o, const char *key)
{
	struct json_object *v = field(o, key);
	uint64_t ms, t;

	if (!v || !json_object_is_type(v, json_type_int)) {
		snprintf(buf, CELL_MAX, "-");
		return;
	}
	ms = json_object_get_uint64(v);
	t = ms / 1000;
	if (t < 60)
		snprintf(buf, CELL_MAX, "%.1fs", (double)ms / 1e3);
	else if (t < 3600)
		snprintf(buf, CELL_MAX, "%" PRIu64 "m%02" PRIu64 "s", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, CELL_MAX, "%" PRIu64 "h%02" PRIu64 "m", t / 3600, t / 60 % 60);
	else
		snprintf(buf, CELL_MAX, "%" PRIu64 "d%02" PRIu64 "h", t / 86400, t / 3600 % 24);
}

/* "key  value" lines for every field of @o in its order, the values
 * aligned, numbers right-aligned. */
static void print_pairs(struct json_object *o, const char *indent)
{
	size_t w = 0, vw = 0;
	char v[CELL_MAX];

	json_object_object_foreach(o, key, val) {
		(void)val;
		if (strlen(key) > w)
			w = strlen(key);
		cell(v, o, key);
		if (strlen(v) > vw)
			vw = strlen(v);
	}
	json_object_object_foreach(o, key2, val2) {
		bool is_num = json_object_is_type(val2, json_type_int);

		cell(v, o, key2);
		printf("%s%-*s  %*s\n", indent, (int)w, key2, is_num ? (int)vw : 0, v);
	}
}

/* ------------------------------------------------------------------ */
/* Human views                                                          */
/* ------------------------------------------------------------------ */

static void show_status(struct json_object *o)
{
	char a[CELL_MAX], b[CELL_MAX];

	cell(a, o, "node");
	cell(b, o, "node_id");
	printf("node         %s (%s)\n", a, b);
	cell(a, o, "incarnation");
	printf("incarnation  %s\n", a);
	cell(a, o, "version");
	printf("version      %s\n", a);
	cell(a, o, "pid");
	printf("pid          %s\n", a);
	fmt_duration(a, sizeof(a), json_object_get_double(field(o, "uptime_s")));
	printf("uptime       %s\n", a);
	cell(a, o, "transport");
	cell(b, o, "listen");
	printf("transport    %s%s%s\n", a, strcmp(b, "-") ? ", listening on " : " (single node)",
	       strcmp(b, "-") ? b : "");
	printf("clients      %" PRIu64 "\n", num(o, "clients"));
	printf("queues       %" PRIu64 "\n", num(o, "queues"));
	printf("links        %" PRIu64 " (%" PRIu64 " up)\n", num(o, "links"),
	       num(o, "links_up"));
	cell(a, o, "log_level");
	printf("log level    %s\n", a);
	if (field(o, "loop"))
		printf("loop         longest iteration %" PRIu64 " ms, %" PRIu64
		       " stalls (longest %" PRIu64 " ms), longest watchdog gap %" PRIu64 " ms\n",
		       num(field(o, "loop"), "iteration_max_ms"), num(field(o, "loop"), "stalls"),
		       num(field(o, "loop"), "stall_max_ms"),
		       num(field(o, "loop"), "watchdog_gap_max_ms"));
	if (field(o, "memory")) {
		struct json_object *m = field(o, "memory");
		char rss[32], arena[32], unexp[32], limit[32], of[40] = "", bufs[32];

		fmt_bytes(rss, sizeof(rss), num(m, "rss_bytes"));
		fmt_bytes(arena, sizeof(arena), num(m, "arena_bytes"));
		fmt_bytes(unexp, sizeof(unexp), num(m, "unexpected_bytes"));
		/* An older daemon does not report the daemon-wide bound. */
		if (field(m, "unexpected_limit_bytes")) {
			fmt_bytes(limit, sizeof(limit), num(m, "unexpected_limit_bytes"));
			snprintf(of, sizeof(of), " of %s", limit);
		}
		fmt_bytes(bufs, sizeof(bufs), num(m, "link_buffer_bytes"));
		printf("memory       RSS %s, arenas %s, unexpected %s%s, link buffers %s\n", rss,
		       arena, unexp, of, bufs);
	}
}

/* Rows of the objects of array @arr: column k from @keys[k] (cell()). */
static void table_rows(struct table *t, struct json_object *arr, const char *const *keys)
{
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	unsigned k;

	for (i = 0; i < n; i++) {
		char (*row)[CELL_MAX] = table_row(t);

		if (!row)
			break;
		for (k = 0; k < t->ncols; k++)
			cell(row[k], json_object_array_get_idx(arr, i), keys[k]);
	}
}

static void show_clients(struct json_object *o)
{
	static const char *const head[] = { "PID", "UID", "GID", "QUEUES", "ARENA_BYTES",
					    "IN_FLIGHT" };
	static const char *const keys[] = { "pid", "uid", "gid", "queue_count", "arena_bytes",
					    "in_flight" };
	static const bool right[] = { true, true, true, true, true, true };
	struct json_object *arr = field(o, "clients");
	struct table t;

	if (!arr || json_object_array_length(arr) == 0) {
		printf("no clients connected\n");
		return;
	}
	table_init(&t, head, right, 6);
	table_rows(&t, arr, keys);
	table_print(&t);
}

static void show_uids(struct json_object *o)
{
	static const char *const head[] = { "UID", "CONTEXTS", "QUEUES", "ARENA_BYTES",
					    "IN_FLIGHT" };
	static const bool right[] = { true, true, true, true, true };
	static const char *const keys[] = { "uid", "contexts", "queues", "arena_bytes",
					    "in_flight" };
	struct json_object *arr = field(o, "uids"), *lim = field(o, "limits");
	struct table t;
	size_t i, j, n = arr ? json_object_array_length(arr) : 0;
	char (*row)[CELL_MAX];

	table_init(&t, head, right, 5);
	for (i = 0; i < n; i++) {
		row = table_row(&t);
		if (!row)
			break;
		for (j = 0; j < 5; j++)
			cell(row[j], json_object_array_get_idx(arr, i), keys[j]);
	}
	row = lim ? table_row(&t) : NULL;
	if (row) {
		snprintf(row[0], CELL_MAX, "(limit)");
		for (j = 1; j < 5; j++)
			cell(row[j], lim, keys[j]);
	}
	table_print(&t);
}

static void show_queues(struct json_object *o)
{
	static const char *const head[] = { "ID", "PORT", "PID", "SQ", "CQ", "IN_FLIGHT",
					    "POSTED", "UNEXPECTED", "CLAIMED", "UNEXP_BYTES",
					    "MSGS_TX", "BYTES_TX", "MSGS_RX", "BYTES_RX", "NAKS" };
	static const bool right[] = { true, true, true, true, true, true, true, true,
				      true, true, true, true, true, true, true };
	struct json_object *arr = field(o, "queues");
	struct table t;
	size_t i, n = arr ? json_object_array_length(arr) : 0;

	if (n == 0) {
		printf("no queues open\n");
		return;
	}
	table_init(&t, head, right, 15);
	for (i = 0; i < n; i++) {
		struct json_object *q = json_object_array_get_idx(arr, i);
		char (*row)[CELL_MAX] = table_row(&t);

		if (!row)
			break;
		cell(row[0], q, "id");
		cell(row[1], q, "port");
		cell(row[2], q, "pid");
		snprintf(row[3], CELL_MAX, "%" PRIu64 "/%" PRIu64, num(q, "sq_used"),
			 num(q, "sq_depth"));
		snprintf(row[4], CELL_MAX, "%" PRIu64 "/%" PRIu64, num(q, "cq_used"),
			 num(q, "cq_depth"));
		cell(row[5], q, "in_flight");
		cell(row[6], q, "posted_recvs");
		cell(row[7], q, "unexpected");
		cell(row[8], q, "claimed");
		fmt_bytes(row[9], CELL_MAX, num(q, "unexpected_bytes"));
		cell(row[10], q, "msgs_tx");
		cell(row[11], q, "bytes_tx");
		cell(row[12], q, "msgs_rx");
		cell(row[13], q, "bytes_rx");
		cell(row[14], q, "naks");
	}
	table_print(&t);
}

static void show_links(struct json_object *o)
{
	static const char *const head[] = { "PEER", "ADDRESS", "STATE", "SINCE", "HEARD",
					    "AUTH", "MSGS_TX", "BYTES_TX", "MSGS_RX", "BYTES_RX",
					    "NAKS_TX", "NAKS_RX", "TX_SEQ", "ACKED", "RX_SEQ",
					    "CREDITS", "BACKLOG", "UNACKED", "RETRANS", "CONNECTS",
					    "SILENCES", "BACKOFF", "GAP_TX_MS", "GAP_RX_MS",
					    "LAST_ERROR" };
	static const bool right[] = { false, false, false, true, true, false, true, true, true,
				      true, true, true, true, true, true, true, true, true,
				      true, true, true, true, true, true, false };
	static const char *const keys[] = { "peer", "address", "state", "state_for_ms",
					    "heard_ago_ms", "auth", "msgs_tx", "bytes_tx",
					    "msgs_rx", "bytes_rx", "naks_tx", "naks_rx", "tx_seq",
					    "acked", "rx_seq", "credits", "backlog", "unacked",
					    "retransmits", "connects", "silences", "ack_backoff",
					    "tx_gap_max_ms", "rx_gap_max_ms", "last_error" };
	struct json_object *arr = field(o, "links");
	struct table t;
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	unsigned k;

	if (n == 0) {
		printf("no links (single node)\n");
		return;
	}
	table_init(&t, head, right, 25);
	for (i = 0; i < n; i++) {
		struct json_object *l = json_object_array_get_idx(arr, i);
		char (*row)[CELL_MAX] = table_row(&t);

		if (!row)
			break;
		for (k = 0; k < 25; k++) {
			if (k == 3 || k == 4)
				cell_age(row[k], l, keys[k]);
			else
				cell(row[k], l, keys[k]);
		}
	}
	table_print(&t);
}

static void show_memory(struct json_object *o)
{
	static const char *const chead[] = { "PID", "QUEUES", "ARENA_BYTES", "MAPPED_BYTES",
					     "UNEXP_BYTES" };
	static const char *const ckeys[] = { "pid", "queue_count", "arena_bytes",
					     "mapped_bytes", "unexpected_bytes" };
	static const char *const qhead[] = { "ID", "PID", "ARENA_BYTES", "MAPPED_BYTES",
					     "UNEXP_BYTES" };
	static const char *const qkeys[] = { "id", "pid", "arena_bytes", "mapped_bytes",
					     "unexpected_bytes" };
	static const char *const lhead[] = { "PEER", "XPORT_TX", "XPORT_RX", "RETRANS_FRAMES",
					     "RETRANS_BYTES" };
	static const char *const lkeys[] = { "peer", "xport_tx_bytes", "xport_rx_bytes",
					     "retransmit_frames", "retransmit_bytes" };
	static const bool right[] = { true, true, true, true, true };
	static const bool lright[] = { false, true, true, true, true };
	static const struct {
		const char *label, *key;
	} lines[] = {
		{ "RSS", "rss_bytes" },
		{ "arenas", "arena_bytes" },
		{ "segments", "mapped_bytes" },
		{ "unexpected", "unexpected_bytes" },
		{ "  limit", "unexpected_limit_bytes" },
		{ "link buffers", "link_buffer_bytes" },
		{ "retransmit", "retransmit_bytes" },
	};
	struct json_object *tot = field(o, "totals");
	struct table t;
	char a[CELL_MAX];
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		if (!field(tot, lines[i].key))
			continue;	/* an older daemon's reply */
		fmt_bytes(a, sizeof(a), num(tot, lines[i].key));
		printf("%-12s  %10s  (%" PRIu64 " bytes)\n", lines[i].label, a,
		       num(tot, lines[i].key));
	}
	if (field(o, "clients") && json_object_array_length(field(o, "clients"))) {
		printf("\n");
		table_init(&t, chead, right, 5);
		table_rows(&t, field(o, "clients"), ckeys);
		table_print(&t);
	}
	if (field(o, "queues") && json_object_array_length(field(o, "queues"))) {
		printf("\n");
		table_init(&t, qhead, right, 5);
		table_rows(&t, field(o, "queues"), qkeys);
		table_print(&t);
	}
	if (field(o, "links") && json_object_array_length(field(o, "links"))) {
		printf("\n");
		table_init(&t, lhead, lright, 5);
		table_rows(&t, field(o, "links"), lkeys);
		table_print(&t);
	}
}

/* --watch: the rates ctl_rates_add() put in the elements of @o, as a
 * table after the view; nothing before there are two replies. */
static void show_rates(const char *cmd, struct json_object *o, double interval_s)
{
	const char *const *keys = ctl_rates_keys(cmd);
	struct json_object *arr = field(o, cmd);
	const char *head[TABLE_COLS_MAX];
	bool right[TABLE_COLS_MAX];
	char names[TABLE_COLS_MAX][40];
	size_t i, n = arr ? json_object_array_length(arr) : 0;
	unsigned k, ncols = 1;
	struct table t;

	if (!keys || !(interval_s > 0))
		return;
	head[0] = strcmp(cmd, "links") ? "ID" : "PEER";
	right[0] = false;
	for (k = 0; keys[k] && ncols < TABLE_COLS_MAX; k++, ncols++) {
		size_t j;

		snprintf(names[k], sizeof(names[k]), "%s/S", keys[k]);
		for (j = 0; names[k][j]; j++)
			if (names[k][j] >= 'a' && names[k][j] <= 'z')
				names[k][j] = (char)(names[k][j] - 'a' + 'A');
		head[ncols] = names[k];
		right[ncols] = true;
	}
	printf("\nper second over the last %.2f s:\n", interval_s);
	table_init(&t, head, right, ncols);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct json_object *r = field(e, "rates");
		char (*row)[CELL_MAX];

		if (!r)
			continue;
		row = table_row(&t);
		if (!row)
			break;
		cell(row[0], e, strcmp(cmd, "links") ? "id" : "peer");
		for (k = 1; k < ncols; k++) {
			char key[48];

			snprintf(key, sizeof(key), "%s_per_s", keys[k - 1]);
			snprintf(row[k], CELL_MAX, "%.1f", json_object_get_double(field(r, key)));
		}
	}
	table_print(&t);
}

static void show_rcache(struct json_object *o)
{
	char a[CELL_MAX];

	printf("regions    %" PRIu64 "\n", num(o, "regions"));
	fmt_bytes(a, sizeof(a), num(o, "bytes"));
	printf("bytes      %s\n", a);
	printf("waiting    %" PRIu64 "\n", num(o, "waiting"));
	printf("\n");
	{
		static const char *const head[] = { "HITS", "MISSES", "EVICTIONS", "WAITS",
						    "NAKS", "TIMEOUTS", "CANCELS",
						    "REG_FAILS", "REGS", "DEREGS" };
		static const char *const keys[] = { "hits", "misses", "evictions", "waits",
						    "naks", "timeouts", "cancels",
						    "reg_fails", "regs", "deregs" };
		static const bool right[] = { true, true, true, true, true, true, true, true,
					      true, true };
		struct table t;
		char (*row)[CELL_MAX];
		unsigned k;

		table_init(&t, head, right, 10);
		row = table_row(&t);
		for (k = 0; row && k < 10; k++)
			cell(row[k], o, keys[k]);
		table_print(&t);
	}
}

static void show_counters(struct json_object *o)
{
	static const char *const sections[] = { "daemon", "completions", "xport" };
	unsigned i;

	for (i = 0; i < 3; i++) {
		struct json_object *s = field(o, sections[i]);

		if (!s)
			continue;
		printf("%s%s:\n", i ? "\n" : "", sections[i]);
		print_pairs(s, "  ");
	}
}

static const struct {
	const char *name;
	void (*show)(struct json_object *o);
} views[] = {
	{ "status", show_status },
	{ "clients", show_clients },
	{ "uids", show_uids },
	{ "queues", show_queues },
	{ "links", show_links },
	{ "rcache", show_rcache },
	{ "counters", show_counters },
	{ "memory", show_memory },
};

static void show(const char *cmd, struct json_object *o, bool json)
{
	size_t i;

	if (!json) {
		for (i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
			if (!strcmp(cmd, views[i].name)) {
				views[i].show(o);
				return;
			}
		}
	}
	/* --json */
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* ------------------------------------------------------------------ */
/* main                                                                 */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Sleep @s seconds unless interrupted; returns false when interrupted. */
static bool watch_sleep(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (!interrupted && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return !interrupted;
}

/*
 * The commands that take a WHICH: the reply's array it selects from, the
 * field it names, and whether that is a number.  `links b` shows link b
 * only: the filtering is here, the daemon answers the whole command.
 */
static const struct {
	const char *cmd, *array, *key, *what;
	bool numeric;
} filters[] = {
	{ "links", "links", "peer", "link to a peer named", false },
	{ "queues", "queues", "id", "queue with id", true },
	{ "clients", "clients", "pid", "client with pid", true },
};

static int filter_index(const char *cmd)
{
	size_t i;

	for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		if (!strcmp(cmd, filters[i].cmd))
			return (int)i;
	return -1;
}

/* A WHICH for a numeric filter: decimal digits, at most 20. */
static bool decimal(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 20)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Keep only the elements of @o's array that @which names.  Returns
 * EXIT_OK, or EXIT_NO_MATCH with the message printed when none does
 * (sluicectl(8): exit 5), or EXIT_ERROR
 * when out of memory. */
static int filter_reply(const char *cmd, const char *which, struct json_object *o)
{
	int fi = filter_index(cmd);
	struct json_object *arr, *kept;
	size_t i, n;

	if (fi < 0 || !which)
		return EXIT_OK;
	arr = field(o, filters[fi].array);
	n = arr ? json_object_array_length(arr) : 0;
	kept = json_object_new_array();
	if (!kept) {
		fprintf(stderr, "sluicectl: out of memory\n");
		return EXIT_ERROR;
	}
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		const char *v = json_object_get_string(field(e, filters[fi].key));

		if (v && !strcmp(v, which) &&
		    json_object_array_add(kept, json_object_get(e)) < 0) {
			json_object_put(e);
			json_object_put(kept);
			fprintf(stderr, "sluicectl: out of memory\n");
			return EXIT_ERROR;
		}
	}
	if (json_object_array_length(kept) == 0) {
		fprintf(stderr, "sluicectl: no %s %s", filters[fi].what, which);
		if (!strcmp(cmd, "links")) {
			/* Say which there are: a typo is the likely cause. */
			fprintf(stderr, n ? " (peers:" : " (no peers configured)");
			for (i = 0; i < n; i++)
				fprintf(stderr, " %s", json_object_get_string(
					field(json_object_array_get_idx(arr, i), "peer")));
			fprintf(stderr, n ? ")" : "");
		}
		fprintf(stderr, "\n");
		json_object_put(kept);
		return EXIT_NO_MATCH;
	}
	if (json_object_object_add(o, filters[fi].array, kept) < 0) {
		json_object_put(kept);
		fprintf(stderr, "sluicectl: out of memory\n");
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

/* Seconds on CLOCK_MONOTONIC, for the rates' intervals. */
static double mono_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --watch: when this reply was read ("2026-12-01T07:30:05.123Z", and
 * local time for people), and the interval its rates cover (0: none). */
struct refresh {
	char utc[64];
	char local[64];
	double interval_s;
};

static void refresh_stamp(struct refresh *r, double interval_s)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	r->utc[0] = r->local[0] = '\0';
	r->interval_s = interval_s;
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return;
	if (gmtime_r(&ts.tv_sec, &tm) && strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(r->utc, sizeof(r->utc), "%s.%03ldZ", base, ts.tv_nsec / 1000000);
	if (localtime_r(&ts.tv_sec, &tm))
		strftime(r->local, sizeof(r->local), "%Y-%m-%d %H:%M:%S %Z", &tm);
}

/* --watch --json: the refresh's time and interval in the reply. */
static int add_watch_json(struct json_object *o, const struct refresh *r)
{
	struct json_object *w = json_object_new_object();
	bool ok = w != NULL;

	if (ok)
		ok = json_object_object_add(w, "time", json_object_new_string(r->utc)) == 0;
	if (ok && r->interval_s > 0)
		ok = json_object_object_add(w, "interval_s",
					    json_object_new_double(r->interval_s)) == 0;
	if (ok)
		ok = json_object_object_add(o, "watch", w) == 0;
	else
		json_object_put(w);
	if (!ok) {
		fprintf(stderr, "sluicectl: out of memory\n");
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

/* One of the commands this sluicectl has a view for (sluicectl(8): any
 * other word is a usage error, exit 2, not a question for the daemon). */
static bool known_command(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(views) / sizeof(views[0]); i++)
		if (!strcmp(s, views[i].name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "watch", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *socket_opt = NULL, *rundir = NULL, *cmd, *env, *output = NULL;
	const char *format = NULL;
	int metrics = -1;	/* enum metrics_format, or -1: text or json */
	const char *which = NULL;
	struct json_object *prev = NULL;
	double prev_at = 0;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
	double watch = 0;
	bool json = false, tty;
	int opt, rc;

	tool_name = "sluicectl";
	while ((opt = getopt_long(argc, argv, "s:r:jf:o:w:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			socket_opt = optarg;
			break;
		case 'r':
			rundir = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'f':
			format = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'w': {
			char *end;

			errno = 0;
			watch = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(watch > 0) || watch > WATCH_MAX_S)
				bad_usage("--watch: a number of seconds, more than 0 and at "
					  "most %.0f", WATCH_MAX_S);
			break;
		}
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("sluicectl %s\n", PACKAGE_VERSION);
			return EXIT_OK;
		default:
			return try_help();
		}
	}
	if (optind == argc)
		bad_usage("a COMMAND is needed: status, clients, uids, queues, links, memory, "
			  "rcache or counters");
	cmd = argv[optind];
	if (!known_command(cmd))
		bad_usage("COMMAND: status, clients, uids, queues, links, memory, rcache or "
			  "counters, not '%s'", cmd);
	if (optind + 1 < argc) {
		int fi = filter_index(cmd);

		if (fi < 0 || optind + 2 < argc)
			bad_usage("one COMMAND only (unexpected '%s'); links, queues and clients "
				  "take one PEER, ID or PID", argv[fi < 0 ? optind + 1 : optind + 2]);
		which = argv[optind + 1];
		if (filters[fi].numeric && !decimal(which))
			bad_usage("%s %s: a number, not '%s'", cmd,
				  strcmp(cmd, "queues") ? "PID" : "ID", which);
	}
	if (socket_opt && rundir)
		bad_usage("--socket and --runtime-dir both name the socket: give one");
	if (format && !strcmp(format, "openmetrics"))
		metrics = METRICS_OPENMETRICS;
	else if (format && !strcmp(format, "prometheus"))
		metrics = METRICS_PROMETHEUS;
	else if (format && strcmp(format, "text") && strcmp(format, "json"))
		bad_usage("--format: text, json, openmetrics or prometheus, not '%s'", format);
	if (format && json && strcmp(format, "json"))
		bad_usage("--json and --format %s: give one", format);
	json = json || (format && !strcmp(format, "json"));
	if (metrics >= 0 && strcmp(cmd, "counters"))
		bad_usage("--format %s goes with the counters command", format);
	if (metrics >= 0 && watch > 0)
		bad_usage("--format %s and --watch: a scraper or a timer asks at its own "
			  "interval (sluicectl(8), METRICS)", format);
	if (output && metrics < 0)
		bad_usage("--output goes with --format openmetrics or prometheus");
	if (output && !*output)
		bad_usage("--output: an empty file name");
	if (socket_opt)
		rc = snprintf(path, sizeof(path), "%s", socket_opt);
	else if (rundir)
		rc = snprintf(path, sizeof(path), "%s/%s", rundir, ADMIN_SOCKET_NAME);
	else if ((env = getenv("SLUICE_RUNTIME_DIR")) && *env)
		rc = snprintf(path, sizeof(path), "%s/%s", env, ADMIN_SOCKET_NAME);
	else
		rc = snprintf(path, sizeof(path), "%s/%s", DEFAULT_RUNTIME_DIR,
			      ADMIN_SOCKET_NAME);
	if (rc < 0 || (size_t)rc >= sizeof(((struct sockaddr_un *)0)->sun_path))
		bad_usage("socket path too long for a UNIX socket");

	if (metrics >= 0) {
		rc = metrics_export(path, (enum metrics_format)metrics, output, query);
		return rc < 0 ? EXIT_ERROR : rc;
	}
	if (watch > 0) {
		struct sigaction sa = { .sa_handler = on_signal };

		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) {
			fprintf(stderr, "sluicectl: sigaction: %s\n", strerror(errno));
			return EXIT_ERROR;
		}
	}
	tty = isatty(STDOUT_FILENO);
	for (;;) {
		struct json_object *o = NULL;
		struct refresh r;
		double at;

		rc = query(path, cmd, &o);
		if (rc == EXIT_OK)
			rc = filter_reply(cmd, which, o);
		if (rc != EXIT_OK) {
			json_object_put(o);
			json_object_put(prev);
			return rc;
		}
		at = mono_now();
		if (watch > 0) {
			/* Rates over the real time between the two replies. */
			refresh_stamp(&r, prev && at > prev_at && prev_at > 0 ? at - prev_at : 0);
			if (r.interval_s > 0 && ctl_rates_add(cmd, prev, o, r.interval_s) < 0)
				fprintf(stderr, "sluicectl: out of memory: rates missing\n");
			if (json && add_watch_json(o, &r) != EXIT_OK) {
				json_object_put(o);
				json_object_put(prev);
				return EXIT_ERROR;
			}
			/* Clear the screen and home the cursor, as watch(1). */
			if (tty && !json)
				printf("\033[H\033[2J");
			if (!json)
				printf("Every %gs: sluicectl %s%s%s    %s\n\n", watch, cmd,
				       which ? " " : "", which ? which : "", r.local);
		}
		show(cmd, o, json);
		if (watch > 0 && !json)
			show_rates(cmd, o, r.interval_s);
		json_object_put(prev);
		prev = o;
		prev_at = at;
		if (fflush(stdout) != 0 || ferror(stdout)) {
			fprintf(stderr, "sluicectl: stdout: %s\n", strerror(errno));
			json_object_put(prev);
			return EXIT_ERROR;
		}
		if (watch <= 0 || !watch_sleep(watch))
			break;
		if (!tty || json)
			printf("\n");
	}
	json_object_put(prev);
	return EXIT_OK;
}
