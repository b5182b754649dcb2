/* bench/runner/suite_isolation_run.c: one run of the isolation suite
 * (suite_isolation.c): the well-behaved neighbours and the driver's probes,
 * a fresh pool with the scenario's placement, the hostile tenant of the
 * scenario (suite_isolation_memory.c, suite_isolation_steps.c), the window
 * and what is read at its end.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/runner/suite_isolation.h"

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
  int rc = pts_scheduler_post_task_cb(n->s, chain_task, &n->w[n->next], &o);
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
int rb_iso_run_once(scen s, uint64_t window_ns, run_out *o) {
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
    po.on_long_task = rb_iso_on_long;
  }
  atomic_store(&rb_iso_long_reports, 0);
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
    rb_iso_purge();
    o->hwm = rb_iso_reset_peak();
    rss0 = rss_max = rb_iso_status_bytes("VmRSS");
  }
  if (rc == 0 && s == SC_BOMB) {
    pts_agent_limits lim = {0, BOMB_LIMIT, 0};
    if (new_agent(pool, "hostile", 0, &lim, &hostile) != 0) rc = -1;
    else {
      b.a = hostile;
      if (pts_agent_queue_task(hostile, PTS_SOURCE_GENERIC, rb_iso_bomb_start, &b) != 0) rc = -1;
    }
  }
  if (rc == 0 && flooding) {
    f.victim = victim.a;
    f.post = s == SC_FLOOD;
    if (new_agent(pool, "hostile", 1, NULL, &hostile) != 0) rc = -1;
    else {
      f.a = hostile;
      if (pts_agent_queue_task(hostile, PTS_SOURCE_GENERIC, rb_iso_flood_burst, &f) != 0) rc = -1;
    }
  }
  if (rc == 0 && s == SC_BUSY) { /* the bomb's CPU without its posts */
    if (new_agent(pool, "hostile", 0, NULL, &hostile) != 0) rc = -1;
    else {
      f.a = hostile;
      if (pts_agent_queue_task(hostile, PTS_SOURCE_GENERIC, rb_iso_flood_burst, &f) != 0) rc = -1;
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
        if (pts_agent_post_task(hostile, NULL, rb_iso_hog_task, &h, NULL, NULL, NULL) != 0) rc = -1;
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
      int64_t r = rb_iso_status_bytes("VmRSS");
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
    int64_t r = rb_iso_status_bytes("VmRSS");
    if (r > rss_max) rss_max = r;
    int64_t hwm = o->hwm ? rb_iso_status_bytes("VmHWM") : -1;
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
  o->long_cb = atomic_load(&rb_iso_long_reports);

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
  if (memory) rb_iso_purge();
  return rc;
}
