/* sched/sched_internal.h: the scheduler layer's internal view, shared by the
 * scheduler's files, its tests and its benchmarks, and by the agents layer
 * for pts__scheduler_post_in and pts__scheduler_run_now.
 *
 * Threads: owner thread of the loop only, like everything in sched/.
 */
#ifndef PTSCHED_SCHED_INTERNAL_H
#define PTSCHED_SCHED_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptsched/scheduler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Live-object counters of one loop's scheduler context, so a test can assert
 * "nothing leaked" beyond what LSan sees (pool blocks are not malloc'd). */
typedef struct pts__sched_stats {
  uint64_t live_tasks;     /* task handles: delayed, queued or running */
  uint64_t live_queues;    /* scheduler task queues, mapped or not */
  uint64_t delayed_tasks;  /* of live_tasks, still waiting for their delay */
  uint32_t schedulers;     /* Scheduler objects of the loop */
  uint64_t ran_now;        /* tasks run by pts__scheduler_run_now (a count) */
} pts__sched_stats;

/* PTS_ENOTFOUND if no scheduler was ever used on the loop (all zero). */
int pts__sched_get_stats(pts_loop *loop, pts__sched_stats *out);

/* The loop's task limit (agents.h pts_agent_limits.tasks; UINT64_MAX:
 * none): a post or yield that would make live_tasks pass it fails with
 * PTS_EQUOTA, and pts__scheduler_post_in too. Makes the scheduler context if
 * the loop has none (PTS_ENOMEM). */
int pts__sched_set_task_limit(pts_loop *loop, uint64_t limit);
/* The context's live_tasks, for its agent's statistics: any thread while
 * the loop lives (a relaxed load; the provider context is set before the
 * loop reaches other threads); 0 with no context. */
uint64_t pts__sched_live_tasks(pts_loop *loop);

/* Scheduling states made per call (not the cached fixed ones) alive in the
 * process, over all loops: a state may outlive its loop's scheduler context
 * (a promise reaction holds it), so this count is not per loop. */
uint64_t pts__sched_live_states(void);

/* For tests of the map rules: whether the scheduler's static map has an
 * entry for (priority, is_continuation), and how many queues are mapped. */
bool pts__sched_has_static_queue(pts_scheduler *s, int priority, bool cont);
uint32_t pts__sched_mapped_queues(pts_scheduler *s);

/* Storage for one task handle, owned by the caller of pts__scheduler_post_in. */
typedef struct pts__sched_slot {
  void *words[8];
} pts__sched_slot;

/* postTask with a direct callback, a fixed priority (PTS_PRIORITY_UNSET:
 * user-visible), no signal and no delay, as pts_scheduler_post_task_cb with those
 * options, but the handle lives in the caller's slot instead of a block of
 * the scheduler's: the agents layer puts it in the block of the command
 * that carried the post, so a cross-thread post uses one block in all.
 * fn is called exactly once: with 0 when the task runs, or PTS_ECANCELED
 * when it never will (the global detached, the loop freed). The slot must
 * stay untouched until then and is the caller's again from that call on (fn
 * may free it). Returns 0; PTS_EINVAL, PTS_ETYPE (priority out of range),
 * PTS_ECLOSED (the scheduler is detached), PTS_EQUOTA (the task limit) or
 * PTS_ENOMEM, and then fn is not called. Owner thread of the loop. */
int pts__scheduler_post_in(pts_scheduler *s, pts__sched_slot *slot, pts_task_fn fn,
                           void *data, int priority);

/* Whether pts__scheduler_run_now may be called: the scheduler is attached
 * and its global fully active, and no scheduler of the loop has a task
 * queued. Owner thread of the loop. */
bool pts__scheduler_may_run_now(const pts_scheduler *s);

/* postTask as pts__scheduler_post_in, then the task run at once as the
 * loop's pick, for a caller that knows nothing else is runnable on the loop
 * (no ordinary task ready, no timer, no microtask) and has checked
 * pts__scheduler_may_run_now: the loop's inbox, through the agents layer.
 * The task takes its enqueue order and runs with the scheduling state of
 * its priority, as script, exactly as if queued and then selected; the
 * queue the spec would map for it, and unmap once it is empty again, is
 * never made. priority: a pts_priority (not UNSET). Returns the pick, as
 * pts__provider_ops.run_next: 1 + the task's effective priority. */
int pts__scheduler_run_now(pts_scheduler *s, pts_task_fn fn, void *data, int priority);

/* A run of such tasks, one after another with nothing between them (the
 * agents layer's in-place pass): pts__scheduler_run_in is
 * pts__scheduler_run_now, but the scheduling state of the task's priority
 * (and the reference and live-task count that go with it) is set at the
 * run's first task of that priority and kept for the next ones, until
 * pts__scheduler_run_end or a task of another priority; what a task's
 * callback and its microtasks see is the same. The caller ends the run
 * before anything else runs on the loop. Owner thread. */
typedef struct pts__sched_run {
  pts_scheduler *s;
  void *state;           /* the state set for the run (the scheduler's) */
  pts_sched_state *prev; /* the loop's state before the run */
  int priority;          /* -1: no run */
} pts__sched_run;
#define PTS__SCHED_RUN_INIT {NULL, NULL, NULL, -1}
int pts__scheduler_run_in(pts__sched_run *run, pts_scheduler *s, pts_task_fn fn, void *data,
                          int priority);
void pts__scheduler_run_end(pts__sched_run *run);

/* Sizes of the per-task blocks, for the memory-per-task benchmark. */
size_t pts__sched_task_size(int with_signal_or_promise);
size_t pts__sched_state_size(void);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_SCHED_INTERNAL_H */
