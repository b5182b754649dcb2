/* sched/scheduler.c: the Scheduler of spec section 2 (postTask, yield,
 * scheduler task queues, task handles, scheduling states) and the selection of
 * the next scheduler task queue across all schedulers of a loop.
 *
 * Ownership. Each loop has one context (struct pts__sctx), installed lazily as
 * the loop's task provider the first time a scheduler of the loop is used. It
 * holds the cached fixed-priority unabortable signals and states (one per
 * priority), the selection structure, and the list of the loop's schedulers
 * (one per global, kept in the global's slot). A scheduler holds its static
 * queue map (an array indexed by priority and continuation), its dynamic queue
 * map (a chained hash keyed by (TaskSignal, continuation)), the list of its
 * mapped queues and the list of its delayed tasks.
 *
 * Invariants.
 *  1. A queue is in the selection heap of level effective_priority(queue) iff
 *     it has a task and its scheduler's global is active (not detached).
 *     A heap's key is the enqueue order of the queue's first task, so the
 *     heap top of the highest non-empty level (bitmap) is the spec's choice.
 *  2. Every task handle is in exactly one of: a delay (timer pending), a
 *     queue's task list, running. Its callback is called exactly once.
 *  3. A queue lives while it is mapped or referenced by a handle (queue.refs);
 *     an unmapped queue is empty forever (nothing selects it again).
 *  4. Every heap has room for all live queues of the context, so moving a
 *     queue between levels (priority change, reactivation) never allocates.
 *
 * Protocol of a task (numbered as the spec's steps):
 *  1. post: compute the state, check aborted, allocate the handle (one pool
 *     block: 64 bytes for a direct callback with no signal; with the result
 *     promise in the same block for the promise form with no signal and no
 *     delay; otherwise with the abort algorithm and a separate promise), add
 *     the abort algorithm, then enqueue now or after the delay.
 *  2. enqueue: select the queue, take the loop's next enqueue order, append.
 *  3. run (provider run_next, or run_burst for tasks back to back): pop the
 *     head of the best queue, set the loop's current scheduling state, run,
 *     restore, then the task complete steps.
 *  4. abort: reject, then remove from the queue (or stop the delay timer);
 *     a running task is only marked (its promise is already rejected).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loop/loop_internal.h"
#include "sync/alloc.h"
#include "ptsched/scheduler.h"
#include "sched/sched_internal.h"
#include "sched/signal_internal.h"
#include "sync/intrusive.h"

#define LEVELS 6
#define NOT_IN_HEAP UINT32_MAX
/* WebIDL [EnforceRange] unsigned long long: at most 2^53 - 1. */
#define MAX_SAFE_INTEGER 9007199254740991LL

typedef struct pts__squeue squeue;
typedef struct pts__stask stask;
typedef struct pts__sctx sctx;

/* ---- scheduling states ---- */

/* spec: scheduling state. Immutable once made, so equal states are shared by
 * reference (the cached fixed ones, or the inherited one for yield). */
typedef struct sstate {
  pts_sched_state hdr;
  pts_loop *loop;     /* for the pool */
  pts_signal *abort;  /* abort source: a reference, or NULL */
  pts_signal *prio;   /* priority source: a reference, never NULL */
  bool cached;
} sstate;

static atomic_uint_fast64_t live_states;

/* ---- the selection structure ---- */

/* A heap entry carries its queue's key (the first task's enqueue order) so
 * peek and sifting read no queue or task memory. */
typedef struct heap_ent {
  uint64_t key;
  squeue *q;
} heap_ent;

typedef struct level_heap {
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

static inline uint64_t live_of(const sctx *c) {
  return atomic_load_explicit(&c->live_tasks, memory_order_relaxed);
}

static inline void live_add(sctx *c, int d) {
  atomic_store_explicit(&c->live_tasks, live_of(c) + (uint64_t)(int64_t)d, memory_order_relaxed);
}

/* spec: scheduler task queue */
struct pts__squeue {
  stask *head, *tail;         /* tasks, oldest first */
  pts_scheduler *sched;
  pts_signal *signal;         /* dynamic queue's key (a reference while mapped) */
  squeue *hnext;              /* dynamic map chain */
  squeue *lnext, *lprev;      /* the scheduler's list of mapped queues */
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
  squeue *queues;                    /* mapped queues */
  struct delay_blk *delayed;         /* tasks waiting for their delay */
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
    struct delay_blk *delay; /* S_DELAYED */
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
typedef struct stask_ext {
  stask t;
  pts__algo abort_algo; /* spec: task handle's abort steps */
  pts_promise *promise; /* spec: result (the handle's reference) */
} stask_ext;

/* A postTask delay: "run steps after a timeout". */
typedef struct delay_blk {
  pts__timer timer;
  stask *task;
  pts_scheduler *sched;
  struct delay_blk *next, *prev; /* the scheduler's delayed list */
} delay_blk;

_Static_assert(sizeof(stask) <= 64, "fast-path task block must stay 64 bytes");
_Static_assert(sizeof(stask) <= sizeof(pts__sched_slot) &&
                   _Alignof(stask) <= _Alignof(pts__sched_slot),
               "a caller's slot holds a base block");
_Static_assert(sizeof(stask) <= PTS__PROMISE_OFFSET, "the embedded promise follows the task");
_Static_assert(sizeof(stask_ext) <= 128, "pool blocks are at most 128 bytes");
_Static_assert(sizeof(delay_blk) <= 128, "pool blocks are at most 128 bytes");
_Static_assert(sizeof(squeue) <= 128, "pool blocks are at most 128 bytes");

static int run_next(void *vc);
static int run_burst(void *vc);
static int peek(void *vc, uint64_t *order);
static void global_changed(void *vc, pts_global *g, int what);
static void ctx_destroy(void *vc);

static const pts__provider_ops provider_ops = {
    .peek = peek,
    .run_next = run_next,
    .run_burst = run_burst,
    .global_changed = global_changed,
    .destroy = ctx_destroy,
};

static inline bool valid_priority(int p) {
  return p >= 0 && p < PTS_PRIORITY_COUNT;
}

/* ==== scheduling states ==== */

static void state_destroy(pts_sched_state *h) {
  sstate *st = (sstate *)h;
  if (st->abort) pts_signal_unref(st->abort);
  pts_signal_unref(st->prio);
  if (!st->cached) atomic_fetch_sub_explicit(&live_states, 1, memory_order_relaxed);
  pts__loop_pool_free(st->loop, st, sizeof *st);
}

static sstate *state_new(pts_loop *loop, pts_signal *abort, pts_signal *prio,
                         bool cached) {
  sstate *st = pts__loop_pool_alloc(loop, sizeof *st);
  if (!st) return NULL;
  st->hdr.refs = 1;
  st->hdr.destroy = state_destroy;
  st->loop = loop;
  st->abort = abort;
  st->prio = prio;
  st->cached = cached;
  if (abort) pts_signal_ref(abort);
  pts_signal_ref(prio);
  if (!cached) atomic_fetch_add_explicit(&live_states, 1, memory_order_relaxed);
  return st;
}

uint64_t pts__sched_live_states(void) {
  return atomic_load_explicit(&live_states, memory_order_relaxed);
}

/* The loop's current scheduling state if it is one of ours. */
static sstate *current_state(pts_loop *loop) {
  pts_sched_state *h = pts__loop_current_state(loop);
  return (h && h->destroy == state_destroy) ? (sstate *)h : NULL;
}

/* A reference to the state {abort, prio}: a cached or the inherited one when
 * equal, else a new one. */
static int state_get(sctx *c, sstate *inh, pts_signal *abort, pts_signal *prio,
                     sstate **out) {
  if (!abort) {
    for (int p = 0; p < PTS_PRIORITY_COUNT; p++) {
      if (prio == c->fixed[p]) {
        *out = c->fixed_state[p];
        pts__state_ref(&c->fixed_state[p]->hdr);
        return 0;
      }
    }
  }
  if (inh && inh->abort == abort && inh->prio == prio) {
    pts__state_ref(&inh->hdr);
    *out = inh;
    return 0;
  }
  *out = state_new(c->loop, abort, prio, false);
  return *out ? 0 : pts__enomem();
}

/* Option encodings for compute_state. */
#define OPT_NULL 0
#define OPT_GIVEN 1
#define OPT_INHERIT 2

/* spec: compute the scheduling state from options. signal_mode is OPT_NULL,
 * OPT_GIVEN (sig) or OPT_INHERIT; prio is a pts_priority,
 * PTS_PRIORITY_UNSET (null) or PTS_PRIORITY_INHERIT. */
static int compute_state(sctx *c, int signal_mode, pts_signal *sig, int prio,
                         sstate **out) {
  sstate *inh = current_state(c->loop);
  pts_signal *abort = NULL, *ps = NULL;
  if (signal_mode == OPT_INHERIT) {
    if (inh) abort = inh->abort;
  } else if (signal_mode == OPT_GIVEN) {
    abort = sig;
  }
  if (prio == PTS_PRIORITY_INHERIT) {
    if (inh) ps = inh->prio;
  } else if (prio >= 0) {
    ps = c->fixed[prio];
  } else if (signal_mode == OPT_GIVEN && pts_signal_is_task_signal(sig)) {
    ps = sig;
  }
  if (!ps) ps = c->fixed[PTS_PRIORITY_USER_VISIBLE];
  return state_get(c, inh, abort, ps, out);
}

/* The idle callbacks' state (spec section 4, requestIdleCallback). */
static pts_sched_state *idle_state(pts_loop *loop) {
  sctx *c = pts__loop_provider_ctx(loop);
  if (!c) return NULL;
  return pts__state_ref(&c->fixed_state[PTS_PRIORITY_BACKGROUND]->hdr);
}

/* ==== the selection structure ==== */

/* spec: effective priority (the table of section 2). */
static inline unsigned eff_priority(const squeue *q) {
  return 2u * q->priority + q->is_cont;
}

static inline uint64_t qkey(const squeue *q) { return q->head->order; }

static inline void heap_set(level_heap *h, uint32_t i, heap_ent e) {
  h->a[i] = e;
  e.q->heap_index = i;
}

static void sift_up(level_heap *h, uint32_t i, heap_ent e) {
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (h->a[p].key <= e.key) break;
    heap_set(h, i, h->a[p]);
    i = p;
  }
  heap_set(h, i, e);
}

static void sift_down(level_heap *h, uint32_t i, heap_ent e) {
  for (;;) {
    uint32_t l = 2 * i + 1;
    if (l >= h->n) break;
    uint32_t m = l;
    if (l + 1 < h->n && h->a[l + 1].key < h->a[l].key) m = l + 1;
    if (h->a[m].key >= e.key) break;
    heap_set(h, i, h->a[m]);
    i = m;
  }
  heap_set(h, i, e);
}

/* Never fails: every heap has room for every live queue (invariant 4). */
static void heap_insert(sctx *c, squeue *q) {
  unsigned l = eff_priority(q);
  level_heap *h = &c->levels[l];
  q->level = (uint8_t)l;
  heap_ent e = {qkey(q), q};
  sift_up(h, h->n++, e);
  c->bitmap |= 1u << l;
}

static void heap_remove(sctx *c, squeue *q) {
  level_heap *h = &c->levels[q->level];
  uint32_t i = q->heap_index;
  heap_ent last = h->a[--h->n];
  q->heap_index = NOT_IN_HEAP;
  if (last.q != q) {
    if (i > 0 && h->a[(i - 1) / 2].key > last.key)
      sift_up(h, i, last);
    else
      sift_down(h, i, last);
  }
  if (h->n == 0) c->bitmap &= ~(1u << q->level);
}

/* The queue's first task changed to a younger one: its key grows. */
static inline void heap_key_increased(sctx *c, squeue *q) {
  level_heap *h = &c->levels[q->level];
  heap_ent e = {qkey(q), q};
  if (h->n == 1) {
    h->a[0].key = e.key;
    return;
  }
  sift_down(h, q->heap_index, e);
}

/* Room for one more live queue in every level. */
static int heaps_reserve(sctx *c) {
  uint64_t need = c->stats.live_queues + 1;
  if (need <= c->heap_cap) return 0;
  uint32_t cap = c->heap_cap ? c->heap_cap * 2 : 16;
  for (int l = 0; l < LEVELS; l++) {
    heap_ent *a = pts__realloc(c->levels[l].a, cap * sizeof *a);
    if (!a) return PTS_ENOMEM; /* the levels already grown keep their room */
    c->levels[l].a = a;
    c->levels[l].cap = cap;
  }
  c->heap_cap = cap;
  return 0;
}

static inline bool queue_runnable_owner(const squeue *q) {
  return q->sched->active && !q->sched->detached;
}

/* spec: queue a scheduler task (append). */
static inline void queue_push(squeue *q, stask *t) {
  t->next = NULL;
  t->prev = q->tail;
  if (q->tail) {
    q->tail->next = t;
    q->tail = t;
    return;
  }
  q->head = q->tail = t;
  if (queue_runnable_owner(q)) heap_insert(q->sched->ctx, q);
}

/* spec: remove a scheduler task from a queue. A new head moves the queue in
 * its heap (the tasks keep their enqueue order). */
static inline void queue_unlink(squeue *q, stask *t) {
  bool was_head = t->prev == NULL;
  if (t->prev) t->prev->next = t->next; else q->head = t->next;
  if (t->next) t->next->prev = t->prev; else q->tail = t->prev;
  t->next = t->prev = NULL;
  if (was_head && q->heap_index != NOT_IN_HEAP) {
    sctx *c = q->sched->ctx;
    if (q->head)
      heap_key_increased(c, q);
    else
      heap_remove(c, q);
  }
}

/* queue_unlink of the head, which the run path always takes: its queue is
 * in a heap (it was just selected). */
static inline void queue_pop_head(sctx *c, squeue *q, stask *t) {
  stask *n = t->next;
  q->head = n;
  t->next = NULL;
  if (n) {
    n->prev = NULL;
    heap_key_increased(c, q);
  } else {
    q->tail = NULL;
    heap_remove(c, q);
  }
}

/* ==== queues and the two maps ==== */

static inline size_t dyn_hash(const pts_signal *sig, unsigned cont) {
  uint64_t x = (uint64_t)(uintptr_t)sig;
  x ^= x >> 29;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 32) ^ cont;
}

static squeue *dyn_lookup(pts_scheduler *s, pts_signal *sig, unsigned cont) {
  if (!s->dyn_cap) return NULL;
  for (squeue *q = s->dyn[dyn_hash(sig, cont) & (s->dyn_cap - 1)]; q;
       q = q->hnext)
    if (q->signal == sig && q->is_cont == cont) return q;
  return NULL;
}

/* Room for one more entry (load factor <= 1). */
static int dyn_reserve(pts_scheduler *s) {
  if (s->dyn_count < s->dyn_cap) return 0;
  uint32_t cap = s->dyn_cap ? s->dyn_cap * 2 : 16;
  squeue **b = pts__calloc(cap, sizeof *b);
  if (!b) return PTS_ENOMEM;
  for (uint32_t i = 0; i < s->dyn_cap; i++) {
    squeue *q = s->dyn[i];
    while (q) {
      squeue *n = q->hnext;
      size_t h = dyn_hash(q->signal, q->is_cont) & (cap - 1);
      q->hnext = b[h];
      b[h] = q;
      q = n;
    }
  }
  pts__free(s->dyn);
  s->dyn = b;
  s->dyn_cap = cap;
  return 0;
}

/* Removes q's entry if the map still maps its key to q. */
static void dyn_remove(pts_scheduler *s, squeue *q) {
  if (!s->dyn_cap) return;
  squeue **pp = &s->dyn[dyn_hash(q->signal, q->is_cont) & (s->dyn_cap - 1)];
  for (; *pp; pp = &(*pp)->hnext) {
    if (*pp == q) {
      *pp = q->hnext;
      q->hnext = NULL;
      s->dyn_count--;
      return;
    }
  }
}

/* spec: the priority change algorithm a dynamic queue adds to its signal:
 * set the queue's priority; move it between levels (its tasks stay). */
static void on_priority_change(pts__algo *a) {
  squeue *q = container_of(a, squeue, prio_algo);
  int p = pts_signal_priority(q->signal);
  if (p < 0 || p == q->priority) return;
  bool in_heap = q->heap_index != NOT_IN_HEAP;
  sctx *c = q->sched->ctx;
  if (in_heap) heap_remove(c, q);
  q->priority = (uint8_t)p;
  if (in_heap) heap_insert(c, q);
}

static void queue_free(squeue *q) {
  sctx *c = q->sched->ctx;
  c->stats.live_queues--;
  pts__loop_pool_free(c->loop, q, sizeof *q);
}

/* spec: a queue's removal steps, with the decided fix (docs/decisions.md,
 * "queue removal steps"): the map entry is removed only if it still maps to this
 * queue, so a newer queue made under the same key keeps its entry. */
static void queue_removal_steps(squeue *q) {
  if (!q->mapped) return; /* no map entry maps to it any more */
  pts_scheduler *s = q->sched;
  if (q->dynamic) {
    dyn_remove(s, q);
    pts__signal_remove_priority_algo(q->signal, &q->prio_algo);
    pts_signal_unref(q->signal);
    q->signal = NULL;
  } else if (s->static_q[q->priority][q->is_cont] == q) {
    s->static_q[q->priority][q->is_cont] = NULL;
  }
  q->mapped = 0;
  if (q->lprev) q->lprev->lnext = q->lnext; else s->queues = q->lnext;
  if (q->lnext) q->lnext->lprev = q->lprev;
  q->lnext = q->lprev = NULL;
}

/* A handle lets go of its queue. */
static inline void queue_unref(squeue *q) {
  if (--q->refs == 0 && !q->mapped) queue_free(q);
}

/* A queue made for a task that then failed to be posted. */
static void queue_discard_if_unused(squeue *q) {
  if (q->head || q->refs) return;
  queue_removal_steps(q);
  queue_free(q);
}

/* spec: create a scheduler task queue (and put it in its map). */
static squeue *queue_new(pts_scheduler *s, int priority, unsigned cont,
                         pts_signal *dyn_signal) {
  sctx *c = s->ctx;
  if (heaps_reserve(c) != 0) return NULL;
  if (dyn_signal && dyn_reserve(s) != 0) return NULL;
  squeue *q = pts__loop_pool_alloc(c->loop, sizeof *q);
  if (!q) return NULL;
  memset(q, 0, sizeof *q);
  q->sched = s;
  q->heap_index = NOT_IN_HEAP;
  q->priority = (uint8_t)priority;
  q->is_cont = (uint8_t)cont;
  q->mapped = 1;
  c->stats.live_queues++;
  if (dyn_signal) {
    q->dynamic = 1;
    q->signal = dyn_signal;
    pts_signal_ref(dyn_signal);
    size_t h = dyn_hash(dyn_signal, cont) & (s->dyn_cap - 1);
    q->hnext = s->dyn[h];
    s->dyn[h] = q;
    s->dyn_count++;
    pts__algo_init(&q->prio_algo, on_priority_change);
    /* spec: add a priority change algorithm */
    pts__signal_add_priority_algo(dyn_signal, &q->prio_algo);
  } else {
    s->static_q[priority][cont] = q;
  }
  q->lnext = s->queues;
  if (s->queues) s->queues->lprev = q;
  s->queues = q;
  return q;
}

/* spec: select the scheduler task queue. NULL only when out of memory. */
static inline squeue *select_queue(pts_scheduler *s, pts_signal *signal,
                                   unsigned cont) {
  if (!pts_signal_has_fixed_priority(signal)) {
    squeue *q = dyn_lookup(s, signal, cont);
    if (q) return q;
    return queue_new(s, pts_signal_priority(signal), cont, signal);
  }
  int p = pts_signal_priority(signal);
  squeue *q = s->static_q[p][cont];
  return q ? q : queue_new(s, p, cont, NULL);
}

/* ==== task handles ==== */

static inline stask_ext *ext_of(stask *t) { return (stask_ext *)t; }

/* spec: the handle's result promise, or NULL (the direct forms). */
static inline pts_promise *task_promise(stask *t) {
  if (t->ext == EXT_PROMISE)
    return (pts_promise *)(void *)((char *)t + PTS__PROMISE_OFFSET);
  return t->ext == EXT_SIGNAL ? ext_of(t)->promise : NULL;
}

/* The callback learns that it will never run (status != 0). For the direct
 * forms this call is the spec's rejection of the result, so it is script
 * (loop_internal.h), as the model has it (docs/decisions.md). */
static void notify_not_run(sctx *c, stask *t, int status) {
  pts_loop *loop = c->loop;
  switch (t->kind) {
    case K_POST_CB:
    case K_YIELD_CB:
      pts__script_enter(loop);
      t->f.fn(t->data, status);
      pts__script_leave(loop);
      break;
    case K_POST_PROMISE:
      /* Not script: the spec rejects the result and calls nothing; this
       * only lets the caller release data (no checkpoint follows). */
      pts_value_release(t->f.cb(t->data, status));
      break;
    default:
      break;
  }
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

static inline size_t tblock_size(int ext) {
  static const size_t size[] = {sizeof(stask), sizeof(stask_ext), PTS__PROMISE_BLOCK};
  return size[ext];
}

static inline __attribute__((always_inline)) stask *tblock_get(sctx *c, int ext) {
  void *b = c->tfree[ext];
  if (TBLOCK_BYPASS || b == NULL) return pts__loop_pool_alloc(c->loop, tblock_size(ext));
  /* A hit counts as an allocation too (sync/alloc.h). */
  if (pts__alloc_inject()) return NULL;
  c->tfree[ext] = *(void **)b;
  return b;
}

static inline __attribute__((always_inline)) void tblock_put(sctx *c, stask *t, int ext) {
  if (TBLOCK_BYPASS) {
    pts__loop_pool_free(c->loop, t, tblock_size(ext));
    return;
  }
  *(void **)t = c->tfree[ext];
  c->tfree[ext] = t;
}

/* Frees the handle: its queue reference, state, promise and block. Inline:
 * it is half of the run path's cost when called. */
static inline __attribute__((always_inline)) void task_free(sctx *c, stask *t) {
  /* S_QUEUED, S_RUNNING and S_DONE hold a queue reference when u.queue is
   * set (S_NEW and S_DELAYED never do). */
  if (t->status >= S_QUEUED && t->u.queue) queue_unref(t->u.queue);
  if (--t->state->hdr.refs == 0) state_destroy(&t->state->hdr);
  live_add(c, -1);
  switch (t->ext) {
    case EXT_PROMISE:
      /* The block is the promise's too: it goes when both parts have. */
      if (!pts__promise_drop_embedded(task_promise(t))) return;
      break;
    case EXT_SIGNAL:
      if (ext_of(t)->promise) pts_promise_unref(ext_of(t)->promise);
      break;
    case EXT_CALLER:
      return; /* the caller's slot */
    default:
      break;
  }
  tblock_put(c, t, t->ext);
}

/* Stops and frees a pending delay. */
static void delay_drop(pts_scheduler *s, delay_blk *d, bool stop_timer) {
  if (stop_timer) pts__timer_stop(&d->timer);
  if (d->prev) d->prev->next = d->next; else s->delayed = d->next;
  if (d->next) d->next->prev = d->prev;
  s->ctx->stats.delayed_tasks--;
  pts__loop_pool_free(s->ctx->loop, d, sizeof *d);
}

/* A task that will never run because its global went away (or the loop is
 * being freed): not in any queue or delay any more. */
static void task_cancel(sctx *c, stask *t) {
  if (t->state->abort)
    pts__signal_remove_abort_algo(t->state->abort, &ext_of(t)->abort_algo);
  pts_promise *p = task_promise(t);
  if (p) pts_promise_reject(p, pts_error_value(PTS_ECANCELED, "global detached"));
  t->status = S_DONE;
  if (t->ext == EXT_CALLER) {
    /* The callback may free the slot: the handle goes first, and the
     * callback is told from a copy. */
    stask copy = *t;
    task_free(c, t);
    notify_not_run(c, &copy, PTS_ECANCELED);
    return;
  }
  notify_not_run(c, t, PTS_ECANCELED);
  task_free(c, t);
}

/* spec: the task handle's abort steps. */
static void on_abort(pts__algo *a) {
  stask_ext *e = container_of(a, stask_ext, abort_algo);
  stask *t = &e->t;
  pts_signal *signal = t->state->abort;
  pts_scheduler *s;
  sctx *c;
  pts__signal_remove_abort_algo(signal, a);
  /* 1. Reject result with signal's abort reason. */
  if (e->promise)
    pts_promise_reject(e->promise, pts_value_copy(pts_signal_reason(signal)));
  switch (t->status) {
    case S_DELAYED: {
      /* Task is null: no queue yet. The timer goes now (no memory is held
       * for aborted work). */
      delay_blk *d = t->u.delay;
      s = d->sched;
      c = s->ctx;
      delay_drop(s, d, true);
      t->status = S_DONE;
      t->u.queue = NULL;
      notify_not_run(c, t, PTS_EABORT);
      task_free(c, t);
      return;
    }
    case S_QUEUED: {
      /* 2. Remove task from queue; if empty, the queue's removal steps. */
      squeue *q = t->u.queue;
      c = q->sched->ctx;
      queue_unlink(q, t);
      if (!q->head) queue_removal_steps(q);
      t->status = S_DONE;
      notify_not_run(c, t, PTS_EABORT);
      task_free(c, t);
      return;
    }
    case S_RUNNING: {
      /* The task was already removed when it started; the queue may be empty
       * now. The callback is running: it is not called again. */
      squeue *q = t->u.queue;
      if (!q->head) queue_removal_steps(q);
      return;
    }
    default:
      return;
  }
}

static inline __attribute__((always_inline)) stask *task_alloc(
    sctx *c, int kind, bool ext, void *fn, void *data, sstate *st) {
  stask *t = tblock_get(c, ext);
  if (!t) return NULL;
  t->next = t->prev = NULL;
  t->order = 0;
  t->u.queue = NULL;
  t->state = st;
  if (kind == K_POST_PROMISE)
    t->f.cb = (pts_task_callback)fn;
  else
    t->f.fn = (pts_task_fn)fn;
  t->data = data;
  t->kind = (uint8_t)kind;
  t->status = S_NEW;
  t->ext = ext;
  if (ext) {
    stask_ext *e = ext_of(t);
    pts__algo_init(&e->abort_algo, on_abort);
    e->promise = NULL;
  }
  live_add(c, 1);
  return t;
}

/* spec: schedule a task to invoke an algorithm (the handle's queue is set). */
static inline void enqueue_task(sctx *c, squeue *q, stask *t) {
  t->u.queue = q;
  q->refs++;
  t->order = pts__loop_take_enqueue_order(c->loop);
  t->status = S_QUEUED;
  queue_push(q, t);
}

/* The delay's completion steps (spec: schedule a postTask task, step 9). */
static void on_delay(void *data, int status) {
  delay_blk *d = data;
  stask *t = d->task;
  pts_scheduler *s = d->sched;
  sctx *c = s->ctx;
  delay_drop(s, d, false);
  t->u.queue = NULL;
  if (status != 0 || s->detached) {
    task_cancel(c, t);
    return;
  }
  /* An abort would have stopped this timer: the signal is not aborted. */
  squeue *q = select_queue(s, t->state->prio, 0);
  if (!q) {
    task_cancel(c, t);
    return;
  }
  enqueue_task(c, q, t);
}

/* ==== the context, schedulers and globals ==== */

static void ctx_free_parts(sctx *c) {
  for (int ext = EXT_NONE; ext <= EXT_PROMISE; ext++) {
    while (c->tfree[ext] != NULL) {
      void *b = c->tfree[ext];
      c->tfree[ext] = *(void **)b;
      pts__loop_pool_free(c->loop, b, tblock_size(ext));
    }
  }
  for (int p = 0; p < PTS_PRIORITY_COUNT; p++) {
    if (c->fixed_state[p]) pts__state_unref(&c->fixed_state[p]->hdr);
    if (c->fixed[p]) pts_signal_unref(c->fixed[p]);
  }
  for (int l = 0; l < LEVELS; l++) pts__free(c->levels[l].a);
  pts__free(c);
}

static int ctx_get(pts_loop *loop, sctx **out) {
  sctx *c = pts__loop_provider_ctx(loop);
  if (c) {
    *out = c;
    return 0;
  }
  c = pts__calloc(1, sizeof *c);
  if (!c) return PTS_ENOMEM;
  c->loop = loop;
  c->task_limit = UINT64_MAX;
  for (int p = 0; p < PTS_PRIORITY_COUNT; p++) {
    /* spec: create a fixed priority unabortable task signal (cached) */
    int rc = pts__signal_new_fixed(loop, (pts_priority)p, &c->fixed[p]);
    if (rc != 0) {
      ctx_free_parts(c);
      return rc;
    }
    c->fixed_state[p] = state_new(loop, NULL, c->fixed[p], true);
    if (!c->fixed_state[p]) {
      ctx_free_parts(c);
      return PTS_ENOMEM;
    }
  }
  int rc = heaps_reserve(c);
  if (rc == 0) rc = pts__loop_set_provider(loop, &provider_ops, c);
  if (rc != 0) {
    ctx_free_parts(c);
    return rc;
  }
  pts__loop_set_idle_state_factory(loop, idle_state);
  *out = c;
  return 0;
}

pts_scheduler *pts_global_scheduler(pts_global *global) {
  if (!global) return NULL;
  pts_loop *loop = pts_global_loop(global);
  if (pts__loop_foreign(loop, __func__)) return NULL;
  void **slot = pts__global_sched_slot(global);
  if (*slot) return *slot;
  sctx *c;
  if (ctx_get(loop, &c) != 0 || c->dying) return NULL;
  pts_scheduler *s = pts__calloc(1, sizeof *s);
  if (!s) return NULL;
  s->ctx = c;
  s->global = global;
  s->detached = pts_global_is_detached(global);
  s->active = pts_global_is_active(global);
  s->next = c->schedulers;
  c->schedulers = s;
  c->stats.schedulers++;
  *slot = s;
  return s;
}

/* Detach: every pending task is released (promises rejected, callbacks told
 * PTS_ECANCELED) and every queue freed. User callbacks run in the middle, so
 * each step starts again from the scheduler's lists. */
static void sched_release_all(pts_scheduler *s) {
  sctx *c = s->ctx;
  s->detached = true;
  delay_blk *d;
  while ((d = s->delayed) != NULL) {
    stask *t = d->task;
    delay_drop(s, d, true);
    t->u.queue = NULL;
    task_cancel(c, t);
  }
  squeue *q;
  while ((q = s->queues) != NULL) {
    q->refs++; /* pinned while its tasks are released */
    queue_removal_steps(q);
    while (q->head) {
      stask *t = q->head;
      queue_unlink(q, t);
      task_cancel(c, t);
    }
    queue_unref(q);
  }
  pts__free(s->dyn);
  s->dyn = NULL;
  s->dyn_cap = s->dyn_count = 0;
}

static void set_active(pts_scheduler *s, bool active) {
  if (s->active == active) return;
  s->active = active;
  if (s->detached) return;
  for (squeue *q = s->queues; q; q = q->lnext) {
    if (!q->head) continue;
    if (active)
      heap_insert(s->ctx, q);
    else
      heap_remove(s->ctx, q);
  }
}

static void global_changed(void *vc, pts_global *g, int what) {
  (void)vc;
  pts_scheduler *s = *pts__global_sched_slot(g);
  if (!s) return;
  if (what < 0)
    sched_release_all(s);
  else
    set_active(s, what != 0);
}

static void ctx_destroy(void *vc) {
  sctx *c = vc;
  c->dying = true;
  for (pts_scheduler *s = c->schedulers; s; s = s->next) sched_release_all(s);
  pts_scheduler *s = c->schedulers;
  while (s) {
    pts_scheduler *n = s->next;
    pts__free(s);
    s = n;
  }
  c->schedulers = NULL;
  ctx_free_parts(c);
}

int pts__sched_get_stats(pts_loop *loop, pts__sched_stats *out) {
  if (!loop || !out) return PTS_EINVAL;
  sctx *c = pts__loop_provider_ctx(loop);
  if (!c) {
    memset(out, 0, sizeof *out);
    return PTS_ENOTFOUND;
  }
  *out = c->stats;
  out->live_tasks = live_of(c);
  return 0;
}

bool pts__sched_has_static_queue(pts_scheduler *s, int priority, bool cont) {
  return valid_priority(priority) && s->static_q[priority][cont ? 1 : 0] != NULL;
}

uint32_t pts__sched_mapped_queues(pts_scheduler *s) {
  uint32_t n = 0;
  for (squeue *q = s->queues; q; q = q->lnext) n++;
  return n;
}

size_t pts__sched_task_size(int with_signal_or_promise) {
  return with_signal_or_promise ? sizeof(stask_ext) : sizeof(stask);
}

size_t pts__sched_state_size(void) { return sizeof(sstate); }

/* ==== the provider: selection and running ==== */

/* spec: select the next scheduler task queue from all schedulers: the
 * highest non-empty level, then its heap top (oldest first task). O(1). */
static int peek(void *vc, uint64_t *order) {
  sctx *c = vc;
  if (!c->bitmap) return -1;
  int l = 31 - __builtin_clz(c->bitmap);
  *order = c->levels[l].a[0].key;
  return l;
}

/* The task complete steps of a task with no abort source, but its block:
 * the queue's removal when it is empty, the references of the handle. */
static inline __attribute__((always_inline)) void fast_task_done(sctx *c, squeue *q,
                                                                 sstate *st) {
  if (!q->head) queue_removal_steps(q);
  queue_unref(q);
  if (--st->hdr.refs == 0) state_destroy(&st->hdr);
  live_add(c, -1);
}

/* run_one for a handle in the caller's slot (EXT_CALLER): as for EXT_NONE,
 * but nothing reads the slot once the callback is called (it may free it). */
static __attribute__((noinline)) void run_caller(sctx *c, squeue *q, stask *t) {
  pts_loop *loop = c->loop;
  sstate *st = t->state;
  pts_task_fn fn = t->f.fn;
  void *data = t->data;
  pts_sched_state *prev = pts__loop_swap_state(loop, &st->hdr);
  pts__script_enter(loop);
  fn(data, 0);
  pts__script_leave(loop);
  pts__loop_swap_state(loop, prev);
  fast_task_done(c, q, st);
}

/* spec: the task's steps for a task with an abort source or a kind other
 * than postTask's fast forms (set the state, invoke, settle, clear), then
 * the handle's task complete steps. Out of line: the hot paths stay small. */
static __attribute__((noinline)) void run_general(sctx *c, squeue *q, stask *t) {
  pts_loop *loop = c->loop;
  pts_sched_state *prev;
  t->status = S_RUNNING;
  switch (t->kind) {
    case K_POST_CB:
    case K_YIELD_CB:
      prev = pts__loop_swap_state(loop, &t->state->hdr);
      pts__script_enter(loop);
      t->f.fn(t->data, 0);
      pts__script_leave(loop);
      pts__loop_swap_state(loop, prev);
      break;
    case K_POST_PROMISE: {
      prev = pts__loop_swap_state(loop, &t->state->hdr);
      pts__script_enter(loop);
      pts_value v = t->f.cb(t->data, 0);
      /* spec: "invoke" ends with "clean up after running script": the
       * callback's microtasks run before result is resolved. */
      pts__script_leave(loop);
      /* A rejection by an abort during the callback or its microtasks wins:
       * this is then ignored (the promise is settled). An error value
       * rejects. */
      pts__promise_settle_result(task_promise(t), v);
      pts__loop_swap_state(loop, prev);
      break;
    }
    default: /* K_YIELD_PROMISE: spec: resolve result. */
      pts__promise_settle_result(task_promise(t), pts_undefined());
      break;
  }
  /* spec: task complete steps */
  if (t->state->abort)
    pts__signal_remove_abort_algo(t->state->abort, &ext_of(t)->abort_algo);
  if (!q->head) queue_removal_steps(q);
  t->status = S_DONE;
  task_free(c, t);
}

/* Selects and runs the most urgent task. Returns 1 + its effective
 * priority, or 0 when no queue has a task. */
static inline __attribute__((always_inline)) int run_one(sctx *c) {
  if (!c->bitmap) return 0;
  int l = 31 - __builtin_clz(c->bitmap);
  squeue *q = c->levels[l].a[0].q;
  stask *t = q->head;
  pts_loop *loop = c->loop;
  queue_pop_head(c, q, t);
  pts_sched_state *prev;
  /* The hot paths: a postTask with no abort source, direct or with its
   * promise in the block (nothing can observe its status while it runs). */
  if (t->ext == EXT_NONE) {
    prev = pts__loop_swap_state(loop, &t->state->hdr);
    pts__script_enter(loop);
    t->f.fn(t->data, 0);
    pts__script_leave(loop); /* the checkpoint, if a microtask is queued */
    pts__loop_swap_state(loop, prev);
    fast_task_done(c, q, t->state);
    tblock_put(c, t, EXT_NONE);
  } else if (t->ext == EXT_PROMISE) {
    prev = pts__loop_swap_state(loop, &t->state->hdr);
    pts__script_enter(loop);
    pts_value v = t->f.cb(t->data, 0);
    pts__script_leave(loop); /* spec: before result is resolved */
    pts__promise_settle_result(task_promise(t), v);
    pts__loop_swap_state(loop, prev);
    fast_task_done(c, q, t->state);
    if (pts__promise_drop_embedded(task_promise(t))) tblock_put(c, t, EXT_PROMISE);
  } else if (t->ext == EXT_CALLER) {
    run_caller(c, q, t);
  } else {
    run_general(c, q, t);
  }
  return l + 1;
}

static int run_next(void *vc) { return run_one(vc); }

/* Tasks one after another in one call while the loop has no other work
 * (pts__provider_ops.run_burst): the loop's per-task checks without a call
 * per task. */
static int run_burst(void *vc) {
  sctx *c = vc;
  pts_loop *loop = c->loop;
  int last = 0;
  while (pts__loop_burst_may_continue(loop)) {
    int ran = run_one(c);
    if (!ran) break;
    last = ran;
    pts__loop_after_task(loop);
  }
  return last;
}

/* ==== postTask and yield ==== */

/* Attaches the promise (kind *_PROMISE), registers the abort steps, and
 * either starts the delay or enqueues. On failure the task is freed and the
 * callback not called. */
static int start_task(pts_scheduler *s, stask *t, unsigned cont,
                      uint64_t delay_ms, pts_promise **out) {
  sctx *c = s->ctx;
  pts_loop *loop = c->loop;
  squeue *q = NULL;
  delay_blk *d = NULL;
  int rc = PTS_ENOMEM;
  if (delay_ms > 0) {
    d = pts__loop_pool_alloc(loop, sizeof *d);
    if (!d) {
      rc = pts__enomem();
      goto fail;
    }
  } else {
    q = select_queue(s, t->state->prio, cont);
    if (!q) {
      rc = pts__enomem();
      goto fail;
    }
  }
  if (t->kind == K_POST_PROMISE || t->kind == K_YIELD_PROMISE) {
    rc = pts_promise_new(loop, &ext_of(t)->promise);
    if (rc != 0) goto fail;
  }
  if (d) {
    pts__timer_init(&d->timer, s->global, on_delay, d);
    uint64_t ns = delay_ms > UINT64_MAX / 1000000u ? UINT64_MAX
                                                   : delay_ms * 1000000u;
    rc = pts__timer_start(&d->timer, ns);
    if (rc != 0) goto fail;
    d->task = t;
    d->sched = s;
    d->prev = NULL;
    d->next = s->delayed;
    if (s->delayed) s->delayed->prev = d;
    s->delayed = d;
    c->stats.delayed_tasks++;
    t->u.delay = d;
    t->status = S_DELAYED;
  }
  if (out) {
    pts_promise_ref(ext_of(t)->promise);
    *out = ext_of(t)->promise;
  }
  /* spec: add the handle's abort steps to signal */
  if (t->state->abort)
    pts__signal_add_abort_algo(t->state->abort, &ext_of(t)->abort_algo);
  if (q) enqueue_task(c, q, t);
  return 0;
fail:
  if (d) pts__loop_pool_free(loop, d, sizeof *d);
  if (q) queue_discard_if_unused(q);
  t->status = S_DONE;
  task_free(c, t);
  return rc;
}

/* A new task would pass the loop's task limit: the call fails (counted in
 * the loop's refusals). */
static bool over_task_limit(sctx *c) {
  if (live_of(c) < c->task_limit) return false;
  pts__loop_quota_refused_add(c->loop);
  return true;
}

/* An already aborted signal: the promise is returned rejected and the
 * callback released at once. */
static int post_rejected(pts_loop *loop, pts_signal *signal,
                         pts_task_callback callback, void *data,
                         pts_promise **out) {
  pts_promise *p;
  int rc = pts_promise_new(loop, &p);
  if (rc != 0) return rc;
  pts_promise_reject(p, pts_value_copy(pts_signal_reason(signal)));
  if (callback) pts_value_release(callback(data, PTS_EABORT));
  if (out)
    *out = p;
  else
    pts_promise_unref(p);
  return 0;
}

/* spec: schedule a postTask task. */
static int post_common(pts_scheduler *s, int kind, void *fn, void *data,
                       const pts_post_options *opts, pts_promise **out) {
  sctx *c = s->ctx;
  pts_loop *loop = c->loop;
  PTS__CHECK_OWNER(loop);
  pts_signal *signal = NULL;
  int priority = PTS_PRIORITY_UNSET;
  int64_t delay = 0;
  if (opts) {
    signal = opts->signal;
    priority = opts->priority;
    delay = opts->delay_ms;
    if (priority != PTS_PRIORITY_UNSET && !valid_priority(priority))
      return PTS_ETYPE;
    if (delay < 0 || delay > MAX_SAFE_INTEGER) return PTS_ETYPE;
    if (signal && pts_signal_get_loop(signal) != loop) return PTS_EFOREIGN;
  }
  if (s->detached) return PTS_ECLOSED;
  /* spec steps 3-4 (before the state: computing it has no effect). */
  if (signal && pts_signal_aborted(signal)) {
    if (kind == K_POST_CB) return PTS_EABORT;
    return post_rejected(loop, signal, (pts_task_callback)fn, data, out);
  }
  if (over_task_limit(c)) return PTS_EQUOTA;
  /* spec: compute the scheduling state from options */
  sstate *st;
  if (!signal) {
    int p = priority == PTS_PRIORITY_UNSET ? PTS_PRIORITY_USER_VISIBLE : priority;
    st = c->fixed_state[p];
    pts__state_ref(&st->hdr);
  } else {
    int rc = compute_state(c, OPT_GIVEN, signal, priority, &st);
    if (rc != 0) return rc;
  }
  /* spec: create a task handle */
  stask *t = task_alloc(c, kind, signal != NULL || kind == K_POST_PROMISE, fn,
                        data, st);
  if (!t) {
    pts__state_unref(&st->hdr);
    return pts__enomem();
  }
  return start_task(s, t, 0, (uint64_t)delay, out);
}

/* Fills a fixed-priority handle: what enqueue_task does not set (task_alloc
 * sets more, for the paths that wait or may fail before they enqueue; with
 * no abort source the abort steps are never registered, so they need no
 * init), and for the promise form its result in the same block. */
static inline __attribute__((always_inline)) void fixed_handle_fill(
    sctx *c, stask *t, int kind, void *fn, void *data, int p, pts_promise **out) {
  sstate *st = c->fixed_state[p];
  bool promise = kind == K_POST_PROMISE;
  t->state = st;
  if (promise)
    t->f.cb = (pts_task_callback)fn;
  else
    t->f.fn = (pts_task_fn)fn;
  t->data = data;
  t->kind = (uint8_t)kind;
  t->ext = promise ? EXT_PROMISE : EXT_NONE;
  live_add(c, 1);
  st->hdr.refs++;
  if (promise) {
    /* spec: result, in the handle's own block (no second allocation). */
    pts_promise *r = pts__promise_embed(c->loop, t);
    if (out) {
      pts_promise_ref(r);
      *out = r;
    }
  }
}

/* The static queue of priority p for a new fixed-priority handle, made if
 * the scheduler has none; NULL with *rc set (PTS_ECLOSED: detached). */
static squeue *fixed_queue(pts_scheduler *s, int p, int *rc) {
  *rc = PTS_ECLOSED;
  if (s->detached) return NULL;
  squeue *q = s->static_q[p][0];
  if (!q && (q = queue_new(s, p, 0, NULL)) == NULL) *rc = PTS_ENOMEM;
  return q;
}

/* postTask with a fixed priority, no signal and no delay. The state is the
 * cached fixed one and, for the direct-callback form, the handle is the
 * 64-byte base block (the promise form: the handle and its promise in one
 * block); there is no abort source, so no abort steps to register. What is
 * left is create the handle and enqueue. This version takes every case (a
 * detached scheduler, a queue to create or to put in the selection, a block
 * from the loop's pool); post_fixed below is its common case. */
static __attribute__((noinline)) int post_fixed_general(
    pts_scheduler *s, int kind, void *fn, void *data, int p, pts_promise **out) {
  sctx *c = s->ctx;
  PTS__CHECK_OWNER(c->loop);
  int rc;
  if (!s->detached && over_task_limit(c)) return PTS_EQUOTA;
  squeue *q = fixed_queue(s, p, &rc);
  if (!q) return rc;
  stask *t = tblock_get(c, kind == K_POST_PROMISE ? EXT_PROMISE : EXT_NONE);
  if (!t) {
    queue_discard_if_unused(q);
    return pts__enomem();
  }
  fixed_handle_fill(c, t, kind, fn, data, p, out);
  enqueue_task(c, q, t);
  return 0;
}

/* The common case of post_fixed_general, with nothing to call: the queue
 * exists and already has tasks (so it is where the selection wants it), a
 * block is on the context's free list, no allocation failure is being
 * injected. Calls nothing, so the API entry saves no registers for it. */
static inline __attribute__((always_inline)) int post_fixed(
    pts_scheduler *s, int kind, void *fn, void *data, int p, pts_promise **out) {
  sctx *c = s->ctx;
  PTS__CHECK_OWNER(c->loop); /* nothing with NDEBUG */
  int ext = kind == K_POST_PROMISE ? EXT_PROMISE : EXT_NONE;
  squeue *q = s->static_q[p][0];
  stask *t = c->tfree[ext];
  if (TBLOCK_BYPASS || s->detached || !q || !q->tail || !t ||
      live_of(c) >= c->task_limit ||
      atomic_load_explicit(&pts__alloc_armed, memory_order_relaxed))
    return post_fixed_general(s, kind, fn, data, p, out);
  c->tfree[ext] = *(void **)t;
  fixed_handle_fill(c, t, kind, fn, data, p, out);
  /* enqueue_task, appending to a queue that is not empty */
  t->u.queue = q;
  q->refs++;
  t->order = pts__loop_take_enqueue_order(c->loop);
  t->status = S_QUEUED;
  t->next = NULL;
  t->prev = q->tail;
  q->tail->next = t;
  q->tail = t;
  return 0;
}

int pts__scheduler_post_in(pts_scheduler *s, pts__sched_slot *slot, pts_task_fn fn,
                           void *data, int priority) {
  if (!s || !slot || !fn) return PTS_EINVAL;
  int p = priority == PTS_PRIORITY_UNSET ? PTS_PRIORITY_USER_VISIBLE : priority;
  if (!valid_priority(p)) return PTS_ETYPE;
  sctx *c = s->ctx;
  PTS__CHECK_OWNER(c->loop);
  int rc;
  if (!s->detached && over_task_limit(c)) return PTS_EQUOTA;
  squeue *q = fixed_queue(s, p, &rc);
  if (!q) return rc;
  stask *t = (stask *)(void *)slot;
  fixed_handle_fill(c, t, K_POST_CB, (void *)fn, data, p, NULL);
  t->ext = EXT_CALLER;
  enqueue_task(c, q, t);
  return 0;
}

bool pts__scheduler_may_run_now(const pts_scheduler *s) {
  return !s->detached && s->active && s->ctx->bitmap == 0;
}

void pts__scheduler_run_end(pts__sched_run *run) {
  if (run->priority < 0) return;
  sctx *c = run->s->ctx;
  sstate *st = run->state;
  pts__loop_swap_state(c->loop, run->prev);
  live_add(c, -1);
  run->priority = -1;
  if (--st->hdr.refs == 0) state_destroy(&st->hdr);
}

int pts__scheduler_run_in(pts__sched_run *run, pts_scheduler *s, pts_task_fn fn, void *data,
                          int priority) {
  sctx *c = s->ctx;
  pts_loop *loop = c->loop;
  PTS__CHECK_OWNER(loop);
  if (run->priority != priority || run->s != s) {
    pts__scheduler_run_end(run);
    /* spec: the handle's state is referenced while the task lives; here
     * while the run does, which outlives each of its tasks. */
    sstate *st = c->fixed_state[priority];
    st->hdr.refs++;
    live_add(c, 1);
    run->prev = pts__loop_swap_state(loop, &st->hdr);
    run->s = s;
    run->state = st;
    run->priority = priority;
  } else {
    /* Each task starts with its state, whatever the task before left
     * current (pts_loop_leave_state, for one). */
    sstate *st = run->state;
    (void)pts__loop_swap_state(loop, &st->hdr);
  }
  /* spec: schedule a postTask task (its enqueue order); then, picked, the
   * task's steps. */
  (void)pts__loop_take_enqueue_order(loop);
  c->stats.ran_now++;
  pts__script_enter(loop);
  fn(data, 0);
  pts__script_leave(loop);
  return 2 * priority + 1; /* a postTask is no continuation: level 2p */
}

int pts__scheduler_run_now(pts_scheduler *s, pts_task_fn fn, void *data, int priority) {
  pts__sched_run run = PTS__SCHED_RUN_INIT;
  int pick = pts__scheduler_run_in(&run, s, fn, data, priority);
  pts__scheduler_run_end(&run);
  return pick;
}

/* The options of a call that can take post_fixed: sets *p and returns 1;
 * returns 0 for the general path, or a PTS_ETYPE for a bad priority. */
static inline int fixed_priority_of(const pts_post_options *opts, int *p) {
  *p = PTS_PRIORITY_USER_VISIBLE;
  if (!opts) return 1;
  if (opts->signal || opts->delay_ms != 0) return 0;
  if (opts->priority == PTS_PRIORITY_UNSET) return 1;
  if (!valid_priority(opts->priority)) return PTS_ETYPE;
  *p = opts->priority;
  return 1;
}

int pts_scheduler_post_task(pts_scheduler *s, pts_task_callback callback,
                            void *data, const pts_post_options *opts,
                            pts_promise **out) {
  if (!s || !callback) return PTS_EINVAL;
  int p, fixed = fixed_priority_of(opts, &p);
  if (fixed == 1) return post_fixed(s, K_POST_PROMISE, (void *)callback, data, p, out);
  if (fixed < 0) return fixed;
  return post_common(s, K_POST_PROMISE, (void *)callback, data, opts, out);
}

int pts_scheduler_post(pts_scheduler *s, pts_task_fn fn, void *data,
                       const pts_post_options *opts) {
  if (!s || !fn) return PTS_EINVAL;
  int p, fixed = fixed_priority_of(opts, &p);
  if (fixed == 1) return post_fixed(s, K_POST_CB, (void *)fn, data, p, NULL);
  if (fixed < 0) return fixed;
  return post_common(s, K_POST_CB, (void *)fn, data, opts, NULL);
}

/* spec: schedule a yield continuation. */
static int yield_common(pts_scheduler *s, const pts_yield_options *opts,
                        int kind, pts_task_fn fn, void *data,
                        pts_promise **out) {
  sctx *c = s->ctx;
  pts_loop *loop = c->loop;
  PTS__CHECK_OWNER(loop);
  if (s->detached) return PTS_ENOTSUPPORTED;
  int signal_mode = OPT_NULL;
  pts_signal *signal = NULL;
  int priority = PTS_PRIORITY_UNSET;
  if (opts) {
    priority = opts->priority;
    if (priority != PTS_PRIORITY_UNSET && priority != PTS_PRIORITY_INHERIT &&
        !valid_priority(priority))
      return PTS_ETYPE;
    if (opts->signal_inherit) {
      signal_mode = OPT_INHERIT;
    } else if (opts->signal) {
      signal = opts->signal;
      signal_mode = OPT_GIVEN;
      if (pts_signal_get_loop(signal) != loop) return PTS_EFOREIGN;
    }
  }
  /* spec steps 4-5: the defaults to "inherit". */
  if (signal_mode == OPT_NULL && priority == PTS_PRIORITY_UNSET) {
    signal_mode = OPT_INHERIT;
    priority = PTS_PRIORITY_INHERIT;
  } else if (signal_mode == OPT_INHERIT && priority == PTS_PRIORITY_UNSET) {
    priority = PTS_PRIORITY_INHERIT;
  }
  sstate *st;
  int rc = compute_state(c, signal_mode, signal, priority, &st);
  if (rc != 0) return rc;
  if (st->abort && pts_signal_aborted(st->abort)) {
    pts_signal *aborted = st->abort;
    if (kind == K_YIELD_CB) {
      pts__state_unref(&st->hdr);
      return PTS_EABORT;
    }
    rc = post_rejected(loop, aborted, NULL, NULL, out);
    pts__state_unref(&st->hdr);
    return rc;
  }
  if (over_task_limit(c)) {
    pts__state_unref(&st->hdr);
    return PTS_EQUOTA;
  }
  stask *t = task_alloc(c, kind, st->abort != NULL || kind == K_YIELD_PROMISE,
                        (void *)fn, data, st);
  if (!t) {
    pts__state_unref(&st->hdr);
    return pts__enomem();
  }
  return start_task(s, t, 1, 0, out);
}

int pts_scheduler_yield(pts_scheduler *s, const pts_yield_options *opts,
                        pts_promise **out) {
  if (!s) return PTS_EINVAL;
  return yield_common(s, opts, K_YIELD_PROMISE, NULL, NULL, out);
}

int pts_scheduler_yield_cb(pts_scheduler *s, const pts_yield_options *opts,
                           pts_task_fn fn, void *data) {
  if (!s || !fn) return PTS_EINVAL;
  return yield_common(s, opts, K_YIELD_CB, fn, data, NULL);
}

int pts__sched_set_task_limit(pts_loop *loop, uint64_t limit) {
  sctx *c;
  int rc = ctx_get(loop, &c);
  if (rc == 0) c->task_limit = limit;
  return rc;
}

uint64_t pts__sched_live_tasks(pts_loop *loop) {
  sctx *c = pts__loop_provider_ctx(loop);
  return c ? live_of(c) : 0;
}
