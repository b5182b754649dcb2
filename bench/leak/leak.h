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
/* The corrected MI's null distribution: `shuffles` random permutations of
 * x (labels shuffled, seeded), read at nq quantiles q[i] in (0, 1]: out[i]
 * is the ceil(q[i] * shuffles)-th smallest (0 for no data or shuffles).
 * At 0.95 it is the floor, what chance alone gives one figure 5% of the
 * time. */
void lk_mi_null_quantiles(const int *x, const int *y, size_t n, int kx, int ky, int shuffles,
                          uint64_t seed, const double *q, double *out, int nq);

/* The detection limit (lk_analyse): a run of the leak suite judges up to
 * LK_FAMILY figures of one policy (S1 and S2 by four attackers), so each is
 * tested at 5% / LK_FAMILY (Bonferroni; C. E. Bonferroni 1936, O. J. Dunn,
 * JASA 56(293), 1961): a policy with no leak then shows none in a run with
 * probability at least 95%, where a 5% test per figure showed one in about
 * a third of the runs. LK_DETECT_SHUFFLES permutations put about 20 of
 * them above that quantile. */
#define LK_FAMILY 8
#define LK_DETECT_Q (1.0 - 0.05 / LK_FAMILY)
#define LK_DETECT_SHUFFLES 3200
/* The bootstrap 95% interval of the corrected MI: `resamples` resamplings
 * of the n pairs with replacement (seeded), on the same bin labels; the
 * percentile interval [lo, hi]. Its upper end is conservative near 0 (a
 * resample adds the plug-in bias again). *lo = *hi = 0 on empty input. */
void lk_mi_ci95(const int *x, const int *y, size_t n, int kx, int ky, int resamples,
                uint64_t seed, double *lo, double *hi);
/* The q-quantile of n sorted values, as the costs report it: the
 * ceil(q n)-th smallest (0 when n = 0). */
double lk_quantile(const double *sorted, size_t n, double q);
/* The bootstrap 95% interval of lk_quantile(a, q) - lk_quantile(b, q):
 * `resamples` resamplings of each sample with replacement, independently
 * (seeded); the percentile interval [lo, hi]. a and b sorted ascending; b
 * may be empty (nb = 0: the interval of a's quantile). *lo = *hi = 0 when
 * a is empty. */
void lk_quantile_diff_ci95(const double *a, size_t na, const double *b, size_t nb, double q,
                           int resamples, uint64_t seed, double *lo, double *hi);
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
/* The threshold lk_youden chooses on the even-indexed windows. */
double lk_youden_threshold(const double *score, const uint8_t *truth, size_t n);

/* ---- scenarios ---- */

typedef enum lk_secret { LK_S1 = 0, LK_S2, LK_S3 } lk_secret;
/* LK_INBOX (real clock only) is the cross-agent attacker of round 2: each
 * of its tasks posts a probe into the victim's agent (pts_agent_post_task),
 * the probe posts the next attacker task back, so the gap between the
 * attacker's own starts is its round trip through the victim's inbox and
 * loop; observation = the largest gap in the window, as for the chain.
 * LK_ATTACKERS counts the four that share only the thread. */
typedef enum lk_attacker { LK_CHAIN = 0, LK_FLOOD, LK_PAIRS, LK_COUNTER, LK_INBOX } lk_attacker;
#define LK_SECRETS 3
#define LK_ATTACKERS 4
/* Policies: pts_policy values (quantized included), or this. */
#define LK_SEPARATE PTS_POLICY_COUNT
#define LK_POLICIES (PTS_POLICY_COUNT + 1)
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

/* The victim's work while a task runs (the round-2 experiments on the
 * real-clock residual, docs/security.md): spin reading the clock (the
 * default), nothing (the task is posted and started, no work: only the post
 * path is left), arithmetic in registers (the clock read every 256
 * iterations), or writing one byte per cache line over a 2 MiB buffer. */
typedef enum lk_work { LK_WORK_SPIN = 0, LK_WORK_NONE, LK_WORK_ARITH, LK_WORK_MEM } lk_work;
const char *lk_work_name(lk_work w);
/* The machine's 1-minute load average (/proc/loadavg; -1 if unreadable),
 * noted next to every real-clock figure. */
double lk_load1(void);

typedef struct lk_config {
  int policy;
  lk_secret secret;
  lk_attacker attacker;
  uint32_t windows;      /* observation windows of LK_WINDOW_NS */
  uint64_t seed;         /* secret draws and the randomized policy */
  const uint8_t *bits;   /* optional: the secret per window (S1, S2) */
  uint64_t warmup_ns;    /* before window 0 (quantized: let levels settle) */
  uint64_t overhead_ns;  /* virtual: modelled cost of a step */
  /* Real clock, round 2: 1 = the victim on a second pool thread (a pool of
   * two threads under `policy`, placed with pts_agent_options.thread); 0 =
   * the attacker's thread. */
  int victim_thread;
  lk_work work;          /* real clock: the victim's work (default spin) */
  /* Real clock: pin the pool thread(s) and the harness to CPUs (the pinned
   * control: attacker's thread on CPU 0, the harness on the last CPU). */
  bool pin;
  /* Real clock, quantized: the round-1 pool thread (reads its wake-up queue
   * at every pass, no padded slot-start pass; agents/study.h), for the
   * experiments that compare the two. */
  bool round1;
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
  /* S3: the true keystroke times (ns from window 0), for the interval error. */
  uint64_t *keys;
  size_t nkeys;
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
/* Real clock: a one-thread pool (two threads for LK_SEPARATE or
 * victim_thread = 1) with the attacker and the victim, the calling thread
 * posting the victim's work at window starts (S3: at keystroke times).
 * Every secret and attacker (LK_INBOX: real clock only). */
int lk_run_real(const lk_config *c, lk_trace *out);

/* Costs in virtual time (20 us tasks): throughput loss with both agents
 * saturated, with the victim mostly idle (one 200 us user-blocking task at
 * uniform 10-30 ms gaps), and the victim's p99 start delay in the idle case (ns). */
typedef struct lk_cost {
  double loss_busy, loss_idle, p99_ns;
  /* Real clock: the same losses against the time the OS gave the pool
   * thread(s) (CPU time + time parked by itself), not the wall clock: time
   * preempted by other processes of a shared machine is left out. */
  double loss_busy_os, loss_idle_os;
  double *lat_ns;
  size_t nlat;
} lk_cost;
int lk_cost_virtual(int policy, uint64_t seconds_ns, lk_cost *out);
/* The same two scenarios on a real pool, span_ns with both busy and
 * idle_span_ns (0: span_ns) with the victim mostly idle, each after a
 * warm-up (50 ms; quantized idle 1.1 s). The idle scenario's start delays
 * come back sorted in lat_ns (nlat of them, about one per 20 ms of
 * idle_span_ns; the caller frees lat_ns). Starts and joins its pool
 * threads; 0 or a negative PTS_E* code. */
int lk_cost_real(int policy, uint64_t span_ns, uint64_t idle_span_ns, lk_cost *out);

/* The analysis of one trace: MI (plug-in, corrected), floor, classifier,
 * Fano bound, bits per second; for S3, Youden's J of keystroke detection. */
typedef struct lk_result {
  /* floor95 and floor_detect: the 95% and LK_DETECT_Q quantiles of the
   * corrected MI over the same LK_DETECT_SHUFFLES permutations; bits: mi_mm
   * if above floor_detect, else 0. */
  double mi_plugin, mi_mm, floor95, floor_detect, bits, accuracy, fano_acc, h_secret;
  double bits_per_s, youden;
  /* The bootstrap 95% interval of mi_mm (lk_mi_ci95, `shuffles` resamples). */
  double ci_lo, ci_hi;
  /* S3: keystroke times read from the trace (the start of each gap above
   * the detection threshold), matched to the true ones within 5 ms: the
   * share matched and the mean and median |error| of the intervals between
   * consecutive matched keystrokes (ms; -1 with fewer than two). */
  double s3_matched, s3_interval_err_ms, s3_interval_err_median_ms;
  /* The same with every true time moved 50 ms on (between keystrokes): what
   * matching alone gives when the trace says nothing. */
  double s3_interval_err_chance_ms;
  uint32_t used; /* windows in the analysis (not left out) */
  int bins;
  bool detected;
} lk_result;
int lk_analyse(const lk_trace *tr, lk_secret s, int shuffles, uint64_t seed,
               lk_result *out);

#ifdef __cplusplus
}
#endif
#endif /* PTS_BENCH_LEAK_H */
