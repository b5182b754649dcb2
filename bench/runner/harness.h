/* bench/runner/harness.h: the measuring harness of ptsched-bench.
 *
 * It owns the run context: the options, the registry of figures (one per
 * result key, with every measured sample), the comparisons between a ptsched
 * figure and its floor and peers, the targets (issue 12's, and the earlier
 * ones it does not supersede) with where each comes from, the suites that
 * could not run and why, and the plots. Suites measure through rb_measure()
 * (one discarded warm-up, then ctx->runs samples around large batches, timed
 * with CLOCK_MONOTONIC) or record samples they gathered themselves with
 * rb_record(). output.c turns the registry into the terminal table,
 * results.json, results.csv, the plots and report.md.
 *
 * Threads: the context belongs to the main thread; suites call these
 * functions from it only (their worker threads never touch the context).
 */
#ifndef PTS_BENCH_RUNNER_HARNESS_H
#define PTS_BENCH_RUNNER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/runner/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a figure is: the system under test, a peer library or a floor. */
typedef enum rb_role { RB_PTSCHED = 0, RB_PEER, RB_FLOOR, RB_INFO } rb_role;

#define RB_MAX_PEERS 4
typedef struct rb_metric {
  char key[RB_KEY_MAX];
  char unit[16];
  rb_role role;
  bool higher_better; /* e.g. Jain's index; most figures are costs */
  double *samples;
  size_t nsamples;
  rb_summary sum;
  /* Comparisons (ptsched figures): keys of the floor and of the peers. */
  char floor_key[RB_KEY_MAX];
  char peer_keys[RB_MAX_PEERS][RB_KEY_MAX];
  int npeers;
  /* A target (has_target): the median must be <= target (or >= for
   * higher_better); target_text says it in words, target_from whose target
   * it is ("issue 12", "issue 7", ...). */
  bool has_target;
  double target;
  char target_text[96];
  char target_from[32];
  char note[240];
} rb_metric;

typedef struct rb_unavailable {
  char what[64];
  char why[200];
} rb_unavailable;

typedef struct rb_plot {
  char name[64];   /* file stem: DIR/<name>.png and .svg */
  char title[120];
  char *script;    /* gnuplot commands after the terminal/output lines */
} rb_plot;

typedef struct rb_ctx {
  rb_options opt;
  int runs;         /* measured runs per figure */
  double size;      /* batch size multiplier: 1 default, smaller with --quick */
  char outdir[1600];
  char datadir[1700];
  char workspace[1024]; /* where git runs; "" if unknown */
  rb_metric *metrics;
  size_t nmetrics, capmetrics;
  rb_unavailable unavailable[32];
  size_t nunavailable;
  rb_plot plots[32];
  size_t nplots;
  const char *suite; /* the suite running now (progress lines) */
  double t_start;
} rb_ctx;

/* ---- time ---- */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t rb_now_ns(void);
/* Busy-waits about ns nanoseconds (a task's simulated work). */
void rb_spin_ns(uint64_t ns);
/* Sleeps ns nanoseconds (restarted after a signal). */
void rb_sleep_ns(uint64_t ns);
/* A fixed computation (no clock read, no memory traffic) that takes about
 * the ns given to rb_work_calibrate on this machine: a task's work whose
 * length does not depend on when it is preempted, unlike rb_spin_ns. The
 * calibration keeps the fastest of 20 timings (a preempted one is slower,
 * never faster); call it once, before the threads that work start. */
void rb_work_calibrate(uint64_t ns);
void rb_work(void);
/* Marks the first of the fields a stream's consuming thread writes on every
 * task (its counters): they start a cache line of their own, and the struct
 * ends on a line boundary, so nothing the posting thread reads shares a line
 * with them. Without it the poster's per-post read of the run's length next
 * to the consumer's count moved that line between the cores on every task:
 * the harness's own false sharing, which made crossthread.post 1.6x slower
 * (docs/benchmarks.md, "How it measures"). Every cross-thread stream that
 * counts in a struct the poster can see uses it, ours and the peers' alike;
 * the MPSC floor's consumer counts on its own stack. */
#define RB_CONSUMER_SIDE _Alignas(64)
/* Cross-thread streams, ptsched's and the peers' alike, run with producer
 * and consumer on two different CPUs when the process may use two or more
 * (issue 30): the VM's scheduler otherwise sometimes put both on one core
 * and the figure read 1x or 2x from run to run. rb_pin_begin pins the
 * calling (producing) thread to the first CPU of the process's set and
 * returns false if there is no second; until rb_pin_end (which restores
 * the caller's set) rb_pin_consumer pins its calling thread to the second.
 * Peers' and ptsched's consumer threads call it first thing. */
bool rb_pin_begin(void);
void rb_pin_consumer(void);
void rb_pin_end(void);
/* Waits until *ready is set by a consumer thread about to enter its loop,
 * then 1 ms more so it parks: the first post then measures a wake-up. */
void rb_wait_ready(atomic_int *ready);
/* Registers the measured runs of a stream's sides (core.h, rb_sides) as
 * <stream>.producer_ns_per_post and <stream>.consumer_ns_per_task
 * (information), then frees them. */
void rb_sides_record(rb_ctx *ctx, rb_sides *s, const char *stream);
/* Scales a batch size by ctx->size, at least lo. */
size_t rb_n(const rb_ctx *ctx, size_t n, size_t lo);

/* ---- measuring ---- */

/* One sample: runs a batch and returns the figure (e.g. ns per task), or a
 * negative value when the scenario failed (reported, figure dropped). */
typedef double (*rb_sample_fn)(void *arg);

/* Warm-up (discarded), then ctx->runs samples; registers key with their
 * median/min/max. Returns the metric, or NULL when the scenario failed (then
 * listed as unavailable with a reason). */
rb_metric *rb_measure(rb_ctx *ctx, const char *key, const char *unit,
                      rb_role role, rb_sample_fn fn, void *arg);

/* A scenario of a comparison group. */
typedef struct rb_spec {
  const char *key;
  const char *unit;
  rb_role role;
  rb_sample_fn fn;
  void *arg;
} rb_spec;

/* Measures scenarios that are compared with each other (ptsched, its floor
 * and its peers) interleaved: every warm-up first, then run 1 of each, run 2
 * of each, ... so a change in machine load between runs hits all of them
 * alike and their ratios stay honest. A scenario that fails is dropped (and
 * listed as unavailable); the others go on. */
void rb_measure_group(rb_ctx *ctx, const rb_spec *specs, size_t n);

/* Registers key with samples gathered by the suite (copied). */
rb_metric *rb_record(rb_ctx *ctx, const char *key, const char *unit,
                     rb_role role, const double *samples, size_t n);

rb_metric *rb_find(rb_ctx *ctx, const char *key);

/* The figure's floor and peers (NULL-terminated list; keys may be missing at
 * output time, they are then skipped). */
void rb_compare(rb_ctx *ctx, const char *key, const char *floor_key, ...);
void rb_target(rb_ctx *ctx, const char *key, double target, const char *text);
/* Where key's target comes from, shown in the report's targets table. */
void rb_target_from(rb_ctx *ctx, const char *key, const char *from);
/* A ratio: registers ratio_key, an info figure (unit "ratio") equal to the
 * median of num_key over the median of den_key (both from this run), with a
 * note naming the two figures. Returns the metric, or NULL when either figure
 * is missing (then nothing is registered). */
rb_metric *rb_ratio_info(rb_ctx *ctx, const char *ratio_key, const char *num_key,
                         const char *den_key);
/* A ratio target: rb_ratio_info, with the target "<= target" described by
 * text, from `from` (a missing figure registers nothing: the target is not
 * judged on made-up data). */
rb_metric *rb_ratio_target(rb_ctx *ctx, const char *ratio_key,
                           const char *num_key, const char *den_key,
                           double target, const char *text, const char *from);
void rb_note(rb_ctx *ctx, const char *key, const char *fmt, ...);

/* A suite or scenario that did not run, and why (printed, in JSON and report). */
void rb_unavailable_add(rb_ctx *ctx, const char *what, const char *fmt, ...);

/* A progress line on stderr ("[suite] text", with elapsed time). */
void rb_progress(rb_ctx *ctx, const char *fmt, ...);

/* Opens DIR/data/<name> for writing plot data (NULL on failure). */
FILE *rb_data_open(rb_ctx *ctx, const char *name);
/* Adds a plot; script is copied (printf-formatted). */
void rb_plot_add(rb_ctx *ctx, const char *name, const char *title,
                 const char *fmt, ...);

/* jemalloc's "stats.allocated" after refreshing "epoch": bytes the program
 * holds. Returns -1 when jemalloc's statistics are not available. */
int64_t rb_allocated_bytes(void);

/* jemalloc's per-thread counter of the bytes the calling thread has
 * allocated so far ("thread.allocatedp": every malloc, calloc, realloc and
 * aligned allocation it served on this thread, counted at the size class
 * it returned, frees not subtracted). A pointer into the thread's own
 * state, so a read is a load, not a call; cached per thread after the first
 * call. Read it on the calling thread only. NULL when jemalloc's statistics
 * are not available (or another allocator serves malloc, e.g. under the
 * sanitizer configs, where it reads 0). */
const volatile uint64_t *rb_thread_allocatedp(void);

/* Bytes allocated per task over the timed part of a run of `tasks` tasks:
 * `posting` bytes counted on the posting thread, `consuming` on the thread
 * that ran the tasks (NAN when it is the same thread). Registers key (unit
 * "B", an info figure, their sum / tasks) with issue 12's target 0 and a
 * note giving the totals and `what` was counted. A negative count means a
 * counter was not available: the key is listed as such instead. */
void rb_record_alloc(rb_ctx *ctx, const char *key, double posting, double consuming,
                     size_t tasks, const char *what, bool target);

/* ---- output (output.c) ---- */

void rb_print_table(rb_ctx *ctx, FILE *f);
int rb_write_outputs(rb_ctx *ctx, int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* PTS_BENCH_RUNNER_HARNESS_H */
