/* sched/run.c: the loop's task provider: the selection of the next
 * scheduler task queue across all schedulers of the loop (peek), and the
 * running of its head task (run_next, run_burst: step 3 of scheduler.c's
 * protocol of a task); and the tasks the agents layer runs in place, as if
 * queued and then selected (pts__scheduler_run_now, run_in, run_end).
 * run_one is the hot path: the helpers it calls are here or static in
 * sched_impl.h.
 */
#include "sched/sched_impl.h"

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
  if (!q->head) pts__sched_queue_removal_steps(q);
  pts__sched_queue_unref(q);
  if (--st->hdr.refs == 0) pts__sched_state_destroy(&st->hdr);
  pts__sched_live_add(c, -1);
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
      pts__promise_settle_result(pts__sched_task_promise(t), v);
      pts__loop_swap_state(loop, prev);
      break;
    }
    default: /* K_YIELD_PROMISE: spec: resolve result. */
      pts__promise_settle_result(pts__sched_task_promise(t), pts_undefined());
      break;
  }
  /* spec: task complete steps */
  if (t->state->abort)
    pts__signal_remove_abort_algo(t->state->abort, &pts__sched_ext_of(t)->abort_algo);
  if (!q->head) pts__sched_queue_removal_steps(q);
  t->status = S_DONE;
  pts__sched_task_free(c, t);
}

/* Selects and runs the most urgent task. Returns 1 + its effective
 * priority, or 0 when no queue has a task. */
static inline __attribute__((always_inline)) int run_one(sctx *c) {
  if (!c->bitmap) return 0;
  int l = 31 - __builtin_clz(c->bitmap);
  squeue *q = c->levels[l].a[0].q;
  stask *t = q->head;
  pts_loop *loop = c->loop;
  pts__sched_queue_pop_head(c, q, t);
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
    pts__sched_tblock_put(c, t, EXT_NONE);
  } else if (t->ext == EXT_PROMISE) {
    prev = pts__loop_swap_state(loop, &t->state->hdr);
    pts__script_enter(loop);
    pts_value v = t->f.cb(t->data, 0);
    pts__script_leave(loop); /* spec: before result is resolved */
    pts__promise_settle_result(pts__sched_task_promise(t), v);
    pts__loop_swap_state(loop, prev);
    fast_task_done(c, q, t->state);
    if (pts__promise_drop_embedded(pts__sched_task_promise(t)))
      pts__sched_tblock_put(c, t, EXT_PROMISE);
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

/* The scheduler as the loop's task provider (loop_internal.h), installed
 * with the context (scheduler.c). */
const pts__provider_ops pts__sched_provider_ops = {
    .peek = peek,
    .run_next = run_next,
    .run_burst = run_burst,
    .global_changed = pts__sched_global_changed,
    .destroy = pts__sched_ctx_destroy,
};

/* ---- tasks run in place (the agents layer; sched_internal.h) ---- */

bool pts__scheduler_may_run_now(const pts_scheduler *s) {
  return !s->detached && s->active && s->ctx->bitmap == 0;
}

void pts__scheduler_run_end(pts__sched_run *run) {
  if (run->priority < 0) return;
  sctx *c = run->s->ctx;
  sstate *st = run->state;
  pts__loop_swap_state(c->loop, run->prev);
  pts__sched_live_add(c, -1);
  run->priority = -1;
  if (--st->hdr.refs == 0) pts__sched_state_destroy(&st->hdr);
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
    pts__sched_live_add(c, 1);
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

