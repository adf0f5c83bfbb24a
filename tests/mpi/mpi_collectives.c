/*
 * mpi_collectives - collectives and matching features with verified
 * results: MPI_Allreduce, MPI_Bcast, MPI_Reduce_scatter, MPI_Iprobe,
 * MPI_Improbe + MPI_Mrecv, MPI_Cancel of a receive, MPI_ANY_SOURCE and
 * MPI_ANY_TAG, synchronous sends (MPI_Issend, MPI_Ssend).  Each part prints what it checked (rank 0) and counts its
 * checks; the program exits 0 only when every check on every rank held.
 * Every expected value is computed in closed form, not by a second MPI
 * call.  A probe loop gives up after PROBE_PATIENCE_S seconds without the
 * message (a check that fails) instead of spinning forever.
 *   mpi_collectives
 */
#define _POSIX_C_SOURCE 200809L	/* nanosleep */

#include "mpi_check.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#define PROBE_PATIENCE_S 20.0

static int nranks;

static void part_allreduce(void)
{
	static const int lens[] = { 1, 1000, 1 << 20 };
	long checked = 0;

	for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
		int n = lens[l];
		int64_t *in = mc_xmalloc(n * sizeof *in), *out = mc_xmalloc(n * sizeof *out);
		double *d = mc_xmalloc(n * sizeof *d);
		long bad_sum = 0, bad_max = 0, bad_inplace = 0;

		for (int i = 0; i < n; i++) {
			in[i] = (int64_t)mc_rank * i + 1;
			d[i] = (double)((mc_rank + i) % nranks);
		}
		MPI_OK(MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
		/* The sum over ranks r of r*i + 1. */
		for (int i = 0; i < n; i++)
			if (out[i] != (int64_t)i * nranks * (nranks - 1) / 2 + nranks)
				bad_sum++;
		MPI_OK(MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
		/* (r + i) % n takes every value 0..n-1 over the ranks r: the
		 * maximum is n - 1. */
		for (int i = 0; i < n; i++)
			if (d[i] != (double)(nranks - 1))
				bad_max++;
		/* In place with MPI_SUM over the same input. */
		memcpy(out, in, n * sizeof *in);
		MPI_OK(MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
		for (int i = 0; i < n; i++)
			if (out[i] != (int64_t)i * nranks * (nranks - 1) / 2 + nranks)
				bad_inplace++;
		CHECK(bad_sum == 0, "allreduce sum of %d int64: %ld wrong", n, bad_sum);
		CHECK(bad_max == 0, "allreduce in-place max of %d doubles: %ld wrong", n, bad_max);
		CHECK(bad_inplace == 0, "allreduce in-place sum of %d int64: %ld wrong", n,
		      bad_inplace);
		checked += 3L * n;
		free(in);
		free(out);
		free(d);
	}
	if (mc_rank == 0)
		printf("  MPI_Allreduce: SUM int64, in-place MAX double, in-place SUM int64 of "
		       "1, 1000, 1M elements: %ld results per rank verified\n", checked);
}

static void part_bcast(void)
{
	static const size_t sizes[] = { 1, 1000, 1 << 20, 3 << 20 };
	uint8_t *buf = mc_xmalloc(3 << 20);
	long bytes = 0;

	for (int root = 0; root < nranks; root++)
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			uint64_t seed = 0xbcull << 32 | (uint64_t)root << 24 | s;

			if (mc_rank == root)
				mc_fill(buf, sizes[s], seed);
			else
				memset(buf, 0, sizes[s]);
			MPI_OK(MPI_Bcast(buf, (int)sizes[s], MPI_BYTE, root, MPI_COMM_WORLD));
			size_t bad = mc_first_bad(buf, sizes[s], seed);
			CHECK(bad == sizes[s], "bcast of %zu B from root %d: byte %zu wrong",
			      sizes[s], root, bad);
			bytes += (long)sizes[s];
		}
	if (mc_rank == 0)
		printf("  MPI_Bcast: every rank as root, 1 B, 1000 B, 1 MiB, 3 MiB: %ld bytes "
		       "per rank verified\n", bytes);
	free(buf);
}

static void part_reduce_scatter(void)
{
	int *counts = mc_xmalloc(nranks * sizeof(int));
	int total = 0, offset = 0, bad = 0;

	/* Unequal blocks: rank r gets 1000 * (r + 1) + r elements. */
	for (int r = 0; r < nranks; r++) {
		counts[r] = 1000 * (r + 1) + r;
		if (r < mc_rank)
			offset += counts[r];
		total += counts[r];
	}
	int64_t *in = mc_xmalloc(total * sizeof *in), *out = mc_xmalloc(counts[mc_rank] * sizeof *out);

	for (int j = 0; j < total; j++)
		in[j] = (int64_t)mc_rank * 100000 + j;
	MPI_OK(MPI_Reduce_scatter(in, out, counts, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
	/* Element j of my block is the sum over ranks p of p * 100000 + (offset + j). */
	for (int j = 0; j < counts[mc_rank]; j++)
		if (out[j] != 100000LL * nranks * (nranks - 1) / 2 + (int64_t)nranks * (offset + j))
			bad++;
	CHECK(bad == 0, "reduce_scatter: %d of my %d elements wrong", bad, counts[mc_rank]);
	if (mc_rank == 0)
		printf("  MPI_Reduce_scatter: SUM int64, unequal blocks of 1000(r+1)+r elements "
		       "(%d in all): every element of every block verified\n", total);
	free(counts);
	free(in);
	free(out);
}

/* Iprobe until a message of (SRC, TAG) is there or PROBE_PATIENCE_S pass. */
static int iprobe_wait(int src, int tag, MPI_Status *st)
{
	double start = MPI_Wtime();
	int flag = 0;

	while (!flag && MPI_Wtime() - start < PROBE_PATIENCE_S)
		MPI_OK(MPI_Iprobe(src, tag, MPI_COMM_WORLD, &flag, st));
	return flag;
}

static int improbe_wait(int src, int tag, MPI_Message *msg, MPI_Status *st)
{
	double start = MPI_Wtime();
	int flag = 0;

	while (!flag && MPI_Wtime() - start < PROBE_PATIENCE_S)
		MPI_OK(MPI_Improbe(src, tag, MPI_COMM_WORLD, &flag, msg, st));
	return flag;
}

/* Each rank sends two messages with one tag to its right neighbour (100 +
 * rank and 200 + rank bytes, in that order).  The receiver Iprobes the
 * first (status: source, tag, count) and Improbes it, then a plain
 * MPI_Recv of that tag must get the second (the matched message is no
 * longer in the queue), then MPI_Mrecv gets the first; nothing is left. */
static void part_probe(void)
{
	const int tag = 7;
	int right = (mc_rank + 1) % nranks, left = (mc_rank + nranks - 1) % nranks;
	size_t len1 = 100 + (size_t)left, len2 = 200 + (size_t)left;
	uint8_t s1[512], s2[512], r1[512], r2[512];
	MPI_Request req[2];
	MPI_Status st;
	MPI_Message msg = MPI_MESSAGE_NULL;
	int count = -1, flag;

	mc_fill(s1, 100 + (size_t)mc_rank, 0x1000 + (uint64_t)mc_rank);
	mc_fill(s2, 200 + (size_t)mc_rank, 0x2000 + (uint64_t)mc_rank);
	MPI_OK(MPI_Isend(s1, 100 + mc_rank, MPI_BYTE, right, tag, MPI_COMM_WORLD, &req[0]));
	MPI_OK(MPI_Isend(s2, 200 + mc_rank, MPI_BYTE, right, tag, MPI_COMM_WORLD, &req[1]));

	flag = iprobe_wait(left, tag, &st);
	CHECK(flag, "iprobe: no message from %d within %.0f s", left, PROBE_PATIENCE_S);
	if (flag) {
		MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
		CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag && count == (int)len1,
		      "iprobe: source %d tag %d count %d, expected %d %d %zu", st.MPI_SOURCE,
		      st.MPI_TAG, count, left, tag, len1);
	}
	/* MPI_ANY_SOURCE: the probe must name the sender. */
	flag = improbe_wait(MPI_ANY_SOURCE, tag, &msg, &st);
	CHECK(flag, "improbe: no message within %.0f s", PROBE_PATIENCE_S);
	if (!flag)
		MPI_Abort(MPI_COMM_WORLD, 4);
	MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag && count == (int)len1,
	      "improbe: source %d tag %d count %d, expected %d %d %zu", st.MPI_SOURCE, st.MPI_TAG,
	      count, left, tag, len1);

	memset(r2, 0, sizeof r2);
	MPI_OK(MPI_Recv(r2, sizeof r2, MPI_BYTE, left, tag, MPI_COMM_WORLD, &st));
	MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
	CHECK(count == (int)len2, "recv after improbe: count %d, expected the second "
				  "message's %zu (the matched one was received again?)", count, len2);
	CHECK(mc_first_bad(r2, len2, 0x2000 + (uint64_t)left) == len2,
	      "recv after improbe: content is not the second message's");

	memset(r1, 0, sizeof r1);
	MPI_OK(MPI_Mrecv(r1, sizeof r1, MPI_BYTE, &msg, &st));
	MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
	CHECK(msg == MPI_MESSAGE_NULL, "mrecv: the message handle was not released");
	CHECK(count == (int)len1 && st.MPI_SOURCE == left, "mrecv: count %d source %d", count,
	      st.MPI_SOURCE);
	CHECK(mc_first_bad(r1, len1, 0x1000 + (uint64_t)left) == len1,
	      "mrecv: content is not the first message's");
	MPI_OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));

	/* Both were received: nothing of this tag is left for anyone.  The
	 * barrier orders it after every rank's receives. */
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &st));
	CHECK(!flag, "iprobe after both receives: a message from %d is still there",
	      st.MPI_SOURCE);
	if (mc_rank == 0)
		printf("  MPI_Iprobe, MPI_Improbe (MPI_ANY_SOURCE) + MPI_Mrecv: two messages of "
		       "one tag from the left neighbour; the probed one is claimed (a plain "
		       "MPI_Recv gets the second), MPI_Mrecv gets the first, none left; "
		       "status and every byte checked\n");
}

/* A receive nobody matches is cancelled (MPI_Test_cancelled); a message
 * with its tag sent afterwards goes to the next receive, not the
 * cancelled one. */
static void part_cancel(void)
{
	const int tag = 999;
	int left = (mc_rank + nranks - 1) % nranks, right = (mc_rank + 1) % nranks;
	uint8_t buf[64], msg[64];
	MPI_Request req;
	MPI_Status st;
	int cancelled = 0, count = -1;

	memset(buf, 0xee, sizeof buf);
	MPI_OK(MPI_Irecv(buf, sizeof buf, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &req));
	MPI_OK(MPI_Cancel(&req));
	MPI_OK(MPI_Wait(&req, &st));
	MPI_OK(MPI_Test_cancelled(&st, &cancelled));
	CHECK(cancelled, "cancel: MPI_Test_cancelled says the receive was not cancelled");
	CHECK(req == MPI_REQUEST_NULL, "cancel: the request was not released");
	CHECK(buf[0] == 0xee && buf[63] == 0xee, "cancel: the cancelled buffer was written");

	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));	/* every receive cancelled before any send */
	mc_fill(msg, sizeof msg, 0x3000 + (uint64_t)mc_rank);
	MPI_OK(MPI_Isend(msg, sizeof msg, MPI_BYTE, right, tag, MPI_COMM_WORLD, &req));
	memset(buf, 0, sizeof buf);
	MPI_OK(MPI_Recv(buf, sizeof buf, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
	MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
	CHECK(st.MPI_SOURCE == left && count == (int)sizeof buf &&
		      mc_first_bad(buf, sizeof buf, 0x3000 + (uint64_t)left) == sizeof buf,
	      "after cancel: source %d count %d or content wrong", st.MPI_SOURCE, count);
	MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
	if (mc_rank == 0)
		printf("  MPI_Cancel of an MPI_ANY_SOURCE receive: MPI_Test_cancelled true, "
		       "buffer untouched; the next message of its tag reaches the next "
		       "receive\n");
}

/* Every rank in turn is the root: the others each send one message with
 * tag 1000 + their rank, which the root receives with MPI_ANY_SOURCE and
 * MPI_ANY_TAG; each source is seen once, with its tag, its count (rank
 * dependent) and its bytes.  Then MPI_ANY_TAG from a named source. */
static void part_wildcards(void)
{
	uint8_t buf[4096], out[4096];
	long received = 0;

	for (int root = 0; root < nranks; root++) {
		uint64_t seed_base = 0x4000 + ((uint64_t)root << 8);

		if (mc_rank != root) {
			size_t len = 1000 + (size_t)mc_rank;

			mc_fill(out, len, seed_base + (uint64_t)mc_rank);
			MPI_OK(MPI_Send(out, (int)len, MPI_BYTE, root, 1000 + mc_rank,
					MPI_COMM_WORLD));
		} else {
			int *seen = calloc((size_t)nranks, sizeof *seen);

			if (seen == NULL)
				MPI_Abort(MPI_COMM_WORLD, 2);
			for (int m = 0; m < nranks - 1; m++) {
				MPI_Status st;
				int count = -1, s;

				MPI_OK(MPI_Recv(buf, sizeof buf, MPI_BYTE, MPI_ANY_SOURCE,
						MPI_ANY_TAG, MPI_COMM_WORLD, &st));
				MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
				s = st.MPI_SOURCE;
				CHECK(s >= 0 && s < nranks && s != root, "any_source: source %d", s);
				if (s < 0 || s >= nranks)
					continue;
				seen[s]++;
				CHECK(st.MPI_TAG == 1000 + s, "any_tag: tag %d from %d", st.MPI_TAG, s);
				CHECK(count == 1000 + s, "any_source: count %d from %d", count, s);
				CHECK(count == 1000 + s &&
					      mc_first_bad(buf, (size_t)count, seed_base + (uint64_t)s) ==
						      (size_t)count,
				      "any_source: content from %d wrong", s);
				received++;
			}
			for (int s = 0; s < nranks; s++)
				CHECK(seen[s] == (s == root ? 0 : 1), "any_source: %d messages from %d",
				      seen[s], s);
			free(seen);
		}
	}
	/* MPI_ANY_TAG from a named source.  The barrier keeps these messages
	 * away from the wildcard receives of the last root above. */
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	int right = (mc_rank + 1) % nranks, left = (mc_rank + nranks - 1) % nranks;
	MPI_Request req;
	MPI_Status st;

	MPI_OK(MPI_Isend(&mc_rank, 1, MPI_INT, right, 4242 + mc_rank, MPI_COMM_WORLD, &req));
	int got = -1;

	MPI_OK(MPI_Recv(&got, 1, MPI_INT, left, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
	CHECK(got == left && st.MPI_TAG == 4242 + left && st.MPI_SOURCE == left,
	      "any_tag from %d: got %d tag %d source %d", left, got, st.MPI_TAG, st.MPI_SOURCE);
	MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
	long all = 0;

	MPI_OK(MPI_Reduce(&received, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
	if (mc_rank == 0)
		printf("  MPI_ANY_SOURCE + MPI_ANY_TAG: every rank as root received %ld messages "
		       "in all, each source once with its tag, count and bytes; MPI_ANY_TAG "
		       "from a named source\n", all);
}

/* Wait for REQ, at most PROBE_PATIENCE_S seconds; 1 when it completed. */
static int wait_bounded(MPI_Request *req, MPI_Status *st)
{
	double start = MPI_Wtime();
	int flag = 0;

	while (!flag && MPI_Wtime() - start < PROBE_PATIENCE_S)
		MPI_OK(MPI_Test(req, &flag, st));
	return flag;
}

/* Synchronous sends (MPI_Issend, completed only once matched: Open MPI's
 * ofi MTL sends an acknowledgement back) both ways between rank ^ 1 pairs,
 * sizes 0..64 KiB, 200 rounds; a send not complete within PROBE_PATIENCE_S
 * is a failed check (the program then gives up rather than hang). */
static void part_ssend(void)
{
	int partner = mc_rank ^ 1, rounds = 200, done = 0;
	uint8_t *sbuf = mc_xmalloc(65536), *rbuf = mc_xmalloc(65536);

	if (partner < nranks) {
		for (int r = 0; r < rounds; r++) {
			size_t len = r % 4 == 0 ? 0 : (size_t)(r * 331) % 65536;
			uint64_t seed = 0x5000 + ((uint64_t)r << 8);
			MPI_Request sreq, rreq;
			MPI_Status st;
			int count = -1, ok_s, ok_r;

			mc_fill(sbuf, len, seed + (uint64_t)mc_rank);
			MPI_OK(MPI_Irecv(rbuf, 65536, MPI_BYTE, partner, 11, MPI_COMM_WORLD, &rreq));
			MPI_OK(MPI_Issend(sbuf, (int)len, MPI_BYTE, partner, 11, MPI_COMM_WORLD, &sreq));
			ok_r = wait_bounded(&rreq, &st);
			CHECK(ok_r, "issend round %d (%zu B): the receive from %d did not complete "
				    "in %.0f s", r, len, partner, PROBE_PATIENCE_S);
			ok_s = wait_bounded(&sreq, MPI_STATUS_IGNORE);
			CHECK(ok_s, "issend round %d (%zu B) to %d: not complete %.0f s after "
				    "(matched: %s)", r, len, partner, PROBE_PATIENCE_S,
			      ok_r ? "our receive of theirs completed" : "unknown");
			if (!ok_r || !ok_s)
				MPI_Abort(MPI_COMM_WORLD, 5);
			MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
			CHECK(count == (int)len && mc_first_bad(rbuf, len, seed + (uint64_t)partner) == len,
			      "issend round %d: count %d (expected %zu) or content wrong", r, count, len);
			done++;
		}
	}
	/* Unexpected synchronous sends: the higher rank's MPI_Issend arrives
	 * 200 ms before the lower rank posts its receive, so the match is
	 * made from the unexpected queue (and the acknowledgement after it). */
	int late = 0;

	if (partner < nranks) {
		for (int r = 0; r < 5; r++) {
			size_t len = (size_t)r * 1000;
			uint64_t seed = 0x6000 + (uint64_t)r;
			MPI_Request req;
			MPI_Status st;
			int count = -1;

			if (mc_rank > partner) {
				mc_fill(sbuf, len, seed);
				MPI_OK(MPI_Issend(sbuf, (int)len, MPI_BYTE, partner, 12, MPI_COMM_WORLD,
						  &req));
				int ok = wait_bounded(&req, MPI_STATUS_IGNORE);
				CHECK(ok, "unexpected issend round %d (%zu B) to %d: not complete in "
					  "%.0f s (the receiver matched it late)", r, len, partner,
				      PROBE_PATIENCE_S);
				if (!ok)
					MPI_Abort(MPI_COMM_WORLD, 5);
			} else {
				struct timespec ts = { 0, 200 * 1000 * 1000 };

				nanosleep(&ts, NULL);
				MPI_OK(MPI_Recv(rbuf, 65536, MPI_BYTE, partner, 12, MPI_COMM_WORLD, &st));
				MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
				CHECK(count == (int)len && mc_first_bad(rbuf, len, seed) == len,
				      "unexpected issend round %d: count %d or content wrong", r, count);
			}
			late++;
		}
	}
	int all = 0, all_late = 0;

	MPI_OK(MPI_Reduce(&done, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
	MPI_OK(MPI_Reduce(&late, &all_late, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
	if (mc_rank == 0)
		printf("  MPI_Issend matched late (unexpected, 200 ms): %d sends, 5 a pair, "
		       "completed on both sides\n", all_late / 2);
	if (mc_rank == 0)
		printf("  MPI_Issend both ways between rank^1 pairs, 0..64 KiB, %d rounds: %d "
		       "synchronous sends completed, every byte checked\n", rounds, all);
	free(sbuf);
	free(rbuf);
}

static const char *blocking_what = "";

static void blocking_timeout(int sig)
{
	(void)sig;
	/* Only async-signal-safe calls here. */
	static const char head[] = "mpi_collectives: FAILED: a blocking ";
	static const char tail[] = " did not return within 20 s\n";
	ssize_t rc = write(2, head, sizeof head - 1);

	rc = write(2, blocking_what, strlen(blocking_what));
	rc = write(2, tail, sizeof tail - 1);
	(void)rc;
	_exit(1);
}

/* Blocking MPI_Ssend (Open MPI's ofi MTL sends it on a path of its own,
 * not the one of MPI_Issend) from the lower to the higher rank of each
 * rank ^ 1 pair, 0 B, 4 B and 32 KiB, then back.  MPI_Ssend cannot be
 * bounded from inside MPI, so an alarm of 20 s ends the program with the
 * reason instead of a hang. */
static void part_ssend_blocking(void)
{
	static const int sizes[] = { 0, 4, 32768 };
	int partner = mc_rank ^ 1, done = 0, all = 0;
	uint8_t *buf = mc_xmalloc(32768);

	if (signal(SIGALRM, blocking_timeout) == SIG_ERR) {
		perror("signal");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (partner < nranks) {
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
			for (int dir = 0; dir < 2; dir++) {
				int sender = (mc_rank < partner) == (dir == 0);
				uint64_t seed = 0x7000 + i * 2 + (uint64_t)dir;
				MPI_Status st;
				int count = -1;

				alarm(20);
				if (sender) {
					blocking_what = "MPI_Ssend";
					mc_fill(buf, (size_t)sizes[i], seed);
					MPI_OK(MPI_Ssend(buf, sizes[i], MPI_BYTE, partner, 13,
							 MPI_COMM_WORLD));
				} else {
					blocking_what = "MPI_Recv of an MPI_Ssend";
					MPI_OK(MPI_Recv(buf, 32768, MPI_BYTE, partner, 13, MPI_COMM_WORLD,
							&st));
					MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
					CHECK(count == sizes[i] &&
						      mc_first_bad(buf, (size_t)count, seed) == (size_t)count,
					      "ssend of %d B: count %d or content wrong", sizes[i], count);
				}
				alarm(0);
				done++;
			}
	}
	MPI_OK(MPI_Reduce(&done, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
	if (mc_rank == 0)
		printf("  MPI_Ssend (blocking) 0 B, 4 B, 32 KiB both ways between rank^1 pairs: "
		       "%d sends and receives returned, every byte checked\n", all);
	free(buf);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mc_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (mc_rank == 0)
		printf("mpi_collectives: %d ranks\n", nranks);
	part_allreduce();
	part_bcast();
	part_reduce_scatter();
	part_probe();
	part_cancel();
	part_wildcards();
	part_ssend();
	part_ssend_blocking();
	int rc = mc_finish("mpi_collectives");

	MPI_Finalize();
	return rc;
}
