// bench/sync/mpsc_bench.cc: candidates for the loop inbox, streamed across
// threads in one harness (Google Benchmark).
//
// Each benchmark iteration moves a batch of kBatch items from P persistent
// producer threads (P = 1 or 2) to the benchmark thread, the single consumer,
// which checks per-producer FIFO order on every item (so the ck_stack
// candidate must really restore FIFO) and reads the item as a loop would. The
// figure of merit is wall time per item (counter "per_item", in seconds with
// an SI prefix: "40.8n" is 40.8 ns), with items_per_second beside it.
// The ck candidates live in ck_candidates.c (ck's headers are C only).
// Candidates:
//   pts_mpsc        our intrusive atomic-exchange queue (sync/mpsc.c)
//   ck_fifo_mpmc    concurrencykit's Michael-Scott queue with double-width CAS;
//                   its entries are double-buffered between iterations
//                   because the last entry stays in the queue as the stub
//   ck_ring_mpsc    ck_ring_enqueue_mpsc + single-consumer ck_ring_dequeue_mpsc
//                   on a bounded ring (producers spin while full)
//   ck_stack_batch  ck_stack_push_upmc + ck_stack_batch_pop_upmc, each batch
//                   reversed by the consumer to restore push order
// Waiting is the same for all: spin with a pause, yield after 64 spins.
// Placement is left to the OS by default. With PTS_BENCH_PIN=1 the consumer
// runs on CPU 0 and every producer on CPU 1 (in 2P1C the two producers then
// time-share one core); that removes migrations on an idle machine but makes
// things much worse when other work shares the machine, so it is opt-in.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "bench/sync/ck_candidates.h"
#include "sync/mpsc.h"

namespace {

constexpr uint32_t kBatch = 1u << 16;  // items per benchmark iteration

using Item = bench_item;

struct Waiter {
  unsigned spins = 0;
  void wait() {
    if (++spins < 64) {
      __builtin_ia32_pause();
    } else {
      spins = 0;
      sched_yield();
    }
  }
};

// With PTS_BENCH_PIN=1, pins the calling thread to one CPU (best effort).
void pin_to(unsigned cpu) {
  const char *pin = std::getenv("PTS_BENCH_PIN");
  if (pin == nullptr || std::strcmp(pin, "1") != 0) return;
  unsigned n = std::thread::hardware_concurrency();
  if (n < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % n, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// ---- candidates: push from any producer thread, pop from the consumer ----

struct PtsMpsc {
  pts__mpsc q;
  PtsMpsc(unsigned, uint32_t) { pts__mpsc_init(&q); }
  void push(unsigned, Item *it, uint64_t) { pts__mpsc_push(&q, &it->mpsc); }
  Item *pop() {
    pts__mpsc_node *n = pts__mpsc_pop(&q);
    if (n == nullptr) return nullptr;
    return reinterpret_cast<Item *>(reinterpret_cast<char *>(n) -
                                    offsetof(Item, mpsc));
  }
};

template <bench_ck_kind K>
struct Ck {
  bench_ck *b;
  Ck(unsigned producers, uint32_t per) : b(bench_ck_new(K, producers, per)) {}
  ~Ck() { bench_ck_free(b); }
  Ck(const Ck &) = delete;
  Ck &operator=(const Ck &) = delete;
  void push(unsigned p, Item *it, uint64_t iter) {
    bench_ck_push(b, p, it, iter);
  }
  Item *pop() { return bench_ck_pop(b); }
};
using CkFifoMpmc = Ck<BENCH_CK_FIFO_MPMC>;
using CkRingMpsc = Ck<BENCH_CK_RING_MPSC>;
using CkStackBatch = Ck<BENCH_CK_STACK>;

// ---- the harness ----

template <typename Q>
void BM_Stream(benchmark::State &state) {
  const unsigned producers = static_cast<unsigned>(state.range(0));
  const uint32_t per = kBatch / producers;
  Q q(producers, per);
  std::vector<std::unique_ptr<Item[]>> items;
  for (unsigned p = 0; p < producers; p++) {
    items.emplace_back(new Item[per]);
    for (uint32_t i = 0; i < per; i++) {
      items[p][i].producer = p;
      items[p][i].seq = i;
    }
  }
  // go: the iteration number producers may start (release by the consumer
  // after it has drained the previous one, so items are free to reuse).
  alignas(64) std::atomic<uint64_t> go{0};
  alignas(64) std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (unsigned p = 0; p < producers; p++) {
    threads.emplace_back([&, p] {
      pin_to(1);
      uint64_t seen = 0;
      for (;;) {
        Waiter w;
        uint64_t g;
        while ((g = go.load(std::memory_order_acquire)) == seen) {
          if (stop.load(std::memory_order_relaxed)) return;
          w.wait();
        }
        seen = g;
        for (uint32_t i = 0; i < per; i++) q.push(p, &items[p][i], g);
      }
    });
  }

  pin_to(0);
  uint64_t errors = 0, iter = 0, checksum = 0;
  std::vector<uint64_t> next(producers);
  for (auto _ : state) {
    for (auto &n : next) n = 0;
    go.store(++iter, std::memory_order_release);
    Waiter w;
    for (uint32_t got = 0; got < kBatch;) {
      Item *it = q.pop();
      if (it == nullptr) {
        w.wait();
        continue;
      }
      if (it->seq != next[it->producer]++) errors++;
      checksum += it->seq;
      got++;
    }
  }
  stop.store(true, std::memory_order_relaxed);
  for (auto &t : threads) t.join();
  benchmark::DoNotOptimize(checksum);
  if (errors != 0) state.SkipWithError("items lost or out of order");
  const double n = static_cast<double>(state.iterations()) * kBatch;
  state.SetItemsProcessed(static_cast<int64_t>(n));
  // Seconds per item of wall time: printed with an SI prefix ("40.8n" is
  // 40.8 ns per item).
  state.counters["per_item"] = benchmark::Counter(
      n, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

#define STREAM(Q)                                                    \
  BENCHMARK_TEMPLATE(BM_Stream, Q)                                   \
      ->ArgName("producers")                                         \
      ->Arg(1)                                                       \
      ->Arg(2)                                                       \
      ->UseRealTime()                                                \
      ->Unit(benchmark::kMillisecond)

STREAM(PtsMpsc);
STREAM(CkFifoMpmc);
STREAM(CkRingMpsc);
STREAM(CkStackBatch);

}  // namespace

BENCHMARK_MAIN();
