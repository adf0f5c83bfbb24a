/*
 * idle-queues - hold N queues open on a daemon and do nothing with them,
 * so that a benchmark can measure what idle queues cost the daemon
 * (scripts/scale-bench).  Built by make, not installed.
 *
 *   idle-queues --queues N [--socket PATH] [--depth D] [--ready-file F]
 *
 * Each queue costs this process file descriptors too (its memfd and
 * eventfds), so the soft RLIMIT_NOFILE is raised to the hard limit first.
 * Queues are opened on as many contexts as the daemon's per-client quota
 * ([limits] client_max_queues) needs: when one context is refused EDQUOT
 * the next queue goes to a new context.  The first other refusal (EMFILE
 * from the daemon's max_queues or its own fd limit, the per-user quota on
 * a fresh context, ...) ends the opening without ending the program: the
 * point is to report how many opened.  Then one line,
 *   OPENED WANTED MS [ERRNO_NAME what stopped it]
 * (queues open, queues asked for, milliseconds the opens took) goes to
 * standard output and, written atomically, to the ready file; the program
 * then sleeps until SIGTERM or SIGINT and closes everything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common.h"
#include "sluice.h"

#define QUEUES_MAX 65536u	/* as [limits] max_queues' range */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: idle-queues --queues N [--socket PATH] [--depth D] [--ready-file F]\n"
		"\n"
		"Open N queues on the daemon, report how many opened, then sleep\n"
		"until SIGTERM or SIGINT.\n"
		"  --queues N       queues to open, 1 to %u\n"
		"  --socket PATH    the daemon's control socket (default: $SLUICE_SOCKET,\n"
		"                   else " SL_DEFAULT_SOCKET ")\n"
		"  --depth D        SQ entries of each queue, 1 to 4096 (default 64)\n"
		"  --ready-file F   also write the report line to F, atomically\n"
		"\n"
		"Report: OPENED WANTED MS [ERRNO_NAME what stopped the opening]\n",
		QUEUES_MAX);
}

/* "EMFILE" for -EMFILE. */
static const char *errname(int rc)
{
	const char *n = strerrorname_np(-rc);

	return n ? n : "?";
}

/* Soft fd limit up to the hard one: each queue holds fds in this process. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		fprintf(stderr, "%s: getrlimit(RLIMIT_NOFILE): %s\n", tool_name, strerror(errno));
		return;
	}
	if (rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		fprintf(stderr, "%s: setrlimit(RLIMIT_NOFILE, %ju): %s\n", tool_name,
			(uintmax_t)rl.rlim_max, strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "queues", required_argument, NULL, 'n' },
		{ "socket", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'd' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *sock = NULL, *ready = NULL;
	uint64_t want = 0, depth = 64;
	struct sl_ctx **ctxs;
	unsigned n_ctx = 0, on_ctx = 0, opened = 0;
	char line[256], stop[160] = "";
	uint64_t t0, ms;
	sigset_t sigs;
	int c, sig;

	tool_name = "idle-queues";
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_u64(optarg, 1, QUEUES_MAX, &want) < 0)
				bad_usage("--queues: 1 to %u, got '%s'", QUEUES_MAX, optarg);
			break;
		case 's': sock = optarg; break;
		case 'd':
			if (parse_u64(optarg, 1, 4096, &depth) < 0)
				bad_usage("--depth: 1 to 4096, got '%s'", optarg);
			break;
		case 'r': ready = optarg; break;
		case 'h': usage(stdout); return 0;
		default: return try_help();
		}
	}
	reject_operands(argc, argv);
	if (!want)
		bad_usage("--queues is required");

	/* Block the signals that end the sleep before any can arrive. */
	if (sigemptyset(&sigs) < 0 || sigaddset(&sigs, SIGTERM) < 0 ||
	    sigaddset(&sigs, SIGINT) < 0 || sigprocmask(SIG_BLOCK, &sigs, NULL) < 0)
		die("cannot block SIGTERM and SIGINT: %s", strerror(errno));
	raise_fd_limit();
	/* At worst one context per queue. */
	ctxs = calloc(want, sizeof(*ctxs));
	if (!ctxs)
		die("out of memory");

	t0 = now_ns();
	while (opened < want) {
		struct sl_queue *q;
		int rc;

		if (n_ctx == 0) {
			rc = sl_open(sock, &ctxs[0]);
			if (rc < 0) {
				snprintf(stop, sizeof(stop), "%s sl_open: %s",
					 errname(rc),
					 strerror(-rc));
				break;
			}
			n_ctx = 1;
			on_ctx = 0;
		}
		rc = sl_queue_open(ctxs[n_ctx - 1], 0, (uint32_t)depth, &q);
		if (rc == 0) {
			opened++;
			on_ctx++;
			continue;
		}
		if (rc == -EDQUOT && on_ctx > 0) {
			/* This context holds its quota: the next queue on a new one. */
			rc = sl_open(sock, &ctxs[n_ctx]);
			if (rc == 0) {
				n_ctx++;
				on_ctx = 0;
				continue;
			}
			snprintf(stop, sizeof(stop), "%s sl_open of context %u: %s",
				 errname(rc),
				 n_ctx + 1, strerror(-rc));
			break;
		}
		snprintf(stop, sizeof(stop), "%s sl_queue_open of queue %u: %s",
			 errname(rc), opened + 1,
			 strerror(-rc));
		break;
	}
	ms = (now_ns() - t0) / 1000000;

	snprintf(line, sizeof(line), "%u %" PRIu64 " %" PRIu64 "%s%s\n", opened, want, ms,
		 stop[0] ? " " : "", stop);
	fputs(line, stdout);
	if (fflush(stdout) == EOF)
		die("cannot write the report: %s", strerror(errno));
	if (ready)
		write_ready_file(ready, line);

	do {
		sig = 0;
		if (sigwait(&sigs, &sig) != 0)
			die("sigwait failed");
	} while (sig != SIGTERM && sig != SIGINT);
	for (unsigned i = 0; i < n_ctx; i++)
		sl_close(ctxs[i]);
	free(ctxs);
	return 0;
}
