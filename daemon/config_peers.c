/*
 * config_peers.c - the peer list of a configuration (grown, owned,
 * copied), its index by node id, and [daemon] peers_file; see config.h
 * and config_peers.h.
 *
 * The peers file is the form a resource manager's host list takes in one
 * line of shell ("NAME HOST" per line), so it is its own small format
 * rather than INI: whitespace-separated fields, '#' comments.  It is read
 * after the command line, when the local node's name is final, so that
 * the same file serves every node: each skips its own line.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_peers.h"
#include "sluice.h"

#define PEERS_FILE_LINE_MAX 1024	/* characters of one line, its newline excluded */
#define ALLOWED_LINE "NAME HOST:PORT, NAME [IPV6]:PORT or NAME HOST"

/* ---- the list ---- */

void config_release(struct config *c)
{
	free(c->peers);
	c->peers = NULL;
	c->n_peers = 0;
	c->peers_cap = 0;
}

int config_copy(struct config *dst, const struct config *src)
{
	*dst = *src;
	dst->peers = NULL;
	dst->n_peers = dst->peers_cap = 0;
	if (src->n_peers == 0)
		return 0;
	dst->peers = malloc(src->n_peers * sizeof(*dst->peers));
	if (!dst->peers)
		return -ENOMEM;
	memcpy(dst->peers, src->peers, src->n_peers * sizeof(*dst->peers));
	dst->n_peers = dst->peers_cap = src->n_peers;
	return 0;
}

int config_peer_add(struct config *c, const char *name, const char *host, uint16_t port)
{
	struct peer_conf *pc;

	if (c->n_peers == c->peers_cap) {
		size_t cap = c->peers_cap ? 2 * c->peers_cap : 16;
		struct peer_conf *v;

		if (cap > SIZE_MAX / sizeof(*v))
			return -ENOMEM;
		v = realloc(c->peers, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->peers = v;
		c->peers_cap = cap;
	}
	pc = &c->peers[c->n_peers];
	memset(pc, 0, sizeof(*pc));
	snprintf(pc->name, sizeof(pc->name), "%s", name);
	snprintf(pc->host, sizeof(pc->host), "%s", host);
	pc->port = port;
	pc->node_id = sl_node_id(pc->name);
	c->n_peers++;
	return 0;
}

/* ---- the index ---- */

/* Fibonacci hashing: the top bits of the node id times 2^64 / phi
 * depend on all of its bits (node ids are hashes of names that often
 * differ in one character).  Slots are a power of two, at least 16. */
static size_t slot_of(const struct peer_index *ix, uint32_t node_id)
{
	unsigned bits = (unsigned)__builtin_popcountll((unsigned long long)ix->mask);

	return (size_t)(((uint64_t)node_id * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

int peer_index_init(struct peer_index *ix, size_t n)
{
	size_t slots = 16;

	memset(ix, 0, sizeof(*ix));
	while (slots < 2 * n) {
		if (slots > SIZE_MAX / 4 / sizeof(*ix->slot))
			return -ENOMEM;
		slots *= 2;
	}
	ix->slot = calloc(slots, sizeof(*ix->slot));
	if (!ix->slot)
		return -ENOMEM;
	ix->mask = slots - 1;
	return 0;
}

void peer_index_free(struct peer_index *ix)
{
	free(ix->slot);
	memset(ix, 0, sizeof(*ix));
}

static void slot_put(struct peer_index *ix, uint32_t node_id, uint32_t place)
{
	size_t s = slot_of(ix, node_id);

	while (ix->slot[s])
		s = (s + 1) & ix->mask;
	ix->slot[s] = place + 1;
	ix->used++;
}

int peer_index_add(struct peer_index *ix, const struct peer_conf *v, size_t i)
{
	struct peer_index bigger;
	size_t s;

	if (!ix->slot || i >= UINT32_MAX)
		return -ENOMEM;
	if (2 * (ix->used + 1) > ix->mask + 1) {
		if (peer_index_init(&bigger, ix->used + 1) < 0)
			return -ENOMEM;
		for (s = 0; s <= ix->mask; s++)
			if (ix->slot[s])
				slot_put(&bigger, v[ix->slot[s] - 1].node_id, ix->slot[s] - 1);
		peer_index_free(ix);
		*ix = bigger;
	}
	slot_put(ix, v[i].node_id, (uint32_t)i);
	return 0;
}

long peer_index_find(const struct peer_index *ix, const struct peer_conf *v, size_t n,
		     uint32_t node_id)
{
	size_t s, i;

	if (!ix->slot) {
		for (i = 0; i < n; i++)
			if (v[i].node_id == node_id)
				return (long)i;
		return -1;
	}
	for (s = slot_of(ix, node_id); ix->slot[s]; s = (s + 1) & ix->mask)
		if (v[ix->slot[s] - 1].node_id == node_id)
			return (long)(ix->slot[s] - 1);
	return -1;
}

int peer_index_build(struct peer_index *ix, const struct peer_conf *v, size_t n)
{
	size_t i;

	if (peer_index_init(ix, n) < 0)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (peer_index_find(ix, v, n, v[i].node_id) < 0)
			slot_put(ix, v[i].node_id, (uint32_t)i);
	return 0;
}

/* ---- the peers file ---- */

struct peers_file {
	struct config *c;
	const char *path;
	char *err;
	size_t errlen;
	unsigned lineno;
	size_t n_before;	/* peers from [peers] and --peer */
	unsigned *line_of;	/* line of each peer from the file (place - n_before) */
	size_t line_cap;
	struct peer_index ix;
};

static int file_fail(struct peers_file *pf, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The message "PATH:LINE: ..." ("PATH: ..." with no line yet); returns @code. */
static int file_fail(struct peers_file *pf, int code, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!pf->err || !pf->errlen)
		return code;
	if (pf->lineno)
		n = snprintf(pf->err, pf->errlen, "%s:%u: ", pf->path, pf->lineno);
	else
		n = snprintf(pf->err, pf->errlen, "%s: ", pf->path);
	if (n < 0 || (size_t)n >= pf->errlen)
		return code;
	va_start(ap, fmt);
	vsnprintf(pf->err + n, pf->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return code;
}

/* Remember that the peer just added came from the current line. */
static int note_line(struct peers_file *pf)
{
	size_t k = pf->c->n_peers - 1 - pf->n_before;

	if (k == pf->line_cap) {
		size_t cap = pf->line_cap ? 2 * pf->line_cap : 64;
		unsigned *v = realloc(pf->line_of, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pf->line_of = v;
		pf->line_cap = cap;
	}
	pf->line_of[k] = pf->lineno;
	return 0;
}

/*
 * One line's peer, @name at @host:@port: skipped if it is the local node
 * or already under [peers] at that address, refused if it clashes with a
 * peer before it, else added.  Returns 0 or -EINVAL/-ENOMEM (said).
 */
static int file_peer(struct peers_file *pf, const char *name, const char *host, uint16_t port)
{
	struct config *c = pf->c;
	uint32_t id = sl_node_id(name);
	const struct peer_conf *o;
	char here[CONFIG_HOST_MAX + 16], there[CONFIG_HOST_MAX + 16];
	long at;

	if (strcmp(name, c->node_name) == 0)
		return 0;	/* this node's own line */
	if (id == c->node_id)
		return file_fail(pf, -EINVAL, "peer '%s' and the local node '%s' have the same "
				 "node id 0x%08x; rename one", name, c->node_name, (unsigned)id);
	at = peer_index_find(&pf->ix, c->peers, c->n_peers, id);
	if (at >= 0) {
		o = &c->peers[at];
		if (strcmp(o->name, name) != 0)
			return file_fail(pf, -EINVAL, "peers '%s' and '%s' have the same node id "
					 "0x%08x; rename one", o->name, name, (unsigned)id);
		if ((size_t)at >= pf->n_before)
			return file_fail(pf, -EINVAL, "peer '%s' is listed twice (first on line %u)",
					 name, pf->line_of[(size_t)at - pf->n_before]);
		if (strcmp(o->host, host) == 0 && o->port == port)
			return 0;	/* under [peers] (or --peer) as here */
		config_format_hostport(host, port, here, sizeof(here));
		config_format_hostport(o->host, o->port, there, sizeof(there));
		return file_fail(pf, -EINVAL, "peer '%s' is at %s here but at %s under [peers] or "
				 "--peer (allowed: the same HOST:PORT, or one of the two)", name,
				 here, there);
	}
	if (config_peer_add(c, name, host, port) < 0 || note_line(pf) < 0 ||
	    peer_index_add(&pf->ix, c->peers, c->n_peers - 1) < 0)
		return file_fail(pf, -ENOMEM, "out of memory");
	return 0;
}

/* The next blank-separated field of *@p, NUL-terminated in place; NULL at the end. */
static char *next_field(char **p)
{
	char *s = *p, *e;

	s += strspn(s, " \t\r\f\v");
	if (!*s)
		return NULL;
	e = s + strcspn(s, " \t\r\f\v");
	if (*e)
		*e++ = '\0';
	*p = e;
	return s;
}

/* One line (its newline removed). */
static int file_line(struct peers_file *pf, char *line)
{
	struct config *c = pf->c;
	char host[CONFIG_HOST_MAX], *p = line, *name, *addr, *extra;
	const char *why;
	uint16_t port = 0;
	bool has_port;

	line[strcspn(line, "#")] = '\0';
	name = next_field(&p);
	if (!name)
		return 0;
	addr = next_field(&p);
	extra = addr ? next_field(&p) : NULL;
	if (!config_name_valid(name))
		return file_fail(pf, -EINVAL, "'%s' is not a valid node name (allowed: %s)", name,
				 CONFIG_ALLOWED_NAME);
	if (!addr)
		return file_fail(pf, -EINVAL, "peer '%s' has no address (allowed: %s)", name,
				 ALLOWED_LINE);
	if (extra)
		return file_fail(pf, -EINVAL, "peer '%s': '%s' after its address (allowed: %s, "
				 "then a # comment)", name, extra, ALLOWED_LINE);
	if (config_parse_address(addr, true, host, sizeof(host), &port, &has_port, &why) < 0)
		return file_fail(pf, -EINVAL, "peer '%s': '%s' %s (allowed: %s, port 1..65535)",
				 name, addr, why, ALLOWED_LINE);
	if (!has_port) {
		if (c->default_port != UINT32_MAX)
			port = (uint16_t)c->default_port;
		else if (c->listen_set)
			port = c->listen_port;
		else
			return file_fail(pf, -EINVAL, "peer '%s': '%s' has no port, and neither "
					 "[transport] default_port nor listen is set (allowed: "
					 "NAME HOST:PORT)", name, addr);
	}
	return file_peer(pf, name, host, port);
}

static int read_lines(struct peers_file *pf, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0, e;

	errno = 0;
	while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
		pf->lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len > PEERS_FILE_LINE_MAX)
			rc = file_fail(pf, -EINVAL, "line is too long (allowed: up to %d characters)",
				       PEERS_FILE_LINE_MAX);
		else if (memchr(line, '\0', (size_t)len))
			rc = file_fail(pf, -EINVAL, "a NUL byte in the line (allowed: text)");
		else
			rc = file_line(pf, line);
		errno = 0;
	}
	e = errno;
	if (rc == 0 && ferror(f)) {
		pf->lineno = 0;
		rc = file_fail(pf, e == ENOMEM ? -ENOMEM : -EIO, "cannot read: %s",
			       strerror(e ? e : EIO));
	}
	free(line);
	return rc;
}

int config_read_peers_file(struct config *c, char *err, size_t errlen)
{
	struct peers_file pf = { .c = c, .path = c->peers_file, .err = err, .errlen = errlen,
				 .n_before = c->n_peers };
	FILE *f;
	int rc, e;

	if (err && errlen)
		err[0] = '\0';
	if (!c->peers_file[0])
		return 0;
	f = fopen(c->peers_file, "re");
	if (!f) {
		e = errno;
		return file_fail(&pf, -e, "cannot open: %s", strerror(e));
	}
	rc = peer_index_build(&pf.ix, c->peers, c->n_peers);
	if (rc < 0)
		rc = file_fail(&pf, -ENOMEM, "out of memory");
	else
		rc = read_lines(&pf, f);
	if (fclose(f) != 0 && rc == 0) {
		e = errno;
		pf.lineno = 0;
		rc = file_fail(&pf, -EIO, "cannot read: %s", strerror(e));
	}
	if (rc < 0)
		c->n_peers = pf.n_before;	/* the file adds all or nothing */
	peer_index_free(&pf.ix);
	free(pf.line_of);
	return rc;
}

int config_finish(struct config *c, const char *path, char *err, size_t errlen)
{
	int rc = config_read_peers_file(c, err, errlen);

	return rc ? rc : config_check_peers(c, path, err, errlen);
}
