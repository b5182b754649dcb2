// Timers: start order for equal delays, the virtual clock's exactness, 0 ms,
// cancel in every state, saturation, inactive globals, embedded timers, the
// real clock, and the heap under random cancels.
#include <algorithm>
#include <chrono>
#include <random>

#include "util.h"

struct Stamp {
  pts_loop *loop;
  Log *log;
  std::string label;
  uint64_t at = 0;
  int calls = 0;
  int status = 1;
};
static void stamp_fn(void *d, int status) {
  Stamp *s = static_cast<Stamp *>(d);
  s->calls++;
  s->status = status;
  s->at = pts_loop_now(s->loop);
  s->log->add(status ? s->label + "!" : s->label);
}

TEST(Timer, EqualDelaysFireInStartOrder) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  std::vector<Stamp> s;
  for (int i = 0; i < 5; i++) s.push_back(Stamp{loop, &log, "t" + std::to_string(i)});
  Stamp early{loop, &log, "early"};
  for (auto &x : s) ASSERT_EQ(pts_timer_start(g, 10, stamp_fn, &x, nullptr), 0);
  ASSERT_EQ(pts_timer_start(g, 5, stamp_fn, &early, nullptr), 0);
  ASSERT_EQ(pts_loop_advance(loop, 20 * kMs), 0);
  EXPECT_EQ(log.str(), "early t0 t1 t2 t3 t4");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Timer, VirtualClockIsExact) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  EXPECT_EQ(pts_loop_now(loop), 0u);
  Stamp a{loop, &log, "a"}, b{loop, &log, "b"}, c{loop, &log, "c"}, d{loop, &log, "d"};
  ASSERT_EQ(pts_timer_start(g, 35, stamp_fn, &d, nullptr), 0);
  ASSERT_EQ(pts_timer_start(g, 20, stamp_fn, &b, nullptr), 0);
  ASSERT_EQ(pts_timer_start(g, 10, stamp_fn, &a, nullptr), 0);
  ASSERT_EQ(pts_timer_start(g, 20, stamp_fn, &c, nullptr), 0);
  ASSERT_EQ(pts_loop_advance(loop, 30 * kMs), 0);
  EXPECT_EQ(log.str(), "a b c");
  EXPECT_EQ(a.at, 10 * kMs);
  EXPECT_EQ(b.at, 20 * kMs);
  EXPECT_EQ(c.at, 20 * kMs);
  EXPECT_EQ(pts_loop_now(loop), 30 * kMs);
  ASSERT_EQ(pts_loop_advance(loop, 5 * kMs - 1), 0);
  EXPECT_EQ(d.calls, 0);
  ASSERT_EQ(pts_loop_advance(loop, 1), 0);
  EXPECT_EQ(d.at, 35 * kMs);
  // Time does not move by itself and running never fires a later timer.
  Stamp e{loop, &log, "e"};
  ASSERT_EQ(pts_timer_start(g, 1, stamp_fn, &e, nullptr), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  EXPECT_EQ(e.calls, 0);
  EXPECT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(e.status, PTS_ECANCELED);
}

struct Nested {
  pts_global *g;
  Stamp *inner;
};
static void start_inner(void *d, int status) {
  if (status) return;
  Nested *n = static_cast<Nested *>(d);
  ASSERT_EQ(pts_timer_start(n->g, 7, stamp_fn, n->inner, nullptr), 0);
}

TEST(Timer, AdvanceStopsAtTimersStartedOnTheWay) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Stamp inner{loop, &log, "inner"};
  Nested n{g, &inner};
  ASSERT_EQ(pts_timer_start(g, 10, start_inner, &n, nullptr), 0);
  ASSERT_EQ(pts_loop_advance(loop, 100 * kMs), 0);
  EXPECT_EQ(inner.at, 17 * kMs);
  EXPECT_EQ(pts_loop_now(loop), 100 * kMs);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Timer, ZeroMsQueuesAtOnceInFifoWithOtherSources) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec m{&log, "msg1"}, m2{&log, "msg2"};
  Stamp t{loop, &log, "timer0"};
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_MESSAGE, rec_fn, &m), 0);
  ASSERT_EQ(pts_timer_start(g, 0, stamp_fn, &t, nullptr), 0);
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_MESSAGE, rec_fn, &m2), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);  // no advance needed
  EXPECT_EQ(log.str(), "msg1 timer0 msg2");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

struct Canceler {
  pts_global *g;
  uint64_t id;
  int rc = 1;
};
static void cancel_fn(void *d, int status) {
  if (status) return;
  Canceler *c = static_cast<Canceler *>(d);
  c->rc = pts_timer_cancel(c->g, c->id);
}

TEST(Timer, CancelBeforeExpiryAfterQueueAndAfterRun) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop), *g2;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  Log log;
  Stamp a{loop, &log, "a"}, b{loop, &log, "b"}, z{loop, &log, "z"}, w{loop, &log, "w"};
  uint64_t ia = 0, ib = 0, iz = 0, iw = 0;
  ASSERT_EQ(pts_timer_start(g, 10, stamp_fn, &a, &ia), 0);
  EXPECT_EQ(pts_timer_cancel(g2, ia), PTS_ENOTFOUND);  // another global's
  EXPECT_EQ(pts_timer_cancel(g, ia), 0);               // pending
  EXPECT_EQ(pts_timer_cancel(g, ia), PTS_ENOTFOUND);   // twice
  EXPECT_EQ(pts_timer_cancel(g, 0), PTS_ENOTFOUND);
  EXPECT_EQ(pts_timer_cancel(g, 987654), PTS_ENOTFOUND);
  ASSERT_EQ(pts_timer_start(g, 0, stamp_fn, &z, &iz), 0);  // queued at once
  EXPECT_EQ(pts_timer_cancel(g, iz), 0);
  // Two timers due together: both tasks are queued in the timer phase; the
  // first one's task cancels the second's queued task.
  Canceler c{g, 0};
  ASSERT_EQ(pts_timer_start(g, 20, cancel_fn, &c, nullptr), 0);
  ASSERT_EQ(pts_timer_start(g, 20, stamp_fn, &b, &ib), 0);
  c.id = ib;
  ASSERT_EQ(pts_timer_start(g, 30, stamp_fn, &w, &iw), 0);
  ASSERT_EQ(pts_loop_advance(loop, 50 * kMs), 0);
  EXPECT_EQ(c.rc, 0);
  EXPECT_EQ(pts_timer_cancel(g, iw), PTS_ENOTFOUND);  // already ran
  EXPECT_EQ(a.calls + b.calls + z.calls, 0);
  EXPECT_EQ(log.str(), "w");
  EXPECT_NE(ia, ib);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Timer, OverflowingDelaysSaturateAndNeverFire) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Stamp a{loop, &log, "a"}, b{loop, &log, "b"};
  uint64_t ia;
  ASSERT_EQ(pts_timer_start(g, UINT64_MAX, stamp_fn, &a, &ia), 0);
  ASSERT_EQ(pts_timer_start(g, UINT64_MAX / 1000, stamp_fn, &b, nullptr), 0);
  pts__timer et;
  Stamp e{loop, &log, "e"};
  pts__timer_init(&et, g, stamp_fn, &e);
  ASSERT_EQ(pts__timer_start(&et, UINT64_MAX - 3), 0);
  EXPECT_EQ(et.deadline, UINT64_MAX - 3);
  ASSERT_EQ(pts_loop_advance(loop, 1000 * kMs), 0);
  ASSERT_EQ(pts_loop_advance(loop, UINT64_MAX), 0);  // saturates too
  EXPECT_EQ(pts_loop_now(loop), UINT64_MAX);
  EXPECT_EQ(a.calls + b.calls, 0);
  EXPECT_EQ(e.calls, 1);  // UINT64_MAX - 3 is a real deadline
  EXPECT_EQ(pts_timer_cancel(g, ia), 0);
  EXPECT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(b.status, PTS_ECANCELED);
}

TEST(Timer, InactiveGlobalPausesTimersAndResumesWithRemainingTime) {
  pts_loop *loop = new_loop(true);
  pts_global *d = pts_loop_default_global(loop), *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Log log;
  Stamp a{loop, &log, "a"}, other{loop, &log, "other"}, late{loop, &log, "late"};
  ASSERT_EQ(pts_timer_start(g, 100, stamp_fn, &a, nullptr), 0);
  ASSERT_EQ(pts_timer_start(d, 500, stamp_fn, &other, nullptr), 0);
  ASSERT_EQ(pts_loop_advance(loop, 30 * kMs), 0);
  ASSERT_EQ(pts_global_set_active(g, false), 0);
  // Started while inactive: its whole delay waits for reactivation.
  ASSERT_EQ(pts_timer_start(g, 10, stamp_fn, &late, nullptr), 0);
  ASSERT_EQ(pts_loop_advance(loop, 1000 * kMs), 0);
  EXPECT_EQ(a.calls, 0);
  EXPECT_EQ(late.calls, 0);
  EXPECT_EQ(other.at, 500 * kMs);  // the active global's timer ran on time
  ASSERT_EQ(pts_global_set_active(g, true), 0);
  ASSERT_EQ(pts_loop_advance(loop, 200 * kMs), 0);
  EXPECT_EQ(late.at, 1040 * kMs);
  EXPECT_EQ(a.at, 1100 * kMs);  // 70 ms were left
  EXPECT_EQ(log.str(), "other late a");
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Timer, DueTaskOfAnInactiveGlobalWaits) {
  pts_loop *loop = new_loop(true);
  pts_global *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Log log;
  Stamp a{loop, &log, "a"};
  ASSERT_EQ(pts_timer_start(g, 0, stamp_fn, &a, nullptr), 0);  // queued task
  ASSERT_EQ(pts_global_set_active(g, false), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);
  ASSERT_EQ(pts_global_set_active(g, true), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 1);
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Timer, EmbeddedTimerRunsInTheTimerPhaseNotAsATask) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Rec task{&log, "task"};
  Stamp tm{loop, &log, "timer"};
  pts__timer t;
  pts__timer_init(&t, g, stamp_fn, &tm);
  EXPECT_FALSE(pts__timer_stop(&t));  // not started
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, rec_fn, &task), 0);
  ASSERT_EQ(pts__timer_start(&t, 0), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_ONCE), 1);
  EXPECT_EQ(log.str(), "timer task");
  // Restart and stop: fn is never called.
  ASSERT_EQ(pts__timer_start(&t, 5), 0);
  ASSERT_EQ(pts__timer_start(&t, 8), 0);  // restarting re-arms
  EXPECT_TRUE(pts__timer_stop(&t));
  EXPECT_FALSE(pts__timer_stop(&t));
  ASSERT_EQ(pts_loop_advance(loop, 10 * kMs), 0);
  EXPECT_EQ(tm.calls, 1);
  EXPECT_EQ(pts__timer_start(nullptr, 1), PTS_EINVAL);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Timer, DetachReleasesTimersOfBothKinds) {
  pts_loop *loop = new_loop(true);
  pts_global *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Log log;
  Stamp a{loop, &log, "a"}, b{loop, &log, "b"}, c{loop, &log, "c"};
  ASSERT_EQ(pts_timer_start(g, 10, stamp_fn, &a, nullptr), 0);
  ASSERT_EQ(pts_timer_start(g, 0, stamp_fn, &b, nullptr), 0);
  pts__timer t;
  pts__timer_init(&t, g, stamp_fn, &c);
  ASSERT_EQ(pts__timer_start(&t, 3 * kMs), 0);
  ASSERT_EQ(pts_global_set_active(g, false), 0);  // paused ones too
  ASSERT_EQ(pts_global_detach(g), 0);
  EXPECT_EQ(a.status, PTS_ECANCELED);
  EXPECT_EQ(b.status, PTS_ECANCELED);
  EXPECT_EQ(c.status, PTS_ECANCELED);
  EXPECT_EQ(a.calls + b.calls + c.calls, 3);
  EXPECT_EQ(pts__timer_start(&t, 1), PTS_ECLOSED);
  ASSERT_EQ(pts_loop_advance(loop, 100 * kMs), 0);
  EXPECT_EQ(a.calls + b.calls + c.calls, 3);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Timer, RealClockSleepsUntilTheDeadline) {
  pts_loop *loop = new_loop();
  pts_global *g = pts_loop_default_global(loop);
  Log log;
  Stamp a{loop, &log, "a"};
  uint64_t t0 = pts_loop_now(loop);
  ASSERT_EQ(pts_timer_start(g, 20, stamp_fn, &a, nullptr), 0);
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0);  // not due: no sleep
  EXPECT_EQ(pts_loop_run(loop, PTS_RUN_ONCE), 1);
  EXPECT_GE(a.at - t0, 20 * kMs);
  EXPECT_LT(a.at - t0, 2000 * kMs);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

struct HeapRec {
  std::vector<std::pair<uint64_t, int>> *fired;
  pts_loop *loop;
  int idx;
};
static void heap_fn(void *d, int status) {
  HeapRec *h = static_cast<HeapRec *>(d);
  if (status == 0) h->fired->push_back({pts_loop_now(h->loop), h->idx});
}

TEST(Timer, HeapKeepsDeadlineThenStartOrderUnderRandomCancels) {
  pts_loop *loop = new_loop(true);
  pts_global *g = pts_loop_default_global(loop);
  std::mt19937 rng(42);
  const int N = 2000;
  std::vector<HeapRec> recs(N);
  std::vector<uint64_t> delay(N), ids(N);
  std::vector<std::pair<uint64_t, int>> fired;
  for (int i = 0; i < N; i++) {
    recs[i] = HeapRec{&fired, loop, i};
    delay[i] = 1 + rng() % 50;
    ASSERT_EQ(pts_timer_start(g, delay[i], heap_fn, &recs[i], &ids[i]), 0);
  }
  std::vector<std::pair<uint64_t, int>> expect;
  for (int i = 0; i < N; i++) {
    if (rng() % 2) {
      ASSERT_EQ(pts_timer_cancel(g, ids[i]), 0);
    } else {
      expect.push_back({delay[i] * kMs, i});
    }
  }
  std::sort(expect.begin(), expect.end());
  ASSERT_EQ(pts_loop_advance(loop, 100 * kMs), 0);
  EXPECT_EQ(fired, expect);
  EXPECT_EQ(pts_loop_free(loop), 0);
}
