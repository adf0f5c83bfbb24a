/*
 * config.c - sluiced.conf: defaults, INI parsing (inih), validation;
 * see config.h.
 *
 * inih's handler gets no line number in Debian's build (INI_HANDLER_LINENO
 * is 0), so the file is fed to ini_parse_stream() through our own line
 * reader, which counts lines.  inih calls the reader once per line and the
 * handler for that line before reading the next, so the reader's count is
 * the handler's line.  The reader also sees what the handler never does:
 * section headers (an empty unknown section must still be reported),
 * indented lines and overlong lines.  After the first error the reader
 * reports end of file, so inih stops and later lines cannot add errors.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "log.h"
#include "sl_wire.h"
#include "sluice.h"

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

#define EAGER_MAX_MAX    (1 * MIB)
#define ARENA_MIN        (1 * MIB)
#define ARENA_MAX        (16 * GIB)
#define MAX_QUEUES_MAX   65536
#define UNEXP_MIN        (64 * KIB)
#define UNEXP_MAX        (64 * GIB)
#define SQ_DEPTH_MIN     4
#define SQ_DEPTH_MAX     65536
#define MAX_MR_MAX       1048576
#define CHUNK_MIN        (4 * KIB)
#define CHUNK_MAX        (1 * GIB)
#define RC_REGIONS_MAX   1048576
#define RC_BYTES_MAX     (1024 * GIB)	/* 1 TiB */
#define RC_WAITERS_MAX   1048576
#define RC_WAIT_MS_MAX   3600000	/* one hour */
#define F_ENOMEM_MAX     1000000
#define F_REG_MAX        4294967295ull
#define F_DELAY_US_MAX   10000000	/* ten seconds */
#define SOCKBUF_MIN      (1 * KIB)
#define SOCKBUF_MAX      (64 * MIB)
#define ALLOWED_SOCKBUF  "0, or 1K..64M bytes"
#define CREDITS_MAX      SL_WIRE_CREDITS_MAX	/* the HELLO carries it */
#define BACKLOG_MAX      1048576
#define CLIENT_ARENA_MAX (1024 * GIB)	/* 1 TiB */
#define CLIENT_INFLIGHT_MAX 16777216
#define UID_ARENA_MAX    (1024ull * 1024 * GIB)	/* 1 PiB */
#define PEER_TIMEOUT_MAX 86400000	/* one day */
#define ACK_TIMEOUT_MAX  3600000	/* one hour */
#define REDIAL_MAX       3600000	/* one hour */
#define DRAIN_MAX        600000	/* ten minutes */
#define F_CUT_MAX        4294967295ull
#define F_SHIFT_MAX      1073741824	/* 1 GiB either way */

#define ALLOWED_SECTIONS "daemon, transport, limits, rcache, fault, security, peers, ports"
#define ALLOWED_NAME     "1..63 characters from A-Z a-z 0-9 . _ -"
#define ALLOWED_HOSTPORT "HOST:PORT or [IPV6]:PORT with port 1..65535"
#define ALLOWED_BYTES    "digits with an optional K, M or G suffix"
#define ALLOWED_CHUNK    "4K..1G bytes, a power of two"
#define ALLOWED_DEVICE   "1..63 characters from A-Z a-z 0-9 . _ -"

/* Copy with truncation; always NUL-terminates (size > 0). */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int config_defaults(struct config *c)
{
	char host[256];

	memset(c, 0, sizeof(*c));
	if (gethostname(host, sizeof(host)) < 0)
		return -errno;
	/* POSIX leaves a truncated hostname possibly unterminated. */
	host[sizeof(host) - 1] = '\0';
	copy_str(c->node_name, sizeof(c->node_name), host[0] ? host : "localhost");
	c->node_id = sl_node_id(c->node_name);
	copy_str(c->runtime_dir, sizeof(c->runtime_dir), "/run/sluice");
	c->log_level = LOG_LVL_INFO;
	c->client_group[0] = '\0';	/* the daemon's own group */
	c->admin_group[0] = '\0';	/* root and the daemon's user only */
	c->shutdown_drain_ms = 5000;
	c->transport = XPORT_TCP;
	c->device[0] = '\0';	/* the first device with an active port */
	c->listen_set = false;
	c->eager_max = 64 * KIB;
	c->arena_bytes = 64 * MIB;
	c->max_queues = 1024;
	c->unexpected_max_bytes = 64 * MIB;
	c->sq_depth = 1024;
	c->max_mr = 65536;
	c->eager_credits = 256;
	c->peer_timeout_ms = 30000;
	c->ack_timeout_ms = 2000;
	c->redial_min_ms = 50;
	c->redial_max_ms = 2000;
	c->link_backlog_max = 4096;
	c->client_max_queues = 256;
	c->client_max_arena_bytes = 64 * GIB;
	c->client_max_inflight = 65536;
	c->rcache_chunk_bytes = 2 * MIB;
	c->rcache_max_regions = 1024;
	c->rcache_max_bytes = 4 * GIB;
	c->rcache_max_waiters = 1024;
	c->rcache_max_wait_ms = 1000;
	c->fault_post_enomem_every = 0;
	c->fault_reg_fail_after = CONFIG_FAULT_OFF;
	c->fault_delay_completions_us = 0;
	c->fault_cut_after_frames = 0;
	c->fault_cut_every_frames = 0;
	c->fault_write_shift_bytes = 0;
	c->fault_write_replay = 0;
	c->n_peers = 0;
	return 0;
}

bool config_faults_on(const struct config *c)
{
	return c->fault_post_enomem_every != 0 ||
	       c->fault_reg_fail_after != CONFIG_FAULT_OFF ||
	       c->fault_delay_completions_us != 0 ||
	       c->fault_cut_after_frames != 0 ||
	       c->fault_cut_every_frames != 0 ||
	       c->fault_write_shift_bytes != 0 ||
	       c->fault_write_replay != 0;
}

/* ------------------------------------------------------------------ */
/* Value parsers                                                        */
/* ------------------------------------------------------------------ */

/*
 * Syntax is checked before range, so "99999999999999999999Q" is -EINVAL;
 * a well-formed number too large for 64 bits is -ERANGE like any other
 * out-of-range value.
 */
static int parse_u64(const char *s, bool suffix, uint64_t min, uint64_t max,
		     uint64_t *out)
{
	const char *p = s;
	uint64_t v = 0, mult = 1;
	bool overflow = false;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	if (suffix && *p) {
		switch (*p) {
		case 'k': case 'K': mult = KIB; break;
		case 'm': case 'M': mult = MIB; break;
		case 'g': case 'G': mult = GIB; break;
		default: return -EINVAL;
		}
		p++;
	}
	if (*p)
		return -EINVAL;
	if (overflow || v > UINT64_MAX / mult)
		return -ERANGE;
	v *= mult;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int config_parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse_u64(s, true, min, max, out);
}

static bool host_char_ok(char ch)
{
	unsigned char u = (unsigned char)ch;

	return !isspace(u) && !iscntrl(u) && ch != '[' && ch != ']';
}

/* config_parse_hostport() with a reason phrase for the error message. */
static int parse_hostport(const char *s, char *host, size_t hostlen,
			  uint16_t *port, const char **why)
{
	const char *h, *h_end, *p, *q;
	uint32_t v = 0;
	size_t n;

	*why = "is not HOST:PORT";
	if (!s || !host || hostlen == 0 || !port)
		return -EINVAL;
	if (*s == '\0') {
		*why = "is empty";
		return -EINVAL;
	}
	if (*s == '[') {
		h = s + 1;
		h_end = strchr(h, ']');
		if (!h_end) {
			*why = "has no closing ']'";
			return -EINVAL;
		}
		if (h_end[1] == '\0') {
			*why = "has no port";
			return -EINVAL;
		}
		if (h_end[1] != ':') {
			*why = "has junk after ']'";
			return -EINVAL;
		}
		p = h_end + 2;
	} else {
		h = s;
		h_end = strchr(s, ':');
		if (!h_end) {
			*why = "has no port";
			return -EINVAL;
		}
		if (strchr(h_end + 1, ':')) {
			*why = "needs [brackets] around an IPv6 address";
			return -EINVAL;
		}
		p = h_end + 1;
	}
	if (h_end == h) {
		*why = "has an empty host";
		return -EINVAL;
	}
	for (q = h; q < h_end; q++) {
		if (!host_char_ok(*q)) {
			*why = "has a bad character in the host";
			return -EINVAL;
		}
	}
	n = (size_t)(h_end - h);
	if (n >= hostlen) {
		*why = "has a host name that is too long";
		return -EINVAL;
	}
	if (*p == '\0') {
		*why = "has no port";
		return -EINVAL;
	}
	if (*p < '0' || *p > '9') {
		*why = "has a bad port";
		return -EINVAL;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v <= 65535)	/* saturate: any longer digit run is too big */
			v = v * 10 + (uint32_t)(*p - '0');
	}
	if (*p) {
		*why = "has junk after the port";
		return -EINVAL;
	}
	if (v == 0 || v > 65535) {
		*why = "has a port out of range";
		return -EINVAL;
	}
	memcpy(host, h, n);
	host[n] = '\0';
	*port = (uint16_t)v;
	return 0;
}

int config_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	const char *why;

	return parse_hostport(s, host, hostlen, port, &why);
}

bool config_name_valid(const char *name)
{
	size_t n = 0;

	if (!name)
		return false;
	for (; name[n]; n++) {
		char ch = name[n];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return false;
	}
	return n >= 1 && n < CONFIG_NAME_MAX;
}

/* ------------------------------------------------------------------ */
/* The file                                                             */
/* ------------------------------------------------------------------ */

enum key_id {
	K_NODE, K_RUNTIME_DIR, K_LOG_LEVEL, K_CLIENT_GROUP, K_ADMIN_GROUP, K_DRAIN,
	K_KIND, K_DEVICE, K_LISTEN, K_EAGER_MAX, K_SQ_DEPTH, K_MAX_MR, K_CREDITS, K_SOCKBUF,
	K_PEER_TIMEOUT, K_ACK_TIMEOUT, K_REDIAL_MIN, K_REDIAL_MAX,
	K_ARENA_BYTES, K_MAX_QUEUES, K_UNEXPECTED_MAX, K_BACKLOG_MAX,
	K_CLIENT_QUEUES, K_CLIENT_ARENA, K_CLIENT_INFLIGHT,
	K_UID_CONTEXTS, K_UID_QUEUES, K_UID_ARENA, K_UID_INFLIGHT,
	K_RC_CHUNK, K_RC_MAX_REGIONS, K_RC_MAX_BYTES, K_RC_MAX_WAITERS,
	K_RC_MAX_WAIT_MS,
	K_F_POST_ENOMEM, K_F_REG_FAIL, K_F_DELAY_COMPL,
	K_F_CUT_AFTER, K_F_CUT_EVERY, K_F_WRITE_SHIFT, K_F_WRITE_REPLAY,
	K_SEC_MODE, K_SEC_KEY, K_SEC_PREV_KEY,
	K_COUNT
};
_Static_assert(K_COUNT <= CONFIG_KEY_SLOTS, "struct config's key_line[] is too small");

/*
 * The one table of keys: the parser looks names up here, --print-config
 * and reload walk it (format_value() has a case for every key_id, so a
 * key added here without one does not compile under -Werror).  reload:
 * SIGHUP applies a new value at run time; every other key needs a restart.
 */
static const struct {
	const char *section;
	const char *name;
	bool reload;
} keys[K_COUNT] = {
	[K_NODE]        = { "daemon", "node" },
	[K_RUNTIME_DIR] = { "daemon", "runtime_dir" },
	[K_LOG_LEVEL]   = { "daemon", "log_level", true },
	[K_CLIENT_GROUP] = { "daemon", "client_group" },
	[K_ADMIN_GROUP] = { "daemon", "admin_group", true },
	[K_DRAIN]       = { "daemon", "shutdown_drain_ms", true },
	[K_KIND]        = { "transport", "kind" },
	[K_DEVICE]      = { "transport", "device" },
	[K_LISTEN]      = { "transport", "listen" },
	[K_EAGER_MAX]   = { "transport", "eager_max" },
	[K_SQ_DEPTH]    = { "transport", "sq_depth" },
	[K_MAX_MR]      = { "transport", "max_mr" },
	[K_CREDITS]     = { "transport", "eager_credits" },
	[K_SOCKBUF]     = { "transport", "socket_buffer" },
	[K_PEER_TIMEOUT] = { "transport", "peer_timeout_ms", true },
	[K_ACK_TIMEOUT] = { "transport", "ack_timeout_ms", true },
	[K_REDIAL_MIN]  = { "transport", "redial_min_ms", true },
	[K_REDIAL_MAX]  = { "transport", "redial_max_ms", true },
	[K_ARENA_BYTES] = { "limits", "arena_bytes" },
	[K_MAX_QUEUES]  = { "limits", "max_queues" },
	[K_UNEXPECTED_MAX] = { "limits", "unexpected_max_bytes", true },
	[K_BACKLOG_MAX]    = { "limits", "link_backlog_max", true },
	[K_CLIENT_QUEUES]  = { "limits", "client_max_queues" },
	[K_CLIENT_ARENA]   = { "limits", "client_max_arena_bytes" },
	[K_CLIENT_INFLIGHT] = { "limits", "client_max_inflight", true },
	[K_UID_CONTEXTS]   = { "limits", "uid_max_contexts" },
	[K_UID_QUEUES]     = { "limits", "uid_max_queues" },
	[K_UID_ARENA]      = { "limits", "uid_max_arena_bytes" },
	[K_UID_INFLIGHT]   = { "limits", "uid_max_inflight" },
	[K_RC_CHUNK]       = { "rcache", "chunk_bytes" },
	[K_RC_MAX_REGIONS] = { "rcache", "max_regions" },
	[K_RC_MAX_BYTES]   = { "rcache", "max_bytes" },
	[K_RC_MAX_WAITERS] = { "rcache", "max_waiters" },
	[K_RC_MAX_WAIT_MS] = { "rcache", "max_wait_ms" },
	[K_F_POST_ENOMEM]  = { "fault", "post_enomem_every" },
	[K_F_REG_FAIL]     = { "fault", "reg_fail_after" },
	[K_F_DELAY_COMPL]  = { "fault", "delay_completions_us" },
	[K_F_CUT_AFTER]    = { "fault", "cut_after_frames" },
	[K_F_CUT_EVERY]    = { "fault", "cut_every_frames" },
	[K_F_WRITE_SHIFT]  = { "fault", "write_shift_bytes" },
	[K_F_WRITE_REPLAY] = { "fault", "write_replay" },
	[K_SEC_MODE]       = { "security", "mode" },
	[K_SEC_KEY]        = { "security", "key_file", true },
	[K_SEC_PREV_KEY]   = { "security", "previous_key_file", true },
};

static const struct {
	const char *name;
	const char *allowed_keys;	/* NULL: any key (peer names) */
} sections[] = {
	{ "daemon", "node, runtime_dir, log_level, client_group, admin_group, shutdown_drain_ms" },
	{ "transport", "kind, device, listen, eager_max, sq_depth, max_mr, eager_credits, socket_buffer, "
		       "peer_timeout_ms, ack_timeout_ms, redial_min_ms, redial_max_ms" },
	{ "limits", "arena_bytes, max_queues, unexpected_max_bytes, link_backlog_max, "
		    "client_max_queues, client_max_arena_bytes, client_max_inflight, "
		    "uid_max_contexts, uid_max_queues, uid_max_arena_bytes, uid_max_inflight" },
	{ "rcache", "chunk_bytes, max_regions, max_bytes, max_waiters, max_wait_ms" },
	{ "fault", "post_enomem_every, reg_fail_after, delay_completions_us, "
		   "cut_after_frames, cut_every_frames, write_shift_bytes, write_replay" },
	{ "security", "mode, key_file, previous_key_file" },
	{ "peers", NULL },
	{ "ports", NULL },
};

struct parse_state {
	struct config *c;
	const char *path;
	FILE *f;
	char *err;
	size_t errlen;
	int lineno;		/* line last handed to inih */
	int err_line;		/* line of our first error; 0 = none yet */
	int err_code;		/* its return code */
	int read_errno;		/* errno of a failed read; 0 = none */
	int key_line[K_COUNT];	/* where each key was set; 0 = not yet */
};

static void put_err(char *err, size_t errlen, const char *path, int line,
		    const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

static void put_err(char *err, size_t errlen, const char *path, int line,
		    const char *fmt, va_list ap)
{
	int n;

	if (!err || errlen == 0)
		return;
	if (line > 0)
		n = snprintf(err, errlen, "%s:%d: ", path, line);
	else
		n = snprintf(err, errlen, "%s: ", path);
	if (n < 0 || (size_t)n >= errlen)
		return;
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
}

/* Record the first error of the parse; returns 0 for inih. */
static int fail(struct parse_state *st, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parse_state *st, int code, const char *fmt, ...)
{
	va_list ap;

	if (st->err_line)
		return 0;
	st->err_line = st->lineno;
	st->err_code = code;
	va_start(ap, fmt);
	put_err(st->err, st->errlen, st->path, st->lineno, fmt, ap);
	va_end(ap);
	return 0;
}

/* An error about the whole file (no line); returns @code. */
static int fail_file(const char *path, char *err, size_t errlen,
		     int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int fail_file(const char *path, char *err, size_t errlen,
		     int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_err(err, errlen, path, 0, fmt, ap);
	va_end(ap);
	return code;
}

static int set_bytes(struct parse_state *st, const char *sec, const char *name,
		     const char *value, uint64_t min, uint64_t max,
		     const char *range, uint64_t *out)
{
	int rc = parse_u64(value, true, min, max, out);

	if (rc == -ERANGE)
		return fail(st, -EINVAL, "[%s] %s: %s is out of range (allowed: %s)",
			    sec, name, value, range);
	if (rc < 0)
		return fail(st, -EINVAL, "[%s] %s: '%s' is not a byte count (allowed: %s)",
			    sec, name, value, ALLOWED_BYTES);
	return 1;
}

/* A plain number (no suffix) in [min, max]; the message gives the range. */
static int set_num(struct parse_state *st, const char *sec, const char *name,
		   const char *value, uint64_t min, uint64_t max, uint64_t *out)
{
	int rc = parse_u64(value, false, min, max, out);

	if (rc == -ERANGE)
		return fail(st, -EINVAL, "[%s] %s: %s is out of range (allowed: %llu..%llu)",
			    sec, name, value, (unsigned long long)min,
			    (unsigned long long)max);
	if (rc < 0)
		return fail(st, -EINVAL, "[%s] %s: '%s' is not a number (allowed: %llu..%llu)",
			    sec, name, value, (unsigned long long)min,
			    (unsigned long long)max);
	return 1;
}

/* A signed plain number in [-max, max] ("-8192"). */
static int set_signed32(struct parse_state *st, const char *sec, const char *name,
			const char *value, uint32_t max, int32_t *out)
{
	bool neg = value && value[0] == '-';
	uint64_t v;
	int rc = parse_u64(neg ? value + 1 : value, false, 0, max, &v);

	if (rc < 0)
		return fail(st, -EINVAL, "[%s] %s: '%s' is %s (allowed: -%u..%u)", sec, name,
			    value, rc == -ERANGE ? "out of range" : "not a number",
			    (unsigned)max, (unsigned)max);
	*out = neg ? -(int32_t)v : (int32_t)v;
	return 1;
}

/* set_num() into a uint32_t field (max must fit). */
static int set_num32(struct parse_state *st, const char *sec, const char *name,
		     const char *value, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int rc = set_num(st, sec, name, value, min, max, &v);

	if (rc)
		*out = (uint32_t)v;
	return rc;
}

static int set_peer(struct parse_state *st, const char *name, const char *value)
{
	struct config *c = st->c;
	struct peer_conf *pc;
	const char *why;

	if (!config_name_valid(name))
		return fail(st, -EINVAL, "[peers] %s: not a valid node name (allowed: %s)",
			    name, ALLOWED_NAME);
	if (c->n_peers >= CONFIG_PEERS_MAX)
		return fail(st, -EINVAL, "[peers] %s: too many peers (allowed: up to %d)",
			    name, CONFIG_PEERS_MAX);
	pc = &c->peers[c->n_peers];
	if (parse_hostport(value, pc->host, sizeof(pc->host), &pc->port, &why) < 0)
		return fail(st, -EINVAL, "[peers] %s: '%s' %s (allowed: %s)",
			    name, value, why, ALLOWED_HOSTPORT);
	copy_str(pc->name, sizeof(pc->name), name);
	pc->node_id = sl_node_id(pc->name);
	c->n_peers++;
	return 1;
}

static int set_value(struct parse_state *st, enum key_id k, const char *value)
{
	struct config *c = st->c;
	const char *sec = keys[k].section, *name = keys[k].name;
	const char *why;
	uint64_t v;
	int rc;

	switch (k) {
	case K_NODE:
		if (!config_name_valid(value))
			return fail(st, -EINVAL, "[%s] %s: '%s' is not a valid node name (allowed: %s)",
				    sec, name, value, ALLOWED_NAME);
		copy_str(c->node_name, sizeof(c->node_name), value);
		c->node_id = sl_node_id(c->node_name);
		return 1;
	case K_RUNTIME_DIR:
		if (value[0] != '/')
			return fail(st, -EINVAL, "[%s] %s: '%s' is not an absolute path (allowed: an absolute path of at most %d characters)",
				    sec, name, value, CONFIG_PATH_MAX - 1);
		if (strlen(value) >= CONFIG_PATH_MAX)
			return fail(st, -EINVAL, "[%s] %s: path is too long (allowed: an absolute path of at most %d characters)",
				    sec, name, CONFIG_PATH_MAX - 1);
		copy_str(c->runtime_dir, sizeof(c->runtime_dir), value);
		return 1;
	case K_LOG_LEVEL:
		rc = log_level_parse(value);
		if (rc < 0)
			return fail(st, -EINVAL, "[%s] %s: '%s' is not a log level (allowed: error, warn, info, debug)",
				    sec, name, value);
		c->log_level = rc;
		return 1;
	case K_CLIENT_GROUP:
	case K_ADMIN_GROUP:
		/* A name, not checked against the group database here: a
		 * reload or --check-config may run before the group exists. */
		if (value[0] && !config_name_valid(value))
			return fail(st, -EINVAL, "[%s] %s: '%s' is not a group name (allowed: %s, or empty)",
				    sec, name, value, ALLOWED_NAME);
		copy_str(k == K_CLIENT_GROUP ? c->client_group : c->admin_group,
			 CONFIG_NAME_MAX, value);
		return 1;
	case K_DRAIN:
		return set_num32(st, sec, name, value, 0, DRAIN_MAX, &c->shutdown_drain_ms);
	case K_KIND:
		if (strcmp(value, "tcp") == 0) {
			c->transport = XPORT_TCP;
			return 1;
		}
		if (strcmp(value, "verbs") == 0) {
			c->transport = XPORT_VERBS;
			return 1;
		}
		if (strcmp(value, "auto") == 0) {
			c->transport = XPORT_AUTO;
			return 1;
		}
		return fail(st, -EINVAL, "[%s] %s: '%s' is not a transport (allowed: tcp, verbs, auto)",
			    sec, name, value);
	case K_DEVICE:
		if (value[0] && !config_name_valid(value))
			return fail(st, -EINVAL, "[%s] %s: '%s' is not a device name (allowed: %s, or empty for the first device with an active port)",
				    sec, name, value, ALLOWED_DEVICE);
		copy_str(c->device, sizeof(c->device), value);
		return 1;
	case K_LISTEN:
		if (parse_hostport(value, c->listen_host, sizeof(c->listen_host),
				   &c->listen_port, &why) < 0)
			return fail(st, -EINVAL, "[%s] %s: '%s' %s (allowed: %s)",
				    sec, name, value, why, ALLOWED_HOSTPORT);
		c->listen_set = true;
		return 1;
	case K_EAGER_MAX:
		rc = set_bytes(st, sec, name, value, 0, EAGER_MAX_MAX, "0..1048576 bytes", &v);
		if (rc)
			c->eager_max = (uint32_t)v;
		return rc;
	case K_ARENA_BYTES:
		return set_bytes(st, sec, name, value, ARENA_MIN, ARENA_MAX, "1M..16G bytes",
				 &c->arena_bytes);
	case K_SQ_DEPTH:
		return set_num32(st, sec, name, value, SQ_DEPTH_MIN, SQ_DEPTH_MAX,
				 &c->sq_depth);
	case K_MAX_MR:
		return set_num32(st, sec, name, value, 1, MAX_MR_MAX, &c->max_mr);
	case K_MAX_QUEUES:
		return set_num32(st, sec, name, value, 1, MAX_QUEUES_MAX, &c->max_queues);
	case K_CREDITS:
		return set_num32(st, sec, name, value, 1, CREDITS_MAX, &c->eager_credits);
	case K_SOCKBUF:
		rc = set_bytes(st, sec, name, value, 0, SOCKBUF_MAX, ALLOWED_SOCKBUF, &v);
		if (!rc)
			return rc;
		if (v && v < SOCKBUF_MIN)
			return fail(st, -EINVAL, "[%s] %s: %s is out of range (allowed: %s)",
				    sec, name, value, ALLOWED_SOCKBUF);
		c->socket_buffer = (uint32_t)v;
		return 1;
	case K_PEER_TIMEOUT:
		return set_num32(st, sec, name, value, 1, PEER_TIMEOUT_MAX,
				 &c->peer_timeout_ms);
	case K_ACK_TIMEOUT:
		return set_num32(st, sec, name, value, 1, ACK_TIMEOUT_MAX,
				 &c->ack_timeout_ms);
	case K_REDIAL_MIN:
		return set_num32(st, sec, name, value, 1, REDIAL_MAX, &c->redial_min_ms);
	case K_REDIAL_MAX:
		return set_num32(st, sec, name, value, 1, REDIAL_MAX, &c->redial_max_ms);
	case K_BACKLOG_MAX:
		return set_num32(st, sec, name, value, 1, BACKLOG_MAX, &c->link_backlog_max);
	case K_CLIENT_QUEUES:
		return set_num32(st, sec, name, value, 1, MAX_QUEUES_MAX, &c->client_max_queues);
	case K_CLIENT_ARENA:
		return set_bytes(st, sec, name, value, ARENA_MIN, CLIENT_ARENA_MAX,
				 "1M..1024G bytes", &c->client_max_arena_bytes);
	case K_CLIENT_INFLIGHT:
		return set_num32(st, sec, name, value, 1, CLIENT_INFLIGHT_MAX,
				 &c->client_max_inflight);
	case K_UID_CONTEXTS:
		return set_num32(st, sec, name, value, 0, MAX_QUEUES_MAX, &c->uid_max_contexts);
	case K_UID_QUEUES:
		return set_num32(st, sec, name, value, 0, MAX_QUEUES_MAX, &c->uid_max_queues);
	case K_UID_ARENA:
		return set_bytes(st, sec, name, value, 0, UID_ARENA_MAX, "0..1024T bytes",
				 &c->uid_max_arena_bytes);
	case K_UID_INFLIGHT:
		return set_num32(st, sec, name, value, 0, CLIENT_INFLIGHT_MAX,
				 &c->uid_max_inflight);
	case K_UNEXPECTED_MAX:
		return set_bytes(st, sec, name, value, UNEXP_MIN, UNEXP_MAX, "64K..64G bytes",
				 &c->unexpected_max_bytes);
	case K_RC_CHUNK:
		rc = set_bytes(st, sec, name, value, CHUNK_MIN, CHUNK_MAX, ALLOWED_CHUNK, &v);
		if (!rc)
			return rc;
		if (v & (v - 1))
			return fail(st, -EINVAL, "[%s] %s: %s must be a power of two (allowed: %s)",
				    sec, name, value, ALLOWED_CHUNK);
		c->rcache_chunk_bytes = v;
		return 1;
	case K_RC_MAX_REGIONS:
		return set_num32(st, sec, name, value, 0, RC_REGIONS_MAX,
				 &c->rcache_max_regions);
	case K_RC_MAX_BYTES:
		return set_bytes(st, sec, name, value, 0, RC_BYTES_MAX, "0..1024G bytes",
				 &c->rcache_max_bytes);
	case K_RC_MAX_WAITERS:
		return set_num32(st, sec, name, value, 0, RC_WAITERS_MAX,
				 &c->rcache_max_waiters);
	case K_RC_MAX_WAIT_MS:
		return set_num32(st, sec, name, value, 0, RC_WAIT_MS_MAX,
				 &c->rcache_max_wait_ms);
	case K_F_POST_ENOMEM:
		return set_num32(st, sec, name, value, 0, F_ENOMEM_MAX,
				 &c->fault_post_enomem_every);
	case K_F_REG_FAIL:
		return set_num(st, sec, name, value, 0, F_REG_MAX, &c->fault_reg_fail_after);
	case K_F_DELAY_COMPL:
		return set_num32(st, sec, name, value, 0, F_DELAY_US_MAX,
				 &c->fault_delay_completions_us);
	case K_F_CUT_AFTER:
		return set_num(st, sec, name, value, 0, F_CUT_MAX, &c->fault_cut_after_frames);
	case K_F_CUT_EVERY:
		return set_num32(st, sec, name, value, 0, (uint32_t)F_CUT_MAX,
				 &c->fault_cut_every_frames);
	case K_SEC_MODE:
		for (int m = SECURITY_NONE; m <= SECURITY_ENCRYPT; m++)
			if (strcmp(value, config_security_mode_name(m)) == 0) {
				c->security_mode = m;
				return 1;
			}
		return fail(st, -EINVAL, "[%s] %s: '%s' is not a mode (allowed: none, authenticate, encrypt)",
			    sec, name, value);
	case K_SEC_KEY:
	case K_SEC_PREV_KEY:
		if (value[0] && value[0] != '/')
			return fail(st, -EINVAL, "[%s] %s: '%s' is not an absolute path (allowed: an absolute path of at most %d characters, or empty)",
				    sec, name, value, CONFIG_KEY_PATH_MAX - 1);
		if (strlen(value) >= CONFIG_KEY_PATH_MAX)
			return fail(st, -EINVAL, "[%s] %s: path is too long (allowed: an absolute path of at most %d characters)",
				    sec, name, CONFIG_KEY_PATH_MAX - 1);
		copy_str(k == K_SEC_KEY ? c->key_file : c->previous_key_file,
			 CONFIG_KEY_PATH_MAX, value);
		return 1;
	case K_F_WRITE_SHIFT:
		return set_signed32(st, sec, name, value, F_SHIFT_MAX,
				    &c->fault_write_shift_bytes);
	case K_F_WRITE_REPLAY:
		return set_num32(st, sec, name, value, 0, 1, &c->fault_write_replay);
	case K_COUNT:
		break;
	}
	return fail(st, -EINVAL, "[%s] %s: internal error", sec, name);
}

static int on_value(void *user, const char *section, const char *name,
		    const char *value)
{
	struct parse_state *st = user;
	size_t i;
	int k;

	if (st->err_line)
		return 0;
	if (section[0] == '\0')
		return fail(st, -EINVAL, "%s: key before any section (allowed: in [daemon], [transport], [limits], [rcache], [fault], [security], [peers] or [ports])",
			    name);
	if (strcmp(section, "peers") == 0)
		return set_peer(st, name, value);
	if (strcmp(section, "ports") == 0) {
		const char *why;

		if (ports_conf_add(&st->c->ports, name, value, &why))
			return fail(st, -EINVAL, "[ports] %s = %s: %s", name, value, why);
		return 1;
	}

	for (k = 0; k < K_COUNT; k++) {
		if (strcmp(keys[k].section, section) == 0 &&
		    strcmp(keys[k].name, name) == 0)
			break;
	}
	if (k == K_COUNT) {
		for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
			if (strcmp(sections[i].name, section) == 0)
				return fail(st, -EINVAL, "[%s] %s: unknown key (allowed: %s)",
					    section, name, sections[i].allowed_keys);
		}
		/* The reader rejects unknown sections before inih gets here. */
		return fail(st, -EINVAL, "[%s]: unknown section (allowed: %s)",
			    section, ALLOWED_SECTIONS);
	}
	if (st->key_line[k])
		return fail(st, -EINVAL, "[%s] %s: given twice (first on line %d)",
			    section, name, st->key_line[k]);
	st->key_line[k] = st->lineno;
	return set_value(st, (enum key_id)k, value);
}

/* Mirrors inih's rule: ';' starts an inline comment after whitespace. */
const char *config_security_mode_name(enum security_mode m)
{
	switch (m) {
	case SECURITY_NONE: return "none";
	case SECURITY_AUTHENTICATE: return "authenticate";
	case SECURITY_ENCRYPT: return "encrypt";
	}
	return "?";
}

static const char *find_close_bracket(const char *s)
{
	bool was_space = false;

	for (; *s && *s != ']'; s++) {
		if (was_space && *s == ';')
			return NULL;
		was_space = isspace((unsigned char)*s);
	}
	return *s == ']' ? s : NULL;
}

static void check_line(struct parse_state *st, const char *line)
{
	const char *p = line, *end, *q;
	size_t i, n;

	if (st->lineno == 1 && strncmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	q = p;
	while (*q && isspace((unsigned char)*q))
		q++;
	if (*q == '\0' || *q == ';' || *q == '#')
		return;
	/*
	 * inih reads an indented line after a key as a continuation of that
	 * key's value, whatever it looks like; refusing indentation outright
	 * is simpler to explain than where it would be allowed.
	 */
	if (q != p) {
		fail(st, -EINVAL, "line is indented (allowed: keys and [sections] start in the first column)");
		return;
	}
	if (*q != '[')
		return;
	end = find_close_bracket(q + 1);
	if (!end)
		return;		/* inih reports it as a syntax error */
	n = (size_t)(end - (q + 1));
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (strlen(sections[i].name) == n &&
		    strncmp(sections[i].name, q + 1, n) == 0)
			break;
	}
	if (i == sizeof(sections) / sizeof(sections[0])) {
		fail(st, -EINVAL, "[%.*s]: unknown section (allowed: %s)",
		     (int)n, q + 1, ALLOWED_SECTIONS);
		return;
	}
	for (q = end + 1; *q && isspace((unsigned char)*q); q++)
		;
	if (*q && *q != ';' && *q != '#')
		fail(st, -EINVAL, "[%s]: text after the section header (allowed: a ; comment)",
		     sections[i].name);
}

/*
 * The ini_reader: fgets() plus line counting.  A line that does not fit
 * inih's buffer is refused here, never handed over in pieces, so inih's
 * line count (one per reader call) stays equal to ours.
 */
static char *read_line(char *buf, int num, void *user)
{
	struct parse_state *st = user;
	size_t len;
	int ch;

	if (st->err_line || num < 2)
		return NULL;
	errno = 0;
	if (!fgets(buf, num, st->f)) {
		if (ferror(st->f))
			st->read_errno = errno ? errno : EIO;
		return NULL;
	}
	st->lineno++;
	len = strlen(buf);
	if (len == (size_t)num - 1 && buf[len - 1] != '\n') {
		ch = getc(st->f);
		if (ch != EOF) {
			fail(st, -EINVAL, "line is too long (allowed: up to %d characters)",
			     num - 3);
			return NULL;
		}
	}
	check_line(st, buf);
	return st->err_line ? NULL : buf;
}

/*
 * Keys that constrain each other, checked once the whole file is read:
 * the message names both and takes the line of the later key (of the one
 * given, if the other kept its value).  Returns 0 or -EINVAL.
 */
static int check_keys(struct parse_state *st)
{
	const struct config *c = st->c;
	int lmin = st->key_line[K_REDIAL_MIN], lmax = st->key_line[K_REDIAL_MAX];

	if (c->security_mode != SECURITY_NONE && !c->key_file[0]) {
		st->lineno = st->key_line[K_SEC_MODE];
		return fail(st, -EINVAL, "[security] mode: %s needs [security] key_file (sluiced --keygen FILE writes one)",
			    config_security_mode_name(c->security_mode)), -EINVAL;
	}
	if (c->security_mode == SECURITY_ENCRYPT && c->transport == XPORT_VERBS) {
		st->lineno = st->key_line[K_SEC_MODE];
		return fail(st, -EINVAL, "[security] mode: encrypt needs [transport] kind = tcp: "
			    CONFIG_ENCRYPT_VERBS_WHY), -EINVAL;
	}
	if (c->redial_min_ms <= c->redial_max_ms)
		return 0;
	if (!lmin && !lmax)
		return fail_file(st->path, st->err, st->errlen, -EINVAL,
				 "[transport] redial_min_ms %u is greater than redial_max_ms %u (allowed: redial_min_ms <= redial_max_ms)",
				 (unsigned)c->redial_min_ms, (unsigned)c->redial_max_ms);
	if (lmin > lmax) {
		st->lineno = lmin;
		fail(st, -EINVAL, "[transport] redial_min_ms: %u is greater than redial_max_ms %u (allowed: redial_min_ms <= redial_max_ms)",
		     (unsigned)c->redial_min_ms, (unsigned)c->redial_max_ms);
	} else {
		st->lineno = lmax;
		fail(st, -EINVAL, "[transport] redial_max_ms: %u is less than redial_min_ms %u (allowed: redial_min_ms <= redial_max_ms)",
		     (unsigned)c->redial_max_ms, (unsigned)c->redial_min_ms);
	}
	return -EINVAL;
}

/* Checks that need the whole file: peers against each other and us. */
int config_check_peers(const struct config *c, const char *path, char *err, size_t errlen)
{
	size_t i, j;

	for (i = 0; i < c->n_peers; i++) {
		const struct peer_conf *p = &c->peers[i];

		if (strcmp(p->name, c->node_name) == 0)
			return fail_file(path, err, errlen, -EINVAL,
					 "peer '%s' has the local node's name", p->name);
		for (j = 0; j < i; j++) {
			if (strcmp(c->peers[j].name, p->name) == 0)
				return fail_file(path, err, errlen, -EINVAL,
						 "peer '%s' is listed twice", p->name);
			if (c->peers[j].node_id == p->node_id)
				return fail_file(path, err, errlen, -EINVAL,
						 "peers '%s' and '%s' have the same node id 0x%08x; rename one",
						 c->peers[j].name, p->name, (unsigned)p->node_id);
		}
		if (p->node_id == c->node_id)
			return fail_file(path, err, errlen, -EINVAL,
					 "peer '%s' and the local node '%s' have the same node id 0x%08x; rename one",
					 p->name, c->node_name, (unsigned)p->node_id);
	}
	if (c->n_peers > 0 && !c->listen_set)
		return fail_file(path, err, errlen, -EINVAL,
				 "[peers] given but [transport] listen is not set");
	return 0;
}

/*
 * Parses into a copy so that a bad file leaves @c as it was: a reload can
 * keep running on the old configuration.
 */
int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
	struct parse_state st;
	struct config *nc;
	int rc, e;

	if (err && errlen)
		err[0] = '\0';
	memset(&st, 0, sizeof(st));
	st.path = path;
	st.err = err;
	st.errlen = errlen;

	st.f = fopen(path, "r");
	if (!st.f) {
		e = errno;
		return fail_file(path, err, errlen, -e, "cannot open: %s", strerror(e));
	}
	nc = malloc(sizeof(*nc));
	if (!nc) {
		fclose(st.f);
		return fail_file(path, err, errlen, -ENOMEM, "out of memory");
	}
	*nc = *c;
	st.c = nc;

	rc = ini_parse_stream(read_line, &st, on_value, &st);
	if (st.read_errno) {
		e = st.read_errno;
		rc = fail_file(path, err, errlen, -e, "cannot read: %s", strerror(e));
	} else if (rc > 0 && (!st.err_line || rc < st.err_line)) {
		/* inih found a bad line (no '=', no ']') before any of ours. */
		st.lineno = rc;
		st.err_line = 0;
		fail(&st, -EINVAL, "syntax error");
		rc = -EINVAL;
	} else if (st.err_line) {
		rc = st.err_code;
	} else if (rc == -2) {
		rc = fail_file(path, err, errlen, -ENOMEM, "out of memory");
	} else if (rc != 0) {
		rc = fail_file(path, err, errlen, -EINVAL, "cannot parse (inih error %d)", rc);
	} else {
		rc = check_keys(&st);
		if (rc == 0)
			rc = config_check_peers(nc, path, err, errlen);
	}
	fclose(st.f);
	if (rc == 0) {
		snprintf(nc->source, sizeof(nc->source), "%s", path);
		for (e = 0; e < K_COUNT; e++)
			nc->key_line[e] = (uint16_t)(st.key_line[e] > UINT16_MAX ? UINT16_MAX
										 : st.key_line[e]);
		*c = *nc;
	}
	free(nc);
	return rc;
}

const char *config_where(const struct config *c, const char *section, const char *key,
			 char *buf, size_t n)
{
	int k;

	for (k = 0; k < K_COUNT; k++)
		if (strcmp(keys[k].section, section) == 0 && strcmp(keys[k].name, key) == 0)
			break;
	if (k < K_COUNT && c->source[0] && c->key_line[k])
		snprintf(buf, n, "%s:%u", c->source, c->key_line[k]);
	else if (c->source[0])
		snprintf(buf, n, "the default (not in %s)", c->source);
	else
		snprintf(buf, n, "the default");
	return buf;
}

/* ------------------------------------------------------------------ */
/* Printing and reload                                                  */
/* ------------------------------------------------------------------ */

/* A byte count with the largest suffix that is exact: 65536 -> "64K". */
static void format_bytes(uint64_t v, char *buf, size_t n)
{
	if (v && v % GIB == 0)
		snprintf(buf, n, "%lluG", (unsigned long long)(v / GIB));
	else if (v && v % MIB == 0)
		snprintf(buf, n, "%lluM", (unsigned long long)(v / MIB));
	else if (v && v % KIB == 0)
		snprintf(buf, n, "%lluK", (unsigned long long)(v / KIB));
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

/* "[v6]:port" when the host needs brackets, else "host:port". */
static void format_hostport(const char *host, uint16_t port, char *buf, size_t n)
{
	snprintf(buf, n, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
}

/*
 * The value of key @k in @c as the file spells it, in @buf (@n bytes).
 * Returns false for a key at a value the file cannot spell, which is
 * what it means when absent: listen not set, reg_fail_after off.
 * No default case: -Wswitch makes a new key_id without a case an error.
 */
static bool format_value(const struct config *c, enum key_id k, char *buf, size_t n)
{
	buf[0] = '\0';
	switch (k) {
	case K_NODE:
		snprintf(buf, n, "%s", c->node_name);
		return true;
	case K_RUNTIME_DIR:
		snprintf(buf, n, "%s", c->runtime_dir);
		return true;
	case K_LOG_LEVEL:
		snprintf(buf, n, "%s", log_level_name((enum log_level)c->log_level));
		return true;
	case K_CLIENT_GROUP:
		snprintf(buf, n, "%s", c->client_group);
		return true;
	case K_ADMIN_GROUP:
		snprintf(buf, n, "%s", c->admin_group);
		return true;
	case K_DRAIN:
		snprintf(buf, n, "%u", (unsigned)c->shutdown_drain_ms);
		return true;
	case K_KIND:
		snprintf(buf, n, "%s", c->transport == XPORT_VERBS ? "verbs" :
			 c->transport == XPORT_AUTO ? "auto" : "tcp");
		return true;
	case K_DEVICE:
		snprintf(buf, n, "%s", c->device);
		return true;
	case K_LISTEN:
		if (!c->listen_set)
			return false;
		format_hostport(c->listen_host, c->listen_port, buf, n);
		return true;
	case K_EAGER_MAX:
		format_bytes(c->eager_max, buf, n);
		return true;
	case K_SQ_DEPTH:
		snprintf(buf, n, "%u", (unsigned)c->sq_depth);
		return true;
	case K_MAX_MR:
		snprintf(buf, n, "%u", (unsigned)c->max_mr);
		return true;
	case K_CREDITS:
		snprintf(buf, n, "%u", (unsigned)c->eager_credits);
		return true;
	case K_SOCKBUF:
		format_bytes(c->socket_buffer, buf, n);
		return true;
	case K_PEER_TIMEOUT:
		snprintf(buf, n, "%u", (unsigned)c->peer_timeout_ms);
		return true;
	case K_ACK_TIMEOUT:
		snprintf(buf, n, "%u", (unsigned)c->ack_timeout_ms);
		return true;
	case K_REDIAL_MIN:
		snprintf(buf, n, "%u", (unsigned)c->redial_min_ms);
		return true;
	case K_REDIAL_MAX:
		snprintf(buf, n, "%u", (unsigned)c->redial_max_ms);
		return true;
	case K_ARENA_BYTES:
		format_bytes(c->arena_bytes, buf, n);
		return true;
	case K_MAX_QUEUES:
		snprintf(buf, n, "%u", (unsigned)c->max_queues);
		return true;
	case K_UNEXPECTED_MAX:
		format_bytes(c->unexpected_max_bytes, buf, n);
		return true;
	case K_BACKLOG_MAX:
		snprintf(buf, n, "%u", (unsigned)c->link_backlog_max);
		return true;
	case K_CLIENT_QUEUES:
		snprintf(buf, n, "%u", (unsigned)c->client_max_queues);
		return true;
	case K_CLIENT_ARENA:
		format_bytes(c->client_max_arena_bytes, buf, n);
		return true;
	case K_CLIENT_INFLIGHT:
		snprintf(buf, n, "%u", (unsigned)c->client_max_inflight);
		return true;
	case K_UID_CONTEXTS:
		snprintf(buf, n, "%u", (unsigned)c->uid_max_contexts);
		return true;
	case K_UID_QUEUES:
		snprintf(buf, n, "%u", (unsigned)c->uid_max_queues);
		return true;
	case K_UID_ARENA:
		format_bytes(c->uid_max_arena_bytes, buf, n);
		return true;
	case K_UID_INFLIGHT:
		snprintf(buf, n, "%u", (unsigned)c->uid_max_inflight);
		return true;
	case K_RC_CHUNK:
		format_bytes(c->rcache_chunk_bytes, buf, n);
		return true;
	case K_RC_MAX_REGIONS:
		snprintf(buf, n, "%u", (unsigned)c->rcache_max_regions);
		return true;
	case K_RC_MAX_BYTES:
		format_bytes(c->rcache_max_bytes, buf, n);
		return true;
	case K_RC_MAX_WAITERS:
		snprintf(buf, n, "%u", (unsigned)c->rcache_max_waiters);
		return true;
	case K_RC_MAX_WAIT_MS:
		snprintf(buf, n, "%u", (unsigned)c->rcache_max_wait_ms);
		return true;
	case K_F_POST_ENOMEM:
		snprintf(buf, n, "%u", (unsigned)c->fault_post_enomem_every);
		return true;
	case K_F_REG_FAIL:
		if (c->fault_reg_fail_after == CONFIG_FAULT_OFF)
			return false;
		snprintf(buf, n, "%llu", (unsigned long long)c->fault_reg_fail_after);
		return true;
	case K_F_DELAY_COMPL:
		snprintf(buf, n, "%u", (unsigned)c->fault_delay_completions_us);
		return true;
	case K_F_CUT_AFTER:
		snprintf(buf, n, "%llu", (unsigned long long)c->fault_cut_after_frames);
		return true;
	case K_F_CUT_EVERY:
		snprintf(buf, n, "%u", (unsigned)c->fault_cut_every_frames);
		return true;
	case K_SEC_MODE:
		snprintf(buf, n, "%s", config_security_mode_name(c->security_mode));
		return true;
	case K_SEC_KEY:
		snprintf(buf, n, "%s", c->key_file);
		return c->key_file[0] != '\0';
	case K_SEC_PREV_KEY:
		snprintf(buf, n, "%s", c->previous_key_file);
		return c->previous_key_file[0] != '\0';
	case K_F_WRITE_SHIFT:
		snprintf(buf, n, "%d", (int)c->fault_write_shift_bytes);
		return true;
	case K_F_WRITE_REPLAY:
		snprintf(buf, n, "%u", (unsigned)c->fault_write_replay);
		return true;
	case K_COUNT:
		break;
	}
	return false;
}

/* What an absent key means, for the commented line --print-config writes. */
static const char *absent_meaning(enum key_id k)
{
	if (k == K_SEC_KEY || k == K_SEC_PREV_KEY)
		return "not set: no key";
	return k == K_LISTEN ? "not set: a single node" : "off (absent)";
}

#define VALUE_MAX (CONFIG_HOST_MAX + 16)

int config_print(FILE *out, const struct config *c)
{
	char val[VALUE_MAX];
	const char *sec = NULL;
	size_t i;
	int k;

	if (fprintf(out, "# sluiced effective configuration (sluiced --print-config)\n") < 0)
		return -EIO;
	for (k = 0; k < K_COUNT; k++) {
		if (!sec || strcmp(sec, keys[k].section) != 0) {
			sec = keys[k].section;
			fprintf(out, "\n[%s]\n", sec);
		}
		if (format_value(c, (enum key_id)k, val, sizeof(val)))
			fprintf(out, "%s =%s%s\n", keys[k].name, val[0] ? " " : "", val);
		else
			fprintf(out, "#%s = ; %s\n", keys[k].name, absent_meaning((enum key_id)k));
	}
	fprintf(out, "\n[peers]\n");
	for (i = 0; i < c->n_peers; i++) {
		format_hostport(c->peers[i].host, c->peers[i].port, val, sizeof(val));
		fprintf(out, "%s = %s\n", c->peers[i].name, val);
	}
	fprintf(out, "\n[ports]\n");
	for (i = 0; i < c->ports.n; i++)
		fprintf(out, "%u-%u = %s\n", c->ports.r[i].lo, c->ports.r[i].hi,
			c->ports.r[i].owner);
	if (fflush(out) == EOF || ferror(out))
		return -EIO;
	return 0;
}

static const struct peer_conf *peer_by_name(const struct config *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n_peers; i++)
		if (strcmp(c->peers[i].name, name) == 0)
			return &c->peers[i];
	return NULL;
}

/* Copy reloadable key @k from @from into @to. */
static void copy_reloadable(struct config *to, const struct config *from, enum key_id k)
{
	switch (k) {
	case K_LOG_LEVEL:
		to->log_level = from->log_level;
		break;
	case K_ADMIN_GROUP:
		memcpy(to->admin_group, from->admin_group, sizeof(to->admin_group));
		break;
	case K_DRAIN:
		to->shutdown_drain_ms = from->shutdown_drain_ms;
		break;
	case K_PEER_TIMEOUT:
		to->peer_timeout_ms = from->peer_timeout_ms;
		break;
	case K_ACK_TIMEOUT:
		to->ack_timeout_ms = from->ack_timeout_ms;
		break;
	case K_REDIAL_MIN:
		to->redial_min_ms = from->redial_min_ms;
		break;
	case K_REDIAL_MAX:
		to->redial_max_ms = from->redial_max_ms;
		break;
	case K_BACKLOG_MAX:
		to->link_backlog_max = from->link_backlog_max;
		break;
	case K_UNEXPECTED_MAX:
		to->unexpected_max_bytes = from->unexpected_max_bytes;
		break;
	case K_CLIENT_INFLIGHT:
		to->client_max_inflight = from->client_max_inflight;
		break;
	case K_SEC_KEY:
		memcpy(to->key_file, from->key_file, sizeof(to->key_file));
		break;
	case K_SEC_PREV_KEY:
		memcpy(to->previous_key_file, from->previous_key_file,
		       sizeof(to->previous_key_file));
		break;
	default:
		break;	/* keys[k].reload is false: never called */
	}
}

int config_reload_merge(struct config *cur, const struct config *next,
			config_change_fn *changed, void *arg)
{
	char a[VALUE_MAX], b[VALUE_MAX];
	int k, applied = 0;
	size_t i;

	for (k = 0; k < K_COUNT; k++) {
		bool ha = format_value(cur, (enum key_id)k, a, sizeof(a));
		bool hb = format_value(next, (enum key_id)k, b, sizeof(b));

		if (ha == hb && strcmp(a, b) == 0)
			continue;
		if (keys[k].reload) {
			copy_reloadable(cur, next, (enum key_id)k);
			applied++;
		}
		if (changed)
			changed(keys[k].section, keys[k].name, ha ? a : "(not set)",
				hb ? b : "(not set)", keys[k].reload, arg);
	}
	/* Links are built from [peers] at start: any change needs a restart. */
	for (i = 0; changed && i < next->n_peers; i++) {
		const struct peer_conf *np = &next->peers[i], *op = peer_by_name(cur, np->name);

		if (op && strcmp(op->host, np->host) == 0 && op->port == np->port)
			continue;
		if (op)
			format_hostport(op->host, op->port, a, sizeof(a));
		format_hostport(np->host, np->port, b, sizeof(b));
		changed("peers", np->name, op ? a : "(not set)", b, false, arg);
	}
	for (i = 0; changed && i < cur->n_peers; i++) {
		if (peer_by_name(next, cur->peers[i].name))
			continue;
		format_hostport(cur->peers[i].host, cur->peers[i].port, a, sizeof(a));
		changed("peers", cur->peers[i].name, a, "(not set)", false, arg);
	}
	/* [ports] is read at start only. */
	for (i = 0; changed && i < cur->ports.n && cur->ports.n == next->ports.n; i++) {
		const struct port_range *x = &cur->ports.r[i], *y = &next->ports.r[i];

		if (x->lo != y->lo || x->hi != y->hi || x->is_group != y->is_group ||
		    x->id != y->id)
			break;
	}
	if (changed && (cur->ports.n != next->ports.n || i < cur->ports.n))
		changed("ports", "(ranges)", "(as at start)", "(changed)", false, arg);
	return applied;
}
