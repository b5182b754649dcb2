// tests/agents/util.h: helpers shared by the agents tests: the fixture (a
// pool with its agents, shut down at the end of each test and then checked
// for leaks: controllers, signals and scheduling states counted by the layers
// below; memory by LSan), clocks, busy-waiting, bounded waits and the stress
// sizes.
#ifndef PTS_TESTS_AGENTS_UTIL_H
#define PTS_TESTS_AGENTS_UTIL_H

#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "ptsched.h"
#include "sched/sched_internal.h"
#include "sched/signal_internal.h"

extern "C" {
// peek.c: the loop's next enqueue order, taken (owner thread only).
uint64_t pts_test_take_order(pts_loop *loop);
// peek.c: cross-thread posts enqueued (which = 0) or refused as aborted (1);
// pts_agent_queue_task tasks run in place (2).
uint64_t pts_test_agent_posts(pts_agent *a, int which);
// peek.c: the admission protocol by hand (one command of the top rank
// admitted, then a probe command pushed; how the probe was applied or
// released), a producer inside the wake hook's slow path (+1 in, -1 out),
// and the agent's wake token.
bool pts_test_agent_admit(pts_agent *a);
void pts_test_agent_push_probe(pts_agent *a);
int pts_test_probe_calls(void);
int pts_test_probe_status(void);
void pts_test_agent_waker(pts_agent *a, int delta);
bool pts_test_agent_signaled(pts_agent *a);
// peek.c: the pool's quantized slot length and whether it balances.
uint64_t pts_test_pool_slot_ns(pts_pool *p);
bool pts_test_pool_balances(pts_pool *p);
}

namespace ptstest {

inline uint64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline void busy_ns(uint64_t ns) {
  uint64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

inline bool stress_long() {
  const char *e = std::getenv("PTS_STRESS_LONG");
  return e != nullptr && e[0] == '1';
}

inline bool under_tsan() {
#if defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

// Polls f every 200 us until it holds or ms pass.
inline bool wait_until(const std::function<bool()> &f, int ms = 5000) {
  uint64_t end = now_ns() + static_cast<uint64_t>(ms) * 1000000u;
  while (!f()) {
    if (now_ns() > end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

inline pts_pool_options pool_opts(unsigned threads, pts_policy policy,
                                  uint64_t seed = 1, uint64_t slot_ns = 0) {
  pts_pool_options o = {};
  o.threads = threads;
  o.policy = policy;
  o.seed = seed;
  o.slot_ns = slot_ns;
  return o;
}

inline pts_agent_options agent_opts(const char *origin, int thread = -1, uint32_t weight = 1) {
  pts_agent_options o = PTS_AGENT_OPTIONS_INIT;
  o.origin = origin;
  o.thread = thread;
  o.weight = weight;
  return o;
}

// The fixture: counters of live objects before, a leak check after, and the
// test's pool with its agents in between.
//
// StartPool makes the pool and its first agents, AddAgent adds one; both
// check every call and stop the test on a failure, so call them under
// ASSERT_NO_FATAL_FAILURE. One pool at a time: a test may make another
// after ShutdownPool. At the end of the test the pool is shut down
// (which destroys the agents still running), then every agent handle is
// unref'd, then the leak check runs. A test calls ShutdownPool itself when
// it goes on after the shutdown (calls on closed agents; the handles stay
// valid until the end of the test), or when work still pending at its end
// points at its locals (the shutdown releases that work, calling its
// callbacks: they must run while the test body's locals live).
class AgentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controllers_ = pts__controller_live_count();
    signals_ = pts__signal_live_count();
    states_ = pts__sched_live_states();
  }
  void TearDown() override {
    // After a fatal failure a task may still block a pool thread (a
    // Blocker not released): a shutdown would wait for it until the test's
    // timeout, so the pool is left running, as a test without the fixture
    // would leave it, and the leak check reports it.
    if (pool_ != nullptr && !HasFatalFailure()) ShutdownPool();
    if (pool_ == nullptr) {
      for (pts_agent *a : agents_) pts_agent_unref(a);
      agents_.clear();
    }
    EXPECT_EQ(controllers_, pts__controller_live_count()) << "controller leaked";
    EXPECT_EQ(signals_, pts__signal_live_count()) << "signal leaked";
    EXPECT_EQ(states_, pts__sched_live_states()) << "scheduling state leaked";
  }

  // The test's pool, made with o, and n agents with the default options
  // (each its own origin, placed by rule).
  void StartPool(const pts_pool_options &o, size_t n = 0) {
    ASSERT_EQ(nullptr, pool_) << "one pool at a time";
    ASSERT_EQ(0, pts_pool_new(&o, &pool_));
    for (size_t i = 0; i < n; i++) ASSERT_NO_FATAL_FAILURE(AddAgent(nullptr));
  }
  // The same with one agent per entry of opts, made in that order.
  void StartPool(const pts_pool_options &o, const std::vector<pts_agent_options> &opts) {
    ASSERT_NO_FATAL_FAILURE(StartPool(o));
    for (const pts_agent_options &ao : opts) ASSERT_NO_FATAL_FAILURE(AddAgent(&ao));
  }
  // One more agent of the test's pool, with o (NULL: the defaults); *out,
  // if not NULL, gets it (the fixture keeps the reference).
  void AddAgent(const pts_agent_options *o, pts_agent **out = nullptr) {
    pts_agent *a = nullptr;
    ASSERT_EQ(0, pts_agent_new(pool_, o, &a));
    agents_.push_back(a);
    if (out != nullptr) *out = a;
  }
  // Shuts the test's pool down now; its agents' handles stay valid.
  void ShutdownPool() {
    EXPECT_EQ(0, pts_pool_shutdown(pool_));
    pool_ = nullptr;
  }
  pts_pool *pool() const { return pool_; }
  // The i-th agent made by StartPool or AddAgent (borrowed).
  pts_agent *agent(size_t i) const { return agents_.at(i); }

  // A pool with these options, owned by the test (for the tests of the
  // pool's own set-up and shutdown); a test cannot go on without one.
  static pts_pool *NewPool(unsigned threads, pts_policy policy, uint64_t seed = 1,
                           uint64_t slot_ns = 0) {
    pts_pool_options o = pool_opts(threads, policy, seed, slot_ns);
    pts_pool *p = nullptr;
    int rc = pts_pool_new(&o, &p);
    if (rc != 0) {
      std::fprintf(stderr, "pts_pool_new: %s\n", pts_strerror(rc));
      std::abort();
    }
    return p;
  }
  size_t controllers_ = 0, signals_ = 0;
  uint64_t states_ = 0;

 private:
  pts_pool *pool_ = nullptr;
  std::vector<pts_agent *> agents_;
};

// A result sink for pts_agent_post_task.
struct Result {
  std::atomic<int> calls{0};
  std::atomic<int> status{1};
  std::atomic<int64_t> ival{-1};
  std::atomic<int> err_code{0};
  std::atomic<bool> on_reply_thread{false};
  pts_agent *expect_thread_of = nullptr;
};

inline void result_fn(void *data, int status, pts_value v) {
  Result *r = static_cast<Result *>(data);
  r->status.store(status);
  if (v.kind == PTS_VALUE_INT) r->ival.store(v.u.i);
  if (v.kind == PTS_VALUE_ERROR) r->err_code.store(pts_error_code(v));
  r->calls.fetch_add(1);
}

// A task callback returning data (an int64_t*) as an int value.
inline pts_value return_int(void *data, int status) {
  if (status != 0) return pts_undefined();
  return pts_int(*static_cast<int64_t *>(data));
}

// Runs f on a's thread, as an ordinary task, and returns once a has
// drained (so f has run, unless a is closed). For reading what only the
// agent's thread may read.
inline void on_agent_thread(pts_agent *a, const std::function<void()> &f) {
  EXPECT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, [](void *d, int status) {
    if (status == 0) (*static_cast<const std::function<void()> *>(d))();
  }, const_cast<std::function<void()> *>(&f)));
  EXPECT_EQ(0, pts_agent_drain(a));
}

// A task that blocks its agent's thread until released.
struct Blocker {
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  static void fn(void *data, int status) {
    auto *b = static_cast<Blocker *>(data);
    if (status != 0) return;
    b->started.store(true);
    while (!b->release.load()) std::this_thread::yield();
  }
  // Queues the blocker on a and waits until it runs.
  bool block(pts_agent *a) {
    if (pts_agent_queue_task(a, PTS_SOURCE_GENERIC, fn, this) != 0) return false;
    return wait_until([this] { return started.load(); });
  }
};

}  // namespace ptstest

#endif  // PTS_TESTS_AGENTS_UTIL_H
