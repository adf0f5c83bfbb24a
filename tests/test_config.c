/*
 * test_config.c - sluiced.conf parsing: every kind of bad input gives its
 * documented return code and exact one-line message; a full valid file
 * sets every field; the host:port and byte-count parsers; --print-config
 * output loads back to the same configuration; reload applies exactly the
 * reloadable keys; the command-line options set keys by the file's rules.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* By path: a top-level config.h (autoconf's) would shadow it via -I. */
#include "config.h"
#include "log.h"
#include "sluice.h"

#define ERRLEN 512

/* Path of the file the last load_text() read; messages start with it. */
static char conf_path[64];

static void write_file(const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd;

	snprintf(conf_path, sizeof(conf_path), "/tmp/sluice-test-config-XXXXXX");
	fd = mkstemp(conf_path);
	ck_assert_int_ge(fd, 0);
	n = write(fd, text, len);
	ck_assert_int_eq(n, (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
}

/* config_defaults() + config_load() of @text from a fresh temp file. */
static int load_text(const char *text, struct config *c, char *err, size_t errlen)
{
	int rc;

	ck_assert_int_eq(config_defaults(c), 0);
	write_file(text);
	rc = config_load(c, conf_path, err, errlen);
	unlink(conf_path);
	return rc;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Field by field: struct copies need not preserve padding bytes. */
static bool config_eq(const struct config *a, const struct config *b)
{
	size_t i;

	if (strcmp(a->node_name, b->node_name) || a->node_id != b->node_id ||
	    strcmp(a->runtime_dir, b->runtime_dir) || a->log_level != b->log_level ||
	    strcmp(a->client_group, b->client_group) ||
	    strcmp(a->admin_group, b->admin_group) ||
	    a->shutdown_drain_ms != b->shutdown_drain_ms ||
	    strcmp(a->peers_file, b->peers_file) || a->default_port != b->default_port ||
	    a->transport != b->transport || strcmp(a->device, b->device) ||
	    a->listen_set != b->listen_set ||
	    strcmp(a->listen_host, b->listen_host) || a->listen_port != b->listen_port ||
	    a->eager_max != b->eager_max || a->arena_bytes != b->arena_bytes ||
	    a->max_queues != b->max_queues ||
	    a->unexpected_max_bytes != b->unexpected_max_bytes ||
	    a->sq_depth != b->sq_depth || a->max_mr != b->max_mr ||
	    a->eager_credits != b->eager_credits || a->link_backlog_max != b->link_backlog_max ||
	    a->socket_buffer != b->socket_buffer ||
	    a->peer_timeout_ms != b->peer_timeout_ms || a->ack_timeout_ms != b->ack_timeout_ms ||
	    a->redial_min_ms != b->redial_min_ms || a->redial_max_ms != b->redial_max_ms ||
	    a->client_max_queues != b->client_max_queues ||
	    a->client_max_arena_bytes != b->client_max_arena_bytes ||
	    a->client_max_inflight != b->client_max_inflight ||
	    a->rcache_chunk_bytes != b->rcache_chunk_bytes ||
	    a->rcache_max_regions != b->rcache_max_regions ||
	    a->rcache_max_bytes != b->rcache_max_bytes ||
	    a->rcache_max_waiters != b->rcache_max_waiters ||
	    a->rcache_max_wait_ms != b->rcache_max_wait_ms ||
	    a->fault_post_enomem_every != b->fault_post_enomem_every ||
	    a->fault_reg_fail_after != b->fault_reg_fail_after ||
	    a->fault_delay_completions_us != b->fault_delay_completions_us ||
	    a->fault_cut_after_frames != b->fault_cut_after_frames ||
	    a->fault_cut_every_frames != b->fault_cut_every_frames ||
	    a->fault_write_shift_bytes != b->fault_write_shift_bytes ||
	    a->fault_write_replay != b->fault_write_replay ||
	    a->n_peers != b->n_peers)
		return false;
	for (i = 0; i < a->n_peers; i++) {
		if (strcmp(a->peers[i].name, b->peers[i].name) ||
		    a->peers[i].node_id != b->peers[i].node_id ||
		    strcmp(a->peers[i].host, b->peers[i].host) ||
		    a->peers[i].port != b->peers[i].port)
			return false;
	}
	return true;
}

static void assert_err(const char *name, const char *err, const char *suffix)
{
	char want[ERRLEN];

	snprintf(want, sizeof(want), "%s%s", conf_path, suffix);
	ck_assert_msg(strcmp(err, want) == 0, "%s:\n got: %s\nwant: %s", name, err, want);
}

/* ------------------------------------------------------------------ */
/* Bad files                                                            */
/* ------------------------------------------------------------------ */

/* Two names with the same FNV-1a hash, found by brute force. */
#define COLL_A "n559369"
#define COLL_B "n1082633"
#define COLL_ID "0x0205d9e6"

#define LISTEN "[transport]\nlisten = 127.0.0.1:7400\n"

struct bad_case {
	const char *name;
	const char *text;
	int rc;
	const char *msg;	/* expected message after the file name */
};

static const struct bad_case bad_cases[] = {
	/* [ports] (docs/limits.md: ranges reserved for a user or group). */
	{ "ports: not a range", "[ports]\n7000-6000 = uid:0\n", -EINVAL,
	  ":2: [ports] 7000-6000 = uid:0: not a port or a range LO-HI of ports 1..65535" },
	{ "ports: port 0", "[ports]\n0 = uid:0\n", -EINVAL,
	  ":2: [ports] 0 = uid:0: not a port or a range LO-HI of ports 1..65535" },
	{ "ports: overlap", "[ports]\n5000-5999 = uid:1\n5999-6000 = gid:2\n", -EINVAL,
	  ":3: [ports] 5999-6000 = gid:2: overlaps another range" },
	{ "ports: owner", "[ports]\n5000 = alice\n", -EINVAL,
	  ":2: [ports] 5000 = alice: owner must be user:NAME, group:NAME, uid:N or gid:N" },
	{ "ports: no such group", "[ports]\n5000 = group:no-such-group-here\n", -EINVAL,
	  ":2: [ports] 5000 = group:no-such-group-here: no such group" },
	/* Sections. */
	{ "unknown section", "[bogus]\n", -EINVAL,
	  ":1: [bogus]: unknown section (allowed: daemon, transport, limits, rcache, fault, security, peers, ports)" },
	{ "unknown empty section later", "; comment\n[daemon]\nnode = a\n\n[bogus]\n", -EINVAL,
	  ":5: [bogus]: unknown section (allowed: daemon, transport, limits, rcache, fault, security, peers, ports)" },
	{ "section name is case-sensitive", "[Daemon]\nnode = a\n", -EINVAL,
	  ":1: [Daemon]: unknown section (allowed: daemon, transport, limits, rcache, fault, security, peers, ports)" },
	{ "text after section header", "[daemon] extra\n", -EINVAL,
	  ":1: [daemon]: text after the section header (allowed: a ; comment)" },
	{ "key before any section", "node = a\n", -EINVAL,
	  ":1: node: key before any section (allowed: in [daemon], [transport], [limits], [rcache], [fault], [security], [peers] or [ports])" },

	/* Unknown keys, one per section. */
	{ "unknown key daemon", "[daemon]\nnode = a\ncolour = red\n", -EINVAL,
	  ":3: [daemon] colour: unknown key (allowed: node, runtime_dir, log_level, client_group, admin_group, shutdown_drain_ms, peers_file)" },
	{ "unknown key transport", "[transport]\nport = 7400\n", -EINVAL,
	  ":2: [transport] port: unknown key (allowed: kind, device, listen, default_port, eager_max, sq_depth, max_mr, eager_credits, socket_buffer, peer_timeout_ms, ack_timeout_ms, redial_min_ms, redial_max_ms, idle_link_ms)" },
	{ "unknown key limits", "[limits]\n\nmax_peers = 3\n", -EINVAL,
	  ":3: [limits] max_peers: unknown key (allowed: arena_bytes, max_queues, unexpected_max_bytes, unexpected_total_bytes, link_backlog_max, max_links, max_resolved_peers, client_max_queues, client_max_arena_bytes, client_max_inflight, uid_max_contexts, uid_max_queues, uid_max_arena_bytes, uid_max_inflight)" },
	{ "unknown key rcache", "[rcache]\nsize = 1G\n", -EINVAL,
	  ":2: [rcache] size: unknown key (allowed: chunk_bytes, max_regions, max_bytes, max_waiters, max_wait_ms)" },
	{ "unknown key fault", "[fault]\ndrop_every = 3\n", -EINVAL,
	  ":2: [fault] drop_every: unknown key (allowed: post_enomem_every, reg_fail_after, delay_completions_us, resolve_delay_ms, cut_after_frames, cut_every_frames, write_shift_bytes, write_replay)" },
	{ "key in wrong section", "[daemon]\neager_max = 1\n", -EINVAL,
	  ":2: [daemon] eager_max: unknown key (allowed: node, runtime_dir, log_level, client_group, admin_group, shutdown_drain_ms, peers_file)" },
	{ "rcache key in [limits]", "[limits]\nmax_bytes = 1G\n", -EINVAL,
	  ":2: [limits] max_bytes: unknown key (allowed: arena_bytes, max_queues, unexpected_max_bytes, unexpected_total_bytes, link_backlog_max, max_links, max_resolved_peers, client_max_queues, client_max_arena_bytes, client_max_inflight, uid_max_contexts, uid_max_queues, uid_max_arena_bytes, uid_max_inflight)" },
	{ "limits key in [rcache]", "[rcache]\nmax_queues = 4\n", -EINVAL,
	  ":2: [rcache] max_queues: unknown key (allowed: chunk_bytes, max_regions, max_bytes, max_waiters, max_wait_ms)" },
	{ "section name rcache is case-sensitive", "[RCache]\n", -EINVAL,
	  ":1: [RCache]: unknown section (allowed: daemon, transport, limits, rcache, fault, security, peers, ports)" },

	/* Syntax (reported by inih). */
	{ "line without =", "[daemon]\nnode = a\n\njunk\n", -EINVAL, ":4: syntax error" },
	{ "section without ]", "[daemon\nnode = a\n", -EINVAL, ":1: syntax error" },
	{ "syntax error before a bad key wins", "[daemon]\njunk\ncolour = x\n", -EINVAL,
	  ":2: syntax error" },
	{ "bad key before a syntax error wins", "[daemon]\ncolour = x\njunk\n", -EINVAL,
	  ":2: [daemon] colour: unknown key (allowed: node, runtime_dir, log_level, client_group, admin_group, shutdown_drain_ms, peers_file)" },
	{ "indented line", "[daemon]\nnode = a\n  log_level = debug\n", -EINVAL,
	  ":3: line is indented (allowed: keys and [sections] start in the first column)" },
	{ "indented section", "[daemon]\nnode = a\n [limits]\n", -EINVAL,
	  ":3: line is indented (allowed: keys and [sections] start in the first column)" },
	{ "overlong line",
	  "[daemon]\n;"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
	  /* inih's line buffer is 200 bytes (INI_MAX_LINE): 197 + "\r\n\0". */
	  -EINVAL, ":2: line is too long (allowed: up to 197 characters)" },

	/* Duplicate keys. */
	{ "duplicate key", "[daemon]\nnode = a\nlog_level = info\nnode = b\n", -EINVAL,
	  ":4: [daemon] node: given twice (first on line 2)" },
	{ "duplicate key across repeated section",
	  "[limits]\nmax_queues = 4\n[daemon]\nnode = a\n[limits]\nmax_queues = 5\n", -EINVAL,
	  ":6: [limits] max_queues: given twice (first on line 2)" },
	{ "duplicate transport sq_depth", "[transport]\nsq_depth = 16\nmax_mr = 8\nsq_depth = 32\n", -EINVAL,
	  ":4: [transport] sq_depth: given twice (first on line 2)" },
	{ "duplicate transport max_mr", "[transport]\nmax_mr = 8\n[daemon]\n[transport]\nmax_mr = 9\n", -EINVAL,
	  ":5: [transport] max_mr: given twice (first on line 2)" },
	{ "duplicate rcache key across repeated section",
	  "[rcache]\nmax_bytes = 1G\n[fault]\nreg_fail_after = 3\n[rcache]\nmax_bytes = 2G\n", -EINVAL,
	  ":6: [rcache] max_bytes: given twice (first on line 2)" },
	{ "duplicate rcache chunk_bytes", "[rcache]\nchunk_bytes = 4K\nchunk_bytes = 4K\n", -EINVAL,
	  ":3: [rcache] chunk_bytes: given twice (first on line 2)" },
	{ "duplicate fault key", "[fault]\nreg_fail_after = 0\npost_enomem_every = 2\nreg_fail_after = 1\n", -EINVAL,
	  ":4: [fault] reg_fail_after: given twice (first on line 2)" },
	{ "duplicate max_regions in a repeated [rcache]",
	  "[rcache]\nmax_bytes = 1G\n[limits]\nmax_queues = 2\n[rcache]\nmax_regions = 1\nmax_regions = 2\n", -EINVAL,
	  ":7: [rcache] max_regions: given twice (first on line 6)" },

	/* [daemon] values. */
	{ "bad node name chars", "[daemon]\nnode = my node\n", -EINVAL,
	  ":2: [daemon] node: 'my node' is not a valid node name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -)" },
	{ "bad node name slash", "[daemon]\nnode = a/b\n", -EINVAL,
	  ":2: [daemon] node: 'a/b' is not a valid node name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -)" },
	{ "empty node name", "[daemon]\nnode =\n", -EINVAL,
	  ":2: [daemon] node: '' is not a valid node name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -)" },
	{ "node name of 64 chars",
	  "[daemon]\nnode = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", -EINVAL,
	  ":2: [daemon] node: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is not a valid node name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -)" },
	{ "relative runtime_dir", "[daemon]\nruntime_dir = run/sluice\n", -EINVAL,
	  ":2: [daemon] runtime_dir: 'run/sluice' is not an absolute path (allowed: an absolute path of at most 95 characters)" },
	{ "runtime_dir of 96 chars",
	  "[daemon]\nruntime_dir = /"
	  "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr\n",
	  -EINVAL,
	  ":2: [daemon] runtime_dir: path is too long (allowed: an absolute path of at most 95 characters)" },
	{ "bad log level", "[daemon]\nlog_level = loud\n", -EINVAL,
	  ":2: [daemon] log_level: 'loud' is not a log level (allowed: error, warn, info, debug)" },
	{ "log level is case-sensitive", "[daemon]\nlog_level = DEBUG\n", -EINVAL,
	  ":2: [daemon] log_level: 'DEBUG' is not a log level (allowed: error, warn, info, debug)" },

	/* [transport] values. */
	{ "bad kind", "[transport]\nkind = udp\n", -EINVAL,
	  ":2: [transport] kind: 'udp' is not a transport (allowed: tcp, verbs, auto)" },
	{ "kind is case-sensitive", "[transport]\nkind = Verbs\n", -EINVAL,
	  ":2: [transport] kind: 'Verbs' is not a transport (allowed: tcp, verbs, auto)" },
	{ "device with a slash", "[transport]\nkind = verbs\ndevice = mlx5/0\n", -EINVAL,
	  ":3: [transport] device: 'mlx5/0' is not a device name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -, or empty for the first device with an active port)" },
	{ "device of 64 chars",
	  "[transport]\ndevice = dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd\n",
	  -EINVAL,
	  ":2: [transport] device: 'dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd' is not a device name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -, or empty for the first device with an active port)" },
	{ "device given twice", "[transport]\ndevice = rxe0\ndevice = rxe1\n", -EINVAL,
	  ":3: [transport] device: given twice (first on line 2)" },
	{ "eager_max out of range", "[transport]\neager_max = 2000000\n", -EINVAL,
	  ":2: [transport] eager_max: 2000000 is out of range (allowed: 0..1048576 bytes)" },
	{ "eager_max suffix out of range", "[transport]\neager_max = 2M\n", -EINVAL,
	  ":2: [transport] eager_max: 2M is out of range (allowed: 0..1048576 bytes)" },
	{ "eager_max not a number", "[transport]\neager_max = lots\n", -EINVAL,
	  ":2: [transport] eager_max: 'lots' is not a byte count (allowed: digits with an optional K, M or G suffix)" },
	{ "eager_max negative", "[transport]\neager_max = -1\n", -EINVAL,
	  ":2: [transport] eager_max: '-1' is not a byte count (allowed: digits with an optional K, M or G suffix)" },
	{ "listen without port", "[transport]\nlisten = localhost\n", -EINVAL,
	  ":2: [transport] listen: 'localhost' has no port (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "listen with empty port", "[transport]\nlisten = localhost:\n", -EINVAL,
	  ":2: [transport] listen: 'localhost:' has no port (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "listen port 0", "[transport]\nlisten = localhost:0\n", -EINVAL,
	  ":2: [transport] listen: 'localhost:0' has a port out of range (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "listen port 70000", "[transport]\nlisten = localhost:70000\n", -EINVAL,
	  ":2: [transport] listen: 'localhost:70000' has a port out of range (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "listen empty host", "[transport]\nlisten = :7400\n", -EINVAL,
	  ":2: [transport] listen: ':7400' has an empty host (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "listen junk after port", "[transport]\nlisten = h:7400x\n", -EINVAL,
	  ":2: [transport] listen: 'h:7400x' has junk after the port (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "listen bare IPv6", "[transport]\nlisten = ::1:7400\n", -EINVAL,
	  ":2: [transport] listen: '::1:7400' needs [brackets] around an IPv6 address (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "listen empty", "[transport]\nlisten =\n", -EINVAL,
	  ":2: [transport] listen: '' is empty (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "sq_depth 3 below min", "[transport]\nsq_depth = 3\n", -EINVAL,
	  ":2: [transport] sq_depth: 3 is out of range (allowed: 4..65536)" },
	{ "sq_depth 0", "[transport]\nsq_depth = 0\n", -EINVAL,
	  ":2: [transport] sq_depth: 0 is out of range (allowed: 4..65536)" },
	{ "sq_depth 65537 above max", "[transport]\nsq_depth = 65537\n", -EINVAL,
	  ":2: [transport] sq_depth: 65537 is out of range (allowed: 4..65536)" },
	{ "sq_depth overflow", "[transport]\nsq_depth = 18446744073709551616\n", -EINVAL,
	  ":2: [transport] sq_depth: 18446744073709551616 is out of range (allowed: 4..65536)" },
	{ "sq_depth takes no suffix", "[transport]\nsq_depth = 1K\n", -EINVAL,
	  ":2: [transport] sq_depth: '1K' is not a number (allowed: 4..65536)" },
	{ "sq_depth negative", "[transport]\nsq_depth = -16\n", -EINVAL,
	  ":2: [transport] sq_depth: '-16' is not a number (allowed: 4..65536)" },
	{ "sq_depth empty", "[transport]\nsq_depth =\n", -EINVAL,
	  ":2: [transport] sq_depth: '' is not a number (allowed: 4..65536)" },
	{ "max_mr 0 below min", "[transport]\nmax_mr = 0\n", -EINVAL,
	  ":2: [transport] max_mr: 0 is out of range (allowed: 1..1048576)" },
	{ "max_mr 1048577 above max", "[transport]\nmax_mr = 1048577\n", -EINVAL,
	  ":2: [transport] max_mr: 1048577 is out of range (allowed: 1..1048576)" },
	{ "max_mr takes no suffix", "[transport]\nmax_mr = 64K\n", -EINVAL,
	  ":2: [transport] max_mr: '64K' is not a number (allowed: 1..1048576)" },

	/* [limits] values. */
	{ "arena_bytes 1K too small", "[limits]\narena_bytes = 1K\n", -EINVAL,
	  ":2: [limits] arena_bytes: 1K is out of range (allowed: 1M..16G bytes)" },
	{ "arena_bytes 17G too big", "[limits]\narena_bytes = 17G\n", -EINVAL,
	  ":2: [limits] arena_bytes: 17G is out of range (allowed: 1M..16G bytes)" },
	{ "arena_bytes 12Q", "[limits]\narena_bytes = 12Q\n", -EINVAL,
	  ":2: [limits] arena_bytes: '12Q' is not a byte count (allowed: digits with an optional K, M or G suffix)" },
	{ "arena_bytes overflow", "[limits]\narena_bytes = 18446744073709551616\n", -EINVAL,
	  ":2: [limits] arena_bytes: 18446744073709551616 is out of range (allowed: 1M..16G bytes)" },
	{ "max_queues 0", "[limits]\nmax_queues = 0\n", -EINVAL,
	  ":2: [limits] max_queues: 0 is out of range (allowed: 1..65536)" },
	{ "max_queues 65537", "[limits]\nmax_queues = 65537\n", -EINVAL,
	  ":2: [limits] max_queues: 65537 is out of range (allowed: 1..65536)" },
	{ "max_queues takes no suffix", "[limits]\nmax_queues = 1K\n", -EINVAL,
	  ":2: [limits] max_queues: '1K' is not a number (allowed: 1..65536)" },
	{ "socket_buffer 1023", "[transport]\nsocket_buffer = 1023\n", -EINVAL,
	  ":2: [transport] socket_buffer: 1023 is out of range (allowed: 0, or 1K..64M bytes)" },
	{ "socket_buffer 65M", "[transport]\nsocket_buffer = 65M\n", -EINVAL,
	  ":2: [transport] socket_buffer: 65M is out of range (allowed: 0, or 1K..64M bytes)" },
	{ "eager_credits 0", "[transport]\neager_credits = 0\n", -EINVAL,
	  ":2: [transport] eager_credits: 0 is out of range (allowed: 1..65536)" },
	{ "eager_credits 65537", "[transport]\neager_credits = 65537\n", -EINVAL,
	  ":2: [transport] eager_credits: 65537 is out of range (allowed: 1..65536)" },
	{ "peer_timeout_ms 0", "[transport]\npeer_timeout_ms = 0\n", -EINVAL,
	  ":2: [transport] peer_timeout_ms: 0 is out of range (allowed: 1..86400000)" },
	{ "peer_timeout_ms 86400001", "[transport]\npeer_timeout_ms = 86400001\n", -EINVAL,
	  ":2: [transport] peer_timeout_ms: 86400001 is out of range (allowed: 1..86400000)" },
	{ "peer_timeout_ms takes no unit", "[transport]\npeer_timeout_ms = 30s\n", -EINVAL,
	  ":2: [transport] peer_timeout_ms: '30s' is not a number (allowed: 1..86400000)" },
	{ "ack_timeout_ms 0", "[transport]\nack_timeout_ms = 0\n", -EINVAL,
	  ":2: [transport] ack_timeout_ms: 0 is out of range (allowed: 1..3600000)" },
	{ "ack_timeout_ms 3600001", "[transport]\nack_timeout_ms = 3600001\n", -EINVAL,
	  ":2: [transport] ack_timeout_ms: 3600001 is out of range (allowed: 1..3600000)" },
	{ "redial_min_ms 0", "[transport]\nredial_min_ms = 0\n", -EINVAL,
	  ":2: [transport] redial_min_ms: 0 is out of range (allowed: 1..3600000)" },
	{ "redial_min_ms 3600001", "[transport]\nredial_min_ms = 3600001\n", -EINVAL,
	  ":2: [transport] redial_min_ms: 3600001 is out of range (allowed: 1..3600000)" },
	{ "redial_max_ms 0", "[transport]\nredial_max_ms = 0\n", -EINVAL,
	  ":2: [transport] redial_max_ms: 0 is out of range (allowed: 1..3600000)" },
	{ "redial_max_ms 3600001", "[transport]\nredial_max_ms = 3600001\n", -EINVAL,
	  ":2: [transport] redial_max_ms: 3600001 is out of range (allowed: 1..3600000)" },
	{ "duplicate redial_max_ms", "[transport]\nredial_max_ms = 10\nredial_max_ms = 20\n", -EINVAL,
	  ":3: [transport] redial_max_ms: given twice (first on line 2)" },
	/* redial_min_ms <= redial_max_ms, checked after the file, at the
	 * later of the two keys (or the one given). */
	{ "redial_min_ms above redial_max_ms, max later",
	  "[transport]\nredial_min_ms = 100\nredial_max_ms = 99\n", -EINVAL,
	  ":3: [transport] redial_max_ms: 99 is less than redial_min_ms 100 (allowed: redial_min_ms <= redial_max_ms)" },
	{ "redial_min_ms above redial_max_ms, min later",
	  "[transport]\nredial_max_ms = 10\n[daemon]\nnode = a\n[transport]\nredial_min_ms = 11\n", -EINVAL,
	  ":6: [transport] redial_min_ms: 11 is greater than redial_max_ms 10 (allowed: redial_min_ms <= redial_max_ms)" },
	{ "redial_min_ms above the default redial_max_ms",
	  "[transport]\nredial_min_ms = 2001\n", -EINVAL,
	  ":2: [transport] redial_min_ms: 2001 is greater than redial_max_ms 2000 (allowed: redial_min_ms <= redial_max_ms)" },
	{ "redial_max_ms below the default redial_min_ms",
	  "[transport]\nredial_max_ms = 49\n", -EINVAL,
	  ":2: [transport] redial_max_ms: 49 is less than redial_min_ms 50 (allowed: redial_min_ms <= redial_max_ms)" },
	{ "redial check comes before the peer checks",
	  "[daemon]\nnode = a\n[transport]\nredial_min_ms = 5000\n[peers]\nb = h:1\n", -EINVAL,
	  ":4: [transport] redial_min_ms: 5000 is greater than redial_max_ms 2000 (allowed: redial_min_ms <= redial_max_ms)" },
	{ "an error in the file wins over the redial check",
	  "[transport]\nredial_min_ms = 5000\nbogus = 1\n", -EINVAL,
	  ":3: [transport] bogus: unknown key (allowed: kind, device, listen, default_port, eager_max, sq_depth, max_mr, eager_credits, socket_buffer, peer_timeout_ms, ack_timeout_ms, redial_min_ms, redial_max_ms, idle_link_ms)" },
	{ "link_backlog_max 0", "[limits]\nlink_backlog_max = 0\n", -EINVAL,
	  ":2: [limits] link_backlog_max: 0 is out of range (allowed: 1..1048576)" },
	{ "link_backlog_max 1048577", "[limits]\nlink_backlog_max = 1048577\n", -EINVAL,
	  ":2: [limits] link_backlog_max: 1048577 is out of range (allowed: 1..1048576)" },
	{ "client_max_queues 0", "[limits]\nclient_max_queues = 0\n", -EINVAL,
	  ":2: [limits] client_max_queues: 0 is out of range (allowed: 1..65536)" },
	{ "client_max_queues 65537", "[limits]\nclient_max_queues = 65537\n", -EINVAL,
	  ":2: [limits] client_max_queues: 65537 is out of range (allowed: 1..65536)" },
	{ "client_max_arena_bytes 1023K", "[limits]\nclient_max_arena_bytes = 1023K\n", -EINVAL,
	  ":2: [limits] client_max_arena_bytes: 1023K is out of range (allowed: 1M..1024G bytes)" },
	{ "client_max_arena_bytes 1025G", "[limits]\nclient_max_arena_bytes = 1025G\n", -EINVAL,
	  ":2: [limits] client_max_arena_bytes: 1025G is out of range (allowed: 1M..1024G bytes)" },
	{ "client_max_inflight 0", "[limits]\nclient_max_inflight = 0\n", -EINVAL,
	  ":2: [limits] client_max_inflight: 0 is out of range (allowed: 1..16777216)" },
	{ "client_max_inflight 16777217", "[limits]\nclient_max_inflight = 16777217\n", -EINVAL,
	  ":2: [limits] client_max_inflight: 16777217 is out of range (allowed: 1..16777216)" },
	{ "unexpected_max_bytes one below 64K", "[limits]\nunexpected_max_bytes = 65535\n", -EINVAL,
	  ":2: [limits] unexpected_max_bytes: 65535 is out of range (allowed: 64K..64G bytes)" },
	{ "unexpected_max_bytes 63K too small", "[limits]\nunexpected_max_bytes = 63K\n", -EINVAL,
	  ":2: [limits] unexpected_max_bytes: 63K is out of range (allowed: 64K..64G bytes)" },
	{ "unexpected_max_bytes 0", "[limits]\nunexpected_max_bytes = 0\n", -EINVAL,
	  ":2: [limits] unexpected_max_bytes: 0 is out of range (allowed: 64K..64G bytes)" },
	{ "unexpected_max_bytes 65G too big", "[limits]\nunexpected_max_bytes = 65G\n", -EINVAL,
	  ":2: [limits] unexpected_max_bytes: 65G is out of range (allowed: 64K..64G bytes)" },
	{ "unexpected_max_bytes one above 64G", "[limits]\nunexpected_max_bytes = 68719476737\n", -EINVAL,
	  ":2: [limits] unexpected_max_bytes: 68719476737 is out of range (allowed: 64K..64G bytes)" },
	{ "unexpected_max_bytes garbage", "[limits]\nunexpected_max_bytes = plenty\n", -EINVAL,
	  ":2: [limits] unexpected_max_bytes: 'plenty' is not a byte count (allowed: digits with an optional K, M or G suffix)" },
	{ "unexpected_max_bytes bad suffix", "[limits]\nunexpected_max_bytes = 64MB\n", -EINVAL,
	  ":2: [limits] unexpected_max_bytes: '64MB' is not a byte count (allowed: digits with an optional K, M or G suffix)" },
	{ "unexpected_total_bytes one below 64K", "[limits]\nunexpected_total_bytes = 65535\n",
	  -EINVAL, ":2: [limits] unexpected_total_bytes: 65535 is out of range (allowed: 64K..1024G bytes)" },
	{ "unexpected_total_bytes 1025G too big", "[limits]\nunexpected_total_bytes = 1025G\n",
	  -EINVAL, ":2: [limits] unexpected_total_bytes: 1025G is out of range (allowed: 64K..1024G bytes)" },
	{ "unexpected_max_bytes given twice", "[limits]\nunexpected_max_bytes = 1M\nunexpected_max_bytes = 2M\n", -EINVAL,
	  ":3: [limits] unexpected_max_bytes: given twice (first on line 2)" },

	/* [rcache] values. */
	{ "chunk_bytes 2K below min", "[rcache]\nchunk_bytes = 2K\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: 2K is out of range (allowed: 4K..1G bytes, a power of two)" },
	{ "chunk_bytes one below 4K", "[rcache]\nchunk_bytes = 4095\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: 4095 is out of range (allowed: 4K..1G bytes, a power of two)" },
	{ "chunk_bytes 0", "[rcache]\nchunk_bytes = 0\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: 0 is out of range (allowed: 4K..1G bytes, a power of two)" },
	{ "chunk_bytes 2G above max", "[rcache]\nchunk_bytes = 2G\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: 2G is out of range (allowed: 4K..1G bytes, a power of two)" },
	{ "chunk_bytes one above 1G: range before power of two", "[rcache]\nchunk_bytes = 1073741825\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: 1073741825 is out of range (allowed: 4K..1G bytes, a power of two)" },
	{ "chunk_bytes 3M not a power of two", "[rcache]\nchunk_bytes = 3M\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: 3M must be a power of two (allowed: 4K..1G bytes, a power of two)" },
	{ "chunk_bytes 12288 not a power of two", "[rcache]\nchunk_bytes = 12288\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: 12288 must be a power of two (allowed: 4K..1G bytes, a power of two)" },
	{ "chunk_bytes 1G minus 4K not a power of two", "[rcache]\nchunk_bytes = 1073737728\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: 1073737728 must be a power of two (allowed: 4K..1G bytes, a power of two)" },
	{ "chunk_bytes 2MB bad suffix", "[rcache]\nchunk_bytes = 2MB\n", -EINVAL,
	  ":2: [rcache] chunk_bytes: '2MB' is not a byte count (allowed: digits with an optional K, M or G suffix)" },
	{ "max_regions negative", "[rcache]\nmax_regions = -1\n", -EINVAL,
	  ":2: [rcache] max_regions: '-1' is not a number (allowed: 0..1048576)" },
	{ "max_regions 1048577 above max", "[rcache]\nmax_regions = 1048577\n", -EINVAL,
	  ":2: [rcache] max_regions: 1048577 is out of range (allowed: 0..1048576)" },
	{ "max_regions takes no suffix", "[rcache]\nmax_regions = 1K\n", -EINVAL,
	  ":2: [rcache] max_regions: '1K' is not a number (allowed: 0..1048576)" },
	{ "max_bytes negative", "[rcache]\nmax_bytes = -1\n", -EINVAL,
	  ":2: [rcache] max_bytes: '-1' is not a byte count (allowed: digits with an optional K, M or G suffix)" },
	{ "max_bytes 1025G above max", "[rcache]\nmax_bytes = 1025G\n", -EINVAL,
	  ":2: [rcache] max_bytes: 1025G is out of range (allowed: 0..1024G bytes)" },
	{ "max_bytes one above 1 TiB", "[rcache]\nmax_bytes = 1099511627777\n", -EINVAL,
	  ":2: [rcache] max_bytes: 1099511627777 is out of range (allowed: 0..1024G bytes)" },
	{ "max_bytes T suffix", "[rcache]\nmax_bytes = 1T\n", -EINVAL,
	  ":2: [rcache] max_bytes: '1T' is not a byte count (allowed: digits with an optional K, M or G suffix)" },
	{ "max_waiters negative", "[rcache]\nmax_waiters = -1\n", -EINVAL,
	  ":2: [rcache] max_waiters: '-1' is not a number (allowed: 0..1048576)" },
	{ "max_waiters 1048577 above max", "[rcache]\nmax_waiters = 1048577\n", -EINVAL,
	  ":2: [rcache] max_waiters: 1048577 is out of range (allowed: 0..1048576)" },
	{ "max_wait_ms negative", "[rcache]\nmax_wait_ms = -1\n", -EINVAL,
	  ":2: [rcache] max_wait_ms: '-1' is not a number (allowed: 0..3600000)" },
	{ "max_wait_ms 3600001 above max", "[rcache]\nmax_wait_ms = 3600001\n", -EINVAL,
	  ":2: [rcache] max_wait_ms: 3600001 is out of range (allowed: 0..3600000)" },
	{ "max_wait_ms takes no unit", "[rcache]\nmax_wait_ms = 1s\n", -EINVAL,
	  ":2: [rcache] max_wait_ms: '1s' is not a number (allowed: 0..3600000)" },

	/* [fault] values. */
	{ "post_enomem_every negative", "[fault]\npost_enomem_every = -1\n", -EINVAL,
	  ":2: [fault] post_enomem_every: '-1' is not a number (allowed: 0..1000000)" },
	{ "post_enomem_every 1000001 above max", "[fault]\npost_enomem_every = 1000001\n", -EINVAL,
	  ":2: [fault] post_enomem_every: 1000001 is out of range (allowed: 0..1000000)" },
	{ "reg_fail_after negative", "[fault]\nreg_fail_after = -1\n", -EINVAL,
	  ":2: [fault] reg_fail_after: '-1' is not a number (allowed: 0..4294967295)" },
	{ "reg_fail_after 4294967296 above max", "[fault]\nreg_fail_after = 4294967296\n", -EINVAL,
	  ":2: [fault] reg_fail_after: 4294967296 is out of range (allowed: 0..4294967295)" },
	{ "reg_fail_after UINT64_MAX is not off", "[fault]\nreg_fail_after = 18446744073709551615\n", -EINVAL,
	  ":2: [fault] reg_fail_after: 18446744073709551615 is out of range (allowed: 0..4294967295)" },
	{ "reg_fail_after off is not a value", "[fault]\nreg_fail_after = off\n", -EINVAL,
	  ":2: [fault] reg_fail_after: 'off' is not a number (allowed: 0..4294967295)" },
	{ "delay_completions_us negative", "[fault]\ndelay_completions_us = -1\n", -EINVAL,
	  ":2: [fault] delay_completions_us: '-1' is not a number (allowed: 0..10000000)" },
	{ "delay_completions_us 10000001 above max", "[fault]\ndelay_completions_us = 10000001\n", -EINVAL,
	  ":2: [fault] delay_completions_us: 10000001 is out of range (allowed: 0..10000000)" },
	{ "cut_after_frames negative", "[fault]\ncut_after_frames = -1\n", -EINVAL,
	  ":2: [fault] cut_after_frames: '-1' is not a number (allowed: 0..4294967295)" },
	{ "cut_after_frames 4294967296 above max", "[fault]\ncut_after_frames = 4294967296\n", -EINVAL,
	  ":2: [fault] cut_after_frames: 4294967296 is out of range (allowed: 0..4294967295)" },
	{ "cut_every_frames negative", "[fault]\ncut_every_frames = -1\n", -EINVAL,
	  ":2: [fault] cut_every_frames: '-1' is not a number (allowed: 0..4294967295)" },
	{ "cut_every_frames 4294967296 above max", "[fault]\ncut_every_frames = 4294967296\n", -EINVAL,
	  ":2: [fault] cut_every_frames: 4294967296 is out of range (allowed: 0..4294967295)" },
	{ "duplicate cut_every_frames", "[fault]\ncut_every_frames = 3\ncut_every_frames = 4\n", -EINVAL,
	  ":3: [fault] cut_every_frames: given twice (first on line 2)" },
	{ "write_shift_bytes below -1G", "[fault]\nwrite_shift_bytes = -1073741825\n", -EINVAL,
	  ":2: [fault] write_shift_bytes: '-1073741825' is out of range (allowed: -1073741824..1073741824)" },
	{ "write_shift_bytes not a number", "[fault]\nwrite_shift_bytes = -8K\n", -EINVAL,
	  ":2: [fault] write_shift_bytes: '-8K' is not a number (allowed: -1073741824..1073741824)" },
	{ "write_replay 2", "[fault]\nwrite_replay = 2\n", -EINVAL,
	  ":2: [fault] write_replay: 2 is out of range (allowed: 0..1)" },

	/* [peers] values. */
	{ "bad peer value", LISTEN "[peers]\nb = nowhere\n", -EINVAL,
	  ":4: [peers] b: 'nowhere' has no port (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "bad peer port", LISTEN "[peers]\nb = h:65536\n", -EINVAL,
	  ":4: [peers] b: 'h:65536' has a port out of range (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "bad peer name", LISTEN "[peers]\nb@d = h:1\n", -EINVAL,
	  ":4: [peers] b@d: not a valid node name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -)" },

	/* Checks across the whole file. */
	{ "duplicate peer", "[daemon]\nnode = a\n" LISTEN "[peers]\nb = h:1\nc = h:2\nb = h:3\n", -EINVAL,
	  ": peer 'b' is listed twice" },
	{ "peer with local name", "[daemon]\nnode = a\n" LISTEN "[peers]\na = h:1\n", -EINVAL,
	  ": peer 'a' has the local node's name" },
	{ "peer with local name set later", "[peers]\nb = h:2\na = h:1\n" LISTEN "[daemon]\nnode = a\n",
	  -EINVAL, ": peer 'a' has the local node's name" },
	{ "peers with one node id", "[daemon]\nnode = a\n" LISTEN "[peers]\n" COLL_A " = h:1\n" COLL_B " = h:2\n",
	  -EINVAL, ": peers '" COLL_A "' and '" COLL_B "' have the same node id " COLL_ID "; rename one" },
	{ "peer with the local node id", "[daemon]\nnode = " COLL_A "\n" LISTEN "[peers]\n" COLL_B " = h:2\n",
	  -EINVAL, ": peer '" COLL_B "' and the local node '" COLL_A "' have the same node id " COLL_ID "; rename one" },
	{ "peers without listen", "[daemon]\nnode = a\n[peers]\nb = h:1\n", -EINVAL,
	  ": [peers] given but [transport] listen is not set" },
};

static void test_bad_file(int i)
{
	const struct bad_case *bc = &bad_cases[i];
	struct config c, before;
	char err[ERRLEN];
	int rc;

	memset(err, 'x', sizeof(err));
	rc = load_text(bc->text, &c, err, sizeof(err));
	ck_assert_msg(rc == bc->rc, "%s: rc %d, expected %d (%s)", bc->name, rc, bc->rc, err);
	assert_err(bc->name, err, bc->msg);
	ck_assert_msg(strchr(err, '\n') == NULL, "%s: message is not one line", bc->name);

	/* A bad file leaves the configuration as it was. */
	ck_assert_int_eq(config_defaults(&before), 0);
	ck_assert_msg(config_eq(&c, &before), "%s: config changed", bc->name);
}

START_TEST(bad_file)
{
	test_bad_file(_i);
}
END_TEST

/* No cap on peers (the list grows), and the checks stay linear: 10,000
 * peers load, and a repeated name among them is still found. */
START_TEST(many_peers)
{
	enum { N = 10000 };
	size_t cap = 64 + (N + 1) * 32;
	char *text = malloc(cap);
	struct config c;
	char err[ERRLEN];
	int64_t t0, t1;
	size_t off;
	int i, rc;

	ck_assert_ptr_nonnull(text);
	off = (size_t)snprintf(text, cap, LISTEN "[peers]\n");
	for (i = 0; i < N; i++)
		off += (size_t)snprintf(text + off, cap - off, "p%d = h:%d\n", i, i % 65535 + 1);
	t0 = now_ms();
	rc = load_text(text, &c, err, sizeof(err));
	t1 = now_ms();
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(c.n_peers, N);
	ck_assert_str_eq(c.peers[N - 1].name, "p9999");
	ck_assert_uint_eq(c.peers[N - 1].node_id, sl_node_id("p9999"));
	ck_assert_uint_eq(c.peers[N - 1].port, 10000);
	printf("many_peers: %d [peers] lines loaded and checked in %lld ms\n", N,
	       (long long)(t1 - t0));
	config_release(&c);

	/* One more line, a name given before: on line 3 + N + 1. */
	snprintf(text + off, cap - off, "p17 = h:1\n");
	rc = load_text(text, &c, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	assert_err("a repeat among many", err, ": peer 'p17' is listed twice");
	config_release(&c);
	free(text);
}
END_TEST

START_TEST(missing_file)
{
	struct config c;
	char err[ERRLEN];
	const char *path = "/tmp/sluice-test-config-does-not-exist.conf";

	unlink(path);
	ck_assert_int_eq(config_defaults(&c), 0);
	ck_assert_int_eq(config_load(&c, path, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "/tmp/sluice-test-config-does-not-exist.conf: cannot open: No such file or directory");
}
END_TEST

START_TEST(directory)
{
	struct config c;
	char err[ERRLEN];

	/* fopen() of a directory succeeds; the first read fails. */
	ck_assert_int_eq(config_defaults(&c), 0);
	ck_assert_int_eq(config_load(&c, "/tmp", err, sizeof(err)), -EISDIR);
	ck_assert_str_eq(err, "/tmp: cannot read: Is a directory");
}
END_TEST

START_TEST(short_error_buffer)
{
	struct config c;
	char err[12];
	int rc;

	memset(err, 'x', sizeof(err));
	rc = load_text("[bogus]\n", &c, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_uint_eq(strlen(err), sizeof(err) - 1);
	ck_assert_int_eq(strncmp(err, conf_path, sizeof(err) - 1), 0);

	/* No buffer at all: still the right code. */
	rc = load_text("[bogus]\n", &c, NULL, 0);
	ck_assert_int_eq(rc, -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Good files                                                           */
/* ------------------------------------------------------------------ */

START_TEST(defaults)
{
	struct config c;
	char host[256] = "";

	memset(&c, 0xa5, sizeof(c));
	ck_assert_int_eq(config_defaults(&c), 0);
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	host[CONFIG_NAME_MAX - 1] = '\0';
	ck_assert_str_eq(c.node_name, host[0] ? host : "localhost");
	ck_assert_uint_eq(c.node_id, sl_node_id(c.node_name));
	ck_assert_str_eq(c.runtime_dir, "/run/sluice");
	ck_assert_int_eq(c.log_level, LOG_LVL_INFO);
	ck_assert_int_eq(c.transport, XPORT_TCP);
	ck_assert_str_eq(c.device, "");
	ck_assert(!c.listen_set);
	ck_assert_uint_eq(c.eager_max, 65536);
	ck_assert_uint_eq(c.arena_bytes, 64ull << 20);
	ck_assert_uint_eq(c.max_queues, 1024);
	ck_assert_uint_eq(c.unexpected_max_bytes, 64ull << 20);
	ck_assert_uint_eq(c.unexpected_total_bytes, 256ull << 20);
	ck_assert_uint_eq(c.sq_depth, 1024);
	ck_assert_uint_eq(c.max_mr, 65536);
	ck_assert_uint_eq(c.eager_credits, 256);
	ck_assert_uint_eq(c.socket_buffer, 0);
	ck_assert_uint_eq(c.peer_timeout_ms, 30000);
	ck_assert_uint_eq(c.ack_timeout_ms, 2000);
	ck_assert_uint_eq(c.redial_min_ms, 50);
	ck_assert_uint_eq(c.redial_max_ms, 2000);
	ck_assert_uint_eq(c.link_backlog_max, 4096);
	ck_assert_uint_eq(c.client_max_queues, 256);
	ck_assert_uint_eq(c.client_max_arena_bytes, 64ull << 30);
	ck_assert_uint_eq(c.client_max_inflight, 65536);
	ck_assert_uint_eq(c.rcache_chunk_bytes, 2ull << 20);
	ck_assert_uint_eq(c.rcache_max_regions, 1024);
	ck_assert_uint_eq(c.rcache_max_bytes, 4ull << 30);
	ck_assert_uint_eq(c.rcache_max_waiters, 1024);
	ck_assert_uint_eq(c.rcache_max_wait_ms, 1000);
	ck_assert_uint_eq(c.fault_post_enomem_every, 0);
	ck_assert_uint_eq(c.fault_reg_fail_after, CONFIG_FAULT_OFF);
	ck_assert_uint_eq(c.fault_reg_fail_after, UINT64_MAX);
	ck_assert_uint_eq(c.fault_delay_completions_us, 0);
	ck_assert_uint_eq(c.fault_cut_after_frames, 0);
	ck_assert_uint_eq(c.fault_cut_every_frames, 0);
	ck_assert_int_eq(c.fault_write_shift_bytes, 0);
	ck_assert_uint_eq(c.fault_write_replay, 0);
	ck_assert(!config_faults_on(&c));
	ck_assert_uint_eq(c.n_peers, 0);
}
END_TEST

START_TEST(empty_file)
{
	struct config c, before;
	char err[ERRLEN] = "";

	ck_assert_int_eq(load_text("", &c, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(config_defaults(&before), 0);
	ck_assert(config_eq(&c, &before));

	ck_assert_int_eq(load_text("; only a comment\n\n# and another\n[daemon]\n", &c, err, sizeof(err)), 0);
	ck_assert(config_eq(&c, &before));
}
END_TEST

static const char full_file[] =
	"; sluiced.conf\n"
	"[daemon]\n"
	"node = alpha\n"
	"runtime_dir = /var/run/sluice-test   ; inline comment\n"
	"log_level = debug\n"
	"\n"
	"[transport]\n"
	"kind = auto\n"
	"device = mlx5_0\n"
	"listen = [::1]:7400\n"
	"eager_max = 4K\n"
	"sq_depth = 256\n"
	"max_mr = 4096\n"
	"peer_timeout_ms = 15000\n"
	"ack_timeout_ms = 500\n"
	"redial_min_ms = 20\n"
	"redial_max_ms = 800\n"
	"\n"
	"[limits]\n"
	"arena_bytes = 64M\n"
	"max_queues = 65536\n"
	"unexpected_max_bytes = 3M\n"
	"\n"
	"[rcache]\n"
	"chunk_bytes = 64K\n"
	"max_regions = 77\n"
	"max_bytes = 512M\n"
	"max_waiters = 9\n"
	"max_wait_ms = 250\n"
	"\n"
	"[fault]\n"
	"post_enomem_every = 7\n"
	"reg_fail_after = 100\n"
	"delay_completions_us = 1500\n"
	"cut_after_frames = 40\n"
	"cut_every_frames = 1000\n"
	"write_shift_bytes = -8192\n"
	"write_replay = 1\n"
	"\n"
	"[peers]\n"
	"beta = 10.0.0.2:7401\n"
	"gamma.example = gamma.example.org:65535\n"
	"delta_1 = [fe80::1]:1\n";

START_TEST(full_valid_file)
{
	struct config c;
	char err[ERRLEN] = "";

	ck_assert_int_eq(load_text(full_file, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_str_eq(c.node_name, "alpha");
	/* Recomputed for the file's name, not left at the hostname's id. */
	ck_assert_uint_eq(c.node_id, sl_node_id("alpha"));
	ck_assert_str_eq(c.runtime_dir, "/var/run/sluice-test");
	ck_assert_int_eq(c.log_level, LOG_LVL_DEBUG);
	ck_assert_int_eq(c.transport, XPORT_AUTO);
	ck_assert_str_eq(c.device, "mlx5_0");
	ck_assert(c.listen_set);
	ck_assert_str_eq(c.listen_host, "::1");
	ck_assert_uint_eq(c.listen_port, 7400);
	ck_assert_uint_eq(c.eager_max, 4096);
	ck_assert_uint_eq(c.arena_bytes, 64ull << 20);
	ck_assert_uint_eq(c.max_queues, 65536);
	ck_assert_uint_eq(c.unexpected_max_bytes, 3ull << 20);
	ck_assert_uint_eq(c.sq_depth, 256);
	ck_assert_uint_eq(c.max_mr, 4096);
	ck_assert_uint_eq(c.peer_timeout_ms, 15000);
	ck_assert_uint_eq(c.ack_timeout_ms, 500);
	ck_assert_uint_eq(c.redial_min_ms, 20);
	ck_assert_uint_eq(c.redial_max_ms, 800);
	ck_assert_uint_eq(c.rcache_chunk_bytes, 64u << 10);
	ck_assert_uint_eq(c.rcache_max_regions, 77);
	ck_assert_uint_eq(c.rcache_max_bytes, 512ull << 20);
	ck_assert_uint_eq(c.rcache_max_waiters, 9);
	ck_assert_uint_eq(c.rcache_max_wait_ms, 250);
	ck_assert_uint_eq(c.fault_post_enomem_every, 7);
	ck_assert_uint_eq(c.fault_reg_fail_after, 100);
	ck_assert_uint_eq(c.fault_delay_completions_us, 1500);
	ck_assert_uint_eq(c.fault_cut_after_frames, 40);
	ck_assert_uint_eq(c.fault_cut_every_frames, 1000);
	ck_assert_int_eq(c.fault_write_shift_bytes, -8192);
	ck_assert_uint_eq(c.fault_write_replay, 1);
	ck_assert(config_faults_on(&c));

	ck_assert_uint_eq(c.n_peers, 3);
	ck_assert_str_eq(c.peers[0].name, "beta");
	ck_assert_uint_eq(c.peers[0].node_id, sl_node_id("beta"));
	ck_assert_str_eq(c.peers[0].host, "10.0.0.2");
	ck_assert_uint_eq(c.peers[0].port, 7401);
	ck_assert_str_eq(c.peers[1].name, "gamma.example");
	ck_assert_uint_eq(c.peers[1].node_id, sl_node_id("gamma.example"));
	ck_assert_str_eq(c.peers[1].host, "gamma.example.org");
	ck_assert_uint_eq(c.peers[1].port, 65535);
	ck_assert_str_eq(c.peers[2].name, "delta_1");
	ck_assert_uint_eq(c.peers[2].node_id, sl_node_id("delta_1"));
	ck_assert_str_eq(c.peers[2].host, "fe80::1");
	ck_assert_uint_eq(c.peers[2].port, 1);
	config_release(&c);
}
END_TEST

START_TEST(bounds_accepted)
{
	struct config c;
	char err[ERRLEN] = "";

	ck_assert_int_eq(load_text("[transport]\nkind = tcp\neager_max = 0\nlisten = h:1\n"
				   "[limits]\narena_bytes = 1m\nmax_queues = 1\nunexpected_max_bytes = 64k\n"
				   "[daemon]\nnode = A-Z.a_z-0.9\nruntime_dir = /\nlog_level = error\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.transport, XPORT_TCP);
	ck_assert_uint_eq(c.eager_max, 0);
	ck_assert_uint_eq(c.arena_bytes, 1u << 20);
	ck_assert_uint_eq(c.max_queues, 1);
	ck_assert_uint_eq(c.unexpected_max_bytes, 64u << 10);
	ck_assert_str_eq(c.node_name, "A-Z.a_z-0.9");
	ck_assert_uint_eq(c.node_id, sl_node_id("A-Z.a_z-0.9"));
	ck_assert_str_eq(c.runtime_dir, "/");
	ck_assert_int_eq(c.log_level, LOG_LVL_ERR);

	ck_assert_int_eq(load_text("[transport]\neager_max = 1M\n[limits]\narena_bytes = 16g\n"
				   "unexpected_max_bytes = 64G\n"
				   "[daemon]\nnode = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.eager_max, 1u << 20);
	ck_assert_uint_eq(c.arena_bytes, 16ull << 30);
	ck_assert_uint_eq(c.unexpected_max_bytes, 64ull << 30);
	ck_assert_uint_eq(strlen(c.node_name), 63);

	/* No suffix, exact bounds in plain bytes. */
	ck_assert_int_eq(load_text("[limits]\nunexpected_max_bytes = 65536\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.unexpected_max_bytes, 65536);
	ck_assert_int_eq(load_text("[limits]\nunexpected_max_bytes = 68719476736\n", &c, err,
				   sizeof(err)), 0);
	ck_assert_uint_eq(c.unexpected_max_bytes, 64ull << 30);
}
END_TEST

/* kind = verbs and the device key: every value kind takes, device names
 * as rdma-core spells them, the longest one, and empty for "the first
 * active device". */
START_TEST(transport_kinds)
{
	struct config c;
	char err[ERRLEN] = "";

	ck_assert_int_eq(load_text("[transport]\nkind = verbs\n", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.transport, XPORT_VERBS);
	ck_assert_str_eq(c.device, "");
	ck_assert_int_eq(load_text("[transport]\nkind = tcp\n", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.transport, XPORT_TCP);
	ck_assert_int_eq(load_text("[transport]\nkind = auto\n", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.transport, XPORT_AUTO);

	ck_assert_int_eq(load_text("[transport]\nkind = verbs\ndevice = rxe0\n", &c, err,
				   sizeof(err)), 0);
	ck_assert_int_eq(c.transport, XPORT_VERBS);
	ck_assert_str_eq(c.device, "rxe0");
	ck_assert_int_eq(load_text("[transport]\ndevice = rocep1s0f0\n", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.transport, XPORT_TCP);	/* the device alone picks nothing */
	ck_assert_str_eq(c.device, "rocep1s0f0");
	ck_assert_int_eq(load_text("[transport]\ndevice = "
				   "ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(strlen(c.device), 63);
	ck_assert_int_eq(load_text("[transport]\nkind = auto\ndevice =\n", &c, err, sizeof(err)),
			 0);
	ck_assert_int_eq(c.transport, XPORT_AUTO);
	ck_assert_str_eq(c.device, "");
}
END_TEST

START_TEST(bounds_accepted_new_keys)
{
	struct config c;
	char err[ERRLEN] = "";

	/* Lower bounds. */
	ck_assert_int_eq(load_text("[transport]\nsq_depth = 4\nmax_mr = 1\n"
				   "[rcache]\nchunk_bytes = 4k\nmax_regions = 0\nmax_bytes = 0\n"
				   "max_waiters = 0\nmax_wait_ms = 0\n"
				   "[fault]\npost_enomem_every = 0\nreg_fail_after = 0\n"
				   "delay_completions_us = 0\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_uint_eq(c.sq_depth, 4);
	ck_assert_uint_eq(c.max_mr, 1);
	ck_assert_uint_eq(c.rcache_chunk_bytes, 4096);
	ck_assert_uint_eq(c.rcache_max_regions, 0);
	ck_assert_uint_eq(c.rcache_max_bytes, 0);
	ck_assert_uint_eq(c.rcache_max_waiters, 0);
	ck_assert_uint_eq(c.rcache_max_wait_ms, 0);
	ck_assert_uint_eq(c.fault_post_enomem_every, 0);
	ck_assert_uint_eq(c.fault_reg_fail_after, 0);
	ck_assert_uint_eq(c.fault_delay_completions_us, 0);

	/* Upper bounds. */
	ck_assert_int_eq(load_text("[transport]\nsq_depth = 65536\nmax_mr = 1048576\n"
				   "[rcache]\nchunk_bytes = 1G\nmax_regions = 1048576\nmax_bytes = 1024G\n"
				   "max_waiters = 1048576\nmax_wait_ms = 3600000\n"
				   "[fault]\npost_enomem_every = 1000000\nreg_fail_after = 4294967295\n"
				   "delay_completions_us = 10000000\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.sq_depth, 65536);
	ck_assert_uint_eq(c.max_mr, 1048576);
	ck_assert_uint_eq(c.rcache_chunk_bytes, 1ull << 30);
	ck_assert_uint_eq(c.rcache_max_regions, 1048576);
	ck_assert_uint_eq(c.rcache_max_bytes, 1ull << 40);
	ck_assert_uint_eq(c.rcache_max_waiters, 1048576);
	ck_assert_uint_eq(c.rcache_max_wait_ms, 3600000);
	ck_assert_uint_eq(c.fault_post_enomem_every, 1000000);
	ck_assert_uint_eq(c.fault_reg_fail_after, 4294967295ull);
	ck_assert_uint_eq(c.fault_delay_completions_us, 10000000);

	/* The back-pressure bounds at both ends. */
	ck_assert_int_eq(load_text("[transport]\neager_credits = 1\n[limits]\nlink_backlog_max = 1\n"
				   "client_max_queues = 1\nclient_max_arena_bytes = 1M\n"
				   "client_max_inflight = 1\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.eager_credits, 1);
	ck_assert_int_eq(load_text("[transport]\nsocket_buffer = 1K\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.socket_buffer, 1024);
	ck_assert_int_eq(load_text("[transport]\nsocket_buffer = 64M\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.socket_buffer, 64u << 20);
	ck_assert_int_eq(load_text("[transport]\nsocket_buffer = 0\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.socket_buffer, 0);
	ck_assert_int_eq(load_text("[transport]\neager_credits = 1\n[limits]\nlink_backlog_max = 1\n"
				   "client_max_queues = 1\nclient_max_arena_bytes = 1M\n"
				   "client_max_inflight = 1\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.link_backlog_max, 1);
	ck_assert_uint_eq(c.client_max_queues, 1);
	ck_assert_uint_eq(c.client_max_arena_bytes, 1ull << 20);
	ck_assert_uint_eq(c.client_max_inflight, 1);
	ck_assert_int_eq(load_text("[transport]\neager_credits = 65536\n[limits]\n"
				   "link_backlog_max = 1048576\nclient_max_queues = 65536\n"
				   "client_max_arena_bytes = 1024G\nclient_max_inflight = 16777216\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.eager_credits, 65536);
	ck_assert_uint_eq(c.link_backlog_max, 1048576);
	ck_assert_uint_eq(c.client_max_queues, 65536);
	ck_assert_uint_eq(c.client_max_arena_bytes, 1ull << 40);
	ck_assert_uint_eq(c.client_max_inflight, 16777216);

	/* The link timers at both ends; redial_min_ms == redial_max_ms is
	 * allowed. */
	ck_assert_int_eq(load_text("[transport]\npeer_timeout_ms = 1\nack_timeout_ms = 1\n"
				   "redial_min_ms = 1\nredial_max_ms = 1\n", &c, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_uint_eq(c.peer_timeout_ms, 1);
	ck_assert_uint_eq(c.ack_timeout_ms, 1);
	ck_assert_uint_eq(c.redial_min_ms, 1);
	ck_assert_uint_eq(c.redial_max_ms, 1);
	ck_assert_int_eq(load_text("[transport]\npeer_timeout_ms = 86400000\nack_timeout_ms = 3600000\n"
				   "redial_min_ms = 3600000\nredial_max_ms = 3600000\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.peer_timeout_ms, 86400000);
	ck_assert_uint_eq(c.ack_timeout_ms, 3600000);
	ck_assert_uint_eq(c.redial_min_ms, 3600000);
	ck_assert_uint_eq(c.redial_max_ms, 3600000);
	/* Each redial bound alone, against the other's default. */
	ck_assert_int_eq(load_text("[transport]\nredial_min_ms = 2000\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.redial_min_ms, 2000);
	ck_assert_uint_eq(c.redial_max_ms, 2000);
	ck_assert_int_eq(load_text("[transport]\nredial_max_ms = 50\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.redial_min_ms, 50);
	ck_assert_uint_eq(c.redial_max_ms, 50);
	/* Both raised past the other's default: the check sees the final
	 * values, not the order of the lines. */
	ck_assert_int_eq(load_text("[transport]\nredial_min_ms = 5000\nredial_max_ms = 60000\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.redial_min_ms, 5000);
	ck_assert_uint_eq(c.redial_max_ms, 60000);

	/* The cut faults at both ends (0 = off). */
	ck_assert_int_eq(load_text("[fault]\ncut_after_frames = 0\ncut_every_frames = 0\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.fault_cut_after_frames, 0);
	ck_assert_uint_eq(c.fault_cut_every_frames, 0);
	ck_assert(!config_faults_on(&c));
	ck_assert_int_eq(load_text("[fault]\ncut_after_frames = 1\ncut_every_frames = 1\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.fault_cut_after_frames, 1);
	ck_assert_uint_eq(c.fault_cut_every_frames, 1);
	ck_assert_int_eq(load_text("[fault]\ncut_after_frames = 4294967295\n"
				   "cut_every_frames = 4294967295\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.fault_cut_after_frames, 4294967295ull);
	ck_assert_uint_eq(c.fault_cut_every_frames, 4294967295u);
	/* The shift fault both ways, to its bounds. */
	ck_assert_int_eq(load_text("[fault]\nwrite_shift_bytes = -1073741824\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.fault_write_shift_bytes, -1073741824);
	ck_assert(config_faults_on(&c));
	ck_assert_int_eq(load_text("[fault]\nwrite_shift_bytes = 4096\nwrite_replay = 1\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.fault_write_shift_bytes, 4096);
	ck_assert_uint_eq(c.fault_write_replay, 1);

	/* Byte keys in plain bytes, and in the other suffixes. */
	ck_assert_int_eq(load_text("[rcache]\nchunk_bytes = 1073741824\nmax_bytes = 1099511627776\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.rcache_chunk_bytes, 1ull << 30);
	ck_assert_uint_eq(c.rcache_max_bytes, 1ull << 40);
	ck_assert_int_eq(load_text("[rcache]\nchunk_bytes = 8M\nmax_bytes = 7\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.rcache_chunk_bytes, 8ull << 20);
	ck_assert_uint_eq(c.rcache_max_bytes, 7);
	ck_assert_int_eq(load_text("[rcache]\nchunk_bytes = 4096\nmax_bytes = 3g\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.rcache_chunk_bytes, 4096);
	ck_assert_uint_eq(c.rcache_max_bytes, 3ull << 30);

	/* Keys not in the file keep their defaults. */
	ck_assert_int_eq(load_text("[rcache]\nmax_regions = 5\n", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.rcache_max_regions, 5);
	ck_assert_uint_eq(c.rcache_chunk_bytes, 2ull << 20);
	ck_assert_uint_eq(c.rcache_max_bytes, 4ull << 30);
	ck_assert_uint_eq(c.rcache_max_waiters, 1024);
	ck_assert_uint_eq(c.rcache_max_wait_ms, 1000);
	ck_assert_uint_eq(c.sq_depth, 1024);
	ck_assert_uint_eq(c.max_mr, 65536);
	ck_assert_uint_eq(c.peer_timeout_ms, 30000);
	ck_assert_uint_eq(c.ack_timeout_ms, 2000);
	ck_assert_uint_eq(c.redial_min_ms, 50);
	ck_assert_uint_eq(c.redial_max_ms, 2000);
	ck_assert(!config_faults_on(&c));
}
END_TEST

/* Every power of two from 4K to 1G is a valid chunk_bytes. */
START_TEST(chunk_bytes_powers_of_two)
{
	struct config c;
	char err[ERRLEN] = "";
	char text[64];
	uint64_t v;

	for (v = 4096; v <= (1ull << 30); v <<= 1) {
		snprintf(text, sizeof(text), "[rcache]\nchunk_bytes = %llu\n",
			 (unsigned long long)v);
		ck_assert_msg(load_text(text, &c, err, sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(c.rcache_chunk_bytes, v);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* [fault] and config_faults_on                                         */
/* ------------------------------------------------------------------ */

struct fault_case {
	const char *text;	/* one [fault] key */
	uint32_t post_enomem_every;
	uint64_t reg_fail_after;
	uint32_t delay_completions_us;
	uint64_t cut_after_frames;
	uint32_t cut_every_frames;
};

static const struct fault_case fault_cases[] = {
	{ "[fault]\npost_enomem_every = 1\n", 1, CONFIG_FAULT_OFF, 0, 0, 0 },
	{ "[fault]\npost_enomem_every = 1000000\n", 1000000, CONFIG_FAULT_OFF, 0, 0, 0 },
	{ "[fault]\nreg_fail_after = 0\n", 0, 0, 0, 0, 0 },
	{ "[fault]\nreg_fail_after = 4294967295\n", 0, 4294967295ull, 0, 0, 0 },
	{ "[fault]\ndelay_completions_us = 1\n", 0, CONFIG_FAULT_OFF, 1, 0, 0 },
	{ "[fault]\ndelay_completions_us = 10000000\n", 0, CONFIG_FAULT_OFF, 10000000, 0, 0 },
	{ "[fault]\ncut_after_frames = 1\n", 0, CONFIG_FAULT_OFF, 0, 1, 0 },
	{ "[fault]\ncut_after_frames = 4294967295\n", 0, CONFIG_FAULT_OFF, 0, 4294967295ull, 0 },
	{ "[fault]\ncut_every_frames = 1\n", 0, CONFIG_FAULT_OFF, 0, 0, 1 },
	{ "[fault]\ncut_every_frames = 4294967295\n", 0, CONFIG_FAULT_OFF, 0, 0, 4294967295u },
};

START_TEST(fault_key_turns_faults_on)
{
	const struct fault_case *fc = &fault_cases[_i];
	struct config c;
	char err[ERRLEN] = "";

	ck_assert_msg(load_text(fc->text, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.fault_post_enomem_every, fc->post_enomem_every);
	ck_assert_uint_eq(c.fault_reg_fail_after, fc->reg_fail_after);
	ck_assert_uint_eq(c.fault_delay_completions_us, fc->delay_completions_us);
	ck_assert_uint_eq(c.fault_cut_after_frames, fc->cut_after_frames);
	ck_assert_uint_eq(c.fault_cut_every_frames, fc->cut_every_frames);
	ck_assert_msg(config_faults_on(&c), "%s: faults not on", fc->text);
}
END_TEST

START_TEST(faults_off)
{
	struct config c;
	char err[ERRLEN] = "";

	ck_assert_int_eq(config_defaults(&c), 0);
	ck_assert(!config_faults_on(&c));

	/* Writing the off values explicitly leaves faults off. */
	ck_assert_int_eq(load_text("[fault]\npost_enomem_every = 0\ndelay_completions_us = 0\n"
				   "cut_after_frames = 0\ncut_every_frames = 0\n",
				   &c, err, sizeof(err)), 0);
	ck_assert(!config_faults_on(&c));
	/* An empty [fault] section too. */
	ck_assert_int_eq(load_text("[fault]\n", &c, err, sizeof(err)), 0);
	ck_assert(!config_faults_on(&c));

	/* Each field alone, set directly. */
	ck_assert_int_eq(config_defaults(&c), 0);
	c.fault_post_enomem_every = 3;
	ck_assert(config_faults_on(&c));
	ck_assert_int_eq(config_defaults(&c), 0);
	c.fault_reg_fail_after = 0;
	ck_assert(config_faults_on(&c));
	ck_assert_int_eq(config_defaults(&c), 0);
	c.fault_reg_fail_after = UINT64_MAX - 1;
	ck_assert(config_faults_on(&c));
	ck_assert_int_eq(config_defaults(&c), 0);
	c.fault_delay_completions_us = 5;
	ck_assert(config_faults_on(&c));
	ck_assert_int_eq(config_defaults(&c), 0);
	c.fault_cut_after_frames = 1;
	ck_assert(config_faults_on(&c));
	ck_assert_int_eq(config_defaults(&c), 0);
	c.fault_cut_after_frames = UINT64_MAX;
	ck_assert(config_faults_on(&c));
	ck_assert_int_eq(config_defaults(&c), 0);
	c.fault_cut_every_frames = 2;
	ck_assert(config_faults_on(&c));
}
END_TEST

START_TEST(crlf_and_bom)
{
	struct config c;
	char err[ERRLEN] = "";

	ck_assert_int_eq(load_text("\xEF\xBB\xBF[daemon]\r\nnode = crlf\r\n\r\n[limits]\r\nmax_queues = 7\r\n",
				   &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.node_name, "crlf");
	ck_assert_uint_eq(c.max_queues, 7);

	/* Line numbers still count CRLF lines. */
	ck_assert_int_eq(load_text("[daemon]\r\nnode = a\r\nbad = 1\r\n", &c, err, sizeof(err)), -EINVAL);
	assert_err("crlf", err, ":3: [daemon] bad: unknown key (allowed: node, runtime_dir, log_level, client_group, admin_group, shutdown_drain_ms, peers_file)");
}
END_TEST

/* ------------------------------------------------------------------ */
/* config_parse_hostport                                                */
/* ------------------------------------------------------------------ */

struct hp_case {
	const char *in;
	int rc;
	const char *host;
	uint16_t port;
};

static const struct hp_case hp_cases[] = {
	{ "h:1", 0, "h", 1 },
	{ "localhost:7400", 0, "localhost", 7400 },
	{ "10.0.0.1:65535", 0, "10.0.0.1", 65535 },
	{ "[::1]:7400", 0, "::1", 7400 },
	{ "[fe80::1%eth0]:80", 0, "fe80::1%eth0", 80 },
	{ "h:007400", 0, "h", 7400 },
	{ "", -EINVAL, NULL, 0 },
	{ "h", -EINVAL, NULL, 0 },
	{ "h:", -EINVAL, NULL, 0 },
	{ ":7400", -EINVAL, NULL, 0 },
	{ "h:0", -EINVAL, NULL, 0 },
	{ "h:65536", -EINVAL, NULL, 0 },
	{ "h:70000", -EINVAL, NULL, 0 },
	{ "h:99999999999999999999999", -EINVAL, NULL, 0 },
	{ "h:74x", -EINVAL, NULL, 0 },
	{ "h:+74", -EINVAL, NULL, 0 },
	{ "h:-1", -EINVAL, NULL, 0 },
	{ "h: 74", -EINVAL, NULL, 0 },
	{ "h:74 ", -EINVAL, NULL, 0 },
	{ "a b:1", -EINVAL, NULL, 0 },
	{ "::1:7400", -EINVAL, NULL, 0 },
	{ "[::1]", -EINVAL, NULL, 0 },
	{ "[::1]:", -EINVAL, NULL, 0 },
	{ "[::1]7400", -EINVAL, NULL, 0 },
	{ "[::1:7400", -EINVAL, NULL, 0 },
	{ "[]:7400", -EINVAL, NULL, 0 },
	{ "[::1]:0", -EINVAL, NULL, 0 },
	{ "[::1]:7400]", -EINVAL, NULL, 0 },
};

START_TEST(hostport)
{
	const struct hp_case *hc = &hp_cases[_i];
	char host[CONFIG_HOST_MAX];
	uint16_t port = 4242;
	int rc;

	strcpy(host, "untouched");
	rc = config_parse_hostport(hc->in, host, sizeof(host), &port);
	ck_assert_msg(rc == hc->rc, "'%s': rc %d, expected %d", hc->in, rc, hc->rc);
	if (rc == 0) {
		ck_assert_str_eq(host, hc->host);
		ck_assert_uint_eq(port, hc->port);
	} else {
		ck_assert_str_eq(host, "untouched");
		ck_assert_uint_eq(port, 4242);
	}
}
END_TEST

START_TEST(hostport_host_buffer)
{
	char host[4];
	uint16_t port = 0;

	/* hostlen counts the NUL: 3 characters fit, 4 do not. */
	ck_assert_int_eq(config_parse_hostport("abc:1", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "abc");
	ck_assert_int_eq(config_parse_hostport("abcd:1", host, sizeof(host), &port), -EINVAL);
	ck_assert_int_eq(config_parse_hostport("[::12]:1", host, sizeof(host), &port), -EINVAL);
	ck_assert_int_eq(config_parse_hostport("[::1]:1", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "::1");
}
END_TEST

/* ------------------------------------------------------------------ */
/* config_name_valid                                                    */
/* ------------------------------------------------------------------ */

struct name_case {
	const char *in;
	bool ok;
};

static const struct name_case name_cases[] = {
	{ "a", true },
	{ "A-Z.a_z-0.9", true },
	{ "node-01.example", true },
	{ "...", true },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true },	/* 63 */
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },	/* 64 */
	{ "", false },
	{ NULL, false },
	{ "my node", false },
	{ "a/b", false },
	{ "a=b", false },
	{ "a:1", false },
	{ "b@d", false },
	{ "tab\t", false },
	{ "caf\xc3\xa9", false },
};

START_TEST(name_valid)
{
	const struct name_case *nc = &name_cases[_i];

	ck_assert_msg(config_name_valid(nc->in) == nc->ok, "'%s': expected %s",
		      nc->in ? nc->in : "(null)", nc->ok ? "valid" : "invalid");
}
END_TEST

/* ------------------------------------------------------------------ */
/* config_parse_bytes                                                   */
/* ------------------------------------------------------------------ */

struct bytes_case {
	const char *in;
	uint64_t min, max;
	int rc;
	uint64_t out;
};

#define U64MAX UINT64_MAX

static const struct bytes_case bytes_cases[] = {
	{ "0", 0, U64MAX, 0, 0 },
	{ "65536", 0, U64MAX, 0, 65536 },
	{ "1K", 0, U64MAX, 0, 1024 },
	{ "1k", 0, U64MAX, 0, 1024 },
	{ "64M", 0, U64MAX, 0, 64ull << 20 },
	{ "64m", 0, U64MAX, 0, 64ull << 20 },
	{ "16G", 0, U64MAX, 0, 16ull << 30 },
	{ "1g", 0, U64MAX, 0, 1ull << 30 },
	{ "0K", 0, U64MAX, 0, 0 },
	{ "0001", 0, U64MAX, 0, 1 },
	{ "18446744073709551615", 0, U64MAX, 0, U64MAX },
	{ "17179869183G", 0, U64MAX, 0, 17179869183ull << 30 },
	/* Range, inclusive at both ends. */
	{ "1M", 1ull << 20, 16ull << 30, 0, 1ull << 20 },
	{ "16G", 1ull << 20, 16ull << 30, 0, 16ull << 30 },
	{ "1048575", 1ull << 20, 16ull << 30, -ERANGE, 0 },
	{ "17179869185", 1ull << 20, 16ull << 30, -ERANGE, 0 },
	{ "1K", 2048, U64MAX, -ERANGE, 0 },
	/*
	 * Too large for 64 bits: well-formed, so -ERANGE like any other value
	 * above max, whether the digits or the suffix overflow.
	 */
	{ "18446744073709551616", 0, U64MAX, -ERANGE, 0 },
	{ "99999999999999999999999999", 0, U64MAX, -ERANGE, 0 },
	{ "17179869184G", 0, U64MAX, -ERANGE, 0 },
	{ "18014398509481984K", 0, U64MAX, -ERANGE, 0 },
	/* Syntax is checked before range. */
	{ "99999999999999999999Q", 0, U64MAX, -EINVAL, 0 },
	{ "", 0, U64MAX, -EINVAL, 0 },
	{ "K", 0, U64MAX, -EINVAL, 0 },
	{ "-1", 0, U64MAX, -EINVAL, 0 },
	{ "+1", 0, U64MAX, -EINVAL, 0 },
	{ " 1", 0, U64MAX, -EINVAL, 0 },
	{ "1 ", 0, U64MAX, -EINVAL, 0 },
	{ "1 K", 0, U64MAX, -EINVAL, 0 },
	{ "1KB", 0, U64MAX, -EINVAL, 0 },
	{ "1KK", 0, U64MAX, -EINVAL, 0 },
	{ "1T", 0, U64MAX, -EINVAL, 0 },
	{ "12Q", 0, U64MAX, -EINVAL, 0 },
	{ "0x10", 0, U64MAX, -EINVAL, 0 },
	{ "1.5M", 0, U64MAX, -EINVAL, 0 },
};

START_TEST(bytes)
{
	const struct bytes_case *bc = &bytes_cases[_i];
	uint64_t out = 4242;
	int rc;

	rc = config_parse_bytes(bc->in, bc->min, bc->max, &out);
	ck_assert_msg(rc == bc->rc, "'%s': rc %d, expected %d", bc->in, rc, bc->rc);
	ck_assert_uint_eq(out, rc == 0 ? bc->out : 4242);
}
END_TEST

/* ------------------------------------------------------------------ */
/* --print-config and reload                                            */
/* ------------------------------------------------------------------ */

/* config_print() of @c into a fresh temp file (conf_path), loaded back
 * over the defaults into @back; returns the printed text (free it). */
static char *print_and_load(const struct config *c, struct config *back)
{
	char err[ERRLEN], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(config_print(f, c), 0);
	ck_assert_int_eq(fclose(f), 0);
	rc = load_text(text, back, err, sizeof(err));
	ck_assert_msg(rc == 0, "printed file does not load: %s\n%s", err, text);
	return text;
}

START_TEST(print_defaults_round_trip)
{
	struct config c, back;
	char *text;

	ck_assert_int_eq(config_defaults(&c), 0);
	text = print_and_load(&c, &back);
	ck_assert_msg(config_eq(&c, &back), "defaults differ after a round trip:\n%s", text);
	free(text);
}
END_TEST

/* Every field off its default, values the suffixes cannot shorten, IPv6
 * addresses, a fault key at a number: the printed file still loads back
 * to the same configuration. */
START_TEST(print_full_round_trip)
{
	static const char conf[] =
		"[daemon]\nnode = n-1.x\nruntime_dir = /tmp/sl-rt\nlog_level = debug\n"
		"client_group = sluice\nadmin_group = sluice-admin\nshutdown_drain_ms = 1234\n"
		"[transport]\nkind = auto\ndevice = rxe0\nlisten = [::1]:7401\n"
		"eager_max = 65537\nsq_depth = 17\nmax_mr = 9\neager_credits = 3\n"
		"socket_buffer = 3K\npeer_timeout_ms = 7\nack_timeout_ms = 8\n"
		"redial_min_ms = 9\nredial_max_ms = 10\n"
		"[limits]\narena_bytes = 3M\nmax_queues = 5\nunexpected_max_bytes = 1048577\n"
		"link_backlog_max = 6\nclient_max_queues = 7\nclient_max_arena_bytes = 5G\n"
		"client_max_inflight = 11\n"
		"[rcache]\nchunk_bytes = 4K\nmax_regions = 0\nmax_bytes = 0\n"
		"max_waiters = 0\nmax_wait_ms = 0\n"
		"[fault]\npost_enomem_every = 3\nreg_fail_after = 0\ndelay_completions_us = 5\n"
		"cut_after_frames = 4294967295\ncut_every_frames = 2\n"
		"[peers]\nb = 10.0.0.2:7400\nc = [fe80::1]:7402\nd = host.example:1\n";
	struct config c, back;
	char err[ERRLEN], *text;

	ck_assert_msg(load_text(conf, &c, err, sizeof(err)) == 0, "%s", err);
	text = print_and_load(&c, &back);
	ck_assert_msg(config_eq(&c, &back), "differs after a round trip:\n%s", text);
	ck_assert_ptr_nonnull(strstr(text, "\nreg_fail_after = 0\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nlisten = [::1]:7401\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nc = [fe80::1]:7402\n"));
	ck_assert_ptr_nonnull(strstr(text, "\neager_max = 65537\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nsocket_buffer = 3K\n"));
	free(text);
	config_release(&c);
	config_release(&back);
}
END_TEST

/*
 * Every key the parser knows is printed: the allowed keys of each section
 * come from the parser's own "unknown key" message, so a key added to the
 * parser and forgotten by --print-config fails here.
 */
/* [ports] prints as it reads, and reads back the same ranges. */
START_TEST(print_ports_round_trip)
{
	struct config c, back;
	char err[ERRLEN], *text;

	ck_assert_int_eq(load_text("[ports]\n5000-5999 = gid:100\n6000 = uid:0\n", &c, err,
				   sizeof(err)), 0);
	ck_assert_uint_eq(c.ports.n, 2);
	text = print_and_load(&c, &back);
	ck_assert_msg(strstr(text, "\n[ports]\n5000-5999 = gid:100\n6000-6000 = uid:0\n"),
		      "%s", text);
	ck_assert_uint_eq(back.ports.n, 2);
	ck_assert(back.ports.r[0].lo == 5000 && back.ports.r[0].hi == 5999 &&
		  back.ports.r[0].is_group && back.ports.r[0].id == 100);
	ck_assert(back.ports.r[1].lo == 6000 && back.ports.r[1].hi == 6000 &&
		  !back.ports.r[1].is_group && back.ports.r[1].id == 0);
	free(text);
}
END_TEST

START_TEST(print_lists_every_key)
{
	static const char *const sections[] = { "daemon", "transport", "limits", "rcache",
						"fault" };
	char err[ERRLEN], probe[64], want[80], *text, *list, *key, *save;
	struct config c, back;
	unsigned i, keys = 0;
	int rc;

	ck_assert_int_eq(config_defaults(&c), 0);
	text = print_and_load(&c, &back);
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		snprintf(probe, sizeof(probe), "[%s]\nno_such_key = 1\n", sections[i]);
		rc = load_text(probe, &back, err, sizeof(err));
		ck_assert_int_eq(rc, -EINVAL);
		list = strstr(err, "(allowed: ");
		ck_assert_ptr_nonnull(list);
		list += strlen("(allowed: ");
		list[strcspn(list, ")")] = '\0';
		for (key = strtok_r(list, ", ", &save); key; key = strtok_r(NULL, ", ", &save)) {
			snprintf(want, sizeof(want), "\n%s =", key);
			if (!strstr(text, want)) {
				snprintf(want, sizeof(want), "\n#%s =", key);
				ck_assert_msg(strstr(text, want), "[%s] %s not printed:\n%s",
					      sections[i], key, text);
			}
			keys++;
		}
	}
	ck_assert_uint_eq(keys, 48);
	free(text);
}
END_TEST

struct change {
	char section[16], key[32], old_value[64], new_value[64];
	bool applied;
};

struct changes {
	struct change v[24];
	unsigned n;
};

static void record_change(const char *section, const char *key, const char *old_value,
			  const char *new_value, bool applied, void *arg)
{
	struct changes *ch = arg;

	ck_assert_uint_lt(ch->n, 24);
	snprintf(ch->v[ch->n].old_value, sizeof(ch->v[0].old_value), "%s", old_value);
	snprintf(ch->v[ch->n].new_value, sizeof(ch->v[0].new_value), "%s", new_value);
	snprintf(ch->v[ch->n].section, sizeof(ch->v[0].section), "%s", section);
	snprintf(ch->v[ch->n].key, sizeof(ch->v[0].key), "%s", key);
	ch->v[ch->n].applied = applied;
	ch->n++;
}

static const struct change *find_change(const struct changes *ch, const char *key)
{
	unsigned i;

	for (i = 0; i < ch->n; i++)
		if (strcmp(ch->v[i].key, key) == 0)
			return &ch->v[i];
	return NULL;
}

/* Reloadable keys and [peers] are applied; the others keep the running
 * value and are reported as needing a restart. */
START_TEST(reload_merge)
{
	static const char running[] = "[transport]\nlisten = 127.0.0.1:7400\n"
				      "[peers]\nb = 10.0.0.2:7400\nc = 10.0.0.3:7400\n";
	static const char file[] =
		"[daemon]\nlog_level = debug\nadmin_group = ops\nshutdown_drain_ms = 10\n"
		"client_group = other\n"
		"[transport]\nlisten = 127.0.0.1:7400\neager_max = 32K\npeer_timeout_ms = 99\n"
		"ack_timeout_ms = 98\nredial_min_ms = 1\nredial_max_ms = 97\n"
		"[limits]\nlink_backlog_max = 96\nunexpected_max_bytes = 1M\n"
		"unexpected_total_bytes = 2M\nclient_max_inflight = 95\nmax_queues = 7\n"
		"[peers]\nb = 10.0.0.2:7401\nd = 10.0.0.4:7400\n";
	static const char *const applied_keys[] = { "log_level", "admin_group",
		"shutdown_drain_ms", "peer_timeout_ms", "ack_timeout_ms", "redial_min_ms",
		"redial_max_ms", "link_backlog_max", "unexpected_max_bytes",
		"unexpected_total_bytes", "client_max_inflight", "b", "c", "d" };
	static const char *const restart_keys[] = { "client_group", "eager_max", "max_queues" };
	struct config cur, next, before;
	struct changes ch = { .n = 0 };
	char err[ERRLEN];
	const struct change *x;
	unsigned i;

	ck_assert_msg(load_text(running, &cur, err, sizeof(err)) == 0, "%s", err);
	before = cur;
	ck_assert_msg(load_text(file, &next, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(config_reload_merge(&cur, &next, record_change, &ch), 14);
	ck_assert_uint_eq(ch.n, 17);
	for (i = 0; i < sizeof(applied_keys) / sizeof(applied_keys[0]); i++) {
		x = find_change(&ch, applied_keys[i]);
		ck_assert_msg(x && x->applied, "%s not applied", applied_keys[i]);
	}
	for (i = 0; i < sizeof(restart_keys) / sizeof(restart_keys[0]); i++) {
		x = find_change(&ch, restart_keys[i]);
		ck_assert_msg(x && !x->applied, "%s not reported as needing a restart",
			      restart_keys[i]);
	}
	ck_assert_str_eq(find_change(&ch, "d")->section, "peers");
	ck_assert_str_eq(find_change(&ch, "b")->old_value, "10.0.0.2:7400");
	ck_assert_str_eq(find_change(&ch, "b")->new_value, "10.0.0.2:7401");
	ck_assert_str_eq(find_change(&ch, "c")->new_value, "(not set)");
	ck_assert_str_eq(find_change(&ch, "d")->old_value, "(not set)");
	ck_assert_int_eq(cur.log_level, LOG_LVL_DEBUG);
	ck_assert_str_eq(cur.admin_group, "ops");
	ck_assert_uint_eq(cur.shutdown_drain_ms, 10);
	ck_assert_uint_eq(cur.peer_timeout_ms, 99);
	ck_assert_uint_eq(cur.ack_timeout_ms, 98);
	ck_assert_uint_eq(cur.redial_min_ms, 1);
	ck_assert_uint_eq(cur.redial_max_ms, 97);
	ck_assert_uint_eq(cur.link_backlog_max, 96);
	ck_assert_uint_eq(cur.unexpected_max_bytes, 1024 * 1024);
	ck_assert_uint_eq(cur.unexpected_total_bytes, 2 * 1024 * 1024);
	ck_assert_uint_eq(cur.client_max_inflight, 95);
	/* What needs a restart kept the running value. */
	ck_assert_str_eq(cur.client_group, before.client_group);
	ck_assert_uint_eq(cur.eager_max, before.eager_max);
	ck_assert_uint_eq(cur.max_queues, before.max_queues);
	/* The peers are the file's now, in its order. */
	ck_assert_uint_eq(cur.n_peers, 2);
	ck_assert_str_eq(cur.peers[0].name, "b");
	ck_assert_uint_eq(cur.peers[0].port, 7401);
	ck_assert_str_eq(cur.peers[1].name, "d");
	ck_assert_ptr_ne(cur.peers, next.peers);	/* a copy of its own */
	/* The same file again: nothing differs any more but the restart keys. */
	ch.n = 0;
	ck_assert_int_eq(config_reload_merge(&cur, &next, record_change, &ch), 0);
	ck_assert_uint_eq(ch.n, 3);
	config_release(&cur);
	config_release(&next);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Command-line options (config_set_option)                            */
/* ------------------------------------------------------------------ */

/* The row of the option --@name, or NULL. */
static const struct config_key *option_row(const char *name)
{
	size_t i;

	for (i = 0; i < config_n_keys; i++)
		if (config_keys[i].option && strcmp(config_keys[i].option->name, name) == 0)
			return &config_keys[i];
	return NULL;
}

/* sluiced's options that set keys are these, on these keys, and no more. */
START_TEST(option_rows)
{
	static const char *const want[][3] = {
		{ "node", "daemon", "node" }, { "runtime-dir", "daemon", "runtime_dir" },
		{ "log-level", "daemon", "log_level" }, { "listen", "transport", "listen" },
		{ "peer", "peers", NULL },
	};
	size_t i, n = 0;

	for (i = 0; i < config_n_keys; i++)
		n += config_keys[i].option != NULL;
	ck_assert_uint_eq(n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct config_key *k = option_row(want[i][0]);

		ck_assert_msg(k, "no option --%s", want[i][0]);
		ck_assert_str_eq(k->section, want[i][1]);
		if (want[i][2])
			ck_assert_str_eq(k->name, want[i][2]);
		else
			ck_assert_ptr_null(k->name);
	}
}
END_TEST

struct option_case {
	const char *opt, *arg;
	int rc;
	const char *msg;	/* the whole message, or NULL when it sets */
};

static const struct option_case option_cases[] = {
	{ "node", "beta", 0, NULL },
	{ "node", "a/b", -EINVAL,
	  "--node: 'a/b' is not a valid node name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -)" },
	{ "runtime-dir", "/tmp/sl-opt", 0, NULL },
	{ "runtime-dir", "rel", -EINVAL,
	  "--runtime-dir: 'rel' is not an absolute path (allowed: an absolute path of at most 95 characters)" },
	{ "log-level", "debug", 0, NULL },
	{ "log-level", "loud", -EINVAL,
	  "--log-level: 'loud' is not a log level (allowed: error, warn, info, debug)" },
	{ "listen", "[::1]:7401", 0, NULL },
	{ "listen", "x", -EINVAL,
	  "--listen: 'x' has no port (allowed: HOST:PORT or [IPV6]:PORT with port 1..65535)" },
	{ "peer", "b=10.0.0.2:7400", 0, NULL },
	{ "peer", "x", -EINVAL, "--peer x: NAME=HOST:PORT expected, NAME of A-Z a-z 0-9 . _ -" },
	{ "peer", "=h:1", -EINVAL, "--peer =h:1: NAME=HOST:PORT expected, NAME of A-Z a-z 0-9 . _ -" },
	{ "peer", "b@d=h:1", -EINVAL,
	  "--peer b@d=h:1: NAME=HOST:PORT expected, NAME of A-Z a-z 0-9 . _ -" },
	{ "peer", "b=h:0", -EINVAL, "--peer b=h:0: NAME=HOST:PORT expected, NAME of A-Z a-z 0-9 . _ -" },
};

/* An option takes the file's rule for its key; a bad one changes nothing. */
START_TEST(option_sets_key)
{
	const struct option_case *oc = &option_cases[_i];
	const struct config_key *k = option_row(oc->opt);
	struct config c, before;
	char err[ERRLEN];
	int rc;

	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(config_defaults(&c), 0);
	before = c;
	memset(err, 'x', sizeof(err));
	err[sizeof(err) - 1] = '\0';
	rc = config_set_option(&c, k, oc->arg, err, sizeof(err));
	ck_assert_msg(rc == oc->rc, "--%s %s: rc %d (%s)", oc->opt, oc->arg, rc, err);
	if (oc->msg) {
		ck_assert_str_eq(err, oc->msg);
		ck_assert_msg(config_eq(&c, &before), "--%s %s: changed the configuration",
			      oc->opt, oc->arg);
		return;
	}
	ck_assert_msg(!config_eq(&c, &before), "--%s %s: changed nothing", oc->opt, oc->arg);
	if (k->name) {
		char val[CONFIG_HOST_MAX];

		ck_assert(config_key_format(&c, k, val, sizeof(val)));
		ck_assert_str_eq(val, oc->arg);
	}
	config_release(&c);	/* --peer adds to the list */
}
END_TEST

/* --node sets the node id with the name; --peer adds as many as given. */
START_TEST(option_node_and_peers)
{
	const struct config_key *peer = option_row("peer");
	struct config c;
	char err[ERRLEN], arg[32];
	int i;

	ck_assert_int_eq(config_defaults(&c), 0);
	ck_assert_int_eq(config_set_option(&c, option_row("node"), "alpha", err, sizeof(err)), 0);
	ck_assert_str_eq(c.node_name, "alpha");
	ck_assert_uint_eq(c.node_id, sl_node_id("alpha"));
	for (i = 0; i < 300; i++) {
		snprintf(arg, sizeof(arg), "p%d=h:%d", i, i + 1);
		ck_assert_int_eq(config_set_option(&c, peer, arg, err, sizeof(err)), 0);
	}
	ck_assert_uint_eq(c.n_peers, 300);
	ck_assert_str_eq(c.peers[299].name, "p299");
	ck_assert_uint_eq(c.peers[299].node_id, sl_node_id("p299"));
	ck_assert_str_eq(c.peers[299].host, "h");
	ck_assert_uint_eq(c.peers[299].port, 300);
	ck_assert_int_eq(config_set_option(&c, peer, "q=h", err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "--peer q=h: NAME=HOST:PORT expected, NAME of A-Z a-z 0-9 . _ -");
	ck_assert_uint_eq(c.n_peers, 300);
	config_release(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* [daemon] peers_file (config_read_peers_file, config_finish)          */
/* ------------------------------------------------------------------ */

/* The peers file of the last peers_load(); messages start with it. */
static char peers_path[64];

/*
 * config_defaults(), "[daemon] peers_file = " a file of @peers, then
 * @conf, loaded; node @node; then config_finish(): what sluiced does at
 * start with --node.  Returns config_finish()'s result (config_load()
 * must succeed).
 */
static int peers_load(const char *node, const char *conf, const char *peers, struct config *c,
		      char *err, size_t errlen)
{
	char text[1024];
	ssize_t n;
	int fd, rc;

	/* One name per process, so that reloads compare one peers_file. */
	snprintf(peers_path, sizeof(peers_path), "/tmp/sluice-test-peers-%d", (int)getpid());
	fd = open(peers_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	n = write(fd, peers, strlen(peers));
	ck_assert_int_eq(n, (ssize_t)strlen(peers));
	ck_assert_int_eq(close(fd), 0);
	snprintf(text, sizeof(text), "[daemon]\npeers_file = %s\n%s", peers_path, conf);
	rc = load_text(text, c, err, errlen);
	ck_assert_msg(rc == 0, "%s", err);
	/* As --node would, after the file. */
	snprintf(c->node_name, sizeof(c->node_name), "%s", node);
	c->node_id = sl_node_id(node);
	rc = config_finish(c, "the command line", err, errlen);
	unlink(peers_path);
	return rc;
}

#define PEERS_CONF "[transport]\nlisten = 127.0.0.1:7400\n"

/* One file for every node: comments, blank lines, blanks, the forms of
 * an address; the node's own line is skipped, a [peers] line with the
 * same address is taken once, and a port-less line takes default_port,
 * else listen's port. */
START_TEST(peers_file_good)
{
	static const char file[] =
		"# the cluster, as the resource manager listed it\n"
		"\n"
		"alpha 10.0.0.1:7400\n"
		"beta\t10.0.0.2:7401   # a comment after the address\n"
		"   gamma   gamma.example.org\n"
		"delta [fd00::4]:7402\n"
		"epsilon [fd00::5]\n"
		"zeta 10.0.0.6:7406\r\n"
		"   # indented comment\n"
		"eta 10.0.0.7";	/* no newline at the end */
	struct config c;
	char err[ERRLEN];
	int rc;

	rc = peers_load("alpha", PEERS_CONF "[peers]\nzeta = 10.0.0.6:7406\n", file, &c, err,
			sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(c.n_peers, 6);
	ck_assert_str_eq(c.peers[0].name, "zeta");	/* [peers] first, taken once */
	ck_assert_str_eq(c.peers[1].name, "beta");
	ck_assert_str_eq(c.peers[1].host, "10.0.0.2");
	ck_assert_uint_eq(c.peers[1].port, 7401);
	ck_assert_uint_eq(c.peers[1].node_id, sl_node_id("beta"));
	ck_assert_str_eq(c.peers[2].name, "gamma");
	ck_assert_str_eq(c.peers[2].host, "gamma.example.org");
	ck_assert_uint_eq(c.peers[2].port, 7400);	/* listen's */
	ck_assert_str_eq(c.peers[3].host, "fd00::4");
	ck_assert_uint_eq(c.peers[3].port, 7402);
	ck_assert_str_eq(c.peers[4].name, "epsilon");
	ck_assert_str_eq(c.peers[4].host, "fd00::5");
	ck_assert_uint_eq(c.peers[4].port, 7400);
	ck_assert_str_eq(c.peers[5].name, "eta");
	ck_assert_uint_eq(c.peers[5].port, 7400);
	config_release(&c);

	/* Node beta reads the same file: alpha is a peer, beta is not. */
	rc = peers_load("beta", PEERS_CONF "default_port = 9000\n", file, &c, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(c.n_peers, 6);
	ck_assert_str_eq(c.peers[0].name, "alpha");
	ck_assert_str_eq(c.peers[1].name, "gamma");
	ck_assert_uint_eq(c.peers[1].port, 9000);	/* default_port's */
	ck_assert_uint_eq(c.peers[0].port, 7400);	/* its own port stays */
	config_release(&c);

	/* An empty file, and no peers_file at all: no peers. */
	rc = peers_load("alpha", PEERS_CONF, "# nobody yet\n\n", &c, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(c.n_peers, 0);
	config_release(&c);
}
END_TEST

struct peers_case {
	const char *name;
	const char *node;
	const char *conf;	/* after [daemon] peers_file */
	const char *file;
	int rc;
	const char *msg;	/* after the peers file's path */
};

#define ALLOWED_LINE "NAME HOST:PORT, NAME [IPV6]:PORT or NAME HOST"

static const struct peers_case peers_cases[] = {
	{ "no address", "a", PEERS_CONF, "# x\nb\n", -EINVAL,
	  ":2: peer 'b' has no address (allowed: " ALLOWED_LINE ")" },
	{ "bad name", "a", PEERS_CONF, "b@d h:1\n", -EINVAL,
	  ":1: 'b@d' is not a valid node name (allowed: 1..63 characters from A-Z a-z 0-9 . _ -)" },
	{ "text after the address", "a", PEERS_CONF, "b h:1\nc h:2 7400\n", -EINVAL,
	  ":2: peer 'c': '7400' after its address (allowed: " ALLOWED_LINE ", then a # comment)" },
	{ "port out of range", "a", PEERS_CONF, "b h:65536\n", -EINVAL,
	  ":1: peer 'b': 'h:65536' has a port out of range (allowed: " ALLOWED_LINE
	  ", port 1..65535)" },
	{ "bare IPv6", "a", PEERS_CONF, "\n\nb fe80::1\n", -EINVAL,
	  ":3: peer 'b': 'fe80::1' needs [brackets] around an IPv6 address (allowed: "
	  ALLOWED_LINE ", port 1..65535)" },
	{ "listed twice", "a", PEERS_CONF, "b h:1\nc h:2\n# b again\nb h:1\n", -EINVAL,
	  ":4: peer 'b' is listed twice (first on line 1)" },
	{ "one node id", "a", PEERS_CONF, COLL_A " h:1\n" COLL_B " h:2\n", -EINVAL,
	  ":2: peers '" COLL_A "' and '" COLL_B "' have the same node id " COLL_ID "; rename one" },
	{ "the local node's id", COLL_A, PEERS_CONF, "b h:1\n" COLL_B " h:2\n", -EINVAL,
	  ":2: peer '" COLL_B "' and the local node '" COLL_A "' have the same node id " COLL_ID
	  "; rename one" },
	{ "another address than [peers]", "a", PEERS_CONF "[peers]\nb = h:1\n", "c h:3\nb h:2\n",
	  -EINVAL, ":2: peer 'b' is at h:2 here but at h:1 under [peers] or --peer (allowed: the "
	  "same HOST:PORT, or one of the two)" },
	{ "no port anywhere", "a", "", "b h\n", -EINVAL,
	  ":1: peer 'b': 'h' has no port, and neither [transport] default_port nor listen is set "
	  "(allowed: NAME HOST:PORT)" },
	{ "self's line is checked too", "a", PEERS_CONF, "a h:0\n", -EINVAL,
	  ":1: peer 'a': 'h:0' has a port out of range (allowed: " ALLOWED_LINE
	  ", port 1..65535)" },
};

/* Each bad line is reported as PEERSFILE:LINE, and the configuration
 * keeps the peers it had before the file. */
START_TEST(peers_file_bad)
{
	const struct peers_case *pc = &peers_cases[_i];
	struct config c;
	char err[ERRLEN], want[ERRLEN];
	int rc;

	rc = peers_load(pc->node, pc->conf, pc->file, &c, err, sizeof(err));
	ck_assert_msg(rc == pc->rc, "%s: rc %d, want %d (%s)", pc->name, rc, pc->rc, err);
	snprintf(want, sizeof(want), "%s%s", peers_path, pc->msg);
	ck_assert_msg(strcmp(err, want) == 0, "%s:\n got: %s\nwant: %s", pc->name, err, want);
	ck_assert_uint_eq(c.n_peers, strstr(pc->conf, "[peers]") ? 1 : 0);
	config_release(&c);
}
END_TEST

/* A missing file, a line too long; peers_file in the config's messages. */
START_TEST(peers_file_unreadable)
{
	static char long_line[2048];
	struct config c;
	char err[ERRLEN], want[ERRLEN];
	int rc;

	rc = load_text("[daemon]\npeers_file = /nonexistent/peers\n[transport]\n"
		       "listen = 127.0.0.1:7400\n", &c, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(c.peers_file, "/nonexistent/peers");
	rc = config_finish(&c, "x", err, sizeof(err));
	ck_assert_int_eq(rc, -ENOENT);
	ck_assert_str_eq(err, "/nonexistent/peers: cannot open: No such file or directory");
	config_release(&c);

	rc = load_text("[daemon]\npeers_file = peers\n", &c, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	assert_err("relative", err, ":2: [daemon] peers_file: 'peers' is not an absolute path "
		   "(allowed: an absolute path of at most 255 characters, or empty)");

	memset(long_line, 'x', 1100);
	memcpy(long_line, "b h:1 # ", 8);
	long_line[1100] = '\n';
	rc = peers_load("a", PEERS_CONF, long_line, &c, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	snprintf(want, sizeof(want), "%s:1: line is too long (allowed: up to 1024 characters)",
		 peers_path);
	ck_assert_str_eq(err, want);
	config_release(&c);
}
END_TEST

/* 10,000 lines of a resource manager's host list, read in linear time. */
START_TEST(peers_file_many)
{
	enum { N = 10000 };
	char *file = malloc(N * 40);
	struct config c;
	char err[ERRLEN];
	int64_t t0, t1;
	size_t off = 0;
	int i, rc;

	ck_assert_ptr_nonnull(file);
	for (i = 0; i < N; i++)
		off += (size_t)sprintf(file + off, "node%05d 10.%d.%d.%d\n", i, i >> 16,
				       (i >> 8) & 255, i & 255);
	t0 = now_ms();
	rc = peers_load("node00042", PEERS_CONF, file, &c, err, sizeof(err));
	t1 = now_ms();
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(c.n_peers, N - 1);
	ck_assert_str_eq(c.peers[42].name, "node00043");
	ck_assert_str_eq(c.peers[N - 2].host, "10.0.39.15");
	printf("peers_file_many: %d lines read and checked in %lld ms\n", N,
	       (long long)(t1 - t0));
	config_release(&c);
	free(file);
}
END_TEST

/* Reloaded peers from the file, with the rest of the merge. */
START_TEST(peers_file_reload)
{
	struct config cur, next;
	struct changes ch = { .n = 0 };
	char err[ERRLEN];
	int rc;

	rc = peers_load("a", PEERS_CONF, "a h:1\nb h:2\nc h:3\n", &cur, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	rc = peers_load("a", PEERS_CONF, "a h:1\nb h:2\nc h:4\nd h:5\n", &next, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(config_reload_merge(&cur, &next, record_change, &ch), 2);
	ck_assert_uint_eq(ch.n, 2);
	ck_assert_str_eq(find_change(&ch, "c")->old_value, "h:3");
	ck_assert_str_eq(find_change(&ch, "c")->new_value, "h:4");
	ck_assert(find_change(&ch, "c")->applied);
	ck_assert_str_eq(find_change(&ch, "d")->old_value, "(not set)");
	ck_assert_uint_eq(cur.n_peers, 3);
	ck_assert_str_eq(cur.peers[2].name, "d");
	config_release(&next);
	rc = peers_load("a", PEERS_CONF, "b h:2\n", &next, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ch.n = 0;
	ck_assert_int_eq(config_reload_merge(&cur, &next, record_change, &ch), 2);
	ck_assert_str_eq(find_change(&ch, "c")->new_value, "(not set)");
	ck_assert_str_eq(find_change(&ch, "d")->new_value, "(not set)");
	ck_assert_uint_eq(cur.n_peers, 1);
	config_release(&cur);
	config_release(&next);
}
END_TEST

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("bad files");
	tcase_add_loop_test(tc, bad_file, 0, N_OF(bad_cases));
	tcase_add_test(tc, many_peers);
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, directory);
	tcase_add_test(tc, short_error_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("good files");
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, empty_file);
	tcase_add_test(tc, full_valid_file);
	tcase_add_test(tc, bounds_accepted);
	tcase_add_test(tc, bounds_accepted_new_keys);
	tcase_add_test(tc, transport_kinds);
	tcase_add_test(tc, chunk_bytes_powers_of_two);
	tcase_add_test(tc, crlf_and_bom);
	suite_add_tcase(s, tc);

	tc = tcase_create("faults");
	tcase_add_test(tc, faults_off);
	tcase_add_loop_test(tc, fault_key_turns_faults_on, 0, N_OF(fault_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("print and reload");
	tcase_add_test(tc, print_defaults_round_trip);
	tcase_add_test(tc, print_full_round_trip);
	tcase_add_test(tc, print_lists_every_key);
	tcase_add_test(tc, print_ports_round_trip);
	tcase_add_test(tc, reload_merge);
	suite_add_tcase(s, tc);

	tc = tcase_create("peers file");
	tcase_add_test(tc, peers_file_good);
	tcase_add_loop_test(tc, peers_file_bad, 0, N_OF(peers_cases));
	tcase_add_test(tc, peers_file_unreadable);
	tcase_add_test(tc, peers_file_many);
	tcase_add_test(tc, peers_file_reload);
	suite_add_tcase(s, tc);

	tc = tcase_create("options");
	tcase_add_test(tc, option_rows);
	tcase_add_loop_test(tc, option_sets_key, 0, N_OF(option_cases));
	tcase_add_test(tc, option_node_and_peers);
	suite_add_tcase(s, tc);

	tc = tcase_create("parsers");
	tcase_add_loop_test(tc, hostport, 0, N_OF(hp_cases));
	tcase_add_test(tc, hostport_host_buffer);
	tcase_add_loop_test(tc, name_valid, 0, N_OF(name_cases));
	tcase_add_loop_test(tc, bytes, 0, N_OF(bytes_cases));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
