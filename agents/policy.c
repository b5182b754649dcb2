/* agents/policy.c: the inter-loop policies of a worker thread: which of the
 * loops placed on it runs the next step (docs/agents.md).
 *
 * Invariant (per worker, owner thread only): an agent is in the policy's
 * ready structure iff its last poll found a runnable task (urgency > NONE):
 *   round-robin       FIFO list of ready agents; a stepped agent goes last.
 *   strict            binary heap by (urgency desc, ready-since asc).
 *   fair              binary heap by (virtual runtime asc, ready-since asc).
 *   randomized        Fenwick tree of tickets (weight if ready, else 0)
 *                     over the agents in placement order.
 *   time-partitioned  no structure: the frame decides, the ready flag
 *                     (urgency) says whether the slot's owner can run.
 *   quantized         the same with a slot table per epoch (q_table),
 *                     rebuilt only at epoch boundaries from quantised
 *                     levels (agents/study.h, docs/security.md).
 * Costs per decision: O(1) round-robin and time-partitioned, O(log n) the
 * others; add/remove of an agent (rare) rebuilds the Fenwick tree in O(n).
 */
#include <string.h>

#include "agents/agents_impl.h"
#include "sync/heap.h"

/* Virtual runtime scale: ns of CPU * FAIR_SCALE / weight. A power of two so
 * weights up to 2^10 keep a resolution of one ns. */
#define FAIR_SCALE_SHIFT 10

/* ---- the PRNG: xoshiro256** seeded by splitmix64 (D. Blackman and
 * S. Vigna, "Scrambled linear pseudorandom number generators", ACM TOMS
 * 2021; splitmix64 from G. Steele, D. Lea, C. Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014). ---- */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro(uint64_t s[4]) {
  uint64_t r = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return r;
}

/* A draw in [0, n): the high half of a 64x64 product (D. Lemire, "Fast
 * random integer generation in an interval", ACM TOMACS 2019, without the
 * rejection step: the bias is below n / 2^64, far under any measurement). */
static uint64_t draw(uint64_t s[4], uint64_t n) {
  return (uint64_t)(((unsigned __int128)xoshiro(s) * n) >> 64);
}

void pts__policy_init(pts__worker *w) {
  w->policy = w->pool->opts.policy;
  w->quantum_ns = w->pool->opts.quantum_ns;
  pts__list_init(&w->rr);
  /* Each thread's stream depends on the seed and its index only, so a run
   * with the same seed and the same ready sets repeats its choices. */
  uint64_t x = w->pool->opts.seed ^ ((uint64_t)w->index * UINT64_C(0xd1b54a32d192ed03));
  for (int i = 0; i < 4; i++) w->rng[i] = splitmix64(&x);
}

/* ---- Fenwick tree (P. Fenwick, "A new data structure for cumulative
 * frequency tables", Software: Practice and Experience 24(3), 1994) ---- */

static void fen_add(pts__worker *w, uint32_t i, int64_t delta) {
  uint64_t *f = w->arr->fen;
  for (uint32_t k = i + 1; k <= w->nagents; k += k & (~k + 1)) f[k] += (uint64_t)delta;
}

/* The agent index whose ticket range holds r (0 <= r < total). */
static uint32_t fen_find(pts__worker *w, uint64_t r) {
  uint64_t *f = w->arr->fen;
  uint32_t n = w->nagents, pos = 0;
  uint32_t step = 1;
  while (step * 2 <= n) step *= 2;
  for (; step != 0; step >>= 1) {
    if (pos + step <= n && f[pos + step] <= r) {
      pos += step;
      r -= f[pos];
    }
  }
  return pos; /* prefix(pos) <= r < prefix(pos + 1): element pos, 0-based */
}

static void fen_rebuild(pts__worker *w) {
  uint64_t *f = w->arr->fen;
  uint32_t n = w->nagents;
  memset(f, 0, ((size_t)n + 1) * sizeof *f);
  w->total = 0;
  for (uint32_t i = 1; i <= n; i++) {
    f[i] += w->arr->agents[i - 1]->tickets;
    w->total += w->arr->agents[i - 1]->tickets;
    uint32_t j = i + (i & (~i + 1));
    if (j <= n) f[j] += f[i];
  }
}

/* ---- the heap (strict, fair) ---- */

static bool before(const void *x, const void *y, const void *ctx) {
  const pts__worker *w = ctx;
  const pts_agent *a = *(pts_agent *const *)x, *b = *(pts_agent *const *)y;
  if (w->policy == PTS_POLICY_STRICT) {
    if (a->urgency != b->urgency) return a->urgency > b->urgency;
  } else if (a->vruntime != b->vruntime) {
    return a->vruntime < b->vruntime;
  }
  return a->ready_since < b->ready_since;
}

static void placed(void *x, uint32_t i) { (*(pts_agent **)x)->hidx = i; }

static const pts__heap_kind heap_kind = {sizeof(pts_agent *), before, placed};

static void hinsert(pts__worker *w, pts_agent *a) {
  pts__heap_push(w->arr->heap, &w->hlen, &a, heap_kind, w);
}

static void hfix(pts__worker *w, pts_agent *a) {
  pts__heap_fix(w->arr->heap, w->hlen, a->hidx, heap_kind, w);
}

static void hremove(pts__worker *w, pts_agent *a) {
  uint32_t i = a->hidx;
  if (i == PTS__NO_INDEX) return;
  pts__heap_remove(w->arr->heap, &w->hlen, i, heap_kind, w);
  a->hidx = PTS__NO_INDEX;
}

/* ---- round-robin list ---- */

static void rr_unlink(pts_agent *a) {
  if (pts__list_linked(&a->rr_link)) pts__list_remove(&a->rr_link);
}


/* ---- quantized partitioning (agents/study.h) ----
 *
 * Why this leaks at most one bit per agent per epoch: within an epoch the
 * slot table is fixed, so when each agent may start a step is a function of
 * the clock, the table and that agent's own work only; the table is a
 * function of the levels, and each level is one bit recomputed once per
 * epoch. The guard keeps a step from running into the next owner's slot
 * (a step among the agent's longest 1 in Q_GUARD_SKIP still can: that is
 * the residual leak, docs/security.md). */

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
static void q_guard_learn(pts_agent *a, uint64_t ns) {
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

static pts_agent *quant_pick(pts__worker *w, uint64_t now, uint64_t *until) {
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
   * start (and overrun) at the run's start. */
  guard += guard / 2;
  uint64_t span = (w->nagents <= w->q_len ? w->q_span[j] : 1) * slot;
  if (guard > span - span / 8) guard = span - span / 8;
  /* The guard protects the next owner: a step may run into the owner's own
   * next slot (not past the epoch, whose table may differ). */
  uint64_t run_end = end;
  if (w->nagents <= w->q_len) run_end += (w->q_run[j] - 1) * slot;
  if (run_end > w->q_epoch_end) run_end = w->q_epoch_end; /* a slot boundary */
  if (owner->urgency != PTS__URGENCY_NONE && run_end - now >= guard) return owner;
  *until = end; /* idle (or too short) slots stay idle */
  return NULL;
}

/* Whether the slot starting at t (a boundary quant_pick handed out) has an
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

static void quant_layout(pts__worker *w, uint64_t now) {
  for (uint32_t i = 0; i < w->nagents; i++) {
    pts_agent *a = w->arr->agents[i];
    /* A new agent starts high (an equal share at once); levels of the
     * others are kept. */
    if (!a->q_known) a->q_high = a->q_known = true;
  }
  quant_table(w);
  w->q_epoch_end = now + quant_epoch_ns(w);
}

/* ---- the interface ---- */

void pts__policy_layout(pts__worker *w, uint64_t now) {
  if (w->policy == PTS_POLICY_RANDOMIZED) fen_rebuild(w);
  /* A new layout starts a new frame: slot k of it begins at origin + k * slot. */
  w->frame_origin = now;
  w->q_pass_run = UINT64_MAX - 1; /* the new frame's first pass starts a run */
  if (w->policy == PTS_POLICY_QUANTIZED) quant_layout(w, now);
}

void pts__policy_update(pts__worker *w, pts_agent *a, int u, bool ran,
                        uint64_t cpu_ns) {
  bool ready = u != PTS__URGENCY_NONE;
  switch ((int)w->policy) {
    case PTS_POLICY_ROUND_ROBIN:
      if (ready && (ran || !pts__list_linked(&a->rr_link))) {
        /* The turn's end (every step at quantum 1), or newly ready: to
         * the tail. */
        rr_unlink(a);
        pts__list_append(&w->rr, &a->rr_link);
      } else if (!ready) {
        rr_unlink(a);
      }
      break;
    case PTS_POLICY_STRICT:
      if (!ready) {
        hremove(w, a);
      } else if (a->hidx == PTS__NO_INDEX) {
        a->ready_since = ++w->seq;
        hinsert(w, a);
      } else {
        /* A step restarts the loop's waiting time; a new urgency without a
         * step keeps it. */
        if (ran) a->ready_since = ++w->seq;
        hfix(w, a);
      }
      break;
    case PTS_POLICY_FAIR:
      if (ran) a->vruntime += (cpu_ns << FAIR_SCALE_SHIFT) / a->weight;
      if (!ready) {
        hremove(w, a);
      } else if (a->hidx == PTS__NO_INDEX) {
        /* No banked credit: an agent that was idle starts at the floor. */
        if (a->vruntime < w->min_vr) a->vruntime = w->min_vr;
        a->ready_since = ++w->seq;
        hinsert(w, a);
      } else if (ran) {
        a->ready_since = ++w->seq;
        hfix(w, a);
      }
      if (w->hlen > 0 && w->arr->heap[0]->vruntime > w->min_vr)
        w->min_vr = w->arr->heap[0]->vruntime;
      break;
    case PTS_POLICY_RANDOMIZED: {
      uint64_t t = ready ? a->weight : 0;
      if (t != a->tickets) {
        fen_add(w, a->idx, (int64_t)t - (int64_t)a->tickets);
        w->total = w->total + t - a->tickets;
        a->tickets = t;
      }
      break;
    }
    case PTS_POLICY_QUANTIZED:
      if (ran) {
        a->q_busy += cpu_ns;
        q_guard_learn(a, cpu_ns);
      }
      break;
    default: /* time-partitioned: the urgency is all it needs */
      break;
  }
}

void pts__policy_remove(pts__worker *w, pts_agent *a) {
  rr_unlink(a);
  hremove(w, a);
  if (a->tickets != 0) {
    fen_add(w, a->idx, -(int64_t)a->tickets);
    w->total -= a->tickets;
    a->tickets = 0;
  }
  a->urgency = PTS__URGENCY_NONE;
}

/* The quantum (pts_pool_options.quantum_ns; docs/agents.md, "Switches
 * between loops"). Fair: the picked loop runs until its virtual runtime
 * passes the next ready loop's by the quantum (a loop's weight scales it),
 * as CFS runs a task for its granularity, so the lag of a ready loop behind
 * its share is bounded by that plus one step and one round. */
uint64_t pts__policy_quantum(pts__worker *w, pts_agent *a) {
  uint64_t q = w->quantum_ns;
  if (q <= 1) return 0;
  switch ((int)w->policy) {
    case PTS_POLICY_ROUND_ROBIN:
    case PTS_POLICY_RANDOMIZED:
    case PTS_POLICY_STRICT:
      return q;
    case PTS_POLICY_FAIR: {
      if (w->hlen == 0 || w->arr->heap[0] != a) return 0;
      uint64_t next = UINT64_MAX;
      for (uint32_t c = 1; c <= 2 && c < w->hlen; c++)
        if (w->arr->heap[c]->vruntime < next) next = w->arr->heap[c]->vruntime;
      if (next == UINT64_MAX) return q;
      uint64_t limit = next + (q << FAIR_SCALE_SHIFT) / a->weight;
      if (limit <= a->vruntime) return 0;
      return ((limit - a->vruntime) * a->weight) >> FAIR_SCALE_SHIFT;
    }
    default: /* the slot policies: a slot is the turn */
      return 0;
  }
}

void pts__policy_charge(pts__worker *w, pts_agent *a, uint64_t cpu_ns) {
  if (w->policy != PTS_POLICY_FAIR) return;
  a->vruntime += (cpu_ns << FAIR_SCALE_SHIFT) / a->weight;
  if (a->hidx != PTS__NO_INDEX) hfix(w, a);
}

pts_agent *pts__policy_pick(pts__worker *w, uint64_t now, uint64_t *until) {
  switch ((int)w->policy) {
    case PTS_POLICY_ROUND_ROBIN:
      return w->rr.next == &w->rr ? NULL : container_of(w->rr.next, pts_agent, rr_link);
    case PTS_POLICY_STRICT:
    case PTS_POLICY_FAIR:
      return w->hlen > 0 ? w->arr->heap[0] : NULL;
    case PTS_POLICY_RANDOMIZED:
      if (w->total == 0) return NULL;
      return w->arr->agents[fen_find(w, draw(w->rng, w->total))];
    case PTS_POLICY_QUANTIZED:
      return quant_pick(w, now, until);
    default: {
      if (w->nagents == 0) return NULL;
      uint64_t slot = w->pool->opts.slot_ns;
      uint64_t k = (now - w->frame_origin) / slot;
      pts_agent *owner = w->arr->agents[k % w->nagents];
      /* A step started in the slot may run past its end (no preemption);
       * the frame stays anchored, so the next owner's slot shrinks and no
       * boundary moves. */
      if (owner->urgency != PTS__URGENCY_NONE) return owner;
      *until = w->frame_origin + (k + 1) * slot; /* idle slots stay idle */
      return NULL;
    }
  }
}
