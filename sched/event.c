/* sched/event.c: the listener list of an event target (addEventListener,
 * removeEventListener, the on<event> handler attributes, and dispatch), as
 * the DOM orders it; and the events a caller constructs
 * (TaskPriorityChangeEvent's constructor), which signal.c dispatches.
 *
 * Invariant: each per-type list is sorted by registration sequence (nodes are
 * only ever appended, never moved), so a dispatch that remembers the sequence
 * counter at its start stops at the first newer node: a listener added during
 * a dispatch does not run in it. While any dispatch of the target is in
 * progress (depth > 0), removal only marks a node; the outermost dispatch
 * unlinks and frees marked nodes when it ends, so no dispatch can be left
 * holding a freed node, however listeners add, remove or nest.
 *
 * Threads: owner thread of the target's loop (the callers check it).
 */
#include <stdlib.h>
#include <string.h>

#include "loop/loop_internal.h"
#include "sched/signal_internal.h"
#include "sync/alloc.h"
#include "sync/intrusive.h"

struct pts__listener {
  pts__list link; /* on its type's list */
  pts_listener_fn fn;
  void *data;
  uint64_t seq;
  bool once;
  bool removed;
  bool is_handler; /* the on<event> attribute's listener; never deduplicated */
};

static pts__listener *node_of(pts__list *n) { return container_of(n, pts__listener, link); }

void pts__listeners_init(pts__listeners *l) {
  for (int t = 0; t < PTS__EVENT_TYPE_COUNT; t++) {
    pts__list_init(&l->of_type[t]);
    l->count[t] = 0;
  }
  l->seq = 0;
  l->depth = 0;
  l->dirty = false;
}

void pts__listeners_clear(pts__listeners *l) {
  for (int t = 0; t < PTS__EVENT_TYPE_COUNT; t++) {
    pts__list_each(n, &l->of_type[t]) pts__free(node_of(n));
    pts__list_init(&l->of_type[t]);
    l->count[t] = 0;
  }
  l->dirty = false;
}

static void unlink_node(pts__listener *n) {
  pts__list_remove(&n->link);
  pts__free(n);
}

/* DOM "remove an event listener": set removed, then drop it from the list.
 * Dropping waits while a dispatch may be standing on the node. */
static void remove_node(pts__listeners *l, int t, pts__listener *n) {
  n->removed = true;
  l->count[t]--;
  if (l->depth > 0)
    l->dirty = true;
  else
    unlink_node(n);
}

static void sweep(pts__listeners *l) {
  for (int t = 0; t < PTS__EVENT_TYPE_COUNT; t++)
    pts__list_each(n, &l->of_type[t]) if (node_of(n)->removed) unlink_node(node_of(n));
  l->dirty = false;
}

static int append(pts__listeners *l, int t, pts_listener_fn fn, void *data,
                  bool once, bool is_handler) {
  pts__listener *n = pts__malloc(sizeof *n);
  if (!n) return PTS_ENOMEM;
  n->fn = fn;
  n->data = data;
  n->seq = l->seq++;
  n->once = once;
  n->removed = false;
  n->is_handler = is_handler;
  pts__list_append(&l->of_type[t], &n->link);
  l->count[t]++;
  return 0;
}

static bool valid_type(pts_event_type type) {
  return (unsigned)type < PTS__EVENT_TYPE_COUNT;
}

/* DOM "add an event listener": a listener equal in (type, callback) to one
 * already registered and not removed is not added again. */
int pts__listeners_add(pts__listeners *l, pts_event_type type,
                       pts_listener_fn fn, void *data, bool once) {
  if (!valid_type(type) || !fn) return PTS_EINVAL;
  pts__list_each(p, &l->of_type[type]) {
    pts__listener *n = node_of(p);
    if (!n->removed && !n->is_handler && n->fn == fn && n->data == data) return 0;
  }
  return append(l, (int)type, fn, data, once, false);
}

int pts__listeners_remove(pts__listeners *l, pts_event_type type,
                          pts_listener_fn fn, void *data) {
  if (!valid_type(type) || !fn) return PTS_EINVAL;
  pts__list_each(p, &l->of_type[type]) {
    pts__listener *n = node_of(p);
    if (!n->removed && !n->is_handler && n->fn == fn && n->data == data) {
      remove_node(l, (int)type, n);
      return 0;
    }
  }
  return PTS_ENOTFOUND;
}

/* HTML event handler attributes: the first non-null value activates the
 * handler by adding its listener; later values replace the callback in place
 * (same slot, and a dispatch reaching the slot calls the current value); null
 * deactivates it, removing the listener, so a later value appends anew. */
int pts__listeners_set_handler(pts__listeners *l, pts_event_type type,
                               pts_listener_fn fn, void *data) {
  if (!valid_type(type)) return PTS_EINVAL;
  pts__listener *h = NULL;
  pts__list_each(p, &l->of_type[type])
    if (!node_of(p)->removed && node_of(p)->is_handler) h = node_of(p);
  if (!fn) {
    if (h) remove_node(l, (int)type, h);
    return 0;
  }
  if (h) {
    h->fn = fn;
    h->data = data;
    return 0;
  }
  return append(l, (int)type, fn, data, false, true);
}

/* DOM "dispatch" reduced to a target with no tree: "inner invoke" over the
 * listeners that existed when the dispatch began, skipping removed ones and
 * removing a once listener before calling it. Each call is script of its own
 * (loop_internal.h): with an empty stack around the dispatch (a task's
 * steps fire it), each listener's microtasks run before the next listener
 * is called. */
void pts__listeners_dispatch(pts_loop *loop, pts__listeners *l,
                             const pts_event *event) {
  int t = (int)event->type;
  if (!valid_type(event->type)) return;
  uint64_t limit = l->seq;
  l->depth++;
  /* Nodes stay linked while depth > 0 (removals only mark them), so the
   * next node is read after the listener ran, as the list is then. */
  pts__list *head = &l->of_type[t];
  for (pts__list *p = head->next; p != head; p = p->next) {
    pts__listener *n = node_of(p);
    if (n->seq >= limit) break; /* added during this dispatch */
    if (n->removed) continue;
    pts_listener_fn fn = n->fn;
    void *data = n->data;
    if (n->once) remove_node(l, t, n);
    pts__script_enter(loop);
    fn(data, event);
    pts__script_leave(loop);
  }
  if (--l->depth == 0 && l->dirty) sweep(l);
}

/* ---- constructed events (spec 3.1; dispatched by signal.c) ---- */

int pts_priority_change_event_new(const char *type,
                                  const pts_priority_change_event_init *init,
                                  pts_event **out) {
  if (!out) return PTS_EINVAL;
  /* WebIDL: both arguments are required, and so is previousPriority. */
  if (!type || !init) return PTS_ETYPE;
  if (!pts_priority_name(init->previous_priority)) return PTS_ETYPE;
  size_t n = strlen(type) + 1;
  pts_event *ev = pts__malloc(sizeof *ev + n);
  if (!ev) return PTS_ENOMEM;
  char *name = (char *)(ev + 1);
  memcpy(name, type, n);
  ev->type = strcmp(name, "prioritychange") == 0 ? PTS_EVENT_PRIORITYCHANGE
             : strcmp(name, "abort") == 0        ? PTS_EVENT_ABORT
                                                 : PTS_EVENT_OTHER;
  ev->target = NULL;
  ev->previous_priority = init->previous_priority;
  ev->type_name = name;
  ev->is_trusted = false;
  ev->dispatching = false;
  *out = ev;
  return 0;
}

void pts_event_free(pts_event *event) {
  if (!event) return;
  if (event->target) pts_signal_unref(event->target);
  pts__free(event);
}
