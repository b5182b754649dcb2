/* bench/runner/suite_isolation_steps.c: the isolation suite's hostile steps
 * (suite_isolation.c): a task spinning 1 s (hog) and one blocked 1 s in
 * nanosleep (blocked), beside the busy neighbour on thread 0, with
 * balancing and the watchdog on; each round also runs the set-up without
 * the step and the one-thread capacity the neighbours are held to.
 */
#include <stdio.h>
#include <string.h>

#include "bench/runner/suite_isolation.h"

/* ---- the hostile step ---- */

/* Spins or sleeps HOSTILE_NS, noting its start and end for the driver. */
pts_value rb_iso_hog_task(void *data, int status) {
  hog *h = data;
  if (status != 0) return pts_undefined();
  atomic_store(&h->t0, rb_now_ns());
  if (h->sleep) rb_sleep_ns(HOSTILE_NS);
  else rb_spin_ns(HOSTILE_NS);
  atomic_store(&h->t1, rb_now_ns());
  return pts_undefined();
}

atomic_uint_fast64_t rb_iso_long_reports;

void rb_iso_on_long(void *data, pts_agent *agent, uint64_t running_ns) {
  (void)data;
  (void)agent;
  (void)running_ns;
  atomic_fetch_add(&rb_iso_long_reports, 1);
}

/* ---- the rounds and the figures ---- */

/* The samples over the rounds, and the counts summed over them. */
typedef struct step_figs {
  series h_p99, h_tp, h_tx, h_long, k_p99, k_tp, k_tx, k_long, n_p99, n_tp, c_tp, c_p99;
  uint64_t h_cb, k_cb;
  double h_win, k_win;
} step_figs;

/* One round: hog, without, blocked, the one-thread capacity. */
static void step_round(step_figs *m, uint64_t win, tally *th, tally *tk, tally *tn, tally *tc) {
  run_out hg, bl, nn, cp;
  bool a = run_counted(SC_HOG, win, &hg, th);
  bool n = run_counted(SC_NONE_HOG, win, &nn, tn);
  bool k = run_counted(SC_BLOCKED, win, &bl, tk);
  bool c = run_counted(SC_CAPACITY, win, &cp, tc);
  if (a) {
    put(&m->h_p99, hg.nb_p99_us);
    put(&m->h_tp, hg.tput);
    put(&m->h_long, (double)hg.st_long);
    m->h_cb += hg.long_cb;
    m->h_win += hg.window_s;
  }
  if (k) {
    put(&m->k_p99, bl.nb_p99_us);
    put(&m->k_tp, bl.tput);
    put(&m->k_long, (double)bl.st_long);
    m->k_cb += bl.long_cb;
    m->k_win += bl.window_s;
  }
  if (n) {
    put(&m->n_p99, nn.nb_p99_us);
    put(&m->n_tp, nn.tput);
  }
  if (c) {
    put(&m->c_tp, cp.tput);
    put(&m->c_p99, cp.nb_p99_us);
    if (a) put(&m->h_tx, ratio(hg.tput, cp.tput));
    if (k) put(&m->k_tx, ratio(bl.tput, cp.tput));
  }
}

/* Each step's figures, held to the capacity of the same round. */
static void step_figures(rb_ctx *ctx, const step_figs *m, const tally *th, const tally *tk) {
  const char *steps[2] = {"hog", "blocked"};
  const series *sp[2] = {&m->h_p99, &m->k_p99}, *st[2] = {&m->h_tp, &m->k_tp},
               *sx[2] = {&m->h_tx, &m->k_tx}, *sl[2] = {&m->h_long, &m->k_long};
  const tally *tt[2] = {th, tk};
  uint64_t cbs[2] = {m->h_cb, m->k_cb};
  double wins[2] = {m->h_win, m->k_win};
  for (int i = 0; i < 2; i++) {
    char key[RB_KEY_MAX];
    if (tt[i]->ok == 0) {
      snprintf(key, sizeof key, "isolation.%s", steps[i]);
      rb_unavailable_add(ctx, key, "every run failed (pool, agent, chain, or the step never ended)");
      continue;
    }
    const char *what = i == 0 ? "spinning" : "blocked in nanosleep";
    snprintf(key, sizeof key, "isolation.%s.neighbour_p99_us", steps[i]);
    target(ctx, rec(ctx, key, "us", sp[i],
                    "probes to nb0 (busy, on the hostile thread 0) and nb1 (thread 1) posted while "
                    "a hostile task was %s for 1 s (mean window %.2f s); balancing on, watchdog "
                    "%.0f ms", what, wins[i] / (double)tt[i]->ok, (double)WATCHDOG_NS / 1e6),
           5000, false, "<= 5000 us");
    snprintf(key, sizeof key, "isolation.%s.tasks_per_s", steps[i]);
    rec(ctx, key, "tasks/s", st[i], "nb0's 20 us tasks per second during the hostile step");
    snprintf(key, sizeof key, "isolation.%s.throughput_x_1t", steps[i]);
    target(ctx, rec(ctx, key, "ratio", sx[i],
                    "per round: nb0's tasks per second during the step over the same round's "
                    "isolation.capacity_1t.tasks_per_s"),
           0.8, true, ">= 0.8x the one-thread capacity of the same round");
    snprintf(key, sizeof key, "isolation.%s.long_tasks", steps[i]);
    rec(ctx, key, "count", sl[i],
        "pts_agent_stats.long_tasks of the hostile agent, per run (on_long_task calls over the "
        "runs: %llu)", (unsigned long long)cbs[i]);
  }
}

/* The runs the steps are compared with: the set-up without the step, and
 * the one-thread capacity. */
static void control_figures(rb_ctx *ctx, const step_figs *f) {
  if (f->n_p99.n > 0) {
    rec(ctx, "isolation.balanced_none.neighbour_p99_us", "us", &f->n_p99,
        "hog's and blocked's set-up without the hostile task (nb0 on thread 0, nb1 on thread 1)");
    rec(ctx, "isolation.balanced_none.tasks_per_s", "tasks/s", &f->n_tp, "nb0's tasks per second, same");
  }
  if (f->c_tp.n > 0) {
    rb_metric *m = rec(ctx, "isolation.capacity_1t.tasks_per_s", "tasks/s", &f->c_tp,
                       "nb0's 20 us tasks per second with nb1 on a one-thread pool, no hostile "
                       "tenant: the one-fewer-thread capacity the hog and blocked runs are held to");
    if (m) m->higher_better = true;
    rec(ctx, "isolation.capacity_1t.neighbour_p99_us", "us", &f->c_p99, "probes' p99 in that run");
  }
}

void rb_iso_steps(rb_ctx *ctx, uint64_t win, int hruns, tally *th, tally *tk, tally *tn,
                  tally *tc) {
  static step_figs m; /* 12 series of MAXRUNS samples */
  memset(&m, 0, sizeof m);
  for (int r = 0; r < hruns; r++) step_round(&m, win, th, tk, tn, tc);
  step_figures(ctx, &m, th, tk);
  control_figures(ctx, &m);
}
