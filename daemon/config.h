/*
 * config.h - sluiced.conf: defaults, INI parsing (inih), validation, print
 * and reload, all from one table of keys (config_keys[], config.c).
 *
 * With no file the daemon runs as a single node with the defaults of the
 * table.  A file is parsed completely; the first bad section, key or value
 * stops the load with one message "FILE:LINE: [section] key: what is
 * wrong (allowed: ...)".  A row of the table gives a key's section, name,
 * type, field of struct config, range, default, unit, whether a reload
 * (SIGHUP) applies it, its command-line option if it has one, and a line
 * of doc; sluiced.conf(5) describes each key for an operator, and
 * tests/test_config_doc.c fails when that page or conf/sluiced.conf
 * disagrees with the table (a key missing, one the table lacks, another
 * default, range or reload rule).
 * BYTES accept a K, M or G suffix (powers of 1024).
 */
#ifndef SLD_CONFIG_H
#define SLD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ports.h"

#define CONFIG_NAME_MAX 64	/* node names, including the NUL */
#define CONFIG_HOST_MAX 256
#define CONFIG_PATH_MAX 96	/* runtime dir; leaves room in sun_path */
#define CONFIG_SOURCE_MAX 256	/* the file a configuration came from */
#define CONFIG_KEY_SLOTS 128	/* >= the rows of config_keys[] (checked in config.c) */
#define CONFIG_PEERS_FILE_MAX 256	/* [daemon] peers_file, including the NUL */
#define CONFIG_FAULT_OFF UINT64_MAX	/* fault_reg_fail_after: off */
#define CONFIG_KEY_PATH_MAX 256	/* [security] key files, including the NUL */

/* The values are the AUTH frame's mode field (sl_wire.h). */
enum security_mode { SECURITY_NONE = 0, SECURITY_AUTHENTICATE = 1, SECURITY_ENCRYPT = 2 };

/* Why mode encrypt is refused on verbs (config check and start). */
#define CONFIG_ENCRYPT_VERBS_WHY "RDMA writes are placed by the NIC and bypass the CPU, so no TLS record layer can cover them; on verbs use mode = authenticate (the handshake is authenticated) and keep strangers off the fabric with a partition (P_Key) of the cluster's own (docs/encryption.md)"

/* "none", "authenticate" or "encrypt": the [security] mode value. */
const char *config_security_mode_name(enum security_mode m);

enum xport_kind { XPORT_TCP = 1, XPORT_AUTO = 2, XPORT_VERBS = 3 };

struct peer_conf {
	char name[CONFIG_NAME_MAX];
	uint32_t node_id;	/* sl_node_id(name) */
	char host[CONFIG_HOST_MAX];
	uint16_t port;
};

struct config {
	/* Where the values came from, for messages about them
	 * (config_where()): the file config_load() read last ("" if none),
	 * and the line of each row of config_keys[] set there (0: not in the
	 * file).  Command-line options are not tracked. */
	char source[CONFIG_SOURCE_MAX];
	uint16_t key_line[CONFIG_KEY_SLOTS];
	/* [daemon] */
	char node_name[CONFIG_NAME_MAX];
	uint32_t node_id;	/* sl_node_id(node_name) */
	char runtime_dir[CONFIG_PATH_MAX];
	int log_level;		/* enum log_level */
	char client_group[CONFIG_NAME_MAX];	/* sluiced.sock's group; "" = ours */
	char admin_group[CONFIG_NAME_MAX];	/* may use the admin socket; "" = none */
	uint32_t shutdown_drain_ms;	/* SIGTERM: wait this long for in-flight work */
	char peers_file[CONFIG_PEERS_FILE_MAX];	/* "" = none (config_finish() reads it) */
	/* [transport] */
	enum xport_kind transport;
	char device[CONFIG_NAME_MAX];	/* verbs: RDMA device; "" = first active */
	bool listen_set;
	char listen_host[CONFIG_HOST_MAX];
	uint16_t listen_port;
	uint32_t default_port;	/* peers_file lines without a port; UINT32_MAX:
				 * not set, listen_port */
	uint32_t eager_max;	/* bytes */
	uint32_t sq_depth;	/* frames per connection send queue */
	uint32_t max_mr;	/* tcp transport's MR table entries */
	uint32_t eager_credits;	/* data frames a peer may have unacknowledged */
	uint32_t socket_buffer;	/* tcp SO_SNDBUF/SO_RCVBUF bytes; 0: the kernel's */
	uint32_t peer_timeout_ms;	/* link down/unacknowledged: fail waiters */
	uint32_t ack_timeout_ms;	/* no ACK progress: break the connection */
	uint32_t redial_min_ms;		/* reconnect back-off, <= redial_max_ms */
	uint32_t redial_max_ms;
	uint32_t idle_link_ms;		/* quiet this long: closed by agreement; 0: links
					 * dialled at start and kept (link_idle.c) */
	/* [limits] */
	uint64_t arena_bytes;	/* bytes per queue */
	uint32_t max_queues;	/* per daemon */
	uint32_t link_backlog_max;	/* sends waiting per link */
	uint32_t max_links;		/* connected at once; LRU idle ones close first */
	uint32_t max_resolved_peers;	/* added by sl_node_resolve() (resolve.h) */
	uint32_t client_max_queues;
	uint64_t client_max_arena_bytes;
	uint32_t client_max_inflight;
	uint32_t uid_max_contexts;	/* per uid; 0: derived (uid_quota.h) */
	uint32_t uid_max_queues;
	uint64_t uid_max_arena_bytes;
	uint32_t uid_max_inflight;
	uint64_t unexpected_max_bytes;	/* per endpoint, bookkeeping included */
	uint64_t unexpected_total_bytes;	/* all endpoints together, the same way */
	/* [rcache] */
	uint64_t rcache_chunk_bytes;	/* a power of two */
	uint32_t rcache_max_regions;	/* 0: cache disabled */
	uint64_t rcache_max_bytes;	/* 0: no byte limit, cache disabled */
	uint32_t rcache_max_waiters;
	uint32_t rcache_max_wait_ms;	/* 0: no limit */
	/* [fault] */
	uint32_t fault_post_enomem_every;	/* 0: off */
	uint64_t fault_reg_fail_after;	/* CONFIG_FAULT_OFF: off */
	uint32_t fault_delay_completions_us;	/* 0: off */
	uint32_t fault_resolve_delay_ms;	/* 0: off (resolve.c) */
	uint64_t fault_cut_after_frames;	/* 0: off */
	uint32_t fault_cut_every_frames;	/* 0: off */
	/* [security] */
	enum security_mode security_mode;
	char key_file[CONFIG_KEY_PATH_MAX];		/* "" = none */
	char previous_key_file[CONFIG_KEY_PATH_MAX];	/* "" = none */
	int32_t fault_write_shift_bytes;	/* 0: off */
	uint32_t fault_write_replay;		/* 0: off, 1: on */
	/* [peers], then --peer, then the lines of peers_file: an array that
	 * grows as they come (config_peer_add()), bounded by memory alone.
	 * The config owns it: config_release() frees it, and a struct copy
	 * shares it (config_copy() makes a config of its own). */
	struct peer_conf *peers;
	size_t n_peers;
	size_t peers_cap;	/* entries allocated */
	/* [ports]: ranges reserved for a user or group (ports.h) */
	struct port_ranges ports;
};

/*
 * config_change_fn - told about one key whose value differs on reload:
 * @section and @key name it ([peers]: the peer's name), @old_value and
 * @new_value as the file spells them ("(not set)" for an absent key or
 * peer), @applied whether the new value now runs (else it needs a
 * restart and the old one stays).
 */
typedef void config_change_fn(const char *section, const char *key, const char *old_value,
			      const char *new_value, bool applied, void *arg);

/* ------------------------------------------------------------------ */
/* The table of keys                                                    */
/* ------------------------------------------------------------------ */

struct config_key;

/* What the values of a type look like, for the readers of the table. */
enum config_kind {
	CONFIG_NUMBER,	/* digits, min..max */
	CONFIG_SIGNED,	/* digits with an optional '-', min..max */
	CONFIG_BYTES,	/* digits with an optional K, M or G suffix, min..max */
	CONFIG_ENUM,	/* one of the row's names */
	CONFIG_TEXT,	/* a name, a path, an address */
	CONFIG_LIST,	/* a section of lines named by their values ([peers], [ports]) */
};

/*
 * config_type - how the values of one type are read and written.
 * parse: set row @k's key in @c from @value (@key is the line's name:
 *   k->name, except in a CONFIG_LIST section).  Returns 0, or -EINVAL
 *   with the one-line message "PREFIX: what is wrong (allowed: ...)" in
 *   @why (at most @n bytes, NUL-terminated), where @prefix is "[section]
 *   key" for the file and "--option" for the command line.
 * format: @c's value as the file spells it, in @buf (at most @n bytes);
 *   false for a value the file cannot spell (the key not set), which
 *   --print-config writes as a comment.  NULL for CONFIG_LIST.
 * print: CONFIG_LIST only: write the section's lines to @out.
 * diff: CONFIG_LIST only: tell @changed (with @arg) each line that
 *   differs between @cur and @next, as @applied (the row's reload);
 *   returns how many it told.
 * parse_option: the command line's form when it is not the file's value
 *   (--peer NAME=HOST:PORT); writes "--option ARG: what is wrong" to @why.
 *   NULL: parse with prefix "--option".
 */
struct config_type {
	const char *name;
	enum config_kind kind;
	int (*parse)(struct config *c, const struct config_key *k, const char *key,
		     const char *value, const char *prefix, char *why, size_t n);
	bool (*format)(const struct config *c, const struct config_key *k, char *buf, size_t n);
	void (*print)(FILE *out, const struct config *c);
	unsigned (*diff)(const struct config *cur, const struct config *next, bool applied,
			 config_change_fn *changed, void *arg);
	int (*parse_option)(struct config *c, const struct config_key *k, const char *arg,
			    char *why, size_t n);
};

/* One spelling of an enum key and the value it stores. */
struct config_name {
	const char *name;
	int value;
};

/* The command-line option of a key: --NAME ARG, "help" in sluiced --help. */
struct config_option {
	const char *name;
	const char *arg;
	const char *help;
};

/* Row flags. */
#define CONFIG_ZERO_OK	1u	/* numbers: 0 is allowed besides min..max */
#define CONFIG_POW2	2u	/* numbers: a power of two */
#define CONFIG_EMPTY_OK	4u	/* text: empty is allowed (none, or "the default") */

/*
 * config_key - one row of the table: a key of sluiced.conf, or a whole
 * CONFIG_LIST section (name NULL).  The rows of a section are together,
 * sections in the order the file documents them.
 */
struct config_key {
	const char *section;
	const char *name;
	const struct config_type *type;
	size_t offset, size;	/* its field of struct config (offsetof, sizeof) */
	int64_t min, max;	/* CONFIG_NUMBER, CONFIG_SIGNED, CONFIG_BYTES */
	const char *def;	/* the default as the file spells it; NULL: not set */
	const char *unit;	/* "bytes", "ms", "us", "count"; "" for text */
	bool reload;		/* a reload applies it (copying the field's bytes;
				 * [peers]: the whole list, config_reload_merge) */
	const char *doc;	/* what it is, in one line */
	unsigned flags;		/* CONFIG_ZERO_OK, CONFIG_POW2, CONFIG_EMPTY_OK */
	const struct config_name *names;	/* CONFIG_ENUM: ends with { NULL } */
	const char *what;	/* text and enums: "'x' is not WHAT" */
	const char *allowed;	/* a message's "(allowed: ...)" when the range is not it */
	const char *absent;	/* the key not set means this (--print-config) */
	const char *def_doc;	/* the default in words when it is no value */
	const struct config_option *option;	/* NULL: none */
};

extern const struct config_key config_keys[];
extern const size_t config_n_keys;

/* The row of [@section] @name, or NULL. */
const struct config_key *config_key_find(const char *section, const char *name);

/*
 * config_key_format - @c's value of the key of row @k as the file spells
 * it (k->type->format), in @buf (at most @n bytes).  Returns false when
 * the key is not set (listen, reg_fail_after off, no key_file) or @k is
 * a CONFIG_LIST section.
 */
bool config_key_format(const struct config *c, const struct config_key *k, char *buf,
		       size_t n);

/*
 * config_key_range - the values row @k allows, in @buf (at most @n bytes):
 * "MIN..MAX" for numbers (bytes with the largest exact K/M/G suffix, the
 * spelling of --print-config), the names of an enum joined by ", ", ""
 * for text and lists.  CONFIG_ZERO_OK's extra 0 and CONFIG_POW2 are not
 * in it.  Returns @buf.
 */
const char *config_key_range(const struct config_key *k, char *buf, size_t n);

/*
 * config_set_option - the command-line option of row @k with argument
 * @arg, over @c, with the rules of the file.  Returns 0, or -EINVAL with
 * one line "--option: what is wrong (allowed: ...)" in @err (at most
 * @errlen bytes).  Lines set this way are not in key_line[].
 */
int config_set_option(struct config *c, const struct config_key *k, const char *arg,
		      char *err, size_t errlen);

/*
 * config_defaults - fill @c with the table's defaults (node name = the
 * hostname), no peers.  @c holds no peers before (it is new, or
 * config_release()d): they are not freed.  Returns 0, -errno if the
 * hostname cannot be read, or -EINVAL if a default of the table does not
 * parse (a bug, and test_config's).
 */
int config_defaults(struct config *c);

/*
 * config_release - free what @c owns (its peers); @c is then a config
 * without peers, all else as it was.  Accepts a config without peers.
 */
void config_release(struct config *c);

/*
 * config_copy - @dst becomes a copy of @src with a peer list of its own
 * (what @dst held is not freed).  Returns 0, or -ENOMEM with @dst a copy
 * without peers.
 */
int config_copy(struct config *dst, const struct config *src);

/*
 * config_peer_add - append peer @name (a valid node name, not checked
 * here) at @host (at most CONFIG_HOST_MAX - 1 bytes, cut to fit) and
 * @port to @c's peers, its node id computed; the list grows as needed.
 * Duplicates are config_check_peers()'s to find.  Returns 0 or -ENOMEM
 * (nothing added).
 */
int config_peer_add(struct config *c, const char *name, const char *host, uint16_t port);

/* config_faults_on - is any [fault] key of @c not at its default (off)? */
bool config_faults_on(const struct config *c);

/*
 * config_load - read @path over the values already in @c.
 * On error writes one line to @err (at most @errlen bytes, NUL-terminated)
 * and returns -ENOENT/-EACCES (cannot open), or -EINVAL (bad content).
 * After the file: checks [transport] redial_min_ms <= redial_max_ms
 * (reported as "FILE:LINE: ..." at the later of the two keys), that
 * [security] mode authenticate or encrypt has a key_file and encrypt is
 * not on kind verbs, then peers against each other and the local node
 * (duplicate names, a peer named like the local node, node-id
 * collisions, peers without listen) and reports those as "FILE: ..."
 * with -EINVAL.
 */
int config_load(struct config *c, const char *path, char *err, size_t errlen);

/*
 * config_check_peers - the peers of @c against each other and the local
 * node: duplicate names, a peer named like the local node, node-id
 * collisions, peers without [transport] listen.  config_load() runs it
 * after the file; sluiced runs it again once the command line has added
 * its --peer and --node.  @path names where the values came from, as the
 * message's prefix ("FILE: ...").  Returns 0, or -EINVAL with one line in
 * @err (at most @errlen bytes, NUL-terminated).
 */
int config_check_peers(const struct config *c, const char *path, char *err, size_t errlen);

/*
 * config_read_peers_file - add the lines of [daemon] peers_file of @c
 * (nothing when it is not set) to its peers, once the node name and the
 * listen port are final (after the command line).  A line is "NAME
 * HOST:PORT", "NAME [IPV6]:PORT", or "NAME HOST" with the port of
 * [transport] default_port, else of listen; '#' starts a comment, blank
 * lines are skipped, fields are separated by blanks.  The line naming
 * the local node is skipped (one file serves every node).  A name also
 * under [peers] or --peer at the same host and port (as written) is
 * taken once; at another address it is an error, and so is a name given
 * twice in the file, or a node id it shares with another name.  Errors
 * are one line "PEERSFILE:LINE: what is wrong (allowed: ...)", or
 * "PEERSFILE: cannot open: ..." (@err, at most @errlen bytes); @c then
 * keeps what it had before the file.  Runs in O(lines + peers).
 * Returns 0, -ENOENT/-EACCES (cannot open), -EINVAL or -ENOMEM.
 */
int config_read_peers_file(struct config *c, char *err, size_t errlen);

/*
 * config_finish - what is left once the file and the command line are in
 * @c: config_read_peers_file(), then config_check_peers() with @path as
 * its prefix.  sluiced runs it at start and on every reload.  Returns 0
 * or one of theirs, with their message in @err.
 */
int config_finish(struct config *c, const char *path, char *err, size_t errlen);

/*
 * config_where - where [@section] @key of @c got its value, for a message:
 * "FILE:LINE" when config_load() read it from a file, "the default (not in
 * FILE)" or "the default".  Writes at most @n bytes (NUL-terminated) to
 * @buf and returns it.
 */
const char *config_where(const struct config *c, const char *section, const char *key,
			 char *buf, size_t n);

/*
 * config_print - write @c to @out as a sluiced.conf that config_load()
 * reads back to the same configuration: every row of the table in order,
 * defaults included; a key at a value the file cannot spell (listen not
 * set, reg_fail_after off) as a comment, which is what its absence means;
 * byte counts with the largest exact K/M/G suffix; [peers] and [ports]
 * line by line.  Returns 0 or -EIO (a write failed).
 */
int config_print(FILE *out, const struct config *c);

/*
 * config_reload_merge - a reload (SIGHUP) read @next; bring @cur up to it
 * for the keys whose row says reload (sluiced.conf(5) lists them; the
 * caller reads the [security] key files again), and take @next's peers
 * (a copy): [peers], --peer and peers_file together; making the links
 * match is the caller's (link_table_sync()).  Every other key keeps
 * @cur's value.  @changed (may be NULL) is called for each difference,
 * in table order, with @arg: a peer added, removed or readdressed is one
 * change each, key = its name.  @next must be a whole valid
 * configuration (config_load() and config_finish() succeeded), so the
 * pairs checked together (redial_min_ms <= redial_max_ms) stay valid.
 * Returns the number of changes applied, or -ENOMEM (nothing applied,
 * nothing told).
 */
int config_reload_merge(struct config *cur, const struct config *next,
			config_change_fn *changed, void *arg);

/*
 * config_parse_hostport - split "HOST:PORT" ("[v6]:PORT" too) into @host
 * (at most @hostlen bytes with the NUL) and @port (1..65535).
 * Returns 0 or -EINVAL.
 */
int config_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port);

/*
 * config_name_valid - is @name a node name ([daemon] node, [peers] names,
 * --node, --peer): 1..63 characters from A-Z a-z 0-9 . _ -?  One rule
 * for the file and the command line, so a name accepted in one is never
 * refused in the other.  NULL is not valid.
 */
bool config_name_valid(const char *name);

/*
 * config_parse_bytes - parse a byte count with optional K/M/G suffix within
 * [min, max].  Returns 0 or -EINVAL (syntax) / -ERANGE (out of range).
 */
int config_parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
