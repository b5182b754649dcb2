/* sched/queues.c: scheduler task queues (spec section 2): made, mapped
 * and unmapped, with the scheduler's two maps (the static one indexed by
 * priority and continuation, the dynamic one a chained hash keyed by
 * (TaskSignal, continuation)) and a dynamic queue's priority change
 * algorithm; and the room the selection heaps keep for every live queue
 * (scheduler.c, invariant 4). The heap operations themselves are inline in
 * sched_impl.h: the post and run paths use them.
 */
#include <string.h>

#include "sched/sched_impl.h"

/* Room for one more live queue in every level. */
int pts__sched_heaps_reserve(sctx *c) {
  uint64_t need = c->stats.live_queues + 1;
  if (need <= c->heap_cap) return 0;
  uint32_t cap = c->heap_cap ? c->heap_cap * 2 : 16;
  for (int l = 0; l < LEVELS; l++) {
    heap_ent *a = pts__realloc(c->levels[l].a, cap * sizeof *a);
    if (!a) return PTS_ENOMEM; /* the levels already grown keep their room */
    c->levels[l].a = a;
    c->levels[l].cap = cap;
  }
  c->heap_cap = cap;
  return 0;
}

/* Room for one more entry (load factor <= 1). */
static int dyn_reserve(pts_scheduler *s) {
  if (s->dyn_count < s->dyn_cap) return 0;
  uint32_t cap = s->dyn_cap ? s->dyn_cap * 2 : 16;
  squeue **b = pts__calloc(cap, sizeof *b);
  if (!b) return PTS_ENOMEM;
  for (uint32_t i = 0; i < s->dyn_cap; i++) {
    squeue *q = s->dyn[i];
    while (q) {
      squeue *n = q->hnext;
      size_t h = pts__sched_dyn_hash(q->signal, q->is_cont) & (cap - 1);
      q->hnext = b[h];
      b[h] = q;
      q = n;
    }
  }
  pts__free(s->dyn);
  s->dyn = b;
  s->dyn_cap = cap;
  return 0;
}

/* Removes q's entry if the map still maps its key to q. */
static void dyn_remove(pts_scheduler *s, squeue *q) {
  if (!s->dyn_cap) return;
  squeue **pp = &s->dyn[pts__sched_dyn_hash(q->signal, q->is_cont) & (s->dyn_cap - 1)];
  for (; *pp; pp = &(*pp)->hnext) {
    if (*pp == q) {
      *pp = q->hnext;
      q->hnext = NULL;
      s->dyn_count--;
      return;
    }
  }
}

/* spec: the priority change algorithm a dynamic queue adds to its signal:
 * set the queue's priority; move it between levels (its tasks stay). */
static void on_priority_change(pts__algo *a) {
  squeue *q = container_of(a, squeue, prio_algo);
  int p = pts_signal_priority(q->signal);
  if (p < 0 || p == q->priority) return;
  bool in_heap = q->heap_index != NOT_IN_HEAP;
  sctx *c = q->sched->ctx;
  if (in_heap) pts__sched_heap_remove(c, q);
  q->priority = (uint8_t)p;
  if (in_heap) pts__sched_heap_insert(c, q);
}

__attribute__((noinline)) void pts__sched_heap_sift_down(level_heap *h, squeue *q) {
  heap_ent e = {pts__sched_qkey(q), q};
  pts__heap_down(h->a, h->n, q->heap_index, &e, pts__sched_heap_kind, NULL);
}

__attribute__((noinline)) void pts__sched_heap_remove_inner(level_heap *h, uint32_t i) {
  pts__heap_remove(h->a, &h->n, i, pts__sched_heap_kind, NULL);
}

void pts__sched_queue_free(squeue *q) {
  sctx *c = q->sched->ctx;
  c->stats.live_queues--;
  pts__loop_pool_free(c->loop, q, sizeof *q);
}

/* spec: a queue's removal steps, with the decided fix (docs/decisions.md,
 * "queue removal steps"): the map entry is removed only if it still maps to this
 * queue, so a newer queue made under the same key keeps its entry. */
void pts__sched_queue_removal_steps(squeue *q) {
  if (!q->mapped) return; /* no map entry maps to it any more */
  pts_scheduler *s = q->sched;
  if (q->dynamic) {
    dyn_remove(s, q);
    pts__signal_remove_priority_algo(q->signal, &q->prio_algo);
    pts_signal_unref(q->signal);
    q->signal = NULL;
  } else if (s->static_q[q->priority][q->is_cont] == q) {
    s->static_q[q->priority][q->is_cont] = NULL;
  }
  q->mapped = 0;
  pts__list_remove(&q->link);
}

/* A queue made for a task that then failed to be posted. */
void pts__sched_queue_discard_if_unused(squeue *q) {
  if (q->head || q->refs) return;
  pts__sched_queue_removal_steps(q);
  pts__sched_queue_free(q);
}

/* spec: create a scheduler task queue (and put it in its map). */
squeue *pts__sched_queue_new(pts_scheduler *s, int priority, unsigned cont,
                             pts_signal *dyn_signal) {
  sctx *c = s->ctx;
  if (pts__sched_heaps_reserve(c) != 0) return NULL;
  if (dyn_signal && dyn_reserve(s) != 0) return NULL;
  squeue *q = pts__loop_pool_alloc(c->loop, sizeof *q);
  if (!q) return NULL;
  memset(q, 0, sizeof *q);
  q->sched = s;
  q->heap_index = NOT_IN_HEAP;
  q->priority = (uint8_t)priority;
  q->is_cont = (uint8_t)cont;
  q->mapped = 1;
  c->stats.live_queues++;
  if (dyn_signal) {
    q->dynamic = 1;
    q->signal = dyn_signal;
    pts_signal_ref(dyn_signal);
    size_t h = pts__sched_dyn_hash(dyn_signal, cont) & (s->dyn_cap - 1);
    q->hnext = s->dyn[h];
    s->dyn[h] = q;
    s->dyn_count++;
    pts__algo_init(&q->prio_algo, on_priority_change);
    /* spec: add a priority change algorithm */
    pts__signal_add_priority_algo(dyn_signal, &q->prio_algo);
  } else {
    s->static_q[priority][cont] = q;
  }
  pts__list_prepend(&s->queues, &q->link);
  return q;
}

