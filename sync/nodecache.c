/* sync/nodecache.c: per-thread caches of command blocks (nodecache.h).
 *
 * A block is 8 bytes of tag (its home cache, 64-aligned, or'd with its size
 * class) followed by the caller's bytes; while free, the first word of those
 * bytes links it into a list. A home is one thread's cache:
 * - free[c]: blocks ready for the owner, a plain list (owner only);
 * - ret[c]:  blocks other threads gave back, a stack they push whole batches
 *            onto with compare-and-swap and the owner takes whole with one
 *            exchange. Nobody pops a single node, so there is no ABA.
 * A home outlives its thread (it is adopted by the next thread that starts),
 * because blocks still in flight come back to it whenever they are done.
 *
 * Protocol of a block:
 * 1. get: the owner pops its free list; if empty, it exchanges ret to NULL
 *    (acquire) and uses that chain; if empty too, it mallocs.
 * 2. The caller fills the block and hands it to another thread by its own
 *    means (the inbox's release push orders the contents).
 * 3. put on the owner's thread: back on the free list. put elsewhere: into
 *    this thread's outgoing batch for that home; the batch is pushed onto
 *    ret (release compare-and-swap) when it has BATCH blocks, when a block
 *    of another home or class arrives, and on pts__node_flush().
 * The release in 3 pairs with the acquire in 1: the consumer's last reads
 * and writes of a block happen before the producer reuses it.
 */
#include "sync/nodecache.h"
#include "sync/alloc.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sync/cacheline.h"

#if defined(__SANITIZE_ADDRESS__)
#define BYPASS 1
#else
#define BYPASS 0
#endif

/* Blocks per batch handed back at once: one compare-and-swap per BATCH
 * blocks on the consumer's side. */
#define BATCH 32

typedef struct home home;

typedef struct blk {
  uintptr_t tag;    /* home | class */
  struct blk *next; /* the first word of the caller's bytes, while free */
} blk;

struct home {
  /* Other threads' line. */
  alignas(PTS__CACHELINE) _Atomic(blk *) ret[2];
  /* The owner's line. */
  alignas(PTS__CACHELINE) blk *free[2];
  uint64_t total[2]; /* blocks of this home that exist (malloc'd, not freed) */
  /* Coarse time the cache last ran dry while over the cap (every block in
   * use) or grew past it (trim_allowed). */
  uint64_t needed_ns[2];
  uint32_t gets_over[2]; /* gets while over the cap (trim_free_list) */
  home *next_orphan;
};

static const size_t block_bytes[2] = {PTS__NODE_SMALL + 8, PTS__NODE_LARGE + 8};

static _Thread_local home *tls_home;
/* The outgoing batch: blocks of one home and class, linked head..tail. */
static _Thread_local struct {
  home *home;
  unsigned cls;
  unsigned n;
  blk *head, *tail;
} tls_out;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static pthread_mutex_t orphans_mu = PTHREAD_MUTEX_INITIALIZER;
static home *orphans;

static _Atomic uint64_t n_mallocs, n_live;

/* How long a cache over the cap keeps its surplus after it last needed
 * all of it (its free list ran dry, or it grew): a stream deeper than the
 * cap recycles its blocks instead of freeing each one as it returns and
 * allocating a fresh one for the next post, which is what a fixed cap did
 * (docs/sync.md has the figures). Like jemalloc's decay of dirty pages,
 * memory goes back once the thread has gone that long without using it. */
#define TRIM_DELAY_NS 1000000000u
static _Atomic uint64_t trim_delay_ns = TRIM_DELAY_NS;

void pts__node_set_trim_delay_ns(uint64_t ns) {
  atomic_store_explicit(&trim_delay_ns, ns, memory_order_relaxed);
}

static _Atomic(pts__node_clock_fn) test_clock;

void pts__node_set_clock(pts__node_clock_fn now_ns) {
  atomic_store_explicit(&test_clock, now_ns, memory_order_relaxed);
}

/* CLOCK_MONOTONIC_COARSE: a few ns, and a tick of a few ms is plenty for a
 * one-second delay. Read only over the cap. */
static uint64_t coarse_now_ns(void) {
  pts__node_clock_fn fn = atomic_load_explicit(&test_clock, memory_order_relaxed);
  if (fn != NULL) return fn();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether h, over the cap in class c, may free its surplus now. */
static bool trim_allowed(const home *h, unsigned c) {
  uint64_t d = atomic_load_explicit(&trim_delay_ns, memory_order_relaxed);
  return d == 0 || coarse_now_ns() - h->needed_ns[c] >= d;
}

/* Gets between two checks of trim_free_list while a cache is over the cap. */
#define TRIM_CHECK_GETS 256

static inline home *home_of(const blk *b) { return (home *)(b->tag & ~(uintptr_t)63); }
static inline unsigned class_of(const blk *b) { return (unsigned)(b->tag & 1); }

void pts__node_flush(void) {
  blk *head = tls_out.head;
  if (head == NULL) return;
  _Atomic(blk *) *ret = &tls_out.home->ret[tls_out.cls];
  blk *old = atomic_load_explicit(ret, memory_order_relaxed);
  do {
    tls_out.tail->next = old;
    /* release: publishes our last uses of every block in the batch (step
     * 3); relaxed on failure, the loop only retries. */
  } while (!atomic_compare_exchange_weak_explicit(ret, &old, head, memory_order_release,
                                                  memory_order_relaxed));
  tls_out.head = tls_out.tail = NULL;
  tls_out.n = 0;
  tls_out.home = NULL;
}

/* Thread exit: hand back the outgoing batch, then leave the home for the
 * next thread (its blocks in flight still return to it). */
static void thread_exit(void *arg) {
  home *h = arg;
  pts__node_flush();
  tls_home = NULL;
  pthread_mutex_lock(&orphans_mu);
  h->next_orphan = orphans;
  orphans = h;
  pthread_mutex_unlock(&orphans_mu);
}

static void make_key(void) { (void)pthread_key_create(&exit_key, thread_exit); }

static home *home_get(void) {
  home *h = tls_home;
  if (h != NULL) return h;
  pthread_once(&key_once, make_key);
  pthread_mutex_lock(&orphans_mu);
  h = orphans;
  if (h != NULL) orphans = h->next_orphan;
  pthread_mutex_unlock(&orphans_mu);
  if (h == NULL) {
    h = pts__aligned_alloc(PTS__CACHELINE, sizeof *h);
    if (h == NULL) return NULL;
    memset(h, 0, sizeof *h);
    for (int c = 0; c < 2; c++) atomic_init(&h->ret[c], NULL);
  }
  if (pthread_setspecific(exit_key, h) != 0) {
    /* No exit hook: keep it on the orphan list for later threads. */
    pthread_mutex_lock(&orphans_mu);
    h->next_orphan = orphans;
    orphans = h;
    pthread_mutex_unlock(&orphans_mu);
    return NULL;
  }
  tls_home = h;
  return h;
}

static void block_free(home *h, unsigned c, blk *b) {
  if (h != NULL) h->total[c]--;
  atomic_fetch_sub_explicit(&n_live, 1, memory_order_relaxed);
  pts__free(b);
}

/* A burst's blocks taken back within the trim delay sit on the free list:
 * once the delay has passed, the surplus there goes back too, so a thread
 * that goes on posting at a lower rate does not keep a burst's memory until
 * its free list runs dry. */
static __attribute__((noinline)) void trim_free_list(home *h, unsigned c) {
  if (!trim_allowed(h, c)) return;
  while (h->free[c] != NULL && h->total[c] > PTS__NODE_CACHE_MAX) {
    blk *b = h->free[c];
    h->free[c] = b->next;
    block_free(h, c, b);
  }
}

void *pts__node_get(size_t size) {
  if (size > PTS__NODE_LARGE) return NULL;
  unsigned c = size > PTS__NODE_SMALL;
  home *h = BYPASS ? NULL : home_get();
  blk *b = NULL;
  if (h != NULL) {
    if (h->total[c] > PTS__NODE_CACHE_MAX && ++h->gets_over[c] % TRIM_CHECK_GETS == 0)
      trim_free_list(h, c);
    b = h->free[c];
    if (b == NULL) {
      /* acquire: pairs with the release of pts__node_flush (step 1). */
      b = atomic_exchange_explicit(&h->ret[c], NULL, memory_order_acquire);
      if (h->total[c] > PTS__NODE_CACHE_MAX) {
        /* A burst beyond the cap that is over (the list has not run dry
         * for the delay): its surplus goes back to the allocator as it
         * returns, so the cache shrinks to the cap again. */
        if (trim_allowed(h, c)) {
          while (b != NULL && h->total[c] > PTS__NODE_CACHE_MAX) {
            blk *n = b->next;
            block_free(h, c, b);
            b = n;
          }
        }
        h->needed_ns[c] = coarse_now_ns(); /* every block was in use */
      }
    }
    if (b != NULL) {
      /* A hit counts as an allocation too (sync/alloc.h): failing it keeps
       * the chain cached. */
      if (pts__alloc_inject()) {
        h->free[c] = b;
        return NULL;
      }
      h->free[c] = b->next;
      return &b->next;
    }
  }
  b = pts__malloc(block_bytes[c]);
  if (b == NULL) return NULL;
  b->tag = (uintptr_t)h | c;
  if (h != NULL) {
    h->total[c]++;
    if (h->total[c] > PTS__NODE_CACHE_MAX) h->needed_ns[c] = coarse_now_ns();
  }
  /* Relaxed: statistics. */
  atomic_fetch_add_explicit(&n_mallocs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&n_live, 1, memory_order_relaxed);
  return &b->next;
}

/* Every case of pts__node_put; out of line, so the common case below
 * calls nothing and saves no registers. */
static __attribute__((noinline)) void put_general(blk *b, home *h, unsigned c) {
  if (h == NULL) { /* bypass mode, or a block made without a home */
    block_free(NULL, c, b);
    return;
  }
  if (h == tls_home) {
    if (h->total[c] > PTS__NODE_CACHE_MAX && trim_allowed(h, c)) { /* a burst's surplus */
      block_free(h, c, b);
      return;
    }
    b->next = h->free[c];
    h->free[c] = b;
    return;
  }
  /* A thread that batches blocks needs the exit hook that flushes them, so
   * it gets a home of its own too (home_get registers the hook). */
  if (tls_home == NULL) (void)home_get();
  if (tls_out.head != NULL && (tls_out.home != h || tls_out.cls != c)) pts__node_flush();
  b->next = tls_out.head;
  if (tls_out.head == NULL) {
    tls_out.tail = b;
    tls_out.home = h;
    tls_out.cls = c;
  }
  tls_out.head = b;
  if (++tls_out.n >= BATCH) pts__node_flush();
}

void pts__node_put(void *p) {
  if (p == NULL) return;
  blk *b = (blk *)((char *)p - offsetof(blk, next));
  home *h = home_of(b);
  unsigned c = class_of(b);
  /* The common case on a consumer: another thread's block, joining a batch
   * for the same home and class that it does not fill (tls_out.home is set
   * only by a thread that has a home of its own). */
  if (tls_out.head != NULL && tls_out.home == h && tls_out.cls == c &&
      tls_out.n + 1 < BATCH) {
    b->next = tls_out.head;
    tls_out.head = b;
    tls_out.n++;
    return;
  }
  put_general(b, h, c);
}

uint64_t pts__node_mallocs(void) {
  return atomic_load_explicit(&n_mallocs, memory_order_relaxed);
}

uint64_t pts__node_live(void) { return atomic_load_explicit(&n_live, memory_order_relaxed); }
