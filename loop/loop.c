/* loop/loop.c: one event loop: its owner thread, run modes, the inbox's
 * owner side, the ordinary task queues of its globals, the choice of the
 * next task (the default policy of docs/loop.md), the provider hook and the
 * hooks a worker pool drives it by. Beside it: inbox.c (the producers'
 * side), microtask.c (microtasks, checkpoints, the scheduling state),
 * blocks.c (the per-loop block pool) and lifetime.c (creation, the
 * shutdown protocol below, globals).
 *
 * Invariant: only the owner thread touches anything but the inbox, the
 * parker, stop_requested, running and owner. Every task, microtask and
 * command handed to the loop is called exactly once: run (status 0) or
 * released (PTS_ECANCELED).
 *
 * Sleep/wake protocol (sync/parker.h):
 * 1. The owner finds nothing runnable, computes the time to the next timer
 *    (real clock) or forever (virtual clock or no timer).
 * 2. It calls pts__parker_prepare(), then checks the inbox and the stop flag
 *    once more; if either shows work it cancels, else it parks.
 * 3. A producer pushes its command (or sets the stop flag) first, then calls
 *    pts__parker_unpark(), which costs a system call only if the owner is
 *    preparing or parked. So no wake-up is lost and a busy loop is never
 *    woken.
 * 4. Pool mode (pts__loop_pool_attach): the loop never parks; producers call
 *    the pool's wake hook instead of the parker, after the push (step 3), and
 *    the pool thread applies its own parker protocol. A poll or step that
 *    leaves commands in the inbox (batch limit) calls the hook itself, so
 *    the pool comes back without waiting for another push.
 *
 * Shutdown protocol (pts_loop_free), in this order so nothing is touched
 * after its owner freed it:
 * 1. Mark the loop closing and running (a run from a callback gets EBUSY).
 * 2. Release inbox commands first: a command may be embedded in an object
 *    the provider owns, so it must leave the inbox before the provider frees
 *    (pts__loop_free_when: until its caller knows no more are on the way).
 * 3. provider->destroy: the scheduler rejects its promises and frees.
 * 4. Every global is detached silently: tasks, timers, idle callbacks get
 *    PTS_ECANCELED.
 * 5. Microtasks are released (PTS_ECANCELED) and promises swept, repeated
 *    until both are empty (a release may queue more).
 * 6. Memory: globals, heap, id map, pool, the loop.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loop/loop_impl.h"
#include "sync/alloc.h"
#include "sync/nodecache.h"
#include "sync/intrusive.h"


/* Commands drained per inbox pass: bounds the time between two tasks when
 * producers post faster than the loop runs. A pass also ends early, at a
 * look every DRAIN_LOOK commands, when other work waits (a queued task, a
 * task of the provider, a due timer): a flood of commands taking ~0.4 us
 * each to apply would otherwise hold that work for up to 1024 of them
 * (issue 32, the flood scenario: the victim's p99 fell from 1,561 to 225 us
 * beside a flood). */
#define INBOX_BATCH 1024
#define DRAIN_LOOK 64

/* ---- owner thread ---- */

/* A thread's id is the address of a thread-local: unique among live threads,
 * and free to read (no system call). */
static _Thread_local char self_marker;
uintptr_t pts__loop_self_id(void) { return (uintptr_t)&self_marker; }

bool pts__loop_is_owner(const pts_loop *loop) {
  /* Relaxed: the owner only changes while no other thread may legitimately
   * use the loop; this is a debug check, not a synchronisation. */
  return atomic_load_explicit(&((pts_loop *)loop)->owner,
                              memory_order_relaxed) == pts__loop_self_id();
}

bool pts__loop_foreign(const pts_loop *loop, const char *fn) {
#ifdef NDEBUG
  (void)loop;
  (void)fn;
  return false;
#else
  if (loop == NULL || pts__loop_is_owner(loop)) return false;
  fprintf(stderr, "ptsched: %s called from a foreign thread\n", fn);
  return true;
#endif
}

void pts__loop_bind_thread(pts_loop *loop) {
  if (loop == NULL) return;
  loop->bound = pts__loop_self_id();
  atomic_store_explicit(&loop->owner, loop->bound, memory_order_relaxed);
}

/* ---- clock ---- */

uint64_t pts__sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t pts__loop_now_ns(pts_loop *loop) {
  return loop->virtual_clock ? loop->vnow : monotonic_ns();
}

uint64_t pts_loop_now(pts_loop *loop) {
  return loop ? pts__loop_now_ns(loop) : 0;
}

/* ---- globals and their ready list ---- */

void pts__loop_ready_update(pts_global *g) {
  bool want = g->active && !g->detached && g->ntasks > 0;
  if (want == g->in_ready) return;
  pts_loop *l = g->loop;
  if (want)
    pts__list_prepend(&l->ready, &g->rlink);
  else
    pts__list_remove(&g->rlink);
  l->nready = want ? l->nready + 1 : l->nready - 1;
  g->in_ready = want;
}

pts_global *pts__loop_global_create(pts_loop *l) {
  pts_global *g = pts__calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->loop = l;
  g->active = true;
  for (int s = 0; s < PTS_SOURCE_COUNT; s++) pts__list_init(&g->q[s]);
  pts__list_init(&g->timers);
  pts__list_init(&g->idle);
  g->next = l->globals;
  l->globals = g;
  return g;
}

/* ---- ordinary tasks ---- */

void pts__task_init(pts__task *t, pts_global *g, pts_task_fn fn, void *data) {
  pts__list_node_init(&t->link);
  t->order = 0;
  t->global = g;
  t->fn = fn;
  t->data = data;
}

uint64_t pts__loop_take_enqueue_order(pts_loop *loop) { return loop->next_order++; }

int pts__task_queue(pts__task *t, pts_task_source source) {
  if (t == NULL || t->global == NULL || t->fn == NULL ||
      (unsigned)source >= PTS_SOURCE_COUNT)
    return PTS_EINVAL;
  pts_global *g = t->global;
  if (g->detached) return PTS_ECLOSED;
  if (pts__list_linked(&t->link)) return PTS_EBUSY; /* already queued */
  t->order = g->loop->next_order++;
  pts__list_append(&g->q[source], &t->link);
  g->ntasks++;
  pts__loop_ready_update(g);
  return 0;
}

bool pts__task_dequeue(pts__task *t) {
  if (t == NULL || !pts__list_linked(&t->link)) return false;
  pts__list_remove(&t->link);
  t->global->ntasks--;
  pts__loop_ready_update(t->global);
  return true;
}

/* The owner's own posts: a pooled node wrapping the caller's callback. */
typedef struct post_node {
  pts__task t;
  pts_task_fn fn;
  void *data;
} post_node;

static void post_run(void *d, int status) {
  post_node *p = d;
  pts_task_fn fn = p->fn;
  void *data = p->data;
  /* Freed before the call so a task that posts again reuses the block. */
  pts__loop_pool_free(p->t.global->loop, p, sizeof *p);
  fn(data, status);
}

int pts_queue_task(pts_global *global, pts_task_source source, pts_task_fn fn,
                   void *data) {
  if (global == NULL || fn == NULL || (unsigned)source >= PTS_SOURCE_COUNT)
    return PTS_EINVAL;
  PTS__CHECK_OWNER(global->loop);
  if (global->detached) return PTS_ECLOSED;
  post_node *p = pts__loop_pool_alloc(global->loop, sizeof *p);
  if (p == NULL) return pts__enomem();
  pts__task_init(&p->t, global, post_run, p);
  p->fn = fn;
  p->data = data;
  return pts__task_queue(&p->t, source);
}

void pts__loop_release_tasks(pts_global *g) {
  for (int s = 0; s < PTS_SOURCE_COUNT; s++) {
    while (!pts__list_empty(&g->q[s])) {
      pts__task *t = container_of(pts__list_first(&g->q[s]), pts__task, link);
      pts__task_dequeue(t);
      t->fn(t->data, PTS_ECANCELED);
    }
  }
}

/* ---- inbox: the consumer side (the producers' side is inbox.c) ---- */

/* Records a pass that applied n commands (the deepest pass is a statistic
 * of the agents layer: pts__loop_take_drained_max). */
static inline void note_drained(pts_loop *loop, uint32_t n) {
  if (n > loop->drained_max) loop->drained_max = n;
}

/* Returns how many commands ran (after `already` taken by the caller in
 * the same pass); inbox_more tells whether the drain left a command behind:
 * the batch limit ended it, or a producer is between the two steps of its
 * push. pop cannot tell the second from an empty inbox when the stub is at
 * tail, but is_empty can: its seq_cst load of head is the poll's half of the
 * wake protocol (agents/pool.c, step 3). A producer whose wake hook found
 * the wake token still taken (before the worker gave it back and polled)
 * relies on this poll to see its push, and the push's link may not be
 * visible yet; the drain then calls the wake hook itself, and the owner
 * comes back for the command instead of sleeping on it. */
static inline bool provider_idle(pts_loop *loop);

/* Whether other work than the inbox waits: a queued task, the provider's,
 * a due timer. */
static bool work_waits(pts_loop *loop) {
  return loop->nready != 0 || !provider_idle(loop) ||
         (loop->heap.len != 0 && pts__timers_next_deadline(loop) <= pts__loop_now_ns(loop));
}

static int drain_inbox(pts_loop *loop, uint32_t already) {
  int i;
  for (i = 0; i < INBOX_BATCH; i++) {
    if (i % DRAIN_LOOK == DRAIN_LOOK - 1 && work_waits(loop))
      break; /* the pass ends, the rest stays for the next */
    pts__mpsc_node *n = pts__mpsc_pop(&loop->inbox);
    if (n == NULL) break;
    pts__command *c = container_of(n, pts__command, node);
    c->type->apply(c, 0);
  }
  loop->inbox_more = i == INBOX_BATCH || !pts__mpsc_is_empty(&loop->inbox);
  note_drained(loop, already + (uint32_t)i);
  return i;
}

/* ---- the default policy: choosing the next task ---- */

/* Classes, most urgent first (docs/loop.md). */
enum { CLS_INPUT = 0, CLS_HIGH, CLS_FIFO, CLS_LOW, CLS_IDLE, CLS_NONE };

typedef struct pick {
  int cls;
  pts__task *task; /* an ordinary task, or NULL for the provider / idle */
} pick;

/* spec (section 4 patch of the processing model): the set of runnable task
 * queues and "select the next scheduler task queue from all schedulers",
 * then the implementation-defined choice between them. Cost: one provider
 * peek and a look at each ready global's queue heads; no task is scanned.
 * commit = false only looks (pts__loop_poll): the starvation guard's count
 * is left as it is, so looking does not change what the next step runs. */
static pick choose(pts_loop *loop, bool may_start_idle, bool commit) {
  pts__task *input = NULL, *fifo = NULL;
  for (pts__list *r = loop->ready.next; r != &loop->ready; r = r->next) {
    pts_global *g = container_of(r, pts_global, rlink);
    pts__list *n = g->q[PTS_SOURCE_USER_INPUT].next;
    pts__task *h = container_of(n, pts__task, link);
    if (n != &g->q[PTS_SOURCE_USER_INPUT] && (!input || h->order < input->order))
      input = h;
    for (int s = PTS_SOURCE_TIMER; s < PTS_SOURCE_COUNT; s++) {
      n = g->q[s].next;
      h = container_of(n, pts__task, link);
      if (n != &g->q[s] && (!fifo || h->order < fifo->order)) fifo = h;
    }
  }
  int prio = -1;
  uint64_t porder = 0;
  if (loop->prov != NULL) prio = loop->prov->peek(loop->prov_ctx, &porder);
  bool has[CLS_IDLE] = {
      input != NULL,
      prio >= 3,
      fifo != NULL || prio == 2,
      prio == 0 || prio == 1,
  };
  int win = -1, low = -1;
  for (int c = 0; c < CLS_IDLE; c++) {
    if (!has[c]) continue;
    if (win < 0) win = c;
    low = c;
  }
  pick p = {CLS_NONE, NULL};
  if (win < 0) {
    if (pts__idle_runnable(loop, may_start_idle)) p.cls = CLS_IDLE;
    return p;
  }
  /* Starvation guard: after `limit` consecutive picks that passed over a
   * waiting lower class, the lowest waiting class gets one task. */
  if (loop->starvation_limit != 0) {
    if (low > win) {
      if (loop->streak >= loop->starvation_limit) {
        win = low;
        if (commit) loop->streak = 0;
      } else if (commit) {
        loop->streak++;
      }
    } else if (commit) {
      loop->streak = 0;
    }
  }
  p.cls = win;
  if (win == CLS_INPUT)
    p.task = input;
  else if (win == CLS_FIFO && fifo != NULL && !(prio == 2 && porder < fifo->order))
    p.task = fifo;
  return p;
}

/* ---- processing model ---- */

enum { DID_WORK = 1, DID_TASK = 2 };

/* loop->last_pick: what the last step ran, decoded only when asked
 * (pts__loop_last_urgency): 1..6, the provider's 1 + effective priority;
 * LAST_PICK_CLASS + a pick class otherwise. One store per step. */
#define LAST_PICK_CLASS 16
_Static_assert(PTS__PICK_ORDINARY_TASK == LAST_PICK_CLASS + CLS_FIFO,
               "a command runner's ordinary task is a pick of the FIFO class");

/* The urgency class of each pick class. */
static int urgency_of(int cls) {
  switch (cls) {
    case CLS_INPUT:
      return PTS__URGENCY_INPUT;
    case CLS_HIGH:
      return PTS__URGENCY_HIGH;
    case CLS_FIFO:
      return PTS__URGENCY_FIFO;
    case CLS_LOW:
      return PTS__URGENCY_LOW;
    case CLS_IDLE:
      return PTS__URGENCY_IDLE;
    default:
      return PTS__URGENCY_NONE;
  }
}

/* The urgency class of a scheduler task of effective priority prio (the
 * default policy, docs/loop.md). */
static int urgency_of_priority(int prio) {
  return prio >= 3 ? PTS__URGENCY_HIGH : prio == 2 ? PTS__URGENCY_FIFO : PTS__URGENCY_LOW;
}

/* The provider (the scheduler) has no task runnable. */
static inline bool provider_idle(pts_loop *loop) {
  uint64_t order;
  return loop->prov == NULL || loop->prov->peek(loop->prov_ctx, &order) < 0;
}

/* True when the inbox's next command, if it is a message task, would be the
 * pick of this step: nothing else is queued, due or pending in the loop. */
static inline bool inbox_is_next(pts_loop *loop) {
  return loop->nready == 0 && loop->heap.len == 0 && loop->mt_head == NULL &&
         provider_idle(loop);
}

/* The urgency class (PTS__URGENCY_*) of a pick (loop->last_pick's values):
 * urgency_of_priority(p - 1) below LAST_PICK_CLASS, urgency_of(p -
 * LAST_PICK_CLASS) from it, as a table (a load where the two functions'
 * branches took ten instructions a step). */
static const uint8_t urgency_by_pick[LAST_PICK_CLASS + CLS_NONE + 1] = {
    PTS__URGENCY_LOW,  PTS__URGENCY_LOW,  PTS__URGENCY_LOW,  PTS__URGENCY_FIFO,
    PTS__URGENCY_HIGH, PTS__URGENCY_HIGH, PTS__URGENCY_HIGH, PTS__URGENCY_HIGH,
    PTS__URGENCY_HIGH, PTS__URGENCY_HIGH, PTS__URGENCY_HIGH, PTS__URGENCY_HIGH,
    PTS__URGENCY_HIGH, PTS__URGENCY_HIGH, PTS__URGENCY_HIGH, PTS__URGENCY_HIGH,
    [LAST_PICK_CLASS + CLS_INPUT] = PTS__URGENCY_INPUT,
    [LAST_PICK_CLASS + CLS_HIGH] = PTS__URGENCY_HIGH,
    [LAST_PICK_CLASS + CLS_FIFO] = PTS__URGENCY_FIFO,
    [LAST_PICK_CLASS + CLS_LOW] = PTS__URGENCY_LOW,
    [LAST_PICK_CLASS + CLS_IDLE] = PTS__URGENCY_IDLE,
    [LAST_PICK_CLASS + CLS_NONE] = PTS__URGENCY_NONE,
};

static int urgency_of_pick(unsigned p) {
  return p < sizeof urgency_by_pick ? urgency_by_pick[p] : PTS__URGENCY_NONE;
}

void pts__inbox_pass_count(pts__inbox_pass *pass) {
  if (pass->counts != NULL && pass->ran > pass->counted)
    pass->counts[urgency_of_pick((unsigned)pass->pick)] += pass->ran - pass->counted;
  pass->counted = pass->ran;
}

/* Whether the pass may take one more task, the provider aside. */
static inline bool inbox_pass_may_go_on(pts_loop *loop, const pts__inbox_pass *p) {
  return p->ran != p->max && !atomic_load_explicit(&loop->stop_requested, memory_order_relaxed) &&
         loop->nready == 0 && loop->heap.len == 0 && loop->mt_head == NULL;
}

/* A pass that finds no linked successor behind the inbox's last node waits
 * before it looks again, and only then takes that node with pop: a
 * consumer that keeps up with its producer otherwise trades the last
 * node's line and the producers' head with it at every post, and the
 * stream runs at the speed of those transfers. The wait (pauses of about
 * 26 ns here) starts at PTS__STREAM_WAIT_MIN once the pass finds a
 * successor already linked (a producer ahead of it: a stream), doubles
 * while successors come during it, and stops when none does, so a stream
 * that goes on is taken in large batches: with a fixed minimum, a slow
 * producer's stream read 45-117 ns a task in some hours, 8-16 with this
 * (docs/loop.md, "Streams"). Until a stream is seen again, a last node is
 * taken at once: two loops that answer each other on one CPU, each
 * preempting the other with its post, never link a successor, and each of
 * their round trips paid a wait of 32 pauses. Bounds: the last task of a
 * stream waits one wait at most (PTS__STREAM_WAIT_MAX, about 13 us here);
 * an empty inbox is not waited on. A pool runs such passes only for an
 * agent alone on its thread. */
static inline __attribute__((always_inline)) pts__command *inbox_next(pts_loop *loop,
                                                                   const pts__inbox_pass *p) {
  if (!inbox_pass_may_go_on(loop, p)) return NULL;
  pts__mpsc_node *node = pts__mpsc_pop_linked(&loop->inbox);
  if (node != NULL) {
    loop->stream_seen = true; /* a stream: a store, not a test, on each task's path */
  } else {
    if (!pts__mpsc_maybe_nonempty(&loop->inbox)) return NULL; /* empty: no stream */
    if (loop->stream_seen) {
      for (uint32_t i = 0; i < loop->stream_wait; i++) pts__cpu_pause();
      node = pts__mpsc_pop_linked(&loop->inbox);
      uint32_t next = pts__stream_wait_next(loop->stream_wait, node != NULL);
      loop->stream_seen = next != 0;
      loop->stream_wait = next != 0 ? next : PTS__STREAM_WAIT_MIN;
    }
    if (node == NULL) node = pts__mpsc_pop(&loop->inbox);
  }
  return node == NULL ? NULL : container_of(node, pts__command, node);
}

/* For the agents' runner, where link-time optimisation inlines it. */
pts__command *pts__loop_inbox_next(pts_loop *loop, const pts__inbox_pass *p) {
  return inbox_next(loop, p);
}

/* The cross-thread hot path (docs/loop.md): takes commands from the
 * inbox. A message task posted from another thread for an active global
 * runs at once, exactly as if it had been queued and then picked as the
 * only runnable task (it takes its enqueue order all the same), and so does
 * any command the loop's command runner runs; up to `max` tasks follow one
 * another this way while the inbox is all the work there is. Any other
 * command is applied as the drain would, and ends the run (*applied). With
 * `counts`, counts[u] is incremented for each task by its urgency class u.
 * Returns the tasks run (loop->last_pick says what the last one was). The
 * caller has checked inbox_is_next(). */
static uint32_t inbox_run(pts_loop *loop, uint32_t max, uint32_t *counts, bool *applied) {
  pts__inbox_pass p = {0, max, counts, LAST_PICK_CLASS + CLS_FIFO, 0};
  *applied = false;
  pts__mpsc_node *first = pts__mpsc_pop(&loop->inbox);
  for (pts__command *c = first ? container_of(first, pts__command, node) : NULL; c != NULL;
       c = inbox_next(loop, &p)) {
    pts__task *t = c->type->kind == PTS__CMD_MESSAGE ? &container_of(c, xreq, cmd)->t : NULL;
    if (t != NULL && t->global->active && !t->global->detached) {
      loop->next_order++; /* spec: the task was queued */
      /* The caller may reuse its request from here on. */
      pts__script_enter(loop);
      t->fn(t->data, 0);
      pts__script_leave(loop);
      pts__inbox_pass_ran(&p, LAST_PICK_CLASS + CLS_FIFO);
    } else {
      /* The runner may run a whole run of commands in this call. */
      pts__command_kind k = c->type->kind;
      bool runners = k == PTS__CMD_AGENT_TASK || k == PTS__CMD_AGENT_QUEUE;
      pts__command *left = runners && loop->run_command != NULL ? loop->run_command(loop, c, &p) : c;
      if (left != NULL) {
        left->type->apply(left, 0);
        *applied = true;
        break;
      }
    }
    if (!provider_idle(loop)) break;
  }
  pts__inbox_pass_count(&p);
  if (p.ran > 0) {
    loop->last_pick = (uint8_t)p.pick;
    loop->streak = 0; /* a pick with no other class waiting */
  }
  loop->inbox_more = pts__mpsc_maybe_nonempty(&loop->inbox);
  return p.ran;
}

/* Nothing but the provider's queues can have work for the next pick: no
 * command linked in the inbox, no armed timer, no ordinary task ready, no
 * stop requested (a relaxed load: the stop is seen at this task boundary or
 * the next). */
static inline bool only_provider_work(pts_loop *loop) {
  return !pts__mpsc_maybe_nonempty(&loop->inbox) && loop->heap.len == 0 &&
         loop->nready == 0 &&
         !atomic_load_explicit(&loop->stop_requested, memory_order_relaxed);
}

bool pts__loop_burst_may_continue(pts_loop *loop) { return only_provider_work(loop); }

void pts__loop_after_task(pts_loop *loop) {
  if (loop->mt_head != NULL) pts__loop_checkpoint(loop);
}

/* One iteration: inbox, due timers, one task, microtask checkpoint.
 *
 * The hot path (docs/loop.md, "Processing model"): each phase is skipped
 * with one branch when it cannot matter: no node linked in the inbox, no
 * armed timer, no microtask queued. When no ordinary task is ready, the
 * scheduler's most urgent task is the pick whatever its class (only idle
 * callbacks rank below it), so the provider runs it without the peek and
 * the class comparison of choose(). With `burst` (run modes other than
 * once), tasks follow each other in the same call while nothing but the
 * provider's queues, or nothing but the inbox's message tasks, has work. */
static int step(pts_loop *loop, bool may_start_idle, bool burst) {
  int did = 0;
  if (pts__mpsc_maybe_nonempty(&loop->inbox)) {
    bool drain = true;
    if (inbox_is_next(loop)) {
      /* With `burst`, as for the provider below: while the inbox is all the
       * work there is, the next iterations would take this path too. */
      bool applied;
      if (inbox_run(loop, burst ? UINT32_MAX : 1, NULL, &applied) > 0)
        return DID_WORK | DID_TASK;
      /* Nothing applied: a producer between its two push steps. Its
       * command is left to the next step's in-place path: a drain now would
       * queue it and whatever was linked meanwhile, and the stream would
       * then be queued, a batch a step, for as long as it keeps the inbox
       * busy (the loop's queued path costs a task 3x the in-place one). */
      if (applied)
        did |= DID_WORK;
      else
        drain = false;
    }
    if (drain && drain_inbox(loop, did ? 1 : 0) > 0) did |= DID_WORK;
  }
  if (loop->heap.len != 0) {
    uint64_t seq = loop->timer_seq, len = loop->heap.len;
    pts__timers_fire_due(loop);
    if (loop->heap.len != len || loop->timer_seq != seq) did |= DID_WORK;
  }
  /* Commands and timer steps are not tasks, but the promise jobs they queue
   * must not wait for an unrelated task. */
  if (loop->mt_head != NULL) {
    pts__loop_checkpoint(loop);
    did |= DID_WORK;
  }
  if (loop->nready == 0 && loop->prov != NULL) {
    /* The starvation guard sees one waiting class: its streak ends. */
    loop->streak = 0;
    int ran = loop->prov->run_next(loop->prov_ctx);
    if (ran) {
      if (loop->mt_head != NULL) pts__loop_checkpoint(loop);
      /* A burst: while the scheduler's queues are all the work there is,
       * each next iteration would take exactly this path, so it runs here
       * without going round the loop (one task, one checkpoint each). */
      if (burst && only_provider_work(loop)) {
        int last = loop->prov->run_burst(loop->prov_ctx);
        if (last) ran = last;
      }
      loop->last_pick = (uint8_t)ran;
      return did | DID_WORK | DID_TASK;
    }
  }
  pick p = choose(loop, may_start_idle, true);
  loop->last_pick = (uint8_t)(LAST_PICK_CLASS + p.cls);
  switch (p.cls) {
    case CLS_NONE:
      return did;
    case CLS_IDLE:
      pts__idle_run_one(loop);
      break;
    default:
      if (p.task != NULL) {
        pts__task *t = p.task;
        pts__task_dequeue(t);
        pts__script_enter(loop);
        t->fn(t->data, 0);
        pts__script_leave(loop);
      } else {
        loop->prov->run_next(loop->prov_ctx);
      }
      break;
  }
  if (loop->mt_head != NULL) pts__loop_checkpoint(loop);
  return did | DID_WORK | DID_TASK;
}

static void sleep_until_work(pts_loop *loop) {
  uint64_t timeout = PTS__PARK_FOREVER;
  if (!loop->virtual_clock) {
    uint64_t d = pts__timers_next_deadline(loop);
    if (d != UINT64_MAX) {
      uint64_t now = monotonic_ns();
      if (d <= now) return;
      timeout = d - now;
    }
  }
  /* Blocks of other threads' commands go back before we sleep, so their
   * producers can reuse them (sync/nodecache.h). */
  pts__node_flush();
  pts__parker_prepare(&loop->parker);
  if (!pts__mpsc_is_empty(&loop->inbox) ||
      atomic_load_explicit(&loop->stop_requested, memory_order_acquire)) {
    pts__parker_cancel(&loop->parker);
    return;
  }
  pts__parker_park(&loop->parker, timeout);
}

static bool take_stop(pts_loop *loop) {
  /* Cheap load first: the exchange would dirty the line on every task. */
  if (!atomic_load_explicit(&loop->stop_requested, memory_order_relaxed))
    return false;
  return atomic_exchange_explicit(&loop->stop_requested, false,
                                  memory_order_acq_rel);
}

static int run_core(pts_loop *loop, pts_run_mode mode, bool honor_stop) {
  int ran = 0;
  loop->idle_period_this_run = false;
  loop->script_depth = 0; /* the loop's own steps: no script on the stack */
  for (;;) {
    /* Until-idle runs at most one idle period: an idle callback that
     * requests another must not keep the call from returning. */
    bool may_start_idle = mode != PTS_RUN_UNTIL_IDLE || !loop->idle_period_this_run;
    int did = step(loop, may_start_idle, mode != PTS_RUN_ONCE);
    if (did & DID_TASK) ran = 1;
    if (honor_stop && take_stop(loop)) break;
    if ((did & DID_TASK) && mode == PTS_RUN_ONCE) break;
    if (did) continue;
    if (mode == PTS_RUN_UNTIL_IDLE) {
      /* A producer between its two push steps: its command is about to
       * show up, so this is not idle yet. */
      if (pts__mpsc_is_empty(&loop->inbox)) break;
      continue;
    }
    sleep_until_work(loop);
  }
  loop->script_depth = 1;
  return ran;
}

bool pts__loop_enter_running(pts_loop *loop) {
  int expected = 0;
  /* acq_rel: a loop handed from one running thread to the next sees the
   * previous run's writes. */
  return atomic_compare_exchange_strong_explicit(
      &loop->running, &expected, 1, memory_order_acq_rel, memory_order_relaxed);
}

static void leave_running(pts_loop *loop) {
  atomic_store_explicit(&loop->running, 0, memory_order_release);
}

int pts_loop_run(pts_loop *loop, pts_run_mode mode) {
  if (loop == NULL || (unsigned)mode > PTS_RUN_FOREVER) return PTS_EINVAL;
  if (!pts__loop_enter_running(loop)) return PTS_EBUSY;
  atomic_store_explicit(&loop->owner, pts__loop_self_id(), memory_order_relaxed);
  int ran = take_stop(loop) ? 0 : run_core(loop, mode, true);
  pts__node_flush();
  atomic_store_explicit(&loop->owner, loop->bound, memory_order_relaxed);
  leave_running(loop);
  return ran;
}

int pts_loop_stop(pts_loop *loop) {
  if (loop == NULL) return PTS_EINVAL;
  atomic_store_explicit(&loop->stop_requested, true, memory_order_release);
  pts__loop_wake_owner(loop);
  return 0;
}

/* ---- driving the loop from a worker pool (agents/) ---- */

int pts__loop_pool_attach(pts_loop *loop, void (*wake)(void *ctx), void *ctx) {
  if (loop == NULL || wake == NULL) return PTS_EINVAL;
  /* Held for as long as the pool drives the loop: pts_loop_run, advance and
   * free from anywhere get PTS_EBUSY meanwhile. */
  if (!pts__loop_enter_running(loop)) return PTS_EBUSY;
  pts__loop_bind_thread(loop);
  atomic_store_explicit(&loop->wake_ctx, ctx, memory_order_relaxed);
  /* release: a producer that sees the hook sees its ctx (pts__loop_wake_owner). A
   * producer that pushed before this store unparked the parker instead; the
   * pool polls the loop once after attaching, so that command is not lost. */
  atomic_store_explicit(&loop->wake_fn, wake, memory_order_release);
  return 0;
}

void pts__loop_pool_detach(pts_loop *loop) {
  if (loop == NULL) return;
  atomic_store_explicit(&loop->wake_fn, NULL, memory_order_release);
  leave_running(loop); /* the owner stays this thread (bound) */
}

int pts__loop_poll(pts_loop *loop, bool leave_inbox) {
  if (leave_inbox && pts__mpsc_maybe_nonempty(&loop->inbox) && inbox_is_next(loop))
    return PTS__URGENCY_FIFO;
  loop->script_depth = 0; /* the loop's own steps, as in run_core */
  drain_inbox(loop, 0);
  pts__timers_fire_due(loop);
  if (loop->mt_head != NULL) pts__loop_checkpoint(loop);
  loop->script_depth = 1;
  if (loop->inbox_more) pts__loop_wake_owner(loop); /* protocol step 4 */
  return urgency_of(choose(loop, true, false).cls);
}

int pts__loop_poll_after_step(pts_loop *loop) {
  if (pts__mpsc_maybe_nonempty(&loop->inbox) || loop->heap.len != 0 || loop->mt_head != NULL)
    return pts__loop_poll(loop, false);
  /* Only scheduler tasks queued (the common case of a pool's loop): the
   * scheduler's next task is the choice (choose's first class that has
   * work, with no other class to compare it with). */
  if (loop->nready == 0 && loop->prov != NULL) {
    int prio;
    if (loop->prov_levels != NULL) { /* peek's answer, with no call */
      uint32_t levels = *loop->prov_levels;
      prio = levels != 0 ? 31 - __builtin_clz(levels) : -1;
    } else {
      uint64_t order;
      prio = loop->prov->peek(loop->prov_ctx, &order);
    }
    if (prio >= 0) return urgency_of_priority(prio);
  }
  return urgency_of(choose(loop, true, false).cls);
}

bool pts__loop_inbox_maybe_nonempty(pts_loop *loop) {
  return pts__mpsc_maybe_nonempty(&loop->inbox);
}

void pts__loop_set_command_runner(pts_loop *loop, pts__command_runner run) {
  loop->run_command = run;
}

int pts__loop_step(pts_loop *loop) {
  loop->script_depth = 0;
  int did = step(loop, true, false);
  loop->script_depth = 1;
  if (loop->inbox_more) pts__loop_wake_owner(loop); /* protocol step 4 */
  return (did & DID_TASK) ? 1 : 0;
}

uint32_t pts__loop_run_inbox(pts_loop *loop, uint32_t max, uint32_t *counts) {
  if (max == 0 || !pts__mpsc_maybe_nonempty(&loop->inbox) || !inbox_is_next(loop)) return 0;
  bool applied;
  loop->script_depth = 0;
  uint32_t n = inbox_run(loop, max, counts, &applied);
  /* A command applied instead: the rest follow it in the same pass, as in
   * a step (the pass's depth is a statistic of the agents layer). */
  if (n == 0 && applied) drain_inbox(loop, 1);
  loop->script_depth = 1;
  if (loop->inbox_more) pts__loop_wake_owner(loop); /* protocol step 4 */
  return n;
}

uint64_t pts__loop_next_deadline(pts_loop *loop) {
  return pts__timers_next_deadline(loop);
}

bool pts__loop_take_stop(pts_loop *loop) { return take_stop(loop); }

uint32_t pts__loop_take_drained_max(pts_loop *loop) {
  uint32_t n = loop->drained_max;
  loop->drained_max = 0;
  return n;
}

int pts__loop_last_urgency(const pts_loop *loop) { return urgency_of_pick(loop->last_pick); }

int pts_loop_advance(pts_loop *loop, uint64_t delta_ns) {
  if (loop == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(loop);
  if (!loop->virtual_clock) return PTS_EINVAL;
  if (!pts__loop_enter_running(loop)) return PTS_EBUSY;
  uint64_t target = pts__sat_add(loop->vnow, delta_ns);
  for (;;) {
    uint64_t d = pts__timers_next_deadline(loop);
    /* UINT64_MAX is "never" (a saturated delay), even at the end of time. */
    if (d == UINT64_MAX || d > target) break;
    if (d > loop->vnow) loop->vnow = d;
    run_core(loop, PTS_RUN_UNTIL_IDLE, false);
  }
  loop->vnow = target;
  run_core(loop, PTS_RUN_UNTIL_IDLE, false);
  leave_running(loop);
  return 0;
}
