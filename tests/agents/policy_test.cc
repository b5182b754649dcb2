// tests/agents/policy_test.cc: the defining property of each inter-loop
// policy, on one thread: round-robin alternates with equal loads; strict
// runs the more urgent loop first, then the longest waiting; fair gives each
// loop its weight share of CPU within 5% and no banked credit; randomized is
// reproducible from its seed and roughly proportional to weights;
// time-partitioned starts a loop's tasks only inside its own slots, whatever
// its neighbour does.
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "tests/agents/util.h"

namespace ptstest {
namespace {

using PolicyTest = AgentsTest;

struct Log {
  std::mutex mu;
  std::string s;
  void add(char c) {
    std::lock_guard<std::mutex> g(mu);
    s.push_back(c);
  }
  std::string get() {
    std::lock_guard<std::mutex> g(mu);
    return s;
  }
};

struct Mark {
  Log *log;
  char c;
};

pts_value mark_cb(void *data, int status) {
  auto *m = static_cast<Mark *>(data);
  if (status == 0) m->log->add(m->c);
  return pts_undefined();
}

// Posts n marking tasks at a priority.
void post_marks(pts_agent *a, Mark *m, int n, int priority) {
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.priority = priority;
  for (int i = 0; i < n; i++)
    ASSERT_EQ(0, pts_agent_post_task(a, &po, mark_cb, m, nullptr, nullptr, nullptr));
}

// One thread; a gate agent blocks it while the others get their work, so
// every decision is taken with all loads present.
struct OneThread {
  pts_pool *p = nullptr;
  pts_agent *gate = nullptr;
  Blocker blk;
  explicit OneThread(pts_policy policy, uint64_t seed = 1, uint64_t slot_ns = 0) {
    pts_pool_options o = pool_opts(1, policy, seed, slot_ns);
    EXPECT_EQ(0, pts_pool_new(&o, &p));
    EXPECT_EQ(0, pts_agent_new(p, nullptr, &gate));
  }
  pts_agent *agent(uint32_t weight = 1) {
    pts_agent_options ao = agent_opts(nullptr, -1, weight);
    pts_agent *a = nullptr;
    EXPECT_EQ(0, pts_agent_new(p, &ao, &a));
    return a;
  }
  ~OneThread() {
    EXPECT_EQ(0, pts_pool_shutdown(p));
    pts_agent_unref(gate);
  }
};

TEST_F(PolicyTest, RoundRobinAlternatesWithEqualLoads) {
  OneThread t(PTS_POLICY_ROUND_ROBIN);
  pts_agent *a = t.agent(), *b = t.agent(), *c = t.agent(5);
  ASSERT_TRUE(t.blk.block(t.gate));
  Log log;
  Mark ma{&log, 'A'}, mb{&log, 'B'}, mc{&log, 'C'};
  post_marks(a, &ma, 4, PTS_PRIORITY_BACKGROUND);
  post_marks(b, &mb, 4, PTS_PRIORITY_USER_BLOCKING);  // urgency does not matter
  post_marks(c, &mc, 4, PTS_PRIORITY_USER_VISIBLE);   // nor does weight
  t.blk.release.store(true);
  for (auto *x : {a, b, c}) ASSERT_EQ(0, pts_agent_drain(x));
  EXPECT_EQ("ABCABCABCABC", log.get());
  for (auto *x : {a, b, c}) pts_agent_unref(x);
}

TEST_F(PolicyTest, StrictRunsMostUrgentLoopFirstThenOldest) {
  OneThread t(PTS_POLICY_STRICT);
  pts_agent *a = t.agent(), *b = t.agent(), *c = t.agent(), *d = t.agent();
  ASSERT_TRUE(t.blk.block(t.gate));
  Log log;
  Mark ma{&log, 'A'}, mb{&log, 'B'}, mc{&log, 'C'}, md{&log, 'D'};
  post_marks(a, &ma, 3, PTS_PRIORITY_BACKGROUND);
  post_marks(b, &mb, 3, PTS_PRIORITY_USER_BLOCKING);
  post_marks(c, &mc, 2, PTS_PRIORITY_USER_VISIBLE);
  post_marks(d, &md, 2, PTS_PRIORITY_USER_VISIBLE);
  t.blk.release.store(true);
  for (auto *x : {a, b, c, d}) ASSERT_EQ(0, pts_agent_drain(x));
  // Equal urgency (C, D): the loop waiting longest goes first, so they
  // alternate; background (A) only when nothing more urgent is left.
  EXPECT_EQ("BBBCDCDAAA", log.get());
  for (auto *x : {a, b, c, d}) pts_agent_unref(x);
}

// A task that busy-waits and posts itself again until told to stop.
struct Spinner {
  pts_agent *a = nullptr;
  uint64_t busy = 100000;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> runs{0};
  std::vector<uint64_t> starts;  // written on the agent's thread only
  bool record = false;
  static void run(void *data, int status) {
    auto *s = static_cast<Spinner *>(data);
    if (status != 0) return;
    if (s->record) s->starts.push_back(now_ns());
    busy_ns(s->busy);
    s->runs.fetch_add(1);
    if (s->stop.load()) return;
    pts_scheduler *sch = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(s->a)));
    EXPECT_EQ(0, pts_scheduler_post(sch, run, s, nullptr));
  }
  void start() { EXPECT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, run, this)); }
  void finish() {
    stop.store(true);
    EXPECT_EQ(0, pts_agent_drain(a));
  }
};

uint64_t cpu_of(pts_agent *a) {
  pts_agent_stats st;
  EXPECT_EQ(0, pts_agent_get_stats(a, &st));
  return st.cpu_ns;
}

TEST_F(PolicyTest, FairGivesWeightShareOfCpu) {
  OneThread t(PTS_POLICY_FAIR);
  const uint32_t weights[3] = {2, 3, 5};
  pts_agent *ag[3];
  Spinner sp[3];
  for (int i = 0; i < 3; i++) {
    ag[i] = t.agent(weights[i]);
    sp[i].a = ag[i];
  }
  for (auto &s : sp) s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  uint64_t c0[3], c1[3];
  for (int i = 0; i < 3; i++) c0[i] = cpu_of(ag[i]);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  for (int i = 0; i < 3; i++) c1[i] = cpu_of(ag[i]);
  for (auto &s : sp) s.finish();
  double total = 0;
  for (int i = 0; i < 3; i++) total += static_cast<double>(c1[i] - c0[i]);
  ASSERT_GT(total, 0);
  for (int i = 0; i < 3; i++) {
    double share = static_cast<double>(c1[i] - c0[i]) / total;
    double want = weights[i] / 10.0;
    EXPECT_NEAR(share, want, want * 0.05) << "agent " << i << " weight " << weights[i];
  }
  for (auto *a : ag) pts_agent_unref(a);
}

TEST_F(PolicyTest, FairNewlyReadyLoopBanksNoCredit) {
  OneThread t(PTS_POLICY_FAIR);
  pts_agent *a = t.agent(), *b = t.agent();
  Spinner sa, sb;
  sa.a = a;
  sb.a = b;
  sa.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // b idle
  sb.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  uint64_t a0 = cpu_of(a), b0 = cpu_of(b);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  uint64_t a1 = cpu_of(a), b1 = cpu_of(b);
  sa.finish();
  sb.finish();
  double share_b = static_cast<double>(b1 - b0) / static_cast<double>((a1 - a0) + (b1 - b0));
  // Without the floor b would own the thread until it caught up (~150 ms).
  EXPECT_NEAR(share_b, 0.5, 0.1);
  pts_agent_unref(a);
  pts_agent_unref(b);
}

std::string lottery(uint64_t seed) {
  OneThread t(PTS_POLICY_RANDOMIZED, seed);
  pts_agent *a = t.agent(1), *b = t.agent(3);
  EXPECT_TRUE(t.blk.block(t.gate));
  Log log;
  Mark ma{&log, 'A'}, mb{&log, 'B'};
  post_marks(a, &ma, 300, PTS_PRIORITY_USER_VISIBLE);
  post_marks(b, &mb, 300, PTS_PRIORITY_USER_VISIBLE);
  t.blk.release.store(true);
  EXPECT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0, pts_agent_drain(b));
  pts_agent_unref(a);
  pts_agent_unref(b);
  return log.get();
}

TEST_F(PolicyTest, RandomizedIsSeededAndWeighted) {
  std::string r1 = lottery(42), r2 = lottery(42), r3 = lottery(43);
  ASSERT_EQ(600u, r1.size());
  EXPECT_EQ(r1, r2);  // same seed, same ready sets: same choices
  EXPECT_NE(r1, r3);
  // While both are ready (the first 200 picks, B has 300 tasks), B wins
  // about 3 draws in 4.
  for (const std::string &r : {r1, r3}) {
    size_t bs = 0;
    for (size_t i = 0; i < 200; i++) bs += r[i] == 'B';
    EXPECT_GE(bs, 130u) << r;
    EXPECT_LE(bs, 170u) << r;
  }
}

// Every start of s's tasks lies in a slot owned by s (slot index k mod n ==
// mine), allowing tol_ns after a boundary for a step decided just before it.
void expect_in_own_slots(const std::vector<uint64_t> &starts, uint64_t origin,
                         uint64_t slot, unsigned n, unsigned mine, uint64_t tol_ns) {
  size_t bad = 0;
  for (uint64_t t : starts) {
    ASSERT_GE(t, origin);
    uint64_t k = (t - origin) / slot;
    if (k % n == mine) continue;
    if ((t - origin) - k * slot < tol_ns && (k + n - 1) % n == mine) continue;
    bad++;
  }
  EXPECT_EQ(0u, bad) << "of " << starts.size() << " starts";
}

TEST_F(PolicyTest, TimePartitionedKeepsSlotsWhateverTheNeighbourDoes) {
  const uint64_t slot = 5000000;  // 5 ms
  // A step decided just before a boundary starts its callback a little after.
  const uint64_t tol = under_tsan() ? 1500000 : 500000;
  pts_pool *p = NewPool(1, PTS_POLICY_TIME_PARTITIONED, 1, slot);
  pts_agent *a, *b;
  ASSERT_EQ(0, pts_agent_new(p, nullptr, &a));  // slot 0
  ASSERT_EQ(0, pts_agent_new(p, nullptr, &b));  // slot 1
  ASSERT_TRUE(wait_until([&] {
    pts_thread_stats ts;
    pts_pool_get_thread_stats(p, 0, &ts);
    return ts.agents == 2;
  }));
  pts_thread_stats ts0;
  ASSERT_EQ(0, pts_pool_get_thread_stats(p, 0, &ts0));
  // Phase 1: b idle; a saturated. a's tasks start only in its slots and the
  // thread idles through b's.
  Spinner sa;
  sa.a = a;
  sa.busy = 200000;
  sa.record = true;
  uint64_t t0 = now_ns();
  sa.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  sa.finish();
  uint64_t elapsed = now_ns() - t0;
  // a ran about half of the time: the thread idled through b's slots. (Task
  // starts, not cpu_ns: a core stolen by another process only lowers them.)
  EXPECT_LT(static_cast<double>(sa.starts.size() * sa.busy), 0.6 * static_cast<double>(elapsed))
      << "elapsed " << elapsed << " starts " << sa.starts.size();
  std::vector<uint64_t> phase1 = sa.starts;
  ASSERT_GT(phase1.size(), 20u);
  expect_in_own_slots(phase1, ts0.frame_origin_ns, slot, 2, 0, tol);
  // Phase 2: both saturated: same boundaries.
  Spinner sa2, sb;
  sa2.a = a;
  sb.a = b;
  sa2.busy = sb.busy = 200000;
  sa2.record = sb.record = true;
  sa2.start();
  sb.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  sa2.finish();
  sb.finish();
  pts_thread_stats ts1;
  ASSERT_EQ(0, pts_pool_get_thread_stats(p, 0, &ts1));
  EXPECT_EQ(ts0.frame_origin_ns, ts1.frame_origin_ns);
  ASSERT_GT(sa2.starts.size(), 20u);
  ASSERT_GT(sb.starts.size(), 20u);
  expect_in_own_slots(sa2.starts, ts1.frame_origin_ns, slot, 2, 0, tol);
  expect_in_own_slots(sb.starts, ts1.frame_origin_ns, slot, 2, 1, tol);
  EXPECT_EQ(0, pts_pool_shutdown(p));
  pts_agent_unref(a);
  pts_agent_unref(b);
}

}  // namespace
}  // namespace ptstest
