/* sync/cacheline.h: the cache line size used to pad structures that several
 * threads write, so one thread's writes do not invalidate another's line; and
 * PTS__ATOMIC(T), the spelling of an atomic field that lets the sync headers
 * compile as C11 (_Atomic) and as C++17 (std::atomic, same size and alignment
 * on the GCC and Clang ABIs), so C++ tests can embed these structs. Only the C
 * files operate on the fields. And pts__cpu_pause(), the spin-wait hint. */
#ifndef PTSCHED_SYNC_CACHELINE_H
#define PTSCHED_SYNC_CACHELINE_H

/* 64 bytes on every x86-64 and most ARMv8 parts. */
#define PTS__CACHELINE 64

#ifdef __cplusplus
#include <atomic>
#include <cstdint>
#define PTS__ATOMIC(T) std::atomic<T>
static_assert(sizeof(std::atomic<void *>) == sizeof(void *) &&
                  sizeof(std::atomic<std::uint64_t>) == 8 &&
                  sizeof(std::atomic<std::uint32_t>) == 4,
              "std::atomic must be lock-free and layout-compatible with C11");
#else
#include <stdatomic.h>
#define PTS__ATOMIC(T) _Atomic(T)
#endif

/* One pause of a spin-wait: lets the other hyperthread run and keeps the
 * loop from flooding the memory system with loads (a no-op elsewhere). */
static inline void pts__cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

#endif /* PTSCHED_SYNC_CACHELINE_H */
