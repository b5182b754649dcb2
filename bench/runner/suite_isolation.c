/* bench/runner/suite_isolation.c: the isolation suite (issue 32). What one
 * hostile tenant can do to the others, and to the process, on a pool of two
 * threads (round-robin), each scenario against the same set-up without the
 * hostile party, the runs interleaved (with, without, with, ...), a fresh
 * pool each run.
 *
 * The well-behaved neighbours are two agents: nb0 runs a chain of tasks of
 * a fixed computation calibrated to 20 us (each posting the next on its own
 * scheduler), so it takes a whole thread; nb1 is light. The main thread
 * (the driver) posts a probe task to each every millisecond
 * (pts_agent_post_task_req, user-visible) and a probe's start delay is from
 * its post to its start. Placement, explicit:
 *   - bomb, flood: the hostile tenant (or the flood's victim) alone on
 *     thread 0, nb0 and nb1 on thread 1, balancing off: a memory or inbox
 *     attack is measured apart from the CPU share of a shared thread (which
 *     the inter-loop policy decides; fairness suite);
 *   - hog, blocked: the hostile tenant and nb0 on thread 0, nb1 on thread 1,
 *     balancing on and the watchdog at 2 ms: nb0 is stuck behind the
 *     hostile step until the pool moves it.
 * The scenarios:
 *   1. bomb: a tenant whose every task posts eight more (half promise form,
 *      half callback form), so its pending tasks and memory grow as fast as its
 *      thread can post, with limits.bytes = 64 MiB. The process's RSS is
 *      sampled every millisecond and its peak (VmHWM after clear_refs, or
 *      the samples) is compared with the RSS before the bomb, jemalloc's
 *      free pages purged first. While the library does not enforce the
 *      limit, the runner stops the bomb at 4x the limit (a safety stop,
 *      counted in isolation.bomb.capped). The neighbours' window opens
 *      when the bomb is at its limit (its first PTS_EQUOTA; at most 2 s).
 *      A third run per round puts a tenant that only spins on thread 0
 *      (the bomb's CPU without its memory): on two shared cores a busy
 *      thread costs the neighbours' thread whatever it does.
 *   2. flood: a hostile agent on thread 1 (sharing it with the neighbours
 *      by turns, as a tenant does) posts background tasks to the victim
 *      (pts_agent_post_task) as fast as it can, with the victim's
 *      limits.inbox = 1024; the victim's own tasks (8 chains side by side,
 *      each task posting the next with a 1 ms delay) are timed from their
 *      due time to their start. In the run without the flood the same agent spins for its
 *      turns without posting, so thread 1's load is the same and the ratio
 *      is the posts' effect (a producer outside the pool would take a core
 *      of the two from the pool's threads whatever it posts).
 *   3. hog: a hostile task spinning 1 s; 4. blocked: one in nanosleep 1 s.
 *      Measured over the hostile step (from its start to its end); the run
 *      without it, and the capacity run (both neighbours on a one-thread
 *      pool), over the same window as bomb and flood.
 * Every well-behaved task (chain tasks, probes, the victim's tasks) has a
 * per-task count of runs: posted and never run is lost, run twice is
 * duplicated (isolation.lost_or_duplicated, over every run).
 *
 * Files: this one holds the suite's order and the tally of lost tasks; one
 * run is in suite_isolation_run.c, the bomb and the flood in
 * suite_isolation_memory.c, the hog and the blocked step in
 * suite_isolation_steps.c (suite_isolation.h between them).
 *
 * Threads: the suite runs on the main thread; the tasks on the pool's
 * threads write only their own records, read by the main thread after
 * pts_agent_drain or pts_agent_destroy(wait) has returned.
 */
#include <stdio.h>

#include "bench/runner/suite_isolation.h"

/* ---- the suite ---- */

/* Lost or duplicated well-behaved tasks, every run. */
static void lost_or_duplicated(rb_ctx *ctx, const tally *tb, const tally *tf, const tally *th,
                               const tally *tk, const tally *tn, const tally *tc) {
  const struct {
    const char *name;
    const tally *t;
  } ts[] = {{"bomb", tb}, {"flood", tf}, {"hog", th}, {"blocked", tk},
            {"without", tn}, {"capacity_1t", tc}};
  uint64_t sum = 0;
  unsigned failed = 0;
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
    char key[RB_KEY_MAX], note[200];
    if (ts[i].t->ok == 0) continue;
    uint64_t x = ts[i].t->lost + ts[i].t->dup;
    sum += x;
    failed += ts[i].t->failed;
    snprintf(key, sizeof key, "isolation.%s.lost_or_duplicated", ts[i].name);
    snprintf(note, sizeof note, "over %u runs: %llu lost, %llu run twice (chain tasks, probes, "
             "the victim's tasks)", ts[i].t->ok, (unsigned long long)ts[i].t->lost,
             (unsigned long long)ts[i].t->dup);
    one(ctx, key, "count", (double)x, note);
  }
  if (tb->ok + tf->ok + th->ok + tk->ok > 0) {
    series s = {{(double)sum}, 1};
    target(ctx, rec(ctx, "isolation.lost_or_duplicated", "count", &s,
                    "well-behaved tasks posted and never run, or run twice, summed over every run "
                    "of every scenario, with and without the hostile party (%u runs failed and are "
                    "not counted)", failed),
           0, false, "0 tasks lost or run twice");
  }
}

void rb_suite_isolation(rb_ctx *ctx) {
  rb_work_calibrate(WORK_NS);
  uint64_t win = ctx->opt.quick ? UINT64_C(100000000) : UINT64_C(300000000);
  int runs = ctx->runs < MAXRUNS ? ctx->runs : MAXRUNS;
  /* A hog or blocked run takes over a second: three rounds by default (one
   * with --quick), else what --runs asks. */
  int hruns = ctx->opt.quick ? 1 : ctx->runs == RB_DEFAULT_RUNS ? 3 : runs;
  rb_progress(ctx, "2 threads, round-robin; bomb and flood: %d rounds of %.0f ms windows, "
              "with and without interleaved; hog and blocked (1 s each, balancing and a 2 ms "
              "watchdog): %d rounds, with the run without and the 1-thread capacity",
              runs, (double)win / 1e6, hruns);
  run_out w;
  tally tb = {0}, tf = {0}, th = {0}, tk = {0}, tn = {0}, tc = {0}, tw = {0};
  (void)run_counted(SC_NONE_BOMB, win / 2, &w, &tw); /* warm-up, not reported */
  rb_iso_memory(ctx, win, runs, &tb, &tf, &tn);
  rb_iso_steps(ctx, win, hruns, &th, &tk, &tn, &tc);
  lost_or_duplicated(ctx, &tb, &tf, &th, &tk, &tn, &tc);
}
