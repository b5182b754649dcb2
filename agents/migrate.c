/* agents/migrate.c: migration of same-origin groups between workers
 * (explicit moves and the balancer's) and the balancer.
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
 */

#include <string.h>

#include "agents/agents_impl.h"
#include "sync/alloc.h"

#define stat_add pts__stat_add

/* The balancer (docs/agents.md, "Balancer"): numbers and why.
 * BAL_TICK_NS: a busy worker looks at its load at most once per tick (one
 * clock comparison per step otherwise) and decides on a window of at least
 * one tick; a pick must qualify again in the next decision window
 * (BAL_SHARE), so an origin moves 3-4 ms after a load change.
 * BAL_RESIDENCE_NS: an origin the balancer moved stays put this long, so no
 * agent moves more than 10 times per second whatever the load does.
 * BAL_SHARE: a move must split the source's busy time so that both the
 * origin moved and what stays had at least 1/BAL_SHARE of the window: a
 * light neighbour that is ready now and then is not worth a move, and a
 * move that would only carry the overload across is not made. An origin
 * picked in one decision window moves only if it qualifies again in the
 * next: a step during which the host preempted the worker counts the
 * preemption as that agent's CPU time, which can lift one of many small
 * loops over 1/BAL_SHARE of one window. Moved, it would leave the hungry
 * worker busy, so it would never steal the half it should have (move_test,
 * eight hot loops: 3 runs in 60 under ASan beside another test process, 0
 * in 220 with the second window). */
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

/* ---- migration and the balancer ---- */


/* Migration step 1 for one member: its wake token, or a wait for its node. */
void pts__group_take_token(pts__origin *oe, pts_agent *b) {
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
bool pts__group_try_leave(pts__worker *w, pts__origin *oe) {
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
    if ((arr = pts__warrays_new(cap)) == NULL) {
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
    pts__agent_unplace(w, b);
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
  pts__push_ctl(t, &oe->ctl_move); /* release: T's pop sees all of the above */
  stat_add(&w->st_moves_out, k);
  pthread_mutex_unlock(&pool->mu);
  return true;
}

/* The worker loop's point for departures (migration step 2): every group
 * here that holds its tokens tries to leave. Its agents are not touched
 * again: their new worker may free one at once. */
void pts__leave_groups(pts__worker *w) {
  w->mv_pending = false;
  (void)pts__round_end(w); /* agents[] may change */
  for (uint32_t i = 0; i < w->nagents;) {
    pts__origin *oe = w->arr->agents[i]->oe;
    if (oe->mv_to != NULL && pts__group_try_leave(w, oe))
      i = 0; /* agents[] changed */
    else
      i++;
  }
}

/* Migration step 1: moves oe's group, all on w, to t (same-origin agents
 * share a thread); the last decision wins, one for w itself cancels a move
 * not yet made. Owner, between two tasks. */
void pts__group_request(pts__worker *w, pts__origin *oe, pts__worker *t, bool by_balancer) {
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
    if (b->oe == oe) pts__group_take_token(oe, b);
  }
}

/* The balancer (docs/agents.md, "Balancer"), on a busy worker w. Over a
 * window of at least one tick in which w had more than one ready agent, it
 * looks for a worker that is idle now (hungry) and was busy at most half of
 * the window, and gives it the origin whose agents' CPU time in the window
 * splits w's busy time most evenly, if both parts had at least 1/BAL_SHARE
 * of the window. Pinned origins and origins it moved in the last
 * BAL_RESIDENCE_NS stay. */
void pts__balance_tick(pts__worker *w, uint64_t now) {
  w->bal_next = now + BAL_TICK_NS;
  if (w->plan != NULL) {
    if (now < w->plan_until) return; /* waiting for the target */
    w->plan = NULL;                   /* it never came: decide again */
  }
  /* Not while a group is leaving: a steal's may still be on its way. */
  if (w->nready < 2 || w->mv_pending) {
    w->bal_armed = false;
    w->bal_seen = NULL;
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
  const pts__origin *seen = w->bal_seen;
  w->bal_seen = NULL;
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
  pts_agent *pick = NULL, *again = NULL;
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
    if (oe == seen) again = a; /* the last window's pick qualifies again */
    uint64_t d = c > rest ? c - rest : rest - c;
    if (d < best) {
      best = d;
      pick = a;
    }
  }
  pthread_mutex_unlock(&pool->mu);
  /* A first window's pick waits for the next to qualify it again. That one
   * moves even if another origin splits better now: two origins of equal
   * load would otherwise take turns as the pick and neither would move. */
  if (again == NULL) {
    w->bal_seen = pick != NULL ? pick->oe : NULL;
    return;
  }
  pick = again;
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
void pts__balance_give(pts__worker *w) {
  if (!atomic_load_explicit(&w->taker, memory_order_relaxed)) return;
  atomic_store_explicit(&w->taker, false, memory_order_relaxed);
  pts_agent *a = w->plan;
  w->plan = NULL;
  pts__group_request(w, a->oe, w->plan_to, true);
}

/* The target, about to park: an invitation takes the loop it offers. */
void pts__balance_take(pts__worker *w) {
  if (atomic_load_explicit(&w->invite, memory_order_relaxed) == 0) return;
  int from = atomic_exchange_explicit(&w->invite, 0, memory_order_relaxed);
  if (from == 0) return;
  atomic_store_explicit(&w->pool->w[from - 1]->taker, true, memory_order_relaxed);
  uint64_t t0 = pts__now_ns();
  while (pts__mpsc_is_empty(&w->control) && pts__mpsc_is_empty(&w->signaled) &&
         pts__now_ns() - t0 < BAL_TAKE_SPIN_NS)
    pts__cpu_relax(0);
}

/* ---- stealing (docs/agents.md, "Balancer") ----
 * The tick decides on windows of a millisecond or more, which is late for
 * a short burst: a worker whose share ran out early (a faster CPU, lighter
 * loops) would idle while another still has many ready loops. So a hungry
 * worker also asks, once it has been hungry for PTS__STEAL_AFTER_NS (50 us:
 * a worker whose own loops are still being seeded gets their work sooner):
 * the first worker after it that is not hungry gets its request
 * (steal_req) and answers at its next step boundary, if it has two or more
 * ready agents: it gives the origins of half of its ready agents that may
 * move (at least one, fewer than it has ready): not pinned, not moving, not
 * moved by the balancer in the last BAL_RESIDENCE_NS, so an origin still
 * moves at most 10 times a second.
 * The asker spins up to BAL_TAKE_SPIN_NS for the MOVE (a move costs ~4 us;
 * a wake-up 5 us idle, milliseconds on a loaded host), and parks if the
 * answer is no. */

static bool may_move(const pts_agent *a, uint64_t now) {
  const pts__origin *oe = a->oe;
  return a->urgency != PTS__URGENCY_NONE && oe->pinned == 0 && oe->mv_to == NULL &&
         (oe->moved_at == 0 || now - oe->moved_at >= BAL_RESIDENCE_NS);
}

bool pts__balance_ask(pts__worker *w) {
  pts_pool *pool = w->pool;
  pts__worker *v = NULL;
  for (unsigned j = 1; j < pool->n && v == NULL; j++) {
    pts__worker *o = pool->w[(w->index + j) % pool->n];
    if (!atomic_load_explicit(&o->hungry, memory_order_relaxed)) v = o;
  }
  if (v == NULL) return false;
  int me = (int)w->index + 1;
  atomic_store_explicit(&v->steal_req, me, memory_order_relaxed);
  uint64_t t0 = pts__now_ns();
  while (pts__mpsc_is_empty(&w->control) && pts__mpsc_is_empty(&w->signaled)) {
    if (atomic_load_explicit(&v->steal_req, memory_order_relaxed) == -me ||
        pts__now_ns() - t0 >= BAL_TAKE_SPIN_NS)
      return false; /* declined, or not answered in time: park */
    pts__cpu_relax(0);
  }
  return true;
}

void pts__balance_steal(pts__worker *w, uint64_t now) {
  int r = atomic_load_explicit(&w->steal_req, memory_order_relaxed);
  if (r <= 0 || (unsigned)r > w->pool->n) return;
  pts__worker *t = w->pool->w[r - 1];
  uint32_t given = 0;
  /* Not while a planned move or a group's departure is under way: the
   * target may be getting that loop already. */
  if (w->nready >= 2 && w->plan == NULL && !w->mv_pending &&
      atomic_load_explicit(&t->hungry, memory_order_relaxed)) {
    pts_pool *pool = w->pool;
    pthread_mutex_lock(&pool->mu); /* origin records */
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->nagents; i++) n += may_move(w->arr->agents[i], now);
    uint32_t give = n / 2 ? n / 2 : 1;
    if (give >= w->nready) give = w->nready - 1; /* one stays ready here */
    for (uint32_t i = w->nagents; i-- > 0 && given < give;) {
      pts_agent *a = w->arr->agents[i];
      if (!may_move(a, now)) continue;
      pts__group_request(w, a->oe, t, true);
      given++;
    }
    pthread_mutex_unlock(&pool->mu);
  }
  /* A newer request (another asker) is left for the next boundary. */
  (void)atomic_compare_exchange_strong_explicit(&w->steal_req, &r, given ? 0 : -r,
                                                memory_order_relaxed, memory_order_relaxed);
}
