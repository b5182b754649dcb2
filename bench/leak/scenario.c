/* bench/leak/scenario.c: secrets, attackers and the two harnesses of the
 * study (virtual time over agents/vthread.c, real clock over a worker pool),
 * the per-window observations and the analysis of a trace.
 *
 * Invariant: the attacker and the victim are the same task code in both
 * modes; only the clock (a read) and the work (a charge in virtual time, a
 * spin in real time) differ, through the env below. The attacker learns
 * nothing but its own start times, as the §5 threat model says: every
 * observation is computed from the attacker's trace alone.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "agents/study.h"
#include "bench/leak/leak.h"
#include "ptsched.h"

/* ---- names ---- */

const char *lk_policy_key(int p) {
  static const char *const k[LK_POLICIES] = {"strict", "round_robin", "fair", "randomized",
                                             "time_partitioned", "quantized",
                                             "separate_threads"};
  return (unsigned)p < LK_POLICIES ? k[p] : "unknown";
}
const char *lk_secret_name(lk_secret s) {
  return s == LK_S1 ? "s1" : s == LK_S2 ? "s2" : "s3";
}
const char *lk_attacker_name(lk_attacker a) {
  static const char *const k[LK_ATTACKERS + 1] = {"chain", "flood", "pairs", "counter", "inbox"};
  return (unsigned)a <= LK_INBOX ? k[a] : "unknown";
}
double lk_load1(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f != NULL) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

const char *lk_work_name(lk_work w) {
  static const char *const k[] = {"spin", "none", "arith", "mem"};
  return (unsigned)w <= LK_WORK_MEM ? k[w] : "unknown";
}

/* ---- the environment: clock and work ---- */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static void spin_ns(uint64_t ns) {
  uint64_t end = mono_ns() + ns;
  while (mono_ns() < end) {
  }
}
typedef struct env {
  uint64_t (*now)(void);
  void (*work)(uint64_t ns);
} env;
static const env virt_env = {pts__vthread_clock, pts__vthread_charge};
static const env real_env = {mono_ns, spin_ns};

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

void lk_trace_free(lk_trace *tr) {
  free(tr->t);
  free(tr->kind);
  free(tr->secret);
  free(tr->obs);
  free(tr->lat_ns);
  free(tr->excluded);
  free(tr->keys);
  memset(tr, 0, sizeof *tr);
}

/* ---- the attacker (owner thread of its loop) ---- */

typedef struct attacker {
  const env *e;
  lk_attacker kind;
  pts_scheduler *sched;
  lk_trace *tr;
  uint64_t origin; /* clock value of window 0 */
  uint64_t task_ns;
  _Atomic bool stop;
  int pending; /* flood: tasks of the current batch not yet run */
  pts_agent *self, *peer; /* inbox: the attacker's agent and the victim's */
} attacker;

#define FLOOD_BATCH 64

static void att_record(attacker *a, uint8_t kind) {
  uint64_t t = a->e->now();
  if (a->kind == LK_COUNTER) t -= t % LK_COUNTER_TICK_NS; /* coarse clock */
  lk_trace *tr = a->tr;
  if (tr->n < tr->cap) {
    tr->t[tr->n] = (int64_t)(t - a->origin);
    tr->kind[tr->n] = kind;
    tr->n++;
  }
}

static void att_post(attacker *a, pts_task_fn fn, void *data, int prio) {
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = prio;
  (void)pts_scheduler_post_task_cb(a->sched, fn, data, &o);
}

static void att_task(void *data, int status);
static void att_b(void *data, int status);

/* The inbox attacker's round trip: the probe runs as a task of the victim's
 * agent (on the victim's thread) and posts the attacker's next task back. */
static pts_value inbox_reply(void *data, int status) {
  att_task(data, status);
  return pts_undefined();
}
static pts_value inbox_probe(void *data, int status) {
  attacker *a = data;
  if (status == 0) (void)pts_agent_post_task(a->self, NULL, inbox_reply, a, NULL, NULL, NULL);
  return pts_undefined();
}

static void att_round(attacker *a) {
  if (atomic_load_explicit(&a->stop, memory_order_relaxed)) return;
  switch (a->kind) {
    case LK_FLOOD:
      a->pending = FLOOD_BATCH;
      for (int i = 0; i < FLOOD_BATCH; i++) att_post(a, att_task, a, PTS_PRIORITY_USER_VISIBLE);
      break;
    case LK_INBOX:
      (void)pts_agent_post_task(a->peer, NULL, inbox_probe, a, NULL, NULL, NULL);
      break;
    case LK_PAIRS: /* a user-blocking probe and a background tail */
      att_post(a, att_task, a, PTS_PRIORITY_USER_BLOCKING);
      att_post(a, att_b, a, PTS_PRIORITY_BACKGROUND);
      break;
    default:
      att_post(a, att_task, a, PTS_PRIORITY_USER_VISIBLE);
  }
}

static void att_task(void *data, int status) {
  attacker *a = data;
  if (status != 0) return;
  att_record(a, 0);
  a->e->work(a->task_ns);
  if (a->kind == LK_PAIRS) return; /* the tail re-posts */
  if (a->kind == LK_FLOOD && --a->pending > 0) return;
  att_round(a);
}

static void att_b(void *data, int status) {
  attacker *a = data;
  if (status != 0) return;
  att_record(a, 1);
  a->e->work(a->task_ns);
  att_round(a);
}

/* ---- the victim ---- */

typedef struct vtask {
  struct victim *v;
  uint64_t posted;
  uint64_t work;
  bool measure;
} vtask;

typedef struct victim {
  const env *e;
  lk_trace *tr;
  uint64_t busy;
  uint64_t posted;       /* harness side */
  _Atomic uint64_t done; /* tasks started; read by the real-clock harness */
  lk_work work;          /* real clock: what the task's time is spent on */
  uint8_t *buf;          /* LK_WORK_MEM: VICTIM_BUF bytes */
} victim;

#define VICTIM_BUF (2u << 20)
#define LINE 64u

/* The victim's work of ns on the real clock, per lk_work (leak.h). */
static void victim_work(victim *v, uint64_t ns) {
  if (v->e != &real_env || v->work == LK_WORK_SPIN) {
    v->e->work(ns);
    return;
  }
  uint64_t end = mono_ns() + ns;
  if (v->work == LK_WORK_ARITH) {
    volatile uint64_t sink;
    uint64_t x = ns | 1;
    do {
      for (int i = 0; i < 256; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      sink = x;
    } while (mono_ns() < end);
    (void)sink;
  } else if (v->work == LK_WORK_MEM && v->buf != NULL) {
    size_t off = 0;
    do {
      for (int i = 0; i < 64; i++, off = (off + LINE) % VICTIM_BUF) v->buf[off]++;
    } while (mono_ns() < end);
  }
}

static void victim_task(void *data, int status) {
  vtask *t = data;
  if (status == 0) {
    victim *v = t->v;
    uint64_t s = v->e->now();
    if (t->measure && v->tr->nlat < v->tr->caplat)
      v->tr->lat_ns[v->tr->nlat++] = (double)(s - t->posted);
    /* Relaxed: a count the harness snapshots; the drain orders the rest. */
    atomic_fetch_add_explicit(&v->done, 1, memory_order_relaxed);
    victim_work(v, t->work);
    v->busy += t->work;
  }
  free(t);
}

static int victim_post(victim *v, pts_scheduler *s, uint64_t now, uint64_t work, int prio,
                       bool measure) {
  vtask *t = malloc(sizeof *t);
  if (t == NULL) return PTS_ENOMEM;
  *t = (vtask){v, now, work, measure};
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = prio;
  int rc = pts_scheduler_post_task_cb(s, victim_task, t, &o);
  if (rc != 0) free(t);
  else v->posted++;
  return rc;
}

/* ---- the secret schedule ---- */

typedef struct plan {
  lk_secret s;
  uint32_t windows;
  uint8_t *bits;      /* per window: S1 on/off, S2 ub/bg, S3 burst starts */
  uint64_t *kt;       /* S3: keystroke times (ns from window 0) */
  size_t nk;
} plan;

static int plan_make(const lk_config *c, lk_trace *tr, plan *p) {
  memset(p, 0, sizeof *p);
  p->s = c->secret;
  p->windows = c->windows;
  p->bits = calloc(c->windows, 1);
  tr->secret = calloc(c->windows, 1);
  if (p->bits == NULL || tr->secret == NULL) return PTS_ENOMEM;
  uint64_t s = c->seed * 7919 + 17;
  if (c->secret == LK_S3) {
    uint64_t span = (uint64_t)c->windows * LK_WINDOW_NS;
    p->kt = malloc((span / 100000000u + 2) * sizeof *p->kt);
    if (p->kt == NULL) return PTS_ENOMEM;
    uint64_t t = 100000000u + rng_next(&s) % 200000001u;
    while (t < span) {
      p->kt[p->nk++] = t;
      p->bits[t / LK_WINDOW_NS] = 1;
      t += 100000000u + rng_next(&s) % 200000001u;
    }
  } else {
    for (uint32_t w = 0; w < c->windows; w++)
      p->bits[w] = c->bits ? c->bits[w] : (uint8_t)(rng_next(&s) & 1);
  }
  memcpy(tr->secret, p->bits, c->windows);
  if (p->nk > 0) {
    tr->keys = malloc(p->nk * sizeof *tr->keys);
    if (tr->keys == NULL) return PTS_ENOMEM;
    memcpy(tr->keys, p->kt, p->nk * sizeof *tr->keys);
    tr->nkeys = p->nk;
  }
  return 0;
}

static void plan_free(plan *p) {
  free(p->bits);
  free(p->kt);
}

static int trace_alloc(lk_trace *tr, uint32_t windows, size_t per_window) {
  memset(tr, 0, sizeof *tr);
  tr->windows = windows;
  tr->cap = (size_t)windows * per_window + 4096;
  tr->t = malloc(tr->cap * sizeof *tr->t);
  tr->kind = malloc(tr->cap);
  tr->caplat = (size_t)windows * 4 + 64;
  tr->lat_ns = malloc(tr->caplat * sizeof *tr->lat_ns);
  tr->obs = calloc(windows, sizeof *tr->obs);
  return tr->t && tr->kind && tr->lat_ns && tr->obs ? 0 : PTS_ENOMEM;
}

/* ---- virtual time ---- */

typedef struct vrun {
  plan p;
  victim v;
  pts_scheduler *vs;
  uint64_t origin; /* virtual time of window 0 */
  uint32_t next_w;
  size_t next_k;
} vrun;

/* The harness's events: the victim's posts at window starts (S1, S2) or at
 * keystroke times (S3). */
static uint64_t vrun_event(void *ctx, uint64_t now) {
  vrun *r = ctx;
  if (r->p.s == LK_S3) {
    while (r->next_k < r->p.nk && r->origin + r->p.kt[r->next_k] <= now) {
      for (int i = 0; i < LK_BURST_TASKS; i++)
        (void)victim_post(&r->v, r->vs, now, LK_BURST_TASK_NS, PTS_PRIORITY_USER_BLOCKING, i == 0);
      r->next_k++;
    }
    return r->next_k < r->p.nk ? r->origin + r->p.kt[r->next_k] : UINT64_MAX;
  }
  /* Warm-up windows before window 0 repeat the secret's pattern so the
   * quantized policy's levels settle; they are not observed. */
  while (r->origin + (uint64_t)r->next_w * LK_WINDOW_NS <= now && r->next_w < r->p.windows) {
    uint8_t b = r->p.bits[r->next_w];
    if (r->p.s == LK_S1 && b)
      (void)victim_post(&r->v, r->vs, now, LK_VICTIM_TASK_NS, PTS_PRIORITY_USER_BLOCKING, true);
    else if (r->p.s == LK_S2)
      (void)victim_post(&r->v, r->vs, now, LK_VICTIM_TASK_NS,
                        b ? PTS_PRIORITY_USER_BLOCKING : PTS_PRIORITY_BACKGROUND, b);
    r->next_w++;
  }
  return r->next_w < r->p.windows ? r->origin + (uint64_t)r->next_w * LK_WINDOW_NS : UINT64_MAX;
}

/* Warm-up events: the same load as the run (a fixed alternating pattern),
 * so the levels settle on what the run needs whatever its secret. */
typedef struct wrun {
  vrun *r;
  uint64_t end;
  uint32_t w;
} wrun;
static uint64_t wrun_event(void *ctx, uint64_t now) {
  wrun *x = ctx;
  vrun *r = x->r;
  if (now >= x->end) return UINT64_MAX;
  if (r->p.s == LK_S1 && (x->w & 1))
    (void)victim_post(&r->v, r->vs, now, LK_VICTIM_TASK_NS, PTS_PRIORITY_USER_BLOCKING, false);
  else if (r->p.s == LK_S2)
    (void)victim_post(&r->v, r->vs, now, LK_VICTIM_TASK_NS,
                      (x->w & 1) ? PTS_PRIORITY_USER_BLOCKING : PTS_PRIORITY_BACKGROUND, false);
  x->w++;
  uint64_t n = now + LK_WINDOW_NS;
  return n < x->end ? n : x->end;
}

int lk_run_virtual(const lk_config *c, lk_trace *tr) {
  if (c == NULL || tr == NULL || c->windows == 0 || (unsigned)c->policy >= LK_POLICIES ||
      (unsigned)c->attacker >= LK_ATTACKERS)
    return PTS_EINVAL;
  int rc = trace_alloc(tr, c->windows, LK_WINDOW_NS / LK_ATTACK_TASK_NS + 8);
  vrun r;
  memset(&r, 0, sizeof r);
  if (rc == 0) rc = plan_make(c, tr, &r.p);
  pts__vthread *vt[2] = {NULL, NULL};
  attacker a;
  memset(&a, 0, sizeof a);
  if (rc == 0) {
    bool sep = c->policy == LK_SEPARATE;
    pts__vthread_options o;
    memset(&o, 0, sizeof o);
    o.policy = sep ? PTS_POLICY_ROUND_ROBIN : c->policy;
    o.seed = c->seed;
    o.step_overhead_ns = c->overhead_ns;
    for (int i = 0; i < (sep ? 2 : 1) && rc == 0; i++) rc = pts__vthread_new(&o, &vt[i]);
    pts_loop *al = NULL, *vl = NULL;
    if (rc == 0) rc = pts__vthread_add(vt[0], 1, &al) < 0 ? PTS_ENOMEM : 0;
    if (rc == 0) rc = pts__vthread_add(sep ? vt[1] : vt[0], 1, &vl) < 0 ? PTS_ENOMEM : 0;
    if (rc == 0) {
      a.e = &virt_env;
      a.kind = c->attacker;
      a.sched = pts_global_scheduler(pts_loop_default_global(al));
      a.tr = tr;
      a.task_ns = LK_ATTACK_TASK_NS;
      r.v.e = &virt_env;
      r.v.tr = tr;
      r.vs = pts_global_scheduler(pts_loop_default_global(vl));
      att_round(&a);
      pts__vthread *victim_t = sep ? vt[1] : vt[0];
      /* Warm-up, then the observed windows (a.origin is where the trace's
       * time 0 lies; samples before it are dropped by lk_observe). */
      wrun w = {&r, c->warmup_ns, 0};
      r.origin = c->warmup_ns;
      a.origin = r.origin;
      uint64_t end = r.origin + (uint64_t)c->windows * LK_WINDOW_NS;
      if (sep) {
        /* Two threads that never interact: run each to the end. */
        pts__vthread_set_events(victim_t, wrun_event, &w);
        pts__vthread_run(victim_t, c->warmup_ns);
        pts__vthread_set_events(victim_t, vrun_event, &r);
        pts__vthread_run(victim_t, end);
        pts__vthread_run(vt[0], end);
      } else {
        pts__vthread_set_events(vt[0], wrun_event, &w);
        pts__vthread_run(vt[0], c->warmup_ns);
        tr->nlat = 0;
        r.v.busy = 0;
        r.v.posted = 0;
        atomic_store(&r.v.done, 0);
        uint64_t ab = pts__vthread_busy_ns(vt[0], 0);
        pts__vthread_set_events(vt[0], vrun_event, &r);
        pts__vthread_run(vt[0], end);
        tr->attacker_busy_ns = pts__vthread_busy_ns(vt[0], 0) - ab;
      }
      if (sep) tr->attacker_busy_ns = pts__vthread_busy_ns(vt[0], 0);
      tr->victim_busy_ns = r.v.busy;
      tr->victim_posted = r.v.posted;
      tr->victim_done = atomic_load(&r.v.done);
      tr->elapsed_ns = end - r.origin;
      atomic_store(&a.stop, true);
    }
  }
  for (int i = 0; i < 2; i++) pts__vthread_free(vt[i]); /* frees pending tasks */
  plan_free(&r.p);
  if (rc == 0) lk_observe(tr, c->attacker);
  return rc;
}

/* ---- observations ---- */

void lk_observe(lk_trace *tr, lk_attacker kind) {
  uint32_t W = tr->windows;
  double *maxa = calloc(W, sizeof *maxa), *maxb = calloc(W, sizeof *maxb);
  uint32_t ticks = LK_WINDOW_NS / LK_COUNTER_TICK_NS;
  uint32_t *cnt = calloc((size_t)W * ticks, sizeof *cnt);
  if (maxa == NULL || maxb == NULL || cnt == NULL) goto out;
  for (uint32_t w = 0; w < W; w++) tr->obs[w] = 0;
  for (size_t i = 0; i < tr->n; i++) {
    if (tr->t[i] < 0) continue;
    uint64_t w = (uint64_t)tr->t[i] / LK_WINDOW_NS;
    if (w >= W) break;
    double gap = i > 0 ? (double)(tr->t[i] - tr->t[i - 1]) : 0;
    switch (kind) {
      case LK_FLOOD:
        tr->obs[w] += 1;
        break;
      case LK_PAIRS:
        if (tr->kind[i]) { if (gap > maxb[w]) maxb[w] = gap; }
        else if (gap > maxa[w]) maxa[w] = gap;
        break;
      case LK_COUNTER:
        cnt[w * ticks + ((uint64_t)tr->t[i] % LK_WINDOW_NS) / LK_COUNTER_TICK_NS]++;
        break;
      default:
        if (gap > tr->obs[w]) tr->obs[w] = gap;
    }
  }
  if (kind == LK_PAIRS)
    for (uint32_t w = 0; w < W; w++) tr->obs[w] = maxb[w] - maxa[w];
  if (kind == LK_COUNTER) {
    for (uint32_t w = 0; w < W; w++) {
      uint32_t m = UINT32_MAX;
      for (uint32_t k = 0; k < ticks; k++)
        if (cnt[w * ticks + k] < m) m = cnt[w * ticks + k];
      tr->obs[w] = m;
    }
  }
out:
  free(maxa);
  free(maxb);
  free(cnt);
}

#define S3_MATCH_NS 5000000 /* a detection within 5 ms of a keystroke is it */

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* S3, Loophole's measure (Vila and Koepf 2017, section 5.3: the error of
 * recovered inter-keystroke intervals): keystroke times read from the
 * attacker's own trace (the start of each gap above thr, detections closer
 * than 5 ms merged), each true keystroke (moved by shift) matched to the
 * nearest detection within 5 ms; mean and median |error| of the intervals
 * between consecutive matched keystrokes (ms, -1 with none). */
static void s3_intervals(const lk_trace *tr, double thr, uint64_t shift, double *matched,
                         double *mean_ms, double *median_ms) {
  *matched = 0;
  *mean_ms = *median_ms = -1;
  if (tr->nkeys < 2 || tr->n < 2) return;
  int64_t *det = malloc(tr->n * sizeof *det);
  int64_t *m = malloc(tr->nkeys * sizeof *m);
  double *err = malloc(tr->nkeys * sizeof *err);
  size_t nd = 0, ne = 0, nm = 0;
  if (det == NULL || m == NULL || err == NULL) goto out;
  for (size_t i = 1; i < tr->n; i++) {
    if (tr->t[i - 1] < 0) continue;
    if ((double)(tr->t[i] - tr->t[i - 1]) <= thr) continue;
    if (nd > 0 && tr->t[i - 1] - det[nd - 1] < S3_MATCH_NS) continue;
    det[nd++] = tr->t[i - 1];
  }
  size_t j = 0;
  for (size_t k = 0; k < tr->nkeys; k++) {
    int64_t kt = (int64_t)(tr->keys[k] + shift), best = -1;
    while (j < nd && det[j] < kt - S3_MATCH_NS) j++;
    for (size_t q = j; q < nd && det[q] <= kt + S3_MATCH_NS; q++)
      if (best < 0 || llabs(det[q] - kt) < llabs(det[best] - kt)) best = (int64_t)q;
    m[k] = best < 0 ? INT64_MIN : det[best];
    nm += best >= 0;
  }
  for (size_t k = 0; k + 1 < tr->nkeys; k++) {
    if (m[k] == INT64_MIN || m[k + 1] == INT64_MIN) continue;
    double d = (double)(m[k + 1] - m[k]) - (double)((int64_t)tr->keys[k + 1] - (int64_t)tr->keys[k]);
    err[ne++] = fabs(d) / 1e6;
  }
  *matched = (double)nm / (double)tr->nkeys;
  if (ne > 0) {
    double sum = 0;
    for (size_t k = 0; k < ne; k++) sum += err[k];
    qsort(err, ne, sizeof *err, cmp_dbl);
    *mean_ms = sum / (double)ne;
    *median_ms = err[ne / 2];
  }
out:
  free(det);
  free(m);
  free(err);
}

int lk_analyse(const lk_trace *tr, lk_secret s, int shuffles, uint64_t seed, lk_result *out) {
  size_t n = 0;
  int *x = malloc(tr->windows * sizeof *x), *y = malloc(tr->windows * sizeof *y);
  double *obs = malloc(tr->windows * sizeof *obs);
  if (x == NULL || y == NULL || obs == NULL) {
    free(x);
    free(y);
    free(obs);
    return PTS_ENOMEM;
  }
  memset(out, 0, sizeof *out);
  uint64_t c[2] = {0, 0};
  for (size_t i = 0; i < tr->windows; i++) {
    if (tr->excluded != NULL && tr->excluded[i]) continue;
    x[n] = tr->secret[i] ? 1 : 0;
    obs[n] = tr->obs[i];
    c[x[n++]]++;
  }
  if (n == 0) { /* every window left out */
    free(x);
    free(y);
    free(obs);
    return PTS_EINVAL;
  }
  int ky = lk_bin(obs, n, 16, y);
  out->bins = ky;
  out->h_secret = lk_entropy(c, 2, false);
  out->mi_plugin = lk_mi(x, y, n, 2, ky, false);
  out->mi_mm = lk_mi(x, y, n, 2, ky, true);
  /* No shuffles asked for (S3's callers): no floor and no limit. */
  const double q[2] = {0.95, LK_DETECT_Q};
  double fl[2];
  lk_mi_null_quantiles(x, y, n, 2, ky, shuffles > 0 ? LK_DETECT_SHUFFLES : 0, seed, q, fl, 2);
  out->floor95 = fl[0];
  out->floor_detect = fl[1];
  lk_mi_ci95(x, y, n, 2, ky, shuffles, seed + 1, &out->ci_lo, &out->ci_hi);
  out->used = (uint32_t)n;
  out->detected = out->mi_mm > out->floor_detect && out->mi_mm > 0;
  /* The reported figure: corrected MI, 0 when not above the detection
   * limit (what chance alone gives at this N, over the figures a run
   * judges, is not a leak we can claim), never more than the secret's
   * entropy. */
  out->bits = out->detected ? out->mi_mm : 0;
  if (out->bits > out->h_secret) out->bits = out->h_secret;
  out->accuracy = lk_classify(x, y, n, 2, ky);
  out->fano_acc = lk_fano_max_accuracy(out->h_secret, out->bits, 2);
  out->bits_per_s = out->bits * (1e9 / LK_WINDOW_NS);
  if (s == LK_S3) {
    out->youden = lk_youden(tr->obs, tr->secret, tr->windows);
    double thr = lk_youden_threshold(tr->obs, tr->secret, tr->windows), dummy, med;
    s3_intervals(tr, thr, 0, &out->s3_matched, &out->s3_interval_err_ms,
                 &out->s3_interval_err_median_ms);
    s3_intervals(tr, thr, 50000000u, &dummy, &out->s3_interval_err_chance_ms, &med);
  }
  free(x);
  free(y);
  free(obs);
  return 0;
}

/* ---- costs in virtual time ---- */

#define COST_TASK_NS 20000u
#define COST_PARTS 5 /* real clock: the span is measured in parts */
#define IDLE_PERIOD_NS 20000000u

typedef struct chain {
  pts_scheduler *s;
  uint64_t done;
  int prio;
} chain;
static void chain_task(void *data, int status) {
  chain *c = data;
  if (status != 0) return;
  pts__vthread_charge(COST_TASK_NS);
  c->done++;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = c->prio;
  (void)pts_scheduler_post_task_cb(c->s, chain_task, c, &o);
}

/* The mostly idle victim's next task: 10-30 ms later (20 ms on average),
 * uniformly, so its arrivals fall at every phase of a policy's frame (a
 * fixed period would lock onto one phase and measure one wait). */
static uint64_t idle_gap(uint64_t *rng) {
  return IDLE_PERIOD_NS / 2 + rng_next(rng) % IDLE_PERIOD_NS;
}

typedef struct idle_ev {
  victim v;
  pts_scheduler *s;
  uint64_t rng;
} idle_ev;
static uint64_t idle_event(void *ctx, uint64_t now) {
  idle_ev *e = ctx;
  (void)victim_post(&e->v, e->s, now, LK_VICTIM_TASK_NS, PTS_PRIORITY_USER_BLOCKING, true);
  return now + idle_gap(&e->rng);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int lk_cost_virtual(int policy, uint64_t span_ns, lk_cost *out) {
  memset(out, 0, sizeof *out);
  bool sep = policy == LK_SEPARATE;
  uint64_t warm = 2000000000u; /* two quantized epochs */
  pts__vthread_options o;
  memset(&o, 0, sizeof o);
  o.policy = sep ? PTS_POLICY_ROUND_ROBIN : policy;
  o.seed = 1;
  for (int scen = 0; scen < 2; scen++) {
    pts__vthread *vt[2] = {NULL, NULL};
    pts_loop *al, *vl;
    int rc = 0;
    for (int i = 0; i < (sep ? 2 : 1) && rc == 0; i++) rc = pts__vthread_new(&o, &vt[i]);
    if (rc != 0) return rc;
    pts__vthread *vth = sep ? vt[1] : vt[0];
    pts__vthread_add(vt[0], 1, &al);
    pts__vthread_add(vth, 1, &vl);
    chain ca = {pts_global_scheduler(pts_loop_default_global(al)), 0, PTS_PRIORITY_USER_VISIBLE};
    chain cv = {pts_global_scheduler(pts_loop_default_global(vl)), 0, PTS_PRIORITY_USER_VISIBLE};
    lk_trace tr;
    memset(&tr, 0, sizeof tr);
    tr.caplat = (span_ns + warm) / (IDLE_PERIOD_NS / 2) + 16;
    tr.lat_ns = malloc(tr.caplat * sizeof *tr.lat_ns);
    idle_ev ev = {{&virt_env, &tr, 0, 0, 0, LK_WORK_SPIN, NULL}, cv.s, 1};
    chain_task(&ca, 0);
    if (scen == 0) chain_task(&cv, 0);
    else pts__vthread_set_events(vth, idle_event, &ev);
    pts__vthread_run(vt[0], warm);
    if (sep) pts__vthread_run(vt[1], warm);
    uint64_t a0 = ca.done, v0 = cv.done, vb0 = ev.v.busy;
    tr.nlat = 0;
    pts__vthread_run(vt[0], warm + span_ns);
    if (sep) pts__vthread_run(vt[1], warm + span_ns);
    double aw = (double)(ca.done - a0) * COST_TASK_NS;
    if (scen == 0) {
      double vw = (double)(cv.done - v0) * COST_TASK_NS;
      /* Both saturated: share of the thread's capacity doing work (separate
       * threads: of each thread's own). */
      out->loss_busy = sep ? 1 - (aw + vw) / (2.0 * span_ns) : 1 - (aw + vw) / span_ns;
    } else {
      double vb = (double)(ev.v.busy - vb0);
      out->loss_idle = sep ? 1 - aw / span_ns : 1 - aw / ((double)span_ns - vb);
      qsort(tr.lat_ns, tr.nlat, sizeof *tr.lat_ns, cmp_d);
      out->p99_ns = lk_quantile(tr.lat_ns, tr.nlat, 0.99);
      out->lat_ns = tr.lat_ns;
      out->nlat = tr.nlat;
      tr.lat_ns = NULL;
    }
    free(tr.lat_ns);
    for (int i = 0; i < 2; i++) pts__vthread_free(vt[i]);
  }
  return 0;
}

/* ---- real clock ---- */

typedef struct rctx {
  attacker a;
  pts_agent *agent;
  int pin_cpu; /* -1: leave the pool thread's affinity alone */
} rctx;

/* The pinned control: the calling thread on one CPU (best effort). */
static void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The chain's first task, posted from the harness: on the attacker's own
 * thread it finds its scheduler and starts the chain. */
static pts_value real_kick(void *data, int status) {
  rctx *r = data;
  if (status == 0) {
    if (r->pin_cpu >= 0) pin_self(r->pin_cpu);
    r->a.sched = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(r->agent)));
    att_round(&r->a);
  }
  return pts_undefined();
}

/* The pinned control with two pool threads: the victim's thread pins itself. */
static pts_value real_pin(void *data, int status) {
  if (status == 0) pin_self(*(const int *)data);
  return pts_undefined();
}

static pts_value real_victim(void *data, int status) {
  victim_task(data, status);
  return pts_undefined();
}

static void sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

/* Posts one victim task of `work` ns at priority prio (the harness side). */
static int real_post(victim *v, pts_agent *va, uint64_t work, int prio, bool measure) {
  vtask *t = malloc(sizeof *t);
  if (t == NULL) return PTS_ENOMEM;
  *t = (vtask){v, mono_ns(), work, measure};
  pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
  o.priority = prio;
  if (pts_agent_post_task(va, &o, real_victim, t, NULL, NULL, NULL) != 0)
    free(t);
  else
    v->posted++;
  return 0;
}

/* A late post acts in the wrong window (and may spill into the next): both
 * leave the analysis. */
static void real_late(lk_trace *tr, uint64_t t0, uint64_t at) {
  if (mono_ns() - at <= LK_HARNESS_LATE_NS) return;
  uint64_t w = (at - t0) / LK_WINDOW_NS;
  for (uint64_t k = w; k < w + 2 && k < tr->windows; k++) tr->excluded[k] = 1;
}

int lk_run_real(const lk_config *c, lk_trace *tr) {
  if (c == NULL || tr == NULL || c->windows == 0 || (unsigned)c->policy >= LK_POLICIES ||
      (unsigned)c->attacker > LK_INBOX || (unsigned)c->secret > LK_S3 ||
      (unsigned)c->work > LK_WORK_MEM)
    return PTS_EINVAL;
  int rc = trace_alloc(tr, c->windows, LK_WINDOW_NS / 2000 + 8);
  plan p;
  memset(&p, 0, sizeof p);
  if (rc == 0) rc = plan_make(c, tr, &p);
  bool sep = c->policy == LK_SEPARATE, two = sep || c->victim_thread == 1;
  pts_pool *pool = NULL;
  /* quantum 1: the study's model is one task per turn, as an event loop
   * shared by origins interleaves them (docs/security.md). */
  pts_pool_options po = {two ? 2u : 1u, sep ? PTS_POLICY_ROUND_ROBIN : (pts_policy)c->policy,
                         c->seed, 0, false, 1, {0, 0, 0}, 0, NULL, NULL};
  pts__quant_options q = {0, 0, 0, 0, c->round1};
  if (rc == 0) rc = pts__pool_new_ext(&po, &q, &pool);
  pts_agent *aa = NULL, *va = NULL;
  pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
  ao.origin = "attacker";
  ao.thread = 0;
  if (rc == 0) rc = pts_agent_new(pool, &ao, &aa);
  ao.origin = "victim";
  ao.thread = two ? 1 : 0;
  if (rc == 0) rc = pts_agent_new(pool, &ao, &va);
  /* Reached by the pool threads until the drains below return. */
  rctx *r = calloc(1, sizeof *r);
  victim *v = calloc(1, sizeof *v);
  uint8_t *buf = c->work == LK_WORK_MEM ? calloc(VICTIM_BUF, 1) : NULL;
  if (rc == 0 && (r == NULL || v == NULL || (c->work == LK_WORK_MEM && buf == NULL)))
    rc = PTS_ENOMEM;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  bool pin = c->pin && ncpu >= 2;
  cpu_set_t saved;
  bool restore = pin && pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;
  static const int victim_cpu_one = 1;
  if (rc == 0) {
    *v = (victim){&real_env, tr, 0, 0, 0, c->work, buf};
    r->agent = aa;
    r->pin_cpu = pin ? 0 : -1;
    r->a.e = &real_env;
    r->a.kind = c->attacker;
    r->a.tr = tr;
    r->a.task_ns = LK_ATTACK_TASK_NS;
    r->a.self = aa;
    r->a.peer = va;
    if (pin) {
      pin_self((int)ncpu - 1);
      if (two) (void)pts_agent_post_task(va, NULL, real_pin, (void *)&victim_cpu_one, NULL, NULL, NULL);
    }
    uint64_t t0 = mono_ns() + (c->warmup_ns ? c->warmup_ns : 50000000u);
    t0 -= t0 % LK_COUNTER_TICK_NS; /* windows start on a tick of the coarse clock */
    r->a.origin = t0;
    rc = pts_agent_post_task(aa, NULL, real_kick, r, NULL, NULL, NULL);
    tr->excluded = calloc(c->windows, 1);
    if (tr->excluded == NULL) rc = PTS_ENOMEM;
    /* The harness must post on time: no timer slack while it runs. */
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (c->secret == LK_S3) {
      /* Keystrokes: a burst at each keystroke time. */
      for (size_t k = 0; k < p.nk && rc == 0; k++) {
        uint64_t at = t0 + p.kt[k];
        sleep_until(at);
        real_late(tr, t0, at);
        for (int i = 0; i < LK_BURST_TASKS && rc == 0; i++)
          rc = real_post(v, va, LK_BURST_TASK_NS, PTS_PRIORITY_USER_BLOCKING, true);
      }
    } else {
      for (uint32_t w = 0; w < c->windows && rc == 0; w++) {
        uint64_t at = t0 + (uint64_t)w * LK_WINDOW_NS;
        sleep_until(at);
        real_late(tr, t0, at);
        uint8_t b = p.bits[w];
        if (c->secret == LK_S1 && !b) continue;
        rc = real_post(v, va, LK_VICTIM_TASK_NS,
                       b ? PTS_PRIORITY_USER_BLOCKING : PTS_PRIORITY_BACKGROUND, b != 0);
      }
    }
    if (slack > 0) (void)prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
    for (uint32_t w = 0; tr->excluded != NULL && w < c->windows; w++) tr->nexcluded += tr->excluded[w];
    sleep_until(t0 + (uint64_t)c->windows * LK_WINDOW_NS + 2000000u);
    atomic_store(&r->a.stop, true);
    tr->victim_posted = v->posted;
    tr->victim_done = atomic_load_explicit(&v->done, memory_order_relaxed);
    (void)pts_agent_drain(aa);
    (void)pts_agent_drain(va); /* a starved backlog (strict, S2) runs now */
    (void)pts_agent_drain(aa); /* inbox: the last probe's reply */
    pts_agent_stats st;
    if (pts_agent_get_stats(aa, &st) == 0) tr->attacker_busy_ns = st.cpu_ns;
    tr->victim_busy_ns = v->busy;
    tr->elapsed_ns = (uint64_t)c->windows * LK_WINDOW_NS;
  }
  if (pool) pts_pool_shutdown(pool);
  if (restore) (void)pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  pts_agent_unref(aa);
  pts_agent_unref(va);
  free(r);
  free(v);
  free(buf);
  plan_free(&p);
  if (rc == 0) lk_observe(tr, c->attacker);
  return rc;
}

/* ---- costs on the real clock ----
 * The virtual costs' two scenarios on a real pool (policy as in
 * lk_run_real): 20 us chain tasks spinning in real time, counted by the
 * harness; the idle victim gets one 200 us user-blocking task every 10-30 ms,
 * posted by the harness, and its start delays are the p99's sample (about
 * 50 a second: the idle span sets how many). Quantized: the idle scenario warms up 1.1 s, so the
 * victim's level drops to low at the first epoch boundary. */

typedef struct rchain {
  pts_agent *agent;
  pts_scheduler *s;           /* pool thread only */
  _Atomic uint64_t done;      /* read by the harness */
  _Atomic bool stop;
} rchain;

static void rchain_task(void *data, int status) {
  rchain *c = data;
  if (status != 0 || atomic_load_explicit(&c->stop, memory_order_relaxed)) return;
  spin_ns(COST_TASK_NS);
  atomic_fetch_add_explicit(&c->done, 1, memory_order_relaxed);
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_USER_VISIBLE;
  (void)pts_scheduler_post_task_cb(c->s, rchain_task, c, &o);
}

static pts_value rchain_kick(void *data, int status) {
  rchain *c = data;
  if (status == 0) {
    c->s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(c->agent)));
    rchain_task(c, 0);
  }
  return pts_undefined();
}

/* Load-robust capacity (round 2): the time the OS gave a pool thread, its
 * CPU time plus the time it parked by itself (pts_thread_stats.idle_ns);
 * time it was runnable but preempted by other processes (the machine is
 * shared) is not the policy's loss. The thread's id comes from a task
 * that runs on it. */
typedef struct who {
  pthread_t th;
  _Atomic bool known;
} who;
static pts_value real_who(void *data, int status) {
  who *x = data;
  if (status == 0) {
    x->th = pthread_self();
    atomic_store(&x->known, true);
  }
  return pts_undefined();
}
static uint64_t os_time(pts_pool *pool, unsigned thread, who *x) {
  clockid_t clk;
  struct timespec ts;
  pts_thread_stats st;
  if (!atomic_load(&x->known) || pthread_getcpuclockid(x->th, &clk) != 0 ||
      clock_gettime(clk, &ts) != 0 || pts_pool_get_thread_stats(pool, thread, &st) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + st.idle_ns;
}

int lk_cost_real(int policy, uint64_t busy_span_ns, uint64_t idle_span_ns, lk_cost *out) {
  if (out == NULL || (unsigned)policy >= LK_POLICIES) return PTS_EINVAL;
  memset(out, 0, sizeof *out);
  bool sep = policy == LK_SEPARATE;
  int rc = 0;
  for (int scen = 0; scen < 2 && rc == 0; scen++) {
    uint64_t span_ns = scen == 1 && idle_span_ns > 0 ? idle_span_ns : busy_span_ns;
    pts_pool *pool = NULL;
    pts_pool_options po = {sep ? 2u : 1u, sep ? PTS_POLICY_ROUND_ROBIN : (pts_policy)policy, 1, 0,
                           false, 1, {0, 0, 0}, 0, NULL, NULL}; /* one task per turn, as above */
    rc = pts__pool_new_ext(&po, NULL, &pool);
    if (rc != 0) return rc;
    pts_agent *ag[2] = {NULL, NULL};
    for (int i = 0; i < 2 && rc == 0; i++) {
      pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
      ao.origin = i ? "victim" : "attacker";
      ao.thread = sep ? (unsigned)i : 0;
      rc = pts_agent_new(pool, &ao, &ag[i]);
    }
    rchain *c = calloc(2, sizeof *c);
    victim *v = calloc(1, sizeof *v);
    who *wh = calloc(2, sizeof *wh);
    lk_trace tr;
    memset(&tr, 0, sizeof tr);
    uint64_t warm = policy == PTS_POLICY_QUANTIZED && scen == 1 ? 1100000000u : 50000000u;
    tr.caplat = (span_ns + warm) / (IDLE_PERIOD_NS / 2) + 16;
    tr.lat_ns = malloc(tr.caplat * sizeof *tr.lat_ns);
    if (rc == 0 && (c == NULL || v == NULL || wh == NULL || tr.lat_ns == NULL)) rc = PTS_ENOMEM;
    if (rc == 0) {
      *v = (victim){&real_env, &tr, 0, 0, 0, LK_WORK_SPIN, NULL};
      for (int i = 0; i < (sep ? 2 : 1) && rc == 0; i++)
        rc = pts_agent_post_task(ag[i], NULL, real_who, &wh[i], NULL, NULL, NULL);
      for (int i = 0; i < (scen == 0 ? 2 : 1) && rc == 0; i++) {
        c[i].agent = ag[i];
        rc = pts_agent_post_task(ag[i], NULL, rchain_kick, &c[i], NULL, NULL, NULL);
      }
      /* The span is read in COST_PARTS parts and the median part's loss is
       * reported: a burst of preemption or steal (this VM: up to 25%) then
       * spoils one part, not the figure. */
      uint64_t start = mono_ns(), t0 = start + warm, part = span_ns / COST_PARTS;
      uint64_t t1 = t0 + part * COST_PARTS, rng = 1;
      uint64_t snap[COST_PARTS + 1][4];
      int m = 0; /* next snapshot */
      for (uint64_t at = start; rc == 0; at += scen == 1 ? idle_gap(&rng) : part) {
        for (; m <= COST_PARTS && at >= t0 + (uint64_t)m * part; m++) {
          sleep_until(t0 + (uint64_t)m * part);
          snap[m][0] = atomic_load(&c[0].done);
          snap[m][1] = atomic_load(&c[1].done);
          snap[m][2] = atomic_load(&v->done);
          snap[m][3] = os_time(pool, 0, &wh[0]) + (sep && scen == 0 ? os_time(pool, 1, &wh[1]) : 0);
        }
        if (at >= t1) break;
        sleep_until(at);
        if (scen == 0) continue;
        vtask *t = malloc(sizeof *t);
        if (t == NULL) {
          rc = PTS_ENOMEM;
          break;
        }
        *t = (vtask){v, mono_ns(), LK_VICTIM_TASK_NS, at >= t0};
        pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
        o.priority = PTS_PRIORITY_USER_BLOCKING;
        if (pts_agent_post_task(ag[1], &o, real_victim, t, NULL, NULL, NULL) != 0) free(t);
      }
      for (int i = 0; i < 2; i++) atomic_store(&c[i].stop, true);
      for (int i = 0; i < 2; i++) (void)pts_agent_drain(ag[i]);
      double loss[COST_PARTS], los[COST_PARTS];
      for (int k = 0; k < COST_PARTS && rc == 0; k++) {
        double aw = (double)(snap[k + 1][0] - snap[k][0]) * COST_TASK_NS;
        double vw = (double)(snap[k + 1][1] - snap[k][1]) * COST_TASK_NS;
        double vb = (double)(snap[k + 1][2] - snap[k][2]) * LK_VICTIM_TASK_NS;
        double cap = (double)(snap[k + 1][3] - snap[k][3]); /* the OS's time, see os_time */
        if (scen == 0) {
          loss[k] = sep ? 1 - (aw + vw) / (2.0 * part) : 1 - (aw + vw) / part;
          los[k] = cap > 0 ? 1 - (aw + vw) / cap : loss[k];
        } else {
          loss[k] = sep ? 1 - aw / part : 1 - aw / ((double)part - vb);
          los[k] = cap > 0 ? (sep ? 1 - aw / cap : 1 - aw / (cap - vb)) : loss[k];
        }
      }
      if (rc == 0) {
        qsort(loss, COST_PARTS, sizeof *loss, cmp_d);
        qsort(los, COST_PARTS, sizeof *los, cmp_d);
        *(scen == 0 ? &out->loss_busy : &out->loss_idle) = loss[COST_PARTS / 2];
        *(scen == 0 ? &out->loss_busy_os : &out->loss_idle_os) = los[COST_PARTS / 2];
      }
      if (scen == 1) {
        qsort(tr.lat_ns, tr.nlat, sizeof *tr.lat_ns, cmp_d);
        out->p99_ns = lk_quantile(tr.lat_ns, tr.nlat, 0.99);
        if (rc == 0) {
          out->lat_ns = tr.lat_ns;
          out->nlat = tr.nlat;
          tr.lat_ns = NULL;
        }
      }
    }
    pts_pool_shutdown(pool);
    for (int i = 0; i < 2; i++) pts_agent_unref(ag[i]);
    free(c);
    free(v);
    free(wh);
    free(tr.lat_ns);
  }
  return rc;
}
