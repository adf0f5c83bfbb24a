/*
 * main.c - sluiced: configuration, setup and teardown around the loop.
 */
#include "autoconfig.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "admin.h"
#include "config_host.h"
#include "copy.h"
#include "daemon.h"
#include "engine.h"
#include "fd_limits.h"
#include "fd_reserve.h"
#include "link.h"
#include "link_auth.h"
#include "log.h"
#include "peer_auth.h"
#include "queue.h"
#include "release.h"
#include "resolve.h"
#include "service.h"
#include "session.h"


/* --help: an option that sets a configuration key comes from its row. */
static void usage(FILE *out)
{
	const struct config_key *k;
	char left[64];

	fprintf(out,
		"Usage: sluiced [OPTION]...\n"
		"The sluice node communication daemon.\n\n"
		"  -c, --config FILE        read FILE (INI; see sluiced.conf(5))\n");
	for (k = config_keys; k < config_keys + config_n_keys; k++) {
		if (!k->option)
			continue;
		snprintf(left, sizeof(left), "--%s %s", k->option->name, k->option->arg);
		fprintf(out, "      %-19s  %s\n", left, k->option->help);
	}
	fprintf(out,
		"      --spin-us N          busy-poll window before sleeping, microseconds\n"
		"                           (default %d)\n"
		"      --list-devices       list RDMA devices, ports and GIDs, and exit\n"
		"      --check-config       read the configuration and options, say whether\n"
		"                           they are valid (exit 0) or not (exit 2)\n"
		"      --print-config       print the effective configuration, every key, in\n"
		"                           sluiced.conf form, and exit\n"
		"      --keygen FILE        write a new cluster key (32 random bytes, mode\n"
		"                           0400) to FILE, which must not exist, and exit\n"
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n", DAEMON_SPIN_US_DEFAULT);
}

/* getopt_long's values: sluiced's own options, and OPT_KEY + the row of
 * config_keys[] for an option that sets a key. */
enum { OPT_SPIN = 256, OPT_LIST_DEVICES, OPT_CHECK_CONFIG, OPT_PRINT_CONFIG, OPT_KEYGEN,
       OPT_KEY = 1024 };

/* What sluiced does with the configuration once it is read. */
enum run_mode { RUN_DAEMON, RUN_CHECK_CONFIG, RUN_PRINT_CONFIG };

static const struct option own_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "spin-us", required_argument, NULL, OPT_SPIN },
	{ "list-devices", no_argument, NULL, OPT_LIST_DEVICES },
	{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
	{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
	{ "keygen", required_argument, NULL, OPT_KEYGEN },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
};

#define N_OWN_OPTS (sizeof(own_opts) / sizeof(own_opts[0]))

/* own_opts, then the options of config_keys[], then the end. */
static struct option long_opts[N_OWN_OPTS + CONFIG_KEY_SLOTS + 1];

static void build_long_opts(void)
{
	size_t i, n = N_OWN_OPTS;

	memcpy(long_opts, own_opts, sizeof(own_opts));
	for (i = 0; i < config_n_keys; i++)
		if (config_keys[i].option)
			long_opts[n++] = (struct option){ config_keys[i].option->name,
							  required_argument, NULL,
							  OPT_KEY + (int)i };
	long_opts[n] = (struct option){ NULL, 0, NULL, 0 };
}

/* sluiced --keygen FILE: 0 when written, 1 otherwise. */
static int keygen(const char *path)
{
	char err[512];

	if (peer_key_generate(path, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluiced: --keygen: %s\n", err);
		return 1;
	}
	printf("sluiced: wrote a new cluster key to %s (mode 0400); copy it to every node "
	       "and name it in [security] key_file\n", path);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* sluiced --list-devices: 0 when there is a device, 1 when none. */
static int list_devices(void)
{
	int n = xport_verbs_list_devices(stdout);

	if (n == -ENOSYS) {
		fprintf(stderr, "sluiced: no RDMA devices (the kernel has no RDMA support)\n");
		return 1;
	}
	if (n < 0) {
		fprintf(stderr, "sluiced: cannot list RDMA devices: %s\n", strerror(-n));
		return 1;
	}
	if (n == 0) {
		fprintf(stderr, "sluiced: no RDMA devices\n");
		return 1;
	}
	return 0;
}

/*
 * The options that set configuration, over @c (the file already read),
 * then the peers file (config_finish): at start, and again on every
 * reload so that they keep winning over the file (service.h).  Returns 0
 * or -errno (said on stderr).
 */
static int apply_options(struct daemon *d, struct config *c)
{
	char err[512], where[CONFIG_SOURCE_MAX + 32];
	long spin;
	int opt;
	char *end;

	for (optind = 1; (opt = getopt_long(d->argc, d->argv, "c:hV", long_opts, NULL)) != -1;) {
		if (opt >= OPT_KEY) {
			if (config_set_option(c, &config_keys[opt - OPT_KEY], optarg, err,
					      sizeof(err))) {
				fprintf(stderr, "sluiced: %s\n", err);
				return -EINVAL;
			}
		} else if (opt == OPT_SPIN) {
			errno = 0;
			spin = strtol(optarg, &end, 10);
			if (errno || *end || spin < 0 || spin > 1000000) {
				fprintf(stderr, "sluiced: --spin-us: 0..1000000\n");
				return -EINVAL;
			}
			d->spin_s = (double)spin / 1e6;
			d->spin_fixed = true;
		}
	}
	if (optind < d->argc) {
		fprintf(stderr, "sluiced: unexpected argument '%s'\n", d->argv[optind]);
		return -EINVAL;
	}
	/* The peers file, now that --node and --listen are in (it skips
	 * this node's line, and its lines may take listen's port); then the
	 * same rules as for the file alone: a --peer for a name the file (or
	 * another --peer) has already, or named like --node, would start two
	 * links for one node, and --print-config would then print a file
	 * that the daemon refuses. */
	snprintf(where, sizeof(where), "%s%s", d->config_path ? d->config_path : "",
		 d->config_path ? " with the command line" : "the command line");
	if (config_finish(c, where, err, sizeof(err))) {
		fprintf(stderr, "sluiced: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(struct daemon *d, int argc, char **argv, enum run_mode *mode)
{
	struct config *c = &d->cfg;
	char err[512];
	int opt, rc;

	d->argc = argc;
	d->argv = argv;
	build_long_opts();
	/* The file first, so that options override it. */
	for (optind = 1; (opt = getopt_long(argc, argv, "c:hV", long_opts, NULL)) != -1;) {
		if (opt == 'c')
			d->config_path = optarg;
		else if (opt == 'h') {
			usage(stdout);
			exit(0);
		} else if (opt == 'V') {
			printf("sluiced %s\n", PACKAGE_VERSION);
			exit(0);
		} else if (opt == OPT_LIST_DEVICES) {
			exit(list_devices());
		} else if (opt == OPT_KEYGEN) {
			exit(keygen(optarg));
		} else if (opt == OPT_CHECK_CONFIG) {
			*mode = RUN_CHECK_CONFIG;
		} else if (opt == OPT_PRINT_CONFIG) {
			*mode = RUN_PRINT_CONFIG;
		} else if (opt == '?') {
			usage(stderr);
			return -EINVAL;
		}
	}
	if (d->config_path) {
		rc = config_load(c, d->config_path, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "sluiced: %s\n", err);
			return rc;
		}
	}
	return apply_options(d, c);
}

/* The start's own checks of the configuration against this host
 * (config_host.h), which --check-config runs too.  Returns 0 or 1. */
static int check_host(const struct daemon *d, bool to_log)
{
	char err[512], warn[512];
	int rc = config_check_host(&d->cfg, err, sizeof(err), warn, sizeof(warn));

	if (warn[0] && to_log)
		log_warn("%s", warn);
	else if (warn[0])
		fprintf(stderr, "sluiced: warning: %s\n", warn);
	if (rc && to_log)
		log_err("%s", err);
	else if (rc)
		fprintf(stderr, "sluiced: %s\n", err);
	return rc ? 1 : 0;
}

/* sluiced --check-config / --print-config, once the configuration is read:
 * the exit status. */
static int config_mode(const struct daemon *d, enum run_mode mode)
{
	struct peer_keys keys;
	char err[512];

	if (mode == RUN_CHECK_CONFIG) {
		if (check_host(d, false))
			return 1;
		/* Only a warning, as at start (fd_limits.h). */
		if (fd_limits_check(&d->cfg, err, sizeof(err)))
			fprintf(stderr, "sluiced: warning: %s\n", err);
		/* The key files are part of what a start needs (exit status 1,
		 * as a start that finds them wrong). */
		if (link_auth_load_keys(&d->cfg, &keys, err, sizeof(err)) < 0) {
			fprintf(stderr, "sluiced: %s\n", err);
			return 1;
		}
		OPENSSL_cleanse(&keys, sizeof(keys));
		printf("sluiced: configuration OK\n");
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (config_print(stdout, &d->cfg) < 0) {
		fprintf(stderr, "sluiced: --print-config: write error\n");
		return 1;
	}
	return 0;
}

/*
 * Receive buffers per verbs connection: the eager_credits data frames a
 * peer may have unacknowledged, half as many again for the frames credits
 * do not count (ACKs, the NAK, RTR, FIN and DONE frames that answer our
 * own data frames, the RDMA writes with immediate that end rendezvous),
 * and VERBS_RECV_EXTRA for the HELLO and bursts of those.  This sizes the
 * steady state, not correctness: a peer that finds no buffer posted gets
 * an RNR NAK and retries 10 us later, as often as it takes.
 */
#define VERBS_RECV_EXTRA 16

static uint32_t verbs_recv_depth(const struct config *c)
{
	return c->eager_credits + c->eager_credits / 2 + VERBS_RECV_EXTRA;
}

/* The transport [transport] kind asks for; NULL with errno (logged). */
static struct xport *create_transport(struct daemon *d)
{
	const struct config *c = &d->cfg;
	struct xport_params xp = {
		.sq_depth = c->sq_depth,
		.max_mr = c->max_mr,
		.socket_buffer = c->socket_buffer,
		/* The largest frame a link sends: an eager message of
		 * eager_max bytes behind the largest header. */
		.max_frame = c->eager_max + SL_WIRE_HDR_MAX,
		.recv_depth = verbs_recv_depth(c),
		.device = c->device,
		.tls = c->security_mode == SECURITY_ENCRYPT,
		.faults = {
			.post_enomem_every = c->fault_post_enomem_every,
			.reg_fail_after = c->fault_reg_fail_after,
			.delay_completions_us = c->fault_delay_completions_us,
			.cut_after_frames = c->fault_cut_after_frames,
			.cut_every_frames = c->fault_cut_every_frames,
			.write_shift_bytes = c->fault_write_shift_bytes,
			.write_replay = c->fault_write_replay != 0,
		},
	};
	enum xport_kind kind = c->transport;
	struct xport *x;
	char dev[64];

	if (kind == XPORT_AUTO) {
		if (xport_verbs_probe(c->device, dev, sizeof(dev)) == 0) {
			log_info("transport auto: RDMA device %s has an active port: verbs", dev);
			kind = XPORT_VERBS;
		} else {
			log_info("transport auto: no RDMA device%s%s with an active port: tcp",
				 c->device[0] ? " " : "", c->device);
			kind = XPORT_TCP;
		}
	}
	if (kind == XPORT_VERBS && c->security_mode == SECURITY_ENCRYPT) {
		log_err("[security] mode encrypt needs the tcp transport ([transport] kind = tcp; "
			"kind auto chose verbs): " CONFIG_ENCRYPT_VERBS_WHY);
		errno = EINVAL;
		return NULL;
	}
	if (kind == XPORT_VERBS) {
		x = xport_verbs_create(d->loop, &link_upcalls, d, &xp);
		if (!x)
			log_err("verbs transport: %m");
		return x;
	}
	x = xport_tcp_create(d->loop, &link_upcalls, d, &xp);
	if (!x)
		log_err("tcp transport: %m");
	return x;
}

/* Every accepted descriptor still pending gets SL_ERR_CANCELED, written
 * while the clients' queues are alive, before anything is freed. */
static void daemon_teardown(struct daemon *d)
{
	struct session *s;

	d->stopping = true;
	session_close_listener(d);
	admin_close(d);
	if (d->xp)
		link_teardown_all(d);
	link_auth_destroy(d);
	engine_stop(d);
	daemon_flush_cq_wakeups(d);
	while ((s = TAILQ_FIRST(&d->sessions)))
		session_destroy(s);
	resolve_stop(d);	/* lookups still running free their own */
	daemon_rcache_destroy(d);
	if (d->xp) {
		d->xp->ops->destroy(d->xp);
		d->xp = NULL;
	}
	release_stop(d);	/* every segment is gone by now */
	mem_return_stop(&d->mem_ret);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	free(d->ports);
	d->ports = NULL;
}

int main(int argc, char **argv)
{
	static struct daemon dm;
	struct daemon *d = &dm;
	enum run_mode mode = RUN_DAEMON;
	sigset_t early;
	int rc;

	/* A reload (SIGHUP) or a statistics request (SIGUSR1) that comes
	 * while the daemon starts must wait for the loop's watchers: both
	 * terminate a process by default.  Blocked until they exist; threads
	 * started meanwhile (release.c) keep them blocked for good, so that
	 * the main thread's handlers take them. */
	if (sigemptyset(&early) < 0 || sigaddset(&early, SIGHUP) < 0 ||
	    sigaddset(&early, SIGUSR1) < 0 || sigprocmask(SIG_BLOCK, &early, NULL) < 0) {
		fprintf(stderr, "sluiced: blocking SIGHUP and SIGUSR1: %s\n", strerror(errno));
		return 1;
	}
	rc = daemon_init(d);
	if (rc) {
		fprintf(stderr, "sluiced: defaults: %s\n", strerror(-rc));
		return 1;
	}
	if (parse_args(d, argc, argv, &mode))
		return 2;
	if (mode != RUN_DAEMON)
		return config_mode(d, mode);
	log_set_level(d->cfg.log_level);
	if (check_host(d, true))
		return 1;
	if (getrandom(&d->incarnation, sizeof(d->incarnation), 0) != sizeof(d->incarnation)) {
		log_err("getrandom: %m");
		return 1;
	}
	if (d->incarnation == 0)
		d->incarnation = 1;	/* 0 means "none known" in a HELLO */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		log_err("SIGPIPE: %m");
		return 1;
	}
	d->loop = ev_default_loop(EVFLAG_AUTO);
	if (!d->loop) {
		log_err("libev: no event loop");
		return 1;
	}
	d->started = ev_now(d->loop);
	loop_watch_init(&d->loop_w, d->loop);
	mem_return_init(&d->mem_ret, d->loop, &d->unexpected_bytes);
	d->ports = calloc(SLD_PORTS, sizeof(*d->ports));
	if (!d->ports) {
		log_err("out of memory");
		return 1;
	}
	(void)fd_limits_raise(&d->cfg);	/* logged */
	rc = fd_spare_open();
	if (rc)
		goto out;
	rc = session_listen(d);
	if (rc)
		goto out;
	rc = admin_listen(d);
	if (rc)
		goto out;
	d->xp = create_transport(d);
	if (!d->xp) {
		rc = errno ? -errno : -EIO;	/* non-zero: the exit status is 1 */
		goto out;
	}
	if (config_faults_on(&d->cfg))
		log_warn("fault injection is on ([fault] section): this daemon fails on purpose");
	rc = daemon_rcache_init(d);
	if (rc) {
		log_err("registration cache: %s", strerror(-rc));
		goto out;
	}
	if (d->cfg.listen_set) {
		rc = d->xp->ops->listen(d->xp, d->cfg.listen_host, d->cfg.listen_port);
		if (rc) {
			log_err("listen on %s:%u: %s", d->cfg.listen_host, d->cfg.listen_port,
				strerror(-rc));
			goto out;
		}
	}
	rc = link_auth_init(d);
	if (rc)
		goto out;
	engine_init(d);
	rc = link_setup_all(d, &engine_link_handlers);
	if (rc) {
		log_err("links: %s", strerror(-rc));
		goto out;
	}
	rc = service_init(d, apply_options);
	if (rc)
		goto out;
	daemon_stats_init(d);
	/* libev's handlers for both are in place (its default loop uses
	 * handlers, not signalfd): what came during the start is delivered
	 * now, to them. */
	if (sigprocmask(SIG_UNBLOCK, &early, NULL) < 0) {
		rc = -errno;
		log_err("unblocking SIGHUP and SIGUSR1: %m");
		goto out;
	}
	daemon_progress_init(d);
	if (d->cfg.listen_set)
		log_info("node %s (%08x) ready: socket %s, transport %s on %s:%u, eager_max %u",
			 d->cfg.node_name, d->cfg.node_id, d->ctl_path, d->xp->ops->name,
			 d->cfg.listen_host, d->cfg.listen_port, d->cfg.eager_max);
	else
		log_info("node %s (%08x) ready: socket %s, single node, eager_max %u",
			 d->cfg.node_name, d->cfg.node_id, d->ctl_path, d->cfg.eager_max);
	service_ready(d);
	ev_run(d->loop, 0);
	rc = 0;
out:
	service_stop(d);
	daemon_teardown(d);
	service_destroy(d);
	fd_spare_close();
	config_release(&d->cfg);
	log_info("stopped");
	return rc ? 1 : 0;
}
