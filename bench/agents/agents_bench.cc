// Agents benchmarks (issue 6, docs/agents.md "Measured"):
// - CrossThreadPost: a producer thread posts 1,000,000 tasks to an agent on
//   another pool thread; ns per task end to end (post, apply, run, drain).
// - Scaling: agents = 1, 2, 4, 64, 1024 on 2 threads, every agent a chain of
//   self-posting tasks (always ready), 200,000 tasks in all; tasks/s per
//   policy. The policy decision is per task, so this shows its cost growing
//   (or not) with the loops per thread.
// - Latency: one thread, one agent gets a user-blocking task every 200 us
//   from another thread while 8 co-located agents flood background tasks of
//   ~20 us; p50/p99/p99.9 start delay per policy.
// - GatePair: the cost of the agent gate (fetch_add + fetch_sub on one word),
//   alone and with two threads hammering the same gate.
// - TscRead: one read of the TSC, the statistics clock's cost per read.
#include <benchmark/benchmark.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <thread>
#include <vector>

#include "ptsched.h"

namespace {

uint64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void busy_ns(uint64_t ns) {
  uint64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

pts_value nop_task(void *, int) { return pts_undefined(); }

// Every call's status is checked: a benchmark on a failed set-up would
// measure nothing, so it stops with the call's name and code.
void must(int rc, const char *what) {
  if (rc == 0) return;
  std::fprintf(stderr, "agents_bench: %s: %s\n", what, pts_err_name(rc));
  std::abort();
}

void BM_CrossThreadPost(benchmark::State &state) {
  const int64_t n = state.range(0);
  pts_pool_options o = {2, PTS_POLICY_STRICT, 1, 0, false, 0, {0, 0, 0}, 0, nullptr, nullptr};
  pts_pool *p;
  must(pts_pool_new(&o, &p), "pts_pool_new");
  pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
  ao.thread = 1;
  pts_agent *a;
  must(pts_agent_new(p, &ao, &a), "pts_agent_new");
  for (auto _ : state) {
    for (int64_t i = 0; i < n; i++)
      must(pts_agent_post_task(a, nullptr, nop_task, nullptr, nullptr, nullptr, nullptr),
           "pts_agent_post_task");
    must(pts_agent_drain(a), "pts_agent_drain");
  }
  state.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(n),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  must(pts_pool_shutdown(p), "pts_pool_shutdown");
  pts_agent_unref(a);
}
BENCHMARK(BM_CrossThreadPost)->Arg(1000000)->Iterations(1)->Repetitions(5)
    ->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMillisecond);

// An ordinary task from any thread, for comparison (no scheduler, no result).
void nop_fn(void *, int) {}
void BM_CrossThreadQueueTask(benchmark::State &state) {
  const int64_t n = state.range(0);
  pts_pool_options o = {2, PTS_POLICY_STRICT, 1, 0, false, 0, {0, 0, 0}, 0, nullptr, nullptr};
  pts_pool *p;
  must(pts_pool_new(&o, &p), "pts_pool_new");
  pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
  ao.thread = 1;
  pts_agent *a;
  must(pts_agent_new(p, &ao, &a), "pts_agent_new");
  for (auto _ : state) {
    for (int64_t i = 0; i < n; i++)
      must(pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, nop_fn, nullptr), "pts_agent_queue_task");
    must(pts_agent_drain(a), "pts_agent_drain");
  }
  state.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(n),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  must(pts_pool_shutdown(p), "pts_pool_shutdown");
  pts_agent_unref(a);
}
BENCHMARK(BM_CrossThreadQueueTask)->Arg(1000000)->Iterations(1)->Repetitions(5)
    ->ReportAggregatesOnly(true)->UseRealTime()->Unit(benchmark::kMillisecond);

struct Chain {
  pts_agent *a = nullptr;
  pts_scheduler *s = nullptr;
  int64_t left = 0;
  std::atomic<int> *finished = nullptr;
  static void step(void *d, int status) {
    auto *c = static_cast<Chain *>(d);
    if (status != 0) return;
    if (c->s == nullptr) c->s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(c->a)));
    if (--c->left > 0) {
      must(pts_scheduler_post_task_cb(c->s, step, c, nullptr), "pts_scheduler_post_task_cb");
    } else {
      c->finished->fetch_add(1, std::memory_order_release);
    }
  }
};

void BM_Scaling(benchmark::State &state) {
  const auto policy = static_cast<pts_policy>(state.range(0));
  const int64_t agents = state.range(1);
  const int64_t total = 200000;
  pts_pool_options o = {2, policy, 1, 100000 /* 100 us slots */, false, 0, {0, 0, 0}, 0, nullptr, nullptr};
  pts_pool *p;
  must(pts_pool_new(&o, &p), "pts_pool_new");
  std::vector<pts_agent *> as(static_cast<size_t>(agents));
  for (auto &a : as) must(pts_agent_new(p, nullptr, &a), "pts_agent_new");
  std::vector<Chain> chains(as.size());
  std::atomic<int> finished{0};
  for (auto _ : state) {
    finished.store(0);
    for (size_t i = 0; i < as.size(); i++) {
      chains[i].a = as[i];
      chains[i].s = nullptr;
      chains[i].left = total / agents;
      chains[i].finished = &finished;
      must(pts_agent_queue_task(as[i], PTS_SOURCE_GENERIC, Chain::step, &chains[i]),
           "pts_agent_queue_task");
    }
    while (finished.load(std::memory_order_acquire) < agents) std::this_thread::yield();
  }
  state.counters["tasks_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(total / agents * agents),
      benchmark::Counter::kIsRate);
  state.SetLabel(pts_policy_name(policy));
  must(pts_pool_shutdown(p), "pts_pool_shutdown");
  for (auto *a : as) pts_agent_unref(a);
}
BENCHMARK(BM_Scaling)
    ->ArgsProduct({{PTS_POLICY_STRICT, PTS_POLICY_ROUND_ROBIN, PTS_POLICY_FAIR,
                    PTS_POLICY_RANDOMIZED, PTS_POLICY_TIME_PARTITIONED},
                   {1, 2, 4, 64, 1024}})
    ->Iterations(3)->Repetitions(3)->ReportAggregatesOnly(true)->UseRealTime()
    ->Unit(benchmark::kMillisecond);

struct Flood {
  pts_agent *a = nullptr;
  pts_scheduler *s = nullptr;
  std::atomic<bool> *stop = nullptr;
  static void step(void *d, int status) {
    auto *f = static_cast<Flood *>(d);
    if (status != 0) return;
    if (f->s == nullptr) f->s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(f->a)));
    busy_ns(20000);
    if (f->stop->load(std::memory_order_relaxed)) return;
    pts_post_options po = PTS_POST_OPTIONS_INIT;
    po.priority = PTS_PRIORITY_BACKGROUND;
    must(pts_scheduler_post_task_cb(f->s, step, f, &po), "pts_scheduler_post_task_cb");
  }
};

struct Probe {
  uint64_t posted;
  std::vector<uint64_t> *delays;  // the victim's thread only
  std::atomic<int> *done;
};

pts_value probe_task(void *d, int status) {
  auto *pr = static_cast<Probe *>(d);
  if (status == 0) pr->delays->push_back(now_ns() - pr->posted);
  pr->done->fetch_add(1, std::memory_order_release);
  return pts_undefined();
}

void BM_Latency(benchmark::State &state) {
  const auto policy = static_cast<pts_policy>(state.range(0));
  const int samples = 4000;
  pts_pool_options o = {1, policy, 1, 0, false, 0, {0, 0, 0}, 0, nullptr, nullptr};
  pts_pool *p;
  must(pts_pool_new(&o, &p), "pts_pool_new");
  pts_agent *victim;
  must(pts_agent_new(p, nullptr, &victim), "pts_agent_new");
  std::vector<pts_agent *> flooders(8);
  for (auto &a : flooders) must(pts_agent_new(p, nullptr, &a), "pts_agent_new");
  std::vector<uint64_t> all;
  for (auto _ : state) {
    std::atomic<bool> stop{false};
    std::vector<Flood> fl(flooders.size());
    for (size_t i = 0; i < fl.size(); i++) {
      fl[i].a = flooders[i];
      fl[i].stop = &stop;
      must(pts_agent_queue_task(flooders[i], PTS_SOURCE_GENERIC, Flood::step, &fl[i]),
           "pts_agent_queue_task");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<uint64_t> delays;
    delays.reserve(samples);
    std::vector<Probe> probes(samples);
    std::atomic<int> done{0};
    pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
    po.priority = PTS_PRIORITY_USER_BLOCKING;
    uint64_t next = now_ns();
    for (int i = 0; i < samples; i++) {
      while (now_ns() < next) {
      }
      next += 200000;
      probes[i] = Probe{now_ns(), &delays, &done};
      must(pts_agent_post_task(victim, &po, probe_task, &probes[i], nullptr, nullptr, nullptr),
           "pts_agent_post_task");
    }
    while (done.load(std::memory_order_acquire) < samples) std::this_thread::yield();
    stop.store(true);
    for (auto *a : flooders) must(pts_agent_drain(a), "pts_agent_drain");
    must(pts_agent_drain(victim), "pts_agent_drain");
    all.insert(all.end(), delays.begin(), delays.end());
  }
  std::sort(all.begin(), all.end());
  auto pct = [&](double q) {
    return all.empty() ? 0.0 : static_cast<double>(all[static_cast<size_t>(q * (all.size() - 1))]) / 1000.0;
  };
  state.counters["p50_us"] = pct(0.5);
  state.counters["p99_us"] = pct(0.99);
  state.counters["p999_us"] = pct(0.999);
  state.SetLabel(pts_policy_name(policy));
  must(pts_pool_shutdown(p), "pts_pool_shutdown");
  pts_agent_unref(victim);
  for (auto *a : flooders) pts_agent_unref(a);
}
BENCHMARK(BM_Latency)
    ->DenseRange(PTS_POLICY_STRICT, PTS_POLICY_TIME_PARTITIONED)
    ->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// An admission's two steps (docs/agents.md, "Lifetime of a handle vs
// concurrent posters"): the rank's count, then the closed flag, both
// seq_cst (a post keeps its count: the pool thread's `applied` catches up).
std::atomic<uint64_t> admitted{0};
std::atomic<bool> closed_flag{false};
void BM_Admission(benchmark::State &state) {
  for (auto _ : state) {
    admitted.fetch_add(1, std::memory_order_seq_cst);
    benchmark::DoNotOptimize(closed_flag.load(std::memory_order_seq_cst));
  }
}
BENCHMARK(BM_Admission)->Threads(1)->Threads(2)->Repetitions(5)->ReportAggregatesOnly(true);

#if defined(__x86_64__)
// One TSC read, what the start-delay statistics clock (pts__stat_now_ns,
// agents/agents_impl.h) pays on each side of every cross-thread postTask.
void BM_TscRead(benchmark::State &state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
BENCHMARK(BM_TscRead)->Repetitions(5)->ReportAggregatesOnly(true);
#endif

}  // namespace

BENCHMARK_MAIN();
