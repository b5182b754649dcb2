// tests/agents/pool_test.cc: the pool's basic contract: policy names,
// placement (one origin per thread while threads suffice, same origin
// co-located, explicit placement), cross-thread postTask with its result on
// the agent's thread or on reply_to's loop, promise adoption, bad options,
// ordinary tasks from any thread, remote controllers and statistics.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/agents/util.h"

namespace ptstest {
namespace {

using PoolTest = AgentsTest;

TEST_F(PoolTest, PolicyNames) {
  EXPECT_STREQ("strict", pts_policy_name(PTS_POLICY_STRICT));
  EXPECT_STREQ("round-robin", pts_policy_name(PTS_POLICY_ROUND_ROBIN));
  EXPECT_STREQ("fair", pts_policy_name(PTS_POLICY_FAIR));
  EXPECT_STREQ("randomized", pts_policy_name(PTS_POLICY_RANDOMIZED));
  EXPECT_STREQ("time-partitioned", pts_policy_name(PTS_POLICY_TIME_PARTITIONED));
  EXPECT_STREQ("quantized", pts_policy_name(PTS_POLICY_QUANTIZED));
  EXPECT_EQ(nullptr, pts_policy_name(PTS_POLICY_COUNT));
  EXPECT_EQ(nullptr, pts_policy_name(-1));
}

TEST_F(PoolTest, PoolOptionsChecked) {
  pts_pool *p = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_pool_new(nullptr, nullptr));
  pts_pool_options o = pool_opts(1, static_cast<pts_policy>(PTS_POLICY_COUNT));
  EXPECT_EQ(PTS_EINVAL, pts_pool_new(&o, &p));
  EXPECT_EQ(nullptr, p);
  ASSERT_EQ(0, pts_pool_new(nullptr, &p));  // defaults: one thread per core
  EXPECT_EQ(std::thread::hardware_concurrency(), pts_pool_threads(p));
  EXPECT_EQ(0, pts_pool_shutdown(p));
}

// Placement rule of agents.h.
TEST_F(PoolTest, OneOriginPerThreadThenFewestAgents) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(3, PTS_POLICY_STRICT)));
  pts_agent_options ao;
  pts_agent *a1, *b1, *c1, *a2, *d1, *e1;
  ao = agent_opts("https://a.example");
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &a1));
  ao = agent_opts("https://b.example");
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &b1));
  ao = agent_opts("https://c.example");
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &c1));
  // One origin per thread while threads suffice.
  EXPECT_EQ(0, pts_agent_thread(a1));
  EXPECT_EQ(1, pts_agent_thread(b1));
  EXPECT_EQ(2, pts_agent_thread(c1));
  // Same origin: co-located, even though another thread has fewer agents.
  ao = agent_opts("https://a.example");
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &a2));
  EXPECT_EQ(0, pts_agent_thread(a2));
  // Threads exhausted: the thread with the fewest agents (lowest on ties).
  ao = agent_opts("https://d.example");
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &d1));
  EXPECT_EQ(1, pts_agent_thread(d1));
  ao = agent_opts("https://e.example");
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &e1));
  EXPECT_EQ(2, pts_agent_thread(e1));
  // An origin whose agents are all gone frees its thread for a new origin.
  ASSERT_EQ(0, pts_agent_destroy(b1, true));
  ASSERT_EQ(0, pts_agent_destroy(d1, true));
  pts_agent *f1;
  ao = agent_opts("https://f.example");
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &f1));
  EXPECT_EQ(1, pts_agent_thread(f1));
  pts_thread_stats ts;
  ASSERT_EQ(0, pts_pool_get_thread_stats(pool(), 0, &ts));
  EXPECT_TRUE(wait_until([&] {
    pts_pool_get_thread_stats(pool(), 0, &ts);
    return ts.agents == 2;
  }));
  EXPECT_EQ(PTS_EINVAL, pts_pool_get_thread_stats(pool(), 3, &ts));
}

TEST_F(PoolTest, ExplicitAndAnonymousPlacement) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_ROUND_ROBIN)));
  pts_agent_options ao = agent_opts("x", 1);
  pts_agent *x, *y, *n1, *n2;
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &x));
  EXPECT_EQ(1, pts_agent_thread(x));
  ao = agent_opts("x", 0);  // same origin, explicitly elsewhere
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &y));
  EXPECT_EQ(0, pts_agent_thread(y));
  ao = agent_opts("x", 2);
  pts_agent *bad = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_agent_new(pool(), &ao, &bad));
  EXPECT_EQ(nullptr, bad);
  EXPECT_EQ(PTS_EINVAL, pts_agent_new(pool(), nullptr, nullptr));
  // NULL origin: each agent is its own origin.
  ASSERT_NO_FATAL_FAILURE(AddAgent(nullptr, &n1));
  ASSERT_NO_FATAL_FAILURE(AddAgent(nullptr, &n2));
  EXPECT_NE(pts_agent_thread(n1), pts_agent_thread(n2));
}

struct ThreadProbe {
  std::atomic<int> calls{0};
  std::thread::id task_thread, done_thread;
  std::atomic<bool> saw_loop{false};
  pts_agent *agent = nullptr;
};

pts_value probe_task(void *data, int status) {
  auto *t = static_cast<ThreadProbe *>(data);
  if (status != 0) return pts_undefined();
  t->task_thread = std::this_thread::get_id();
  // The agent's loop is usable from its own tasks.
  pts_loop *l = pts_agent_loop(t->agent);
  t->saw_loop.store(l != nullptr && pts_loop_now(l) > 0);
  return pts_int(42);
}

void probe_done(void *data, int status, pts_value v) {
  auto *t = static_cast<ThreadProbe *>(data);
  t->done_thread = std::this_thread::get_id();
  EXPECT_EQ(0, status);
  EXPECT_EQ(PTS_VALUE_INT, v.kind);
  EXPECT_EQ(42, v.u.i);
  t->calls.fetch_add(1);
}

TEST_F(PoolTest, PostTaskResultOnAgentThread) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  ThreadProbe t;
  t.agent = a;
  ASSERT_EQ(0, pts_agent_post_task(a, nullptr, probe_task, &t, probe_done, &t, nullptr));
  ASSERT_TRUE(wait_until([&] { return t.calls.load() == 1; }));
  EXPECT_TRUE(t.saw_loop.load());
  EXPECT_EQ(t.task_thread, t.done_thread);
  EXPECT_NE(std::this_thread::get_id(), t.task_thread);
  EXPECT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(1, t.calls.load());
}

// A task of B that records B's thread.
void record_thread(void *data, int status) {
  if (status == 0) *static_cast<std::thread::id *>(data) = std::this_thread::get_id();
}

TEST_F(PoolTest, ResultDeliveredOnReplyToLoop) {
  ASSERT_NO_FATAL_FAILURE(
      StartPool(pool_opts(2, PTS_POLICY_STRICT), {agent_opts("a", 0), agent_opts("b", 1)}));
  pts_agent *a = agent(0), *b = agent(1);
  std::thread::id b_thread;
  ASSERT_EQ(0, pts_agent_queue_task(b, PTS_SOURCE_GENERIC, record_thread, &b_thread));
  ASSERT_EQ(0, pts_agent_drain(b));
  ThreadProbe t;
  t.agent = a;
  ASSERT_EQ(0, pts_agent_post_task(a, nullptr, probe_task, &t, probe_done, &t, b));
  ASSERT_TRUE(wait_until([&] { return t.calls.load() == 1; }));
  EXPECT_EQ(b_thread, t.done_thread);
  EXPECT_NE(t.task_thread, t.done_thread);
  // The delivery was a message task on B: counted as a FIFO-class task.
  EXPECT_EQ(0, pts_agent_drain(b));
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(b, &st));
  EXPECT_EQ(2u, st.tasks_run[PTS_CLASS_FIFO]);
}

pts_value throw_type_error(void *, int status) {
  if (status != 0) return pts_undefined();
  return pts_error_value(PTS_ETYPE, "bad");
}

pts_value return_settled_promise(void *data, int status) {
  if (status != 0) return pts_undefined();
  pts_agent *a = static_cast<pts_agent *>(data);
  pts_promise *pr;
  if (pts_promise_new(pts_agent_loop(a), &pr) != 0) return pts_undefined();
  pts_promise_resolve(pr, pts_int(7));
  pts_value v = pts_promise_value(pr);
  pts_promise_unref(pr);
  return v;
}

TEST_F(PoolTest, ErrorResultAndPromiseAdoption) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  Result r1, r2;
  ASSERT_EQ(0, pts_agent_post_task(a, nullptr, throw_type_error, nullptr, result_fn, &r1, nullptr));
  ASSERT_EQ(0, pts_agent_post_task(a, nullptr, return_settled_promise, a, result_fn, &r2, nullptr));
  ASSERT_EQ(0, pts_agent_drain(a));
  ASSERT_TRUE(wait_until([&] { return r1.calls.load() == 1 && r2.calls.load() == 1; }));
  EXPECT_EQ(PTS_EERROR, r1.status.load());
  EXPECT_EQ(PTS_ETYPE, r1.err_code.load());
  EXPECT_EQ(0, r2.status.load());
  EXPECT_EQ(7, r2.ival.load());
}

pts_value never_called(void *data, int) {
  static_cast<std::atomic<int> *>(data)->fetch_add(1);
  return pts_undefined();
}

TEST_F(PoolTest, BadOptionsFailAtTheCall) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT), 2));
  pts_agent *a = agent(0), *b = agent(1);
  std::atomic<int> called{0};
  Result r;
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.priority = 3;
  EXPECT_EQ(PTS_ETYPE, pts_agent_post_task(a, &po, never_called, &called, result_fn, &r, nullptr));
  po.priority = PTS_PRIORITY_UNSET;
  po.delay_ms = -1;
  EXPECT_EQ(PTS_ETYPE, pts_agent_post_task(a, &po, never_called, &called, result_fn, &r, nullptr));
  po.delay_ms = 9007199254740992LL;
  EXPECT_EQ(PTS_ETYPE, pts_agent_post_task(a, &po, never_called, &called, result_fn, &r, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_agent_post_task(a, nullptr, nullptr, nullptr, result_fn, &r, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_agent_post_task(nullptr, nullptr, never_called, &called, result_fn, &r, nullptr));
  pts_remote_controller *rc_b;
  ASSERT_EQ(0, pts_remote_controller_new_async(b, PTS_PRIORITY_USER_VISIBLE, &rc_b));
  po = PTS_AGENT_POST_OPTIONS_INIT;
  po.controller = rc_b;  // another agent's controller
  EXPECT_EQ(PTS_EFOREIGN, pts_agent_post_task(a, &po, never_called, &called, result_fn, &r, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_agent_queue_task(a, PTS_SOURCE_COUNT, record_thread, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, nullptr, nullptr));
  pts_remote_controller *rc_bad = nullptr;
  EXPECT_EQ(PTS_ETYPE, pts_remote_controller_new_async(b, 3, &rc_bad));
  EXPECT_EQ(PTS_ETYPE, pts_remote_controller_set_priority(rc_b, 9, nullptr, nullptr));
  pts_value promise_reason;
  promise_reason.kind = PTS_VALUE_PROMISE;
  promise_reason.u.promise = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_remote_controller_abort(rc_b, &promise_reason, nullptr, nullptr));
  // From a thread that is not the agent's: the synchronous form refuses.
  EXPECT_EQ(PTS_EFOREIGN, pts_remote_controller_new(a, 0, &rc_bad));
  EXPECT_EQ(nullptr, pts_remote_controller_get(rc_b));
  pts_remote_controller_unref(rc_b);
  EXPECT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0, pts_agent_drain(b));
  EXPECT_EQ(0, called.load());
  EXPECT_EQ(0, r.calls.load());
}

struct Sources {
  std::mutex mu;
  std::vector<int> order;
};
struct SourceTask {
  Sources *s;
  int tag;
};
void source_task(void *data, int status) {
  auto *t = static_cast<SourceTask *>(data);
  if (status != 0) return;
  std::lock_guard<std::mutex> g(t->s->mu);
  t->s->order.push_back(t->tag);
}

// Ordinary task sources from any thread: input runs before messages.
TEST_F(PoolTest, QueueTaskOnSources) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  Blocker blk;
  ASSERT_TRUE(blk.block(a));
  Sources s;
  SourceTask m{&s, 1}, i{&s, 2};
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, source_task, &m));
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_USER_INPUT, source_task, &i));
  blk.release.store(true);
  // Both commands are in the inbox when the blocker returns. No other post
  // may race with the worker's drain here: a producer between its two push
  // steps hides the commands before its own (docs/sync.md), so a drain
  // marker sent now could hold back the input task and let the message run
  // first. Wait for both tasks, then drain.
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard<std::mutex> g(s.mu);
    return s.order.size() == 2;
  }));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ((std::vector<int>{2, 1}), s.order);
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(1u, st.tasks_run[PTS_CLASS_INPUT]);
  EXPECT_EQ(2u, st.tasks_run[PTS_CLASS_FIFO]);
}

struct DoneCount {
  std::atomic<int> calls{0};
  std::atomic<int> status{1};
};
void count_done(void *data, int status) {
  auto *d = static_cast<DoneCount *>(data);
  d->status.store(status);
  d->calls.fetch_add(1);
}

TEST_F(PoolTest, RemoteControllerAbortsAndReprioritises) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  pts_remote_controller *tc, *ac;
  ASSERT_EQ(0, pts_remote_controller_new_async(a, PTS_PRIORITY_BACKGROUND, &tc));
  ASSERT_EQ(0, pts_remote_controller_new_async(a, -1, &ac));
  // A delayed task on each: pending until aborted.
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.delay_ms = 60000;
  po.controller = tc;
  Result r1, r2;
  std::atomic<int> cb_calls{0};
  ASSERT_EQ(0, pts_agent_post_task(a, &po, never_called, &cb_calls, result_fn, &r1, nullptr));
  po.controller = ac;
  ASSERT_EQ(0, pts_agent_post_task(a, &po, never_called, &cb_calls, result_fn, &r2, nullptr));
  DoneCount sp, sp_bad, ab1, ab2;
  ASSERT_EQ(0, pts_remote_controller_set_priority(tc, PTS_PRIORITY_USER_BLOCKING, count_done, &sp));
  ASSERT_EQ(0, pts_remote_controller_set_priority(ac, PTS_PRIORITY_USER_BLOCKING, count_done, &sp_bad));
  pts_value reason = pts_int(5);
  ASSERT_EQ(0, pts_remote_controller_abort(tc, &reason, count_done, &ab1));
  ASSERT_EQ(0, pts_remote_controller_abort(ac, nullptr, count_done, &ab2));
  ASSERT_EQ(0, pts_agent_drain(a));
  ASSERT_TRUE(wait_until([&] { return r1.calls.load() == 1 && r2.calls.load() == 1; }));
  EXPECT_EQ(1, sp.calls.load());
  EXPECT_EQ(0, sp.status.load());
  EXPECT_EQ(1, sp_bad.calls.load());
  EXPECT_EQ(PTS_EINVAL, sp_bad.status.load());  // an AbortController has no priority
  EXPECT_EQ(0, ab1.status.load());
  EXPECT_EQ(0, ab2.status.load());
  EXPECT_EQ(PTS_EABORT, r1.status.load());
  EXPECT_EQ(5, r1.ival.load());  // the reason given to abort
  EXPECT_EQ(PTS_EABORT, r2.status.load());
  EXPECT_EQ(PTS_EABORT, r2.err_code.load());  // default AbortError
  EXPECT_EQ(2, cb_calls.load());  // the callbacks were told (PTS_EABORT), once each
  pts_remote_controller_unref(tc);
  pts_remote_controller_unref(ac);
}

// A post with no done callback carries its delay and its controller all
// the same (an xtask writes those fields only when a post has them).
struct Started {
  std::atomic<int> calls{0};
  std::atomic<int> status{1};
  std::atomic<int64_t> at_ns{0};
};
pts_value record_start(void *data, int status) {
  auto *s = static_cast<Started *>(data);
  s->at_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count());
  s->status.store(status);
  s->calls.fetch_add(1);
  return pts_undefined();
}

TEST_F(PoolTest, DelayWithoutDoneCallbackDelays) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.delay_ms = 40;
  Started s;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(0, pts_agent_post_task(a, &po, record_start, &s, nullptr, nullptr, nullptr));
  ASSERT_TRUE(wait_until([&] { return s.calls.load() == 1; }));
  int64_t waited = s.at_ns.load() - std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        t0.time_since_epoch()).count();
  EXPECT_GE(waited, 40 * 1000000LL);  // a delay only grows under load
  EXPECT_EQ(0, s.status.load());
}

TEST_F(PoolTest, ControllerWithoutDoneCallbackAborts) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  pts_remote_controller *rc;
  ASSERT_EQ(0, pts_remote_controller_new_async(a, PTS_PRIORITY_USER_VISIBLE, &rc));
  DoneCount ab;
  ASSERT_EQ(0, pts_remote_controller_abort(rc, nullptr, count_done, &ab));
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.controller = rc;  // aborted by the time the post applies (commands keep order)
  Started s;
  ASSERT_EQ(0, pts_agent_post_task(a, &po, record_start, &s, nullptr, nullptr, nullptr));
  ASSERT_EQ(0, pts_agent_drain(a));
  ASSERT_TRUE(wait_until([&] { return s.calls.load() == 1; }));
  EXPECT_EQ(PTS_EABORT, s.status.load());  // told, never run
  pts_remote_controller_unref(rc);
}

struct SyncRc {
  pts_agent *a;
  std::atomic<int> rc_new{1};
  pts_remote_controller *rc = nullptr;
  std::atomic<bool> got{false};
};

void make_rc_in_task(void *data, int status) {
  auto *s = static_cast<SyncRc *>(data);
  if (status != 0) return;
  s->rc_new.store(pts_remote_controller_new(s->a, PTS_PRIORITY_USER_VISIBLE, &s->rc));
  pts_controller *c = pts_remote_controller_get(s->rc);
  s->got.store(c != nullptr && pts_signal_priority(pts_controller_signal(c)) ==
                                   PTS_PRIORITY_USER_VISIBLE);
}

TEST_F(PoolTest, RemoteControllerCreatedInsideTask) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  SyncRc s;
  s.a = a;
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, make_rc_in_task, &s));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0, s.rc_new.load());
  EXPECT_TRUE(s.got.load());
  // Usable from this thread: abort a queued task through it.
  DoneCount ab;
  ASSERT_EQ(0, pts_remote_controller_abort(s.rc, nullptr, count_done, &ab));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0, ab.status.load());
  pts_remote_controller_unref(s.rc);
  ASSERT_EQ(0, pts_agent_drain(a));
}

// Start delays counted in all buckets.
uint64_t delay_hist_total(const pts_agent_stats &st) {
  uint64_t n = 0;
  for (uint64_t b : st.delay_hist) n += b;
  return n;
}

// pts_pool_pin_thread: a pool thread bound to one CPU runs only there;
// -1 lets it run on every CPU the test's own thread may use again (its
// threads start with that set); bad arguments change nothing.
TEST_F(PoolTest, PinThreadBindsAPoolThreadToOneCpuAndBack) {
  ASSERT_NO_FATAL_FAILURE(
      StartPool(pool_opts(2, PTS_POLICY_STRICT), {agent_opts("a", 0), agent_opts("b", 1)}));
  cpu_set_t allowed;
  ASSERT_EQ(0, sched_getaffinity(0, sizeof allowed, &allowed));
  int first = 0, outside = -1;
  while (!CPU_ISSET(first, &allowed)) first++;
  for (int c = CPU_SETSIZE - 1; c >= 0 && outside < 0; c--)
    if (!CPU_ISSET(c, &allowed) && c >= sysconf(_SC_NPROCESSORS_CONF)) outside = c;
  // The thread's affinity and CPU, read on agent b's thread (thread 1).
  cpu_set_t seen;
  int cpu = -1;
  auto look = [&] {
    on_agent_thread(agent(1), [&] {
      EXPECT_EQ(0, sched_getaffinity(0, sizeof seen, &seen));
      cpu = sched_getcpu();
    });
  };
  look();
  EXPECT_TRUE(CPU_EQUAL(&allowed, &seen));  // inherited

  EXPECT_EQ(PTS_EINVAL, pts_pool_pin_thread(nullptr, 1, first));
  EXPECT_EQ(PTS_EINVAL, pts_pool_pin_thread(pool(), 2, first));
  EXPECT_EQ(PTS_EINVAL, pts_pool_pin_thread(pool(), 1, -2));
  EXPECT_EQ(PTS_EINVAL, pts_pool_pin_thread(pool(), 1, CPU_SETSIZE));
  ASSERT_GE(outside, 0);
  EXPECT_EQ(PTS_EINVAL, pts_pool_pin_thread(pool(), 1, outside));  // no such CPU
  look();
  EXPECT_TRUE(CPU_EQUAL(&allowed, &seen));

  ASSERT_EQ(0, pts_pool_pin_thread(pool(), 1, first));
  look();
  EXPECT_EQ(1, CPU_COUNT(&seen));
  EXPECT_TRUE(CPU_ISSET(first, &seen));
  EXPECT_EQ(first, cpu);

  ASSERT_EQ(0, pts_pool_pin_thread(pool(), 1, -1));
  look();
  CPU_AND(&seen, &seen, &allowed);
  EXPECT_TRUE(CPU_EQUAL(&allowed, &seen));  // every allowed CPU again
}

TEST_F(PoolTest, StatisticsCountTasksDelaysAndInbox) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_ROUND_ROBIN), 1));
  pts_agent *a = agent(0);
  ASSERT_EQ(0, pts_agent_set_delay_stats(a, true));  // off by default
  // Attached and idle first, so the blocker runs in place (docs/agents.md,
  // "Hot paths") whatever the timing of the agent's creation.
  ASSERT_EQ(0, pts_agent_drain(a));
  Blocker blk;
  ASSERT_TRUE(blk.block(a));
  const int n = 30;
  int64_t v = 1;
  Result done;
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  for (int i = 0; i < n; i++) {
    po.priority = i % 3;
    ASSERT_EQ(0, pts_agent_post_task(a, &po, return_int, &v, result_fn, &done, nullptr));
  }
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(static_cast<uint64_t>(n), st.inbox_depth);  // the agent is busy
  blk.release.store(true);
  // Every task done before the drain marker is sent: a post racing the
  // worker's drain could split the inbox into two passes (QueueTaskOnSources).
  ASSERT_TRUE(wait_until([&] { return done.calls.load() == n; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(10u, st.tasks_run[PTS_CLASS_LOW]);
  EXPECT_EQ(11u, st.tasks_run[PTS_CLASS_FIFO]);  // 10 + the blocking task
  EXPECT_EQ(10u, st.tasks_run[PTS_CLASS_HIGH]);
  EXPECT_EQ(0u, st.tasks_run[PTS_CLASS_INPUT]);
  EXPECT_EQ(static_cast<uint64_t>(n), delay_hist_total(st));
  EXPECT_GT(st.cpu_ns, 0u);
  EXPECT_EQ(0u, st.inbox_depth);
  // The depth seen at a drain: the step that ends the blocker's in-place run
  // applies the first post (it has a done callback: no in-place run), and
  // the pass that follows finds the other n - 1.
  EXPECT_GE(st.inbox_max, static_cast<uint64_t>(n - 1));
  pts_thread_stats ts;
  ASSERT_EQ(0, pts_pool_get_thread_stats(pool(), 0, &ts));
  EXPECT_GE(ts.steps, static_cast<uint64_t>(n + 1));
  EXPECT_GE(ts.busy_ns, st.cpu_ns);
  EXPECT_EQ(1u, ts.agents);
}

// tasks_run counts an idle callback in PTS_CLASS_IDLE (the worker maps
// the step's urgency to its class), beside a generic task in FIFO.
TEST_F(PoolTest, AnIdleCallbackCountsInTheIdleClass) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_ROUND_ROBIN), 2));
  pts_agent *a = agent(0);
  std::atomic<int> idle_ran{0};
  on_agent_thread(a, [&] {
    EXPECT_EQ(0, pts_request_idle_callback(
                     pts_loop_default_global(pts_agent_loop(a)),
                     [](void *d, int status, const pts_idle_deadline *) {
                       if (status == 0) static_cast<std::atomic<int> *>(d)->fetch_add(1);
                     },
                     &idle_ran, 0, nullptr));
  });
  ASSERT_TRUE(wait_until([&] { return idle_ran.load() == 1; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(1u, st.tasks_run[PTS_CLASS_IDLE]);
  EXPECT_EQ(1u, st.tasks_run[PTS_CLASS_FIFO]);  // on_agent_thread's task
  EXPECT_EQ(0u, st.tasks_run[PTS_CLASS_LOW] + st.tasks_run[PTS_CLASS_HIGH] +
                    st.tasks_run[PTS_CLASS_INPUT]);
}

// pts_agent_set_delay_stats: posts made while it is off (the default, since
// 2.0) are not timed, so delay_hist leaves them out (plain posts and posts
// with a done callback alike) while every other statistic counts them; on,
// posts count; off again, they do not.
TEST_F(PoolTest, DelayStatisticsCanBeTurnedOffAndOn) {
  EXPECT_EQ(PTS_EINVAL, pts_agent_set_delay_stats(nullptr, false));
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  auto hist_total = [&] {
    pts_agent_stats st;
    EXPECT_EQ(0, pts_agent_get_stats(a, &st));
    return delay_hist_total(st);
  };
  const int n = 20;
  int64_t v = 1;
  Result done;
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  for (int i = 0; i < n; i++) {
    ASSERT_EQ(0, pts_agent_post_task(a, &po, return_int, &v, nullptr, nullptr, nullptr));
    ASSERT_EQ(0, pts_agent_post_task(a, &po, return_int, &v, result_fn, &done, nullptr));
  }
  ASSERT_TRUE(wait_until([&] { return done.calls.load() == n; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0u, hist_total());
  EXPECT_EQ(static_cast<uint64_t>(2 * n), pts_test_agent_posts(a, 0));
  ASSERT_EQ(0, pts_agent_set_delay_stats(a, true));
  for (int i = 0; i < n; i++) {
    ASSERT_EQ(0, pts_agent_post_task(a, &po, return_int, &v, nullptr, nullptr, nullptr));
    ASSERT_EQ(0, pts_agent_post_task(a, &po, return_int, &v, result_fn, &done, nullptr));
  }
  ASSERT_TRUE(wait_until([&] { return done.calls.load() == 2 * n; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(static_cast<uint64_t>(2 * n), hist_total());
  ASSERT_EQ(0, pts_agent_set_delay_stats(a, false));
  for (int i = 0; i < n; i++)
    ASSERT_EQ(0, pts_agent_post_task(a, &po, return_int, &v, result_fn, &done, nullptr));
  ASSERT_TRUE(wait_until([&] { return done.calls.load() == 3 * n; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(static_cast<uint64_t>(2 * n), hist_total());
}

// ---- plain posts run in place (docs/agents.md, "Hot paths") ----

// The order tasks ran in.
struct RunLog {
  std::mutex mu;
  std::vector<std::string> ids;
  std::atomic<int> ran{0};
  std::string Ids() {
    std::lock_guard<std::mutex> g(mu);
    std::string r;
    for (const std::string &id : ids) r += (r.empty() ? "" : ",") + id;
    return r;
  }
};
struct Tagged {
  RunLog *log;
  std::string id;
};
pts_value log_task(void *data, int status) {
  auto *t = static_cast<Tagged *>(data);
  if (status == 0) {
    std::lock_guard<std::mutex> g(t->log->mu);
    t->log->ids.push_back(t->id);
  }
  t->log->ran.fetch_add(1);
  return pts_undefined();
}

// The tasks a's scheduler ran in place so far (pts__scheduler_run_now), read
// on a's thread.
uint64_t ran_in_place(pts_agent *a) {
  std::atomic<uint64_t> n{0};
  on_agent_thread(a, [&] {
    pts__sched_stats st{};
    if (pts__sched_get_stats(pts_agent_loop(a), &st) == 0) n.store(st.ran_now);
  });
  return n.load();
}

// ---- caller-owned requests (pts_agent_post_task_req) ----

// A task posted with its own request: the callback frees the request, so
// AddressSanitizer sees any read of it by ptsched after that call.
struct ReqTask {
  pts_agent_task_req *req;
  RunLog *log;
  std::string id;
  std::atomic<int> *canceled;
};
pts_value req_task(void *data, int status) {
  auto *t = static_cast<ReqTask *>(data);
  std::free(t->req);
  t->req = nullptr;
  if (status == 0) {
    std::lock_guard<std::mutex> g(t->log->mu);
    t->log->ids.push_back(t->id);
  } else {
    EXPECT_EQ(PTS_ECANCELED, status);
    t->canceled->fetch_add(1);
  }
  t->log->ran.fetch_add(1);
  return pts_undefined();
}
pts_agent_task_req *new_req() {
  return static_cast<pts_agent_task_req *>(std::aligned_alloc(64, sizeof(pts_agent_task_req)));
}

// Since 3.0 a request is 64 bytes and holds no scheduler handle: requests
// side by side in one array, whose tasks wait in the scheduler (a
// user-blocking post behind background ones keeps them from running in
// place), each run once with their own callback data, in priority order.
// A handle written into a request would overwrite its neighbour's.
TEST_F(PoolTest, RequestsSideBySideWaitInTheSchedulerWithoutTouchingEachOther) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  ASSERT_EQ(0, pts_agent_drain(a));
  static_assert(sizeof(pts_agent_task_req) == 64, "one cache line since 3.0");
  const int n = 16;
  std::vector<pts_agent_task_req> reqs(n);
  RunLog log;
  std::vector<Tagged> t(n);
  uint64_t in_place = ran_in_place(a);
  Blocker blk;
  ASSERT_TRUE(blk.block(a));
  std::string late;
  for (int i = 0; i < n - 1; i++) {
    t[i] = Tagged{&log, "b" + std::to_string(i)};
    late += "," + t[i].id;
    ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_BACKGROUND, &reqs[i], log_task, &t[i]));
  }
  t[n - 1] = Tagged{&log, "ub"};
  ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_USER_BLOCKING, &reqs[n - 1], log_task,
                                       &t[n - 1]));
  blk.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == n; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ("ub" + late, log.Ids());
  EXPECT_LE(ran_in_place(a) - in_place, 1u);  // the others waited in a queue
}

// Plain posts with requests to an idle agent alone on its thread run in
// place, once each, in posting order, counted like pts_agent_post_task's.
TEST_F(PoolTest, PostTaskReqRunsOnceInOrderAndLeavesTheRequestToItsCallback) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  ASSERT_EQ(0, pts_agent_set_delay_stats(a, true));  // in-place runs are timed too
  ASSERT_EQ(0, pts_agent_drain(a));
  const int n = 50;
  RunLog log;
  std::atomic<int> canceled{0};
  std::vector<ReqTask> t(n);
  std::string want;
  for (int i = 0; i < n; i++) {
    t[i] = ReqTask{new_req(), &log, std::to_string(i), &canceled};
    want += (i ? "," : "") + std::to_string(i);
  }
  for (int i = 0; i < n; i++)
    ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_USER_BLOCKING, t[i].req, req_task, &t[i]));
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == n; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(want, log.Ids());
  EXPECT_EQ(0, canceled.load());
  EXPECT_EQ(static_cast<uint64_t>(n), ran_in_place(a));
  EXPECT_EQ(static_cast<uint64_t>(n), pts_test_agent_posts(a, 0));
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(static_cast<uint64_t>(n), st.tasks_run[PTS_CLASS_HIGH]);
  EXPECT_EQ(static_cast<uint64_t>(n), delay_hist_total(st));
  EXPECT_EQ(0u, st.inbox_depth);
}

// Blocker::fn as a postTask callback.
pts_value block_task(void *data, int status) {
  Blocker::fn(data, status);
  return pts_undefined();
}

// Requests that wait (the agent busy) are queued by priority like any
// postTask (the scheduler's handle lives in the request), and those still
// pending when the agent is destroyed get PTS_ECANCELED, once each.
TEST_F(PoolTest, PostTaskReqQueuesByPriorityAndIsCanceledWithTheAgent) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  RunLog log;
  std::atomic<int> canceled{0};
  std::vector<ReqTask> t(6);
  const char *ids[] = {"bg", "unset", "ub", "c1", "c2", "c3"};
  for (int i = 0; i < 6; i++) t[i] = ReqTask{new_req(), &log, ids[i], &canceled};
  Blocker b1;
  ASSERT_TRUE(b1.block(a));
  ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_BACKGROUND, t[0].req, req_task, &t[0]));
  ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_UNSET, t[1].req, req_task, &t[1]));
  ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_USER_BLOCKING, t[2].req, req_task, &t[2]));
  b1.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == 3; }));
  EXPECT_EQ("ub,unset,bg", log.Ids());
  // A blocker with a done callback runs as a queued task in a step of its
  // own, so the destroy sent while it runs is applied when it returns,
  // before anything posted meanwhile.
  Blocker b2;
  Result b2_done;
  ASSERT_EQ(0, pts_agent_post_task(a, nullptr, block_task, &b2, result_fn, &b2_done, nullptr));
  ASSERT_TRUE(wait_until([&] { return b2.started.load(); }));
  for (int i = 3; i < 6; i++)
    ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_USER_VISIBLE, t[i].req, req_task, &t[i]));
  ASSERT_EQ(0, pts_agent_destroy(a, false));
  b2.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == 6; }));
  EXPECT_EQ(3, canceled.load());
  EXPECT_EQ("ub,unset,bg", log.Ids());
  ShutdownPool();
  EXPECT_EQ(6, log.ran.load());  // nothing called twice
}

pts_value never_run(void *data, int status) {
  (void)status;
  static_cast<std::atomic<int> *>(data)->fetch_add(1);
  return pts_undefined();
}

TEST_F(PoolTest, PostTaskReqRejectsBadArgumentsAndAClosedAgent) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  alignas(64) pts_agent_task_req req;
  std::atomic<int> called{0};
  EXPECT_EQ(PTS_EINVAL, pts_agent_post_task_req(nullptr, 0, &req, never_run, &called));
  EXPECT_EQ(PTS_EINVAL, pts_agent_post_task_req(a, 0, nullptr, never_run, &called));
  EXPECT_EQ(PTS_EINVAL, pts_agent_post_task_req(a, 0, &req, nullptr, &called));
  EXPECT_EQ(PTS_ETYPE, pts_agent_post_task_req(a, PTS_PRIORITY_COUNT, &req, never_run, &called));
  EXPECT_EQ(PTS_ETYPE, pts_agent_post_task_req(a, -2, &req, never_run, &called));
  ASSERT_EQ(0, pts_agent_destroy(a, true));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_post_task_req(a, 0, &req, never_run, &called));
  ShutdownPool();
  EXPECT_EQ(0, called.load());
}

// A plain post runs in place only while no command that would outrank it
// waits behind it: applied together (as when the agent was busy), the
// higher one is picked first, whether it is a plain post of a higher
// priority or any other command (here a post with a done callback).
TEST_F(PoolTest, APostThatWouldOutrankPlainOnesAheadOfItStillRunsFirst) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  RunLog log;
  std::vector<Tagged> t = {{&log, "bg1"}, {&log, "bg2"}, {&log, "bg3"}, {&log, "ub"},
                           {&log, "bg4"}, {&log, "bg5"}, {&log, "uv-with-done"}};
  pts_agent_post_options bg = PTS_AGENT_POST_OPTIONS_INIT, ub = bg, uv = bg;
  bg.priority = PTS_PRIORITY_BACKGROUND;
  ub.priority = PTS_PRIORITY_USER_BLOCKING;
  uv.priority = PTS_PRIORITY_USER_VISIBLE;
  Blocker b1;
  ASSERT_TRUE(b1.block(a));
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(0, pts_agent_post_task(a, &bg, log_task, &t[i], nullptr, nullptr, nullptr));
  ASSERT_EQ(0, pts_agent_post_task(a, &ub, log_task, &t[3], nullptr, nullptr, nullptr));
  b1.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == 4; }));
  EXPECT_EQ("ub,bg1,bg2,bg3", log.Ids());
  Blocker b2;
  ASSERT_TRUE(b2.block(a));
  Result done;
  ASSERT_EQ(0, pts_agent_post_task(a, &bg, log_task, &t[4], nullptr, nullptr, nullptr));
  ASSERT_EQ(0, pts_agent_post_task(a, &bg, log_task, &t[5], nullptr, nullptr, nullptr));
  ASSERT_EQ(0, pts_agent_post_task(a, &uv, log_task, &t[6], result_fn, &done, nullptr));
  b2.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == 7 && done.calls.load() == 1; }));
  EXPECT_EQ("ub,bg1,bg2,bg3,uv-with-done,bg4,bg5", log.Ids());
  EXPECT_EQ(0, done.status.load());
}

// A burst of an agent alone on its thread runs up to 1,024 steps, but looks
// at the thread's control queue every 64: an agent added to the thread while
// a stream of in-place posts runs starts its task within about 64 of the
// stream's tasks, not at the end of the burst (agents/worker.c, BURST_LOOK).
struct SpinCount {
  std::atomic<int> n{0};
};
pts_value spin_count(void *data, int status) {
  auto *c = static_cast<SpinCount *>(data);
  if (status == 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(2);
    while (std::chrono::steady_clock::now() < until) {
    }
    c->n.fetch_add(1);
  }
  return pts_undefined();
}
struct SeenAt {
  SpinCount *stream;
  std::atomic<int> at{-1};
};
void note_stream_count(void *data, int status) {
  auto *s = static_cast<SeenAt *>(data);
  if (status == 0) s->at.store(s->stream->n.load());
}

TEST_F(PoolTest, AnAgentAddedDuringABurstRunsWithinAFewOfItsTasks) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  ASSERT_EQ(0, pts_agent_drain(a));
  Blocker blk;
  ASSERT_TRUE(blk.block(a));
  // 2 us each: some 20 ms of in-place tasks, so the stream is still running
  // when the agent is added even if the test thread loses its CPU for a few
  // ms (with 3,000 it once ended first under asan, in CI's parallel tests).
  const int n = 10000;
  SpinCount c;
  std::vector<pts_agent_task_req *> reqs;
  for (int i = 0; i < n; i++) {
    reqs.push_back(new_req());
    ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_USER_VISIBLE, reqs.back(),
                                         spin_count, &c));
  }
  blk.release.store(true);
  ASSERT_TRUE(wait_until([&] { return c.n.load() >= 100; }));
  pts_agent_options o = PTS_AGENT_OPTIONS_INIT;
  o.thread = 0;
  pts_agent *b;
  ASSERT_NO_FATAL_FAILURE(AddAgent(&o, &b));
  SeenAt seen{&c};
  ASSERT_EQ(0, pts_agent_queue_task(b, PTS_SOURCE_MESSAGE, note_stream_count, &seen));
  int posted_at = c.n.load();
  ASSERT_TRUE(wait_until([&] { return seen.at.load() >= 0; }));
  EXPECT_LT(seen.at.load(), n);           // during the stream
  EXPECT_LE(seen.at.load() - posted_at, 400);  // not at the burst's end (1,024)
  ASSERT_TRUE(wait_until([&] { return c.n.load() == n; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  ShutdownPool();
  for (pts_agent_task_req *r : reqs) std::free(r);
}

// A pts_agent_move request applied during a burst ends it, so the move
// comes at the next step boundary, not up to 1,024 steps later at the
// burst's end (agents/worker.c, run_step). The request sits behind 1,500
// posts and ranks above them, so they do not run in place: the first few
// steps apply the whole inbox, the request with it, and the move follows
// within a few tasks while some 3,000 remain queued.
struct OnThread {
  int idx;
  std::vector<std::thread::id> *ids;
};
pts_value note_thread(void *data, int status) {
  auto *t = static_cast<OnThread *>(data);
  if (status == 0) (*t->ids)[static_cast<size_t>(t->idx)] = std::this_thread::get_id();
  return pts_undefined();
}

TEST_F(PoolTest, AMoveAppliedDuringABurstIsMadeAtTheNextStep) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT)));
  pts_agent_options o = PTS_AGENT_OPTIONS_INIT;
  o.thread = 0;
  pts_agent *a;
  ASSERT_NO_FATAL_FAILURE(AddAgent(&o, &a));
  ASSERT_EQ(0, pts_agent_drain(a));
  Blocker blk;
  ASSERT_TRUE(blk.block(a));
  const int before = 1500, n = 3000;
  std::vector<std::thread::id> ids(n);
  std::vector<OnThread> t(n);
  std::vector<pts_agent_task_req *> reqs;
  for (int i = 0; i < n; i++) {
    t[i] = OnThread{i, &ids};
    if (i == before) {
      ASSERT_EQ(0, pts_agent_move(a, 1));
    }
    reqs.push_back(new_req());
    ASSERT_EQ(0, pts_agent_post_task_req(a, PTS_PRIORITY_USER_VISIBLE, reqs.back(), note_thread,
                                         &t[i]));
  }
  blk.release.store(true);
  ASSERT_TRUE(wait_until([&] { return pts_agent_drain(a) == 0 && pts_agent_thread(a) == 1; }));
  int moved = -1;
  for (int i = 0; i < n && moved < 0; i++) {
    if (ids[static_cast<size_t>(i)] != ids[0]) moved = i;
  }
  EXPECT_GT(moved, 0);
  EXPECT_LT(moved, 100);  // not at the burst's end
  for (int i = moved; i < n; i++) EXPECT_NE(ids[0], ids[static_cast<size_t>(i)]);
  ShutdownPool();
  for (pts_agent_task_req *r : reqs) std::free(r);
}

// Plain posts to an agent alone on its thread run in place, the first one
// too (the wake-up's poll leaves the inbox to the step), in posting order,
// and they count as postTask tasks in every statistic: enqueued, applied
// (inbox depth back to 0), run in their class, one start delay each.
TEST_F(PoolTest, PlainPostsToAnAgentAloneRunInPlaceAndAreCounted) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  ASSERT_EQ(0, pts_agent_set_delay_stats(a, true));  // in-place runs are timed too
  const int n = 50;
  RunLog log;
  std::vector<Tagged> t;
  std::string want;
  for (int i = 0; i < n; i++) {
    t.push_back({&log, std::to_string(i)});
    want += (i ? "," : "") + std::to_string(i);
  }
  // Attached and idle first: the poll that attaches the agent drains.
  ASSERT_EQ(0, pts_agent_drain(a));
  pts_agent_post_options ub = PTS_AGENT_POST_OPTIONS_INIT;
  ub.priority = PTS_PRIORITY_USER_BLOCKING;
  for (int i = 0; i < n; i++)
    ASSERT_EQ(0, pts_agent_post_task(a, &ub, log_task, &t[i], nullptr, nullptr, nullptr));
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == n; }));
  EXPECT_EQ(want, log.Ids());
  EXPECT_EQ(static_cast<uint64_t>(n), ran_in_place(a));
  EXPECT_EQ(static_cast<uint64_t>(n), pts_test_agent_posts(a, 0));
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(static_cast<uint64_t>(n), st.tasks_run[PTS_CLASS_HIGH]);
  EXPECT_EQ(1u, st.tasks_run[PTS_CLASS_FIFO]);  // the probe
  EXPECT_EQ(0u, st.tasks_run[PTS_CLASS_LOW]);
  EXPECT_EQ(static_cast<uint64_t>(n), delay_hist_total(st));
  EXPECT_EQ(0u, st.inbox_depth);
}

// One inbox pass that runs tasks of different classes in place (the pass
// counts each pick's urgency once per run of equal picks): each task counts
// in its own class.
TEST_F(PoolTest, APassOfInPlaceTasksCountsEachInItsClass) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  ASSERT_EQ(0, pts_agent_drain(a));
  RunLog log;
  Tagged t[4] = {{&log, "ub"}, {&log, "uv1"}, {&log, "uv2"}, {&log, "bg"}};
  const int prio[4] = {PTS_PRIORITY_USER_BLOCKING, PTS_PRIORITY_USER_VISIBLE,
                       PTS_PRIORITY_USER_VISIBLE, PTS_PRIORITY_BACKGROUND};
  // The blocker runs in place (an ordinary task); the posts wait behind it
  // in the inbox, and the same pass runs them in place when it returns.
  Blocker blk;
  ASSERT_TRUE(blk.block(a));
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  for (int i = 0; i < 4; i++) {
    po.priority = prio[i];
    ASSERT_EQ(0, pts_agent_post_task(a, &po, log_task, &t[i], nullptr, nullptr, nullptr));
  }
  blk.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == 4; }));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ("ub,uv1,uv2,bg", log.Ids());
  EXPECT_EQ(4u, ran_in_place(a));
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(1u, st.tasks_run[PTS_CLASS_HIGH]);
  EXPECT_EQ(1u, st.tasks_run[PTS_CLASS_LOW]);
  // The blocker, the two user-visible posts and the probe of ran_in_place.
  EXPECT_EQ(4u, st.tasks_run[PTS_CLASS_FIFO]);
}

// pts_agent_queue_task's form of log_task.
void log_queued(void *data, int status) { (void)log_task(data, status); }

// Ordinary tasks of the timer, message and generic sources queued to an agent
// alone on its thread run in place as well, in order, counted in the FIFO
// class; one of the user-input source does not (it outranks every postTask,
// so it is applied as before).
TEST_F(PoolTest, QueuedTasksToAnAgentAloneRunInPlaceAndAreCounted) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  const int n = 48;
  const pts_task_source sources[] = {PTS_SOURCE_MESSAGE, PTS_SOURCE_GENERIC, PTS_SOURCE_TIMER};
  RunLog log;
  std::vector<Tagged> t;
  std::string want;
  for (int i = 0; i <= n; i++) {
    t.push_back({&log, std::to_string(i)});
    if (i < n) want += (i ? "," : "") + std::to_string(i);
  }
  ASSERT_EQ(0, pts_agent_drain(a));  // attached and idle
  for (int i = 0; i < n; i++)
    ASSERT_EQ(0, pts_agent_queue_task(a, sources[i % 3], log_queued, &t[i]));
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == n; }));
  EXPECT_EQ(want, log.Ids());
  EXPECT_EQ(static_cast<uint64_t>(n), pts_test_agent_posts(a, 2));
  // Alone in the inbox (a drain command right behind it would keep it from
  // running in place whatever its rank).
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_USER_INPUT, log_queued, &t[n]));
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == n + 1; }));
  EXPECT_EQ(static_cast<uint64_t>(n), pts_test_agent_posts(a, 2));
  ASSERT_EQ(0, pts_agent_drain(a));
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(static_cast<uint64_t>(n), st.tasks_run[PTS_CLASS_FIFO]);
  EXPECT_EQ(1u, st.tasks_run[PTS_CLASS_INPUT]);
  EXPECT_EQ(0u, st.inbox_depth);
}

// An ordinary task shares the FIFO class with a user-visible postTask: it
// outranks a background post ahead of it, a user-blocking post behind it
// outranks it, and with user-visible posts the order is the posting order.
// Each pair is queued behind a blocker, so without the ranks the first of
// it would run in place before the second is seen.
TEST_F(PoolTest, AQueuedTaskRunsInPlaceOnlyWhenNothingBehindItWouldOutrankIt) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  RunLog log;
  std::vector<Tagged> t = {{&log, "bg"}, {&log, "m1"}, {&log, "m2"}, {&log, "ub"},
                           {&log, "m3"}, {&log, "uv1"}, {&log, "m4"}, {&log, "uv2"},
                           {&log, "m5"}};
  pts_agent_post_options bg = PTS_AGENT_POST_OPTIONS_INIT, ub = bg, uv = bg;
  bg.priority = PTS_PRIORITY_BACKGROUND;
  ub.priority = PTS_PRIORITY_USER_BLOCKING;
  uv.priority = PTS_PRIORITY_USER_VISIBLE;
  auto post = [&](const pts_agent_post_options *o, Tagged *x) {
    return pts_agent_post_task(a, o, log_task, x, nullptr, nullptr, nullptr);
  };
  Blocker b1;
  ASSERT_TRUE(b1.block(a));
  ASSERT_EQ(0, post(&bg, &t[0]));
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, log_queued, &t[1]));
  b1.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == 2; }));
  Blocker b2;
  ASSERT_TRUE(b2.block(a));
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, log_queued, &t[2]));
  ASSERT_EQ(0, post(&ub, &t[3]));
  b2.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == 4; }));
  Blocker b3;
  ASSERT_TRUE(b3.block(a));
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_TIMER, log_queued, &t[4]));
  ASSERT_EQ(0, post(&uv, &t[5]));
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, log_queued, &t[6]));
  ASSERT_EQ(0, post(&uv, &t[7]));
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, log_queued, &t[8]));
  b3.release.store(true);
  ASSERT_TRUE(wait_until([&] { return log.ran.load() == 9; }));
  EXPECT_EQ("m1,bg,ub,m2,m3,uv1,m4,uv2,m5", log.Ids());
}

// Issue 18 on an agent: a callback's microtasks run before its outcome is
// delivered (HTML "clean up after running script" before "resolve result"),
// so one that aborts the task's own remote signal makes the outcome the
// abort, as it would reject a postTask result promise.
struct AbortInMicrotask {
  pts_agent *a;
  pts_remote_controller *rc;
};
void abort_controller_mt(void *data, int status) {
  if (status == 0) pts_controller_abort(static_cast<pts_controller *>(data), nullptr);
}
pts_value queue_abort_then_return(void *data, int status) {
  if (status != 0) return pts_undefined();
  auto *x = static_cast<AbortInMicrotask *>(data);
  pts_controller *c = pts_remote_controller_get(x->rc);
  EXPECT_EQ(0, pts_queue_microtask(pts_agent_loop(x->a), abort_controller_mt, c));
  return pts_int(1);
}

TEST_F(PoolTest, AMicrotaskOfTheCallbackAbortingItsSignalMakesTheOutcomeTheAbort) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  AbortInMicrotask x{a, nullptr};
  ASSERT_EQ(0, pts_remote_controller_new_async(a, PTS_PRIORITY_USER_VISIBLE, &x.rc));
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.controller = x.rc;
  Result r;
  ASSERT_EQ(0, pts_agent_post_task(a, &po, queue_abort_then_return, &x, result_fn, &r, nullptr));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(1, r.calls.load());
  EXPECT_EQ(PTS_EABORT, r.status.load()) << "before issue 18: 0, the value 1";
  EXPECT_EQ(PTS_EABORT, r.err_code.load());
  pts_remote_controller_unref(x.rc);
}

// A remote abort is applied from the agent's inbox, with no script on the
// stack: each abort listener's microtasks run before the next listener.
struct ListenLog {
  std::string log;  // written on the agent's thread only
  pts_remote_controller *rc;
  pts_loop *loop;
  pts_event_type type;
};
struct ListenerOf {
  ListenLog *l;
  const char *name;
};
void log_mt(void *data, int status) {
  auto *n = static_cast<ListenerOf *>(data);
  if (status == 0) n->l->log += std::string("m") + n->name + ",";
}
void log_and_queue(void *data, const pts_event *) {
  auto *n = static_cast<ListenerOf *>(data);
  n->l->log += std::string(n->name) + ",";
  EXPECT_EQ(0, pts_queue_microtask(n->l->loop, log_mt, n));
}
ListenerOf first_listener, second_listener;
void add_two_listeners(void *data, int status) {
  if (status != 0) return;
  auto *l = static_cast<ListenLog *>(data);
  pts_signal *s = pts_controller_signal(pts_remote_controller_get(l->rc));
  first_listener = {l, "1"};
  second_listener = {l, "2"};
  EXPECT_EQ(0, pts_signal_add_listener(s, l->type, log_and_queue, &first_listener, false));
  EXPECT_EQ(0, pts_signal_add_listener(s, l->type, log_and_queue, &second_listener, false));
}

// On a fresh agent alone on a 1-thread pool: a remote controller with two
// listeners of this type on its signal (added by a task on the agent's
// thread), then op(rc, done) from this thread; each listener's microtask
// must run before the next listener.
void ExpectEachRemoteListenerChecked(
    pts_agent *a, pts_event_type type,
    const std::function<int(pts_remote_controller *, DoneCount *)> &op) {
  ListenLog l;
  l.loop = pts_agent_loop(a);
  l.type = type;
  ASSERT_EQ(0, pts_remote_controller_new_async(a, PTS_PRIORITY_USER_VISIBLE, &l.rc));
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, add_two_listeners, &l));
  ASSERT_EQ(0, pts_agent_drain(a));
  DoneCount done;
  ASSERT_EQ(0, op(l.rc, &done));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(1, done.calls.load());
  EXPECT_EQ(0, done.status.load());
  EXPECT_EQ("1,m1,2,m2,", l.log);
  pts_remote_controller_unref(l.rc);
}

TEST_F(PoolTest, ARemoteAbortGivesEachListenerItsOwnCheckpoint) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  ExpectEachRemoteListenerChecked(
      agent(0), PTS_EVENT_ABORT,
      [](pts_remote_controller *rc, DoneCount *d) {
        return pts_remote_controller_abort(rc, nullptr, count_done, d);
      });
}

TEST_F(PoolTest, ARemoteSetPriorityGivesEachListenerItsOwnCheckpoint) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  ExpectEachRemoteListenerChecked(
      agent(0), PTS_EVENT_PRIORITYCHANGE,
      [](pts_remote_controller *rc, DoneCount *d) {
        return pts_remote_controller_set_priority(rc, PTS_PRIORITY_BACKGROUND,
                                                  count_done, d);
      });
}

}  // namespace
}  // namespace ptstest
