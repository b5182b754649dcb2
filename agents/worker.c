/* agents/worker.c: the worker loop: wake-ups, control commands, timers,
 * the policy's pick, steps and their rounds (the worker's clock), the
 * attach and teardown of loops, and idling. A pool thread runs it on the
 * real clock (pts__worker_main); the security study's virtual thread runs
 * the same loop on a virtual clock (vthread.c: the clock, a step's cost,
 * idling as a jump and the harness's events are the only hooks).
 *
 * Invariant: an agent's loop is touched only by its worker thread (the one
 * that attached it last), except through the loop's inbox by producers
 * holding an admission (pts__agent_admit). The worker frees the loop only
 * after the agent is closed and every admission has ended: each admitted
 * command was pushed and has left the inbox. The agent's node is on the signaled
 * queue of a->w or of no worker, and a->w changes only while the node is
 * off every queue and its token (signaled = true) is held by the mover.
 */

#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "agents/agents_impl.h"
#include "sync/alloc.h"
#include "sync/heap.h"
#include "sync/nodecache.h"

#define stat_add pts__stat_add

/* The worker's clock: CLOCK_MONOTONIC on a pool thread, the study's
 * virtual time on a virtual thread (w->vt). */
static inline uint64_t wnow(const pts__worker *w) {
  return w->vt == NULL ? pts__now_ns() : pts__vthread_now(w->vt);
}

/* ---- the worker's structures ---- */

pts__warrays *pts__warrays_new(uint32_t cap) {
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

/* Timer heap: agents by next deadline (sync/heap.h). */
static bool deadline_before(const void *x, const void *y, const void *ctx) {
  (void)ctx;
  return (*(pts_agent *const *)x)->deadline < (*(pts_agent *const *)y)->deadline;
}

static void deadline_placed(void *x, uint32_t i) { (*(pts_agent **)x)->tidx = i; }

static const pts__heap_kind theap_kind = {sizeof(pts_agent *), deadline_before,
                                          deadline_placed};

static void theap_remove(pts__worker *w, pts_agent *a) {
  uint32_t i = a->tidx;
  if (i == PTS__NO_INDEX) return;
  pts__heap_remove(w->arr->theap, &w->tlen, i, theap_kind, NULL);
  a->tidx = PTS__NO_INDEX;
}

static void timer_update(pts__worker *w, pts_agent *a, uint64_t deadline) {
  if (deadline == a->deadline) return; /* filed already (most steps) */
  if (deadline == UINT64_MAX) {
    theap_remove(w, a);
    a->deadline = UINT64_MAX;
    return;
  }
  a->deadline = deadline;
  if (a->tidx == PTS__NO_INDEX)
    pts__heap_push(w->arr->theap, &w->tlen, &a, theap_kind, NULL);
  else
    pts__heap_fix(w->arr->theap, w->tlen, a->tidx, theap_kind, NULL);
}

/* ---- the worker: polling, stepping, teardown ---- */

/* ---- the watchdog's brackets (watchdog.c, "Runaway tasks") ----
 * Every call that runs an agent's code (a step, a run of in-place tasks, a
 * poll that applies commands, fires timers and runs microtasks) is a
 * bracket: the owner publishes it before and clears it after, then waits
 * if the watchdog holds its structures. Off (no watchdog) it costs a
 * branch on a field of the worker's own line. */

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
  if (atomic_load_explicit(&w->wd_claim, memory_order_seq_cst)) pts__wd_wait(w);
}

/* Keeps w->nready (agents whose last poll found a runnable task) as a's
 * urgency becomes u. */
static void track_ready(pts__worker *w, pts_agent *a, int u) {
  bool was = a->urgency != PTS__URGENCY_NONE, now = u != PTS__URGENCY_NONE;
  if (was != now) w->nready = now ? w->nready + 1 : w->nready - 1;
}


/* Whether a is the only agent on w under a policy that would pick it again
 * after every step (strict, round-robin, fair, randomized): then nothing
 * ranks its loop against another's, so its steps may run in bursts and its
 * polls may leave the inbox to them. */
static bool alone(const pts__worker *w) {
  return w->nagents == 1 && w->bursts;
}

/* A pts_agent_move request the poll (or the step before it) applied:
 * decided now, between two tasks, after a is filed (migration step 1). */
static inline void take_move_request(pts__worker *w, pts_agent *a) {
  if (a->req_target >= 0) {
    unsigned t = (unsigned)a->req_target;
    a->req_target = -1;
    pts__group_request(w, a->oe, w->pool->w[t], false);
  }
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
    pts__drainers_complete(a, 0);
  take_move_request(w, a);
}

/* After a run whose last step ran a task, under a policy that does not rank
 * loops by their next task's urgency (round-robin, fair, randomized: only
 * whether a loop is ready counts): the loop stays filed as ready, and its
 * next step is its poll (a step drains the inbox, fires due timers and runs
 * the checkpoint before its task). So a one-step turn pays no poll of its
 * own. A loop that ran its last task costs one empty step at its next
 * turn, whose full poll files it as idle (completing its drainers, filing
 * its next timer). Nothing is missed meanwhile: a command pushed into its
 * inbox comes with a wake-up (the signaled queue), and a pts_loop_stop too;
 * the inbox's depth statistic waits for the next poll (it is a maximum). */
static inline void refresh_lazily(pts__worker *w, pts_agent *a) {
  pts__policy_turn_end(w, a);
  take_move_request(w, a);
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

static bool exact_rounds(const pts__worker *w) { return w->exact; }

/* Ends the round: reads the clock, charges the round's steps; returns the
 * round's length (ns). */
uint64_t pts__round_end(pts__worker *w) {
  uint64_t now = wnow(w), el = now - w->clk;
  w->clk = now;
  if (w->r_total == 0) return 0;
  uint64_t per = el / w->r_total, rest = el - per * w->r_total;
  for (uint32_t i = 0; i < w->r_len; i++) { /* the remainder to the first */
    w->r_agent[i]->r_slot = 0;
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
  w->clk = wnow(w);
  w->r_total = w->r_len = 0;
}

/* One entry per agent in a round, not per turn: at one step per turn the
 * agents alternate, and a round of 32 steps on 4 loops charged 32 entries
 * (about 20 instructions a step); the charges are the same sums. */
static void round_add(pts__worker *w, pts_agent *a, uint32_t steps) {
  if (a->r_slot != 0) {
    w->r_steps[a->r_slot - 1] += steps;
  } else {
    w->r_agent[w->r_len] = a;
    w->r_steps[w->r_len++] = steps;
    a->r_slot = w->r_len;
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

/* pts_agent_stats.tasks_run's class of a task of urgency u (a task that
 * ran has an urgency; NONE counts as FIFO, as a command runner's task). */
static const uint8_t class_of_urgency[PTS__URGENCY_COUNT] = {
    [PTS__URGENCY_NONE] = PTS_CLASS_FIFO, [PTS__URGENCY_IDLE] = PTS_CLASS_IDLE,
    [PTS__URGENCY_LOW] = PTS_CLASS_LOW,   [PTS__URGENCY_FIFO] = PTS_CLASS_FIFO,
    [PTS__URGENCY_HIGH] = PTS_CLASS_HIGH, [PTS__URGENCY_INPUT] = PTS_CLASS_INPUT,
};

/* A run of one of several agents goes on after a step. */
static bool run_goes_on(pts__worker *w, pts_agent *a, uint64_t quantum, int urgency,
                        uint32_t *look) {
  if (w->policy == PTS_POLICY_STRICT) {
    wd_begin(w, a);
    int u = pts__loop_poll_after_step(a->loop);
    wd_end(w);
    if (u < urgency) return false; /* a less urgent task next: another loop may come first */
  }
  if (--*look != 0) return true;
  *look = w->r_limit;
  uint64_t now = wnow(w);
  return now - w->clk < quantum && (w->tlen == 0 || w->arr->theap[0]->deadline > now);
}

/* The picked agent's turn: one step (quantum 0: one of several loops at
 * quantum 1, and every turn of the slot policies and of the virtual thread,
 * whose loops never burst), or a run: an agent alone on its worker (a
 * burst, in_place) or one of several for as long as its quantum lets it
 * keep the thread. A one-step turn pays the step and its statistics and
 * nothing of a run's: its checks for a waiting control command, a wake-up
 * or a move request are the worker loop's next pass (docs/agents.md,
 * "Switches between loops", item 7). One loop for both, so the loop's
 * step has one call site and the link-time inliner keeps it inline. */
static inline __attribute__((always_inline)) void run_turn(pts__worker *w, pts_agent *a,
                                                           bool virt) {
  bool in_place = alone(w);
  uint64_t quantum = in_place ? 0 : pts__policy_quantum(w, a);
  const bool run = in_place || quantum != 0;
  uint32_t steps = 0, by_urgency[PTS__URGENCY_COUNT];
  if (run) memset(by_urgency, 0, sizeof by_urgency);
  uint32_t look = w->r_limit;
  int urgency = a->urgency;
  bool ran;
  pts__tls_agent = a;
  for (;;) {
    /* In a burst, a run of commands the loop runs in place (the plain posts
     * of a stream) is one call, each of them a step. */
    uint32_t n = 0;
    wd_begin(w, a);
    if (in_place) {
      uint32_t max = BURST - steps < BURST_LOOK ? BURST - steps : BURST_LOOK;
      n = pts__loop_run_inbox(a->loop, max, by_urgency);
    }
    ran = n > 0;
    if (ran) {
      steps += n;
    } else {
      if (virt) pts__vthread_step_begin(w->vt);
      ran = pts__loop_step(a->loop) == 1;
      if (virt) pts__vthread_step_end(w->vt, a);
      steps++;
      if (ran && run) by_urgency[pts__loop_last_urgency(a->loop)]++;
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
  if (!run) {
    if (ran) stat_add(&a->st_tasks[class_of_urgency[pts__loop_last_urgency(a->loop)]], 1);
  } else {
    for (int u = 0; u < PTS__URGENCY_COUNT; u++)
      if (by_urgency[u] != 0) stat_add(&a->st_tasks[class_of_urgency[u]], by_urgency[u]);
  }
  round_add(w, a, steps);
  uint64_t cpu = 0; /* the step's own time, for the slot policies */
  if (steps > 1 || w->r_total >= w->r_limit) cpu = pts__round_end(w);
  if (ran && !in_place && w->lazy_poll && a->urgency != PTS__URGENCY_NONE)
    refresh_lazily(w, a);
  else
    refresh(w, a, true, exact_rounds(w) ? cpu : 0, in_place);
}

static void publish_layout(pts__worker *w) {
  pts__policy_layout(w, wnow(w));
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
  if (pts__loop_pool_attach(a->loop, pts__agent_wake, a) != 0) {
    /* Only a caller running the loop by hand (a contract breach) gets here:
     * the agent stays placed but never runs. */
    fprintf(stderr, "ptsched: agent loop is running elsewhere; not attached\n");
    return false;
  }
  a->attached = true;
  return true;
}


static void agent_attach(pts__worker *w, pts__ctl *c) {
  pts_agent *a = c->agent;
  if (!agent_take(w, c)) return;
  a->sched = pts_global_scheduler(pts_loop_default_global(a->loop)); /* made by pts_agent_new */
  /* Its group waits to leave (migration step 2): it goes too. */
  if (a->oe->mv_to != NULL) {
    pts__group_take_token(a->oe, a);
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
    if (pts__loop_pool_attach(b->loop, pts__agent_wake, b) == 0)
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
void pts__agent_unplace(pts__worker *w, pts_agent *a) {
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
  pts__cpu_relax(aw->spins++); /* a producer between its admission and its push */
  return false;
}

static void agent_teardown(pts__worker *w, pts_agent *a) {
  /* Destroy protocol step 4. */
  pts__agent_unplace(w, a);
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
  pts__drainers_complete(a, PTS_ECLOSED);
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
  while (atomic_load_explicit(&a->wakers, memory_order_seq_cst) != 0) pts__cpu_relax(spins++);
  a->loop = NULL;
  a->sched = NULL;
  pts__drainers_complete(a, PTS_ECLOSED); /* ones whose marker was released */

  pts_pool *pool = a->pool;
  pthread_mutex_lock(&pool->mu);
  pts__list_remove(&a->reg_link);
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

/* Returns true on shutdown. */
static bool drain_control(pts__worker *w) {
  /* A push under way is seen at the next round: idle() looks again before
   * it parks. */
  if (!pts__mpsc_maybe_nonempty(&w->control)) return false;
  (void)pts__round_end(w); /* agents[] may change */
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
    if (now == 0 && w->policy == PTS_POLICY_QUANTIZED) now = wnow(w);
    if (!pts__policy_defers_poll(w, a, now)) refresh(w, a, false, 0, alone(w));
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
    if (!pts__policy_defers_poll(w, a, now)) refresh(w, a, false, 0, false);
  }
  /* An agent whose polls were deferred to its turn gets them now. */
  pts_agent *owed = pts__policy_owed_poll(w, now);
  if (owed != NULL) refresh(w, owed, false, 0, false);
}

static void idle(pts__worker *w, uint64_t until) {
  /* A slot boundary the worker must be awake at (quantized.c): it parks
   * to just before it and spins to it. */
  uint64_t slot_start =
      pts__policy_wakes_at(w, until, !pts__mpsc_is_empty(&w->signaled)) ? until : UINT64_MAX;
  if (w->tlen > 0 && w->arr->theap[0]->deadline < until)
    until = w->arr->theap[0]->deadline;
  uint64_t t0 = pts__now_ns();
  if (until <= t0) return;
  if (slot_start == until) {
    uint64_t lead = pts__quant_wake_lead(w);
    if (until - t0 <= lead) {
      (void)pts__quant_spin(w, until);
      return;
    }
    until -= lead; /* park to just before the boundary, then spin (next pass) */
  }
  /* Balancer: nothing is ready here; a busy worker may give us a loop. */
  if (w->pool->balance) {
    if (!atomic_load_explicit(&w->hungry, memory_order_relaxed)) {
      atomic_store_explicit(&w->hungry, true, memory_order_relaxed);
      w->hungry_since = t0;
    }
    pts__balance_take(w);
    if (!pts__mpsc_is_empty(&w->control)) return;
    /* Hungry for a while (no wake-up waiting, none for PTS__STEAL_AFTER_NS):
     * ask a busy thread for a loop; until then, park no longer than that. */
    if (pts__mpsc_is_empty(&w->signaled)) {
      uint64_t ask_at = w->hungry_since + PTS__STEAL_AFTER_NS;
      if (t0 >= ask_at) {
        if (pts__balance_ask(w)) return;
      } else if (until > ask_at) {
        until = ask_at;
      }
    }
  }
  /* Command blocks of other threads go back before we sleep, so their
   * posters can reuse them (sync/nodecache.h). */
  pts__node_flush();
  pts__parker_prepare(&w->parker);
  /* A wake-up the hold keeps for the next run start does not cancel the
   * park (which ends at that boundary): spinning on it burnt the CPU. */
  bool held = pts__policy_holds_wakeups(w, t0);
  if ((!held && !pts__mpsc_is_empty(&w->signaled)) || !pts__mpsc_is_empty(&w->control)) {
    pts__parker_cancel(&w->parker);
    return;
  }
  pts__parker_park(&w->parker, until == UINT64_MAX ? PTS__PARK_FOREVER : until - t0);
  uint64_t t1 = pts__now_ns();
  if (slot_start != UINT64_MAX && t1 >= until) pts__quant_woke_late(t1 - until);
  stat_add(&w->st_idle_ns, t1 - t0);
  stat_add(&w->st_wakeups, 1);
}

/* The worker's pass over its wake-ups and due timers, between two picks:
 * on the round's clock (the policies of rounds). Returns the time. */
static uint64_t pass(pts__worker *w) {
  uint64_t now = w->clk;
  if (pts__mpsc_maybe_nonempty(&w->signaled)) drain_signaled(w);
  if (w->tlen > 0 && w->arr->theap[0]->deadline <= now) fire_timers(w, now);
  return now;
}

/* The pass of the slot policies (time-partitioned, quantized), which need
 * the time now; quantized's may be held or padded (quantized.c, the padded
 * pass). Returns the time. */
static uint64_t slot_pass(pts__worker *w) {
  uint64_t now = wnow(w), pad_end;
  if (!pts__policy_holds_pass(w, now, &pad_end)) { /* a virtual thread never holds */
    if (pts__mpsc_maybe_nonempty(&w->signaled)) drain_signaled(w);
    now = wnow(w);
    fire_timers(w, now);
    while (now < pad_end) { /* a fixed-length pass: its work does not show */
      pts__cpu_relax(0);
      now = pts__now_ns();
    }
  }
  return now;
}

/* The worker loop, until a shutdown command (a pool thread) or the end of
 * a virtual run (virt: vthread.c's hooks, behind a branch a pool thread
 * always predicts; one instance of the loop, so the program's link-time
 * inliner keeps its helpers inline: docs/benchmarks.md, "But the probe is
 * not every program"). */
static void worker_loop(pts__worker *w) {
  const bool virt = w->vt != NULL;
  bool exact = exact_rounds(w);
  /* Set at creation. A planned move (plan) and hunger exist only with the
   * balancer: one test per pick without it. */
  const bool balance = w->pool->balance;
  w->r_limit = 1;
  round_restart(w);
  for (;;) {
    if (drain_control(w)) break;
    if (virt && pts__vthread_events(w->vt)) break; /* the harness; the end */
    uint64_t now = exact ? slot_pass(w) : pass(w);
    if (balance) {
      if (w->plan != NULL) pts__balance_give(w);
      /* Relaxed: a hint; the MOVE carries everything that matters. */
      if (atomic_load_explicit(&w->steal_req, memory_order_relaxed) > 0)
        pts__balance_steal(w, now);
      if (now >= w->bal_next) pts__balance_tick(w, now);
    }
    if (w->mv_pending) pts__leave_groups(w);
    uint64_t until = UINT64_MAX;
    pts_agent *a = pts__policy_pick(w, now, &until);
    if (a != NULL) {
      /* Relaxed: a hint for other workers' balancers, no data behind it. */
      if (balance && atomic_load_explicit(&w->hungry, memory_order_relaxed))
        atomic_store_explicit(&w->hungry, false, memory_order_relaxed);
      if (exact) w->clk = now;
      run_turn(w, a, virt);
      continue;
    }
    (void)pts__round_end(w);
    if (virt) /* virtual time: jump to what can change the pick */
      pts__vthread_idle(w->vt, until);
    else
      idle(w, until);
    round_restart(w);
  }
}

/* What the loop asks at every step, decided once: a virtual clock costs
 * nothing to read, so every step of a virtual thread is timed exactly (as
 * the slot policies time theirs); and no loop of a virtual thread runs
 * bursts alone, as its harness's events come between steps. */
static void loop_setup(pts__worker *w) {
  w->exact = w->policy >= PTS_POLICY_TIME_PARTITIONED || w->vt != NULL;
  w->bursts = w->policy <= PTS_POLICY_RANDOMIZED && w->vt == NULL;
  w->lazy_poll = !w->exact && w->policy != PTS_POLICY_STRICT;
}

/* The study's entry: the same loop on its virtual thread. */
void pts__worker_loop(pts__worker *w) {
  loop_setup(w);
  worker_loop(w);
}

/* Polls a's loop and files it, as after a wake-up (vthread.c: its harness
 * posts into the loops directly). */
void pts__worker_poll(pts__worker *w, pts_agent *a) { refresh(w, a, false, 0, false); }

void *pts__worker_main(void *arg) {
  pts__worker *w = arg;
  pts__tls_worker = w;
  /* Quantized: timed parks end at slot boundaries; the default 50 us timer
   * slack alone would overshoot a slot's start window. */
  if (w->policy == PTS_POLICY_QUANTIZED) (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  loop_setup(w);
  worker_loop(w);
  /* Shutdown: every agent was torn down first (shutdown protocol step 3);
   * drop the references of nodes still on the signaled queue. */
  while (!pts__mpsc_is_empty(&w->signaled)) drain_signaled(w);
  pts__node_flush(); /* blocks the teardowns released go home */
  return NULL;
}
