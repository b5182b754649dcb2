/* bench/runner/suite_agents.c: the suites that need agents on the worker
 * pool (include/ptsched/agents.h): cross-thread posts to an agent and the
 * wake-up round trip between two agents, scaling over agents x threads x
 * inter-loop policies, user-blocking latency under a co-located background
 * flood per policy, and fairness of CPU share against weight per policy.
 *
 * Work inside an agent is always started by a seed task queued from the main
 * thread (pts_agent_queue_task); the seed finds its scheduler on its own
 * thread and keeps a fixed number of task chains going with
 * pts_scheduler_post_task_cb, so a loop always has runnable work until its quota or
 * the stop flag ends the chains. Completion is signalled through a POSIX
 * semaphore or pts_agent_drain; nothing here polls a pool's internals.
 */
#define _GNU_SOURCE
#include "bench/runner/suites.h"

#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/runner/peers.h"
#include "ptsched.h"
#include "ptsched/agents.h"

/* The policies the scale, latency and fairness suites compare: the five
 * before quantized (public since 5.2). Quantized is measured by the leak
 * suite (suite_leak.c), on its leakage and its costs. */
#define RB_POLICIES PTS_POLICY_QUANTIZED

static pts_scheduler *agent_scheduler(pts_agent *a) {
  return pts_global_scheduler(pts_loop_default_global(pts_agent_loop(a)));
}

/* A pool of threads under policy with the given quantum (0: the default,
 * pts_pool_options.quantum_ns). */
static pts_pool *pool_new_qb(unsigned threads, pts_policy policy, uint64_t quantum_ns,
                             bool balance) {
  pts_pool_options o;
  memset(&o, 0, sizeof o);
  o.threads = threads;
  o.policy = policy;
  o.seed = 42;
  o.quantum_ns = quantum_ns;
  o.balance = balance;
  pts_pool *p = NULL;
  return pts_pool_new(&o, &p) == 0 ? p : NULL;
}

static pts_pool *pool_new(unsigned threads, pts_policy policy) {
  return pool_new_qb(threads, policy, 0, false);
}

static pts_agent *agent_new(pts_pool *pool, const char *origin, uint32_t weight,
                            int thread) {
  pts_agent_options o = PTS_AGENT_OPTIONS_INIT;
  o.origin = origin;
  o.weight = weight;
  o.thread = thread;
  pts_agent *a = NULL;
  return pts_agent_new(pool, &o, &a) == 0 ? a : NULL;
}

static void agent_free(pts_agent *a) {
  if (a == NULL) return;
  pts_agent_destroy(a, true);
  pts_agent_unref(a);
}

static void policy_key(char *buf, size_t size, int policy) {
  rb_key_part(buf, size, pts_policy_name(policy));
}

/* ------------------------------------------------------------------ */
/* crossthread via agents                                              */

typedef struct axt {
  pts_agent *a, *b;
  size_t n;
  sem_t done;
  int fail;
  /* The consumer's (the pool thread's) own lines: it writes count on every
   * task, so nothing the poster reads may share them (RB_CONSUMER_SIDE,
   * harness.h). */
  RB_CONSUMER_SIDE size_t count;
  uint64_t start, end;
  /* Its allocation counter at its first task, and the bytes allocated from
   * there to its last (-1: no counter). */
  const volatile uint64_t *c_ap;
  uint64_t c_alloc0;
  double c_alloc;
} axt;

static void axt_task(void *data, int status) {
  axt *x = data;
  if (status != 0) return;
  if (++x->count == 1) {
    x->c_ap = rb_thread_allocatedp(); /* cached per thread after the warm-up */
    if (x->c_ap) x->c_alloc0 = *x->c_ap;
  }
  if (x->count == x->n) {
    x->end = rb_now_ns();
    x->c_alloc = x->c_ap ? (double)(*x->c_ap - x->c_alloc0) : -1;
    sem_post(&x->done);
  }
}

static pts_value axt_cb(void *data, int status) {
  axt_task(data, status);
  return pts_undefined();
}

/* How the stream posts: pts_agent_queue_task; pts_agent_post_task (its
 * block from the poster's node cache); pts_agent_post_task_req with
 * caller-owned requests allocated and touched before the clock starts, as
 * crossthread.post does with the loop's requests. */
enum { AXT_QUEUE, AXT_POST_CACHED, AXT_POST_REQ };

typedef struct axt_arg {
  pts_agent *a;
  size_t n;
  int how;                  /* AXT_* */
  pts_agent_task_req *reqs; /* AXT_POST_REQ: n of them, reused run after run */
  double alloc_post, alloc_cons; /* last run: producer's, consumer's bytes; -1: none */
} axt_arg;

/* n requests, one per post, 64-byte aligned and touched (page faults are
 * not what the figures measure); NULL if out of memory. */
static pts_agent_task_req *reqs_new(size_t n) {
  pts_agent_task_req *r = aligned_alloc(64, n * sizeof *r);
  if (r != NULL) memset(r, 0, n * sizeof *r);
  return r;
}

static double s_agent_stream(void *arg) {
  axt_arg *g = arg;
  axt x;
  memset(&x, 0, sizeof x);
  x.n = g->n;
  sem_init(&x.done, 0, 0);
  pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_USER_VISIBLE;
  const volatile uint64_t *ap = rb_thread_allocatedp();
  uint64_t a0 = ap ? *ap : 0;
  size_t n = x.n; /* the poster reads nothing of x's in its loop */
  uint64_t t0 = rb_now_ns();
  size_t i = 0;
  for (; i < n; i++) {
    int rc = g->how == AXT_POST_REQ
                 ? pts_agent_post_task_req(g->a, PTS_PRIORITY_USER_VISIBLE, &g->reqs[i], axt_cb, &x)
             : g->how == AXT_POST_CACHED
                 ? pts_agent_post_task(g->a, &o, axt_cb, &x, NULL, NULL, NULL)
                 : pts_agent_queue_task(g->a, PTS_SOURCE_MESSAGE, axt_task, &x);
    if (rc != 0) break;
  }
  double p_alloc = ap ? (double)(*ap - a0) : -1; /* the producer's posts */
  double r = -1;
  g->alloc_post = p_alloc;
  g->alloc_cons = -1;
  if (i == x.n) {
    sem_wait(&x.done);
    r = (double)(x.end - t0) / (double)x.n;
    g->alloc_cons = x.c_alloc;
  }
  pts_agent_drain(g->a);
  sem_destroy(&x.done);
  return r;
}

static void rtt_b(void *data, int status);
static void rtt_a(void *data, int status) {
  axt *x = data;
  if (status != 0) return;
  x->count++;
  if (x->count == 1) x->start = rb_now_ns();
  if (x->count == x->n + 1) {
    x->end = rb_now_ns();
    sem_post(&x->done);
    return;
  }
  if (pts_agent_queue_task(x->b, PTS_SOURCE_MESSAGE, rtt_b, x) != 0) {
    x->fail = 1;
    sem_post(&x->done);
  }
}
static void rtt_b(void *data, int status) {
  axt *x = data;
  if (status != 0) return;
  if (pts_agent_queue_task(x->a, PTS_SOURCE_MESSAGE, rtt_a, x) != 0) {
    x->fail = 1;
    sem_post(&x->done);
  }
}

typedef struct rtt_arg {
  pts_agent *a, *b;
  size_t rounds;
} rtt_arg;

static double s_agent_rtt(void *arg) {
  rtt_arg *g = arg;
  axt x;
  memset(&x, 0, sizeof x);
  x.a = g->a;
  x.b = g->b;
  x.n = g->rounds;
  sem_init(&x.done, 0, 0);
  rb_sleep_ns(2000000); /* both pool threads parked */
  double r = -1;
  if (pts_agent_queue_task(x.a, PTS_SOURCE_MESSAGE, rtt_a, &x) == 0) {
    sem_wait(&x.done);
    if (!x.fail) r = (double)(x.end - x.start) / (double)x.n;
  }
  pts_agent_drain(x.a);
  pts_agent_drain(x.b);
  sem_destroy(&x.done);
  return r;
}

/* The stream's two sides apart (information): the pool thread is held by
 * a task waiting on a semaphore while the poster posts n tasks, so the
 * poster's time per post is its own; then that task returns, and the pool
 * thread's time from there to the last task, per task, is its own (the
 * same in-place run as in the stream, with n tasks queued). */
typedef struct asplit {
  sem_t hold, done;
  atomic_int holding;
  size_t n;
  RB_CONSUMER_SIDE size_t count;
  uint64_t start, end;
} asplit;

static pts_value asplit_hold(void *data, int status) {
  asplit *s = data;
  if (status == 0) {
    atomic_store_explicit(&s->holding, 1, memory_order_release);
    sem_wait(&s->hold);
    s->start = rb_now_ns();
  }
  return pts_undefined();
}

static pts_value asplit_task(void *data, int status) {
  asplit *s = data;
  if (status == 0 && ++s->count == s->n) {
    s->end = rb_now_ns();
    sem_post(&s->done);
  }
  return pts_undefined();
}

typedef struct asplit_arg {
  pts_agent *a;
  size_t n;
  pts_agent_task_req *reqs; /* n of them (the stream's) */
  double *post_ns;          /* the poster's figure of each call, warm-up first */
  int calls;
} asplit_arg;

/* One run; returns the pool thread's ns per task, keeps the poster's. */
static double s_agent_split(void *arg) {
  asplit_arg *g = arg;
  asplit s;
  memset(&s, 0, sizeof s);
  s.n = g->n;
  sem_init(&s.hold, 0, 0);
  sem_init(&s.done, 0, 0);
  pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_USER_VISIBLE;
  double r = -1;
  if (pts_agent_post_task(g->a, &o, asplit_hold, &s, NULL, NULL, NULL) == 0) {
    while (!atomic_load_explicit(&s.holding, memory_order_acquire)) rb_sleep_ns(10000);
    size_t n = s.n, i = 0;
    pts_agent_task_req *reqs = g->reqs;
    uint64_t t0 = rb_now_ns();
    for (; i < n; i++)
      if (pts_agent_post_task_req(g->a, PTS_PRIORITY_USER_VISIBLE, &reqs[i], asplit_task, &s) != 0)
        break;
    uint64_t t1 = rb_now_ns();
    sem_post(&s.hold);
    if (i == n) {
      sem_wait(&s.done);
      g->post_ns[g->calls++] = (double)(t1 - t0) / (double)n;
      r = (double)(s.end - s.start) / (double)n;
    }
  }
  pts_agent_drain(g->a);
  sem_destroy(&s.hold);
  sem_destroy(&s.done);
  return r;
}

/* The split of the agent stream under `name` (its delay statistic on or
 * off for the run, off again after it, the default): NAME.poster_ns_per_post
 * and NAME.drain_ns_per_task. */
static void agent_split(rb_ctx *ctx, pts_agent *a, size_t n, pts_agent_task_req *reqs,
                        const char *name, bool timed) {
  asplit_arg g = {a, n, reqs, calloc((size_t)ctx->runs + 1, sizeof(double)), 0};
  if (g.post_ns == NULL || pts_agent_set_delay_stats(a, timed) != 0) {
    free(g.post_ns);
    return;
  }
  char key[128];
  snprintf(key, sizeof key, "crossthread.%s.drain_ns_per_task", name);
  if (rb_measure(ctx, key, "ns", RB_INFO, s_agent_split, &g) && g.calls == ctx->runs + 1) {
    snprintf(key, sizeof key, "crossthread.%s.poster_ns_per_post", name);
    rb_record(ctx, key, "ns", RB_INFO, g.post_ns + 1, (size_t)ctx->runs);
  }
  (void)pts_agent_set_delay_stats(a, false);
  free(g.post_ns);
}

/* ---- limits set, none reached (issue 32: the hot paths do not regress) ----
 * The same two streams to an agent with every limit set far above what
 * they reach and to one with none, interleaved: the request stream
 * (pts_agent_post_task_req: the producer's place in the inbox) and an
 * agent posting to itself in batches (pts_scheduler_post_task_cb: the task limit's
 * compare in the post's fast path). */

#define OWN_BATCH 256

typedef struct own_run {
  pts_agent *a;
  size_t n, posted, ran;
  sem_t done;
  uint64_t end;
} own_run;

static void own_batch(own_run *r);

static void own_task(void *data, int status) {
  own_run *r = data;
  if (status != 0) return;
  if (++r->ran == r->n) {
    r->end = rb_now_ns();
    sem_post(&r->done);
  } else if (r->ran == r->posted) {
    own_batch(r);
  }
}

static void own_batch(own_run *r) {
  pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(r->a)));
  for (int i = 0; i < OWN_BATCH && r->posted < r->n; i++, r->posted++)
    if (pts_scheduler_post_task_cb(s, own_task, r, NULL) != 0) return; /* never ends: the run fails */
}

static void own_start(void *data, int status) {
  if (status == 0) own_batch(data);
}

typedef struct own_arg {
  pts_agent *a;
  size_t n;
} own_arg;

static double s_agent_own_post_run(void *arg) {
  own_arg *g = arg;
  own_run r = {g->a, g->n, 0, 0, {{0}}, 0};
  sem_init(&r.done, 0, 0);
  uint64_t t0 = rb_now_ns();
  double out = -1;
  if (pts_agent_queue_task(g->a, PTS_SOURCE_GENERIC, own_start, &r) == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 30;
    if (sem_timedwait(&r.done, &ts) == 0) out = (double)(r.end - t0) / (double)r.n;
  }
  pts_agent_drain(g->a);
  sem_destroy(&r.done);
  return out;
}

static void pin_task(void *data, int status);

/* a is alone on its pool's thread; the limited agent gets a pool of its
 * own (so both take the paths of an agent alone), its thread pinned to the
 * same CPU as a's (only one of them is busy at a time). */
static void limits_pair(rb_ctx *ctx, pts_agent *a, size_t n, pts_agent_task_req *reqs) {
  pts_agent_options o = PTS_AGENT_OPTIONS_INIT;
  o.origin = "limited";
  uint64_t far = UINT64_C(1) << 40;
  o.limits = (pts_agent_limits){far, far, far};
  pts_pool *pool = pool_new(1, PTS_POLICY_STRICT);
  pts_agent *lim = NULL;
  if (pool == NULL || pts_agent_new(pool, &o, &lim) != 0 ||
      pts_agent_queue_task(lim, PTS_SOURCE_GENERIC, pin_task, NULL) != 0 ||
      pts_agent_drain(lim) != 0) {
    rb_unavailable_add(ctx, "crossthread.agent_post_task_limited", "pool or agent creation failed");
    agent_free(lim);
    if (pool) pts_pool_shutdown(pool);
    return;
  }
  axt_arg u = {a, n, AXT_POST_REQ, reqs, -1, -1}, l = {lim, n, AXT_POST_REQ, reqs, -1, -1};
  own_arg ou = {a, n}, ol = {lim, n};
  rb_spec pair[] = {
      {"crossthread.agent_post_task_unlimited.ns_per_task", "ns", RB_INFO, s_agent_stream, &u},
      {"crossthread.agent_post_task_limited.ns_per_task", "ns", RB_INFO, s_agent_stream, &l},
      {"agents.own_post_run_unlimited.ns_per_task", "ns", RB_INFO, s_agent_own_post_run, &ou},
      {"agents.own_post_run_limited.ns_per_task", "ns", RB_INFO, s_agent_own_post_run, &ol},
  };
  rb_measure_group(ctx, pair, sizeof pair / sizeof pair[0]);
  /* Information: an exact inbox limit costs each post one atomic add on
   * the producers' line (docs/agents.md, "Quotas"). */
  rb_ratio_info(ctx, "crossthread.agent_post_task_limited.x_unlimited",
                "crossthread.agent_post_task_limited.ns_per_task",
                "crossthread.agent_post_task_unlimited.ns_per_task");
  rb_ratio_target(ctx, "agents.own_post_run_limited.x_unlimited",
                  "agents.own_post_run_limited.ns_per_task",
                  "agents.own_post_run_unlimited.ns_per_task", 1.05,
                  "<= 1.05: task and byte limits set (never reached) cost a post+run <= 5%",
                  "issue 32");
  agent_free(lim);
  pts_pool_shutdown(pool);
}

/* Pins the pool thread that runs it (rb_pin_consumer). */
static void pin_task(void *data, int status) {
  (void)data;
  if (status == 0) rb_pin_consumer();
}

void rb_agents_crossthread_part(rb_ctx *ctx) {
  size_t n = rb_n(ctx, 200000, 20000);
  size_t rounds = rb_n(ctx, 2000, 200);
  rb_progress(ctx, "agents: stream of %zu posts to an agent on a 1-thread pool", n);
  pts_pool *pool = pool_new(1, PTS_POLICY_STRICT);
  pts_agent *a = pool ? agent_new(pool, "target", 1, 0) : NULL;
  pts_agent_task_req *reqs = a ? reqs_new(n) : NULL;
  /* Poster and pool thread on two CPUs, as the loop's streams (harness.h). */
  bool pinned = a != NULL && rb_pin_begin();
  if (pinned && (pts_agent_queue_task(a, PTS_SOURCE_GENERIC, pin_task, NULL) != 0 ||
                 pts_agent_drain(a) != 0)) {
    rb_pin_end();
    pinned = false;
  }
  if (a != NULL && reqs != NULL) {
    static const char counted[] =
        "the posting thread over its posts plus the pool thread from its first task to its last";
    axt_arg g = {a, n, AXT_QUEUE, NULL, -1, -1};
    if (rb_measure(ctx, "crossthread.agent_queue.ns_per_task", "ns", RB_PTSCHED, s_agent_stream, &g))
      rb_record_alloc(ctx, "crossthread.agent_queue.alloc_bytes_per_task", g.alloc_post,
                      g.alloc_cons, n, counted, false);
    axt_arg h = {a, n, AXT_POST_REQ, reqs, -1, -1};
    if (rb_measure(ctx, "crossthread.agent_post_task.ns_per_task", "ns", RB_PTSCHED,
                   s_agent_stream, &h))
      rb_record_alloc(ctx, "crossthread.agent_post_task.alloc_bytes_per_task", h.alloc_post,
                      h.alloc_cons, n, counted, false);
    axt_arg c = {a, n, AXT_POST_CACHED, NULL, -1, -1};
    if (rb_measure(ctx, "crossthread.agent_post_task_cached.ns_per_task", "ns", RB_PTSCHED,
                   s_agent_stream, &c))
      rb_record_alloc(ctx, "crossthread.agent_post_task_cached.alloc_bytes_per_task",
                      c.alloc_post, c.alloc_cons, n, counted, false);
    /* The request stream with the start-delay statistic on (off by
     * default): what its two clock reads per post cost (information). */
    if (pts_agent_set_delay_stats(a, true) == 0) {
      axt_arg u = {a, n, AXT_POST_REQ, reqs, -1, -1};
      rb_measure(ctx, "crossthread.agent_post_task_timed.ns_per_task", "ns", RB_INFO,
                 s_agent_stream, &u);
      (void)pts_agent_set_delay_stats(a, false);
    }
    agent_split(ctx, a, n, reqs, "agent_post_task", false);
    agent_split(ctx, a, n, reqs, "agent_post_task_timed", true);
    limits_pair(ctx, a, n, reqs);
    rb_pin_end();
    const char *keys[] = {"crossthread.agent_queue.ns_per_task",
                          "crossthread.agent_post_task.ns_per_task",
                          "crossthread.agent_post_task_cached.ns_per_task"};
    for (int i = 0; i < 3; i++)
      rb_compare(ctx, keys[i], "crossthread.floor_mpsc.ns_per_task",
                 "crossthread.libevent_active.ns_per_task",
                 "crossthread.libuv_async.ns_per_task", NULL);
    /* Each against the loop's post with the same allocation model. */
    rb_ratio_target(ctx, "crossthread.agent_post_task.x_post",
                    "crossthread.agent_post_task.ns_per_task", "crossthread.post.ns_per_task", 2,
                    "<= 2x the loop's own cross-thread post", "issue 12");
    rb_ratio_info(ctx, "crossthread.agent_post_task_cached.x_post_cached",
                  "crossthread.agent_post_task_cached.ns_per_task",
                  "crossthread.post_cached.ns_per_task");
    rb_ratio_info(ctx, "crossthread.agent_post_task_timed.x_post",
                  "crossthread.agent_post_task_timed.ns_per_task", "crossthread.post.ns_per_task");
    /* The pool thread alone against the whole of the loop's stream. */
    rb_ratio_info(ctx, "crossthread.agent_post_task.drain_x_post",
                  "crossthread.agent_post_task.drain_ns_per_task", "crossthread.post.ns_per_task");
  } else {
    rb_unavailable_add(ctx, "crossthread.agent_queue", "pool or agent creation failed");
  }
  rb_pin_end(); /* (a no-op when done above) */
  agent_free(a);
  if (pool) pts_pool_shutdown(pool);
  free(reqs); /* after the shutdown: every request's task has run */

  rb_progress(ctx, "agents: wake-up round trips between two agents on two pool threads");
  pool = pool_new(2, PTS_POLICY_STRICT);
  pts_agent *x = pool ? agent_new(pool, "ping", 1, 0) : NULL;
  pts_agent *y = pool ? agent_new(pool, "pong", 1, 1) : NULL;
  if (x && y) {
    rtt_arg g = {x, y, rounds};
    rb_measure(ctx, "crossthread.agent_wake_rtt.ns", "ns", RB_PTSCHED, s_agent_rtt, &g);
    rb_compare(ctx, "crossthread.agent_wake_rtt.ns", "crossthread.floor_futex_wake_rtt.ns",
               "crossthread.libevent_wake_rtt.ns", "crossthread.libuv_wake_rtt.ns", NULL);
  } else {
    rb_unavailable_add(ctx, "crossthread.agent_wake_rtt", "pool or agent creation failed");
  }
  agent_free(x);
  agent_free(y);
  if (pool) pts_pool_shutdown(pool);
}

/* ------------------------------------------------------------------ */
/* chains: the work every pool scenario runs inside its agents          */

/* One line at least each (RB_CONSUMER_SIDE's reason, harness.h): every
 * task writes its agent's counters, and neighbours in an array run on
 * different pool threads (placement alternates), so a shared line would
 * move between the cores at every task of either. */
typedef struct chain_agent {
  RB_CONSUMER_SIDE pts_agent *agent;
  pts_scheduler *s;
  int priority;
  uint64_t cost_ns;        /* simulated work per task */
  size_t remaining;        /* quota of tasks still to post (agent thread) */
  size_t chains;           /* chains still running (agent thread) */
  size_t width;
  size_t ran;              /* tasks run (agent thread; read after drain) */
  uint64_t busy_ns;        /* measured task time (agent thread) */
  atomic_int *stop;        /* shared stop flag, or NULL: quota only */
  atomic_size_t *left;     /* agents not finished */
  sem_t *done;             /* posted when left reaches 0 */
  int fail;
} chain_agent;

static void chain_end(chain_agent *c) {
  if (--c->chains == 0 && c->left != NULL &&
      atomic_fetch_sub(c->left, 1) == 1 && c->done != NULL)
    sem_post(c->done);
}

static void chain_task(void *data, int status) {
  chain_agent *c = data;
  if (status != 0) return; /* released at destroy: nothing to do */
  if (c->cost_ns) {
    uint64_t t0 = rb_now_ns();
    rb_spin_ns(c->cost_ns);
    c->busy_ns += rb_now_ns() - t0;
  }
  c->ran++;
  bool more = c->stop ? !atomic_load_explicit(c->stop, memory_order_relaxed)
                      : c->remaining > 0;
  if (more) {
    if (!c->stop) c->remaining--;
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.priority = c->priority;
    if (pts_scheduler_post_task_cb(c->s, chain_task, c, &o) == 0) return;
    c->fail = 1;
  }
  chain_end(c);
}

static void chain_seed(void *data, int status) {
  chain_agent *c = data;
  if (status != 0) return;
  c->s = agent_scheduler(c->agent);
  c->chains = 0;
  for (size_t i = 0; i < c->width; i++) {
    if (!c->stop) {
      if (c->remaining == 0) break;
      c->remaining--;
    }
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.priority = c->priority;
    if (pts_scheduler_post_task_cb(c->s, chain_task, c, &o) != 0) {
      c->fail = 1;
      break;
    }
    c->chains++;
  }
  if (c->chains == 0) {
    c->chains = 1;
    chain_end(c);
  }
}

/* ------------------------------------------------------------------ */
/* scale: agents x threads x policies                                  */

typedef struct scale_arg {
  pts_agent **agents;
  chain_agent *ch;
  size_t m, total;
} scale_arg;

static double s_scale(void *arg) {
  scale_arg *g = arg;
  atomic_size_t left;
  sem_t done;
  atomic_init(&left, g->m);
  sem_init(&done, 0, 0);
  size_t quota = g->total / g->m;
  for (size_t i = 0; i < g->m; i++) {
    chain_agent *c = &g->ch[i];
    memset(c, 0, sizeof *c);
    c->agent = g->agents[i];
    c->priority = PTS_PRIORITY_USER_VISIBLE;
    c->remaining = quota;
    c->width = 8;
    c->left = &left;
    c->done = &done;
  }
  uint64_t t0 = rb_now_ns();
  size_t i = 0;
  for (; i < g->m; i++)
    if (pts_agent_queue_task(g->agents[i], PTS_SOURCE_GENERIC, chain_seed, &g->ch[i]) != 0)
      break;
  double r = -1;
  if (i == g->m) {
    sem_wait(&done);
    uint64_t t1 = rb_now_ns();
    size_t ran = 0;
    int fail = 0;
    for (size_t k = 0; k < g->m; k++) {
      pts_agent_drain(g->agents[k]);
      ran += g->ch[k].ran;
      fail |= g->ch[k].fail;
    }
    if (!fail && ran == quota * g->m) r = (double)(t1 - t0) / (double)ran;
  } else {
    for (size_t k = 0; k < i; k++) pts_agent_drain(g->agents[k]);
  }
  sem_destroy(&done);
  return r;
}

/* A scale scenario's set-up: a pool of threads under policy (quantum 0:
 * the default) with m agents, each its own origin. */
typedef struct scale_setup {
  pts_pool *pool;
  pts_agent **agents;
  chain_agent *ch;
  size_t made;
  scale_arg g;
} scale_setup;

/* Binds a pool's threads to distinct CPUs of the runner's set, thread i to
 * the i-th (pts_pool_pin_thread), when there are enough. Unbound, the
 * kernel ran both threads of a 2-thread pool on one vCPU for milliseconds
 * at a time after their wake-ups, and a third of the runs of a 64-agent
 * point took twice as long (10-11 or 20-23 ns per task; bound, 10-13 in
 * every run; docs/benchmarks.md, scale). */
static void pin_threads_apart(pts_pool *pool, unsigned threads) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0 || (unsigned)CPU_COUNT(&set) < threads) return;
  unsigned t = 0;
  for (int c = 0; c < CPU_SETSIZE && t < threads; c++)
    if (CPU_ISSET(c, &set) && pts_pool_pin_thread(pool, t, c) == 0) t++;
}

static bool scale_open(scale_setup *s, unsigned threads, int policy, uint64_t quantum_ns,
                       bool balance, size_t m, size_t total) {
  memset(s, 0, sizeof *s);
  s->pool = pool_new_qb(threads, (pts_policy)policy, quantum_ns, balance);
  /* One agent keeps one thread busy: bound, it would run on the first CPU
   * whatever its speed, where Go's one goroutine (its threads unbound) runs
   * where the kernel puts it. */
  if (s->pool != NULL && threads > 1 && m >= threads) pin_threads_apart(s->pool, threads);
  s->agents = calloc(m, sizeof *s->agents);
  s->ch = aligned_alloc(64, m * sizeof *s->ch);
  if (s->ch) memset(s->ch, 0, m * sizeof *s->ch);
  for (; s->pool && s->agents && s->ch && s->made < m; s->made++) {
    char origin[32];
    snprintf(origin, sizeof origin, "tenant%zu", s->made);
    if ((s->agents[s->made] = agent_new(s->pool, origin, 1, -1)) == NULL) break;
  }
  s->g = (scale_arg){s->agents, s->ch, m, total};
  return s->made == m;
}

static void scale_close(scale_setup *s) {
  for (size_t i = 0; i < s->made; i++) agent_free(s->agents[i]);
  free(s->agents);
  free(s->ch);
  if (s->pool) pts_pool_shutdown(s->pool);
}

/* One scale point, measured as key. A one-thread point's pool runs on the
 * first CPU (its thread inherits the runner's set while it is pinned), as
 * scale.switch_ns's do, so that x_a1 compares points on one CPU: unpinned,
 * each point's thread ran where the kernel put it, and on this VM's two
 * vCPUs round-robin read 22.3 ns at 1 agent, 34.2 at 4 and 23.0 at 16 in
 * one main job (2026-11-28). */
static rb_metric *scale_point(rb_ctx *ctx, const char *key, unsigned threads, int policy,
                              bool balance, size_t m, size_t total) {
  scale_setup s;
  rb_metric *mt = NULL;
  bool pinned = threads == 1 && rb_pin_begin();
  bool ok = scale_open(&s, threads, policy, 0, balance, m, total);
  if (pinned) rb_pin_end();
  if (ok)
    mt = rb_measure(ctx, key, "ns", RB_PTSCHED, s_scale, &s.g);
  else
    rb_unavailable_add(ctx, key, "pool or agent creation failed");
  scale_close(&s);
  return mt;
}

/* The switch between loops (scale.switch_ns): round-robin at one step per
 * turn (quantum 1), so every task is followed by a switch, on 4 agents
 * (their loops stay in the cache: the switch's own work, not the cache's),
 * less the same tasks on 1 agent, which runs them in bursts with no switch.
 * The two are measured interleaved, run i of one beside run i of the
 * other, and the figure is the median of the runs' differences: a change
 * of the host's speed between runs moves both sides of a difference.
 * Both pools' threads run on one CPU (they inherit the runner's set while
 * it is pinned): the project's two vCPUs differ by up to 1.4x on this
 * memory-bound work, and with each pool's thread where the kernel put it
 * the base read 21 or 32-34 ns from run to run and the difference 17-19
 * or 7 ns (docs/benchmarks.md, scale). */
static void switch_cost(rb_ctx *ctx, size_t total) {
  static const char q1_key[] = "scale.round_robin_q1_t1_a4.ns_per_task";
  static const char a1_key[] = "scale.switch_base_t1_a1.ns_per_task";
  scale_setup q1, a1;
  bool pinned = rb_pin_begin();
  bool ok = scale_open(&q1, 1, PTS_POLICY_ROUND_ROBIN, 1, false, 4, total);
  ok = scale_open(&a1, 1, PTS_POLICY_ROUND_ROBIN, 0, false, 1, total) && ok;
  if (pinned) rb_pin_end();
  if (ok) {
    rb_spec specs[] = {{q1_key, "ns", RB_PTSCHED, s_scale, &q1.g},
                       {a1_key, "ns", RB_PTSCHED, s_scale, &a1.g}};
    rb_measure_group(ctx, specs, 2);
  } else {
    rb_unavailable_add(ctx, "scale.switch_ns", "pool or agent creation failed");
  }
  scale_close(&q1);
  scale_close(&a1);
  rb_metric *mq = rb_find(ctx, q1_key), *ma = rb_find(ctx, a1_key);
  if (mq == NULL || ma == NULL || mq->nsamples != ma->nsamples) return;
  double *d = malloc(mq->nsamples * sizeof *d);
  if (d == NULL) abort();
  for (size_t i = 0; i < mq->nsamples; i++) d[i] = mq->samples[i] - ma->samples[i];
  rb_record(ctx, "scale.switch_ns", "ns", RB_PTSCHED, d, mq->nsamples);
  free(d);
  rb_note(ctx, "scale.switch_ns",
          "median over runs of scale.round_robin_q1_t1_a4 (a switch after every task) less "
          "scale.switch_base_t1_a1 (the same tasks on 1 agent, no switch), measured "
          "interleaved, both pools' threads on one CPU");
  rb_metric *fl = rb_find(ctx, "throughput.floor_prio_fifo.ns_per_task");
  if (fl) {
    rb_target(ctx, "scale.switch_ns", 2 * fl->sum.median, "<= 2x throughput.floor_prio_fifo");
    rb_target_from(ctx, "scale.switch_ns", "issue 30");
  }
}

typedef struct go_scale_arg {
  unsigned threads;
  size_t m, total;
} go_scale_arg;

static double s_go_scale(void *arg) {
  go_scale_arg *g = arg;
  return rb_go_scale(g->threads, g->m, g->total);
}

/* The scale suite's ratios and targets (issue 30) for policy p: 64 and 4
 * agents against 1 on a thread, 2 threads against 1 at 64 (judged against
 * the host's capacity by the balance suite), Go at each point. */
static void scale_ratios(rb_ctx *ctx, const char *pk, const size_t *am, size_t na, bool go) {
  char num[RB_KEY_MAX], den[RB_KEY_MAX], r[RB_KEY_MAX], scen[64];
  size_t top = am[na - 1];
  snprintf(scen, sizeof scen, "%s_t1_a1", pk);
  rb_key_make(den, sizeof den, "scale", scen, "ns_per_task");
  for (size_t k = 1; k < na; k++) {
    if (am[k] != 4 && am[k] != top) continue;
    snprintf(scen, sizeof scen, "%s_t1_a%zu", pk, am[k]);
    rb_key_make(num, sizeof num, "scale", scen, "ns_per_task");
    rb_key_make(r, sizeof r, "scale", scen, "x_a1");
    double bound = am[k] == 4 ? 1.5 : 2.0;
    char text[64];
    snprintf(text, sizeof text, "<= %.1fx the same policy's 1 agent", bound);
    rb_ratio_target(ctx, r, num, den, bound, text, "issue 30");
  }
  snprintf(scen, sizeof scen, "%s_t1_a%zu", pk, top);
  rb_key_make(num, sizeof num, "scale", scen, "ns_per_task");
  snprintf(scen, sizeof scen, "%s_t2_a%zu", pk, top);
  rb_key_make(den, sizeof den, "scale", scen, "ns_per_task");
  rb_key_make(r, sizeof r, "scale", scen, "x_t1");
  rb_metric *m = rb_ratio_info(ctx, r, num, den);
  if (m) {
    m->higher_better = true;
    rb_note(ctx, r, "1 thread's ns/task over 2 threads': judged against balance.capacity.ratio "
                    "(what the host gives 2 busy threads over 1) in the balance suite");
  }
  if (!go) return;
  for (unsigned t = 1; t <= 2; t++)
    for (size_t k = 0; k < na; k++) {
      snprintf(scen, sizeof scen, "%s_t%u_a%zu", pk, t, am[k]);
      rb_key_make(num, sizeof num, "scale", scen, "ns_per_task");
      rb_key_make(r, sizeof r, "scale", scen, "x_go");
      snprintf(scen, sizeof scen, "go_t%u_a%zu", t, am[k]);
      rb_key_make(den, sizeof den, "scale", scen, "ns_per_task");
      rb_ratio_target(ctx, r, num, den, 1.0, "<= Go's ns/task at the same point", "issue 30");
    }
}

void rb_suite_scale(rb_ctx *ctx) {
  static const size_t agents_full[] = {1, 4, 16, 64};
  static const size_t agents_quick[] = {1, 16};
  const size_t *am = ctx->opt.quick ? agents_quick : agents_full;
  size_t na = ctx->opt.quick ? 2 : 4;
  /* Tasks per run: 256,000, about 2.5 ms a worker on two threads, so the
   * fixed costs of a run (waking the parked workers, 50-200 us each on the
   * project's VM, and the runner's own wake-up at the end) stay a small part
   * of it. With 64,000 they were a fifth to a third of a two-thread run, and
   * scale.<p>_t2_a64.x_t1 measured them more than the second core.
   * Time-partitioned's slots make its tasks cost 0.2-1 us: 64,000. */
  size_t total = rb_n(ctx, 256000, 16000), total_slots = rb_n(ctx, 64000, 16000);
  char pk[32], scen[64], key[RB_KEY_MAX], file[64];
  char plot[4096];
  size_t po = 0;
  po += (size_t)snprintf(plot + po, sizeof plot - po,
                         "set xlabel 'agents'\nset ylabel 'ns per task (wall clock)'\n"
                         "set logscale x 2\nset key outside right\nset grid\nplot ");
  int first = 1;
  for (unsigned threads = 1; threads <= 2; threads++) {
    for (int p = 0; p < RB_POLICIES; p++) {
      policy_key(pk, sizeof pk, p);
      size_t n = p == PTS_POLICY_TIME_PARTITIONED ? total_slots : total;
      rb_progress(ctx, "policy %s, %u thread(s), agents up to %zu, %zu tasks per run",
                  pts_policy_name(p), threads, am[na - 1], n);
      snprintf(file, sizeof file, "scale_%s_t%u.dat", pk, threads);
      FILE *f = rb_data_open(ctx, file);
      if (f) fprintf(f, "# agents median_ns min_ns max_ns\n");
      for (size_t k = 0; k < na; k++) {
        size_t m = am[k];
        snprintf(scen, sizeof scen, "%s_t%u_a%zu", pk, threads, m);
        rb_key_make(key, sizeof key, "scale", scen, "ns_per_task");
        rb_metric *mt = scale_point(ctx, key, threads, p, false, m, n);
        if (mt) {
          rb_compare(ctx, key, "throughput.floor_prio_fifo.ns_per_task", NULL);
          if (f) fprintf(f, "%zu %.2f %.2f %.2f\n", m, mt->sum.median, mt->sum.min, mt->sum.max);
        }
      }
      if (f) fclose(f);
      po += (size_t)snprintf(plot + po, sizeof plot - po,
                             "%s'data/%s' using 1:2:3:4 with yerrorlines title '%s, %u thr'",
                             first ? "" : ", \\\n     ", file, pts_policy_name(p), threads);
      first = 0;
    }
  }
  /* Two threads of a balancing pool (pts_pool_options.balance) at 64
   * agents, for comparison (info): a worker whose share runs out first
   * (this VM's two vCPUs often run at different speeds) steals loops from
   * the other (docs/agents.md, "Balancer"). */
  for (int p = 0; p <= PTS_POLICY_RANDOMIZED; p++) {
    scale_setup st;
    policy_key(pk, sizeof pk, p);
    snprintf(scen, sizeof scen, "%s_t2_a%zu_balanced", pk, am[na - 1]);
    rb_key_make(key, sizeof key, "scale", scen, "ns_per_task");
    if (scale_open(&st, 2, p, 0, true, am[na - 1], total))
      rb_measure(ctx, key, "ns", RB_INFO, s_scale, &st.g);
    scale_close(&st);
  }
  /* Go at the same points (the peer), then the ratios. */
  const char *why = NULL;
  bool go = rb_go_prepare(ctx->workspace, ctx->outdir, &why) != NULL;
  if (go) {
    rb_progress(ctx, "Go: the same grid, GOMAXPROCS = threads");
    for (unsigned threads = 1; threads <= 2; threads++) {
      snprintf(file, sizeof file, "scale_go_t%u.dat", threads);
      FILE *f = rb_data_open(ctx, file);
      if (f) fprintf(f, "# agents median_ns min_ns max_ns\n");
      for (size_t k = 0; k < na; k++) {
        go_scale_arg g = {threads, am[k], total};
        snprintf(scen, sizeof scen, "go_t%u_a%zu", threads, am[k]);
        rb_key_make(key, sizeof key, "scale", scen, "ns_per_task");
        /* One thread: the child inherits the pinned set, so Go runs on the
         * CPU ptsched's one-thread points ran on (scale_point). */
        bool pinned = threads == 1 && rb_pin_begin();
        rb_metric *mt = rb_measure(ctx, key, "ns", RB_PEER, s_go_scale, &g);
        if (pinned) rb_pin_end();
        if (mt && f)
          fprintf(f, "%zu %.2f %.2f %.2f\n", am[k], mt->sum.median, mt->sum.min, mt->sum.max);
      }
      if (f) fclose(f);
      po += (size_t)snprintf(plot + po, sizeof plot - po,
                             ", \\\n     'data/%s' using 1:2:3:4 with yerrorlines dt 2 lw 2 "
                             "title 'Go, %u thr'",
                             file, threads);
    }
  } else {
    rb_unavailable_add(ctx, "scale.go", "%s", why);
  }
  for (int p = 0; p <= PTS_POLICY_RANDOMIZED; p++) {
    policy_key(pk, sizeof pk, p);
    scale_ratios(ctx, pk, am, na, go);
  }
  switch_cost(ctx, total);
  snprintf(plot + po, sizeof plot - po, "\n");
  rb_plot_add(ctx, "scale", "Scaling: ns per task over agents, per policy and thread count",
              "%s", plot);
}

/* ------------------------------------------------------------------ */
/* latency per policy: a user-blocking tenant beside a background flood */

typedef struct alat {
  pts_agent *bg, *ub;
  chain_agent flood;
  atomic_int stop;
  atomic_int done;
  _Atomic uint64_t t_inject;
  double delay;
} alat;

static pts_value alat_ub(void *data, int status) {
  alat *l = data;
  if (status == 0) {
    l->delay = (double)(rb_now_ns() - atomic_load(&l->t_inject));
    atomic_store_explicit(&l->done, 1, memory_order_release);
  }
  return pts_undefined();
}

static int alat_policy; /* the policy the next alat_run uses */

static int alat_run(uint64_t bg_ns, uint64_t gap_ns, double *delays, size_t k) {
  pts_pool *pool = pool_new(1, (pts_policy)alat_policy);
  if (pool == NULL) return -1;
  alat *l = aligned_alloc(64, (sizeof *l + 63) / 64 * 64); /* chain_agent's alignment */
  if (l != NULL) memset(l, 0, sizeof *l);
  int rc = -1;
  if (l == NULL) {
    pts_pool_shutdown(pool);
    return -1;
  }
  l->bg = agent_new(pool, "flood", 1, 0);
  l->ub = agent_new(pool, "interactive", 1, 0);
  if (l->bg && l->ub) {
    l->flood.agent = l->bg;
    l->flood.priority = PTS_PRIORITY_BACKGROUND;
    l->flood.cost_ns = bg_ns;
    l->flood.width = RB_FLOOD;
    l->flood.stop = &l->stop;
    pts_agent_queue_task(l->bg, PTS_SOURCE_GENERIC, chain_seed, &l->flood);
    rb_sleep_ns(1000000);
    unsigned seed = 12345;
    pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
    o.priority = PTS_PRIORITY_USER_BLOCKING;
    uint64_t deadline = rb_now_ns() + rb_lat_budget_ns;
    size_t i = 0;
    for (; i < k && rb_now_ns() < deadline; i++) {
      struct timespec ts = {0, (long)(gap_ns / 2 + (uint64_t)(rand_r(&seed) % (unsigned)(gap_ns + 1)))};
      nanosleep(&ts, NULL);
      atomic_store(&l->done, 0);
      atomic_store(&l->t_inject, rb_now_ns());
      if (pts_agent_post_task(l->ub, &o, alat_ub, l, NULL, NULL, NULL) != 0) break;
      uint64_t limit = rb_now_ns() + 2000000000u; /* a stuck policy fails the run */
      while (atomic_load_explicit(&l->done, memory_order_acquire) == 0 && rb_now_ns() < limit)
        rb_sleep_ns(5000); /* sleep-poll: leave the second core to the pool */
      if (atomic_load(&l->done) == 0) break;
      delays[i] = l->delay;
    }
    atomic_store(&l->stop, 1);
    pts_agent_drain(l->bg);
    pts_agent_drain(l->ub);
    /* A task that never started (stuck policy) fails the run. */
    if (i == k || rb_now_ns() >= deadline) rc = (int)i;
    if (i < k && atomic_load(&l->done) == 0) rc = -1;
  }
  agent_free(l->bg);
  agent_free(l->ub);
  pts_pool_shutdown(pool);
  free(l);
  return rc;
}

/* One runner per policy, so rb_lat_measure can interleave the policies. */
#define ALAT(P) \
  static int alat_##P(uint64_t b, uint64_t g, double *d, size_t k) { \
    alat_policy = P;                                                  \
    return alat_run(b, g, d, k);                                      \
  }
ALAT(0)
ALAT(1)
ALAT(2)
ALAT(3)
ALAT(4)
static const rb_lat_fn alat_fns[RB_POLICIES] = {alat_0, alat_1, alat_2, alat_3, alat_4};

void rb_agents_latency_part(rb_ctx *ctx) {
  const uint64_t bg_ns = 5000, gap_ns = 40000;
  size_t k = rb_n(ctx, 600, 100);
  char scen[RB_POLICIES][48], cdf[RB_POLICIES][64], pk[32];
  lat_sys sys[RB_POLICIES];
  for (int p = 0; p < RB_POLICIES; p++) {
    policy_key(pk, sizeof pk, p);
    snprintf(scen[p], sizeof scen[p], "policy_%s", pk);
    snprintf(cdf[p], sizeof cdf[p], "latency_cdf_%s.dat", pk);
    sys[p].scenario = scen[p];
    sys[p].role = RB_PTSCHED;
    sys[p].fn = alat_fns[p];
    sys[p].cdf = cdf[p];
  }
  rb_progress(ctx, "agents: a user-blocking tenant beside a background tenant on one pool thread, "
              "every policy interleaved, up to %zu posts per run", k);
  rb_lat_budget_ns = ctx->opt.quick ? 150000000u : 400000000u;
  /* Go beside them (no priorities: the urgent task waits for a thread). */
  const char *why = NULL;
  size_t nsys = RB_POLICIES;
  lat_sys all[RB_POLICIES + 1];
  memcpy(all, sys, sizeof sys);
  if (rb_go_prepare(ctx->workspace, ctx->outdir, &why) != NULL)
    all[nsys++] = (lat_sys){"go_ub_under_bg_flood", RB_PEER, rb_go_latency, "latency_cdf_go.dat"};
  else
    rb_unavailable_add(ctx, "latency.go", "%s", why);
  bool ok[RB_POLICIES + 1];
  rb_lat_measure(ctx, all, nsys, bg_ns, gap_ns, k, ok);
  if (nsys > RB_POLICIES && ok[RB_POLICIES]) {
    rb_ratio_target(ctx, "latency.policy_strict.x_go_p99", "latency.policy_strict.p99_us",
                    "latency.go_ub_under_bg_flood.p99_us", 0.1, "<= 0.1x Go's p99", "issue 30");
    rb_ratio_info(ctx, "latency.policy_round_robin.x_go_p99", "latency.policy_round_robin.p99_us",
                  "latency.go_ub_under_bg_flood.p99_us");
  }
  char plot[4096];
  size_t po = 0;
  po += (size_t)snprintf(plot + po, sizeof plot - po,
                         "set xlabel 'start delay (us)'\nset ylabel 'fraction of tasks'\n"
                         "set logscale x\nset key bottom right\nset grid\nplot ");
  int first = 1;
  static const char *const figs[] = {"p50_us", "p99_us", "p999_us"};
  for (int p = 0; p < RB_POLICIES; p++) {
    if (!ok[p]) continue;
    for (int i = 0; i < 3; i++) {
      char key[RB_KEY_MAX], peer[RB_KEY_MAX];
      rb_key_make(key, sizeof key, "latency", scen[p], figs[i]);
      rb_key_make(peer, sizeof peer, "latency", "libevent_ub_under_bg_flood", figs[i]);
      char go_peer[RB_KEY_MAX];
      rb_key_make(go_peer, sizeof go_peer, "latency", "go_ub_under_bg_flood", figs[i]);
      rb_compare(ctx, key, "", peer, go_peer, NULL);
    }
    po += (size_t)snprintf(plot + po, sizeof plot - po,
                           "%s'data/%s' using 1:2 with lines lw 2 title '%s'",
                           first ? "" : ", \\\n     ", cdf[p], pts_policy_name(p));
    first = 0;
  }
  if (!first) {
    snprintf(plot + po, sizeof plot - po, "\n");
    rb_plot_add(ctx, "latency_cdf_policies",
                "User-blocking start delay beside a background tenant on the same thread, per policy",
                "%s", plot);
  }
}

/* ------------------------------------------------------------------ */
/* fairness: CPU share per tenant against weight                        */

#define TENANTS 4
static const uint32_t tenant_weight[TENANTS] = {1, 1, 2, 4};
static const uint64_t tenant_cost[TENANTS] = {1000, 3000, 1000, 2000};

typedef struct fair_arg {
  pts_agent *agents[TENANTS];
  chain_agent ch[TENANTS];
  uint64_t duration_ns;
  double share[TENANTS];
} fair_arg;

static double s_fair(void *arg) {
  fair_arg *g = arg;
  atomic_int stop;
  atomic_init(&stop, 0);
  for (int i = 0; i < TENANTS; i++) {
    chain_agent *c = &g->ch[i];
    memset(c, 0, sizeof *c);
    c->agent = g->agents[i];
    c->priority = PTS_PRIORITY_USER_VISIBLE;
    c->cost_ns = tenant_cost[i];
    c->width = 4;
    c->stop = &stop;
  }
  for (int i = 0; i < TENANTS; i++)
    if (pts_agent_queue_task(g->agents[i], PTS_SOURCE_GENERIC, chain_seed, &g->ch[i]) != 0) {
      atomic_store(&stop, 1);
      for (int k = 0; k < TENANTS; k++) pts_agent_drain(g->agents[k]);
      return -1;
    }
  rb_sleep_ns(g->duration_ns);
  atomic_store(&stop, 1);
  for (int i = 0; i < TENANTS; i++) pts_agent_drain(g->agents[i]);
  double used[TENANTS], w[TENANTS], sum = 0;
  for (int i = 0; i < TENANTS; i++) {
    if (g->ch[i].fail) return -1;
    used[i] = (double)g->ch[i].busy_ns;
    w[i] = tenant_weight[i];
    sum += used[i];
  }
  if (sum <= 0) return -1;
  for (int i = 0; i < TENANTS; i++) g->share[i] = used[i] / sum;
  return rb_weighted_jain(used, w, TENANTS);
}

void rb_suite_fairness(rb_ctx *ctx) {
  uint64_t dur = (uint64_t)(150e6 * ctx->size);
  if (dur < 40000000u) dur = 40000000u;
  double wsum = 0;
  for (int i = 0; i < TENANTS; i++) wsum += tenant_weight[i];
  FILE *f = rb_data_open(ctx, "fairness.dat");
  if (f) {
    fprintf(f, "tenant expected");
    for (int p = 0; p < RB_POLICIES; p++) fprintf(f, " %s", pts_policy_name(p));
    fprintf(f, "\n");
  }
  double shares[RB_POLICIES][TENANTS];
  bool have[RB_POLICIES] = {false};
  char pk[32], key[RB_KEY_MAX], scen[64];
  for (int p = 0; p < RB_POLICIES; p++) {
    rb_progress(ctx, "policy %s: %d tenants (weights 1,1,2,4; task costs 1,3,1,2 us) on one thread, %.0f ms per run",
                pts_policy_name(p), TENANTS, (double)dur / 1e6);
    policy_key(pk, sizeof pk, p);
    pts_pool *pool = pool_new(1, (pts_policy)p);
    fair_arg *g = aligned_alloc(64, (sizeof *g + 63) / 64 * 64); /* chain_agent's alignment */
    if (g != NULL) memset(g, 0, sizeof *g);
    int made = 0;
    for (; pool && g && made < TENANTS; made++) {
      char origin[32];
      snprintf(origin, sizeof origin, "tenant%d", made);
      if ((g->agents[made] = agent_new(pool, origin, tenant_weight[made], 0)) == NULL) break;
    }
    rb_key_make(key, sizeof key, "fairness", pk, "jain_index");
    if (made == TENANTS) {
      g->duration_ns = dur;
      rb_metric *m = rb_measure(ctx, key, "index", RB_PTSCHED, s_fair, g);
      if (m) {
        m->higher_better = true;
        rb_note(ctx, key, "Jain's index of CPU share / weight share (1 = shares follow weights)");
        for (int i = 0; i < TENANTS; i++) {
          snprintf(scen, sizeof scen, "%s_t%d", pk, i);
          char sk[RB_KEY_MAX];
          rb_key_make(sk, sizeof sk, "fairness", scen, "share");
          rb_record(ctx, sk, "fraction", RB_INFO, &g->share[i], 1);
          rb_note(ctx, sk, "last run; weight %u of %.0f -> expected %.3f", tenant_weight[i],
                  wsum, tenant_weight[i] / wsum);
          shares[p][i] = g->share[i];
        }
        have[p] = true;
      }
    } else {
      rb_unavailable_add(ctx, key, "pool or agent creation failed");
    }
    for (int i = 0; g && i < made; i++) agent_free(g->agents[i]);
    free(g);
    if (pool) pts_pool_shutdown(pool);
  }
  rb_target(ctx, "fairness.fair.jain_index", 0.95, ">= 0.95 (the fair policy follows weights)");
  rb_target_from(ctx, "fairness.fair.jain_index", "runner");
  if (f) {
    for (int i = 0; i < TENANTS; i++) {
      fprintf(f, "t%d(w%u) %.4f", i, tenant_weight[i], tenant_weight[i] / wsum);
      for (int p = 0; p < RB_POLICIES; p++) {
        if (have[p]) fprintf(f, " %.4f", shares[p][i]);
        else fprintf(f, " 0");
      }
      fprintf(f, "\n");
    }
    fclose(f);
    rb_plot_add(ctx, "fairness", "CPU share per tenant against its weight, per policy",
                "set style data histograms\nset style histogram clustered gap 1\n"
                "set style fill solid 0.8 border -1\nset ylabel 'share of CPU time'\n"
                "set yrange [0:*]\nset key outside right\nset grid ytics\n"
                "plot for [i=2:%d] 'data/fairness.dat' using i:xtic(1) title columnheader(i)\n",
                RB_POLICIES + 2);
  }
}

