/* loop/loop_internal.h: what the loop offers the layers above it (sched/,
 * agents/) and nothing else. The loop knows nothing of schedulers: the
 * scheduler plugs its queues in as a task provider, and scheduling states are
 * opaque refcounted objects whose destroy function their creator supplies.
 *
 * Threads: everything here is owner-thread only unless named _from_any_thread.
 */
#ifndef PTSCHED_LOOP_INTERNAL_H
#define PTSCHED_LOOP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ptsched/loop.h"
#include "sync/list.h"
#include "sync/mpsc.h"

/* ---- owner-thread checks (debug builds) ---- */

/* True when the calling thread owns the loop. */
bool pts__loop_is_owner(const pts_loop *loop);
/* In debug builds: if the caller is not the owner, print "ptsched: <fn> called
 * from a foreign thread" to stderr and return true. Always false with NDEBUG. */
bool pts__loop_foreign(const pts_loop *loop, const char *fn);
#define PTS__CHECK_OWNER(loop)                                                 \
  do {                                                                         \
    if (pts__loop_foreign((loop), __func__)) return PTS_EFOREIGN;              \
  } while (0)

/* Bind the loop to the calling thread (the agents' pool moves loops between
 * threads; only while the loop is not running). */
void pts__loop_bind_thread(pts_loop *loop);

/* ---- quotas (agents.h pts_agent_limits; docs/agents.md, "Quotas") ---- */

/* What a loop counts against its agent's limits (the task count and its
 * limit are the scheduler's, sched_internal.h): the bytes its block pool
 * holds from the allocator and the calls refused with PTS_EQUOTA. The
 * setter and the count are for the owner; the readers for any thread while
 * the loop lives (relaxed). */
void pts__loop_set_byte_limit(pts_loop *loop, uint64_t limit); /* UINT64_MAX: none */
void pts__loop_quota_refused_add(pts_loop *loop);
uint64_t pts__loop_quota_bytes(const pts_loop *loop);
uint64_t pts__loop_quota_refused(const pts_loop *loop);
/* The code for an allocation that returned NULL: PTS_EQUOTA when the last
 * refusal of the calling thread's block pools was a byte limit (and it
 * clears that), else PTS_ENOMEM. */
int pts__enomem(void);

/* ---- the spec's event-loop state (section 4) ---- */

/* next enqueue order: returns the current value and increments it. Shared by
 * every scheduler of the loop and by ordinary tasks (so user-visible scheduler
 * work can be FIFO with timers and messages). Starts at 1. */
uint64_t pts__loop_take_enqueue_order(pts_loop *loop);

/* A scheduling state: opaque to the loop. The creator embeds this header
 * first in its own struct and sets destroy; refcounts are owner-thread only. */
struct pts_sched_state {
  uint32_t refs;
  void (*destroy)(struct pts_sched_state *state);
};
static inline pts_sched_state *pts__state_ref(pts_sched_state *s) {
  if (s) s->refs++;
  return s;
}
void pts__state_unref(pts_sched_state *s); /* = pts_sched_state_unref */

/* The current scheduling state, borrowed (may be NULL). */
pts_sched_state *pts__loop_current_state(pts_loop *loop);
/* Sets it, borrowed: the caller keeps its reference alive while current and
 * restores the previous value afterwards. Returns the previous value. */
pts_sched_state *pts__loop_swap_state(pts_loop *loop, pts_sched_state *state);

/* ---- calling embedder code: "clean up after running script" ----
 *
 * spec (HTML, "clean up after running script", reached from WebIDL "invoke a
 * callback function" and DOM "inner invoke"): when a callback returns or
 * throws and the script stack is then empty, perform a microtask checkpoint,
 * inside the task, before the caller's next step. The loop counts embedder
 * callbacks on the stack (script depth): 0 while the loop runs its own steps
 * (pts_loop_run, pts_loop_advance, a pool thread's poll and step); 1 outside
 * them, because whatever calls the API from outside a run is the embedder's
 * own code. Every call into embedder code that the loop makes goes between
 * pts__script_enter and pts__script_leave; leaving to depth 0 runs the
 * checkpoint when a microtask is queued (one branch when none is). Ordinary
 * tasks are wrapped where the loop runs them (loop.c), so their steps count
 * as script; microtask jobs are not wrapped (the checkpoint is not
 * re-entrant, like HTML's "performing a microtask checkpoint" flag). */
void pts__script_enter(pts_loop *loop);
void pts__script_leave(pts_loop *loop);
/* For the steps of an ordinary task that are the loop's own and call
 * embedder code more than once, each call with an empty stack (the task of
 * AbortSignal.timeout() fires abort listeners): makes the depth 0 for them
 * and returns what to restore with pts__script_resume. */
uint32_t pts__script_suspend(pts_loop *loop);
void pts__script_resume(pts_loop *loop, uint32_t depth);
/* Performs a microtask checkpoint now (a no-op inside one). For a wrapper
 * that the loop calls as a callback and that calls the embedder's callback
 * itself, then settles something: the embedder's callback is the script
 * whose clean-up comes before the settlement (agents/remote.c). */
void pts__loop_perform_checkpoint(pts_loop *loop);

/* The background, unabortable state that idle callbacks run with (spec
 * section 4, requestIdleCallback). The scheduler layer installs a factory; the
 * loop calls it (new reference) when an idle callback runs. NULL if none. */
void pts__loop_set_idle_state_factory(pts_loop *loop,
                                      pts_sched_state *(*make)(pts_loop *));

/* ---- tasks, embeddable (no allocation) ---- */

/* An ordinary task node, embedded in its owner. Linked in one of a global's
 * source queues while queued. */
typedef struct pts__task {
  /* What running it needs first: a command that embeds a task and runs it
   * straight from the inbox reads these and nothing after them. */
  pts_global *global;
  pts_task_fn fn;
  void *data;
  pts__list link;                /* queue links, owned by the loop */
  uint64_t order;                /* enqueue order, set when queued */
} pts__task;

void pts__task_init(pts__task *t, pts_global *g, pts_task_fn fn, void *data);
/* Queue on a source. PTS_ECLOSED if the global is detached. */
int pts__task_queue(pts__task *t, pts_task_source source);
/* Remove a queued task without running it (fn not called). True if it was
 * queued. */
bool pts__task_dequeue(pts__task *t);

/* ---- timers: "run steps after a timeout", embeddable ---- */

/* At expiry the loop calls fn(data, 0) directly on the owner thread, in its
 * timer phase (not as a task: these are the spec's in-parallel completion
 * steps; a caller that wants a task queues one). Timers are ordered by
 * (deadline, start sequence). An inactive global's timers stop counting down.
 * When the global is detached or the loop freed, fn(data, PTS_ECANCELED). */
typedef struct pts__timer {
  uint64_t deadline;   /* ns, loop time */
  uint64_t seq;        /* start sequence: equal deadlines fire in start order */
  uint64_t remaining;  /* ns left while the global is inactive */
  uint32_t heap_index; /* position in the loop's heap; UINT32_MAX if not in it */
  uint32_t state;      /* owned by the loop */
  pts__list glink;     /* on the global's list of its timers */
  pts_global *global;
  pts_task_fn fn;
  void *data;
} pts__timer;

void pts__timer_init(pts__timer *t, pts_global *g, pts_task_fn fn, void *data);
/* delay_ns saturates: a deadline past the end of time never fires. */
int pts__timer_start(pts__timer *t, uint64_t delay_ns);
/* Stops a started timer; fn will not be called. True if it was pending. */
bool pts__timer_stop(pts__timer *t);

/* ---- commands through the inbox, embeddable ---- */

/* The kinds of command, the one model of everything sent to a loop from
 * another thread. The owner's in-place path (loop.c, inbox_run) reads the
 * kind: the kinds that carry a task may run it at once, as if it had been
 * queued and picked (MESSAGE by the loop itself, the AGENT_ kinds by the
 * loop's command runner, which adds the agents layer's admission and
 * ranks); every command that does not run in place is applied by its type's
 * apply. */
typedef enum pts__command_kind {
  PTS__CMD_APPLY = 0,   /* applied by its type's apply, never run in place */
  PTS__CMD_MESSAGE,     /* a task of a loop's own sources (loop_impl.h, xreq) */
  PTS__CMD_AGENT_TASK,  /* the agents layer's postTask (agents/remote.c, xtask) */
  PTS__CMD_AGENT_QUEUE, /* the agents layer's ordinary task (agents/remote.c, xqueue) */
} pts__command_kind;

struct pts__command;
/* A type of command: its kind and how it is applied. One static const
 * object per type (so a command stays two words: a request of the loop's
 * public API is a cache line, the command and its task). */
typedef struct pts__command_type {
  pts__command_kind kind;
  void (*apply)(struct pts__command *cmd, int status);
} pts__command_type;

/* A command sent from any thread: type->apply(cmd, 0) on the owner thread
 * at the next inbox drain, or type->apply(cmd, PTS_ECANCELED) when the loop
 * is freed first; unless, by its kind, it ran in place. */
typedef struct pts__command {
  pts__mpsc_node node;
  const pts__command_type *type;
} pts__command;
/* Any thread; wakes the loop only if it sleeps. */
void pts__loop_send_from_any_thread(pts_loop *loop, pts__command *cmd);
/* Any thread: the push alone, for a producer that wakes the loop's driver
 * by its own means (the agents layer) and must not touch the loop after
 * its command is in the inbox. */
void pts__loop_push_command_from_any_thread(pts_loop *loop, pts__command *cmd);
/* pts_loop_free, except that the release of the inbox's commands (its step
 * 2) goes on until done(ctx) returns true: for commands whose producers are
 * known to be on their way (the agents layer's admissions). */
int pts__loop_free_when(pts_loop *loop, bool (*done)(void *ctx), void *ctx);

/* A pass of in-place runs over the inbox (loop.c, inbox_run): how many
 * tasks ran and what the last one was, read and counted by the loop and by
 * its command runner. */
typedef struct pts__inbox_pass {
  uint32_t ran, max; /* tasks run in the pass; its limit */
  uint32_t *counts;  /* counts[PTS__URGENCY_*] of each task run, or NULL */
  int pick;          /* the last task's pick (pts__loop_last_urgency) */
  uint32_t counted;  /* tasks before this many are in counts: the tasks of
                      * one pick in a row are added when the pick changes
                      * and when the pass ends (pts__inbox_pass_count) */
} pts__inbox_pass;
/* Adds the row of tasks of the current pick to counts. */
void pts__inbox_pass_count(pts__inbox_pass *pass);
/* Owner thread, the loop and its runner: counts a task run in place, of
 * that pick. Inline: once per task of a stream, where the pick repeats. */
static inline void pts__inbox_pass_ran(pts__inbox_pass *pass, int pick) {
  if (__builtin_expect(pick != pass->pick, 0)) {
    pts__inbox_pass_count(pass);
    pass->pick = pick;
  }
  pass->ran++;
}
/* Owner thread, the runner only: the inbox's next command, popped, while the
 * pass may go on (below its limit, no stop requested, no ordinary task
 * ready, no timer armed, no microtask queued), else NULL. The provider's
 * queues are the runner's to check before it runs what this gives. */
pts__command *pts__loop_inbox_next(pts_loop *loop, const pts__inbox_pass *pass);

/* Runs a command popped from the inbox as the loop's pick when it can: the
 * loop calls it, on its owner thread, only with nothing else runnable (no
 * ordinary task ready, no provider task queued, no timer, no microtask).
 * It counts each task it runs with pts__inbox_pass_ran, its pick as
 * pts__provider_ops.run_next's (1 + the effective priority of the
 * provider's task it ran) or PTS__PICK_ORDINARY_TASK (an ordinary task of
 * the timer, message or generic source). Then it may go on with the
 * commands behind cmd, taken with pts__loop_inbox_next, in the same call:
 * one call per run of commands, not per command, is what keeps a stream's
 * per-task cost low. Returns NULL when it ran every command it took, or the
 * one it took and did not run (cmd itself if it ran nothing): the loop then
 * applies that one as usual, and the pass ends. */
typedef pts__command *(*pts__command_runner)(pts_loop *loop, pts__command *cmd,
                                             pts__inbox_pass *pass);
/* The pick of an ordinary task of the timer, message or generic source (the
 * FIFO class of docs/loop.md), above every provider pick. */
#define PTS__PICK_ORDINARY_TASK 18
/* Owner thread, before any command can arrive: the runner of the loop's
 * inbox (the agents layer's, for its plain postTasks and ordinary tasks), or
 * NULL. */
void pts__loop_set_command_runner(pts_loop *loop, pts__command_runner run);

/* ---- the task provider: how the scheduler plugs its queues in ---- */

/* Effective priorities 0..5 of spec section 2 (priority x continuation). */
typedef struct pts__provider_ops {
  /* The highest effective priority with a runnable task, or -1 if none; sets
   * *order to that task's enqueue order. Must not scan tasks. */
  int (*peek)(void *ctx, uint64_t *order);
  /* Run the most urgent task, the one peek would describe (the loop sets no
   * scheduling state: the task's steps do); return 1 + its effective
   * priority (1..6), or 0 if none is runnable. The loop runs the microtask
   * checkpoint after. When no ordinary task is ready the loop calls this
   * without peeking first (the hot path of docs/loop.md), so it must do its
   * own selection. */
  int (*run_next)(void *ctx);
  /* Run tasks as run_next does, one after another, while
   * pts__loop_burst_may_continue(loop) holds, with pts__loop_after_task
   * after each; return what the last run_next would have (0 if none ran).
   * The loop calls it after a task when only the provider has work. */
  int (*run_burst)(void *ctx);
  /* A global became active/inactive (what = 1/0) or was detached (what = -1). */
  void (*global_changed)(void *ctx, pts_global *g, int what);
  /* The loop is being freed: release everything (reject promises, free). */
  void (*destroy)(void *ctx);
} pts__provider_ops;

/* For run_burst: true while the provider's queues are all the work the loop
 * has (no inbox node, no armed timer, no ordinary task ready, no stop
 * requested); and the loop's step after each task (the checkpoint for the
 * microtasks its completion queued). */
bool pts__loop_burst_may_continue(pts_loop *loop);
void pts__loop_after_task(pts_loop *loop);

/* Installs the provider (once per loop; PTS_EBUSY if one is installed). */
int pts__loop_set_provider(pts_loop *loop, const pts__provider_ops *ops,
                           void *ctx);
/* Optional, after pts__loop_set_provider: the provider's word of levels,
 * bit p set iff a task of effective priority p is runnable (so peek's
 * answer is its highest bit). The post-step poll reads it instead of
 * calling peek; it must stay valid while the provider is installed. */
void pts__loop_set_provider_levels(pts_loop *loop, const uint32_t *levels);
void *pts__loop_provider_ctx(pts_loop *loop);

/* Per-global slot for the scheduler layer (NULL initially). */
void **pts__global_sched_slot(pts_global *g);

/* Allocation for per-task objects: a per-loop free-list pool of fixed-size
 * blocks so steady-state posting does not call malloc (size <= 128). */
void *pts__loop_pool_alloc(pts_loop *loop, size_t size);
void pts__loop_pool_free(pts_loop *loop, void *block, size_t size);

/* A promise embedded in a caller's pool block (the scheduler's promise-form
 * task handle: one block, one allocation per postTask). The block is
 * PTS__PROMISE_BLOCK bytes from the loop's pool; its first
 * PTS__PROMISE_OFFSET bytes are the caller's, the promise is the rest.
 * pts__promise_embed initialises the promise with one reference, the
 * caller's part's. pts__promise_drop_embedded gives that reference back
 * when the caller's part ends: true when it was the last one (the promise is
 * released and the caller reuses or frees the block); false when others
 * hold the promise, whose last unref then frees the whole block. */
#define PTS__PROMISE_OFFSET 64
#define PTS__PROMISE_BLOCK 128
pts_promise *pts__promise_embed(pts_loop *loop, void *block);
bool pts__promise_drop_embedded(pts_promise *p);
/* Resolve (or, for an error value, reject) with a callback's result: the
 * run path's form of pts_promise_resolve (owner already checked). */
void pts__promise_settle_result(pts_promise *p, pts_value v);


/* ---- driving a loop from a worker pool (agents/) ----
 *
 * A pool thread owns every loop placed on it and drives them step by step,
 * choosing between them by its inter-loop policy. These are owner-thread only
 * (after pts__loop_pool_attach on that thread) and never sleep.
 */

/* Claims the loop for the calling pool thread: it becomes the owner, and
 * pts_loop_run from anywhere returns PTS_EBUSY until pts__loop_pool_detach.
 * PTS_EBUSY if the loop is running. wake(ctx) replaces the loop's own parker
 * for wake-ups: producers call it after every push to the inbox and on
 * pts_loop_stop (it must be cheap and thread-safe). */
int pts__loop_pool_attach(pts_loop *loop, void (*wake)(void *ctx), void *ctx);
void pts__loop_pool_detach(pts_loop *loop);

/* Urgency classes of the next runnable task, most urgent highest. */
enum {
  PTS__URGENCY_NONE = 0, /* nothing runnable now */
  PTS__URGENCY_IDLE,     /* only idle callbacks */
  PTS__URGENCY_LOW,      /* scheduler effective priority 0-1 */
  PTS__URGENCY_FIFO,     /* timers, messages, generic, effective priority 2 */
  PTS__URGENCY_HIGH,     /* scheduler effective priority >= 3 */
  PTS__URGENCY_INPUT,    /* user input */
  PTS__URGENCY_COUNT
};

/* Applies pending inbox commands and fires due timers (no task runs), then
 * returns the urgency class of the next runnable task. With leave_inbox,
 * when the inbox is all the work there is, it is left to the next step (a
 * command runner's in-place path) and the urgency is PTS__URGENCY_FIFO: for
 * a caller with no other loop to rank this one against. */
int pts__loop_poll(pts_loop *loop, bool leave_inbox);
/* pts__loop_poll right after pts__loop_step, by a pool whose wake hook
 * polls again for any command pushed since (the wake protocol): the step
 * applied the inbox, fired due timers and ran the checkpoint, so unless the
 * inbox or the timer heap holds something, only the choice is made again
 * (the next task's urgency class). */
int pts__loop_poll_after_step(pts_loop *loop);
/* Runs at most one task and its microtask checkpoint (after the same inbox
 * and timer steps). Returns 1 if a task ran. */
int pts__loop_step(pts_loop *loop);
/* As pts__loop_step, for a caller with no other loop to turn to between
 * tasks: while the inbox is all the work there is, up to max of its
 * commands run in place in a row (the loop's message tasks and the command
 * runner's), one task each. counts[u] (PTS__URGENCY_COUNT entries) is
 * incremented for each task by its urgency class u. Returns the tasks run:
 * 0 when the inbox is not all the work, or when its next command is not
 * one to run in place (then it is applied with the rest, as a step does);
 * pts__loop_step is then the way on. */
uint32_t pts__loop_run_inbox(pts_loop *loop, uint32_t max, uint32_t *counts);
/* The urgency class (PTS__URGENCY_*) of the task the last step ran, or
 * PTS__URGENCY_NONE if it ran none: the class of each task, for statistics,
 * without a poll after every step. */
int pts__loop_last_urgency(const pts_loop *loop);
/* The most commands applied from the inbox in one pass (a poll or a step)
 * since the last call, then 0 again: the depth the inbox had, for the
 * statistics of a pool that does not poll after every step. */
uint32_t pts__loop_take_drained_max(pts_loop *loop);
/* Whether the inbox may hold a command (pts__mpsc_maybe_nonempty). Owner. */
bool pts__loop_inbox_maybe_nonempty(pts_loop *loop);
/* Earliest timer deadline in loop time (ns), or UINT64_MAX if none. */
uint64_t pts__loop_next_deadline(pts_loop *loop);
/* Consumes a pending pts_loop_stop() request; true if there was one. */
bool pts__loop_take_stop(pts_loop *loop);

#endif /* PTSCHED_LOOP_INTERNAL_H */
