/* bench/leak/leak.h: the security study of issue 8 as a library: secrets,
 * attackers, the virtual-time and real-clock harnesses, and the estimators
 * (mutual information with Miller-Madow correction, the shuffled-label
 * floor, a classifier and its Fano bound). The runner's leak suite
 * (bench/runner/suite_leak.c) and tests/leak/ link it. Method and citations:
 * docs/security.md.
 *
 * Threads: every function runs on the calling thread; lk_run_real starts a
 * worker pool of its own and joins it before returning.
 */
#ifndef PTS_BENCH_LEAK_H
#define PTS_BENCH_LEAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- estimators (estimators.c), pure ---- */

/* Entropy in bits of a histogram of n = sum(c) observations; with mm, plus
 * the Miller-Madow term (m - 1) / (2 n ln 2), m = non-empty cells. */
double lk_entropy(const uint64_t *c, size_t k, bool mm);
/* I(X;Y) in bits from paired labels x in [0,kx), y in [0,ky): the plug-in
 * estimate, or with Miller-Madow correction of each entropy (may be < 0). */
double lk_mi(const int *x, const int *y, size_t n, int kx, int ky, bool mm);
/* The detection limit: the 95th percentile of the corrected MI over
 * `shuffles` random permutations of x (labels shuffled, seeded). */
double lk_mi_floor(const int *x, const int *y, size_t n, int kx, int ky,
                   int shuffles, uint64_t seed);
/* Equal-frequency bins of obs (at most maxbins; equal values share a bin).
 * Writes bin labels to out; returns the number of bins (>= 1), or -1. */
int lk_bin(const double *obs, size_t n, int maxbins, int *out);
/* Accuracy of the maximum-a-posteriori classifier of x from y, trained on
 * the even-indexed pairs and tested on the odd ones (ties: the prior's
 * majority). */
double lk_classify(const int *x, const int *y, size_t n, int kx, int ky);
/* Binary entropy h(p) in bits, and its inverse on [0, 1/2]. */
double lk_h2(double p);
double lk_h2_inv(double h);
/* Fano's inequality: the highest accuracy any classifier of a secret with
 * m values and entropy h_secret can reach from an observation carrying mi
 * bits: 1 - Pe_min, where h2(Pe) + Pe log2(m - 1) >= h_secret - mi. */
double lk_fano_max_accuracy(double h_secret, double mi, int m);
/* Youden's J = TPR - FPR of the detector "score > threshold", threshold
 * chosen on the even-indexed windows, J measured on the odd ones. */
double lk_youden(const double *score, const uint8_t *truth, size_t n);

/* ---- scenarios ---- */

typedef enum lk_secret { LK_S1 = 0, LK_S2, LK_S3 } lk_secret;
typedef enum lk_attacker { LK_CHAIN = 0, LK_FLOOD, LK_PAIRS, LK_COUNTER } lk_attacker;
#define LK_SECRETS 3
#define LK_ATTACKERS 4
/* Policies: pts_policy values, PTS__POLICY_QUANTIZED (5), or this. */
#define LK_SEPARATE 6
#define LK_POLICIES 7
/* Runner key part of a policy ("strict", "round_robin", ..., "quantized",
 * "separate_threads"), and the names of secrets and attackers. */
const char *lk_policy_key(int policy);
const char *lk_secret_name(lk_secret s);
const char *lk_attacker_name(lk_attacker a);

/* What the victim does when the secret is on: S1 one 200 us user-blocking
 * task per 1 ms window (or none); S2 that task every window, at
 * user-blocking (1) or background (0); S3 a keystroke burst (3 user-blocking
 * tasks of 150 us) at intervals drawn uniformly from 100-300 ms. */
#define LK_WINDOW_NS 1000000u
#define LK_VICTIM_TASK_NS 200000u
#define LK_BURST_TASKS 3
#define LK_BURST_TASK_NS 150000u
#define LK_ATTACK_TASK_NS 5000u   /* each attacker task's own work */
#define LK_COUNTER_TICK_NS 100000u /* the counter attacker's coarse clock */

typedef struct lk_config {
  int policy;
  lk_secret secret;
  lk_attacker attacker;
  uint32_t windows;      /* observation windows of LK_WINDOW_NS */
  uint64_t seed;         /* secret draws and the randomized policy */
  const uint8_t *bits;   /* optional: the secret per window (S1, S2) */
  uint64_t warmup_ns;    /* before window 0 (quantized: let levels settle) */
  uint64_t overhead_ns;  /* virtual: modelled cost of a step */
} lk_config;

/* What one run gives: the attacker's trace (start times, ns from window 0,
 * and the kind of task for pairs: 0 = user-blocking probe, 1 = background),
 * the secret per window, one observation per window, the victim's start
 * delays (user-blocking tasks), and CPU time per side. */
typedef struct lk_trace {
  size_t n, cap;
  int64_t *t;
  uint8_t *kind;
  uint32_t windows;
  uint8_t *secret;
  double *obs;
  double *lat_ns;
  size_t nlat, caplat;
  uint64_t attacker_busy_ns, victim_busy_ns, elapsed_ns;
  /* The victim's tasks posted in the observed windows and those of them
   * that started before the windows ended (real clock: before the harness
   * stops the attacker; a backlog drained afterwards does not count). A
   * leak figure means little when victim_done falls short of posted. */
  uint64_t victim_posted, victim_done;
  /* Real clock: windows left out of the analysis (1) because the harness
   * reached the start of that window or of the one before more than
   * LK_HARNESS_LATE_NS late, so the secret did not act when it should
   * have; NULL in virtual time. */
  uint8_t *excluded;
  uint32_t nexcluded;
} lk_trace;
#define LK_HARNESS_LATE_NS 300000u
void lk_trace_free(lk_trace *tr);

/* The observation of each window from the trace (per attacker, see
 * docs/security.md): chain, max gap between own starts; flood, own starts
 * in the window; pairs, (max gap before a background task) - (max gap
 * before a user-blocking one); counter, the fewest own starts in a coarse
 * tick of the window. */
void lk_observe(lk_trace *tr, lk_attacker a);

/* Virtual time (agents/study.h): exact and deterministic. 0 or PTS_E*. */
int lk_run_virtual(const lk_config *c, lk_trace *out);
/* Real clock: a one-thread pool (two threads for LK_SEPARATE) with the
 * attacker and the victim, the calling thread posting the victim's work at
 * window starts. S1 and S2 with any attacker; S3 is virtual-time only
 * (PTS_EINVAL: enough keystrokes take minutes of real time). */
int lk_run_real(const lk_config *c, lk_trace *out);

/* Costs in virtual time (20 us tasks): throughput loss with both agents
 * saturated, with the victim mostly idle (one 200 us user-blocking task at
 * uniform 10-30 ms gaps), and the victim's p99 start delay in the idle case (ns). */
typedef struct lk_cost {
  double loss_busy, loss_idle, p99_ns;
  double *lat_ns;
  size_t nlat;
} lk_cost;
int lk_cost_virtual(int policy, uint64_t seconds_ns, lk_cost *out);
/* The same two scenarios on a real pool for span_ns each (after a warm-up:
 * 50 ms, quantized idle 1.1 s); lat_ns is left NULL. Starts and joins its
 * pool threads; 0 or a negative PTS_E* code. */
int lk_cost_real(int policy, uint64_t span_ns, lk_cost *out);

/* The analysis of one trace: MI (plug-in, corrected), floor, classifier,
 * Fano bound, bits per second; for S3, Youden's J of keystroke detection. */
typedef struct lk_result {
  double mi_plugin, mi_mm, floor95, bits, accuracy, fano_acc, h_secret;
  double bits_per_s, youden;
  int bins;
  bool detected;
} lk_result;
int lk_analyse(const lk_trace *tr, lk_secret s, int shuffles, uint64_t seed,
               lk_result *out);

#ifdef __cplusplus
}
#endif
#endif /* PTS_BENCH_LEAK_H */
