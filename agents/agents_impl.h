/* agents/agents_impl.h: the private structures of the agents layer (pool.c,
 * worker.c, migrate.c, watchdog.c, policy.c, remote.c, controllers.c).
 * Nothing outside agents/ includes this.
 *
 * Ownership and threads (the invariants every file keeps):
 * - A pts_pool owns its workers; a worker (one OS thread) owns the loops of the
 *   agents placed on it, its policy structures and its timer heap. Fields
 *   marked "owner" are touched only by that worker thread.
 * - A pts_agent is shared: its handle is reference counted (refs, atomic);
 *   each command that enters its loop is admitted first (pts__agent_admit:
 *   its rank's count, then the closed flag), until a destroy sets closed;
 *   everything else cross-thread is a relaxed counter.
 * - The teardown frees the loop only once every admitted command was pushed
 *   and has left the inbox, and leaves the worker only once no producer is
 *   inside the wake hook's slow path: after that no other thread can touch
 *   the loop or the worker on the agent's behalf (pool.c, destroy
 *   protocol).
 */
#ifndef PTSCHED_AGENTS_IMPL_H
#define PTSCHED_AGENTS_IMPL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "loop/loop_internal.h"
#include "agents/study.h"
#include "ptsched/agents.h"
#include "sync/mpsc.h"
#include "sync/parker.h"
#include "sync/intrusive.h"

typedef struct pts__worker pts__worker;
typedef struct pts__drain_wait pts__drain_wait;

/* The rank of a command of this layer: a plain postTask (no done callback,
 * controller or delay) ranks as its priority (pts_priority); an ordinary task
 * of the timer, message or generic source (pts_agent_queue_task) ranks as
 * user-visible, because its class (FIFO) is that of a user-visible postTask
 * and the two are picked in enqueue order; every other command ranks above
 * them all. The pool thread runs a plain post or an ordinary task in place
 * only while no command of a higher rank waits in the inbox (remote.c,
 * docs/agents.md "Hot paths"). */
enum { PTS__RANK_OTHER = PTS_PRIORITY_COUNT, PTS__RANKS };

/* Commands of one rank admitted so far (pts__agent_admit): one line each,
 * so the pool thread's reads of the ranks nobody is posting at stay in its
 * cache. */
typedef struct pts__posted {
  _Alignas(64) _Atomic uint64_t n;
} pts__posted;

#define PTS__NO_INDEX UINT32_MAX

/* The most steps a worker runs between two readings of the clock (worker.c,
 * "rounds"): the cap on a round of steps shorter than ROUND_NS / 64 (31 ns),
 * which a round of about 2 us would otherwise hold more of; it is also how
 * many steps a round of such steps can last if they suddenly grow long. */
#define PTS__ROUND_MAX 64
/* The longest quantum pts_pool_new accepts (1 s): longer would let one loop
 * keep a thread for human-visible time. */
#define PTS__QUANTUM_MAX_NS UINT64_C(1000000000)

/* ---- control commands of a worker (add, destroy, shutdown) ---- */

/* ADD: a new agent; DESTROY; MOVE: a same-origin group arriving from another
 * worker (migration protocol, migrate.c); SHUTDOWN. */
enum { PTS__CTL_ADD = 1, PTS__CTL_DESTROY, PTS__CTL_MOVE, PTS__CTL_SHUTDOWN };

/* Arrays of a worker, replaced whole when it grows (allocated by the creator
 * of the agent that needs the room, so the worker never allocates). */
typedef struct pts__warrays {
  uint32_t cap;
  pts_agent **agents; /* placement order */
  pts_agent **heap;   /* policy heap (strict, fair) */
  pts_agent **theap;  /* timer heap */
  uint64_t *fen;      /* Fenwick tree, 1-based, cap + 1 entries */
} pts__warrays;

typedef struct pts__ctl {
  pts__mpsc_node node;
  int kind;
  pts_agent *agent; /* MOVE: the group's first member, the rest by mv_next */
  pts__warrays *arrays; /* ADD: new arrays to install first, or NULL */
} pts__ctl;

/* The pool's record of an origin placed on a thread: its group, the unit of
 * every move (migrate.c, migration protocol). All its agents are on one worker,
 * `thread`, or travel there together in one MOVE. */
typedef struct pts__origin {
  struct pts__origin *next;
  char *name;
  unsigned thread;   /* under the pool's mutex */
  uint32_t agents;   /* registered agents of the group, under the mutex */
  uint32_t pinned;   /* agents of it that are pinned: the balancer skips it */
  uint64_t moved_at; /* when the balancer last moved it (pts__now_ns) */
  uint64_t bal_cpu;  /* balancer scratch: CPU time of its agents in the window */
  /* Owner (the worker the group is on): a move decided and waiting to
   * leave (migration steps 1-2): its target, how many members' wake tokens
   * it still waits for, whether the balancer made it; the arrival command
   * (one in flight at a time) and when the group left. */
  pts__worker *mv_to;
  uint32_t mv_missing;
  bool mv_balancer;
  pts__ctl ctl_move;
  uint64_t mv_t0;
} pts__origin;

/* A member's wake token during a group move (pts_agent.mv_token): not
 * taken; taken but still on the worker's signaled queue (it is ours when
 * the node pops); held by the mover. */
enum { PTS__MV_NONE = 0, PTS__MV_WAIT, PTS__MV_HELD };

struct pts_agent {
  /* Commands of this layer admitted, by rank: the admission itself (their
   * sum less `applied`: the inbox depth). */
  pts__posted posted[PTS__RANKS];
  /* The wake hook's line: written by the first producer after a drain. */
  _Alignas(64) atomic_bool signaled;
  /* Producers inside agent_wake's slow path (the node's push and the
   * unpark): the teardown waits for none, after it took the token. */
  _Atomic uint32_t wakers;
  pts__mpsc_node sig_node;
  _Alignas(64) _Atomic uint32_t refs;

  /* The worker that owns the loop, or that it is moving to, and its index:
   * written by a mover under the pool's mutex (migration protocol, migrate.c),
   * read anywhere (relaxed; the protocol orders what matters). */
  _Atomic(pts__worker *) w;
  _Atomic int thread;
  /* pts_agent_move: the requested thread + 1, 0 = none (last request wins). */
  _Atomic int move_req;

  /* Posts are timed for the start-delay histogram (pts_agent_set_delay_stats):
   * read by every poster, written rarely. */
  atomic_bool delay_stats;
  /* Set once by the destroy, under the pool's mutex: no command is admitted
   * after it (pts__agent_admit). Read by every producer. */
  atomic_bool closed;
  /* Most limited commands in the inbox (pts_agent_limits.inbox;
   * UINT64_MAX: none): set at creation, read by every producer. */
  uint64_t inbox_limit;
  /* Set at creation, read-only after. */
  pts_pool *pool; /* valid while an admission is held */
  bool pinned;
  uint32_t weight;
  uint64_t id;
  char *origin;
  pts__origin *oe; /* under the pool's mutex */
  pts__list reg_link; /* on the pool's registry, under its mutex */
  /* The loop: set at creation, cleared by the worker once freed. Other threads
   * read it only while they hold an admission. */
  pts_loop *loop;
  pts__ctl ctl_add, ctl_destroy;
  /* pts_agent_move: the request travels through the loop's inbox, so it
   * reaches whichever worker owns the loop when it is applied. */
  pts__command req_cmd;

  /* Destroy completion, for pts_agent_destroy(wait). */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool destroyed; /* under mu */

  /* Owner (the worker thread). */
  pts_scheduler *sched;
  bool attached;
  bool dead;          /* torn down */
  bool unref_on_pop;  /* torn down while its node was on the signaled queue */
  int urgency;        /* PTS__URGENCY_* from the last poll */
  uint32_t idx;       /* position in the worker's agents[] */
  uint32_t hidx;      /* position in the policy heap, or PTS__NO_INDEX */
  uint32_t tidx;      /* position in the timer heap, or PTS__NO_INDEX */
  uint32_t r_slot;    /* 1 + its entry in the worker's round (r_agent), 0 = none */
  uint64_t deadline;  /* next timer deadline (loop time), UINT64_MAX = none */
  uint64_t ready_since;
  uint64_t vruntime;
  uint64_t tickets;   /* randomized: weight when ready, else 0 */
  pts__list rr_link; /* on its worker's rr while ready (round-robin) */
  struct pts_agent *due_next;
  struct pts_agent *wd_next; /* the watchdog's list of wake-ups to give back */
  uint64_t applied; /* commands of this layer applied (or released) */
  uint64_t applied_rank[PTS__RANKS]; /* the same, by rank */
  int mv_token;         /* PTS__MV_*: its wake token in its group's move */
  struct pts_agent *mv_next; /* the next member of a group in flight */
  int req_target;       /* a pts_agent_move request applied, or -1 */
  uint64_t bal_cpu0;    /* balancer: st_cpu_ns at the window's start */
  pts__list rcs;        /* registered remote controllers (link), LIFO */
  pts__drain_wait *drainers;

  /* Statistics: written by the owner only (relaxed), read by anyone. */
  _Atomic uint64_t st_tasks[PTS_CLASS_COUNT];
  _Atomic uint64_t st_cpu_ns;
  _Atomic uint64_t st_hist[PTS_DELAY_BUCKETS];
  _Atomic uint64_t st_applied;
  _Atomic uint64_t st_inbox_max;
  _Atomic uint64_t st_moves;
  /* Cross-thread posts accepted by the scheduler / refused as already
   * aborted (for the enqueue-order accounting of the stress tests). */
  _Atomic uint64_t st_posts_enqueued, st_posts_rejected;
  /* pts_agent_queue_task tasks the pool thread ran in place (for tests). */
  _Atomic uint64_t st_queued_in_place;
  /* Long steps (the watchdog's) and inbox refusals (producers'), both rare
   * RMWs; the loop counts the rest of the quotas' statistics. */
  _Atomic uint64_t st_long_tasks, st_inbox_refused;
  /* The inbox limit's counters (pts__inbox_take), touched only by agents
   * with one: places taken by producers (less the refused ones given
   * back) and the producers' last reading of inbox_applied, on their own
   * line; the owner's count of limited commands applied, on its own. */
  _Alignas(64) _Atomic uint64_t inbox_taken;
  _Atomic uint64_t inbox_seen;
  _Alignas(64) _Atomic uint64_t inbox_applied;

  /* Owner, quantized policy (agents/study.h): CPU time used in the current
   * epoch, the level (true: high), and the step guard: the last epoch's
   * (q_guard_prev) and the current epoch's so far (q_guard), each the 95th
   * percentile of the epoch's step lengths read from q_hist (step counts
   * in log buckets, PTS__Q_HIST_BUCKETS; q_hist_max: the longest step of
   * each, ns), with q_steps steps in it and q_above of them longer than
   * q_guard. */
  uint64_t q_busy, q_guard, q_guard_prev;
  uint32_t q_steps, q_above;
  bool q_high, q_known;
  bool q_stale; /* a poll deferred to the agent's own slot (study.h) */
  /* Ready at its last run but never started in it: the worker came later
   * than the run's start window (quantized.c, pts__quant_pick). */
  bool q_missed;
  uint64_t q_last_start; /* when it last started a step (the worker's clock) */
  uint32_t q_hist[PTS__Q_HIST_BUCKETS], q_hist_max[PTS__Q_HIST_BUCKETS];
};

struct pts__worker {
  pts__parker parker;
  pts__mpsc signaled; /* agents whose loop got a command */
  pts__mpsc control;  /* pts__ctl */
  pts_pool *pool;
  unsigned index;
  pthread_t tid;
  bool started;
  pts__ctl ctl_shutdown;

  /* Placement bookkeeping, under the pool's mutex. */
  uint32_t norigins, nplaced, planned_cap;

  /* Balancer (migrate.c, "Balancer"): hungry is set while the worker has
   * nothing ready and is about to park or parked (owner writes, others
   * read); invite = index + 1 of a worker that plans to give it a loop (the
   * giver writes it, this worker takes it); taker: the invited worker is
   * awake and waiting for the loop this worker planned to give. Hints: the
   * MOVE command carries everything that matters. */
  atomic_bool hungry;
  _Atomic int invite;
  atomic_bool taker;
  /* Stealing (migrate.c, balance_ask): index + 1 of a hungry worker asking
   * this one for a loop (the asker writes it); the owner answers 0 (given:
   * a MOVE is on its way) or minus the request (declined). A hint too. */
  _Atomic int steal_req;
  uint64_t hungry_since; /* owner: when it last became hungry */

  /* Owner. */
  pts_policy policy;   /* the pool's, copied to the worker's own lines */
  pts__vthread *vt;    /* the study's virtual thread running this worker, or NULL */
  /* Set when the worker loop starts (worker.c): every step timed (no
   * rounds), whether a lone loop may run bursts, and whether a loop that
   * ran a task stays filed unpolled until its next step (lazy_poll). */
  bool exact, bursts, lazy_poll;
  uint64_t quantum_ns; /* the pool's (pts_pool_options.quantum_ns) */
  pts__warrays *arr;
  uint32_t nagents, hlen, tlen;
  /* Round-robin: ready agents (rr_link) on a ring in turn order, rr_head
   * the next to run (NULL: none). A ring with no sentinel, so the end of a
   * turn is one pointer step (policy.c, "round-robin ring"). */
  pts__list *rr_head;
  uint64_t seq;      /* ready-since sequence (strict, fair ties) */
  uint64_t min_vr;   /* fair: floor for a newly ready agent */
  uint64_t total;    /* randomized: sum of tickets */
  uint64_t rng[4];   /* randomized: xoshiro256** state */
  uint64_t frame_origin; /* time-partitioned: start of slot 0 */
  uint32_t nready;       /* agents whose last poll found a runnable task */
  /* A group here may be ready to leave (migrate.c, leave_groups): departures
   * wait for the worker loop's own point, where no other step is under way
   * and no agent is being iterated, since a departed agent may be freed by
   * its new worker at once. */
  bool mv_pending;
  /* The worker's clock (worker.c, "rounds"): the last reading, the steps
   * run since, by agent (r_agent[i] ran r_steps[i] of them; one entry per
   * agent, found by its r_slot), and how many steps the next
   * round may have before the clock is read again. */
  uint64_t clk;
  uint32_t r_total, r_len, r_limit;
  pts_agent *r_agent[PTS__ROUND_MAX];
  uint32_t r_steps[PTS__ROUND_MAX];
  /* Balancer: next decision, window start, whether a window is open, this
   * worker's busy time and every worker's at its start (n entries). */
  uint64_t bal_next, bal_t0, bal_busy0;
  bool bal_armed;
  uint64_t *bal_peer0;
  /* Balancer: the origin the last decision window picked, NULL if none. A
   * move needs it to qualify again in the next window (migrate.c,
   * BAL_SHARE). Compared, never dereferenced. */
  const pts__origin *bal_seen;
  /* Balancer: the planned move (an agent of this worker and its target),
   * made once the target is awake (taker), dropped after plan_until. */
  pts_agent *plan;
  pts__worker *plan_to;
  uint64_t plan_until;
  /* Quantized: the slot table of the current epoch (slot j of a frame
   * belongs to agents[q_table[j]]; q_run[j]: how many slots from j on,
   * wrapping, belong to that agent; q_span[j]: the length of that agent's
   * whole run of slots around j), its length, and the epoch's end. */
  uint32_t q_table[PTS__Q_MAX_SLOTS], q_run[PTS__Q_MAX_SLOTS], q_span[PTS__Q_MAX_SLOTS];
  uint32_t q_len;
  uint64_t q_epoch_end;
  uint64_t q_pass_run; /* quantized: the run whose padded pass ran (worker.c) */

  /* The watchdog (watchdog.c, "Runaway tasks"; pts_pool_options.watchdog_ns).
   * wd_step: the step under way, 0 between steps (the owner's release store
   * before a step, seq_cst store of 0 after it): 2 x its count, plus 1 when
   * the watchdog may take the worker's other agents away during it (the
   * owner holds no list of agents across it). wd_agent: the agent it steps.
   * wd_claim: the watchdog's hold on the owner's structures, taken only
   * during a step (after it, the owner waits for the release). wd_stuck:
   * the watchdog found the step long (placement skips the worker). */
  _Alignas(64) _Atomic uint64_t wd_step;
  _Atomic(pts_agent *) wd_agent;
  atomic_bool wd_claim, wd_stuck;
  bool wd_on;      /* set at creation: the pool has a watchdog */
  bool wd_holding; /* owner: iterating a list of agents (no rescue now) */
  uint64_t wd_count; /* owner: steps bracketed so far */
  /* The watchdog thread's own: the step it last saw, since when, and the
   * last one it reported. */
  uint64_t wd_seen, wd_since, wd_reported;

  /* Statistics (owner writes, relaxed). */
  _Atomic uint64_t st_steps, st_busy_ns, st_idle_ns, st_wakeups, st_agents;
  _Atomic uint64_t st_frame_origin;
  _Atomic uint64_t st_moves_in, st_moves_out, st_move_ns;
};

struct pts_pool {
  pts_pool_options opts;
  pts__quant_options q; /* quantized policy, defaults filled in */
  bool balance;         /* opts.balance under a work-conserving policy */
  unsigned n;
  pts__worker **w;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool shut;            /* under mu */
  uint32_t nagents;     /* registered agents, under mu */
  uint64_t next_id;     /* under mu */
  pts__list registry;   /* every agent placed (reg_link), LIFO; under mu */
  pts__origin *origins; /* under mu */
  /* The watchdog thread (watchdog.c, "Runaway tasks"), if opts.watchdog_ns. */
  pthread_t wd_tid;
  bool wd_started;
  bool wd_stop; /* under wd_mu */
  pthread_mutex_t wd_mu;
  pthread_cond_t wd_cv;
};

/* ---- between the pool's files: pool.c (the pool, placement, lifecycle,
 * admission, statistics), worker.c (the worker thread's loop), migrate.c
 * (group moves, the balancer), watchdog.c (runaway tasks) ---- */

/* The watchdog's bounds on pts_pool_options.watchdog_ns. */
#define PTS__WD_MIN_NS UINT64_C(100000)
#define PTS__WD_MAX_NS UINT64_C(1000000000)

/* A spin-wait's pause: the CPU's hint for the first 64 rounds, then the
 * thread yields. */
static inline void pts__cpu_relax(unsigned spins) {
  if (spins < 64)
    pts__cpu_pause();
  else
    sched_yield();
}

/* remote.c: the wake hook of every agent's loop (wake protocol). */
void pts__agent_wake(void *ctx);
/* pool.c: pushes a control command to w's queue and unparks it; completes
 * a's drain waiters (owner). */
void pts__push_ctl(pts__worker *w, pts__ctl *c);
void pts__drainers_complete(pts_agent *a, int status);
/* worker.c, owner of w unless said: the thread's function; the same worker
 * loop for a virtual thread (vthread.c), its hooks on; a's poll and filing,
 * as after a wake-up; arrays for cap agents (any thread: made by whoever plans
 * the room, so the worker never allocates); takes a out of w's policy,
 * timer heap and agents[]; ends the round (reads the clock, charges the
 * round's steps). */
void *pts__worker_main(void *arg);
void pts__worker_loop(pts__worker *w);
void pts__worker_poll(pts__worker *w, pts_agent *a);
pts__warrays *pts__warrays_new(uint32_t cap);
void pts__agent_unplace(pts__worker *w, pts_agent *a);
uint64_t pts__round_end(pts__worker *w);
/* migrate.c, owner of w (migration protocol there): decide a group's move,
 * take a member's wake token, let a group leave, the departure point; the
 * balancer's tick, its giver's and its target's steps; stealing. */
void pts__group_request(pts__worker *w, pts__origin *oe, pts__worker *t, bool by_balancer);
void pts__group_take_token(pts__origin *oe, pts_agent *b);
bool pts__group_try_leave(pts__worker *w, pts__origin *oe);
void pts__leave_groups(pts__worker *w);
void pts__balance_tick(pts__worker *w, uint64_t now);
void pts__balance_give(pts__worker *w);
void pts__balance_take(pts__worker *w);
/* Stealing: how long a thread stays hungry before it asks (a thread whose
 * own work is still arriving, loops being seeded or posts in flight, gets
 * it within a few microseconds and should not take another's loops
 * meanwhile); a hungry worker's request for a loop (true: a command came to
 * its control queue while it waited), and its answer on the busy worker. */
#define PTS__STEAL_AFTER_NS UINT64_C(50000)
bool pts__balance_ask(pts__worker *w);
void pts__balance_steal(pts__worker *w, uint64_t now);
/* vthread.c, the hooks of a virtual thread's worker loop (worker.c) beside
 * its clock (pts__vthread_now, study.h): a step's start and end (the end
 * charges the step's modelled cost to the clock and to a); the harness's
 * events due now, and whether the run is over; an idle worker's jump to
 * the next time that can change the pick (until, an event or the run's
 * end). */
void pts__vthread_step_begin(pts__vthread *t);
void pts__vthread_step_end(pts__vthread *t, pts_agent *a);
bool pts__vthread_events(pts__vthread *t);
void pts__vthread_idle(pts__vthread *t, uint64_t until);
/* watchdog.c: its thread's start and stop (pool creation and shutdown),
 * and the owner's wait for the watchdog's release after a step. */
int pts__watchdog_start(pts_pool *pool);
void pts__watchdog_stop(pts_pool *pool);
void pts__wd_wait(pts__worker *w);

/* The worker and agent the calling thread is running (NULL off the pool). */
extern _Thread_local pts__worker *pts__tls_worker;
extern _Thread_local pts_agent *pts__tls_agent;

uint64_t pts__now_ns(void);

/* For the start-delay statistics only (pool.c): cheaper, same epoch and
 * rate as pts__now_ns to within the calibration's error. Inline, because
 * it is read twice per cross-thread post: once calibrated (at the first pool's
 * creation) it is a TSC read and an integer multiply, with no call. */
typedef struct pts__tsc_scale {
  uint64_t base, mono_base; /* a TSC reading and pts__now_ns at that moment */
  uint64_t mult;            /* ns per tick, times 2^32 */
} pts__tsc_scale;
extern pts__tsc_scale pts__tsc;
extern _Atomic bool pts__tsc_ready; /* pts__tsc is set (release) */
uint64_t pts__stat_now_slow(void);
#if defined(__x86_64__)
static inline uint64_t pts__stat_now_ns(void) {
  /* acquire: pairs with the calibration's release, so pts__tsc is read whole. */
  if (atomic_load_explicit(&pts__tsc_ready, memory_order_acquire))
    return pts__tsc.mono_base +
           (uint64_t)(((unsigned __int128)(__builtin_ia32_rdtsc() - pts__tsc.base) *
                       pts__tsc.mult) >> 32);
  return pts__stat_now_slow();
}
#else
static inline uint64_t pts__stat_now_ns(void) { return pts__stat_now_slow(); }
#endif

/* Relaxed add for single-writer statistics: a load and a store, no RMW. */
static inline void pts__stat_add(_Atomic uint64_t *c, uint64_t v) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                        memory_order_relaxed);
}

/* Whether the calling thread is the pool thread running a's loop now: a loop
 * on its way to this thread counts once attached (acquire: pairs with the
 * mover's release store of a->w, so the loop's owner is read after the
 * detach). A torn-down agent counts on its last thread. */
static inline bool pts__on_agent_thread(pts_agent *a) {
  return pts__tls_worker != NULL &&
         pts__tls_worker == atomic_load_explicit(&a->w, memory_order_acquire) &&
         (a->dead || pts__loop_is_owner(a->loop));
}

/* ---- admission (remote.c; docs/agents.md, "Lifetime of a handle vs
 * concurrent posters") ---- */
/* Any thread holding a reference to a: admits one command of that rank
 * (PTS__RANK_*), or returns false if the agent is closed. An admission holds
 * the agent's teardown until the command it admits has been pushed and
 * applied or released, so the loop, the pool and its worker stay allocated
 * meanwhile; it is ended by pts__agent_push of that command, or by
 * pts__agent_unadmit if the caller sends nothing after all. */
static inline bool pts__agent_admit(pts_agent *a, int rank) {
  /* seq_cst, both (a Dekker pair with the destroy's store of closed, then
   * its teardown's loads of the counts): a count the teardown does not see
   * comes after the close, so this load sees it and the command is not
   * sent. */
  atomic_fetch_add_explicit(&a->posted[rank].n, 1, memory_order_seq_cst);
  if (__builtin_expect(atomic_load_explicit(&a->closed, memory_order_seq_cst), 0)) {
    atomic_fetch_sub_explicit(&a->posted[rank].n, 1, memory_order_release);
    return false;
  }
  return true;
}
void pts__agent_unadmit(pts_agent *a, int rank);

/* The inbox limit (pts_agent_limits.inbox), for the commands it counts
 * (agents.h): a producer takes a place before its admission, false (and
 * one refusal counted) if the inbox is full; the owner gives places back
 * as it applies or releases the commands. Exact: a place is taken with
 * the count of places taken before it (ticket t) and kept only if
 * t - applied < limit, so at most `limit` admitted commands wait at once
 * (a refused taker's place is given back, so a racing taker may be
 * refused while it is). The owner only stores its count; producers read
 * it only when their last reading says the inbox is full, so a stream far
 * from its limit moves no line between the two sides. */
bool pts__inbox_take_slow(pts_agent *a);
static inline bool pts__inbox_take(pts_agent *a) {
  if (__builtin_expect(a->inbox_limit == UINT64_MAX, 1)) return true;
  return pts__inbox_take_slow(a);
}
static inline void pts__inbox_give(pts_agent *a, uint64_t n) {
  if (__builtin_expect(a->inbox_limit == UINT64_MAX, 1)) return;
  /* Single writer: a load and a store, no RMW. */
  atomic_store_explicit(&a->inbox_applied,
                        atomic_load_explicit(&a->inbox_applied, memory_order_relaxed) + n,
                        memory_order_relaxed);
}
/* After pts__agent_admit: pushes cmd to the agent's loop and wakes its
 * worker (wake protocol steps 1-2). a must stay referenced by the caller
 * until this returns (the push ends the admission). */
void pts__agent_push(pts_agent *a, pts__command *cmd);
/* Both in one: admit and push; false (cmd not sent) if the agent is
 * closed. */
static inline bool pts__agent_send(pts_agent *a, pts__command *cmd, int rank) {
  if (!pts__agent_admit(a, rank)) return false;
  pts__agent_push(a, cmd);
  return true;
}
/* Owner: a command of this layer, of that rank, left the inbox (applied or
 * released). */
static inline void pts__agent_applied(pts_agent *a, int rank) {
  a->applied++;
  a->applied_rank[rank]++;
  atomic_store_explicit(&a->st_applied, a->applied, memory_order_relaxed);
}
/* Any thread: commands of this layer admitted so far (a relaxed snapshot). */
uint64_t pts__agent_posted(pts_agent *a);
/* Owner: every command of rank r pushed so far, as far as this thread has
 * seen, was applied. */
static inline bool pts__agent_rank_idle(pts_agent *a, int r) {
  return atomic_load_explicit(&a->posted[r].n, memory_order_relaxed) == a->applied_rank[r];
}
/* Owner: no command of a rank above `rank` was pushed and not yet applied,
 * as far as this thread has seen (relaxed loads). Enough for the in-place
 * run: a push this thread has not seen may be taken as coming after it
 * (remote.c). */
static inline bool pts__agent_nothing_above(pts_agent *a, int rank) {
  /* Unrolled (a loop over a variable bound cost 25 instructions per in-place
   * task): each case falls through to the ranks above it. */
  _Static_assert(PTS__RANKS == 4, "one case per rank below the top");
  switch (rank) {
    case 0:
      if (!pts__agent_rank_idle(a, 1)) return false;
      /* fall through */
    case 1:
      if (!pts__agent_rank_idle(a, 2)) return false;
      /* fall through */
    case 2:
      return pts__agent_rank_idle(a, 3);
    default:
      return true;
  }
}
/* The loop's command runner of every agent's loop (remote.c,
 * pts__loop_set_command_runner). */
pts__command *pts__agent_run_command(pts_loop *loop, pts__command *cmd, pts__inbox_pass *pass);
/* Owner: the agent's start-delay histogram. */
void pts__agent_record_delay(pts_agent *a, uint64_t delay_ns);

/* ---- policies (policy.c; quantized's in quantized.c), all owner-thread ---- */
/* Fills in the quantized policy's defaults. */
void pts__quant_defaults(pts__quant_options *q);
void pts__policy_init(pts__worker *w);
/* The agents[] array changed (agent added or removed). */
void pts__policy_layout(pts__worker *w, uint64_t now);
/* After a poll: the agent's urgency is u; ran says whether it just ran a step
 * that took cpu_ns. */
void pts__policy_update(pts__worker *w, pts_agent *a, int u, bool ran,
                        uint64_t cpu_ns);
void pts__policy_remove(pts__worker *w, pts_agent *a);
/* How long (ns of its steps) the picked agent a may run before the policy
 * decides again; 0: one step (pts_pool_options.quantum_ns). At quantum 1
 * the answer is 0 inline: it is asked at every switch between loops. */
uint64_t pts__policy_quantum_slow(pts__worker *w, pts_agent *a);
static inline uint64_t pts__policy_quantum(pts__worker *w, pts_agent *a) {
  return w->quantum_ns <= 1 ? 0 : pts__policy_quantum_slow(w, a);
}
/* Charges a for cpu_ns of steps it ran earlier in the worker's round
 * (worker.c, rounds): fair's virtual runtime. Not for time-partitioned and
 * quantized, whose steps are charged one by one in pts__policy_update. */
void pts__policy_charge(pts__worker *w, pts_agent *a, uint64_t cpu_ns);
/* The agent to step now, or NULL; *until (in) UINT64_MAX, (out) when the
 * answer may change without any event (time-partitioned slot end). */
pts_agent *pts__policy_pick(pts__worker *w, uint64_t now, uint64_t *until);

/* quantized.c: its pick, layout (a new slot table and epoch) and a step's
 * charge (its level's CPU time, its guard's histogram); and its answers to
 * the worker below, with the padded pass's spin and its wake-up lateness
 * (the lead a park keeps before a boundary; a park's measured lateness). */
pts_agent *pts__quant_pick(pts__worker *w, uint64_t now, uint64_t *until);
void pts__quant_layout(pts__worker *w, uint64_t now);
void pts__quant_charge(pts_agent *a, uint64_t ns);
bool pts__quant_defer(pts__worker *w, pts_agent *a, uint64_t now);
pts_agent *pts__quant_owed_poll(pts__worker *w, uint64_t now);
bool pts__quant_hold(pts__worker *w, uint64_t now, uint64_t *pad_end);
bool pts__quant_holding(pts__worker *w, uint64_t now);
bool pts__quant_wakes_at(const pts__worker *w, uint64_t until, bool wakeups_waiting);
bool pts__quant_spin(pts__worker *w, uint64_t t);
uint64_t pts__quant_wake_lead(const pts__worker *w);
void pts__quant_woke_late(uint64_t late);

/* The policy's update after a turn that ran a task, when its loop stays
 * filed as ready unpolled (worker.c, refresh_lazily): round-robin's move of
 * the picked head to the tail inline, one step of the ring's head (a call
 * and the policy switch were a sixth of a switch between loops, and moving
 * the node about 10 instructions more), the others' by pts__policy_update. */
static inline void pts__policy_turn_end(pts__worker *w, pts_agent *a) {
  if (w->policy == PTS_POLICY_ROUND_ROBIN && w->rr_head == &a->rr_link) {
    w->rr_head = a->rr_link.next; /* the head, picked, is the tail now */
  } else {
    pts__policy_update(w, a, a->urgency, true, 0);
  }
}

/* ---- the policy's say in the worker loop beyond pick and update ----
 * Only quantized's slots need it (quantized.c); every other policy answers
 * no here, inline, so the worker's hot paths make no call for it. */

/* Whether a's poll waits for a's own slot (the slot at now is another
 * agent's); a is then owed it. */
static inline bool pts__policy_defers_poll(pts__worker *w, pts_agent *a, uint64_t now) {
  return w->policy == PTS_POLICY_QUANTIZED && pts__quant_defer(w, a, now);
}
/* The agent owed a deferred poll whose turn it is at now, or NULL. */
static inline pts_agent *pts__policy_owed_poll(pts__worker *w, uint64_t now) {
  return w->policy == PTS_POLICY_QUANTIZED ? pts__quant_owed_poll(w, now) : NULL;
}
/* Whether the pass at now leaves the wake-up queue and the timers alone
 * (the padded pass); a pass that reads them ends at *pad_end if that is not
 * 0 (a pass of fixed length). */
static inline bool pts__policy_holds_pass(pts__worker *w, uint64_t now, uint64_t *pad_end) {
  *pad_end = 0;
  return w->policy == PTS_POLICY_QUANTIZED && pts__quant_hold(w, now, pad_end);
}
/* Whether wake-ups waiting now are held for a later pass (so they do not
 * cancel a park). */
static inline bool pts__policy_holds_wakeups(pts__worker *w, uint64_t now) {
  return w->policy == PTS_POLICY_QUANTIZED && pts__quant_holding(w, now);
}
/* Whether the idle worker must be awake at until (a slot boundary), not
 * later: it parks to just before it (pts__quant_wake_lead) and spins. */
static inline bool pts__policy_wakes_at(const pts__worker *w, uint64_t until,
                                        bool wakeups_waiting) {
  return w->policy == PTS_POLICY_QUANTIZED && pts__quant_wakes_at(w, until, wakeups_waiting);
}

/* ---- remote controllers (controllers.c) ---- */
/* A handle to a controller on an agent's loop (agents.h). Lifetime:
 * controllers.c. */
struct pts_remote_controller {
  _Atomic uint32_t urefs;
  _Atomic uint32_t refs;
  pts_agent *agent; /* a reference */
  int priority;     /* >= 0: TaskController; < 0: AbortController */
  /* Agent's thread only. */
  pts_controller *ctrl; /* the owner-side reference while registered */
  bool registered, owner_done;
  pts__list link;       /* on the agent's rcs while registered */
  pts__command create_cmd, release_cmd;
};

/* Teardown, owner: drop every registered controller (they become dead). */
void pts__agent_release_controllers(pts_agent *a);
/* For a post with a controller (remote.c): one more reference (any
 * thread), one less, and the controller itself, made on the agent's loop
 * if its creation is still on the way (owner; NULL if it cannot be). */
void pts__rc_hold(pts_remote_controller *rc);
void pts__rc_drop(pts_remote_controller *rc);
pts_controller *pts__rc_ensure(pts_remote_controller *rc);

/* ---- drains (pool.c), owner-thread ---- */

struct pts__drain_wait {
  pts__command cmd;
  pts_agent *agent;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int status;
  pts__drain_wait *next;
};
void pts__drain_complete(pts__drain_wait *d, int status);

#endif /* PTSCHED_AGENTS_IMPL_H */
