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
 *                     levels (quantized.c, docs/security.md).
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
  w->rr_head = NULL;
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

/* ---- round-robin ring ----
 * The ready agents on a ring of rr_link nodes with no sentinel (the list
 * toolkit's insert and remove, sync/list.h, work on any ring), w->rr_head
 * the next to run and its predecessor the last: so the end of a turn that
 * leaves the head ready is one step of rr_head (pts__policy_turn_end), where
 * moving the node to a sentinel list's tail cost about 10 instructions. */

/* To the tail: right before the head. */
static void rr_append(pts__worker *w, pts_agent *a) {
  if (w->rr_head == NULL) {
    a->rr_link.next = a->rr_link.prev = &a->rr_link;
    w->rr_head = &a->rr_link;
  } else {
    pts__list_insert_before(w->rr_head, &a->rr_link);
  }
}

static void rr_unlink(pts__worker *w, pts_agent *a) {
  pts__list *n = &a->rr_link;
  if (!pts__list_linked(n)) return;
  if (w->rr_head == n) w->rr_head = n->next == n ? NULL : n->next;
  pts__list_remove(n);
}


/* ---- the interface ---- */

void pts__policy_layout(pts__worker *w, uint64_t now) {
  if (w->policy == PTS_POLICY_RANDOMIZED) fen_rebuild(w);
  /* A new layout starts a new frame: slot k of it begins at origin + k * slot. */
  w->frame_origin = now;
  w->q_pass_run = UINT64_MAX - 1; /* the new frame's first pass starts a run */
  if (w->policy == PTS_POLICY_QUANTIZED) pts__quant_layout(w, now);
}

void pts__policy_update(pts__worker *w, pts_agent *a, int u, bool ran,
                        uint64_t cpu_ns) {
  bool ready = u != PTS__URGENCY_NONE;
  switch ((int)w->policy) {
    case PTS_POLICY_ROUND_ROBIN:
      if (ready && (ran || !pts__list_linked(&a->rr_link))) {
        /* The turn's end (every step at quantum 1), or newly ready: to
         * the tail. */
        if (w->rr_head == &a->rr_link) {
          w->rr_head = a->rr_link.next; /* the head's turn ended */
        } else {
          rr_unlink(w, a);
          rr_append(w, a);
        }
      } else if (!ready) {
        rr_unlink(w, a);
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
      if (ran) pts__quant_charge(a, cpu_ns);
      break;
    default: /* time-partitioned: the urgency is all it needs */
      break;
  }
}

void pts__policy_remove(pts__worker *w, pts_agent *a) {
  rr_unlink(w, a);
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
uint64_t pts__policy_quantum_slow(pts__worker *w, pts_agent *a) {
  uint64_t q = w->quantum_ns;
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
      return w->rr_head == NULL ? NULL : container_of(w->rr_head, pts_agent, rr_link);
    case PTS_POLICY_STRICT:
    case PTS_POLICY_FAIR:
      return w->hlen > 0 ? w->arr->heap[0] : NULL;
    case PTS_POLICY_RANDOMIZED:
      if (w->total == 0) return NULL;
      return w->arr->agents[fen_find(w, draw(w->rng, w->total))];
    case PTS_POLICY_QUANTIZED:
      return pts__quant_pick(w, now, until);
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
