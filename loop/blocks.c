/* loop/blocks.c: the loop's block pool (fixed size classes of 16 to
 * 128 bytes, one free list each; the allocator for larger blocks) and
 * the byte quota it keeps (loop_internal.h, "quotas"). Owner thread. */
#include <stdbool.h>
#include <stdlib.h>

#include "loop/loop_impl.h"
#include "sync/alloc.h"

/* The pool is bypassed under AddressSanitizer so it sees every block's
 * lifetime (a pooled block would hide a use after free). */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_BYPASS 1
#else
#define POOL_BYPASS 0
#endif

/* ---- pool ---- */

static unsigned pool_class(size_t size) { return (unsigned)((size + 15) / 16) - 1; }

/* Whether the last NULL of this thread's pool_malloc was a byte limit
 * (pts__enomem): the loop's callers see only the NULL. */
static _Thread_local bool quota_hit;

int pts__enomem(void) {
  if (!quota_hit) return PTS_ENOMEM;
  quota_hit = false;
  return PTS_EQUOTA;
}

static void quota_set(_Atomic uint64_t *c, uint64_t v) {
  atomic_store_explicit(c, v, memory_order_relaxed);
}

static uint64_t quota_get(const _Atomic uint64_t *c) {
  return atomic_load_explicit(c, memory_order_relaxed);
}

void pts__loop_set_byte_limit(pts_loop *loop, uint64_t limit) { loop->quota.byte_limit = limit; }
void pts__loop_quota_refused_add(pts_loop *loop) {
  quota_set(&loop->quota.refused, quota_get(&loop->quota.refused) + 1);
}
uint64_t pts__loop_quota_bytes(const pts_loop *loop) { return quota_get(&loop->quota.bytes); }
uint64_t pts__loop_quota_refused(const pts_loop *loop) { return quota_get(&loop->quota.refused); }

/* The pool's calls to the allocator, out of line: the hit path below stays
 * small enough to be inlined into every post (it is most of a post). A
 * block from the allocator counts against the loop's byte limit until the
 * loop is freed (blocks on the free lists stay held), one over POOL_MAX
 * until it is freed. */
static __attribute__((noinline)) void *pool_malloc(pts_loop *loop, size_t size) {
  uint64_t held = quota_get(&loop->quota.bytes);
  quota_hit = false;
  if (size > loop->quota.byte_limit - held) {
    quota_hit = true;
    pts__loop_quota_refused_add(loop);
    return NULL;
  }
  void *b = pts__malloc(size);
  if (b != NULL) quota_set(&loop->quota.bytes, held + size);
  return b;
}

void *pts__loop_pool_alloc(pts_loop *loop, size_t size) {
  if (size == 0) size = 1;
  if (POOL_BYPASS || size > POOL_MAX) return pool_malloc(loop, size);
  unsigned c = pool_class(size);
  void *b = loop->pool[c];
  if (b == NULL) return pool_malloc(loop, (size_t)(c + 1) * 16);
  /* A hit counts as an allocation too (sync/alloc.h). */
  if (pts__alloc_inject()) return NULL;
  loop->pool[c] = *(void **)b;
  return b;
}

void pts__loop_pool_free(pts_loop *loop, void *block, size_t size) {
  if (block == NULL) return;
  if (size == 0) size = 1;
  if (POOL_BYPASS || size > POOL_MAX) {
    pts__free(block);
    quota_set(&loop->quota.bytes, quota_get(&loop->quota.bytes) - size);
    return;
  }
  unsigned c = pool_class(size);
  *(void **)block = loop->pool[c];
  loop->pool[c] = block;
}

void pts__loop_pool_release_all(pts_loop *loop) {
  for (unsigned c = 0; c < POOL_CLASSES; c++) {
    while (loop->pool[c] != NULL) {
      void *b = loop->pool[c];
      loop->pool[c] = *(void **)b;
      pts__free(b);
    }
  }
}
