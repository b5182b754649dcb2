/* sched/sched_internal.h: the scheduler layer's internal view, shared by the
 * scheduler's files, its tests and its benchmarks (nothing else uses it).
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
} pts__sched_stats;

/* PTS_ENOTFOUND if no scheduler was ever used on the loop (all zero). */
int pts__sched_get_stats(pts_loop *loop, pts__sched_stats *out);

/* Scheduling states made per call (not the cached fixed ones) alive in the
 * process, over all loops: a state may outlive its loop's scheduler context
 * (a promise reaction holds it), so this count is not per loop. */
uint64_t pts__sched_live_states(void);

/* For tests of the map rules: whether the scheduler's static map has an
 * entry for (priority, is_continuation), and how many queues are mapped. */
bool pts__sched_has_static_queue(pts_scheduler *s, int priority, bool cont);
uint32_t pts__sched_mapped_queues(pts_scheduler *s);

/* Sizes of the per-task blocks, for the memory-per-task benchmark. */
size_t pts__sched_task_size(int with_signal_or_promise);
size_t pts__sched_state_size(void);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_SCHED_INTERNAL_H */
