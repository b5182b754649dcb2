/* bench/leak/probe.c: the experiment driver of the security study's round 2
 * (docs/security.md, "The real-clock S1 residual"): runs real-clock traces
 * of one configuration and of a variant interleaved (A B A B ...), so a
 * change in the machine's load hits both arms alike, and prints one line per
 * trace with the load average read next to it.
 *
 *   leak_probe [policy=quantized] [secret=s1] [attacker=pairs] [windows=3000]
 *              [work=spin] [thread=0] [pin=0] [reps=4]
 *              [b.work=...] [b.thread=...] [b.pin=...] [b.attacker=...]
 *
 * Without b.* keys every trace is arm A. cost=MS instead runs the real-clock
 * costs (lk_cost_real, MS per scenario; idle=MS sets the idle scenario's
 * span apart) of arm A's policy reps times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/study.h"
#include "bench/leak/leak.h"

static int find(const char *v, const char *(*name)(int), int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(v, name(i)) == 0) return i;
  return -1;
}
static const char *pol_name(int i) { return lk_policy_key(i); }
static const char *sec_name(int i) { return lk_secret_name((lk_secret)i); }
static const char *att_name(int i) { return lk_attacker_name((lk_attacker)i); }
static const char *work_name(int i) { return lk_work_name((lk_work)i); }

static int set(lk_config *c, const char *k, const char *v) {
  int x = 0;
  if (strcmp(k, "policy") == 0) x = c->policy = find(v, pol_name, LK_POLICIES);
  else if (strcmp(k, "secret") == 0) x = (int)(c->secret = (lk_secret)find(v, sec_name, 3));
  else if (strcmp(k, "attacker") == 0) x = (int)(c->attacker = (lk_attacker)find(v, att_name, LK_INBOX + 1));
  else if (strcmp(k, "work") == 0) x = (int)(c->work = (lk_work)find(v, work_name, LK_WORK_MEM + 1));
  else if (strcmp(k, "windows") == 0) c->windows = (uint32_t)atoi(v);
  else if (strcmp(k, "thread") == 0) c->victim_thread = atoi(v);
  else if (strcmp(k, "pin") == 0) c->pin = atoi(v) != 0;
  else if (strcmp(k, "round1") == 0) c->round1 = atoi(v) != 0;
  else return -1;
  return x < 0 ? -1 : 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}


int main(int argc, char **argv) {
  lk_config a = {PTS_POLICY_QUANTIZED, LK_S1, LK_PAIRS, 3000, 1, NULL, 0, 0, 0, LK_WORK_SPIN, false, false};
  int reps = 4;
  int cost_ms = 0, idle_ms = 0;
  const char *dump = NULL; /* dump=FILE: window,secret,obs,excluded,start-times per trace */
  bool have_b = false;
  for (int i = 1; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (eq == NULL) goto usage;
    *eq = '\0';
    if (strcmp(argv[i], "reps") == 0) reps = atoi(eq + 1);
    else if (strcmp(argv[i], "dump") == 0) dump = eq + 1;
    else if (strcmp(argv[i], "cost") == 0) cost_ms = atoi(eq + 1);
    else if (strcmp(argv[i], "idle") == 0) idle_ms = atoi(eq + 1);
    else if (strncmp(argv[i], "b.", 2) != 0 && set(&a, argv[i], eq + 1) != 0) goto usage;
    *eq = '=';
  }
  lk_config b = a;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "b.", 2) != 0) continue;
    char *eq = strchr(argv[i], '=');
    *eq = '\0';
    if (set(&b, argv[i] + 2, eq + 1) != 0) goto usage;
    have_b = true;
  }
  if (cost_ms > 0) { /* cost=MS: the real-clock costs of arm A's policy, reps times */
    for (int r = 0; r < reps; r++) {
      lk_cost co;
      uint64_t span = (uint64_t)cost_ms * 1000000u;
      if (lk_cost_real(a.policy, span, idle_ms > 0 ? (uint64_t)idle_ms * 1000000u : span, &co) != 0)
        return 1;
      double lo, hi;
      lk_quantile_diff_ci95(co.lat_ns, co.nlat, NULL, 0, 0.99, 1000, 7, &lo, &hi);
      printf("%s cost busy %.4f idle %.4f (OS time %.4f %.4f) p99 %.0f us (95%% CI %.0f-%.0f, "
             "%zu tasks) load %.2f\n",
             lk_policy_key(a.policy), co.loss_busy, co.loss_idle, co.loss_busy_os, co.loss_idle_os,
             co.p99_ns / 1000, lo / 1000, hi / 1000, co.nlat, lk_load1());
      free(co.lat_ns);
    }
    return 0;
  }
  printf("arm policy secret attacker work thread pin windows used excluded mi_mm floor95 ci_lo ci_hi "
         "bits acc started/posted load1 round1\n");
  for (int r = 0; r < reps * (have_b ? 2 : 1); r++) {
    lk_config *c = have_b && (r & 1) ? &b : &a;
    c->seed = 100 + (uint64_t)r;
    lk_trace tr;
    lk_result res;
    if (lk_run_real(c, &tr) != 0 || lk_analyse(&tr, c->secret, 200, 5, &res) != 0) {
      printf("run failed\n");
      return 1;
    }
    printf("%c %s %s %s %s %d %d %u %u %u %.5f %.5f %.5f %.5f %.5f %.3f %llu/%llu %.2f",
           c == &a ? 'A' : 'B', lk_policy_key(c->policy), lk_secret_name(c->secret),
           lk_attacker_name(c->attacker), lk_work_name(c->work), c->victim_thread, (int)c->pin,
           c->windows, res.used, tr.nexcluded, res.mi_mm, res.floor95, res.ci_lo, res.ci_hi,
           res.bits, res.accuracy, (unsigned long long)tr.victim_done,
           (unsigned long long)tr.victim_posted, lk_load1());
    printf(" %d", (int)c->round1);
    if (tr.nlat > 0) {
      qsort(tr.lat_ns, tr.nlat, sizeof *tr.lat_ns, cmp_d);
      printf(" lat p50 %.0f p99 %.0f us", tr.lat_ns[tr.nlat / 2] / 1000,
             tr.lat_ns[(size_t)(0.99 * (double)(tr.nlat - 1))] / 1000);
    }
    if (c->secret == LK_S3)
      printf(" J %.3f matched %.2f err %.3f/%.3f ms chance %.3f", res.youden, res.s3_matched,
             res.s3_interval_err_ms, res.s3_interval_err_median_ms, res.s3_interval_err_chance_ms);
    printf("\n");
    fflush(stdout);
    if (dump != NULL) {
      char name[512];
      snprintf(name, sizeof name, "%s.%d.csv", dump, r);
      FILE *f = fopen(name, "w");
      if (f != NULL) {
        for (uint32_t w = 0; w < tr.windows; w++)
          fprintf(f, "w,%u,%u,%.0f,%u\n", w, tr.secret[w], tr.obs[w], tr.excluded ? tr.excluded[w] : 0);
        for (size_t i = 0; i < tr.n; i++) fprintf(f, "t,%lld,%u\n", (long long)tr.t[i], tr.kind[i]);
        fclose(f);
      }
    }
    lk_trace_free(&tr);
  }
  return 0;
usage:
  fprintf(stderr, "usage: see the head of bench/leak/probe.c\n");
  return 2;
}
