/* bench/runner/latency.c: what the latency scenarios of suite_loop.c and
 * suite_agents.c share: measuring several systems interleaved
 * (rb_lat_measure) and writing a pooled CDF (rb_write_cdf). Its own file so
 * that the two suites call this and neither calls into the other's
 * internals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/runner/peers.h"
#include "bench/runner/suites.h"

void rb_write_cdf(rb_ctx *ctx, const char *name, const double *sorted, size_t n) {
  FILE *f = rb_data_open(ctx, name);
  if (f == NULL) return;
  fprintf(f, "# start delay (us)  fraction <= delay\n");
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%.3f %.6f\n", sorted[i] / 1000.0, (double)(i + 1) / (double)n);
  fclose(f);
}

/* Fewer delays than this in a run (the time budget ran out first) fail it. */
#define LAT_MIN_SAMPLES 20

void rb_lat_measure(rb_ctx *ctx, const lat_sys *sys, size_t nsys, uint64_t bg_ns,
                    uint64_t gap_ns, size_t k, bool *ok) {
  size_t runs = (size_t)ctx->runs;
  double *all = malloc(nsys * runs * k * sizeof *all);
  double *pv = malloc(nsys * 3 * runs * sizeof *pv);
  size_t *got = calloc(nsys, sizeof *got);   /* delays pooled, per system */
  size_t *good = calloc(nsys, sizeof *good); /* runs kept, per system */
  int *last = calloc(nsys, sizeof *last);    /* delays of the last short run */
  for (size_t s = 0; s < nsys; s++) {
    ok[s] = all && pv && got && good && last;
    /* Warm-up, discarded; a scenario that cannot run at all stops here. */
    if (ok[s] && sys[s].fn(bg_ns, gap_ns, all + s * runs * k, k / 4 + 1) < 0) {
      ok[s] = false;
      if (last) last[s] = -1;
    }
  }
  for (size_t r = 0; r < runs; r++) {
    for (size_t s = 0; s < nsys; s++) {
      if (!ok[s]) continue;
      rb_progress(ctx, "%s: run %zu/%zu", sys[s].scenario, r + 1, runs);
      double *d = all + s * runs * k + got[s];
      int c = sys[s].fn(bg_ns, gap_ns, d, k);
      if (c < 0) {
        ok[s] = false;
        last[s] = -1;
        continue;
      }
      if (c < LAT_MIN_SAMPLES) {
        /* The time budget ran out first (a loaded machine): this run is
         * not counted, the next may be. */
        last[s] = c;
        continue;
      }
      double *tmp = malloc((size_t)c * sizeof *tmp);
      if (tmp == NULL) abort();
      memcpy(tmp, d, (size_t)c * sizeof *tmp);
      rb_sort(tmp, (size_t)c);
      size_t g = good[s]++;
      pv[(s * 3 + 0) * runs + g] = rb_percentile_sorted(tmp, (size_t)c, 0.50) / 1000.0;
      pv[(s * 3 + 1) * runs + g] = rb_percentile_sorted(tmp, (size_t)c, 0.99) / 1000.0;
      pv[(s * 3 + 2) * runs + g] = rb_percentile_sorted(tmp, (size_t)c, 0.999) / 1000.0;
      free(tmp);
      got[s] += (size_t)c;
    }
  }
  static const char *const figs[] = {"p50_us", "p99_us", "p999_us"};
  for (size_t s = 0; s < nsys; s++) {
    char key[RB_KEY_MAX];
    if (ok[s] && good[s] == 0) ok[s] = false;
    if (!ok[s]) {
      snprintf(key, sizeof key, "latency.%s", sys[s].scenario);
      if (last && last[s] >= 0)
        rb_unavailable_add(ctx, key, "no run collected %d start delays within its %.1f s budget "
                           "(last: %d; machine overloaded or tasks starved)",
                           LAT_MIN_SAMPLES, (double)rb_lat_budget_ns / 1e9, last[s]);
      else
        rb_unavailable_add(ctx, key, "scenario failed (an API call failed, or a user-blocking task "
                           "did not start within 2 s)");
      continue;
    }
    for (int f = 0; f < 3; f++) {
      rb_key_make(key, sizeof key, "latency", sys[s].scenario, figs[f]);
      rb_record(ctx, key, "us", sys[s].role, pv + (s * 3 + (size_t)f) * runs, good[s]);
      if (good[s] < runs)
        rb_note(ctx, key, "%zu of %zu runs kept: the others ran out of their %.1f s budget "
                "before %d delays (machine load)", good[s], runs,
                (double)rb_lat_budget_ns / 1e9, LAT_MIN_SAMPLES);
    }
    double samples = (double)got[s];
    rb_key_make(key, sizeof key, "latency", sys[s].scenario, "samples");
    rb_record(ctx, key, "count", RB_INFO, &samples, 1);
    rb_note(ctx, key, "start delays pooled over the kept runs (the CDF plots them all)");
    double *mine = all + s * runs * k;
    rb_sort(mine, got[s]);
    rb_write_cdf(ctx, sys[s].cdf, mine, got[s]);
  }
  free(all);
  free(pv);
  free(got);
  free(good);
  free(last);
}
