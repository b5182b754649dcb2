/** @file ptsched/agents.h
 * @brief Agents (tenants, each an event loop) on a worker pool: placement,
 * inter-loop policies, cross-thread postTask and controllers, lifecycle and
 * statistics. Not part of the spec: this is the host side that runs many
 * tenants' loops (the spec's "agents" and its first privacy mitigation,
 * one origin per thread, see docs/agents.md and docs/security.md).
 *
 * An agent is a tenant: its own loop (with its default global and scheduler),
 * an origin label and a weight. A pool of N threads runs M agents' loops; a
 * loop runs on one pool thread at a time (its placement; it moves only
 * between two of its tasks, by pts_agent_move() or the pool's balancer), and
 * a thread hosting several loops picks the next one by the pool's inter-loop
 * policy.
 *
 * @par Threads
 * Every function here may be called from any thread, including from
 * inside a task of any agent. Operations on an agent travel through its loop's
 * inbox and are applied whole by its thread between two tasks. Callbacks run
 * on the target agent's pool thread unless said otherwise.
 *
 * @par Ownership
 * pts_pool_new and pts_agent_new give one reference (atomic);
 * pts_agent_unref drops it. Destroying an agent or shutting the pool down does
 * not free the handle: calls on it then fail with PTS_ECLOSED.
 *
 * @par Errors
 * Besides the codes each function names, PTS_EINVAL for a NULL
 * object or argument and PTS_ENOMEM when out of memory. A call that fails
 * changes nothing and calls nothing. Each function lists every code it can
 * return.
 */
#ifndef PTSCHED_AGENTS_H
#define PTSCHED_AGENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "ptsched/common.h"
#include "ptsched/loop.h"
#include "ptsched/scheduler.h"
#include "ptsched/signal.h"
#include "ptsched/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A pool of worker threads running agents' loops; opaque. */
typedef struct pts_pool pts_pool;
/** An agent (a tenant): its own loop, default global and scheduler, an origin
 * label and a weight; opaque, refcounted (atomic). */
typedef struct pts_agent pts_agent;
/** A handle, usable from any thread, to a controller living on an agent's
 * loop; opaque, refcounted (atomic). */
typedef struct pts_remote_controller pts_remote_controller;

/** Inter-loop policies for loops sharing a thread (docs/agents.md). */
typedef enum pts_policy {
  PTS_POLICY_STRICT = 0,       /**< most urgent next task across loops, then longest waiting loop */
  PTS_POLICY_ROUND_ROBIN,      /**< one task per ready loop in turn */
  PTS_POLICY_FAIR,             /**< least CPU time used per unit of weight */
  PTS_POLICY_RANDOMIZED,       /**< weighted lottery among ready loops, seeded */
  PTS_POLICY_TIME_PARTITIONED, /**< fixed slots per loop; idle slots stay idle */
  /** Since 5.2: fixed slots whose shares change only once an epoch, from
   * each loop's use; idle slots stay idle. Co-located tenants learn at
   * most one bit each per epoch about each other's timing, for a few
   * points of throughput and up to a frame of wait (docs/security.md,
   * "For host operators"). Slot: pts_pool_options.slot_ns (0 = 250 us); a
   * frame of 16 slots (or one per loop, if more); an epoch of 250 frames. */
  PTS_POLICY_QUANTIZED
} pts_policy;
/** Number of policies (6 since 5.2, 5 before). */
#define PTS_POLICY_COUNT 6
/** A policy's name: "strict", "round-robin", "fair", "randomized",
 * "time-partitioned", "quantized"; NULL if unknown. A static string. Any
 * thread. */
PTS_EXTERN const char *pts_policy_name(int policy);

/** Limits of one agent (since 5.0; docs/agents.md, "Quotas"). Each field
 * is a count the agent may hold at once: 0 takes the pool's default
 * (pts_pool_options.limits; 0 there too: no limit); PTS_LIMIT_NONE, or any
 * value from 2^63 on, means no limit whatever the default. A call that
 * would pass a limit fails with PTS_EQUOTA and does nothing; the agent's
 * other work, and every other agent's, is untouched, and every task
 * admitted before still runs or settles exactly once. Usage is in
 * pts_agent_stats. */
typedef struct pts_agent_limits {
  /** Pending scheduler tasks of the agent's loop: postTask tasks, delayed
   * ones included, yield continuations, and the task running now. A post
   * that would pass it (pts_scheduler_post_task_cb*, pts_scheduler_yield*) fails on
   * the agent's thread with PTS_EQUOTA; a cross-thread post that reaches
   * it when applied is settled instead: its done gets PTS_EQUOTA (the
   * callback of pts_agent_post_task_req gets status PTS_EQUOTA), it never
   * runs. Cross-thread tasks count here like the agent's own; limits.inbox
   * bounds how many of them there can be (see there). */
  uint64_t tasks;
  /** Bytes the agent's loop holds from the allocator for its tasks,
   * promises, reactions, timers, microtasks, idle callbacks and
   * scheduling states (its block pool, free blocks included: a loop keeps
   * what it once used until it is freed). An allocation that would pass it
   * fails, and the call that made it returns PTS_EQUOTA. */
  uint64_t bytes;
  /** Cross-thread work in flight: the commands of pts_agent_post_task,
   * pts_agent_post_task_req, pts_agent_queue_task,
   * pts_remote_controller_abort and _set_priority posted and not finished,
   * whether they wait in the inbox or, applied, as tasks in the loop: a
   * task's place goes back once its callback has run (or was called with
   * an error status; tasks run at once, one after another in a burst, give
   * theirs back together after the last of them, at most 64), a controller
   * operation's once applied. So a flood
   * from other threads holds at most this much of the agent's memory,
   * whatever the agent's own pace. Replies of other agents' posts,
   * controller creations and releases, moves, drains and destroys are not
   * counted and never refused. A producer that finds it full gets
   * PTS_EQUOTA at once: the post never blocks (a host sheds load or
   * retries). Cross-thread tasks count in `tasks` too: set `tasks` to at
   * least `inbox` plus the agent's own budget, so a flood cannot use up
   * the agent's own posts. */
  uint64_t inbox;
} pts_agent_limits;
/** A limit that is off even when the pool sets a default. */
#define PTS_LIMIT_NONE UINT64_MAX

/** A step that ran too long (pts_pool_options.on_long_task): agent's task
 * (or a command applied to its loop) has been running for running_ns. It
 * is called on the pool's watchdog thread while that step still runs, once
 * per such step, with a reference to agent held for the call (take one
 * with pts_agent_ref to keep it). It may call any function that may be
 * called from any thread and does not block: pts_agent_destroy(agent,
 * false) ends the tenant once the step returns (C code cannot be
 * preempted). It must not block: the next report waits for it. */
typedef void (*pts_long_task_fn)(void *data, pts_agent *agent, uint64_t running_ns);

/** Options of pts_pool_new().
 *
 * ABI: embedders allocate it; its size and layout are fixed for a major
 * version (a new member means a new SONAME). Zero-initialise it
 * (`pts_pool_options o = {0};`: one thread per core, strict policy), then set
 * fields by name. */
typedef struct pts_pool_options {
  unsigned threads;  /**< number of threads; 0 = number of online cores */
  pts_policy policy; /**< the inter-loop policy of every thread */
  uint64_t seed;     /**< randomized policy: the lottery's seed */
  /** Slot length: time-partitioned's (0 = 1 ms) and, since 5.2,
   * quantized's (0 = 250 us). */
  uint64_t slot_ns;
  /** Load balancing (since 1.0): an idle thread takes a whole loop (with the
   * other agents of its origin on that thread) from a thread with more than
   * one ready loop, with hysteresis (docs/agents.md, "Migration"). Applies
   * to the strict, round-robin, fair and randomized policies; ignored under
   * time-partitioned and quantized (a move on load would undo what they
   * hide). false (the default): placement is static, as before. */
  bool balance;
  /** How long a loop may keep its thread in a row (since 4.0), in ns of
   * its steps: a turn under round-robin, a draw under randomized, a run
   * among equally urgent loops under strict (a more urgent one that becomes
   * ready still takes the thread after the current step), and fair's
   * granularity (a loop runs until its virtual runtime passes the next
   * ready loop's by this much). A turn ends after the step during which it
   * reached the quantum (the worker looks at the clock every ~2 us of
   * steps), or earlier when the loop has nothing left. 1 = one step per
   * turn, the policies' meaning before 4.0; 0 = PTS_QUANTUM_DEFAULT_NS; at
   * most 1 s.
   * Ignored by time-partitioned and quantized (their slots are the turns).
   * docs/agents.md,
   * "Switches between loops". */
  uint64_t quantum_ns;
  /** Every agent's limits where its own pts_agent_options.limits has 0
   * (since 5.0); all 0: no limits. */
  pts_agent_limits limits;
  /** The watchdog (since 5.0; docs/agents.md, "Runaway tasks"): a thread
   * of the pool looks at every worker each watchdog_ns / 4 and reports a
   * step that has run for longer than watchdog_ns (a task, or a command
   * applied to a loop): pts_agent_stats.long_tasks and on_long_task. With
   * balance on, it also moves the stuck worker's other origin groups (not
   * pinned) to the other workers, within about 1.25 x watchdog_ns of the
   * step's start; the stuck agent's group stays with its step. 0: no
   * watchdog. At least 100 us, at most 1 s (else PTS_EINVAL). */
  uint64_t watchdog_ns;
  /** Called for each long step the watchdog finds; may be NULL. */
  pts_long_task_fn on_long_task;
  void *on_long_task_data; /**< its data */
} pts_pool_options;

/** The default quantum (pts_pool_options.quantum_ns = 0), chosen by the
 * scale benchmark (docs/agents.md): 10 us. */
#define PTS_QUANTUM_DEFAULT_NS 10000u

/** Creates a pool and starts its threads. opts may be NULL (the zero
 * defaults) and is read, not kept. *out gets the pool; free it with
 * pts_pool_shutdown(). Any thread.
 * @retval 0 success.
 * @retval PTS_EINVAL out is NULL, an unknown policy, more than 4096 threads,
 * a quantum over 1 s or a watchdog_ns out of range.
 * @retval PTS_ENOMEM out of memory or threads could not be started. */
PTS_EXTERN int pts_pool_new(const pts_pool_options *opts, pts_pool **out);
/** Stops the threads after destroying every agent still running (their
 * pending work is released: promises rejected, callbacks given
 * PTS_ECLOSED) and frees the pool. Agent handles stay valid until unref'd.
 * The pool is freed when the call returns 0: calling it again after that is
 * a use after free, like any call on a freed object. Any thread but a pool
 * thread.
 * @retval 0 done; the pool is freed.
 * @retval PTS_EINVAL pool is NULL.
 * @retval PTS_ENOMEM out of memory: nothing done, the pool runs on (call it
 * again).
 * @retval PTS_EBUSY called from a pool thread.
 * @retval PTS_ECLOSED another call's shutdown of this pool is in progress. */
PTS_EXTERN int pts_pool_shutdown(pts_pool *pool);
/** The pool's number of threads; 0 for NULL. Any thread. */
PTS_EXTERN unsigned pts_pool_threads(const pts_pool *pool);

/** Options of pts_agent_new().
 *
 * ABI: embedders allocate it; its size and layout are fixed for a major
 * version. Initialise it with PTS_AGENT_OPTIONS_INIT, then set fields by
 * name. */
typedef struct pts_agent_options {
  const char *origin; /**< tenant/origin label (copied); NULL = a unique one */
  uint32_t weight;    /**< fair and randomized policies; 0 = 1 */
  int thread;         /**< explicit placement (0..threads-1), or -1 = by rule */
  /** The balancer never moves this agent (since 1.0). Same-origin agents
   * move together, so this pins its origin on its thread too: pin an origin
   * by pinning any of its agents. pts_agent_move() still moves it. */
  bool pinned;
  /** Its limits (since 5.0): 0 fields take the pool's. */
  pts_agent_limits limits;
} pts_agent_options;
/** The defaults: a unique origin, weight 1, placement by rule, not pinned,
 * the pool's limits. */
#define PTS_AGENT_OPTIONS_INIT {NULL, 1, -1, false, {0, 0, 0}}

/** Creates an agent and places it: with thread = -1, an origin already placed
 * goes to its thread; a new origin takes a thread with no origin yet while
 * there is one (one origin per thread, the spec's first mitigation);
 * otherwise the thread with the fewest agents. opts may be NULL (the
 * defaults). *out gets the caller's reference. Any thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL pool or out, a thread out of range.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_ECLOSED the pool is shut down. */
PTS_EXTERN int pts_agent_new(pts_pool *pool, const pts_agent_options *opts,
                             pts_agent **out);
/** Takes one more reference to the handle. NULL is a no-op. Any thread. */
PTS_EXTERN void pts_agent_ref(pts_agent *a);
/** Drops one reference; the last one frees the handle (it does not destroy a
 * running agent: see pts_agent_destroy() and pts_pool_shutdown()). NULL is a
 * no-op. Any thread. */
PTS_EXTERN void pts_agent_unref(pts_agent *a);
/** The thread index the agent runs on (or is moving to). Any thread; with
 * balancing or pts_agent_move() the answer may be stale by the time it is
 * read.
 * @return the index, or a negative code:
 * @retval PTS_EINVAL a is NULL. */
PTS_EXTERN int pts_agent_thread(const pts_agent *a);
/** Moves the agent's loop to pool thread `thread`, together with the other
 * agents of its origin group (same-origin agents share a thread), pinned or
 * not. The group moves as one: its agents never run tasks on two threads at
 * once, and at rest they are on one thread, where the origin's next agent is
 * placed. Asynchronous: the current thread detaches the loops between two of
 * their tasks and the target attaches them; the inboxes, timers, pending
 * tasks, signals and promises move untouched, and commands posted meanwhile
 * are neither lost nor reordered. pts_agent_thread() gives the new index once
 * the group has left. Requests for agents of one group, racing or not, are
 * applied one at a time by the group's thread, each from its agent's inbox:
 * the group goes where the last one applied says (a request for the thread
 * it is on cancels one not yet made). A move the pool cannot make (out of
 * memory) is dropped; one waits while an agent of the group is being
 * destroyed or added. a is borrowed. Any thread, including the agent's own
 * tasks.
 * @retval 0 requested (or already there).
 * @retval PTS_EINVAL NULL a, thread out of range.
 * @retval PTS_ECLOSED the agent is destroyed. */
PTS_EXTERN int pts_agent_move(pts_agent *a, int thread);
/** The agent's loop and default global. pts_loop_stop() on it only wakes it
 * (an agent stops by pts_agent_destroy); pts_loop_run() on it fails
 * (PTS_EBUSY). Borrowed. For use only from the agent's own tasks (its
 * thread). */
PTS_EXTERN pts_loop *pts_agent_loop(pts_agent *a);

/** Destroys the agent: applied by its thread between two tasks (from one of
 * its own tasks: after that task returns). Pending tasks, promises and
 * timers are released (callbacks get PTS_ECANCELED or PTS_ECLOSED), the loop is
 * freed; later calls fail with PTS_ECLOSED. If wait, blocks until done. Any
 * thread; with wait, not from the agent's own thread, i.e. from any task of
 * an agent placed on the same pool thread.
 * @retval 0 destroyed (if wait) or its destruction sent.
 * @retval PTS_EINVAL a is NULL.
 * @retval PTS_EBUSY wait from the agent's own thread; nothing is done.
 * @retval PTS_ECLOSED a second destroy (after waiting for the first, if
 * wait). */
PTS_EXTERN int pts_agent_destroy(pts_agent *a, bool wait);

/** Blocks until the agent has nothing runnable and no pending inbox command
 * (timers may still be armed). Any thread but a pool thread.
 * @retval 0 drained.
 * @retval PTS_EINVAL a is NULL.
 * @retval PTS_EBUSY called from a pool thread.
 * @retval PTS_ECLOSED the agent is destroyed. */
PTS_EXTERN int pts_agent_drain(pts_agent *a);

/** The outcome of a cross-thread postTask: status 0 and the fulfilment value,
 * or a negative status and the rejection reason (PTS_EABORT when aborted,
 * PTS_EERROR when the callback returned an error value or a promise that was
 * rejected, PTS_ECLOSED when the agent, or reply_to, was destroyed first).
 * result is borrowed. Called exactly once. A callback that returns a promise
 * (of the agent's loop) is adopted: done learns its settlement. */
typedef void (*pts_result_fn)(void *data, int status, pts_value result);

/** Options of a cross-thread post: the postTask options, with the signal given
 * as a remote controller's signal (or none).
 *
 * ABI: embedders allocate it; its size and layout are fixed for a major
 * version. Initialise it with PTS_AGENT_POST_OPTIONS_INIT, then set fields by
 * name. */
typedef struct pts_agent_post_options {
  int priority;                      /**< pts_priority or PTS_PRIORITY_UNSET */
  int64_t delay_ms;                  /**< as pts_post_options.delay_ms */
  pts_remote_controller *controller; /**< its signal is the task's signal; may be NULL; borrowed */
} pts_agent_post_options;
/** The defaults: no priority, no delay, no controller. */
#define PTS_AGENT_POST_OPTIONS_INIT {PTS_PRIORITY_UNSET, 0, NULL}

/** postTask on the agent's scheduler from any thread (spec 2.4.2 "schedule a
 * postTask task", applied on the agent's thread). callback runs as the task
 * on the agent's thread (status as pts_task_callback). done (may be NULL)
 * learns the result: on the agent's thread, or, if reply_to is not NULL, as a
 * message task on reply_to's thread (so a caller that is itself an agent gets
 * its result on its own loop). If reply_to is closed when the result is
 * ready, done gets PTS_ECLOSED on the agent's thread instead. opts may be
 * NULL. Any thread.
 * @retval 0 posted.
 * @retval PTS_EINVAL NULL a or callback.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN a controller of another agent.
 * @retval PTS_ECLOSED a closed agent or pool; nothing is called.
 * @retval PTS_ETYPE bad options: an unknown priority, a delay out of range.
 * @retval PTS_EQUOTA the inbox is at its limit (pts_agent_limits.inbox);
 * nothing is called. */
PTS_EXTERN int pts_agent_post_task(pts_agent *a,
                                   const pts_agent_post_options *opts,
                                   pts_task_callback callback, void *data,
                                   pts_result_fn done, void *done_data,
                                   pts_agent *reply_to);

/** Caller-owned storage for one pts_agent_post_task_req() (since 1.1), like
 * pts_task_req for a loop: with it a cross-thread postTask allocates
 * nothing. The contents are private to ptsched. ABI: 64 bytes since 3.0
 * (128 in 1.1-2.0), fixed for a major version. Aligned to 64 bytes
 * (aligned_alloc), it is one cache line: what the agent's thread reads to
 * run the task. A task that waits in a queue takes its scheduler handle
 * from the agent's loop. */
typedef struct pts_agent_task_req {
  void *pts_private[8]; /**< private to ptsched */
} pts_agent_task_req;

/** pts_agent_post_task() for the plain post, with caller-owned storage
 * (since 1.1): a priority (pts_priority, or PTS_PRIORITY_UNSET for
 * user-visible), no delay, no controller and no result callback. It is the
 * same postTask, with the same order and statistics; callback's result is
 * released (nobody waits for it, so a promise it returns is not followed).
 * req belongs to ptsched from a successful call until callback has been
 * called (status 0 when the task runs on the agent's thread, PTS_ECANCELED
 * when the agent is destroyed first, PTS_EQUOTA when the agent's task limit
 * refused it on arrival); then the caller may reuse or free it, from
 * callback itself too. On an error req is the caller's. Any thread.
 * @retval 0 posted.
 * @retval PTS_EINVAL NULL a, req or callback.
 * @retval PTS_ECLOSED the agent is destroyed: callback is not called.
 * @retval PTS_ETYPE an unknown priority.
 * @retval PTS_EQUOTA the agent's inbox is at its limit (pts_agent_limits). */
PTS_EXTERN int pts_agent_post_task_req(pts_agent *a, int priority,
                                       pts_agent_task_req *req,
                                       pts_task_callback callback, void *data);

/** Queues fn on one of the agent's ordinary task sources from any thread
 * (status as pts_task_fn: 0 when it runs on the agent's thread,
 * PTS_ECANCELED or PTS_ECLOSED if the agent goes first). Any thread.
 * @retval 0 queued.
 * @retval PTS_EINVAL NULL a or fn, unknown source.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_ECLOSED the agent is destroyed.
 * @retval PTS_EQUOTA the inbox is at its limit (pts_agent_limits.inbox). */
PTS_EXTERN int pts_agent_queue_task(pts_agent *a, pts_task_source source,
                                    pts_task_fn fn, void *data);

/** A handle to a controller owned by an agent, usable from any thread. Create
 * it on the agent's thread (from one of its tasks) with
 * pts_remote_controller_new, which creates the controller (a TaskController if
 * priority >= 0, else an AbortController) on the agent's loop. *out gets the
 * caller's reference. The agent's thread only.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL a or out.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN not called on the agent's thread.
 * @retval PTS_ECLOSED the agent is destroyed.
 * @retval PTS_ETYPE priority above user-blocking. */
PTS_EXTERN int pts_remote_controller_new(pts_agent *a, int priority,
                                         pts_remote_controller **out);
/** The same from outside, applied on the agent's thread before any later
 * command of this caller; returns at once. *out gets the caller's reference.
 * Any thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL a or out.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_ECLOSED the agent is destroyed.
 * @retval PTS_ETYPE priority above user-blocking. */
PTS_EXTERN int pts_remote_controller_new_async(pts_agent *a, int priority,
                                               pts_remote_controller **out);
/** Takes one more reference to the handle. NULL is a no-op. Any thread. */
PTS_EXTERN void pts_remote_controller_ref(pts_remote_controller *rc);
/** Drops one reference; the last one frees the handle, and the controller on
 * the agent's loop is released there. NULL is a no-op. Any thread. */
PTS_EXTERN void pts_remote_controller_unref(pts_remote_controller *rc);
/** controller.abort(reason) from any thread, applied on the agent's thread.
 * done (may be NULL) gets the outcome on the agent's thread: 0, or
 * PTS_ECLOSED if the agent is gone. reason is copied; NULL = AbortError.
 * Any thread.
 * @retval 0 sent; done gets the outcome.
 * @retval PTS_EINVAL rc is NULL, or a promise reason.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_ECLOSED the agent is destroyed; nothing is called.
 * @retval PTS_EQUOTA the agent's inbox is at its limit
 * (pts_agent_limits.inbox); nothing is called. */
PTS_EXTERN int pts_remote_controller_abort(pts_remote_controller *rc,
                                           const pts_value *reason,
                                           pts_task_fn done, void *done_data);
/** controller.setPriority(priority) from any thread, applied on the agent's
 * thread. done (may be NULL) gets the outcome on the agent's thread: 0,
 * PTS_ENOTALLOWED, PTS_EINVAL (an AbortController), or PTS_ECLOSED if the
 * agent is gone. Any thread.
 * @retval 0 sent; done gets the outcome.
 * @retval PTS_EINVAL rc is NULL.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_ECLOSED the agent is destroyed; nothing is called.
 * @retval PTS_ETYPE an unknown priority; nothing is called.
 * @retval PTS_EQUOTA the agent's inbox is at its limit
 * (pts_agent_limits.inbox); nothing is called. */
PTS_EXTERN int pts_remote_controller_set_priority(pts_remote_controller *rc,
                                                  int priority,
                                                  pts_task_fn done,
                                                  void *done_data);
/** The controller itself. Made there if the async creation has not been
 * applied yet. NULL for a NULL rc, off the agent's thread, or out of memory.
 * Borrowed. For the agent's own tasks (its thread) only. */
PTS_EXTERN pts_controller *pts_remote_controller_get(pts_remote_controller *rc);

/* Statistics (relaxed snapshots, any thread). */
/** Buckets of pts_agent_stats.delay_hist: bucket i counts start delays in
 * [2^i, 2^(i+1)) ns. */
#define PTS_DELAY_BUCKETS 32
/** The class a task ran in (docs/loop.md): idle callbacks; scheduler
 * effective priority 0-1; timers, messages, generic and effective priority 2;
 * effective priority 3-5; user input. */
typedef enum pts_task_class {
  PTS_CLASS_IDLE = 0, /**< idle callbacks */
  PTS_CLASS_LOW,      /**< scheduler tasks of effective priority 0-1 */
  PTS_CLASS_FIFO,     /**< timers, messages, generic tasks, effective priority 2 */
  PTS_CLASS_HIGH,     /**< scheduler tasks of effective priority 3-5 */
  PTS_CLASS_INPUT     /**< user input tasks */
} pts_task_class;
/** Number of task classes. */
#define PTS_CLASS_COUNT 5
/** One agent's counters (pts_agent_get_stats()).
 *
 * ABI: embedders allocate it; its size and layout are fixed for a major
 * version (a new counter means a new SONAME). */
typedef struct pts_agent_stats {
  uint64_t tasks_run[PTS_CLASS_COUNT]; /**< by class of the task when it started */
  uint64_t cpu_ns;         /**< time spent running this agent's steps (wall
                            time, added per round of steps: docs/agents.md) */
  uint64_t delay_hist[PTS_DELAY_BUCKETS]; /**< start delay of cross-thread posted tasks, while timed (pts_agent_set_delay_stats: off by default) */
  uint64_t inbox_depth;    /**< commands posted and not yet applied */
  uint64_t inbox_max;      /**< largest depth seen at a drain (the commands
                            applied in one pass: with an inbox limit it may
                            pass the limit when producers refill the inbox
                            during the pass) */
  uint64_t moves;          /**< times its loop moved to another thread (since 1.0) */
  /* Since 5.0 (pts_agent_limits; docs/agents.md, "Quotas"). */
  uint64_t tasks_pending;  /**< pending scheduler tasks (limits.tasks counts these) */
  uint64_t bytes_held;     /**< bytes its loop holds (limits.bytes counts these) */
  uint64_t refused;        /**< calls refused with PTS_EQUOTA, every limit */
  uint64_t long_tasks;     /**< steps the watchdog found running too long */
} pts_agent_stats;
/** One pool thread's counters (pts_pool_get_thread_stats()).
 *
 * ABI: embedders allocate it; its size and layout are fixed for a major
 * version. */
typedef struct pts_thread_stats {
  /**@{*/
  /** Steps run, time busy and idle (ns), wake-ups, agents placed on it. */
  uint64_t steps, busy_ns, idle_ns, wakeups, agents;
  /**@}*/
  /** Time-partitioned: CLOCK_MONOTONIC ns at which the thread's current frame
   * began; slot k starts at frame_origin_ns + k * slot_ns and belongs to the
   * thread's agent number k mod agents, in placement order. A new frame
   * begins whenever an agent is added to or removed from the thread.
   * Quantized: the origin of its frames, whose slots' owners follow from
   * the agents' levels (docs/security.md). */
  uint64_t frame_origin_ns;
  /**@{*/
  /** Loops moved in and out of this thread (since 1.0), and the time the
   * moves in took: from the source's detach to the end of this thread's
   * attach and first poll (ns, summed), the time the moving agent could not
   * run. */
  uint64_t moves_in, moves_out, move_ns;
  /**@}*/
} pts_thread_stats;
/** Copies a relaxed snapshot of the agent's counters into *out (caller's
 * storage). Any thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL a or out. */
PTS_EXTERN int pts_agent_get_stats(const pts_agent *a, pts_agent_stats *out);
/** Whether cross-thread posts to the agent are timed for
 * pts_agent_stats.delay_hist (since 1.1). Off when the agent is created
 * (since 2.0; on in 1.x): timing a post costs a clock read on the posting
 * thread and one on the pool thread when the task starts, with the
 * histogram's update (on the project's VM about 6 ns per post and 15 ns per
 * task, docs/benchmarks.md "Latest numbers"), so only an agent whose
 * histogram is read pays for it. Off, posts skip both and delay_hist does
 * not count them. Posts made after the call follow it, a post made
 * concurrently with it may go either way. Any thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL a. */
PTS_EXTERN int pts_agent_set_delay_stats(pts_agent *a, bool on);
/** Copies a relaxed snapshot of one pool thread's counters into *out. Any
 * thread.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL pool or out, thread out of range. */
PTS_EXTERN int pts_pool_get_thread_stats(const pts_pool *pool, unsigned thread,
                                         pts_thread_stats *out);
/** Binds pool thread `thread` to CPU `cpu` (since 5.3), or with cpu = -1
 * lets it run on every CPU its cpuset allows again. A pool's threads
 * start with the affinity of the thread that made the pool. Binding them
 * to distinct CPUs keeps the kernel from running two of them on one CPU
 * while another idles: on the project's 2-vCPU VM, two unbound threads
 * ran on one vCPU for milliseconds at a time after their wake-ups, and a
 * 2-thread run of the `scale` workload took twice as long in a third of
 * its runs (docs/agents.md, "Two threads on one vCPU"). Any thread, while
 * the pool is not being shut down.
 * @retval 0 success.
 * @retval PTS_EINVAL NULL pool, thread out of range, cpu < -1, or a CPU
 * the thread may not run on (offline, or outside the process's cpuset). */
PTS_EXTERN int pts_pool_pin_thread(pts_pool *pool, unsigned thread, int cpu);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_AGENTS_H */
