/* loop/microtask.c: the microtask queue and its checkpoint, "clean up
 * after running script" (loop_internal.h), queueMicrotask, and the
 * current scheduling state the loop keeps for the scheduler. Owner
 * thread. */
#include <stdlib.h>

#include "loop/loop_impl.h"
#include "sync/alloc.h"
#include "sync/intrusive.h"

/* ---- microtasks ---- */

void pts__loop_queue_microtask_node(pts_loop *loop, pts__microtask *mt) {
  mt->next = NULL;
  if (loop->mt_tail)
    loop->mt_tail->next = mt;
  else
    loop->mt_head = mt;
  loop->mt_tail = mt;
}

static pts__microtask *mt_pop(pts_loop *loop) {
  pts__microtask *mt = loop->mt_head;
  if (mt) {
    loop->mt_head = mt->next;
    if (loop->mt_head == NULL) loop->mt_tail = NULL;
  }
  return mt;
}

/* spec (HTML): perform a microtask checkpoint. Drains the queue, including
 * microtasks queued while it drains; not re-entrant. */
__attribute__((noinline)) void pts__loop_checkpoint(pts_loop *loop) {
  if (loop->in_checkpoint) return;
  loop->in_checkpoint = true;
  pts__microtask *mt;
  while ((mt = mt_pop(loop)) != NULL) mt->run(mt, 0);
  loop->in_checkpoint = false;
}

void pts__loop_perform_checkpoint(pts_loop *loop) {
  if (loop->mt_head != NULL) pts__loop_checkpoint(loop);
}

void pts__script_enter(pts_loop *loop) { loop->script_depth++; }

void pts__script_leave(pts_loop *loop) {
  if (--loop->script_depth == 0 && loop->mt_head != NULL) pts__loop_checkpoint(loop);
}

uint32_t pts__script_suspend(pts_loop *loop) {
  uint32_t depth = loop->script_depth;
  loop->script_depth = 0;
  return depth;
}

void pts__script_resume(pts_loop *loop, uint32_t depth) { loop->script_depth = depth; }

void pts__loop_cancel_microtasks(pts_loop *loop) {
  pts__microtask *mt;
  while ((mt = mt_pop(loop)) != NULL) mt->run(mt, PTS_ECANCELED);
}

typedef struct qmt {
  pts__microtask mt;
  pts_loop *loop;
  pts_task_fn fn;
  void *data;
  pts_sched_state *state; /* captured at queueMicrotask (HostMakeJobCallback) */
} qmt;

static void qmt_run(pts__microtask *mt, int status) {
  qmt *q = (qmt *)mt;
  pts_loop *loop = q->loop;
  pts_task_fn fn = q->fn;
  void *data = q->data;
  pts_sched_state *state = q->state;
  pts__loop_pool_free(loop, q, sizeof *q);
  if (status == 0) {
    /* HostCallJobCallback: the captured state is current while it runs,
     * then null (spec section 4). */
    pts__loop_swap_state(loop, state);
    fn(data, 0);
    pts__loop_swap_state(loop, NULL);
  } else {
    fn(data, status);
  }
  pts__state_unref(state);
}

/* The current scheduling state. An idle callback runs with the background
 * state (spec section 4), but the scheduler that makes it may be created only
 * inside the callback: then the state is made here, on first read. */
static pts_sched_state *current_state(pts_loop *loop) {
  if (loop->cur_state == NULL && loop->idle_state_wanted &&
      loop->idle_state_factory != NULL) {
    loop->idle_state_made = loop->idle_state_factory(loop);
    loop->cur_state = loop->idle_state_made;
  }
  return loop->cur_state;
}

int pts_queue_microtask(pts_loop *loop, pts_task_fn fn, void *data) {
  if (loop == NULL || fn == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(loop);
  if (loop->closing) return PTS_ECLOSED;
  qmt *q = pts__loop_pool_alloc(loop, sizeof *q);
  if (q == NULL) return pts__enomem();
  q->mt.run = qmt_run;
  q->loop = loop;
  q->fn = fn;
  q->data = data;
  q->state = pts__state_ref(current_state(loop));
  pts__loop_queue_microtask_node(loop, &q->mt);
  return 0;
}

/* ---- scheduling state ---- */

void pts__state_unref(pts_sched_state *s) {
  if (s != NULL && --s->refs == 0 && s->destroy != NULL) s->destroy(s);
}

void pts_sched_state_unref(pts_sched_state *state) { pts__state_unref(state); }

pts_sched_state *pts__loop_current_state(pts_loop *loop) { return current_state(loop); }

pts_sched_state *pts__loop_swap_state(pts_loop *loop, pts_sched_state *state) {
  pts_sched_state *prev = loop->cur_state;
  loop->cur_state = state;
  return prev;
}

pts_sched_state *pts_loop_capture_state(pts_loop *loop) {
  if (loop == NULL || pts__loop_foreign(loop, __func__)) return NULL;
  return pts__state_ref(current_state(loop));
}

void pts_loop_enter_state(pts_loop *loop, pts_sched_state *state) {
  if (loop == NULL || pts__loop_foreign(loop, __func__)) return;
  loop->cur_state = state;
}

void pts_loop_leave_state(pts_loop *loop) {
  if (loop == NULL || pts__loop_foreign(loop, __func__)) return;
  loop->cur_state = NULL;
}

void pts__loop_set_idle_state_factory(pts_loop *loop,
                                      pts_sched_state *(*make)(pts_loop *)) {
  loop->idle_state_factory = make;
}

/* ---- provider ---- */

int pts__loop_set_provider(pts_loop *loop, const pts__provider_ops *ops,
                           void *ctx) {
  if (loop == NULL || ops == NULL || ops->peek == NULL || ops->run_next == NULL ||
      ops->run_burst == NULL)
    return PTS_EINVAL;
  if (loop->prov != NULL) return PTS_EBUSY;
  loop->prov = ops;
  loop->prov_ctx = ctx;
  return 0;
}

void pts__loop_set_provider_levels(pts_loop *loop, const uint32_t *levels) {
  loop->prov_levels = levels;
}

void *pts__loop_provider_ctx(pts_loop *loop) { return loop->prov_ctx; }

void **pts__global_sched_slot(pts_global *g) { return &g->sched_slot; }
