/* sched/post.c: postTask and yield (spec section 2, "schedule a postTask
 * task", "schedule a yield continuation"; steps 1-2 of scheduler.c's
 * protocol of a task): the options are checked, the state computed, the
 * handle made and either enqueued or delayed. post_fixed is the hot path
 * (no signal, no delay: the cached state, a block from the context's free
 * list, an append to a queue already in the selection); everything else
 * takes post_common, yield_common or post_fixed_general. Also the
 * cross-thread post's form with the handle in the caller's slot
 * (pts__scheduler_post_in).
 */
#include "sched/sched_impl.h"

/* WebIDL [EnforceRange] unsigned long long: at most 2^53 - 1. */
#define MAX_SAFE_INTEGER 9007199254740991LL

/* spec: create a task handle, for the paths that may wait or fail before
 * they enqueue (post_common, yield_common; post_fixed fills its own). */
static inline __attribute__((always_inline)) stask *task_alloc(
    sctx *c, int kind, bool ext, void *fn, void *data, sstate *st) {
  stask *t = pts__sched_tblock_get(c, ext);
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
    stask_ext *e = pts__sched_ext_of(t);
    pts__algo_init(&e->abort_algo, pts__sched_on_abort);
    e->promise = NULL;
  }
  pts__sched_live_add(c, 1);
  return t;
}

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
    q = pts__sched_select_queue(s, t->state->prio, cont);
    if (!q) {
      rc = pts__enomem();
      goto fail;
    }
  }
  if (t->kind == K_POST_PROMISE || t->kind == K_YIELD_PROMISE) {
    rc = pts_promise_new(loop, &pts__sched_ext_of(t)->promise);
    if (rc != 0) goto fail;
  }
  if (d) {
    pts__timer_init(&d->timer, s->global, pts__sched_on_delay, d);
    uint64_t ns = delay_ms > UINT64_MAX / 1000000u ? UINT64_MAX
                                                   : delay_ms * 1000000u;
    rc = pts__timer_start(&d->timer, ns);
    if (rc != 0) goto fail;
    d->task = t;
    d->sched = s;
    pts__list_prepend(&s->delayed, &d->link);
    c->stats.delayed_tasks++;
    t->u.delay = d;
    t->status = S_DELAYED;
  }
  if (out) {
    pts_promise_ref(pts__sched_ext_of(t)->promise);
    *out = pts__sched_ext_of(t)->promise;
  }
  /* spec: add the handle's abort steps to signal */
  if (t->state->abort)
    pts__signal_add_abort_algo(t->state->abort, &pts__sched_ext_of(t)->abort_algo);
  if (q) pts__sched_enqueue_task(c, q, t);
  return 0;
fail:
  if (d) pts__loop_pool_free(loop, d, sizeof *d);
  if (q) pts__sched_queue_discard_if_unused(q);
  t->status = S_DONE;
  pts__sched_task_free(c, t);
  return rc;
}

/* A new task would pass the loop's task limit: the call fails (counted in
 * the loop's refusals). */
static bool over_task_limit(sctx *c) {
  if (pts__sched_live_of(c) < c->task_limit) return false;
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
    if (priority != PTS_PRIORITY_UNSET && !pts__sched_valid_priority(priority))
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
    int rc = pts__sched_compute_state(c, OPT_GIVEN, signal, priority, &st);
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

/* Fills a fixed-priority handle: what pts__sched_enqueue_task does not set (task_alloc
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
  pts__sched_live_add(c, 1);
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

/* The checks of a fixed-priority post that may allocate (a detached
 * scheduler, the task limit), then the static queue of priority p for its
 * handle, made if the scheduler has none; NULL with *rc set (PTS_ECLOSED:
 * detached; PTS_EQUOTA; PTS_ENOMEM). */
static squeue *fixed_queue(pts_scheduler *s, int p, int *rc) {
  *rc = PTS_ECLOSED;
  if (s->detached) return NULL;
  *rc = PTS_EQUOTA;
  if (over_task_limit(s->ctx)) return NULL;
  squeue *q = s->static_q[p][0];
  if (!q && (q = pts__sched_queue_new(s, p, 0, NULL)) == NULL) *rc = PTS_ENOMEM;
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
  squeue *q = fixed_queue(s, p, &rc);
  if (!q) return rc;
  stask *t = pts__sched_tblock_get(c, kind == K_POST_PROMISE ? EXT_PROMISE : EXT_NONE);
  if (!t) {
    pts__sched_queue_discard_if_unused(q);
    return pts__enomem();
  }
  fixed_handle_fill(c, t, kind, fn, data, p, out);
  pts__sched_enqueue_task(c, q, t);
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
      pts__sched_live_of(c) >= c->task_limit ||
      atomic_load_explicit(&pts__alloc_armed, memory_order_relaxed))
    return post_fixed_general(s, kind, fn, data, p, out);
  c->tfree[ext] = *(void **)t;
  fixed_handle_fill(c, t, kind, fn, data, p, out);
  /* pts__sched_enqueue_task, appending to a queue that is not empty */
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
  if (!pts__sched_valid_priority(p)) return PTS_ETYPE;
  sctx *c = s->ctx;
  PTS__CHECK_OWNER(c->loop);
  int rc;
  squeue *q = fixed_queue(s, p, &rc);
  if (!q) return rc;
  stask *t = (stask *)(void *)slot;
  fixed_handle_fill(c, t, K_POST_CB, (void *)fn, data, p, NULL);
  t->ext = EXT_CALLER;
  pts__sched_enqueue_task(c, q, t);
  return 0;
}

/* The options of a call that can take post_fixed: sets *p and returns 1;
 * returns 0 for the general path, or a PTS_ETYPE for a bad priority. */
static inline int fixed_priority_of(const pts_post_options *opts, int *p) {
  *p = PTS_PRIORITY_USER_VISIBLE;
  if (!opts) return 1;
  if (opts->signal || opts->delay_ms != 0) return 0;
  if (opts->priority == PTS_PRIORITY_UNSET) return 1;
  if (!pts__sched_valid_priority(opts->priority)) return PTS_ETYPE;
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

int pts_scheduler_post_task_cb(pts_scheduler *s, pts_task_fn fn, void *data,
                               const pts_post_options *opts) {
  if (!s || !fn) return PTS_EINVAL;
  int p, fixed = fixed_priority_of(opts, &p);
  if (fixed == 1) return post_fixed(s, K_POST_CB, (void *)fn, data, p, NULL);
  if (fixed < 0) return fixed;
  return post_common(s, K_POST_CB, (void *)fn, data, opts, NULL);
}

/* The 5.0 name (scheduler.h): the same function's entry, not a wrapper. */
int pts_scheduler_post(pts_scheduler *s, pts_task_fn fn, void *data,
                       const pts_post_options *opts)
    __attribute__((alias("pts_scheduler_post_task_cb")));

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
        !pts__sched_valid_priority(priority))
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
  int rc = pts__sched_compute_state(c, signal_mode, signal, priority, &st);
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

