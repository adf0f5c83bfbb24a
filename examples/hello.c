/* hello.c - a first sluice program: one message to a port, one received.
 *   hello [NODE]
 * Binds port 5000, posts a receive there, sends one message to NODE:5000
 * (default: this node), and prints both completions.  With NODE, run it
 * on NODE too, first (it must be bound before the message arrives).
 * Build: cc hello.c $(pkg-config --cflags --libs sluice) */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sluice.h>

int main(int argc, char **argv)
{
	struct sl_ctx *ctx;
	struct sl_queue *q;
	struct sl_cqe cqe;
	int rc, done = 0, failed = 0;

	rc = sl_open(NULL, &ctx);               /* $SLUICE_SOCKET or /run/sluice */
	if (rc < 0) {
		fprintf(stderr, "hello: no sluiced: %s\n", strerror(-rc));
		return 1;
	}
	rc = sl_queue_open(ctx, 5000, 64, &q);  /* port 5000, 64-entry SQ */
	if (rc < 0) {
		fprintf(stderr, "hello: port 5000: %s\n", strerror(-rc));
		sl_close(ctx);
		return 1;
	}
	char *rbuf = sl_alloc(q, 4096);         /* buffers live in the arena */
	char *sbuf = sl_alloc(q, 4096);
	if (!rbuf || !sbuf) {
		fprintf(stderr, "hello: arena full\n");
		sl_close(ctx);
		return 1;
	}
	sl_addr_t to = { argc > 1 ? sl_node_id(argv[1]) : sl_local_node(ctx), 5000 };
	int len = snprintf(sbuf, 4096, "hello from %08x", sl_local_node(ctx)) + 1;

	rc = sl_recv(q, SL_ANY_SOURCE, 7, ~0ull, rbuf, 4096, /* user_ctx */ 1);
	if (rc == 0)
		rc = sl_send(q, to, 7, sbuf, (size_t)len, 2);  /* tag 7 */
	while (rc == 0 && done < 2) {
		rc = sl_wait(q, 10000);         /* ms; > 0: completions ready */
		if (rc <= 0)
			break;
		for (rc = 0; done < 2 && sl_poll(q, &cqe, 1) == 1; done++) {
			printf("%s: %s", cqe.user_ctx == 1 ? "received" : "sent",
			       sl_strerror(cqe.status));
			if (cqe.user_ctx == 1 && cqe.status == SL_OK)
				printf(" \"%.*s\" from %08x:%u", (int)strnlen(rbuf, cqe.len),
				       rbuf, cqe.peer.node, cqe.peer.port);
			printf("\n");
			failed |= cqe.status != SL_OK;
		}
	}
	if (rc < 0 || done < 2)
		fprintf(stderr, "hello: %s\n", rc < 0 ? strerror(-rc) : "no completion in 10 s");
	sl_close(ctx);
	return rc < 0 || done < 2 || failed;
}
