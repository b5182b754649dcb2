// tests/agents/group_test.cc: a same-origin group is the unit of every move
// (issue 35; agents.h pts_agent_move, docs/agents.md "Migration"). Agents of
// one origin never run tasks at the same time, and at rest they are on one
// thread, where the origin's next agent is placed:
// - explicit moves of different members racing each other, producers,
//   destroys and new members, with the balancer on and off, under every
//   work-conserving policy;
// - the balancer alone moving groups of several agents under skewed load;
// - the smallest reproduction: two members asked to two threads at once.
// Every task checks its origin's occupancy with a relaxed counter (an
// overlap is counted, not missed) and bumps a plain counter, so that
// ThreadSanitizer reports two threads running one origin's tasks too.
//
// Sizes: 120,000 racing operations in plain and asan, 30,000 under
// ThreadSanitizer; with PTS_STRESS_LONG=1, 1,200,000 (moves, posts, destroys
// and new agents, counted).
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/agents/util.h"

namespace ptstest {
namespace {

using GroupTest = AgentsTest;

// One origin's record, shared by its agents' tasks.
struct Origin {
  std::string name;
  std::atomic<int> inside{0};        // tasks of the origin running now
  std::atomic<uint64_t> overlaps{0};  // a task started while another ran
  std::atomic<uint64_t> posted{0}, ran{0}, cancelled{0};
  uint64_t plain = 0;  // touched by its tasks only: a data race if two run at once
  uint64_t task_ns = 300;  // how long each task runs: the window for a meeting
};

void run_probe(Origin *o) {
  // Relaxed: the counter must not order the tasks it watches (TSan would
  // then see the plain counter as synchronised).
  if (o->inside.fetch_add(1, std::memory_order_relaxed) != 0)
    o->overlaps.fetch_add(1, std::memory_order_relaxed);
  o->plain++;
  busy_ns(o->task_ns);
  o->inside.fetch_sub(1, std::memory_order_relaxed);
  o->ran.fetch_add(1, std::memory_order_relaxed);
}

void probe_task(void *data, int status) {
  auto *o = static_cast<Origin *>(data);
  if (status != 0) {
    o->cancelled.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  run_probe(o);
}

pts_value probe_post(void *data, int status) {
  probe_task(data, status);
  return pts_undefined();
}

// Posts one task of the origin to a: an ordinary task or a postTask.
bool post_probe(pts_agent *a, Origin *o, bool as_post_task) {
  int rc = as_post_task ? pts_agent_post_task(a, nullptr, probe_post, o, nullptr, nullptr, nullptr)
                        : pts_agent_queue_task(a, PTS_SOURCE_GENERIC, probe_task, o);
  if (rc == 0) o->posted.fetch_add(1, std::memory_order_relaxed);
  return rc == 0;
}

// The threads of the origin's agents, once they agree (a group caught in
// the middle of a move may read half moved for an instant); -1 if they stay
// apart.
int group_thread(const std::vector<pts_agent *> &members) {
  int t = -1;
  bool together = wait_until([&] {
    t = pts_agent_thread(members[0]);
    for (pts_agent *m : members)
      if (pts_agent_thread(m) != t) return false;
    return true;
  }, 2000);
  return together ? t : -1;
}

// Where a new agent of the origin is placed (by rule), then destroyed.
int placed_thread(pts_pool *p, const char *origin) {
  pts_agent_options ao = agent_opts(origin);
  pts_agent *a = nullptr;
  if (pts_agent_new(p, &ao, &a) != 0) return -2;
  int t = pts_agent_thread(a);
  EXPECT_EQ(0, pts_agent_destroy(a, true));
  pts_agent_unref(a);
  return t;
}

uint64_t racing_ops() {
  if (stress_long()) return 1200000;
  return under_tsan() ? 30000 : 120000;
}

constexpr pts_policy kPolicies[] = {PTS_POLICY_STRICT, PTS_POLICY_ROUND_ROBIN, PTS_POLICY_FAIR,
                                    PTS_POLICY_RANDOMIZED};

// One round: 3 origins of 3 agents and 2 lone agents on 3 threads; two
// movers ask random members to random threads, two producers post, one
// churner destroys a random member and makes a new one of its origin. Then
// everything drains and each group must be together, where its next agent
// is placed. Returns the operations made.
struct Round {
  static constexpr int kOrigins = 5, kThreads = 3;
  static constexpr int kMembers[kOrigins] = {3, 3, 3, 1, 1};

  pts_pool *pool = nullptr;
  Origin origins[kOrigins];
  struct Slot {
    std::atomic<pts_agent *> a{nullptr};
    int origin = 0;
  };
  std::vector<std::unique_ptr<Slot>> slots;
  std::vector<pts_agent *> retired;  // destroyed by the churner; unref'd at the end
  std::atomic<uint64_t> ops{0};

  Round(pts_policy policy, bool balance, uint64_t seed, const std::string &tag) {
    pts_pool_options o = pool_opts(kThreads, policy, seed);
    o.balance = balance;
    if (pts_pool_new(&o, &pool) != 0) std::abort();
    for (int i = 0; i < kOrigins; i++) {
      origins[i].name = tag + "-origin-" + std::to_string(i);
      for (int m = 0; m < kMembers[i]; m++) {
        auto s = std::make_unique<Slot>();
        s->origin = i;
        s->a.store(make(i));
        slots.push_back(std::move(s));
      }
    }
  }

  pts_agent *make(int origin) {
    pts_agent_options ao = agent_opts(origins[origin].name.c_str());
    pts_agent *a = nullptr;
    if (pts_agent_new(pool, &ao, &a) != 0) std::abort();
    return a;
  }

  void run(uint64_t budget, uint64_t seed, bool churn) {
    std::atomic<bool> stop{false};
    auto mover = [&](uint64_t s) {
      std::mt19937_64 rng(s);
      while (!stop.load(std::memory_order_relaxed)) {
        Slot &sl = *slots[rng() % slots.size()];
        (void)pts_agent_move(sl.a.load(), static_cast<int>(rng() % kThreads));
        ops.fetch_add(1, std::memory_order_relaxed);
        if (rng() % 4 == 0) std::this_thread::yield();
      }
    };
    auto producer = [&](uint64_t s) {
      std::mt19937_64 rng(s);
      while (ops.load(std::memory_order_relaxed) < budget) {
        Slot &sl = *slots[rng() % slots.size()];
        for (int k = 0; k < 4; k++) (void)post_probe(sl.a.load(), &origins[sl.origin], rng() & 1);
        ops.fetch_add(4, std::memory_order_relaxed);
      }
    };
    auto churner = [&](uint64_t s) {
      std::mt19937_64 rng(s);
      while (!stop.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 800));
        Slot &sl = *slots[rng() % slots.size()];
        pts_agent *old = sl.a.exchange(make(sl.origin));
        EXPECT_EQ(0, pts_agent_destroy(old, false));
        retired.push_back(old);
        ops.fetch_add(2, std::memory_order_relaxed);
      }
    };
    std::vector<std::thread> ts;
    ts.emplace_back(mover, seed * 7 + 1);
    ts.emplace_back(mover, seed * 7 + 2);
    if (churn) ts.emplace_back(churner, seed * 7 + 3);
    std::thread p1(producer, seed * 7 + 4), p2(producer, seed * 7 + 5);
    p1.join();
    p2.join();
    stop.store(true);
    for (auto &t : ts) t.join();
  }

  // Drains, then checks each group at rest; then shuts down and checks
  // every task ran or was cancelled once.
  void check_and_finish() {
    for (auto &s : slots) EXPECT_EQ(0, pts_agent_drain(s->a.load()));
    for (int i = 0; i < kOrigins; i++) {
      std::vector<pts_agent *> members;
      for (auto &s : slots)
        if (s->origin == i) members.push_back(s->a.load());
      int t = group_thread(members);
      EXPECT_GE(t, 0) << origins[i].name << " is split at rest";
      if (t >= 0) {
        EXPECT_EQ(t, placed_thread(pool, origins[i].name.c_str())) << origins[i].name;
      }
    }
    EXPECT_EQ(0, pts_pool_shutdown(pool));
    for (auto &s : slots) pts_agent_unref(s->a.load());
    for (pts_agent *a : retired) pts_agent_unref(a);
    for (Origin &o : origins) {
      EXPECT_EQ(0u, o.overlaps.load()) << o.name << ": tasks of one origin ran at once";
      EXPECT_EQ(o.posted.load(), o.ran.load() + o.cancelled.load()) << o.name;
      EXPECT_EQ(o.ran.load(), o.plain) << o.name;
    }
  }
};

void racing_moves(bool balance, bool churn) {
  uint64_t total = racing_ops(), done = 0;
  int rounds = 0;
  for (uint64_t seed = 1; done < total; seed++, rounds++) {
    pts_policy policy = kPolicies[seed % 4];
    Round r(policy, balance, seed, "r" + std::to_string(seed));
    r.run(std::min<uint64_t>(total / 8 + 1, total - done), seed, churn);
    done += r.ops.load();
    r.check_and_finish();
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "round " << seed << " (" << pts_policy_name(policy) << ", balance "
                    << balance << ") failed";
      return;
    }
  }
  std::printf("racing moves (balance %d, churn %d): %llu operations in %d rounds\n", balance,
              churn, static_cast<unsigned long long>(done), rounds);
}

TEST_F(GroupTest, RacingMovesNeverSplitAGroup) { racing_moves(false, false); }

TEST_F(GroupTest, RacingMovesWithTheBalancerNeverSplitAGroup) { racing_moves(true, false); }

TEST_F(GroupTest, RacingMovesDestroysAndNewMembersNeverSplitAGroup) {
  racing_moves(true, true);
}

// The reproduction: X and Y of one origin on thread 0; two threads
// ask X and Y to two threads at once (differing half the time); each gets
// four tasks; at rest they are together, where the last request applied
// sent the group.
TEST_F(GroupTest, TwoMembersAskedToTwoThreadsAtOnceEndTogether) {
  ASSERT_NO_FATAL_FAILURE(
      StartPool(pool_opts(2, PTS_POLICY_ROUND_ROBIN), {agent_opts("xy", 0), agent_opts("xy", 0)}));
  Origin o;
  pts_agent *x = agent(0), *y = agent(1);
  int rounds = stress_long() ? 20000 : under_tsan() ? 500 : 2000;
  std::mt19937_64 rng(35);
  for (int i = 0; i < rounds; i++) {
    int tx = static_cast<int>(rng() & 1), ty = static_cast<int>(rng() & 1);
    std::atomic<int> go{0};
    std::thread mx([&] {
      go.fetch_add(1);
      while (go.load() < 2) {
      }
      EXPECT_EQ(0, pts_agent_move(x, tx));
    });
    std::thread my([&] {
      go.fetch_add(1);
      while (go.load() < 2) {
      }
      EXPECT_EQ(0, pts_agent_move(y, ty));
    });
    mx.join();
    my.join();
    for (int k = 0; k < 4; k++) {
      ASSERT_TRUE(post_probe(x, &o, k & 1));
      ASSERT_TRUE(post_probe(y, &o, k & 1));
    }
    ASSERT_EQ(0, pts_agent_drain(x));
    ASSERT_EQ(0, pts_agent_drain(y));
    int t = group_thread({x, y});
    ASSERT_GE(t, 0) << "round " << i << ": asked X -> " << tx << " and Y -> " << ty
                    << "; at rest X on " << pts_agent_thread(x) << ", Y on "
                    << pts_agent_thread(y);
    ASSERT_TRUE(t == tx || t == ty) << "round " << i << ": the group went where nobody asked";
  }
  ShutdownPool();
  EXPECT_EQ(0u, o.overlaps.load());
  EXPECT_EQ(o.posted.load(), o.ran.load());
  EXPECT_EQ(o.ran.load(), o.plain);
}

// The balancer alone (fair, no explicit moves): three groups of three
// agents start on thread 0 of two. Each phase floods the groups of the
// busiest thread, so an idle thread keeps asking for one; every move must
// take a whole group, and no two tasks of one origin may run at once.
TEST_F(GroupTest, TheBalancerMovesWholeGroups) {
  constexpr int kGroups = 3, kSize = 3;
  pts_pool_options po = pool_opts(2, PTS_POLICY_FAIR);
  po.balance = true;
  ASSERT_NO_FATAL_FAILURE(StartPool(po));
  Origin origins[kGroups];
  std::vector<pts_agent *> members[kGroups];
  for (int g = 0; g < kGroups; g++) {
    origins[g].name = "balanced-" + std::to_string(g);
    origins[g].task_ns = 2000;
    for (int m = 0; m < kSize; m++) {
      // The first places the origin on thread 0; the rest follow it.
      pts_agent_options ao = agent_opts(origins[g].name.c_str(), m == 0 ? 0 : -1);
      pts_agent *a = nullptr;
      ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &a));
      members[g].push_back(a);
    }
  }
  int phases = stress_long() ? 90 : under_tsan() ? 8 : 14;
  uint64_t posts = 0;
  for (int ph = 0; ph < phases; ph++) {
    // The busiest thread now: the one holding most groups.
    int on0 = 0;
    for (int g = 0; g < kGroups; g++) on0 += pts_agent_thread(members[g][0]) == 0;
    int busy = on0 * 2 >= kGroups ? 0 : 1;
    // Longer than the balancer's residence; a backlog of up to 512 tasks
    // per group keeps the busy thread saturated.
    uint64_t end = now_ns() + 110000000;
    while (now_ns() < end) {
      bool posted = false;
      for (int g = 0; g < kGroups; g++) {
        Origin &o = origins[g];
        if (pts_agent_thread(members[g][0]) != busy ||
            o.posted.load() - o.ran.load() - o.cancelled.load() > 512)
          continue;
        for (pts_agent *a : members[g])
          for (int k = 0; k < 8; k++) posts += post_probe(a, &o, k & 1);
        posted = true;
      }
      if (!posted) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    for (int g = 0; g < kGroups; g++)
      for (pts_agent *a : members[g]) ASSERT_EQ(0, pts_agent_drain(a));
  }
  uint64_t moves = 0;
  for (int g = 0; g < kGroups; g++) {
    ASSERT_GE(group_thread(members[g]), 0) << origins[g].name << " is split at rest";
    // Moved together: every member has moved as often as the first.
    for (pts_agent *a : members[g]) {
      pts_agent_stats s, s0;
      ASSERT_EQ(0, pts_agent_get_stats(a, &s));
      ASSERT_EQ(0, pts_agent_get_stats(members[g][0], &s0));
      EXPECT_EQ(s0.moves, s.moves) << origins[g].name;
    }
    pts_agent_stats s;
    ASSERT_EQ(0, pts_agent_get_stats(members[g][0], &s));
    moves += s.moves;
  }
  EXPECT_GT(moves, 0u) << "the balancer moved no group: the test checked nothing";
  std::printf("balancer: %llu group moves, %llu posts\n", static_cast<unsigned long long>(moves),
              static_cast<unsigned long long>(posts));
  ShutdownPool();
  for (int g = 0; g < kGroups; g++) {
    EXPECT_EQ(0u, origins[g].overlaps.load()) << origins[g].name;
    EXPECT_EQ(origins[g].posted.load(), origins[g].ran.load());
    EXPECT_EQ(origins[g].ran.load(), origins[g].plain);
  }
}

}  // namespace
}  // namespace ptstest
