// Signal micro benchmarks: setPriority fan-out to 10,000 dependents (ns per
// dependent), AbortSignal.any()/TaskSignal.any() over 1, 10, 100 signals (ns
// per call, create + free) and the memory a dependent link costs.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/bench_loop.h"
#include "ptsched.h"
#include "sched/signal_internal.h"

namespace {

void BM_SetPriorityFanOut(benchmark::State &state) {
  const int n = static_cast<int>(state.range(0));
  const bool listeners = state.range(1) != 0;
  BenchLoop l;
  pts_controller *c = nullptr;
  pts_task_controller_new(l.loop, PTS_PRIORITY_USER_VISIBLE, &c);
  pts_task_signal_any_init init = {PTS_PRIORITY_USER_VISIBLE, pts_controller_signal(c)};
  std::vector<pts_signal *> deps(n);
  int events = 0;
  auto on_change = [](void *data, const pts_event *) { ++*static_cast<int *>(data); };
  for (auto &d : deps) {
    pts_task_signal_any(l.loop, nullptr, 0, &init, &d);
    if (listeners) pts_signal_add_listener(d, PTS_EVENT_PRIORITYCHANGE, on_change, &events, false);
  }
  int p = PTS_PRIORITY_BACKGROUND;
  for (auto _ : state) {
    pts_controller_set_priority(c, p);
    p = p == PTS_PRIORITY_BACKGROUND ? PTS_PRIORITY_USER_BLOCKING : PTS_PRIORITY_BACKGROUND;
  }
  benchmark::DoNotOptimize(events);
  state.counters["ns_per_dependent"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  for (auto *d : deps) pts_signal_unref(d);
  pts_controller_unref(c);
}
BENCHMARK(BM_SetPriorityFanOut)->Args({10000, 0})->Args({10000, 1})->ArgNames({"deps", "listener"});

void BM_Any(benchmark::State &state) {
  const int n = static_cast<int>(state.range(0));
  const bool task = state.range(1) != 0;
  BenchLoop l;
  std::vector<pts_controller *> cs(n);
  std::vector<pts_signal *> sigs(n);
  for (int i = 0; i < n; i++) {
    pts_abort_controller_new(l.loop, &cs[i]);
    sigs[i] = pts_controller_signal(cs[i]);
  }
  for (auto _ : state) {
    pts_signal *s = nullptr;
    if (task)
      pts_task_signal_any(l.loop, sigs.data(), sigs.size(), nullptr, &s);
    else
      pts_signal_any(l.loop, sigs.data(), sigs.size(), &s);
    benchmark::DoNotOptimize(s);
    pts_signal_unref(s);  // unlinks from every source
  }
  state.counters["bytes_per_link"] = static_cast<double>(pts__signal_footprint(n) -
                                                         pts__signal_footprint(0)) / n;
  state.counters["bytes_per_dependent"] = static_cast<double>(pts__signal_footprint(n));
  for (auto *c : cs) pts_controller_unref(c);
}
BENCHMARK(BM_Any)
    ->Args({1, 0})->Args({10, 0})->Args({100, 0})
    ->Args({1, 1})->Args({10, 1})->Args({100, 1})
    ->ArgNames({"n", "task"});

// any() over an input that is itself dependent on 100 sources: flattening.
void BM_AnyFlatten100(benchmark::State &state) {
  BenchLoop l;
  std::vector<pts_controller *> cs(100);
  std::vector<pts_signal *> sigs(100);
  for (int i = 0; i < 100; i++) {
    pts_abort_controller_new(l.loop, &cs[i]);
    sigs[i] = pts_controller_signal(cs[i]);
  }
  pts_signal *mid = nullptr;
  pts_signal_any(l.loop, sigs.data(), sigs.size(), &mid);
  for (auto _ : state) {
    pts_signal *s = nullptr;
    pts_signal_any(l.loop, &mid, 1, &s);
    benchmark::DoNotOptimize(s);
    pts_signal_unref(s);
  }
  pts_signal_unref(mid);
  for (auto *c : cs) pts_controller_unref(c);
}
BENCHMARK(BM_AnyFlatten100);

}  // namespace

BENCHMARK_MAIN();
