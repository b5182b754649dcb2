/* bench/runner/suite_loop.c: the suites measured on plain loops (no pool):
 * throughput, crossthread (loop inbox), yield, control, memory and latency
 * on one loop, each beside its floor and peers from the same run.
 *
 * Every scenario keeps the harness's rules: set-up outside the timed region,
 * one clock read before and after a large batch, the same trivial task body
 * (an indirect call that bumps a counter) as the floors and peers, and a
 * check that every task ran (or was aborted) exactly once; a batch that
 * fails the check returns -1 and its figure is dropped, not reported.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench/runner/peers.h"
#include "bench/runner/suites.h"
#include "ptsched.h"

#define BATCH 1000

static void count_task(void *data, int status) {
  if (status == 0) ++*(size_t *)data;
}
static void count_abort(void *data, int status) {
  if (status == PTS_EABORT || status == PTS_ECANCELED) ++*(size_t *)data;
}
static pts_value count_cb(void *data, int status) {
  if (status == 0) ++*(size_t *)data;
  return pts_undefined();
}

/* A loop with its default scheduler, kept across the runs of a scenario so
 * the warm-up also warms the loop's pool. */
typedef struct one_loop {
  pts_loop *loop;
  pts_global *global;
  pts_scheduler *s;
  size_t n, batch;
} one_loop;

static int one_loop_open(one_loop *l, size_t n, size_t batch) {
  memset(l, 0, sizeof *l);
  if (pts_loop_new(NULL, &l->loop) != 0) return -1;
  l->global = pts_loop_default_global(l->loop);
  l->s = pts_global_scheduler(l->global);
  l->n = n;
  l->batch = batch;
  return 0;
}

static void one_loop_close(one_loop *l) {
  if (l->loop) pts_loop_free(l->loop);
  l->loop = NULL;
}

/* Bytes the calling thread allocated since *a0 was taken from p (jemalloc's
 * per-thread counter), or -1 without the counter. */
static double alloc_since(const volatile uint64_t *p, uint64_t a0) {
  return p ? (double)(*p - a0) : -1;
}

/* ------------------------------------------------------------------ */
/* throughput                                                          */

/* A one-loop scenario and the bytes its last run allocated per task (one
 * thread posts and runs, so its counter sees everything). */
typedef struct tput {
  one_loop *l;
  double alloc_bytes; /* last run, timed part; -1 without the counter */
  size_t tasks;
} tput;

static double s_post_run_callback(void *arg) {
  tput *a = arg;
  one_loop *l = a->l;
  size_t counter = 0, done = 0;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  const volatile uint64_t *ap = rb_thread_allocatedp();
  uint64_t a0 = ap ? *ap : 0;
  uint64_t t0 = rb_now_ns();
  while (done < l->n) {
    for (size_t i = 0; i < l->batch; i++)
      if (pts_scheduler_post_task_cb(l->s, count_task, &counter, &o) != 0) return -1;
    if (pts_loop_run(l->loop, PTS_RUN_UNTIL_IDLE) < 0) return -1;
    done += l->batch;
  }
  uint64_t t1 = rb_now_ns();
  a->alloc_bytes = alloc_since(ap, a0);
  a->tasks = done;
  return counter == done ? (double)(t1 - t0) / (double)done : -1;
}

static double s_post_run_promise(void *arg) {
  tput *a = arg;
  one_loop *l = a->l;
  size_t counter = 0, done = 0;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  const volatile uint64_t *ap = rb_thread_allocatedp();
  uint64_t a0 = ap ? *ap : 0;
  uint64_t t0 = rb_now_ns();
  while (done < l->n) {
    for (size_t i = 0; i < l->batch; i++) {
      pts_promise *p = NULL;
      if (pts_scheduler_post_task(l->s, count_cb, &counter, &o, &p) != 0)
        return -1;
      pts_promise_unref(p); /* as a binding drops an unused result */
    }
    if (pts_loop_run(l->loop, PTS_RUN_UNTIL_IDLE) < 0) return -1;
    done += l->batch;
  }
  uint64_t t1 = rb_now_ns();
  a->alloc_bytes = alloc_since(ap, a0);
  a->tasks = done;
  return counter == done ? (double)(t1 - t0) / (double)done : -1;
}

/* Mixed priorities: every task logs its index; the log must be ordered by
 * priority (most urgent first), then by posting order (spec: select the
 * scheduler task queue with the highest priority, oldest task first). */
typedef struct mixed {
  one_loop *l;
  uint32_t *log;
  size_t nlog;
  size_t violations;
  struct mixed_item {
    struct mixed *m;
    uint32_t i;
  } * items;
} mixed;

static void mixed_task(void *data, int status) {
  struct mixed_item *it = data;
  if (status == 0) it->m->log[it->m->nlog++] = it->i;
}

static size_t mixed_violations(const uint32_t *log, size_t n) {
  size_t bad = 0;
  for (size_t k = 1; k < n; k++) {
    int pa = rb_mixed_priority(log[k - 1]), pb = rb_mixed_priority(log[k]);
    if (pa < pb || (pa == pb && log[k - 1] > log[k])) bad++;
  }
  return bad;
}

static double s_mixed(void *arg) {
  mixed *m = arg;
  one_loop *l = m->l;
  size_t done = 0;
  uint64_t ns = 0;
  m->violations = 0;
  while (done < l->n) {
    m->nlog = 0;
    uint64_t t0 = rb_now_ns();
    for (size_t i = 0; i < l->batch; i++) {
      pts_post_options o = PTS_POST_OPTIONS_INIT;
      o.priority = rb_mixed_priority(i);
      if (pts_scheduler_post_task_cb(l->s, mixed_task, &m->items[i], &o) != 0)
        return -1;
    }
    if (pts_loop_run(l->loop, PTS_RUN_UNTIL_IDLE) < 0) return -1;
    ns += rb_now_ns() - t0;
    if (m->nlog != l->batch) return -1;
    /* The order check is outside the timed part of each batch. */
    m->violations += mixed_violations(m->log, m->nlog);
    done += l->batch;
  }
  return (double)ns / (double)done;
}

typedef struct peer_arg {
  size_t n, batch;
  int mixed;
} peer_arg;
static double p_floor_fifo(void *a) {
  peer_arg *p = a;
  return rb_floor_fifo(p->n, p->batch);
}
static double p_floor_prio(void *a) {
  peer_arg *p = a;
  return rb_floor_prio_fifo(p->n, p->batch);
}
static double p_ev_active(void *a) {
  peer_arg *p = a;
  return rb_libevent_active(p->n, p->batch, p->mixed);
}
static double p_ev_once(void *a) {
  peer_arg *p = a;
  return rb_libevent_once(p->n, p->batch);
}

void rb_suite_throughput(rb_ctx *ctx) {
  size_t n = rb_n(ctx, 400000, 20000);
  one_loop l;
  peer_arg pa = {n, BATCH, 0}, pm = {n, BATCH, 1};
  tput cb = {&l, -1, 0}, pr = {&l, -1, 0};
  mixed m;
  memset(&m, 0, sizeof m);
  m.l = &l;
  m.log = calloc(BATCH, sizeof *m.log);
  m.items = calloc(BATCH, sizeof *m.items);
  if (m.log == NULL || m.items == NULL || one_loop_open(&l, n, BATCH) != 0) {
    free(m.log);
    free(m.items);
    rb_unavailable_add(ctx, "throughput", "set-up failed (out of memory or pts_loop_new)");
    return;
  }
  for (uint32_t i = 0; i < BATCH; i++) {
    m.items[i].m = &m;
    m.items[i].i = i;
  }
  rb_progress(ctx, "ptsched, floors and libevent interleaved, %zu tasks per run in batches of %d",
              n, BATCH);
  const rb_spec g[] = {
      {"throughput.floor_fifo.ns_per_task", "ns", RB_FLOOR, p_floor_fifo, &pa},
      {"throughput.floor_prio_fifo.ns_per_task", "ns", RB_FLOOR, p_floor_prio, &pa},
      {"throughput.libevent_active.ns_per_task", "ns", RB_PEER, p_ev_active, &pa},
      {"throughput.libevent_active_mixed.ns_per_task", "ns", RB_PEER, p_ev_active, &pm},
      {"throughput.libevent_once.ns_per_task", "ns", RB_PEER, p_ev_once, &pa},
      {"throughput.post_run_callback.ns_per_task", "ns", RB_PTSCHED, s_post_run_callback, &cb},
      {"throughput.post_run_promise.ns_per_task", "ns", RB_PTSCHED, s_post_run_promise, &pr},
      {"throughput.mixed_priority.ns_per_task", "ns", RB_PTSCHED, s_mixed, &m},
  };
  rb_measure_group(ctx, g, sizeof g / sizeof g[0]);
  if (rb_find(ctx, "throughput.mixed_priority.ns_per_task") != NULL) {
    /* The last run's count (every run checks its batches the same way). */
    double v = (double)m.violations;
    rb_record(ctx, "throughput.mixed_priority.order_violations", "count", RB_INFO, &v, 1);
    rb_target(ctx, "throughput.mixed_priority.order_violations", 0,
              "strict priority order: 0 violations");
    rb_target_from(ctx, "throughput.mixed_priority.order_violations", "issue 7");
  }
  free(m.log);
  free(m.items);
  one_loop_close(&l);
  rb_compare(ctx, "throughput.post_run_callback.ns_per_task",
             "throughput.floor_prio_fifo.ns_per_task",
             "throughput.libevent_active.ns_per_task",
             "throughput.libevent_once.ns_per_task", NULL);
  rb_compare(ctx, "throughput.post_run_promise.ns_per_task",
             "throughput.floor_prio_fifo.ns_per_task",
             "throughput.libevent_active.ns_per_task",
             "throughput.libevent_once.ns_per_task", NULL);
  rb_compare(ctx, "throughput.mixed_priority.ns_per_task",
             "throughput.floor_prio_fifo.ns_per_task",
             "throughput.libevent_active_mixed.ns_per_task", NULL);
  if (rb_find(ctx, "throughput.post_run_callback.ns_per_task"))
    rb_record_alloc(ctx, "throughput.post_run_callback.alloc_bytes_per_task", cb.alloc_bytes,
                    NAN, cb.tasks, "the one thread that posts and runs, first post to last task",
                    true);
  if (rb_find(ctx, "throughput.post_run_promise.ns_per_task"))
    rb_record_alloc(ctx, "throughput.post_run_promise.alloc_bytes_per_task", pr.alloc_bytes,
                    NAN, pr.tasks, "the one thread that posts and runs, first post to last task",
                    true);
  rb_target(ctx, "throughput.post_run_callback.ns_per_task", 20, "stretch: <= 20 ns per task");
  rb_target_from(ctx, "throughput.post_run_callback.ns_per_task", "issue 12 stretch, issue 7");
  rb_ratio_target(ctx, "throughput.post_run_callback.x_libevent_active",
                  "throughput.post_run_callback.ns_per_task",
                  "throughput.libevent_active.ns_per_task", 0.8,
                  "<= 0.8x libevent's pre-created events", "issue 12");
  rb_ratio_target(ctx, "throughput.post_run_callback.x_floor",
                  "throughput.post_run_callback.ns_per_task",
                  "throughput.floor_prio_fifo.ns_per_task", 3,
                  "<= 3x the priority-FIFO floor (issue 7: 4x)", "issue 12");
  rb_target(ctx, "throughput.post_run_promise.ns_per_task", 60, "<= 60 ns per task");
  rb_target_from(ctx, "throughput.post_run_promise.ns_per_task", "issue 7");
  rb_ratio_target(ctx, "throughput.post_run_promise.x_libevent_active",
                  "throughput.post_run_promise.ns_per_task",
                  "throughput.libevent_active.ns_per_task", 1,
                  "<= libevent's pre-created events (1x)", "issue 12");
}

/* ------------------------------------------------------------------ */
/* crossthread (the loop's inbox)                                      */

typedef struct xt {
  pts_loop *loop;
  pts_global *g;
  size_t n;
  atomic_int ready;
  /* The consumer's own lines (RB_CONSUMER_SIDE): its count, on every task. */
  RB_CONSUMER_SIDE size_t count;
  uint64_t first, end; /* the first task's and the last task's times */
  long csw; /* voluntary context switches of the consumer during the run */
  /* The consumer's allocation counter, read at its first and last task. */
  const volatile uint64_t *c_ap;
  uint64_t c_alloc0;
  double c_alloc;
} xt;

static void xt_task(void *data, int status) {
  xt *x = data;
  if (status != 0) return;
  if (++x->count == 1) {
    x->first = rb_now_ns();
    if (x->c_ap) x->c_alloc0 = *x->c_ap;
  }
  if (x->count == x->n) {
    x->end = rb_now_ns();
    x->c_alloc = alloc_since(x->c_ap, x->c_alloc0);
    pts_loop_stop(x->loop);
  }
}

static void *xt_thread(void *arg) {
  xt *x = arg;
  rb_pin_consumer();
  x->c_ap = rb_thread_allocatedp(); /* before the run: a call, not a load */
  struct rusage r0, r1;
  getrusage(RUSAGE_THREAD, &r0);
  atomic_store_explicit(&x->ready, 1, memory_order_release);
  pts_loop_run(x->loop, PTS_RUN_FOREVER);
  getrusage(RUSAGE_THREAD, &r1);
  x->csw = r1.ru_nvcsw - r0.ru_nvcsw;
  return NULL;
}

typedef struct xt_arg {
  size_t n;
  bool cached; /* pts_queue_task_from_any_thread instead of requests */
  double csw_per_1k;
  double alloc_post, alloc_cons; /* last run: producer's, consumer's bytes; -1: none */
  rb_sides sides;                /* each run's producer and consumer, timed apart */
} xt_arg;

/* The stream of posts. By default with caller-owned requests allocated
 * before the clock starts, as the floor and the peers pre-allocate their
 * nodes; `cached`: the allocating form, whose blocks come from the
 * producer's node cache (sync/nodecache.h). */
static double s_xt_post(void *arg) {
  xt_arg *a = arg;
  xt x;
  memset(&x, 0, sizeof x);
  x.n = a->n;
  /* One cache line each, as the header recommends. */
  pts_task_req *reqs = a->cached ? NULL : aligned_alloc(64, x.n * sizeof *reqs);
  if (!a->cached && reqs == NULL) return -1;
  /* Touched before the clock, as the floor and the peers fill their nodes
   * first: page faults are not what this figure measures. */
  if (reqs != NULL) memset(reqs, 0, x.n * sizeof *reqs);
  if (pts_loop_new(NULL, &x.loop) != 0) {
    free(reqs);
    return -1;
  }
  x.g = pts_loop_default_global(x.loop);
  pthread_t th;
  double r = -1;
  if (pthread_create(&th, NULL, xt_thread, &x) == 0) {
    rb_wait_ready(&x.ready);
    const volatile uint64_t *ap = rb_thread_allocatedp();
    uint64_t a0 = ap ? *ap : 0;
    /* The poster reads nothing of x's in its loop. */
    size_t n = x.n;
    pts_global *g = x.g;
    uint64_t t0 = rb_now_ns();
    for (size_t i = 0; i < n; i++) {
      int rc = a->cached
                   ? pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, xt_task, &x)
                   : pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &reqs[i],
                                                        xt_task, &x);
      if (rc != 0) break;
    }
    uint64_t posted = rb_now_ns();
    double p_alloc = alloc_since(ap, a0); /* the producer's posts */
    pthread_join(th, NULL);
    if (x.count == x.n) {
      r = (double)(x.end - t0) / (double)x.n;
      (void)rb_sides_add(&a->sides, t0, posted, x.first, x.end, x.n);
    }
    a->csw_per_1k = (double)x.csw * 1000.0 / (double)x.n;
    a->alloc_post = p_alloc;
    a->alloc_cons = x.count == x.n ? x.c_alloc : -1;
  }
  pts_loop_free(x.loop);
  free(reqs);
  return r;
}

/* Wake-up round trip: two loops on two threads, each parked between hops. */
typedef struct pp {
  pts_loop *la, *lb;
  pts_global *ga, *gb;
  size_t count, rounds;
  uint64_t start, end;
  int fail;
} pp;

static void pp_b(void *data, int status);
static void pp_a(void *data, int status) {
  pp *p = data;
  if (status != 0) return;
  p->count++;
  if (p->count == 1) p->start = rb_now_ns();
  if (p->count == p->rounds + 1) {
    p->end = rb_now_ns();
    pts_loop_stop(p->la);
    pts_loop_stop(p->lb);
    return;
  }
  if (pts_queue_task_from_any_thread(p->gb, PTS_SOURCE_MESSAGE, pp_b, p) != 0) {
    p->fail = 1;
    pts_loop_stop(p->la);
    pts_loop_stop(p->lb);
  }
}
static void pp_b(void *data, int status) {
  pp *p = data;
  if (status != 0) return;
  if (pts_queue_task_from_any_thread(p->ga, PTS_SOURCE_MESSAGE, pp_a, p) != 0) {
    p->fail = 1;
    pts_loop_stop(p->la);
    pts_loop_stop(p->lb);
  }
}

static void *run_forever(void *arg) {
  pts_loop_run(arg, PTS_RUN_FOREVER);
  return NULL;
}

static double s_xt_rtt(void *arg) {
  size_t rounds = *(size_t *)arg;
  pp p;
  memset(&p, 0, sizeof p);
  p.rounds = rounds;
  if (pts_loop_new(NULL, &p.la) != 0) return -1;
  if (pts_loop_new(NULL, &p.lb) != 0) {
    pts_loop_free(p.la);
    return -1;
  }
  p.ga = pts_loop_default_global(p.la);
  p.gb = pts_loop_default_global(p.lb);
  pthread_t ta, tb;
  double r = -1;
  if (pthread_create(&ta, NULL, run_forever, p.la) == 0) {
    if (pthread_create(&tb, NULL, run_forever, p.lb) == 0) {
      rb_sleep_ns(2000000);
      pts_queue_task_from_any_thread(p.ga, PTS_SOURCE_MESSAGE, pp_a, &p);
      pthread_join(ta, NULL);
      pthread_join(tb, NULL);
      if (!p.fail && p.count == rounds + 1)
        r = (double)(p.end - p.start) / (double)rounds;
    } else {
      pts_loop_stop(p.la);
      pthread_join(ta, NULL);
    }
  }
  pts_loop_free(p.la);
  pts_loop_free(p.lb);
  return r;
}

static double p_floor_mpsc(void *a) { return rb_floor_mpsc(*(size_t *)a); }
static double p_ev_xthread(void *a) { return rb_libevent_xthread(*(size_t *)a); }
/* libuv's stream, with its sides timed apart as crossthread.post's. */
typedef struct uv_arg {
  size_t n;
  rb_sides sides;
} uv_arg;
static double p_uv_async(void *a) {
  uv_arg *u = a;
  return rb_libuv_async(u->n, &u->sides);
}
static double p_futex_rtt(void *a) { return rb_floor_futex_rtt(*(size_t *)a); }
static double p_ev_rtt(void *a) { return rb_libevent_wake_rtt(*(size_t *)a); }
static double p_uv_rtt(void *a) { return rb_libuv_wake_rtt(*(size_t *)a); }

void rb_suite_crossthread(rb_ctx *ctx) {
  size_t n = rb_n(ctx, 200000, 20000);
  size_t rounds = rb_n(ctx, 2000, 200);
  rb_progress(ctx, "stream of %zu posts from another thread: floor, libevent, libuv, ptsched", n);
  xt_arg xa = {n, false, 0, -1, -1, {0}}, xc = {n, true, 0, -1, -1, {0}};
  uv_arg ua = {n, {0}};
  const rb_spec g1[] = {
      {"crossthread.floor_mpsc.ns_per_task", "ns", RB_FLOOR, p_floor_mpsc, &n},
      {"crossthread.libevent_active.ns_per_task", "ns", RB_PEER, p_ev_xthread, &n},
      {"crossthread.libuv_async.ns_per_task", "ns", RB_PEER, p_uv_async, &ua},
      {"crossthread.post.ns_per_task", "ns", RB_PTSCHED, s_xt_post, &xa},
      {"crossthread.post_cached.ns_per_task", "ns", RB_PTSCHED, s_xt_post, &xc},
  };
  bool pinned = rb_pin_begin();
  rb_measure_group(ctx, g1, sizeof g1 / sizeof g1[0]);
  rb_pin_end();
  rb_sides_record(ctx, &xa.sides, "crossthread.post");
  rb_sides_record(ctx, &ua.sides, "crossthread.libuv_async");
  rb_sides_record(ctx, &xc.sides, "crossthread.post_cached");
  static const char xt_counted[] =
      "the posting thread over its posts plus the loop's thread from its first task to its last";
  if (rb_find(ctx, "crossthread.post.ns_per_task")) {
    rb_record(ctx, "crossthread.post.consumer_sleeps_per_1k", "count", RB_INFO,
              &xa.csw_per_1k, 1);
    rb_note(ctx, "crossthread.post.consumer_sleeps_per_1k",
            "voluntary context switches of the consuming loop per 1,000 posts (last run)");
    rb_target(ctx, "crossthread.post.consumer_sleeps_per_1k", 1,
              "near 0: wake-ups coalesced (<= 1 per 1,000 posts)");
    rb_target_from(ctx, "crossthread.post.consumer_sleeps_per_1k", "issue 12, issue 7");
    rb_record_alloc(ctx, "crossthread.post.alloc_bytes_per_task", xa.alloc_post, xa.alloc_cons,
                    n, xt_counted, true);
  }
  if (rb_find(ctx, "crossthread.post_cached.ns_per_task"))
    rb_record_alloc(ctx, "crossthread.post_cached.alloc_bytes_per_task", xc.alloc_post,
                    xc.alloc_cons, n, xt_counted, false);
  rb_compare(ctx, "crossthread.post.ns_per_task", "crossthread.floor_mpsc.ns_per_task",
             "crossthread.libevent_active.ns_per_task",
             "crossthread.libuv_async.ns_per_task", NULL);
  rb_compare(ctx, "crossthread.post_cached.ns_per_task", "crossthread.floor_mpsc.ns_per_task",
             "crossthread.libevent_active.ns_per_task",
             "crossthread.libuv_async.ns_per_task", NULL);
  rb_target(ctx, "crossthread.post.ns_per_task", 30, "<= 30 ns per task");
  rb_target_from(ctx, "crossthread.post.ns_per_task", "issue 7");
  rb_ratio_target(ctx, "crossthread.post.x_libuv_async", "crossthread.post.ns_per_task",
                  "crossthread.libuv_async.ns_per_task", 0.8,
                  "<= 0.8x libuv's mutex queue + uv_async_send", "issue 12");
  /* The spread of each stream over its runs, (max - min) / median. */
  static const char *const streams[] = {"floor_mpsc", "libevent_active", "libuv_async", "post",
                                        "post_cached"};
  for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++) {
    char key[RB_KEY_MAX], sk[RB_KEY_MAX];
    rb_key_make(key, sizeof key, "crossthread", streams[i], "ns_per_task");
    rb_key_make(sk, sizeof sk, "crossthread", streams[i], "spread");
    rb_metric *m = rb_find(ctx, key);
    if (m == NULL || m->sum.median <= 0) continue;
    double spread = (m->sum.max - m->sum.min) / m->sum.median;
    rb_record(ctx, sk, "ratio", RB_INFO, &spread, 1);
    rb_note(ctx, sk, "(max - min) / median of %s over its runs; producer and consumer %s", key,
            pinned ? "on two CPUs" : "not pinned (one CPU)");
  }
  rb_ratio_target(ctx, "crossthread.post.x_floor", "crossthread.post.ns_per_task",
                  "crossthread.floor_mpsc.ns_per_task", 2.5, "<= 2.5x the MPSC floor",
                  "issue 12, issue 7");

  rb_progress(ctx, "wake-up round trips (%zu per run): futex floor, libevent, libuv, ptsched", rounds);
  const rb_spec g2[] = {
      {"crossthread.floor_futex_wake_rtt.ns", "ns", RB_FLOOR, p_futex_rtt, &rounds},
      {"crossthread.libevent_wake_rtt.ns", "ns", RB_PEER, p_ev_rtt, &rounds},
      {"crossthread.libuv_wake_rtt.ns", "ns", RB_PEER, p_uv_rtt, &rounds},
      {"crossthread.wake_rtt.ns", "ns", RB_PTSCHED, s_xt_rtt, &rounds},
  };
  rb_measure_group(ctx, g2, sizeof g2 / sizeof g2[0]);
  rb_compare(ctx, "crossthread.wake_rtt.ns", "crossthread.floor_futex_wake_rtt.ns",
             "crossthread.libevent_wake_rtt.ns", "crossthread.libuv_wake_rtt.ns", NULL);
  rb_metric *w = rb_find(ctx, "crossthread.wake_rtt.ns");
  rb_metric *e = rb_find(ctx, "crossthread.libevent_wake_rtt.ns");
  rb_metric *u = rb_find(ctx, "crossthread.libuv_wake_rtt.ns");
  if (w && (e || u)) {
    double best = e && u ? (e->sum.median < u->sum.median ? e->sum.median : u->sum.median)
                         : (e ? e->sum.median : u->sum.median);
    rb_target(ctx, "crossthread.wake_rtt.ns", best, "no slower than the best peer's round trip");
    rb_target_from(ctx, "crossthread.wake_rtt.ns", "issue 7");
  }

  rb_agents_crossthread_part(ctx);
}

/* ------------------------------------------------------------------ */
/* yield                                                               */

typedef struct yst {
  pts_scheduler *s;
  size_t count, rounds;
  int fail;
} yst;

static void y_cont(void *data, int status) {
  yst *y = data;
  if (status != 0) {
    y->fail = 1;
    return;
  }
  if (++y->count < y->rounds && pts_scheduler_yield_cb(y->s, NULL, y_cont, y) != 0)
    y->fail = 1;
}

static double s_yield_cb(void *arg) {
  one_loop *l = arg;
  yst y = {l->s, 0, l->n, 0};
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  uint64_t t0 = rb_now_ns();
  if (pts_scheduler_post_task_cb(l->s, y_cont, &y, &o) != 0) return -1;
  if (pts_loop_run(l->loop, PTS_RUN_UNTIL_IDLE) < 0) return -1;
  uint64_t t1 = rb_now_ns();
  /* The first step is the posted task; every later one a yield round trip. */
  return (!y.fail && y.count == y.rounds) ? (double)(t1 - t0) / (double)y.rounds : -1;
}

static pts_value y_then(void *data, pts_value arg);
static int y_again(yst *y) {
  pts_promise *p = NULL;
  if (pts_scheduler_yield(y->s, NULL, &p) != 0) return -1;
  int rc = pts_promise_then(p, y_then, NULL, y, NULL, NULL);
  pts_promise_unref(p);
  return rc;
}
static pts_value y_then(void *data, pts_value arg) {
  (void)arg;
  yst *y = data;
  if (++y->count < y->rounds && y_again(y) != 0) y->fail = 1;
  return pts_undefined();
}
static pts_value y_first(void *data, int status) {
  yst *y = data;
  if (status != 0 || y_again(y) != 0) y->fail = 1;
  return pts_undefined();
}

static double s_yield_promise(void *arg) {
  one_loop *l = arg;
  yst y = {l->s, 0, l->n, 0};
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  uint64_t t0 = rb_now_ns();
  if (pts_scheduler_post_task(l->s, y_first, &y, &o, NULL) != 0) return -1;
  if (pts_loop_run(l->loop, PTS_RUN_UNTIL_IDLE) < 0) return -1;
  uint64_t t1 = rb_now_ns();
  return (!y.fail && y.count == y.rounds) ? (double)(t1 - t0) / (double)y.rounds : -1;
}

/* A chain of tasks each posting the next: the same hop without yield. */
static void chain_task(void *data, int status) {
  yst *y = data;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  if (status != 0) {
    y->fail = 1;
    return;
  }
  if (++y->count < y->rounds && pts_scheduler_post_task_cb(y->s, chain_task, y, &o) != 0)
    y->fail = 1;
}

static double s_post_chain(void *arg) {
  one_loop *l = arg;
  yst y = {l->s, 0, l->n, 0};
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  uint64_t t0 = rb_now_ns();
  if (pts_scheduler_post_task_cb(l->s, chain_task, &y, &o) != 0) return -1;
  if (pts_loop_run(l->loop, PTS_RUN_UNTIL_IDLE) < 0) return -1;
  uint64_t t1 = rb_now_ns();
  return (!y.fail && y.count == y.rounds) ? (double)(t1 - t0) / (double)y.rounds : -1;
}

static double p_ev_reactivate(void *a) { return rb_libevent_reactivate(*(size_t *)a); }

void rb_suite_yield(rb_ctx *ctx) {
  size_t n = rb_n(ctx, 400000, 20000);
  one_loop l;
  rb_progress(ctx, "%zu yield round trips per run (callback and promise forms)", n);
  if (one_loop_open(&l, n, 1) != 0) {
    rb_unavailable_add(ctx, "yield", "pts_loop_new failed");
    return;
  }
  peer_arg pa = {n, BATCH, 0};
  const rb_spec g[] = {
      {"yield.floor_prio_fifo.ns", "ns", RB_FLOOR, p_floor_prio, &pa},
      {"yield.libevent_reactivate.ns", "ns", RB_PEER, p_ev_reactivate, &n},
      {"yield.roundtrip.ns", "ns", RB_PTSCHED, s_yield_cb, &l},
      {"yield.roundtrip_promise.ns", "ns", RB_PTSCHED, s_yield_promise, &l},
      {"yield.post_chain.ns", "ns", RB_PTSCHED, s_post_chain, &l},
  };
  rb_measure_group(ctx, g, sizeof g / sizeof g[0]);
  one_loop_close(&l);
  const char *fl = "yield.floor_prio_fifo.ns";
  rb_compare(ctx, "yield.roundtrip.ns", fl, "yield.libevent_reactivate.ns", NULL);
  rb_compare(ctx, "yield.roundtrip_promise.ns", fl, "yield.libevent_reactivate.ns", NULL);
  rb_compare(ctx, "yield.post_chain.ns", fl, "yield.libevent_reactivate.ns", NULL);
  rb_target(ctx, "yield.roundtrip.ns", 52.8, "no worse than before issue 12 (<= 52.8 ns; issue 7: 60)");
  rb_target_from(ctx, "yield.roundtrip.ns", "issue 12");
}

/* ------------------------------------------------------------------ */
/* control: setPriority and abort with many pending tasks              */

typedef struct ctl {
  pts_loop *loop;
  pts_controller *c;
  size_t pending, calls, counter;
} ctl;

static double s_set_priority(void *arg) {
  ctl *c = arg;
  uint64_t t0 = rb_now_ns();
  for (size_t i = 0; i < c->calls; i++)
    if (pts_controller_set_priority(c->c, (i & 1) ? PTS_PRIORITY_BACKGROUND
                                                    : PTS_PRIORITY_USER_VISIBLE) != 0)
      return -1;
  uint64_t t1 = rb_now_ns();
  return (double)(t1 - t0) / (double)c->calls;
}

typedef struct abort_arg {
  size_t n;
  int promise;
} abort_arg;

static double s_abort(void *arg) {
  abort_arg *a = arg;
  pts_loop *loop;
  pts_controller *c;
  size_t counter = 0;
  if (pts_loop_new(NULL, &loop) != 0) return -1;
  if (pts_abort_controller_new(loop, &c) != 0) {
    pts_loop_free(loop);
    return -1;
  }
  pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(loop));
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.signal = pts_controller_signal(c);
  double r = -1;
  size_t posted = 0;
  for (; posted < a->n; posted++) {
    int rc;
    if (a->promise) {
      pts_promise *p = NULL;
      rc = pts_scheduler_post_task(s, count_cb, &counter, &o, &p);
      if (rc == 0) pts_promise_unref(p);
    } else {
      rc = pts_scheduler_post_task_cb(s, count_abort, &counter, &o);
    }
    if (rc != 0) break;
  }
  if (posted == a->n) {
    uint64_t t0 = rb_now_ns();
    pts_controller_abort(c, NULL);
    pts_loop_run(loop, PTS_RUN_UNTIL_IDLE); /* rejections' jobs, if any */
    uint64_t t1 = rb_now_ns();
    /* Promise form: count_cb counts runs only, so none may have run. */
    bool ok = a->promise ? counter == 0 : counter == a->n;
    if (ok) r = (double)(t1 - t0) / (double)a->n;
  }
  pts_controller_unref(c);
  pts_loop_free(loop);
  return r;
}

static double p_floor_abort(void *a) { return rb_floor_abort(*(size_t *)a); }
static double p_floor_requeue(void *a) { return rb_floor_requeue(*(size_t *)a); }

void rb_suite_control(rb_ctx *ctx) {
  static const size_t pend[] = {1000, 10000, 100000};
  static const char *const tag[] = {"1k", "10k", "100k"};
  size_t calls = rb_n(ctx, 20000, 2000);
  char key[RB_KEY_MAX];
  rb_measure(ctx, "control.floor_requeue.ns", "ns", RB_FLOOR, p_floor_requeue, &calls);
  for (int k = 0; k < 3; k++) {
    rb_progress(ctx, "setPriority with %zu pending tasks (%zu calls per run)", pend[k], calls);
    ctl c;
    memset(&c, 0, sizeof c);
    c.calls = calls;
    if (pts_loop_new(NULL, &c.loop) != 0) continue;
    if (pts_task_controller_new(c.loop, PTS_PRIORITY_BACKGROUND, &c.c) == 0) {
      pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(c.loop));
      pts_post_options o = PTS_POST_OPTIONS_INIT;
      o.signal = pts_controller_signal(c.c);
      size_t i = 0;
      for (; i < pend[k]; i++)
        if (pts_scheduler_post_task_cb(s, count_abort, &c.counter, &o) != 0) break;
      snprintf(key, sizeof key, "control.set_priority_%s.ns", tag[k]);
      if (i == pend[k]) {
        rb_measure(ctx, key, "ns", RB_PTSCHED, s_set_priority, &c);
        rb_compare(ctx, key, "control.floor_requeue.ns", NULL);
      } else {
        rb_unavailable_add(ctx, key, "posting %zu tasks failed", pend[k]);
      }
      pts_controller_abort(c.c, NULL);
      pts_loop_run(c.loop, PTS_RUN_UNTIL_IDLE);
      pts_controller_unref(c.c);
    }
    pts_loop_free(c.loop);
  }
  rb_target(ctx, "control.set_priority_100k.ns", 24.4,
            "no worse than before issue 12 (<= 24.4 ns; issue 7: 200)");
  rb_target_from(ctx, "control.set_priority_100k.ns", "issue 12");
  rb_metric *a = rb_find(ctx, "control.set_priority_1k.ns");
  rb_metric *b = rb_find(ctx, "control.set_priority_100k.ns");
  if (a && b) {
    double r = b->sum.median / a->sum.median;
    rb_record(ctx, "control.set_priority_flatness.ratio", "ratio", RB_INFO, &r, 1);
    rb_target(ctx, "control.set_priority_flatness.ratio", 2,
              "flat from 1,000 to 100,000 pending (100k/1k <= 2)");
    rb_target_from(ctx, "control.set_priority_flatness.ratio", "issue 7");
  }

  for (int k = 0; k < 3; k++) {
    rb_progress(ctx, "abort of a signal with %zu pending tasks", pend[k]);
    abort_arg aa = {pend[k], 0};
    size_t nf = pend[k];
    char fkey[RB_KEY_MAX];
    snprintf(fkey, sizeof fkey, "control.floor_abort_%s.ns_per_task", tag[k]);
    if (k == 2) snprintf(key, sizeof key, "control.abort.ns_per_task");
    else snprintf(key, sizeof key, "control.abort_%s.ns_per_task", tag[k]);
    const rb_spec g[] = {
        {fkey, "ns", RB_FLOOR, p_floor_abort, &nf},
        {key, "ns", RB_PTSCHED, s_abort, &aa},
    };
    rb_measure_group(ctx, g, 2);
    rb_compare(ctx, key, fkey, NULL);
  }
  rb_note(ctx, "control.abort.ns_per_task", "100,000 pending tasks on one AbortSignal");
  rb_target(ctx, "control.abort.ns_per_task", 21.2,
            "no worse than before issue 12 (<= 21.2 ns; issue 7: 50)");
  rb_target_from(ctx, "control.abort.ns_per_task", "issue 12");
  abort_arg ap = {100000, 1};
  rb_progress(ctx, "abort of 100000 pending postTask promises");
  rb_measure(ctx, "control.abort_promise.ns_per_task", "ns", RB_PTSCHED, s_abort, &ap);
  rb_compare(ctx, "control.abort_promise.ns_per_task", "control.floor_abort_100k.ns_per_task", NULL);
}

/* ------------------------------------------------------------------ */
/* memory: bytes per pending task through jemalloc's statistics        */

enum mem_form { MEM_CALLBACK, MEM_PROMISE, MEM_SIGNAL, MEM_DELAYED, MEM_INBOX };

typedef struct mem_arg {
  size_t n;
  enum mem_form form;
} mem_arg;

static double s_mem_once(const mem_arg *m);

static double s_mem(void *arg) {
  mem_arg *m = arg;
  /* The inbox form's blocks come from the posting thread's node cache,
   * which outlives loops: a first pass, not measured, leaves it as a
   * stream's steady state would (and lets a cache idle since an earlier
   * scenario give its surplus back first, which would read as negative
   * bytes). */
  if (m->form == MEM_INBOX) (void)s_mem_once(m);
  return s_mem_once(m);
}

static double s_mem_once(const mem_arg *m) {
  pts_loop *loop;
  pts_controller *c = NULL;
  size_t counter = 0;
  if (pts_loop_new(NULL, &loop) != 0) return -1;
  pts_global *g = pts_loop_default_global(loop);
  pts_scheduler *s = pts_global_scheduler(g);
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  if (m->form == MEM_SIGNAL) {
    if (pts_task_controller_new(loop, PTS_PRIORITY_USER_VISIBLE, &c) != 0) {
      pts_loop_free(loop);
      return -1;
    }
    o.signal = pts_controller_signal(c);
  }
  if (m->form == MEM_DELAYED) o.delay_ms = 60000;
  int64_t a0 = rb_allocated_bytes();
  size_t i = 0;
  for (; i < m->n; i++) {
    int rc;
    switch (m->form) {
      case MEM_PROMISE: {
        pts_promise *p = NULL;
        rc = pts_scheduler_post_task(s, count_cb, &counter, &o, &p);
        if (rc == 0) pts_promise_unref(p);
        break;
      }
      case MEM_INBOX:
        rc = pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, count_abort, &counter);
        break;
      default:
        rc = pts_scheduler_post_task_cb(s, count_abort, &counter, &o);
        break;
    }
    if (rc != 0) break;
  }
  int64_t a1 = rb_allocated_bytes();
  if (c != NULL) pts_controller_unref(c);
  pts_loop_free(loop);
  if (i != m->n || a0 < 0 || a1 < 0) return -1;
  return (double)(a1 - a0) / (double)m->n;
}

static double p_ev_bytes_active(void *a) { return rb_libevent_bytes_active(*(size_t *)a); }
static double p_ev_bytes_once(void *a) { return rb_libevent_bytes_once(*(size_t *)a); }
static double p_node_bytes(void *a) { return rb_floor_node_bytes(*(size_t *)a); }

void rb_suite_memory(rb_ctx *ctx) {
  if (rb_allocated_bytes() < 0) {
    rb_unavailable_add(ctx, "memory", "jemalloc statistics (mallctl stats.allocated) not available");
    return;
  }
  size_t n = rb_n(ctx, 100000, 10000);
  rb_progress(ctx, "bytes held per pending task, %zu pending (jemalloc stats.allocated)", n);
  rb_measure(ctx, "memory.floor_node.bytes_per_task", "B", RB_FLOOR, p_node_bytes, &n);
  rb_measure(ctx, "memory.libevent_active.bytes_per_task", "B", RB_PEER, p_ev_bytes_active, &n);
  rb_measure(ctx, "memory.libevent_once.bytes_per_task", "B", RB_PEER, p_ev_bytes_once, &n);
  static const struct {
    enum mem_form form;
    const char *key;
    const char *note;
  } forms[] = {
      {MEM_CALLBACK, "memory.pending_callback.bytes_per_task", "pts_scheduler_post_task_cb, default options"},
      {MEM_PROMISE, "memory.pending_promise.bytes_per_task", "pts_scheduler_post_task, caller's promise reference dropped"},
      {MEM_SIGNAL, "memory.pending_signal.bytes_per_task", "pts_scheduler_post_task_cb with one shared TaskSignal"},
      {MEM_DELAYED, "memory.pending_delayed.bytes_per_task", "pts_scheduler_post_task_cb with delay 60 s (timer heap)"},
      {MEM_INBOX, "memory.pending_inbox.bytes_per_task",
       "pts_queue_task_from_any_thread, not yet drained; allocated once the posting thread's node "
       "cache is warm (an unmeasured pass first): each pending task holds a 128-byte block from it"},
  };
  for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
    mem_arg m = {n, forms[k].form};
    rb_measure(ctx, forms[k].key, "B", RB_PTSCHED, s_mem, &m);
    rb_note(ctx, forms[k].key, "%s", forms[k].note);
    rb_compare(ctx, forms[k].key, "memory.floor_node.bytes_per_task",
               "memory.libevent_active.bytes_per_task",
               "memory.libevent_once.bytes_per_task", NULL);
  }
  rb_target(ctx, "memory.pending_callback.bytes_per_task", 64, "<= 64 bytes per pending task");
  rb_target_from(ctx, "memory.pending_callback.bytes_per_task", "issue 12, issue 7");
}

/* ------------------------------------------------------------------ */
/* latency: user-blocking start delay under a background flood, one loop */

typedef struct lat {
  pts_loop *loop;
  pts_scheduler *s;
  uint64_t bg_ns;
  atomic_int stop, done, ready;
  _Atomic uint64_t t_inject;
  double delay;
  int fail;
} lat;

static void lat_bg(void *data, int status) {
  lat *l = data;
  if (status != 0) return;
  rb_spin_ns(l->bg_ns);
  if (atomic_load_explicit(&l->stop, memory_order_relaxed)) return;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_BACKGROUND;
  if (pts_scheduler_post_task_cb(l->s, lat_bg, l, &o) != 0) l->fail = 1;
}

static void lat_ub(void *data, int status) {
  lat *l = data;
  if (status != 0) return;
  l->delay = (double)(rb_now_ns() - atomic_load(&l->t_inject));
  atomic_store_explicit(&l->done, 1, memory_order_release);
}

/* Applied on the loop's thread between two tasks: postTask(user-blocking). */
static void lat_inject(void *data, int status) {
  lat *l = data;
  if (status != 0) return;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_USER_BLOCKING;
  if (pts_scheduler_post_task_cb(l->s, lat_ub, l, &o) != 0) {
    l->fail = 1;
    atomic_store_explicit(&l->done, 1, memory_order_release);
  }
}

/* Poster side (rb_lat_post): the send time, then the command. */
static int lat_send(void *arg) {
  lat *l = arg;
  if (l->fail) return -1;
  atomic_store(&l->t_inject, rb_now_ns());
  return pts_loop_call_from_any_thread(l->loop, lat_inject, l) != 0 ? -1 : 0;
}

static void *lat_thread(void *arg) {
  lat *l = arg;
  atomic_store_explicit(&l->ready, 1, memory_order_release);
  pts_loop_run(l->loop, PTS_RUN_FOREVER);
  return NULL;
}

static int lat_run(uint64_t bg_ns, uint64_t gap_ns, double *delays, size_t k) {
  lat *l = calloc(1, sizeof *l);
  if (l == NULL) return -1;
  l->bg_ns = bg_ns;
  int rc = -1;
  if (pts_loop_new(NULL, &l->loop) != 0) {
    free(l);
    return -1;
  }
  l->s = pts_global_scheduler(pts_loop_default_global(l->loop));
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_BACKGROUND;
  for (int i = 0; i < RB_FLOOD; i++) pts_scheduler_post_task_cb(l->s, lat_bg, l, &o);
  pthread_t th;
  if (pthread_create(&th, NULL, lat_thread, l) == 0) {
    rb_wait_ready(&l->ready);
    size_t i = rb_lat_post(gap_ns, delays, k, lat_send, l, &l->done, &l->delay);
    atomic_store(&l->stop, 1);
    pts_loop_stop(l->loop);
    pthread_join(th, NULL);
    if (!l->fail) rc = (int)i;
  }
  pts_loop_free(l->loop);
  free(l);
  return rc;
}

void rb_suite_latency(rb_ctx *ctx) {
  const uint64_t bg_ns = 5000, gap_ns = 40000;
  size_t k = rb_n(ctx, 1500, 200);
  rb_progress(ctx, "one loop: %d background tasks of %.0f us each, %zu user-blocking posts per run from another thread; "
              "its floor (bare thread) and libevent interleaved",
              RB_FLOOD, (double)bg_ns / 1000, k);
  double bg_us = (double)bg_ns / 1000.0;
  rb_record(ctx, "latency.user_blocking_under_bg_flood.bg_task_us", "us", RB_INFO, &bg_us, 1);
  const lat_sys sys[] = {
      {"floor_bg_flood", RB_FLOOR, rb_floor_latency, "latency_cdf_floor.dat"},
      {"libevent_ub_under_bg_flood", RB_PEER, rb_libevent_latency, "latency_cdf_libevent.dat"},
      {"user_blocking_under_bg_flood", RB_PTSCHED, lat_run, "latency_cdf_ptsched.dat"},
  };
  bool ok[3];
  rb_lat_budget_ns = ctx->opt.quick ? 250000000u : 600000000u;
  rb_lat_measure(ctx, sys, 3, bg_ns, gap_ns, k, ok);
  static const char *const figs[] = {"p50_us", "p99_us", "p999_us"};
  for (int i = 0; i < 3; i++) {
    char fl[RB_KEY_MAX], ev[RB_KEY_MAX], me[RB_KEY_MAX];
    rb_key_make(fl, sizeof fl, "latency", "floor_bg_flood", figs[i]);
    rb_key_make(ev, sizeof ev, "latency", "libevent_ub_under_bg_flood", figs[i]);
    rb_key_make(me, sizeof me, "latency", "user_blocking_under_bg_flood", figs[i]);
    rb_compare(ctx, me, fl, ev, NULL);
    rb_compare(ctx, ev, fl, NULL);
  }
  if (ok[2]) {
    /* Issue 12's bound: the floor's p99 (the VM's scheduling noise and the
     * wait for the spin in progress) + one background task + 2 us. Without
     * a floor in this run, issue 7's absolute bound. */
    const char *p99 = "latency.user_blocking_under_bg_flood.p99_us";
    rb_metric *f = rb_find(ctx, "latency.floor_bg_flood.p99_us");
    char text[96];
    if (f != NULL) {
      snprintf(text, sizeof text, "<= floor p99 (%.1f us) + one %.0f us background task + 2 us",
               f->sum.median, bg_us);
      rb_target(ctx, p99, f->sum.median + bg_us + 2, text);
      rb_target_from(ctx, p99, "issue 12");
    } else {
      rb_target(ctx, p99, bg_us + 2, "<= one background task + 2 us (no floor in this run)");
      rb_target_from(ctx, p99, "issue 7");
    }
    rb_ratio_target(ctx, "latency.user_blocking_under_bg_flood.p99_x_libevent", p99,
                    "latency.libevent_ub_under_bg_flood.p99_us", 1, "<= libevent's p99 (1x)",
                    "issue 12");
  }
  rb_plot_add(ctx, "latency_cdf_loop",
              "User-blocking start delay under a background flood (one loop)",
              "set xlabel 'start delay (us)'\nset ylabel 'fraction of tasks'\n"
              "set logscale x\nset key bottom right\nset grid\n"
              "plot 'data/latency_cdf_ptsched.dat' using 1:2 with lines lw 2 title 'ptsched', \\\n"
              "     'data/latency_cdf_libevent.dat' using 1:2 with lines lw 2 title 'libevent (priorities)', \\\n"
              "     'data/latency_cdf_floor.dat' using 1:2 with lines lw 2 dt 2 lc rgb 'gray40' title 'floor (bare thread, flag)'\n");
  rb_agents_latency_part(ctx);
}
