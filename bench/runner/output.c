/* bench/runner/output.c: everything ptsched-bench writes once the suites
 * have run: the terminal table, DIR/results.json, DIR/results.csv, the plots
 * (DIR/<name>.png and .svg through gnuplot, one script per plot in
 * DIR/plots/ so one failing plot cannot stop the others) and DIR/report.md.
 *
 * Ratios are computed here, from medians of the same run: a ptsched figure
 * over its floor, and over the best (lowest-cost, or highest for
 * higher-is-better figures) of its peers that produced a figure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/runner/harness.h"

typedef struct cmpres {
  const rb_metric *floor;
  double floor_ratio;
  const rb_metric *peer;
  double peer_ratio;
} cmpres;

static void compare_of(rb_ctx *ctx, const rb_metric *m, cmpres *c) {
  memset(c, 0, sizeof *c);
  if (m->floor_key[0]) {
    c->floor = rb_find(ctx, m->floor_key);
    if (c->floor && c->floor->sum.median != 0)
      c->floor_ratio = m->sum.median / c->floor->sum.median;
    else
      c->floor = NULL;
  }
  for (int i = 0; i < m->npeers; i++) {
    const rb_metric *p = rb_find(ctx, m->peer_keys[i]);
    if (p == NULL || p->sum.median == 0) continue;
    bool better = c->peer == NULL ||
                  (m->higher_better ? p->sum.median > c->peer->sum.median
                                    : p->sum.median < c->peer->sum.median);
    if (better) c->peer = p;
  }
  if (c->peer) c->peer_ratio = m->sum.median / c->peer->sum.median;
}

static bool target_met(const rb_metric *m) {
  return rb_target_met(m->sum.median, m->target, m->higher_better);
}

/* "ok (<=T)" or "MISSED by X unit (Y%)"; "" without a target. */
static void target_status(const rb_metric *m, char *buf, size_t size) {
  if (!m->has_target) {
    buf[0] = '\0';
    return;
  }
  rb_target_status(buf, size, m->sum.median, m->target, m->higher_better, m->unit);
}

static const char *role_name(rb_role r) {
  switch (r) {
    case RB_PTSCHED: return "ptsched";
    case RB_PEER: return "peer";
    case RB_FLOOR: return "floor";
    default: return "info";
  }
}

/* The scenario part of a key ("libevent_active" of
 * "throughput.libevent_active.ns_per_task"). */
static void scenario_of(const char *key, char *buf, size_t size) {
  const char *a = strchr(key, '.');
  const char *b = a ? strchr(a + 1, '.') : NULL;
  if (!a || !b) {
    snprintf(buf, size, "%s", key);
    return;
  }
  snprintf(buf, size, "%.*s", (int)(b - a - 1), a + 1);
}

static void fmt_num(char *buf, size_t size, double v) {
  if (!isfinite(v)) snprintf(buf, size, "-");
  else if (fabs(v) >= 1e5) snprintf(buf, size, "%.0f", v);
  else if (fabs(v) >= 100) snprintf(buf, size, "%.1f", v);
  else if (fabs(v) >= 1) snprintf(buf, size, "%.2f", v);
  else if (v == 0 || fabs(v) >= 0.001) snprintf(buf, size, "%.4f", v);
  else snprintf(buf, size, "%.2g", v); /* e.g. a few bytes over 200,000 tasks */
}

void rb_print_table(rb_ctx *ctx, FILE *f) {
  char last_suite[32] = "";
  fprintf(f, "\n%-46s %10s %10s %10s %-5s %8s %-26s %s\n", "figure (suite.scenario.figure)",
          "median", "min", "max", "unit", "x floor", "x best peer", "target");
  for (size_t i = 0; i < ctx->nmetrics; i++) {
    rb_metric *m = &ctx->metrics[i];
    char suite[32];
    snprintf(suite, sizeof suite, "%.*s", (int)(strchr(m->key, '.') - m->key), m->key);
    if (strcmp(suite, last_suite) != 0) {
      fprintf(f, "-- %s %.*s\n", suite, (int)(120 - strlen(suite)),
              "------------------------------------------------------------------------------------------------------------------------");
      snprintf(last_suite, sizeof last_suite, "%s", suite);
    }
    char med[24], mn[24], mx[24], fr[24] = "", pr[128] = "", ts[96];
    fmt_num(med, sizeof med, m->sum.median);
    fmt_num(mn, sizeof mn, m->sum.min);
    fmt_num(mx, sizeof mx, m->sum.max);
    cmpres c;
    compare_of(ctx, m, &c);
    if (c.floor) snprintf(fr, sizeof fr, "%.3gx", c.floor_ratio);
    if (c.peer) {
      char sc[64];
      scenario_of(c.peer->key, sc, sizeof sc);
      snprintf(pr, sizeof pr, "%.3gx %s", c.peer_ratio, sc);
    }
    target_status(m, ts, sizeof ts);
    const char *tag = m->role == RB_PTSCHED ? "" : m->role == RB_PEER ? "  (peer)" : m->role == RB_FLOOR ? "  (floor)" : "";
    char name[RB_KEY_MAX + 12];
    snprintf(name, sizeof name, "%s%s", m->key + strlen(suite) + 1, tag);
    fprintf(f, "  %-44s %10s %10s %10s %-5s %8s %-26s %s\n", name, med, mn, mx, m->unit, fr, pr, ts);
  }
  if (ctx->nunavailable) {
    fprintf(f, "-- not available -------------------------------------------------------------------------------------------------------\n");
    for (size_t i = 0; i < ctx->nunavailable; i++)
      fprintf(f, "  %-44s %s\n", ctx->unavailable[i].what, ctx->unavailable[i].why);
  }
  fprintf(f, "\n");
}

/* ---- machine and revision ---- */

static void cpu_model(char *buf, size_t size) {
  snprintf(buf, size, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *c = strchr(line, ':');
      if (c) {
        c++;
        while (*c == ' ') c++;
        c[strcspn(c, "\n")] = '\0';
        snprintf(buf, size, "%s", c);
      }
      break;
    }
  }
  fclose(f);
}

static void run_cmd(const char *cmd, char *buf, size_t size) {
  buf[0] = '\0';
  FILE *p = popen(cmd, "r");
  if (p == NULL) return;
  if (fgets(buf, (int)size, p) == NULL) buf[0] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  pclose(p);
}

static void git_info(rb_ctx *ctx, char *rev, size_t size, bool *dirty) {
  char cmd[1400];
  const char *dir = ctx->workspace[0] ? ctx->workspace : ".";
  snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null", dir);
  run_cmd(cmd, rev, size);
  if (rev[0] == '\0') snprintf(rev, size, "unknown");
  char st[64];
  snprintf(cmd, sizeof cmd, "git -C '%s' status --porcelain --untracked-files=no 2>/dev/null | head -n 1", dir);
  run_cmd(cmd, st, sizeof st);
  *dirty = st[0] != '\0';
}

/* ---- JSON ---- */

static void jstr(FILE *f, const char *s) {
  char buf[2048];
  if (rb_json_string(buf, sizeof buf, s) < 0) fputs("\"\"", f);
  else fputs(buf, f);
}

static void jnum(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.6g", v);
  else fputs("null", f);
}

static int write_json(rb_ctx *ctx, const char *path, int argc, char **argv,
                      const char *rev, bool dirty, const char *cpu, const char *when) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  struct utsname u;
  uname(&u);
  fprintf(f, "{\n  \"schema\": \"ptsched-bench/1\",\n  \"generated_utc\": ");
  jstr(f, when);
  fprintf(f, ",\n  \"git_revision\": ");
  jstr(f, rev);
  fprintf(f, ",\n  \"git_dirty\": %s,\n", dirty ? "true" : "false");
  fprintf(f, "  \"machine\": {\"cpu_model\": ");
  jstr(f, cpu);
  fprintf(f, ", \"cores\": %ld, \"kernel\": ", sysconf(_SC_NPROCESSORS_ONLN));
  char k[300];
  snprintf(k, sizeof k, "%s %s %s", u.sysname, u.release, u.machine);
  jstr(f, k);
  fprintf(f, "},\n  \"options\": {\"suites\": [");
  bool first = true;
  for (size_t i = 0; i < rb_suite_count; i++) {
    if (!ctx->opt.suites[i]) continue;
    fprintf(f, "%s", first ? "" : ", ");
    jstr(f, rb_suite_names[i]);
    first = false;
  }
  fprintf(f, "], \"quick\": %s, \"runs\": %d, \"warmup_runs\": 1, \"out\": ",
          ctx->opt.quick ? "true" : "false", ctx->runs);
  jstr(f, ctx->outdir);
  fprintf(f, ", \"argv\": [");
  for (int i = 1; i < argc; i++) {
    fprintf(f, "%s", i > 1 ? ", " : "");
    jstr(f, argv[i]);
  }
  fprintf(f, "]},\n  \"duration_s\": ");
  jnum(f, (double)rb_now_ns() / 1e9 - ctx->t_start);
  fprintf(f, ",\n  \"metrics\": {");
  for (size_t i = 0; i < ctx->nmetrics; i++) {
    rb_metric *m = &ctx->metrics[i];
    fprintf(f, "%s\n    ", i ? "," : "");
    jstr(f, m->key);
    fprintf(f, ": {\"median\": ");
    jnum(f, m->sum.median);
    fprintf(f, ", \"min\": ");
    jnum(f, m->sum.min);
    fprintf(f, ", \"max\": ");
    jnum(f, m->sum.max);
    fprintf(f, ", \"unit\": ");
    jstr(f, m->unit);
    fprintf(f, "}");
  }
  fprintf(f, "\n  },\n  \"details\": {");
  for (size_t i = 0; i < ctx->nmetrics; i++) {
    rb_metric *m = &ctx->metrics[i];
    cmpres c;
    compare_of(ctx, m, &c);
    fprintf(f, "%s\n    ", i ? "," : "");
    jstr(f, m->key);
    fprintf(f, ": {\"role\": \"%s\", \"higher_is_better\": %s, \"samples\": [", role_name(m->role),
            m->higher_better ? "true" : "false");
    for (size_t s = 0; s < m->nsamples; s++) {
      fprintf(f, "%s", s ? ", " : "");
      jnum(f, m->samples[s]);
    }
    fprintf(f, "]");
    if (c.floor) {
      fprintf(f, ", \"floor\": ");
      jstr(f, c.floor->key);
      fprintf(f, ", \"floor_ratio\": ");
      jnum(f, c.floor_ratio);
    }
    if (c.peer) {
      fprintf(f, ", \"best_peer\": ");
      jstr(f, c.peer->key);
      fprintf(f, ", \"best_peer_ratio\": ");
      jnum(f, c.peer_ratio);
    }
    if (m->has_target) {
      fprintf(f, ", \"target\": ");
      jnum(f, m->target);
      fprintf(f, ", \"target_text\": ");
      jstr(f, m->target_text);
      fprintf(f, ", \"target_met\": %s", target_met(m) ? "true" : "false");
      if (m->target_from[0]) {
        fprintf(f, ", \"target_from\": ");
        jstr(f, m->target_from);
      }
    }
    if (m->note[0]) {
      fprintf(f, ", \"note\": ");
      jstr(f, m->note);
    }
    fprintf(f, "}");
  }
  fprintf(f, "\n  },\n  \"unavailable\": [");
  for (size_t i = 0; i < ctx->nunavailable; i++) {
    fprintf(f, "%s\n    {\"what\": ", i ? "," : "");
    jstr(f, ctx->unavailable[i].what);
    fprintf(f, ", \"why\": ");
    jstr(f, ctx->unavailable[i].why);
    fprintf(f, "}");
  }
  fprintf(f, "\n  ],\n  \"plots\": [");
  for (size_t i = 0; i < ctx->nplots; i++) {
    fprintf(f, "%s", i ? ", " : "");
    jstr(f, ctx->plots[i].name);
  }
  fprintf(f, "]\n}\n");
  return fclose(f) == 0 ? 0 : -1;
}

/* ---- CSV ---- */

static int write_csv(rb_ctx *ctx, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fprintf(f, "key,suite,scenario,figure,role,median,min,max,unit,runs,floor,floor_ratio,best_peer,best_peer_ratio,target,target_met,target_from\n");
  for (size_t i = 0; i < ctx->nmetrics; i++) {
    rb_metric *m = &ctx->metrics[i];
    char a[RB_KEY_MAX], *suite, *scen, *fig;
    snprintf(a, sizeof a, "%s", m->key);
    suite = strtok(a, ".");
    scen = strtok(NULL, ".");
    fig = strtok(NULL, ".");
    cmpres c;
    compare_of(ctx, m, &c);
    fprintf(f, "%s,%s,%s,%s,%s,%.6g,%.6g,%.6g,%s,%zu,", m->key, suite, scen, fig,
            role_name(m->role), m->sum.median, m->sum.min, m->sum.max, m->unit, m->nsamples);
    if (c.floor) fprintf(f, "%s,%.4g,", c.floor->key, c.floor_ratio);
    else fprintf(f, ",,");
    if (c.peer) fprintf(f, "%s,%.4g,", c.peer->key, c.peer_ratio);
    else fprintf(f, ",,");
    /* target_from never holds a comma (written by the suites). */
    if (m->has_target)
      fprintf(f, "%g,%s,%s\n", m->target, target_met(m) ? "yes" : "no", m->target_from);
    else fprintf(f, ",,\n");
  }
  return fclose(f) == 0 ? 0 : -1;
}

/* ---- plots ---- */

/* One bar chart per suite of the cost figures (ns or bytes) with min/max
 * error bars, log scale: every figure is drawn as well as printed. */
static void add_bar_plots(rb_ctx *ctx) {
  static const char *const suites[] = {"throughput", "crossthread", "yield", "control", "memory"};
  for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
    char file[64];
    snprintf(file, sizeof file, "bars_%s.dat", suites[s]);
    size_t len = strlen(suites[s]);
    int count = 0;
    const char *unit = NULL;
    for (size_t i = 0; i < ctx->nmetrics; i++) {
      rb_metric *m = &ctx->metrics[i];
      if (strncmp(m->key, suites[s], len) == 0 && m->key[len] == '.' && m->role != RB_INFO &&
          (strcmp(m->unit, "ns") == 0 || strcmp(m->unit, "B") == 0))
        count++;
    }
    if (count == 0) continue;
    FILE *f = rb_data_open(ctx, file);
    if (f == NULL) continue;
    fprintf(f, "# index label median min max role\n");
    int k = 0;
    for (size_t i = 0; i < ctx->nmetrics; i++) {
      rb_metric *m = &ctx->metrics[i];
      if (!(strncmp(m->key, suites[s], len) == 0 && m->key[len] == '.' && m->role != RB_INFO &&
            (strcmp(m->unit, "ns") == 0 || strcmp(m->unit, "B") == 0)))
        continue;
      unit = m->unit;
      char label[RB_KEY_MAX];
      snprintf(label, sizeof label, "%s", m->key + len + 1);
      char *dot = strrchr(label, '.');
      if (dot) *dot = '\0';
      fprintf(f, "%d \"%s\" %.4g %.4g %.4g %d\n", k++, label, m->sum.median, m->sum.min,
              m->sum.max, (int)m->role);
    }
    fclose(f);
    char name[64], title[120];
    snprintf(name, sizeof name, "bars_%s", suites[s]);
    snprintf(title, sizeof title, "%s: ptsched (blue), peers (green), floors (grey); median with min-max", suites[s]);
    rb_plot_add(ctx, name, title,
                "set style fill solid 0.7 border -1\nset boxwidth 0.7\nset logscale y\n"
                "set ylabel '%s (log scale)'\nset xtics rotate by -40 left font ',9'\n"
                "set bmargin 10\nset grid ytics\nunset key\n"
                "plot 'data/%s' using 1:3:(0.7):($6==0?0x3366cc:($6==1?0x33aa55:0x999999)):xtic(2) "
                "with boxes lc rgb variable, '' using 1:3:4:5 with yerrorbars lc rgb 'black' pt -1\n",
                strcmp(unit, "B") == 0 ? "bytes per pending task" : "ns", file);
  }
}

static int render_plots(rb_ctx *ctx, int *made) {
  *made = 0;
  if (ctx->opt.no_plots) {
    fprintf(stderr, "plots: skipped (--no-plots)\n");
    return 0;
  }
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "plots: skipped, gnuplot not found (install gnuplot-nox); the data is in %s/data\n",
            ctx->outdir);
    return -1;
  }
  char dir[2048];
  snprintf(dir, sizeof dir, "%s/plots", ctx->outdir);
  mkdir(dir, 0755);
  for (size_t i = 0; i < ctx->nplots; i++) {
    rb_plot *p = &ctx->plots[i];
    char path[2200];
    snprintf(path, sizeof path, "%s/%s.gp", dir, p->name);
    FILE *f = fopen(path, "w");
    if (f == NULL) continue;
    fprintf(f, "# %s (ptsched-bench); run from the output folder: gnuplot plots/%s.gp\n", p->title, p->name);
    fprintf(f, "set terminal pngcairo size 1100,650 noenhanced\nset output '%s.png'\n", p->name);
    fprintf(f, "set title '%s'\n%s", p->title, p->script);
    fprintf(f, "set terminal svg size 1100,650 noenhanced\nset output '%s.svg'\nreplot\n", p->name);
    fclose(f);
    char cmd[5000];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot 'plots/%s.gp' 2>'plots/%s.log'", ctx->outdir,
             p->name, p->name);
    if (system(cmd) == 0) {
      (*made)++;
    } else {
      fprintf(stderr, "plots: %s failed (see %s/plots/%s.log)\n", p->name, ctx->outdir, p->name);
      p->title[0] = '\0'; /* not linked from the report */
    }
  }
  return 0;
}

/* ---- report.md ---- */

static void md_table(rb_ctx *ctx, FILE *f, const char *suite) {
  size_t len = strlen(suite);
  fprintf(f, "| figure | median | min | max | unit | x floor | x best peer | target |\n");
  fprintf(f, "|---|---:|---:|---:|---|---:|---|---|\n");
  for (size_t i = 0; i < ctx->nmetrics; i++) {
    rb_metric *m = &ctx->metrics[i];
    if (strncmp(m->key, suite, len) != 0 || m->key[len] != '.') continue;
    char med[24], mn[24], mx[24], ts[96];
    fmt_num(med, sizeof med, m->sum.median);
    fmt_num(mn, sizeof mn, m->sum.min);
    fmt_num(mx, sizeof mx, m->sum.max);
    cmpres c;
    compare_of(ctx, m, &c);
    target_status(m, ts, sizeof ts);
    fprintf(f, "| `%s`%s | %s | %s | %s | %s | ", m->key,
            m->role == RB_PEER ? " (peer)" : m->role == RB_FLOOR ? " (floor)" : "", med, mn, mx, m->unit);
    if (c.floor) fprintf(f, "%.3gx | ", c.floor_ratio);
    else fprintf(f, " | ");
    if (c.peer) {
      char sc[64];
      scenario_of(c.peer->key, sc, sizeof sc);
      fprintf(f, "%.3gx (%s) | ", c.peer_ratio, sc);
    } else {
      fprintf(f, " | ");
    }
    fprintf(f, "%s |\n", ts);
  }
  fprintf(f, "\n");
}

static const char *suite_text(const char *s) {
  if (!strcmp(s, "throughput"))
    return "Post+run on one loop, batches of 1,000 tasks posted then run until idle. "
           "Direct-callback form (`pts_scheduler_post_task_cb`), promise form (`pts_scheduler_post_task`, "
           "caller's reference dropped) and mixed priorities with the strict-order check; "
           "`alloc_bytes_per_task`: jemalloc's per-thread byte counter over the timed part of the "
           "last run. "
           "Floors: intrusive FIFO and three-level priority FIFO with a bitmap. Peers: libevent "
           "with 3 priorities, pre-created events + `event_active`, and `event_base_once` per task.";
  if (!strcmp(s, "crossthread"))
    return "A stream of posts from another thread into a running loop (time from the first post "
           "to the last task run, per task): `post` with caller-owned `pts_task_req` storage "
           "allocated before the clock (as the floor and libuv pre-allocate their nodes), "
           "`post_cached` with `pts_queue_task_from_any_thread` (blocks from the producer's node "
           "cache); the same into an agent; and the wake-up round trip between two parked loops. "
           "`alloc_bytes_per_task`: jemalloc's per-thread byte counters of the posting and the "
           "consuming thread over the timed part of the last run. "
           "Floors: atomic-exchange MPSC queue across the two cores, futex ping-pong. Peers: "
           "libevent `event_active` on a pthreads-enabled base, libuv `uv_async_send` with a "
           "mutex-protected queue.";
  if (!strcmp(s, "yield"))
    return "`scheduler.yield()` round trips inside one task chain: direct-callback form, promise "
           "form (yield + then), and a plain post chain for reference. Peer: a libevent event "
           "re-activating itself. Floor: one priority-FIFO push/pop.";
  if (!strcmp(s, "control"))
    return "`TaskController.setPriority()` with 1k/10k/100k tasks pending on its signal (ns per "
           "call), and `AbortController.abort()` of a signal with N pending tasks (ns per aborted "
           "task, callbacks included). Floors: moving one queue between bitmap levels; unlinking "
           "N intrusive nodes and calling each.";
  if (!strcmp(s, "memory"))
    return "Bytes held per pending task: jemalloc `stats.allocated` (after `epoch`) before and "
           "after posting 100,000 tasks on a fresh loop. Peers: libevent event_new+event_active, "
           "event_base_once. Floor: one malloc'd {next, fn, data} node.";
  if (!strcmp(s, "latency"))
    return "Start delay of user-blocking tasks posted from another thread while background "
           "tasks (5 us each, 16 outstanding) flood the same loop; p50/p99/p99.9 per run. "
           "Floor (`floor_bg_flood`): the same flood as bare 5 us spins on one thread that checks "
           "an atomic flag between two, the same poster storing its send time in the flag "
           "(send -> noticed), interleaved with ptsched and libevent. "
           "`policy_*`: the same with the flood in another agent on the same pool thread, per "
           "inter-loop policy. Peer: libevent with priorities, cross-thread `event_active`.";
  if (!strcmp(s, "scale"))
    return "Wall-clock ns per task over agents x pool threads x inter-loop policies: each agent "
           "runs 8 task chains until the run's tasks are spent.";
  if (!strcmp(s, "fairness"))
    return "Four tenants on one pool thread (weights 1,1,2,4; task costs 1,3,1,2 us) saturate it; "
           "CPU share per tenant (measured around each task) against weight share, and Jain's "
           "index of share/weight (1 = shares follow weights exactly).";
  if (!strcmp(s, "leak"))
    return "Leakage between co-located loops per policy (security study, issue 8).";
  if (!strcmp(s, "balance"))
    return "Two pool threads (round-robin), four agents placed two per thread; every 100 ms a "
           "new phase makes two agents hot (a chain of 20 us tasks of fixed computation) and "
           "the others cold. `skewed_*`: the hot pair shares a thread when the phase begins; "
           "`even_*`: one hot agent per thread. Balancing on and off, runs interleaved, a fresh "
           "pool per run. Every agent gets a probe task every 1 ms: `p99_us_aN` is agent N's "
           "p99 start delay. `speedup` and `ratio`: per interleaved pair, hot tasks/s on over "
           "off. `move_cost_us`: what the pool measures per move (source detach to the end of "
           "the target's attach and first poll). `steady_moves_per_s`: the most moves of one "
           "agent from 20 ms after a phase change to the phase's end, per second. "
           "`capacity.ratio`: even off over skewed off (what two busy threads get over one on "
           "this host during the run; 2 when the host is idle); `skewed.efficiency`: speedup "
           "over capacity.";
  if (!strcmp(s, "host"))
    return "The same JS workloads (host/bench) as child processes in ptsched-host, in Node with "
           "the ptsched binding and in Node with npm's scheduler-polyfill, one process a sample, "
           "timed inside the script: `post_run_*` (tasks.js, 3000 postTasks over 3 priorities) "
           "and `yield_*` (yield.js, 5000 yields), the systems interleaved. `scale_tT_aA`: A "
           "tenants of tasks.js on T threads, the scripts' run window (run_ms, from the scripts' "
           "start to idle, every realm made before) of 4x the tasks minus that of 1x, over the "
           "extra tasks; `cpu_*` the same from the pool threads' CPU time. `latency_<policy>`: two latency.js "
           "tenants on one thread, each flooding and probing, the worse user-blocking p99. `leak_strict`, `leak_quantized`: "
           "leak-probe.js against leak-victim.js on one thread under that policy, the probe's "
           "accuracy as a binary symmetric channel's capacity (strict 200 windows of 10 ms, "
           "quantized 1,000 after a 1.1 s warm-up; docs/host.md).";
  return "";
}

/* A row of the targets table and where it goes: suites in run order, a
 * suite's scenarios in the order their first figure was registered, a
 * scenario's figures by key, so a figure's target, its ratios (x_*) and its
 * allocation count stand together. */
typedef struct target_row {
  const rb_metric *m;
  int suite;      /* index in rb_suite_names (unknown: last) */
  size_t first;   /* registration index of the scenario's first figure */
} target_row;

static target_row target_row_of(rb_ctx *ctx, const rb_metric *m) {
  target_row r = {m, (int)rb_suite_count, 0};
  char suite[32];
  snprintf(suite, sizeof suite, "%.*s", (int)strcspn(m->key, "."), m->key);
  int i = rb_suite_index(suite);
  if (i >= 0) r.suite = i;
  const char *dot = strrchr(m->key, '.');
  size_t plen = dot ? (size_t)(dot - m->key) + 1 : strlen(m->key); /* "suite.scenario." */
  for (size_t k = 0; k < ctx->nmetrics; k++)
    if (strncmp(ctx->metrics[k].key, m->key, plen) == 0) {
      r.first = k;
      break;
    }
  return r;
}

static int cmp_target_rows(const void *a, const void *b) {
  const target_row *x = a, *y = b;
  if (x->suite != y->suite) return x->suite < y->suite ? -1 : 1;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return strcmp(x->m->key, y->m->key);
}

static int write_report(rb_ctx *ctx, const char *path, const char *rev, bool dirty,
                        const char *cpu, const char *when, int argc, char **argv) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fprintf(f, "# ptsched-bench report\n\n");
  fprintf(f, "- generated: %s (UTC), %.1f s\n", when, (double)rb_now_ns() / 1e9 - ctx->t_start);
  fprintf(f, "- machine: %s, %ld cores\n", cpu, sysconf(_SC_NPROCESSORS_ONLN));
  fprintf(f, "- git revision: `%s`%s\n", rev, dirty ? " (with uncommitted changes)" : "");
  fprintf(f, "- command: `ptsched-bench");
  for (int i = 1; i < argc; i++) fprintf(f, " %s", argv[i]);
  fprintf(f, "`; %d measured runs per figure after one discarded warm-up%s\n", ctx->runs,
          ctx->opt.quick ? " (--quick: small batches, smoke test only)" : "");
  fprintf(f, "- files: `results.json` (every figure: median/min/max/unit; samples, ratios and "
             "targets under `details`), `results.csv`, plots (`*.png`, `*.svg`, scripts in "
             "`plots/`, data in `data/`)\n\n");
  fprintf(f, "Ratios are medians of the same run: `x floor` = ptsched / the physical floor of the "
             "scenario, `x best peer` = ptsched / the best peer library that ran it "
             "(lower is better for costs).\n\n");

  fprintf(f, "## Targets (issue 12)\n\n");
  size_t ntargets = 0, nmet = 0;
  for (size_t i = 0; i < ctx->nmetrics; i++) {
    ntargets += ctx->metrics[i].has_target;
    nmet += ctx->metrics[i].has_target && target_met(&ctx->metrics[i]);
  }
  if (ntargets == 0) {
    fprintf(f, "No target applies to the suites of this run.\n");
  } else {
    fprintf(f, "Issue 12's targets, with the earlier ones it does not supersede (`from` says "
               "whose each is). Ratio targets are info figures `x_<other>` holding the ratio of "
               "two medians of this run; a target over a figure that did not run is absent, "
               "not met. %zu of %zu met in this run.\n\n", nmet, ntargets);
    fprintf(f, "| figure | median | target | from | status |\n|---|---:|---|---|---|\n");
  }
  target_row *t = calloc(ntargets ? ntargets : 1, sizeof *t);
  if (t == NULL) abort();
  size_t nt = 0;
  for (size_t i = 0; i < ctx->nmetrics; i++)
    if (ctx->metrics[i].has_target) t[nt++] = target_row_of(ctx, &ctx->metrics[i]);
  qsort(t, nt, sizeof *t, cmp_target_rows);
  for (size_t i = 0; i < nt; i++) {
    const rb_metric *m = t[i].m;
    char med[24], ts[96];
    fmt_num(med, sizeof med, m->sum.median);
    target_status(m, ts, sizeof ts);
    fprintf(f, "| `%s` | %s %s | %s | %s | %s |\n", m->key, med, m->unit, m->target_text,
            m->target_from[0] ? m->target_from : "-", ts);
  }
  free(t);
  fprintf(f, "\n");

  for (size_t s = 0; s < rb_suite_count; s++) {
    if (!ctx->opt.suites[s]) continue;
    const char *name = rb_suite_names[s];
    fprintf(f, "## %s\n\n%s\n\n", name, suite_text(name));
    size_t len = strlen(name);
    bool any = false;
    for (size_t i = 0; i < ctx->nmetrics; i++)
      if (strncmp(ctx->metrics[i].key, name, len) == 0 && ctx->metrics[i].key[len] == '.') any = true;
    if (any) md_table(ctx, f, name);
    for (size_t i = 0; i < ctx->nunavailable; i++) {
      const char *w = ctx->unavailable[i].what;
      if (strncmp(w, name, len) == 0 && (w[len] == '.' || w[len] == '\0'))
        fprintf(f, "- **not available**: `%s`: %s\n", w, ctx->unavailable[i].why);
    }
    for (size_t i = 0; i < ctx->nmetrics; i++) {
      rb_metric *m = &ctx->metrics[i];
      if (m->note[0] && strncmp(m->key, name, len) == 0 && m->key[len] == '.')
        fprintf(f, "- `%s`: %s\n", m->key, m->note);
    }
    for (size_t i = 0; i < ctx->nplots; i++) {
      rb_plot *p = &ctx->plots[i];
      if (p->title[0] == '\0') continue;
      bool mine = (!strcmp(name, "latency") && !strncmp(p->name, "latency", 7)) ||
                  (!strcmp(name, "scale") && !strcmp(p->name, "scale")) ||
                  (!strcmp(name, "fairness") && !strcmp(p->name, "fairness")) ||
                  (!strcmp(name, "leak") && !strncmp(p->name, "leak", 4)) ||
                  (!strncmp(p->name, "bars_", 5) && !strcmp(p->name + 5, name));
      if (mine) fprintf(f, "\n![%s](%s.png)\n\n([SVG](%s.svg))\n", p->title, p->name, p->name);
    }
    fprintf(f, "\n");
  }
  if (ctx->nunavailable) {
    fprintf(f, "## Not available in this run\n\n");
    for (size_t i = 0; i < ctx->nunavailable; i++)
      fprintf(f, "- `%s`: %s\n", ctx->unavailable[i].what, ctx->unavailable[i].why);
    fprintf(f, "\n");
  }
  fprintf(f, "## Method\n\nEach figure: one warm-up run (discarded), then the measured runs; a run "
             "times one large batch with `clock_gettime(CLOCK_MONOTONIC)` and divides by its size. "
             "Every batch checks that each task ran (or was aborted) exactly once; a run that fails "
             "its check drops the figure (listed above as not available) instead of reporting it. "
             "Peers and floors run in the same process, on the same machine, in the same run. See "
             "docs/benchmarks.md for what each figure means.\n");
  return fclose(f) == 0 ? 0 : -1;
}

int rb_write_outputs(rb_ctx *ctx, int argc, char **argv) {
  char rev[128], cpu[256], when[64], path[2048];
  bool dirty = false;
  git_info(ctx, rev, sizeof rev, &dirty);
  cpu_model(cpu, sizeof cpu);
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  add_bar_plots(ctx);
  int made = 0;
  render_plots(ctx, &made);
  int rc = 0;
  snprintf(path, sizeof path, "%s/results.json", ctx->outdir);
  if (write_json(ctx, path, argc, argv, rev, dirty, cpu, when) != 0) rc = -1;
  snprintf(path, sizeof path, "%s/results.csv", ctx->outdir);
  if (write_csv(ctx, path) != 0) rc = -1;
  snprintf(path, sizeof path, "%s/report.md", ctx->outdir);
  if (write_report(ctx, path, rev, dirty, cpu, when, argc, argv) != 0) rc = -1;
  fprintf(stderr, "wrote %s/{results.json,results.csv,report.md}, %d plot(s) as PNG and SVG\n",
          ctx->outdir, made);
  return rc;
}
