/** @file ptsched/loop.h
 * @brief The event loop (HTML's event loop, as the spec patches it), its
 * globals, tasks, microtasks, timers, idle callbacks and clock.
 *
 * @par Threads
 * A loop and every object it owns (globals, promises, signals,
 * schedulers, timers) belong to the loop's owner thread: the thread that
 * created it, or the thread currently running it. Only the functions named
 * *_from_any_thread and pts_loop_stop() may be called from other threads; they
 * go through the loop's inbox (a lock-free MPSC queue) and take effect on the
 * owner thread between two tasks.
 *
 * @par Callbacks
 * Every callback of this header runs on the owner thread. A
 * function that returns an error never calls its callback; one that succeeds
 * calls it exactly once, with status 0 when the work runs or PTS_ECANCELED
 * when it is released without running (its global detached, its loop freed).
 *
 * @par Errors
 * In debug builds (NDEBUG unset) an owner-only function that returns int,
 * called from a foreign thread, prints a report to stderr and returns
 * PTS_EFOREIGN. A function allocating from the loop's block pool returns
 * PTS_EQUOTA instead of PTS_ENOMEM when the loop is an agent's and the
 * allocation would pass its byte limit (pts_agent_limits.bytes). Each
 * function lists every code it can return.
 */
#ifndef PTSCHED_LOOP_H
#define PTSCHED_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "ptsched/common.h"
#include "ptsched/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An event loop (HTML "event loop"); opaque. Created by pts_loop_new(), freed
 * by pts_loop_free(); owns everything made on it. */
typedef struct pts_loop pts_loop;
/** A global (a Window or WorkerGlobalScope, a realm) hosted by a loop;
 * opaque. Owns its pts_scheduler. Freed with its loop. */
typedef struct pts_global pts_global;
/** A captured scheduling state (spec "scheduling state": abort source and
 * priority source); opaque, refcounted, owner thread only. */
typedef struct pts_sched_state pts_sched_state;

/** A unit of work. status is 0 when it runs, PTS_ECANCELED when it is released
 * without running (PTS_EABORT for aborted scheduler tasks); either way it is
 * called exactly once and owns data after. */
typedef void (*pts_task_fn)(void *data, int status);

/** The loop's ordinary task sources (HTML task sources), besides the scheduler's
 * posted-task source. USER_INPUT is the most urgent class (a stand-in for input
 * events); see docs/loop.md for the default order between them and scheduler
 * work. */
typedef enum pts_task_source {
  PTS_SOURCE_USER_INPUT = 0, /**< user interaction task source (most urgent) */
  PTS_SOURCE_TIMER,          /**< timer task source (pts_timer_start()) */
  PTS_SOURCE_MESSAGE,        /**< posted message task source (cross-thread results) */
  PTS_SOURCE_GENERIC,        /**< any other task */
  PTS_SOURCE_COUNT           /**< number of sources; not a source */
} pts_task_source;

/** Options of pts_loop_new().
 *
 * ABI: embedders allocate this struct, so its size and layout are fixed for a
 * major version (SONAME); a new field comes only with a new major version,
 * appended, with 0 meaning the old behaviour. Zero-initialise it
 * (`pts_loop_options o = {0};` gives the defaults) and set fields by name, so
 * the source still compiles and means the same after such a change. */
typedef struct pts_loop_options {
  /** Start with a virtual clock at time 0 that moves only by pts_loop_advance(). */
  bool virtual_clock;
  /** Starvation guard between task classes (off by default): after this many
   * consecutive tasks of higher classes while a lower class has runnable work,
   * the lowest waiting class runs one task. 0 = off. */
  uint32_t starvation_limit;
} pts_loop_options;

/** Creates a loop owned by the calling thread, with one default global.
 * opts may be NULL (real clock, guard off); it is read, not kept. *out is set
 * on success only and the caller owns the loop (free it with pts_loop_free()).
 * Any thread.
 * @retval 0 success.
 * @retval PTS_EINVAL out is NULL.
 * @retval PTS_ENOMEM out of memory. */
PTS_EXTERN int pts_loop_new(const pts_loop_options *opts, pts_loop **out);

/** Frees the loop and everything it owns (globals, schedulers, promises,
 * signals). Pending tasks, microtasks, timers, idle callbacks and inbox
 * commands are released with PTS_ECANCELED (promises rejected), nothing runs
 * after. Owner thread.
 * @retval 0 freed.
 * @retval PTS_EINVAL loop is NULL.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_EBUSY called from inside pts_loop_run() (nothing is freed). */
PTS_EXTERN int pts_loop_free(pts_loop *loop);

/** How long pts_loop_run() runs. */
typedef enum pts_run_mode {
  /** Run every task runnable now (due timers included, inbox drained) and
   * return when none is left; never sleeps. */
  PTS_RUN_UNTIL_IDLE = 0,
  /** Run one task (and its microtask checkpoint), sleeping until one is
   * runnable or the loop is stopped. */
  PTS_RUN_ONCE,
  /** Run until pts_loop_stop(); sleeps when idle (no spinning). */
  PTS_RUN_FOREVER
} pts_run_mode;

/** Runs the loop's event loop processing model (HTML, as patched by the spec's
 * "Event loop: processing model", 4.1.3: pick the next task, scheduler tasks by
 * "select the next scheduler task queue from all schedulers", 2.4.3, then a
 * microtask checkpoint) on the calling thread, which becomes its owner while
 * it runs.
 * @return 1 if at least one task ran, 0 if none did, or a negative code:
 * @retval PTS_EINVAL NULL loop or unknown mode.
 * @retval PTS_EBUSY the loop is already running (re-entrant or on another
 * thread). */
PTS_EXTERN int pts_loop_run(pts_loop *loop, pts_run_mode mode);

/** Makes the running pts_loop_run() return after the current task, or the next
 * run return at once if the loop is not running. The loop must not be freed
 * meanwhile. Any thread (through an atomic flag and a wake-up).
 * @retval 0 requested.
 * @retval PTS_EINVAL loop is NULL. */
PTS_EXTERN int pts_loop_stop(pts_loop *loop);

/** The default global created with the loop (borrowed, lives as long as it).
 * NULL for a NULL loop. Owner thread. */
PTS_EXTERN pts_global *pts_loop_default_global(pts_loop *loop);

/* ---- clock ---- */

/** Loop time in nanoseconds: CLOCK_MONOTONIC, or the virtual clock; 0 for a
 * NULL loop. Owner thread. */
PTS_EXTERN uint64_t pts_loop_now(pts_loop *loop);

/** Virtual clock only: moves time forward by delta_ns, stopping at each timer
 * deadline on the way, in (deadline, start) order: at each stop, time is set
 * to the deadline, the timers due fire and the loop runs until idle. Ends
 * with time = start + delta_ns and the loop idle. Owner thread, not while the
 * loop runs.
 * @retval 0 done.
 * @retval PTS_EINVAL NULL loop, or a loop without a virtual clock.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_EBUSY the loop is running. */
PTS_EXTERN int pts_loop_advance(pts_loop *loop, uint64_t delta_ns);

/* ---- globals ---- */

/** Creates a global (a window or worker global scope, a realm) hosted by the
 * loop, with its own scheduler. The loop owns every global and frees them with
 * itself; *out is borrowed. Owner thread.
 * @retval 0 success.
 * @retval PTS_EINVAL loop or out is NULL.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ECLOSED the loop is being freed. */
PTS_EXTERN int pts_global_new(pts_loop *loop, pts_global **out);

/** Detaches the global (a removed frame, a terminated worker): its pending
 * tasks, timers and idle callbacks are released with PTS_ECANCELED, its
 * scheduler's promises are rejected, and later calls that would add work to it
 * fail with PTS_ECLOSED (PTS_ENOTSUPPORTED for yield). The struct stays valid
 * until the loop is freed. Owner thread.
 * @retval 0 detached, or already detached (detaching twice is a no-op).
 * @retval PTS_EINVAL global is NULL.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds). */
PTS_EXTERN int pts_global_detach(pts_global *global);

/** Makes the global fully active or not (HTML "fully active"). Tasks of an
 * inactive global are not runnable, and its timers stop counting down until
 * it is active again. Owner thread.
 * @retval 0 success.
 * @retval PTS_EINVAL global is NULL.
 * @retval PTS_ENOMEM out of memory (re-arming its timers).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ECLOSED the global is detached. */
PTS_EXTERN int pts_global_set_active(pts_global *global, bool active);
/** Whether the global is fully active (see pts_global_set_active()); false
 * once detached or for NULL. Owner thread. */
PTS_EXTERN bool pts_global_is_active(const pts_global *global);
/** Whether pts_global_detach() was called; false for NULL. Owner thread. */
PTS_EXTERN bool pts_global_is_detached(const pts_global *global);
/** The loop hosting the global (borrowed); NULL for NULL. Any thread (the
 * field never changes). */
PTS_EXTERN pts_loop *pts_global_loop(const pts_global *global);

/* ---- tasks ---- */

/** Queues fn as a task on one of the global's task sources (HTML "queue a
 * global task"). fn(data, 0) runs later on the owner thread, or
 * fn(data, PTS_ECANCELED) if the global is detached or the loop freed first.
 * Owner thread.
 * @retval 0 queued.
 * @retval PTS_EINVAL NULL global or fn, unknown source.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ECLOSED the global is detached.
 * @retval PTS_EQUOTA an agent's loop at its byte limit
 * (pts_agent_limits.bytes). */
PTS_EXTERN int pts_queue_task(pts_global *global, pts_task_source source,
                              pts_task_fn fn, void *data);

/** The same from any thread, through the loop's inbox. fn later runs on the
 * owner thread in posting order per producer, or gets PTS_ECANCELED if the
 * global is detached or the loop freed first. Wakes the loop only if it
 * sleeps. The global must stay allocated (its loop not freed) until the call
 * returns. Any thread. A stream of posts into an otherwise idle loop runs
 * in batches: at the stream's tail the loop's thread spins for more, up
 * to 512 pauses (about 13 us on the project's VM), before it takes the last
 * task, a wait that starts only once posts are found queued behind one
 * another and grows only while the stream goes on (docs/loop.md,
 * "Streams").
 * @retval 0 sent.
 * @retval PTS_EINVAL NULL global or fn, unknown source.
 * @retval PTS_ENOMEM out of memory. */
PTS_EXTERN int pts_queue_task_from_any_thread(pts_global *global,
                                              pts_task_source source,
                                              pts_task_fn fn, void *data);

/** Caller-owned storage for one cross-thread task, like libuv's requests:
 * with it, posting from another thread allocates nothing. The contents are
 * private to ptsched. ABI: 64 bytes, fixed for a major version (a larger
 * request would be a new type). Aligned to 64 bytes (aligned_alloc), a
 * request is one cache line for the consuming thread to fetch. A request
 * belongs to ptsched from a successful pts_queue_task_req_from_any_thread()
 * until its fn has been called; then the caller may reuse or free it (from fn
 * itself too). */
typedef struct pts_task_req {
  void *pts_private[8]; /**< private to ptsched */
} pts_task_req;

/** pts_queue_task_from_any_thread() with caller-owned storage (HTML "queue a
 * global task", from another thread): the same contract (any thread, posting
 * order per producer, exactly one call of fn, with 0 on the owner thread or
 * PTS_ECANCELED if the global is detached or the loop freed first) and no
 * allocation. req is owned by ptsched until fn is called. The global must
 * stay allocated (its loop not freed) until the call returns. Any thread.
 * @retval 0 sent.
 * @retval PTS_EINVAL NULL global, req or fn, or an unknown source; req is
 * then untouched. */
PTS_EXTERN int pts_queue_task_req_from_any_thread(pts_global *global,
                                                  pts_task_source source,
                                                  pts_task_req *req,
                                                  pts_task_fn fn, void *data);

/** Runs fn on the owner thread at the next inbox drain, between two tasks and
 * not as a task (no microtask checkpoint of its own). For commands that must
 * apply whole, e.g. an abort sent from another thread. fn gets PTS_ECANCELED
 * instead if the loop is freed first. Any thread.
 * @retval 0 sent.
 * @retval PTS_EINVAL NULL loop or fn.
 * @retval PTS_ENOMEM out of memory. */
PTS_EXTERN int pts_loop_call_from_any_thread(pts_loop *loop, pts_task_fn fn,
                                             void *data);

/* ---- microtasks ---- */

/** queueMicrotask(): fn runs at the next microtask checkpoint (after the
 * current task), with the scheduling state that is current now restored while
 * it runs (HostMakeJobCallback / HostCallJobCallback, spec section 4). fn gets
 * PTS_ECANCELED instead if the loop is freed first. Owner thread.
 * @retval 0 queued.
 * @retval PTS_EINVAL NULL loop or fn.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ECLOSED the loop is being freed.
 * @retval PTS_EQUOTA an agent's loop at its byte limit
 * (pts_agent_limits.bytes). */
PTS_EXTERN int pts_queue_microtask(pts_loop *loop, pts_task_fn fn, void *data);

/* ---- timers (setTimeout-like) ---- */

/** setTimeout(): after delay_ms (a 0 ms timer queues its task at once), queues
 * a task on the global's timer source that calls fn (status as pts_task_fn).
 * Timers with equal deadlines fire in the order they were started. *id (may
 * be NULL) identifies it for pts_timer_cancel(). Owner thread.
 * @retval 0 started.
 * @retval PTS_EINVAL NULL global or fn.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ECLOSED the global is detached.
 * @retval PTS_EQUOTA an agent's loop at its byte limit
 * (pts_agent_limits.bytes). */
PTS_EXTERN int pts_timer_start(pts_global *global, uint64_t delay_ms,
                               pts_task_fn fn, void *data, uint64_t *id);
/** clearTimeout(): cancels a timer not yet run: fn is never called and data is
 * the caller's again. Owner thread.
 * @retval 0 cancelled.
 * @retval PTS_EINVAL global is NULL.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ENOTFOUND it already ran or the id is unknown. */
PTS_EXTERN int pts_timer_cancel(pts_global *global, uint64_t id);

/* ---- idle callbacks (requestIdleCallback) ---- */

/** IdleDeadline: what an idle callback may ask about its budget; opaque,
 * borrowed, valid only during the callback. */
typedef struct pts_idle_deadline pts_idle_deadline;
/** An IdleRequestCallback. status as pts_task_fn; deadline is NULL when
 * status != 0. */
typedef void (*pts_idle_fn)(void *data, int status,
                            const pts_idle_deadline *deadline);
/** requestIdleCallback(): runs fn when the loop has nothing else runnable, or
 * as a task once timeout_ms passes (0 = no timeout), with a background,
 * unabortable scheduling state (spec 4.2.1, "Invoke idle callbacks
 * algorithm"). fn gets PTS_ECANCELED instead if the global is detached or the
 * loop freed first. *id (may be NULL) identifies it for cancel. Owner thread.
 * @retval 0 requested.
 * @retval PTS_EINVAL NULL global or fn.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ECLOSED the global is detached.
 * @retval PTS_EQUOTA an agent's loop at its byte limit
 * (pts_agent_limits.bytes). */
PTS_EXTERN int pts_request_idle_callback(pts_global *global, pts_idle_fn fn,
                                         void *data, uint64_t timeout_ms,
                                         uint64_t *id);
/** cancelIdleCallback(): fn is never called and data is the caller's again.
 * Owner thread.
 * @retval 0 cancelled.
 * @retval PTS_EINVAL global is NULL.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_ENOTFOUND it already ran or the id is unknown (or of another
 * global). */
PTS_EXTERN int pts_cancel_idle_callback(pts_global *global, uint64_t id);
/** IdleDeadline.timeRemaining(), in ns (0 once past). Owner thread, during the
 * callback. */
PTS_EXTERN uint64_t pts_idle_time_remaining(const pts_idle_deadline *deadline);
/** IdleDeadline.didTimeout: true when the callback runs because its timeout
 * passed. Owner thread, during the callback. */
PTS_EXTERN bool pts_idle_did_timeout(const pts_idle_deadline *deadline);

/* ---- scheduling state, for embedders with their own promise jobs ---- */

/** HostMakeJobCallback (spec 4.1.4): a new reference to the loop's
 * current scheduling state, NULL when there is none. Drop it with
 * pts_sched_state_unref(). Owner thread. */
PTS_EXTERN pts_sched_state *pts_loop_capture_state(pts_loop *loop);
/** HostCallJobCallback (spec 4.1.5), first half: makes a captured state
 * the current one around the embedder's job. Borrows state: keep the
 * reference until after pts_loop_leave_state(). Owner thread. */
PTS_EXTERN void pts_loop_enter_state(pts_loop *loop, pts_sched_state *state);
/** HostCallJobCallback, second half: after the job, there is no current
 * state again. Owner thread. */
PTS_EXTERN void pts_loop_leave_state(pts_loop *loop);
/** Drops a reference from pts_loop_capture_state(); NULL is a no-op. Owner
 * thread of the loop it was captured on. */
PTS_EXTERN void pts_sched_state_unref(pts_sched_state *state);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_LOOP_H */
