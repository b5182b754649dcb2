/* The library's one allocation seam: every allocation of loop/, sched/,
 * agents/ and sync/ (the loop's block pool and the node cache included) goes
 * through these wrappers over the C allocator (jemalloc in the binaries), so
 * a test can make the k-th allocation fail (docs/reliability.md,
 * "Allocation-failure injection").
 *
 * Invariant: with injection off (the default, and always outside tests) a
 * wrapper costs one relaxed load of a global and a branch predicted not
 * taken. Armed, every allocation attempt (a pool or cache hit included, so
 * the count does not depend on what is cached) bumps one process-wide
 * counter; the attempt whose number is the armed k returns NULL instead.
 *
 * Who calls what: the wrappers from any thread; the test controls
 * (pts__alloc_fail_at, _disarm, _count, _failures, _sites) from a test's main thread
 * while no other thread allocates through the library, or accepting that
 * concurrent allocations are numbered in the order they happen. Internal:
 * not in include/, hidden in the shared library. */
#ifndef PTS_SYNC_ALLOC_H
#define PTS_SYNC_ALLOC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The wrappers are C only (the library); C++ tests see the controls below. */
#ifndef __cplusplus

/* Inlined even at -O0, so that the out-of-line tick's return address is the
 * allocation call site itself (pts__alloc_sites). */
#define PTS__ALLOC_INLINE __attribute__((always_inline))

/* Nonzero while a test counts or injects; read relaxed: a test arms it
 * before the calls it measures, on the same thread or before starting the
 * threads that allocate. */
extern _Atomic int pts__alloc_armed;

/* Out of line, taken only when armed: counts one attempt and says whether
 * it is the one to fail. */
bool pts__alloc_tick(void);

/* True when this allocation attempt must fail. Pool and cache hits call it
 * too, so that every attempt counts once, hit or miss. */
static inline PTS__ALLOC_INLINE bool pts__alloc_inject(void) {
  if (__builtin_expect(atomic_load_explicit(&pts__alloc_armed, memory_order_relaxed) == 0, 1))
    return false;
  return pts__alloc_tick();
}

static inline PTS__ALLOC_INLINE void *pts__malloc(size_t size) {
  return pts__alloc_inject() ? NULL : malloc(size);
}

static inline PTS__ALLOC_INLINE void *pts__calloc(size_t n, size_t size) {
  return pts__alloc_inject() ? NULL : calloc(n, size);
}

/* On failure the old block is untouched, as for realloc. */
static inline PTS__ALLOC_INLINE void *pts__realloc(void *p, size_t size) {
  return pts__alloc_inject() ? NULL : realloc(p, size);
}

/* size need not be a multiple of align: rounded up here (C11 7.22.3.1). */
static inline PTS__ALLOC_INLINE void *pts__aligned_alloc(size_t align, size_t size) {
  if (pts__alloc_inject()) return NULL;
  return aligned_alloc(align, (size + align - 1) / align * align);
}

static inline PTS__ALLOC_INLINE char *pts__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = (char *)pts__malloc(n);
  if (d != NULL) memcpy(d, s, n);
  return d;
}

static inline PTS__ALLOC_INLINE void pts__free(void *p) { free(p); }

#endif /* !__cplusplus */

/* ---- for tests ---- */

/* Arms the seam: resets the count to 0 and makes the k-th attempt from now
 * fail (k = 0: count only, fail nothing). */
void pts__alloc_fail_at(uint64_t k);
/* Off again (count and failures stay readable until the next arm). */
void pts__alloc_disarm(void);
/* Attempts counted since the last arm. */
uint64_t pts__alloc_count(void);
/* Attempts made to fail since the last arm (0 or 1). */
uint64_t pts__alloc_failures(void);
/* Distinct allocation call sites (each wrapper call in the source, as
 * inlined) that allocated while armed, since the process started. */
uint64_t pts__alloc_sites(void);

#ifdef __cplusplus
}
#endif

#endif
