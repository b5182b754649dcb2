/* bench/sync/ck_candidates.c: concurrencykit queues used as an inbox, for
 * comparison with sync/mpsc.c (see mpsc_bench.cc for the harness).
 *   ck_fifo_mpmc: Michael-Scott queue with generation-tagged double-width
 *     CAS. The entry enqueued last stays in the queue as the stub until the
 *     next dequeue, so entries are double-buffered by iteration parity (an
 *     iteration starts only after the previous one was fully drained).
 *   ck_ring_mpsc: bounded ring, ck_ring_enqueue_mpsc from producers (spin
 *     while full) and ck_ring_dequeue_mpsc from the one consumer.
 *   ck_stack: ck_stack_push_upmc from producers, ck_stack_batch_pop_upmc by
 *     the consumer, which reverses each batch to restore push order.
 */
#include "bench/sync/ck_candidates.h"

#include <ck_fifo.h>
#include <ck_ring.h>
#include <ck_stack.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>

_Static_assert(sizeof(ck_stack_entry_t) == sizeof(void *),
               "bench_item.stk_next stands in for a ck_stack_entry_t");

#define RING_SIZE 4096u /* power of two, as ck_ring requires */

struct bench_ck {
  enum bench_ck_kind kind;
  uint32_t per;
  /* ck_fifo_mpmc */
  ck_fifo_mpmc_t fifo __attribute__((aligned(64)));
  ck_fifo_mpmc_entry_t stub;
  ck_fifo_mpmc_entry_t **entries; /* [producer][2 * per] */
  unsigned producers;
  /* ck_ring */
  ck_ring_t ring __attribute__((aligned(64)));
  ck_ring_buffer_t *buf;
  /* ck_stack */
  ck_stack_t stack __attribute__((aligned(64)));
  ck_stack_entry_t *fifo_batch; /* consumer's reversed batch */
};

bench_ck *bench_ck_new(enum bench_ck_kind kind, unsigned producers,
                       uint32_t per_producer) {
  bench_ck *b = aligned_alloc(64, (sizeof *b + 63) / 64 * 64);
  if (b == NULL) abort();
  *b = (bench_ck){.kind = kind, .per = per_producer, .producers = producers};
  ck_fifo_mpmc_init(&b->fifo, &b->stub);
  b->entries = calloc(producers, sizeof *b->entries);
  for (unsigned p = 0; p < producers; p++) {
    b->entries[p] = calloc(2 * (size_t)per_producer, sizeof **b->entries);
  }
  b->buf = calloc(RING_SIZE, sizeof *b->buf);
  ck_ring_init(&b->ring, RING_SIZE);
  ck_stack_init(&b->stack);
  return b;
}

void bench_ck_free(bench_ck *b) {
  for (unsigned p = 0; p < b->producers; p++) free(b->entries[p]);
  free(b->entries);
  free(b->buf);
  free(b);
}

void bench_ck_push(bench_ck *b, unsigned producer, bench_item *it,
                   uint64_t iter) {
  switch (b->kind) {
  case BENCH_CK_FIFO_MPMC: {
    ck_fifo_mpmc_entry_t *e =
        &b->entries[producer][(iter & 1) * b->per + it->seq % b->per];
    ck_fifo_mpmc_enqueue(&b->fifo, e, it);
    return;
  }
  case BENCH_CK_RING_MPSC: {
    unsigned spins = 0;
    while (!ck_ring_enqueue_mpsc(&b->ring, b->buf, it)) { /* full */
      if (++spins < 64) {
        __builtin_ia32_pause();
      } else {
        spins = 0;
        sched_yield();
      }
    }
    return;
  }
  case BENCH_CK_STACK:
    ck_stack_push_upmc(&b->stack, (ck_stack_entry_t *)&it->stk_next);
    return;
  }
}

static bench_item *item_of_stk(ck_stack_entry_t *e) {
  return (bench_item *)((char *)e - offsetof(bench_item, stk_next));
}

bench_item *bench_ck_pop(bench_ck *b) {
  switch (b->kind) {
  case BENCH_CK_FIFO_MPMC: {
    bench_item *it;
    ck_fifo_mpmc_entry_t *garbage;
    if (!ck_fifo_mpmc_dequeue(&b->fifo, &it, &garbage)) return NULL;
    return it;
  }
  case BENCH_CK_RING_MPSC: {
    bench_item *it;
    if (!ck_ring_dequeue_mpsc(&b->ring, b->buf, &it)) return NULL;
    return it;
  }
  case BENCH_CK_STACK: {
    if (b->fifo_batch == NULL) {
      ck_stack_entry_t *e = ck_stack_batch_pop_upmc(&b->stack);
      if (e == NULL) return NULL;
      ck_stack_entry_t *rev = NULL; /* newest-first -> oldest-first */
      while (e != NULL) {
        ck_stack_entry_t *next = e->next;
        e->next = rev;
        rev = e;
        e = next;
      }
      b->fifo_batch = rev;
    }
    ck_stack_entry_t *e = b->fifo_batch;
    b->fifo_batch = e->next;
    return item_of_stk(e);
  }
  }
  return NULL;
}
