// tests/sync/mpsc_test.cc: the MPSC inbox queue (sync/mpsc.c).
//
// Single-threaded: FIFO order, empty vs. "producer mid-push" (a push stopped
// by hand between its exchange and its link), immediate node reuse.
// Concurrent: 4 producers x 100,000 and 2 producers x 1 consumer, each
// producer cycling through a small pool of nodes so a node is pushed again as
// soon as the consumer hands it back (the reuse pattern that breaks queues
// with ABA bugs). The consumer checks every command arrives exactly once and,
// per producer, in push order. PTS_STRESS_LONG=1 multiplies the counts by 20.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "sync_test_util.h"

using pts_sync_test::Cmd;
using pts_sync_test::cmd_of;

namespace {

TEST(Mpsc, EmptyAfterInit) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
}

TEST(Mpsc, SingleThreadFifoAndEmptyAgain) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  Cmd c[5];
  for (int round = 0; round < 3; round++) {  // the stub is re-pushed each round
    for (int i = 0; i < 5; i++) {
      c[i].seq = static_cast<uint64_t>(i);
      pts__mpsc_push(&q, &c[i].node);
      EXPECT_FALSE(pts__mpsc_is_empty(&q));
    }
    for (int i = 0; i < 5; i++) {
      pts__mpsc_node *n = pts__mpsc_pop(&q);
      ASSERT_NE(n, nullptr);
      EXPECT_EQ(cmd_of(n), &c[i]);
    }
    EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
    EXPECT_TRUE(pts__mpsc_is_empty(&q));
  }
}

TEST(Mpsc, NodeReusedRightAfterPop) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  Cmd a, b;
  for (int i = 0; i < 100; i++) {
    pts__mpsc_push(&q, &a.node);
    ASSERT_EQ(pts__mpsc_pop(&q), &a.node);
    pts__mpsc_push(&q, &a.node);  // a again, then b behind it
    pts__mpsc_push(&q, &b.node);
    ASSERT_EQ(pts__mpsc_pop(&q), &a.node);
    ASSERT_EQ(pts__mpsc_pop(&q), &b.node);
    ASSERT_EQ(pts__mpsc_pop(&q), nullptr);
    ASSERT_TRUE(pts__mpsc_is_empty(&q));
  }
}

// Steps 1-2 of push (exchange) without step 3 (link): a producer preempted
// mid-push. The fields are std::atomic in C++ (sync/cacheline.h).
static pts__mpsc_node *begin_push(pts__mpsc *q, pts__mpsc_node *n) {
  n->next.store(nullptr, std::memory_order_relaxed);
  return q->head.exchange(n, std::memory_order_seq_cst);
}
static void end_push(pts__mpsc_node *prev, pts__mpsc_node *n) {
  prev->next.store(n, std::memory_order_release);
}

TEST(Mpsc, MidPushIntoEmptyQueueIsNotEmpty) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  Cmd a;
  pts__mpsc_node *prev = begin_push(&q, &a.node);
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  EXPECT_FALSE(pts__mpsc_is_empty(&q));  // consumer must retry, not sleep
  end_push(prev, &a.node);
  EXPECT_EQ(pts__mpsc_pop(&q), &a.node);
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
}

TEST(Mpsc, MidPushBehindAnItemHoldsItBack) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  Cmd a, b, c;
  pts__mpsc_push(&q, &a.node);
  pts__mpsc_node *prev = begin_push(&q, &b.node);
  // a cannot be handed out until b links to it (a->next is b's to write).
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  EXPECT_FALSE(pts__mpsc_is_empty(&q));
  pts__mpsc_push(&q, &c.node);  // a later push completes behind the gap
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  EXPECT_FALSE(pts__mpsc_is_empty(&q));
  end_push(prev, &b.node);
  EXPECT_EQ(pts__mpsc_pop(&q), &a.node);
  EXPECT_EQ(pts__mpsc_pop(&q), &b.node);
  EXPECT_EQ(pts__mpsc_pop(&q), &c.node);
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
}

TEST(Mpsc, MidPushWhileLastNodeIsAtTail) {
  // The consumer has taken everything but one node; a producer stops
  // mid-push behind it. pop must not hand out the last node (its next link
  // is still to be written) and must not call the queue empty.
  pts__mpsc q;
  pts__mpsc_init(&q);
  Cmd a, b, c;
  pts__mpsc_push(&q, &a.node);
  pts__mpsc_push(&q, &b.node);
  ASSERT_EQ(pts__mpsc_pop(&q), &a.node);  // tail is now b, the last node
  pts__mpsc_node *prev = begin_push(&q, &c.node);
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  EXPECT_FALSE(pts__mpsc_is_empty(&q));
  end_push(prev, &c.node);
  EXPECT_EQ(pts__mpsc_pop(&q), &b.node);
  EXPECT_EQ(pts__mpsc_pop(&q), &c.node);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
}

// pop_linked hands out a node only once its successor is linked, and
// leaves the last node (and a node whose successor is mid-push) to pop,
// without touching head: the queue stays consistent for pop after it.
TEST(Mpsc, PopLinkedLeavesTheLastNodeToPop) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  Cmd a, b, c;
  EXPECT_EQ(pts__mpsc_pop_linked(&q), nullptr);  // empty
  pts__mpsc_push(&q, &a.node);
  EXPECT_EQ(pts__mpsc_pop_linked(&q), nullptr);  // a is the last node
  pts__mpsc_node *head = q.head.load();
  EXPECT_EQ(head, &a.node);  // no stub pushed
  pts__mpsc_push(&q, &b.node);
  EXPECT_EQ(pts__mpsc_pop_linked(&q), &a.node);
  pts__mpsc_node *prev = begin_push(&q, &c.node);
  EXPECT_EQ(pts__mpsc_pop_linked(&q), nullptr);  // b's successor is mid-push
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  end_push(prev, &c.node);
  EXPECT_EQ(pts__mpsc_pop_linked(&q), &b.node);
  EXPECT_EQ(pts__mpsc_pop_linked(&q), nullptr);  // c is the last node
  EXPECT_EQ(pts__mpsc_pop(&q), &c.node);
  EXPECT_EQ(pts__mpsc_pop_linked(&q), nullptr);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
  for (int i = 0; i < 3; i++) {  // and again from the stub, reusing a
    pts__mpsc_push(&q, &a.node);
    pts__mpsc_push(&q, &b.node);
    EXPECT_EQ(pts__mpsc_pop_linked(&q), &a.node);
    EXPECT_EQ(pts__mpsc_pop(&q), &b.node);
    EXPECT_TRUE(pts__mpsc_is_empty(&q));
  }
}

// ---- concurrent ----

// One producer: pushes `count` commands numbered 0..count-1, cycling through
// `pool` nodes and waiting for the consumer to hand each one back.
static void produce(pts__mpsc *q, Cmd *pool, size_t pool_size, uint32_t id,
                    uint64_t count, pts__parker *wake) {
  for (uint64_t s = 0; s < count; s++) {
    Cmd *c = &pool[s % pool_size];
    // Acquire: pairs with the consumer's release, so its reads of the old
    // contents happen before our writes below.
    while (c->busy.load(std::memory_order_acquire)) std::this_thread::yield();
    c->producer = id;
    c->seq = s;
    c->busy.store(true, std::memory_order_relaxed);  // published by push
    pts__mpsc_push(q, &c->node);
    if (wake != nullptr) pts__parker_unpark(wake);
  }
}

struct Checker {
  explicit Checker(size_t producers) : next_seq(producers, 0) {}
  std::vector<uint64_t> next_seq;  // per producer: the seq expected next
  uint64_t received = 0;
  uint64_t errors = 0;

  void take(pts__mpsc_node *n) {
    Cmd *c = cmd_of(n);
    if (!c->busy.load(std::memory_order_relaxed)) errors++;  // popped twice
    if (c->producer >= next_seq.size() || c->seq != next_seq[c->producer]) {
      errors++;  // lost, duplicated or reordered
    } else {
      next_seq[c->producer]++;
    }
    received++;
    c->busy.store(false, std::memory_order_release);  // back to its pool
  }
};

// linked_first: the consumer tries pop_linked first, pop only when it
// gives nothing (the loop's stream pass, pts__loop_inbox_next).
static void run_spinning(size_t producers, uint64_t per_producer,
                         size_t pool_size, bool linked_first = false) {
  pts__mpsc q;
  pts__mpsc_init(&q);
  std::vector<std::vector<Cmd>> pools(producers);
  for (auto &p : pools) p = std::vector<Cmd>(pool_size);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < producers; i++) {
    threads.emplace_back(produce, &q, pools[i].data(), pool_size,
                         static_cast<uint32_t>(i), per_producer, nullptr);
  }
  Checker check(producers);
  uint64_t total = producers * per_producer;
  uint64_t mid_push_seen = 0;
  uint64_t linked = 0;
  while (check.received < total) {
    pts__mpsc_node *n = linked_first ? pts__mpsc_pop_linked(&q) : nullptr;
    if (n != nullptr) {
      linked++;
    } else {
      n = pts__mpsc_pop(&q);
    }
    if (n != nullptr) {
      check.take(n);
      continue;
    }
    if (!pts__mpsc_is_empty(&q)) mid_push_seen++;
    std::this_thread::yield();
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(pts__mpsc_pop(&q), nullptr);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
  EXPECT_EQ(check.errors, 0u);
  EXPECT_EQ(check.received, total);
  for (size_t i = 0; i < producers; i++) {
    EXPECT_EQ(check.next_seq[i], per_producer) << "producer " << i;
  }
  ::testing::Test::RecordProperty("mid_push_seen",
                                  static_cast<int>(mid_push_seen));
  if (linked_first) {
    EXPECT_GT(linked, 0u);
  }
}

TEST(MpscStress, FourProducersExactlyOncePerProducerFifo) {
  uint64_t n = pts_sync_test::stress_long() ? 2000000 : 100000;
  run_spinning(4, n, 8);
}

TEST(MpscStress, TwoProducersOneConsumer) {
  uint64_t n = pts_sync_test::stress_long() ? 4000000 : 200000;
  run_spinning(2, n, 4);
}

TEST(MpscStress, PopLinkedThenPopExactlyOncePerProducerFifo) {
  uint64_t n = pts_sync_test::stress_long() ? 2000000 : 100000;
  run_spinning(3, n, 8, true);
}

// The inbox as the loop uses it: the consumer parks when the queue is empty,
// producers push then unpark. A lost wake-up shows up as a park that runs to
// its 2 s timeout while producers are still posting.
TEST(MpscStress, TwoProducersParkingConsumerLosesNoWakeup) {
  const uint64_t per = pts_sync_test::stress_long() ? 1000000 : 50000;
  const uint64_t timeout = 2000000000ull;
  pts__mpsc q;
  pts__mpsc_init(&q);
  pts__parker p;
  pts__parker_init(&p);
  std::vector<Cmd> pool0(4), pool1(4);
  std::thread t0(produce, &q, pool0.data(), pool0.size(), 0u, per, &p);
  std::thread t1(produce, &q, pool1.data(), pool1.size(), 1u, per, &p);
  Checker check(2);
  uint64_t parks = 0, timeouts = 0, cancels = 0;
  while (check.received < 2 * per) {
    pts__mpsc_node *n = pts__mpsc_pop(&q);
    if (n != nullptr) {
      check.take(n);
      continue;
    }
    if (!pts__mpsc_is_empty(&q)) {  // a producer is mid-push: retry
      std::this_thread::yield();
      continue;
    }
    pts__parker_prepare(&p);
    if (!pts__mpsc_is_empty(&q)) {
      pts__parker_cancel(&p);
      cancels++;
      continue;
    }
    uint64_t t = pts_sync_test::now_ns();
    pts__parker_park(&p, timeout);
    parks++;
    if (pts_sync_test::now_ns() - t >= timeout) timeouts++;
  }
  t0.join();
  t1.join();
  EXPECT_EQ(timeouts, 0u) << "a park slept through posted work";
  EXPECT_EQ(check.errors, 0u);
  EXPECT_EQ(check.next_seq[0], per);
  EXPECT_EQ(check.next_seq[1], per);
  EXPECT_TRUE(pts__mpsc_is_empty(&q));
  // At most one wake syscall per park, and never one per post.
  EXPECT_LE(pts__parker_wake_syscalls(&p), parks);
  ::testing::Test::RecordProperty("parks", static_cast<int>(parks));
  ::testing::Test::RecordProperty("cancels", static_cast<int>(cancels));
  ::testing::Test::RecordProperty(
      "wakes", static_cast<int>(pts__parker_wake_syscalls(&p)));
}

}  // namespace
