// tests/sync/parker_test.cc: the futex parker (sync/parker.c).
//
// Covers: a consumer parked with no deadline wakes on push + unpark (one wake
// syscall); no syscall at all while the consumer runs; an unpark between
// prepare and park makes park return at once without a syscall; an unpark
// while running is not remembered by the next prepare; timed parks return at
// (not before) their deadline; spurious futex wakes and EINTR do not end a
// park early.
#include <gtest/gtest.h>

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "sync_test_util.h"

using pts_sync_test::Cmd;
using pts_sync_test::cmd_of;
using pts_sync_test::now_ns;

namespace {

const uint64_t kMs = 1000000ull;

// Waits until the consumer is committed to sleeping; a short extra pause
// lets it actually enter futex_wait (the test is correct either way, it only
// tests more when the consumer is really asleep).
static bool wait_parked(const pts__parker *p) {
  uint64_t start = now_ns();
  while (!pts__parker_is_parked(p)) {
    if (now_ns() - start > 3000 * kMs) return false;
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return true;
}

// Runs the consumer side of the inbox protocol once: prepare, check, park
// with no deadline, then pop. Returns the popped node.
static pts__mpsc_node *consume_one_forever(pts__mpsc *q, pts__parker *p) {
  for (;;) {
    pts__mpsc_node *n = pts__mpsc_pop(q);
    if (n != nullptr) return n;
    if (!pts__mpsc_is_empty(q)) continue;
    pts__parker_prepare(p);
    if (!pts__mpsc_is_empty(q)) {
      pts__parker_cancel(p);
      continue;
    }
    pts__parker_park(p, PTS__PARK_FOREVER);
  }
}

static void force_wake(pts__parker *p) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&p->state),
          FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, nullptr, nullptr, 0);
}

// Joins a consumer future within 5 s; if it is stuck (a lost wake-up), wakes
// it by force so the test fails instead of hanging.
template <typename T>
static bool join_within(std::future<T> &f, pts__mpsc *q, pts__parker *p,
                        Cmd *rescue) {
  if (f.wait_for(std::chrono::seconds(5)) == std::future_status::ready) {
    return true;
  }
  pts__mpsc_push(q, &rescue->node);
  pts__parker_unpark(p);
  // Also wake the futex directly, in case unpark itself is what is broken,
  // so the test fails rather than hangs.
  force_wake(p);
  f.wait();
  return false;
}

TEST(Parker, ParkedConsumerWakesOnPush) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  pts__parker p;
  pts__parker_init(&p);
  Cmd cmd, rescue;
  auto consumer = std::async(std::launch::async,
                             [&] { return consume_one_forever(&q, &p); });
  ASSERT_TRUE(wait_parked(&p));
  pts__mpsc_push(&q, &cmd.node);
  pts__parker_unpark(&p);
  ASSERT_TRUE(join_within(consumer, &q, &p, &rescue)) << "wake-up lost";
  EXPECT_EQ(consumer.get(), &cmd.node);
  EXPECT_EQ(pts__parker_wake_syscalls(&p), 1u);
  EXPECT_FALSE(pts__parker_is_parked(&p));
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
}

TEST(Parker, RepeatedParkWakeRounds) {
  // Many rounds of park / push+unpark with the consumer in different phases
  // (running, preparing, asleep): every push is consumed, none hangs.
  const int rounds = pts_sync_test::stress_long() ? 20000 : 500;
  pts__mpsc q;
  pts__mpsc_init(&q);
  pts__parker p;
  pts__parker_init(&p);
  std::atomic<int> consumed{0};
  Cmd cmd;
  auto consumer = std::async(std::launch::async, [&] {
    for (int i = 0; i < rounds; i++) {
      pts__mpsc_node *n = consume_one_forever(&q, &p);
      cmd_of(n)->busy.store(false, std::memory_order_release);
      consumed.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int i = 0; i < rounds; i++) {
    while (cmd.busy.load(std::memory_order_acquire)) std::this_thread::yield();
    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    cmd.busy.store(true, std::memory_order_relaxed);
    pts__mpsc_push(&q, &cmd.node);
    pts__parker_unpark(&p);
  }
  ASSERT_EQ(consumer.wait_for(std::chrono::seconds(10)),
            std::future_status::ready)
      << "wake-up lost after " << consumed.load() << " rounds";
  EXPECT_EQ(consumed.load(), rounds);
  EXPECT_LE(pts__parker_wake_syscalls(&p), static_cast<uint64_t>(rounds));
}

TEST(Parker, NoWakeSyscallWhileConsumerRuns) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  pts__parker p;
  pts__parker_init(&p);
  std::vector<Cmd> cmds(1000);
  std::thread producer([&] {
    for (auto &c : cmds) {
      pts__mpsc_push(&q, &c.node);
      pts__parker_unpark(&p);
    }
  });
  producer.join();
  EXPECT_EQ(pts__parker_wake_syscalls(&p), 0u);
  for (auto &c : cmds) ASSERT_EQ(pts__mpsc_pop(&q), &c.node);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
}

TEST(Parker, UnparkBetweenPrepareAndParkReturnsAtOnce) {
  pts__parker p;
  pts__parker_init(&p);
  pts__parker_prepare(&p);
  std::thread([&] { pts__parker_unpark(&p); }).join();
  uint64_t t = now_ns();
  pts__parker_park(&p, PTS__PARK_FOREVER);
  EXPECT_LT(now_ns() - t, 1000 * kMs);
  EXPECT_EQ(pts__parker_wake_syscalls(&p), 0u);  // a CAS, not a syscall
  EXPECT_FALSE(pts__parker_is_parked(&p));
}

TEST(Parker, UnparkWhileRunningIsNotRemembered) {
  // Work published before prepare is found by the consumer's own check, so
  // an unpark while RUNNING need not (and does not) carry over.
  pts__parker p;
  pts__parker_init(&p);
  pts__parker_unpark(&p);
  pts__parker_prepare(&p);
  uint64_t t = now_ns();
  pts__parker_park(&p, 20 * kMs);
  EXPECT_GE(now_ns() - t, 20 * kMs);
  EXPECT_EQ(pts__parker_wake_syscalls(&p), 0u);
}

TEST(Parker, CancelThenUnparkIsNotRemembered) {
  pts__parker p;
  pts__parker_init(&p);
  pts__parker_prepare(&p);
  pts__parker_cancel(&p);
  pts__parker_unpark(&p);
  EXPECT_EQ(pts__parker_wake_syscalls(&p), 0u);
  pts__parker_prepare(&p);
  uint64_t t = now_ns();
  pts__parker_park(&p, 20 * kMs);
  EXPECT_GE(now_ns() - t, 20 * kMs);
}

TEST(Parker, TimedParkReturnsAfterDeadline) {
  pts__parker p;
  pts__parker_init(&p);
  for (uint64_t ms : {1ull, 30ull, 100ull}) {
    pts__parker_prepare(&p);
    uint64_t t = now_ns();
    pts__parker_park(&p, ms * kMs);
    uint64_t took = now_ns() - t;
    EXPECT_GE(took, ms * kMs);
    EXPECT_LT(took, ms * kMs + 2000 * kMs);  // generous: tsan, 2 cores
    EXPECT_FALSE(pts__parker_is_parked(&p));
  }
  EXPECT_EQ(pts__parker_wake_syscalls(&p), 0u);
}

TEST(Parker, ZeroTimeoutReturnsAtOnce) {
  pts__parker p;
  pts__parker_init(&p);
  pts__parker_prepare(&p);
  uint64_t t = now_ns();
  pts__parker_park(&p, 0);
  EXPECT_LT(now_ns() - t, 1000 * kMs);
  EXPECT_FALSE(pts__parker_is_parked(&p));
}

TEST(Parker, HugeTimeoutActsAsForever) {
  // A relative timeout whose absolute deadline would overflow must not wrap
  // into the past.
  pts__parker p;
  pts__parker_init(&p);
  auto consumer = std::async(std::launch::async, [&] {
    pts__parker_prepare(&p);
    pts__parker_park(&p, UINT64_MAX - 1);
  });
  ASSERT_TRUE(wait_parked(&p));
  EXPECT_EQ(consumer.wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout);
  pts__parker_unpark(&p);
  EXPECT_EQ(consumer.wait_for(std::chrono::seconds(5)),
            std::future_status::ready);
  EXPECT_EQ(pts__parker_wake_syscalls(&p), 1u);
}

TEST(Parker, SpuriousFutexWakeDoesNotEndPark) {
  pts__parker p;
  pts__parker_init(&p);
  std::atomic<bool> returned{false};
  std::thread consumer([&] {
    pts__parker_prepare(&p);
    pts__parker_park(&p, PTS__PARK_FOREVER);
    returned.store(true);
  });
  ASSERT_TRUE(wait_parked(&p));
  for (int i = 0; i < 5; i++) {  // wakes with no state change: spurious
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&p.state),
            FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, nullptr, nullptr, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(returned.load());
  EXPECT_TRUE(pts__parker_is_parked(&p));
  pts__parker_unpark(&p);
  consumer.join();
  EXPECT_TRUE(returned.load());
}

static void on_sigusr1(int) {}

TEST(Parker, SignalInterruptsDoNotEndParkEarly) {
  struct sigaction sa = {}, old = {};
  sa.sa_handler = on_sigusr1;
  sa.sa_flags = 0;  // no SA_RESTART: futex_wait returns EINTR
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);

  pts__parker p;
  pts__parker_init(&p);
  std::atomic<bool> returned{false};
  std::atomic<uint64_t> took{0};
  std::thread consumer([&] {
    pts__parker_prepare(&p);
    uint64_t t = now_ns();
    pts__parker_park(&p, 150 * kMs);  // timed: EINTR must not shorten it
    took.store(now_ns() - t);
    returned.store(true);
  });
  ASSERT_TRUE(wait_parked(&p));
  for (int i = 0; i < 5 && !returned.load(); i++) {
    pthread_kill(consumer.native_handle(), SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  consumer.join();
  EXPECT_GE(took.load(), 150 * kMs);
  EXPECT_EQ(pts__parker_wake_syscalls(&p), 0u);
  ASSERT_EQ(sigaction(SIGUSR1, &old, nullptr), 0);
}

}  // namespace
