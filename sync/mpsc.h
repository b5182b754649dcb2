/* sync/mpsc.h: the intrusive lock-free multi-producer single-consumer queue
 * behind every loop's inbox.
 *
 * Who calls what: pts__mpsc_push() from any thread; pts__mpsc_pop() and
 * pts__mpsc_init() only from the single consumer (the loop's owner thread).
 * Nodes are embedded in the producer's command (no allocation here); a node
 * belongs to the queue from push until pop returns it.
 *
 * Guarantees: nothing pushed is lost or returned twice; nodes pushed by one
 * producer pop in push order. The design and the benchmark that chose it are
 * in docs/sync.md.
 */
#ifndef PTSCHED_SYNC_MPSC_H
#define PTSCHED_SYNC_MPSC_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>

#include "sync/cacheline.h"

typedef struct pts__mpsc_node {
  PTS__ATOMIC(struct pts__mpsc_node *) next;
} pts__mpsc_node;

typedef struct pts__mpsc {
  /* Producers' end, on its own cache line so posts do not bounce the
   * consumer's line. */
  alignas(PTS__CACHELINE) PTS__ATOMIC(pts__mpsc_node *) head;
  alignas(PTS__CACHELINE) pts__mpsc_node *tail; /* consumer's end */
  pts__mpsc_node stub;
} pts__mpsc;

#ifdef __cplusplus
extern "C" {
#endif

void pts__mpsc_init(pts__mpsc *q);

/* Any thread. Never blocks, never allocates. */
void pts__mpsc_push(pts__mpsc *q, pts__mpsc_node *node);

/* Consumer only. Returns the oldest node, or NULL when the queue is empty or
 * when a producer is between its two steps of push (its node then shows up on
 * a later pop: see pts__mpsc_is_empty before deciding to sleep). */
pts__mpsc_node *pts__mpsc_pop(pts__mpsc *q);

/* Consumer only. pop, but only a node whose successor is linked: NULL for
 * the last node (and mid-push), which stays for pop to take. For a
 * consumer that keeps up with a stream (pts__loop_inbox_next): taking the
 * last node costs pop an exchange on the producers' line and a stub push
 * their next link lands on. */
pts__mpsc_node *pts__mpsc_pop_linked(pts__mpsc *q);

/* Consumer only. True when no push has begun that pop has not returned: a
 * consumer that sees pop() == NULL and !is_empty must retry, not sleep. */
bool pts__mpsc_is_empty(pts__mpsc *q);

#ifndef __cplusplus
/* Consumer only. False when pop() would return NULL at its first step (the
 * stub at tail with no successor linked): one load of the consumer's own
 * cache line, so a loop can skip its inbox between tasks. A producer
 * mid-push is not seen; pts__mpsc_is_empty() still is the check before
 * sleeping. Relaxed: pop's acquire loads order the payload. */
static inline bool pts__mpsc_maybe_nonempty(pts__mpsc *q) {
  return q->tail != &q->stub ||
         atomic_load_explicit(&q->stub.next, memory_order_relaxed) != NULL;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* PTSCHED_SYNC_MPSC_H */
