/* loop/idle.c: idle callbacks (W3C requestIdleCallback) on the loop.
 *
 * Each global keeps its pending callbacks in request order (seq). An idle
 * period starts when the loop has nothing else runnable: it takes a snapshot
 * (callbacks with seq < idle_limit may run in it; ones requested during it
 * wait for the next period, spec: "start an idle period") and a deadline of
 * min(now + 50 ms, next timer deadline). One callback runs per loop
 * iteration, as a task, while nothing else is runnable and the deadline has
 * not passed. A timeout queues a task on the global's generic source that
 * runs the callback with didTimeout = true if it is still pending (spec:
 * invoke idle callback timeout algorithm).
 *
 * Invariant: a request is on its global's list until it runs, is cancelled
 * or is released; exactly one of those calls (or skips, for cancel) fn.
 */
#include <stdlib.h>

#include "loop/loop_impl.h"
#include "sync/intrusive.h"

/* spec (requestIdleCallback): the 50 ms cap of an idle period. */
#define IDLE_PERIOD_MAX_NS (50u * 1000000u)

struct pts__idle_req {
  pts__idnode idn;
  pts__list link; /* on the global's list, FIFO */
  uint64_t seq;
  pts_idle_fn fn;
  void *data;
  bool has_timeout;     /* the timeout timer or its task is pending */
  bool timeout_queued;  /* ...and it is the task (u.task) */
  union {
    pts__timer timer;
    pts__task task;
  } u;
};

struct pts_idle_deadline {
  pts_loop *loop;
  uint64_t deadline;
  bool did_timeout;
};

static uint64_t ms_to_ns(uint64_t ms) {
  return ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u;
}

static void unlink_req(pts__idle_req *r) {
  pts_global *g = r->idn.global;
  pts__list_remove(&r->link);
  g->nidle--;
  g->loop->nidle--;
  pts__idmap_del(&g->loop->ids, r->idn.id);
}

static void stop_timeout(pts__idle_req *r) {
  if (!r->has_timeout) return;
  if (r->timeout_queued)
    pts__task_dequeue(&r->u.task);
  else
    pts__timer_stop(&r->u.timer);
  r->has_timeout = false;
}

/* Calls fn with the idle scheduling state current (spec section 4 patch of
 * "invoke idle callbacks"), then frees the request. r is already unlinked. */
static void invoke(pts__idle_req *r, uint64_t deadline, bool did_timeout) {
  pts_loop *loop = r->idn.global->loop;
  pts_idle_fn fn = r->fn;
  void *data = r->data;
  pts__loop_pool_free(loop, r, sizeof *r);
  pts_idle_deadline dl = {loop, deadline, did_timeout};
  pts_sched_state *state =
      loop->idle_state_factory ? loop->idle_state_factory(loop) : NULL;
  pts_sched_state *prev = pts__loop_swap_state(loop, state);
  loop->idle_state_wanted = state == NULL; /* made on first read if needed */
  pts__script_enter(loop);
  fn(data, 0, &dl);
  /* Not past the callback: a microtask with no state must not get one. */
  loop->idle_state_wanted = false;
  pts__script_leave(loop); /* its microtasks, with the idle state current */
  pts__loop_swap_state(loop, prev);
  pts__state_unref(state);
  pts__state_unref(loop->idle_state_made);
  loop->idle_state_made = NULL;
}

static void timeout_task(void *d, int status) {
  pts__idle_req *r = d;
  r->has_timeout = false;
  /* Released with its global: the idle list release calls fn once. */
  if (status != 0) return;
  unlink_req(r);
  uint64_t now = pts__loop_now_ns(r->idn.global->loop);
  invoke(r, now, true);
}

static void timeout_expired(void *d, int status) {
  pts__idle_req *r = d;
  if (status != 0) {
    r->has_timeout = false;
    return;
  }
  pts__task_init(&r->u.task, r->idn.global, timeout_task, r);
  r->timeout_queued = true;
  if (pts__task_queue(&r->u.task, PTS_SOURCE_GENERIC) != 0) r->has_timeout = false;
}

int pts_request_idle_callback(pts_global *global, pts_idle_fn fn, void *data,
                              uint64_t timeout_ms, uint64_t *id) {
  if (global == NULL || fn == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(global->loop);
  if (global->detached) return PTS_ECLOSED;
  pts_loop *loop = global->loop;
  pts__idle_req *r = pts__loop_pool_alloc(loop, sizeof *r);
  if (r == NULL) return pts__enomem();
  r->idn.id = loop->next_id++;
  r->idn.kind = IDNODE_IDLE;
  r->idn.global = global;
  r->fn = fn;
  r->data = data;
  r->has_timeout = false;
  r->timeout_queued = false;
  int rc = pts__idmap_put(&loop->ids, &r->idn);
  if (rc == 0 && timeout_ms != 0) {
    pts__timer_init(&r->u.timer, global, timeout_expired, r);
    rc = pts__timer_start(&r->u.timer, ms_to_ns(timeout_ms));
    if (rc != 0)
      pts__idmap_del(&loop->ids, r->idn.id);
    else
      r->has_timeout = true;
  }
  if (rc != 0) {
    pts__loop_pool_free(loop, r, sizeof *r);
    return rc;
  }
  r->seq = loop->idle_seq++;
  pts__list_append(&global->idle, &r->link);
  global->nidle++;
  loop->nidle++;
  if (id != NULL) *id = r->idn.id;
  return 0;
}

int pts_cancel_idle_callback(pts_global *global, uint64_t id) {
  if (global == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(global->loop);
  pts__idnode *n = pts__idmap_get(&global->loop->ids, id);
  if (n == NULL || n->kind != IDNODE_IDLE || n->global != global)
    return PTS_ENOTFOUND;
  pts__idle_req *r = container_of(n, pts__idle_req, idn);
  stop_timeout(r);
  unlink_req(r);
  pts__loop_pool_free(global->loop, r, sizeof *r);
  return 0;
}

uint64_t pts_idle_time_remaining(const pts_idle_deadline *deadline) {
  if (deadline == NULL || deadline->did_timeout) return 0;
  uint64_t now = pts__loop_now_ns(deadline->loop);
  return deadline->deadline > now ? deadline->deadline - now : 0;
}

bool pts_idle_did_timeout(const pts_idle_deadline *deadline) {
  return deadline != NULL && deadline->did_timeout;
}

/* The oldest pending callback of an active global with seq < limit. Looks
 * at each global's head only. */
static pts__idle_req *candidate(pts_loop *loop, uint64_t limit) {
  pts__idle_req *best = NULL;
  for (pts_global *g = loop->globals; g != NULL; g = g->next) {
    pts__list *first = pts__list_first(&g->idle);
    if (first == NULL || !g->active || g->detached) continue;
    pts__idle_req *r = container_of(first, pts__idle_req, link);
    if (r->seq >= limit) continue;
    if (best == NULL || r->seq < best->seq) best = r;
  }
  return best;
}

bool pts__idle_runnable(pts_loop *loop, bool may_start_period) {
  if (loop->nidle == 0) return false;
  uint64_t now = pts__loop_now_ns(loop);
  if (loop->idle_period) {
    if (now < loop->idle_deadline && candidate(loop, loop->idle_limit)) return true;
    loop->idle_period = false; /* over: its deadline passed or it ran out */
  }
  if (!may_start_period || candidate(loop, UINT64_MAX) == NULL) return false;
  /* spec: start an idle period. */
  uint64_t deadline = pts__sat_add(now, IDLE_PERIOD_MAX_NS);
  uint64_t next_timer = pts__timers_next_deadline(loop);
  if (next_timer < deadline) deadline = next_timer;
  loop->idle_period = true;
  loop->idle_limit = loop->idle_seq;
  loop->idle_deadline = deadline;
  loop->idle_period_this_run = true;
  return true;
}

void pts__idle_run_one(pts_loop *loop) {
  pts__idle_req *r = candidate(loop, loop->idle_limit);
  if (r == NULL) return;
  stop_timeout(r);
  unlink_req(r);
  invoke(r, loop->idle_deadline, false);
}

void pts__idle_release_global(pts_global *g) {
  while (!pts__list_empty(&g->idle)) {
    pts__idle_req *r = container_of(pts__list_first(&g->idle), pts__idle_req, link);
    stop_timeout(r);
    unlink_req(r);
    pts_idle_fn fn = r->fn;
    void *data = r->data;
    pts__loop_pool_free(g->loop, r, sizeof *r);
    fn(data, PTS_ECANCELED, NULL);
  }
}
