/* sched/signal_internal.h: what signals offer the scheduler: abort algorithms
 * and priority change algorithms as intrusive nodes (embedded in the task
 * handle or queue that registers them, so adding one never allocates).
 *
 * Threads: owner thread of the signal's loop only.
 */
#ifndef PTSCHED_SIGNAL_INTERNAL_H
#define PTSCHED_SIGNAL_INTERNAL_H

#include <stdbool.h>

#include "ptsched/signal.h"

/* An algorithm registered on a signal. fn runs with the node; the node may be
 * removed (or its owner freed) from inside fn. */
typedef struct pts__algo {
  struct pts__algo *next, *prev; /* links owned by the signal; NULL when idle */
  void (*fn)(struct pts__algo *algo);
} pts__algo;

static inline void pts__algo_init(pts__algo *a, void (*fn)(pts__algo *)) {
  a->next = a->prev = 0;
  a->fn = fn;
}
static inline bool pts__algo_linked(const pts__algo *a) { return a->prev != 0; }

/* DOM "add" an abort algorithm: does nothing if the signal is aborted. */
void pts__signal_add_abort_algo(pts_signal *s, pts__algo *a);
/* DOM "remove": no-op when not linked. O(1). */
void pts__signal_remove_abort_algo(pts_signal *s, pts__algo *a);
/* Spec "add a priority change algorithm" (TaskSignal only). */
void pts__signal_add_priority_algo(pts_signal *s, pts__algo *a);
void pts__signal_remove_priority_algo(pts_signal *s, pts__algo *a);

/* Spec "create a fixed priority unabortable task signal" without caching: the
 * scheduler keeps one per priority per loop. New reference. */
int pts__signal_new_fixed(pts_loop *loop, pts_priority priority,
                          pts_signal **out);

#endif /* PTSCHED_SIGNAL_INTERNAL_H */
