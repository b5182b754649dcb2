/* bench/runner/suite_isolation.c: the isolation suite (issue 32). What one
 * hostile tenant can do to the others, and to the process, on a pool of two
 * threads (round-robin), each scenario against the same set-up without the
 * hostile party, the runs interleaved (with, without, with, ...), a fresh
 * pool each run.
 *
 * The well-behaved neighbours are two agents: nb0 runs a chain of tasks of
 * a fixed computation calibrated to 20 us (each posting the next on its own
 * scheduler), so it takes a whole thread; nb1 is light. The main thread
 * (the driver) posts a probe task to each every millisecond
 * (pts_agent_post_task_req, user-visible) and a probe's start delay is from
 * its post to its start. Placement, explicit:
 *   - bomb, flood: the hostile tenant (or the flood's victim) alone on
 *     thread 0, nb0 and nb1 on thread 1, balancing off: a memory or inbox
 *     attack is measured apart from the CPU share of a shared thread (which
 *     the inter-loop policy decides; fairness suite);
 *   - hog, blocked: the hostile tenant and nb0 on thread 0, nb1 on thread 1,
 *     balancing on and the watchdog at 2 ms: nb0 is stuck behind the
 *     hostile step until the pool moves it.
 * The scenarios:
 *   1. bomb: a tenant whose every task posts eight more (half promise form,
 *      half callback form), so its pending tasks and memory grow as fast as its
 *      thread can post, with limits.bytes = 64 MiB. The process's RSS is
 *      sampled every millisecond and its peak (VmHWM after clear_refs, or
 *      the samples) is compared with the RSS before the bomb, jemalloc's
 *      free pages purged first. While the library does not enforce the
 *      limit, the runner stops the bomb at 4x the limit (a safety stop,
 *      counted in isolation.bomb.capped). The neighbours' window opens
 *      when the bomb is at its limit (its first PTS_EQUOTA; at most 2 s).
 *      A third run per round puts a tenant that only spins on thread 0
 *      (the bomb's CPU without its memory): on two shared cores a busy
 *      thread costs the neighbours' thread whatever it does.
 *   2. flood: a hostile agent on thread 1 (sharing it with the neighbours
 *      by turns, as a tenant does) posts background tasks to the victim
 *      (pts_agent_post_task) as fast as it can, with the victim's
 *      limits.inbox = 1024; the victim's own tasks (8 chains side by side,
 *      each task posting the next with a 1 ms delay) are timed from their
 *      due time to their start. In the run without the flood the same agent spins for its
 *      turns without posting, so thread 1's load is the same and the ratio
 *      is the posts' effect (a producer outside the pool would take a core
 *      of the two from the pool's threads whatever it posts).
 *   3. hog: a hostile task spinning 1 s; 4. blocked: one in nanosleep 1 s.
 *      Measured over the hostile step (from its start to its end); the run
 *      without it, and the capacity run (both neighbours on a one-thread
 *      pool), over the same window as bomb and flood.
 * Every well-behaved task (chain tasks, probes, the victim's tasks) has a
 * per-task count of runs: posted and never run is lost, run twice is
 * duplicated (isolation.lost_or_duplicated, over every run).
 *
 * Threads: the suite runs on the main thread; the tasks on the pool's
 * threads write only their own records, read by the main thread after
 * pts_agent_drain or pts_agent_destroy(wait) has returned.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jemalloc/jemalloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/runner/suites.h"
#include "ptsched.h"
#include "ptsched/agents.h"

#define WORK_NS 20000                 /* one step of nb0's chain */
#define PROBE_NS UINT64_C(1000000)     /* the driver's period */
#define WARM_NS UINT64_C(30000000)     /* from the start of a run to its window */
#define HOSTILE_NS UINT64_C(1000000000) /* the hog's and the blocked step's length */
#define WATCHDOG_NS UINT64_C(2000000)
#define BOMB_LIMIT (UINT64_C(64) << 20)
#define BOMB_SAFETY (4 * BOMB_LIMIT)    /* the runner's own stop of the bomb */
#define BOMB_SAFETY_TASKS 8000000u      /* and of its pending tasks */
#define BOMB_GROW_NS UINT64_C(2000000000) /* the longest the bomb's window waits */
#define BOMB_FANOUT 8                   /* posts per bomb task, half with a promise */
#define FLOOD_INBOX 1024u
#define FLOOD_BURST_NS 10000u         /* a turn of the flooder, the default quantum */
#define FLOOD_SAFETY 2000000u           /* admitted, not settled: the producer waits */
#define VICTIM_DELAY_MS 1
/* The victim's chains run side by side, so a window has this many times
 * more samples and its p99 is not the third-worst of 300 (one host
 * hiccup of a millisecond decided it). */
#define VICTIM_CHAINS 8

typedef enum scen { SC_BOMB = 0, SC_FLOOD, SC_HOG, SC_BLOCKED, SC_NONE_HOG, SC_CAPACITY, SC_NONE_BOMB, SC_NONE_FLOOD, SC_BUSY } scen;

/* ---- memory of the process ---- */

/* A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); -1 if absent.
 * read(2) into a stack buffer: no allocation while the bomb is measured. */
static int64_t status_bytes(const char *field) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  size_t len = strlen(field);
  for (char *p = buf; (p = strstr(p, field)) != NULL; p += len) {
    if ((p != buf && p[-1] != '\n') || p[len] != ':') continue;
    return strtoll(p + len + 1, NULL, 10) * 1024;
  }
  return -1;
}

/* Resets VmHWM to the current RSS (clear_refs "5"); false if not allowed. */
static bool reset_peak(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok;
}

/* Gives jemalloc's free pages back, so the RSS before a run is what the
 * program holds and a bomb cannot reuse pages the previous run left. */
static void purge(void) {
  char name[64];
  snprintf(name, sizeof name, "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
  (void)mallctl(name, NULL, NULL, NULL, 0);
}

/* ---- the well-behaved tenants ---- */

typedef enum nb_mode { NB_LIGHT = 0, NB_BUSY, NB_TIMED } nb_mode;

struct nb;
typedef struct wtask {
  struct nb *owner;
  uint32_t idx;
} wtask;

/* A neighbour: its chain (busy: 20 us steps; timed: a 1 ms delayed chain,
 * the flood's victim) and its records. The chain's fields are the agent's
 * thread's; done is read by the driver while it runs. */
typedef struct nb {
  pts_agent *a;
  nb_mode mode;
  pts_scheduler *s;
  uint32_t cap, next; /* records; the next index to post */
  wtask *w;
  uint8_t *ran;       /* runs of chain task i (saturating) */
  uint64_t *due, *start; /* timed: due time and start time of task i */
  uint32_t canceled;
  int err;
  bool full;
  atomic_bool stop;
  RB_CONSUMER_SIDE atomic_uint_fast64_t done, posted;
} nb;

static void chain_task(void *data, int status);

static void chain_post(nb *n) {
  if (n->next >= n->cap) {
    n->full = true;
    return;
  }
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  if (n->mode == NB_TIMED) {
    o.delay_ms = VICTIM_DELAY_MS;
    n->due[n->next] = rb_now_ns() + (uint64_t)VICTIM_DELAY_MS * 1000000u;
  }
  int rc = pts_scheduler_post(n->s, chain_task, &n->w[n->next], &o);
  if (rc == 0) {
    n->next++;
    atomic_fetch_add_explicit(&n->posted, 1, memory_order_relaxed);
  } else {
    n->err = rc;
  }
}

static void chain_task(void *data, int status) {
  wtask *w = data;
  nb *n = w->owner;
  if (status != 0) {
    n->canceled++;
    return;
  }
  if (n->ran[w->idx] < 255) n->ran[w->idx]++;
  if (n->mode == NB_TIMED) n->start[w->idx] = rb_now_ns();
  else rb_work();
  atomic_fetch_add_explicit(&n->done, 1, memory_order_relaxed);
  if (!atomic_load_explicit(&n->stop, memory_order_relaxed)) chain_post(n);
}

static void chain_start(void *data, int status) {
  nb *n = data;
  if (status != 0) return;
  n->s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(n->a)));
  if (n->s == NULL) {
    n->err = PTS_EINVAL;
    return;
  }
  for (int i = 0; i < (n->mode == NB_TIMED ? VICTIM_CHAINS : 1); i++) chain_post(n);
}

/* A probe: the driver's post to a neighbour, timed from post to start. */
typedef struct probe {
  pts_agent_task_req req; /* first: 64-byte aligned (the array is) */
  uint64_t sent, start;
  uint32_t ran, other;
  int nb;
} probe;

static pts_value probe_task(void *data, int status) {
  probe *p = data;
  if (status == 0) {
    p->start = rb_now_ns();
    p->ran++;
  } else {
    p->other++;
  }
  return pts_undefined();
}

/* ---- the hostile tenants ---- */

/* The bomb: every task posts BOMB_FANOUT more. Its counters are its thread's. */
typedef struct bomb {
  pts_agent *a;
  pts_scheduler *s;
  uint64_t ok, refused, other, calls;
  atomic_bool stop;
  atomic_uint refusals; /* 0 until its first refusal (for the driver) */
} bomb;

static void bomb_step(bomb *b, int status);

static pts_value bomb_cb_promise(void *data, int status) {
  bomb_step(data, status);
  return pts_undefined();
}

static void bomb_cb(void *data, int status) { bomb_step(data, status); }

static void bomb_count(bomb *b, int rc) {
  if (rc == 0) b->ok++;
  else if (rc == PTS_EQUOTA && b->refused++ == 0)
    atomic_store_explicit(&b->refusals, 1, memory_order_relaxed);
  else if (rc != PTS_EQUOTA) b->other++;
}

static void bomb_post(bomb *b) {
  if (atomic_load_explicit(&b->stop, memory_order_relaxed) ||
      b->ok - b->calls > BOMB_SAFETY_TASKS)
    return;
  for (int i = 0; i < BOMB_FANOUT / 2; i++) {
    bomb_count(b, pts_scheduler_post_task(b->s, bomb_cb_promise, b, NULL, NULL));
    bomb_count(b, pts_scheduler_post(b->s, bomb_cb, b, NULL));
  }
}

static void bomb_step(bomb *b, int status) {
  b->calls++;
  if (status == 0) bomb_post(b);
}

static void bomb_start(void *data, int status) {
  bomb *b = data;
  if (status != 0) return;
  b->s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(b->a)));
  if (b->s != NULL) bomb_post(b);
}

/* The flood: a hostile agent on thread 1 whose every task posts to the
 * victim for FLOOD_BURST_NS and then queues itself again, so it takes its
 * turns on thread 1 like any tenant; in the run without the flood it spins
 * for the same time without posting (post false). ok, refused and other are
 * its thread's; ran, settled and refused_applied the victim's. */
typedef struct flood {
  pts_agent *a, *victim;
  pts_scheduler *s;
  bool post;
  uint64_t ok, refused, other;
  int err;
  atomic_bool stop;
  RB_CONSUMER_SIDE atomic_uint_fast64_t ran, settled, refused_applied;
} flood;

static pts_value flood_task(void *data, int status) {
  flood *f = data;
  if (status == 0) atomic_fetch_add_explicit(&f->ran, 1, memory_order_relaxed);
  return pts_undefined();
}

static void flood_done(void *data, int status, pts_value result) {
  (void)result;
  flood *f = data;
  if (status == PTS_EQUOTA) atomic_fetch_add_explicit(&f->refused_applied, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&f->settled, 1, memory_order_release);
}

static void flood_burst(void *data, int status) {
  flood *f = data;
  if (status != 0 || atomic_load_explicit(&f->stop, memory_order_relaxed)) return;
  if (f->s == NULL) f->s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(f->a)));
  pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_BACKGROUND;
  uint64_t end = rb_now_ns() + FLOOD_BURST_NS;
  while (rb_now_ns() < end) {
    /* The runner's safety while the library does not bound the backlog. */
    if (!f->post || f->ok - atomic_load_explicit(&f->settled, memory_order_acquire) > FLOOD_SAFETY)
      continue;
    for (int i = 0; i < 64; i++) { /* a clock read per 64 posts */
      int rc = pts_agent_post_task(f->victim, &o, flood_task, f, flood_done, f, NULL);
      if (rc == 0) f->ok++;
      else if (rc == PTS_EQUOTA) f->refused++;
      else f->other++;
    }
  }
  int rc = f->s != NULL ? pts_scheduler_post(f->s, flood_burst, f, NULL) : PTS_EINVAL;
  if (rc != 0) f->err = rc;
}

/* The hog or the blocked step. */
typedef struct hog {
  bool sleep;
  atomic_uint_fast64_t t0, t1;
} hog;

static pts_value hog_task(void *data, int status) {
  hog *h = data;
  if (status != 0) return pts_undefined();
  atomic_store(&h->t0, rb_now_ns());
  if (h->sleep) rb_sleep_ns(HOSTILE_NS);
  else rb_spin_ns(HOSTILE_NS);
  atomic_store(&h->t1, rb_now_ns());
  return pts_undefined();
}

static atomic_uint_fast64_t long_reports;

static void on_long(void *data, pts_agent *agent, uint64_t running_ns) {
  (void)data;
  (void)agent;
  (void)running_ns;
  atomic_fetch_add(&long_reports, 1);
}

/* ---- one run ---- */

typedef struct run_out {
  double nb_p99_us, tput, victim_p99_us, window_s;
  double rss_growth; /* bytes: peak over the RSS before the hostile party */
  uint64_t posts, refused, refused_applied, other, unsettled;
  uint64_t st_refused, st_long, long_cb, st_inbox_max, st_bytes, st_pending;
  uint64_t lost, dup;
  bool capped, hwm;
} run_out;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double p99(double *v, size_t n) {
  if (n == 0) return -1;
  qsort(v, n, sizeof *v, cmp_double);
  return rb_percentile_sorted(v, n, 0.99);
}

static int nb_init(nb *n, nb_mode mode, uint32_t cap) {
  memset(n, 0, sizeof *n);
  n->mode = mode;
  n->cap = cap;
  n->w = calloc(cap, sizeof *n->w);
  n->ran = calloc(cap, 1);
  if (mode == NB_TIMED) {
    n->due = calloc(cap, sizeof *n->due);
    n->start = calloc(cap, sizeof *n->start);
  }
  if (n->w == NULL || n->ran == NULL || (mode == NB_TIMED && (n->due == NULL || n->start == NULL)))
    return -1;
  for (uint32_t i = 0; i < cap; i++) n->w[i] = (wtask){n, i};
  atomic_init(&n->stop, false);
  atomic_init(&n->done, 0);
  atomic_init(&n->posted, 0);
  return 0;
}

static void nb_fini(nb *n) {
  free(n->w);
  free(n->ran);
  free(n->due);
  free(n->start);
}

/* Lost (posted, never run) and duplicated (run twice) chain tasks. */
static void nb_check(const nb *n, uint64_t *lost, uint64_t *dup) {
  if (n->ran == NULL) return;
  for (uint32_t i = 0; i < n->cap; i++) {
    if (i < n->next && n->ran[i] == 0) (*lost)++;
    if (n->ran[i] > 1 || (i >= n->next && n->ran[i] != 0)) (*dup)++;
  }
}

static int new_agent(pts_pool *pool, const char *origin, int thread, const pts_agent_limits *lim,
                     pts_agent **out) {
  pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
  ao.origin = origin;
  ao.thread = thread;
  if (lim != NULL) ao.limits = *lim;
  return pts_agent_new(pool, &ao, out);
}

/* One run of scenario s; window_ns for the fixed windows (all but hog and
 * blocked, whose window is the hostile step). Returns 0, or -1 when the
 * pool or an agent could not be made or a chain failed. */
static int run_once(scen s, uint64_t window_ns, run_out *o) {
  memset(o, 0, sizeof *o);
  bool stepper = s == SC_HOG || s == SC_BLOCKED;
  bool bal = stepper || s == SC_NONE_HOG || s == SC_CAPACITY;
  bool memory = s == SC_BOMB || s == SC_FLOOD || s == SC_NONE_BOMB || s == SC_NONE_FLOOD ||
                s == SC_BUSY;
  bool flooding = s == SC_FLOOD || s == SC_NONE_FLOOD;
  pts_pool_options po;
  memset(&po, 0, sizeof po);
  po.threads = s == SC_CAPACITY ? 1 : 2;
  po.policy = PTS_POLICY_ROUND_ROBIN;
  po.balance = bal;
  if (bal) {
    po.watchdog_ns = WATCHDOG_NS;
    po.on_long_task = on_long;
  }
  atomic_store(&long_reports, 0);
  uint64_t total_ns = WARM_NS + (stepper ? HOSTILE_NS + HOSTILE_NS / 2 : window_ns) + 50000000u +
                      (s == SC_BOMB ? BOMB_GROW_NS : 0);
  uint32_t nprobe = (uint32_t)(total_ns / PROBE_NS) + 64;
  uint32_t cap = (uint32_t)(total_ns / WORK_NS) * 4 + 1024;
  pts_pool *pool = NULL;
  nb n[2], victim;
  memset(n, 0, sizeof n);
  memset(&victim, 0, sizeof victim);
  probe *pr = aligned_alloc(64, sizeof(probe) * 2 * nprobe);
  int rc = pr != NULL ? 0 : -1;
  int nb_made = 0;
  bool victim_made = false;
  if (rc == 0) memset(pr, 0, sizeof(probe) * 2 * nprobe);
  if (rc == 0 && (nb_init(&n[0], NB_BUSY, cap) != 0 || nb_init(&n[1], NB_LIGHT, 1) != 0)) rc = -1;
  if (flooding && rc == 0 && nb_init(&victim, NB_TIMED, (uint32_t)(total_ns / 1000000u) * VICTIM_CHAINS + 64) != 0)
    rc = -1;
  if (rc == 0 && pts_pool_new(&po, &pool) != 0) rc = -1;
  /* Placement (file comment). */
  int nb_thread[2] = {1, 1};
  if (stepper || s == SC_NONE_HOG || s == SC_CAPACITY) nb_thread[0] = 0;
  if (s == SC_CAPACITY) nb_thread[1] = 0;
  for (; rc == 0 && nb_made < 2; nb_made++) {
    char origin[8];
    snprintf(origin, sizeof origin, "nb%d", nb_made);
    if (new_agent(pool, origin, nb_thread[nb_made], NULL, &n[nb_made].a) != 0) rc = -1;
    if (rc != 0) break;
  }
  if (flooding && rc == 0) {
    pts_agent_limits lim = {0, 0, FLOOD_INBOX};
    if (new_agent(pool, "victim", 0, &lim, &victim.a) != 0) rc = -1;
    else victim_made = true;
  }
  pts_agent *hostile = NULL;
  static bomb b;
  static flood f;
  static hog h;
  memset(&b, 0, sizeof b);
  memset(&f, 0, sizeof f);
  memset(&h, 0, sizeof h);
  if (rc == 0 && pts_agent_queue_task(n[0].a, PTS_SOURCE_GENERIC, chain_start, &n[0]) != 0) rc = -1;
  if (victim_made && rc == 0 &&
      pts_agent_queue_task(victim.a, PTS_SOURCE_GENERIC, chain_start, &victim) != 0)
    rc = -1;
  /* The RSS before the hostile party, jemalloc's free pages returned. */
  int64_t rss0 = -1, rss_max = -1;
  if (memory && rc == 0) {
    purge();
    o->hwm = reset_peak();
    rss0 = rss_max = status_bytes("VmRSS");
  }
  if (rc == 0 && s == SC_BOMB) {
    pts_agent_limits lim = {0, BOMB_LIMIT, 0};
    if (new_agent(pool, "hostile", 0, &lim, &hostile) != 0) rc = -1;
    else {
      b.a = hostile;
      if (pts_agent_queue_task(hostile, PTS_SOURCE_GENERIC, bomb_start, &b) != 0) rc = -1;
    }
  }
  if (rc == 0 && flooding) {
    f.victim = victim.a;
    f.post = s == SC_FLOOD;
    if (new_agent(pool, "hostile", 1, NULL, &hostile) != 0) rc = -1;
    else {
      f.a = hostile;
      if (pts_agent_queue_task(hostile, PTS_SOURCE_GENERIC, flood_burst, &f) != 0) rc = -1;
    }
  }
  if (rc == 0 && s == SC_BUSY) { /* the bomb's CPU without its posts */
    if (new_agent(pool, "hostile", 0, NULL, &hostile) != 0) rc = -1;
    else {
      f.a = hostile;
      if (pts_agent_queue_task(hostile, PTS_SOURCE_GENERIC, flood_burst, &f) != 0) rc = -1;
    }
  }
  if (rc == 0 && stepper) {
    h.sleep = s == SC_BLOCKED;
    if (new_agent(pool, "hostile", 0, NULL, &hostile) != 0) rc = -1;
  }

  /* The driver: a probe to each neighbour every millisecond; the window's
   * edges (busy neighbour's count at each); the RSS. */
  uint64_t t_start = rb_now_ns(), w0 = 0, w1 = 0, c0 = 0, c1 = 0;
  uint32_t sent = 0;
  bool hog_posted = false;
  while (rc == 0 && sent < nprobe) {
    uint64_t now = rb_now_ns();
    if (stepper) {
      if (!hog_posted && now - t_start >= WARM_NS) {
        if (pts_agent_post_task(hostile, NULL, hog_task, &h, NULL, NULL, NULL) != 0) rc = -1;
        hog_posted = true;
      }
      if (w0 == 0 && atomic_load(&h.t0) != 0) {
        w0 = now;
        c0 = atomic_load(&n[0].done);
      }
      if (w0 != 0 && atomic_load(&h.t1) != 0) {
        w1 = now;
        c1 = atomic_load(&n[0].done);
        break;
      }
      if (now - t_start > total_ns) break; /* the step never ran or never ended */
    } else {
      /* The bomb's window opens once it is at its limit (its first refusal),
       * or at BOMB_GROW_NS, or at the runner's stop. */
      bool grown = s != SC_BOMB || atomic_load_explicit(&b.refusals, memory_order_relaxed) != 0 ||
                   o->capped || now - t_start >= WARM_NS + BOMB_GROW_NS;
      if (w0 == 0 && now - t_start >= WARM_NS && grown) {
        w0 = now;
        c0 = atomic_load(&n[0].done);
      }
      if (w0 != 0 && now - w0 >= window_ns) {
        w1 = now;
        c1 = atomic_load(&n[0].done);
        break;
      }
    }
    if (memory) {
      int64_t r = status_bytes("VmRSS");
      if (r > rss_max) rss_max = r;
      if (s == SC_BOMB && rss0 >= 0 && r - rss0 > (int64_t)BOMB_SAFETY && !o->capped) {
        atomic_store(&b.stop, true);
        o->capped = true;
      }
    }
    for (int i = 0; i < 2; i++) {
      probe *p = &pr[(size_t)i * nprobe + sent];
      p->nb = i;
      p->sent = rb_now_ns();
      int prc = pts_agent_post_task_req(n[i].a, PTS_PRIORITY_UNSET, &p->req, probe_task, p);
      if (prc != 0) p->sent = 0;
    }
    sent++;
    rb_sleep_ns(PROBE_NS);
  }
  if (rc == 0 && (w0 == 0 || w1 == 0)) rc = -1;

  /* The end: stop everyone, read the hostile party's counters, drain the
   * neighbours, destroy. */
  atomic_store(&b.stop, true);
  atomic_store(&f.stop, true);
  if (memory) {
    int64_t r = status_bytes("VmRSS");
    if (r > rss_max) rss_max = r;
    int64_t hwm = o->hwm ? status_bytes("VmHWM") : -1;
    if (hwm > rss_max) rss_max = hwm;
    o->rss_growth = rss0 >= 0 && rss_max >= rss0 ? (double)(rss_max - rss0) : -1;
  }
  for (int i = 0; i < nb_made; i++) atomic_store(&n[i].stop, true);
  if (victim_made) {
    /* Its last task waits on a timer, which a drain does not wait for. */
    atomic_store(&victim.stop, true);
    uint64_t t = rb_now_ns();
    while (atomic_load(&victim.done) < atomic_load(&victim.posted) && rb_now_ns() - t < 200000000u)
      rb_sleep_ns(100000);
  }
  pts_agent_stats st;
  memset(&st, 0, sizeof st);
  pts_agent *measured = victim_made ? victim.a : hostile;
  if (measured != NULL) pts_agent_get_stats(measured, &st);
  for (int i = 0; i < nb_made; i++) pts_agent_drain(n[i].a);
  if (victim_made) pts_agent_drain(victim.a);
  if (hostile != NULL) {
    pts_agent_destroy(hostile, true);
    pts_agent_unref(hostile);
  }
  if (victim_made) {
    pts_agent_destroy(victim.a, true);
    pts_agent_unref(victim.a);
  }
  for (int i = 0; i < nb_made; i++) {
    pts_agent_destroy(n[i].a, true);
    pts_agent_unref(n[i].a);
  }
  if (pool != NULL) pts_pool_shutdown(pool);
  o->long_cb = atomic_load(&long_reports);

  if (rc == 0) {
    o->window_s = (double)(w1 - w0) / 1e9;
    o->tput = o->window_s > 0 ? (double)(c1 - c0) / o->window_s : 0;
    double *d = malloc(sizeof(double) * 2 * nprobe);
    size_t k = 0;
    for (int i = 0; d != NULL && i < 2; i++)
      for (uint32_t j = 0; j < sent; j++) {
        const probe *p = &pr[(size_t)i * nprobe + j];
        if (p->sent == 0) continue;
        if (p->ran == 0) o->lost++;
        if (p->ran + p->other > 1) o->dup++;
        if (p->ran != 0 && p->sent >= w0 && p->sent < w1) d[k++] = (double)(p->start - p->sent);
      }
    o->nb_p99_us = d != NULL ? p99(d, k) / 1e3 : -1;
    if (d != NULL && victim_made) {
      k = 0;
      for (uint32_t j = 0; j < victim.next && j < victim.cap; j++)
        if (victim.ran[j] != 0 && victim.due[j] >= w0 && victim.due[j] < w1)
          d[k++] = (double)(victim.start[j] > victim.due[j] ? victim.start[j] - victim.due[j] : 0);
      o->victim_p99_us = p99(d, k) / 1e3;
    }
    free(d);
    for (int i = 0; i < nb_made; i++) {
      nb_check(&n[i], &o->lost, &o->dup);
      if (n[i].err != 0 || n[i].full) rc = -1;
    }
    if (victim_made) {
      nb_check(&victim, &o->lost, &o->dup);
      if (victim.err != 0 || victim.full) rc = -1;
    }
    o->st_refused = st.refused;
    o->st_long = st.long_tasks;
    o->st_inbox_max = st.inbox_max;
    o->st_bytes = st.bytes_held;
    o->st_pending = st.tasks_pending;
    if (s == SC_BOMB) {
      o->posts = b.ok;
      o->refused = b.refused;
      o->other = b.other;
      o->unsettled = b.ok - b.calls;
    } else if (s == SC_FLOOD) {
      o->posts = f.ok;
      o->refused = f.refused;
      o->other = f.other;
      if (f.err != 0) rc = -1;
    } else if (s == SC_BUSY && f.err != 0) {
      rc = -1;
      o->refused_applied = atomic_load(&f.refused_applied);
      o->unsettled = o->posts - atomic_load(&f.settled);
    }
  }
  for (int i = 0; i < 2; i++) nb_fini(&n[i]);
  nb_fini(&victim);
  free(pr);
  if (memory) purge();
  return rc;
}

/* ---- the suite ---- */

#define MAXRUNS 64

/* The samples of one figure over the runs. */
typedef struct series {
  double v[MAXRUNS];
  size_t n;
} series;

static void put(series *s, double v) {
  if (s->n < MAXRUNS) s->v[s->n++] = v;
}

static rb_metric *rec(rb_ctx *ctx, const char *key, const char *unit, const series *s,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Registers key (an info figure) with its note; NULL without samples. */
static rb_metric *rec(rb_ctx *ctx, const char *key, const char *unit, const series *s,
                      const char *fmt, ...) {
  if (s->n == 0) return NULL;
  rb_metric *m = rb_record(ctx, key, unit, RB_INFO, s->v, s->n);
  if (m == NULL) return NULL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->note, sizeof m->note, fmt, ap);
  va_end(ap);
  return m;
}

/* An issue 32 target on a recorded figure. */
static void target(rb_ctx *ctx, rb_metric *m, double t, bool higher, const char *text) {
  if (m == NULL) return;
  m->higher_better = higher;
  rb_target(ctx, m->key, t, text);
  rb_target_from(ctx, m->key, "issue 32");
}

static double one(rb_ctx *ctx, const char *key, const char *unit, double v, const char *note) {
  series s = {{v}, 1};
  rec(ctx, key, unit, &s, "%s", note);
  return v;
}

/* Per scenario: runs kept, failures, and the lost or duplicated tasks. */
typedef struct tally {
  unsigned ok, failed;
  uint64_t lost, dup;
} tally;

static bool run_counted(scen s, uint64_t window_ns, run_out *o, tally *t) {
  if (run_once(s, window_ns, o) != 0) {
    t->failed++;
    return false;
  }
  t->ok++;
  t->lost += o->lost;
  t->dup += o->dup;
  return true;
}

static double ratio(double a, double b) { return b > 0 && a >= 0 ? a / b : -1; }

void rb_suite_isolation(rb_ctx *ctx) {
  rb_work_calibrate(WORK_NS);
  uint64_t win = ctx->opt.quick ? UINT64_C(100000000) : UINT64_C(300000000);
  int runs = ctx->runs < MAXRUNS ? ctx->runs : MAXRUNS;
  /* A hog or blocked run takes over a second: three rounds by default (one
   * with --quick), else what --runs asks. */
  int hruns = ctx->opt.quick ? 1 : ctx->runs == RB_DEFAULT_RUNS ? 3 : runs;
  const double mib = 1024.0 * 1024.0;
  rb_progress(ctx, "2 threads, round-robin; bomb and flood: %d rounds of %.0f ms windows, "
              "with and without interleaved; hog and blocked (1 s each, balancing and a 2 ms "
              "watchdog): %d rounds, with the run without and the 1-thread capacity",
              runs, (double)win / 1e6, hruns);
  run_out o, w;
  tally tb = {0}, tf = {0}, th = {0}, tk = {0}, tn = {0}, tc = {0}, tw = {0};
  (void)run_counted(SC_NONE_BOMB, win / 2, &w, &tw); /* warm-up, not reported */

  /* bomb and flood */
  static series b_p99, bn_p99, b_px, b_tx, b_rss, bn_rss, b_rx, b_ref, b_posts, b_bytes;
  static series bu_p99, b_pbx;
  static series f_vp, fn_vp, f_vx, f_nx, f_rss, fn_rss, f_ref, f_refa, f_posts, f_inbox;
  series *bz[] = {&bu_p99, &b_pbx, &b_p99, &bn_p99, &b_px, &b_tx, &b_rss, &bn_rss, &b_rx, &b_ref, &b_posts, &b_bytes,
                  &f_vp, &fn_vp, &f_vx, &f_nx, &f_rss, &fn_rss, &f_ref, &f_refa, &f_posts, &f_inbox};
  for (size_t i = 0; i < sizeof bz / sizeof bz[0]; i++) bz[i]->n = 0;
  unsigned capped = 0;
  uint64_t b_unsettled = 0, f_unsettled = 0, b_other = 0, f_other = 0, b_stref = 0;
  bool hwm = true;
  for (int r = 0; r < runs; r++) {
    bool a = run_counted(SC_BOMB, win, &o, &tb);
    bool c = run_counted(SC_NONE_BOMB, win, &w, &tn);
    run_out u;
    bool busy = run_counted(SC_BUSY, win, &u, &tn);
    if (busy) put(&bu_p99, u.nb_p99_us);
    if (a && busy) put(&b_pbx, ratio(o.nb_p99_us, u.nb_p99_us));
    if (a) {
      put(&b_p99, o.nb_p99_us);
      put(&b_rss, o.rss_growth / mib);
      put(&b_rx, o.rss_growth / (double)BOMB_LIMIT);
      put(&b_ref, (double)o.refused);
      put(&b_posts, (double)o.posts);
      put(&b_bytes, (double)o.st_bytes / mib);
      capped += o.capped;
      hwm = hwm && o.hwm;
      b_unsettled += o.unsettled;
      b_other += o.other;
      b_stref += o.st_refused;
    }
    if (c) {
      put(&bn_p99, w.nb_p99_us);
      put(&bn_rss, w.rss_growth / mib);
    }
    if (a && c) {
      put(&b_px, ratio(o.nb_p99_us, w.nb_p99_us));
      put(&b_tx, ratio(o.tput, w.tput));
    }
    a = run_counted(SC_FLOOD, win, &o, &tf);
    c = run_counted(SC_NONE_FLOOD, win, &w, &tn);
    if (a) {
      put(&f_vp, o.victim_p99_us);
      put(&f_rss, o.rss_growth / mib);
      put(&f_ref, (double)o.refused);
      put(&f_refa, (double)o.refused_applied);
      put(&f_posts, (double)o.posts);
      put(&f_inbox, (double)o.st_inbox_max);
      f_unsettled += o.unsettled;
      f_other += o.other;
    }
    if (c) {
      put(&fn_vp, w.victim_p99_us);
      put(&fn_rss, w.rss_growth / mib);
    }
    if (a && c) {
      put(&f_vx, ratio(o.victim_p99_us, w.victim_p99_us));
      put(&f_nx, ratio(o.nb_p99_us, w.nb_p99_us));
    }
  }

  /* hog and blocked */
  static series h_p99, h_tp, h_tx, h_long, k_p99, k_tp, k_tx, k_long, n_p99, n_tp, c_tp, c_p99;
  series *hz[] = {&h_p99, &h_tp, &h_tx, &h_long, &k_p99, &k_tp, &k_tx, &k_long, &n_p99, &n_tp, &c_tp, &c_p99};
  for (size_t i = 0; i < sizeof hz / sizeof hz[0]; i++) hz[i]->n = 0;
  uint64_t h_cb = 0, k_cb = 0;
  double h_win = 0, k_win = 0;
  for (int r = 0; r < hruns; r++) {
    run_out hg, bl, nn, cp;
    bool a = run_counted(SC_HOG, win, &hg, &th);
    bool n = run_counted(SC_NONE_HOG, win, &nn, &tn);
    bool k = run_counted(SC_BLOCKED, win, &bl, &tk);
    bool c = run_counted(SC_CAPACITY, win, &cp, &tc);
    if (a) {
      put(&h_p99, hg.nb_p99_us);
      put(&h_tp, hg.tput);
      put(&h_long, (double)hg.st_long);
      h_cb += hg.long_cb;
      h_win += hg.window_s;
    }
    if (k) {
      put(&k_p99, bl.nb_p99_us);
      put(&k_tp, bl.tput);
      put(&k_long, (double)bl.st_long);
      k_cb += bl.long_cb;
      k_win += bl.window_s;
    }
    if (n) {
      put(&n_p99, nn.nb_p99_us);
      put(&n_tp, nn.tput);
    }
    if (c) {
      put(&c_tp, cp.tput);
      put(&c_p99, cp.nb_p99_us);
      if (a) put(&h_tx, ratio(hg.tput, cp.tput));
      if (k) put(&k_tx, ratio(bl.tput, cp.tput));
    }
  }

  /* The figures. */
  char lim[64];
  snprintf(lim, sizeof lim, "limits.bytes = %.0f MiB", (double)BOMB_LIMIT / mib);
  if (tb.ok == 0) {
    rb_unavailable_add(ctx, "isolation.bomb", "every run failed (pool, agent or chain)");
  } else {
    rec(ctx, "isolation.bomb.neighbour_p99_us", "us", &b_p99,
        "p99 start delay of the driver's probes to nb0 (busy) and nb1 (light), both on thread 1; "
        "the bomb alone on thread 0 (%s)", lim);
    target(ctx, rec(ctx, "isolation.bomb.neighbour_p99_x", "ratio", &b_px,
                    "per interleaved pair: neighbours' p99 with the bomb over without"),
           1.2, false, "<= 1.2x the neighbours' p99 without the bomb");
    rec(ctx, "isolation.bomb.neighbour_p99_x_busy", "ratio", &b_pbx,
        "per round: neighbours' p99 with the bomb over the run where a tenant on thread 0 only "
        "spins (the bomb's CPU without its posts and memory)");
    rec(ctx, "isolation.bomb_busy.neighbour_p99_us", "us", &bu_p99,
        "the neighbours' p99 with a tenant spinning 10 us turns on thread 0, posting nothing");
    rec(ctx, "isolation.bomb.neighbour_tput_x", "ratio", &b_tx,
        "per interleaved pair: nb0's 20 us tasks per second with the bomb over without");
    rec(ctx, "isolation.bomb.rss_growth_mib", "MiB", &b_rss,
        "peak RSS (%s) over the RSS before the bomb, jemalloc purged; %u of %zu runs hit the "
        "runner's safety stop at %.0f MiB", hwm ? "VmHWM after clear_refs, and 1 ms samples" :
        "1 ms samples of VmRSS", capped, b_rss.n, (double)BOMB_SAFETY / mib);
    target(ctx, rec(ctx, "isolation.bomb.rss_x_limit", "ratio", &b_rx,
                    "peak RSS growth over the bomb's %s; %u of %zu runs stopped by the runner at "
                    "%.0fx the limit (the library did not stop the bomb)", lim, capped, b_rx.n,
                    (double)BOMB_SAFETY / (double)BOMB_LIMIT),
           1.2, false, "<= 1.2 (peak RSS growth over the 64 MiB limit)");
    rec(ctx, "isolation.bomb.refused", "count", &b_ref,
        "the bomb's posts that returned PTS_EQUOTA, per run (pts_agent_stats.refused summed over "
        "the runs: %llu; other errors: %llu)", (unsigned long long)b_stref,
        (unsigned long long)b_other);
    rec(ctx, "isolation.bomb.posts_admitted", "count", &b_posts,
        "the bomb's posts that succeeded, per run (a %.0f ms window and the warm-up)",
        (double)win / 1e6);
    rec(ctx, "isolation.bomb.bytes_held_mib", "MiB", &b_bytes,
        "pts_agent_stats.bytes_held of the bomb at the end of its run");
    one(ctx, "isolation.bomb.capped", "count", capped,
        "runs whose bomb the runner stopped at 4x the limit of RSS growth (or 8M pending tasks): "
        "the library did not stop it");
    target(ctx, rb_record(ctx, "isolation.bomb.hostile_unsettled", "count",
                          RB_INFO, &(double){(double)b_unsettled}, 1),
           0, false, "0 (each admitted task runs or settles exactly once)");
    rb_note(ctx, "isolation.bomb.hostile_unsettled",
            "the bomb's admitted posts whose callback was not called once (run or cancelled at "
            "destroy), over the runs");
  }
  if (tn.ok > 0) {
    rec(ctx, "isolation.bomb_none.neighbour_p99_us", "us", &bn_p99,
        "the same neighbours, no bomb (thread 0 idle)");
    rec(ctx, "isolation.bomb_none.rss_growth_mib", "MiB", &bn_rss,
        "peak RSS growth of the run without the bomb");
  }
  if (tf.ok == 0) {
    rb_unavailable_add(ctx, "isolation.flood", "every run failed (pool, agent, chain or thread)");
  } else {
    rec(ctx, "isolation.flood.victim_p99_us", "us", &f_vp,
        "p99 start delay (from due time) of the victim's own tasks, a chain each posting the next "
        "with a %d ms delay, under a flood of background posts from a tenant on thread 1 "
        "(limits.inbox = %u)", VICTIM_DELAY_MS, FLOOD_INBOX);
    target(ctx, rec(ctx, "isolation.flood.victim_p99_x", "ratio", &f_vx,
                    "per interleaved pair: victim's p99 with the flood over the run whose "
                    "flooder spins its turns without posting"),
           2, false, "<= 2x the victim's p99 without the flood");
    rec(ctx, "isolation.flood.neighbour_p99_x", "ratio", &f_nx,
        "per interleaved pair: neighbours' probe p99 (thread 1) with the flood over without");
    rec(ctx, "isolation.flood.rss_growth_mib", "MiB", &f_rss,
        "peak RSS over the RSS before the flooder started; the runner's flooder pauses at "
        "%u admitted and not settled posts", FLOOD_SAFETY);
    rec(ctx, "isolation.flood.refused", "count", &f_ref,
        "flooder's posts that returned PTS_EQUOTA (inbox full), per run (other errors over the "
        "runs: %llu)", (unsigned long long)f_other);
    rec(ctx, "isolation.flood.refused_applied", "count", &f_refa,
        "admitted posts settled with PTS_EQUOTA when applied (a task limit), per run");
    rec(ctx, "isolation.flood.posts_admitted", "count", &f_posts, "flooder's posts that succeeded, per run");
    rec(ctx, "isolation.flood.inbox_max", "count", &f_inbox, "pts_agent_stats.inbox_max of the victim");
    target(ctx, rb_record(ctx, "isolation.flood.hostile_unsettled", "count",
                          RB_INFO, &(double){(double)f_unsettled}, 1),
           0, false, "0 (each admitted post settles exactly once)");
    rb_note(ctx, "isolation.flood.hostile_unsettled",
            "admitted flood posts whose done callback was not called once, over the runs");
  }
  if (tn.ok > 0 && fn_vp.n > 0) {
    rec(ctx, "isolation.flood_none.victim_p99_us", "us", &fn_vp,
        "the victim's own tasks, the flooder spinning its turns without posting");
    rec(ctx, "isolation.flood_none.rss_growth_mib", "MiB", &fn_rss, "peak RSS growth without the flood");
  }
  const char *steps[2] = {"hog", "blocked"};
  series *sp[2] = {&h_p99, &k_p99}, *st[2] = {&h_tp, &k_tp}, *sx[2] = {&h_tx, &k_tx},
         *sl[2] = {&h_long, &k_long};
  tally *tt[2] = {&th, &tk};
  uint64_t cbs[2] = {h_cb, k_cb};
  double wins[2] = {h_win, k_win};
  for (int i = 0; i < 2; i++) {
    char key[RB_KEY_MAX];
    if (tt[i]->ok == 0) {
      snprintf(key, sizeof key, "isolation.%s", steps[i]);
      rb_unavailable_add(ctx, key, "every run failed (pool, agent, chain, or the step never ended)");
      continue;
    }
    const char *what = i == 0 ? "spinning" : "blocked in nanosleep";
    snprintf(key, sizeof key, "isolation.%s.neighbour_p99_us", steps[i]);
    target(ctx, rec(ctx, key, "us", sp[i],
                    "probes to nb0 (busy, on the hostile thread 0) and nb1 (thread 1) posted while "
                    "a hostile task was %s for 1 s (mean window %.2f s); balancing on, watchdog "
                    "%.0f ms", what, wins[i] / (double)tt[i]->ok, (double)WATCHDOG_NS / 1e6),
           5000, false, "<= 5000 us");
    snprintf(key, sizeof key, "isolation.%s.tasks_per_s", steps[i]);
    rec(ctx, key, "tasks/s", st[i], "nb0's 20 us tasks per second during the hostile step");
    snprintf(key, sizeof key, "isolation.%s.throughput_x_1t", steps[i]);
    target(ctx, rec(ctx, key, "ratio", sx[i],
                    "per round: nb0's tasks per second during the step over the same round's "
                    "isolation.capacity_1t.tasks_per_s"),
           0.8, true, ">= 0.8x the one-thread capacity of the same round");
    snprintf(key, sizeof key, "isolation.%s.long_tasks", steps[i]);
    rec(ctx, key, "count", sl[i],
        "pts_agent_stats.long_tasks of the hostile agent, per run (on_long_task calls over the "
        "runs: %llu)", (unsigned long long)cbs[i]);
  }
  if (n_p99.n > 0) {
    rec(ctx, "isolation.balanced_none.neighbour_p99_us", "us", &n_p99,
        "hog's and blocked's set-up without the hostile task (nb0 on thread 0, nb1 on thread 1)");
    rec(ctx, "isolation.balanced_none.tasks_per_s", "tasks/s", &n_tp, "nb0's tasks per second, same");
  }
  if (c_tp.n > 0) {
    rb_metric *m = rec(ctx, "isolation.capacity_1t.tasks_per_s", "tasks/s", &c_tp,
                       "nb0's 20 us tasks per second with nb1 on a one-thread pool, no hostile "
                       "tenant: the one-fewer-thread capacity the hog and blocked runs are held to");
    if (m) m->higher_better = true;
    rec(ctx, "isolation.capacity_1t.neighbour_p99_us", "us", &c_p99, "probes' p99 in that run");
  }

  /* Lost or duplicated well-behaved tasks, every run. */
  const struct {
    const char *name;
    const tally *t;
  } ts[] = {{"bomb", &tb}, {"flood", &tf}, {"hog", &th}, {"blocked", &tk},
            {"without", &tn}, {"capacity_1t", &tc}};
  uint64_t sum = 0;
  unsigned failed = 0;
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
    char key[RB_KEY_MAX], note[200];
    if (ts[i].t->ok == 0) continue;
    uint64_t x = ts[i].t->lost + ts[i].t->dup;
    sum += x;
    failed += ts[i].t->failed;
    snprintf(key, sizeof key, "isolation.%s.lost_or_duplicated", ts[i].name);
    snprintf(note, sizeof note, "over %u runs: %llu lost, %llu run twice (chain tasks, probes, "
             "the victim's tasks)", ts[i].t->ok, (unsigned long long)ts[i].t->lost,
             (unsigned long long)ts[i].t->dup);
    one(ctx, key, "count", (double)x, note);
  }
  if (tb.ok + tf.ok + th.ok + tk.ok > 0) {
    series s = {{(double)sum}, 1};
    target(ctx, rec(ctx, "isolation.lost_or_duplicated", "count", &s,
                    "well-behaved tasks posted and never run, or run twice, summed over every run "
                    "of every scenario, with and without the hostile party (%u runs failed and are "
                    "not counted)", failed),
           0, false, "0 tasks lost or run twice");
  }
}
