/* sched/signal.c: AbortSignal and TaskSignal (one struct, is_task tells them
 * apart), their controllers, the abort and priority graphs between signals,
 * AbortSignal.abort/timeout/any and TaskSignal.any (DOM "Aborting ongoing
 * activities" and the spec's section 3, "Controlling tasks").
 *
 * Invariants:
 * 1. Only non-dependent signals have dependents. create a dependent signal
 *    flattens every dependent input to its sources, and create a dependent
 *    task signal flattens a priority source to its root, so both graphs are
 *    one level deep: freeing or aborting never recurses further than one step.
 * 2. An abort edge (dep_link) lives inside its dependent's allocation (one
 *    malloc per any() call, none per link) and sits in its source's intrusive
 *    list while both can still need it; it is unlinked in O(1) when either
 *    side is freed, and both sides' edges are dropped once the dependent is
 *    aborted (an aborted signal ignores later aborts, so this is unobservable).
 * 3. A signal is freed exactly when refs == 0 and it is not observable
 *    (collect()): refs counts the caller's references, a controller's, a
 *    pending timeout's, and temporary ones taken around every dispatch and
 *    around each dependent while a source walks its list, so a listener may
 *    drop its last reference to any signal at any time.
 *
 * Threads: owner thread of the signal's loop; reference counts are plain.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop/loop_internal.h"
#include "sync/alloc.h"
#include "sync/intrusive.h"
#include "sched/signal_internal.h"

/* An abort-graph edge: source is NULL once unlinked. */
typedef struct dep_link {
  pts_signal *source; /* NULL once unlinked */
  pts_signal *dep;
  pts__list link; /* on source's deps, in the order added */
} dep_link;

struct pts_signal {
  pts_loop *loop;
  uint32_t refs;
  bool is_task;
  bool dependent;
  bool priority_changing;
  bool freeing;
  int priority;     /* TaskSignal only */
  pts_value reason; /* the abort reason; undefined = not aborted */
  pts__list abort_algos; /* pts__algo.link, in the order added */
  pts__list prio_algos;
  pts__listeners listeners;
  /* Abort graph. As a dependent: edges[0..n_edges) (n_sources still linked).
   * As a source: the list of edges naming it. */
  dep_link *edges;
  uint32_t n_edges;
  uint32_t n_sources;
  pts__list deps; /* dep_link.link of the edges naming us */
  /* Priority graph: the (root) source signal, our place in its list, and
   * our own list of priority dependents. */
  pts_signal *prio_source;
  pts__list prio_link; /* on prio_source's prio_deps */
  pts__list prio_deps; /* our priority dependents (prio_link), in the order added */
  /* Scratch: the dependentsToAbort list of signal abort, and the duplicate
   * mark of create a dependent signal (cleared before it returns). */
  pts_signal *abort_next;
  const void *mark;
};

typedef struct timeout_signal {
  pts_signal sig;
  pts_global *global;
  pts__timer timer;
  pts__task task;
} timeout_signal;

struct pts_controller {
  uint32_t refs;
  pts_signal *signal;
};

static atomic_size_t live_signals;
static atomic_size_t live_controllers;

size_t pts__signal_live_count(void) {
  return atomic_load_explicit(&live_signals, memory_order_relaxed);
}
size_t pts__controller_live_count(void) {
  return atomic_load_explicit(&live_controllers, memory_order_relaxed);
}

static size_t alloc_size(size_t base, size_t n_edges) {
  if (n_edges > (SIZE_MAX - base) / sizeof(dep_link)) return 0;
  return base + n_edges * sizeof(dep_link);
}

size_t pts__signal_footprint(size_t n_links) {
  return alloc_size(sizeof(pts_signal), n_links);
}

static bool valid_priority(int p) {
  return p >= 0 && p < PTS_PRIORITY_COUNT;
}

static bool is_aborted(const pts_signal *s) {
  return s->reason.kind != PTS_VALUE_UNDEFINED;
}

/* ---- algorithm lists ---- */

static pts__algo *algo_of(pts__list *n) { return container_of(n, pts__algo, link); }

/* A freed signal's algorithms are left idle, never run. */
static void algos_detach(pts__list *head) {
  while (!pts__list_empty(head)) pts__list_remove(pts__list_first(head));
}

/* ---- lifetime ---- */

/* A new signal with one reference and room for n_edges abort edges. */
static pts_signal *signal_alloc(pts_loop *loop, size_t base, size_t n_edges,
                                bool is_task) {
  size_t size = alloc_size(base, n_edges);
  if (size == 0 || n_edges > UINT32_MAX) return NULL;
  pts_signal *s = pts__calloc(1, size);
  if (!s) return NULL;
  s->loop = loop;
  s->refs = 1;
  s->is_task = is_task;
  s->priority = PTS_PRIORITY_USER_VISIBLE;
  s->reason = pts_undefined();
  pts__list_init(&s->abort_algos);
  pts__list_init(&s->prio_algos);
  pts__list_init(&s->prio_deps);
  pts__list_init(&s->deps);
  pts__listeners_init(&s->listeners);
  s->edges = (dep_link *)((char *)s + base);
  atomic_fetch_add_explicit(&live_signals, 1, memory_order_relaxed);
  return s;
}

/* The GC rules of DOM 3.2.1 and spec section 3, as ownership: a signal
 * nobody holds is still observable only if it is dependent and either has
 * abort listeners or algorithms and a source that can still abort it, or has
 * prioritychange listeners or priority change algorithms and a priority
 * source. Aborted signals have no abort sources left (invariant 2). */
static bool observable(const pts_signal *s) {
  if (!s->dependent) return false;
  if (s->n_sources > 0 &&
      (pts__listeners_count(&s->listeners, PTS_EVENT_ABORT) > 0 ||
       !pts__list_empty(&s->abort_algos)))
    return true;
  return s->prio_source != NULL &&
         (pts__listeners_count(&s->listeners, PTS_EVENT_PRIORITYCHANGE) > 0 ||
          !pts__list_empty(&s->prio_algos));
}

static void destroy(pts_signal *s);

static void collect(pts_signal *s) {
  if (s->refs == 0 && !s->freeing && !observable(s)) destroy(s);
}

static void unref_internal(pts_signal *s) {
  if (--s->refs == 0) collect(s);
}

static void deps_remove(dep_link *e) {
  pts__list_remove(&e->link);
  e->source = NULL;
}

static void deps_append(pts_signal *src, dep_link *e) {
  e->source = src;
  pts__list_append(&src->deps, &e->link);
}

/* src's first abort dependent's edge, or NULL. */
static dep_link *deps_first(pts_signal *src) {
  pts__list *n = pts__list_first(&src->deps);
  return n ? container_of(n, dep_link, link) : NULL;
}

static void prio_remove(pts_signal *d) {
  pts__list_remove(&d->prio_link);
  d->prio_source = NULL;
}

static void prio_append(pts_signal *src, pts_signal *d) {
  d->prio_source = src;
  pts__list_append(&src->prio_deps, &d->prio_link);
}

/* The priority dependent at n, or NULL. */
static pts_signal *prio_dep(pts__list *n) {
  return n ? container_of(n, pts_signal, prio_link) : NULL;
}

/* Drops a dependent's abort edges (it was aborted, or is being freed). */
static void unlink_abort_sources(pts_signal *d) {
  for (uint32_t i = 0; i < d->n_edges && d->n_sources > 0; i++) {
    dep_link *e = &d->edges[i];
    if (e->source) {
      deps_remove(e);
      d->n_sources--;
    }
  }
}

static void destroy(pts_signal *s) {
  s->freeing = true;
  unlink_abort_sources(s);
  if (s->prio_source) prio_remove(s);
  /* Our dependents lose a source that could abort or re-prioritise them;
   * those nobody holds may now be unobservable (invariant 1: they have no
   * dependents of their own, so this goes one level deep). */
  dep_link *e;
  while ((e = deps_first(s)) != NULL) {
    pts_signal *d = e->dep;
    deps_remove(e);
    d->n_sources--;
    collect(d);
  }
  pts_signal *d;
  while ((d = prio_dep(pts__list_first(&s->prio_deps))) != NULL) {
    prio_remove(d);
    collect(d);
  }
  algos_detach(&s->abort_algos);
  algos_detach(&s->prio_algos);
  pts__listeners_clear(&s->listeners);
  pts_value_release(s->reason);
  atomic_fetch_sub_explicit(&live_signals, 1, memory_order_relaxed);
  pts__free(s);
}

/* ---- algorithms (signal_internal.h) ---- */

/* spec (DOM): add an abort algorithm */
void pts__signal_add_abort_algo(pts_signal *s, pts__algo *a) {
  if (is_aborted(s)) return;
  pts__list_append(&s->abort_algos, &a->link);
}

/* spec (DOM): remove an abort algorithm */
void pts__signal_remove_abort_algo(pts_signal *s, pts__algo *a) {
  if (!pts__algo_linked(a)) return; /* s may already be freed */
  pts__list_remove(&a->link);
  collect(s);
}

/* spec: add a priority change algorithm */
void pts__signal_add_priority_algo(pts_signal *s, pts__algo *a) {
  if (!s->is_task) return;
  pts__list_append(&s->prio_algos, &a->link);
}

void pts__signal_remove_priority_algo(pts_signal *s, pts__algo *a) {
  if (!pts__algo_linked(a)) return;
  pts__list_remove(&a->link);
  collect(s);
}

/* ---- abort ---- */

/* spec (DOM): run the abort steps. Each algorithm is unlinked before it runs
 * (that empties the set as we go), so one may free its own node or remove
 * another that has not run yet. */
static void run_abort_steps(pts_signal *s) {
  while (!pts__list_empty(&s->abort_algos)) {
    pts__algo *a = algo_of(pts__list_first(&s->abort_algos));
    pts__list_remove(&a->link);
    a->fn(a);
  }
  pts_event ev = {.type = PTS_EVENT_ABORT, .target = s, .previous_priority = -1,
                  .type_name = "abort", .is_trusted = true, .dispatching = true};
  pts__listeners_dispatch(s->loop, &s->listeners, &ev);
}

/* spec (DOM): signal abort. Takes over reason (not undefined). */
static void signal_abort(pts_signal *s, pts_value reason) {
  /* 1. */
  if (is_aborted(s)) {
    pts_value_release(reason);
    return;
  }
  /* 2. */
  s->reason = reason;
  /* 3-4. Every dependent is marked, sharing the same reason object, before
   * any algorithm or listener runs. Each is held until its steps have run. */
  pts_signal *to_abort = NULL, **tail = &to_abort;
  pts__list_each(n, &s->deps) {
    pts_signal *d = container_of(n, dep_link, link)->dep;
    if (is_aborted(d)) continue;
    d->reason = pts_value_copy(s->reason);
    d->refs++;
    d->abort_next = NULL;
    *tail = d;
    tail = &d->abort_next;
  }
  /* Invariant 2: edges of aborted signals are dead weight. */
  dep_link *e;
  while ((e = deps_first(s)) != NULL) {
    e->dep->n_sources--;
    deps_remove(e);
  }
  unlink_abort_sources(s);
  for (pts_signal *d = to_abort; d; d = d->abort_next) unlink_abort_sources(d);
  /* 5. */
  s->refs++;
  run_abort_steps(s);
  /* 6. */
  for (pts_signal *d = to_abort; d;) {
    pts_signal *next = d->abort_next;
    run_abort_steps(d);
    unref_internal(d);
    d = next;
  }
  unref_internal(s);
}

/* ---- priority ---- */

/* Runs each priority change algorithm. A cursor node (fn NULL) marks our
 * place, so an algorithm may remove itself or any other, or free its owner. */
static void run_priority_algos(pts_signal *s) {
  pts__list *head = &s->prio_algos;
  pts__algo cursor;
  cursor.fn = NULL;
  pts__list *n = head->next;
  while (n != head) {
    pts__algo *a = algo_of(n);
    if (a->fn == NULL) { /* another walk's cursor */
      n = n->next;
      continue;
    }
    pts__list_insert_after(n, &cursor.link);
    a->fn(a);
    n = cursor.link.next;
    pts__list_remove(&cursor.link);
  }
}

/* spec: signal priority change */
static int priority_change(pts_signal *s, int priority) {
  /* 1. */
  if (s->priority_changing) return PTS_ENOTALLOWED;
  /* 2. */
  if (s->priority == priority) return 0;
  /* 3. */
  s->priority_changing = true;
  s->refs++;
  /* 4. */
  int previous = s->priority;
  s->priority = priority;
  /* 5. */
  run_priority_algos(s);
  /* 6. */
  pts_event ev = {.type = PTS_EVENT_PRIORITYCHANGE, .target = s,
                  .previous_priority = previous, .type_name = "prioritychange",
                  .is_trusted = true, .dispatching = true};
  pts__listeners_dispatch(s->loop, &s->listeners, &ev);
  /* 7. Hand over hand: the current and next dependents are held, so a
   * listener may drop or free any of them; one added meanwhile is appended
   * and already has the new priority (step 2 returns). A dependent is never
   * itself changing here (its only source is s), so no error can come back. */
  pts_signal *d = prio_dep(pts__list_first(&s->prio_deps));
  if (d) d->refs++;
  while (d) {
    (void)priority_change(d, priority);
    /* NULL also when d left the list meanwhile (its links are cleared). */
    pts_signal *next = prio_dep(pts__list_next(&s->prio_deps, &d->prio_link));
    if (next) next->refs++;
    unref_internal(d);
    d = next;
  }
  /* 8. */
  s->priority_changing = false;
  unref_internal(s);
  return 0;
}

/* ---- creation ---- */

/* spec (DOM): create a dependent signal, for AbortSignal (is_task false) or
 * TaskSignal. Inputs are checked by the caller. */
static int create_dependent(pts_loop *loop, pts_signal *const *signals,
                            size_t n, bool is_task, pts_signal **out) {
  /* 2. */
  for (size_t i = 0; i < n; i++) {
    if (is_aborted(signals[i])) {
      pts_signal *r = signal_alloc(loop, sizeof(pts_signal), 0, is_task);
      if (!r) return PTS_ENOMEM;
      r->reason = pts_value_copy(signals[i]->reason);
      *out = r;
      return 0;
    }
  }
  size_t cap = 0;
  for (size_t i = 0; i < n; i++)
    cap += signals[i]->dependent ? signals[i]->n_sources : 1;
  /* 1. */
  pts_signal *r = signal_alloc(loop, sizeof(pts_signal), cap, is_task);
  if (!r) return PTS_ENOMEM;
  /* 3. */
  r->dependent = true;
  /* 4. Source signals form a set: a per-call token marks sources already
   * linked, and every mark is cleared before returning. */
  const void *token = &token;
  for (size_t i = 0; i < n; i++) {
    pts_signal *s = signals[i];
    for (uint32_t j = 0; j < (s->dependent ? s->n_edges : 1); j++) {
      pts_signal *src = s->dependent ? s->edges[j].source : s;
      if (!src || src->mark == token) continue;
      src->mark = token;
      dep_link *e = &r->edges[r->n_edges++];
      e->dep = r;
      deps_append(src, e);
      r->n_sources++;
    }
  }
  for (uint32_t j = 0; j < r->n_edges; j++) r->edges[j].source->mark = NULL;
  /* 5. */
  *out = r;
  return 0;
}

static int check_inputs(pts_loop *loop, pts_signal *const *signals, size_t n,
                        pts_signal **out) {
  if (!loop || !out || (n > 0 && !signals)) return PTS_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!signals[i]) return PTS_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (signals[i]->loop != loop) return PTS_EFOREIGN;
  return 0;
}

/* spec (DOM): AbortSignal.any(signals) */
int pts_signal_any(pts_loop *loop, pts_signal *const *signals, size_t n,
                   pts_signal **out) {
  int rc = check_inputs(loop, signals, n, out);
  if (rc) return rc;
  PTS__CHECK_OWNER(loop);
  return create_dependent(loop, signals, n, false, out);
}

static bool has_fixed_priority(const pts_signal *s) {
  return s->is_task && s->dependent && s->prio_source == NULL;
}

/* spec: create a dependent task signal */
static int create_dependent_task(pts_loop *loop, pts_signal *const *signals,
                                 size_t n, int priority, pts_signal *source,
                                 pts_signal **out) {
  /* 1. */
  pts_signal *r;
  int rc = create_dependent(loop, signals, n, true, &r);
  if (rc) return rc;
  /* 2. */
  r->dependent = true;
  if (!source) {
    /* 3. */
    r->priority = priority;
  } else {
    /* 4.1 */
    r->priority = source->priority;
    /* 4.2 */
    if (!has_fixed_priority(source)) {
      /* 4.2.1 */
      if (source->dependent) source = source->prio_source;
      /* 4.2.3 (4.2.2: a root source is not dependent, invariant 1) */
      prio_append(source, r);
    }
  }
  /* 5. */
  *out = r;
  return 0;
}

/* spec: TaskSignal.any(signals, init) */
int pts_task_signal_any(pts_loop *loop, pts_signal *const *signals, size_t n,
                        const pts_task_signal_any_init *init,
                        pts_signal **out) {
  int rc = check_inputs(loop, signals, n, out);
  if (rc) return rc;
  pts_task_signal_any_init defaults = PTS_TASK_SIGNAL_ANY_INIT;
  if (!init) init = &defaults;
  pts_signal *source = init->priority_source;
  if (source) {
    if (!source->is_task) return PTS_ETYPE;
    if (source->loop != loop) return PTS_EFOREIGN;
  } else if (!valid_priority(init->priority)) {
    return PTS_ETYPE;
  }
  PTS__CHECK_OWNER(loop);
  return create_dependent_task(loop, signals, n, init->priority, source, out);
}

/* spec: create a fixed priority unabortable task signal */
int pts__signal_new_fixed(pts_loop *loop, pts_priority priority,
                          pts_signal **out) {
  if (!loop || !out) return PTS_EINVAL;
  if (!valid_priority((int)priority)) return PTS_ETYPE;
  return create_dependent_task(loop, NULL, 0, (int)priority, NULL, out);
}

/* spec (DOM): AbortSignal.abort(reason) */
int pts_signal_abort_new(pts_loop *loop, const pts_value *reason,
                         pts_signal **out) {
  if (!loop || !out) return PTS_EINVAL;
  PTS__CHECK_OWNER(loop);
  pts_value v = (reason && reason->kind != PTS_VALUE_UNDEFINED)
                    ? pts_value_copy(*reason)
                    : pts_error_value(PTS_EABORT, NULL);
  if (v.kind == PTS_VALUE_UNDEFINED) return PTS_ENOMEM;
  pts_signal *s = signal_alloc(loop, sizeof(pts_signal), 0, false);
  if (!s) {
    pts_value_release(v);
    return PTS_ENOMEM;
  }
  s->reason = v;
  *out = s;
  return 0;
}

/* ---- AbortSignal.timeout ---- */

static void timeout_task(void *data, int status) {
  timeout_signal *ts = data;
  if (status == 0) {
    /* Never undefined for a listed code, even out of memory (value.c): a
     * timeout that could not make its error would never abort. */
    pts_value v = pts_error_value(PTS_ETIMEDOUT, NULL);
    /* The loop runs this task as script; but its steps are the loop's own,
     * and each abort listener is called with an empty stack (its microtasks
     * run before the next one). */
    uint32_t depth = pts__script_suspend(ts->sig.loop);
    if (v.kind != PTS_VALUE_UNDEFINED) signal_abort(&ts->sig, v);
    pts__script_resume(ts->sig.loop, depth);
  }
  unref_internal(&ts->sig); /* the pending timeout's reference */
}

/* The completion steps of run steps after a timeout: queue a task on the
 * timer task source to signal abort. */
static void timeout_fired(void *data, int status) {
  timeout_signal *ts = data;
  if (status == 0) {
    pts__task_init(&ts->task, ts->global, timeout_task, ts);
    if (pts__task_queue(&ts->task, PTS_SOURCE_TIMER) == 0) return;
  }
  unref_internal(&ts->sig);
}

/* spec (DOM): AbortSignal.timeout(ms). The pending timeout holds a reference
 * until its task ran (DOM keeps such a signal alive while it has abort
 * listeners; holding it unconditionally is simpler and bounded by ms). */
int pts_signal_timeout_new(pts_global *global, uint64_t ms, pts_signal **out) {
  if (!global || !out) return PTS_EINVAL;
  pts_loop *loop = pts_global_loop(global);
  PTS__CHECK_OWNER(loop);
  if (pts_global_is_detached(global)) return PTS_ECLOSED;
  timeout_signal *ts =
      (timeout_signal *)signal_alloc(loop, sizeof(timeout_signal), 0, false);
  if (!ts) return PTS_ENOMEM;
  ts->global = global;
  uint64_t ns = ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u;
  ts->sig.refs = 2; /* the caller's and the pending timeout's */
  pts__timer_init(&ts->timer, global, timeout_fired, ts);
  int rc = pts__timer_start(&ts->timer, ns);
  if (rc) {
    ts->sig.refs = 1;
    unref_internal(&ts->sig);
    return rc;
  }
  *out = &ts->sig;
  return 0;
}

/* ---- controllers ---- */

static int controller_new(pts_loop *loop, bool is_task, int priority,
                          pts_controller **out) {
  if (!loop || !out) return PTS_EINVAL;
  if (is_task && !valid_priority(priority)) return PTS_ETYPE;
  PTS__CHECK_OWNER(loop);
  pts_controller *c = pts__malloc(sizeof *c);
  if (!c) return PTS_ENOMEM;
  c->signal = signal_alloc(loop, sizeof(pts_signal), 0, is_task);
  if (!c->signal) {
    pts__free(c);
    return PTS_ENOMEM;
  }
  c->signal->priority = is_task ? priority : PTS_PRIORITY_USER_VISIBLE;
  c->refs = 1;
  atomic_fetch_add_explicit(&live_controllers, 1, memory_order_relaxed);
  *out = c;
  return 0;
}

int pts_abort_controller_new(pts_loop *loop, pts_controller **out) {
  return controller_new(loop, false, 0, out);
}

/* spec: new TaskController(init) */
int pts_task_controller_new(pts_loop *loop, int priority,
                            pts_controller **out) {
  return controller_new(loop, true, priority, out);
}

void pts_controller_ref(pts_controller *c) {
  if (!c || pts__loop_foreign(c->signal->loop, __func__)) return;
  c->refs++;
}

void pts_controller_unref(pts_controller *c) {
  if (!c || pts__loop_foreign(c->signal->loop, __func__)) return;
  if (c->refs == 0) {
    fprintf(stderr, "ptsched: pts_controller_unref: no reference left\n");
    return;
  }
  if (--c->refs > 0) return;
  pts_signal *s = c->signal;
  pts__free(c);
  atomic_fetch_sub_explicit(&live_controllers, 1, memory_order_relaxed);
  unref_internal(s);
}

pts_signal *pts_controller_signal(pts_controller *c) {
  return c ? c->signal : NULL;
}

/* spec (DOM): AbortController abort(reason) */
int pts_controller_abort(pts_controller *c, const pts_value *reason) {
  if (!c) return PTS_EINVAL;
  PTS__CHECK_OWNER(c->signal->loop);
  if (is_aborted(c->signal)) return 0;
  pts_value v = (reason && reason->kind != PTS_VALUE_UNDEFINED)
                    ? pts_value_copy(*reason)
                    : pts_error_value(PTS_EABORT, NULL);
  if (v.kind == PTS_VALUE_UNDEFINED) return PTS_ENOMEM;
  signal_abort(c->signal, v);
  return 0;
}

/* spec: TaskController setPriority(priority) */
int pts_controller_set_priority(pts_controller *c, int priority) {
  if (!c) return PTS_EINVAL;
  PTS__CHECK_OWNER(c->signal->loop);
  if (!c->signal->is_task) return PTS_EINVAL;
  if (!valid_priority(priority)) return PTS_ETYPE;
  return priority_change(c->signal, priority);
}

/* ---- signals ---- */

void pts_signal_ref(pts_signal *s) {
  if (!s || pts__loop_foreign(s->loop, __func__)) return;
  s->refs++;
}

void pts_signal_unref(pts_signal *s) {
  if (!s || pts__loop_foreign(s->loop, __func__)) return;
  if (s->refs == 0) {
    fprintf(stderr, "ptsched: pts_signal_unref: no reference left\n");
    return;
  }
  unref_internal(s);
}

pts_loop *pts_signal_get_loop(const pts_signal *s) {
  return s ? s->loop : NULL;
}

bool pts_signal_aborted(const pts_signal *s) { return s && is_aborted(s); }

pts_value pts_signal_reason(const pts_signal *s) {
  return s ? s->reason : pts_undefined();
}

/* spec (DOM): throwIfAborted() */
int pts_signal_throw_if_aborted(const pts_signal *s, pts_value *reason) {
  if (!s) return PTS_EINVAL;
  if (!is_aborted(s)) return 0;
  if (reason) *reason = pts_value_copy(s->reason);
  return PTS_EABORT;
}

bool pts_signal_is_task_signal(const pts_signal *s) { return s && s->is_task; }

int pts_signal_priority(const pts_signal *s) {
  if (!s || !s->is_task) return PTS_EINVAL;
  return s->priority;
}

/* spec: has fixed priority */
bool pts_signal_has_fixed_priority(const pts_signal *s) {
  return s && has_fixed_priority(s);
}

/* ---- events ---- */

int pts_signal_add_listener(pts_signal *s, pts_event_type type,
                            pts_listener_fn fn, void *data, bool once) {
  if (!s) return PTS_EINVAL;
  PTS__CHECK_OWNER(s->loop);
  return pts__listeners_add(&s->listeners, type, fn, data, once);
}

int pts_signal_remove_listener(pts_signal *s, pts_event_type type,
                               pts_listener_fn fn, void *data) {
  if (!s) return PTS_EINVAL;
  PTS__CHECK_OWNER(s->loop);
  int rc = pts__listeners_remove(&s->listeners, type, fn, data);
  if (rc == 0) collect(s);
  return rc;
}

int pts_signal_set_handler(pts_signal *s, pts_event_type type,
                           pts_listener_fn fn, void *data) {
  if (!s) return PTS_EINVAL;
  PTS__CHECK_OWNER(s->loop);
  int rc = pts__listeners_set_handler(&s->listeners, type, fn, data);
  if (rc == 0 && !fn) collect(s);
  return rc;
}

/* ---- constructed events (spec 3.1, DOM dispatchEvent) ---- */

/* spec (DOM): dispatchEvent: 1. the dispatch flag must be unset (the
 * initialized flag always is, for an event the library made); 2. isTrusted
 * is false; then dispatch at the target, which has no parent. */
int pts_signal_dispatch_event(pts_signal *s, pts_event *event) {
  if (!s || !event) return PTS_EINVAL;
  PTS__CHECK_OWNER(s->loop);
  /* An event the library fires is reachable only while it is dispatched. */
  if (event->dispatching) return PTS_EINVALIDSTATE;
  event->is_trusted = false;
  pts_signal_ref(s);
  if (event->target) pts_signal_unref(event->target);
  event->target = s;
  event->dispatching = true;
  if (event->type != PTS_EVENT_OTHER)
    pts__listeners_dispatch(s->loop, &s->listeners, event);
  event->dispatching = false;
  return 0;
}
