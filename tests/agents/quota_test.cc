// tests/agents/quota_test.cc: per-agent limits (agents.h pts_agent_limits,
// docs/agents.md "Quotas"): each limit is exact (the N-th call succeeds,
// the N+1-th fails with PTS_EQUOTA), a refused call changes nothing and
// leaks nothing (asan), the agent's admitted work and its neighbours' still
// run exactly once, and the inbox limit holds against racing producers
// (tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "tests/agents/util.h"
extern "C" {
#include "loop/loop_internal.h"
}
#include "ptsched.h"

using namespace ptstest;

namespace {

class QuotaTest : public AgentsTest {};

// Options of an agent of origin with these limits.
pts_agent_options Limited(const char *origin, pts_agent_limits lim, int thread = -1) {
  pts_agent_options o = agent_opts(origin, thread);
  o.limits = lim;
  return o;
}

pts_scheduler *SchedOf(pts_agent *a) {
  return pts_global_scheduler(pts_loop_default_global(pts_agent_loop(a)));
}

void Count(void *data, int status) {
  if (status == 0) static_cast<std::atomic<int> *>(data)->fetch_add(1);
}

pts_agent_stats StatsOf(pts_agent *a) {
  pts_agent_stats s;
  EXPECT_EQ(0, pts_agent_get_stats(a, &s));
  return s;
}

TEST_F(QuotaTest, TaskLimitIsExactForPostsDelayedPostsAndYields) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), {Limited("a", {8, 0, 0})}));
  pts_agent *a = agent(0);
  std::atomic<int> ran{0};
  int codes[4] = {1, 1, 1, 1};
  // From an ordinary task (not a scheduler task, so nothing is counted yet).
  on_agent_thread(a, [&] {
    pts_scheduler *s = SchedOf(a);
    pts_post_options delayed = PTS_POST_OPTIONS_INIT;
    delayed.delay_ms = 1;
    for (int i = 0; i < 4; i++) EXPECT_EQ(0, pts_scheduler_post_task_cb(s, Count, &ran, nullptr));
    for (int i = 0; i < 3; i++) EXPECT_EQ(0, pts_scheduler_post_task_cb(s, Count, &ran, &delayed));
    EXPECT_EQ(0, pts_scheduler_yield_cb(s, nullptr, Count, &ran)); /* the 8th */
    codes[0] = pts_scheduler_post_task_cb(s, Count, &ran, nullptr);
    codes[1] = pts_scheduler_post_task_cb(s, Count, &ran, &delayed);
    codes[2] = pts_scheduler_yield_cb(s, nullptr, Count, &ran);
    pts_promise *p = nullptr;
    codes[3] = pts_scheduler_post_task(s, [](void *, int) { return pts_undefined(); }, nullptr,
                                       nullptr, &p);
    EXPECT_EQ(nullptr, p);
  });
  for (int c : codes) EXPECT_EQ(PTS_EQUOTA, c) << pts_err_name(c);
  EXPECT_TRUE(wait_until([&] { return ran.load() == 8; }));
  EXPECT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(8, ran.load()) << "every admitted task runs once, the refused ones never";
  pts_agent_stats st = StatsOf(a);
  EXPECT_EQ(4u, st.refused);
  EXPECT_EQ(0u, st.tasks_pending);
  // The room is back once they ran.
  on_agent_thread(a, [&] {
    for (int i = 0; i < 8; i++) EXPECT_EQ(0, pts_scheduler_post_task_cb(SchedOf(a), Count, &ran, nullptr));
    EXPECT_EQ(PTS_EQUOTA, pts_scheduler_post_task_cb(SchedOf(a), Count, &ran, nullptr));
  });
  EXPECT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(16, ran.load());
}

TEST_F(QuotaTest, TasksPendingIsVisibleInTheStatistics) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), {Limited("a", {0, 0, 0})}));
  pts_agent *a = agent(0);
  std::atomic<int> ran{0};
  on_agent_thread(a, [&] {
    pts_post_options later = PTS_POST_OPTIONS_INIT;
    later.delay_ms = 60000; /* still pending when we look */
    for (int i = 0; i < 5; i++) EXPECT_EQ(0, pts_scheduler_post_task_cb(SchedOf(a), Count, &ran, &later));
  });
  EXPECT_EQ(5u, StatsOf(a).tasks_pending);
  EXPECT_GT(StatsOf(a).bytes_held, 0u);
  ShutdownPool(); /* releases them */
  EXPECT_EQ(0, ran.load());
}

TEST_F(QuotaTest, PoolDefaultAppliesAndLimitNoneLiftsIt) {
  pts_pool_options o = pool_opts(1, PTS_POLICY_STRICT);
  o.limits.tasks = 4;
  ASSERT_NO_FATAL_FAILURE(StartPool(o, {Limited("d", {0, 0, 0}), Limited("own", {6, 0, 0}),
                                        Limited("none", {PTS_LIMIT_NONE, 0, 0})}));
  pts_agent *d = agent(0), *own = agent(1), *none = agent(2);
  std::atomic<int> ran{0};
  int admitted[3] = {0, 0, 0};
  pts_agent *agents[3] = {d, own, none};
  for (int k = 0; k < 3; k++) {
    on_agent_thread(agents[k], [&] {
      for (int i = 0; i < 100; i++)
        if (pts_scheduler_post_task_cb(SchedOf(agents[k]), Count, &ran, nullptr) == 0) admitted[k]++;
    });
  }
  EXPECT_EQ(4, admitted[0]);
  EXPECT_EQ(6, admitted[1]);
  EXPECT_EQ(100, admitted[2]);
  EXPECT_EQ(110, ran.load());
}

TEST_F(QuotaTest, ByteLimitRefusesTheAllocationThatWouldPassIt) {
  const uint64_t limit = 64 * 1024;
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT),
                                    {Limited("a", {0, limit, 0}), Limited("n", {0, 0, 0})}));
  pts_agent *a = agent(0), *neighbour = agent(1);
  std::vector<pts_promise *> held;
  size_t n_first = 0;
  int refusal = 0;
  uint64_t bytes_at_refusal = 0;
  on_agent_thread(a, [&] {
    pts_loop *loop = pts_agent_loop(a);
    for (;;) {
      pts_promise *p = nullptr;
      int rc = pts_promise_new(loop, &p);
      if (rc != 0) {
        refusal = rc;
        break;
      }
      held.push_back(p);
    }
    bytes_at_refusal = pts__loop_quota_bytes(loop);
    // A post needs a block too: refused with the same code.
    pts_controller *c = nullptr;
    std::atomic<int> never{0};
    if (pts_task_controller_new(loop, PTS_PRIORITY_USER_VISIBLE, &c) == 0) {
      pts_post_options po = PTS_POST_OPTIONS_INIT;
      po.signal = pts_controller_signal(c);
      EXPECT_EQ(PTS_EQUOTA, pts_scheduler_post_task_cb(SchedOf(a), Count, &never, &po));
      pts_controller_unref(c);
    }
    for (pts_promise *p : held) pts_promise_unref(p);
    // What was freed is the loop's again: the same number fits.
    n_first = held.size();
    size_t n = held.size();
    held.clear();
    for (size_t i = 0; i < n; i++) {
      pts_promise *p = nullptr;
      ASSERT_EQ(0, pts_promise_new(loop, &p));
      held.push_back(p);
    }
    for (pts_promise *p : held) pts_promise_unref(p);
  });
  EXPECT_EQ(PTS_EQUOTA, refusal) << pts_err_name(refusal);
  EXPECT_GT(n_first, 100u);
  EXPECT_LE(bytes_at_refusal, limit);
  EXPECT_GT(bytes_at_refusal + 128, limit) << "refused while a block still fitted";
  pts_agent_stats st = StatsOf(a);
  EXPECT_LE(st.bytes_held, limit);
  EXPECT_GE(st.refused, 2u);
  // The neighbour is untouched.
  std::atomic<int> ran{0};
  on_agent_thread(neighbour, [&] {
    for (int i = 0; i < 5000; i++) ASSERT_EQ(0, pts_scheduler_post_task_cb(SchedOf(neighbour), Count, &ran, nullptr));
  });
  EXPECT_EQ(5000, ran.load());
  EXPECT_EQ(0u, StatsOf(neighbour).refused);
  EXPECT_STREQ("QuotaExceededError", pts_err_dom_name(PTS_EQUOTA));
}

pts_value CountTask(void *data, int status) {
  if (status == 0) static_cast<std::atomic<int> *>(data)->fetch_add(1);
  return pts_undefined();
}

TEST_F(QuotaTest, InboxLimitIsExactForEveryCountedCommand) {
  const int limit = 16;
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT),
                                    {Limited("a", {0, 0, static_cast<uint64_t>(limit)})}));
  pts_agent *a = agent(0);
  pts_remote_controller *rc = nullptr;
  ASSERT_EQ(0, pts_remote_controller_new_async(a, PTS_PRIORITY_USER_VISIBLE, &rc));
  ASSERT_EQ(0, pts_agent_drain(a));
  Blocker b;
  // The agent's thread applies nothing now; the blocker, a queued task
  // still running, holds one place.
  ASSERT_TRUE(b.block(a));
  std::atomic<int> ran{0};
  Result res;
  std::vector<std::unique_ptr<pts_agent_task_req>> reqs;
  int ok = 0;
  for (int i = 0; i < limit - 1; i++) {
    int rc2;
    switch (i % 4) {
      case 0:
        rc2 = pts_agent_post_task(a, nullptr, CountTask, &ran, nullptr, nullptr, nullptr);
        break;
      case 1: {
        reqs.emplace_back(new pts_agent_task_req);
        rc2 = pts_agent_post_task_req(a, PTS_PRIORITY_UNSET, reqs.back().get(), CountTask, &ran);
        break;
      }
      case 2:
        rc2 = pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Count, &ran);
        break;
      default:
        rc2 = i == 3 ? pts_remote_controller_set_priority(rc, PTS_PRIORITY_BACKGROUND, nullptr, nullptr)
                     : pts_agent_post_task(a, nullptr, CountTask, &ran, result_fn, &res, nullptr);
        break;
    }
    EXPECT_EQ(0, rc2) << i;
    ok += rc2 == 0;
  }
  pts_agent_task_req spare;
  EXPECT_EQ(PTS_EQUOTA, pts_agent_post_task(a, nullptr, CountTask, &ran, nullptr, nullptr, nullptr));
  EXPECT_EQ(PTS_EQUOTA, pts_agent_post_task_req(a, PTS_PRIORITY_UNSET, &spare, CountTask, &ran));
  EXPECT_EQ(PTS_EQUOTA, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Count, &ran));
  EXPECT_EQ(PTS_EQUOTA, pts_remote_controller_abort(rc, nullptr, nullptr, nullptr));
  // Moves and drains are never refused; neither is a reply or a release.
  EXPECT_EQ(0, pts_agent_move(a, 0));
  pts_agent_stats st = StatsOf(a);
  EXPECT_EQ(4u, st.refused);
  EXPECT_GE(st.inbox_depth, static_cast<uint64_t>(limit));
  b.release.store(true);
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(limit - 2, ran.load()) << "each admitted post or task ran once (one was a setPriority)";
  EXPECT_EQ(2, res.calls.load());
  EXPECT_LE(StatsOf(a).inbox_max, static_cast<uint64_t>(limit) + 1) << "the limit, and the move";
  // Room again: the tasks ran, their places are back.
  for (int i = 0; i < limit; i++) EXPECT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Count, &ran));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(2 * limit - 2, ran.load());
  pts_remote_controller_unref(rc);
}

// A cross-thread task keeps its place until it has run, not only until its
// command is applied: applied tasks waiting in the loop still count, so a
// flood holds at most `inbox` of the agent's work however slow the agent.
TEST_F(QuotaTest, InboxPlacesAreHeldUntilTheTaskHasRun) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), {Limited("a", {0, 0, 4})}));
  pts_agent *a = agent(0);
  std::atomic<int> ran{0};
  on_agent_thread(a, [&] {
    // From a task that came through the inbox itself: it holds a place
    // while it runs, and the three it posts run after it.
    for (int i = 0; i < 3; i++) EXPECT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Count, &ran));
    EXPECT_EQ(PTS_EQUOTA, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Count, &ran)) << "the running task holds the 4th";
  });
  EXPECT_EQ(3, ran.load());
  EXPECT_EQ(0u, StatsOf(a).inbox_depth);
  Blocker b;
  ASSERT_TRUE(b.block(a));
  for (int i = 0; i < 3; i++) ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Count, &ran));
  EXPECT_EQ(PTS_EQUOTA, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Count, &ran));
  b.release.store(true);
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(6, ran.load());
}

// Posts to an idle agent alone on its thread run in place, in rows
// (remote.c): a row gives its tasks' places back together when it ends, so
// every round of `limit` posts finds the places of the round before back.
TEST_F(QuotaTest, TasksRunInPlaceGiveTheirPlacesBack) {
  const int limit = 4;
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT),
                                    {Limited("a", {0, 0, static_cast<uint64_t>(limit)})}));
  pts_agent *a = agent(0);
  std::atomic<int> ran{0};
  std::vector<pts_agent_task_req> reqs(limit);
  for (int round = 0; round < 200; round++) {
    for (int i = 0; i < limit; i++)
      ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_USER_VISIBLE, &reqs[i], CountTask, &ran))
          << "round " << round << ", post " << i;
    ASSERT_EQ(0, pts_agent_drain(a));
  }
  EXPECT_EQ(200 * limit, ran.load());
  pts_agent_stats st = StatsOf(a);
  EXPECT_EQ(0u, st.inbox_depth);
  EXPECT_EQ(0u, st.refused);
}

// Producers on four threads race each other and the agent's thread: every
// admitted task runs once and every refusal is counted. (That at most
// `limit` wait at once is the exact test above; inbox_max counts the
// commands of one pass, which producers refill as it goes.)
TEST_F(QuotaTest, InboxLimitHoldsAgainstRacingProducers) {
  const uint64_t limit = 32;
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT), {Limited("a", {0, 0, limit})}));
  pts_agent *a = agent(0);
  const int producers = 4, per = under_tsan() ? 3000 : 40000;
  std::vector<std::atomic<uint8_t>> ran(static_cast<size_t>(producers * per));
  std::atomic<long> refused{0};
  struct Slot {
    std::vector<std::atomic<uint8_t>> *ran;
    size_t i;
  };
  std::vector<Slot> slots(ran.size());
  std::vector<std::thread> ts;
  for (int p = 0; p < producers; p++) {
    ts.emplace_back([&, p] {
      for (int k = 0; k < per; k++) {
        size_t i = static_cast<size_t>(p * per + k);
        slots[i] = {&ran, i};
        for (;;) {
          int rc = pts_agent_post_task(a, nullptr, [](void *d, int status) {
            auto *s = static_cast<Slot *>(d);
            if (status == 0) (*s->ran)[s->i].fetch_add(1);
            return pts_undefined();
          }, &slots[i], nullptr, nullptr, nullptr);
          if (rc == 0) break;
          ASSERT_EQ(PTS_EQUOTA, rc);
          refused.fetch_add(1);
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto &t : ts) t.join();
  ASSERT_EQ(0, pts_agent_drain(a));
  size_t bad = 0;
  for (auto &r : ran) bad += r.load() != 1;
  EXPECT_EQ(0u, bad) << "tasks lost or run twice";
  pts_agent_stats st = StatsOf(a);
  EXPECT_EQ(0u, st.inbox_depth);
  EXPECT_EQ(static_cast<uint64_t>(refused.load()), st.refused);
  std::printf("refused %ld of %d posts' attempts; deepest inbox %llu\n", refused.load(),
              producers * per, static_cast<unsigned long long>(st.inbox_max));
}

// A cross-thread post that arrives at a full task limit is settled with
// PTS_EQUOTA, never run: done gets it, and so does a _req post's callback.
TEST_F(QuotaTest, CrossThreadPostsAtTheTaskLimitSettleWithEQuota) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), {Limited("a", {2, 0, 0})}));
  pts_agent *a = agent(0);
  std::atomic<int> ran{0}, req_status{1};
  Result res;
  pts_agent_task_req req;
  on_agent_thread(a, [&] {
    // Two queued tasks fill the limit (and keep the posts below from
    // running in place: something else is runnable).
    for (int i = 0; i < 2; i++) ASSERT_EQ(0, pts_scheduler_post_task_cb(SchedOf(a), Count, &ran, nullptr));
    ASSERT_EQ(0, pts_agent_post_task(a, nullptr, CountTask, &ran, result_fn, &res, nullptr));
    ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_USER_BLOCKING, &req, [](void *d, int status) {
      static_cast<std::atomic<int> *>(d)->store(status);
      return pts_undefined();
    }, &req_status));
  });
  ASSERT_TRUE(wait_until([&] { return res.calls.load() == 1 && req_status.load() != 1; }));
  EXPECT_EQ(PTS_EQUOTA, res.status.load());
  EXPECT_EQ(PTS_EQUOTA, res.err_code.load());
  EXPECT_EQ(PTS_EQUOTA, req_status.load());
  EXPECT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(2, ran.load()) << "the refused posts never ran";
  EXPECT_EQ(2u, StatsOf(a).refused);
}

// A destroyed agent's inbox commands are released, limited or not: the
// callbacks are called once, and the places go back (nothing leaks: asan).
TEST_F(QuotaTest, DestroyReleasesLimitedCommands) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), {Limited("a", {2, 4096, 8})}));
  pts_agent *a = agent(0);
  Blocker b;
  ASSERT_TRUE(b.block(a));
  std::atomic<int> calls{0};
  for (int i = 0; i < 7; i++) /* and the running blocker: 8 */
    ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, [](void *d, int) {
      static_cast<std::atomic<int> *>(d)->fetch_add(1);
    }, &calls));
  EXPECT_EQ(PTS_EQUOTA, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, Count, &calls));
  EXPECT_EQ(0, pts_agent_destroy(a, false));
  b.release.store(true);
  ASSERT_TRUE(wait_until([&] { return calls.load() == 7; }));
  ShutdownPool();
  EXPECT_EQ(7, calls.load());
}

}  // namespace
