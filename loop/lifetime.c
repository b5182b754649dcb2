/* loop/lifetime.c: a loop's creation and its shutdown protocol (loop.c),
 * and its globals: made, detached, made active or inactive. Owner
 * thread. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "loop/loop_impl.h"
#include "sync/alloc.h"
#include "sync/intrusive.h"
#include "sync/nodecache.h"

/* ---- loop lifetime ---- */

/* Shutdown step 2: every command still in the inbox is released. */
void pts__loop_cancel_inbox(pts_loop *loop) {
  /* A producer between its two push steps is a caller's bug at free time
   * (the loop must outlive the call); wait it out rather than lose it. */
  while (!pts__mpsc_is_empty(&loop->inbox)) {
    pts__mpsc_node *n = pts__mpsc_pop(&loop->inbox);
    if (n == NULL) continue;
    pts__command *c = container_of(n, pts__command, node);
    c->type->apply(c, PTS_ECANCELED);
  }
}

int pts_loop_new(const pts_loop_options *opts, pts_loop **out) {
  if (out == NULL) return PTS_EINVAL;
  pts_loop *l;
  /* Cache-line aligned: the inbox and parker are padded to lines. */
  if ((l = pts__aligned_alloc(64, sizeof *l)) == NULL) return PTS_ENOMEM;
  memset(l, 0, sizeof *l);
  pts__mpsc_init(&l->inbox);
  pts__parker_init(&l->parker);
  atomic_init(&l->stop_requested, false);
  atomic_init(&l->running, 0);
  atomic_init(&l->wake_fn, NULL);
  atomic_init(&l->wake_ctx, NULL);
  l->bound = pts__loop_self_id();
  atomic_init(&l->owner, l->bound);
  l->virtual_clock = opts ? opts->virtual_clock : false;
  l->starvation_limit = opts ? opts->starvation_limit : 0;
  l->stream_seen = false; /* no stream seen (inbox_next) */
  l->stream_wait = PTS__STREAM_WAIT_MIN;
  l->next_order = 1; /* spec: next enqueue order is initialized to 1 */
  l->quota.byte_limit = UINT64_MAX;
  l->script_depth = 1; /* outside a run, the caller is script */
  l->timer_seq = 1;
  l->next_id = 1;
  l->idle_seq = 1;
  pts__list_init(&l->ready);
  pts__list_init(&l->live);
  pts__list_init(&l->swept);
  l->default_global = pts__loop_global_create(l);
  if (l->default_global == NULL) {
    pts__free(l);
    return PTS_ENOMEM;
  }
  *out = l;
  return 0;
}

pts_global *pts_loop_default_global(pts_loop *loop) {
  return loop ? loop->default_global : NULL;
}

static void release_global_work(pts_global *g) {
  pts__loop_release_tasks(g);
  pts__timers_release_global(g);
  pts__idle_release_global(g);
}

static int loop_free(pts_loop *loop, bool (*done)(void *ctx), void *ctx);

int pts_loop_free(pts_loop *loop) {
  if (loop == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(loop);
  return loop_free(loop, NULL, NULL);
}

int pts__loop_free_when(pts_loop *loop, bool (*done)(void *ctx), void *ctx) {
  if (loop == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(loop);
  return loop_free(loop, done, ctx);
}

static int loop_free(pts_loop *loop, bool (*done)(void *ctx), void *ctx) {
  if (!pts__loop_enter_running(loop)) return PTS_EBUSY;
  loop->closing = true;
  do pts__loop_cancel_inbox(loop);
  while (done != NULL && !done(ctx));
  if (loop->prov != NULL && loop->prov->destroy != NULL)
    loop->prov->destroy(loop->prov_ctx);
  for (pts_global *g = loop->globals; g != NULL; g = g->next) {
    g->detached = true;
    pts__loop_ready_update(g);
    release_global_work(g);
  }
  do {
    pts__loop_cancel_inbox(loop);
    pts__loop_cancel_microtasks(loop);
    pts__promises_sweep(loop);
  } while (loop->mt_head != NULL || !pts__mpsc_is_empty(&loop->inbox));
  while (loop->globals != NULL) {
    pts_global *g = loop->globals;
    loop->globals = g->next;
    pts__free(g);
  }
  pts__timer_heap_free(&loop->heap);
  pts__idmap_free(&loop->ids);
  pts__loop_pool_release_all(loop);
  pts__free(loop);
  return 0;
}

/* ---- globals ---- */

int pts_global_new(pts_loop *loop, pts_global **out) {
  if (loop == NULL || out == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(loop);
  if (loop->closing) return PTS_ECLOSED;
  pts_global *g = pts__loop_global_create(loop);
  if (g == NULL) return PTS_ENOMEM;
  *out = g;
  return 0;
}

int pts_global_detach(pts_global *global) {
  if (global == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(global->loop);
  if (global->detached) return 0;
  global->detached = true;
  pts__loop_ready_update(global);
  pts_loop *loop = global->loop;
  if (loop->prov != NULL && loop->prov->global_changed != NULL)
    loop->prov->global_changed(loop->prov_ctx, global, -1);
  release_global_work(global);
  return 0;
}

int pts_global_set_active(pts_global *global, bool active) {
  if (global == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(global->loop);
  if (global->detached) return PTS_ECLOSED;
  if (global->active == active) return 0;
  if (active) {
    /* Room for every paused timer first, so resuming cannot fail half-way. */
    int rc = pts__timer_heap_reserve(&global->loop->heap,
                                     (uint64_t)global->loop->heap.len +
                                         global->ntimers);
    if (rc != 0) return rc;
    global->active = true;
    pts__timers_resume_global(global);
  } else {
    global->active = false;
    pts__timers_pause_global(global);
  }
  pts__loop_ready_update(global);
  pts_loop *loop = global->loop;
  if (loop->prov != NULL && loop->prov->global_changed != NULL)
    loop->prov->global_changed(loop->prov_ctx, global, active ? 1 : 0);
  return 0;
}

bool pts_global_is_active(const pts_global *global) {
  return global != NULL && global->active && !global->detached;
}

bool pts_global_is_detached(const pts_global *global) {
  return global != NULL && global->detached;
}

pts_loop *pts_global_loop(const pts_global *global) {
  return global ? global->loop : NULL;
}
