// bench/runner/micro.cc: Google Benchmark micro benchmarks of ptsched's hot
// paths, one target for all of them:
//   bazel run --config=opt //bench/runner:micro -- --benchmark_min_time=0.2
// They complement ptsched-bench (which compares against floors and peers in
// the same run): post+run per task (direct-callback and promise forms, batch
// of 1,000), a yield round trip, a post chain, setPriority with N pending,
// abort per pending task, and a post from another thread into a running
// loop. Each reports ns per item through items_per_second's inverse
// ("ns_per_item" counter).
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>
#include <vector>

#include "bench/bench_loop.h"
#include "ptsched.h"

namespace {

void Count(void *data, int status) {
  if (status == 0) ++*static_cast<size_t *>(data);
}
pts_value CountCb(void *data, int status) {
  Count(data, status);
  return pts_undefined();
}

void SetNs(benchmark::State &state, double items) {
  state.counters["ns_per_item"] =
      benchmark::Counter(items, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_PostRunCallback(benchmark::State &state) {
  BenchLoop l;
  size_t n = 0;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  for (auto _ : state) {
    for (int i = 0; i < 1000; i++) pts_scheduler_post_task_cb(l.s, Count, &n, &o);
    pts_loop_run(l.loop, PTS_RUN_UNTIL_IDLE);
  }
  if (n != static_cast<size_t>(state.iterations()) * 1000) state.SkipWithError("a task did not run");
  SetNs(state, static_cast<double>(state.iterations()) * 1000);
}
BENCHMARK(BM_PostRunCallback);

void BM_PostRunPromise(benchmark::State &state) {
  BenchLoop l;
  size_t n = 0;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  for (auto _ : state) {
    for (int i = 0; i < 1000; i++) {
      pts_promise *p = nullptr;
      pts_scheduler_post_task(l.s, CountCb, &n, &o, &p);
      pts_promise_unref(p);
    }
    pts_loop_run(l.loop, PTS_RUN_UNTIL_IDLE);
  }
  if (n != static_cast<size_t>(state.iterations()) * 1000) state.SkipWithError("a task did not run");
  SetNs(state, static_cast<double>(state.iterations()) * 1000);
}
BENCHMARK(BM_PostRunPromise);

struct Chain {
  pts_scheduler *s;
  size_t left;
  bool yield;
};
void ChainStep(void *data, int status) {
  auto *c = static_cast<Chain *>(data);
  if (status != 0 || c->left-- == 0) return;
  if (c->yield) {
    pts_scheduler_yield_cb(c->s, nullptr, ChainStep, c);
  } else {
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    pts_scheduler_post_task_cb(c->s, ChainStep, c, &o);
  }
}

void BM_YieldRoundTrip(benchmark::State &state) {
  BenchLoop l;
  const bool yield = state.range(0) != 0;
  for (auto _ : state) {
    Chain c{l.s, 1000, yield};
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    pts_scheduler_post_task_cb(l.s, ChainStep, &c, &o);
    pts_loop_run(l.loop, PTS_RUN_UNTIL_IDLE);
  }
  SetNs(state, static_cast<double>(state.iterations()) * 1000);
}
BENCHMARK(BM_YieldRoundTrip)->Arg(1)->ArgName("yield");
BENCHMARK(BM_YieldRoundTrip)->Arg(0)->ArgName("yield");

void BM_SetPriority(benchmark::State &state) {
  BenchLoop l;
  pts_controller *c = nullptr;
  pts_task_controller_new(l.loop, PTS_PRIORITY_BACKGROUND, &c);
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.signal = pts_controller_signal(c);
  size_t n = 0;
  for (int64_t i = 0; i < state.range(0); i++) pts_scheduler_post_task_cb(l.s, Count, &n, &o);
  int p = PTS_PRIORITY_USER_VISIBLE;
  for (auto _ : state) {
    pts_controller_set_priority(c, p);
    p = p == PTS_PRIORITY_USER_VISIBLE ? PTS_PRIORITY_BACKGROUND : PTS_PRIORITY_USER_VISIBLE;
  }
  pts_controller_abort(c, nullptr);
  pts_controller_unref(c);
  SetNs(state, static_cast<double>(state.iterations()));
}
BENCHMARK(BM_SetPriority)->Arg(1000)->Arg(100000);

void BM_AbortPerTask(benchmark::State &state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();
    auto *l = new BenchLoop;
    pts_controller *c = nullptr;
    pts_abort_controller_new(l->loop, &c);
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.signal = pts_controller_signal(c);
    size_t cnt = 0;
    for (int64_t i = 0; i < n; i++) pts_scheduler_post_task_cb(l->s, Count, &cnt, &o);
    state.ResumeTiming();
    pts_controller_abort(c, nullptr);
    pts_loop_run(l->loop, PTS_RUN_UNTIL_IDLE);
    state.PauseTiming();
    pts_controller_unref(c);
    delete l;
    state.ResumeTiming();
  }
  SetNs(state, static_cast<double>(state.iterations()) * static_cast<double>(n));
}
BENCHMARK(BM_AbortPerTask)->Arg(10000)->Iterations(50);

// A loop running on its own thread; the benchmark thread streams posts.
void BM_CrossThreadPost(benchmark::State &state) {
  BenchLoop l;
  pts_global *g = pts_loop_default_global(l.loop);
  std::atomic<size_t> ran{0};
  std::thread t([&] { pts_loop_run(l.loop, PTS_RUN_FOREVER); });
  auto bump = [](void *data, int status) {
    if (status == 0) static_cast<std::atomic<size_t> *>(data)->fetch_add(1, std::memory_order_relaxed);
  };
  size_t posted = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1000; i++) pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, bump, &ran);
    posted += 1000;
    while (ran.load(std::memory_order_relaxed) < posted) {
    }
  }
  pts_loop_stop(l.loop);
  t.join();
  SetNs(state, static_cast<double>(posted));
}
BENCHMARK(BM_CrossThreadPost)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
