/*
 * mpi_pingpong - blocking ping-pong over every message size from 0 B to
 * 4 MiB, every byte of every message verified.
 *
 * Two phases: ranks paired with rank ^ 1 (under scripts/mpi-suite, even
 * ranks use node a and odd ranks node b, so this pair crosses the daemons'
 * link), then, with 4 ranks or more, with rank ^ 2 (the same node).  For
 * each size and round trip the lower rank sends a message whose bytes
 * depend on (phase, size, round, direction), the higher rank checks the
 * status (source, tag, count), every byte and that nothing was written past
 * the message, and answers with a pattern of its own, which the lower rank
 * checks the same way.  A rank without a partner in a phase (an odd world)
 * sits it out.
 *   mpi_pingpong [ROUNDS]    round trips per size (3)
 * Exits 0 only when every check on every rank held.
 */
#include "mpi_check.h"

#define MAX_SIZE (4u << 20)
#define GUARD 64		/* bytes past the largest message that must stay */
#define GUARD_BYTE 0xa5

/* 0, 1, 3, then for every power of two p from 8 to 4 MiB: p - 1 and p
 * (sizes either side of the boundaries where transports switch protocol). */
static size_t build_sizes(size_t *sizes)
{
	size_t n = 0;

	sizes[n++] = 0;
	sizes[n++] = 1;
	sizes[n++] = 3;
	for (size_t p = 8; p <= MAX_SIZE; p *= 2) {
		sizes[n++] = p - 1;
		sizes[n++] = p;
	}
	return n;
}

static uint64_t seed_of(int phase, size_t size, int round, int dir)
{
	return ((uint64_t)phase << 60) ^ ((uint64_t)size << 8) ^ ((uint64_t)round << 2) ^
	       (uint64_t)dir;
}

/* Receive one message of SIZE bytes from PEER with TAG into BUF (capacity
 * MAX_SIZE + GUARD) and check all of it against SEED. */
static void recv_and_check(uint8_t *buf, size_t size, int peer, int tag, uint64_t seed)
{
	MPI_Status st;
	int count = -1;

	memset(buf, GUARD_BYTE, size + GUARD);
	MPI_OK(MPI_Recv(buf, MAX_SIZE + GUARD, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
	MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
	CHECK(st.MPI_SOURCE == peer, "size %zu: source %d, expected %d", size, st.MPI_SOURCE,
	      peer);
	CHECK(st.MPI_TAG == tag, "size %zu: tag %d, expected %d", size, st.MPI_TAG, tag);
	CHECK(count >= 0 && (size_t)count == size, "size %zu: count %d", size, count);
	size_t bad = mc_first_bad(buf, size, seed);
	CHECK(bad == size, "size %zu from %d: byte %zu is 0x%02x, expected 0x%02x", size, peer,
	      bad, bad < size ? buf[bad] : 0, bad < size ? mc_pattern_byte(seed, bad) : 0);
	size_t g = 0;
	while (g < GUARD && buf[size + g] == GUARD_BYTE)
		g++;
	CHECK(g == GUARD, "size %zu from %d: byte %zu past the message was overwritten", size,
	      peer, g);
}

int main(int argc, char **argv)
{
	int nranks, rounds = argc > 1 ? atoi(argv[1]) : 3;
	size_t sizes[64];
	size_t nsizes = build_sizes(sizes);

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mc_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (rounds < 1) {
		if (mc_rank == 0)
			fprintf(stderr, "usage: mpi_pingpong [ROUNDS >= 1]\n");
		MPI_Finalize();
		return 2;
	}
	uint8_t *sbuf = mc_xmalloc(MAX_SIZE);
	uint8_t *rbuf = mc_xmalloc(MAX_SIZE + GUARD);
	unsigned long long verified = 0, all_verified = 0;
	int pairs_done = 0, all_pairs = 0;

	for (int phase = 0; phase < 2; phase++) {
		int partner = mc_rank ^ (1 << phase);

		if (partner < nranks) {
			int lower = mc_rank < partner;

			for (size_t i = 0; i < nsizes; i++) {
				size_t size = sizes[i];
				int tag = (int)i + 100 * phase;

				for (int r = 0; r < rounds; r++) {
					uint64_t ping = seed_of(phase, size, r, 0);
					uint64_t pong = seed_of(phase, size, r, 1);

					if (lower) {
						mc_fill(sbuf, size, ping);
						MPI_OK(MPI_Send(sbuf, (int)size, MPI_BYTE, partner,
								tag, MPI_COMM_WORLD));
						recv_and_check(rbuf, size, partner, tag, pong);
					} else {
						recv_and_check(rbuf, size, partner, tag, ping);
						mc_fill(sbuf, size, pong);
						MPI_OK(MPI_Send(sbuf, (int)size, MPI_BYTE, partner,
								tag, MPI_COMM_WORLD));
					}
					verified += size;
				}
			}
			if (lower)
				pairs_done++;
		}
		/* The phases stay apart: a late message of phase 0 cannot meet
		 * a receive of phase 1 (the tags differ too). */
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	}
	MPI_OK(MPI_Reduce(&verified, &all_verified, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
			  MPI_COMM_WORLD));
	MPI_OK(MPI_Reduce(&pairs_done, &all_pairs, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
	if (mc_rank == 0)
		printf("mpi_pingpong: %d ranks, %d pairs (rank^1%s), %zu sizes 0..%u B, "
		       "%d round trips each; source, tag, count, every byte and %d guard "
		       "bytes checked: %llu bytes verified\n",
		       nranks, all_pairs, nranks >= 4 ? ", rank^2" : "", nsizes, MAX_SIZE, rounds,
		       GUARD, all_verified);
	int rc = mc_finish("mpi_pingpong");
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return rc;
}
