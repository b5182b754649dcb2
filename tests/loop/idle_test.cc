// Idle callbacks: run last, deadline = min(now + 50 ms, next timer), timeout
// as a task with didTimeout, idle periods, the idle scheduling state, cancel.
#include "util.h"

struct IdleRec {
  pts_loop *loop;
  Log *log;
  std::string label;
  int calls = 0;
  int status = 1;
  uint64_t remaining = 0;
  bool timed_out = false;
  int state_tag = -1;
  pts_global *again = nullptr;  // request another idle callback from inside
  IdleRec *next = nullptr;
};
static void idle_fn(void *d, int status, const pts_idle_deadline *dl) {
  IdleRec *r = static_cast<IdleRec *>(d);
  r->calls++;
  r->status = status;
  r->log->add(status ? r->label + "!" : r->label);
  if (status) {
    EXPECT_EQ(dl, nullptr);
    return;
  }
  r->remaining = pts_idle_time_remaining(dl);
  r->timed_out = pts_idle_did_timeout(dl);
  r->state_tag = state_tag(r->loop);
  if (r->again) {
    ASSERT_EQ(pts_request_idle_callback(r->again, idle_fn, r->next, 0, nullptr), 0);
  }
}

TEST(Idle, RunsWhenNothingElseIsRunnableWithTheDeadline) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  IdleRec i1{loop, &log, "idle1"}, i2{loop, &log, "idle2"};
  Rec t{&log, "task"};
  uint64_t id1 = 0;
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &i1, 0, &id1), 0);
  EXPECT_NE(id1, 0u);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &t), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "task idle1");
  EXPECT_EQ(i1.remaining, 50 * kMs);  // no timer: the 50 ms cap
  EXPECT_FALSE(i1.timed_out);
  // A timer 20 ms away caps the deadline.
  ASSERT_EQ(pts_timer_start(g, 20, rec_fn, &t, nullptr), 0);
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &i2, 0, nullptr), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(i2.remaining, 20 * kMs);
  EXPECT_EQ(pts_idle_time_remaining(nullptr), 0u);
  EXPECT_FALSE(pts_idle_did_timeout(nullptr));
  EXPECT_EQ(pts_request_idle_callback(nullptr, idle_fn, &i2, 0, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_request_idle_callback(g, nullptr, &i2, 0, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Idle, TimeoutRunsItAsATaskWithDidTimeout) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  IdleRec i{loop, &log, "idle"};
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &i, 10, nullptr), 0);
  ASSERT_EQ(pts_loop_advance(loop, 20 * kMs), 0);  // first stop at t=10
  EXPECT_EQ(i.calls, 1);
  EXPECT_TRUE(i.timed_out);
  EXPECT_EQ(i.remaining, 0u);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);  // not twice
  EXPECT_EQ(i.calls, 1);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Idle, RunningBeforeTheTimeoutCancelsIt) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  IdleRec i{loop, &log, "idle"};
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &i, 10, nullptr), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_FALSE(i.timed_out);
  EXPECT_EQ(i.remaining, 10 * kMs);  // its own timeout timer was the next timer
  ASSERT_EQ(pts_loop_advance(loop, 50 * kMs), 0);
  EXPECT_EQ(i.calls, 1);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Idle, CallbackRequestedDuringAPeriodWaitsForTheNext) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  IdleRec second{loop, &log, "second"};
  IdleRec first{loop, &log, "first"};
  first.again = g;
  first.next = &second;
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &first, 0, nullptr), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "first");
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "first second");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Idle, SeveralCallbacksRunInOnePeriodInRequestOrder) {
  pts_loop *loop = new_loop(true);
  pts_global *d = pts_loop_default_global(loop), *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Log log;
  IdleRec a{loop, &log, "a"}, b{loop, &log, "b"}, c{loop, &log, "c"};
  ASSERT_EQ(pts_request_idle_callback(d, idle_fn, &a, 0, nullptr), 0);
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &b, 0, nullptr), 0);
  ASSERT_EQ(pts_request_idle_callback(d, idle_fn, &c, 0, nullptr), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(log.str(), "a b c");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

static pts_sched_state *make_idle_state(pts_loop *);
static int idle_states_destroyed = 0;
static pts_sched_state *make_idle_state(pts_loop *) {
  return &fake_state_new(&idle_states_destroyed, 77)->hdr;
}

TEST(Idle, RunsWithTheIdleStateFromTheFactory) {
  idle_states_destroyed = 0;
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  IdleRec a{loop, &log, "a"}, b{loop, &log, "b"};
  IdleRec none{loop, &log, "none"};
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &none, 0, nullptr), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(none.state_tag, 0);  // no factory: no state
  pts__loop_set_idle_state_factory(loop, make_idle_state);
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &a, 0, nullptr), 0);
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &b, 5, nullptr), 0);
  ASSERT_EQ(pts_loop_advance(loop, 10 * kMs), 0);  // b times out first
  EXPECT_EQ(a.state_tag, 77);
  EXPECT_EQ(b.state_tag, 77);
  EXPECT_TRUE(b.timed_out);
  EXPECT_EQ(log.str(), "none b a");
  EXPECT_EQ(idle_states_destroyed, 2);
  EXPECT_EQ(pts__loop_current_state(loop), nullptr);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Idle, CancelAndInactiveAndDetach) {
  pts_loop *loop = new_loop(true);
  pts_global *d = pts_loop_default_global(loop), *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Log log;
  IdleRec a{loop, &log, "a"}, b{loop, &log, "b"}, c{loop, &log, "c"};
  uint64_t ia, ib;
  ASSERT_EQ(pts_request_idle_callback(d, idle_fn, &a, 5, &ia), 0);
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &b, 0, &ib), 0);
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &c, 8, nullptr), 0);
  EXPECT_EQ(pts_cancel_idle_callback(g, ia), PTS_ENOTFOUND);  // not g's
  EXPECT_EQ(pts_cancel_idle_callback(d, ia), 0);
  EXPECT_EQ(pts_cancel_idle_callback(d, ia), PTS_ENOTFOUND);
  EXPECT_EQ(pts_cancel_idle_callback(nullptr, ia), PTS_EINVAL);
  uint64_t tid;
  Rec t{&log, "t"};
  ASSERT_EQ(pts_timer_start(d, 1, rec_fn, &t, &tid), 0);
  EXPECT_EQ(pts_cancel_idle_callback(d, tid), PTS_ENOTFOUND);  // a timer id
  EXPECT_EQ(pts_timer_cancel(d, ib), PTS_ENOTFOUND);          // an idle id
  ASSERT_EQ(pts_global_set_active(g, false), 0);
  ASSERT_EQ(pts_loop_advance(loop, 20 * kMs), 0);  // a canceled (no timeout)
  EXPECT_EQ(log.str(), "t");                        // g inactive: b, c wait
  ASSERT_EQ(pts_global_detach(g), 0);
  EXPECT_EQ(b.status, PTS_ECANCELED);
  EXPECT_EQ(c.status, PTS_ECANCELED);
  EXPECT_EQ(b.calls + c.calls, 2);
  EXPECT_EQ(a.calls, 0);
  EXPECT_EQ(pts_request_idle_callback(g, idle_fn, &a, 0, nullptr), PTS_ECLOSED);
  ASSERT_EQ(pts_loop_advance(loop, 20 * kMs), 0);
  EXPECT_EQ(b.calls + c.calls, 2);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Idle, RunForeverRunsIdleCallbacksThenSleeps) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  IdleRec a{loop, &log, "a"};
  ASSERT_EQ(pts_request_idle_callback(g, idle_fn, &a, 0, nullptr), 0);
  struct Stop {
    static void fn(void *d, int, const pts_idle_deadline *) {
      pts_loop_stop(static_cast<pts_loop *>(d));
    }
  };
  ASSERT_EQ(pts_request_idle_callback(g, Stop::fn, loop, 0, nullptr), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_FOREVER), 1);
  EXPECT_EQ(log.str(), "a");
  EXPECT_EQ(pts_loop_free(loop), 0);
}
