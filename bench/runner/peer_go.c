/* bench/runner/peer_go.c: Go's scheduler as a peer (bench/go/peer.go,
 * docs/benchmarks.md "Go"). The program is built once per runner process
 * with the `go` command of Debian's golang-go, offline (GOPROXY=off; it
 * uses the standard library only) into the report's folder, then run as a
 * child process for each sample: its GOMAXPROCS is the pool's thread count.
 * Without `go` on the PATH, or if the build fails, the Go figures are
 * listed as unavailable with the reason, as a missing libevent would be. */
#define _GNU_SOURCE
#include "bench/runner/peers.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char go_bin[PATH_MAX];
static char go_why[200];
static int go_state; /* 0 not tried, 1 built, -1 unavailable */

/* The source: a data file of the runner under `bazel run` (runfiles, the
 * working directory), else in the workspace. */
static bool find_source(const char *workspace, char *out, size_t n) {
  const char *rel = "bench/go/peer.go";
  if (access(rel, R_OK) == 0 && realpath(rel, out) != NULL) return true;
  if (workspace[0] != '\0' && (size_t)snprintf(out, n, "%s/%s", workspace, rel) < n &&
      access(out, R_OK) == 0)
    return true;
  return false;
}

const char *rb_go_prepare(const char *workspace, const char *outdir, const char **why) {
  if (go_state == 0) {
    go_state = -1;
    char src[PATH_MAX]; /* realpath's size */
    if (system("command -v go >/dev/null 2>&1") != 0) {
      snprintf(go_why, sizeof go_why, "no `go` command (Debian golang-go, tools/setup.sh)");
    } else if (!find_source(workspace, src, sizeof src)) {
      snprintf(go_why, sizeof go_why, "bench/go/peer.go not found");
    } else {
      char cmd[4 * PATH_MAX + 256];
      snprintf(go_bin, sizeof go_bin, "%s/go-peer", outdir);
      /* GOCACHE beside the binary when HOME has none (CI runs as root). */
      snprintf(cmd, sizeof cmd,
               "cd '%s' && GOPROXY=off GOFLAGS= GO111MODULE=off "
               "GOCACHE=\"${GOCACHE:-${HOME:-/tmp}/.cache/go-build}\" "
               "go build -o '%s' '%s' >'%s.log' 2>&1",
               outdir, go_bin, src, go_bin);
      if (system(cmd) == 0)
        go_state = 1;
      else
        snprintf(go_why, sizeof go_why, "`go build` of bench/go/peer.go failed (%s.log)",
                 "go-peer");
    }
  }
  if (why) *why = go_why;
  return go_state == 1 ? go_bin : NULL;
}

/* Runs the peer with args; the first output line starting with tag goes to
 * line. */
static bool run_peer(const char *args, const char *tag, char *line, size_t n) {
  if (go_state != 1) return false;
  char cmd[PATH_MAX + 512];
  snprintf(cmd, sizeof cmd, "'%s' %s", go_bin, args);
  FILE *p = popen(cmd, "r");
  if (p == NULL) return false;
  bool found = false;
  size_t tl = strlen(tag);
  while (!found && fgets(line, (int)n, p) != NULL) found = strncmp(line, tag, tl) == 0;
  char sink[256];
  while (fgets(sink, sizeof sink, p) != NULL) {
  }
  return pclose(p) == 0 && found;
}

double rb_go_scale(unsigned threads, size_t agents, size_t tasks) {
  char args[256], line[256];
  snprintf(args, sizeof args, "-mode scale -threads %u -agents %zu -tasks %zu -chains 8", threads,
           agents, tasks);
  if (!run_peer(args, "ns_per_task ", line, sizeof line)) return -1;
  return strtod(line + strlen("ns_per_task "), NULL);
}

/* Go's urgent task waits for a preemption (10 ms and more), so its runs get
 * a longer budget than the others' to pool as many delays as they need. */
#define GO_LAT_BUDGET_MIN_NS UINT64_C(1500000000)

int rb_go_latency(uint64_t bg_ns, uint64_t gap_ns, double *delays, size_t k) {
  uint64_t budget = rb_lat_budget_ns > GO_LAT_BUDGET_MIN_NS ? rb_lat_budget_ns
                                                             : GO_LAT_BUDGET_MIN_NS;
  char args[256];
  snprintf(args, sizeof args,
           "-mode latency -threads 1 -chains %d -bg_ns %llu -gap_ns %llu -samples %zu "
           "-budget %lluns",
           RB_FLOOD, (unsigned long long)bg_ns, (unsigned long long)gap_ns, k,
           (unsigned long long)budget);
  /* A line of up to k numbers of up to 12 digits. */
  size_t n = 64 + k * 24;
  char *line = malloc(n);
  if (line == NULL) return -1;
  int got = -1;
  if (run_peer(args, "delays_ns", line, n)) {
    got = 0;
    char *p = line + strlen("delays_ns");
    while ((size_t)got < k) {
      char *end;
      double v = strtod(p, &end);
      if (end == p) break;
      delays[got++] = v;
      p = end;
    }
  }
  free(line);
  return got;
}
