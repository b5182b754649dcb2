/** @file ptsched/scheduler.h
 * @brief The Scheduler of a global: postTask() and yield() (spec section 2,
 * "Scheduling Tasks and Continuations").
 *
 * Selection runs across all schedulers of a loop: highest effective priority
 * first, then the oldest task (the loop's shared next enqueue order).
 *
 * @par Threads
 * Owner thread of the global's loop. Callbacks run on that thread.
 *
 * @par Errors
 * A call that fails gives no promise and never calls its callback. In debug
 * builds (NDEBUG unset) a call from a foreign thread returns PTS_EFOREIGN.
 * Each function lists every code it can return.
 */
#ifndef PTSCHED_SCHEDULER_H
#define PTSCHED_SCHEDULER_H

#include <stdint.h>

#include "ptsched/common.h"
#include "ptsched/loop.h"
#include "ptsched/promise.h"
#include "ptsched/signal.h"
#include "ptsched/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The Scheduler of one global (window.scheduler); opaque, owned by its
 * global. */
typedef struct pts_scheduler pts_scheduler;

/** The global's scheduler (borrowed; lives as long as the global's struct),
 * made on first use. NULL for a NULL global, from a foreign thread, or when
 * out of memory. Owner thread. */
PTS_EXTERN pts_scheduler *pts_global_scheduler(pts_global *global);

/** "not given" for the priority options. */
#define PTS_PRIORITY_UNSET (-1)
/** ContinuationPriority "inherit" (yield only). */
#define PTS_PRIORITY_INHERIT (-2)

/** SchedulerPostTaskOptions. delay_ms is WebIDL [EnforceRange] unsigned long
 * long: negative or above 2^53 - 1 is PTS_ETYPE.
 *
 * ABI: embedders allocate it; its size and layout are fixed for a major
 * version (a new member means a new SONAME). Initialise it with
 * PTS_POST_OPTIONS_INIT, then set fields by name. */
typedef struct pts_post_options {
  pts_signal *signal; /**< AbortSignal or TaskSignal, or NULL; borrowed for the call */
  int priority;       /**< pts_priority or PTS_PRIORITY_UNSET */
  int64_t delay_ms;   /**< delay before the task is queued, in ms; 0 = none */
} pts_post_options;
/** The defaults of SchedulerPostTaskOptions: no signal, no priority, no
 * delay. */
#define PTS_POST_OPTIONS_INIT {NULL, PTS_PRIORITY_UNSET, 0}

/** The postTask callback of the promise form. status 0: run it now, its return
 * value settles the promise (an error value rejects it). status PTS_EABORT or
 * PTS_ECANCELED: it will never run (the promise is already rejected); release
 * data and return undefined. Called exactly once when the call succeeds. */
typedef pts_value (*pts_task_callback)(void *data, int status);

/** scheduler.postTask(callback, options) (spec 2.4.2, "schedule a postTask
 * task"). The priority is the option's, else the TaskSignal's, else
 * user-visible (spec "compute the scheduling state from options"). If the
 * signal is already aborted the promise is returned rejected with its reason
 * (and callback is called at once with PTS_EABORT). opts may be NULL (the
 * defaults) and is read, not kept; the signal is referenced for as long as
 * the task needs it. On success *out (may be NULL) gets a reference to the
 * result promise. Owner thread; callback runs on it.
 * @retval 0 posted (with an already aborted signal: the promise is
 * rejected).
 * @retval PTS_EINVAL NULL scheduler or callback.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN signal of another loop, or (debug builds) called from
 * a foreign thread.
 * @retval PTS_ECLOSED global detached.
 * @retval PTS_ETYPE unknown priority, delay out of range.
 * @retval PTS_EQUOTA an agent's loop at its task limit
 * (pts_agent_limits.tasks) or byte limit (pts_agent_limits.bytes). */
PTS_EXTERN int pts_scheduler_post_task(pts_scheduler *s,
                                       pts_task_callback callback, void *data,
                                       const pts_post_options *opts,
                                       pts_promise **out);

/** Direct-callback form of postTask, no promise (cheaper; same queueing):
 * fn(data, 0) runs as the task, or fn(data, PTS_EABORT) when its signal
 * aborts first (the reason is the signal's), or fn(data, PTS_ECANCELED) if
 * the global is detached. Owner thread; fn runs on it.
 * @retval 0 posted.
 * @retval PTS_EINVAL NULL scheduler or fn.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN signal of another loop, or (debug builds) called from
 * a foreign thread.
 * @retval PTS_ECLOSED global detached.
 * @retval PTS_EABORT the signal is already aborted (fn not called).
 * @retval PTS_ETYPE unknown priority, delay out of range.
 * @retval PTS_EQUOTA an agent's loop at its task limit
 * (pts_agent_limits.tasks) or byte limit (pts_agent_limits.bytes). */
PTS_EXTERN int pts_scheduler_post_task_cb(pts_scheduler *s, pts_task_fn fn, void *data,
                                             const pts_post_options *opts);

/** The 5.0 name of pts_scheduler_post_task_cb() (the same function), kept
 * for programs written or built against it; it goes in 6.0. The names
 * follow one rule since 5.1: the spec's verb names the promise form
 * (pts_scheduler_post_task, pts_scheduler_yield) and `_cb` its callback form.
 * @retval 0 and every code as pts_scheduler_post_task_cb(). */
PTS_EXTERN int pts_scheduler_post(pts_scheduler *s, pts_task_fn fn, void *data,
                                  const pts_post_options *opts);

/** SchedulerYieldOptions. signal_inherit = the "inherit" value of signal.
 *
 * ABI: embedders allocate it; its size and layout are fixed for a major
 * version. Initialise it with PTS_YIELD_OPTIONS_INIT, then set fields by
 * name. */
typedef struct pts_yield_options {
  pts_signal *signal;  /**< NULL = not given (unless signal_inherit); borrowed */
  int signal_inherit;  /**< non-zero: signal is "inherit" */
  int priority;        /**< pts_priority, PTS_PRIORITY_INHERIT or PTS_PRIORITY_UNSET */
} pts_yield_options;
/** The defaults of SchedulerYieldOptions as the IDL dictionary has them: no
 * signal, no priority (pass NULL options to inherit both instead). */
#define PTS_YIELD_OPTIONS_INIT {NULL, 0, PTS_PRIORITY_UNSET}

/** scheduler.yield(options) (spec 2.4.2, "schedule a yield continuation"): the
 * continuation goes to the continuation queue of its priority, ahead of
 * ordinary tasks of the same priority. opts may be NULL (inherit both from
 * the current scheduling state). *out (out may be NULL: the caller does not
 * keep the promise) gets the promise,
 * fulfilled with undefined when the continuation runs, or rejected with the
 * abort reason. Owner thread.
 * @retval 0 yielded (with an already aborted signal: the promise is
 * rejected).
 * @retval PTS_EINVAL NULL scheduler.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN signal of another loop, or (debug builds) called from
 * a foreign thread.
 * @retval PTS_ENOTSUPPORTED global detached.
 * @retval PTS_ETYPE unknown priority.
 * @retval PTS_EQUOTA an agent's loop at its task limit
 * (pts_agent_limits.tasks) or byte limit (pts_agent_limits.bytes). */
PTS_EXTERN int pts_scheduler_yield(pts_scheduler *s,
                                   const pts_yield_options *opts,
                                   pts_promise **out);
/** Direct-callback form of yield: fn runs as the continuation (status 0) or
 * gets PTS_EABORT / PTS_ECANCELED. The continuation runs with the computed
 * scheduling state as the current one, so a yield inside it inherits again.
 * Owner thread.
 * @retval 0 yielded.
 * @retval PTS_EINVAL NULL scheduler or fn.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN signal of another loop, or (debug builds) called from
 * a foreign thread.
 * @retval PTS_EABORT the signal is already aborted (fn not called).
 * @retval PTS_ENOTSUPPORTED global detached.
 * @retval PTS_ETYPE unknown priority.
 * @retval PTS_EQUOTA an agent's loop at its task limit
 * (pts_agent_limits.tasks) or byte limit (pts_agent_limits.bytes). */
PTS_EXTERN int pts_scheduler_yield_cb(pts_scheduler *s,
                                      const pts_yield_options *opts,
                                      pts_task_fn fn, void *data);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_SCHEDULER_H */
