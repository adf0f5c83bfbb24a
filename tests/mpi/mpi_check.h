/*
 * mpi_check.h - what the MPI test programs of tests/mpi/ share: a check
 * that counts and reports, byte patterns that tell every message apart,
 * and the verdict every rank agrees on.
 *
 * Each program counts its checks and its failures; mpi_check_finish()
 * sums both over MPI_COMM_WORLD, rank 0 prints them, and every rank
 * returns 0 only when no rank failed one.  A failed check prints its rank,
 * its line and what it saw (the first MPI_CHECK_MAX_REPORTS per rank, so
 * that one corrupt 4 MiB message does not print four million lines).
 * Not thread-safe: the counters are plain globals (the programs are
 * single-threaded, MPI_THREAD_SINGLE).
 */
#ifndef SLUICE_TESTS_MPI_CHECK_H
#define SLUICE_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MPI_CHECK_MAX_REPORTS 20

static long mc_checks;
static long mc_failures;
static int mc_rank = -1;

/* CHECK(cond, fmt, ...): count one check; on failure count it and say why. */
#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		mc_checks++;                                                  \
		if (!(cond)) {                                                \
			if (mc_failures++ < MPI_CHECK_MAX_REPORTS) {          \
				fprintf(stderr, "rank %d: FAILED at %s:%d: ", \
					mc_rank, __FILE__, __LINE__);         \
				fprintf(stderr, __VA_ARGS__);                 \
				fputc('\n', stderr);                          \
			}                                                     \
		}                                                             \
	} while (0)

/* An MPI call that must succeed; the default error handler would abort
 * on its own, this names the call when MPI_ERRORS_RETURN is set. */
#define MPI_OK(call)                                                          \
	do {                                                                  \
		int mc_rc_ = (call);                                          \
		if (mc_rc_ != MPI_SUCCESS) {                                  \
			char mc_msg_[MPI_MAX_ERROR_STRING];                   \
			int mc_len_ = 0;                                      \
			MPI_Error_string(mc_rc_, mc_msg_, &mc_len_);          \
			fprintf(stderr, "rank %d: %s failed: %s\n", mc_rank,  \
				#call, mc_msg_);                              \
			MPI_Abort(MPI_COMM_WORLD, 3);                         \
		}                                                             \
	} while (0)

/* The byte at OFFSET of the message identified by SEED: a 64-bit mix, so
 * that a byte moved, dropped or taken from another message shows. */
static inline uint8_t mc_pattern_byte(uint64_t seed, uint64_t offset)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + offset;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint8_t)x;
}

static inline void mc_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = mc_pattern_byte(seed, i);
}

/* Index of the first byte of BUF that differs from the pattern of SEED,
 * or LEN when all of them hold. */
static inline size_t mc_first_bad(const uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != mc_pattern_byte(seed, i))
			return i;
	return len;
}

static inline void *mc_xmalloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (p == NULL) {
		fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", mc_rank, len);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* Sum the checks and failures of every rank; rank 0 prints the verdict of
 * PROGRAM.  Returns the exit status: 0 only when no rank failed a check
 * and at least one check ran. */
static inline int mc_finish(const char *program)
{
	long mine[2] = { mc_checks, mc_failures }, all[2] = { 0, 0 };

	MPI_OK(MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
	if (mc_rank == 0)
		printf("%s: %s: %ld checks, %ld failed\n", program,
		       all[1] == 0 && all[0] > 0 ? "OK" : "FAILED", all[0], all[1]);
	fflush(stdout);
	return all[1] == 0 && all[0] > 0 ? 0 : 1;
}

#endif
