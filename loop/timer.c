/* loop/timer.c: the loop's timers (spec: run steps after a timeout), the
 * public setTimeout-like timers built on them, and the id map that finds a
 * public timer or idle callback by id.
 *
 * Invariant: a timer is in the binary heap iff its state is TIMER_ARMED, and
 * heap_index is then its position (so removal is O(log n)); the heap is
 * ordered by (deadline, seq), seq being the start sequence, so equal
 * deadlines fire in start order. A timer of an inactive global is
 * TIMER_PAUSED: out of the heap, its time left saved in `remaining`, and
 * re-armed at now + remaining (same seq) when the global is active again.
 * UINT64_MAX as a deadline means "never": a saturated delay.
 */
#include <stdlib.h>

#include "loop/loop_impl.h"
#include "sync/alloc.h"
#include "sync/heap.h"
#include "sync/intrusive.h"

/* ---- the heap (sync/heap.h): by deadline, then start order ---- */

static bool before(const void *x, const void *y, const void *ctx) {
  (void)ctx;
  const pts__heap_ent *a = x, *b = y;
  return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void placed(void *x, uint32_t i) { ((pts__heap_ent *)x)->t->heap_index = i; }

static const pts__heap_kind heap_kind = {sizeof(pts__heap_ent), before, placed};

int pts__timer_heap_reserve(pts__timer_heap *h, uint64_t need) {
  if (need <= h->cap) return 0;
  if (need > UINT32_MAX - 1) return PTS_ENOMEM; /* heap_index is 32-bit */
  uint64_t cap = h->cap ? h->cap : 64;
  while (cap < need) cap *= 2;
  if (cap > UINT32_MAX - 1) cap = UINT32_MAX - 1;
  pts__heap_ent *a = pts__realloc(h->a, (size_t)cap * sizeof *a);
  if (a == NULL) return PTS_ENOMEM;
  h->a = a;
  h->cap = (uint32_t)cap;
  return 0;
}

static int heap_push(pts__timer_heap *h, pts__timer *t) {
  int rc = pts__timer_heap_reserve(h, (uint64_t)h->len + 1);
  if (rc != 0) return rc;
  pts__heap_ent e = {t->deadline, t->seq, t};
  pts__heap_push(h->a, &h->len, &e, heap_kind, NULL);
  return 0;
}

static void heap_remove(pts__timer_heap *h, pts__timer *t) {
  pts__heap_remove(h->a, &h->len, t->heap_index, heap_kind, NULL);
  t->heap_index = UINT32_MAX;
}

void pts__timer_heap_free(pts__timer_heap *h) {
  pts__free(h->a);
  h->a = NULL;
  h->len = h->cap = 0;
}

uint64_t pts__timers_next_deadline(const pts_loop *loop) {
  return loop->heap.len ? loop->heap.a[0].deadline : UINT64_MAX;
}

/* ---- the embedded timer ---- */

static void glist_link(pts_global *g, pts__timer *t) {
  pts__list_append(&g->timers, &t->glink);
  g->ntimers++;
}

static void glist_unlink(pts__timer *t) {
  pts__list_remove(&t->glink);
  t->global->ntimers--;
}

void pts__timer_init(pts__timer *t, pts_global *g, pts_task_fn fn, void *data) {
  t->deadline = 0;
  t->seq = 0;
  t->remaining = 0;
  t->heap_index = UINT32_MAX;
  t->state = TIMER_IDLE;
  pts__list_node_init(&t->glink);
  t->global = g;
  t->fn = fn;
  t->data = data;
}

bool pts__timer_stop(pts__timer *t) {
  if (t == NULL || t->state == TIMER_IDLE) return false;
  if (t->state == TIMER_ARMED) heap_remove(&t->global->loop->heap, t);
  glist_unlink(t);
  t->state = TIMER_IDLE;
  return true;
}

int pts__timer_start(pts__timer *t, uint64_t delay_ns) {
  if (t == NULL || t->global == NULL || t->fn == NULL) return PTS_EINVAL;
  pts_global *g = t->global;
  if (g->detached) return PTS_ECLOSED;
  pts__timer_stop(t);
  pts_loop *loop = g->loop;
  t->seq = loop->timer_seq++; /* before the push: the heap orders by it */
  if (g->active) {
    t->deadline = pts__sat_add(pts__loop_now_ns(loop), delay_ns);
    int rc = heap_push(&loop->heap, t);
    if (rc != 0) return rc;
    t->state = TIMER_ARMED;
  } else {
    t->remaining = delay_ns;
    t->deadline = UINT64_MAX;
    t->state = TIMER_PAUSED;
  }
  glist_link(g, t);
  return 0;
}

void pts__timers_fire_due(pts_loop *loop) {
  pts__timer_heap *h = &loop->heap;
  if (h->len == 0) return;
  uint64_t now = pts__loop_now_ns(loop);
  /* Timers started by the steps that run here wait for the next pass: a
   * 0-delay timer that restarts itself cannot hold the loop in this phase.
   * They sort after every older due timer, so stopping at them is exact. */
  uint64_t limit = loop->timer_seq;
  while (h->len != 0) {
    pts__timer *t = h->a[0].t;
    if (t->deadline > now || t->deadline == UINT64_MAX || t->seq >= limit)
      break;
    heap_remove(h, t);
    glist_unlink(t);
    t->state = TIMER_IDLE;
    t->fn(t->data, 0);
  }
}

void pts__timers_pause_global(pts_global *g) {
  pts_loop *loop = g->loop;
  uint64_t now = pts__loop_now_ns(loop);
  pts__list_each(n, &g->timers) {
    pts__timer *t = container_of(n, pts__timer, glink);
    if (t->state != TIMER_ARMED) continue;
    heap_remove(&loop->heap, t);
    if (t->deadline == UINT64_MAX)
      t->remaining = UINT64_MAX; /* never stays never */
    else
      t->remaining = t->deadline > now ? t->deadline - now : 0;
    t->state = TIMER_PAUSED;
  }
}

void pts__timers_resume_global(pts_global *g) {
  pts_loop *loop = g->loop;
  uint64_t now = pts__loop_now_ns(loop);
  pts__list_each(n, &g->timers) {
    pts__timer *t = container_of(n, pts__timer, glink);
    if (t->state != TIMER_PAUSED) continue;
    t->deadline = pts__sat_add(now, t->remaining);
    t->remaining = 0;
    /* Room was reserved by the caller: this push cannot fail. */
    heap_push(&loop->heap, t);
    t->state = TIMER_ARMED;
  }
}

void pts__timers_release_global(pts_global *g) {
  while (!pts__list_empty(&g->timers)) {
    pts__timer *t = container_of(pts__list_first(&g->timers), pts__timer, glink);
    pts__timer_stop(t);
    t->fn(t->data, PTS_ECANCELED);
  }
}

/* ---- public timers ---- */

/* While waiting the node's timer is in use; once due (or for 0 ms) its task
 * is: never both, hence the union. */
typedef struct ptimer {
  pts__idnode idn;
  union {
    pts__timer timer;
    pts__task task;
  } u;
  bool queued;
  pts_task_fn fn;
  void *data;
} ptimer;

static uint64_t ms_to_ns(uint64_t ms) {
  return ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u;
}

static void ptimer_finish(ptimer *p, int status) {
  pts_loop *loop = p->idn.global->loop;
  pts_task_fn fn = p->fn;
  void *data = p->data;
  pts__idmap_del(&loop->ids, p->idn.id);
  pts__loop_pool_free(loop, p, sizeof *p);
  fn(data, status);
}

static void ptimer_task(void *d, int status) { ptimer_finish(d, status); }

/* The timer's completion steps: queue a task on the timer source. */
static void ptimer_expired(void *d, int status) {
  ptimer *p = d;
  if (status == 0) {
    pts__task_init(&p->u.task, p->idn.global, ptimer_task, p);
    p->queued = true;
    if (pts__task_queue(&p->u.task, PTS_SOURCE_TIMER) == 0) return;
    status = PTS_ECANCELED;
  }
  ptimer_finish(p, status);
}

int pts_timer_start(pts_global *global, uint64_t delay_ms, pts_task_fn fn,
                    void *data, uint64_t *id) {
  if (global == NULL || fn == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(global->loop);
  if (global->detached) return PTS_ECLOSED;
  pts_loop *loop = global->loop;
  ptimer *p = pts__loop_pool_alloc(loop, sizeof *p);
  if (p == NULL) return pts__enomem();
  p->idn.id = loop->next_id++;
  p->idn.kind = IDNODE_TIMER;
  p->idn.global = global;
  p->fn = fn;
  p->data = data;
  int rc = pts__idmap_put(&loop->ids, &p->idn);
  if (rc == 0) {
    if (delay_ms == 0) {
      /* A 0 ms timer queues its task at once, at the call (docs/decisions.md). */
      pts__task_init(&p->u.task, global, ptimer_task, p);
      p->queued = true;
      rc = pts__task_queue(&p->u.task, PTS_SOURCE_TIMER);
    } else {
      pts__timer_init(&p->u.timer, global, ptimer_expired, p);
      p->queued = false;
      rc = pts__timer_start(&p->u.timer, ms_to_ns(delay_ms));
    }
    if (rc != 0) pts__idmap_del(&loop->ids, p->idn.id);
  }
  if (rc != 0) {
    pts__loop_pool_free(loop, p, sizeof *p);
    return rc;
  }
  if (id != NULL) *id = p->idn.id;
  return 0;
}

int pts_timer_cancel(pts_global *global, uint64_t id) {
  if (global == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(global->loop);
  pts_loop *loop = global->loop;
  pts__idnode *n = pts__idmap_get(&loop->ids, id);
  if (n == NULL || n->kind != IDNODE_TIMER || n->global != global)
    return PTS_ENOTFOUND;
  ptimer *p = container_of(n, ptimer, idn);
  if (p->queued)
    pts__task_dequeue(&p->u.task);
  else
    pts__timer_stop(&p->u.timer);
  pts__idmap_del(&loop->ids, id);
  pts__loop_pool_free(loop, p, sizeof *p);
  return 0;
}

/* ---- the id map ---- */

static uint32_t home(uint64_t id, uint32_t mask) {
  /* Fibonacci hashing: ids are sequential, the multiply spreads them. */
  return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

static int idmap_grow(pts__idmap *m) {
  uint32_t cap = m->cap ? m->cap * 2 : 16;
  uint64_t *keys = pts__calloc(cap, sizeof *keys);
  pts__idnode **vals = pts__calloc(cap, sizeof *vals);
  if (keys == NULL || vals == NULL) {
    pts__free(keys);
    pts__free(vals);
    return PTS_ENOMEM;
  }
  for (uint32_t i = 0; i < m->cap; i++) {
    if (m->keys[i] == 0) continue;
    uint32_t j = home(m->keys[i], cap - 1);
    while (keys[j] != 0) j = (j + 1) & (cap - 1);
    keys[j] = m->keys[i];
    vals[j] = m->vals[i];
  }
  pts__free(m->keys);
  pts__free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return 0;
}

int pts__idmap_put(pts__idmap *m, pts__idnode *n) {
  /* Load at most 1/2: short probe sequences. */
  if ((m->count + 1) * 2 > m->cap) {
    int rc = idmap_grow(m);
    if (rc != 0) return rc;
  }
  uint32_t mask = m->cap - 1, i = home(n->id, mask);
  while (m->keys[i] != 0) i = (i + 1) & mask;
  m->keys[i] = n->id;
  m->vals[i] = n;
  m->count++;
  return 0;
}

pts__idnode *pts__idmap_get(const pts__idmap *m, uint64_t id) {
  if (m->cap == 0 || id == 0) return NULL;
  uint32_t mask = m->cap - 1, i = home(id, mask);
  while (m->keys[i] != 0) {
    if (m->keys[i] == id) return m->vals[i];
    i = (i + 1) & mask;
  }
  return NULL;
}

void pts__idmap_del(pts__idmap *m, uint64_t id) {
  if (m->cap == 0 || id == 0) return;
  uint32_t mask = m->cap - 1, i = home(id, mask);
  while (m->keys[i] != id) {
    if (m->keys[i] == 0) return;
    i = (i + 1) & mask;
  }
  m->keys[i] = 0;
  m->count--;
  /* Backward shift (Algorithm R): move up every later entry of the cluster
   * whose home is not cyclically in (i, j], so lookups never stop early. */
  uint32_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (m->keys[j] == 0) return;
    uint32_t k = home(m->keys[j], mask);
    bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    m->keys[i] = m->keys[j];
    m->vals[i] = m->vals[j];
    m->keys[j] = 0;
    i = j;
  }
}

void pts__idmap_free(pts__idmap *m) {
  pts__free(m->keys);
  pts__free(m->vals);
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->count = 0;
}
