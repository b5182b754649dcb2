/* agents/pool.c: the worker pool, placement of agents on threads, the worker
 * thread's loop (wake-ups, timers, policy, steps), migration of loops between
 * workers and the balancer, the agent lifecycle (create, destroy, drain) and
 * statistics.
 *
 * Invariant: an agent's loop is touched only by its worker thread (the one
 * that attached it last), except through the loop's inbox by producers
 * holding an admission (pts__agent_admit). The worker frees the loop only
 * after the agent is closed and every admission has ended: each admitted
 * command was pushed and has left the inbox. The agent's node is on the signaled
 * queue of a->w or of no worker, and a->w changes only while the node is
 * off every queue and its token (signaled = true) is held by the mover.
 *
 * Migration protocol (a same-origin group of loops moves from its owner S
 * to a worker T, between two of their tasks; docs/agents.md, "Migration").
 * The unit is the group (pts__origin): its agents never run steps on two
 * threads at once, and at rest they are all on oe->thread.
 * 1. S decides (its balancer, or a pts_agent_move request of any member
 *    applied from that member's inbox) and records the target in the group
 *    (oe->mv_to; a later decision replaces it, one for S itself cancels
 *    it). It takes every member's wake token: exchange(signaled, true).
 *    Where that returned true, the member's node is on S's signaled queue
 *    (a producer pushed it to a->w = S): the token is S's when the node
 *    pops (mv_missing counts those). While a token is held, producers push
 *    their commands to the inbox and push no node anywhere (their wake hook
 *    sees signaled = true). Members keep running on S meanwhile: none has
 *    left.
 * 2. Once S holds every token, at the worker loop's departure point
 *    (leave_groups: no step under way, no agent being iterated, since a
 *    departed agent may be freed by T at once), under the pool's mutex: if
 *    a member is closed (its destroy command is in S's control queue: the
 *    destroyer pushes it under this mutex) or an agent of the origin is not
 *    yet in S's agents[] (its ADD is in S's control queue: pts_agent_new
 *    pushes it under this mutex to oe->thread), the group waits with its
 *    tokens held, and the teardown or the attach of that agent tries again
 *    (the attach takes the new member's token first). Otherwise S
 *    takes every member out of its policy, timer heap and agents[],
 *    detaches their loops (wake hooks off, running released), sets a->w = T
 *    and a->thread, sets oe->thread = T (new agents of the origin go to T
 *    from now on) and moves the placement counts, allocates T's larger
 *    arrays if T needs them (T never allocates; out of memory drops the
 *    move and gives the tokens back), pushes the group's one MOVE command
 *    (the members linked by mv_next) to T's control queue and unparks T.
 * 3. A destroy closes the agent and pushes its command under the same
 *    mutex, so it goes to the worker that ends up owning the loop, after
 *    the MOVE there (the control queue is FIFO).
 * 4. T pops the MOVE (acquire: it sees everything S wrote to the agents,
 *    the group and the loops), installs the arrays, appends every member
 *    and attaches every loop (T becomes their owner; the wake hooks are
 *    back), so a poll of one member that moves the group on (a request it
 *    applies) finds the whole group here.
 * 5. T stores signaled = false for every member, then polls each: the
 *    commands pushed while the tokens were held are in the inboxes, in
 *    posting order (an inbox is its loop's and never changes hands), and
 *    these polls apply them; a command pushed after the store finds
 *    signaled false and pushes the node to T (wake protocol, step 3). Due
 *    timers fire at these polls and T's timer heap takes the next deadlines.
 * Nothing else is copied: tasks, timers, promises, signals, remote
 * controllers and drain waiters belong to the loop or to the agent's owner
 * fields, which pass from S to T with the MOVE (release push, acquire pop).
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

static void cpu_relax(unsigned spins) {
  if (spins < 64) {
    pts__cpu_pause();
  } else {
    sched_yield();
  }
}

#define stat_add pts__stat_add

/* The balancer (docs/agents.md, "Balancer"): numbers and why.
 * BAL_TICK_NS: a busy worker looks at its load at most once per tick (one
 * clock comparison per step otherwise) and decides on a window of at least
 * one tick, so it reacts 1-2 ms after a load change.
 * BAL_RESIDENCE_NS: an origin the balancer moved stays put this long, so no
 * agent moves more than 10 times per second whatever the load does.
 * BAL_SHARE: a move must split the source's busy time so that both the
 * origin moved and what stays had at least 1/BAL_SHARE of the window: a
 * light neighbour that is ready now and then is not worth a move, and a
 * move that would only carry the overload across is not made. */
#define BAL_TICK_NS UINT64_C(1000000)
#define BAL_RESIDENCE_NS UINT64_C(100000000)
#define BAL_SHARE 4
/* BAL_PLAN_NS: how long a planned move waits for its target to wake and
 * ask for it (a wake-up takes ~5 us idle, milliseconds on a loaded host)
 * before it is dropped and decided again. BAL_TAKE_SPIN_NS: how long the
 * woken target spins for the loop before it parks again (the giver moves it
 * at its next step boundary, i.e. within one task); a later MOVE unparks it
 * anyway, so the spin only saves a second wake-up. */
#define BAL_PLAN_NS UINT64_C(5000000)
#define BAL_TAKE_SPIN_NS UINT64_C(100000)

const char *pts_policy_name(int policy) {
  static const char *const names[PTS_POLICY_COUNT] = {
      "strict", "round-robin", "fair", "randomized", "time-partitioned"};
  return (unsigned)policy < PTS_POLICY_COUNT ? names[policy] : NULL;
}

/* ---- admission ---- */

bool pts__inbox_take_slow(pts_agent *a) {
  /* Relaxed: counts, no data travels with them. The applied count only
   * grows, so an old reading only overstates the depth; a fresh one may
   * count commands taken after ours (the depth is then below zero,
   * hence the signed differences). */
  int64_t limit = (int64_t)a->inbox_limit;
  uint64_t t = atomic_fetch_add_explicit(&a->inbox_taken, 1, memory_order_relaxed);
  if ((int64_t)(t - atomic_load_explicit(&a->inbox_seen, memory_order_relaxed)) < limit)
    return true;
  uint64_t applied = atomic_load_explicit(&a->inbox_applied, memory_order_relaxed);
  if (applied > atomic_load_explicit(&a->inbox_seen, memory_order_relaxed))
    atomic_store_explicit(&a->inbox_seen, applied, memory_order_relaxed); /* a hint */
  if ((int64_t)(t - applied) < limit) return true;
  atomic_fetch_sub_explicit(&a->inbox_taken, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&a->st_inbox_refused, 1, memory_order_relaxed);
  return false;
}

void pts__agent_unadmit(pts_agent *a, int rank) {
  /* release: the teardown's load that sees the count back down sees what
   * the caller did with the pool before. */
  atomic_fetch_sub_explicit(&a->posted[rank].n, 1, memory_order_release);
}

static void agent_wake(void *ctx);

void pts__agent_push(pts_agent *a, pts__command *cmd) {
  /* The loop is not touched after the push: once the command has left the
   * inbox, the teardown may free it (destroy protocol step 3). The agent's
   * wake hook, called directly, touches the handle (the caller's reference)
   * and, when it pushes the node, the worker (counted in wakers). */
  pts__loop_push_command(a->loop, cmd);
  agent_wake(a);
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

/* The loop's wake hook (protocol step 2). Any thread. */
static void agent_wake(void *ctx) {
  pts_agent *a = ctx;
  /* A load first: while the agent is signaled (the common case for a
   * stream of posts) the line stays shared and the post writes nothing
   * here. seq_cst: reading true means the worker's clearing store comes
   * later in the total order, so its poll after that store sees our push
   * (the same Dekker pair as the exchange). */
  if (atomic_load_explicit(&a->signaled, memory_order_seq_cst)) return;
  /* Counted before the exchange (seq_cst, a Dekker pair with the teardown's
   * exchange and its loads of the count): a teardown that saw no waker
   * took the token first, so our exchange returns true and we push
   * nothing. */
  atomic_fetch_add_explicit(&a->wakers, 1, memory_order_seq_cst);
  if (!atomic_exchange_explicit(&a->signaled, true, memory_order_seq_cst)) {
    /* Relaxed: a->w changes only while the token is held by a mover, and
     * our exchange took the token from the store that gave it back after
     * the change (seq_cst RMW reads it), which orders the change before. */
    pts__worker *w = atomic_load_explicit(&a->w, memory_order_relaxed);
    pts__mpsc_push(&w->signaled, &a->sig_node);
    pts__parker_unpark(&w->parker);
  }
  atomic_fetch_sub_explicit(&a->wakers, 1, memory_order_release);
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

/* ---- the worker's structures ---- */

static pts__warrays *warrays_new(uint32_t cap) {
  size_t ptrs = (size_t)cap * sizeof(pts_agent *);
  pts__warrays *w = pts__calloc(1, sizeof *w + 3 * ptrs + ((size_t)cap + 1) * sizeof(uint64_t));
  if (w == NULL) return NULL;
  char *p = (char *)(w + 1);
  w->cap = cap;
  w->fen = (uint64_t *)(void *)p;
  p += ((size_t)cap + 1) * sizeof(uint64_t);
  w->agents = (pts_agent **)(void *)p;
  w->heap = w->agents + cap;
  w->theap = w->heap + cap;
  return w;
}

static void warrays_install(pts__worker *w, pts__warrays *n) {
  pts__warrays *o = w->arr;
  if (o != NULL) {
    memcpy(n->agents, o->agents, w->nagents * sizeof(pts_agent *));
    memcpy(n->heap, o->heap, w->hlen * sizeof(pts_agent *));
    memcpy(n->theap, o->theap, w->tlen * sizeof(pts_agent *));
    pts__free(o);
  }
  w->arr = n; /* the Fenwick tree is rebuilt by pts__policy_layout */
}

/* Timer heap: agents by next deadline (min-heap). */
static void theap_set(pts__worker *w, uint32_t i, pts_agent *a) {
  w->arr->theap[i] = a;
  a->tidx = i;
}

static void theap_up(pts__worker *w, uint32_t i) {
  pts_agent *a = w->arr->theap[i];
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    pts_agent *pa = w->arr->theap[p];
    if (pa->deadline <= a->deadline) break;
    theap_set(w, i, pa);
    i = p;
  }
  theap_set(w, i, a);
}

static void theap_down(pts__worker *w, uint32_t i) {
  pts_agent *a = w->arr->theap[i];
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= w->tlen) break;
    if (c + 1 < w->tlen && w->arr->theap[c + 1]->deadline < w->arr->theap[c]->deadline) c++;
    if (w->arr->theap[c]->deadline >= a->deadline) break;
    theap_set(w, i, w->arr->theap[c]);
    i = c;
  }
  theap_set(w, i, a);
}

static void theap_remove(pts__worker *w, pts_agent *a) {
  uint32_t i = a->tidx;
  if (i == PTS__NO_INDEX) return;
  a->tidx = PTS__NO_INDEX;
  pts_agent *last = w->arr->theap[--w->tlen];
  if (last == a) return;
  theap_set(w, i, last);
  theap_up(w, i);
  theap_down(w, last->tidx);
}

static void timer_update(pts__worker *w, pts_agent *a, uint64_t deadline) {
  if (deadline == UINT64_MAX) {
    theap_remove(w, a);
    a->deadline = UINT64_MAX;
    return;
  }
  a->deadline = deadline;
  if (a->tidx == PTS__NO_INDEX) {
    theap_set(w, w->tlen++, a);
    theap_up(w, a->tidx);
  } else {
    theap_up(w, a->tidx);
    theap_down(w, a->tidx);
  }
}

/* ---- drains ---- */

void pts__drain_complete(pts__drain_wait *d, int status) {
  pthread_mutex_lock(&d->mu);
  d->status = status;
  d->done = true;
  pthread_cond_signal(&d->cv);
  /* After this unlock the waiter may return and free d: touch nothing. */
  pthread_mutex_unlock(&d->mu);
}

static void drainers_complete(pts_agent *a, int status) {
  pts__drain_wait *d = a->drainers;
  a->drainers = NULL;
  while (d != NULL) {
    pts__drain_wait *next = d->next;
    pts__drain_complete(d, status);
    d = next;
  }
}

/* ---- the worker: polling, stepping, teardown ---- */

/* Keeps w->nready (agents whose last poll found a runnable task) as a's
 * urgency becomes u. */
/* ---- the watchdog's brackets (see "Runaway tasks" below) ----
 * Every call that runs an agent's code (a step, a run of in-place tasks, a
 * poll that applies commands, fires timers and runs microtasks) is a
 * bracket: the owner publishes it before and clears it after, then waits
 * if the watchdog holds its structures. Off (no watchdog) it costs a
 * branch on a field of the worker's own line. */
static void wd_wait(pts__worker *w);

static inline void wd_begin(pts__worker *w, pts_agent *a) {
  if (!w->wd_on) return;
  atomic_store_explicit(&w->wd_agent, a, memory_order_relaxed);
  /* release: the watchdog that reads this step sees the owner's
   * structures as they are during it. */
  atomic_store_explicit(&w->wd_step, (++w->wd_count << 1) | (w->wd_holding ? 0u : 1u),
                        memory_order_release);
}

static inline void wd_end(pts__worker *w) {
  if (!w->wd_on) return;
  /* seq_cst, both: a Dekker pair with the watchdog's claim, then its load
   * of wd_step (wd_claim_step): either the watchdog sees the step over, or
   * this load sees its claim. */
  atomic_store_explicit(&w->wd_step, 0, memory_order_seq_cst);
  if (atomic_load_explicit(&w->wd_claim, memory_order_seq_cst)) wd_wait(w);
}

static void track_ready(pts__worker *w, pts_agent *a, int u) {
  bool was = a->urgency != PTS__URGENCY_NONE, now = u != PTS__URGENCY_NONE;
  if (was != now) w->nready = now ? w->nready + 1 : w->nready - 1;
}

static void group_request(pts__worker *w, pts__origin *oe, pts__worker *t, bool by_balancer);

/* Whether a is the only agent on w under a policy that would pick it again
 * after every step (strict, round-robin, fair, randomized): then nothing
 * ranks its loop against another's, so its steps may run in bursts and its
 * polls may leave the inbox to them. */
static bool alone(const pts__worker *w) {
  return w->nagents == 1 && w->pool->opts.policy <= PTS_POLICY_RANDOMIZED;
}

/* Polls the agent's loop (inbox, due timers) and files it where it belongs.
 * leave_inbox (only for an agent alone on w): the poll may leave an inbox
 * that is all the work there is to the next step, whose in-place path runs
 * the plain posts in it (pts__agent_run_command) instead of queueing them.
 * An inbox whose producer is between its two push steps is then retried
 * rather than slept on, as the loop's own run does (sync/mpsc.h); an empty
 * inbox gets the full poll, so the worker can park. */
static void refresh(pts__worker *w, pts_agent *a, bool ran, uint64_t cpu_ns,
                    bool leave_inbox) {
  a->q_stale = false;
  /* The inbox's depth statistic, when there was or is an inbox: its four
   * counters' lines are not worth a look after every step of a loop
   * nobody posts to (at 64 loops a thread they miss the cache). Steps of a
   * burst drain the inbox too: the deepest of their passes. */
  uint64_t passed = pts__loop_take_drained_max(a->loop);
  if (passed != 0 || pts__loop_inbox_maybe_nonempty(a->loop)) {
    uint64_t depth = pts__agent_posted(a) - a->applied;
    if (passed > depth && depth < (UINT64_C(1) << 62)) depth = passed;
    if (depth > atomic_load_explicit(&a->st_inbox_max, memory_order_relaxed) &&
        depth < (UINT64_C(1) << 62))
      atomic_store_explicit(&a->st_inbox_max, depth, memory_order_relaxed);
  }
  pts__tls_agent = a;
  /* After a step of one of several loops, the step's own polling is fresh
   * (a command pushed since comes with a wake-up). */
  wd_begin(w, a);
  int u = ran && !leave_inbox ? pts__loop_poll_after_step(a->loop)
                              : pts__loop_poll(a->loop, leave_inbox);
  wd_end(w);
  pts__tls_agent = NULL;
  /* pts_loop_stop on a pool loop only wakes it: agents stop by destroy. */
  (void)pts__loop_take_stop(a->loop);
  track_ready(w, a, u);
  a->urgency = u;
  pts__policy_update(w, a, u, ran, cpu_ns);
  timer_update(w, a, pts__loop_next_deadline(a->loop));
  /* Drained: nothing runnable and no command left behind by the poll (the
   * loop re-signals itself when it leaves commands in the inbox). */
  if (a->drainers != NULL && u == PTS__URGENCY_NONE &&
      !atomic_load_explicit(&a->signaled, memory_order_seq_cst))
    drainers_complete(a, 0);
  /* A pts_agent_move request the poll (or the step before it) applied:
   * decided now, between two tasks, after a is filed (migration step 1). */
  if (a->req_target >= 0) {
    unsigned t = (unsigned)a->req_target;
    a->req_target = -1;
    group_request(w, a->oe, w->pool->w[t], false);
  }
}

/* ---- rounds: the worker's clock ----
 *
 * A clock read (pts__now_ns) costs 25-70 ns on the project's VM, more than
 * a step of a small task, and the worker used to make three per step. Now
 * it reads the clock once per round: up to r_limit steps (1 to
 * PTS__ROUND_MAX, as many as took ROUND_NS in the last round; always 1
 * under time-partitioned and quantized, whose slots are timed per step).
 * The round's time is charged to its steps evenly (pts_agent_stats.cpu_ns
 * is exact for an agent that runs a whole round, a mean otherwise), and the
 * worker's other uses of the time (due timers, the balancer's tick) take
 * the last reading, at most one round old (docs/agents.md, "Switches
 * between loops"). A round ends before anything changes agents[] (control
 * commands, departures), so it never holds an agent that left. */
#define ROUND_NS 2000

static bool exact_rounds(const pts__worker *w) {
  return w->pool->opts.policy >= PTS_POLICY_TIME_PARTITIONED;
}

/* Ends the round: reads the clock, charges the round's steps; returns the
 * round's length (ns). */
static uint64_t round_end(pts__worker *w) {
  uint64_t now = pts__now_ns(), el = now - w->clk;
  w->clk = now;
  if (w->r_total == 0) return 0;
  uint64_t per = el / w->r_total, rest = el - per * w->r_total;
  for (uint32_t i = 0; i < w->r_len; i++) { /* the remainder to the first */
    uint64_t c = per * w->r_steps[i] + (i == 0 ? rest : 0);
    stat_add(&w->r_agent[i]->st_cpu_ns, c);
    if (!exact_rounds(w)) pts__policy_charge(w, w->r_agent[i], c);
  }
  stat_add(&w->st_steps, w->r_total);
  stat_add(&w->st_busy_ns, el);
  w->r_limit = exact_rounds(w)          ? 1
               : per * PTS__ROUND_MAX <= ROUND_NS ? PTS__ROUND_MAX
               : per >= ROUND_NS                  ? 1
                                                  : (uint32_t)(ROUND_NS / per);
  w->r_total = w->r_len = 0;
  return el;
}

/* Starts the next round now (after the worker was idle). */
static void round_restart(pts__worker *w) {
  w->clk = pts__now_ns();
  w->r_total = w->r_len = 0;
}

static void round_add(pts__worker *w, pts_agent *a, uint32_t steps) {
  if (w->r_len != 0 && w->r_agent[w->r_len - 1] == a) {
    w->r_steps[w->r_len - 1] += steps;
  } else {
    w->r_agent[w->r_len] = a;
    w->r_steps[w->r_len++] = steps;
  }
  w->r_total += steps;
}

/* Steps one agent picked by the policy: one step, or a run of steps for as
 * long as the quantum lets it keep the thread (pts__policy_quantum; a run
 * looks at the clock every r_limit steps, about every ROUND_NS). An agent
 * alone on its worker (and not under the time-partitioned or quantized
 * policies, which time every step against their slots) runs a burst of up
 * to BURST steps with no look at the clock: with nobody to share the thread
 * with, the policy would pick it again after each step. Either way the
 * poll, the policy update and the statistics' stores are paid once per run
 * (docs/agents.md, "Hot paths" and "Switches between loops"). A run ends
 * early when a task did not run or a control command waits (an agent added
 * or destroyed), which it looks at every BURST_LOOK steps at most, or when
 * a pts_agent_move request was applied; one of several agents also ends
 * when another's wake-up arrives or a timer is due, and under strict when
 * its loop's next task is less urgent than its run began with. Each burst
 * ends with the worker's round (the poll, which gives the wake token back,
 * so the next post signals the worker again): with bursts of 64 a stream of
 * posts paid that round and a signal every 64 tasks, 16 per 1,000 posts;
 * with 1024, one (docs/agents.md, "Hot paths"). */
#define BURST 1024
#define BURST_LOOK 64

/* A run of one of several agents goes on after a step. */
static bool run_goes_on(pts__worker *w, pts_agent *a, uint64_t quantum, int urgency,
                        uint32_t *look) {
  if (w->pool->opts.policy == PTS_POLICY_STRICT) {
    wd_begin(w, a);
    int u = pts__loop_poll_after_step(a->loop);
    wd_end(w);
    if (u < urgency) return false; /* a less urgent task next: another loop may come first */
  }
  if (--*look != 0) return true;
  *look = w->r_limit;
  uint64_t now = pts__now_ns();
  return now - w->clk < quantum && (w->tlen == 0 || w->arr->theap[0]->deadline > now);
}

static void run_step(pts__worker *w, pts_agent *a) {
  uint32_t steps = 0, by_urgency[PTS__URGENCY_COUNT] = {0};
  int last = -1; /* the class of a step's task (a turn of one step: its only one) */
  bool in_place = alone(w);
  uint64_t quantum = in_place ? 0 : pts__policy_quantum(w, a);
  bool run = in_place || quantum != 0;
  int urgency = a->urgency;
  uint32_t look = w->r_limit;
  pts__tls_agent = a;
  for (;;) {
    /* In a burst, a run of commands the loop runs in place (the plain posts
     * of a stream) is one call, each of them a step. */
    uint32_t max = BURST - steps < BURST_LOOK ? BURST - steps : BURST_LOOK;
    wd_begin(w, a);
    uint32_t n = in_place ? pts__loop_run_inbox(a->loop, max, by_urgency) : 0;
    bool ran = n > 0;
    if (ran) {
      steps += n;
    } else {
      ran = pts__loop_step(a->loop) == 1;
      steps++;
      if (ran) by_urgency[last = pts__loop_last_urgency(a->loop)]++;
    }
    wd_end(w);
    /* A push under way is seen at the next look (maybe_nonempty): the
     * worker looks again before it parks. */
    if (!run || !ran || steps >= BURST || a->req_target >= 0 ||
        pts__mpsc_maybe_nonempty(&w->control))
      break;
    if (!in_place && (pts__mpsc_maybe_nonempty(&w->signaled) ||
                      !run_goes_on(w, a, quantum, urgency, &look)))
      break;
  }
  pts__tls_agent = NULL;
  if (steps == 1 && last >= 0) { /* most turns at quantum 1: no loop over the classes */
    stat_add(&a->st_tasks[last > PTS__URGENCY_NONE ? last - 1 : PTS_CLASS_FIFO], 1);
  } else {
    for (int u = 0; u < PTS__URGENCY_COUNT; u++)
      if (by_urgency[u] != 0)
        stat_add(&a->st_tasks[u > PTS__URGENCY_NONE ? u - 1 : PTS_CLASS_FIFO], by_urgency[u]);
  }
  round_add(w, a, steps);
  uint64_t cpu = 0; /* the step's own time, for the slot policies */
  if (steps > 1 || w->r_total >= w->r_limit) cpu = round_end(w);
  refresh(w, a, true, exact_rounds(w) ? cpu : 0, in_place);
}

static void publish_layout(pts__worker *w) {
  pts__policy_layout(w, pts__now_ns());
  atomic_store_explicit(&w->st_agents, w->nagents, memory_order_relaxed);
  atomic_store_explicit(&w->st_frame_origin, w->frame_origin, memory_order_relaxed);
}

/* Appends the agent of an ADD to w's agents and attaches its loop; false if
 * the loop is held elsewhere. */
static bool agent_take(pts__worker *w, pts__ctl *c) {
  pts_agent *a = c->agent;
  if (c->arrays != NULL) warrays_install(w, c->arrays);
  c->arrays = NULL;
  a->idx = w->nagents;
  w->arr->agents[w->nagents++] = a;
  publish_layout(w);
  if (pts__loop_pool_attach(a->loop, agent_wake, a) != 0) {
    /* Only a caller running the loop by hand (a contract breach) gets here:
     * the agent stays placed but never runs. */
    fprintf(stderr, "ptsched: agent loop is running elsewhere; not attached\n");
    return false;
  }
  a->attached = true;
  return true;
}

static void group_take_token(pts__origin *oe, pts_agent *b);

static void agent_attach(pts__worker *w, pts__ctl *c) {
  pts_agent *a = c->agent;
  if (!agent_take(w, c)) return;
  a->sched = pts_global_scheduler(pts_loop_default_global(a->loop)); /* made by pts_agent_new */
  /* Its group waits to leave (migration step 2): it goes too. */
  if (a->oe->mv_to != NULL) {
    group_take_token(a->oe, a);
    w->mv_pending = true;
  }
  refresh(w, a, false, 0, false);
}

/* Migration protocol steps 4-5, on T: the whole group first, then its
 * polls (a request one of them applies leaves at leave_groups). */
static void group_arrive(pts__worker *w, pts__ctl *c) {
  pts_agent *head = c->agent;
  uint64_t t0 = head->oe->mv_t0;
  if (c->arrays != NULL) warrays_install(w, c->arrays);
  c->arrays = NULL;
  for (pts_agent *b = head; b != NULL; b = b->mv_next) {
    b->idx = w->nagents;
    w->arr->agents[w->nagents++] = b;
  }
  publish_layout(w);
  uint64_t k = 0;
  for (pts_agent *b = head; b != NULL; b = b->mv_next) {
    if (pts__loop_pool_attach(b->loop, agent_wake, b) == 0)
      b->attached = true;
    else /* as in agent_take: a contract breach, the agent never runs */
      fprintf(stderr, "ptsched: agent loop is running elsewhere; not attached\n");
    stat_add(&b->st_moves, 1);
    atomic_store_explicit(&b->signaled, false, memory_order_seq_cst); /* step 5 */
    k++;
  }
  w->wd_holding = true; /* the list of members */
  for (pts_agent *b = head; b != NULL; b = b->mv_next)
    if (b->attached) refresh(w, b, false, 0, false);
  w->wd_holding = false;
  /* Each member's move ends with the group's polls. */
  stat_add(&w->st_moves_in, k);
  stat_add(&w->st_move_ns, k * (pts__now_ns() - t0));
}

/* Takes a out of w's policy, timer heap and agents[] (teardown, move). */
static void agent_unplace(pts__worker *w, pts_agent *a) {
  track_ready(w, a, PTS__URGENCY_NONE);
  pts__policy_remove(w, a);
  theap_remove(w, a);
  a->deadline = UINT64_MAX;
  for (uint32_t i = a->idx + 1; i < w->nagents; i++) {
    w->arr->agents[i - 1] = w->arr->agents[i];
    w->arr->agents[i - 1]->idx = i - 1;
  }
  w->nagents--;
  publish_layout(w);
}

/* The loop may go (pts__loop_free_when): every command admitted before the
 * close was pushed and has left the inbox, and no admission without a
 * command is held (seq_cst: the close comes before this load, so a count it
 * misses comes after the close and was never sent). */
typedef struct admitted_wait {
  pts_agent *a;
  unsigned spins;
} admitted_wait;

static bool all_admitted_applied(void *ctx) {
  admitted_wait *aw = ctx;
  uint64_t n = 0;
  for (int r = 0; r < PTS__RANKS; r++)
    n += atomic_load_explicit(&aw->a->posted[r].n, memory_order_seq_cst);
  if (n == aw->a->applied) return true;
  cpu_relax(aw->spins++); /* a producer between its admission and its push */
  return false;
}

static void agent_teardown(pts__worker *w, pts_agent *a) {
  /* Destroy protocol step 4. */
  agent_unplace(w, a);
  if (w->plan == a) w->plan = NULL;
  /* Its group's move no longer waits for it (migration step 2): a token
   * the move holds means its node is on no queue. */
  pts__origin *oe = a->oe;
  bool token_held = a->mv_token == PTS__MV_HELD;
  if (a->mv_token == PTS__MV_WAIT) oe->mv_missing--;
  a->mv_token = PTS__MV_NONE;

  a->dead = true;
  pts__tls_agent = a;
  pts__agent_release_controllers(a);
  drainers_complete(a, PTS_ECLOSED);
  if (a->attached) pts__loop_pool_detach(a->loop);
  a->attached = false;
  admitted_wait aw = {a, 0};
  pts__loop_free_when(a->loop, all_admitted_applied, &aw);
  pts__tls_agent = NULL;
  /* The wake token, for good: a producer still on its way out of a push
   * finds it taken and leaves the worker alone; one inside agent_wake's slow
   * path is waited for. */
  bool queued = atomic_exchange_explicit(&a->signaled, true, memory_order_seq_cst) &&
                !token_held;
  unsigned spins = 0;
  while (atomic_load_explicit(&a->wakers, memory_order_seq_cst) != 0) cpu_relax(spins++);
  a->loop = NULL;
  a->sched = NULL;
  drainers_complete(a, PTS_ECLOSED); /* ones whose marker was released */

  pts_pool *pool = a->pool;
  pthread_mutex_lock(&pool->mu);
  if (a->reg_prev)
    a->reg_prev->reg_next = a->reg_next;
  else
    pool->registry = a->reg_next;
  if (a->reg_next) a->reg_next->reg_prev = a->reg_prev;
  if (a->pinned) oe->pinned--;
  bool members_left = --oe->agents != 0;
  if (!members_left) {
    pts__origin **pp = &pool->origins;
    while (*pp != oe) pp = &(*pp)->next;
    *pp = oe->next;
    pool->w[oe->thread]->norigins--; /* a moved origin counts where it went */
    pts__free(oe->name);
    pts__free(oe);
  }
  a->oe = NULL;
  w->nplaced--;
  pool->nagents--;
  pthread_cond_broadcast(&pool->cv);
  pthread_mutex_unlock(&pool->mu);
  /* The rest of the group may leave now. */
  if (members_left && oe->mv_to != NULL) w->mv_pending = true;

  pthread_mutex_lock(&a->mu);
  a->destroyed = true;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);

  /* The worker's reference: if the node is on the signaled queue (or being
   * pushed there), the pop drops it. */
  if (queued)
    a->unref_on_pop = true;
  else
    pts_agent_unref(a);
}

/* ---- migration and the balancer ---- */

static void push_ctl(pts__worker *w, pts__ctl *c);

/* Migration step 1 for one member: its wake token, or a wait for its node. */
static void group_take_token(pts__origin *oe, pts_agent *b) {
  if (b->mv_token != PTS__MV_NONE) return;
  if (atomic_exchange_explicit(&b->signaled, true, memory_order_seq_cst)) {
    b->mv_token = PTS__MV_WAIT; /* its node is on our queue: ours when it pops */
    oe->mv_missing++;
  } else {
    b->mv_token = PTS__MV_HELD;
  }
}

/* Drops the group's move: every token it holds goes back. The member's
 * node is pushed to our own signaled queue, as a producer would, so its pop
 * clears the token and polls the loop for the commands that came meanwhile
 * (wake protocol step 3), after whatever the caller is in the middle of. */
static void group_cancel(pts__worker *w, pts__origin *oe) {
  oe->mv_to = NULL;
  oe->mv_missing = 0;
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts_agent *b = w->arr->agents[i];
    if (b->oe != oe) continue;
    if (b->mv_token == PTS__MV_HELD) pts__mpsc_push(&w->signaled, &b->sig_node);
    b->mv_token = PTS__MV_NONE; /* a node still queued pops as usual */
  }
}

/* Migration step 2, on S, from leave_groups: whether the group left. It
 * leaves if every token is held and every member is here and open;
 * otherwise it waits (see the protocol). */
static bool group_try_leave(pts__worker *w, pts__origin *oe) {
  pts__worker *t = oe->mv_to;
  if (t == NULL || oe->mv_missing != 0) return false;
  uint64_t t0 = pts__now_ns();
  pts_pool *pool = w->pool;
  pthread_mutex_lock(&pool->mu);
  uint32_t k = 0;
  bool closed = false;
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts_agent *b = w->arr->agents[i];
    if (b->oe != oe) continue;
    k++;
    /* Relaxed: closed is set under this mutex. */
    closed |= atomic_load_explicit(&b->closed, memory_order_relaxed);
  }
  if (closed || k != oe->agents) { /* a destroy or an add is on its way here */
    pthread_mutex_unlock(&pool->mu);
    return false;
  }
  pts__warrays *arr = NULL;
  uint32_t cap = t->planned_cap;
  while (t->nplaced + k > cap) cap *= 2;
  if (cap != t->planned_cap) {
    if ((arr = warrays_new(cap)) == NULL) {
      /* Out of memory: the move is dropped, nothing changed. */
      pthread_mutex_unlock(&pool->mu);
      group_cancel(w, oe);
      return false;
    }
    t->planned_cap = cap;
  }
  oe->thread = t->index; /* new agents of the origin are placed there */
  w->norigins--;
  t->norigins++;
  if (oe->mv_balancer) oe->moved_at = t0;
  oe->mv_to = NULL;
  /* From the end: each leaves agents[] (the list keeps their order). */
  pts_agent *head = NULL;
  for (uint32_t i = w->nagents; i-- > 0;) {
    pts_agent *b = w->arr->agents[i];
    if (b->oe != oe) continue;
    agent_unplace(w, b);
    if (w->plan == b) w->plan = NULL;
    if (b->attached) pts__loop_pool_detach(b->loop);
    b->attached = false;
    b->mv_token = PTS__MV_NONE; /* T gives the token back (step 5) */
    /* release: pts__on_agent_thread's acquire sees the detach. */
    atomic_store_explicit(&b->w, t, memory_order_release);
    atomic_store_explicit(&b->thread, (int)t->index, memory_order_relaxed);
    b->mv_next = head;
    head = b;
  }
  w->nplaced -= k;
  t->nplaced += k;
  oe->mv_t0 = t0;
  oe->ctl_move.kind = PTS__CTL_MOVE;
  oe->ctl_move.agent = head;
  oe->ctl_move.arrays = arr;
  push_ctl(t, &oe->ctl_move); /* release: T's pop sees all of the above */
  stat_add(&w->st_moves_out, k);
  pthread_mutex_unlock(&pool->mu);
  return true;
}

/* The worker loop's point for departures (migration step 2): every group
 * here that holds its tokens tries to leave. Its agents are not touched
 * again: their new worker may free one at once. */
static void leave_groups(pts__worker *w) {
  w->mv_pending = false;
  (void)round_end(w); /* agents[] may change */
  for (uint32_t i = 0; i < w->nagents;) {
    pts__origin *oe = w->arr->agents[i]->oe;
    if (oe->mv_to != NULL && group_try_leave(w, oe))
      i = 0; /* agents[] changed */
    else
      i++;
  }
}

/* Migration step 1: moves oe's group, all on w, to t (same-origin agents
 * share a thread); the last decision wins, one for w itself cancels a move
 * not yet made. Owner, between two tasks. */
static void group_request(pts__worker *w, pts__origin *oe, pts__worker *t, bool by_balancer) {
  if (t == w) {
    if (oe->mv_to != NULL) group_cancel(w, oe);
    return;
  }
  bool started = oe->mv_to != NULL;
  oe->mv_to = t;
  oe->mv_balancer = by_balancer;
  w->mv_pending = true;
  if (started) return; /* the tokens are being taken already */
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts_agent *b = w->arr->agents[i];
    if (b->oe == oe) group_take_token(oe, b);
  }
}

/* The balancer (docs/agents.md, "Balancer"), on a busy worker w. Over a
 * window of at least one tick in which w had more than one ready agent, it
 * looks for a worker that is idle now (hungry) and was busy at most half of
 * the window, and gives it the origin whose agents' CPU time in the window
 * splits w's busy time most evenly, if both parts had at least 1/BAL_SHARE
 * of the window. Pinned origins and origins it moved in the last
 * BAL_RESIDENCE_NS stay. */
static void balance_tick(pts__worker *w, uint64_t now) {
  w->bal_next = now + BAL_TICK_NS;
  if (w->plan != NULL) {
    if (now < w->plan_until) return; /* waiting for the target */
    w->plan = NULL;                   /* it never came: decide again */
  }
  if (w->nready < 2) {
    w->bal_armed = false;
    return;
  }
  pts_pool *pool = w->pool;
  /* Relaxed: statistics, single writer each. */
  uint64_t busy = atomic_load_explicit(&w->st_busy_ns, memory_order_relaxed);
  if (!w->bal_armed) { /* open a window */
    w->bal_armed = true;
    w->bal_t0 = now;
    w->bal_busy0 = busy;
    for (uint32_t i = 0; i < w->nagents; i++) {
      pts_agent *a = w->arr->agents[i];
      a->bal_cpu0 = atomic_load_explicit(&a->st_cpu_ns, memory_order_relaxed);
    }
    for (unsigned j = 0; j < pool->n; j++)
      w->bal_peer0[j] = atomic_load_explicit(&pool->w[j]->st_busy_ns, memory_order_relaxed);
    return;
  }
  uint64_t win = now - w->bal_t0;
  w->bal_armed = false; /* one decision per window */
  pts__worker *t = NULL;
  uint64_t tbusy = UINT64_MAX;
  for (unsigned j = 0; j < pool->n; j++) {
    pts__worker *o = pool->w[j];
    if (o == w || !atomic_load_explicit(&o->hungry, memory_order_relaxed)) continue;
    uint64_t b = atomic_load_explicit(&o->st_busy_ns, memory_order_relaxed) - w->bal_peer0[j];
    if (b * 2 <= win && b < tbusy) {
      t = o;
      tbusy = b;
    }
  }
  if (t == NULL) return;
  uint64_t sbusy = busy - w->bal_busy0;
  pts_agent *pick = NULL;
  uint64_t best = UINT64_MAX;
  pthread_mutex_lock(&pool->mu); /* origin records */
  for (uint32_t i = 0; i < w->nagents; i++) w->arr->agents[i]->oe->bal_cpu = 0;
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts_agent *a = w->arr->agents[i];
    a->oe->bal_cpu += atomic_load_explicit(&a->st_cpu_ns, memory_order_relaxed) - a->bal_cpu0;
  }
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts_agent *a = w->arr->agents[i];
    pts__origin *oe = a->oe;
    if (a->urgency == PTS__URGENCY_NONE || oe->pinned != 0 || oe->mv_to != NULL ||
        (oe->moved_at != 0 && now - oe->moved_at < BAL_RESIDENCE_NS))
      continue;
    uint64_t c = oe->bal_cpu, rest = sbusy > c ? sbusy - c : 0;
    if (c * BAL_SHARE < win || rest * BAL_SHARE < win) continue;
    uint64_t d = c > rest ? c - rest : rest - c;
    if (d < best) {
      best = d;
      pick = a;
    }
  }
  pthread_mutex_unlock(&pool->mu);
  if (pick == NULL) return;
  /* Plan the move and wake the target: it asks for the loop once awake
   * (balance_take), so the loop keeps running here meanwhile and waits for
   * no wake-up once detached. */
  w->plan = pick;
  w->plan_to = t;
  w->plan_until = now + BAL_PLAN_NS;
  atomic_store_explicit(&w->taker, false, memory_order_relaxed);
  atomic_store_explicit(&t->invite, (int)w->index + 1, memory_order_relaxed);
  pts__parker_unpark(&t->parker);
}

/* The giver: the planned move, once its target is awake. */
static void balance_give(pts__worker *w) {
  if (!atomic_load_explicit(&w->taker, memory_order_relaxed)) return;
  atomic_store_explicit(&w->taker, false, memory_order_relaxed);
  pts_agent *a = w->plan;
  w->plan = NULL;
  group_request(w, a->oe, w->plan_to, true);
}

/* The target, about to park: an invitation takes the loop it offers. */
static void balance_take(pts__worker *w) {
  if (atomic_load_explicit(&w->invite, memory_order_relaxed) == 0) return;
  int from = atomic_exchange_explicit(&w->invite, 0, memory_order_relaxed);
  if (from == 0) return;
  atomic_store_explicit(&w->pool->w[from - 1]->taker, true, memory_order_relaxed);
  uint64_t t0 = pts__now_ns();
  while (pts__mpsc_is_empty(&w->control) && pts__mpsc_is_empty(&w->signaled) &&
         pts__now_ns() - t0 < BAL_TAKE_SPIN_NS)
    cpu_relax(0);
}

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
#define WD_MIN_NS UINT64_C(100000)
#define WD_MAX_NS UINT64_C(1000000000)

static void wd_wait(pts__worker *w) {
  unsigned spins = 0;
  /* acquire: pairs with the watchdog's release, so its changes are seen. */
  while (atomic_load_explicit(&w->wd_claim, memory_order_acquire)) cpu_relax(spins++);
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
  (void)round_end(w); /* agents[] changes */
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
    group_request(w, oe, t, true);
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
    if (oe != stuck->oe && oe->mv_to != NULL && group_try_leave(w, oe))
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

static int watchdog_start(pts_pool *pool) {
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

static void watchdog_stop(pts_pool *pool) {
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

/* Returns true on shutdown. */
static bool drain_control(pts__worker *w) {
  /* A push under way is seen at the next round: idle() looks again before
   * it parks. */
  if (!pts__mpsc_maybe_nonempty(&w->control)) return false;
  (void)round_end(w); /* agents[] may change */
  pts__mpsc_node *n;
  while ((n = pts__mpsc_pop(&w->control)) != NULL) {
    pts__ctl *c = container_of(n, pts__ctl, node);
    switch (c->kind) {
      case PTS__CTL_ADD:
        agent_attach(w, c);
        break;
      case PTS__CTL_DESTROY:
        agent_teardown(w, c->agent);
        break;
      case PTS__CTL_MOVE:
        group_arrive(w, c);
        break;
      default:
        return true;
    }
  }
  return false;
}

/* Quantized: whether a's poll waits for its own slot (study.h): true when
 * the slot at now belongs to another agent. */
static bool quant_defer(pts__worker *w, pts_agent *a, uint64_t now) {
  if (w->pool->opts.policy != PTS__POLICY_QUANTIZED) return false;
  pts_agent *owner = pts__quant_owner(w, now);
  if (owner == NULL || owner == a) return false;
  a->q_stale = true;
  return true;
}

static void drain_signaled(pts__worker *w) {
  if (!pts__mpsc_maybe_nonempty(&w->signaled)) return; /* as drain_control */
  pts__mpsc_node *n;
  uint64_t now = 0;
  while ((n = pts__mpsc_pop(&w->signaled)) != NULL) {
    pts_agent *a = container_of(n, pts_agent, sig_node);
    if (a->dead) { /* the teardown keeps the token: the node stays off */
      if (a->unref_on_pop) pts_agent_unref(a);
      continue;
    }
    if (a->mv_token == PTS__MV_WAIT) {
      /* Migration step 1: the token is ours now, the group's move goes on. */
      a->mv_token = PTS__MV_HELD;
      a->oe->mv_missing--;
      w->mv_pending = true;
      continue;
    }
    /* Wake protocol step 3: off the queue first, then clear, then poll. */
    atomic_store_explicit(&a->signaled, false, memory_order_seq_cst);
    if (!a->attached) continue;
    if (now == 0 && w->pool->opts.policy == PTS__POLICY_QUANTIZED) now = pts__now_ns();
    if (!quant_defer(w, a, now)) refresh(w, a, false, 0, alone(w));
  }
}

static void fire_timers(pts__worker *w, uint64_t now) {
  /* Collect first: a poll re-files the agent, maybe still due (a timer the
   * loop declines to fire now must not spin this loop). */
  pts_agent *due = NULL;
  while (w->tlen > 0 && w->arr->theap[0]->deadline <= now) {
    pts_agent *a = w->arr->theap[0];
    theap_remove(w, a);
    a->deadline = UINT64_MAX;
    a->due_next = due;
    due = a;
  }
  w->wd_holding = due != NULL && due->due_next != NULL; /* the list of due agents */
  while (due != NULL) {
    pts_agent *a = due;
    due = a->due_next;
    if (due == NULL) w->wd_holding = false; /* the last one: nothing held */
    if (!quant_defer(w, a, now)) refresh(w, a, false, 0, false);
  }
  /* Quantized: the slot's owner gets the polls it was denied. */
  if (w->pool->opts.policy == PTS__POLICY_QUANTIZED) {
    pts_agent *owner = pts__quant_owner(w, now);
    if (owner != NULL && owner->q_stale) refresh(w, owner, false, 0, false);
  }
}

/* Quantized, real clock: how late a timed park wakes on this worker thread
 * (a decaying maximum, ns). A step may begin only in the first slot - guard
 * of its slot (31 us with the guard's cap) and a park wakes 50-250 us late
 * (timer slack, VM), so before a boundary whose owner has work the worker
 * parks until boundary - lead, then spins to it. Thread-local: each worker
 * learns its own lateness, and nothing outside this file reads it. */
static _Thread_local uint64_t q_late = 50000;

static uint64_t quant_lead(const pts__worker *w) {
  uint64_t cap = w->pool->q.slot_ns / 2; /* never spin through most of a slot */
  uint64_t lead = q_late + q_late / 2 + 10000;
  return lead < cap ? lead : cap;
}

static void quant_learn(uint64_t late) {
  if (late > q_late)
    q_late = late > 1000000 ? 1000000 : late; /* a preemption, not a wake-up */
  else
    q_late -= (q_late - late) / 32;
}

/* Quantized (study.h, the padded pass): whether a pass now leaves the
 * wake-up queue and the timers alone: no pass is due in this run of the
 * owner's slots and the slot's owner has work. */
static bool quant_holding(pts__worker *w, uint64_t now) {
  if (w->pool->opts.policy != PTS__POLICY_QUANTIZED || w->pool->q.no_hold) return false;
  if (pts__quant_run(w, now) != w->q_pass_run) return false; /* a pass is due */
  pts_agent *owner = pts__quant_owner(w, now);
  return owner != NULL && owner->urgency != PTS__URGENCY_NONE;
}

/* quant_holding for the worker's pass: the first pass of each run reads
 * the queue and the timers and ends at *pad_end (a fixed length); later
 * passes read them only while the slot's owner has nothing to run. */
static bool quant_hold(pts__worker *w, uint64_t now, uint64_t *pad_end) {
  *pad_end = 0;
  if (w->pool->opts.policy != PTS__POLICY_QUANTIZED || w->pool->q.no_hold) return false;
  uint64_t k = pts__quant_run(w, now);
  if (k != w->q_pass_run) {
    w->q_pass_run = k;
    *pad_end = now + w->pool->q.pad_ns;
    return false;
  }
  return quant_holding(w, now);
}

/* Spins until t or until a queue gets work (quantized with the hold: the
 * wake-up queue waits for the run-start pass). Returns true at t. */
static bool quant_spin(pts__worker *w, uint64_t t) {
  bool hold = !w->pool->q.no_hold;
  while ((hold || pts__mpsc_is_empty(&w->signaled)) && pts__mpsc_is_empty(&w->control)) {
    if (pts__now_ns() >= t) return true;
    cpu_relax(0);
  }
  return false;
}

static void idle(pts__worker *w, uint64_t until) {
  uint64_t slot_start = UINT64_MAX;
  /* A wake-up the hold keeps may be the next owner's: spin for it too, so
   * that owner starts on its boundary (its poll comes with the pass). */
  if (w->pool->opts.policy == PTS__POLICY_QUANTIZED && until != UINT64_MAX &&
      (pts__quant_owner_ready(w, until) ||
       (!w->pool->q.no_hold && !pts__mpsc_is_empty(&w->signaled))))
    slot_start = until;
  if (w->tlen > 0 && w->arr->theap[0]->deadline < until)
    until = w->arr->theap[0]->deadline;
  uint64_t t0 = pts__now_ns();
  if (until <= t0) return;
  if (slot_start == until) {
    uint64_t lead = quant_lead(w);
    if (until - t0 <= lead) {
      (void)quant_spin(w, until);
      return;
    }
    until -= lead; /* park to just before the boundary, then spin (next pass) */
  }
  /* Balancer: nothing is ready here; a busy worker may give us a loop. */
  if (w->pool->balance) {
    if (!atomic_load_explicit(&w->hungry, memory_order_relaxed))
      atomic_store_explicit(&w->hungry, true, memory_order_relaxed);
    balance_take(w);
    if (!pts__mpsc_is_empty(&w->control)) return;
  }
  /* Command blocks of other threads go back before we sleep, so their
   * posters can reuse them (sync/nodecache.h). */
  pts__node_flush();
  pts__parker_prepare(&w->parker);
  /* A wake-up the hold keeps for the next run start does not cancel the
   * park (which ends at that boundary): spinning on it burnt the CPU. */
  bool held = quant_holding(w, t0);
  if ((!held && !pts__mpsc_is_empty(&w->signaled)) || !pts__mpsc_is_empty(&w->control)) {
    pts__parker_cancel(&w->parker);
    return;
  }
  pts__parker_park(&w->parker, until == UINT64_MAX ? PTS__PARK_FOREVER : until - t0);
  uint64_t t1 = pts__now_ns();
  if (slot_start != UINT64_MAX && t1 >= until) quant_learn(t1 - until);
  stat_add(&w->st_idle_ns, t1 - t0);
  stat_add(&w->st_wakeups, 1);
}

static void *worker_main(void *arg) {
  pts__worker *w = arg;
  pts__tls_worker = w;
  /* Quantized: timed parks end at slot boundaries; the default 50 us timer
   * slack alone would overshoot a slot's start window. */
  if (w->pool->opts.policy == PTS__POLICY_QUANTIZED) (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  bool exact = exact_rounds(w);
  w->r_limit = 1;
  round_restart(w);
  for (;;) {
    if (drain_control(w)) break;
    /* The slot policies need the time now; the others the round's. */
    uint64_t now = exact ? pts__now_ns() : w->clk, pad_end;
    if (!quant_hold(w, now, &pad_end)) {
      if (pts__mpsc_maybe_nonempty(&w->signaled)) drain_signaled(w);
      if (exact) now = pts__now_ns();
      fire_timers(w, now);
      while (now < pad_end) { /* a fixed-length pass: its work does not show */
        cpu_relax(0);
        now = pts__now_ns();
      }
    }
    if (w->plan != NULL) balance_give(w);
    if (w->pool->balance && now >= w->bal_next) balance_tick(w, now);
    if (w->mv_pending) leave_groups(w);
    uint64_t until = UINT64_MAX;
    pts_agent *a = pts__policy_pick(w, now, &until);
    if (a != NULL) {
      /* Relaxed: a hint for other workers' balancers, no data behind it. */
      if (atomic_load_explicit(&w->hungry, memory_order_relaxed))
        atomic_store_explicit(&w->hungry, false, memory_order_relaxed);
      if (exact) w->clk = now;
      run_step(w, a);
      continue;
    }
    (void)round_end(w);
    idle(w, until);
    round_restart(w);
  }
  /* Shutdown: every agent was torn down first (shutdown protocol step 3);
   * drop the references of nodes still on the signaled queue. */
  while (!pts__mpsc_is_empty(&w->signaled)) drain_signaled(w);
  pts__node_flush(); /* blocks the teardowns released go home */
  return NULL;
}

/* ---- the pool ---- */

static void worker_free(pts__worker *w) {
  if (w == NULL) return;
  pts__free(w->arr);
  pts__free(w->bal_peer0);
  pts__free(w);
}

static void push_ctl(pts__worker *w, pts__ctl *c) {
  pts__mpsc_push(&w->control, &c->node);
  pts__parker_unpark(&w->parker);
}

static void stop_workers(pts_pool *pool) {
  watchdog_stop(pool);
  for (unsigned i = 0; i < pool->n; i++) {
    pts__worker *w = pool->w[i];
    if (w == NULL || !w->started) continue;
    w->ctl_shutdown.kind = PTS__CTL_SHUTDOWN;
    push_ctl(w, &w->ctl_shutdown);
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
                       int npolicies, pts_pool **out) {
  if (out == NULL) return PTS_EINVAL;
  pts_pool_options o = {0}; /* PTS_POLICY_STRICT is 0 */
  if (opts != NULL) o = *opts;
  if ((unsigned)o.policy >= (unsigned)npolicies) return PTS_EINVAL;
  if (o.quantum_ns > PTS__QUANTUM_MAX_NS) return PTS_EINVAL;
  if (o.watchdog_ns != 0 && (o.watchdog_ns < WD_MIN_NS || o.watchdog_ns > WD_MAX_NS))
    return PTS_EINVAL;
  if (o.quantum_ns == 0) o.quantum_ns = PTS_QUANTUM_DEFAULT_NS;
  pts__quant_options qo = {0, 0, 0, 0, false};
  if (q != NULL) qo = *q;
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
    w->arr = warrays_new(w->planned_cap);
    if (w->arr == NULL) goto fail;
    atomic_init(&w->hungry, false);
    atomic_init(&w->invite, 0);
    atomic_init(&w->taker, false);
    w->wd_on = o.watchdog_ns != 0; /* before the thread starts */
    if (pool->balance && (w->bal_peer0 = pts__calloc(o.threads, sizeof *w->bal_peer0)) == NULL)
      goto fail;
    pts__policy_init(w);
  }
  for (unsigned i = 0; i < o.threads; i++) {
    pts__worker *w = pool->w[i];
    if (pthread_create(&w->tid, NULL, worker_main, w) != 0) goto fail;
    w->started = true;
  }
  if (o.watchdog_ns != 0 && watchdog_start(pool) != 0) goto fail;
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
  return pool_create(opts, NULL, PTS_POLICY_COUNT, out);
}

int pts__pool_new_ext(const pts_pool_options *opts, const pts__quant_options *q,
                      pts_pool **out) {
  return pool_create(opts, q, PTS__POLICY_COUNT_ALL, out);
}

const char *pts__policy_name_ext(int policy) {
  return policy == PTS__POLICY_QUANTIZED ? "quantized" : pts_policy_name(policy);
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
  for (pts_agent *a = pool->registry; a != NULL; a = a->reg_next) {
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
  atomic_init(&a->closed, false);
  atomic_init(&a->wakers, 0);
  atomic_init(&a->signaled, false);
  atomic_init(&a->refs, 2); /* the caller's and the worker's */
  atomic_init(&a->w, NULL);
  atomic_init(&a->thread, -1);
  atomic_init(&a->move_req, 0);
  atomic_init(&a->delay_stats, false); /* off until asked for (2.0) */
  a->req_cmd.fn = move_req_cmd;
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
    a->ctl_add.arrays = warrays_new(w->planned_cap * 2);
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
  a->reg_next = pool->registry;
  if (pool->registry) pool->registry->reg_prev = a;
  pool->registry = a;
  a->ctl_add.kind = PTS__CTL_ADD;
  a->ctl_add.agent = a;
  /* Under the mutex: a concurrent shutdown cannot free the worker before
   * this push and unpark are done. */
  push_ctl(w, &a->ctl_add);
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
    push_ctl(atomic_load_explicit(&a->w, memory_order_relaxed), &a->ctl_destroy);
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

int pts_agent_drain(pts_agent *a) {
  if (a == NULL) return PTS_EINVAL;
  if (pts__tls_worker != NULL) return PTS_EBUSY;
  pts__drain_wait d;
  memset(&d, 0, sizeof d);
  d.cmd.fn = drain_cmd;
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
