/* agents/watchdog.c: runaway tasks: the pool's watchdog thread, which
 * reports long steps and, with balancing, takes the stuck worker's other
 * groups away (protocol below).
 */

#include <string.h>
#include <time.h>

#include "agents/agents_impl.h"

/* ---- runaway tasks: the watchdog (docs/agents.md, "Runaway tasks") ----
 *
 * C code cannot be preempted: a step that runs for a second holds its
 * thread for that second. The watchdog, a thread of the pool (Go's sysmon
 * plays this part for goroutines stuck in system calls), looks at every
 * worker each watchdog_ns / 4. A worker whose bracket (wd_begin) is the
 * same one it saw watchdog_ns ago or longer is in a long step: the
 * watchdog counts it on the agent (pts_agent_stats.long_tasks), marks the
 * worker stuck (placement by rule skips it) and calls on_long_task once
 * per step. With balancing on, it also takes the worker's other groups
 * away while the step runs (wd_rescue), so their tasks start elsewhere
 * within about 1.25 x watchdog_ns; the stuck agent's group stays (its
 * loop is inside the step).
 *
 * Protocol (the watchdog touches the owner's structures only inside a
 * bracket that holds no list of agents, one it claimed):
 * 1. The owner publishes the bracket (wd_step, release) before it runs the
 *    agent's code, and clears it (seq_cst) after; then it loads wd_claim
 *    (seq_cst) and, if set, waits until it is released (acquire).
 * 2. The watchdog claims (wd_claim = true, seq_cst), then loads wd_step
 *    (seq_cst): if it still is the step it found long, the owner is inside
 *    that bracket and will not touch its structures until the release (the
 *    two stores and two loads are a Dekker pair: one side sees the other).
 *    Otherwise it releases the claim and does nothing.
 * 3. Holding the claim, it acts as the owner between two steps: it ends
 *    the round, pops the wake-up queue (the owner is its consumer, and is
 *    not consuming now), decides every other unpinned group's move and
 *    lets each leave as leave_groups would (migration steps 1-2); wake-ups
 *    of agents that stay go back on the queue. Then it releases the claim
 *    (release): the owner goes on with the step's agent, and a group that
 *    could not leave yet (a token still on its way, an add or a destroy in
 *    flight) leaves at the owner's next departure point, or at the
 *    watchdog's next look if the step still runs. */

void pts__wd_wait(pts__worker *w) {
  unsigned spins = 0;
  /* acquire: pairs with the watchdog's release, so its changes are seen. */
  while (atomic_load_explicit(&w->wd_claim, memory_order_acquire)) pts__cpu_relax(spins++);
}

/* Protocol step 2: whether the watchdog now holds w's structures, w being
 * inside bracket `step`. */
static bool wd_claim_step(pts__worker *w, uint64_t step) {
  atomic_store_explicit(&w->wd_claim, true, memory_order_seq_cst);
  if (atomic_load_explicit(&w->wd_step, memory_order_seq_cst) == step) return true;
  atomic_store_explicit(&w->wd_claim, false, memory_order_release);
  return false;
}

/* The worker a rescued group goes to: the one with the fewest agents
 * (placed, plus planned[j] already sent its way by this rescue) that is
 * not stuck itself, or NULL. Under the pool's mutex. */
static pts__worker *wd_target(pts__worker *w, const uint32_t *planned) {
  pts_pool *pool = w->pool;
  pts__worker *t = NULL;
  for (unsigned j = 0; j < pool->n; j++) {
    pts__worker *o = pool->w[j];
    if (o == w || atomic_load_explicit(&o->wd_stuck, memory_order_relaxed)) continue;
    if (t == NULL || o->nplaced + planned[j] < t->nplaced + planned[t->index]) t = o;
  }
  return t;
}

/* Protocol step 3, holding the claim: moves w's groups but stuck's. */
static void wd_rescue(pts__worker *w, pts_agent *stuck) {
  pts_pool *pool = w->pool;
  (void)pts__round_end(w); /* agents[] changes */
  /* Decide (migration step 1): each group to the least loaded worker,
   * counting the groups sent before it. */
  uint32_t planned[pool->n];
  memset(planned, 0, sizeof planned);
  pthread_mutex_lock(&pool->mu); /* origin records: pinned, agents */
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts__origin *oe = w->arr->agents[i]->oe;
    if (oe == stuck->oe || oe->pinned != 0 || oe->mv_to != NULL) continue;
    pts__worker *t = wd_target(w, planned);
    if (t == NULL) break;
    planned[t->index] += oe->agents;
    pts__group_request(w, oe, t, true);
  }
  pthread_mutex_unlock(&pool->mu);
  /* The tokens on the wake-up queue: a member's is the move's now; another
   * agent's wake-up goes back after. */
  pts_agent *back = NULL;
  pts__mpsc_node *n;
  while ((n = pts__mpsc_pop(&w->signaled)) != NULL) {
    pts_agent *a = container_of(n, pts_agent, sig_node);
    if (a->dead) { /* as drain_signaled */
      if (a->unref_on_pop) pts_agent_unref(a);
    } else if (a->mv_token == PTS__MV_WAIT) {
      a->mv_token = PTS__MV_HELD;
      a->oe->mv_missing--;
    } else {
      a->wd_next = back;
      back = a;
    }
  }
  /* Departures (migration step 2), the stuck agent's group excepted. */
  for (uint32_t i = 0; i < w->nagents;) {
    pts__origin *oe = w->arr->agents[i]->oe;
    if (oe != stuck->oe && oe->mv_to != NULL && pts__group_try_leave(w, oe))
      i = 0; /* agents[] changed */
    else
      i++;
  }
  /* Still signaled: each node goes back as its producer left it. */
  for (; back != NULL; back = back->wd_next) pts__mpsc_push(&w->signaled, &back->sig_node);
}

/* One look at w (protocol): a step long since the watchdog first saw it
 * is reported once, and with balancing its worker's other groups go. */
static void wd_look(pts_pool *pool, pts__worker *w, uint64_t now) {
  uint64_t step = atomic_load_explicit(&w->wd_step, memory_order_relaxed);
  if (step == 0 || step != w->wd_seen) {
    w->wd_seen = step;
    w->wd_since = now;
    if (atomic_load_explicit(&w->wd_stuck, memory_order_relaxed))
      atomic_store_explicit(&w->wd_stuck, false, memory_order_relaxed);
    return;
  }
  if (now - w->wd_since < pool->opts.watchdog_ns) return;
  bool first = w->wd_reported != step;
  bool rescue = pool->balance && (step & 1u) != 0;
  if (!first && !rescue) return;
  if (!wd_claim_step(w, step)) return;
  pts_agent *a = atomic_load_explicit(&w->wd_agent, memory_order_relaxed);
  if (first) {
    w->wd_reported = step;
    atomic_store_explicit(&w->wd_stuck, true, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->st_long_tasks, 1, memory_order_relaxed);
    pts_agent_ref(a); /* for the callback: the step keeps it until the release */
  }
  if (rescue) wd_rescue(w, a);
  atomic_store_explicit(&w->wd_claim, false, memory_order_release); /* step 3's end */
  if (!first) return;
  if (pool->opts.on_long_task != NULL)
    pool->opts.on_long_task(pool->opts.on_long_task_data, a, now - w->wd_since);
  pts_agent_unref(a);
}

static void *watchdog_main(void *arg) {
  pts_pool *pool = arg;
  uint64_t period = pool->opts.watchdog_ns / 4;
  pthread_mutex_lock(&pool->wd_mu);
  while (!pool->wd_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_nsec + period;
    ts.tv_sec += (time_t)(t / 1000000000u);
    ts.tv_nsec = (long)(t % 1000000000u);
    (void)pthread_cond_timedwait(&pool->wd_cv, &pool->wd_mu, &ts);
    if (pool->wd_stop) break;
    pthread_mutex_unlock(&pool->wd_mu);
    uint64_t now = pts__now_ns();
    for (unsigned i = 0; i < pool->n; i++) wd_look(pool, pool->w[i], now);
    pthread_mutex_lock(&pool->wd_mu);
  }
  pthread_mutex_unlock(&pool->wd_mu);
  return NULL;
}

int pts__watchdog_start(pts_pool *pool) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&pool->wd_cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&pool->wd_mu, NULL);
  pool->wd_started = pthread_create(&pool->wd_tid, NULL, watchdog_main, pool) == 0;
  if (pool->wd_started) return 0;
  pthread_mutex_destroy(&pool->wd_mu);
  pthread_cond_destroy(&pool->wd_cv);
  return PTS_ENOMEM;
}

void pts__watchdog_stop(pts_pool *pool) {
  if (!pool->wd_started) return;
  pthread_mutex_lock(&pool->wd_mu);
  pool->wd_stop = true;
  pthread_cond_signal(&pool->wd_cv);
  pthread_mutex_unlock(&pool->wd_mu);
  pthread_join(pool->wd_tid, NULL);
  pool->wd_started = false;
  pthread_mutex_destroy(&pool->wd_mu);
  pthread_cond_destroy(&pool->wd_cv);
}
