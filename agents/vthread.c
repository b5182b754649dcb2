/* agents/vthread.c: the virtual pool thread of the security study
 * (agents/study.h): the worker loop itself (worker.c, pts__worker_loop),
 * run on the calling thread over real loops with its clock replaced by a
 * cost model.
 *
 * What this file adds to the worker loop, through its hooks (w->vt): the
 * clock (virtual time); a step's cost (step_overhead_ns plus what the task
 * charged, charged to the clock when the step ends); idling as a jump to
 * the next time that can change the pick; the harness's events, called
 * between steps at the times they ask for, after which every loop is
 * polled (the harness posts into them directly, not through their inboxes).
 * The worker's choices follow from its own rules: a virtual clock is free
 * to read, so every step is timed exactly (no rounds), and no loop runs
 * bursts alone (the harness may post between any two steps). Nothing here
 * reads a real clock, so two runs with the same inputs take the same
 * decisions and produce the same traces, bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "agents/agents_impl.h"
#include "sync/alloc.h"

struct pts__vthread {
  pts_pool pool; /* only opts and q are used (the worker and policy.c read them) */
  pts__worker *w;
  pts_agent **agents;
  uint64_t *busy;
  uint32_t cap;
  uint64_t now, overhead, end;
  /* The running step: its start (its task's charges move now). */
  bool in_step;
  uint64_t step_start;
  pts__vthread_event_fn ev;
  void *ev_ctx;
  uint64_t next_ev;
};

static _Thread_local pts__vthread *tls_vt;

static void wake_noop(void *ctx) { (void)ctx; }

int pts__vthread_new(const pts__vthread_options *opts, pts__vthread **out) {
  if (opts == NULL || out == NULL) return PTS_EINVAL;
  if ((unsigned)opts->policy >= PTS_POLICY_COUNT) return PTS_EINVAL;
  if (opts->quant.frame_slots > PTS__Q_MAX_SLOTS) return PTS_EINVAL;
  pts__vthread *t = pts__calloc(1, sizeof *t);
  if (t == NULL) return PTS_ENOMEM;
  t->cap = opts->max_agents ? opts->max_agents : 16;
  t->pool.opts.threads = 1;
  t->pool.opts.policy = (pts_policy)opts->policy;
  t->pool.opts.seed = opts->seed;
  t->pool.opts.slot_ns = opts->slot_ns ? opts->slot_ns : 1000000;
  /* quantum_ns stays 0: one step per turn, each one the model's. */
  t->pool.q = opts->quant;
  /* The padded pass holds a pool thread's wake-up queue; a virtual thread
   * has none (its harness polls the loops itself), so it never holds. */
  t->pool.q.no_hold = true;
  pts__quant_defaults(&t->pool.q);
  t->pool.n = 1;
  t->overhead = opts->step_overhead_ns;
  t->agents = pts__calloc(t->cap, sizeof *t->agents);
  t->busy = pts__calloc(t->cap, sizeof *t->busy);
  t->w = pts__aligned_alloc(64, sizeof *t->w);
  pts__warrays *arr = pts__warrays_new(t->cap);
  if (arr == NULL || t->agents == NULL || t->busy == NULL || t->w == NULL) {
    pts__free(arr);
    pts__free(t->agents);
    pts__free(t->busy);
    pts__free(t->w);
    pts__free(t);
    return PTS_ENOMEM;
  }
  memset(t->w, 0, sizeof *t->w);
  pts__mpsc_init(&t->w->signaled);
  pts__mpsc_init(&t->w->control);
  t->w->pool = &t->pool;
  t->w->arr = arr;
  t->w->vt = t;
  pts__policy_init(t->w);
  pts__policy_layout(t->w, 0);
  *out = t;
  return 0;
}

void pts__vthread_free(pts__vthread *t) {
  if (t == NULL) return;
  for (uint32_t i = 0; i < t->w->nagents; i++) {
    pts_agent *a = t->agents[i];
    pts__loop_pool_detach(a->loop);
    pts_loop_free(a->loop);
    pts__free(a);
  }
  pts__free(t->w->arr);
  pts__free(t->w);
  pts__free(t->agents);
  pts__free(t->busy);
  pts__free(t);
}

int pts__vthread_add(pts__vthread *t, uint32_t weight, pts_loop **loop) {
  if (t == NULL || loop == NULL) return PTS_EINVAL;
  if (t->w->nagents == t->cap) return PTS_ENOMEM;
  pts_agent *a;
  if ((a = pts__aligned_alloc(64, sizeof *a)) == NULL) return PTS_ENOMEM;
  memset(a, 0, sizeof *a);
  pts__list_init(&a->rcs);
  pts_loop_options lo = {true, 0};
  int rc = pts_loop_new(&lo, &a->loop);
  if (rc == 0 && pts_global_scheduler(pts_loop_default_global(a->loop)) == NULL) {
    pts_loop_free(a->loop); /* out of memory: the scheduler is made up front */
    rc = PTS_ENOMEM;
  }
  if (rc != 0) {
    pts__free(a);
    return rc;
  }
  /* Held like a pool thread holds its loops: pts_loop_run elsewhere fails. */
  rc = pts__loop_pool_attach(a->loop, wake_noop, NULL);
  if (rc != 0) {
    pts_loop_free(a->loop);
    pts__free(a);
    return rc;
  }
  a->attached = true;
  a->weight = weight ? weight : 1;
  a->hidx = a->tidx = PTS__NO_INDEX;
  a->deadline = UINT64_MAX;
  a->req_target = -1;
  a->idx = t->w->nagents;
  a->sched = pts_global_scheduler(pts_loop_default_global(a->loop));
  t->agents[a->idx] = a;
  t->w->arr->agents[t->w->nagents++] = a;
  pts__policy_layout(t->w, t->now);
  pts__worker_poll(t->w, a);
  *loop = a->loop;
  return (int)a->idx;
}

uint64_t pts__vthread_now(const pts__vthread *t) { return t ? t->now : 0; }

uint64_t pts__vthread_busy_ns(const pts__vthread *t, int agent) {
  if (t == NULL || agent < 0 || (uint32_t)agent >= t->w->nagents) return 0;
  return t->busy[agent];
}

void pts__vthread_charge(uint64_t ns) {
  if (tls_vt != NULL && tls_vt->in_step) tls_vt->now += ns;
}

uint64_t pts__vthread_clock(void) {
  pts__vthread *t = tls_vt;
  return t == NULL ? 0 : t->now;
}

void pts__vthread_set_events(pts__vthread *t, pts__vthread_event_fn fn, void *ctx) {
  t->ev = fn;
  t->ev_ctx = ctx;
  t->next_ev = t->now;
}

/* ---- the worker loop's hooks (agents_impl.h) ---- */

void pts__vthread_step_begin(pts__vthread *t) {
  t->in_step = true;
  t->step_start = t->now;
}

void pts__vthread_step_end(pts__vthread *t, pts_agent *a) {
  t->in_step = false;
  t->now += t->overhead;
  if (t->now == t->step_start) t->now++; /* a free step would let time stand still */
  t->busy[a->idx] += t->now - t->step_start;
}

bool pts__vthread_events(pts__vthread *t) {
  if (t->now >= t->end) return true;
  while (t->ev != NULL && t->next_ev <= t->now) {
    t->next_ev = t->ev(t->ev_ctx, t->now);
    if (t->next_ev <= t->now) t->next_ev = t->now + 1; /* always progress */
    /* The hook may have posted into any loop: poll them all. */
    for (uint32_t i = 0; i < t->w->nagents; i++) pts__worker_poll(t->w, t->agents[i]);
  }
  return false;
}

void pts__vthread_idle(pts__vthread *t, uint64_t until) {
  /* The loops' own clocks do not move here, so their timers are not among
   * the times that can change the pick (study.h). */
  uint64_t next = t->end;
  if (until < next) next = until;
  if (t->ev != NULL && t->next_ev < next) next = t->next_ev;
  t->now = next > t->now ? next : t->now + 1;
}

int pts__vthread_run(pts__vthread *t, uint64_t end_ns) {
  if (t == NULL) return PTS_EINVAL;
  pts__vthread *saved = tls_vt;
  tls_vt = t;
  t->end = end_ns;
  /* The caller may have posted into the loops since the last run. */
  for (uint32_t i = 0; i < t->w->nagents; i++) pts__worker_poll(t->w, t->agents[i]);
  pts__worker_loop(t->w);
  tls_vt = saved;
  return 0;
}
