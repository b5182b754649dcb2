/* agents/vthread.c: the virtual pool thread of the security study
 * (agents/study.h): a single-threaded driver that runs the worker's policy
 * code (policy.c, unchanged) over real loops in virtual time.
 *
 * Invariant: the driver does what worker_main (worker.c) does, in the same
 * order, with the clock replaced by a cost model: poll the loops that may
 * have changed, ask the policy for an agent, step its loop once, charge the
 * step's modelled cost to the clock and to the policy, re-file the agent.
 * Nothing here reads a real clock, so two runs with the same inputs take the
 * same decisions and produce the same traces, bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "agents/agents_impl.h"
#include "sync/alloc.h"

struct pts__vthread {
  pts_pool pool; /* only opts and q are used (policy.c reads them) */
  pts__worker *w;
  pts_agent **agents;
  uint64_t *busy;
  uint32_t cap;
  uint64_t now, overhead;
  /* The running step: its start and what its task charged. */
  bool in_step;
  uint64_t step_start, charged;
  pts__vthread_event_fn ev;
  void *ev_ctx;
  uint64_t next_ev;
};

static _Thread_local pts__vthread *tls_vt;

static void wake_noop(void *ctx) { (void)ctx; }

int pts__vthread_new(const pts__vthread_options *opts, pts__vthread **out) {
  if (opts == NULL || out == NULL) return PTS_EINVAL;
  if ((unsigned)opts->policy >= PTS_POLICY_COUNT) return PTS_EINVAL;
  pts__vthread *t = pts__calloc(1, sizeof *t);
  if (t == NULL) return PTS_ENOMEM;
  t->cap = opts->max_agents ? opts->max_agents : 16;
  t->pool.opts.threads = 1;
  t->pool.opts.policy = (pts_policy)opts->policy;
  t->pool.opts.seed = opts->seed;
  t->pool.opts.slot_ns = opts->slot_ns ? opts->slot_ns : 1000000;
  t->pool.q = opts->quant;
  pts__quant_defaults(&t->pool.q);
  t->pool.n = 1;
  t->overhead = opts->step_overhead_ns;
  size_t ptrs = (size_t)t->cap * sizeof(pts_agent *);
  pts__warrays *arr = pts__calloc(1, sizeof *arr + 3 * ptrs + ((size_t)t->cap + 1) * sizeof(uint64_t));
  t->agents = pts__calloc(t->cap, sizeof *t->agents);
  t->busy = pts__calloc(t->cap, sizeof *t->busy);
  t->w = pts__aligned_alloc(64, sizeof *t->w);
  int bad = t->pool.q.frame_slots > PTS__Q_MAX_SLOTS ? PTS_EINVAL : 0;
  if (arr == NULL || t->agents == NULL || t->busy == NULL || t->w == NULL || bad) {
    pts__free(arr);
    pts__free(t->agents);
    pts__free(t->busy);
    pts__free(t->w);
    pts__free(t);
    return bad ? bad : PTS_ENOMEM;
  }
  char *p = (char *)(arr + 1);
  arr->cap = t->cap;
  arr->fen = (uint64_t *)(void *)p;
  p += ((size_t)t->cap + 1) * sizeof(uint64_t);
  arr->agents = (pts_agent **)(void *)p;
  arr->heap = arr->agents + t->cap;
  arr->theap = arr->heap + t->cap;
  memset(t->w, 0, sizeof *t->w);
  t->w->pool = &t->pool;
  t->w->arr = arr;
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

/* Polls the agent's loop and files it (worker.c: refresh). */
static void refresh(pts__vthread *t, pts_agent *a, bool ran, uint64_t cost) {
  pts__tls_agent = a;
  int u = pts__loop_poll(a->loop, false);
  pts__tls_agent = NULL;
  (void)pts__loop_take_stop(a->loop);
  a->urgency = u;
  pts__policy_update(t->w, a, u, ran, cost);
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
  a->idx = t->w->nagents;
  a->sched = pts_global_scheduler(pts_loop_default_global(a->loop));
  t->agents[a->idx] = a;
  t->w->arr->agents[t->w->nagents++] = a;
  pts__policy_layout(t->w, t->now);
  refresh(t, a, false, 0);
  *loop = a->loop;
  return (int)a->idx;
}

uint64_t pts__vthread_now(const pts__vthread *t) { return t ? t->now : 0; }

uint64_t pts__vthread_busy_ns(const pts__vthread *t, int agent) {
  if (t == NULL || agent < 0 || (uint32_t)agent >= t->w->nagents) return 0;
  return t->busy[agent];
}

void pts__vthread_charge(uint64_t ns) {
  if (tls_vt != NULL && tls_vt->in_step) tls_vt->charged += ns;
}

uint64_t pts__vthread_clock(void) {
  pts__vthread *t = tls_vt;
  if (t == NULL) return 0;
  return t->in_step ? t->step_start + t->charged : t->now;
}

void pts__vthread_set_events(pts__vthread *t, pts__vthread_event_fn fn, void *ctx) {
  t->ev = fn;
  t->ev_ctx = ctx;
  t->next_ev = t->now;
}

int pts__vthread_run(pts__vthread *t, uint64_t end_ns) {
  if (t == NULL) return PTS_EINVAL;
  pts__vthread *saved = tls_vt;
  tls_vt = t;
  /* The caller may have posted into the loops since the last run. */
  for (uint32_t i = 0; i < t->w->nagents; i++) refresh(t, t->agents[i], false, 0);
  while (t->now < end_ns) {
    if (t->ev != NULL && t->next_ev <= t->now) {
      t->next_ev = t->ev(t->ev_ctx, t->now);
      if (t->next_ev <= t->now) t->next_ev = t->now + 1; /* always progress */
      /* The hook may have posted into any loop: poll them all. */
      for (uint32_t i = 0; i < t->w->nagents; i++) refresh(t, t->agents[i], false, 0);
      continue;
    }
    uint64_t until = UINT64_MAX;
    pts_agent *a = pts__policy_pick(t->w, t->now, &until);
    if (a != NULL) {
      t->in_step = true;
      t->step_start = t->now;
      t->charged = 0;
      pts__tls_agent = a;
      (void)pts__loop_step(a->loop);
      pts__tls_agent = NULL;
      t->in_step = false;
      uint64_t cost = t->overhead + t->charged;
      if (cost == 0) cost = 1; /* a free step would let time stand still */
      t->now += cost;
      t->busy[a->idx] += cost;
      refresh(t, a, true, cost);
      continue;
    }
    /* Idle: jump to the next thing that can change the answer. */
    uint64_t next = end_ns;
    if (until < next) next = until;
    if (t->ev != NULL && t->next_ev < next) next = t->next_ev;
    t->now = next > t->now ? next : t->now + 1;
  }
  tls_vt = saved;
  return 0;
}
