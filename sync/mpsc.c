/* sync/mpsc.c: the intrusive lock-free MPSC queue behind every loop's inbox.
 *
 * Algorithm: Dmitry Vyukov, "Intrusive MPSC node-based queue" (1024cores.net,
 * 2010), itself a variant of his non-intrusive atomic-exchange MPSC queue.
 * Producers never loop and never wait: one atomic exchange on head, then one
 * store that links the previous node to the new one. The consumer owns tail
 * and walks the links. A stub node embedded in the queue lets the consumer
 * hand out the last real node without a dangling tail.
 *
 * Invariant: the nodes reachable from tail by next links, plus the node a
 * producer has exchanged into head but not linked yet, are exactly the nodes
 * pushed and not yet popped, in exchange order (so per producer in push
 * order). A node is returned only after its next link has been written, so
 * once pop returns it no thread touches it again and its owner may reuse it
 * at once.
 *
 * Protocol:
 * push(n):  1. n->next = NULL.
 *           2. prev = exchange(head, n)          (n is now the newest node)
 *           3. prev->next = n                    (n is now reachable)
 *   Between 2 and 3 the chain is cut at prev: the consumer sees prev->next ==
 *   NULL while head != prev, and reports "mid-push" rather than "empty".
 * pop():    1. Skip the stub if it is at tail.
 *           2. If tail->next is set, tail is complete: advance and return it.
 *           3. Otherwise tail is the last node linked. If head != tail a
 *              producer is between steps 2 and 3: return NULL (not empty).
 *           4. Else push the stub behind tail so tail gets a successor, then
 *              return tail if its next is now set (a producer may have slipped
 *              in between 3 and 4, in which case try again later).
 * pop_linked(): steps 1-2 only: NULL where pop would go on to step 3. It
 *           never reads or writes head, so a consumer that keeps up with a
 *           stream does not take the producers' line at every pop.
 * empty:    tail == stub and head == stub: no push has begun since the stub
 *           was last pushed, and the stub has no successor.
 */
#include "sync/mpsc.h"

#include <stddef.h>

void pts__mpsc_init(pts__mpsc *q) {
  /* Relaxed: the queue is published to other threads by whatever hands them
   * the pointer (thread creation, a release store), which orders these. */
  atomic_store_explicit(&q->stub.next, NULL, memory_order_relaxed);
  atomic_store_explicit(&q->head, &q->stub, memory_order_relaxed);
  q->tail = &q->stub;
}

void pts__mpsc_push(pts__mpsc *q, pts__mpsc_node *node) {
  /* Relaxed: the node is private until the exchange below releases it. */
  atomic_store_explicit(&node->next, NULL, memory_order_relaxed);
  /* seq_cst: release so the next producer's link store into node->next lands
   * after our NULL store; acquire so our link store into prev lands after
   * prev's owner's NULL store; and sequentially consistent so it pairs with
   * the consumer's seq_cst parker prepare + is_empty load (a Dekker pair:
   * either the consumer sees this push or unpark sees the consumer parking). */
  pts__mpsc_node *prev =
      atomic_exchange_explicit(&q->head, node, memory_order_seq_cst);
  /* Release: the consumer's acquire load of prev->next must see the payload
   * the producer wrote into the command before pushing it. */
  atomic_store_explicit(&prev->next, node, memory_order_release);
}

pts__mpsc_node *pts__mpsc_pop_linked(pts__mpsc *q) {
  pts__mpsc_node *tail = q->tail;
  /* Acquire: pairs with the producer's release link store, so the node the
   * link points to (and its command payload) is fully visible. */
  pts__mpsc_node *next =
      atomic_load_explicit(&tail->next, memory_order_acquire);
  if (tail == &q->stub) {
    if (next == NULL) return NULL; /* empty, or the first push is mid-way */
    q->tail = next;
    tail = next;
    /* Acquire: same pairing as above, one node further. */
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
  }
  if (next == NULL) return NULL; /* the last node, or mid-push behind it */
  q->tail = next;
  return tail;
}

pts__mpsc_node *pts__mpsc_pop(pts__mpsc *q) {
  pts__mpsc_node *node = pts__mpsc_pop_linked(q); /* steps 1-2 */
  if (node != NULL) return node;
  pts__mpsc_node *tail = q->tail;
  if (tail == &q->stub) return NULL; /* empty, or the first push is mid-way */
  /* Acquire is not needed for the pointer comparison itself, but it keeps
   * this load from being hoisted above the tail->next load of pop_linked, so
   * a stale head can only make us report mid-push (retry), never hand out
   * tail early. */
  pts__mpsc_node *head = atomic_load_explicit(&q->head, memory_order_acquire);
  if (tail != head) return NULL; /* a producer is between exchange and link */
  /* tail is the last node: give it a successor so it can be returned without
   * leaving q->tail pointing at a node its owner is about to reuse. */
  pts__mpsc_push(q, &q->stub);
  /* Acquire: pairs with the release link store (ours for the stub, or that
   * of a producer that exchanged head between our load and our push). */
  pts__mpsc_node *next = atomic_load_explicit(&tail->next, memory_order_acquire);
  if (next != NULL) {
    q->tail = next;
    return tail;
  }
  return NULL; /* a producer slipped in before the stub and is mid-push */
}

bool pts__mpsc_is_empty(pts__mpsc *q) {
  if (q->tail != &q->stub) return false; /* an unreturned node is at tail */
  /* seq_cst: the consumer's half of the Dekker pair with push's exchange (see
   * parker.h): after pts__parker_prepare(), either this load sees a push that
   * began, or that producer's pts__parker_unpark() sees the consumer parking.
   */
  return atomic_load_explicit(&q->head, memory_order_seq_cst) == &q->stub;
}
