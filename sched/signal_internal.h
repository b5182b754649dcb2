/* sched/signal_internal.h: what signals offer the scheduler: abort algorithms
 * and priority change algorithms as intrusive nodes (embedded in the task
 * handle or queue that registers them, so adding one never allocates).
 *
 * Threads: owner thread of the signal's loop only.
 */
#ifndef PTSCHED_SIGNAL_INTERNAL_H
#define PTSCHED_SIGNAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptsched/signal.h"
#include "sync/list.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An algorithm registered on a signal. fn runs with the node; the node may be
 * removed (or its owner freed) from inside fn. */
typedef struct pts__algo {
  pts__list link; /* owned by the signal; unlinked when idle */
  void (*fn)(struct pts__algo *algo);
} pts__algo;

static inline void pts__algo_init(pts__algo *a, void (*fn)(pts__algo *)) {
  pts__list_node_init(&a->link);
  a->fn = fn;
}
static inline bool pts__algo_linked(const pts__algo *a) { return pts__list_linked(&a->link); }

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

/* ---- additions (signals helper): lifetime rules for the scheduler ----
 *
 * A signal's memory is reclaimed by the rules of signal.h. Removing the last
 * algorithm from a dependent signal that nobody holds may free it at once, and
 * a signal nobody holds may be freed while algorithms are still registered:
 * then they are unlinked without running (pts__algo_linked() turns false) and
 * a later pts__signal_remove_*_algo on them does not touch the signal. So a
 * user of these functions that reads a signal after registering on it holds a
 * reference (pts_signal_ref) for as long as it keeps the pointer.
 */

/* Number of live signal structs in the process (all loops), for leak checks in
 * tests. Relaxed atomic counter. */
size_t pts__signal_live_count(void);
/* Number of live controllers in the process, likewise. */
size_t pts__controller_live_count(void);

/* Bytes one dependent signal allocates for n abort-graph links (its struct
 * plus n intrusive link nodes in the same block; no per-link allocation and
 * no growable arrays), for the memory benchmark. */
size_t pts__signal_footprint(size_t n_links);

/* ---- the listener list of an event target (sched/event.c) ----
 *
 * DOM ordering: listeners run in registration order; a handler attribute
 * keeps the slot it got when first set; a listener removed during a dispatch
 * does not run; one added during a dispatch does not run in it. Nodes removed
 * while a dispatch of this target is in progress stay linked (marked removed)
 * until the outermost dispatch ends, so a dispatch can always follow next. */
#define PTS__EVENT_TYPE_COUNT 2
typedef struct pts__listener pts__listener;
typedef struct pts__listeners {
  pts__list of_type[PTS__EVENT_TYPE_COUNT]; /* pts__listener.link, in registration order */
  uint32_t count[PTS__EVENT_TYPE_COUNT]; /* live (not removed) listeners */
  uint64_t seq;   /* registration counter: orders nodes, bounds a dispatch */
  uint32_t depth; /* dispatches of this target in progress */
  bool dirty;     /* removed nodes wait for the outermost dispatch to end */
} pts__listeners;

void pts__listeners_init(pts__listeners *l);
/* Frees every node. Not during a dispatch. */
void pts__listeners_clear(pts__listeners *l);
int pts__listeners_add(pts__listeners *l, pts_event_type type,
                       pts_listener_fn fn, void *data, bool once);
int pts__listeners_remove(pts__listeners *l, pts_event_type type,
                          pts_listener_fn fn, void *data);
int pts__listeners_set_handler(pts__listeners *l, pts_event_type type,
                               pts_listener_fn fn, void *data);
/* Runs the listeners of event->type. The caller keeps the target (and so l)
 * alive for the whole call. */
void pts__listeners_dispatch(pts_loop *loop, pts__listeners *l,
                             const pts_event *event);
static inline uint32_t pts__listeners_count(const pts__listeners *l,
                                            pts_event_type type) {
  return l->count[type];
}

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_SIGNAL_INTERNAL_H */
