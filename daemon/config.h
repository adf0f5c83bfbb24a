/*
 * config.h - sluiced.conf: defaults, INI parsing (inih), validation.
 *
 * With no file the daemon runs as a single node with the defaults below.
 * A file is parsed completely; the first bad section, key or value stops
 * the load with one message "FILE:LINE: [section] key: what is wrong
 * (allowed: ...)".
 *
 * Keys (defaults in brackets):
 *   [daemon]    node = NAME [hostname]; runtime_dir = PATH [/run/sluice];
 *               log_level = error|warn|info|debug [info]
 *   [transport] kind = tcp|verbs|auto [tcp]: tcp is verbs semantics over
 *               TCP; verbs is RC QPs on an RDMA device (rdma-core) connected
 *               with librdmacm; auto is verbs when an RDMA device has an
 *               active port, else tcp.  Every node of a cluster must use
 *               the same (they do not talk to each other);
 *               device = NAME, 0..63 characters of A-Z a-z 0-9 . _ - [empty:
 *               the first device with an active port]: the RDMA device of
 *               kind verbs or auto (sluiced --list-devices shows them);
 *               listen = HOST:PORT [none: single node];
 *               eager_max = BYTES, 0..1048576 [65536];
 *               sq_depth = N, 4..65536 [1024]: frames (work requests) in
 *               each connection's send queue; 2 of them are reserved for
 *               control frames when sq_depth >= 16, else 1;
 *               max_mr = N, 1..1048576 [65536]: memory registrations the
 *               transport holds at once (verbs: at most the device's
 *               max_mr);
 *               eager_credits = N, 1..65536 [256]: data frames (eager
 *               messages and RTS) a peer may have sent us that we have
 *               not acknowledged yet; told to the peer in HELLO, which
 *               keeps further ones in its backlog until our ACKs return
 *               the credits; the verbs transport posts eager_credits +
 *               eager_credits / 2 + 16 receive buffers of eager_max + 128
 *               bytes per connection (in a shared receive queue when the
 *               device has one; see main.c);
 *               socket_buffer = BYTES, 0 or 1 KiB..64 MiB [0 = the
 *               kernel's]: SO_SNDBUF and SO_RCVBUF of the tcp transport's
 *               sockets (small values test full sockets);
 *               peer_timeout_ms = N, 1..86400000 [30000]: a link down (or
 *               not acknowledging) longer than this fails every operation
 *               waiting on that peer;
 *               ack_timeout_ms = N, 1..3600000 [2000]: with frames
 *               unacknowledged, no ACK progress for this long breaks the
 *               connection (it is then re-established and the
 *               unacknowledged frames sent again);
 *               redial_min_ms = N, 1..3600000 [50];
 *               redial_max_ms = N, 1..3600000 [2000]: reconnect back-off,
 *               doubling from min to max; min must not exceed max
 *               (checked after the file, reported at the line of the
 *               later of the two keys)
 *   [limits]    arena_bytes = BYTES, 1 MiB..16 GiB [64 MiB];
 *               max_queues = N, 1..65536 [1024];
 *               unexpected_max_bytes = BYTES, 64 KiB..64 GiB [64 MiB]: per
 *               endpoint, messages no receive was posted for; each one
 *               counts its length plus the daemon's per-message bookkeeping
 *               (sizeof(struct match_msg)); one that would pass the bound
 *               is refused with SL_NAK_RECEIVER_FULL;
 *               link_backlog_max = N, 1..1048576 [4096]: sends per link
 *               waiting for room (send queue or credits); past it a send
 *               completes SL_NAK_BUSY at once, its buffer untouched;
 *               client_max_queues = N, 1..65536 [256]: queues one client
 *               (control connection) holds; past it sl_queue_open()
 *               fails -EDQUOT;
 *               client_max_arena_bytes = BYTES, 1 MiB..1 TiB [64 GiB]: the
 *               arenas of one client's queues together; past it
 *               sl_queue_open() fails -EDQUOT;
 *               client_max_inflight = N, 1..16777216 [65536]: descriptors
 *               of one client accepted and not yet completed, over all its
 *               queues; past it the daemon takes no more of that client's
 *               descriptors until some complete (its SQs fill: -EAGAIN);
 *               uid_max_contexts, uid_max_queues = N, 0..65536 [0: half of
 *               max_queues]; uid_max_arena_bytes = BYTES, 0..1 PiB [0:
 *               the uid's queues times arena_bytes]; uid_max_inflight = N,
 *               0..16777216 [0: 4 x client_max_inflight]: the same
 *               bounds for all the clients of one uid together (uid_quota.h)
 *   [rcache]    registration cache of client arenas:
 *               chunk_bytes = BYTES, a power of two, 4 KiB..1 GiB [2 MiB]:
 *               registrations cover whole chunks of this size;
 *               max_regions = N, 0..1048576 [1024]: registrations kept;
 *               0 = cache disabled (a registration is released as soon as
 *               no operation uses it);
 *               max_bytes = BYTES, 0..1 TiB [4 GiB]: bytes registered;
 *               0 = no byte limit and cache disabled;
 *               max_waiters = N, 0..1048576 [1024]: operations that may
 *               wait for room at once; past it (0: any) they complete
 *               SL_NAK_BUSY;
 *               max_wait_ms = N, 0..3600000 [1000]: milliseconds an
 *               operation may wait for a registration before it completes
 *               SL_NAK_BUSY; 0 = no limit
 *   [fault]     fault injection in the tcp transport, for tests; all off
 *               by default (see config_faults_on):
 *               post_enomem_every = N, 0..1000000 [0 = off]: every Nth post
 *               (send or RDMA write) on a connection fails with -ENOMEM as
 *               if the send queue were full;
 *               reg_fail_after = N, 0..4294967295 [off = CONFIG_FAULT_OFF]:
 *               memory registrations after the first N fail with -ENOMEM
 *               (0 fails every registration);
 *               delay_completions_us = N, 0..10000000 [0 = off]: send
 *               completions are reported N microseconds after the data
 *               left the daemon;
 *               cut_after_frames = N, 0..4294967295 [0 = off]: the tcp
 *               transport breaks the connection on which it receives its
 *               Nth frame (counting every frame of every connection of the
 *               daemon; once);
 *               cut_every_frames = N, 0..4294967295 [0 = off]: the tcp
 *               transport breaks the connection on which it receives
 *               every Nth frame (counting across all connections);
 *               write_shift_bytes = N, -1073741824..1073741824 [0 = off]:
 *               every RDMA write this daemon posts goes N bytes from the
 *               address the peer's RTR granted (a buggy peer);
 *               write_replay = 0|1 [0]: after each RDMA write with an
 *               immediate, this daemon writes up to 4 KiB of 0xee bytes
 *               to that write's address again (a write after the
 *               rendezvous ended)
 *   [security]  who may be a peer (docs/peer-authentication.md):
 *               mode = none|authenticate|encrypt [none]: none checks
 *               that a peer connects from its configured address;
 *               authenticate also makes both sides of every connection
 *               prove the cluster key (HMAC-SHA256 challenge-response);
 *               encrypt then runs each connection in TLS 1.3 keyed from
 *               that handshake (tcp transport only: refused with kind
 *               verbs; docs/encryption.md); needs a restart;
 *               key_file = PATH [none]: the cluster key, 32 bytes, mode
 *               0400 (sluiced --keygen); required by authenticate and
 *               encrypt;
 *               previous_key_file = PATH [none]: a key also accepted, for
 *               rotation; a reload reads both files again
 *   [peers]     NAME = HOST:PORT, one line per other node
 *   [ports]     LO-HI or PORT = user:NAME, group:NAME, uid:N or gid:N:
 *               ranges only that user or group (and root) may bind
 *               (ports.h)
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
#define CONFIG_KEY_SLOTS 128	/* >= the parser's keys (checked in config.c) */
#define CONFIG_PEERS_MAX 256
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
	 * and the line of each key set there (0: not in the file).  Command
	 * line options are not tracked: they override node, runtime_dir,
	 * log_level, listen and peers. */
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
	/* [transport] */
	enum xport_kind transport;
	char device[CONFIG_NAME_MAX];	/* verbs: RDMA device; "" = first active */
	bool listen_set;
	char listen_host[CONFIG_HOST_MAX];
	uint16_t listen_port;
	uint32_t eager_max;	/* bytes */
	uint32_t sq_depth;	/* frames per connection send queue */
	uint32_t max_mr;	/* tcp transport's MR table entries */
	uint32_t eager_credits;	/* data frames a peer may have unacknowledged */
	uint32_t socket_buffer;	/* tcp SO_SNDBUF/SO_RCVBUF bytes; 0: the kernel's */
	uint32_t peer_timeout_ms;	/* link down/unacknowledged: fail waiters */
	uint32_t ack_timeout_ms;	/* no ACK progress: break the connection */
	uint32_t redial_min_ms;		/* reconnect back-off, <= redial_max_ms */
	uint32_t redial_max_ms;
	/* [limits] */
	uint64_t arena_bytes;	/* bytes per queue */
	uint32_t max_queues;	/* per daemon */
	uint32_t link_backlog_max;	/* sends waiting per link */
	uint32_t client_max_queues;
	uint64_t client_max_arena_bytes;
	uint32_t client_max_inflight;
	uint32_t uid_max_contexts;	/* per uid; 0: derived (uid_quota.h) */
	uint32_t uid_max_queues;
	uint64_t uid_max_arena_bytes;
	uint32_t uid_max_inflight;
	uint64_t unexpected_max_bytes;	/* per endpoint, bookkeeping included */
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
	uint64_t fault_cut_after_frames;	/* 0: off */
	uint32_t fault_cut_every_frames;	/* 0: off */
	/* [security] */
	enum security_mode security_mode;
	char key_file[CONFIG_KEY_PATH_MAX];		/* "" = none */
	char previous_key_file[CONFIG_KEY_PATH_MAX];	/* "" = none */
	int32_t fault_write_shift_bytes;	/* 0: off */
	uint32_t fault_write_replay;		/* 0: off, 1: on */
	/* [peers] */
	struct peer_conf peers[CONFIG_PEERS_MAX];
	size_t n_peers;
	/* [ports]: ranges reserved for a user or group (ports.h) */
	struct port_ranges ports;
};

/*
 * config_defaults - fill @c with the defaults (node name = hostname).
 * Returns 0, or -errno if the hostname cannot be read.
 */
int config_defaults(struct config *c);

/*
 * config_faults_on - is any [fault] key of @c not at its off value
 * (post_enomem_every 0, reg_fail_after CONFIG_FAULT_OFF,
 * delay_completions_us 0, cut_after_frames 0, cut_every_frames 0, write_shift_bytes 0,
 * write_replay 0)?
 */
bool config_faults_on(const struct config *c);

/*
 * config_load - read @path over the values already in @c.
 * On error writes one line to @err (at most @errlen bytes, NUL-terminated)
 * and returns -ENOENT/-EACCES (cannot open), or -EINVAL (bad content).
 * After the file: checks [transport] redial_min_ms <= redial_max_ms
 * (reported as "FILE:LINE: ..." at the later of the two keys), that
 * [security] mode = authenticate has a key_file, then peers
 * against each other and the local node (duplicate names, a peer named
 * like the local node, node-id collisions, peers without listen) and
 * reports those as "FILE: ..." with -EINVAL.
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
 * config_where - where [@section] @key of @c got its value, for a message:
 * "FILE:LINE" when config_load() read it from a file, "the default (not in
 * FILE)" or "the default".  Writes at most @n bytes (NUL-terminated) to
 * @buf and returns it.
 */
const char *config_where(const struct config *c, const char *section, const char *key,
			 char *buf, size_t n);

/*
 * config_print - write @c to @out as a sluiced.conf that config_load()
 * reads back to the same configuration: every key of every section in
 * the parser's own table, defaults included; a key at a value the file
 * cannot spell (listen not set, reg_fail_after off) as a comment, which
 * is what its absence means; byte counts with the largest exact K/M/G
 * suffix; then [peers], then [ports].  Returns 0 or -EIO (a write failed).
 */
int config_print(FILE *out, const struct config *c);

/*
 * config_change_fn - told about one key whose value differs on reload:
 * @section and @key name it ([peers]: the peer's name), @old_value and
 * @new_value as the file spells them ("(not set)" for an absent key or
 * peer), @applied whether the new value now runs (else it needs a
 * restart and the old one stays).
 */
typedef void config_change_fn(const char *section, const char *key, const char *old_value,
			      const char *new_value, bool applied, void *arg);

/*
 * config_reload_merge - a reload (SIGHUP) read @next; bring @cur up to it
 * for the keys that apply at run time ([daemon] log_level, admin_group,
 * shutdown_drain_ms; [transport] peer_timeout_ms, ack_timeout_ms,
 * redial_min_ms, redial_max_ms; [limits] link_backlog_max,
 * unexpected_max_bytes, client_max_inflight; [security] key_file,
 * previous_key_file: the caller reads the files again).  Every other key, and every
 * peer added, removed or readdressed, keeps @cur's value.  @changed (may
 * be NULL) is called for each difference, in table order, with @arg.
 * @next must be a whole valid configuration (config_load() succeeded), so
 * the pairs checked together (redial_min_ms <= redial_max_ms) stay valid.
 * Returns the number of keys applied.
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
