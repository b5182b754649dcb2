/* bench/runner/suites.h: the suites of ptsched-bench, in run order.
 *
 * Each suite measures through the harness (harness.h) and registers its
 * figures, comparisons, targets and plots; a part it cannot run is listed as
 * unavailable with the reason, never estimated. suite_loop.c holds the suites
 * on one loop (throughput, crossthread, yield, control, memory, latency);
 * suite_agents.c the parts on agents and the worker pool (crossthread via
 * agents, scale, latency per policy, fairness); suite_leak.c the hook of the
 * security study (issue 8).
 *
 * Threads: main thread only.
 */
#ifndef PTS_BENCH_RUNNER_SUITES_H
#define PTS_BENCH_RUNNER_SUITES_H

#include "bench/runner/harness.h"

#ifdef __cplusplus
extern "C" {
#endif

void rb_suite_throughput(rb_ctx *ctx);
void rb_suite_crossthread(rb_ctx *ctx);
void rb_suite_yield(rb_ctx *ctx);
void rb_suite_control(rb_ctx *ctx);
void rb_suite_memory(rb_ctx *ctx);
void rb_suite_latency(rb_ctx *ctx);

/* Agents (suite_agents.c). The _part functions are the agents halves of
 * suites that also run on one loop. */
void rb_agents_crossthread_part(rb_ctx *ctx);
void rb_agents_latency_part(rb_ctx *ctx);
void rb_suite_scale(rb_ctx *ctx);
void rb_suite_fairness(rb_ctx *ctx);

/* The balance suite (suite_balance.c, issue 17): skewed and even load on
 * two pool threads with the balancer on and off. */
void rb_suite_balance(rb_ctx *ctx);

/* The host suite (suite_host.c, issue 33): the same JS workloads in
 * ptsched-host, in Node with the ptsched binding and in Node with
 * scheduler-polyfill, each run a child process. After balance, whose
 * balance.capacity.ratio sets its two-thread target. */
void rb_suite_host(rb_ctx *ctx);

/* The isolation suite (suite_isolation.c, issue 32): a memory bomb, an
 * inbox flood, a 1 s CPU hog and a 1 s blocked task, each against
 * well-behaved neighbours on two pool threads, with and without the hostile
 * party interleaved. */
void rb_suite_isolation(rb_ctx *ctx);

/* The leak suite of the security study (suite_leak.c). Issue 8 plugs its
 * measurement in with rb_leak_register() before the suites run; until it
 * does, the suite reports "not available" and produces no figure. The hook
 * registers leak.<policy>.s1_bits_per_window and
 * leak.<policy>.s2_bits_per_window (bits per observation window) through
 * rb_record()/rb_measure(), and may add plots with rb_plot_add(). */
typedef void (*rb_leak_fn)(rb_ctx *ctx);
void rb_leak_register(rb_leak_fn fn);
void rb_suite_leak(rb_ctx *ctx);

/* Helpers shared by the latency scenarios (latency.c). */

/* Writes the CDF of delays (ns, sorted ascending) as "us fraction" lines to
 * DIR/data/<name>. */
void rb_write_cdf(rb_ctx *ctx, const char *name, const double *sorted,
                  size_t n);

/* One latency run: up to k start delays (ns) into d, within the wall-time
 * budget rb_lat_budget_ns (peers.h); returns how many, or -1. */
typedef int (*rb_lat_fn)(uint64_t bg_ns, uint64_t gap_ns, double *d, size_t k);
typedef struct lat_sys {
  const char *scenario; /* latency.<scenario>.p50_us|p99_us|p999_us|samples */
  rb_role role;
  rb_lat_fn fn;
  const char *cdf; /* data file of the pooled CDF */
} lat_sys;

/* Runs latency scenarios interleaved (a short warm-up each, then run 1 of
 * each, run 2 of each, ...), registers p50/p99/p99.9 in us (one value per
 * run) and the number of delays pooled, and writes each pooled CDF. ok[i]
 * tells which succeeded (the others are listed as unavailable). */
void rb_lat_measure(rb_ctx *ctx, const lat_sys *sys, size_t nsys,
                    uint64_t bg_ns, uint64_t gap_ns, size_t k, bool *ok);

#ifdef __cplusplus
}
#endif
#endif /* PTS_BENCH_RUNNER_SUITES_H */
