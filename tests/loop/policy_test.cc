// The default policy between task classes (docs/loop.md), with a fake
// provider standing in for the scheduler, and the starvation guard.
#include "util.h"

static void idle_rec(void *d, int status, const pts_idle_deadline *) {
  rec_fn(d, status);
}

TEST(Policy, ClassesInOrderAndFifoAmongTimerMessageGenericAndPriority2) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  FakeProvider prov;
  prov.install(loop, &log);
  Rec idle{&log, "idle"};
  ASSERT_EQ(pts_request_idle_callback(g, idle_rec, &idle, 0, nullptr), 0);
  Rec g1{&log, "G1"}, t1{&log, "T1"}, m1{&log, "M1"}, i1{&log, "I1"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &g1), 0);
  prov.post(2, "P2a");
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_TIMER, rec_fn, &t1), 0);
  prov.post(5, "P5");
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_MESSAGE, rec_fn, &m1), 0);
  prov.post(3, "P3");
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &i1), 0);
  prov.post(0, "P0");
  prov.post(1, "P1");
  prov.post(2, "P2b");
  prov.post(4, "P4");
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "I1 P5 P4 P3 G1 P2a T1 M1 P2b P1 P0 idle");
  EXPECT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(prov.destroyed, 1);
}

TEST(Policy, InputBeatsOlderGenericWork) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec a{&log, "gen"}, b{&log, "msg"}, c{&log, "input"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &a), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_MESSAGE, rec_fn, &b), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &c), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "input gen msg");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Policy, InputAndFifoAcrossGlobalsByEnqueueOrder) {
  pts_loop *loop = new_loop();
  pts_global *d = pts_loop_default_global(loop), *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Log log;
  Rec a{&log, "dG"}, b{&log, "gT"}, c{&log, "dM"}, e{&log, "gI"}, f{&log, "dI"};
  ASSERT_EQ(pts_queue_task(d, PTS_SOURCE_GENERIC, rec_fn, &a), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_TIMER, rec_fn, &b), 0);
  ASSERT_EQ(pts_queue_task(d, PTS_SOURCE_MESSAGE, rec_fn, &c), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &e), 0);
  ASSERT_EQ(pts_queue_task(d, PTS_SOURCE_USER_INPUT, rec_fn, &f), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "gI dI dG gT dM");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Policy, BackgroundOnlyWhenNothingElseGuardOff) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  FakeProvider prov;
  prov.install(loop, &log);
  prov.post(0, "B");
  std::vector<Rec> in(10, Rec{&log, "I"});
  for (auto &r : in) ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &r), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "I I I I I I I I I I B");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Policy, StarvationGuardRunsTheLowestWaitingClass) {
  pts_loop *loop = new_loop(false, 3);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  FakeProvider prov;
  prov.install(loop, &log);
  prov.post(0, "B1");
  Rec gen{&log, "G1"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &gen), 0);
  std::vector<Rec> in;
  for (int i = 1; i <= 10; i++) in.push_back(Rec{&log, "I" + std::to_string(i)});
  for (auto &r : in) ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &r), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "I1 I2 I3 B1 I4 I5 I6 G1 I7 I8 I9 I10");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Policy, StarvationGuardBetweenHighSchedulerWorkAndTimers) {
  pts_loop *loop = new_loop(false, 2);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  FakeProvider prov;
  prov.install(loop, &log);
  Rec t1{&log, "T1"}, t2{&log, "T2"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_TIMER, rec_fn, &t1), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_TIMER, rec_fn, &t2), 0);
  for (int i = 1; i <= 5; i++) prov.post(4, "H" + std::to_string(i));
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "H1 H2 T1 H3 H4 T2 H5");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Policy, ProviderHooks) {
  pts_loop *loop = new_loop();
  Log log;
  FakeProvider prov;
  EXPECT_EQ(pts__loop_set_provider(loop, nullptr, nullptr), PTS_EINVAL);
  pts__provider_ops bad = {nullptr, nullptr, nullptr, nullptr, nullptr};
  EXPECT_EQ(pts__loop_set_provider(loop, &bad, nullptr), PTS_EINVAL);
  pts__provider_ops no_burst = *FakeProvider::ops();
  no_burst.run_burst = nullptr;
  EXPECT_EQ(pts__loop_set_provider(loop, &no_burst, nullptr), PTS_EINVAL);
  prov.install(loop, &log);
  EXPECT_EQ(pts__loop_provider_ctx(loop), &prov);
  EXPECT_EQ(pts__loop_set_provider(loop, FakeProvider::ops(), &prov), PTS_EBUSY);
  pts_global *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  ASSERT_EQ(pts_global_set_active(g, true), 0);  // no change: no call
  ASSERT_EQ(pts_global_set_active(g, false), 0);
  ASSERT_EQ(pts_global_set_active(g, true), 0);
  ASSERT_EQ(pts_global_detach(g), 0);
  ASSERT_EQ(pts_global_detach(g), 0);
  EXPECT_EQ(prov.changes, (std::vector<int>{0, 1, -1}));
  prov.post(3, "left");
  EXPECT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(prov.destroyed, 1);
  EXPECT_EQ(prov.released, 1);
}
