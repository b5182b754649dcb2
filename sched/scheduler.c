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
 *
 * Files, cut along these seams (the structures and the hot path's inline
 * helpers, the selection heaps and the task blocks among them, are shared in
 * sched_impl.h):
 *  - scheduler.c (this file): the context, the schedulers and their
 *    globals (attach, activate, detach), the statistics;
 *  - state.c: scheduling states;
 *  - queues.c: scheduler task queues and the two maps, the heaps' room;
 *  - post.c: postTask and yield (steps 1-2);
 *  - run.c: the provider: selection and running (step 3), and the tasks
 *    the agents layer runs in place;
 *  - tasks.c: abort (step 4), cancellation, and the delay of step 1.
 */
#include <string.h>

#include "sched/sched_impl.h"

/* ---- the context ---- */

static void ctx_free_parts(sctx *c) {
  for (int ext = EXT_NONE; ext <= EXT_PROMISE; ext++) {
    while (c->tfree[ext] != NULL) {
      void *b = c->tfree[ext];
      c->tfree[ext] = *(void **)b;
      pts__loop_pool_free(c->loop, b, pts__sched_tblock_size(ext));
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
    c->fixed_state[p] = pts__sched_state_new(loop, NULL, c->fixed[p], true);
    if (!c->fixed_state[p]) {
      ctx_free_parts(c);
      return PTS_ENOMEM;
    }
  }
  int rc = pts__sched_heaps_reserve(c);
  if (rc == 0) rc = pts__loop_set_provider(loop, &pts__sched_provider_ops, c);
  if (rc == 0) pts__loop_set_provider_levels(loop, &c->bitmap);
  if (rc != 0) {
    ctx_free_parts(c);
    return rc;
  }
  pts__loop_set_idle_state_factory(loop, pts__sched_idle_state);
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
  pts__list_init(&s->queues);
  pts__list_init(&s->delayed);
  s->next = c->schedulers;
  c->schedulers = s;
  c->stats.schedulers++;
  *slot = s;
  return s;
}

/* ---- globals: activation and detach (the provider's global_changed) ---- */

/* Detach: every pending task is released (promises rejected, callbacks told
 * PTS_ECANCELED) and every queue freed. User callbacks run in the middle, so
 * each step starts again from the scheduler's lists. */
static void sched_release_all(pts_scheduler *s) {
  sctx *c = s->ctx;
  s->detached = true;
  while (!pts__list_empty(&s->delayed)) {
    delay_blk *d = container_of(pts__list_first(&s->delayed), delay_blk, link);
    stask *t = d->task;
    pts__sched_delay_drop(s, d, true);
    t->u.queue = NULL;
    pts__sched_task_cancel(c, t);
  }
  while (!pts__list_empty(&s->queues)) {
    squeue *q = container_of(pts__list_first(&s->queues), squeue, link);
    q->refs++; /* pinned while its tasks are released */
    pts__sched_queue_removal_steps(q);
    while (q->head) {
      stask *t = q->head;
      pts__sched_queue_unlink(q, t);
      pts__sched_task_cancel(c, t);
    }
    pts__sched_queue_unref(q);
  }
  pts__free(s->dyn);
  s->dyn = NULL;
  s->dyn_cap = s->dyn_count = 0;
}

static void set_active(pts_scheduler *s, bool active) {
  if (s->active == active) return;
  s->active = active;
  if (s->detached) return;
  pts__list_each(n, &s->queues) {
    squeue *q = container_of(n, squeue, link);
    if (!q->head) continue;
    if (active)
      pts__sched_heap_insert(s->ctx, q);
    else
      pts__sched_heap_remove(s->ctx, q);
  }
}

void pts__sched_global_changed(void *vc, pts_global *g, int what) {
  (void)vc;
  pts_scheduler *s = *pts__global_sched_slot(g);
  if (!s) return;
  if (what < 0)
    sched_release_all(s);
  else
    set_active(s, what != 0);
}

void pts__sched_ctx_destroy(void *vc) {
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

/* ---- statistics and limits (sched_internal.h) ---- */

int pts__sched_get_stats(pts_loop *loop, pts__sched_stats *out) {
  if (!loop || !out) return PTS_EINVAL;
  sctx *c = pts__loop_provider_ctx(loop);
  if (!c) {
    memset(out, 0, sizeof *out);
    return PTS_ENOTFOUND;
  }
  *out = c->stats;
  out->live_tasks = pts__sched_live_of(c);
  return 0;
}

bool pts__sched_has_static_queue(pts_scheduler *s, int priority, bool cont) {
  return pts__sched_valid_priority(priority) && s->static_q[priority][cont ? 1 : 0] != NULL;
}

uint32_t pts__sched_mapped_queues(pts_scheduler *s) {
  uint32_t n = 0;
  pts__list_each(l, &s->queues) n++;
  return n;
}

size_t pts__sched_task_size(int with_signal_or_promise) {
  return with_signal_or_promise ? sizeof(stask_ext) : sizeof(stask);
}

size_t pts__sched_state_size(void) { return sizeof(sstate); }

int pts__sched_set_task_limit(pts_loop *loop, uint64_t limit) {
  sctx *c;
  int rc = ctx_get(loop, &c);
  if (rc == 0) c->task_limit = limit;
  return rc;
}

uint64_t pts__sched_live_tasks(pts_loop *loop) {
  sctx *c = pts__loop_provider_ctx(loop);
  return c ? pts__sched_live_of(c) : 0;
}
