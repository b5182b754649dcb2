/* sync/heap.h: the intrusive toolkit's binary min-heap (J. W. J. Williams,
 * "Algorithm 232: Heapsort", CACM 7(6), 1964), the one implementation
 * behind every heap of the library: the loop's timers, the scheduler's
 * selection heaps, and a worker's timer heap and strict/fair heap.
 *
 * The heap is the caller's array of entries of `size` bytes: a pointer to
 * an object, or an object's key beside its pointer (so a sift reads no
 * object memory). The caller sizes the array and keeps its length. It
 * gives two functions in a pts__heap_kind: before(x, y, ctx), whether entry
 * x comes out before entry y; placed(x, i), entry x is now at index i (its
 * object keeps the index, so it can be removed or fixed in O(log n)).
 * Every function here is always inlined, with the kind a constant at each
 * call, so each heap compiles to code specialised for its entries, as a
 * heap written by hand for them would.
 *
 * Threads: none of its own; each heap belongs to one thread (its owner's
 * rule). */
#ifndef PTSCHED_SYNC_HEAP_H
#define PTSCHED_SYNC_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The largest entry (a key, a tie-break and a pointer). */
#define PTS__HEAP_ENTRY_MAX 32

typedef struct pts__heap_kind {
  size_t size; /* of an entry, at most PTS__HEAP_ENTRY_MAX */
  bool (*before)(const void *x, const void *y, const void *ctx);
  void (*placed)(void *x, uint32_t i);
} pts__heap_kind;

#define PTS__HEAP_INLINE static inline __attribute__((always_inline))

PTS__HEAP_INLINE void *pts__heap_at(void *a, uint32_t i, pts__heap_kind k) {
  return (char *)a + (size_t)i * k.size;
}

/* Puts entry e at index i. */
PTS__HEAP_INLINE void pts__heap_put(void *a, uint32_t i, const void *e, pts__heap_kind k) {
  void *slot = pts__heap_at(a, i, k);
  memcpy(slot, e, k.size);
  k.placed(slot, i);
}

/* Moves entry e (not in the array) up from index i to its place. */
PTS__HEAP_INLINE void pts__heap_up(void *a, uint32_t i, const void *e, pts__heap_kind k,
                                   const void *ctx) {
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!k.before(e, pts__heap_at(a, p, k), ctx)) break;
    pts__heap_put(a, i, pts__heap_at(a, p, k), k);
    i = p;
  }
  pts__heap_put(a, i, e, k);
}

/* Moves entry e (not in the array) down from index i of n entries. */
PTS__HEAP_INLINE void pts__heap_down(void *a, uint32_t n, uint32_t i, const void *e,
                                     pts__heap_kind k, const void *ctx) {
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && k.before(pts__heap_at(a, c + 1, k), pts__heap_at(a, c, k), ctx)) c++;
    if (!k.before(pts__heap_at(a, c, k), e, ctx)) break;
    pts__heap_put(a, i, pts__heap_at(a, c, k), k);
    i = c;
  }
  pts__heap_put(a, i, e, k);
}

/* The entry at index i of n changed its key: moves it to its place. */
PTS__HEAP_INLINE void pts__heap_fix(void *a, uint32_t n, uint32_t i, pts__heap_kind k,
                                    const void *ctx) {
  unsigned char e[PTS__HEAP_ENTRY_MAX];
  memcpy(e, pts__heap_at(a, i, k), k.size);
  if (i > 0 && k.before(e, pts__heap_at(a, (i - 1) / 2, k), ctx))
    pts__heap_up(a, i, e, k, ctx);
  else
    pts__heap_down(a, n, i, e, k, ctx);
}

/* Adds entry e to the n entries (the array has room for n + 1); n grows. */
PTS__HEAP_INLINE void pts__heap_push(void *a, uint32_t *n, const void *e, pts__heap_kind k,
                                     const void *ctx) {
  pts__heap_up(a, (*n)++, e, k, ctx);
}

/* Removes the entry at index i of n; n shrinks. The removed entry's index
 * is the caller's to clear. */
PTS__HEAP_INLINE void pts__heap_remove(void *a, uint32_t *n, uint32_t i, pts__heap_kind k,
                                       const void *ctx) {
  uint32_t last = --*n;
  if (i == last) return;
  unsigned char e[PTS__HEAP_ENTRY_MAX];
  memcpy(e, pts__heap_at(a, last, k), k.size);
  if (i > 0 && k.before(e, pts__heap_at(a, (i - 1) / 2, k), ctx))
    pts__heap_up(a, i, e, k, ctx);
  else
    pts__heap_down(a, *n, i, e, k, ctx);
}

#endif /* PTSCHED_SYNC_HEAP_H */
