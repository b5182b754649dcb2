// tests/agents/stress_test.cc: cross-thread aborts racing task starts, with
// exactly-once accounting (ran + aborted == posted; every callback and every
// done once, with matching statuses), per-producer FIFO of cross-thread
// posts, and no enqueue order reused or skipped (the orders the target loop
// handed out equal the tasks it enqueued, and tasks ran in posting order).
//
// Sizes: about 20,000 posts in total under ThreadSanitizer (short CI run),
// 100,000 in the plain and asan builds; with PTS_STRESS_LONG=1, 1,200,000
// posts each with its own controller (over 1,000,000 cross-thread aborts)
// plus 1,000,000 FIFO posts.
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/agents/util.h"

namespace ptstest {
namespace {

using StressTest = AgentsTest;

size_t total_posts(size_t tsan_size) {
  if (stress_long()) return 1000000;
  return under_tsan() ? tsan_size : 5 * tsan_size;
}

struct Slot {
  std::atomic<int> ran{0}, aborted{0}, other{0};
  std::atomic<int> done{0}, done_status{1};
};

struct Ledger {
  std::vector<Slot> slots;
  std::vector<uint32_t> run_order;  // written on the target's thread only
  std::atomic<size_t> done{0};
  std::atomic<size_t> aborts_sent{0};
  explicit Ledger(size_t n) : slots(n) { run_order.reserve(n); }
};

struct Ticket {
  Ledger *l;
  uint32_t id;
};

pts_value ticket_cb(void *data, int status) {
  auto *t = static_cast<Ticket *>(data);
  Slot &s = t->l->slots[t->id];
  if (status == 0) {
    s.ran.fetch_add(1);
    t->l->run_order.push_back(t->id);
    if (t->id == 0) {
      // The first task holds the target's thread until an abort is sent:
      // that abort is applied before the next start, and the controller it
      // aborts has tasks queued (posted before it went into the ring), so at
      // least one abort meets queued tasks however the threads are
      // scheduled (on a loaded host the aborter once sent none in time).
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (t->l->aborts_sent.load() == 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
    }
    busy_ns(2000);  // widen the window between two starts of one controller
  } else if (status == PTS_EABORT) {
    s.aborted.fetch_add(1);
  } else {
    s.other.fetch_add(1);
  }
  return pts_int(t->id);
}

void ticket_done(void *data, int status, pts_value v) {
  auto *t = static_cast<Ticket *>(data);
  Slot &s = t->l->slots[t->id];
  s.done_status.store(status);
  if (status == 0) {
    EXPECT_TRUE(v.kind == PTS_VALUE_INT && v.u.i == t->id);
  }
  s.done.fetch_add(1);
  t->l->done.fetch_add(1);
}

// A bounded single-producer single-consumer ring of controllers to abort.
struct Ring {
  static constexpr size_t kCap = 1024;
  pts_remote_controller *items[kCap];
  std::atomic<size_t> head{0}, tail{0};
  bool push(pts_remote_controller *rc) {
    size_t t = tail.load(std::memory_order_relaxed);
    if (t - head.load(std::memory_order_acquire) == kCap) return false;
    items[t % kCap] = rc;
    tail.store(t + 1, std::memory_order_release);
    return true;
  }
  pts_remote_controller *pop() {
    size_t h = head.load(std::memory_order_relaxed);
    if (h == tail.load(std::memory_order_acquire)) return nullptr;
    pts_remote_controller *rc = items[h % kCap];
    head.store(h + 1, std::memory_order_release);
    return rc;
  }
};

void ignore_status(void *, int) {}

uint64_t take_order(pts_agent *a) {
  std::atomic<uint64_t> order{0};
  on_agent_thread(a, [&] { order.store(pts_test_take_order(pts_agent_loop(a))); });
  return order.load();
}

// Thread X aborts controllers while the target's thread starts their tasks.
TEST_F(StressTest, CrossThreadAbortsRaceTaskStarts) {
  // Long run: one controller per task, so about 1,050,000 aborts race starts.
  const size_t n = stress_long() ? 1200000 : total_posts(12000);
  const size_t per_controller = stress_long() ? 1 : 4;
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT), {agent_opts("target", 0)}));
  pts_agent *target = agent(0);
  Ledger l(n);
  std::vector<Ticket> tickets(n);
  Ring ring;
  std::atomic<bool> producing{true};
  std::atomic<size_t> &aborts = l.aborts_sent;
  std::thread aborter([&] {
    uint64_t x = 88172645463325252ull;  // xorshift64 (Marsaglia 2003)
    for (;;) {
      pts_remote_controller *rc = ring.pop();
      if (rc == nullptr) {
        if (!producing.load()) {
          rc = ring.pop();
          if (rc == nullptr) break;
        } else {
          std::this_thread::yield();
          continue;
        }
      }
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      // A random short delay so the abort lands anywhere around the starts;
      // one controller in eight is never aborted.
      for (uint64_t spin = (x >> 8) % 4096; spin > 0; spin--) __asm__ volatile("" ::: "memory");
      if (x % 8 != 0) {
        EXPECT_EQ(0, pts_remote_controller_abort(rc, nullptr, ignore_status, nullptr));
        aborts.fetch_add(1);
      }
      pts_remote_controller_unref(rc);
    }
  });
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  for (size_t i = 0; i < n; i += per_controller) {
    pts_remote_controller *rc;
    ASSERT_EQ(0, pts_remote_controller_new_async(target, PTS_PRIORITY_USER_VISIBLE, &rc));
    po.controller = rc;
    for (size_t j = i; j < i + per_controller && j < n; j++) {
      tickets[j] = Ticket{&l, static_cast<uint32_t>(j)};
      ASSERT_EQ(0, pts_agent_post_task(target, &po, ticket_cb, &tickets[j], ticket_done,
                                       &tickets[j], nullptr));
    }
    while (!ring.push(rc)) std::this_thread::yield();
    // A bounded backlog, so aborts meet tasks queued or about to start
    // rather than all far ahead or all long done.
    while (i + per_controller > l.done.load() + 48) std::this_thread::yield();
  }
  producing.store(false);
  aborter.join();
  ASSERT_EQ(0, pts_agent_drain(target));
  size_t ran = 0, aborted = 0;
  for (size_t i = 0; i < n; i++) {
    Slot &s = l.slots[i];
    ASSERT_EQ(1, s.ran.load() + s.aborted.load()) << "task " << i;
    ASSERT_EQ(0, s.other.load()) << "task " << i;
    ASSERT_EQ(1, s.done.load()) << "task " << i;
    ASSERT_EQ(s.ran.load() ? 0 : PTS_EABORT, s.done_status.load()) << "task " << i;
    ran += s.ran.load();
    aborted += s.aborted.load();
  }
  EXPECT_EQ(n, ran + aborted);
  EXPECT_GT(ran, 0u);
  EXPECT_GT(aborted, 0u);
  // Controllers whose abort landed between two of their tasks' starts.
  size_t split = 0;
  for (size_t i = 0; i < n; i += per_controller) {
    size_t r = 0, k = 0;
    for (size_t j = i; j < i + per_controller && j < n; j++, k++) r += l.slots[j].ran.load();
    split += r > 0 && r < k;
  }
  printf("posted %zu ran %zu aborted %zu, aborts sent %zu, controllers split by their abort %zu\n",
         n, ran, aborted, aborts.load(), split);
  if (stress_long()) {
    EXPECT_GE(aborts.load(), 1000000u);
  }
  // One producer: the tasks that ran, ran in posting order.
  for (size_t i = 1; i < l.run_order.size(); i++)
    ASSERT_LT(l.run_order[i - 1], l.run_order[i]);
  // Enqueue orders: the loop took one per task enqueued (ran, or aborted
  // after it was queued) and nothing else; the probe takes one, then reads.
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(target, &st));
  uint64_t next = take_order(target);
  uint64_t enqueued = next - 2;  // orders start at 1; the probe took one
  EXPECT_GE(enqueued, ran);
  EXPECT_LE(enqueued, n);
  EXPECT_EQ(n, pts_test_agent_posts(target, 0) + pts_test_agent_posts(target, 1));
  EXPECT_EQ(enqueued, pts_test_agent_posts(target, 0));
  EXPECT_EQ(0u, st.inbox_depth);
  ShutdownPool();
  RecordProperty("ran", static_cast<int>(ran));
  RecordProperty("aborted", static_cast<int>(aborted));
}

struct FifoRec {
  std::vector<std::pair<int, uint32_t>> seen;  // target's thread only
};

struct FifoTicket {
  FifoRec *r;
  int producer;
  uint32_t seq;
};

pts_value fifo_cb(void *data, int status) {
  auto *t = static_cast<FifoTicket *>(data);
  if (status == 0) t->r->seen.emplace_back(t->producer, t->seq);
  return pts_undefined();
}

// Both producers' `per` tasks ran, each producer's in its posting order.
void expect_each_producer_in_order(const FifoRec &rec, size_t per) {
  ASSERT_EQ(2 * per, rec.seen.size());
  uint32_t next[2] = {0, 0};
  for (auto &s : rec.seen) {
    ASSERT_EQ(next[s.first], s.second) << "producer " << s.first;
    next[s.first]++;
  }
}

// Two producers (a plain thread and an agent on the other pool thread) post
// to one target; each producer's tasks run in its posting order.
TEST_F(StressTest, PerProducerFifo) {
  const size_t per = total_posts(8000) / 2;
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_ROUND_ROBIN),
                                    {agent_opts("target", 0), agent_opts("source", 1)}));
  pts_agent *target = agent(0), *src = agent(1);
  FifoRec rec;
  std::vector<FifoTicket> t0(per), t1(per);
  struct Src {
    pts_agent *target;
    std::vector<FifoTicket> *t;
    FifoRec *r;
    size_t per;
  } args{target, &t1, &rec, per};
  // Producer 1: a task of the source agent posts everything in one go.
  ASSERT_EQ(0, pts_agent_queue_task(src, PTS_SOURCE_GENERIC, [](void *d, int status) {
    auto *a = static_cast<Src *>(d);
    if (status != 0) return;
    for (size_t i = 0; i < a->per; i++) {
      (*a->t)[i] = FifoTicket{a->r, 1, static_cast<uint32_t>(i)};
      EXPECT_EQ(0, pts_agent_post_task(a->target, nullptr, fifo_cb, &(*a->t)[i], nullptr,
                                       nullptr, nullptr));
    }
  }, &args));
  // Producer 0: this thread, interleaved with it.
  for (size_t i = 0; i < per; i++) {
    t0[i] = FifoTicket{&rec, 0, static_cast<uint32_t>(i)};
    ASSERT_EQ(0, pts_agent_post_task(target, nullptr, fifo_cb, &t0[i], nullptr, nullptr, nullptr));
  }
  ASSERT_EQ(0, pts_agent_drain(src));
  ASSERT_EQ(0, pts_agent_drain(target));
  expect_each_producer_in_order(rec, per);
  // Scheduler tasks only, no signal: orders are exactly 1..2*per.
  EXPECT_EQ(2 * per + 2, take_order(target));
}


// Two plain threads post to one agent with caller-owned requests
// (pts_agent_post_task_req), one of them reusing a small ring of requests
// as soon as each callback has run: every task runs once, each producer's
// in its posting order, and the loop takes one enqueue order per task.
TEST_F(StressTest, RequestsRunOnceInEachProducersOrder) {
  const size_t per = total_posts(8000) / 2;
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), {agent_opts("target", 0)}));
  pts_agent *target = agent(0);
  FifoRec rec;
  // Producer 0: one request per post.
  std::vector<FifoTicket> t0(per);
  std::vector<pts_agent_task_req> r0(per);
  // Producer 1: a ring of 8 requests, each reused once its task has run
  // (its callback sets the slot's flag last; nothing of ptsched may read
  // the request after that call).
  constexpr size_t kRing = 8;
  struct Ring {
    alignas(64) pts_agent_task_req req[kRing];
    std::atomic<bool> free_[kRing];
    FifoTicket t[kRing];
  } ring;
  for (auto &f : ring.free_) f.store(true);
  struct RingTicket {
    Ring *ring;
    size_t slot;
  };
  std::vector<RingTicket> slots(kRing);
  for (size_t i = 0; i < kRing; i++) slots[i] = RingTicket{&ring, i};
  auto ring_cb = [](void *data, int status) -> pts_value {
    auto *rt = static_cast<RingTicket *>(data);
    (void)fifo_cb(&rt->ring->t[rt->slot], status);
    rt->ring->free_[rt->slot].store(true, std::memory_order_release);
    return pts_undefined();
  };
  std::thread producer1([&] {
    for (size_t i = 0; i < per; i++) {
      size_t k = i % kRing;
      while (!ring.free_[k].load(std::memory_order_acquire)) std::this_thread::yield();
      ring.free_[k].store(false, std::memory_order_relaxed);
      ring.t[k] = FifoTicket{&rec, 1, static_cast<uint32_t>(i)};
      EXPECT_EQ(0, pts_agent_post_task_req(target, PTS_PRIORITY_USER_VISIBLE, &ring.req[k],
                                           ring_cb, &slots[k]));
    }
  });
  for (size_t i = 0; i < per; i++) {
    t0[i] = FifoTicket{&rec, 0, static_cast<uint32_t>(i)};
    ASSERT_EQ(0, pts_agent_post_task_req(target, PTS_PRIORITY_UNSET, &r0[i], fifo_cb, &t0[i]));
  }
  producer1.join();
  ASSERT_EQ(0, pts_agent_drain(target));
  expect_each_producer_in_order(rec, per);
  // Scheduler tasks only, no signal: orders are exactly 1..2*per.
  EXPECT_EQ(2 * per + 2, take_order(target));
  EXPECT_EQ(2 * per, pts_test_agent_posts(target, 0));
}

}  // namespace
}  // namespace ptstest
