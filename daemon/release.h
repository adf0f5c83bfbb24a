/*
 * release.h - a queue's segment is unmapped and its memfd closed off the
 * loop when it is large, by one helper thread, so that a client that
 * leaves with a large touched arena does not hold the daemon's loop.
 *
 * munmap() of a mapping whose pages the daemon touched (by copies) costs
 * about 30-90 ms per GiB on the 2-core test VM, and the close() of the
 * memfd that holds the last reference frees the pages: about 180 ms per
 * GiB more (a killed client's mappings go first, so the daemon's close is
 * the last).  Segments below RELEASE_ASYNC_MIN are released at once (a
 * 64 MiB one costs at most about 15 ms), the larger ones by the thread,
 * in the order they were handed over.  The thread does nothing else: no
 * logging, no daemon state; it only counts.
 *
 * Nothing waits for the release: the queue's port, id, registrations and
 * the client's arena quota were given back when the queue was killed
 * (queue_kill), and a new queue has its own memfd, so nothing can be
 * reused too early.  The memory is the kernel's until then:
 * release_pending_bytes() says how much (daemon.release_pending_bytes).
 * A client that opens and kills queues faster than the thread frees them
 * can hold at most what it could hold with queues open; the thread runs
 * as fast as the kernel frees.
 */
#ifndef SLD_RELEASE_H
#define SLD_RELEASE_H

#include <stddef.h>
#include <stdint.h>

struct daemon;

/* Segments this large or larger go to the thread (bytes). */
#define RELEASE_ASYNC_MIN (128ull << 20)

/*
 * release_segment - unmap [@base, @base + @len) and close @memfd (either
 * may be absent: NULL, -1), at once or by the thread (started on first
 * use; when it cannot start, or after release_stop(), at once).  Loop
 * thread only.  Never fails: a failed munmap or close is counted
 * (release_errors), as there is nothing else to do about it.
 */
void release_segment(struct daemon *d, void *base, size_t len, int memfd);

/* Bytes handed to the thread and not yet released; segments handed over
 * so far; munmap/close failures.  Loop thread. */
uint64_t release_pending_bytes(const struct daemon *d);
uint64_t release_async_count(const struct daemon *d);
uint64_t release_errors(const struct daemon *d);

/* Finish every release handed over, stop and join the thread, free its
 * state (teardown).  Later releases are done at once. */
void release_stop(struct daemon *d);

#endif
