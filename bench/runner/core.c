/* bench/runner/core.c: summaries, fairness index, ratios and targets, key
 * format, JSON strings and option parsing for the benchmark runner (see
 * core.h). Pure functions:
 * no clock, no I/O, no global state besides the constant suite list.
 */
#include "bench/runner/core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const rb_suite_names[] = {
    "throughput", "crossthread", "yield",    "control", "memory",
    "scale",      "latency",     "fairness", "leak",    "balance",
    "host",       "isolation",
};
const size_t rb_suite_count = sizeof rb_suite_names / sizeof rb_suite_names[0];

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void rb_sort(double *v, size_t n) {
  if (v != NULL && n > 1) qsort(v, n, sizeof *v, cmp_double);
}

int rb_summarize(const double *v, size_t n, rb_summary *out) {
  memset(out, 0, sizeof *out);
  if (v == NULL || n == 0) return -1;
  double *tmp = malloc(n * sizeof *tmp);
  if (tmp == NULL) return -1;
  memcpy(tmp, v, n * sizeof *tmp);
  rb_sort(tmp, n);
  out->n = n;
  out->min = tmp[0];
  out->max = tmp[n - 1];
  out->median = (n % 2) ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2.0;
  free(tmp);
  return 0;
}

double rb_percentile_sorted(const double *sorted, size_t n, double p) {
  if (sorted == NULL || n == 0) return 0;
  if (p <= 0) return sorted[0];
  if (p >= 1) return sorted[n - 1];
  /* Nearest rank: ceil(p * n), 1-based. The small epsilon keeps exact
   * products (0.5 * 10) from rounding up through floating-point noise. */
  double r = p * (double)n;
  size_t rank = (size_t)r;
  if ((double)rank < r - 1e-9) rank++;
  if (rank < 1) rank = 1;
  return sorted[rank - 1];
}

double rb_jain_index(const double *x, size_t n) {
  if (x == NULL || n == 0) return -1;
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; i++) {
    if (x[i] < 0) return -1;
    sum += x[i];
    sq += x[i] * x[i];
  }
  if (sq == 0) return -1;
  return sum * sum / ((double)n * sq);
}

double rb_weighted_jain(const double *used, const double *weight, size_t n) {
  if (used == NULL || weight == NULL || n == 0) return -1;
  double su = 0, sw = 0;
  for (size_t i = 0; i < n; i++) {
    if (used[i] < 0 || weight[i] <= 0) return -1;
    su += used[i];
    sw += weight[i];
  }
  if (su == 0) return -1;
  double *x = malloc(n * sizeof *x);
  if (x == NULL) return -1;
  for (size_t i = 0; i < n; i++) x[i] = (used[i] / su) / (weight[i] / sw);
  double j = rb_jain_index(x, n);
  free(x);
  return j;
}

int rb_ratio(double num, double den, double *out) {
  if (!isfinite(num) || !isfinite(den) || den <= 0) return -1;
  *out = num / den;
  return 0;
}

bool rb_target_met(double median, double target, bool higher_better) {
  return higher_better ? median >= target : median <= target;
}

static const char *pct_fmt(double pct) {
  return pct >= 10 ? "MISSED by %.3g %s (%.0f%%)" : "MISSED by %.3g %s (%.2g%%)";
}

void rb_target_status(char *buf, size_t size, double median, double target,
                      bool higher_better, const char *unit) {
  if (buf == NULL || size == 0) return;
  if (rb_target_met(median, target, higher_better)) {
    snprintf(buf, size, "ok (%s%g)", higher_better ? ">=" : "<=", target);
    return;
  }
  double by = fabs(median - target);
  if (target == 0)
    snprintf(buf, size, "MISSED by %.3g %s", by, unit ? unit : "");
  else /* two digits below 10% (a 0.3% miss is not "0%") */
    snprintf(buf, size, pct_fmt(100.0 * by / fabs(target)), by, unit ? unit : "",
             100.0 * by / fabs(target));
}

int rb_sides_add(rb_sides *s, uint64_t t0, uint64_t posted, uint64_t first, uint64_t end,
                 size_t tasks) {
  if (tasks == 0 || posted < t0 || first < t0 || end < first) return -1;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    double *p = realloc(s->producer, cap * sizeof *p);
    if (p == NULL) return -1;
    s->producer = p;
    double *c = realloc(s->consumer, cap * sizeof *c);
    if (c == NULL) return -1;
    s->consumer = c;
    s->cap = cap;
  }
  s->producer[s->n] = (double)(posted - t0) / (double)tasks;
  s->consumer[s->n++] = (double)(end - first) / (double)tasks;
  return 0;
}

size_t rb_sides_measured(const rb_sides *s, const double **producer, const double **consumer) {
  if (s->n < 2) return 0;
  *producer = s->producer + 1;
  *consumer = s->consumer + 1;
  return s->n - 1;
}

void rb_sides_free(rb_sides *s) {
  free(s->producer);
  free(s->consumer);
  memset(s, 0, sizeof *s);
}

static bool key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool rb_key_valid(const char *key) {
  if (key == NULL) return false;
  size_t len = strlen(key);
  if (len == 0 || len >= RB_KEY_MAX) return false;
  int dots = 0;
  size_t part = 0;
  for (size_t i = 0; i < len; i++) {
    if (key[i] == '.') {
      if (part == 0) return false;
      dots++;
      part = 0;
    } else if (key_char(key[i])) {
      part++;
    } else {
      return false;
    }
  }
  return (dots == 2 || dots == 1) && part > 0;
}

int rb_key_make(char *buf, size_t size, const char *suite,
                const char *scenario, const char *figure) {
  if (buf == NULL || size == 0) return -1;
  buf[0] = '\0';
  if (suite == NULL || scenario == NULL || figure == NULL) return -1;
  int n = snprintf(buf, size, "%s.%s.%s", suite, scenario, figure);
  if (n < 0 || (size_t)n >= size || !rb_key_valid(buf)) {
    buf[0] = '\0';
    return -1;
  }
  return 0;
}

void rb_key_part(char *buf, size_t size, const char *s) {
  if (buf == NULL || size == 0) return;
  size_t i = 0;
  for (; s != NULL && s[i] != '\0' && i + 1 < size; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    buf[i] = key_char(c) ? c : '_';
  }
  buf[i] = '\0';
}

int rb_json_string(char *buf, size_t size, const char *s) {
  size_t o = 0;
#define PUT(ch)                   \
  do {                            \
    if (o + 1 >= size) return -1; \
    buf[o++] = (ch);              \
  } while (0)
  if (buf == NULL || size == 0) return -1;
  PUT('"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;
       p++) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      PUT('\\');
      PUT((char)c);
    } else if (c == '\n') {
      PUT('\\');
      PUT('n');
    } else if (c == '\t') {
      PUT('\\');
      PUT('t');
    } else if (c == '\r') {
      PUT('\\');
      PUT('r');
    } else if (c < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", c);
      for (int i = 0; esc[i]; i++) PUT(esc[i]);
    } else {
      PUT((char)c);
    }
  }
  PUT('"');
#undef PUT
  buf[o] = '\0';
  return (int)o;
}

int rb_suite_index(const char *name) {
  for (size_t i = 0; i < rb_suite_count; i++)
    if (name != NULL && strcmp(name, rb_suite_names[i]) == 0) return (int)i;
  return -1;
}

static int set_err(char *err, size_t errlen, const char *fmt, const char *a) {
  if (err != NULL && errlen > 0) snprintf(err, errlen, fmt, a ? a : "");
  return -1;
}

/* Marks each name of a comma-separated list; an unknown or empty name fails. */
static int parse_suites(const char *list, rb_options *out, char *err,
                        size_t errlen) {
  char name[64];
  const char *p = list;
  if (*p == '\0') return set_err(err, errlen, "--suite needs a name%s", "");
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0 || len >= sizeof name)
      return set_err(err, errlen, "bad suite list \"%s\"", list);
    memcpy(name, p, len);
    name[len] = '\0';
    int i = rb_suite_index(name);
    if (i < 0) return set_err(err, errlen, "unknown suite \"%s\" (see --list)", name);
    out->suites[i] = true;
    if (comma == NULL) break;
    p = comma + 1;
  }
  return 0;
}

int rb_parse_options(int argc, char *const *argv, rb_options *out, char *err,
                     size_t errlen) {
  memset(out, 0, sizeof *out);
  bool any_suite = false;
  int runs = 0;
  if (err != NULL && errlen > 0) err[0] = '\0';
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = NULL;
    if (strncmp(a, "--suite=", 8) == 0 || strncmp(a, "--runs=", 7) == 0 ||
        strncmp(a, "--out=", 6) == 0) {
      val = strchr(a, '=') + 1;
    }
    bool is_suite = strcmp(a, "--suite") == 0 || strncmp(a, "--suite=", 8) == 0;
    bool is_runs = strcmp(a, "--runs") == 0 || strncmp(a, "--runs=", 7) == 0;
    bool is_out = strcmp(a, "--out") == 0 || strncmp(a, "--out=", 6) == 0;
    if ((is_suite || is_runs || is_out) && val == NULL) {
      if (i + 1 >= argc) return set_err(err, errlen, "%s needs a value", a);
      val = argv[++i];
    }
    if (is_suite) {
      if (parse_suites(val, out, err, errlen) != 0) return -1;
      any_suite = true;
    } else if (is_runs) {
      char *end = NULL;
      long n = strtol(val, &end, 10);
      if (*val == '\0' || end == NULL || *end != '\0' || n < 1 ||
          n > RB_MAX_RUNS)
        return set_err(err, errlen, "--runs wants an integer 1..1000, not \"%s\"", val);
      runs = (int)n;
    } else if (is_out) {
      if (*val == '\0') return set_err(err, errlen, "--out needs a directory%s", "");
      out->out = val;
    } else if (strcmp(a, "--quick") == 0) {
      out->quick = true;
    } else if (strcmp(a, "--long") == 0) {
      out->long_run = true;
    } else if (strcmp(a, "--list") == 0) {
      out->list = true;
    } else if (strcmp(a, "--no-plots") == 0) {
      out->no_plots = true;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      out->help = true;
    } else {
      return set_err(err, errlen, "unknown argument \"%s\" (see --help)", a);
    }
  }
  if (!any_suite)
    for (size_t i = 0; i < rb_suite_count; i++) out->suites[i] = true;
  out->runs = runs ? runs : (out->quick ? RB_QUICK_RUNS : RB_DEFAULT_RUNS);
  return 0;
}
