/*
 * sluice-copy - copy a file to another process (on this node or another one)
 * over libsluice, checked end to end with SHA-256.
 *
 *   sluice-copy --recv --port P --out FILE [--socket PATH] [--ready-file F]
 *   sluice-copy --send FILE --to NODE:PORT [--socket PATH] [--chunk BYTES]
 *               [--window N]
 *   either with [--progress | --no-progress]
 *
 * Chunks are 4 MiB by default, up to SL_MSG_MAX (1 GiB); between nodes,
 * chunks above the daemons' eager_max go by rendezvous, straight from the
 * sender's buffer into the receiver's.  Each side holds up to the window's
 * chunks in its queue's arena ([limits] arena_bytes of its daemon, 64 MiB
 * by default) and uses fewer when the arena holds fewer.
 *
 * Protocol.  A tag's low byte is its kind; chunks carry their index above it.
 *   1 HEADER  sender -> receiver: file size (u64), chunk size (u32), sender
 *             window (u32), little-endian.
 *   5 READY   receiver -> sender: the window it posted (u32 LE), sent once
 *             its chunk receives are posted, so chunks arrive to posted
 *             receives (the expected path) instead of queueing unexpected.
 *   2 CHUNK   sender -> receiver, tag 2 | index << 8, chunk-size bytes (the
 *             last one shorter).
 *   3 TRAILER sender -> receiver: SHA-256 (32 bytes) of what was read.
 *   4 ACK     receiver -> sender: 1 byte, 1 = digests match, 0 = mismatch.
 * Both sides print "sha256 <hex> <bytes> bytes sent|received" on stdout and
 * the throughput on stderr.  While it runs, a side whose stderr is a terminal
 * (or that is given --progress) keeps one progress line there (progress.h):
 * the sender counts chunks completed SL_OK, the receiver chunks written.  The receiver exits 1 on a mismatch (the output
 * file is left for inspection), the sender exits 1 unless ACK says match.
 *
 * Back-pressure.  A NAK (SL_NAK_BUSY, SL_NAK_RECEIVER_FULL) means the message
 * was not delivered, so the sender posts that same chunk again after a back-
 * off (20 us doubling to ~10 ms, at most 1000 times).  Chunks behind it may
 * already have been accepted, so a retried chunk can arrive after its
 * successors: that is why chunks carry their index.  The receiver holds an
 * early chunk in its buffer until the gap is filled and writes and hashes
 * strictly in order.  This cannot deadlock: the sender only sends chunk j
 * when every chunk below j - W has completed SL_OK (a sliding window, slot
 * j % W), and since messages of one source match in send order, the chunks
 * held early lie within (next, next + W) - at most W - 1 buffers - so one of
 * the receiver's W receives is always posted for the missing chunk.  The
 * window is min(sender's, receiver's).  Without NAKs chunks simply arrive in
 * order and nothing is held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "sluice.h"
#include "common.h"
#include "sl_common.h"
#include "progress.h"

#define PROG "sluice-copy"

#define KIND_MASK 0xffu
enum kind { K_HDR = 1, K_CHUNK = 2, K_TRAILER = 3, K_ACK = 4, K_READY = 5 };
#define CHUNK_TAG(i) ((uint64_t)K_CHUNK | ((uint64_t)(i) << 8))

#define HDR_LEN 16
#define READY_LEN 4
#define SHA_LEN 32
#define CHUNK_MAX ((uint64_t)SL_MSG_MAX)
#define CHUNK_DEFAULT (4u << 20)
#define WINDOW_MAX 1024u
/*
 * A chunk is read and hashed (sender), hashed and written (receiver) in
 * pieces of this size, so each piece is hashed while it is still in the
 * cache: a 4 MiB chunk handled whole would be read from memory twice.
 */
#define PIECE (256u << 10)

/* ------------------------------------------------------------------ */
/* SHA-256 (OpenSSL EVP)                                                */
/* ------------------------------------------------------------------ */

static EVP_MD_CTX *sha_new(void)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		die("EVP_DigestInit_ex(sha256) failed");
	return md;
}

static void sha_update(EVP_MD_CTX *md, const void *p, size_t n)
{
	if (EVP_DigestUpdate(md, p, n) != 1)
		die("EVP_DigestUpdate failed");
}

static void sha_final(EVP_MD_CTX *md, uint8_t out[SHA_LEN])
{
	unsigned len = 0;

	if (EVP_DigestFinal_ex(md, out, &len) != 1 || len != SHA_LEN)
		die("EVP_DigestFinal_ex failed");
	EVP_MD_CTX_free(md);
}

static void hex(const uint8_t *d, char out[2 * SHA_LEN + 1])
{
	for (int i = 0; i < SHA_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* ------------------------------------------------------------------ */
/* Message kinds and reports                                            */
/* ------------------------------------------------------------------ */

static const char *kind_name(int k)
{
	static const char *const names[] = {
		[K_HDR] = "header", [K_CHUNK] = "chunk", [K_TRAILER] = "trailer",
		[K_ACK] = "ack", [K_READY] = "ready",
	};

	return k >= K_HDR && k <= K_READY ? names[k] : "?";
}

static const struct ep_conf copy_conf = {
	.kind_name = kind_name,
	.arena_hint = "; raise [limits] arena_bytes of sluiced",
	.invalid_hint = " (a chunk the daemons do not take: a daemon without"
			" rendezvous takes at most its eager_max, try --chunk 64K)",
};

/*
 * Die: the arena of @e cannot hold one @chunk-byte chunk.  @hint says what
 * else than a larger arena_bytes would do.
 */
static void __attribute__((noreturn))
arena_too_small(const struct ep *e, uint64_t chunk, const char *hint)
{
	char sz[32], have[32], one[32], eight[32];

	fmt_size(sz, sizeof(sz), chunk);
	fmt_conf_bytes(have, sizeof(have), sl_arena_size(e->q));
	fmt_conf_bytes(one, sizeof(one), arena_needed(1, chunk));
	fmt_conf_bytes(eight, sizeof(eight), arena_needed(8, chunk));
	die("the queue's arena (%s) cannot hold one %s chunk: raise [limits]"
	    " arena_bytes of this node's sluiced to at least %s (%s for a"
	    " window of 8), or %s", have, sz, one, eight, hint);
}

static void report_rate(const char *what, uint64_t bytes, uint64_t ns,
			uint64_t naks)
{
	double s = ns / 1e9;

	fprintf(stderr, PROG ": %s %" PRIu64 " bytes in %.3f s: %.1f MB/s",
		what, bytes, s, s > 0 ? bytes / s / 1e6 : 0.0);
	if (naks)
		fprintf(stderr, " (%" PRIu64 " NAKs retried)", naks);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* Sender                                                               */
/* ------------------------------------------------------------------ */

/* Fill @buf with exactly @len bytes of the file; it must not end early. */
static void read_full(int fd, const char *path, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, (char *)buf + got, len - got);

		if (r > 0)
			got += (size_t)r;
		else if (r == 0)
			die("%s: file shrank while being sent", path);
		else if (errno != EINTR)
			die("%s: read: %s", path, strerror(errno));
	}
}

static int run_send(const char *path, const char *sock, sl_addr_t dst,
		    uint32_t chunk, unsigned window, bool show_progress)
{
	struct progress prog;
	struct op hdr_tx, ready_rx, trailer_tx, ack_rx, *tx;
	uint8_t *hdrb, *readyb, *trailerb, *ackb, **bufs;
	uint64_t size, nchunks, base = 0, next = 0, t0;
	sl_addr_t receiver = { 0, 0 };
	char digest[2 * SHA_LEN + 1];
	EVP_MD_CTX *md;
	struct stat st;
	uint32_t rw;
	unsigned w;
	uint8_t verdict;
	struct ep e;
	bool *done;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0)
		die("%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		die("%s: not a regular file (the size is sent first)", path);
	size = (uint64_t)st.st_size;
	nchunks = (size + chunk - 1) / chunk;
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

	ep_open(&e, sock, 0, window, false, &copy_conf);
	hdrb = ep_alloc(&e, HDR_LEN);
	readyb = ep_alloc(&e, READY_LEN);
	trailerb = ep_alloc(&e, SHA_LEN);
	ackb = ep_alloc(&e, 1);
	/* As many chunk buffers as the window wants and the arena holds. */
	bufs = calloc(window, sizeof(*bufs));
	tx = calloc(window, sizeof(*tx));
	done = calloc(window, sizeof(*done));
	if (!bufs || !tx || !done)
		die("out of memory");
	for (w = 0; w < window; w++)
		if (!(bufs[w] = sl_alloc(e.q, chunk)))
			break;
	if (w == 0)
		arena_too_small(&e, chunk, "use a smaller --chunk");

	/* HEADER out, READY back (its receive posted first). */
	op_init(&ready_rx, K_READY, false, SL_ANY_SOURCE, K_READY, readyb,
		READY_LEN);
	ready_rx.mask = KIND_MASK;
	op_post(&e, &ready_rx);
	put_le64(hdrb, size);
	put_le32(hdrb + 8, chunk);
	put_le32(hdrb + 12, w);
	op_init(&hdr_tx, K_HDR, true, dst, K_HDR, hdrb, HDR_LEN);
	t0 = now_ns();
	op_post(&e, &hdr_tx);
	while (ready_rx.inflight || hdr_tx.inflight) {
		struct sl_cqe c = ep_next(&e);
		struct op *op = op_complete(&e, &c);

		if (op == &ready_rx) {
			check_len(&e, &c, op, READY_LEN);
			receiver = c.peer;
		} else if (op && op != &hdr_tx) {
			unexpected(&e, op);
		}
	}
	rw = get_le32(readyb);
	if (rw == 0 || rw > w)
		die("receiver announced window %" PRIu32 " (sent %u)", rw, w);
	w = rw;
	op_init(&ack_rx, K_ACK, false, receiver, K_ACK, ackb, 1);
	op_post(&e, &ack_rx);
	progress_start(&prog, show_progress ? stderr : NULL, PROG ": sent",
		       size, now_ns());

	/*
	 * Sliding window: chunk j goes out only when all chunks below j - w
	 * completed SL_OK; it lives in slot j % w until its own SL_OK.
	 */
	md = sha_new();
	while (base < nchunks) {
		struct sl_cqe c;
		struct op *op;

		while (next < nchunks && next < base + w) {
			unsigned s = (unsigned)(next % w);
			size_t len = next + 1 < nchunks ? chunk
				: (size_t)(size - next * chunk);

			for (size_t off = 0; off < len; off += PIECE) {
				size_t n = len - off < PIECE ? len - off : PIECE;

				read_full(fd, path, bufs[s] + off, n);
				sha_update(md, bufs[s] + off, n);
			}
			op_init(&tx[s], K_CHUNK, true, dst, CHUNK_TAG(next),
				bufs[s], len);
			tx[s].slot = s;
			op_post(&e, &tx[s]);
			next++;
		}
		c = ep_next(&e);
		op = op_complete(&e, &c);
		if (!op)
			continue;
		if (op == &ack_rx)
			die("receiver gave up before the end (ack %u)", ackb[0]);
		if (op->kind != K_CHUNK)
			unexpected(&e, op);
		done[op->slot] = true;
		while (base < next && done[base % w]) {
			done[base % w] = false;
			base++;
		}
		progress_update(&prog, base * chunk, now_ns());
	}
	close(fd);
	progress_end(&prog);

	/* TRAILER with our digest, then wait for the verdict. */
	sha_final(md, trailerb);
	hex(trailerb, digest);
	op_init(&trailer_tx, K_TRAILER, true, dst, K_TRAILER, trailerb, SHA_LEN);
	op_post(&e, &trailer_tx);
	while (trailer_tx.inflight || ack_rx.inflight) {
		struct sl_cqe c = ep_next(&e);
		struct op *op = op_complete(&e, &c);

		if (op == &ack_rx)
			check_len(&e, &c, op, 1);
		else if (op && op != &trailer_tx)
			unexpected(&e, op);
	}
	printf("sha256 %s %" PRIu64 " bytes sent\n", digest, size);
	fflush(stdout);
	report_rate("sent", size, now_ns() - t0, e.naks);
	verdict = ackb[0];	/* the arena goes with the queue */
	free(bufs);
	free(tx);
	free(done);
	ep_close(&e);
	if (verdict != 1) {
		fprintf(stderr, PROG ": receiver reports a SHA-256 mismatch\n");
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Receiver                                                             */
/* ------------------------------------------------------------------ */

static void write_full(int fd, const char *path, const void *buf, size_t len)
{
	size_t put = 0;

	while (put < len) {
		ssize_t r = write(fd, (const char *)buf + put, len - put);

		if (r >= 0)
			put += (size_t)r;
		else if (errno != EINTR)
			die("%s: write: %s", path, strerror(errno));
	}
}

/* A chunk that arrived ahead of a gap, kept in its receive buffer. */
struct held {
	struct op *op;
	uint64_t len;
};

static int run_recv(const char *out, const char *sock, uint32_t port,
		    const char *ready_file, bool show_progress)
{
	struct progress prog;
	struct op hdr_rx, ready_tx, trailer_rx, ack_tx, *rx;
	uint8_t *hdrb, *readyb, *trailerb, *ackb, mine[SHA_LEN];
	uint64_t size, nchunks, next = 0, posted = 0, t0, t1;
	char dhex[2 * SHA_LEN + 1], shex[2 * SHA_LEN + 1];
	uint32_t chunk, window;
	struct held *held;
	sl_addr_t sender;
	bool match;
	unsigned w, i;
	EVP_MD_CTX *md;
	struct ep e;
	int fd;

	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("%s: %s", out, strerror(errno));
	ep_open(&e, sock, port, WINDOW_MAX, false, &copy_conf);
	hdrb = ep_alloc(&e, HDR_LEN);
	readyb = ep_alloc(&e, READY_LEN);
	trailerb = ep_alloc(&e, SHA_LEN);
	ackb = ep_alloc(&e, 1);
	op_init(&hdr_rx, K_HDR, false, SL_ANY_SOURCE, K_HDR, hdrb, HDR_LEN);
	hdr_rx.mask = KIND_MASK;
	op_post(&e, &hdr_rx);
	if (ready_file)
		write_ready_file(ready_file, "ready\n");

	/* HEADER: who sends, how much, in what pieces. */
	for (;;) {
		struct sl_cqe c = ep_next(&e);
		struct op *op = op_complete(&e, &c);

		if (!op)
			continue;
		if (op != &hdr_rx)
			unexpected(&e, op);
		check_len(&e, &c, op, HDR_LEN);
		sender = c.peer;
		break;
	}
	t0 = now_ns();
	size = get_le64(hdrb);
	chunk = get_le32(hdrb + 8);
	window = get_le32(hdrb + 12);
	if (chunk == 0 || chunk > CHUNK_MAX || window == 0 || window > WINDOW_MAX)
		die("bad header: chunk %" PRIu32 ", window %" PRIu32, chunk,
		    window);
	nchunks = (size + chunk - 1) / chunk;

	/* Post as much of the window as the arena holds, then say READY. */
	rx = calloc(window, sizeof(*rx));
	held = calloc(window, sizeof(*held));
	if (!rx || !held)
		die("out of memory");
	for (w = 0; w < window; w++) {
		void *b = sl_alloc(e.q, chunk);

		if (!b)
			break;
		op_init(&rx[w], K_CHUNK, false, sender, K_CHUNK, b, chunk);
		rx[w].mask = KIND_MASK;
		rx[w].slot = w;
	}
	if (w == 0)
		arena_too_small(&e, chunk, "send with a smaller --chunk");
	for (i = 0; i < w && posted < nchunks; i++, posted++)
		op_post(&e, &rx[i]);
	op_init(&trailer_rx, K_TRAILER, false, sender, K_TRAILER, trailerb,
		SHA_LEN);
	trailer_rx.mask = KIND_MASK;
	op_post(&e, &trailer_rx);
	put_le32(readyb, w);
	op_init(&ready_tx, K_READY, true, sender, K_READY, readyb, READY_LEN);
	op_post(&e, &ready_tx);

	/* CHUNKs, written and hashed in index order; then the TRAILER. */
	md = sha_new();
	progress_start(&prog, show_progress ? stderr : NULL, PROG ": received",
		       size, t0);
	while (next < nchunks || trailer_rx.inflight || ready_tx.inflight) {
		struct sl_cqe c = ep_next(&e);
		struct op *op = op_complete(&e, &c);
		uint64_t idx;

		if (!op || op == &ready_tx)
			continue;
		if (op == &trailer_rx) {
			check_len(&e, &c, op, SHA_LEN);
			continue;
		}
		if (op->kind != K_CHUNK)
			unexpected(&e, op);
		idx = c.tag >> 8;
		if (idx < next || idx >= next + w || idx >= nchunks ||
		    held[idx % w].op)
			die("chunk %" PRIu64 " out of window (expecting %" PRIu64
			    ", window %u)", idx, next, w);
		check_len(&e, &c, op, idx + 1 < nchunks ? chunk
			  : size - idx * chunk);
		held[idx % w].op = op;
		held[idx % w].len = c.len;
		while (next < nchunks && held[next % w].op) {
			struct held *h = &held[next % w];

			for (size_t off = 0; off < h->len; off += PIECE) {
				const uint8_t *p = (const uint8_t *)h->op->buf + off;
				size_t n = h->len - off < PIECE ? h->len - off : PIECE;

				sha_update(md, p, n);
				write_full(fd, out, p, n);
			}
			if (posted < nchunks) {
				op_post(&e, h->op);
				posted++;
			}
			h->op = NULL;
			next++;
		}
		progress_update(&prog, next * chunk, now_ns());
	}
	t1 = now_ns();
	progress_end(&prog);
	if (close(fd) < 0)
		die("%s: close: %s", out, strerror(errno));
	sha_final(md, mine);
	match = memcmp(mine, trailerb, SHA_LEN) == 0;
	hex(trailerb, shex);	/* the arena goes with the queue */

	/* The verdict goes back to the sender before we report. */
	ackb[0] = match ? 1 : 0;
	op_init(&ack_tx, K_ACK, true, sender, K_ACK, ackb, 1);
	op_post(&e, &ack_tx);
	while (ack_tx.inflight) {
		struct sl_cqe c = ep_next(&e);
		struct op *op = op_complete(&e, &c);

		if (op && op != &ack_tx)
			unexpected(&e, op);
	}
	hex(mine, dhex);
	printf("sha256 %s %" PRIu64 " bytes received\n", dhex, size);
	fflush(stdout);
	report_rate("received", size, t1 - t0, e.naks);
	free(rx);
	free(held);
	ep_close(&e);
	if (!match) {
		fprintf(stderr, PROG ": SHA-256 mismatch: sender has %s; %s is"
			" left as received\n", shex, out);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Command line                                                         */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --recv --port P --out FILE [--socket PATH]\n"
		"                   [--ready-file F]\n"
		"       " PROG " --send FILE --to NODE:PORT [--socket PATH]\n"
		"                   [--chunk BYTES] [--window N]\n"
		"       either with [--progress | --no-progress]\n"
		"\n"
		"Copy a file over sluice, verified with SHA-256.\n"
		"  --recv            receive one file on --port into --out\n"
		"  --ready-file F    receiver: create F once the port is bound\n"
		"  --send FILE       send FILE to the receiver at --to\n"
		"  --to NODE:PORT    NODE is a node name or 'local'\n"
		"  --socket PATH     daemon socket (default $SLUICE_SOCKET, else "
		SL_DEFAULT_SOCKET ")\n"
		"  --chunk BYTES     message size, 1..1G, K/M/G suffix allowed\n"
		"                    (default 4M)\n"
		"  --window N        chunks in flight, 1..%u (default 16; fewer when\n"
		"                    the arena, [limits] arena_bytes of sluiced,\n"
		"                    holds fewer on either side)\n"
		"  --progress        a progress line on stderr (bytes, MB/s, time\n"
		"                    left), refreshed up to 4 times a second\n"
		"  --no-progress     none (default: only when stderr is a terminal)\n"
		"  --help            this text\n"
		"Both sides print 'sha256 <hex> <bytes> bytes sent|received'.\n"
		"Exit status: 0 digests match, 1 error or mismatch, 2 usage.\n",
		WINDOW_MAX);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "recv", no_argument, NULL, 'R' },
		{ "send", required_argument, NULL, 'S' },
		{ "port", required_argument, NULL, 'p' },
		{ "out", required_argument, NULL, 'o' },
		{ "to", required_argument, NULL, 't' },
		{ "socket", required_argument, NULL, 's' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "window", required_argument, NULL, 'w' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "progress", no_argument, NULL, 'P' },
		{ "no-progress", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *out = NULL, *in = NULL, *ready_file = NULL;
	bool recv_role = false, have_to = false, send_opts = false;
	uint64_t port = 0, chunk = CHUNK_DEFAULT, window = 16;
	sl_addr_t dst = { 0, 0 };
	int progress_choice = -1;	/* neither option: a terminal decides */
	int c;

	tool_name = PROG;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'R':
			recv_role = true;
			break;
		case 'S':
			in = optarg;
			break;
		case 'p':
			if (parse_u64(optarg, 1, 65535, &port) < 0)
				bad_usage("bad --port '%s' (1..65535)", optarg);
			break;
		case 'o':
			out = optarg;
			break;
		case 't':
			parse_to(optarg, &dst);
			have_to = true;
			break;
		case 's':
			sock = optarg;
			break;
		case 'c':
			if (parse_u64(optarg, 1, CHUNK_MAX, &chunk) < 0)
				bad_usage("bad --chunk '%s' (1..1G)", optarg);
			send_opts = true;
			break;
		case 'w':
			if (parse_u64(optarg, 1, WINDOW_MAX, &window) < 0)
				bad_usage("bad --window '%s' (1..%u)", optarg,
					  WINDOW_MAX);
			send_opts = true;
			break;
		case 'r':
			ready_file = optarg;
			break;
		case 'P':
			progress_choice = 1;
			break;
		case 'N':
			progress_choice = 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			/* getopt_long has already said what was wrong. */
			return try_help();
		}
	}
	reject_operands(argc, argv);
	if (recv_role == !!in)
		bad_usage("exactly one of --recv or --send FILE is required");
	if (recv_role) {
		if (!port || !out)
			bad_usage("--recv needs --port and --out");
		if (have_to || send_opts)
			bad_usage("--to, --chunk and --window are for --send");
		return run_recv(out, sock, (uint32_t)port, ready_file,
				progress_wanted(progress_choice, stderr));
	}
	if (!have_to)
		bad_usage("--send needs --to NODE:PORT");
	if (port || out || ready_file)
		bad_usage("--port, --out and --ready-file are for --recv");
	return run_send(in, sock, dst, (uint32_t)chunk, (unsigned)window,
			progress_wanted(progress_choice, stderr));
}
