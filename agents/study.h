/* agents/study.h: what the agents layer offers the security study (issue 8)
 * beyond the public API: the quantized policy's knobs (its frame, epoch and
 * padded pass; the policy itself is public since 5.2, PTS_POLICY_QUANTIZED)
 * and a virtual pool thread that drives the real policy code and real loops
 * in virtual time with a cost model, so leakage and cost are exact and
 * reproducible (docs/security.md).
 *
 * Threads: pts__pool_new_ext as pts_pool_new. A virtual thread and its loops
 * belong to the thread that created them; nothing in it is thread-safe.
 */
#ifndef PTSCHED_AGENTS_STUDY_H
#define PTSCHED_AGENTS_STUDY_H

#include <stdbool.h>
#include <stdint.h>

#include "ptsched/agents.h"
#include "ptsched/loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Quantized partitioning (docs/security.md, "the quantized policy"): a fixed
 * frame of equal slots; each slot belongs to one agent and an idle slot stays
 * idle. An agent's number of slots per frame takes one of two levels (low:
 * one slot; high: an equal share of what the low agents leave), decided only
 * at epoch boundaries from the CPU time the agent used in the epoch before
 * (with hysteresis); an agent's slots are one contiguous run per frame.
 * Within an epoch nothing another agent does moves a boundary or fills a
 * slot; across epochs each co-located agent can reveal at most one bit (its
 * level) per epoch. A step starts only if the owner's run has at least the
 * agent's guard left (the 95th percentile of its step lengths in the
 * current or the last epoch, plus half, capped at 7/8 of the run), so steps
 * do not overrun into another agent's slot unless they are among the
 * agent's longest 1 in 20. A percentile, not the maximum: on the real clock
 * 1-3% of 20 us steps take 20-60 us longer (preemption, VM steal) and a
 * maximum would learn those (docs/security.md, "the guard"). */
/* On the real clock a step of a long-step agent in a one-slot run can begin
 * only in the first slot - guard of it (31 us with the cap), while a timed park
 * wakes 50-250 us late (timer slack, VM), so the pool thread parks until a
 * little before a boundary whose owner has work and spins to it (worker.c,
 * idle): the owner's step then starts in its slot. pts__quant_owner_ready
 * tells whether the slot starting at t has an owner with work (owner thread
 * of w only).
 * Polls wait for the agent's slot: applying an agent's cross-thread
 * commands or due timers takes the pool thread's time, so a poll in another
 * agent's slot would take that agent's time (the flood attacker on the real
 * clock counted it: 0.019 bit/window on S1). The pool marks such an agent
 * stale (q_stale) and polls it when its own slot begins. */
#define PTS__Q_MAX_SLOTS 256
/* Step-length histogram of the guard: 8 buckets per octave from 1 us
 * (2^10 ns) to 2^26 ns (67 ms); longer steps fall in the last bucket. */
#define PTS__Q_HIST_BUCKETS 128

/* The padded pass (round 2, real clock; docs/security.md, "the residual"):
 * another agent's cross-thread post reached the pool thread in the slot's
 * owner's time (the wake-up queue's pop, its cache misses, a spin cut
 * short), and an attacker measured it: a victim whose tasks did no work at
 * all still leaked 0.014-0.07 bit/window on S1. So while the slot's owner
 * has work, the pool thread does not look at the wake-up queue or the
 * timers; it reads them once at the first pass of each run of an owner's
 * consecutive slots, in a pass padded to a fixed length (pad_ns), and
 * whenever the owner has nothing to run (its time is idle anyway). Round 3:
 * once per run, not per slot: inside a run a pass serves nobody (the
 * owner's own commands come with its polls after each step, another
 * agent's wait for that agent's own slot), and 14 passes a frame cost 0.7%
 * of the thread. Another agent's command waits at most one frame. */
#define PTS__Q_PAD_NS 2000u

typedef struct pts__quant_options {
  uint64_t slot_ns;      /* 0 = 250 us */
  uint32_t frame_slots;  /* 0 = 16 (frame 4 ms); at most PTS__Q_MAX_SLOTS */
  uint32_t epoch_frames; /* 0 = 250 (epoch 1 s with the defaults) */
  uint64_t pad_ns;       /* the run-start pass's length; 0 = PTS__Q_PAD_NS */
  bool no_hold;          /* round 1: read the queues at every pass (experiments) */
} pts__quant_options;

struct pts__worker;
struct pts_agent;
bool pts__quant_owner_ready(const struct pts__worker *w, uint64_t t);
/* The owner of the slot containing now (NULL: no agent); rolls the epoch
 * over when now has passed it, as a pick would. Owner thread of w only. */
struct pts_agent *pts__quant_owner(struct pts__worker *w, uint64_t now);

/* The number (since the frame origin) of the first slot of the owner's run
 * that contains now: the padded pass comes once per run (UINT64_MAX: no
 * agent, or before the origin). A lone agent's run is one slot here, so
 * some pass comes at least once per frame. Rolls the epoch over as a pick
 * would. Owner thread of w only. */
uint64_t pts__quant_run(struct pts__worker *w, uint64_t now);

/* Whether the agent's wake-up node is still on its worker's queue (posted,
 * not yet popped): tests read it to check the padded pass's hold. Any
 * thread (one seq_cst load). */
bool pts__agent_signal_pending(const struct pts_agent *a);

/* pts_pool_new with the quantized policy's knobs; q may be NULL (the
 * defaults, as pts_pool_new: slot_ns from opts). Same ownership and errors
 * as pts_pool_new. */
int pts__pool_new_ext(const pts_pool_options *opts, const pts__quant_options *q,
                      pts_pool **out);

/* ---- the virtual pool thread ----
 *
 * One simulated pool thread: the worker loop itself (worker.c, the same
 * code a pool thread runs, with its policy) over real loops, run on the
 * calling thread in virtual time (vthread.c says what it replaces). The
 * cost model: a step costs step_overhead_ns plus whatever the task charged
 * with pts__vthread_charge(); time stands still otherwise. A turn is one
 * step (the quantum's 1), every step is timed, and quantized's padded pass
 * is not modelled (no_hold: there is no wake-up queue to hold).
 * External activity (a harness posting into the loops) comes from an event
 * hook the driver calls at the virtual times it asks for.
 *
 * Time: tasks read it with pts__vthread_clock(). The loops' own virtual
 * clocks are not moved (pts_loop_advance would run tasks outside the
 * policy), so delayed tasks and timers do not fire in a virtual thread:
 * workloads use the event hook instead.
 */
typedef struct pts__vthread pts__vthread;

typedef struct pts__vthread_options {
  int policy;                /* a pts_policy */
  uint64_t seed;             /* randomized */
  uint64_t slot_ns;          /* time-partitioned; 0 = 1 ms */
  pts__quant_options quant;  /* quantized */
  uint64_t step_overhead_ns; /* added to every step */
  uint32_t max_agents;       /* 0 = 16 */
} pts__vthread_options;

int pts__vthread_new(const pts__vthread_options *opts, pts__vthread **out);
/* Frees the loops (pending work released as by pts_loop_free) and the thread. */
void pts__vthread_free(pts__vthread *t);
/* Adds an agent with the given weight (0 = 1) and a new loop owned by the
 * caller; *loop is borrowed (lives until pts__vthread_free). Returns the
 * agent's index (placement order) or a negative PTS_E* code. */
int pts__vthread_add(pts__vthread *t, uint32_t weight, pts_loop **loop);
uint64_t pts__vthread_now(const pts__vthread *t);

/* From inside a task of a virtual thread: the task costs ns more. */
void pts__vthread_charge(uint64_t ns);
/* From inside a task: the virtual time now (step start + charged so far);
 * outside any step: the time of the running virtual thread, or 0. */
uint64_t pts__vthread_clock(void);

/* Called at virtual time now (>= the time it last asked for); may post into
 * the thread's loops; returns the next time it wants, UINT64_MAX for never. */
typedef uint64_t (*pts__vthread_event_fn)(void *ctx, uint64_t now);
/* Installs the hook; it is first called at the current time. */
void pts__vthread_set_events(pts__vthread *t, pts__vthread_event_fn fn, void *ctx);
/* Runs until virtual time end_ns (a step that starts before end runs whole,
 * so the clock may end a little past it). 0 or a negative PTS_E* code. */
int pts__vthread_run(pts__vthread *t, uint64_t end_ns);
/* Steps taken and virtual ns spent in steps, per agent index. */
uint64_t pts__vthread_busy_ns(const pts__vthread *t, int agent);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_AGENTS_STUDY_H */
