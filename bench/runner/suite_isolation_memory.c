/* bench/runner/suite_isolation_memory.c: the isolation suite's memory
 * scenarios (suite_isolation.c): the bomb (a tenant whose every task posts
 * eight more, limits.bytes = 64 MiB) and the flood (background posts into
 * a victim's inbox, limits.inbox = 1024), each with its run without, and
 * the process's memory they are measured by. The runs alternate within a
 * round (bomb, without, busy, flood, without); the figures are the rounds'.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/runner/suite_isolation.h"

/* ---- memory of the process ---- */

/* A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); -1 if absent.
 * read(2) into a stack buffer: no allocation while the bomb is measured. */
int64_t rb_iso_status_bytes(const char *field) {
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
bool rb_iso_reset_peak(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok;
}

/* Gives jemalloc's free pages back, so the RSS before a run is what the
 * program holds and a bomb cannot reuse pages the previous run left. */
void rb_iso_purge(void) {
  char name[64];
  snprintf(name, sizeof name, "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
  (void)mallctl(name, NULL, NULL, NULL, 0);
}

/* ---- the bomb ---- */

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
    bomb_count(b, pts_scheduler_post_task_cb(b->s, bomb_cb, b, NULL));
  }
}

static void bomb_step(bomb *b, int status) {
  b->calls++;
  if (status == 0) bomb_post(b);
}

void rb_iso_bomb_start(void *data, int status) {
  bomb *b = data;
  if (status != 0) return;
  b->s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(b->a)));
  if (b->s != NULL) bomb_post(b);
}

/* ---- the flood ---- */

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

void rb_iso_flood_burst(void *data, int status) {
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
  int rc = f->s != NULL ? pts_scheduler_post_task_cb(f->s, rb_iso_flood_burst, f, NULL) : PTS_EINVAL;
  if (rc != 0) f->err = rc;
}

/* ---- the rounds and the figures ---- */

static const double mib = 1024.0 * 1024.0;

/* The samples over the rounds, and the counts summed over them. */
typedef struct mem_figs {
  series b_p99, bn_p99, b_px, b_tx, b_rss, bn_rss, b_rx, b_ref, b_posts, b_bytes;
  series bu_p99, b_pbx;
  series f_vp, fn_vp, f_vx, f_nx, f_rss, fn_rss, f_ref, f_refa, f_posts, f_inbox;
  unsigned capped;
  uint64_t b_unsettled, f_unsettled, b_other, f_other, b_stref;
  bool hwm;
} mem_figs;

/* One round: bomb, without, busy (a tenant that only spins on thread 0),
 * flood, without; each pair's ratios when both ran. */
static void memory_round(mem_figs *m, uint64_t win, tally *tb, tally *tf, tally *tn) {
  run_out o, w;
  bool a = run_counted(SC_BOMB, win, &o, tb);
  bool c = run_counted(SC_NONE_BOMB, win, &w, tn);
  run_out u;
  bool busy = run_counted(SC_BUSY, win, &u, tn);
  if (busy) put(&m->bu_p99, u.nb_p99_us);
  if (a && busy) put(&m->b_pbx, ratio(o.nb_p99_us, u.nb_p99_us));
  if (a) {
    put(&m->b_p99, o.nb_p99_us);
    put(&m->b_rss, o.rss_growth / mib);
    put(&m->b_rx, o.rss_growth / (double)BOMB_LIMIT);
    put(&m->b_ref, (double)o.refused);
    put(&m->b_posts, (double)o.posts);
    put(&m->b_bytes, (double)o.st_bytes / mib);
    m->capped += o.capped;
    m->hwm = m->hwm && o.hwm;
    m->b_unsettled += o.unsettled;
    m->b_other += o.other;
    m->b_stref += o.st_refused;
  }
  if (c) {
    put(&m->bn_p99, w.nb_p99_us);
    put(&m->bn_rss, w.rss_growth / mib);
  }
  if (a && c) {
    put(&m->b_px, ratio(o.nb_p99_us, w.nb_p99_us));
    put(&m->b_tx, ratio(o.tput, w.tput));
  }
  a = run_counted(SC_FLOOD, win, &o, tf);
  c = run_counted(SC_NONE_FLOOD, win, &w, tn);
  if (a) {
    put(&m->f_vp, o.victim_p99_us);
    put(&m->f_rss, o.rss_growth / mib);
    put(&m->f_ref, (double)o.refused);
    put(&m->f_refa, (double)o.refused_applied);
    put(&m->f_posts, (double)o.posts);
    put(&m->f_inbox, (double)o.st_inbox_max);
    m->f_unsettled += o.unsettled;
    m->f_other += o.other;
  }
  if (c) {
    put(&m->fn_vp, w.victim_p99_us);
    put(&m->fn_rss, w.rss_growth / mib);
  }
  if (a && c) {
    put(&m->f_vx, ratio(o.victim_p99_us, w.victim_p99_us));
    put(&m->f_nx, ratio(o.nb_p99_us, w.nb_p99_us));
  }
}

static void bomb_figures(rb_ctx *ctx, const mem_figs *m, uint64_t win, const tally *tb,
                         const tally *tn) {
  char lim[64];
  snprintf(lim, sizeof lim, "limits.bytes = %.0f MiB", (double)BOMB_LIMIT / mib);
  if (tb->ok == 0) {
    rb_unavailable_add(ctx, "isolation.bomb", "every run failed (pool, agent or chain)");
  } else {
    rec(ctx, "isolation.bomb.neighbour_p99_us", "us", &m->b_p99,
        "p99 start delay of the driver's probes to nb0 (busy) and nb1 (light), both on thread 1; "
        "the bomb alone on thread 0 (%s)", lim);
    target(ctx, rec(ctx, "isolation.bomb.neighbour_p99_x", "ratio", &m->b_px,
                    "per interleaved pair: neighbours' p99 with the bomb over without"),
           1.2, false, "<= 1.2x the neighbours' p99 without the bomb");
    rec(ctx, "isolation.bomb.neighbour_p99_x_busy", "ratio", &m->b_pbx,
        "per round: neighbours' p99 with the bomb over the run where a tenant on thread 0 only "
        "spins (the bomb's CPU without its posts and memory)");
    rec(ctx, "isolation.bomb_busy.neighbour_p99_us", "us", &m->bu_p99,
        "the neighbours' p99 with a tenant spinning 10 us turns on thread 0, posting nothing");
    rec(ctx, "isolation.bomb.neighbour_tput_x", "ratio", &m->b_tx,
        "per interleaved pair: nb0's 20 us tasks per second with the bomb over without");
    rec(ctx, "isolation.bomb.rss_growth_mib", "MiB", &m->b_rss,
        "peak RSS (%s) over the RSS before the bomb, jemalloc purged; %u of %zu runs hit the "
        "runner's safety stop at %.0f MiB", m->hwm ? "VmHWM after clear_refs, and 1 ms samples" :
        "1 ms samples of VmRSS", m->capped, m->b_rss.n, (double)BOMB_SAFETY / mib);
    target(ctx, rec(ctx, "isolation.bomb.rss_x_limit", "ratio", &m->b_rx,
                    "peak RSS growth over the bomb's %s; %u of %zu runs stopped by the runner at "
                    "%.0fx the limit (the library did not stop the bomb)", lim, m->capped, m->b_rx.n,
                    (double)BOMB_SAFETY / (double)BOMB_LIMIT),
           1.2, false, "<= 1.2 (peak RSS growth over the 64 MiB limit)");
    rec(ctx, "isolation.bomb.refused", "count", &m->b_ref,
        "the bomb's posts that returned PTS_EQUOTA, per run (pts_agent_stats.refused summed over "
        "the runs: %llu; other errors: %llu)", (unsigned long long)m->b_stref,
        (unsigned long long)m->b_other);
    rec(ctx, "isolation.bomb.posts_admitted", "count", &m->b_posts,
        "the bomb's posts that succeeded, per run (a %.0f ms window and the warm-up)",
        (double)win / 1e6);
    rec(ctx, "isolation.bomb.bytes_held_mib", "MiB", &m->b_bytes,
        "pts_agent_stats.bytes_held of the bomb at the end of its run");
    one(ctx, "isolation.bomb.capped", "count", m->capped,
        "runs whose bomb the runner stopped at 4x the limit of RSS growth (or 8M pending tasks): "
        "the library did not stop it");
    target(ctx, rb_record(ctx, "isolation.bomb.hostile_unsettled", "count",
                          RB_INFO, &(double){(double)m->b_unsettled}, 1),
           0, false, "0 (each admitted task runs or settles exactly once)");
    rb_note(ctx, "isolation.bomb.hostile_unsettled",
            "the bomb's admitted posts whose callback was not called once (run or cancelled at "
            "destroy), over the runs");
  }
  if (tn->ok > 0) {
    rec(ctx, "isolation.bomb_none.neighbour_p99_us", "us", &m->bn_p99,
        "the same neighbours, no bomb (thread 0 idle)");
    rec(ctx, "isolation.bomb_none.rss_growth_mib", "MiB", &m->bn_rss,
        "peak RSS growth of the run without the bomb");
  }
}

static void flood_figures(rb_ctx *ctx, const mem_figs *m, const tally *tf, const tally *tn) {
  if (tf->ok == 0) {
    rb_unavailable_add(ctx, "isolation.flood", "every run failed (pool, agent, chain or thread)");
  } else {
    rec(ctx, "isolation.flood.victim_p99_us", "us", &m->f_vp,
        "p99 start delay (from due time) of the victim's own tasks, a chain each posting the next "
        "with a %d ms delay, under a flood of background posts from a tenant on thread 1 "
        "(limits.inbox = %u)", VICTIM_DELAY_MS, FLOOD_INBOX);
    target(ctx, rec(ctx, "isolation.flood.victim_p99_x", "ratio", &m->f_vx,
                    "per interleaved pair: victim's p99 with the flood over the run whose "
                    "flooder spins its turns without posting"),
           2, false, "<= 2x the victim's p99 without the flood");
    rec(ctx, "isolation.flood.neighbour_p99_x", "ratio", &m->f_nx,
        "per interleaved pair: neighbours' probe p99 (thread 1) with the flood over without");
    rec(ctx, "isolation.flood.rss_growth_mib", "MiB", &m->f_rss,
        "peak RSS over the RSS before the flooder started; the runner's flooder pauses at "
        "%u admitted and not settled posts", FLOOD_SAFETY);
    rec(ctx, "isolation.flood.refused", "count", &m->f_ref,
        "flooder's posts that returned PTS_EQUOTA (inbox full), per run (other errors over the "
        "runs: %llu)", (unsigned long long)m->f_other);
    rec(ctx, "isolation.flood.refused_applied", "count", &m->f_refa,
        "admitted posts settled with PTS_EQUOTA when applied (a task limit), per run");
    rec(ctx, "isolation.flood.posts_admitted", "count", &m->f_posts, "flooder's posts that succeeded, per run");
    rec(ctx, "isolation.flood.inbox_max", "count", &m->f_inbox, "pts_agent_stats.inbox_max of the victim");
    target(ctx, rb_record(ctx, "isolation.flood.hostile_unsettled", "count",
                          RB_INFO, &(double){(double)m->f_unsettled}, 1),
           0, false, "0 (each admitted post settles exactly once)");
    rb_note(ctx, "isolation.flood.hostile_unsettled",
            "admitted flood posts whose done callback was not called once, over the runs");
  }
  if (tn->ok > 0 && m->fn_vp.n > 0) {
    rec(ctx, "isolation.flood_none.victim_p99_us", "us", &m->fn_vp,
        "the victim's own tasks, the flooder spinning its turns without posting");
    rec(ctx, "isolation.flood_none.rss_growth_mib", "MiB", &m->fn_rss, "peak RSS growth without the flood");
  }
}

void rb_iso_memory(rb_ctx *ctx, uint64_t win, int runs, tally *tb, tally *tf, tally *tn) {
  static mem_figs m; /* 22 series of MAXRUNS samples */
  memset(&m, 0, sizeof m);
  m.hwm = true;
  for (int r = 0; r < runs; r++) memory_round(&m, win, tb, tf, tn);
  bomb_figures(ctx, &m, win, tb, tn);
  flood_figures(ctx, &m, tf, tn);
}
