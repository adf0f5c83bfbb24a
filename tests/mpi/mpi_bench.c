/*
 * mpi_bench - three OSU-like figures between ranks 0 and 1 (scripts/mpi-bench):
 *   latency:  8 B blocking ping-pong, half the round trip, microseconds;
 *   bandwidth: 1 MiB messages, WINDOW_BW non-blocking sends then a 4-byte
 *             acknowledgement, MB/s (10^6 bytes per second);
 *   rate:     8 B messages, WINDOW_RATE non-blocking sends per
 *             acknowledgement, messages per second.
 * Each has a warm-up of a tenth of its iterations that is not timed.  The
 * data is not checked here (mpi_pingpong and mpi_alltoall do that: a check
 * would be timed too).  Ranks other than 0 and 1 wait.
 *   mpi_bench [LAT_ITERS [BW_ITERS [RATE_ITERS]]]   (20000, 100, 2000)
 * Prints one line on rank 0:
 *   mpi_bench: latency_us=L bandwidth_MBps=B rate_msgps=R
 */
#include "mpi_check.h"

#define WINDOW_BW 16
#define WINDOW_RATE 64
#define BW_SIZE (1u << 20)

static double latency(int peer, int iters)
{
	char buf[8] = { 0 };
	double t0 = 0;

	for (int i = -iters / 10; i < iters; i++) {
		if (i == 0)
			t0 = MPI_Wtime();
		if (mc_rank == 0) {
			MPI_OK(MPI_Send(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
			MPI_OK(MPI_Recv(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		} else {
			MPI_OK(MPI_Recv(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			MPI_OK(MPI_Send(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
		}
	}
	return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

/* WINDOW messages of SIZE bytes from rank 0 to rank 1, then an ack; ITERS
 * windows timed after ITERS / 10 untimed.  Returns the seconds taken. */
static double stream(int peer, size_t size, int window, int iters, uint8_t *buf)
{
	MPI_Request req[WINDOW_RATE];
	int ack = 0;
	double t0 = 0;

	for (int i = -(iters / 10 + 1); i < iters; i++) {
		if (i == 0)
			t0 = MPI_Wtime();
		for (int w = 0; w < window; w++) {
			if (mc_rank == 0)
				MPI_OK(MPI_Isend(buf + (size_t)w * size, (int)size, MPI_BYTE, peer, 2,
						 MPI_COMM_WORLD, &req[w]));
			else
				MPI_OK(MPI_Irecv(buf + (size_t)w * size, (int)size, MPI_BYTE, peer, 2,
						 MPI_COMM_WORLD, &req[w]));
		}
		MPI_OK(MPI_Waitall(window, req, MPI_STATUSES_IGNORE));
		if (mc_rank == 0)
			MPI_OK(MPI_Recv(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		else
			MPI_OK(MPI_Send(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD));
	}
	return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
	int nranks;
	int lat_iters = argc > 1 ? atoi(argv[1]) : 20000;
	int bw_iters = argc > 2 ? atoi(argv[2]) : 100;
	int rate_iters = argc > 3 ? atoi(argv[3]) : 2000;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mc_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2 || lat_iters < 1 || bw_iters < 1 || rate_iters < 1) {
		if (mc_rank == 0)
			fprintf(stderr, "usage: mpirun -n 2 mpi_bench [LAT_ITERS [BW_ITERS "
					"[RATE_ITERS]]] (all >= 1)\n");
		MPI_Finalize();
		return 2;
	}
	uint8_t *buf = mc_xmalloc((size_t)WINDOW_BW * BW_SIZE);
	double lat = 0, bw_s = 0, rate_s = 0;

	memset(buf, 0x5c, (size_t)WINDOW_BW * BW_SIZE);
	if (mc_rank < 2) {
		int peer = 1 - mc_rank;

		lat = latency(peer, lat_iters);
		bw_s = stream(peer, BW_SIZE, WINDOW_BW, bw_iters, buf);
		rate_s = stream(peer, 8, WINDOW_RATE, rate_iters, buf);
	}
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (mc_rank == 0)
		printf("mpi_bench: latency_us=%.2f bandwidth_MBps=%.1f rate_msgps=%.0f\n", lat,
		       (double)BW_SIZE * WINDOW_BW * bw_iters / bw_s / 1e6,
		       (double)WINDOW_RATE * rate_iters / rate_s);
	free(buf);
	MPI_Finalize();
	return 0;
}
