// tests/agents/lifecycle_test.cc: destroy with pending work (every callback
// and done called once, promises rejected, nothing leaks), destroy from one
// of the agent's own tasks, calls on a destroyed agent or a shut-down pool,
// drain, a long-running callback on one thread while the other thread keeps
// running its loops, and shutdown with agents still present.
#include <mutex>
#include <thread>
#include <vector>

#include "tests/agents/util.h"

namespace ptstest {
namespace {

using LifecycleTest = AgentsTest;

struct Calls {
  std::atomic<int> cb{0}, cb_status_sum{0}, cb_ran{0};
  std::atomic<int> done{0}, done_closed{0}, done_other{0};
};

pts_value counting_cb(void *data, int status) {
  auto *c = static_cast<Calls *>(data);
  c->cb.fetch_add(1);
  if (status == 0) c->cb_ran.fetch_add(1);
  if (status == PTS_ECANCELED) c->cb_status_sum.fetch_add(1);
  return pts_undefined();
}

void counting_done(void *data, int status, pts_value v) {
  auto *c = static_cast<Calls *>(data);
  c->done.fetch_add(1);
  if (status == PTS_ECLOSED && pts_value_is_error(v, PTS_ECLOSED))
    c->done_closed.fetch_add(1);
  else
    c->done_other.fetch_add(1);
}

void counting_task(void *data, int status) {
  auto *c = static_cast<Calls *>(data);
  c->cb.fetch_add(1);
  if (status == PTS_ECANCELED) c->cb_status_sum.fetch_add(1);
}

// A promise made inside the agent, whose rejection (or release) we observe.
struct InnerPromise {
  std::atomic<int> cleanups{0}, rejected{0}, cb_released{0};
};

pts_value inner_cb(void *data, int status) {
  if (status != 0) static_cast<InnerPromise *>(data)->cb_released.fetch_add(1);
  return pts_undefined();
}

pts_value inner_rejected(void *data, pts_value) {
  static_cast<InnerPromise *>(data)->rejected.fetch_add(1);
  return pts_undefined();
}

void inner_cleanup(void *data) { static_cast<InnerPromise *>(data)->cleanups.fetch_add(1); }

struct InnerArgs {
  pts_agent *a;
  InnerPromise *ip;
};

void post_inner_promise(void *data, int status) {
  auto *args = static_cast<InnerArgs *>(data);
  if (status != 0) return;
  pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(args->a)));
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.delay_ms = 60000;
  pts_promise *pr = nullptr;
  ASSERT_EQ(0, pts_scheduler_post_task(s, inner_cb, args->ip, &o, &pr));
  ASSERT_EQ(0, pts_promise_then(pr, nullptr, inner_rejected, args->ip, inner_cleanup, nullptr));
  pts_promise_unref(pr);
}

TEST_F(LifecycleTest, DestroyWithPendingWorkReleasesEverything) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT)));
  pts_agent *a, *other;
  pts_agent_options ao = agent_opts("a", 0);
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &a));
  ao = agent_opts("other", 1);
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &other));
  InnerPromise ip;
  InnerArgs args{a, &ip};
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, post_inner_promise, &args));
  ASSERT_EQ(0, pts_agent_drain(a));
  Blocker blk;
  ASSERT_TRUE(blk.block(a));
  // Pending: queued tasks, delayed tasks, tasks with a signal, ordinary
  // tasks, results for another agent's loop, and commands still in the inbox.
  Calls c;
  pts_remote_controller *rc;
  ASSERT_EQ(0, pts_remote_controller_new_async(a, PTS_PRIORITY_USER_VISIBLE, &rc));
  const int n = 40;
  for (int i = 0; i < n; i++) {
    pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
    if (i % 4 == 1) po.delay_ms = 60000;
    if (i % 4 == 2) po.controller = rc;
    pts_agent *reply = i % 4 == 3 ? other : nullptr;
    ASSERT_EQ(0, pts_agent_post_task(a, &po, counting_cb, &c, counting_done, &c, reply));
  }
  Calls q;
  for (int i = 0; i < 5; i++)
    ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, counting_task, &q));
  ASSERT_EQ(0, pts_agent_destroy(a, false));
  blk.release.store(true);
  // The destroy finishes on the agent's thread: the inner promise's reaction
  // is cleaned up when its loop is freed, after the callbacks above.
  ASSERT_TRUE(wait_until([&] {
    return c.done.load() == n && q.cb.load() == 5 && ip.cleanups.load() == 1;
  }));
  EXPECT_EQ(n, c.cb.load());
  EXPECT_EQ(0, c.cb_ran.load());
  EXPECT_EQ(n, c.cb_status_sum.load());  // every callback told PTS_ECANCELED
  EXPECT_EQ(n, c.done_closed.load());    // every done told PTS_ECLOSED
  EXPECT_EQ(0, c.done_other.load());
  EXPECT_EQ(5, q.cb_status_sum.load());
  // The promise made inside: its callback released, its reaction cleaned up.
  EXPECT_EQ(1, ip.cb_released.load());
  EXPECT_EQ(1, ip.cleanups.load());
  // Everything after: PTS_ECLOSED, nothing called.
  Calls late;
  EXPECT_EQ(PTS_ECLOSED, pts_agent_post_task(a, nullptr, counting_cb, &late, counting_done, &late, nullptr));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, counting_task, &late));
  pts_remote_controller *rc2 = nullptr;
  EXPECT_EQ(PTS_ECLOSED, pts_remote_controller_new_async(a, 0, &rc2));
  EXPECT_EQ(PTS_ECLOSED, pts_remote_controller_abort(rc, nullptr, nullptr, nullptr));
  EXPECT_EQ(PTS_ECLOSED, pts_remote_controller_set_priority(rc, 0, nullptr, nullptr));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_drain(a));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_destroy(a, true));
  EXPECT_EQ(nullptr, pts_remote_controller_get(rc));
  pts_remote_controller_unref(rc);
  // A result addressed to the destroyed agent: done gets PTS_ECLOSED at once.
  Calls r;
  ASSERT_EQ(0, pts_agent_post_task(other, nullptr, counting_cb, &r, counting_done, &r, a));
  ASSERT_TRUE(wait_until([&] { return r.done.load() == 1; }));
  EXPECT_EQ(1, r.cb_ran.load());
  EXPECT_EQ(1, r.done_closed.load());
  EXPECT_EQ(0, late.cb.load() + late.done.load());
}

struct SelfDestroy {
  pts_agent *a;
  std::atomic<int> destroy_rc{1}, wait_rc{1}, post_rc{1};
  std::atomic<bool> after{false};
  Calls later;
};

void destroy_self(void *data, int status) {
  auto *s = static_cast<SelfDestroy *>(data);
  if (status != 0) return;
  s->wait_rc.store(pts_agent_destroy(s->a, true));  // would wait for itself
  s->destroy_rc.store(pts_agent_destroy(s->a, false));
  // The task goes on: the loop is freed only after it returns.
  s->post_rc.store(pts_agent_post_task(s->a, nullptr, counting_cb, &s->later,
                                       counting_done, &s->later, nullptr));
  s->after.store(pts_agent_loop(s->a) != nullptr);
}

// A plain post (no done, controller or delay) keeps its task's handle in
// the block of its command (docs/scheduler.md): once applied and queued in
// the scheduler, a destroy releases it from there, its callback told
// PTS_ECANCELED once, and the block goes back (AddressSanitizer and LSan
// check the block is neither read after the callback nor lost).
TEST_F(LifecycleTest, PlainPostsQueuedInTheSchedulerAreReleasedAtDestroy) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  Blocker first, second;
  ASSERT_TRUE(first.block(a));
  Calls c;
  const int n = 20;
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  for (int i = 0; i < n; i++) {
    po.priority = i % 2 ? PTS_PRIORITY_BACKGROUND : PTS_PRIORITY_USER_VISIBLE;
    ASSERT_EQ(0, pts_agent_post_task(a, &po, counting_cb, &c, nullptr, nullptr, nullptr));
  }
  // Applied by the same drain, the second blocker (a message task) was
  // queued after the user-visible posts: it runs after them, before the
  // background ones, which stay in the scheduler's queue.
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, Blocker::fn, &second));
  first.release.store(true);
  ASSERT_TRUE(wait_until([&] { return second.started.load(); }));
  EXPECT_EQ(n / 2, c.cb_ran.load());
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(0u, st.inbox_depth);  // every post applied
  ASSERT_EQ(0, pts_agent_destroy(a, false));
  second.release.store(true);
  ASSERT_TRUE(wait_until([&] { return c.cb.load() == n; }));
  EXPECT_EQ(n / 2, c.cb_ran.load());
  EXPECT_EQ(n / 2, c.cb_status_sum.load());  // the background ones: PTS_ECANCELED
}

TEST_F(LifecycleTest, DestroyFromOwnTask) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_ROUND_ROBIN), 1));
  pts_agent *a = agent(0);
  SelfDestroy s;
  s.a = a;
  Blocker blk;
  ASSERT_TRUE(blk.block(a));
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, destroy_self, &s));
  Calls queued;  // behind the destroying task
  ASSERT_EQ(0, pts_agent_post_task(a, nullptr, counting_cb, &queued, counting_done, &queued, nullptr));
  blk.release.store(true);
  ASSERT_TRUE(wait_until([&] { return s.after.load(); }));
  ASSERT_EQ(PTS_ECLOSED, pts_agent_destroy(a, true));  // waits for the teardown
  EXPECT_EQ(PTS_EBUSY, s.wait_rc.load());
  EXPECT_EQ(0, s.destroy_rc.load());
  EXPECT_EQ(PTS_ECLOSED, s.post_rc.load());
  EXPECT_TRUE(s.after.load());
  EXPECT_EQ(0, s.later.cb.load() + s.later.done.load());
  EXPECT_EQ(1, queued.done_closed.load());
  EXPECT_EQ(0, queued.cb_ran.load());
}

// pts_agent_destroy(a, true) on a thread of its own, for the tests of what
// holds the teardown back.
struct BackgroundDestroy {
  std::atomic<bool> done{false};
  std::thread t;
  explicit BackgroundDestroy(pts_agent *a)
      : t([this, a] {
          EXPECT_EQ(0, pts_agent_destroy(a, true));
          done.store(true);
        }) {}
  // Still waiting after 100 ms more.
  bool StillWaiting() {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return !done.load();
  }
};

// Destroy protocol step 3: a producer admitted before the close may not have
// pushed yet; the loop is freed only once its command is in and released.
TEST_F(LifecycleTest, TheTeardownWaitsForAnAdmittedCommandAndReleasesIt) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  ASSERT_TRUE(pts_test_agent_admit(a));
  BackgroundDestroy d(a);
  // Closed at once: a new post fails, the held admission keeps the loop.
  Calls c;
  ASSERT_TRUE(wait_until(
      [&] { return pts_agent_queue_task(a, PTS_SOURCE_GENERIC, counting_task, &c) != 0; }));
  EXPECT_FALSE(pts_test_agent_admit(a));
  EXPECT_TRUE(d.StillWaiting());
  pts_test_agent_push_probe(a);
  d.t.join();
  EXPECT_EQ(1, pts_test_probe_calls());
  EXPECT_EQ(PTS_ECANCELED, pts_test_probe_status());
}

// Destroy protocol step 4: the teardown takes the wake token for good and
// waits for a producer inside the wake hook's slow path (which may be
// pushing the agent's node to the worker) before it lets the worker go.
TEST_F(LifecycleTest, TheTeardownKeepsTheWakeTokenAndWaitsForAWakeInProgress) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(1, PTS_POLICY_STRICT), 1));
  pts_agent *a = agent(0);
  ASSERT_EQ(0, pts_agent_drain(a));  // idle: the token is back (false)
  ASSERT_TRUE(wait_until([&] { return !pts_test_agent_signaled(a); }));
  pts_test_agent_waker(a, +1);
  BackgroundDestroy d(a);
  ASSERT_TRUE(wait_until([&] { return pts_test_agent_signaled(a); }));
  EXPECT_TRUE(d.StillWaiting());
  pts_test_agent_waker(a, -1);
  d.t.join();
  EXPECT_TRUE(pts_test_agent_signaled(a));  // a later wake pushes nothing
  ShutdownPool();
  EXPECT_TRUE(pts_test_agent_signaled(a));
}

TEST_F(LifecycleTest, ShutdownWithAgentsAndPendingWork) {
  pts_pool *p = NewPool(2, PTS_POLICY_FAIR);
  std::vector<pts_agent *> agents(6);
  for (auto &a : agents) ASSERT_EQ(0, pts_agent_new(p, nullptr, &a));
  Calls c;
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.delay_ms = 60000;
  for (auto *a : agents)
    for (int i = 0; i < 10; i++)
      ASSERT_EQ(0, pts_agent_post_task(a, &po, counting_cb, &c, counting_done, &c, agents[0]));
  ASSERT_EQ(0, pts_pool_shutdown(p));
  // Shutdown returned after every teardown: all released already.
  EXPECT_EQ(60, c.done.load());
  EXPECT_EQ(60, c.done_closed.load());
  EXPECT_EQ(60, c.cb_status_sum.load());
  // Handles stay valid; every call fails with PTS_ECLOSED.
  for (auto *a : agents) {
    EXPECT_EQ(PTS_ECLOSED, pts_agent_post_task(a, nullptr, counting_cb, &c, counting_done, &c, nullptr));
    EXPECT_EQ(PTS_ECLOSED, pts_agent_destroy(a, true));
    pts_agent_stats st;
    EXPECT_EQ(0, pts_agent_get_stats(a, &st));
    pts_agent_unref(a);
  }
  EXPECT_EQ(60, c.done.load());
}

TEST_F(LifecycleTest, ShutdownOrDestroyWaitFromPoolThreadIsBusy) {
  pts_pool *p = NewPool(1, PTS_POLICY_STRICT);
  pts_agent *a, *b;
  ASSERT_EQ(0, pts_agent_new(p, nullptr, &a));
  ASSERT_EQ(0, pts_agent_new(p, nullptr, &b));  // same (only) thread
  struct Args {
    pts_pool *p;
    pts_agent *b;
    std::atomic<int> shut{1}, destroy{1}, drain{1};
  } args;
  args.p = p;
  args.b = b;
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, [](void *d, int status) {
    auto *x = static_cast<Args *>(d);
    if (status != 0) return;
    x->shut.store(pts_pool_shutdown(x->p));
    x->destroy.store(pts_agent_destroy(x->b, true));  // b shares this thread
    x->drain.store(pts_agent_drain(x->b));
  }, &args));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(PTS_EBUSY, args.shut.load());
  EXPECT_EQ(PTS_EBUSY, args.destroy.load());
  EXPECT_EQ(PTS_EBUSY, args.drain.load());
  EXPECT_EQ(0, pts_pool_shutdown(p));
  pts_agent_unref(a);
  pts_agent_unref(b);
}

struct Sleeper {
  std::atomic<int> done{0};
};

void one_ms(void *data, int status) {
  if (status != 0) return;
  busy_ns(1000000);
  static_cast<Sleeper *>(data)->done.fetch_add(1);
}

TEST_F(LifecycleTest, DrainWaitsForRunnableWorkNotTimers) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_ROUND_ROBIN), 1));
  pts_agent *a = agent(0);
  Sleeper s;
  for (int i = 0; i < 20; i++)
    ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, one_ms, &s));
  Calls delayed;
  pts_agent_post_options po = PTS_AGENT_POST_OPTIONS_INIT;
  po.delay_ms = 60000;
  ASSERT_EQ(0, pts_agent_post_task(a, &po, counting_cb, &delayed, counting_done, &delayed, nullptr));
  uint64_t t0 = now_ns();
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(20, s.done.load());
  EXPECT_LT(now_ns() - t0, 30ull * 1000000000u);  // did not wait for the timer
  EXPECT_EQ(0, delayed.done.load());
  // An idle agent drains at once.
  ASSERT_EQ(0, pts_agent_drain(a));
  ShutdownPool();
  EXPECT_EQ(1, delayed.done_closed.load());
}

TEST_F(LifecycleTest, LongCallbackDoesNotStopOtherThread) {
  ASSERT_NO_FATAL_FAILURE(StartPool(pool_opts(2, PTS_POLICY_STRICT)));
  pts_agent *slow, *fast;
  pts_agent_options ao = agent_opts("slow", 0);
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &slow));
  ao = agent_opts("fast", 1);
  ASSERT_NO_FATAL_FAILURE(AddAgent(&ao, &fast));
  Blocker blk;
  ASSERT_TRUE(blk.block(slow));
  Calls c;
  for (int i = 0; i < 100; i++)
    ASSERT_EQ(0, pts_agent_post_task(fast, nullptr, counting_cb, &c, counting_done, &c, nullptr));
  ASSERT_EQ(0, pts_agent_drain(fast));  // while slow's thread is blocked
  EXPECT_EQ(100, c.cb_ran.load());
  EXPECT_FALSE(blk.release.load());
  blk.release.store(true);
  EXPECT_EQ(0, pts_agent_drain(slow));
}

TEST_F(LifecycleTest, ManyAgentsComeAndGo) {
  pts_pool *p = NewPool(2, PTS_POLICY_RANDOMIZED, 7);
  Calls c;
  std::vector<pts_agent *> keep;
  for (int round = 0; round < 5; round++) {
    std::vector<pts_agent *> batch(40);  // grows the workers' arrays
    for (auto &a : batch) ASSERT_EQ(0, pts_agent_new(p, nullptr, &a));
    for (auto *a : batch)
      ASSERT_EQ(0, pts_agent_post_task(a, nullptr, counting_cb, &c, counting_done, &c, nullptr));
    for (size_t i = 0; i < batch.size(); i++) {
      if (i % 2) {
        EXPECT_EQ(0, pts_agent_destroy(batch[i], i % 4 == 1));
        pts_agent_unref(batch[i]);
      } else {
        keep.push_back(batch[i]);
      }
    }
  }
  for (auto *a : keep) EXPECT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0, pts_pool_shutdown(p));
  for (auto *a : keep) pts_agent_unref(a);
  EXPECT_EQ(200, c.done.load());
  EXPECT_EQ(200, c.cb.load());
  EXPECT_EQ(c.cb_ran.load() + c.cb_status_sum.load(), 200);
}

}  // namespace
}  // namespace ptstest
