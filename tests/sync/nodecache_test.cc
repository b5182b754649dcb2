// tests/sync/nodecache_test.cc: per-thread caches of command blocks
// (sync/nodecache.c).
//
// Reuse on the same thread, return from a consumer thread to the producer's
// cache (a stream allocates nothing once warm), adoption of an exited
// thread's cache, the size classes, the cap on a burst, and a stress run
// that hands blocks across threads through the MPSC queue with their
// contents checked, and the trim delay that lets a stream deeper than the cap
// recycle its blocks. Under AddressSanitizer the cache is bypassed (every get
// mallocs, every put frees) and the tests check that instead.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "sync/mpsc.h"
#include "sync/nodecache.h"

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kBypass = true;
#else
constexpr bool kBypass = false;
#endif

TEST(NodeCache, SizeClasses) {
  void *a = pts__node_get(1);
  void *b = pts__node_get(PTS__NODE_SMALL);
  void *c = pts__node_get(PTS__NODE_SMALL + 1);
  void *d = pts__node_get(PTS__NODE_LARGE);
  ASSERT_TRUE(a && b && c && d);
  EXPECT_EQ(pts__node_get(PTS__NODE_LARGE + 1), nullptr);
  memset(b, 1, PTS__NODE_SMALL);  // the whole size is usable (ASan checks)
  memset(d, 2, PTS__NODE_LARGE);
  for (void *p : {a, b, c, d}) pts__node_put(p);
  pts__node_put(nullptr);
}

TEST(NodeCache, SameThreadReusesWithoutMalloc) {
  std::vector<void *> v;
  for (int i = 0; i < 100; i++) v.push_back(pts__node_get(64));
  for (void *p : v) pts__node_put(p);
  uint64_t m0 = pts__node_mallocs();
  for (int round = 0; round < 10; round++) {
    v.clear();
    for (int i = 0; i < 100; i++) v.push_back(pts__node_get(64));
    for (void *p : v) pts__node_put(p);
  }
  EXPECT_EQ(pts__node_mallocs() - m0, kBypass ? 1000u : 0u);
}

// A producer thread gets blocks, a consumer thread puts them: once the first
// round has come back, later rounds allocate nothing.
TEST(NodeCache, ConsumerReturnsBlocksToTheProducersCache) {
  const int kRounds = 5, kPer = 1000;
  std::vector<void *> handoff;
  std::atomic<int> phase{0};
  std::vector<uint64_t> mallocs;
  std::thread producer([&] {
    for (int r = 0; r < kRounds; r++) {
      uint64_t m0 = pts__node_mallocs();
      std::vector<void *> v;
      for (int i = 0; i < kPer; i++) v.push_back(pts__node_get(100));
      mallocs.push_back(pts__node_mallocs() - m0);
      handoff = v;
      phase.store(2 * r + 1);
      while (phase.load() != 2 * r + 2) std::this_thread::yield();
    }
  });
  std::thread consumer([&] {
    for (int r = 0; r < kRounds; r++) {
      while (phase.load() != 2 * r + 1) std::this_thread::yield();
      for (void *p : handoff) pts__node_put(p);
      pts__node_flush();
      phase.store(2 * r + 2);
    }
  });
  producer.join();
  consumer.join();
  ASSERT_EQ(mallocs.size(), static_cast<size_t>(kRounds));
  for (int r = 1; r < kRounds; r++) EXPECT_EQ(mallocs[r], kBypass ? kPer : 0u) << "round " << r;
}

// A consumer that exits with a partial batch (fewer than the 32 blocks that
// trigger a flush) still hands it back: its exit hook flushes.
TEST(NodeCache, AnExitingConsumerFlushesItsPartialBatch) {
  std::vector<void *> v;
  for (int i = 0; i < 5; i++) v.push_back(pts__node_get(16));
  std::thread consumer([&] {
    for (void *p : v) pts__node_put(p);  // no pts__node_flush()
  });
  consumer.join();
  uint64_t m0 = pts__node_mallocs();
  std::vector<void *> again;
  for (int i = 0; i < 5; i++) again.push_back(pts__node_get(16));
  EXPECT_EQ(pts__node_mallocs() - m0, kBypass ? 5u : 0u);
  for (void *p : again) pts__node_put(p);
}

TEST(NodeCache, AnExitedThreadsCacheIsAdoptedWithItsBlocks) {
  std::vector<void *> blocks;
  std::thread a([&] {
    for (int i = 0; i < 50; i++) blocks.push_back(pts__node_get(8));
  });
  a.join();  // a's cache is now an orphan; its blocks are still out
  for (void *p : blocks) pts__node_put(p);
  pts__node_flush();
  uint64_t m0 = pts__node_mallocs();
  std::thread b([&] {
    // b adopts an orphan cache (a's, or another test thread's): whatever it
    // adopted, its blocks came back, so b's first gets are reuses as long as
    // the orphan has any. At least a's 50 are somewhere in the orphans.
    std::vector<void *> v;
    for (int i = 0; i < 50; i++) v.push_back(pts__node_get(8));
    for (void *p : v) pts__node_put(p);
  });
  b.join();
  if (kBypass) {
    EXPECT_EQ(pts__node_mallocs() - m0, 50u);
  } else {
    EXPECT_LT(pts__node_mallocs() - m0, 50u);
  }
}

// A consumer thread: once the producer's burst is out (phase 1), gives every
// block back from its own thread, then lets the producer go on (phase 2).
std::thread give_back_on_another_thread(std::vector<void *> &v, std::atomic<int> &phase) {
  return std::thread([&v, &phase] {
    while (phase.load() != 1) std::this_thread::yield();
    for (void *p : v) pts__node_put(p);
    pts__node_flush();
    phase.store(2);
  });
}

// Sets the trim delay for one test and restores the default after it.
struct TrimDelay {
  explicit TrimDelay(uint64_t ns) { pts__node_set_trim_delay_ns(ns); }
  ~TrimDelay() { pts__node_set_trim_delay_ns(1000000000u); }
};

TEST(NodeCache, ABurstBeyondTheCapShrinksBackToIt) {
  TrimDelay once_over(0);  // the burst is over at once
  const size_t kBurst = PTS__NODE_CACHE_MAX + 5000;
  std::vector<void *> v;
  v.reserve(kBurst);
  uint64_t live0 = pts__node_live();
  std::thread producer([&] {
    for (size_t i = 0; i < kBurst; i++) v.push_back(pts__node_get(200));
  });
  producer.join();  // note: the producer's cache becomes an orphan
  uint64_t live_burst = pts__node_live();
  std::thread consumer([&] {
    for (void *p : v) pts__node_put(p);
    pts__node_flush();
  });
  consumer.join();
  if (kBypass) {
    EXPECT_EQ(pts__node_live(), live0);  // every put freed
    return;
  }
  // The thread that adopts the orphan takes the returns: the surplus over
  // the cap is freed as it comes back. The cache held the burst's kBurst
  // blocks, and more if the producer adopted an earlier test's cache: it
  // ends with the cap (one block in hand), so at least this many went.
  std::thread again([&] {
    void *p = pts__node_get(200);
    pts__node_put(p);
  });
  again.join();
  EXPECT_GE(live_burst - pts__node_live(), kBurst - PTS__NODE_CACHE_MAX - 1);
}

// A stream deeper than the cap that goes on (here a second burst before the
// trim delay) reuses every block that came back: freeing the surplus as it
// returns and allocating again for the next posts was the old policy's
// churn.
TEST(NodeCache, ABurstBeyondTheCapRepeatedSoonReusesItsBlocks) {
  TrimDelay never(UINT64_MAX);
  const size_t kBurst = PTS__NODE_CACHE_MAX + 5000;
  std::vector<void *> v;
  v.reserve(kBurst);
  std::atomic<int> phase{0};
  uint64_t second_mallocs = 0;
  std::thread producer([&] {
    for (size_t i = 0; i < kBurst; i++) v.push_back(pts__node_get(200));
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    uint64_t m0 = pts__node_mallocs();
    for (size_t i = 0; i < kBurst; i++) v[i] = pts__node_get(200);
    second_mallocs = pts__node_mallocs() - m0;
    for (void *p : v) pts__node_put(p);
  });
  std::thread consumer = give_back_on_another_thread(v, phase);
  consumer.join();
  producer.join();
  if (kBypass) {
    EXPECT_EQ(second_mallocs, kBurst);
  } else {
    EXPECT_EQ(second_mallocs, 0u);
  }
}

// Bursts that reuse every block, each less than the delay after the
// last: the free list runs dry in each, which is need enough, so the third
// burst allocates nothing though the last malloc was longer ago than the
// delay (a rule counting only mallocs trimmed there and allocated 5,000).
std::atomic<uint64_t> fake_now{0};
uint64_t fake_clock() { return fake_now.load(); }

TEST(NodeCache, BurstsThatReuseEveryBlockKeepThemPastTheDelay) {
  TrimDelay delay(1000);
  pts__node_set_clock(fake_clock);
  fake_now.store(1);
  const size_t kBurst = PTS__NODE_CACHE_MAX + 5000;
  std::vector<void *> v(kBurst);
  std::atomic<int> turn{0};  // even: the producer's, odd: the consumer's
  uint64_t third_mallocs = 0;
  std::thread producer([&] {
    for (int round = 0; round < 3; round++) {
      fake_now.store(1 + 600 * static_cast<uint64_t>(round));
      while (turn.load() != 2 * round) std::this_thread::yield();
      uint64_t m0 = pts__node_mallocs();
      for (size_t i = 0; i < kBurst; i++) v[i] = pts__node_get(200);
      if (round == 2) third_mallocs = pts__node_mallocs() - m0;
      turn.store(2 * round + 1);
    }
  });
  std::thread consumer([&] {
    for (int round = 0; round < 3; round++) {
      while (turn.load() != 2 * round + 1) std::this_thread::yield();
      for (void *p : v) pts__node_put(p);
      pts__node_flush();
      turn.store(2 * round + 2);
    }
  });
  producer.join();
  consumer.join();
  pts__node_set_clock(nullptr);
  if (kBypass) {
    EXPECT_EQ(third_mallocs, kBurst);
  } else {
    EXPECT_EQ(third_mallocs, 0u);
  }
}

// A burst taken back whole within the delay (the thread still posting)
// leaves its surplus on the free list; once the delay has passed, the
// thread's next gets give that surplus back, though its free list never
// runs dry.
TEST(NodeCache, ABurstKeptOnTheFreeListShrinksOnceTheDelayHasPassed) {
  const size_t kBurst = PTS__NODE_CACHE_MAX + 5000;
  std::vector<void *> v;
  v.reserve(kBurst);
  std::atomic<int> phase{0};
  uint64_t before = 0, after = 0;
  {
    TrimDelay never(UINT64_MAX);
    std::thread producer([&] {
      for (size_t i = 0; i < kBurst; i++) v.push_back(pts__node_get(200));
      phase.store(1);
      while (phase.load() != 2) std::this_thread::yield();
      pts__node_put(pts__node_get(200));  // takes the returns back whole
      pts__node_set_trim_delay_ns(0);      // the delay has passed
      before = pts__node_live();
      for (int i = 0; i < 512; i++) pts__node_put(pts__node_get(200));
      after = pts__node_live();
    });
    std::thread consumer = give_back_on_another_thread(v, phase);
    consumer.join();
    producer.join();
  }
  if (kBypass) {  // nothing cached: each get mallocs and each put frees
    EXPECT_EQ(before, after);
    return;
  }
  // The cache held at least kBurst blocks (more if it adopted an orphan's);
  // it is back to the cap. Without the free list's trim only the 512 puts
  // would each free one.
  EXPECT_GE(before - after, kBurst - PTS__NODE_CACHE_MAX - 600);
}

// Blocks cross threads through the MPSC queue, as inbox commands do: each
// producer writes (producer, seq) into its block; the consumer checks every
// block arrives once, in order per producer, with its contents intact, and
// puts it back for the producer to reuse.
struct Msg {
  pts__mpsc_node node;
  int producer;
  long seq;
  char pad[64];
};

TEST(NodeCache, StressBlocksCrossThreadsIntact) {
  const int P = 2;
  const long N = 100000;
  pts__mpsc q;
  pts__mpsc_init(&q);
  std::atomic<int> done{0};
  uint64_t m0 = pts__node_mallocs();
  std::vector<std::thread> ps;
  for (int p = 0; p < P; p++) {
    ps.emplace_back([&, p] {
      for (long i = 0; i < N; i++) {
        Msg *m = static_cast<Msg *>(pts__node_get(sizeof(Msg)));
        ASSERT_NE(m, nullptr);
        m->producer = p;
        m->seq = i;
        memset(m->pad, static_cast<int>(i & 0x7f), sizeof m->pad);
        pts__mpsc_push(&q, &m->node);
      }
      done.fetch_add(1);
    });
  }
  std::vector<long> next(P, 0);
  long total = 0;
  while (total < P * N) {
    pts__mpsc_node *n = pts__mpsc_pop(&q);
    if (n == nullptr) continue;
    Msg *m = reinterpret_cast<Msg *>(n);
    ASSERT_EQ(m->seq, next[m->producer]) << "producer " << m->producer;
    next[m->producer]++;
    for (char c : m->pad) ASSERT_EQ(c, static_cast<char>(m->seq & 0x7f));
    pts__node_put(m);
    total++;
  }
  pts__node_flush();
  for (auto &t : ps) t.join();
  EXPECT_EQ(total, P * N);
  // Recycling worked: far fewer mallocs than posts (each producer's backlog
  // at most), unless the cache is bypassed.
  if (!kBypass) {
    EXPECT_LT(pts__node_mallocs() - m0, static_cast<uint64_t>(P * N));
  }
}

}  // namespace
