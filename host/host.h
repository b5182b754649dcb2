// host/host.h: the multi-tenant JavaScript host as a library (docs/host.md).
// ptsh::run() runs tenant scripts, each a SpiderMonkey realm in its own
// compartment on one ptsched agent, until every tenant is idle, then returns
// their statistics and output. The ptsched-host program (main.cc) and the
// tests (host_test.cc) are its two users.
//
// Threads: init() and shutdown() on the process's main thread, once each;
// run() from any thread that is not a pool thread, one call at a time.
#ifndef PTSCHED_HOST_HOST_H
#define PTSCHED_HOST_HOST_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ptsched.h"

namespace ptsh {

struct Options {
  unsigned threads = 0;             // pool threads; 0 = one per core
  pts_policy policy = PTS_POLICY_STRICT;
  bool capture = false;             // keep console output in Result.out
                                    // instead of writing stdout/stderr
  // Bind pool thread i to the i-th CPU the process may use, modulo their
  // number (pts_pool_pin_thread): unbound, the kernel may run two pool
  // threads on one CPU while another idles (docs/host.md).
  bool pin_threads = false;
  // Scripts evaluated in every tenant's realm before its own, in order
  // (filename, source): e.g. a test harness.
  std::vector<std::pair<std::string, std::string>> preload;
};

struct TenantSpec {
  std::string name;      // the tenant's name (host.name, reports)
  std::string filename;  // shown in stacks
  std::string source;    // the script, UTF-8
};

struct Result {
  std::string name;
  int thread = -1;        // the pool thread it ran on
  int cpu = -1;           // the CPU that thread was bound to, -1: none
  bool failed = false;    // an uncaught error or unhandled rejection
  std::string out;        // with Options.capture: console output ("E: "
                          // prefixes stderr lines), reports included
  pts_agent_stats stats{};
};

// Where a run's wall time went (ns): making every context and realm and
// running the prelude in each; from the scripts' start (every tenant set
// up) until all are idle; the teardown. run_cpu_ns: the pool threads' CPU
// time over that window (each thread from its first script to its first
// teardown), so a loaded machine shows as run_ns above it.
struct Timing {
  uint64_t setup_ns = 0;
  uint64_t run_ns = 0;
  uint64_t teardown_ns = 0;
  uint64_t run_cpu_ns = 0;
};

// JS_Init; false if the engine could not start. Main thread, before run().
bool init();
// JS_ShutDown, after the last run(). Main thread.
void shutdown();
// Runs the tenants until all are idle (no task, timer, microtask or
// message of theirs pending): first every tenant's realm (a setup task
// each), then every script (a start task each). Fills *results in spec
// order and *timing (may be NULL). Returns 0, or a negative PTS_E* code if
// the pool or an agent could not be made.
int run(const Options &opts, const std::vector<TenantSpec> &tenants,
        std::vector<Result> *results, Timing *timing = nullptr);

// The start-delay quantile q (0..1) from a histogram of power-of-two buckets
// (pts_agent_stats.delay_hist): the upper bound in ns of the bucket where the
// cumulative count reaches q; 0 for an empty histogram.
uint64_t delay_quantile(const pts_agent_stats &s, double q);

}  // namespace ptsh

#endif  // PTSCHED_HOST_HOST_H
