// The scheduler's own tests beyond WPT: the direct-callback forms, ordering
// across globals, abort at each stage, delays on a virtual clock, dynamic
// priority keeping task age, inactive and detached globals, the decided
// removal-steps defect, the default policy against ordinary task sources,
// bad input, and a randomized check of the selection structure against a
// reference model.
#include <cstdint>
#include <map>
#include <set>
#include <thread>

#include "tests/sched/sched_test_util.h"

using namespace ptstest;

namespace {

pts_value Undef() { return pts_undefined(); }

class Scheduler : public SchedTest {};

// ---- direct-callback form ----

TEST_F(Scheduler, CallbackFormRunsInStrictOrderOverAllSixLevels) {
  for (int p : {PTS_PRIORITY_BACKGROUND, PTS_PRIORITY_USER_VISIBLE,
                PTS_PRIORITY_USER_BLOCKING}) {
    pts_post_options o = Prio(p);
    std::string n = pts_priority_name(p);
    ASSERT_EQ(PostCb([this, n](int st) { if (!st) Push(n + "-task"); }, &o), 0);
    pts_yield_options y = YPrio(p);
    ASSERT_EQ(YieldCb([this, n](int st) { if (!st) Push(n + "-cont"); }, &y), 0);
  }
  Run();
  EXPECT_EQ(Ids(),
            "user-blocking-cont,user-blocking-task,user-visible-cont,"
            "user-visible-task,background-cont,background-task");
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, CallbackFormFastPathIsFifo) {
  for (int i = 0; i < 100; i++)
    ASSERT_EQ(PostCb([this, i](int st) { if (!st) Push(std::to_string(i)); }, nullptr), 0);
  Run();
  ASSERT_EQ(ids.size(), 100u);
  for (int i = 0; i < 100; i++) EXPECT_EQ(ids[i], std::to_string(i));
  ExpectNoLiveTasks();
}

// 5.1's naming rule (scheduler.h): the callback form of postTask is
// pts_scheduler_post_task_cb; its 5.0 name is the same function, so a
// program built against 5.0 runs unchanged.
void mark_int(void *d, int status) {
  if (status == 0) ++*static_cast<int *>(d);
}

TEST_F(Scheduler, TheFiveZeroNameOfTheCallbackFormIsTheSameFunction) {
  EXPECT_EQ(reinterpret_cast<void *>(&pts_scheduler_post),
            reinterpret_cast<void *>(&pts_scheduler_post_task_cb));
  int ran = 0;
  ASSERT_EQ(0, pts_scheduler_post(s, mark_int, &ran, nullptr));
  Run();
  EXPECT_EQ(1, ran);
  ExpectNoLiveTasks();
}

// The loop runs scheduler tasks back to back while they are its only work
// (docs/loop.md): a stop requested by one of them still ends the run after
// that task, and a task queued by one of them on an ordinary source still
// takes its turn by the policy: ahead of background tasks that are older.
TEST_F(Scheduler, BurstsHonourStopAndOrdinaryTasks) {
  for (int i = 0; i < 5; i++) {
    pts_post_options o = Prio(i < 3 ? PTS_PRIORITY_USER_VISIBLE : PTS_PRIORITY_BACKGROUND);
    ASSERT_EQ(PostCb([this, i](int st) {
                if (st) return;
                Push(std::to_string(i));
                if (i == 1) pts_loop_stop(loop);
                if (i == 2) pts_queue_task(pts_loop_default_global(loop), PTS_SOURCE_GENERIC,
                                           [](void *d, int) { static_cast<Scheduler *>(d)->Push("g"); },
                                           this);
              }, &o), 0);
  }
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 1);
  EXPECT_EQ(ids, (std::vector<std::string>{"0", "1"}));  // stopped after task 1
  Run();
  EXPECT_EQ(ids, (std::vector<std::string>{"0", "1", "2", "g", "3", "4"}));
  ExpectNoLiveTasks();
}

// A burst also ends when a command arrives in the inbox: a message posted
// "from another thread" (any thread may post) by task 1, the first of the
// burst after task 0, takes its turn by the policy, ahead of the background
// tasks still queued.
TEST_F(Scheduler, BurstsEndWhenTheInboxHasACommand) {
  for (int i = 0; i < 4; i++) {
    pts_post_options o = Prio(PTS_PRIORITY_BACKGROUND);
    ASSERT_EQ(PostCb([this, i](int st) {
                if (st) return;
                Push(std::to_string(i));
                if (i != 1) return;
                ASSERT_EQ(pts_queue_task_from_any_thread(
                              g, PTS_SOURCE_MESSAGE,
                              [](void *d, int) { static_cast<Scheduler *>(d)->Push("m"); },
                              this),
                          0);
              }, &o), 0);
  }
  Run();
  EXPECT_EQ(ids, (std::vector<std::string>{"0", "1", "m", "2", "3"}));
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, CallbackFormAbortCallsTheCallbackOnceWithEAbort) {
  pts_controller *c = TaskController();
  pts_post_options o = Sig(pts_controller_signal(c));
  std::vector<int> statuses;
  ASSERT_EQ(PostCb([&](int st) { statuses.push_back(st); }, &o), 0);
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(statuses, std::vector<int>{PTS_EABORT});  // at once, not later
  Run();
  EXPECT_EQ(statuses, std::vector<int>{PTS_EABORT});
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, CallbackFormAlreadyAbortedFailsWithoutCallingBack) {
  pts_controller *c = AbortController();
  pts_controller_abort(c, nullptr);
  pts_post_options o = Sig(pts_controller_signal(c));
  bool called = false;
  EXPECT_EQ(PostCb([&](int) { called = true; }, &o), PTS_EABORT);
  pts_yield_options y = YSig(pts_controller_signal(c));
  EXPECT_EQ(YieldCb([&](int) { called = true; }, &y), PTS_EABORT);
  Run();
  EXPECT_FALSE(called);
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, CallbackFormAbortDuringRunDoesNotCallAgain) {
  pts_controller *c = TaskController();
  pts_post_options o = Sig(pts_controller_signal(c));
  std::vector<int> statuses;
  ASSERT_EQ(PostCb(
                [&](int st) {
                  statuses.push_back(st);
                  pts_controller_abort(c, nullptr);
                },
                &o),
            0);
  Run();
  EXPECT_EQ(statuses, std::vector<int>{0});
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, YieldCbRunsWithTheComputedStateCurrent) {
  // Inside a background task, yield_cb inherits background; inside that
  // continuation a second yield_cb inherits again.
  Post(
      [this] {
        Push("task");
        PostId("uv", NoOpts());
        EXPECT_EQ(YieldCb(
                      [this](int st) {
                        if (st) return;
                        Push("c1");
                        EXPECT_EQ(YieldCb([this](int s2) { if (!s2) Push("c2"); }, nullptr), 0);
                        PostId("bg", Prio(PTS_PRIORITY_BACKGROUND));
                      },
                      nullptr),
                  0);
        return Undef();
      },
      Prio(PTS_PRIORITY_BACKGROUND));
  Run();
  // c1 and c2 are background continuations (effective priority 1): after
  // the user-visible task, before the background task.
  EXPECT_EQ(Ids(), "task,uv,c1,c2,bg");
}

TEST_F(Scheduler, YieldCbInAnIdleCallbackInheritsBackground) {
  struct Ctx {
    Scheduler *self;
  } ctx{this};
  ASSERT_EQ(pts_request_idle_callback(
                g,
                [](void *d, int st, const pts_idle_deadline *) {
                  if (st) return;
                  auto *self = static_cast<Ctx *>(d)->self;
                  self->Push("idle");
                  self->PostId("bg", Prio(PTS_PRIORITY_BACKGROUND));
                  self->PostId("uv", NoOpts());
                  EXPECT_EQ(self->YieldCb([self](int s2) { if (!s2) self->Push("cont"); },
                                          nullptr),
                            0);
                },
                &ctx, 0, nullptr),
            0);
  Run();
  EXPECT_EQ(Ids(), "idle,uv,cont,bg");
}

// The scheduler (and so the idle-state factory) may first be created inside
// the idle callback: the callback must still run with the background state.
TEST(SchedulerIdle, YieldInheritsBackgroundWhenSchedulerIsMadeInsideIdleCallback) {
  pts_loop_options o{};
  o.virtual_clock = true;
  pts_loop *loop = nullptr;
  ASSERT_EQ(pts_loop_new(&o, &loop), 0);
  struct Ctx {
    pts_global *g;
    std::string ids;
  } ctx{pts_loop_default_global(loop), ""};
  ASSERT_EQ(pts_request_idle_callback(
                ctx.g,
                [](void *d, int st, const pts_idle_deadline *) {
                  if (st) return;
                  auto *c = static_cast<Ctx *>(d);
                  pts_scheduler *s = pts_global_scheduler(c->g);  // first use
                  pts_post_options uv = PTS_POST_OPTIONS_INIT;
                  pts_post_options bg = PTS_POST_OPTIONS_INIT;
                  bg.priority = PTS_PRIORITY_BACKGROUND;
                  auto push = [](void *dd, int status) {
                    if (status == 0) static_cast<Ctx *>(dd)->ids += "t,";
                  };
                  auto cont = [](void *dd, int status) {
                    if (status == 0) static_cast<Ctx *>(dd)->ids += "cont,";
                  };
                  EXPECT_EQ(pts_scheduler_post_task_cb(s, push, c, &bg), 0);
                  EXPECT_EQ(pts_scheduler_post_task_cb(s, push, c, &uv), 0);
                  // Inherits background: a background continuation runs after
                  // the user-visible task and before the background task.
                  EXPECT_EQ(pts_scheduler_yield_cb(s, nullptr, cont, c), 0);
                  c->ids += "idle,";
                },
                &ctx, 0, nullptr),
            0);
  ASSERT_GE(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  EXPECT_EQ(ctx.ids, "idle,t,cont,t,");
  ASSERT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(pts__sched_live_states(), 0u);
}

// ---- several schedulers of one loop ----

TEST_F(Scheduler, SchedulersOfOneLoopShareEnqueueOrder) {
  pts_global *g2, *g3;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  ASSERT_EQ(pts_global_new(loop, &g3), 0);
  pts_scheduler *ss[3] = {s, pts_global_scheduler(g2), pts_global_scheduler(g3)};
  EXPECT_EQ(pts_global_scheduler(g2), ss[1]);  // one per global
  for (int i = 0; i < 9; i++) PostId("s" + std::to_string(i % 3) + "-" + std::to_string(i), NoOpts(), ss[i % 3]);
  PostId("ub", Prio(PTS_PRIORITY_USER_BLOCKING), ss[2]);
  PostId("bg", Prio(PTS_PRIORITY_BACKGROUND), ss[0]);
  Run();
  EXPECT_EQ(Ids(), "ub,s0-0,s1-1,s2-2,s0-3,s1-4,s2-5,s0-6,s1-7,s2-8,bg");
  pts__sched_stats st = Stats();
  EXPECT_EQ(st.schedulers, 3u);
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, TaskSignalSharedBySeveralSchedulers) {
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  pts_scheduler *s2 = pts_global_scheduler(g2);
  pts_controller *c = TaskController(PTS_PRIORITY_BACKGROUND);
  pts_signal *sig = pts_controller_signal(c);
  PostId("a1", Sig(sig));
  PostId("b1", Sig(sig), s2);
  PostId("uv", NoOpts());
  PostId("a2", Sig(sig));
  PostId("b2", Sig(sig), s2);
  pts_controller_set_priority(c, PTS_PRIORITY_USER_BLOCKING);
  Run();
  EXPECT_EQ(Ids(), "a1,b1,a2,b2,uv");
  ExpectNoLiveTasks();
}

// ---- abort ----

TEST_F(Scheduler, AbortBeforeRunRemovesHeadAndMiddleTasks) {
  // Static queue: x1 x2 x3 (one AbortController each); dynamic: d1 d2.
  pts_controller *cx[3];
  for (auto &c : cx) c = AbortController();
  pts_controller *tc = TaskController();
  pts_signal *ts = pts_controller_signal(tc);
  PostId("x1", Sig(pts_controller_signal(cx[0])));
  PostId("d1", Sig(ts));
  PostId("x2", Sig(pts_controller_signal(cx[1])));
  PostId("d2", Sig(ts));
  PostId("x3", Sig(pts_controller_signal(cx[2])));
  pts_controller_abort(cx[0], nullptr);  // head of its queue
  pts_controller_abort(cx[1], nullptr);  // now the head again
  Run();
  EXPECT_EQ(Ids(), "d1,d2,x3");
  EXPECT_TRUE(RejectedWith(promises[0], PTS_EABORT));
  EXPECT_TRUE(RejectedWith(promises[2], PTS_EABORT));
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, AbortDuringDelayFreesTheTimerAtOnce) {
  pts_controller *c = TaskController();
  pts_post_options o = Sig(pts_controller_signal(c));
  o.delay_ms = 100;
  bool ran = false;
  bool released = false;
  pts_promise *p = Post([&] { ran = true; return Undef(); }, o);
  o.delay_ms = 50;
  ASSERT_EQ(PostCb([&](int st) { released = st == PTS_EABORT; }, &o), 0);
  EXPECT_EQ(Stats().delayed_tasks, 2u);
  Advance(10);
  pts_controller_abort(c, nullptr);
  EXPECT_TRUE(released);
  EXPECT_TRUE(RejectedWith(p, PTS_EABORT));
  ExpectNoLiveTasks();
  Advance(200);
  EXPECT_FALSE(ran);
}

TEST_F(Scheduler, AbortDuringRunRejectsAndIgnoresTheResult) {
  pts_controller *c = TaskController();
  pts_promise *p = Post(
      [&] {
        pts_controller_abort(c, nullptr);
        return pts_int(5);
      },
      Sig(pts_controller_signal(c)));
  Run();
  EXPECT_TRUE(RejectedWith(p, PTS_EABORT));
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, AbortSignalTimeoutAbortsADelayedTask) {
  pts_signal *ts = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(g, 10, &ts), 0);
  KeepSignal(ts);
  pts_post_options o = Sig(ts);
  o.delay_ms = 20;
  bool ran = false;
  pts_promise *p = Post([&] { ran = true; return Undef(); }, o);
  // And one that runs before the timeout fires.
  o.delay_ms = 5;
  pts_promise *early = Post([] { return pts_int(1); }, o);
  Advance(9);
  EXPECT_TRUE(Fulfilled(early));
  EXPECT_EQ(pts_promise_get_state(p), PTS_PROMISE_PENDING);
  Advance(1);
  EXPECT_TRUE(RejectedWith(p, PTS_ETIMEDOUT));
  EXPECT_STREQ(pts_error_name(pts_promise_get_result(p)), "TimeoutError");
  Advance(20);
  EXPECT_FALSE(ran);
  ExpectNoLiveTasks();
}

// ---- the decided removal-steps defect (docs/decisions.md) ----

TEST_F(Scheduler, RemovalStepsKeepANewerQueueOfTheSameKey) {
  // A running task aborts its own signal (its queue's removal steps run
  // while it runs), then posts again at the same fixed priority (a new
  // queue under the same key). Its complete steps must not remove the new
  // queue's entry: the new task runs, and later posts still use the map.
  pts_controller *c = AbortController();
  bool entry_after_complete = false;
  uint32_t mapped_after_complete = 0;
  pts_promise *first = Post(
      [&] {
        pts_controller_abort(c, nullptr);
        // The abort steps ran the removal steps of this task's queue.
        EXPECT_FALSE(pts__sched_has_static_queue(s, PTS_PRIORITY_USER_VISIBLE, false));
        PostId("again", Prio(PTS_PRIORITY_USER_VISIBLE));
        EXPECT_TRUE(pts__sched_has_static_queue(s, PTS_PRIORITY_USER_VISIBLE, false));
        // Observed after this task's complete steps (microtask checkpoint).
        QueueMicrotask([&](int) {
          entry_after_complete =
              pts__sched_has_static_queue(s, PTS_PRIORITY_USER_VISIBLE, false);
          mapped_after_complete = pts__sched_mapped_queues(s);
        });
        return Undef();
      },
      Sig(pts_controller_signal(c)));
  Run();
  EXPECT_TRUE(RejectedWith(first, PTS_EABORT));
  EXPECT_TRUE(entry_after_complete);  // the literal text would have removed it
  EXPECT_EQ(mapped_after_complete, 1u);
  EXPECT_EQ(Ids(), "again");
  EXPECT_EQ(pts__sched_mapped_queues(s), 0u);
  PostId("later1", NoOpts());
  PostId("later2", Prio(PTS_PRIORITY_USER_VISIBLE));
  Run();
  EXPECT_EQ(Ids(), "again,later1,later2");
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, RemovalStepsKeepANewerDynamicQueue) {
  // Same with a yield continuation on a dynamic queue: a continuation that
  // aborts one signal and yields again on another TaskSignal-keyed queue.
  pts_controller *c = TaskController();
  pts_controller *c2 = TaskController();
  pts_yield_options y2 = YSig(pts_controller_signal(c2));
  pts_promise *first = Post(
      [&] {
        pts_controller_abort(c, nullptr);
        Then(Yield(&y2), PushR("cont"));
        PostId("task", Sig(pts_controller_signal(c2)));
        return Undef();
      },
      Sig(pts_controller_signal(c)));
  Run();
  EXPECT_TRUE(RejectedWith(first, PTS_EABORT));
  EXPECT_EQ(Ids(), "cont,task");
  ExpectNoLiveTasks();
}

// ---- delays ----

TEST_F(Scheduler, SameDelayRunsInPostOrderAndShorterDelaysFirst) {
  pts_post_options o = NoOpts();
  o.delay_ms = 10;
  PostId("a10", o);
  o.delay_ms = 5;
  PostId("b5", o);
  o.delay_ms = 10;
  PostId("c10", o);
  PostId("d10", o);
  o.delay_ms = 5;
  PostId("e5", o);
  Run();
  EXPECT_EQ(Ids(), "");
  Advance(5);
  EXPECT_EQ(Ids(), "b5,e5");
  Advance(5);
  EXPECT_EQ(Ids(), "b5,e5,a10,c10,d10");
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, DelayedTasksOfEqualDeadlineRunByPriority) {
  pts_post_options o = Prio(PTS_PRIORITY_BACKGROUND);
  o.delay_ms = 3;
  PostId("bg", o);
  o.priority = PTS_PRIORITY_USER_BLOCKING;
  PostId("ub", o);
  Advance(3);
  EXPECT_EQ(Ids(), "ub,bg");
}

TEST_F(Scheduler, ZeroDelayEnqueuesAtTheCallAndADelayedTaskLater) {
  // A zero delay enqueues at the call; a delayed task takes its enqueue
  // order when the delay ends, so it is younger than tasks posted meanwhile.
  pts_post_options o = NoOpts();
  o.delay_ms = 1;
  PostId("d1", o);
  o.delay_ms = 0;
  PostId("d0", o);
  PostId("x", NoOpts());
  EXPECT_EQ(Stats().delayed_tasks, 1u);
  Run();
  EXPECT_EQ(Ids(), "d0,x");
  Advance(1);
  EXPECT_EQ(Ids(), "d0,x,d1");
}

TEST_F(Scheduler, MaximumDelayIsAcceptedAndReleasedAtLoopFree) {
  pts_post_options o = NoOpts();
  o.delay_ms = 9007199254740991LL;  // 2^53 - 1
  int status = 1;
  ASSERT_EQ(PostCb([&](int st) { status = st; }, &o), 0);
  pts_promise *p = Post([] { return Undef(); }, o);
  ASSERT_NE(p, nullptr);
  Advance(1000);
  EXPECT_EQ(status, 1);
  FreeLoop();
  EXPECT_EQ(status, PTS_ECANCELED);
}

// ---- dynamic priority ----

TEST_F(Scheduler, PriorityChangeKeepsTaskAge) {
  pts_controller *c = TaskController(PTS_PRIORITY_BACKGROUND);
  pts_signal *sig = pts_controller_signal(c);
  PostId("A", Sig(sig));
  PostId("B", NoOpts());
  PostId("C", Sig(sig));
  PostId("D", NoOpts());
  pts_controller_set_priority(c, PTS_PRIORITY_USER_VISIBLE);
  Run();
  EXPECT_EQ(Ids(), "A,B,C,D");
}

TEST_F(Scheduler, SetPriorityMovesQueuesBetweenLevels) {
  pts_controller *c[3];
  for (int i = 0; i < 3; i++) c[i] = TaskController(PTS_PRIORITY_USER_VISIBLE);
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 3; i++)
      PostId("q" + std::to_string(i) + "." + std::to_string(round),
             Sig(pts_controller_signal(c[i])));
  pts_controller_set_priority(c[0], PTS_PRIORITY_BACKGROUND);
  pts_controller_set_priority(c[2], PTS_PRIORITY_USER_BLOCKING);
  pts_controller_set_priority(c[0], PTS_PRIORITY_USER_BLOCKING);
  pts_controller_set_priority(c[1], PTS_PRIORITY_BACKGROUND);
  Run();
  EXPECT_EQ(Ids(), "q0.0,q2.0,q0.1,q2.1,q1.0,q1.1");
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, PriorityChangeDuringRunMovesTheRestOfTheQueue) {
  pts_controller *c = TaskController(PTS_PRIORITY_USER_BLOCKING);
  pts_signal *sig = pts_controller_signal(c);
  Post(
      [&] {
        Push("s1");
        pts_controller_set_priority(c, PTS_PRIORITY_BACKGROUND);
        return Undef();
      },
      Sig(sig));
  PostId("s2", Sig(sig));
  PostId("uv", NoOpts());
  Run();
  EXPECT_EQ(Ids(), "s1,uv,s2");
}

// ---- inactive and detached globals ----

TEST_F(Scheduler, InactiveGlobalQueuesLeaveAndReturn) {
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  pts_scheduler *s2 = pts_global_scheduler(g2);
  pts_controller *c = TaskController(PTS_PRIORITY_BACKGROUND);
  PostId("f1", NoOpts(), s2);
  PostId("m1", NoOpts());
  PostId("f2", Sig(pts_controller_signal(c)), s2);
  ASSERT_EQ(pts_global_set_active(g2, false), 0);
  PostId("f3", Prio(PTS_PRIORITY_USER_BLOCKING), s2);
  pts_controller_set_priority(c, PTS_PRIORITY_USER_BLOCKING);  // while inactive
  PostId("m2", NoOpts());
  Run();
  EXPECT_EQ(Ids(), "m1,m2");
  ASSERT_EQ(pts_global_set_active(g2, true), 0);
  Run();
  EXPECT_EQ(Ids(), "m1,m2,f2,f3,f1");
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, DetachReleasesEverythingPending) {
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  pts_scheduler *s2 = pts_global_scheduler(g2);
  pts_controller *c = TaskController();
  pts_promise *p1 = Post([] { return Undef(); }, NoOpts(), nullptr, s2);
  pts_promise *p2 = Post([] { return Undef(); }, Sig(pts_controller_signal(c)), nullptr, s2);
  pts_post_options d = NoOpts();
  d.delay_ms = 10;
  pts_promise *p3 = Post([] { return Undef(); }, d, nullptr, s2);
  pts_promise *y = Yield(nullptr, nullptr, s2);
  std::vector<int> cb;
  ASSERT_EQ(PostCb([&](int st) { cb.push_back(st); }, nullptr, s2), 0);
  ASSERT_EQ(PostCb([&](int st) { cb.push_back(st); }, &d, s2), 0);
  ASSERT_EQ(pts_global_detach(g2), 0);
  for (pts_promise *p : {p1, p2, p3, y}) {
    ASSERT_TRUE(RejectedWith(p, PTS_ECANCELED));
    EXPECT_STREQ(pts_error_message(pts_promise_get_result(p)), "global detached");
  }
  EXPECT_EQ(cb, (std::vector<int>{PTS_ECANCELED, PTS_ECANCELED}));
  ExpectNoLiveTasks();
  int rc = 0;
  EXPECT_EQ(Post([] { return Undef(); }, NoOpts(), &rc, s2), nullptr);
  EXPECT_EQ(rc, PTS_ECLOSED);
  EXPECT_EQ(PostCb([](int) {}, nullptr, s2), PTS_ECLOSED);
  // The signal still works for the others; aborting it now touches nothing.
  pts_controller_abort(c, nullptr);
  Advance(20);
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, DetachFromInsideOwnTask) {
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  pts_scheduler *s2 = pts_global_scheduler(g2);
  pts_promise *self = Post(
      [&] {
        Push("self");
        EXPECT_EQ(pts_global_detach(g2), 0);
        return pts_int(7);
      },
      NoOpts(), nullptr, s2);
  pts_promise *other = PostId("other", NoOpts(), s2);
  PostId("main", NoOpts());
  Run();
  EXPECT_EQ(Ids(), "self,main");
  EXPECT_TRUE(Fulfilled(self));
  EXPECT_TRUE(RejectedWith(other, PTS_ECANCELED));
  ExpectNoLiveTasks();
}

TEST_F(Scheduler, SchedulerOfADetachedGlobal) {
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  ASSERT_EQ(pts_global_detach(g2), 0);
  pts_scheduler *s2 = pts_global_scheduler(g2);
  ASSERT_NE(s2, nullptr);
  EXPECT_EQ(pts_scheduler_post_task_cb(s2, [](void *, int) {}, nullptr, nullptr), PTS_ECLOSED);
  pts_promise *p = nullptr;
  EXPECT_EQ(pts_scheduler_yield(s2, nullptr, &p), PTS_ENOTSUPPORTED);
  EXPECT_EQ(p, nullptr);
}

TEST_F(Scheduler, LoopFreeReleasesPendingWork) {
  std::vector<int> st;
  ASSERT_EQ(PostCb([&](int x) { st.push_back(x); }, nullptr), 0);
  pts_yield_options y = YPrio(PTS_PRIORITY_BACKGROUND);
  ASSERT_EQ(YieldCb([&](int x) { st.push_back(x); }, &y), 0);
  pts_controller *c = TaskController();
  pts_post_options o = Sig(pts_controller_signal(c));
  o.delay_ms = 5;
  ASSERT_EQ(PostCb([&](int x) { st.push_back(x); }, &o), 0);
  Post([] { return Undef(); }, o);
  Yield();
  FreeLoop();
  EXPECT_EQ(st, (std::vector<int>{PTS_ECANCELED, PTS_ECANCELED, PTS_ECANCELED}));
}

// ---- the promise form: the result shares the handle's block ----

// postTask with no signal and no delay keeps its result promise in the task
// handle's own block (docs/scheduler.md). A result held past its task keeps
// its value while later posts reuse the freed blocks, and a reaction added
// afterwards still sees it; the last unref frees the block (AddressSanitizer
// checks the lifetimes).
TEST_F(Scheduler, ResultInTheHandleBlockOutlivesItsTask) {
  std::vector<pts_promise *> held;
  auto post_int = [this](int64_t v, pts_promise **out) {
    auto *fn = new ValueFn([v] { return pts_int(v); });
    return pts_scheduler_post_task(s, CallValue, fn, nullptr, out);
  };
  for (int i = 0; i < 8; i++) {
    pts_promise *p = nullptr;
    ASSERT_EQ(post_int(i, &p), 0);
    if (i % 2)
      held.push_back(Keep(p));
    else
      pts_promise_unref(p);  // the block goes with the task
  }
  Run();
  ExpectNoLiveTasks();
  for (int i = 0; i < 16; i++) {  // reuses every block the first run freed
    pts_promise *p = nullptr;
    ASSERT_EQ(post_int(100 + i, &p), 0);
    pts_promise_unref(p);
  }
  Run();
  ExpectNoLiveTasks();
  for (size_t k = 0; k < held.size(); k++) {
    ASSERT_TRUE(Fulfilled(held[k])) << k;
    EXPECT_EQ(pts_promise_get_result(held[k]).u.i, (int64_t)(2 * k + 1)) << k;
  }
  int64_t seen = -1;
  Then(held[3], [&](pts_value v) {
    seen = v.u.i;
    return pts_undefined();
  });
  Run();
  EXPECT_EQ(seen, 7);
}

// A result adopted by another promise, or thrown: the block lives while the
// adopting job holds the result, and an error value rejects.
TEST_F(Scheduler, ResultInTheHandleBlockAdoptedAndRejected) {
  pts_promise *ok = nullptr, *bad = nullptr;
  auto *f1 = new ValueFn([] { return pts_int(5); });
  ASSERT_EQ(pts_scheduler_post_task(s, CallValue, f1, nullptr, &ok), 0);
  auto *f2 = new ValueFn([] { return pts_error_value(PTS_ETYPE, "thrown"); });
  ASSERT_EQ(pts_scheduler_post_task(s, CallValue, f2, nullptr, &bad), 0);
  pts_promise *outer = NewPromise();
  pts_promise_resolve(outer, pts_promise_value(ok));  // the job holds ok
  pts_promise_unref(ok);
  Keep(bad);
  Run();
  ASSERT_TRUE(Fulfilled(outer));
  EXPECT_EQ(pts_promise_get_result(outer).u.i, 5);
  EXPECT_TRUE(RejectedWith(bad, PTS_ETYPE));
  ExpectNoLiveTasks();
}

// The loop frees results still held by the embedder, settled or pending, in
// its sweep: the whole block, once (AddressSanitizer reports a leak or a bad
// free otherwise).
TEST_F(Scheduler, LoopFreeReleasesHeldResultsInTheirBlocks) {
  pts_promise *done = nullptr, *pending = nullptr;
  auto *f1 = new ValueFn([] { return pts_int(1); });
  ASSERT_EQ(pts_scheduler_post_task(s, CallValue, f1, nullptr, &done), 0);
  Run();
  ASSERT_TRUE(Fulfilled(done));
  auto *f2 = new ValueFn([] { return pts_int(2); });
  ASSERT_EQ(pts_scheduler_post_task(s, CallValue, f2, nullptr, &pending), 0);
  FreeLoop();  // neither reference is given back: the loop owns its promises
}

// ---- the default policy against ordinary task sources ----

TEST_F(Scheduler, DefaultPolicyAgainstOrdinaryTaskSources) {
  auto queue = [this](pts_task_source src, const std::string &id) {
    auto *fn = new StatusFn([this, id](int st) { if (!st) Push(id); });
    ASSERT_EQ(pts_queue_task(g, src, CallStatus, fn), 0);
  };
  PostId("bg", Prio(PTS_PRIORITY_BACKGROUND));
  queue(PTS_SOURCE_TIMER, "timer1");
  PostId("uv1", NoOpts());
  queue(PTS_SOURCE_MESSAGE, "msg1");
  PostId("uv2", NoOpts());
  queue(PTS_SOURCE_GENERIC, "gen1");
  PostId("ub", Prio(PTS_PRIORITY_USER_BLOCKING));
  pts_yield_options yuv = YPrio(PTS_PRIORITY_USER_VISIBLE);
  ASSERT_EQ(YieldCb([this](int st) { if (!st) Push("uv-cont"); }, &yuv), 0);
  pts_yield_options ybg = YPrio(PTS_PRIORITY_BACKGROUND);
  ASSERT_EQ(YieldCb([this](int st) { if (!st) Push("bg-cont"); }, &ybg), 0);
  queue(PTS_SOURCE_USER_INPUT, "input");
  ASSERT_EQ(pts_request_idle_callback(
                g,
                [](void *d, int st, const pts_idle_deadline *) {
                  if (!st) static_cast<Scheduler *>(d)->Push("idle");
                },
                this, 0, nullptr),
            0);
  Run();
  EXPECT_EQ(Ids(), "input,ub,uv-cont,timer1,uv1,msg1,uv2,gen1,bg-cont,bg,idle");
}

// ---- handles in the caller's slot (pts__scheduler_post_in, the agents' plain posts) ----

// A task whose handle lives in a slot of its own heap block. The block is
// deleted before the callback runs, so AddressSanitizer fails the test if the
// scheduler reads the slot once it has called the callback.
struct SlotTask {
  pts__sched_slot slot;
  StatusFn fn;
};
void RunSlotTask(void *d, int status) {
  auto *t = static_cast<SlotTask *>(d);
  StatusFn fn = std::move(t->fn);
  delete t;
  fn(status);
}
int PostIn(pts_scheduler *s, int priority, StatusFn f) {
  auto *t = new SlotTask{{}, std::move(f)};
  int r = pts__scheduler_post_in(s, &t->slot, RunSlotTask, t, priority);
  if (r != 0) delete t;
  return r;
}

// They are postTask tasks like the others: by priority, then in posting
// order with the scheduler's own handles (one enqueue order), with their
// priority's state current while they run (a yield inherits it).
TEST_F(Scheduler, CallerSlotTasksRunByPriorityThenPostingOrder) {
  auto push = [this](const std::string &id) {
    return [this, id](int st) { if (!st) Push(id); };
  };
  pts_post_options bg = Prio(PTS_PRIORITY_BACKGROUND);
  ASSERT_EQ(PostCb(push("bg-own"), &bg), 0);
  ASSERT_EQ(PostIn(s, PTS_PRIORITY_BACKGROUND, [this](int st) {
              if (st) return;
              Push("bg-slot");
              ASSERT_EQ(YieldCb([this](int y) { if (!y) Push("bg-slot-cont"); }, nullptr), 0);
              // A user-visible task goes first only if the yield is background.
              ASSERT_EQ(PostCb([this](int y) { if (!y) Push("uv-late"); }, nullptr), 0);
            }),
            0);
  ASSERT_EQ(PostIn(s, PTS_PRIORITY_UNSET, push("uv-slot")), 0);
  ASSERT_EQ(PostCb(push("uv-own"), nullptr), 0);
  ASSERT_EQ(PostIn(s, PTS_PRIORITY_USER_VISIBLE, push("uv-slot2")), 0);
  ASSERT_EQ(PostIn(s, PTS_PRIORITY_USER_BLOCKING, push("ub-slot")), 0);
  pts_post_options uv = Prio(PTS_PRIORITY_USER_VISIBLE);
  ASSERT_EQ(PostCb(push("uv-own2"), &uv), 0);
  Run();
  EXPECT_EQ(Ids(), "ub-slot,uv-slot,uv-own,uv-slot2,uv-own2,bg-own,bg-slot,uv-late,bg-slot-cont");
  ExpectNoLiveTasks();
}

// Each callback is called once, with PTS_ECANCELED when the task will never
// run (its global detached, its loop freed), and the slot is the caller's
// from that call on; the handle's references are gone by then.
TEST_F(Scheduler, CallerSlotIsTheCallersOnceItsCallbackIsCalled) {
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  pts_scheduler *s2 = pts_global_scheduler(g2);
  std::vector<int> got;
  auto record = [&got](int st) { got.push_back(st); };
  for (int p : {PTS_PRIORITY_USER_BLOCKING, PTS_PRIORITY_BACKGROUND})
    ASSERT_EQ(PostIn(s2, p, record), 0);
  ASSERT_EQ(PostIn(s, PTS_PRIORITY_USER_VISIBLE, record), 0);
  ASSERT_EQ(pts_global_detach(g2), 0);
  EXPECT_EQ(got, (std::vector<int>{PTS_ECANCELED, PTS_ECANCELED}));
  Run();
  EXPECT_EQ(got, (std::vector<int>{PTS_ECANCELED, PTS_ECANCELED, 0}));
  ExpectNoLiveTasks();
  ASSERT_EQ(PostIn(s, PTS_PRIORITY_BACKGROUND, record), 0);
  ASSERT_EQ(PostIn(s, PTS_PRIORITY_USER_BLOCKING, record), 0);
  FreeLoop();
  EXPECT_EQ(got, (std::vector<int>{PTS_ECANCELED, PTS_ECANCELED, 0, PTS_ECANCELED,
                                   PTS_ECANCELED}));
}

TEST_F(Scheduler, CallerSlotBadInputCallsNothing) {
  bool called = false;
  auto cb = [](void *d, int) { *static_cast<bool *>(d) = true; };
  pts__sched_slot slot;
  EXPECT_EQ(pts__scheduler_post_in(nullptr, &slot, cb, &called, 0), PTS_EINVAL);
  EXPECT_EQ(pts__scheduler_post_in(s, nullptr, cb, &called, 0), PTS_EINVAL);
  EXPECT_EQ(pts__scheduler_post_in(s, &slot, nullptr, &called, 0), PTS_EINVAL);
  for (int bad : {3, -5, PTS_PRIORITY_INHERIT})
    EXPECT_EQ(pts__scheduler_post_in(s, &slot, cb, &called, bad), PTS_ETYPE) << bad;
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  ASSERT_EQ(pts_global_detach(g2), 0);
  EXPECT_EQ(pts__scheduler_post_in(pts_global_scheduler(g2), &slot, cb, &called, 0),
            PTS_ECLOSED);
  Run();
  EXPECT_FALSE(called);
  ExpectNoLiveTasks();
}

// ---- a task run at once (pts__scheduler_run_now, the agents' in-place run) ----

// The loop's runner calls it only when nothing else is runnable, so a
// scheduler that has a task queued, is detached, or whose global is not fully
// active must say no.
TEST_F(Scheduler, RunNowIsRefusedWhenTheTaskWouldNotBeThePick) {
  EXPECT_TRUE(pts__scheduler_may_run_now(s));
  ASSERT_EQ(PostCb([](int) {}, nullptr), 0);
  EXPECT_FALSE(pts__scheduler_may_run_now(s));  // queued in this scheduler
  pts_global *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  pts_scheduler *s2 = pts_global_scheduler(g2);
  EXPECT_FALSE(pts__scheduler_may_run_now(s2));  // queued in another of the loop
  Run();
  EXPECT_TRUE(pts__scheduler_may_run_now(s2));
  ASSERT_EQ(pts_global_set_active(g2, false), 0);
  EXPECT_FALSE(pts__scheduler_may_run_now(s2));
  ASSERT_EQ(pts_global_set_active(g2, true), 0);
  EXPECT_TRUE(pts__scheduler_may_run_now(s2));
  ASSERT_EQ(pts_global_detach(g2), 0);
  EXPECT_FALSE(pts__scheduler_may_run_now(s2));
  EXPECT_TRUE(pts__scheduler_may_run_now(s));
}

// Run at once, the task is a postTask task of its priority as if queued and
// then selected: the priority's state is current (a yield inherits it), it
// counts as live while it runs, and no queue is mapped for it. The pick is
// 1 + its level. (That it takes one enqueue order is checked by the agents'
// StressTest.PerProducerFifo, which counts the orders.)
TEST_F(Scheduler, RunNowRunsATaskOfItsPriorityAsPicked) {
  struct Now {
    Scheduler *t;
    std::string id;
    pts__sched_stats during;
    uint32_t mapped;
  };
  auto run = [](void *d, int st) {
    auto *n = static_cast<Now *>(d);
    ASSERT_EQ(st, 0);
    Scheduler *t = n->t;
    t->Push(n->id);
    pts__sched_get_stats(t->loop, &n->during);
    n->mapped = pts__sched_mapped_queues(t->s);
    ASSERT_EQ(t->YieldCb([t, n](int y) { if (!y) t->Push(n->id + "-cont"); }, nullptr), 0);
    ASSERT_EQ(t->PostCb([t, n](int y) { if (!y) t->Push(n->id + "-post"); }, nullptr), 0);
  };
  pts__sched_stats before;
  pts__sched_get_stats(loop, &before);
  Now bg{this, "bg", {}, 99};
  EXPECT_EQ(pts__scheduler_run_now(s, run, &bg, PTS_PRIORITY_BACKGROUND), 1);
  EXPECT_EQ(bg.during.live_tasks, before.live_tasks + 1);
  EXPECT_EQ(bg.mapped, 0u);
  Run();
  // A background yield waits behind the user-visible post, as a background
  // task's would; the post inherits nothing.
  EXPECT_EQ(Ids(), "bg,bg-post,bg-cont");
  ids.clear();
  Now ub{this, "ub", {}, 99};
  EXPECT_EQ(pts__scheduler_run_now(s, run, &ub, PTS_PRIORITY_USER_BLOCKING), 5);
  Run();
  EXPECT_EQ(Ids(), "ub,ub-cont,ub-post");
  pts__sched_stats after;
  pts__sched_get_stats(loop, &after);
  EXPECT_EQ(after.ran_now, before.ran_now + 2);
  EXPECT_EQ(pts__sched_mapped_queues(s), 0u);
  ExpectNoLiveTasks();
}

// A run of tasks run at once (pts__scheduler_run_in, the agents' in-place
// pass): each task runs with its priority's state current, the state is set
// once for tasks of one priority in a row and changed for another, it counts
// as one live task while the run lasts, and pts__scheduler_run_end restores
// the loop's state as it was before the run. Each task starts with its
// state even when the one before left another current.
TEST_F(Scheduler, ARunKeepsEachTasksStateAndRestoresTheLoopsAtItsEnd) {
  struct Seen {
    Scheduler *t;
    pts_sched_state *state = nullptr;
    uint64_t live = 0;
    bool leave = false;  // then leaves no state current (pts_loop_leave_state)
  };
  // The current state, as a pointer to compare (pts_loop_capture_state's
  // reference dropped at once: the states compared outlive the test).
  static auto current = [](pts_loop *l) {
    pts_sched_state *st = pts_loop_capture_state(l);
    pts_sched_state_unref(st);
    return st;
  };
  auto run = [](void *d, int st) {
    auto *n = static_cast<Seen *>(d);
    ASSERT_EQ(st, 0);
    n->state = current(n->t->loop);
    pts__sched_stats now;
    pts__sched_get_stats(n->t->loop, &now);
    n->live = now.live_tasks;
    if (n->leave) pts_loop_leave_state(n->t->loop);
  };
  pts_sched_state *outside = current(loop);
  pts__sched_stats before;
  pts__sched_get_stats(loop, &before);
  pts__sched_run r = PTS__SCHED_RUN_INIT;
  // The first task leaves no state current (an embedder's job runner may):
  // the next task still starts with its own.
  Seen a{this}, b{this}, c{this};
  a.leave = true;
  EXPECT_EQ(pts__scheduler_run_in(&r, s, run, &a, PTS_PRIORITY_USER_VISIBLE), 3);
  EXPECT_EQ(pts__scheduler_run_in(&r, s, run, &b, PTS_PRIORITY_USER_VISIBLE), 3);
  EXPECT_EQ(pts__scheduler_run_in(&r, s, run, &c, PTS_PRIORITY_BACKGROUND), 1);
  ASSERT_NE(a.state, nullptr);
  EXPECT_NE(a.state, outside);
  EXPECT_EQ(a.state, b.state);  // one priority, one state
  EXPECT_NE(c.state, a.state);
  EXPECT_EQ(a.live, before.live_tasks + 1);
  EXPECT_EQ(b.live, before.live_tasks + 1);
  EXPECT_EQ(c.live, before.live_tasks + 1);
  // Between two tasks of the run the state stays; the end restores it.
  EXPECT_EQ(current(loop), c.state);
  pts__scheduler_run_end(&r);
  EXPECT_EQ(current(loop), outside);
  pts__scheduler_run_end(&r);  // ended twice: nothing
  EXPECT_EQ(current(loop), outside);
  // The same states as tasks run one by one.
  Seen d{this};
  EXPECT_EQ(pts__scheduler_run_now(s, run, &d, PTS_PRIORITY_USER_VISIBLE), 3);
  EXPECT_EQ(d.state, a.state);
  pts__sched_stats after;
  pts__sched_get_stats(loop, &after);
  EXPECT_EQ(after.ran_now, before.ran_now + 4);
  ExpectNoLiveTasks();
}

// ---- bad input ----

TEST_F(Scheduler, BadInputIsRejectedWithoutSideEffects) {
  bool called = false;
  auto cb = [](void *d, int) { *static_cast<bool *>(d) = true; };
  auto pcb = [](void *d, int) {
    *static_cast<bool *>(d) = true;
    return pts_undefined();
  };
  pts_promise *p = nullptr;
  EXPECT_EQ(pts_global_scheduler(nullptr), nullptr);
  EXPECT_EQ(pts_scheduler_post_task_cb(nullptr, cb, &called, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_scheduler_post_task_cb(s, nullptr, &called, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_scheduler_post_task(nullptr, pcb, &called, nullptr, &p), PTS_EINVAL);
  EXPECT_EQ(pts_scheduler_post_task(s, nullptr, &called, nullptr, &p), PTS_EINVAL);
  EXPECT_EQ(pts_scheduler_yield(nullptr, nullptr, &p), PTS_EINVAL);
  EXPECT_EQ(pts_scheduler_yield_cb(s, nullptr, nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_scheduler_yield_cb(nullptr, nullptr, cb, &called), PTS_EINVAL);
  for (int bad : {3, 7, -5, PTS_PRIORITY_INHERIT}) {
    pts_post_options o = Prio(bad);
    EXPECT_EQ(pts_scheduler_post_task_cb(s, cb, &called, &o), PTS_ETYPE) << bad;
    EXPECT_EQ(pts_scheduler_post_task(s, pcb, &called, &o, &p), PTS_ETYPE) << bad;
  }
  for (int bad : {3, -7}) {
    pts_yield_options y = YPrio(bad);
    EXPECT_EQ(pts_scheduler_yield(s, &y, &p), PTS_ETYPE);
    EXPECT_EQ(pts_scheduler_yield_cb(s, &y, cb, &called), PTS_ETYPE);
  }
  for (int64_t bad : {int64_t(-1), int64_t(9007199254740992LL), INT64_MAX, INT64_MIN}) {
    pts_post_options o = NoOpts();
    o.delay_ms = bad;
    EXPECT_EQ(pts_scheduler_post_task_cb(s, cb, &called, &o), PTS_ETYPE);
    EXPECT_EQ(pts_scheduler_post_task(s, pcb, &called, &o, &p), PTS_ETYPE);
  }
  // A signal of another loop.
  pts_loop *other;
  ASSERT_EQ(pts_loop_new(nullptr, &other), 0);
  pts_controller *oc;
  ASSERT_EQ(pts_task_controller_new(other, PTS_PRIORITY_USER_VISIBLE, &oc), 0);
  pts_post_options o = Sig(pts_controller_signal(oc));
  EXPECT_EQ(pts_scheduler_post_task_cb(s, cb, &called, &o), PTS_EFOREIGN);
  EXPECT_EQ(pts_scheduler_post_task(s, pcb, &called, &o, &p), PTS_EFOREIGN);
  pts_yield_options y = YSig(pts_controller_signal(oc));
  EXPECT_EQ(pts_scheduler_yield(s, &y, &p), PTS_EFOREIGN);
  EXPECT_EQ(pts_scheduler_yield_cb(s, &y, cb, &called), PTS_EFOREIGN);
  pts_controller_unref(oc);
  ASSERT_EQ(pts_loop_free(other), 0);
  EXPECT_EQ(p, nullptr);
  Run();
  EXPECT_FALSE(called);
  ExpectNoLiveTasks();
}

#ifndef NDEBUG
TEST_F(Scheduler, ForeignThreadIsRefused) {
  int rc_post = 0, rc_yield = 0;
  bool called = false;
  std::thread t([&] {
    rc_post = pts_scheduler_post_task_cb(s, [](void *d, int) { *static_cast<bool *>(d) = true; },
                                 &called, nullptr);
    rc_yield = pts_scheduler_yield_cb(s, nullptr, [](void *d, int) { *static_cast<bool *>(d) = true; },
                                      &called);
  });
  t.join();
  EXPECT_EQ(rc_post, PTS_EFOREIGN);
  EXPECT_EQ(rc_yield, PTS_EFOREIGN);
  Run();
  EXPECT_FALSE(called);
}
#endif

// ---- yield options ----

TEST_F(Scheduler, YieldWithAnAbortSignalIsUserVisibleAndAbortable) {
  pts_controller *c = AbortController();
  pts_yield_options y = YSig(pts_controller_signal(c));
  pts_promise *yp = Yield(&y);
  PostId("uv", NoOpts());
  PostId("ub", Prio(PTS_PRIORITY_USER_BLOCKING));
  Then(yp, PushR("cont"));
  pts_yield_options y2 = YSig(pts_controller_signal(c));
  pts_promise *yp2 = Yield(&y2);
  pts_controller_abort(c, nullptr);
  Run();
  EXPECT_EQ(Ids(), "ub,uv");  // cont never ran: aborted
  EXPECT_TRUE(RejectedWith(yp, PTS_EABORT));
  EXPECT_TRUE(RejectedWith(yp2, PTS_EABORT));
  // Not aborted: a user-visible continuation, ahead of user-visible tasks.
  pts_controller *c2 = AbortController();
  pts_yield_options y3 = YSig(pts_controller_signal(c2));
  ids.clear();
  PostId("uv", NoOpts());
  Then(Yield(&y3), PushR("cont"));
  Run();
  EXPECT_EQ(Ids(), "cont,uv");
}

TEST_F(Scheduler, YieldOutsideAnyTaskIsUserVisible) {
  PostId("uv", NoOpts());
  PostId("ub", Prio(PTS_PRIORITY_USER_BLOCKING));
  Then(Yield(), PushR("cont"));
  pts_yield_options y = YSigInherit();
  Then(Yield(&y), PushR("cont2"));
  Run();
  EXPECT_EQ(Ids(), "ub,cont,cont2,uv");
}

// ---- the selection structure against a reference model ----

struct ModelTask {
  int id;
  int signal;    // -1: fixed
  int fixed;     // priority if fixed
  bool cont;
  uint64_t age;  // posting sequence
};

class SchedulerModel : public SchedTest {
 protected:
  uint64_t rng_ = 88172645463325252ull;
  uint64_t Next() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return rng_;
  }
  std::vector<pts_controller *> cs_;
  std::vector<int> prio_;
  std::map<int, ModelTask> pending_;
  std::map<int, pts_controller *> abortable_;
  uint64_t age_ = 0;
  int next_id_ = 0;
  int mismatches_ = 0, ran_ = 0;

  int Eff(const ModelTask &t) {
    int p = t.signal >= 0 ? prio_[t.signal] : t.fixed;
    return 2 * p + (t.cont ? 1 : 0);
  }
  int Best() {
    int best = -1;
    for (auto &kv : pending_) {
      const ModelTask &t = kv.second;
      if (best < 0) { best = t.id; continue; }
      const ModelTask &b = pending_[best];
      if (Eff(t) > Eff(b) || (Eff(t) == Eff(b) && t.age < b.age)) best = t.id;
    }
    return best;
  }
  void OnRun(int id) {
    ran_++;
    if (Best() != id) mismatches_++;
    pending_.erase(id);
    abortable_.erase(id);
    Mutate();
  }
  void PostOne() {
    ModelTask t{next_id_++, -1, 0, (Next() % 4) == 0, age_++};
    int kind = (int)(Next() % 3);
    pts_controller *ac = nullptr;
    if (kind == 0) {
      t.signal = (int)(Next() % cs_.size());
    } else {
      t.fixed = (int)(Next() % 3);
      if (kind == 2) ac = AbortController();
    }
    int id = t.id;
    StatusFn f = [this, id](int st) { if (st == 0) OnRun(id); };
    int rc;
    if (t.cont) {
      pts_yield_options y = YNone();
      if (t.signal >= 0) y = YSig(pts_controller_signal(cs_[t.signal]));
      else if (ac) { y = YSig(pts_controller_signal(ac)); y.priority = t.fixed; }
      else y = YPrio(t.fixed);
      rc = YieldCb(f, &y);
    } else {
      pts_post_options o = NoOpts();
      if (t.signal >= 0) o = Sig(pts_controller_signal(cs_[t.signal]));
      else { o = Prio(t.fixed); if (ac) o.signal = pts_controller_signal(ac); }
      rc = PostCb(f, &o);
    }
    ASSERT_EQ(rc, 0);
    pending_[id] = t;
    if (ac) abortable_[id] = ac;
  }
  void Mutate() {
    int r = (int)(Next() % 10);
    if (r < 3 && next_id_ < 3000) {
      for (int i = 0; i < 3; i++) PostOne();
    } else if (r < 6) {
      int sidx = (int)(Next() % cs_.size());
      int p = (int)(Next() % 3);
      prio_[sidx] = p;
      pts_controller_set_priority(cs_[sidx], p);
    } else if (r < 7 && !abortable_.empty()) {
      auto it = abortable_.begin();
      std::advance(it, (long)(Next() % abortable_.size()));
      int id = it->first;
      pts_controller *c = it->second;
      abortable_.erase(it);
      pending_.erase(id);
      pts_controller_abort(c, nullptr);
    }
  }
};

TEST_F(SchedulerModel, SelectionMatchesTheSpecOverRandomOperations) {
  for (int i = 0; i < 40; i++) {
    cs_.push_back(TaskController(PTS_PRIORITY_USER_VISIBLE));
    prio_.push_back(PTS_PRIORITY_USER_VISIBLE);
  }
  for (int i = 0; i < 300; i++) PostOne();
  for (int i = 0; i < 50; i++) Mutate();
  Run();
  EXPECT_EQ(mismatches_, 0);
  EXPECT_TRUE(pending_.empty());
  EXPECT_GT(ran_, 300);
  ExpectNoLiveTasks();
}

}  // namespace
