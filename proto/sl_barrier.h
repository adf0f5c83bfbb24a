/*
 * sl_barrier.h - the memory-ordering vocabulary of sluice.
 *
 * Every cross-process access to shared memory goes through these macros so
 * that each ordering edge is named and can be paired with its partner in a
 * comment (DPDK's "A1 pairs with R0" style, liburing's io_uring_smp_*).
 * Nothing else in the tree uses volatile or __sync builtins for
 * synchronisation.
 *
 *   SL_READ_ONCE / SL_WRITE_ONCE   relaxed atomic access: no tearing, no
 *                                  ordering.
 *   sl_load_acquire                later loads/stores cannot move above it;
 *                                  pairs with an sl_store_release of the
 *                                  same word by the other side.
 *   sl_store_release               earlier loads/stores cannot move below it.
 *   sl_smp_mb                      full fence: orders an earlier store
 *                                  against a later load (store-load), which
 *                                  acquire/release cannot do.  Used only in
 *                                  the sleep/wake-up handshake.
 */
#ifndef SL_BARRIER_H
#define SL_BARRIER_H

#include <stdatomic.h>
#include <stdint.h>

#define SL_READ_ONCE(p) \
	atomic_load_explicit((_Atomic __typeof__(*(p)) *)(p), memory_order_relaxed)
#define SL_WRITE_ONCE(p, v) \
	atomic_store_explicit((_Atomic __typeof__(*(p)) *)(p), (v), memory_order_relaxed)
#define sl_load_acquire(p) \
	atomic_load_explicit((_Atomic __typeof__(*(p)) *)(p), memory_order_acquire)
#define sl_store_release(p, v) \
	atomic_store_explicit((_Atomic __typeof__(*(p)) *)(p), (v), memory_order_release)
#define sl_smp_mb() atomic_thread_fence(memory_order_seq_cst)

/* Atomic read-modify-write on a shared flags word (wake-up flags only). */
#define sl_flags_or(p, v) \
	atomic_fetch_or_explicit((_Atomic uint32_t *)(p), (v), memory_order_seq_cst)
#define sl_flags_andnot(p, v) \
	atomic_fetch_and_explicit((_Atomic uint32_t *)(p), ~(uint32_t)(v), memory_order_seq_cst)

static inline void sl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif /* SL_BARRIER_H */
