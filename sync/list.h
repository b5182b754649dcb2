/* sync/list.h: the intrusive toolkit's doubly linked list, circular with a
 * sentinel head (D. E. Knuth, TAOCP vol. 1, 2.2.5), the one list behind
 * every list of the library: a global's task queues and timers, the loop's
 * ready list and promises, a scheduler's queues, tasks and signals, and the
 * agents' registries.
 *
 * A list is a pts__list head, and each element embeds a pts__list node
 * (recovered with container_of). The head is its own neighbour when the
 * list is empty, so insert and remove never test for an end. A node that is
 * not on a list has NULL links: remove clears them, so "is it linked" is
 * one test (pts__list_linked). A head points at itself: the struct holding
 * it must not be copied or moved once the head is initialised. Insert and
 * remove also serve a ring with no sentinel, where the owner keeps a pointer
 * to its first node (round-robin's ready ring, agents/policy.c).
 *
 * Threads: none of its own; each list belongs to one thread, or to one
 * lock's holders (its owner's rule). */
#ifndef PTSCHED_SYNC_LIST_H
#define PTSCHED_SYNC_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pts__list {
  struct pts__list *next, *prev;
} pts__list;

#define PTS__LIST_INLINE static inline __attribute__((always_inline))

/* An empty list. */
PTS__LIST_INLINE void pts__list_init(pts__list *head) { head->next = head->prev = head; }

/* A node on no list. */
PTS__LIST_INLINE void pts__list_node_init(pts__list *n) { n->next = n->prev = NULL; }

PTS__LIST_INLINE bool pts__list_empty(const pts__list *head) { return head->next == head; }

/* Whether node n is on a list. */
PTS__LIST_INLINE bool pts__list_linked(const pts__list *n) { return n->next != NULL; }

/* Links node n (on no list) right after at, a node or the head. */
PTS__LIST_INLINE void pts__list_insert_after(pts__list *at, pts__list *n) {
  n->prev = at;
  n->next = at->next;
  at->next->prev = n;
  at->next = n;
}

/* Links node n (on no list) right before at, a node or the head. */
PTS__LIST_INLINE void pts__list_insert_before(pts__list *at, pts__list *n) {
  n->next = at;
  n->prev = at->prev;
  at->prev->next = n;
  at->prev = n;
}

/* At the end (FIFO with pts__list_first) and at the front (LIFO). */
PTS__LIST_INLINE void pts__list_append(pts__list *head, pts__list *n) {
  pts__list_insert_before(head, n);
}
PTS__LIST_INLINE void pts__list_prepend(pts__list *head, pts__list *n) {
  pts__list_insert_after(head, n);
}

/* Unlinks node n from its list and clears its links. */
PTS__LIST_INLINE void pts__list_remove(pts__list *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->next = n->prev = NULL;
}

/* The first and the last node; NULL if the list is empty. */
PTS__LIST_INLINE pts__list *pts__list_first(const pts__list *head) {
  return head->next == head ? NULL : head->next;
}
PTS__LIST_INLINE pts__list *pts__list_last(const pts__list *head) {
  return head->prev == head ? NULL : head->prev;
}

/* The node after n, or NULL at the end of the list of that head. */
PTS__LIST_INLINE pts__list *pts__list_next(const pts__list *head, const pts__list *n) {
  return n->next == head ? NULL : n->next;
}

/* for (each node n of the list at head): declares n (and n##_next) for the
 * loop's body, which may remove n but no other node (a walk whose steps
 * may remove any node keeps a cursor node on the list, sched/signal.c). */
#define pts__list_each(n, head)                                              \
  for (pts__list *n = (head)->next, *n##_next = n->next; n != (head);        \
       n = n##_next, n##_next = n->next)

#endif /* PTSCHED_SYNC_LIST_H */
