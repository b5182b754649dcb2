// Scheduler micro benchmarks (docs/scheduler.md records the medians):
//  - post+run bursts of 1,000,000 user-visible tasks, direct-callback and
//    promise forms, with 0 / 1 / 100 / 10,000 distinct TaskSignals live:
//    ns per task and bytes malloc'd per task (jemalloc thread.allocated);
//  - setPriority on a signal whose queue holds 1,000 or 100,000 tasks;
//  - abort with N pending tasks (ns per task);
//  - yield round trip (one task yielding 1,000,000 times via yield_cb);
//  - memory per pending task;
//  - the raw floor: intrusive list push/pop + indirect call, to compare.
#include <benchmark/benchmark.h>
#include <jemalloc/jemalloc.h>

#include <cstdint>
#include <vector>

#include "bench/bench_loop.h"
#include "ptsched.h"
#include "sched/sched_internal.h"

namespace {

constexpr int kBurst = 1000000;

uint64_t ThreadAllocated() {
  uint64_t v = 0;
  size_t sz = sizeof v;
  if (mallctl("thread.allocated", &v, &sz, nullptr, 0) != 0) return 0;
  return v;
}

uint64_t TotalAllocatedBytes() {
  uint64_t epoch = 1;
  size_t sz = sizeof epoch;
  mallctl("epoch", &epoch, &sz, &epoch, sz);
  size_t allocated = 0;
  sz = sizeof allocated;
  if (mallctl("stats.allocated", &allocated, &sz, nullptr, 0) != 0) return 0;
  return allocated;
}

void CountTask(void *data, int) { ++*static_cast<uint64_t *>(data); }
pts_value CountTaskValue(void *data, int) {
  ++*static_cast<uint64_t *>(data);
  return pts_undefined();
}

void SetPerTask(benchmark::State &state, uint64_t tasks, uint64_t bytes) {
  state.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["malloc_bytes_per_task"] =
      static_cast<double>(bytes) / static_cast<double>(tasks ? tasks : 1);
}

// A first burst warms the loop's pool and the heaps: later bursts are the
// steady state this measures.
// burst = 1,000,000 is the required figure; 1,000 (fits in cache) shows the
// cost without memory misses.
void BM_PostRunCallback(benchmark::State &state) {
  const int burst = static_cast<int>(state.range(0));
  BenchLoop l;
  uint64_t ran = 0;
  for (int i = 0; i < burst; i++) pts_scheduler_post_task_cb(l.s, CountTask, &ran, nullptr);
  l.Drain();
  uint64_t tasks = 0, bytes = 0;
  for (auto _ : state) {
    uint64_t a0 = ThreadAllocated();
    for (int i = 0; i < burst; i++) pts_scheduler_post_task_cb(l.s, CountTask, &ran, nullptr);
    l.Drain();
    bytes += ThreadAllocated() - a0;
    tasks += burst;
  }
  SetPerTask(state, tasks, bytes);
}
BENCHMARK(BM_PostRunCallback)->Arg(kBurst)->Arg(1000)->ArgName("burst")->Unit(benchmark::kMicrosecond);

// Post only (no run), to split the cost: the loop is drained untimed.
void BM_PostOnlyCallback(benchmark::State &state) {
  const int burst = static_cast<int>(state.range(0));
  BenchLoop l;
  uint64_t ran = 0, tasks = 0;
  for (int i = 0; i < burst; i++) pts_scheduler_post_task_cb(l.s, CountTask, &ran, nullptr);
  l.Drain();
  for (auto _ : state) {
    for (int i = 0; i < burst; i++) pts_scheduler_post_task_cb(l.s, CountTask, &ran, nullptr);
    state.PauseTiming();
    l.Drain();
    state.ResumeTiming();
    tasks += burst;
  }
  state.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PostOnlyCallback)->Arg(kBurst)->Arg(1000)->ArgName("burst")->Unit(benchmark::kMicrosecond);

void BM_PostRunPromise(benchmark::State &state) {
  BenchLoop l;
  uint64_t ran = 0;
  for (int i = 0; i < kBurst; i++)
    pts_scheduler_post_task(l.s, CountTaskValue, &ran, nullptr, nullptr);
  l.Drain();
  uint64_t tasks = 0, bytes = 0;
  for (auto _ : state) {
    uint64_t a0 = ThreadAllocated();
    for (int i = 0; i < kBurst; i++)
      pts_scheduler_post_task(l.s, CountTaskValue, &ran, nullptr, nullptr);
    l.Drain();
    bytes += ThreadAllocated() - a0;
    tasks += kBurst;
  }
  SetPerTask(state, tasks, bytes);
}
BENCHMARK(BM_PostRunPromise)->Unit(benchmark::kMillisecond);

// Tasks spread round-robin over n live TaskSignals (n dynamic queues).
void BM_PostRunSignals(benchmark::State &state) {
  const int n = static_cast<int>(state.range(0));
  const bool promise = state.range(1) != 0;
  BenchLoop l;
  std::vector<pts_controller *> cs(n);
  std::vector<pts_post_options> opts(n);
  for (int i = 0; i < n; i++) {
    pts_task_controller_new(l.loop, PTS_PRIORITY_USER_VISIBLE, &cs[i]);
    opts[i] = PTS_POST_OPTIONS_INIT;
    opts[i].signal = pts_controller_signal(cs[i]);
  }
  uint64_t ran = 0;
  auto burst = [&] {
    for (int i = 0, k = 0; i < kBurst; i++, k = (k + 1 == n ? 0 : k + 1)) {
      if (promise)
        pts_scheduler_post_task(l.s, CountTaskValue, &ran, &opts[k], nullptr);
      else
        pts_scheduler_post_task_cb(l.s, CountTask, &ran, &opts[k]);
    }
    l.Drain();
  };
  burst();
  uint64_t tasks = 0, bytes = 0;
  for (auto _ : state) {
    uint64_t a0 = ThreadAllocated();
    burst();
    bytes += ThreadAllocated() - a0;
    tasks += kBurst;
  }
  SetPerTask(state, tasks, bytes);
  for (auto *c : cs) pts_controller_unref(c);
}
BENCHMARK(BM_PostRunSignals)
    ->Args({1, 0})->Args({100, 0})->Args({10000, 0})
    ->Args({1, 1})->Args({100, 1})->Args({10000, 1})
    ->ArgNames({"signals", "promise"})
    ->Unit(benchmark::kMillisecond);

// setPriority on a signal whose queue holds n pending tasks, with 100 other
// queues in the heaps: must not depend on n.
void BM_SetPriorityPending(benchmark::State &state) {
  const int n = static_cast<int>(state.range(0));
  BenchLoop l;
  pts_controller *c;
  pts_task_controller_new(l.loop, PTS_PRIORITY_USER_VISIBLE, &c);
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.signal = pts_controller_signal(c);
  uint64_t ran = 0;
  for (int i = 0; i < n; i++) pts_scheduler_post_task_cb(l.s, CountTask, &ran, &o);
  std::vector<pts_controller *> others(100);
  for (auto &oc : others) {
    pts_task_controller_new(l.loop, PTS_PRIORITY_BACKGROUND + (int)(&oc - others.data()) % 3, &oc);
    pts_post_options oo = PTS_POST_OPTIONS_INIT;
    oo.signal = pts_controller_signal(oc);
    pts_scheduler_post_task_cb(l.s, CountTask, &ran, &oo);
  }
  int p = PTS_PRIORITY_BACKGROUND;
  for (auto _ : state) {
    pts_controller_set_priority(c, p);
    p = p == PTS_PRIORITY_BACKGROUND ? PTS_PRIORITY_USER_BLOCKING : PTS_PRIORITY_BACKGROUND;
  }
  for (auto *oc : others) pts_controller_unref(oc);
  pts_controller_unref(c);
}
BENCHMARK(BM_SetPriorityPending)->Arg(1000)->Arg(100000)->ArgName("pending");

// Abort with n pending tasks on one signal: ns per aborted task.
void BM_AbortPending(benchmark::State &state) {
  const int n = static_cast<int>(state.range(0));
  BenchLoop l;
  uint64_t ran = 0, tasks = 0;
  for (auto _ : state) {
    state.PauseTiming();
    pts_controller *c;
    pts_abort_controller_new(l.loop, &c);
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.signal = pts_controller_signal(c);
    for (int i = 0; i < n; i++) pts_scheduler_post_task_cb(l.s, CountTask, &ran, &o);
    state.ResumeTiming();
    pts_controller_abort(c, nullptr);
    state.PauseTiming();
    pts_controller_unref(c);
    state.ResumeTiming();
    tasks += n;
  }
  state.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AbortPending)->Arg(1000)->Arg(100000)->ArgName("pending")->Unit(benchmark::kMicrosecond);

// One task yields kBurst times through yield_cb.
struct YieldLoop {
  pts_scheduler *s;
  int left;
};
void YieldStep(void *data, int status) {
  auto *y = static_cast<YieldLoop *>(data);
  if (status == 0 && --y->left > 0) pts_scheduler_yield_cb(y->s, nullptr, YieldStep, y);
}
void BM_YieldRoundTrip(benchmark::State &state) {
  BenchLoop l;
  uint64_t rounds = 0, bytes = 0;
  for (auto _ : state) {
    YieldLoop y{l.s, kBurst};
    uint64_t a0 = ThreadAllocated();
    pts_scheduler_post_task_cb(l.s, YieldStep, &y, nullptr);
    l.Drain();
    bytes += ThreadAllocated() - a0;
    rounds += kBurst;
  }
  state.counters["ns_per_yield"] = benchmark::Counter(
      static_cast<double>(rounds), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["malloc_bytes_per_yield"] = static_cast<double>(bytes) / rounds;
}
BENCHMARK(BM_YieldRoundTrip)->Unit(benchmark::kMillisecond);

// Memory per pending task: the process's allocated bytes with n tasks
// pending minus without (pool blocks are malloc'd once and kept).
void BM_MemoryPerPendingTask(benchmark::State &state) {
  const int kind = static_cast<int>(state.range(0));  // 0 cb, 1 cb+signal, 2 promise
  const int n = 100000;
  double per_task = 0;
  for (auto _ : state) {
    state.PauseTiming();
    pts_loop *loop;
    pts_loop_new(nullptr, &loop);
    pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(loop));
    pts_controller *c;
    pts_task_controller_new(loop, PTS_PRIORITY_USER_VISIBLE, &c);
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.signal = pts_controller_signal(c);
    uint64_t ran = 0;
    // Warm the heaps and queues with one task.
    pts_scheduler_post_task_cb(s, CountTask, &ran, kind == 1 ? &o : nullptr);
    uint64_t before = TotalAllocatedBytes();
    state.ResumeTiming();
    for (int i = 0; i < n; i++) {
      if (kind == 2)
        pts_scheduler_post_task(s, CountTaskValue, &ran, nullptr, nullptr);
      else
        pts_scheduler_post_task_cb(s, CountTask, &ran, kind == 1 ? &o : nullptr);
    }
    state.PauseTiming();
    per_task = static_cast<double>(TotalAllocatedBytes() - before) / n;
    pts_controller_unref(c);
    pts_loop_free(loop);
    state.ResumeTiming();
  }
  state.counters["bytes_per_pending_task"] = per_task;
  state.counters["block_bytes"] = static_cast<double>(pts__sched_task_size(kind != 0));
}
BENCHMARK(BM_MemoryPerPendingTask)->Arg(0)->Arg(1)->Arg(2)->ArgName("kind")
    ->Iterations(3)->Unit(benchmark::kMillisecond);

// ---- the raw floor: an intrusive FIFO of nodes and an indirect call ----

struct Node {
  Node *next;
  void (*fn)(void *, int);
  void *data;
};

void BM_RawFloorListAndCall(benchmark::State &state) {
  std::vector<Node> nodes(kBurst);
  uint64_t ran = 0, tasks = 0;
  for (auto _ : state) {
    Node *head = nullptr, **tail = &head;
    for (int i = 0; i < kBurst; i++) {
      Node *n = &nodes[i];
      n->next = nullptr;
      n->fn = CountTask;
      n->data = &ran;
      *tail = n;
      tail = &n->next;
      benchmark::ClobberMemory();
    }
    while (head) {
      Node *n = head;
      head = n->next;
      n->fn(n->data, 0);
    }
    tasks += kBurst;
  }
  benchmark::DoNotOptimize(ran);
  state.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RawFloorListAndCall)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
