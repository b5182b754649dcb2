/* sched/tasks.c: a task handle's life outside a queue and the ends of it
 * other than running (scheduler.c's protocol of a task, the delay of step 1
 * and step 4): its postTask delay (the timer and its completion steps), its
 * abort steps, and its cancellation when its global goes away or the loop
 * is freed. A handle that does not run has its callback told exactly once,
 * with the status it never ran for (invariant 2). The handle's blocks and
 * its free are inline in sched_impl.h: the post and run paths use them.
 */
#include "sched/sched_impl.h"

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

/* Stops and frees a pending delay. */
void pts__sched_delay_drop(pts_scheduler *s, delay_blk *d, bool stop_timer) {
  if (stop_timer) pts__timer_stop(&d->timer);
  pts__list_remove(&d->link);
  s->ctx->stats.delayed_tasks--;
  pts__loop_pool_free(s->ctx->loop, d, sizeof *d);
}

/* A task that will never run because its global went away (or the loop is
 * being freed): not in any queue or delay any more. */
void pts__sched_task_cancel(sctx *c, stask *t) {
  if (t->state->abort)
    pts__signal_remove_abort_algo(t->state->abort, &pts__sched_ext_of(t)->abort_algo);
  pts_promise *p = pts__sched_task_promise(t);
  if (p) pts_promise_reject(p, pts_error_value(PTS_ECANCELED, "global detached"));
  t->status = S_DONE;
  if (t->ext == EXT_CALLER) {
    /* The callback may free the slot: the handle goes first, and the
     * callback is told from a copy. */
    stask copy = *t;
    pts__sched_task_free(c, t);
    notify_not_run(c, &copy, PTS_ECANCELED);
    return;
  }
  notify_not_run(c, t, PTS_ECANCELED);
  pts__sched_task_free(c, t);
}

/* The abort steps of a task still in its delay: task is null, no queue
 * yet. The timer goes now (no memory is held for aborted work). Out of
 * line, as the heap's sift (sched_impl.h): inlined, their registers cost
 * every abort of a queued task a push and a pop. */
static __attribute__((noinline)) void abort_delayed(stask *t) {
  delay_blk *d = t->u.delay;
  pts_scheduler *s = d->sched;
  sctx *c = s->ctx;
  pts__sched_delay_drop(s, d, true);
  t->status = S_DONE;
  t->u.queue = NULL;
  notify_not_run(c, t, PTS_EABORT);
  pts__sched_task_free(c, t);
}

/* spec: the task handle's abort steps. */
void pts__sched_on_abort(pts__algo *a) {
  stask_ext *e = container_of(a, stask_ext, abort_algo);
  stask *t = &e->t;
  pts_signal *signal = t->state->abort;
  pts__signal_remove_abort_algo(signal, a);
  /* 1. Reject result with signal's abort reason. */
  if (e->promise)
    pts_promise_reject(e->promise, pts_value_copy(pts_signal_reason(signal)));
  switch (t->status) {
    case S_DELAYED:
      abort_delayed(t);
      return;
    case S_QUEUED: {
      /* 2. Remove task from queue; if empty, the queue's removal steps. */
      squeue *q = t->u.queue;
      sctx *c = q->sched->ctx;
      pts__sched_queue_unlink(q, t);
      if (!q->head) pts__sched_queue_removal_steps(q);
      t->status = S_DONE;
      notify_not_run(c, t, PTS_EABORT);
      pts__sched_task_free(c, t);
      return;
    }
    case S_RUNNING: {
      /* The task was already removed when it started; the queue may be empty
       * now. The callback is running: it is not called again. */
      squeue *q = t->u.queue;
      if (!q->head) pts__sched_queue_removal_steps(q);
      return;
    }
    default:
      return;
  }
}

/* The delay's completion steps (spec: schedule a postTask task, step 9). */
void pts__sched_on_delay(void *data, int status) {
  delay_blk *d = data;
  stask *t = d->task;
  pts_scheduler *s = d->sched;
  sctx *c = s->ctx;
  pts__sched_delay_drop(s, d, false);
  t->u.queue = NULL;
  if (status != 0 || s->detached) {
    pts__sched_task_cancel(c, t);
    return;
  }
  /* An abort would have stopped this timer: the signal is not aborted. */
  squeue *q = pts__sched_select_queue(s, t->state->prio, 0);
  if (!q) {
    pts__sched_task_cancel(c, t);
    return;
  }
  pts__sched_enqueue_task(c, q, t);
}
