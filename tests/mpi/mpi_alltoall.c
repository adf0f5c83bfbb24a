/*
 * mpi_alltoall - MPI_Alltoall and MPI_Alltoallv (unequal counts, zeros
 * among them, displacements with gaps) with every element verified.
 *
 * Element i sent by rank s to rank d in round r holds a 32-bit mix of
 * (s, d, r, i), so an element delivered to the wrong rank, the wrong
 * offset or from an earlier round shows.  Alltoall runs with 1, 7, 4096
 * and 65536 ints per pair; Alltoallv with count(s, d) = ((5s + 3d + r) % 7)
 * * k ints for k = 1, 333, 20000, placed with a gap of GAP ints between
 * the blocks of the receive buffer, which must keep their sentinel.
 *   mpi_alltoall [--rounds N]        N rounds of both (2)
 *   mpi_alltoall --forever [--ready FILE]
 *       rounds until killed (scripts/mpi-suite's kill case); rank 0 creates
 *       FILE after the first round, so that the script knows traffic flows.
 * Exits 0 only when every check on every rank held.
 */
#include "mpi_check.h"

#define GAP 3
#define SENTINEL ((int32_t)0x5a5a5a5a)

static int32_t value(int src, int dst, int round, size_t i)
{
	uint64_t seed = ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ (uint64_t)round;
	uint32_t v = 0;

	for (int b = 0; b < 4; b++)
		v = v << 8 | mc_pattern_byte(seed, 4 * i + (size_t)b);
	return (int32_t)v;
}

static int vcount(int src, int dst, int round, int k)
{
	return ((5 * src + 3 * dst + round) % 7) * k;
}

/* One MPI_Alltoall of COUNT ints per pair; returns the elements checked. */
static size_t run_alltoall(int nranks, int round, int count)
{
	size_t n = (size_t)nranks * (size_t)count;
	int32_t *sbuf = mc_xmalloc(n * sizeof *sbuf);
	int32_t *rbuf = mc_xmalloc(n * sizeof *rbuf);
	size_t bad = 0;

	for (int d = 0; d < nranks; d++)
		for (int i = 0; i < count; i++)
			sbuf[(size_t)d * count + i] = value(mc_rank, d, round, (size_t)i);
	for (size_t i = 0; i < n; i++)
		rbuf[i] = SENTINEL;
	MPI_OK(MPI_Alltoall(sbuf, count, MPI_INT32_T, rbuf, count, MPI_INT32_T, MPI_COMM_WORLD));
	for (int s = 0; s < nranks; s++)
		for (int i = 0; i < count; i++) {
			int32_t got = rbuf[(size_t)s * count + i];
			int32_t want = value(s, mc_rank, round, (size_t)i);

			if (got != want && bad++ == 0)
				fprintf(stderr, "rank %d: alltoall %d/pair round %d: first "
						"bad element %d from rank %d is 0x%08x, "
						"expected 0x%08x\n", mc_rank, count, round, i,
					s, (unsigned)got, (unsigned)want);
		}
	CHECK(bad == 0, "alltoall %d/pair round %d: %zu of %zu elements wrong", count, round,
	      bad, n);
	free(sbuf);
	free(rbuf);
	return n;
}

/* One MPI_Alltoallv with counts of vcount(.., K); returns the elements
 * checked (data and gaps). */
static size_t run_alltoallv(int nranks, int round, int k)
{
	int *scounts = mc_xmalloc(nranks * sizeof(int)), *sdispls = mc_xmalloc(nranks * sizeof(int));
	int *rcounts = mc_xmalloc(nranks * sizeof(int)), *rdispls = mc_xmalloc(nranks * sizeof(int));
	size_t stotal = 0, rtotal = 0, bad = 0;

	for (int p = 0; p < nranks; p++) {
		scounts[p] = vcount(mc_rank, p, round, k);
		sdispls[p] = (int)stotal;
		stotal += (size_t)scounts[p];
		rcounts[p] = vcount(p, mc_rank, round, k);
		rdispls[p] = (int)rtotal;
		rtotal += (size_t)rcounts[p] + GAP;
	}
	int32_t *sbuf = mc_xmalloc(stotal * sizeof *sbuf);
	int32_t *rbuf = mc_xmalloc(rtotal * sizeof *rbuf);

	for (int d = 0; d < nranks; d++)
		for (int i = 0; i < scounts[d]; i++)
			sbuf[sdispls[d] + i] = value(mc_rank, d, round, (size_t)i);
	for (size_t i = 0; i < rtotal; i++)
		rbuf[i] = SENTINEL;
	MPI_OK(MPI_Alltoallv(sbuf, scounts, sdispls, MPI_INT32_T, rbuf, rcounts, rdispls,
			     MPI_INT32_T, MPI_COMM_WORLD));
	for (int s = 0; s < nranks; s++) {
		for (int i = 0; i < rcounts[s]; i++) {
			int32_t got = rbuf[rdispls[s] + i];
			int32_t want = value(s, mc_rank, round, (size_t)i);

			if (got != want && bad++ == 0)
				fprintf(stderr, "rank %d: alltoallv k=%d round %d: first "
						"bad element %d of %d from rank %d is 0x%08x, "
						"expected 0x%08x\n", mc_rank, k, round, i,
					rcounts[s], s, (unsigned)got, (unsigned)want);
		}
		for (int g = 0; g < GAP; g++)
			if (rbuf[rdispls[s] + rcounts[s] + g] != SENTINEL && bad++ == 0)
				fprintf(stderr, "rank %d: alltoallv k=%d round %d: gap %d after "
						"rank %d's block was overwritten\n", mc_rank, k,
					round, g, s);
	}
	CHECK(bad == 0, "alltoallv k=%d round %d: %zu of %zu elements or gap slots wrong", k,
	      round, bad, rtotal);
	free(sbuf);
	free(rbuf);
	free(scounts);
	free(sdispls);
	free(rcounts);
	free(rdispls);
	return rtotal;
}

int main(int argc, char **argv)
{
	static const int counts[] = { 1, 7, 4096, 65536 };
	static const int ks[] = { 1, 333, 20000 };
	int nranks, rounds = 2, forever = 0;
	const char *ready = NULL;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mc_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	for (int a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc)
			rounds = atoi(argv[++a]);
		else if (strcmp(argv[a], "--forever") == 0)
			forever = 1;
		else if (strcmp(argv[a], "--ready") == 0 && a + 1 < argc)
			ready = argv[++a];
		else {
			if (mc_rank == 0)
				fprintf(stderr, "usage: mpi_alltoall [--rounds N] "
						"[--forever [--ready FILE]]\n");
			MPI_Finalize();
			return 2;
		}
	}
	size_t elements = 0;
	int round;

	for (round = 0; forever || round < rounds; round++) {
		for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
			if (!forever || counts[c] <= 4096)
				elements += run_alltoall(nranks, round, counts[c]);
		for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
			if (!forever || ks[k] <= 333)
				elements += run_alltoallv(nranks, round, ks[k]);
		if (forever && round == 0 && mc_rank == 0 && ready != NULL) {
			FILE *f = fopen(ready, "w");

			if (f == NULL || fclose(f) != 0) {
				perror(ready);
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
		}
	}
	unsigned long long mine = elements, all = 0;

	MPI_OK(MPI_Reduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
	if (mc_rank == 0)
		printf("mpi_alltoall: %d ranks, %d rounds of MPI_Alltoall (1, 7, 4096, 65536 "
		       "ints a pair) and MPI_Alltoallv (counts ((5s+3d+r) %% 7) * 1, 333, 20000, "
		       "zeros included, %d-int gaps kept): %llu elements verified\n",
		       nranks, rounds, GAP, all);
	int rc = mc_finish("mpi_alltoall");

	MPI_Finalize();
	return rc;
}
