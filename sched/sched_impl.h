/* sched/sched_impl.h: the Scheduler's private structures, shared by the
 * files of sched/ that implement it (scheduler.c, state.c, queues.c,
 * tasks.c, run.c, post.c). Nothing outside sched/ includes this; the agents
 * layer, the tests and the benchmarks use sched_internal.h.
 *
 * The invariants these files keep and the protocol of a task are in
 * scheduler.c's header. The helpers of the hot path (post_fixed, the task
 * blocks, enqueue, run_one) and the selection heap's are static here, so no
 * cut between the files puts a call on that path; the rest is out of line
 * in the file named above its declaration.
 *
 * Threads: owner thread of the loop only, except pts__sctx.live_tasks.
 */
#ifndef PTSCHED_SCHED_IMPL_H
#define PTSCHED_SCHED_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop/loop_internal.h"
#include "ptsched/scheduler.h"
#include "sched/sched_internal.h"
#include "sched/signal_internal.h"
#include "sync/alloc.h"
#include "sync/heap.h"
#include "sync/intrusive.h"

#define LEVELS 6
#define NOT_IN_HEAP UINT32_MAX

typedef struct pts__squeue squeue;
typedef struct pts__stask stask;
typedef struct pts__sctx sctx;

/* ---- scheduling states ---- */

/* spec: scheduling state. Immutable once made, so equal states are shared by
 * reference (the cached fixed ones, or the inherited one for yield). */
typedef struct pts__sstate {
  pts_sched_state hdr;
  pts_loop *loop;     /* for the pool */
  pts_signal *abort;  /* abort source: a reference, or NULL */
  pts_signal *prio;   /* priority source: a reference, never NULL */
  bool cached;
} sstate;

/* ---- the selection structure ---- */

/* A heap entry carries its queue's key (the first task's enqueue order) so
 * peek and sifting read no queue or task memory. */
typedef struct pts__heap_ent {
  uint64_t key;
  squeue *q;
} heap_ent;

typedef struct pts__level_heap {
  heap_ent *a;
  uint32_t n, cap;
} level_heap;

struct pts__sctx {
  pts_loop *loop;
  pts_signal *fixed[PTS_PRIORITY_COUNT];  /* cached unabortable signals */
  sstate *fixed_state[PTS_PRIORITY_COUNT]; /* {null, fixed[p]} */
  level_heap levels[LEVELS];
  uint32_t bitmap; /* bit l set iff levels[l].n > 0 */
  uint32_t heap_cap; /* every level's capacity (invariant 4) */
  bool dying;        /* the loop is being freed: no new schedulers */
  pts_scheduler *schedulers;
  pts__sched_stats stats;
  void *tfree[3]; /* free task blocks, one list per layout (enum task_ext) */
  /* Task handles alive: delayed, queued or running (stats.live_tasks is
   * filled from it). Written by the owner only, and read by its agent's
   * statistics from other threads (pts__sched_live_tasks): relaxed loads
   * and stores, a plain mov each on x86. */
  _Atomic uint64_t live_tasks;
  /* Most live_tasks a post or yield may bring about (agents.h
   * pts_agent_limits.tasks; UINT64_MAX: none): one more fails with
   * PTS_EQUOTA. */
  uint64_t task_limit;
};

static inline uint64_t pts__sched_live_of(const sctx *c) {
  return atomic_load_explicit(&c->live_tasks, memory_order_relaxed);
}

static inline void pts__sched_live_add(sctx *c, int d) {
  atomic_store_explicit(&c->live_tasks, pts__sched_live_of(c) + (uint64_t)(int64_t)d,
                        memory_order_relaxed);
}

/* spec: scheduler task queue */
struct pts__squeue {
  /* Not sync/list.h: on callgrind (bench/sched) it cost 2.6% on post+run (issue 34). */
  stask *head, *tail;         /* tasks, oldest first */
  pts_scheduler *sched;
  pts_signal *signal;         /* dynamic queue's key (a reference while mapped) */
  squeue *hnext;              /* dynamic map chain */
  pts__list link;             /* on the scheduler's list of mapped queues */
  pts__algo prio_algo;        /* dynamic: the priority change algorithm */
  uint32_t heap_index;        /* NOT_IN_HEAP or the index in levels[level] */
  uint32_t refs;              /* handles whose queue this is */
  uint8_t priority;           /* pts_priority */
  uint8_t is_cont;
  uint8_t level;              /* the heap it is in, when it is in one */
  uint8_t mapped;
  uint8_t dynamic;
};

struct pts_scheduler {
  sctx *ctx;
  pts_global *global;
  pts_scheduler *next;               /* the context's list */
  squeue *static_q[PTS_PRIORITY_COUNT][2]; /* static priority task queue map */
  squeue **dyn;                      /* dynamic priority task queue map */
  uint32_t dyn_count, dyn_cap;       /* cap: 0 or a power of two */
  pts__list queues;                  /* mapped queues (squeue.link), LIFO */
  pts__list delayed;                 /* tasks waiting for their delay, LIFO */
  bool active;
  bool detached;
};

/* ---- task handles ---- */

enum task_kind { K_POST_CB, K_POST_PROMISE, K_YIELD_CB, K_YIELD_PROMISE };
enum task_status { S_NEW, S_DELAYED, S_QUEUED, S_RUNNING, S_DONE };

/* spec: task handle and its scheduler task in one block. The base block is
 * 64 bytes: the fast path (direct callback, no signal) needs nothing more. */
struct pts__stask {
  stask *next, *prev; /* the queue's task list */
  uint64_t order;     /* spec: enqueue order */
  union {
    squeue *queue;          /* S_QUEUED, S_RUNNING */
    struct pts__delay_blk *delay; /* S_DELAYED */
  } u;
  sstate *state; /* a reference */
  union {
    pts_task_fn fn;
    pts_task_callback cb;
  } f;
  void *data;
  uint8_t kind, status, ext;
};

/* The block layouts, by `ext`. */
enum task_ext {
  EXT_NONE,    /* the 64-byte base block: a direct callback, no abort source */
  EXT_SIGNAL,  /* stask_ext: an abort source or a delay (the general path) */
  EXT_PROMISE, /* the base block, then its result promise in the same block
                * (the promise form with no signal and no delay) */
  EXT_CALLER,  /* the base layout in the caller's pts__sched_slot (a direct
                * callback, no abort source): not ours to free, and the
                * caller's again once its callback is called */
};

/* With an abort source (or on the general path): the abort steps and the
 * result. */
typedef struct pts__stask_ext {
  stask t;
  pts__algo abort_algo; /* spec: task handle's abort steps */
  pts_promise *promise; /* spec: result (the handle's reference) */
} stask_ext;

/* A postTask delay: "run steps after a timeout". */
typedef struct pts__delay_blk {
  pts__timer timer;
  stask *task;
  pts_scheduler *sched;
  pts__list link; /* on the scheduler's delayed list */
} delay_blk;

_Static_assert(sizeof(stask) <= 64, "fast-path task block must stay 64 bytes");
_Static_assert(sizeof(stask) <= sizeof(pts__sched_slot) &&
                   _Alignof(stask) <= _Alignof(pts__sched_slot),
               "a caller's slot holds a base block");
_Static_assert(sizeof(stask) <= PTS__PROMISE_OFFSET, "the embedded promise follows the task");
_Static_assert(sizeof(stask_ext) <= 128, "pool blocks are at most 128 bytes");
_Static_assert(sizeof(delay_blk) <= 128, "pool blocks are at most 128 bytes");
_Static_assert(sizeof(squeue) <= 128, "pool blocks are at most 128 bytes");

static inline bool pts__sched_valid_priority(int p) {
  return p >= 0 && p < PTS_PRIORITY_COUNT;
}

/* ---- shared functions, by file ---- */

/* state.c: scheduling states. */
sstate *pts__sched_state_new(pts_loop *loop, pts_signal *abort, pts_signal *prio, bool cached);
void pts__sched_state_destroy(pts_sched_state *h);
/* Option encodings for pts__sched_compute_state. */
#define OPT_NULL 0
#define OPT_GIVEN 1
#define OPT_INHERIT 2
int pts__sched_compute_state(sctx *c, int signal_mode, pts_signal *sig, int prio, sstate **out);
pts_sched_state *pts__sched_idle_state(pts_loop *loop);

/* queues.c: the heaps' room, the queues and the two maps. */
int pts__sched_heaps_reserve(sctx *c);
squeue *pts__sched_queue_new(pts_scheduler *s, int priority, unsigned cont,
                             pts_signal *dyn_signal);
void pts__sched_queue_free(squeue *q);
void pts__sched_queue_removal_steps(squeue *q);
void pts__sched_queue_discard_if_unused(squeue *q);

/* tasks.c: what becomes of a handle that does not run (abort, cancel) or
 * waits (a delay). */
void pts__sched_delay_drop(pts_scheduler *s, delay_blk *d, bool stop_timer);
void pts__sched_task_cancel(sctx *c, stask *t);
void pts__sched_on_abort(pts__algo *a);
void pts__sched_on_delay(void *data, int status);

/* run.c: the loop's task provider (peek, run_next, run_burst). */
extern const pts__provider_ops pts__sched_provider_ops;

/* scheduler.c: the provider's other entries (the context's side). */
void pts__sched_global_changed(void *vc, pts_global *g, int what);
void pts__sched_ctx_destroy(void *vc);

/* ---- helpers: the selection structure ---- */

/* The heap's insert and removal (and the dynamic map's lookup) are static
 * without the inline hint, so the compiler inlines them only where they are
 * cheap for the caller: declared inline, the removal of an emptied queue's
 * heap entry was pulled into run_burst's loop and cost an instruction per
 * task (callgrind, bench/sched). unused: not every file calls them. */
#define PTS__SCHED_UNUSED_OK __attribute__((unused))

/* spec: effective priority (the table of section 2). */
static inline unsigned pts__sched_eff_priority(const squeue *q) {
  return 2u * q->priority + q->is_cont;
}

static inline uint64_t pts__sched_qkey(const squeue *q) { return q->head->order; }

/* The selection heaps (sync/heap.h): by key, the first task's enqueue order
 * (keys are unique). */
static inline bool pts__sched_heap_before(const void *x, const void *y, const void *ctx) {
  (void)ctx;
  return ((const heap_ent *)x)->key < ((const heap_ent *)y)->key;
}

static inline void pts__sched_heap_placed(void *x, uint32_t i) {
  ((heap_ent *)x)->q->heap_index = i;
}

static PTS__SCHED_UNUSED_OK const pts__heap_kind pts__sched_heap_kind = {
    sizeof(heap_ent), pts__sched_heap_before, pts__sched_heap_placed};

/* Never fails: every heap has room for every live queue (invariant 4). */
static PTS__SCHED_UNUSED_OK void pts__sched_heap_insert(sctx *c, squeue *q) {
  unsigned l = pts__sched_eff_priority(q);
  level_heap *h = &c->levels[l];
  q->level = (uint8_t)l;
  heap_ent e = {pts__sched_qkey(q), q};
  pts__heap_push(h->a, &h->n, &e, pts__sched_heap_kind, NULL);
  c->bitmap |= 1u << l;
}

/* The sifts, out of line (queues.c): inlined into each caller, their
 * registers cost the callers' common paths pushes and pops (an abort of a
 * queued task: 162 instructions with the sift inlined, 158 out of line,
 * with tasks.c's abort_delayed; a chain of posts, each emptying its queue:
 * 329 with the removal's sifts inlined, 325 out of line). */
void pts__sched_heap_sift_down(level_heap *h, squeue *q);
void pts__sched_heap_remove_inner(level_heap *h, uint32_t i);

/* A queue whose entry is the last (the only one of its level, in the
 * common case) leaves no hole: only another entry's move needs a sift. */
static PTS__SCHED_UNUSED_OK void pts__sched_heap_remove(sctx *c, squeue *q) {
  level_heap *h = &c->levels[q->level];
  if (q->heap_index == h->n - 1)
    h->n--;
  else
    pts__sched_heap_remove_inner(h, q->heap_index);
  q->heap_index = NOT_IN_HEAP;
  if (h->n == 0) c->bitmap &= ~(1u << q->level);
}

/* The queue's first task changed to a younger one: its key grows. */
static inline void pts__sched_heap_key_increased(sctx *c, squeue *q) {
  level_heap *h = &c->levels[q->level];
  if (h->n == 1) {
    h->a[0].key = pts__sched_qkey(q);
    return;
  }
  pts__sched_heap_sift_down(h, q);
}

/* ---- helpers: queues ---- */

static inline bool pts__sched_queue_runnable_owner(const squeue *q) {
  return q->sched->active && !q->sched->detached;
}

/* spec: queue a scheduler task (append). */
static inline void pts__sched_queue_push(squeue *q, stask *t) {
  t->next = NULL;
  t->prev = q->tail;
  if (q->tail) {
    q->tail->next = t;
    q->tail = t;
    return;
  }
  q->head = q->tail = t;
  if (pts__sched_queue_runnable_owner(q)) pts__sched_heap_insert(q->sched->ctx, q);
}

/* spec: remove a scheduler task from a queue. A new head moves the queue in
 * its heap (the tasks keep their enqueue order). */
static inline void pts__sched_queue_unlink(squeue *q, stask *t) {
  bool was_head = t->prev == NULL;
  if (t->prev) t->prev->next = t->next; else q->head = t->next;
  if (t->next) t->next->prev = t->prev; else q->tail = t->prev;
  t->next = t->prev = NULL;
  if (was_head && q->heap_index != NOT_IN_HEAP) {
    sctx *c = q->sched->ctx;
    if (q->head)
      pts__sched_heap_key_increased(c, q);
    else
      pts__sched_heap_remove(c, q);
  }
}

/* pts__sched_queue_unlink of the head, which the run path always takes: its
 * queue is in a heap (it was just selected). */
static inline void pts__sched_queue_pop_head(sctx *c, squeue *q, stask *t) {
  stask *n = t->next;
  q->head = n;
  t->next = NULL;
  if (n) {
    n->prev = NULL;
    pts__sched_heap_key_increased(c, q);
  } else {
    q->tail = NULL;
    pts__sched_heap_remove(c, q);
  }
}

static inline size_t pts__sched_dyn_hash(const pts_signal *sig, unsigned cont) {
  uint64_t x = (uint64_t)(uintptr_t)sig;
  x ^= x >> 29;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 32) ^ cont;
}

static PTS__SCHED_UNUSED_OK squeue *pts__sched_dyn_lookup(pts_scheduler *s, pts_signal *sig,
                                            unsigned cont) {
  if (!s->dyn_cap) return NULL;
  for (squeue *q = s->dyn[pts__sched_dyn_hash(sig, cont) & (s->dyn_cap - 1)]; q; q = q->hnext)
    if (q->signal == sig && q->is_cont == cont) return q;
  return NULL;
}

/* A handle lets go of its queue. */
static inline void pts__sched_queue_unref(squeue *q) {
  if (--q->refs == 0 && !q->mapped) pts__sched_queue_free(q);
}

/* spec: select the scheduler task queue. NULL only when out of memory. */
static inline squeue *pts__sched_select_queue(pts_scheduler *s, pts_signal *signal,
                                              unsigned cont) {
  if (!pts_signal_has_fixed_priority(signal)) {
    squeue *q = pts__sched_dyn_lookup(s, signal, cont);
    if (q) return q;
    return pts__sched_queue_new(s, pts_signal_priority(signal), cont, signal);
  }
  int p = pts_signal_priority(signal);
  squeue *q = s->static_q[p][cont];
  return q ? q : pts__sched_queue_new(s, p, cont, NULL);
}

/* ---- helpers: task blocks and handles ---- */

static inline stask_ext *pts__sched_ext_of(stask *t) { return (stask_ext *)t; }

/* spec: the handle's result promise, or NULL (the direct forms). */
static inline pts_promise *pts__sched_task_promise(stask *t) {
  if (t->ext == EXT_PROMISE)
    return (pts_promise *)(void *)((char *)t + PTS__PROMISE_OFFSET);
  return t->ext == EXT_SIGNAL ? pts__sched_ext_of(t)->promise : NULL;
}

/* Task blocks come from the context's own free lists, one per block size,
 * so the post and run paths take and give back a block in a few inline
 * instructions; the loop's pool backs them (and gets them back when the
 * context goes). Bypassed under AddressSanitizer like the pool, so it sees
 * every block's lifetime. */
#if defined(__SANITIZE_ADDRESS__)
#define TBLOCK_BYPASS 1
#else
#define TBLOCK_BYPASS 0
#endif

static inline size_t pts__sched_tblock_size(int ext) {
  static const size_t size[] = {sizeof(stask), sizeof(stask_ext), PTS__PROMISE_BLOCK};
  return size[ext];
}

static inline __attribute__((always_inline)) stask *pts__sched_tblock_get(sctx *c, int ext) {
  void *b = c->tfree[ext];
  if (TBLOCK_BYPASS || b == NULL)
    return pts__loop_pool_alloc(c->loop, pts__sched_tblock_size(ext));
  /* A hit counts as an allocation too (sync/alloc.h). */
  if (pts__alloc_inject()) return NULL;
  c->tfree[ext] = *(void **)b;
  return b;
}

static inline __attribute__((always_inline)) void pts__sched_tblock_put(sctx *c, stask *t,
                                                                       int ext) {
  if (TBLOCK_BYPASS) {
    pts__loop_pool_free(c->loop, t, pts__sched_tblock_size(ext));
    return;
  }
  *(void **)t = c->tfree[ext];
  c->tfree[ext] = t;
}

/* Frees the handle: its queue reference, state, promise and block. Inline:
 * it is half of the run path's cost when called. */
static inline __attribute__((always_inline)) void pts__sched_task_free(sctx *c, stask *t) {
  /* S_QUEUED, S_RUNNING and S_DONE hold a queue reference when u.queue is
   * set (S_NEW and S_DELAYED never do). */
  if (t->status >= S_QUEUED && t->u.queue) pts__sched_queue_unref(t->u.queue);
  if (--t->state->hdr.refs == 0) pts__sched_state_destroy(&t->state->hdr);
  pts__sched_live_add(c, -1);
  switch (t->ext) {
    case EXT_PROMISE:
      /* The block is the promise's too: it goes when both parts have. */
      if (!pts__promise_drop_embedded(pts__sched_task_promise(t))) return;
      break;
    case EXT_SIGNAL:
      if (pts__sched_ext_of(t)->promise)
        pts_promise_unref(pts__sched_ext_of(t)->promise);
      break;
    case EXT_CALLER:
      return; /* the caller's slot */
    default:
      break;
  }
  pts__sched_tblock_put(c, t, t->ext);
}

/* spec: schedule a task to invoke an algorithm (the handle's queue is set). */
static inline void pts__sched_enqueue_task(sctx *c, squeue *q, stask *t) {
  t->u.queue = q;
  q->refs++;
  t->order = pts__loop_take_enqueue_order(c->loop);
  t->status = S_QUEUED;
  pts__sched_queue_push(q, t);
}

#endif /* PTSCHED_SCHED_IMPL_H */
