/* loop/loop_impl.h: the loop's private structures, shared by the files of
 * loop/ only (loop.c, timer.c, idle.c, promise.c). Nothing outside loop/
 * includes this; sched/ and agents/ use loop_internal.h.
 *
 * Invariants kept across these files:
 * - A global is on the loop's ready list iff it is active, not detached and
 *   has at least one queued ordinary task.
 * - A pts__timer is in the heap iff its state is TIMER_ARMED; it is on its
 *   global's timer list iff its state is TIMER_ARMED or TIMER_PAUSED.
 * - Every object here is touched only by the loop's owner thread, except
 *   inbox, parker, stop_requested, running, owner, wake_fn and wake_ctx
 *   (atomics).
 */
#ifndef PTSCHED_LOOP_IMPL_H
#define PTSCHED_LOOP_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "loop/loop_internal.h"
#include "ptsched/promise.h"
#include "sync/parker.h"

/* ---- microtasks ---- */

/* A job on the microtask queue. run(mt, 0) runs it; run(mt, PTS_ECANCELED)
 * releases it when the loop is freed first. Either way run owns mt after. */
typedef struct pts__microtask {
  struct pts__microtask *next;
  void (*run)(struct pts__microtask *mt, int status);
} pts__microtask;

void pts__loop_queue_microtask_node(pts_loop *loop, pts__microtask *mt);

/* ---- ids of public timers and idle callbacks ---- */

enum { IDNODE_TIMER = 1, IDNODE_IDLE = 2 };
typedef struct pts__idnode {
  uint64_t id;
  uint32_t kind;
  pts_global *global;
} pts__idnode;

/* Open addressing with linear probing and backward-shift deletion (Knuth,
 * TAOCP vol. 3, 6.4, Algorithm R), so no tombstones build up. */
typedef struct pts__idmap {
  uint64_t *keys; /* 0 = empty slot */
  pts__idnode **vals;
  uint32_t cap, count; /* cap is a power of two */
} pts__idmap;

int pts__idmap_put(pts__idmap *m, pts__idnode *n);
pts__idnode *pts__idmap_get(const pts__idmap *m, uint64_t id);
void pts__idmap_del(pts__idmap *m, uint64_t id);
void pts__idmap_free(pts__idmap *m);

/* ---- timers ---- */

enum { TIMER_IDLE = 0, TIMER_ARMED, TIMER_PAUSED };

/* Heap entries carry their keys so sifting never touches the timer nodes
 * (scattered in memory: a cache miss per compare otherwise). */
typedef struct pts__heap_ent {
  uint64_t deadline, seq;
  pts__timer *t;
} pts__heap_ent;

typedef struct pts__timer_heap {
  pts__heap_ent *a;
  uint32_t len, cap;
} pts__timer_heap;

/* ---- globals ---- */

typedef struct pts__idle_req pts__idle_req;

struct pts_global {
  pts_loop *loop;
  struct pts_global *next; /* loop's list of every global */
  pts__list rlink; /* on the loop's ready list while in_ready */
  bool in_ready;
  bool active;
  bool detached;
  uint32_t ntasks; /* queued ordinary tasks, every source */
  pts__list q[PTS_SOURCE_COUNT]; /* queued tasks by source (pts__task.link), FIFO */
  pts__list timers;              /* the global's timers (pts__timer.glink) */
  uint32_t ntimers;              /* timers on that list */
  pts__list idle; /* pending idle callbacks (pts__idle_req), FIFO */
  uint32_t nidle;
  void *sched_slot;
};

/* ---- the loop ---- */

typedef void (*pts__wake_fn)(void *ctx);

#define POOL_CLASSES 8 /* 16, 32, ..., 128 bytes */
#define POOL_MAX 128

/* The wait of an inbox pass at a stream's tail, in pauses (loop.c,
 * inbox_next): none until a stream is seen, then from the minimum, doubled
 * while the stream goes on, at most the maximum (about 13 us on the
 * project's VM). */
#define PTS__STREAM_WAIT_MIN 32
#define PTS__STREAM_WAIT_MAX 512

/* The wait after one of `wait` pauses: doubled, up to the maximum, when a
 * successor came during it (the stream goes on); none when none did (the
 * stream ended: a last node is then taken at once until the pass finds a
 * successor linked again). */
static inline uint32_t pts__stream_wait_next(uint32_t wait, bool came) {
  if (!came) return 0;
  return wait < PTS__STREAM_WAIT_MAX / 2 ? wait * 2 : PTS__STREAM_WAIT_MAX;
}

struct pts_loop {
  /* Cross-thread part first, each written by other threads on its own line. */
  pts__mpsc inbox;
  pts__parker parker;
  _Alignas(64) atomic_bool stop_requested;
  atomic_int running;
  _Atomic uintptr_t owner; /* id of the owning thread (see self_id) */
  uintptr_t bound;         /* owner when not running: creator or bound */
  /* Pool mode (pts__loop_pool_attach): a wake hook that replaces the
   * parker. ctx is stored before fn (release) and read after it (acquire). */
  _Atomic(pts__wake_fn) wake_fn;
  _Atomic(void *) wake_ctx;

  /* Owner-thread part, from the next line: producers read wake_fn on every
   * post, and the owner writes next_order and the step's bookkeeping on
   * every task. */
  _Alignas(64) bool closing;
  bool inbox_more; /* the last inbox drain stopped at its batch limit */
  bool stream_seen;     /* a pass found a successor linked (inbox_next) */
  uint32_t stream_wait; /* then the next wait at a stream's tail */
  bool virtual_clock;
  uint32_t starvation_limit;
  uint32_t streak; /* starvation guard: consecutive picks that passed a lower class */
  uint8_t last_pick; /* what the last step ran (loop.c, LAST_PICK_CLASS) */
  uint32_t drained_max; /* most commands applied in one pass since taken */
  uint64_t vnow;   /* virtual clock, ns */
  uint64_t next_order; /* spec: next enqueue order */
  uint64_t timer_seq;
  uint64_t next_id;
  uint64_t idle_seq;

  pts_global *globals;
  pts_global *default_global;
  pts__list ready; /* globals with runnable tasks (rlink), LIFO */
  /* How many globals are on ready: the hot paths test this against 0, which
   * needs no register for the head's address (a test of the list itself
   * made run_burst reload that address from its stack every task: 2-5% of
   * post_run_promise, docs/loop.md). */
  uint32_t nready;

  pts__microtask *mt_head, *mt_tail;
  bool in_checkpoint;
  /* Embedder callbacks on the stack (loop_internal.h, "clean up after
   * running script"): 0 while the loop runs its own steps, 1 outside runs. */
  uint32_t script_depth;

  pts__timer_heap heap;
  pts__idmap ids;

  /* Idle period (requestIdleCallback): callbacks with seq < idle_limit are
   * runnable in the current period, which ends at idle_deadline. */
  bool idle_period;
  uint64_t idle_limit;
  uint64_t idle_deadline;
  uint32_t nidle; /* pending idle callbacks, every global */
  bool idle_period_this_run;
  pts_sched_state *(*idle_state_factory)(pts_loop *);

  pts_sched_state *cur_state;
  /* Inside an idle callback that began with no idle state (no scheduler had
   * installed the factory yet): the state is made on first read, owned here. */
  bool idle_state_wanted;
  pts_sched_state *idle_state_made;

  const pts__provider_ops *prov;
  void *prov_ctx;
  const uint32_t *prov_levels; /* pts__loop_set_provider_levels, or NULL */
  pts__command_runner run_command; /* or NULL */

  void *pool[POOL_CLASSES];
  /* Quotas (loop_internal.h): the owner writes (relaxed single-writer
   * stores, on the pool's miss path only), any thread reads. */
  struct {
    _Atomic uint64_t bytes, refused;
    uint64_t byte_limit; /* UINT64_MAX: none */
  } quota;
  /* Every live promise, so pts_loop_free can release cycles and promises
   * still referenced (circular lists with these sentinels). */
  pts__list live, swept;
};

/* ---- cross-file helpers ---- */

/* Between the loop's own files: loop.c (owner thread, tasks, the inbox's
 * consumer side, the policy, steps and runs, the pool's hooks), blocks.c
 * (the block pool), microtask.c (microtasks, checkpoints, the scheduling
 * state), lifetime.c (creation, the shutdown protocol, globals). */
uintptr_t pts__loop_self_id(void);             /* an id of the calling thread */
bool pts__loop_enter_running(pts_loop *loop);  /* false if already running */
pts_global *pts__loop_global_create(pts_loop *l);
void pts__loop_ready_update(pts_global *g);    /* the global joins or leaves the ready list */
void pts__loop_release_tasks(pts_global *g);   /* its queued tasks get PTS_ECANCELED */
void pts__loop_cancel_inbox(pts_loop *loop);   /* shutdown step 2 */
void pts__loop_pool_release_all(pts_loop *loop);
void pts__loop_checkpoint(pts_loop *loop);     /* perform a microtask checkpoint */
void pts__loop_cancel_microtasks(pts_loop *loop);

/* The inbox (inbox.c): the wake-up of the owner (the pool's hook when
 * attached, else the parker), and the command of kind PTS__CMD_MESSAGE,
 * which carries an ordinary task. */
void pts__loop_wake_owner(pts_loop *loop);
/* A message task (PTS__CMD_MESSAGE): the command and the task, 64 bytes,
 * so a request the caller aligns to a cache line crosses the cores as one
 * line. In a caller-owned request (pts_task_req) the task's fn and data
 * are the caller's; in a block of the node cache (xpost) the task's fn is
 * the block's, which frees it before it calls the caller's. Until the task
 * is queued, its order field carries the source (queueing sets the
 * order). */
typedef struct xreq {
  pts__command cmd;
  pts__task t;
} xreq;
_Static_assert(sizeof(xreq) <= sizeof(pts_task_req), "pts_task_req is too small");
_Static_assert(_Alignof(xreq) <= _Alignof(pts_task_req), "pts_task_req alignment");
typedef struct xpost {
  xreq m;
  pts_task_fn fn;
  void *data;
} xpost;

uint64_t pts__loop_now_ns(pts_loop *loop);
uint64_t pts__sat_add(uint64_t a, uint64_t b);

/* Timers (timer.c). */
void pts__timers_fire_due(pts_loop *loop);
/* Earliest armed deadline, or UINT64_MAX. */
uint64_t pts__timers_next_deadline(const pts_loop *loop);
void pts__timers_pause_global(pts_global *g);
void pts__timers_resume_global(pts_global *g);
void pts__timers_release_global(pts_global *g);
void pts__timer_heap_free(pts__timer_heap *h);
int pts__timer_heap_reserve(pts__timer_heap *h, uint64_t need);

/* Idle callbacks (idle.c). */
bool pts__idle_runnable(pts_loop *loop, bool may_start_period);
void pts__idle_run_one(pts_loop *loop);
void pts__idle_release_global(pts_global *g);

/* Promises (promise.c). Releases the contents of every live promise and
 * frees them all, even ones still referenced (pts_loop_free only). */
void pts__promises_sweep(pts_loop *loop);
/* Calls a thenable's then hook (value.c). */
pts_value pts__thenable_call(pts_thenable *t, pts_resolvers *r);

#endif /* PTSCHED_LOOP_IMPL_H */
