// tests/agents/watchdog_test.cc: runaway tasks (pts_pool_options.watchdog_ns,
// docs/agents.md "Runaway tasks"): a step longer than the threshold is
// reported once (statistic and callback), and with balancing on the stuck
// worker's other groups start their tasks on another thread while the step
// still runs; the stuck agent's own group and pinned groups stay. The long
// steps here block until the test releases them, so nothing depends on how
// fast the machine is: the waits only bound a failure.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/agents/util.h"
#include "ptsched.h"

using namespace ptstest;

namespace {

class WatchdogTest : public AgentsTest {};

struct Reports {
  std::atomic<int> n{0};
  std::atomic<pts_agent *> agent{nullptr};
  std::atomic<uint64_t> running_ns{0};
  bool destroy = false;
  static void fn(void *data, pts_agent *a, uint64_t ns) {
    auto *r = static_cast<Reports *>(data);
    r->agent.store(a);
    r->running_ns.store(ns);
    if (r->destroy) {
      EXPECT_EQ(0, pts_agent_destroy(a, false));
    }
    r->n.fetch_add(1);
  }
};

// Options of a pool with a watchdog reporting to r (may be NULL). A test
// that passes r shuts the pool down (ShutdownPool) while r lives: the
// watchdog may report a step until then.
pts_pool_options Watched(unsigned threads, bool balance, uint64_t watchdog_ns, Reports *r) {
  pts_pool_options o = pool_opts(threads, PTS_POLICY_ROUND_ROBIN);
  o.balance = balance;
  o.watchdog_ns = watchdog_ns;
  o.on_long_task = r ? Reports::fn : nullptr;
  o.on_long_task_data = r;
  return o;
}

// Options of an agent of origin placed on thread.
pts_agent_options Placed(const char *origin, int thread, bool pinned = false) {
  pts_agent_options o = agent_opts(origin, thread);
  o.pinned = pinned;
  return o;
}

uint64_t LongTasks(pts_agent *a) {
  pts_agent_stats s;
  EXPECT_EQ(0, pts_agent_get_stats(a, &s));
  return s.long_tasks;
}

// Records the thread a task of its agent ran on.
struct Probe {
  std::atomic<int> thread{-2};
};

struct ProbeCtx {
  Probe *probe;
  pts_agent *agent;
};

pts_value ProbeRun(void *data, int status) {
  auto *c = static_cast<ProbeCtx *>(data);
  if (status == 0) c->probe->thread.store(pts_agent_thread(c->agent));
  return pts_undefined();
}

TEST_F(WatchdogTest, RejectsAThresholdOutOfRange) {
  pts_pool_options o = pool_opts(1, PTS_POLICY_STRICT);
  pts_pool *p = nullptr;
  o.watchdog_ns = 99999;
  EXPECT_EQ(PTS_EINVAL, pts_pool_new(&o, &p));
  o.watchdog_ns = 1000000001;
  EXPECT_EQ(PTS_EINVAL, pts_pool_new(&o, &p));
  o.watchdog_ns = 100000;
  ASSERT_EQ(0, pts_pool_new(&o, &p));
  EXPECT_EQ(0, pts_pool_shutdown(p));
}

TEST_F(WatchdogTest, ALongStepIsReportedOnceWithItsAgent) {
  Reports r;
  // 100 ms: a step the OS descheduled (a loaded host, the sanitizers) for
  // a millisecond is a long step too, and this test counts reports.
  const uint64_t threshold = 100000000;
  ASSERT_NO_FATAL_FAILURE(
      StartPool(Watched(1, false, threshold, &r), {Placed("a", 0), Placed("q", 0)}));
  pts_agent *a = agent(0), *quiet = agent(1);
  Blocker b;
  ASSERT_TRUE(b.block(a));
  ASSERT_TRUE(wait_until([&] { return r.n.load() == 1; }));
  EXPECT_EQ(a, r.agent.load());
  EXPECT_GE(r.running_ns.load(), threshold);
  EXPECT_EQ(1u, LongTasks(a));
  // Without balancing nothing moves.
  EXPECT_EQ(0, pts_agent_thread(quiet));
  b.release.store(true);
  ASSERT_EQ(0, pts_agent_drain(a));
  // Short steps are not reported.
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; i++)
    ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, [](void *d, int) {
      static_cast<std::atomic<int> *>(d)->fetch_add(1);
    }, &ran));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(1, r.n.load());
  EXPECT_EQ(0u, LongTasks(quiet));
  ShutdownPool();
}

// The watchdog moves the stuck worker's other unpinned groups while the step
// runs: their tasks start on the other thread; the stuck agent's group and a
// pinned group stay; a new origin is placed away from the stuck worker.
TEST_F(WatchdogTest, WithBalancingTheOtherGroupsLeaveTheStuckThread) {
  Reports r;
  ASSERT_NO_FATAL_FAILURE(StartPool(Watched(2, true, 1000000, &r),
                                    {Placed("hog", 0), Placed("hog", -1) /* same origin: thread 0 */,
                                     Placed("n1", 0), Placed("n2", 0), Placed("p", 0, true)}));
  pts_agent *hog = agent(0), *sibling = agent(1), *n1 = agent(2), *n2 = agent(3),
            *pinned = agent(4);
  ASSERT_EQ(0, pts_agent_thread(sibling));
  Blocker b;
  ASSERT_TRUE(b.block(hog));
  Probe p1, p2, pp;
  ProbeCtx c1{&p1, n1}, c2{&p2, n2}, cp{&pp, pinned};
  ASSERT_EQ(0, pts_agent_post_task(n1, nullptr, ProbeRun, &c1, nullptr, nullptr, nullptr));
  ASSERT_EQ(0, pts_agent_post_task(n2, nullptr, ProbeRun, &c2, nullptr, nullptr, nullptr));
  ASSERT_EQ(0, pts_agent_post_task(pinned, nullptr, ProbeRun, &cp, nullptr, nullptr, nullptr));
  ASSERT_TRUE(wait_until([&] { return p1.thread.load() >= 0 && p2.thread.load() >= 0; }))
      << "the neighbours' tasks waited for the long step";
  EXPECT_EQ(1, p1.thread.load());
  EXPECT_EQ(1, p2.thread.load());
  EXPECT_EQ(-2, pp.thread.load()) << "a pinned group stays with the stuck thread";
  EXPECT_EQ(0, pts_agent_thread(hog));
  EXPECT_EQ(0, pts_agent_thread(sibling));
  EXPECT_EQ(0, pts_agent_thread(pinned));
  pts_agent_options fo = Placed("fresh", -1);
  pts_agent *fresh;
  ASSERT_NO_FATAL_FAILURE(AddAgent(&fo, &fresh));
  EXPECT_EQ(1, pts_agent_thread(fresh)) << "placement skips a stuck worker";
  EXPECT_EQ(1u, LongTasks(hog));
  b.release.store(true);
  ASSERT_TRUE(wait_until([&] { return pp.thread.load() == 0; }));
  for (pts_agent *a : {hog, sibling, n1, n2, pinned, fresh}) EXPECT_EQ(0, pts_agent_drain(a));
  ShutdownPool();
}

// With more than one other thread, the rescued groups are spread over them
// by load (each decision counts the groups sent before it).
TEST_F(WatchdogTest, RescuedGroupsSpreadOverTheOtherThreads) {
  ASSERT_NO_FATAL_FAILURE(StartPool(Watched(3, true, 1000000, nullptr), {Placed("hog", 0)}));
  pts_agent *hog = agent(0);
  std::vector<pts_agent *> ns(4);
  for (int i = 0; i < 4; i++) {
    char name[16];
    std::snprintf(name, sizeof name, "n%d", i);
    pts_agent_options o = Placed(name, 0);
    ASSERT_NO_FATAL_FAILURE(AddAgent(&o, &ns[static_cast<size_t>(i)]));
  }
  Blocker b;
  ASSERT_TRUE(b.block(hog));
  ASSERT_TRUE(wait_until([&] {
    for (pts_agent *a : ns)
      if (pts_agent_thread(a) == 0) return false;
    return true;
  }));
  int on[3] = {0, 0, 0};
  for (pts_agent *a : ns) on[pts_agent_thread(a)]++;
  EXPECT_EQ(2, on[1]);
  EXPECT_EQ(2, on[2]);
  b.release.store(true);
  for (pts_agent *a : ns) EXPECT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0, pts_agent_drain(hog));
}

// The host's remedy: the callback destroys the tenant, which takes effect
// once the long step returns.
TEST_F(WatchdogTest, TheCallbackMayDestroyTheAgent) {
  Reports r;
  r.destroy = true;
  ASSERT_NO_FATAL_FAILURE(StartPool(Watched(1, false, 1000000, &r), {Placed("a", 0)}));
  pts_agent *a = agent(0);
  Blocker b;
  ASSERT_TRUE(b.block(a));
  ASSERT_TRUE(wait_until([&] { return r.n.load() == 1; }));
  b.release.store(true);
  ASSERT_TRUE(wait_until([&] { return pts_agent_drain(a) == PTS_ECLOSED; }));
  ShutdownPool();
}

// The claim protocol under load: agents post to each other while some
// steps run past a 100 us threshold (every step may, under the
// sanitizers), so the watchdog takes groups away from workers in the
// middle of their steps again and again; every task runs exactly once.
TEST_F(WatchdogTest, RescuesRacingOrdinaryTrafficLoseNothing) {
  ASSERT_NO_FATAL_FAILURE(StartPool(Watched(2, true, 100000, nullptr)));
  const int nagents = 8, per = stress_long() ? 200000 : under_tsan() ? 3000 : 20000;
  std::vector<pts_agent *> agents(nagents);
  for (int i = 0; i < nagents; i++) {
    char name[16];
    std::snprintf(name, sizeof name, "o%d", i % 6); /* some same-origin pairs */
    pts_agent_options o = Placed(name, i % 2);
    ASSERT_NO_FATAL_FAILURE(AddAgent(&o, &agents[static_cast<size_t>(i)]));
  }
  std::vector<std::atomic<uint8_t>> ran(static_cast<size_t>(per));
  struct Task {
    std::atomic<uint8_t> *ran;
    bool slow;
  };
  std::vector<Task> tasks(static_cast<size_t>(per));
  std::thread driver([&] {
    for (int i = 0; i < per; i++) {
      tasks[static_cast<size_t>(i)] = {&ran[static_cast<size_t>(i)], i % 500 == 0};
      pts_agent *a = agents[static_cast<size_t>(i) % agents.size()];
      ASSERT_EQ(0, pts_agent_post_task(a, nullptr, [](void *d, int status) {
        auto *t = static_cast<Task *>(d);
        if (status != 0) return pts_undefined();
        if (t->slow) busy_ns(300000);
        t->ran->fetch_add(1);
        return pts_undefined();
      }, &tasks[static_cast<size_t>(i)], nullptr, nullptr, nullptr));
    }
  });
  driver.join();
  for (pts_agent *a : agents) ASSERT_EQ(0, pts_agent_drain(a));
  size_t bad = 0;
  for (auto &x : ran) bad += x.load() != 1;
  EXPECT_EQ(0u, bad) << "tasks lost or run twice";
  uint64_t longs = 0, moves = 0;
  for (pts_agent *a : agents) {
    pts_agent_stats s;
    ASSERT_EQ(0, pts_agent_get_stats(a, &s));
    longs += s.long_tasks;
    moves += s.moves;
  }
  std::printf("long steps %llu, moves %llu\n", static_cast<unsigned long long>(longs),
              static_cast<unsigned long long>(moves));
  EXPECT_GT(longs, 0u);
}

}  // namespace
