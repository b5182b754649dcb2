/* agents/pool.c: the worker pool, placement of agents on threads, the
 * agent lifecycle (create, destroy, drain, explicit moves), references
 * and statistics. The producers' side (admission, the push and the wake
 * hook) is in remote.c, the worker thread's loop in worker.c, migration
 * and the balancer in migrate.c, the watchdog in watchdog.c.
 *
 * Invariant: an agent's loop is touched only by its worker thread (the one
 * that attached it last), except through the loop's inbox by producers
 * holding an admission (pts__agent_admit). The worker frees the loop only
 * after the agent is closed and every admission has ended: each admitted
 * command was pushed and has left the inbox. The agent's node is on the signaled
 * queue of a->w or of no worker, and a->w changes only while the node is
 * off every queue and its token (signaled = true) is held by the mover.
 *
 * Wake protocol (one worker, any number of producers):
 * 1. A producer is admitted (it counts its command in the rank's count,
 *    then finds the agent open), pushes its command to the loop's inbox and
 *    calls the wake hook (agent_wake) itself, touching the loop no more.
 * 2. agent_wake: if exchange(signaled, true) returned false, push the agent's
 *    node on the worker's signaled queue, then unpark the worker (a system
 *    call only if it is parked). If it returned true, the node is already
 *    queued and its pusher unparks.
 * 3. The worker pops the node, then stores signaled = false (the node is off
 *    the queue, so a later exchange may push it again), then polls the loop.
 *    A command pushed before that store is seen by the poll (seq_cst: push <
 *    exchange reads true < store false < poll); one pushed after makes the
 *    exchange return false and re-queues the node.
 * 4. Before parking, the worker prepares its parker and checks both of its
 *    queues once more (sync/parker.h), so no wake-up is lost.
 *
 * Destroy protocol (pts_agent_destroy, from any thread):
 * 1. The destroyer is admitted itself (one count of the top rank), then, under
 *    the pool's mutex, sets closed: from now on every admission fails with
 *    PTS_ECLOSED. A count the teardown reads after the close and a producer
 *    that finds the agent open are the two halves of one Dekker pair
 *    (seq_cst), so every admitted command is counted where the teardown
 *    looks.
 * 2. Still under the mutex, it pushes the destroy command to the worker's
 *    control queue and unparks the worker; then it ends its admission.
 * 3. The worker applies the command between two steps (so a destroy from one
 *    of the agent's own tasks takes effect after that task returns): it
 *    removes the agent from its policy and timer structures, drops the remote
 *    controllers, completes drain waiters with PTS_ECLOSED, detaches the loop
 *    and frees it once every admission has ended (pts__loop_free_when: inbox
 *    commands are released as they arrive until the commands applied equal
 *    the admitted counts; a producer between its admission and its push is
 *    two instructions from it, so the wait is bounded). Freeing releases
 *    every pending task, promise and timer: their callbacks see
 *    PTS_ECANCELED, results PTS_ECLOSED.
 * 4. It takes the wake token for good and waits until no producer is inside
 *    agent_wake's slow path (the count wakers): after that no producer
 *    touches the worker on the agent's behalf. Then it unregisters the agent
 *    from the pool and signals waiters.
 *
 * Shutdown protocol (pts_pool_shutdown):
 * 1. Under the pool mutex: mark the pool shut (pts_agent_new fails from now)
 *    and take a reference to every registered agent.
 * 2. Destroy each (steps 1-2 above; one already closing is skipped).
 * 3. Wait until the registry is empty (every teardown done, including ones
 *    started by other threads), so no producer can reach a worker any more.
 * 4. Send each worker its shutdown command, join it, free everything.
 */

#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "agents/agents_impl.h"
#include "sync/alloc.h"
#include "ptsched/scheduler.h"
#include "sched/sched_internal.h"
#include "sync/nodecache.h"

_Thread_local pts__worker *pts__tls_worker;
_Thread_local pts_agent *pts__tls_agent;

uint64_t pts__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the statistics clock ----
 *
 * The start-delay histogram reads a clock at every cross-thread post and at
 * every start of such a task. clock_gettime costs 25-30 ns on the project's
 * VM, the TSC 10-12 ns, so where the CPU reports an invariant TSC (CPUID
 * 0x80000007 EDX bit 8: constant rate, not stopped in sleep states; AMD APM
 * vol. 3, Intel SDM vol. 3 17.17) the statistics scale it to nanoseconds
 * with a rate measured once against CLOCK_MONOTONIC over 2 ms. Only these
 * statistics use it: timers and policies keep pts__now_ns. */
pts__tsc_scale pts__tsc;
_Atomic bool pts__tsc_ready;

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>

static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;

static void tsc_calibrate(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  if (!(d & (1u << 8))) return;
  uint64_t m0 = pts__now_ns(), t0 = __rdtsc(), m1, t1;
  do {
    m1 = pts__now_ns();
    t1 = __rdtsc();
  } while (m1 - m0 < 2000000u);
  if (t1 <= t0) return;
  /* Fixed point: a multiply and a shift per read, no conversion to and
   * from double (ns per tick is below 1 on any TSC of 1 GHz or more). */
  double ns_per_tick = (double)(m1 - m0) / (double)(t1 - t0);
  if (ns_per_tick >= 4.0) return;
  pts__tsc.mult = (uint64_t)(ns_per_tick * 4294967296.0 + 0.5);
  pts__tsc.base = t0;
  pts__tsc.mono_base = m0;
  atomic_store_explicit(&pts__tsc_ready, true, memory_order_release);
}

/* Calibrates once (pts_pool_new calls it, so posts find the TSC ready);
 * without an invariant TSC every call lands here. */
uint64_t pts__stat_now_slow(void) {
  pthread_once(&tsc_once, tsc_calibrate);
  if (!atomic_load_explicit(&pts__tsc_ready, memory_order_acquire)) return pts__now_ns();
  return pts__stat_now_ns();
}
#else
uint64_t pts__stat_now_slow(void) { return pts__now_ns(); }
#endif

#define stat_add pts__stat_add

const char *pts_policy_name(int policy) {
  static const char *const names[PTS_POLICY_COUNT] = {
      "strict", "round-robin", "fair", "randomized", "time-partitioned", "quantized"};
  return (unsigned)policy < PTS_POLICY_COUNT ? names[policy] : NULL;
}

uint64_t pts__agent_posted(pts_agent *a) {
  uint64_t n = 0;
  for (int r = 0; r < PTS__RANKS; r++) n += atomic_load_explicit(&a->posted[r].n, memory_order_relaxed);
  return n;
}

void pts__agent_record_delay(pts_agent *a, uint64_t d) {
  unsigned b = d == 0 ? 0 : 63u - (unsigned)__builtin_clzll(d);
  if (b >= PTS_DELAY_BUCKETS) b = PTS_DELAY_BUCKETS - 1;
  stat_add(&a->st_hist[b], 1);
}

/* ---- agent references ---- */

static void agent_free(pts_agent *a) {
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cv);
  pts__free(a->origin);
  pts__free(a);
}

void pts_agent_ref(pts_agent *a) {
  /* Relaxed: the caller already holds a reference. */
  if (a) atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void pts_agent_unref(pts_agent *a) {
  if (a == NULL) return;
  /* acq_rel: the last one out sees every other holder's writes. */
  if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) == 1)
    agent_free(a);
}

int pts_agent_thread(const pts_agent *a) {
  /* Relaxed: a snapshot; the protocol does not depend on it. */
  return a ? atomic_load_explicit(&((pts_agent *)a)->thread, memory_order_relaxed)
           : PTS_EINVAL;
}

pts_loop *pts_agent_loop(pts_agent *a) { return a ? a->loop : NULL; }

/* ---- drains ---- */

void pts__drain_complete(pts__drain_wait *d, int status) {
  pthread_mutex_lock(&d->mu);
  d->status = status;
  d->done = true;
  pthread_cond_signal(&d->cv);
  /* After this unlock the waiter may return and free d: touch nothing. */
  pthread_mutex_unlock(&d->mu);
}

void pts__drainers_complete(pts_agent *a, int status) {
  pts__drain_wait *d = a->drainers;
  a->drainers = NULL;
  while (d != NULL) {
    pts__drain_wait *next = d->next;
    pts__drain_complete(d, status);
    d = next;
  }
}

/* ---- the pool ---- */

static void worker_free(pts__worker *w) {
  if (w == NULL) return;
  pts__free(w->arr);
  pts__free(w->bal_peer0);
  pts__free(w);
}

void pts__push_ctl(pts__worker *w, pts__ctl *c) {
  pts__mpsc_push(&w->control, &c->node);
  pts__parker_unpark(&w->parker);
}

static void stop_workers(pts_pool *pool) {
  pts__watchdog_stop(pool);
  for (unsigned i = 0; i < pool->n; i++) {
    pts__worker *w = pool->w[i];
    if (w == NULL || !w->started) continue;
    w->ctl_shutdown.kind = PTS__CTL_SHUTDOWN;
    pts__push_ctl(w, &w->ctl_shutdown);
    pthread_join(w->tid, NULL);
  }
  for (unsigned i = 0; i < pool->n; i++) worker_free(pool->w[i]);
  pts__free(pool->w);
  while (pool->origins != NULL) {
    pts__origin *o = pool->origins;
    pool->origins = o->next;
    pts__free(o->name);
    pts__free(o);
  }
  pthread_mutex_destroy(&pool->mu);
  pthread_cond_destroy(&pool->cv);
  pts__free(pool);
}

static int pool_create(const pts_pool_options *opts, const pts__quant_options *q,
                       pts_pool **out) {
  if (out == NULL) return PTS_EINVAL;
  pts_pool_options o = {0}; /* PTS_POLICY_STRICT is 0 */
  if (opts != NULL) o = *opts;
  if ((unsigned)o.policy >= PTS_POLICY_COUNT) return PTS_EINVAL;
  if (o.quantum_ns > PTS__QUANTUM_MAX_NS) return PTS_EINVAL;
  if (o.watchdog_ns != 0 && (o.watchdog_ns < PTS__WD_MIN_NS || o.watchdog_ns > PTS__WD_MAX_NS))
    return PTS_EINVAL;
  if (o.quantum_ns == 0) o.quantum_ns = PTS_QUANTUM_DEFAULT_NS;
  pts__quant_options qo = {0, 0, 0, 0, false};
  if (q != NULL) qo = *q;
  else qo.slot_ns = o.slot_ns; /* the public options: slot_ns is both policies' slot */
  pts__quant_defaults(&qo);
  if (qo.frame_slots > PTS__Q_MAX_SLOTS) return PTS_EINVAL;
  if (o.threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = n > 0 ? (unsigned)n : 1;
  }
  if (o.threads > 4096) return PTS_EINVAL;
  if (o.slot_ns == 0) o.slot_ns = 1000000; /* 1 ms */
  (void)pts__stat_now_slow(); /* the statistics clock, calibrated once */
  pts_pool *pool = pts__calloc(1, sizeof *pool);
  if (pool == NULL) return PTS_ENOMEM;
  pts__list_init(&pool->registry);
  pool->opts = o;
  pool->balance = o.balance && (unsigned)o.policy <= PTS_POLICY_RANDOMIZED;
  pool->q = qo;
  pool->n = o.threads;
  pool->next_id = 1;
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->cv, NULL);
  pool->w = pts__calloc(o.threads, sizeof *pool->w);
  if (pool->w == NULL) goto fail;
  for (unsigned i = 0; i < o.threads; i++) {
    pts__worker *w;
    if ((w = pts__aligned_alloc(64, sizeof *w)) == NULL) goto fail;
    memset(w, 0, sizeof *w);
    pool->w[i] = w;
    pts__parker_init(&w->parker);
    pts__mpsc_init(&w->signaled);
    pts__mpsc_init(&w->control);
    w->pool = pool;
    w->index = i;
    w->planned_cap = 16;
    w->arr = pts__warrays_new(w->planned_cap);
    if (w->arr == NULL) goto fail;
    atomic_init(&w->hungry, false);
    atomic_init(&w->invite, 0);
    atomic_init(&w->taker, false);
    atomic_init(&w->steal_req, 0);
    w->wd_on = o.watchdog_ns != 0; /* before the thread starts */
    if (pool->balance && (w->bal_peer0 = pts__calloc(o.threads, sizeof *w->bal_peer0)) == NULL)
      goto fail;
    pts__policy_init(w);
  }
  for (unsigned i = 0; i < o.threads; i++) {
    pts__worker *w = pool->w[i];
    if (pthread_create(&w->tid, NULL, pts__worker_main, w) != 0) goto fail;
    w->started = true;
  }
  if (o.watchdog_ns != 0 && pts__watchdog_start(pool) != 0) goto fail;
  *out = pool;
  return 0;
fail:
  if (pool->w == NULL) {
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->cv);
    pts__free(pool);
    return PTS_ENOMEM;
  }
  stop_workers(pool);
  return PTS_ENOMEM;
}

int pts_pool_new(const pts_pool_options *opts, pts_pool **out) {
  return pool_create(opts, NULL, out);
}

int pts__pool_new_ext(const pts_pool_options *opts, const pts__quant_options *q,
                      pts_pool **out) {
  return pool_create(opts, q, out);
}

unsigned pts_pool_threads(const pts_pool *pool) { return pool ? pool->n : 0; }

int pts_pool_shutdown(pts_pool *pool) {
  if (pool == NULL) return PTS_EINVAL;
  if (pts__tls_worker != NULL) return PTS_EBUSY;
  pthread_mutex_lock(&pool->mu);
  if (pool->shut) {
    pthread_mutex_unlock(&pool->mu);
    return PTS_ECLOSED;
  }
  pool->shut = true;
  uint32_t n = pool->nagents, k = 0;
  pts_agent **all = n ? pts__malloc(n * sizeof *all) : NULL;
  if (n != 0 && all == NULL) {
    pool->shut = false;
    pthread_mutex_unlock(&pool->mu);
    return PTS_ENOMEM;
  }
  pts__list_each(n, &pool->registry) {
    pts_agent *a = container_of(n, pts_agent, reg_link);
    pts_agent_ref(a);
    all[k++] = a;
  }
  pthread_mutex_unlock(&pool->mu);
  for (uint32_t i = 0; i < k; i++) {
    (void)pts_agent_destroy(all[i], false); /* PTS_ECLOSED: already going */
    pts_agent_unref(all[i]);
  }
  pts__free(all);
  pthread_mutex_lock(&pool->mu);
  while (pool->nagents > 0) pthread_cond_wait(&pool->cv, &pool->mu);
  pthread_mutex_unlock(&pool->mu);
  stop_workers(pool);
  return 0;
}

/* ---- placement ---- */

/* Placement rule (agents.h): explicit thread; else the origin's thread; else
 * the lowest thread with no origin yet; else the thread with the fewest
 * agents (lowest index on ties). Under the pool mutex. Linear in origins and
 * threads: agent creation is rare next to posting. */
/* Relaxed: a hint from the watchdog (wd_look). */
static bool stuck(const pts__worker *w) {
  return atomic_load_explicit(&w->wd_stuck, memory_order_relaxed);
}

static pts__origin *place(pts_pool *pool, const char *origin, int thread) {
  pts__origin *oe = NULL;
  for (pts__origin *o = pool->origins; o != NULL; o = o->next) {
    if (strcmp(o->name, origin) != 0) continue;
    if (thread < 0 || o->thread == (unsigned)thread) {
      oe = o;
      break;
    }
  }
  if (oe != NULL) return oe;
  unsigned t = 0;
  if (thread >= 0) {
    t = (unsigned)thread;
  } else {
    /* A worker in a long step (the watchdog's) is skipped while another
     * is not. */
    bool found = false;
    for (int pass = 0; pass < 2 && !found; pass++) {
      for (unsigned i = 0; i < pool->n && !found; i++) {
        if (pool->w[i]->norigins == 0 && (pass == 1 || !stuck(pool->w[i]))) {
          t = i;
          found = true;
        }
      }
    }
    if (!found) {
      for (unsigned i = 1; i < pool->n; i++)
        if (stuck(pool->w[t]) > stuck(pool->w[i]) ||
            (stuck(pool->w[t]) == stuck(pool->w[i]) && pool->w[i]->nplaced < pool->w[t]->nplaced))
          t = i;
    }
  }
  oe = pts__calloc(1, sizeof *oe);
  if (oe == NULL) return NULL;
  oe->name = pts__strdup(origin);
  if (oe->name == NULL) {
    pts__free(oe);
    return NULL;
  }
  oe->thread = t;
  oe->next = pool->origins;
  pool->origins = oe;
  pool->w[t]->norigins++;
  return oe;
}

static void move_req_cmd(pts__command *cmd, int status);
static const pts__command_type move_req_cmd_type = {PTS__CMD_APPLY, move_req_cmd};

/* An agent's limit: its own, else the pool's; 0 and from 2^63 on
 * (PTS_LIMIT_NONE among them) are none (UINT64_MAX). */
static uint64_t limit_of(uint64_t own, uint64_t pool_default) {
  uint64_t v = own != 0 ? own : pool_default;
  return v == 0 || v > (uint64_t)INT64_MAX ? UINT64_MAX : v;
}

int pts_agent_new(pts_pool *pool, const pts_agent_options *opts, pts_agent **out) {
  if (pool == NULL || out == NULL) return PTS_EINVAL;
  pts_agent_options o = PTS_AGENT_OPTIONS_INIT;
  if (opts != NULL) o = *opts;
  if (o.thread < -1 || (o.thread >= 0 && (unsigned)o.thread >= pool->n))
    return PTS_EINVAL;
  if (o.weight == 0) o.weight = 1;
  pts_agent *a;
  if ((a = pts__aligned_alloc(64, sizeof *a)) == NULL) return PTS_ENOMEM;
  memset(a, 0, sizeof *a);
  pts__list_init(&a->rcs);
  atomic_init(&a->closed, false);
  atomic_init(&a->wakers, 0);
  atomic_init(&a->signaled, false);
  atomic_init(&a->refs, 2); /* the caller's and the worker's */
  atomic_init(&a->w, NULL);
  atomic_init(&a->thread, -1);
  atomic_init(&a->move_req, 0);
  atomic_init(&a->delay_stats, false); /* off until asked for (2.0) */
  a->req_cmd.type = &move_req_cmd_type;
  a->req_target = -1;
  a->pinned = o.pinned;
  a->weight = o.weight;
  a->pool = pool;
  a->hidx = a->tidx = PTS__NO_INDEX;
  a->deadline = UINT64_MAX;
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  int rc = pts_loop_new(NULL, &a->loop);
  if (rc != 0) {
    agent_free(a);
    return rc;
  }
  pts__loop_set_command_runner(a->loop, pts__agent_run_command);
  /* The scheduler is made here, on the loop's owner until the worker takes
   * it, so that running out of memory is this call's PTS_ENOMEM; made on the
   * worker (agent_attach) its failure would leave an accepted agent that
   * cancels every post. */
  if (pts_global_scheduler(pts_loop_default_global(a->loop)) == NULL ||
      pts__sched_set_task_limit(a->loop, limit_of(o.limits.tasks, pool->opts.limits.tasks)) != 0) {
    pts_loop_free(a->loop);
    a->loop = NULL;
    agent_free(a);
    return PTS_ENOMEM;
  }
  pts__loop_set_byte_limit(a->loop, limit_of(o.limits.bytes, pool->opts.limits.bytes));
  a->inbox_limit = limit_of(o.limits.inbox, pool->opts.limits.inbox);
  pthread_mutex_lock(&pool->mu);
  if (pool->shut) {
    rc = PTS_ECLOSED;
    goto fail_locked;
  }
  a->id = pool->next_id++;
  char anon[40];
  if (o.origin == NULL) {
    snprintf(anon, sizeof anon, "(anonymous %llu)", (unsigned long long)a->id);
    o.origin = anon;
  }
  a->origin = pts__strdup(o.origin);
  rc = PTS_ENOMEM;
  if (a->origin == NULL) goto fail_locked;
  a->oe = place(pool, a->origin, o.thread);
  if (a->oe == NULL) goto fail_locked;
  pts__worker *w = pool->w[a->oe->thread];
  if (w->nplaced + 1 > w->planned_cap) {
    a->ctl_add.arrays = pts__warrays_new(w->planned_cap * 2);
    if (a->ctl_add.arrays == NULL) {
      if (a->oe->agents == 0) {
        pts__origin **pp = &pool->origins;
        while (*pp != a->oe) pp = &(*pp)->next;
        *pp = a->oe->next;
        w->norigins--;
        pts__free(a->oe->name);
        pts__free(a->oe);
      }
      goto fail_locked;
    }
    w->planned_cap *= 2;
  }
  a->oe->agents++;
  if (a->pinned) a->oe->pinned++;
  atomic_store_explicit(&a->w, w, memory_order_relaxed);
  atomic_store_explicit(&a->thread, (int)w->index, memory_order_relaxed);
  w->nplaced++;
  pool->nagents++;
  pts__list_prepend(&pool->registry, &a->reg_link);
  a->ctl_add.kind = PTS__CTL_ADD;
  a->ctl_add.agent = a;
  /* Under the mutex: a concurrent shutdown cannot free the worker before
   * this push and unpark are done. */
  pts__push_ctl(w, &a->ctl_add);
  pthread_mutex_unlock(&pool->mu);
  *out = a;
  return 0;
fail_locked:
  pthread_mutex_unlock(&pool->mu);
  pts_loop_free(a->loop);
  agent_free(a);
  return rc;
}

/* ---- destroy and drain ---- */

static void wait_destroyed(pts_agent *a) {
  pthread_mutex_lock(&a->mu);
  while (!a->destroyed) pthread_cond_wait(&a->cv, &a->mu);
  pthread_mutex_unlock(&a->mu);
}

/* Whether the calling thread is the worker that owns (or will own) a. */
static bool on_agent_worker(pts_agent *a) {
  return pts__tls_worker != NULL &&
         pts__tls_worker == atomic_load_explicit(&a->w, memory_order_relaxed);
}

static int destroy_closed(pts_agent *a, bool wait) {
  if (wait && on_agent_worker(a)) return PTS_EBUSY; /* it would wait for itself */
  if (wait) wait_destroyed(a);
  return PTS_ECLOSED;
}

int pts_agent_destroy(pts_agent *a, bool wait) {
  if (a == NULL) return PTS_EINVAL;
  /* Destroy protocol steps 1-3. Our own admission holds the teardown until
   * the destroy command is pushed and the worker left alone. */
  if (!pts__agent_admit(a, PTS__RANK_OTHER)) return destroy_closed(a, wait);
  /* Under the pool's mutex (migration steps 2-3): no move can begin after
   * closed is set, the owner checked for EBUSY is the final one, and a
   * group that finds a member closed finds its command in the control
   * queue too. */
  pts_pool *pool = a->pool;
  pthread_mutex_lock(&pool->mu);
  if (wait && on_agent_worker(a)) {
    pthread_mutex_unlock(&pool->mu);
    pts__agent_unadmit(a, PTS__RANK_OTHER);
    return PTS_EBUSY; /* the agent's own thread would wait for itself */
  }
  bool was_closed = atomic_exchange_explicit(&a->closed, true, memory_order_seq_cst);
  if (!was_closed) {
    a->ctl_destroy.kind = PTS__CTL_DESTROY;
    a->ctl_destroy.agent = a;
    pts__push_ctl(atomic_load_explicit(&a->w, memory_order_relaxed), &a->ctl_destroy);
  }
  pthread_mutex_unlock(&pool->mu);
  if (was_closed) { /* another destroyer closed it first: it goes on, we wait */
    pts__agent_unadmit(a, PTS__RANK_OTHER);
    return destroy_closed(a, wait);
  }
  pts__agent_unadmit(a, PTS__RANK_OTHER);
  if (wait) wait_destroyed(a);
  return 0;
}

/* ---- explicit moves ---- */

/* The request, applied from the loop's inbox by whichever worker owns the
 * loop then; refresh() makes the move after the poll. */
static void move_req_cmd(pts__command *cmd, int status) {
  pts_agent *a = container_of(cmd, pts_agent, req_cmd);
  pts__agent_applied(a, PTS__RANK_OTHER);
  /* acq_rel: pairs with the requester's exchange; the node is off the
   * inbox, so a later request may push it again. */
  int t = atomic_exchange_explicit(&a->move_req, 0, memory_order_acq_rel) - 1;
  if (status == 0) a->req_target = t;
}

int pts_agent_move(pts_agent *a, int thread) {
  if (a == NULL || thread < 0) return PTS_EINVAL;
  /* Admitted first: the admission keeps the pool allocated. */
  if (!pts__agent_admit(a, PTS__RANK_OTHER)) return PTS_ECLOSED;
  if ((unsigned)thread >= a->pool->n) {
    pts__agent_unadmit(a, PTS__RANK_OTHER);
    return PTS_EINVAL;
  }
  if (atomic_exchange_explicit(&a->move_req, thread + 1, memory_order_acq_rel) == 0)
    pts__agent_push(a, &a->req_cmd); /* not queued yet (0 -> set): once */
  else
    pts__agent_unadmit(a, PTS__RANK_OTHER);
  return 0;
}

static void drain_cmd(pts__command *cmd, int status) {
  pts__drain_wait *d = container_of(cmd, pts__drain_wait, cmd);
  pts_agent *a = d->agent;
  pts__agent_applied(a, PTS__RANK_OTHER);
  if (status != 0) {
    pts__drain_complete(d, PTS_ECLOSED);
    return;
  }
  d->next = a->drainers;
  a->drainers = d;
}
static const pts__command_type drain_cmd_type = {PTS__CMD_APPLY, drain_cmd};

int pts_agent_drain(pts_agent *a) {
  if (a == NULL) return PTS_EINVAL;
  if (pts__tls_worker != NULL) return PTS_EBUSY;
  pts__drain_wait d;
  memset(&d, 0, sizeof d);
  d.cmd.type = &drain_cmd_type;
  d.agent = a;
  pthread_mutex_init(&d.mu, NULL);
  pthread_cond_init(&d.cv, NULL);
  int rc = PTS_ECLOSED;
  if (pts__agent_send(a, &d.cmd, PTS__RANK_OTHER)) {
    pthread_mutex_lock(&d.mu);
    while (!d.done) pthread_cond_wait(&d.cv, &d.mu);
    pthread_mutex_unlock(&d.mu);
    rc = d.status;
  }
  pthread_mutex_destroy(&d.mu);
  pthread_cond_destroy(&d.cv);
  return rc;
}

/* ---- statistics ---- */

int pts_agent_get_stats(const pts_agent *ca, pts_agent_stats *out) {
  if (ca == NULL || out == NULL) return PTS_EINVAL;
  pts_agent *a = (pts_agent *)ca;
  for (int i = 0; i < PTS_CLASS_COUNT; i++)
    out->tasks_run[i] = atomic_load_explicit(&a->st_tasks[i], memory_order_relaxed);
  out->cpu_ns = atomic_load_explicit(&a->st_cpu_ns, memory_order_relaxed);
  for (int i = 0; i < PTS_DELAY_BUCKETS; i++)
    out->delay_hist[i] = atomic_load_explicit(&a->st_hist[i], memory_order_relaxed);
  uint64_t applied = atomic_load_explicit(&a->st_applied, memory_order_relaxed);
  uint64_t posted = pts__agent_posted(a);
  /* Two relaxed loads: the difference is a snapshot and may lag. */
  out->inbox_depth = posted > applied ? posted - applied : 0;
  out->inbox_max = atomic_load_explicit(&a->st_inbox_max, memory_order_relaxed);
  out->moves = atomic_load_explicit(&a->st_moves, memory_order_relaxed);
  /* The loop's counters, read under an admission (the loop stays
   * allocated while one is held); a destroyed agent has none. */
  out->tasks_pending = out->bytes_held = 0;
  out->refused = atomic_load_explicit(&a->st_inbox_refused, memory_order_relaxed);
  if (pts__agent_admit(a, PTS__RANK_OTHER)) {
    out->tasks_pending = pts__sched_live_tasks(a->loop);
    out->bytes_held = pts__loop_quota_bytes(a->loop);
    out->refused += pts__loop_quota_refused(a->loop);
    pts__agent_unadmit(a, PTS__RANK_OTHER);
  }
  out->long_tasks = atomic_load_explicit(&a->st_long_tasks, memory_order_relaxed);
  return 0;
}

int pts_agent_set_delay_stats(pts_agent *a, bool on) {
  if (a == NULL) return PTS_EINVAL;
  /* Relaxed: each post reads it once; no data travels with it. */
  atomic_store_explicit(&a->delay_stats, on, memory_order_relaxed);
  return 0;
}

int pts_pool_get_thread_stats(const pts_pool *pool, unsigned thread,
                              pts_thread_stats *out) {
  if (pool == NULL || out == NULL || thread >= pool->n) return PTS_EINVAL;
  pts__worker *w = pool->w[thread];
  out->steps = atomic_load_explicit(&w->st_steps, memory_order_relaxed);
  out->busy_ns = atomic_load_explicit(&w->st_busy_ns, memory_order_relaxed);
  out->idle_ns = atomic_load_explicit(&w->st_idle_ns, memory_order_relaxed);
  out->wakeups = atomic_load_explicit(&w->st_wakeups, memory_order_relaxed);
  out->agents = atomic_load_explicit(&w->st_agents, memory_order_relaxed);
  out->frame_origin_ns = atomic_load_explicit(&w->st_frame_origin, memory_order_relaxed);
  out->moves_in = atomic_load_explicit(&w->st_moves_in, memory_order_relaxed);
  out->moves_out = atomic_load_explicit(&w->st_moves_out, memory_order_relaxed);
  out->move_ns = atomic_load_explicit(&w->st_move_ns, memory_order_relaxed);
  return 0;
}

int pts_pool_pin_thread(pts_pool *pool, unsigned thread, int cpu) {
  if (pool == NULL || thread >= pool->n || cpu < -1 || cpu >= CPU_SETSIZE) return PTS_EINVAL;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0) {
    CPU_SET(cpu, &set);
  } else { /* every CPU; the kernel keeps the ones the process may use */
    long n = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < n && c < CPU_SETSIZE; c++) CPU_SET((int)c, &set);
  }
  return pthread_setaffinity_np(pool->w[thread]->tid, sizeof set, &set) == 0 ? 0 : PTS_EINVAL;
}
