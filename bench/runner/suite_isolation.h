/* bench/runner/suite_isolation.h: what the files of the isolation suite
 * (issue 32; described in suite_isolation.c) share, private to them: the
 * scenarios and their constants, the hostile tenants a run places (the
 * memory scenarios' in suite_isolation_memory.c, the hostile steps' in
 * suite_isolation_steps.c), one run (suite_isolation_run.c) and the
 * figures' helpers (here: static inline, small).
 *
 * Threads: the main thread, but for the tenants' tasks, which run on the
 * pool's threads (each tenant says which fields are whose).
 */
#ifndef PTS_BENCH_RUNNER_SUITE_ISOLATION_H
#define PTS_BENCH_RUNNER_SUITE_ISOLATION_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/runner/suites.h"
#include "ptsched.h"
#include "ptsched/agents.h"

#define WORK_NS 20000                 /* one step of nb0's chain */
#define PROBE_NS UINT64_C(1000000)     /* the driver's period */
#define WARM_NS UINT64_C(30000000)     /* from the start of a run to its window */
#define HOSTILE_NS UINT64_C(1000000000) /* the hog's and the blocked step's length */
#define WATCHDOG_NS UINT64_C(2000000)
#define BOMB_LIMIT (UINT64_C(64) << 20)
#define BOMB_SAFETY (4 * BOMB_LIMIT)    /* the runner's own stop of the bomb */
#define BOMB_SAFETY_TASKS 8000000u      /* and of its pending tasks */
#define BOMB_GROW_NS UINT64_C(2000000000) /* the longest the bomb's window waits */
#define BOMB_FANOUT 8                   /* posts per bomb task, half with a promise */
#define FLOOD_INBOX 1024u
#define FLOOD_BURST_NS 10000u         /* a turn of the flooder, the default quantum */
#define FLOOD_SAFETY 2000000u           /* admitted, not settled: the producer waits */
#define VICTIM_DELAY_MS 1
/* The victim's chains run side by side, so a window has this many times
 * more samples and its p99 is not the third-worst of 300 (one host
 * hiccup of a millisecond decided it). */
#define VICTIM_CHAINS 8

typedef enum scen { SC_BOMB = 0, SC_FLOOD, SC_HOG, SC_BLOCKED, SC_NONE_HOG, SC_CAPACITY, SC_NONE_BOMB, SC_NONE_FLOOD, SC_BUSY } scen;

/* ---- the hostile tenants ---- */

/* The bomb: every task posts BOMB_FANOUT more. Its counters are its thread's. */
typedef struct bomb {
  pts_agent *a;
  pts_scheduler *s;
  uint64_t ok, refused, other, calls;
  atomic_bool stop;
  atomic_uint refusals; /* 0 until its first refusal (for the driver) */
} bomb;

/* The flood: a hostile agent on thread 1 whose every task posts to the
 * victim for FLOOD_BURST_NS and then queues itself again, so it takes its
 * turns on thread 1 like any tenant; in the run without the flood it spins
 * for the same time without posting (post false). ok, refused and other are
 * its thread's; ran, settled and refused_applied the victim's. */
typedef struct flood {
  pts_agent *a, *victim;
  pts_scheduler *s;
  bool post;
  uint64_t ok, refused, other;
  int err;
  atomic_bool stop;
  RB_CONSUMER_SIDE atomic_uint_fast64_t ran, settled, refused_applied;
} flood;

/* The hog or the blocked step. */
typedef struct hog {
  bool sleep;
  atomic_uint_fast64_t t0, t1;
} hog;

/* Tasks that start the bomb and the flood (data: the bomb, the flood). */
void rb_iso_bomb_start(void *data, int status);
void rb_iso_flood_burst(void *data, int status);
/* The hostile step (data: the hog). */
pts_value rb_iso_hog_task(void *data, int status);
/* The watchdog's reports (pts_pool_options.on_long_task): counted in
 * rb_iso_long_reports, reset by each run. */
extern atomic_uint_fast64_t rb_iso_long_reports;
void rb_iso_on_long(void *data, pts_agent *agent, uint64_t running_ns);

/* The memory of the process (suite_isolation_memory.c): a field of
 * /proc/self/status in bytes, -1 if absent; VmHWM reset to the RSS (false
 * if not allowed); jemalloc's free pages given back. */
int64_t rb_iso_status_bytes(const char *field);
bool rb_iso_reset_peak(void);
void rb_iso_purge(void);

/* ---- one run ---- */

typedef struct run_out {
  double nb_p99_us, tput, victim_p99_us, window_s;
  double rss_growth; /* bytes: peak over the RSS before the hostile party */
  uint64_t posts, refused, refused_applied, other, unsettled;
  uint64_t st_refused, st_long, long_cb, st_inbox_max, st_bytes, st_pending;
  uint64_t lost, dup;
  bool capped, hwm;
} run_out;

/* One run of scenario s (suite_isolation_run.c); window_ns for the fixed
 * windows (all but hog and blocked, whose window is the hostile step).
 * Returns 0, or -1 when the pool or an agent could not be made or a chain
 * failed. */
int rb_iso_run_once(scen s, uint64_t window_ns, run_out *o);

/* ---- the figures ---- */

#define MAXRUNS 64

/* The samples of one figure over the runs. */
typedef struct series {
  double v[MAXRUNS];
  size_t n;
} series;

/* Per scenario: runs kept, failures, and the lost or duplicated tasks. */
typedef struct tally {
  unsigned ok, failed;
  uint64_t lost, dup;
} tally;

static inline void put(series *s, double v) {
  if (s->n < MAXRUNS) s->v[s->n++] = v;
}

static inline rb_metric *rec(rb_ctx *ctx, const char *key, const char *unit, const series *s,
                             const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Registers key (an info figure) with its note; NULL without samples. */
static inline rb_metric *rec(rb_ctx *ctx, const char *key, const char *unit, const series *s,
                             const char *fmt, ...) {
  if (s->n == 0) return NULL;
  rb_metric *m = rb_record(ctx, key, unit, RB_INFO, s->v, s->n);
  if (m == NULL) return NULL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->note, sizeof m->note, fmt, ap);
  va_end(ap);
  return m;
}

/* An issue 32 target on a recorded figure. */
static inline void target(rb_ctx *ctx, rb_metric *m, double t, bool higher, const char *text) {
  if (m == NULL) return;
  m->higher_better = higher;
  rb_target(ctx, m->key, t, text);
  rb_target_from(ctx, m->key, "issue 32");
}

static inline double one(rb_ctx *ctx, const char *key, const char *unit, double v,
                         const char *note) {
  series s = {{v}, 1};
  rec(ctx, key, unit, &s, "%s", note);
  return v;
}

/* rb_iso_run_once, counted in t; false if the run failed. */
static inline bool run_counted(scen s, uint64_t window_ns, run_out *o, tally *t) {
  if (rb_iso_run_once(s, window_ns, o) != 0) {
    t->failed++;
    return false;
  }
  t->ok++;
  t->lost += o->lost;
  t->dup += o->dup;
  return true;
}

static inline double ratio(double a, double b) { return b > 0 && a >= 0 ? a / b : -1; }
/* ---- the scenarios ---- */

/* bomb and flood (suite_isolation_memory.c): runs rounds of bomb, without,
 * busy, flood and without, and records their figures. */
void rb_iso_memory(rb_ctx *ctx, uint64_t win, int runs, tally *tb, tally *tf, tally *tn);
/* hog and blocked (suite_isolation_steps.c): hruns rounds of hog, without,
 * blocked and the one-thread capacity, and their figures. */
void rb_iso_steps(rb_ctx *ctx, uint64_t win, int hruns, tally *th, tally *tk, tally *tn,
                  tally *tc);

#endif /* PTS_BENCH_RUNNER_SUITE_ISOLATION_H */
