/* ptsched: AbortController/AbortSignal, TaskController/TaskSignal, their
 * events, AbortSignal.abort/timeout/any and TaskSignal.any (DOM and spec
 * section 3; shared/spec/controlling-tasks.md).
 *
 * Threads: every function here is owner-thread only (the loop the object was
 * created on); listeners run synchronously on that thread. To abort or
 * re-prioritise from another thread, use the agents API, which sends the call
 * through the owning loop's inbox.
 *
 * Ownership: _new functions and pts_signal_any/pts_task_signal_any give the
 * caller one reference. A controller holds its signal. A dependent signal
 * (from any()) stays alive while it can still be observed: while the caller
 * holds it, or while it has listeners or algorithms and a source that can
 * still abort or change priority. One that cannot be observed is freed and
 * unlinked from its sources.
 */
#ifndef PTSCHED_SIGNAL_H
#define PTSCHED_SIGNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ptsched/common.h"
#include "ptsched/loop.h"
#include "ptsched/value.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pts_signal pts_signal;         /* AbortSignal or TaskSignal */
typedef struct pts_controller pts_controller; /* AbortController or TaskController */

/* ---- controllers ---- */

PTS_EXTERN int pts_abort_controller_new(pts_loop *loop, pts_controller **out);
/* priority: a pts_priority; anything else is PTS_ETYPE and nothing is made. */
PTS_EXTERN int pts_task_controller_new(pts_loop *loop, int priority,
                                       pts_controller **out);
PTS_EXTERN void pts_controller_ref(pts_controller *c);
PTS_EXTERN void pts_controller_unref(pts_controller *c);
/* The controller's signal, borrowed (take a reference to keep it longer). */
PTS_EXTERN pts_signal *pts_controller_signal(pts_controller *c);
/* abort(reason): reason is copied; NULL means a new AbortError. Aborting an
 * aborted signal does nothing (no second event) and returns 0. */
PTS_EXTERN int pts_controller_abort(pts_controller *c, const pts_value *reason);
/* setPriority(priority): PTS_ETYPE for an unknown priority, PTS_ENOTALLOWED
 * while this signal's priority change is being dispatched, PTS_EINVAL for an
 * AbortController. */
PTS_EXTERN int pts_controller_set_priority(pts_controller *c, int priority);

/* ---- signals ---- */

PTS_EXTERN void pts_signal_ref(pts_signal *s);
PTS_EXTERN void pts_signal_unref(pts_signal *s);

/* AbortSignal.abort(reason): an aborted signal (reason NULL: AbortError). */
PTS_EXTERN int pts_signal_abort_new(pts_loop *loop, const pts_value *reason,
                                    pts_signal **out);
/* AbortSignal.timeout(ms): aborts with a TimeoutError after ms on the
 * global's timers (a task on the timer source). */
PTS_EXTERN int pts_signal_timeout_new(pts_global *global, uint64_t ms,
                                      pts_signal **out);
/* AbortSignal.any(signals): every signal must be non-NULL and of this loop
 * (PTS_EINVAL / PTS_EFOREIGN otherwise). n may be 0. */
PTS_EXTERN int pts_signal_any(pts_loop *loop, pts_signal *const *signals,
                              size_t n, pts_signal **out);

/* TaskSignal.any(signals, {priority}): priority_source (a TaskSignal) wins if
 * not NULL; else priority (a pts_priority; PTS_ETYPE if unknown). */
typedef struct pts_task_signal_any_init {
  int priority;
  pts_signal *priority_source;
} pts_task_signal_any_init;
#define PTS_TASK_SIGNAL_ANY_INIT {PTS_PRIORITY_USER_VISIBLE, NULL}
PTS_EXTERN int pts_task_signal_any(pts_loop *loop, pts_signal *const *signals,
                                   size_t n,
                                   const pts_task_signal_any_init *init,
                                   pts_signal **out);

PTS_EXTERN pts_loop *pts_signal_get_loop(const pts_signal *s);
PTS_EXTERN bool pts_signal_aborted(const pts_signal *s);
/* The abort reason, borrowed; undefined while not aborted. */
PTS_EXTERN pts_value pts_signal_reason(const pts_signal *s);
/* throwIfAborted(): 0, or PTS_EABORT with *reason (may be NULL) set to a new
 * reference to the reason. */
PTS_EXTERN int pts_signal_throw_if_aborted(const pts_signal *s,
                                           pts_value *reason);
PTS_EXTERN bool pts_signal_is_task_signal(const pts_signal *s);
/* The TaskSignal's priority; PTS_EINVAL for a plain AbortSignal. */
PTS_EXTERN int pts_signal_priority(const pts_signal *s);
/* "has fixed priority": dependent with no source signal. */
PTS_EXTERN bool pts_signal_has_fixed_priority(const pts_signal *s);

/* ---- events ---- */

typedef enum pts_event_type {
  PTS_EVENT_ABORT = 0,
  PTS_EVENT_PRIORITYCHANGE
} pts_event_type;

typedef struct pts_event {
  pts_event_type type;
  pts_signal *target;         /* borrowed */
  int previous_priority;      /* prioritychange: TaskPriorityChangeEvent.previousPriority */
} pts_event;

typedef void (*pts_listener_fn)(void *data, const pts_event *event);

/* addEventListener(type, (fn, data), {once}). A listener equal in (type, fn,
 * data) to one already registered is not added again (returns 0). */
PTS_EXTERN int pts_signal_add_listener(pts_signal *s, pts_event_type type,
                                       pts_listener_fn fn, void *data,
                                       bool once);
/* removeEventListener: PTS_ENOTFOUND if no such listener. */
PTS_EXTERN int pts_signal_remove_listener(pts_signal *s, pts_event_type type,
                                          pts_listener_fn fn, void *data);
/* The onabort / onprioritychange handler attributes: setting one keeps the
 * position it first got in the listener order; fn NULL removes it. */
PTS_EXTERN int pts_signal_set_handler(pts_signal *s, pts_event_type type,
                                      pts_listener_fn fn, void *data);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_SIGNAL_H */
