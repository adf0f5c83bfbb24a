/*
 * config.c - sluiced.conf: the table of keys (config_keys[]) and what
 * comes from it: defaults, INI parsing (inih), the messages, printing,
 * the reload merge and the command-line options; see config.h.
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

#include "config_peers.h"
#include "log.h"
#include "sl_wire.h"
#include "sluice.h"

#define KIB 1024ll
#define MIB (1024ll * KIB)
#define GIB (1024ll * MIB)

#define ALLOWED_NAME     CONFIG_ALLOWED_NAME
#define ALLOWED_HOSTPORT "HOST:PORT or [IPV6]:PORT with port 1..65535"
#define ALLOWED_BYTES    "digits with an optional K, M or G suffix"

#define MSG_MAX 1024	/* one message, before it is cut to the caller's buffer */
#define VALUE_MAX (CONFIG_HOST_MAX + 16)	/* one value as the file spells it */

/* Copy with truncation; always NUL-terminates (size > 0). */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
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
		case 'k': case 'K': mult = (uint64_t)KIB; break;
		case 'm': case 'M': mult = (uint64_t)MIB; break;
		case 'g': case 'G': mult = (uint64_t)GIB; break;
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

int config_parse_address(const char *s, bool port_optional, char *host, size_t hostlen,
			 uint16_t *port, bool *has_port, const char **why)
{
	const char *h = s, *end;
	size_t n = strlen(s);

	*has_port = true;
	if (!port_optional || n == 0 || (s[0] == '[' ? s[n - 1] != ']' : strchr(s, ':') != NULL))
		return parse_hostport(s, host, hostlen, port, why);
	/* HOST, or [IPV6]: a host without a port. */
	end = s + n;
	if (s[0] == '[') {
		h = s + 1;
		end = s + n - 1;
	}
	if (end == h) {
		*why = "has an empty host";
		return -EINVAL;
	}
	for (const char *q = h; q < end; q++) {
		if (!host_char_ok(*q)) {
			*why = "has a bad character in the host";
			return -EINVAL;
		}
	}
	if ((size_t)(end - h) >= hostlen) {
		*why = "has a host name that is too long";
		return -EINVAL;
	}
	memcpy(host, h, (size_t)(end - h));
	host[end - h] = '\0';
	*has_port = false;
	return 0;
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

const char *config_security_mode_name(enum security_mode m)
{
	switch (m) {
	case SECURITY_NONE: return "none";
	case SECURITY_AUTHENTICATE: return "authenticate";
	case SECURITY_ENCRYPT: return "encrypt";
	}
	return "?";
}

/* ------------------------------------------------------------------ */
/* The types of the table                                               */
/* ------------------------------------------------------------------ */

static void *field_of(struct config *c, const struct config_key *k)
{
	return (char *)c + k->offset;
}

static const void *cfield_of(const struct config *c, const struct config_key *k)
{
	return (const char *)c + k->offset;
}

/* Integer fields are 4 or 8 bytes (checked by row_valid()). */
static uint64_t load_u(const struct config *c, const struct config_key *k)
{
	uint32_t v32;
	uint64_t v64;

	if (k->size == sizeof(v32)) {
		memcpy(&v32, cfield_of(c, k), sizeof(v32));
		return v32;
	}
	memcpy(&v64, cfield_of(c, k), sizeof(v64));
	return v64;
}

static void store_u(struct config *c, const struct config_key *k, uint64_t v)
{
	uint32_t v32 = (uint32_t)v;

	if (k->size == sizeof(v32))
		memcpy(field_of(c, k), &v32, sizeof(v32));
	else
		memcpy(field_of(c, k), &v, sizeof(v));
}

/* The message of a bad value: "PREFIX: ..." in @why; returns -EINVAL. */
static int say(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int say(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

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

void config_format_hostport(const char *host, uint16_t port, char *buf, size_t n)
{
	snprintf(buf, n, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
}

const char *config_key_range(const struct config_key *k, char *buf, size_t n)
{
	char lo[32], hi[32];
	const struct config_name *nm;
	size_t off = 0;

	buf[0] = '\0';
	switch (k->type->kind) {
	case CONFIG_NUMBER:
		snprintf(buf, n, "%llu..%llu", (unsigned long long)k->min,
			 (unsigned long long)k->max);
		break;
	case CONFIG_SIGNED:
		snprintf(buf, n, "%lld..%lld", (long long)k->min, (long long)k->max);
		break;
	case CONFIG_BYTES:
		format_bytes((uint64_t)k->min, lo, sizeof(lo));
		format_bytes((uint64_t)k->max, hi, sizeof(hi));
		snprintf(buf, n, "%s..%s", lo, hi);
		break;
	case CONFIG_ENUM:
		for (nm = k->names; nm->name && off < n; nm++)
			off += (size_t)snprintf(buf + off, n - off, "%s%s",
						nm == k->names ? "" : ", ", nm->name);
		break;
	case CONFIG_TEXT:
	case CONFIG_LIST:
		break;
	}
	return buf;
}

/* What a message says is allowed: the row's words, or its range. */
static const char *allowed_text(const struct config_key *k, char *buf, size_t n)
{
	char range[128];

	if (k->allowed)
		return k->allowed;
	config_key_range(k, range, sizeof(range));
	snprintf(buf, n, "%s%s%s%s", k->flags & CONFIG_ZERO_OK ? "0, or " : "", range,
		 k->type->kind == CONFIG_BYTES ? " bytes" : "",
		 k->flags & CONFIG_POW2 ? ", a power of two" : "");
	return buf;
}

/*
 * CONFIG_NUMBER and CONFIG_BYTES: an unsigned number in min..max (or 0
 * with CONFIG_ZERO_OK), a power of two with CONFIG_POW2.  A row with
 * @absent and no default is not set while its field is all ones.
 */
static int number_parse(struct config *c, const struct config_key *k, const char *key,
			const char *value, const char *prefix, char *why, size_t n)
{
	bool bytes = k->type->kind == CONFIG_BYTES, zero_ok = k->flags & CONFIG_ZERO_OK;
	char buf[160];
	const char *allowed = allowed_text(k, buf, sizeof(buf));
	uint64_t v;
	int rc = parse_u64(value, bytes, zero_ok ? 0 : (uint64_t)k->min, (uint64_t)k->max, &v);

	if (rc == 0 && zero_ok && v && v < (uint64_t)k->min)
		rc = -ERANGE;
	if (rc == -ERANGE)
		return say(why, n, "%s: %s is out of range (allowed: %s)", prefix, value, allowed);
	if (rc < 0 && bytes)
		return say(why, n, "%s: '%s' is not a byte count (allowed: %s)", prefix, value,
			   ALLOWED_BYTES);
	if (rc < 0)
		return say(why, n, "%s: '%s' is not a number (allowed: %s)", prefix, value, allowed);
	if ((k->flags & CONFIG_POW2) && (v & (v - 1)))
		return say(why, n, "%s: %s must be a power of two (allowed: %s)", prefix, value,
			   allowed);
	store_u(c, k, v);
	return 0;
}

static bool number_unset(const struct config *c, const struct config_key *k)
{
	return k->absent && !k->def &&
	       load_u(c, k) == (k->size == sizeof(uint32_t) ? UINT32_MAX : UINT64_MAX);
}

static bool number_format(const struct config *c, const struct config_key *k, char *buf,
			  size_t n)
{
	if (number_unset(c, k))
		return false;
	if (k->type->kind == CONFIG_BYTES)
		format_bytes(load_u(c, k), buf, n);
	else
		snprintf(buf, n, "%llu", (unsigned long long)load_u(c, k));
	return true;
}

static const struct config_type number_type = {
	"number", CONFIG_NUMBER, number_parse, number_format, NULL, NULL, NULL
};
static const struct config_type bytes_type = {
	"bytes", CONFIG_BYTES, number_parse, number_format, NULL, NULL, NULL
};

/* CONFIG_SIGNED: an int32_t field, "-N" or "N" in min..max. */
static int signed_parse(struct config *c, const struct config_key *k, const char *key,
			const char *value, const char *prefix, char *why, size_t n)
{
	bool neg = value[0] == '-';
	char allowed[160];
	uint64_t v;
	int32_t v32;
	int rc = parse_u64(neg ? value + 1 : value, false, 0,
			   neg ? (uint64_t)-k->min : (uint64_t)k->max, &v);

	if (rc < 0)
		return say(why, n, "%s: '%s' is %s (allowed: %s)", prefix, value,
			   rc == -ERANGE ? "out of range" : "not a number",
			   allowed_text(k, allowed, sizeof(allowed)));
	v32 = (int32_t)(neg ? -(int64_t)v : (int64_t)v);
	memcpy(field_of(c, k), &v32, sizeof(v32));
	return 0;
}

static bool signed_format(const struct config *c, const struct config_key *k, char *buf,
			  size_t n)
{
	int32_t v;

	memcpy(&v, cfield_of(c, k), sizeof(v));
	snprintf(buf, n, "%d", (int)v);
	return true;
}

static const struct config_type signed_type = {
	"signed number", CONFIG_SIGNED, signed_parse, signed_format, NULL, NULL, NULL
};

/* CONFIG_ENUM: an int-sized field holding the value of one of k->names. */
static int enum_parse(struct config *c, const struct config_key *k, const char *key,
		      const char *value, const char *prefix, char *why, size_t n)
{
	const struct config_name *nm;
	char allowed[160];

	for (nm = k->names; nm->name; nm++) {
		if (strcmp(value, nm->name) == 0) {
			memcpy(field_of(c, k), &nm->value, sizeof(nm->value));
			return 0;
		}
	}
	return say(why, n, "%s: '%s' is not %s (allowed: %s)", prefix, value, k->what,
		   allowed_text(k, allowed, sizeof(allowed)));
}

static bool enum_format(const struct config *c, const struct config_key *k, char *buf,
			size_t n)
{
	const struct config_name *nm;
	int v;

	memcpy(&v, cfield_of(c, k), sizeof(v));
	for (nm = k->names; nm->name && nm->value != v; nm++)
		;
	snprintf(buf, n, "%s", nm->name ? nm->name : "?");
	return true;
}

static const struct config_type enum_type = {
	"enum", CONFIG_ENUM, enum_parse, enum_format, NULL, NULL, NULL
};

/* Text in a char array; with k->absent, empty means not set. */
static bool text_format(const struct config *c, const struct config_key *k, char *buf,
			size_t n)
{
	const char *s = cfield_of(c, k);

	snprintf(buf, n, "%s", s);
	return !(k->absent && s[0] == '\0');
}

/* A name (config_name_valid()), or empty with CONFIG_EMPTY_OK. */
static int name_parse(struct config *c, const struct config_key *k, const char *key,
		      const char *value, const char *prefix, char *why, size_t n)
{
	if ((value[0] || !(k->flags & CONFIG_EMPTY_OK)) && !config_name_valid(value))
		return say(why, n, "%s: '%s' is not %s (allowed: %s)", prefix, value, k->what,
			   k->allowed ? k->allowed :
			   k->flags & CONFIG_EMPTY_OK ? ALLOWED_NAME ", or empty" : ALLOWED_NAME);
	copy_str(field_of(c, k), k->size, value);
	return 0;
}

static const struct config_type name_type = {
	"name", CONFIG_TEXT, name_parse, text_format, NULL, NULL, NULL
};

/* [daemon] node: a name, and node_id follows it. */
static int node_parse(struct config *c, const struct config_key *k, const char *key,
		      const char *value, const char *prefix, char *why, size_t n)
{
	int rc = name_parse(c, k, key, value, prefix, why, n);

	if (rc == 0)
		c->node_id = sl_node_id(c->node_name);
	return rc;
}

static const struct config_type node_type = {
	"node name", CONFIG_TEXT, node_parse, text_format, NULL, NULL, NULL
};

/* An absolute path that fits the field, or empty with CONFIG_EMPTY_OK. */
static int path_parse(struct config *c, const struct config_key *k, const char *key,
		      const char *value, const char *prefix, char *why, size_t n)
{
	bool empty_ok = k->flags & CONFIG_EMPTY_OK;
	int max = (int)k->size - 1;

	if (value[0] != '/' && !(empty_ok && value[0] == '\0'))
		return say(why, n, "%s: '%s' is not an absolute path (allowed: an absolute path of at most %d characters%s)",
			   prefix, value, max, empty_ok ? ", or empty" : "");
	if (strlen(value) >= k->size)
		return say(why, n, "%s: path is too long (allowed: an absolute path of at most %d characters)",
			   prefix, max);
	copy_str(field_of(c, k), k->size, value);
	return 0;
}

static const struct config_type path_type = {
	"path", CONFIG_TEXT, path_parse, text_format, NULL, NULL, NULL
};

/* [transport] listen: listen_host, listen_port and listen_set. */
static int listen_parse(struct config *c, const struct config_key *k, const char *key,
			const char *value, const char *prefix, char *why, size_t n)
{
	const char *bad;

	if (parse_hostport(value, c->listen_host, sizeof(c->listen_host), &c->listen_port,
			   &bad) < 0)
		return say(why, n, "%s: '%s' %s (allowed: %s)", prefix, value, bad,
			   ALLOWED_HOSTPORT);
	c->listen_set = true;
	return 0;
}

static bool listen_format(const struct config *c, const struct config_key *k, char *buf,
			  size_t n)
{
	if (!c->listen_set)
		return false;
	config_format_hostport(c->listen_host, c->listen_port, buf, n);
	return true;
}

static const struct config_type listen_type = {
	"host:port", CONFIG_TEXT, listen_parse, listen_format, NULL, NULL, NULL
};

/* [peers]: NAME = HOST:PORT lines into peers[] and n_peers. */
static int peers_parse(struct config *c, const struct config_key *k, const char *key,
		       const char *value, const char *prefix, char *why, size_t n)
{
	char host[CONFIG_HOST_MAX];
	const char *bad;
	uint16_t port;

	if (!config_name_valid(key))
		return say(why, n, "%s: not a valid node name (allowed: %s)", prefix, ALLOWED_NAME);
	if (parse_hostport(value, host, sizeof(host), &port, &bad) < 0)
		return say(why, n, "%s: '%s' %s (allowed: %s)", prefix, value, bad,
			   ALLOWED_HOSTPORT);
	if (config_peer_add(c, key, host, port) < 0)
		return say(why, n, "%s: out of memory", prefix);
	return 0;
}

/* --peer NAME=HOST:PORT, as a [peers] line. */
static int peers_parse_option(struct config *c, const struct config_key *k, const char *arg,
			      char *why, size_t n)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : 0;
	char name[CONFIG_NAME_MAX];

	if (len > 0 && len < sizeof(name)) {
		memcpy(name, arg, len);
		name[len] = '\0';
		if (peers_parse(c, k, name, eq + 1, "", NULL, 0) == 0)
			return 0;
	}
	return say(why, n, "--%s %s: NAME=HOST:PORT expected, NAME of A-Z a-z 0-9 . _ -",
		   k->option->name, arg);
}

static void peers_print(FILE *out, const struct config *c)
{
	char val[VALUE_MAX];
	size_t i;

	for (i = 0; i < c->n_peers; i++) {
		config_format_hostport(c->peers[i].host, c->peers[i].port, val, sizeof(val));
		fprintf(out, "%s = %s\n", c->peers[i].name, val);
	}
}

/* The peer of @c (indexed by @ix) named @name, with node id @id, or NULL. */
static const struct peer_conf *peer_by_name(const struct config *c, const struct peer_index *ix,
					    const char *name, uint32_t id)
{
	long at = peer_index_find(ix, c->peers, c->n_peers, id);

	return at >= 0 && strcmp(c->peers[at].name, name) == 0 ? &c->peers[at] : NULL;
}

/* Every peer added, readdressed or removed, in @next's order and then
 * @cur's; linear with the indexes (without one, it scans). */
static unsigned peers_diff(const struct config *cur, const struct config *next, bool applied,
			   config_change_fn *changed, void *arg)
{
	struct peer_index in_cur, in_next;
	char a[VALUE_MAX], b[VALUE_MAX];
	unsigned told = 0;
	size_t i;

	(void)peer_index_build(&in_cur, cur->peers, cur->n_peers);	/* else: scans */
	(void)peer_index_build(&in_next, next->peers, next->n_peers);
	for (i = 0; i < next->n_peers; i++) {
		const struct peer_conf *np = &next->peers[i];
		const struct peer_conf *op = peer_by_name(cur, &in_cur, np->name, np->node_id);

		if (op && strcmp(op->host, np->host) == 0 && op->port == np->port)
			continue;
		if (op)
			config_format_hostport(op->host, op->port, a, sizeof(a));
		config_format_hostport(np->host, np->port, b, sizeof(b));
		changed("peers", np->name, op ? a : "(not set)", b, applied, arg);
		told++;
	}
	for (i = 0; i < cur->n_peers; i++) {
		const struct peer_conf *op = &cur->peers[i];

		if (peer_by_name(next, &in_next, op->name, op->node_id))
			continue;
		config_format_hostport(op->host, op->port, a, sizeof(a));
		changed("peers", op->name, a, "(not set)", applied, arg);
		told++;
	}
	peer_index_free(&in_cur);
	peer_index_free(&in_next);
	return told;
}

static const struct config_type peers_type = {
	"peers", CONFIG_LIST, peers_parse, NULL, peers_print, peers_diff, peers_parse_option
};

/* [ports]: LO-HI or PORT = OWNER lines (ports.h). */
static int ports_parse(struct config *c, const struct config_key *k, const char *key,
		       const char *value, const char *prefix, char *why, size_t n)
{
	const char *bad;

	if (ports_conf_add(&c->ports, key, value, &bad))
		return say(why, n, "%s = %s: %s", prefix, value, bad);
	return 0;
}

static void ports_print(FILE *out, const struct config *c)
{
	size_t i;

	for (i = 0; i < c->ports.n; i++)
		fprintf(out, "%u-%u = %s\n", c->ports.r[i].lo, c->ports.r[i].hi,
			c->ports.r[i].owner);
}

/* [ports] is read at start only. */
static unsigned ports_diff(const struct config *cur, const struct config *next, bool applied,
			   config_change_fn *changed, void *arg)
{
	size_t i;

	for (i = 0; i < cur->ports.n && cur->ports.n == next->ports.n; i++) {
		const struct port_range *x = &cur->ports.r[i], *y = &next->ports.r[i];

		if (x->lo != y->lo || x->hi != y->hi || x->is_group != y->is_group ||
		    x->id != y->id)
			break;
	}
	if (cur->ports.n == next->ports.n && i == cur->ports.n)
		return 0;
	changed("ports", "(ranges)", "(as at start)", "(changed)", applied, arg);
	return 1;
}

static const struct config_type ports_type = {
	"ports", CONFIG_LIST, ports_parse, NULL, ports_print, ports_diff, NULL
};

/* ------------------------------------------------------------------ */
/* The table                                                            */
/* ------------------------------------------------------------------ */

#define FIELD(f) .offset = offsetof(struct config, f), .size = sizeof(((struct config *)0)->f)
#define KEY(sec, key, ty, f) .section = sec, .name = key, .type = &ty##_type, FIELD(f)
#define RANGE(lo, hi) .min = (lo), .max = (hi)
#define OPTION(opt, arg, help) .option = &(const struct config_option){ opt, arg, help }

static const struct config_name log_levels[] = {
	{ "error", LOG_LVL_ERR }, { "warn", LOG_LVL_WARN }, { "info", LOG_LVL_INFO },
	{ "debug", LOG_LVL_DEBUG }, { NULL, 0 }
};
static const struct config_name transports[] = {
	{ "tcp", XPORT_TCP }, { "verbs", XPORT_VERBS }, { "auto", XPORT_AUTO }, { NULL, 0 }
};
static const struct config_name security_modes[] = {
	{ "none", SECURITY_NONE }, { "authenticate", SECURITY_AUTHENTICATE },
	{ "encrypt", SECURITY_ENCRYPT }, { NULL, 0 }
};

/*
 * Every key of sluiced.conf, in the order --print-config prints them and
 * the messages list them; sluiced.conf(5) says the same for an operator
 * (tests/test_config_doc.c compares them).  A new key is a field of
 * struct config, a row here, its entry in the page and its line in
 * conf/sluiced.conf.
 */
const struct config_key config_keys[] = {
	/* [daemon] */
	{ KEY("daemon", "node", node, node_name), .def_doc = "the host name", .unit = "",
	  .what = "a valid node name", OPTION("node", "NAME", "node name (overrides [daemon] node)"),
	  .doc = "this node's name, unique in the cluster; its node id is sl_node_id() of it" },
	{ KEY("daemon", "runtime_dir", path, runtime_dir), .def = "/run/sluice", .unit = "",
	  OPTION("runtime-dir", "DIR", "control socket directory ([daemon] runtime_dir)"),
	  .doc = "directory of the control and admin sockets, the lock and the stats file" },
	{ KEY("daemon", "log_level", enum, log_level), .def = "info", .unit = "", .reload = true,
	  .names = log_levels, .what = "a log level",
	  OPTION("log-level", "LEVEL", "error, warn, info or debug"),
	  .doc = "the most verbose level logged" },
	{ KEY("daemon", "client_group", name, client_group), .def = "", .unit = "",
	  .flags = CONFIG_EMPTY_OK, .what = "a group name",
	  .doc = "group of sluiced.sock, whose members may be clients; empty: the daemon's" },
	{ KEY("daemon", "admin_group", name, admin_group), .def = "", .unit = "", .reload = true,
	  .flags = CONFIG_EMPTY_OK, .what = "a group name",
	  .doc = "group that may use the admin socket (sluicectl) besides root and the daemon" },
	{ KEY("daemon", "shutdown_drain_ms", number, shutdown_drain_ms), RANGE(0, 600000),
	  .def = "5000", .unit = "ms", .reload = true,
	  .doc = "on SIGTERM, how long operations in flight may finish before being canceled" },
	{ KEY("daemon", "peers_file", path, peers_file), .unit = "", .reload = true,
	  .flags = CONFIG_EMPTY_OK, .absent = "not set: [peers] only",
	  .doc = "a file of peers, NAME HOST:PORT or NAME HOST a line; this node's line is skipped" },
	/* [transport] */
	{ KEY("transport", "kind", enum, transport), .def = "tcp", .unit = "",
	  .names = transports, .what = "a transport",
	  .doc = "tcp (verbs semantics over TCP), verbs (RDMA RC QPs), auto (verbs if a port is up)" },
	{ KEY("transport", "device", name, device), .def = "", .unit = "",
	  .flags = CONFIG_EMPTY_OK, .what = "a device name",
	  .allowed = ALLOWED_NAME ", or empty for the first device with an active port",
	  .doc = "the RDMA device of verbs and auto; empty: the first with an active port" },
	{ KEY("transport", "listen", listen, listen_host), .unit = "",
	  .absent = "not set: a single node",
	  OPTION("listen", "HOST:PORT", "accept links from peers ([transport] listen)"),
	  .doc = "address peers connect to; without it the node runs alone" },
	{ KEY("transport", "default_port", number, default_port), RANGE(1, 65535),
	  .unit = "", .reload = true, .absent = "not set: the port of listen",
	  .def_doc = "the listen port",
	  .doc = "the port of a peers_file line that gives none; not set: listen's" },
	{ KEY("transport", "eager_max", bytes, eager_max), RANGE(0, 1 * MIB), .def = "64K",
	  .unit = "bytes", .allowed = "0..1048576 bytes",
	  .doc = "largest message sent eagerly; larger ones go by rendezvous" },
	{ KEY("transport", "sq_depth", number, sq_depth), RANGE(4, 65536), .def = "1024",
	  .unit = "count", .doc = "work requests in each connection's send queue" },
	{ KEY("transport", "max_mr", number, max_mr), RANGE(1, 1048576), .def = "65536",
	  .unit = "count", .doc = "memory registrations the transport holds at once" },
	{ KEY("transport", "eager_credits", number, eager_credits), RANGE(1, SL_WIRE_CREDITS_MAX),
	  .def = "256", .unit = "count",
	  .doc = "data frames a peer may have sent us unacknowledged (told in HELLO)" },
	{ KEY("transport", "socket_buffer", bytes, socket_buffer), RANGE(1 * KIB, 64 * MIB),
	  .def = "0", .unit = "bytes", .flags = CONFIG_ZERO_OK,
	  .doc = "SO_SNDBUF and SO_RCVBUF of the tcp transport's sockets; 0: the kernel's" },
	{ KEY("transport", "peer_timeout_ms", number, peer_timeout_ms), RANGE(1, 86400000),
	  .def = "30000", .unit = "ms", .reload = true,
	  .doc = "a link down or unacknowledged this long fails what waits on that peer" },
	{ KEY("transport", "ack_timeout_ms", number, ack_timeout_ms), RANGE(1, 3600000),
	  .def = "2000", .unit = "ms", .reload = true,
	  .doc = "no ACK progress this long while frames wait breaks the connection" },
	{ KEY("transport", "redial_min_ms", number, redial_min_ms), RANGE(1, 3600000),
	  .def = "50", .unit = "ms", .reload = true,
	  .doc = "first wait before redialling a lost peer; at most redial_max_ms" },
	{ KEY("transport", "redial_max_ms", number, redial_max_ms), RANGE(1, 3600000),
	  .def = "2000", .unit = "ms", .reload = true,
	  .doc = "the redial wait doubles up to this" },
	{ KEY("transport", "idle_link_ms", number, idle_link_ms), RANGE(1, 86400000),
	  .def = "30000", .unit = "ms", .flags = CONFIG_ZERO_OK,
	  .doc = "a link with nothing to do this long closes (both sides agree); 0: dial every peer at start and keep it" },
	/* [limits] */
	{ KEY("limits", "arena_bytes", bytes, arena_bytes), RANGE(1 * MIB, 16 * GIB),
	  .def = "64M", .unit = "bytes", .doc = "shared data arena of each queue" },
	{ KEY("limits", "max_queues", number, max_queues), RANGE(1, 65536), .def = "1024",
	  .unit = "count", .doc = "queues across all clients" },
	{ KEY("limits", "unexpected_max_bytes", bytes, unexpected_max_bytes),
	  RANGE(64 * KIB, 64 * GIB), .def = "64M", .unit = "bytes", .reload = true,
	  .doc = "per endpoint, messages held before a receive (length + bookkeeping)" },
	{ KEY("limits", "unexpected_total_bytes", bytes, unexpected_total_bytes),
	  RANGE(64 * KIB, 1024 * GIB), .def = "256M", .unit = "bytes", .reload = true,
	  .doc = "all endpoints together: messages held before a receive, charged the same way" },
	{ KEY("limits", "link_backlog_max", number, link_backlog_max), RANGE(1, 1048576),
	  .def = "4096", .unit = "count", .reload = true,
	  .doc = "sends per link waiting for room; past it SL_NAK_BUSY" },
	{ KEY("limits", "max_links", number, max_links), RANGE(1, 1048576),
	  .def = "1024", .unit = "count", .reload = true,
	  .doc = "links connected at once; past it the least recently used idle ones close" },
	{ KEY("limits", "max_resolved_peers", number, max_resolved_peers), RANGE(0, 1048576),
	  .def = "1024", .unit = "count", .reload = true,
	  .doc = "peers added by sl_node_resolve(); past it ENOSPC; 0: none" },
	{ KEY("limits", "client_max_queues", number, client_max_queues), RANGE(1, 65536),
	  .def = "256", .unit = "count", .doc = "queues of one client (sl_open() context)" },
	{ KEY("limits", "client_max_arena_bytes", bytes, client_max_arena_bytes),
	  RANGE(1 * MIB, 1024 * GIB), .def = "64G", .unit = "bytes",
	  .doc = "the arenas of one client's queues together" },
	{ KEY("limits", "client_max_inflight", number, client_max_inflight), RANGE(1, 16777216),
	  .def = "65536", .unit = "count", .reload = true,
	  .doc = "descriptors of one client accepted and not yet completed" },
	{ KEY("limits", "uid_max_contexts", number, uid_max_contexts), RANGE(0, 65536),
	  .def = "0", .unit = "count", .doc = "contexts of one uid; 0: half of max_queues" },
	{ KEY("limits", "uid_max_queues", number, uid_max_queues), RANGE(0, 65536),
	  .def = "0", .unit = "count", .doc = "queues of one uid; 0: half of max_queues" },
	{ KEY("limits", "uid_max_arena_bytes", bytes, uid_max_arena_bytes),
	  RANGE(0, 1024 * 1024 * GIB), .def = "0", .unit = "bytes", .allowed = "0..1024T bytes",
	  .doc = "arenas of one uid's queues; 0: uid_max_queues x arena_bytes" },
	{ KEY("limits", "uid_max_inflight", number, uid_max_inflight), RANGE(0, 16777216),
	  .def = "0", .unit = "count",
	  .doc = "descriptors of one uid in flight; 0: 4 x client_max_inflight" },
	/* [rcache] */
	{ KEY("rcache", "chunk_bytes", bytes, rcache_chunk_bytes), RANGE(4 * KIB, 1 * GIB),
	  .def = "2M", .unit = "bytes", .flags = CONFIG_POW2,
	  .doc = "registrations cover whole chunks of this size" },
	{ KEY("rcache", "max_regions", number, rcache_max_regions), RANGE(0, 1048576),
	  .def = "1024", .unit = "count", .doc = "registrations kept; 0 disables the cache" },
	{ KEY("rcache", "max_bytes", bytes, rcache_max_bytes), RANGE(0, 1024 * GIB),
	  .def = "4G", .unit = "bytes",
	  .doc = "bytes registered at once; 0: no limit and no cache" },
	{ KEY("rcache", "max_waiters", number, rcache_max_waiters), RANGE(0, 1048576),
	  .def = "1024", .unit = "count",
	  .doc = "operations waiting for room at once; past it SL_NAK_BUSY" },
	{ KEY("rcache", "max_wait_ms", number, rcache_max_wait_ms), RANGE(0, 3600000),
	  .def = "1000", .unit = "ms",
	  .doc = "how long an operation may wait for a registration; 0: no limit" },
	/* [fault]: every default is off (config_faults_on()) */
	{ KEY("fault", "post_enomem_every", number, fault_post_enomem_every), RANGE(0, 1000000),
	  .def = "0", .unit = "count", .doc = "every Nth post on a connection fails ENOMEM" },
	{ KEY("fault", "reg_fail_after", number, fault_reg_fail_after), RANGE(0, 4294967295ll),
	  .unit = "count", .absent = "off (absent)",
	  .doc = "memory registrations after the first N fail ENOMEM" },
	{ KEY("fault", "delay_completions_us", number, fault_delay_completions_us),
	  RANGE(0, 10000000), .def = "0", .unit = "us",
	  .doc = "send completions reported this late" },
	{ KEY("fault", "resolve_delay_ms", number, fault_resolve_delay_ms), RANGE(0, 60000),
	  .def = "0", .unit = "ms",
	  .doc = "each sl_node_resolve() lookup starts this late, counted as under way" },
	{ KEY("fault", "cut_after_frames", number, fault_cut_after_frames),
	  RANGE(0, 4294967295ll), .def = "0", .unit = "count",
	  .doc = "the tcp transport breaks the connection of its Nth frame received, once" },
	{ KEY("fault", "cut_every_frames", number, fault_cut_every_frames),
	  RANGE(0, 4294967295ll), .def = "0", .unit = "count",
	  .doc = "the tcp transport breaks the connection of every Nth frame received" },
	{ KEY("fault", "write_shift_bytes", signed, fault_write_shift_bytes),
	  RANGE(-1 * GIB, 1 * GIB), .def = "0", .unit = "bytes",
	  .doc = "every RDMA write lands this far from where the peer's RTR granted" },
	{ KEY("fault", "write_replay", number, fault_write_replay), RANGE(0, 1), .def = "0",
	  .unit = "count", .doc = "1: write 4 KiB again where each rendezvous ended" },
	/* [security] */
	{ KEY("security", "mode", enum, security_mode), .def = "none", .unit = "",
	  .names = security_modes, .what = "a mode",
	  .doc = "none (addresses), authenticate (cluster key), encrypt (and TLS 1.3)" },
	{ KEY("security", "key_file", path, key_file), .unit = "", .reload = true,
	  .flags = CONFIG_EMPTY_OK, .absent = "not set: no key",
	  .doc = "the cluster key, 32 bytes, mode 0400 (sluiced --keygen)" },
	{ KEY("security", "previous_key_file", path, previous_key_file), .unit = "",
	  .reload = true, .flags = CONFIG_EMPTY_OK, .absent = "not set: no key",
	  .doc = "a key also accepted, while the cluster rotates to key_file" },
	/* Sections of named lines. */
	{ KEY("peers", NULL, peers, peers), .unit = "", .reload = true,
	  OPTION("peer", "NAME=HOST:PORT", "add a peer node (repeatable)"),
	  .doc = "NAME = HOST:PORT, one line per other node" },
	{ KEY("ports", NULL, ports, ports), .unit = "",
	  .doc = "LO-HI or PORT = user:, group:, uid: or gid: who alone (and root) may bind" },
};

const size_t config_n_keys = sizeof(config_keys) / sizeof(config_keys[0]);
_Static_assert(sizeof(config_keys) / sizeof(config_keys[0]) <= CONFIG_KEY_SLOTS,
	       "struct config's key_line[] is too small");

#define ROWS_END (config_keys + sizeof(config_keys) / sizeof(config_keys[0]))

/*
 * Is row @k one this file's code can serve: its field's size fits its
 * type, and a reload, which copies the field, is not asked of a type that
 * sets other fields too?
 */
static bool row_valid(const struct config_key *k)
{
	/* A list is reloaded by config_reload_merge()'s own code: [peers] only. */
	if (k->reload && (k->type == &node_type || k->type == &listen_type ||
			  (!k->name && k->type != &peers_type)))
		return false;
	switch (k->type->kind) {
	case CONFIG_NUMBER:
	case CONFIG_BYTES:
		return (k->size == sizeof(uint32_t) && k->max <= UINT32_MAX) ||
		       k->size == sizeof(uint64_t);
	case CONFIG_SIGNED:
		return k->size == sizeof(int32_t) && k->min >= INT32_MIN && k->max <= INT32_MAX;
	case CONFIG_ENUM:
		return k->size == sizeof(int) && k->names && k->what;
	case CONFIG_TEXT:
		return k->size > 0;
	case CONFIG_LIST:
		return !k->name && k->type->print && k->type->diff;
	}
	return false;
}

const struct config_key *config_key_find(const char *section, const char *name)
{
	const struct config_key *k;

	for (k = config_keys; k < ROWS_END; k++)
		if (strcmp(k->section, section) == 0 && k->name && strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

/* The row a line [@section] @name of a file sets, or NULL. */
static const struct config_key *row_of_line(const char *section, const char *name)
{
	const struct config_key *k;

	for (k = config_keys; k < ROWS_END; k++)
		if (strcmp(k->section, section) == 0 && (!k->name || strcmp(k->name, name) == 0))
			return k;
	return NULL;
}

static bool section_known(const char *name, size_t len)
{
	const struct config_key *k;

	for (k = config_keys; k < ROWS_END; k++)
		if (strlen(k->section) == len && strncmp(k->section, name, len) == 0)
			return true;
	return false;
}

/*
 * The sections in table order, in @buf: "daemon, transport, ..." or, with
 * @brackets, "[daemon], [transport], ... or [ports]".
 */
static const char *sections_text(bool brackets, char *buf, size_t n)
{
	const struct config_key *k;
	size_t off = 0;

	buf[0] = '\0';
	for (k = config_keys; k < ROWS_END && off < n; k++) {
		if (k > config_keys && strcmp(k[-1].section, k->section) == 0)
			continue;
		if (brackets)
			off += (size_t)snprintf(buf + off, n - off, "%s[%s]", k == config_keys ? "" :
						strcmp(k->section, ROWS_END[-1].section) == 0 ?
						" or " : ", ", k->section);
		else
			off += (size_t)snprintf(buf + off, n - off, "%s%s",
						k == config_keys ? "" : ", ", k->section);
	}
	return buf;
}

/* The keys of [@section], "a, b, c", in @buf. */
static const char *keys_text(const char *section, char *buf, size_t n)
{
	const struct config_key *k;
	size_t off = 0;

	buf[0] = '\0';
	for (k = config_keys; k < ROWS_END && off < n; k++)
		if (k->name && strcmp(k->section, section) == 0)
			off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", k->name);
	return buf;
}

bool config_key_format(const struct config *c, const struct config_key *k, char *buf,
		       size_t n)
{
	buf[0] = '\0';
	return k->type->format ? k->type->format(c, k, buf, n) : false;
}

int config_defaults(struct config *c)
{
	const struct config_key *k;
	char host[256], why[MSG_MAX];

	memset(c, 0, sizeof(*c));
	if (gethostname(host, sizeof(host)) < 0)
		return -errno;
	/* POSIX leaves a truncated hostname possibly unterminated. */
	host[sizeof(host) - 1] = '\0';
	copy_str(c->node_name, sizeof(c->node_name), host[0] ? host : "localhost");
	c->node_id = sl_node_id(c->node_name);
	for (k = config_keys; k < ROWS_END; k++) {
		if (!row_valid(k))
			return -EINVAL;
		if (k->def && k->type->parse(c, k, k->name, k->def, "default", why, sizeof(why)))
			return -EINVAL;
		/* Zeroed is "not set" for every type but a number's (all ones). */
		if (!k->def && k->absent && k->type->kind == CONFIG_NUMBER)
			store_u(c, k, UINT64_MAX);
	}
	return 0;
}

bool config_faults_on(const struct config *c)
{
	const struct config_key *k;
	char val[VALUE_MAX];
	bool set;

	for (k = config_keys; k < ROWS_END; k++) {
		if (strcmp(k->section, "fault") != 0)
			continue;
		set = config_key_format(c, k, val, sizeof(val));
		if (set != (k->def != NULL) || (set && strcmp(val, k->def) != 0))
			return true;
	}
	return false;
}

int config_set_option(struct config *c, const struct config_key *k, const char *arg,
		      char *err, size_t errlen)
{
	char prefix[64];

	if (k->type->parse_option)
		return k->type->parse_option(c, k, arg, err, errlen);
	snprintf(prefix, sizeof(prefix), "--%s", k->option->name);
	return k->type->parse(c, k, k->name, arg, prefix, err, errlen);
}

/* ------------------------------------------------------------------ */
/* The file                                                             */
/* ------------------------------------------------------------------ */

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
	int key_line[CONFIG_KEY_SLOTS];	/* where each row was set; 0 = not yet */
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

static int on_value(void *user, const char *section, const char *name,
		    const char *value)
{
	struct parse_state *st = user;
	const struct config_key *k;
	char text[MSG_MAX], prefix[MSG_MAX / 2];
	int i;

	if (st->err_line)
		return 0;
	if (section[0] == '\0')
		return fail(st, -EINVAL, "%s: key before any section (allowed: in %s)", name,
			    sections_text(true, text, sizeof(text)));
	k = row_of_line(section, name);
	if (!k) {
		if (section_known(section, strlen(section)))
			return fail(st, -EINVAL, "[%s] %s: unknown key (allowed: %s)", section, name,
				    keys_text(section, text, sizeof(text)));
		/* The reader rejects unknown sections before inih gets here. */
		return fail(st, -EINVAL, "[%s]: unknown section (allowed: %s)", section,
			    sections_text(false, text, sizeof(text)));
	}
	i = (int)(k - config_keys);
	if (k->name && st->key_line[i])
		return fail(st, -EINVAL, "[%s] %s: given twice (first on line %d)",
			    section, name, st->key_line[i]);
	if (k->name)
		st->key_line[i] = st->lineno;
	snprintf(prefix, sizeof(prefix), "[%s] %s", section, name);
	if (k->type->parse(st->c, k, name, value, prefix, text, sizeof(text)))
		return fail(st, -EINVAL, "%s", text);
	return 1;
}

/* Mirrors inih's rule: ';' starts an inline comment after whitespace. */
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
	const char *p = line, *end, *q, *name;
	char names[256];
	size_t n;

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
	if (!section_known(q + 1, n)) {
		fail(st, -EINVAL, "[%.*s]: unknown section (allowed: %s)",
		     (int)n, q + 1, sections_text(false, names, sizeof(names)));
		return;
	}
	name = q + 1;
	for (q = end + 1; *q && isspace((unsigned char)*q); q++)
		;
	if (*q && *q != ';' && *q != '#')
		fail(st, -EINVAL, "[%.*s]: text after the section header (allowed: a ; comment)",
		     (int)n, name);
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

/* The row index of [@section] @name, which must be in the table. */
static int row_index(const char *section, const char *name)
{
	return (int)(config_key_find(section, name) - config_keys);
}

/*
 * Keys that constrain each other, checked once the whole file is read:
 * the message names both and takes the line of the later key (of the one
 * given, if the other kept its value).  Returns 0 or -EINVAL.
 */
static int check_keys(struct parse_state *st)
{
	const struct config *c = st->c;
	int lmin = st->key_line[row_index("transport", "redial_min_ms")];
	int lmax = st->key_line[row_index("transport", "redial_max_ms")];
	int lmode = st->key_line[row_index("security", "mode")];

	if (c->security_mode != SECURITY_NONE && !c->key_file[0]) {
		st->lineno = lmode;
		return fail(st, -EINVAL, "[security] mode: %s needs [security] key_file (sluiced --keygen FILE writes one)",
			    config_security_mode_name(c->security_mode)), -EINVAL;
	}
	if (c->security_mode == SECURITY_ENCRYPT && c->transport == XPORT_VERBS) {
		st->lineno = lmode;
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

/*
 * Checks that need the whole file: peers against each other and us.  A
 * repeated name is a repeated node id, so one index by node id finds
 * both kinds of clash, in the order a scan of the earlier peers would.
 */
int config_check_peers(const struct config *c, const char *path, char *err, size_t errlen)
{
	struct peer_index ix;
	int rc = 0;
	long at;
	size_t i;

	if (peer_index_init(&ix, c->n_peers) < 0)
		return fail_file(path, err, errlen, -ENOMEM, "out of memory");
	for (i = 0; i < c->n_peers && rc == 0; i++) {
		const struct peer_conf *p = &c->peers[i];

		if (strcmp(p->name, c->node_name) == 0) {
			rc = fail_file(path, err, errlen, -EINVAL,
				       "peer '%s' has the local node's name", p->name);
			break;
		}
		at = peer_index_find(&ix, c->peers, i, p->node_id);
		if (at >= 0 && strcmp(c->peers[at].name, p->name) == 0)
			rc = fail_file(path, err, errlen, -EINVAL, "peer '%s' is listed twice",
				       p->name);
		else if (at >= 0)
			rc = fail_file(path, err, errlen, -EINVAL,
				       "peers '%s' and '%s' have the same node id 0x%08x; rename one",
				       c->peers[at].name, p->name, (unsigned)p->node_id);
		else if (p->node_id == c->node_id)
			rc = fail_file(path, err, errlen, -EINVAL,
				       "peer '%s' and the local node '%s' have the same node id 0x%08x; rename one",
				       p->name, c->node_name, (unsigned)p->node_id);
		else if (peer_index_add(&ix, c->peers, i) < 0)
			rc = fail_file(path, err, errlen, -ENOMEM, "out of memory");
	}
	peer_index_free(&ix);
	if (rc == 0 && c->n_peers > 0 && !c->listen_set)
		rc = fail_file(path, err, errlen, -EINVAL,
			       "[peers] given but [transport] listen is not set");
	return rc;
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
	if (!nc || config_copy(nc, c) < 0) {
		free(nc);
		fclose(st.f);
		return fail_file(path, err, errlen, -ENOMEM, "out of memory");
	}
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
		for (e = 0; e < (int)config_n_keys; e++)
			nc->key_line[e] = (uint16_t)(st.key_line[e] > UINT16_MAX ? UINT16_MAX
										 : st.key_line[e]);
		config_release(c);
		*c = *nc;	/* @c takes nc's peers */
	} else {
		config_release(nc);
	}
	free(nc);
	return rc;
}

const char *config_where(const struct config *c, const char *section, const char *key,
			 char *buf, size_t n)
{
	const struct config_key *k = config_key_find(section, key);

	if (k && c->source[0] && c->key_line[k - config_keys])
		snprintf(buf, n, "%s:%u", c->source, c->key_line[k - config_keys]);
	else if (c->source[0])
		snprintf(buf, n, "the default (not in %s)", c->source);
	else
		snprintf(buf, n, "the default");
	return buf;
}

/* ------------------------------------------------------------------ */
/* Printing and reload                                                  */
/* ------------------------------------------------------------------ */

int config_print(FILE *out, const struct config *c)
{
	const struct config_key *k;
	char val[VALUE_MAX];

	if (fprintf(out, "# sluiced effective configuration (sluiced --print-config)\n") < 0)
		return -EIO;
	for (k = config_keys; k < ROWS_END; k++) {
		if (k == config_keys || strcmp(k[-1].section, k->section) != 0)
			fprintf(out, "\n[%s]\n", k->section);
		if (!k->name)
			k->type->print(out, c);
		else if (config_key_format(c, k, val, sizeof(val)))
			fprintf(out, "%s =%s%s\n", k->name, val[0] ? " " : "", val);
		else
			fprintf(out, "#%s = ; %s\n", k->name, k->absent);
	}
	if (fflush(out) == EOF || ferror(out))
		return -EIO;
	return 0;
}

static void change_ignored(const char *section, const char *key, const char *old_value,
			   const char *new_value, bool applied, void *arg)
{
	(void)section;
	(void)key;
	(void)old_value;
	(void)new_value;
	(void)applied;
	(void)arg;
}

/*
 * Only [peers] of the lists is reloaded, and it is the one part of the
 * merge that can fail: its copy is made before anything changes.
 */
int config_reload_merge(struct config *cur, const struct config *next,
			config_change_fn *changed, void *arg)
{
	char a[VALUE_MAX], b[VALUE_MAX];
	const struct config_key *k;
	struct peer_conf *peers = NULL;
	unsigned told;
	int applied = 0;
	bool ha, hb;

	if (next->n_peers) {
		peers = malloc(next->n_peers * sizeof(*peers));
		if (!peers)
			return -ENOMEM;
		memcpy(peers, next->peers, next->n_peers * sizeof(*peers));
	}
	for (k = config_keys; k < ROWS_END; k++) {
		if (!k->name) {
			told = k->type->diff(cur, next, k->reload, changed ? changed : change_ignored,
					     arg);
			if (k->reload)
				applied += (int)told;
			continue;
		}
		ha = config_key_format(cur, k, a, sizeof(a));
		hb = config_key_format(next, k, b, sizeof(b));
		if (ha == hb && strcmp(a, b) == 0)
			continue;
		if (k->reload) {
			memcpy(field_of(cur, k), cfield_of(next, k), k->size);
			applied++;
		}
		if (changed)
			changed(k->section, k->name, ha ? a : "(not set)", hb ? b : "(not set)",
				k->reload, arg);
	}
	config_release(cur);
	cur->peers = peers;
	cur->n_peers = cur->peers_cap = next->n_peers;
	return applied;
}
