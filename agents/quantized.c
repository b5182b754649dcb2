/* agents/quantized.c: the quantized policy (public since 5.2;
 * docs/security.md, "The quantized policy"; its knobs in agents/study.h):
 * the slot table of each epoch, the levels and the guard, the pick, and
 * what the worker loop asks of it beyond pick and update: polls deferred
 * to their owner's slot, the padded pass that holds the wake-up queue, and
 * waking on time for a slot boundary (agents_impl.h, "the policy's say in
 * the worker loop").
 *
 * Why this leaks at most one bit per agent per epoch: within an epoch the
 * slot table is fixed, so when each agent may start a step is a function of
 * the clock, the table and that agent's own work only; the table is a
 * function of the levels, and each level is one bit recomputed once per
 * epoch. The guard keeps a step from running into the next owner's slot
 * (a step among the agent's longest 1 in Q_GUARD_SKIP still can: that is
 * the residual leak, docs/security.md). */
#include <string.h>

#include "agents/agents_impl.h"

void pts__quant_defaults(pts__quant_options *q) {
  if (q->slot_ns == 0) q->slot_ns = 250000;
  if (q->frame_slots == 0) q->frame_slots = 16;
  if (q->epoch_frames == 0) q->epoch_frames = 250;
  if (q->pad_ns == 0) q->pad_ns = PTS__Q_PAD_NS;
}

static uint64_t quant_epoch_ns(const pts__worker *w) {
  const pts__quant_options *q = &w->pool->q;
  return q->slot_ns * w->q_len * q->epoch_frames;
}

/* Rebuilds the slot table from the levels: a low agent owns one slot per
 * frame, the high ones share the rest equally (the first in placement order
 * take the remainder); with no high agent, all share equally. Each agent's
 * slots are one contiguous run, in placement order: its steps may run from
 * one of its slots into the next, so the guard costs once per frame rather
 * than once per slot, and a step stretched by preemption can reach another
 * agent's slot only at a run's end. Every agent still waits at most one
 * frame for its run. (Spreading the slots, e.g. by a smooth weighted
 * round-robin, shortens a high agent's wait below a frame but pays the
 * guard at every slot: 4% of the thread with 20 us steps and two agents.) */
static void quant_table(pts__worker *w) {
  uint32_t n = w->nagents, k = w->pool->q.frame_slots;
  if (n > k) k = n;
  if (k > PTS__Q_MAX_SLOTS) k = PTS__Q_MAX_SLOTS;
  w->q_len = k;
  if (n == 0) return;
  if (n > k) { /* more agents than a table holds: plain rotation */
    for (uint32_t j = 0; j < k; j++) w->q_table[j] = j, w->q_run[j] = w->q_span[j] = 1;
    return;
  }
  uint32_t nhigh = 0;
  for (uint32_t i = 0; i < n; i++) nhigh += w->arr->agents[i]->q_high;
  uint32_t nlow = nhigh ? n - nhigh : 0, share_n = nhigh ? nhigh : n;
  uint32_t rest = k - nlow, r = 0, j = 0;
  for (uint32_t i = 0; i < n; i++) {
    bool shares = nhigh ? w->arr->agents[i]->q_high : true;
    uint32_t cnt = shares ? rest / share_n + (r++ < rest % share_n ? 1 : 0) : 1;
    while (cnt-- > 0) w->q_table[j++] = i;
  }
  for (j = 0; j < k; j++) {
    uint32_t len = 1, back = 0;
    while (len < k && w->q_table[(j + len) % k] == w->q_table[j]) len++;
    while (len + back < k && w->q_table[(j + k - 1 - back) % k] == w->q_table[j]) back++;
    w->q_run[j] = len;
    w->q_span[j] = len + back;
  }
}

/* The guard's histogram: bucket b holds the steps of lengths in an eighth
 * of an octave from 2^10 ns (all shorter ones in bucket 0) and remembers the
 * longest, so the guard is the length of a step that ran. */
#define Q_HIST_MIN_EXP 10

static uint32_t q_bucket(uint64_t ns) {
  if (ns < (UINT64_C(1) << Q_HIST_MIN_EXP)) return 0;
  uint32_t e = 63u - (uint32_t)__builtin_clzll(ns);
  uint32_t b = (e - Q_HIST_MIN_EXP) * 8u + (uint32_t)((ns >> (e - 3)) & 7u);
  return b < PTS__Q_HIST_BUCKETS ? b : PTS__Q_HIST_BUCKETS - 1;
}

/* The share of an agent's steps the guard may leave uncovered: 1 in 20. On
 * the real clock 1-3% of 20 us steps take 20-60 us longer (preemption, VM
 * steal; in bursts), and a guard that covered them would leave a long idle
 * tail at every run's end (with the longest step as the guard: 87% of the
 * thread, docs/security.md, "the guard"). */
#define Q_GUARD_SKIP 20

/* Sets the current guard to the longest step once the epoch's longest
 * 1 in Q_GUARD_SKIP are set aside, whole buckets at a time (with fewer than
 * Q_GUARD_SKIP steps none is: the maximum), and recounts the steps above
 * it. */
static void q_guard_set(pts_agent *a) {
  uint32_t allowed = a->q_steps / Q_GUARD_SKIP, above = 0, b = PTS__Q_HIST_BUCKETS;
  while (b > 0 && above + a->q_hist[b - 1] <= allowed) above += a->q_hist[--b];
  a->q_guard = b == 0 ? 0 : a->q_hist_max[b - 1];
  a->q_above = above;
}

/* Counts a step. The guard rises at once when more than 1 in Q_GUARD_SKIP
 * of the epoch's steps exceed it (so a new kind of long step is covered
 * from its first occurrences) and is recomputed at every power of two
 * steps and then every 1024 (so an early outlier, such as a first step
 * preempted for milliseconds, does not hold it up for the whole epoch). */
void pts__quant_charge(pts_agent *a, uint64_t ns) {
  a->q_busy += ns;
  uint32_t b = q_bucket(ns);
  uint32_t len = ns < UINT32_MAX ? (uint32_t)ns : UINT32_MAX;
  a->q_hist[b]++;
  if (len > a->q_hist_max[b]) a->q_hist_max[b] = len;
  a->q_steps++;
  if (ns > a->q_guard) a->q_above++;
  if ((uint64_t)a->q_above * Q_GUARD_SKIP > a->q_steps || (a->q_steps & (a->q_steps - 1)) == 0 ||
      (a->q_steps & 1023) == 0)
    q_guard_set(a);
}

/* Epoch boundary: new levels from the epoch's CPU time, with hysteresis
 * (up above half the low share, down below a quarter), the epoch's guard
 * kept for the next, a new table. Levels only move here: that is the
 * quantisation in time. */
static void quant_epoch(pts__worker *w) {
  uint64_t ep = quant_epoch_ns(w);
  uint64_t low_share = ep / w->q_len; /* one slot per frame */
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts_agent *a = w->arr->agents[i];
    if (!a->q_high && a->q_busy > low_share / 2) a->q_high = true;
    else if (a->q_high && a->q_busy < low_share / 4) a->q_high = false;
    a->q_busy = 0;
    q_guard_set(a);
    a->q_guard_prev = a->q_guard;
    memset(a->q_hist, 0, sizeof a->q_hist);
    memset(a->q_hist_max, 0, sizeof a->q_hist_max);
    a->q_steps = a->q_above = 0;
    a->q_guard = 0;
  }
  quant_table(w);
}

/* The slot containing now (the epoch rolled over first): its number k since
 * the frame origin, and its owner. */
static pts_agent *quant_slot(pts__worker *w, uint64_t now, uint64_t *k) {
  while (now >= w->q_epoch_end) {
    quant_epoch(w);
    w->q_epoch_end += quant_epoch_ns(w);
  }
  *k = (now - w->frame_origin) / w->pool->q.slot_ns;
  uint32_t idx = w->nagents > w->q_len ? (uint32_t)(*k % w->nagents) : w->q_table[*k % w->q_len];
  return w->arr->agents[idx];
}

bool pts__agent_signal_pending(const pts_agent *a) {
  return atomic_load_explicit(&a->signaled, memory_order_seq_cst);
}

uint64_t pts__quant_run(pts__worker *w, uint64_t now) {
  uint64_t k;
  if (w->nagents == 0 || now < w->frame_origin) return UINT64_MAX;
  (void)quant_slot(w, now, &k);
  if (w->nagents > w->q_len) return k; /* plain rotation: runs of one slot */
  uint32_t j = (uint32_t)(k % w->q_len);
  /* q_span - q_run: the run's slots before j. A run never wraps the frame
   * with two or more agents, and a lone agent's (span = run = frame) has no
   * start: each of its slots counts as one. */
  return k - (w->q_span[j] - w->q_run[j]);
}

pts_agent *pts__quant_owner(pts__worker *w, uint64_t now) {
  uint64_t k;
  return w->nagents == 0 || now < w->frame_origin ? NULL : quant_slot(w, now, &k);
}

pts_agent *pts__quant_pick(pts__worker *w, uint64_t now, uint64_t *until) {
  if (w->nagents == 0) return NULL;
  uint64_t k, slot = w->pool->q.slot_ns;
  pts_agent *owner = quant_slot(w, now, &k);
  uint64_t end = w->frame_origin + (k + 1) * slot;
  uint32_t j = (uint32_t)(k % w->q_len);
  uint64_t guard = owner->q_guard > owner->q_guard_prev ? owner->q_guard : owner->q_guard_prev;
  /* A margin of 1/2: the chance that preemption stretches a step past the
   * boundary grows with the step's length (on this VM, about 300 stretches
   * of 30 us or more a second); paid once per run, it costs little. Capped
   * at 7/8 of the owner's whole run, so a step longer than that can still
   * start (and overrun) at the run's start. Not for an owner that missed
   * its last run (below): it starts with the guard alone. */
  if (!owner->q_missed) guard += guard / 2;
  uint64_t span = (w->nagents <= w->q_len ? w->q_span[j] : 1) * slot;
  if (guard > span - span / 8) guard = span - span / 8;
  /* The guard protects the next owner: a step may run into the owner's own
   * next slot (not past the epoch, whose table may differ). */
  uint64_t run_end = end;
  if (w->nagents <= w->q_len) run_end += (w->q_run[j] - 1) * slot;
  if (run_end > w->q_epoch_end) run_end = w->q_epoch_end; /* a slot boundary */
  if (owner->urgency != PTS__URGENCY_NONE && run_end - now >= guard) {
    owner->q_missed = false;
    owner->q_last_start = now;
    return owner;
  }
  /* A ready owner that has not started a step since its run began came too
   * late for the run's start window: the window is the span less the guard
   * (31 us for a one-slot owner whose steps take 200 us of 250), and the
   * worker can arrive later than that every frame when the host takes the
   * CPU at a fixed phase (on the project's VM: about 40 us every 1 ms,
   * phase-locked to the clock, so a frame of 4 ms meets it at the same slot
   * start every time). With the margin that owner would miss every run for
   * as long as the phase holds (0.4-1.1 s seen); its next run starts with
   * its guard alone, which leaves a window of 50 us there. The decision
   * reads the owner's own readiness and history and the time of the
   * worker's arrival (docs/security.md, "Missed runs"). */
  if (owner->urgency != PTS__URGENCY_NONE) {
    uint64_t first = w->nagents <= w->q_len ? k - (w->q_span[j] - w->q_run[j]) : k;
    if (owner->q_last_start < w->frame_origin + first * slot) owner->q_missed = true;
  }
  *until = end; /* idle (or too short) slots stay idle */
  return NULL;
}

/* Whether the slot starting at t (a boundary pts__quant_pick handed out) has an
 * owner with work, or maybe (a deferred poll): the pool thread then wakes
 * early and spins to the boundary (worker.c, idle), so that owner's step
 * starts within the guard's start window. It reads the next owner's own
 * state only. */
bool pts__quant_owner_ready(const pts__worker *w, uint64_t t) {
  if (w->nagents == 0 || t < w->frame_origin) return false;
  uint64_t k = (t - w->frame_origin) / w->pool->q.slot_ns;
  uint32_t idx = w->nagents > w->q_len ? (uint32_t)(k % w->nagents) : w->q_table[k % w->q_len];
  if (idx >= w->nagents) return false;
  const pts_agent *a = w->arr->agents[idx];
  return a->urgency != PTS__URGENCY_NONE || a->q_stale;
}

void pts__quant_layout(pts__worker *w, uint64_t now) {
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts_agent *a = w->arr->agents[i];
    /* A new agent starts high (an equal share at once); levels of the
     * others are kept. */
    if (!a->q_known) a->q_high = a->q_known = true;
  }
  quant_table(w);
  w->q_epoch_end = now + quant_epoch_ns(w);
}

/* ---- what the worker loop asks (worker.c) ---- */

/* The slot's owner at now, if a poll of it was deferred: it is due. */
pts_agent *pts__quant_owed_poll(pts__worker *w, uint64_t now) {
  pts_agent *owner = pts__quant_owner(w, now);
  return owner != NULL && owner->q_stale ? owner : NULL;
}

/* Whether the worker must be awake at the boundary until: its slot's
 * owner has work (or maybe: a deferred poll), or a wake-up the hold keeps
 * (wakeups_waiting) may be the next owner's, whose poll comes with the
 * pass: spinning to the boundary lets that owner start on it. */
bool pts__quant_wakes_at(const pts__worker *w, uint64_t until, bool wakeups_waiting) {
  return until != UINT64_MAX &&
         (pts__quant_owner_ready(w, until) || (!w->pool->q.no_hold && wakeups_waiting));
}

/* Whether a's poll waits for its own slot (study.h): true when the slot
 * at now belongs to another agent; a is then owed it (q_stale). */
bool pts__quant_defer(pts__worker *w, pts_agent *a, uint64_t now) {
  pts_agent *owner = pts__quant_owner(w, now);
  if (owner == NULL || owner == a) return false;
  a->q_stale = true;
  return true;
}

/* Real clock: how late a timed park wakes on this worker thread
 * (a decaying maximum, ns). A step may begin only in the first slot - guard
 * of its slot (31 us with the guard's cap) and a park wakes 50-250 us late
 * (timer slack, VM), so before a boundary whose owner has work the worker
 * parks until boundary - lead, then spins to it. Thread-local: each worker
 * learns its own lateness, and nothing outside this file reads it. */
static _Thread_local uint64_t q_late = 50000;

uint64_t pts__quant_wake_lead(const pts__worker *w) {
  uint64_t cap = w->pool->q.slot_ns / 2; /* never spin through most of a slot */
  uint64_t lead = q_late + q_late / 2 + 10000;
  return lead < cap ? lead : cap;
}

void pts__quant_woke_late(uint64_t late) {
  if (late > q_late)
    q_late = late > 1000000 ? 1000000 : late; /* a preemption, not a wake-up */
  else
    q_late -= (q_late - late) / 32;
}

/* The padded pass (study.h): whether a pass now leaves the
 * wake-up queue and the timers alone: no pass is due in this run of the
 * owner's slots and the slot's owner has work. */
bool pts__quant_holding(pts__worker *w, uint64_t now) {
  if (w->pool->q.no_hold) return false;
  if (pts__quant_run(w, now) != w->q_pass_run) return false; /* a pass is due */
  pts_agent *owner = pts__quant_owner(w, now);
  return owner != NULL && owner->urgency != PTS__URGENCY_NONE;
}

/* pts__quant_holding for the worker's pass: the first pass of each run reads
 * the queue and the timers and ends at *pad_end (a fixed length); later
 * passes read them only while the slot's owner has nothing to run. */
bool pts__quant_hold(pts__worker *w, uint64_t now, uint64_t *pad_end) {
  if (w->pool->q.no_hold) return false;
  uint64_t k = pts__quant_run(w, now);
  if (k != w->q_pass_run) {
    w->q_pass_run = k;
    *pad_end = now + w->pool->q.pad_ns;
    return false;
  }
  return pts__quant_holding(w, now);
}

/* Spins until t or until a queue gets work (with the hold, the wake-up
 * queue waits for the run-start pass). Returns true at t. */
bool pts__quant_spin(pts__worker *w, uint64_t t) {
  bool hold = !w->pool->q.no_hold;
  while ((hold || pts__mpsc_is_empty(&w->signaled)) && pts__mpsc_is_empty(&w->control)) {
    if (pts__now_ns() >= t) return true;
    pts__cpu_relax(0);
  }
  return false;
}

