/* bench/leak/estimators.c: the information measures of the study, pure
 * functions over label arrays (no clock, no threads), so tests/leak checks
 * them on known cases.
 *
 * - Plug-in (maximum-likelihood) entropies of binned observations, with the
 *   Miller-Madow bias correction (G. Miller, "Note on the bias of
 *   information estimates", 1955): the plug-in entropy underestimates by
 *   about (m - 1) / 2N nats, m non-empty cells, N samples. MI is the sum
 *   H(X) + H(Y) - H(X,Y) of corrected terms.
 * - The detection limit: MI of the same data with the secret labels
 *   shuffled (independent by construction); its 95th percentile is what
 *   chance alone produces at this N, so a measured MI below it is "not
 *   detected".
 * - Fano's inequality (R. Fano, 1961; Cover & Thomas, Elements of
 *   Information Theory, 2.10) turns bits into the best accuracy any
 *   classifier could reach; a real classifier's accuracy sits below it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/leak/leak.h"

double lk_entropy(const uint64_t *c, size_t k, bool mm) {
  uint64_t n = 0;
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    n += c[i];
    m += c[i] != 0;
  }
  if (n == 0) return 0;
  double h = 0;
  for (size_t i = 0; i < k; i++) {
    if (c[i] == 0) continue;
    double p = (double)c[i] / (double)n;
    h -= p * log2(p);
  }
  if (mm) h += (double)(m - 1) / (2.0 * (double)n * log(2.0));
  return h;
}

double lk_mi(const int *x, const int *y, size_t n, int kx, int ky, bool mm) {
  if (n == 0 || kx <= 0 || ky <= 0) return 0;
  uint64_t *cx = calloc((size_t)kx, sizeof *cx);
  uint64_t *cy = calloc((size_t)ky, sizeof *cy);
  uint64_t *cxy = calloc((size_t)kx * (size_t)ky, sizeof *cxy);
  double mi = 0;
  if (cx && cy && cxy) {
    for (size_t i = 0; i < n; i++) {
      cx[x[i]]++;
      cy[y[i]]++;
      cxy[(size_t)x[i] * (size_t)ky + (size_t)y[i]]++;
    }
    mi = lk_entropy(cx, (size_t)kx, mm) + lk_entropy(cy, (size_t)ky, mm) -
         lk_entropy(cxy, (size_t)kx * (size_t)ky, mm);
  }
  free(cx);
  free(cy);
  free(cxy);
  return mi;
}

/* splitmix64: a small seeded stream for the shuffles (Steele, Lea, Flood,
 * OOPSLA 2014). */
static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void lk_mi_null_quantiles(const int *x, const int *y, size_t n, int kx, int ky, int shuffles,
                          uint64_t seed, const double *q, double *out, int nq) {
  for (int i = 0; i < nq; i++) out[i] = 0;
  if (n == 0 || shuffles <= 0) return;
  int *p = malloc(n * sizeof *p);
  double *v = malloc((size_t)shuffles * sizeof *v);
  if (p && v) {
    memcpy(p, x, n * sizeof *p);
    uint64_t s = seed;
    for (int k = 0; k < shuffles; k++) {
      for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        size_t j = (size_t)(((unsigned __int128)mix(&s) * (i + 1)) >> 64);
        int t = p[i];
        p[i] = p[j];
        p[j] = t;
      }
      v[k] = lk_mi(p, y, n, kx, ky, true);
    }
    qsort(v, (size_t)shuffles, sizeof *v, cmp_double);
    for (int i = 0; i < nq; i++) {
      size_t at = (size_t)ceil(q[i] * shuffles);
      out[i] = v[at > 0 ? at - 1 : 0];
    }
  }
  free(p);
  free(v);
}

/* The bootstrap interval (B. Efron, "Bootstrap methods: another look at
 * the jackknife", Ann. Statist. 7(1), 1979; percentile interval): resample
 * the n pairs with replacement, recompute the corrected MI on the fixed bin
 * labels, take the 2.5th and 97.5th percentiles. Near MI = 0 a resample
 * carries the plug-in bias again ((m - 1)/2N above what Miller-Madow takes
 * off its own cells, m = cells), so the upper end errs high: conservative
 * for a claim "below this bound". */
void lk_mi_ci95(const int *x, const int *y, size_t n, int kx, int ky, int resamples,
                uint64_t seed, double *lo, double *hi) {
  *lo = *hi = 0;
  if (n == 0 || kx <= 0 || ky <= 0 || resamples <= 0) return;
  size_t cells = (size_t)kx * (size_t)ky;
  uint64_t *cx = malloc((size_t)kx * sizeof *cx), *cy = malloc((size_t)ky * sizeof *cy);
  uint64_t *cxy = malloc(cells * sizeof *cxy);
  double *v = malloc((size_t)resamples * sizeof *v);
  if (cx && cy && cxy && v) {
    uint64_t s = seed ^ UINT64_C(0x5851f42d4c957f2d);
    for (int k = 0; k < resamples; k++) {
      memset(cx, 0, (size_t)kx * sizeof *cx);
      memset(cy, 0, (size_t)ky * sizeof *cy);
      memset(cxy, 0, cells * sizeof *cxy);
      for (size_t i = 0; i < n; i++) {
        size_t j = (size_t)(((unsigned __int128)mix(&s) * n) >> 64);
        cx[x[j]]++;
        cy[y[j]]++;
        cxy[(size_t)x[j] * (size_t)ky + (size_t)y[j]]++;
      }
      v[k] = lk_entropy(cx, (size_t)kx, true) + lk_entropy(cy, (size_t)ky, true) -
             lk_entropy(cxy, cells, true);
    }
    qsort(v, (size_t)resamples, sizeof *v, cmp_double);
    size_t a = (size_t)floor(0.025 * (resamples - 1) + 0.5);
    size_t b = (size_t)floor(0.975 * (resamples - 1) + 0.5);
    *lo = v[a];
    *hi = v[b];
  }
  free(cx);
  free(cy);
  free(cxy);
  free(v);
}

double lk_quantile(const double *sorted, size_t n, double q) {
  if (n == 0) return 0;
  size_t k = (size_t)ceil(q * (double)n);
  return sorted[k > 0 ? k - 1 : 0];
}

/* The q-quantile of one resample of sorted s: draws n indices and counts
 * them (cnt, n zeroed entries); the resample's k-th smallest value is s at
 * the k-th smallest index drawn, as s is sorted. */
static double resampled_quantile(const double *s, size_t n, double q, uint32_t *cnt,
                                 uint64_t *st) {
  for (size_t i = 0; i < n; i++) cnt[((unsigned __int128)mix(st) * n) >> 64]++;
  size_t k = (size_t)ceil(q * (double)n), seen = 0, i = 0;
  if (k == 0) k = 1;
  for (; i < n; i++) {
    seen += cnt[i];
    if (seen >= k) break;
  }
  return s[i < n ? i : n - 1];
}

void lk_quantile_diff_ci95(const double *a, size_t na, const double *b, size_t nb, double q,
                           int resamples, uint64_t seed, double *lo, double *hi) {
  *lo = *hi = 0;
  if (na == 0 || resamples <= 0) return;
  uint32_t *cnt = malloc((na > nb ? na : nb) * sizeof *cnt);
  double *v = malloc((size_t)resamples * sizeof *v);
  if (cnt && v) {
    uint64_t st = seed ^ UINT64_C(0x2545f4914f6cdd1d);
    for (int r = 0; r < resamples; r++) {
      memset(cnt, 0, na * sizeof *cnt);
      v[r] = resampled_quantile(a, na, q, cnt, &st);
      if (nb > 0) {
        memset(cnt, 0, nb * sizeof *cnt);
        v[r] -= resampled_quantile(b, nb, q, cnt, &st);
      }
    }
    qsort(v, (size_t)resamples, sizeof *v, cmp_double);
    *lo = v[(size_t)floor(0.025 * (resamples - 1) + 0.5)];
    *hi = v[(size_t)floor(0.975 * (resamples - 1) + 0.5)];
  }
  free(cnt);
  free(v);
}

typedef struct ival {
  double v;
  size_t i;
} ival;

static int cmp_ival(const void *a, const void *b) {
  const ival *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

int lk_bin(const double *obs, size_t n, int maxbins, int *out) {
  if (n == 0 || maxbins <= 0) return -1;
  ival *s = malloc(n * sizeof *s);
  if (s == NULL) return -1;
  for (size_t i = 0; i < n; i++) s[i] = (ival){obs[i], i};
  qsort(s, n, sizeof *s, cmp_ival);
  size_t distinct = 1;
  for (size_t i = 1; i < n; i++) distinct += s[i].v != s[i - 1].v;
  int bins = 0;
  if (distinct <= (size_t)maxbins) {
    /* Few values: one bin each (exact, no information lost). */
    int b = 0;
    for (size_t i = 0; i < n; i++) {
      if (i > 0 && s[i].v != s[i - 1].v) b++;
      out[s[i].i] = b;
    }
    bins = b + 1;
  } else {
    /* Equal frequency: the bin of a value is that of its first occurrence
     * in sorted order, so equal values never straddle an edge. */
    int b = 0;
    size_t first = 0;
    for (size_t i = 0; i < n; i++) {
      if (i > 0 && s[i].v != s[i - 1].v) first = i;
      int nb = (int)((first * (size_t)maxbins) / n);
      if (nb > b) b = nb;
      out[s[i].i] = b;
    }
    /* Relabel densely (some bins may have been skipped). */
    int *map = malloc((size_t)maxbins * sizeof *map);
    if (map == NULL) {
      free(s);
      return -1;
    }
    for (int k = 0; k < maxbins; k++) map[k] = -1;
    int next = 0;
    for (size_t i = 0; i < n; i++) {
      int v = out[s[i].i];
      if (map[v] < 0) map[v] = next++;
    }
    for (size_t i = 0; i < n; i++) out[i] = map[out[i]];
    free(map);
    bins = next;
  }
  free(s);
  return bins;
}

double lk_classify(const int *x, const int *y, size_t n, int kx, int ky) {
  if (n < 2) return 0;
  uint64_t *c = calloc((size_t)kx * (size_t)ky, sizeof *c);
  uint64_t *px = calloc((size_t)kx, sizeof *px);
  if (c == NULL || px == NULL) {
    free(c);
    free(px);
    return 0;
  }
  for (size_t i = 0; i < n; i += 2) {
    c[(size_t)y[i] * (size_t)kx + (size_t)x[i]]++;
    px[x[i]]++;
  }
  int prior = 0;
  for (int k = 1; k < kx; k++)
    if (px[k] > px[prior]) prior = k;
  size_t ok = 0, tested = 0;
  for (size_t i = 1; i < n; i += 2) {
    const uint64_t *row = c + (size_t)y[i] * (size_t)kx;
    int best = prior;
    for (int k = 0; k < kx; k++)
      if (row[k] > row[best]) best = k;
    ok += best == x[i];
    tested++;
  }
  free(c);
  free(px);
  return tested ? (double)ok / (double)tested : 0;
}

double lk_h2(double p) {
  if (p <= 0 || p >= 1) return 0;
  return -p * log2(p) - (1 - p) * log2(1 - p);
}

double lk_h2_inv(double h) {
  if (h <= 0) return 0;
  if (h >= 1) return 0.5;
  double lo = 0, hi = 0.5;
  for (int i = 0; i < 100; i++) {
    double mid = (lo + hi) / 2;
    if (lk_h2(mid) < h) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

double lk_fano_max_accuracy(double h_secret, double mi, int m) {
  if (m < 2) return 1;
  double hc = h_secret - (mi > 0 ? mi : 0); /* H(S|Y) */
  if (hc <= 0) return 1;
  /* f(Pe) = h2(Pe) + Pe log2(m-1) rises on [0, 1 - 1/m]: bisect for the
   * smallest Pe with f(Pe) >= H(S|Y). */
  double lo = 0, hi = 1.0 - 1.0 / m;
  for (int i = 0; i < 100; i++) {
    double mid = (lo + hi) / 2;
    double f = lk_h2(mid) + mid * log2((double)(m - 1));
    if (f < hc) lo = mid;
    else hi = mid;
  }
  return 1 - hi;
}

double lk_youden_threshold(const double *score, const uint8_t *truth, size_t n) {
  /* Train: the threshold (between distinct scores) with the largest J on
   * even windows. */
  size_t ne = (n + 1) / 2;
  double *v = malloc(ne * sizeof *v);
  if (v == NULL || n < 2) {
    free(v);
    return INFINITY;
  }
  size_t k = 0, pos = 0, neg = 0;
  for (size_t i = 0; i < n; i += 2) {
    v[k++] = score[i];
    if (truth[i]) pos++;
    else neg++;
  }
  qsort(v, k, sizeof *v, cmp_double);
  double best_j = -2, best_t = v[k - 1];
  for (size_t c = 0; c < k; c++) {
    if (c + 1 < k && v[c + 1] == v[c]) continue;
    double t = v[c];
    size_t tp = 0, fp = 0;
    for (size_t i = 0; i < n; i += 2) {
      if (score[i] > t) {
        if (truth[i]) tp++;
        else fp++;
      }
    }
    double j = (pos ? (double)tp / pos : 0) - (neg ? (double)fp / neg : 0);
    if (j > best_j) {
      best_j = j;
      best_t = t;
    }
  }
  free(v);
  return best_t;
}

double lk_youden(const double *score, const uint8_t *truth, size_t n) {
  /* Test: J of the trained threshold on odd windows. */
  if (n < 2) return 0;
  double best_t = lk_youden_threshold(score, truth, n);
  size_t tp = 0, fp = 0, pos = 0, neg = 0;
  for (size_t i = 1; i < n; i += 2) {
    if (truth[i]) pos++;
    else neg++;
    if (score[i] > best_t) {
      if (truth[i]) tp++;
      else fp++;
    }
  }
  return (pos ? (double)tp / pos : 0) - (neg ? (double)fp / neg : 0);
}
