/* bench/runner/harness.c: the registry of figures and the measuring loop of
 * ptsched-bench (see harness.h). Invariant: every registered key is valid
 * (rb_key_valid) and unique; a scenario that fails registers nothing and is
 * listed as unavailable with its reason, so no figure is ever made up.
 */
#define _GNU_SOURCE /* vasprintf */
#include "bench/runner/harness.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <jemalloc/jemalloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

uint64_t rb_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t work_iters = 1;
static volatile uint64_t work_sink;

void rb_work(void) {
  uint64_t x = work_sink + 1;
  for (uint64_t i = 0; i < work_iters; i++) x = x * 6364136223846793005u + 1442695040888963407u;
  work_sink = x;
}

void rb_work_calibrate(uint64_t ns) {
  work_iters = 100000;
  uint64_t dt = UINT64_MAX;
  for (int i = 0; i < 20; i++) {
    uint64_t t0 = rb_now_ns();
    rb_work();
    uint64_t d = rb_now_ns() - t0;
    if (d < dt) dt = d;
  }
  work_iters = dt ? (uint64_t)(100000.0 * (double)ns / (double)dt) : 1000;
  if (work_iters == 0) work_iters = 1;
}

void rb_sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void rb_wait_ready(atomic_int *ready) {
  while (atomic_load_explicit(ready, memory_order_acquire) == 0) sched_yield();
  rb_sleep_ns(1000000);
}

void rb_sides_record(rb_ctx *ctx, rb_sides *s, const char *stream) {
  char key[RB_KEY_MAX];
  const double *producer, *consumer;
  size_t n = rb_sides_measured(s, &producer, &consumer);
  if (n > 0) {
    snprintf(key, sizeof key, "%s.producer_ns_per_post", stream);
    rb_record(ctx, key, "ns", RB_INFO, producer, n);
    rb_note(ctx, key, "the producer's posting loop alone, over its posts");
    snprintf(key, sizeof key, "%s.consumer_ns_per_task", stream);
    rb_record(ctx, key, "ns", RB_INFO, consumer, n);
    rb_note(ctx, key, "the consumer from its first task to its last, over the tasks");
  }
  rb_sides_free(s);
}

void rb_spin_ns(uint64_t ns) {
  uint64_t end = rb_now_ns() + ns;
  while (rb_now_ns() < end) {
  }
}

size_t rb_n(const rb_ctx *ctx, size_t n, size_t lo) {
  size_t v = (size_t)((double)n * ctx->size);
  return v < lo ? lo : v;
}

rb_metric *rb_find(rb_ctx *ctx, const char *key) {
  for (size_t i = 0; i < ctx->nmetrics; i++)
    if (strcmp(ctx->metrics[i].key, key) == 0) return &ctx->metrics[i];
  return NULL;
}

rb_metric *rb_record(rb_ctx *ctx, const char *key, const char *unit,
                     rb_role role, const double *samples, size_t n) {
  if (!rb_key_valid(key)) {
    fprintf(stderr, "ptsched-bench: internal error: bad key \"%s\"\n", key);
    abort();
  }
  if (n == 0) {
    rb_unavailable_add(ctx, key, "no sample");
    return NULL;
  }
  rb_metric *m = rb_find(ctx, key);
  if (m != NULL) {
    free(m->samples);
  } else {
    if (ctx->nmetrics == ctx->capmetrics) {
      size_t cap = ctx->capmetrics ? ctx->capmetrics * 2 : 64;
      rb_metric *p = realloc(ctx->metrics, cap * sizeof *p);
      if (p == NULL) abort();
      ctx->metrics = p;
      ctx->capmetrics = cap;
    }
    m = &ctx->metrics[ctx->nmetrics++];
  }
  memset(m, 0, sizeof *m);
  snprintf(m->key, sizeof m->key, "%s", key);
  snprintf(m->unit, sizeof m->unit, "%s", unit);
  m->role = role;
  m->samples = malloc(n * sizeof *m->samples);
  if (m->samples == NULL) abort();
  memcpy(m->samples, samples, n * sizeof *samples);
  m->nsamples = n;
  rb_summarize(samples, n, &m->sum);
  return m;
}

rb_metric *rb_measure(rb_ctx *ctx, const char *key, const char *unit,
                      rb_role role, rb_sample_fn fn, void *arg) {
  double warm = fn(arg); /* discarded: caches, page faults, pools */
  if (warm < 0) {
    rb_unavailable_add(ctx, key, "scenario failed (warm-up run)");
    return NULL;
  }
  double *v = malloc((size_t)ctx->runs * sizeof *v);
  if (v == NULL) abort();
  for (int i = 0; i < ctx->runs; i++) {
    v[i] = fn(arg);
    if (v[i] < 0) {
      free(v);
      rb_unavailable_add(ctx, key, "scenario failed (run %d)", i + 1);
      return NULL;
    }
  }
  rb_metric *m = rb_record(ctx, key, unit, role, v, (size_t)ctx->runs);
  free(v);
  return m;
}

void rb_measure_group(rb_ctx *ctx, const rb_spec *specs, size_t n) {
  double *v = calloc(n * (size_t)ctx->runs, sizeof *v);
  bool *ok = calloc(n, sizeof *ok);
  if (v == NULL || ok == NULL) abort();
  for (size_t i = 0; i < n; i++) {
    ok[i] = specs[i].fn(specs[i].arg) >= 0; /* warm-up, discarded */
    if (!ok[i]) rb_unavailable_add(ctx, specs[i].key, "scenario failed (warm-up run)");
  }
  for (int r = 0; r < ctx->runs; r++) {
    for (size_t i = 0; i < n; i++) {
      if (!ok[i]) continue;
      double x = specs[i].fn(specs[i].arg);
      if (x < 0) {
        ok[i] = false;
        rb_unavailable_add(ctx, specs[i].key, "scenario failed (run %d)", r + 1);
        continue;
      }
      v[i * (size_t)ctx->runs + (size_t)r] = x;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (ok[i])
      rb_record(ctx, specs[i].key, specs[i].unit, specs[i].role,
                v + i * (size_t)ctx->runs, (size_t)ctx->runs);
  free(v);
  free(ok);
}

void rb_compare(rb_ctx *ctx, const char *key, const char *floor_key, ...) {
  rb_metric *m = rb_find(ctx, key);
  if (m == NULL) return;
  snprintf(m->floor_key, sizeof m->floor_key, "%s", floor_key ? floor_key : "");
  va_list ap;
  va_start(ap, floor_key);
  const char *p;
  m->npeers = 0;
  while ((p = va_arg(ap, const char *)) != NULL && m->npeers < RB_MAX_PEERS)
    snprintf(m->peer_keys[m->npeers++], RB_KEY_MAX, "%s", p);
  va_end(ap);
}

void rb_target(rb_ctx *ctx, const char *key, double target, const char *text) {
  rb_metric *m = rb_find(ctx, key);
  if (m == NULL) return;
  m->has_target = true;
  m->target = target;
  snprintf(m->target_text, sizeof m->target_text, "%s", text);
}

void rb_target_from(rb_ctx *ctx, const char *key, const char *from) {
  rb_metric *m = rb_find(ctx, key);
  if (m == NULL) return;
  snprintf(m->target_from, sizeof m->target_from, "%s", from);
}

rb_metric *rb_ratio_info(rb_ctx *ctx, const char *ratio_key, const char *num_key,
                         const char *den_key) {
  rb_metric *a = rb_find(ctx, num_key), *b = rb_find(ctx, den_key);
  double r;
  if (a == NULL || b == NULL || rb_ratio(a->sum.median, b->sum.median, &r) != 0)
    return NULL;
  rb_metric *m = rb_record(ctx, ratio_key, "ratio", RB_INFO, &r, 1);
  rb_note(ctx, ratio_key, "median of %s over median of %s, same run", num_key, den_key);
  return m;
}

rb_metric *rb_ratio_target(rb_ctx *ctx, const char *ratio_key,
                           const char *num_key, const char *den_key,
                           double target, const char *text, const char *from) {
  rb_metric *m = rb_ratio_info(ctx, ratio_key, num_key, den_key);
  if (m == NULL) return NULL;
  rb_target(ctx, ratio_key, target, text);
  rb_target_from(ctx, ratio_key, from);
  return m;
}

void rb_note(rb_ctx *ctx, const char *key, const char *fmt, ...) {
  rb_metric *m = rb_find(ctx, key);
  if (m == NULL) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->note, sizeof m->note, fmt, ap);
  va_end(ap);
}

void rb_unavailable_add(rb_ctx *ctx, const char *what, const char *fmt, ...) {
  if (ctx->nunavailable >= sizeof ctx->unavailable / sizeof ctx->unavailable[0])
    return;
  rb_unavailable *u = &ctx->unavailable[ctx->nunavailable++];
  snprintf(u->what, sizeof u->what, "%s", what);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(u->why, sizeof u->why, fmt, ap);
  va_end(ap);
  fprintf(stderr, "  [%s] not available: %s: %s\n",
          ctx->suite ? ctx->suite : "-", u->what, u->why);
}

void rb_progress(rb_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  double t = (double)rb_now_ns() / 1e9 - ctx->t_start;
  fprintf(stderr, "  [%6.1fs %s] ", t, ctx->suite ? ctx->suite : "-");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

FILE *rb_data_open(rb_ctx *ctx, const char *name) {
  char path[2048];
  if (mkdir(ctx->datadir, 0755) != 0 && errno != EEXIST) return NULL;
  snprintf(path, sizeof path, "%s/%s", ctx->datadir, name);
  return fopen(path, "w");
}

void rb_plot_add(rb_ctx *ctx, const char *name, const char *title,
                 const char *fmt, ...) {
  if (ctx->nplots >= sizeof ctx->plots / sizeof ctx->plots[0]) return;
  rb_plot *p = &ctx->plots[ctx->nplots];
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) s = NULL;
  va_end(ap);
  if (s == NULL) return;
  snprintf(p->name, sizeof p->name, "%s", name);
  snprintf(p->title, sizeof p->title, "%s", title);
  p->script = s;
  ctx->nplots++;
}

int64_t rb_allocated_bytes(void) {
  uint64_t epoch = 1;
  size_t sz = sizeof epoch;
  /* stats.* are snapshots refreshed only when "epoch" is written. */
  if (mallctl("epoch", &epoch, &sz, &epoch, sz) != 0) return -1;
  size_t allocated = 0;
  sz = sizeof allocated;
  if (mallctl("stats.allocated", &allocated, &sz, NULL, 0) != 0) return -1;
  return (int64_t)allocated;
}

const volatile uint64_t *rb_thread_allocatedp(void) {
  static _Thread_local const volatile uint64_t *mine;
  static _Thread_local bool tried;
  if (!tried) {
    uint64_t *p = NULL;
    size_t sz = sizeof p;
    tried = true;
    if (mallctl("thread.allocatedp", &p, &sz, NULL, 0) == 0) mine = p;
  }
  return mine;
}

/* target: the figure is held to 0 (issue 12: the one-loop forms and the
 * request form of the cross-thread stream); otherwise it is information:
 * the node-cache forms allocate in the benchmark only while the producer's
 * backlog is past the cache's cap (docs/sync.md). */
void rb_record_alloc(rb_ctx *ctx, const char *key, double posting, double consuming,
                     size_t tasks, const char *what, bool target) {
  bool two = !isnan(consuming);
  if (posting < 0 || (two && consuming < 0) || tasks == 0) {
    rb_unavailable_add(ctx, key, "jemalloc's thread.allocatedp not available");
    return;
  }
  double bytes = posting + (two ? consuming : 0);
  double v = bytes / (double)tasks;
  rb_record(ctx, key, "B", RB_INFO, &v, 1);
  if (target) {
    rb_target(ctx, key, 0, "0 bytes allocated per task in steady state");
    rb_target_from(ctx, key, "issue 12");
  }
  if (two)
    rb_note(ctx, key, "last run: %.0f bytes over %zu tasks (posting thread %.0f, consuming %.0f; "
            "jemalloc thread.allocated of %s)", bytes, tasks, posting, consuming, what);
  else
    rb_note(ctx, key, "last run: %.0f bytes over %zu tasks (jemalloc thread.allocated of %s)",
            bytes, tasks, what);
}

/* ---- producer and consumer on two CPUs ---- */

static cpu_set_t pin_saved;
static int pin_cpu[2];
static atomic_int pin_on;

static void pin_to(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  (void)pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

bool rb_pin_begin(void) {
  if (sched_getaffinity(0, sizeof pin_saved, &pin_saved) != 0) return false;
  int k = 0;
  for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
    if (CPU_ISSET(c, &pin_saved)) pin_cpu[k++] = c;
  if (k < 2) return false;
  /* PTSCHED_BENCH_PIN_SWAP=1: the producer on the second CPU, the consumer
   * on the first (the two vCPUs of the project's VM may differ in speed;
   * docs/benchmarks.md, crossthread). */
  const char *swap = getenv("PTSCHED_BENCH_PIN_SWAP");
  if (swap != NULL && swap[0] == '1') {
    int c = pin_cpu[0];
    pin_cpu[0] = pin_cpu[1];
    pin_cpu[1] = c;
  }
  pin_to(pin_cpu[0]);
  atomic_store(&pin_on, 1);
  return true;
}

void rb_pin_consumer(void) {
  if (atomic_load(&pin_on)) pin_to(pin_cpu[1]);
}

void rb_pin_end(void) {
  if (!atomic_exchange(&pin_on, 0)) return;
  (void)pthread_setaffinity_np(pthread_self(), sizeof pin_saved, &pin_saved);
}
