/*
 * bench_handshake.c - what the link handshake costs
 * (docs/peer-authentication.md): one sluiced accepting, this program
 * dialing it as one of its configured peers over and over, each time the
 * whole opening of a link over TCP on 127.0.0.1: connect, the AUTH
 * handshake and both HELLOs (tests/raw_peer.c), timed from connect() to
 * the daemon's HELLO.
 * Prints the median, p99 and max for [security] mode none and
 * authenticate.  A benchmark, not a test: run by hand,
 *   top_builddir=build build/tests/bench_handshake [ROUNDS]
 */
#include "autoconfig.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "harness.h"
#include "raw_peer.h"
#include "sluice.h"

#define PEERS 6	/* a link needs time to go down before it is redialled */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Peer names whose node ids are below the daemon's, so that the daemon
 * accepts (the lower id dials). */
static void pick_names(char *daemon_name, char names[PEERS][H_NAME_MAX])
{
	unsigned i, n = 0;

	for (i = 0;; i++) {
		snprintf(daemon_name, H_NAME_MAX, "acc%u", i);
		if (sl_node_id(daemon_name) > 0xf0000000u)
			break;
	}
	for (i = 0; n < PEERS; i++) {
		snprintf(names[n], H_NAME_MAX, "dial%u", i);
		if (sl_node_id(names[n]) < sl_node_id(daemon_name))
			n++;
	}
}

static void run(const char *mode, unsigned rounds)
{
	static char names[PEERS][H_NAME_MAX];
	static struct h_daemon peers[PEERS];
	char daemon_name[H_NAME_MAX], keypath[128], conf[512], err[512];
	struct peer_key key;
	struct h_daemon d;
	double *us = calloc(rounds, sizeof(*us));
	unsigned i, ok = 0, refused = 0;
	bool keyed = strcmp(mode, "authenticate") == 0;

	if (!us) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	pick_names(daemon_name, names);
	for (i = 0; i < PEERS; i++) {
		memset(&peers[i], 0, sizeof(peers[i]));
		memcpy(peers[i].name, names[i], sizeof(peers[i].name));
		peers[i].node = sl_node_id(names[i]);
		peers[i].tcp_port = H_PORT_NOBODY;
	}
	conf[0] = '\0';
	if (keyed) {
		snprintf(keypath, sizeof(keypath), "/tmp/sluice-bench-handshake-%d.key",
			 (int)getpid());
		(void)unlink(keypath);
		if (peer_key_generate(keypath, err, sizeof(err)) < 0 ||
		    peer_key_load(keypath, &key, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		snprintf(conf, sizeof(conf), "[security]\nmode = authenticate\nkey_file = %s\n",
			 keypath);
	}
	setenv("SLUICE_TEST_LOG_LEVEL", "warn", 1);
	h_daemon_start_conf(&d, daemon_name, h_free_port(), peers, PEERS, conf);
	for (i = 0; i < rounds; i++) {
		struct raw_auth a = { .key = keyed ? &key : NULL, .node = peers[i % PEERS].node,
				      .incarnation = i + 1, .to_node = d.node };
		int one = 1, fd, rc;
		double t0 = now_us();

		fd = h_tcp_connect(d.tcp_port);
		/* As the daemon's own sockets: no Nagle wait between our
		 * step 3 and HELLO. */
		if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
			perror("TCP_NODELAY");
			exit(1);
		}
		rc = raw_hello(fd, &a, 5000);

		if (rc == 0)
			us[ok++] = now_us() - t0;
		else
			refused++;
		close(fd);
		if (i % PEERS == PEERS - 1)
			usleep(20000);	/* the daemon sees the closes */
	}
	h_daemon_stop(&d);
	if (keyed)
		(void)unlink(keypath);
	qsort(us, ok, sizeof(*us), cmp_double);
	if (ok)
		printf("%-13s %6u handshakes: median %7.1f us  p99 %7.1f us  max %7.1f us"
		       "  (%u not taken: link still up)\n", mode, ok, us[ok / 2],
		       us[(size_t)((ok - 1) * 0.99)], us[ok - 1], refused);
	free(us);
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2000;

	if (rounds == 0)
		rounds = 1;
	printf("link opening over TCP on 127.0.0.1: connect + AUTH + HELLOs, "
	       "timed to the daemon's HELLO\n");
	run("none", rounds);
	run("authenticate", rounds);
	return 0;
}
