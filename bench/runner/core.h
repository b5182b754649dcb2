/* bench/runner/core.h: the pure parts of the benchmark runner.
 *
 * Everything here is free of clocks, threads and I/O so tests/runner/ can
 * check it under every sanitizer: the summary of repeated runs (median, min,
 * max), percentiles, Jain's fairness index, ratios and targets, the
 * result-key format ("suite.scenario.figure"), JSON string escaping and
 * command-line parsing.
 * The runner itself (harness.c, suites) builds on it.
 *
 * Threads: every function is reentrant; none keeps state.
 */
#ifndef PTS_BENCH_RUNNER_CORE_H
#define PTS_BENCH_RUNNER_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- summaries ---- */

typedef struct rb_summary {
  double median, min, max;
  size_t n;
} rb_summary;

/* Median (mean of the two middle values for an even count), min and max of
 * v[0..n). v is not modified. Returns 0, or -1 when n == 0 or v is NULL (out
 * is then zeroed). */
int rb_summarize(const double *v, size_t n, rb_summary *out);

/* The p-quantile (0 <= p <= 1) of an ascending array by the nearest-rank
 * method: the smallest value with at least p * n values at or below it.
 * n == 0 gives 0. */
double rb_percentile_sorted(const double *sorted, size_t n, double p);

/* Sorts v[0..n) ascending in place. */
void rb_sort(double *v, size_t n);

/* Jain's fairness index (Jain, Chiu, Hawe, DEC-TR-301, 1984):
 * (sum x)^2 / (n * sum x^2). 1 when every x is equal, 1/n when one takes all.
 * Returns -1 for n == 0, NULL, a negative x or an all-zero x. */
double rb_jain_index(const double *x, size_t n);

/* Jain's index of normalised throughputs: x_i = share_i / weight_i, where
 * share_i = used_i / sum(used) and weight_i is normalised the same way. Same
 * errors as rb_jain_index, plus a non-positive weight. */
double rb_weighted_jain(const double *used, const double *weight, size_t n);

/* ---- ratios and targets ---- */

/* num / den of two medians of the same run into *out. Returns 0, or -1 (out
 * untouched) when either is not finite or den is not positive: a ratio over
 * a missing or zero figure is not made up. */
int rb_ratio(double num, double den, double *out);

/* Whether a median meets its target: median <= target for a cost,
 * median >= target for a higher-is-better figure (e.g. Jain's index). */
bool rb_target_met(double median, double target, bool higher_better);

/* The status of a target as the report prints it: "ok (<=T)" (">=T" for
 * higher_better), or "MISSED by D unit (P%)" where D is the distance to the
 * target and P it over the target, two significant digits below 10% (P is
 * left out for a target of 0, e.g. "0 bytes allocated"). Always
 * NUL-terminates buf (size > 0). */
void rb_target_status(char *buf, size_t size, double median, double target,
                      bool higher_better, const char *unit);

/* ---- a stream's two sides (crossthread) ---- */

/* A cross-thread stream's producer and consumer, timed apart in every run:
 * the producer's ns per post over its posting loop alone, and the
 * consumer's ns per task from its first task to its last. The side whose
 * figure is the stream's own is its bottleneck (docs/benchmarks.md,
 * crossthread). Zero-initialised before the first run. */
typedef struct rb_sides {
  double *producer, *consumer;
  size_t n, cap;
} rb_sides;

/* Adds one run: its first post (t0), the end of its posting loop, its
 * first and last task (ns, one clock) and its length. Returns 0, or -1
 * (nothing added) when tasks is 0, the times are out of order or memory
 * runs out. */
int rb_sides_add(rb_sides *s, uint64_t t0, uint64_t posted, uint64_t first, uint64_t end,
                 size_t tasks);
/* The measured runs: every run but the first, the warm-up (the runner's
 * groups run one discarded warm-up each, rb_measure_group). Returns their
 * count and points *producer and *consumer at them (valid until the next
 * add or free); 0 when there is none. */
size_t rb_sides_measured(const rb_sides *s, const double **producer, const double **consumer);
void rb_sides_free(rb_sides *s);

/* ---- result keys ---- */

/* A key is "suite.scenario.figure", or "suite.figure" for a figure of the
 * whole suite (e.g. balance.move_cost_us): three or two non-empty parts of
 * [a-z0-9_], separated by dots, at most RB_KEY_MAX - 1 characters. */
#define RB_KEY_MAX 96
bool rb_key_valid(const char *key);
/* Writes "suite.scenario.figure" to buf; returns 0, or -1 when the result
 * would not be a valid key or does not fit (buf then holds ""). */
int rb_key_make(char *buf, size_t size, const char *suite,
                const char *scenario, const char *figure);
/* Copies s to buf with every character outside [a-z0-9_] mapped to '_'
 * (upper case lowered), e.g. "round-robin" -> "round_robin". */
void rb_key_part(char *buf, size_t size, const char *s);

/* ---- JSON ---- */

/* Writes s as a JSON string literal (quotes included) into buf. Returns the
 * length written (without the NUL), or -1 if it does not fit. */
int rb_json_string(char *buf, size_t size, const char *s);

/* ---- options ---- */

#define RB_MAX_SUITES 16
/* The suites in the order a run executes them. */
extern const char *const rb_suite_names[];
extern const size_t rb_suite_count;
/* Index of a suite name, or -1. */
int rb_suite_index(const char *name);

typedef struct rb_options {
  bool suites[RB_MAX_SUITES]; /* which suites to run (all by default) */
  bool quick;                 /* --quick: CI smoke, a few seconds */
  bool long_run;              /* --long: the leak suite's long mode (minutes) */
  int runs;                   /* --runs N: measured runs after one warm-up */
  const char *out;            /* --out DIR, or NULL for the default */
  bool list;                  /* --list: print the suites and exit */
  bool help;                  /* --help */
  bool no_plots;              /* --no-plots */
} rb_options;

/* Default runs per figure (after the discarded warm-up). */
#define RB_DEFAULT_RUNS 5
#define RB_QUICK_RUNS 3
#define RB_MAX_RUNS 1000

/* Parses argv[1..argc). Accepts --suite A[,B...] (repeatable; also
 * --suite=A), --quick, --long, --runs N (1..RB_MAX_RUNS), --out DIR, --list,
 * --no-plots, --help/-h. Returns 0, or -1 with a sentence in err. Strings in
 * out point into argv. */
int rb_parse_options(int argc, char *const *argv, rb_options *out, char *err,
                     size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* PTS_BENCH_RUNNER_CORE_H */
