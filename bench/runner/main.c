/* bench/runner/main.c: ptsched-bench, the benchmark runner (issue 7).
 *
 * Runs the selected suites in a fixed order, each figure with a discarded
 * warm-up and --runs measured runs, prints the table (with ratios to the
 * floor and the best peer of the same run) and writes results.json,
 * results.csv, the plots and report.md to the output folder.
 *
 * Under `bazel run` the working directory is the runfiles tree, so relative
 * paths (--out, the default out/bench-<UTC time>) and git are resolved in
 * BUILD_WORKSPACE_DIRECTORY, the folder bazel was started from.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/runner/core.h"
#include "bench/runner/harness.h"
#include "bench/runner/suites.h"

/* A/B builds only (docs/benchmarks.md, "Comparing two builds"): N bytes of
 * code ahead of the rest, so that four builds of one source at different
 * offsets average out the luck of code layout. */
#ifdef RB_LAYOUT_PAD
#define RB_STR2(x) #x
#define RB_STR(x) RB_STR2(x)
__attribute__((used, noinline)) static void rb_layout_pad(void) {
  __asm__ volatile(".skip " RB_STR(RB_LAYOUT_PAD));
}
#endif

typedef void (*suite_fn)(rb_ctx *ctx);

static const struct {
  const char *name;
  suite_fn fn;
  const char *what;
} suites[] = {
    {"throughput", rb_suite_throughput, "post+run on one loop: callback, promise, mixed priorities (strict-order check)"},
    {"crossthread", rb_suite_crossthread, "posts from another thread; wake-up round trip (loops and agents)"},
    {"yield", rb_suite_yield, "scheduler.yield() round trips"},
    {"control", rb_suite_control, "setPriority and abort with 1,000 to 100,000 pending tasks"},
    {"memory", rb_suite_memory, "bytes per pending task (jemalloc stats.allocated)"},
    {"scale", rb_suite_scale, "agents x pool threads x inter-loop policies"},
    {"latency", rb_suite_latency, "user-blocking start delay under background floods, per policy"},
    {"fairness", rb_suite_fairness, "CPU share per tenant vs weight, Jain's index, per policy"},
    {"leak", rb_suite_leak, "leakage between co-located loops per policy (issue 8 hook)"},
    {"balance", rb_suite_balance, "moving loops between pool threads: skewed and even load, balancing on/off"},
    {"host", rb_suite_host, "JS workloads in ptsched-host, the Node binding and scheduler-polyfill"},
    {"isolation", rb_suite_isolation, "one hostile tenant (bomb, flood, hog, blocked) against its neighbours"},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: ptsched-bench [--suite NAME[,NAME...]] [--quick] [--long] [--runs N] [--out DIR]\n"
          "                     [--no-plots] [--list] [--help]\n"
          "  (no arguments)  every suite, briefly: about a minute\n"
          "  --suite LIST    only these suites (see --list); repeatable\n"
          "  --quick         CI smoke: small batches, %d runs, a few seconds per suite\n"
          "  --long          leak suite: the long mode (20,000-window real traces, ~10 min)\n"
          "  --runs N        measured runs per figure after one discarded warm-up (default %d)\n"
          "  --out DIR       output folder (default out/bench-<UTC time> in the workspace)\n"
          "  --no-plots      do not run gnuplot\n"
          "Writes DIR/results.json, DIR/results.csv, DIR/report.md and DIR/*.png|svg.\n"
          "Build and run: bazel run --config=opt //bench/runner:ptsched-bench -- --suite throughput\n",
          RB_QUICK_RUNS, RB_DEFAULT_RUNS);
}

static int mkdir_p(const char *path) {
  char tmp[1600];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return (mkdir(tmp, 0755) != 0 && errno != EEXIST) ? -1 : 0;
}

int main(int argc, char **argv) {
  static rb_ctx ctx;
  char err[256];
  if (rb_parse_options(argc, argv, &ctx.opt, err, sizeof err) != 0) {
    fprintf(stderr, "ptsched-bench: %s\n", err);
    usage(stderr);
    return 2;
  }
  if (ctx.opt.help) {
    usage(stdout);
    return 0;
  }
  if (ctx.opt.list) {
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
      printf("%-12s %s\n", suites[i].name, suites[i].what);
    return 0;
  }
  ctx.runs = ctx.opt.runs;
  ctx.size = ctx.opt.quick ? 0.1 : 1.0;
  ctx.t_start = (double)rb_now_ns() / 1e9;
  /* Short sleeps of the latency injectors should mean what they say: the
   * default 50 us timer slack would dominate the gaps. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

  const char *ws = getenv("BUILD_WORKSPACE_DIRECTORY");
  if (ws != NULL && ws[0] != '\0') snprintf(ctx.workspace, sizeof ctx.workspace, "%s", ws);
  else if (getcwd(ctx.workspace, sizeof ctx.workspace) == NULL) ctx.workspace[0] = '\0';
  char rel[512];
  if (ctx.opt.out != NULL) {
    snprintf(rel, sizeof rel, "%s", ctx.opt.out);
  } else {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(rel, sizeof rel, "out/bench-%Y%m%d-%H%M%S", &tm);
  }
  if (rel[0] == '/' || ctx.workspace[0] == '\0')
    snprintf(ctx.outdir, sizeof ctx.outdir, "%s", rel);
  else
    snprintf(ctx.outdir, sizeof ctx.outdir, "%s/%s", ctx.workspace, rel);
  if (mkdir_p(ctx.outdir) != 0) {
    fprintf(stderr, "ptsched-bench: cannot create %s: %s\n", ctx.outdir, strerror(errno));
    return 1;
  }
  snprintf(ctx.datadir, sizeof ctx.datadir, "%s/data", ctx.outdir);

  fprintf(stderr, "ptsched-bench: %d run(s) per figure after a warm-up%s; output in %s\n",
          ctx.runs, ctx.opt.quick ? ", quick" : "", ctx.outdir);
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    int idx = rb_suite_index(suites[i].name);
    if (idx < 0 || !ctx.opt.suites[idx]) continue;
    ctx.suite = suites[i].name;
    fprintf(stderr, "== %s: %s\n", suites[i].name, suites[i].what);
    suites[i].fn(&ctx);
  }
  ctx.suite = NULL;

  rb_print_table(&ctx, stdout);
  fflush(stdout);
  int rc = rb_write_outputs(&ctx, argc, argv);
  for (size_t i = 0; i < ctx.nmetrics; i++) free(ctx.metrics[i].samples);
  free(ctx.metrics);
  for (size_t i = 0; i < ctx.nplots; i++) free(ctx.plots[i].script);
  if (rc != 0) {
    fprintf(stderr, "ptsched-bench: could not write every output file in %s\n", ctx.outdir);
    return 1;
  }
  return 0;
}
