// bench/bench_loop.h: the one loop fixture of the Google Benchmark binaries
// (bench/sched, bench/signal, bench/runner/micro): a loop of the calling
// thread with its default global's scheduler, freed at scope exit. A set-up
// that fails stops the binary with the call's name and code: a benchmark of
// a loop that does not exist would measure nothing.
#ifndef PTS_BENCH_BENCH_LOOP_H
#define PTS_BENCH_BENCH_LOOP_H

#include <cstdio>
#include <cstdlib>

#include "ptsched.h"

struct BenchLoop {
  pts_loop *loop = nullptr;
  pts_scheduler *s = nullptr;
  BenchLoop() {
    int rc = pts_loop_new(nullptr, &loop);
    if (rc == 0) s = pts_global_scheduler(pts_loop_default_global(loop));
    if (rc != 0 || s == nullptr) {
      std::fprintf(stderr, "bench: loop set-up failed: %s\n", pts_err_name(rc));
      std::abort();
    }
  }
  ~BenchLoop() { pts_loop_free(loop); }
  BenchLoop(const BenchLoop &) = delete;
  BenchLoop &operator=(const BenchLoop &) = delete;
  // Runs the loop until nothing is left to run.
  void Drain() { pts_loop_run(loop, PTS_RUN_UNTIL_IDLE); }
};

#endif  // PTS_BENCH_BENCH_LOOP_H
