/* bench/sync/ck_candidates.h: the concurrencykit inbox candidates behind a C
 * interface (ck's headers do not compile as C++). Each call is out of line,
 * as pts__mpsc_push/pop are, so every candidate pays one call per operation.
 * push: any producer thread; pop: the single consumer. */
#ifndef PTSCHED_BENCH_SYNC_CK_CANDIDATES_H
#define PTSCHED_BENCH_SYNC_CK_CANDIDATES_H

#include <stdint.h>

#include "sync/mpsc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_item {
  pts__mpsc_node mpsc;
  void *stk_next; /* a ck_stack_entry_t: one next pointer (checked in .c) */
  uint64_t seq;
  uint32_t producer;
} bench_item;

typedef struct bench_ck bench_ck;

enum bench_ck_kind { BENCH_CK_FIFO_MPMC, BENCH_CK_RING_MPSC, BENCH_CK_STACK };

bench_ck *bench_ck_new(enum bench_ck_kind kind, unsigned producers,
                       uint32_t per_producer);
void bench_ck_free(bench_ck *b);
/* iter: the harness's iteration number (ck_fifo double-buffers its entries
 * by its parity). */
void bench_ck_push(bench_ck *b, unsigned producer, bench_item *it,
                   uint64_t iter);
bench_item *bench_ck_pop(bench_ck *b); /* NULL when nothing is ready */

#ifdef __cplusplus
}
#endif

#endif /* PTSCHED_BENCH_SYNC_CK_CANDIDATES_H */
