// Loop micro benchmarks: post+run of an ordinary task (time and bytes
// allocated per task, which must be 0 in steady state), and a heap of
// 1,000,000 pending timers (time per insert and per fire).
//
// Bytes allocated come from jemalloc's per-thread counter (thread.allocatedp),
// so the benchmark must link jemalloc (the default //:allocator).
#include <benchmark/benchmark.h>
#include <jemalloc/jemalloc.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

extern "C" {
#include "loop/loop_internal.h"
#include "ptsched/loop.h"
}

static uint64_t *allocated_counter() {
  static uint64_t *p = [] {
    uint64_t *q = nullptr;
    size_t sz = sizeof q;
    if (mallctl("thread.allocatedp", &q, &sz, nullptr, 0) != 0) q = nullptr;
    return q;
  }();
  return p;
}
static uint64_t allocated_now() {
  uint64_t *p = allocated_counter();
  return p ? *p : 0;
}

static void noop(void *, int) {}

// One task posted and run per iteration (post, pick, microtask checkpoint).
static void BM_PostRunOnce(benchmark::State &state) {
  pts_loop *loop;
  pts_loop_new(nullptr, &loop);
  pts_global *g = pts_loop_default_global(loop);
  for (int i = 0; i < 1000; i++) {  // warm the pool
    pts_queue_task(g, PTS_SOURCE_GENERIC, noop, nullptr);
    pts_loop_run(loop, PTS_RUN_ONCE);
  }
  uint64_t a0 = allocated_now();
  for (auto _ : state) {
    pts_queue_task(g, PTS_SOURCE_GENERIC, noop, nullptr);
    pts_loop_run(loop, PTS_RUN_ONCE);
  }
  uint64_t a1 = allocated_now();
  state.counters["bytes_alloc_per_task"] =
      benchmark::Counter((double)(a1 - a0) / (double)state.iterations());
  pts_loop_free(loop);
}
BENCHMARK(BM_PostRunOnce);

// Batches of N posts then one run until idle: the per-task cost without the
// per-run overhead.
static void BM_PostRunBatch(benchmark::State &state) {
  const int n = (int)state.range(0);
  pts_loop *loop;
  pts_loop_new(nullptr, &loop);
  pts_global *g = pts_loop_default_global(loop);
  for (int i = 0; i < n; i++) pts_queue_task(g, PTS_SOURCE_GENERIC, noop, nullptr);
  pts_loop_run(loop, PTS_RUN_UNTIL_IDLE);
  uint64_t a0 = allocated_now();
  for (auto _ : state) {
    for (int i = 0; i < n; i++) pts_queue_task(g, PTS_SOURCE_GENERIC, noop, nullptr);
    pts_loop_run(loop, PTS_RUN_UNTIL_IDLE);
  }
  uint64_t a1 = allocated_now();
  uint64_t tasks = (uint64_t)state.iterations() * (uint64_t)n;
  state.SetItemsProcessed((int64_t)tasks);
  state.counters["ns_per_task"] = benchmark::Counter(
      (double)tasks, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_alloc_per_task"] = benchmark::Counter((double)(a1 - a0) / (double)tasks);
  pts_loop_free(loop);
}
BENCHMARK(BM_PostRunBatch)->Arg(1)->Arg(1000);

// 1,000,000 embedded timers with random deadlines: insert all, then fire
// all by advancing the virtual clock. Reports ns per insert and per fire.
static void timer_fire(void *d, int) { ++*static_cast<uint64_t *>(d); }

static void BM_TimerHeap1M(benchmark::State &state) {
  const size_t n = 1000000;
  std::vector<pts__timer> timers(n);
  std::vector<uint64_t> delays(n);
  std::mt19937_64 rng(7);
  for (auto &d : delays) d = 1 + rng() % (10ull * 1000 * 1000 * 1000);  // up to 10 s
  double insert_ns = 0, fire_ns = 0;
  uint64_t fired = 0;
  for (auto _ : state) {
    pts_loop_options o{};
    o.virtual_clock = true;
    pts_loop *loop;
    pts_loop_new(&o, &loop);
    pts_global *g = pts_loop_default_global(loop);
    for (size_t i = 0; i < n; i++) pts__timer_init(&timers[i], g, timer_fire, &fired);
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; i++) pts__timer_start(&timers[i], delays[i]);
    auto t1 = std::chrono::steady_clock::now();
    pts_loop_advance(loop, 11ull * 1000 * 1000 * 1000);
    auto t2 = std::chrono::steady_clock::now();
    insert_ns += std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
    fire_ns += std::chrono::duration<double, std::nano>(t2 - t1).count() / n;
    pts_loop_free(loop);
  }
  if (fired != n * state.iterations()) state.SkipWithError("not every timer fired");
  state.counters["insert_ns"] = insert_ns / (double)state.iterations();
  state.counters["fire_ns"] = fire_ns / (double)state.iterations();
}
BENCHMARK(BM_TimerHeap1M)->Iterations(3)->Unit(benchmark::kMillisecond);

// The same through the public API: pool-allocated nodes, the id map, and a
// task on the timer source per expiry.
static void BM_PublicTimers1M(benchmark::State &state) {
  const size_t n = 1000000;
  std::vector<uint64_t> delays(n);
  std::mt19937_64 rng(7);
  for (auto &d : delays) d = 1 + rng() % 10000;  // ms
  double insert_ns = 0, fire_ns = 0;
  uint64_t fired = 0;
  for (auto _ : state) {
    pts_loop_options o{};
    o.virtual_clock = true;
    pts_loop *loop;
    pts_loop_new(&o, &loop);
    pts_global *g = pts_loop_default_global(loop);
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; i++) pts_timer_start(g, delays[i], timer_fire, &fired, nullptr);
    auto t1 = std::chrono::steady_clock::now();
    pts_loop_advance(loop, 11ull * 1000 * 1000 * 1000);
    auto t2 = std::chrono::steady_clock::now();
    insert_ns += std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
    fire_ns += std::chrono::duration<double, std::nano>(t2 - t1).count() / n;
    pts_loop_free(loop);
  }
  if (fired != n * state.iterations()) state.SkipWithError("not every timer fired");
  state.counters["insert_ns"] = insert_ns / (double)state.iterations();
  state.counters["fire_ns"] = fire_ns / (double)state.iterations();
}
BENCHMARK(BM_PublicTimers1M)->Iterations(3)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
