/** @file ptsched/signal.h
 * @brief AbortController/AbortSignal, TaskController/TaskSignal, their
 * events, AbortSignal.abort/timeout/any and TaskSignal.any (DOM and spec
 * section 3, "Controlling Tasks").
 *
 * @par Threads
 * Every function here is owner-thread only (the loop the object was
 * created on); listeners run synchronously on that thread. To abort or
 * re-prioritise from another thread, use the agents API, which sends the call
 * through the owning loop's inbox.
 *
 * @par Ownership
 * _new functions and pts_signal_any/pts_task_signal_any give the
 * caller one reference. A controller holds its signal. A dependent signal
 * (from any()) stays alive while it can still be observed: while the caller
 * holds it, or while it has listeners or algorithms and a source that can
 * still abort or change priority. One that cannot be observed is freed and
 * unlinked from its sources.
 *
 * @par Errors
 * Int-returning functions give 0 or PTS_EINVAL for a NULL object or
 * argument (and PTS_EFOREIGN from a foreign thread, in debug builds, those
 * that list it), besides the codes each one names. A call that fails changes
 * nothing. Each function lists every code it can return.
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

/** An AbortSignal or a TaskSignal (pts_signal_is_task_signal()); opaque,
 * refcounted, owned by one loop. */
typedef struct pts_signal pts_signal;
/** An AbortController or a TaskController; opaque, refcounted, owned by one
 * loop. Holds its signal. */
typedef struct pts_controller pts_controller;

/* ---- controllers ---- */

/** new AbortController() on the loop: *out gets the caller's reference.
 * Owner thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL loop or out.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds). */
PTS_EXTERN int pts_abort_controller_new(pts_loop *loop, pts_controller **out);
/** new TaskController({priority}) (spec 3.2): a controller whose signal is a
 * TaskSignal with this priority. *out gets the caller's reference. Owner
 * thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL loop or out.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ETYPE priority is not a pts_priority (nothing is made). */
PTS_EXTERN int pts_task_controller_new(pts_loop *loop, int priority,
                                       pts_controller **out);
/** Takes one more reference. NULL is a no-op. Owner thread. */
PTS_EXTERN void pts_controller_ref(pts_controller *c);
/** Drops one reference; the last one frees the controller (its signal lives
 * on while referenced elsewhere). NULL is a no-op. Owner thread. */
PTS_EXTERN void pts_controller_unref(pts_controller *c);
/** controller.signal: borrowed (take a reference to keep it longer than the
 * controller). Owner thread. */
PTS_EXTERN pts_signal *pts_controller_signal(pts_controller *c);
/** controller.abort(reason) (DOM "signal abort"): sets the reason, runs the
 * abort algorithms (aborting the tasks that use the signal, spec 2.4.2) and
 * fires "abort" at the signal and its dependents. reason is copied; NULL (or
 * undefined) means a new AbortError. Aborting an aborted signal does nothing
 * (no second event). Owner thread.
 * @retval 0 aborted, or already aborted.
 * @retval PTS_EINVAL c is NULL.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds). */
PTS_EXTERN int pts_controller_abort(pts_controller *c, const pts_value *reason);
/** TaskController.setPriority(priority) (spec 3.2/3.3, "signal priority
 * change"): changes the signal's priority, moves its tasks to the matching
 * queue and fires "prioritychange" at it and its dependents. Same priority:
 * no event. Owner thread.
 * @retval 0 changed, or the same priority.
 * @retval PTS_EINVAL an AbortController (or NULL).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ENOTALLOWED this signal's priority change is being dispatched.
 * @retval PTS_ETYPE unknown priority. */
PTS_EXTERN int pts_controller_set_priority(pts_controller *c, int priority);

/* ---- signals ---- */

/** Takes one more reference. NULL is a no-op. Owner thread. */
PTS_EXTERN void pts_signal_ref(pts_signal *s);
/** Drops one reference (see the file's ownership rules for when a signal is
 * freed). NULL is a no-op. Owner thread. */
PTS_EXTERN void pts_signal_unref(pts_signal *s);

/** AbortSignal.abort(reason): a new, already aborted AbortSignal; reason is
 * copied, NULL means a new AbortError. *out gets the caller's reference. Owner
 * thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL loop or out.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds). */
PTS_EXTERN int pts_signal_abort_new(pts_loop *loop, const pts_value *reason,
                                    pts_signal **out);
/** AbortSignal.timeout(ms): a new AbortSignal that aborts with a TimeoutError
 * after ms on the global's timers (a task on the timer source). *out gets the
 * caller's reference. Owner thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL global or out.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ECLOSED the global is detached. */
PTS_EXTERN int pts_signal_timeout_new(pts_global *global, uint64_t ms,
                                      pts_signal **out);
/** AbortSignal.any(signals) (DOM "create a dependent abort signal"): a new
 * AbortSignal aborted when any of signals is, or at once (with the first
 * aborted one's reason) if one already is. Borrows the array. *out gets the
 * caller's reference. Owner thread.
 * @retval 0 success.
 * @retval PTS_EINVAL a NULL signal (or loop/out; signals may be NULL if n is 0).
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN a signal of another loop, or (debug builds) called
 * from a foreign thread. */
PTS_EXTERN int pts_signal_any(pts_loop *loop, pts_signal *const *signals,
                              size_t n, pts_signal **out);

/** TaskSignalAnyInit: the priority of TaskSignal.any(). priority_source (a
 * TaskSignal) wins if not NULL; else priority (a pts_priority; PTS_ETYPE if
 * unknown).
 *
 * ABI: embedders allocate it; its size and layout are fixed for a major
 * version. Initialise it with PTS_TASK_SIGNAL_ANY_INIT, then set fields by
 * name. */
typedef struct pts_task_signal_any_init {
  int priority;                /**< a pts_priority; default user-visible */
  pts_signal *priority_source; /**< a TaskSignal to follow, or NULL; borrowed */
} pts_task_signal_any_init;
/** The defaults of TaskSignalAnyInit: {priority: "user-visible"}. */
#define PTS_TASK_SIGNAL_ANY_INIT {PTS_PRIORITY_USER_VISIBLE, NULL}
/** TaskSignal.any(signals, init) (spec 3.3, "create a dependent task
 * signal"): a new TaskSignal aborted when any of signals is, whose priority
 * follows init->priority_source if given (a dependent signal) or is fixed at
 * init->priority. init may be NULL (the defaults). Borrows the array and init.
 * *out gets the caller's reference. Owner thread.
 * @retval 0 success.
 * @retval PTS_EINVAL a NULL signal (or loop/out; signals may be NULL if n is
 * 0).
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN a signal or the priority_source of another loop, or
 * (debug builds) called from a foreign thread.
 * @retval PTS_ETYPE unknown priority, or a priority_source that is not a
 * TaskSignal. */
PTS_EXTERN int pts_task_signal_any(pts_loop *loop, pts_signal *const *signals,
                                   size_t n,
                                   const pts_task_signal_any_init *init,
                                   pts_signal **out);

/** The loop that owns the signal (borrowed); NULL for NULL. Any thread. */
PTS_EXTERN pts_loop *pts_signal_get_loop(const pts_signal *s);
/** signal.aborted; false for NULL. Owner thread. */
PTS_EXTERN bool pts_signal_aborted(const pts_signal *s);
/** signal.reason: the abort reason, borrowed; undefined while not aborted.
 * Owner thread. */
PTS_EXTERN pts_value pts_signal_reason(const pts_signal *s);
/** signal.throwIfAborted(). When aborted, *reason (reason may be NULL) gets
 * a new reference to the abort reason (the caller releases it). Owner
 * thread.
 * @retval 0 not aborted.
 * @retval PTS_EINVAL NULL signal.
 * @retval PTS_EABORT aborted; *reason is set. */
PTS_EXTERN int pts_signal_throw_if_aborted(const pts_signal *s,
                                           pts_value *reason);
/** Whether s is a TaskSignal (has a priority); false for NULL. Owner
 * thread. */
PTS_EXTERN bool pts_signal_is_task_signal(const pts_signal *s);
/** TaskSignal.priority. Owner thread.
 * @return a pts_priority, or a negative code:
 * @retval PTS_EINVAL a plain AbortSignal or NULL. */
PTS_EXTERN int pts_signal_priority(const pts_signal *s);
/** The spec's "has fixed priority" (section 3.3): a dependent TaskSignal with
 * no source signal, whose priority can never change. Owner thread. */
PTS_EXTERN bool pts_signal_has_fixed_priority(const pts_signal *s);

/* ---- events ---- */

/** The events a signal fires. Values are part of the ABI: new ones are only
 * ever appended. */
typedef enum pts_event_type {
  PTS_EVENT_ABORT = 0,      /**< "abort" (AbortSignal) */
  PTS_EVENT_PRIORITYCHANGE, /**< "prioritychange" (TaskSignal, spec 3.1) */
  PTS_EVENT_OTHER           /**< a constructed event of any other type name;
                                 no listener can be added for it */
} pts_event_type;

/** An Event or TaskPriorityChangeEvent. The library allocates it (it fires
 * one, or pts_priority_change_event_new() makes one); embedders only read it.
 * Listeners borrow it for the call. ABI: fields are only ever appended. */
typedef struct pts_event {
  pts_event_type type;        /**< which event */
  pts_signal *target;         /**< the signal it is (or was last) dispatched
                                   at; NULL before a constructed event's first
                                   dispatch; borrowed */
  int previous_priority;      /**< prioritychange: TaskPriorityChangeEvent.previousPriority */
  const char *type_name;      /**< Event.type as a string ("abort",
                                   "prioritychange", or a constructed event's
                                   own); owned by the event */
  bool is_trusted;            /**< Event.isTrusted: true when the library
                                   fired it, false for a constructed event */
  bool dispatching;           /**< the DOM dispatch flag: set while the event
                                   is being dispatched */
} pts_event;

/** TaskPriorityChangeEventInit (spec 3.1): the constructor's dictionary. */
typedef struct pts_priority_change_event_init {
  /** The required previousPriority: a pts_priority, or -1 for "not present"
   * (a TypeError, as for a missing required member). */
  int previous_priority;
} pts_priority_change_event_init;

/** new TaskPriorityChangeEvent(type, init) (spec 3.1): an untrusted event
 * with that type name (copied; any string) and init->previous_priority, not
 * dispatched yet (target NULL). Its type is PTS_EVENT_PRIORITYCHANGE for the
 * name "prioritychange", PTS_EVENT_ABORT for "abort", else PTS_EVENT_OTHER.
 * *out gets the caller's event: free it with pts_event_free(). Any thread.
 * @retval 0 success.
 * @retval PTS_EINVAL out is NULL.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_ETYPE type or init is NULL, or init->previous_priority is
 * missing (-1) or not a pts_priority (the WebIDL checks). */
PTS_EXTERN int pts_priority_change_event_new(
    const char *type, const pts_priority_change_event_init *init,
    pts_event **out);
/** Frees an event made by pts_priority_change_event_new() (and drops its
 * reference to its last target). NULL is a no-op. Not while it is being
 * dispatched, and never an event the library fired (a listener's borrowed
 * one). Owner thread of its last target's loop if it has one, else any. */
PTS_EXTERN void pts_event_free(pts_event *event);
/** EventTarget.dispatchEvent(event) on a signal (DOM "dispatch" with no
 * tree): sets the event's target to s (the event keeps a reference to it),
 * marks it untrusted and calls s's listeners of the event's type in order,
 * synchronously on this thread, with the same rules as the events the
 * library fires. The caller is script, so no microtask checkpoint runs
 * between listeners. No listener can cancel an event here, so
 * dispatchEvent's result is always true. Owner thread.
 * @retval 0 dispatched.
 * @retval PTS_EINVAL s or event is NULL.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_EINVALIDSTATE the event is being dispatched (DOM: its dispatch
 * flag is set; e.g. the event a listener was called with). */
PTS_EXTERN int pts_signal_dispatch_event(pts_signal *s, pts_event *event);

/** An event listener: runs synchronously on the owner thread during the
 * dispatch; event is borrowed for the call. */
typedef void (*pts_listener_fn)(void *data, const pts_event *event);

/** addEventListener(type, (fn, data), {once}). A listener equal in (type, fn,
 * data) to one already registered is not added again. data stays the
 * caller's. Owner thread.
 * @retval 0 added, or already registered.
 * @retval PTS_EINVAL NULL s or fn, unknown type.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds). */
PTS_EXTERN int pts_signal_add_listener(pts_signal *s, pts_event_type type,
                                       pts_listener_fn fn, void *data,
                                       bool once);
/** removeEventListener(type, (fn, data)). Owner thread.
 * @retval 0 removed.
 * @retval PTS_EINVAL NULL s or fn, unknown type.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ENOTFOUND no such listener. */
PTS_EXTERN int pts_signal_remove_listener(pts_signal *s, pts_event_type type,
                                          pts_listener_fn fn, void *data);
/** The onabort / onprioritychange event handler attributes: setting one keeps
 * the position it first got in the listener order; fn NULL removes it. Owner
 * thread.
 * @retval 0 set, or removed.
 * @retval PTS_EINVAL NULL s, unknown type.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds). */
PTS_EXTERN int pts_signal_set_handler(pts_signal *s, pts_event_type type,
                                      pts_listener_fn fn, void *data);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_SIGNAL_H */
