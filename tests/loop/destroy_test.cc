// pts_loop_free with pending work of every kind: each callback is called
// exactly once with PTS_ECANCELED, nothing runs, nothing leaks (LSan), and
// work added from a release callback is refused.
#include <thread>

#include "util.h"

struct Counter {
  int calls = 0;
  int canceled = 0;
  int ran = 0;
};
static void count_fn(void *d, int status) {
  Counter *c = static_cast<Counter *>(d);
  c->calls++;
  if (status == PTS_ECANCELED) c->canceled++;
  if (status == 0) c->ran++;
}
static void count_idle(void *d, int status, const pts_idle_deadline *) { count_fn(d, status); }
static void count_cleanup(void *d) { static_cast<Counter *>(d)->calls++; }
static pts_value never(void *d, pts_value) {
  static_cast<Counter *>(d)->ran++;
  return pts_undefined();
}

struct EmbeddedCmd {
  pts__command cmd;
  Counter *c;
};
static void cmd_fn(pts__command *cmd, int status) {
  count_fn(reinterpret_cast<EmbeddedCmd *>(cmd)->c, status);
}
static const pts__command_type cmd_fn_type = {PTS__CMD_APPLY, cmd_fn};

struct Greedy {
  pts_global *g;
  pts_loop *loop;
  int queue_rc = 1, timer_rc = 1, micro_rc = 1, global_rc = 1;
  int calls = 0;
};
static void greedy_fn(void *d, int status) {
  Greedy *gr = static_cast<Greedy *>(d);
  gr->calls++;
  EXPECT_EQ(status, PTS_ECANCELED);
  gr->queue_rc = pts_queue_task(gr->g, PTS_SOURCE_GENERIC, greedy_fn, gr);
  gr->timer_rc = pts_timer_start(gr->g, 0, greedy_fn, gr, nullptr);
  gr->micro_rc = pts_queue_microtask(gr->loop, greedy_fn, gr);
  pts_global *x;
  gr->global_rc = pts_global_new(gr->loop, &x);
}

TEST(Destroy, PendingWorkOfEveryKindIsReleasedExactlyOnce) {
  pts_loop *loop = new_loop(true);
  pts_global *d = pts_loop_default_global(loop), *g2, *g3;
  ASSERT_EQ(pts_global_new(loop, &g2), 0);
  ASSERT_EQ(pts_global_new(loop, &g3), 0);
  Log log;
  FakeProvider prov;
  prov.install(loop, &log);
  prov.post(2, "sched");

  Counter tasks, timers, embedded_timers, micro, idle, inbox, cmds, cleanups;
  int expected_tasks = 0, expected_timers = 0;
  for (pts_global *g : {d, g2, g3}) {
    for (int s = 0; s < PTS_SOURCE_COUNT; s++) {
      ASSERT_EQ(pts_queue_task(g, (pts_task_source)s, count_fn, &tasks), 0);
      expected_tasks++;
    }
    ASSERT_EQ(pts_timer_start(g, 10, count_fn, &timers, nullptr), 0);
    ASSERT_EQ(pts_timer_start(g, 0, count_fn, &timers, nullptr), 0);  // queued
    expected_timers += 2;
    ASSERT_EQ(pts_request_idle_callback(g, count_idle, &idle, 0, nullptr), 0);
    ASSERT_EQ(pts_request_idle_callback(g, count_idle, &idle, 5, nullptr), 0);
  }
  ASSERT_EQ(pts_global_set_active(g3, false), 0);  // paused timers, idle too
  pts__timer et[2];
  pts__timer_init(&et[0], d, count_fn, &embedded_timers);
  pts__timer_init(&et[1], g3, count_fn, &embedded_timers);
  ASSERT_EQ(pts__timer_start(&et[0], 5 * kMs), 0);
  ASSERT_EQ(pts__timer_start(&et[1], 5 * kMs), 0);
  for (int i = 0; i < 3; i++) ASSERT_EQ(pts_queue_microtask(loop, count_fn, &micro), 0);
  EmbeddedCmd ec{{}, &cmds};
  ec.cmd.type = &cmd_fn_type;
  std::thread t([&] {
    for (int i = 0; i < 5; i++) {
      ASSERT_EQ(pts_queue_task_from_any_thread(d, PTS_SOURCE_MESSAGE, count_fn, &inbox), 0);
      ASSERT_EQ(pts_loop_call_from_any_thread(loop, count_fn, &inbox), 0);
    }
    pts__loop_send_from_any_thread(loop, &ec.cmd);
  });
  t.join();
  // Promises: a pending one with reactions, a settled one with queued jobs,
  // a thenable job in flight.
  pts_promise *pending, *settled, *adopting, *derived;
  ASSERT_EQ(pts_promise_new(loop, &pending), 0);
  ASSERT_EQ(pts_promise_then(pending, never, never, &cleanups, count_cleanup, &derived), 0);
  ASSERT_EQ(pts_promise_new(loop, &settled), 0);
  ASSERT_EQ(pts_promise_resolve(settled, pts_int(1)), 0);
  ASSERT_EQ(pts_promise_then(settled, never, never, &cleanups, count_cleanup, nullptr), 0);
  ASSERT_EQ(pts_promise_finally(settled, never, &cleanups, count_cleanup, nullptr), 0);
  ASSERT_EQ(pts_promise_new(loop, &adopting), 0);
  ASSERT_EQ(pts_promise_resolve(adopting, pts_promise_value(settled)), 0);
  pts_promise_unref(settled);
  pts_promise_unref(adopting);
  pts_promise_unref(derived);
  // A state held by a pending microtask and a reaction.
  int destroyed = 0;
  FakeState *s = fake_state_new(&destroyed, 3);
  pts_loop_enter_state(loop, &s->hdr);
  ASSERT_EQ(pts_queue_microtask(loop, count_fn, &micro), 0);
  ASSERT_EQ(pts_promise_then(pending, never, nullptr, &cleanups, count_cleanup, nullptr), 0);
  pts_loop_leave_state(loop);
  pts_sched_state_unref(&s->hdr);
  // A task whose release tries to add more work.
  Greedy gr{d, loop};
  ASSERT_EQ(pts_queue_task(d, PTS_SOURCE_GENERIC, greedy_fn, &gr), 0);

  EXPECT_EQ(pts_loop_free(loop), 0);

  EXPECT_EQ(tasks.calls, expected_tasks);
  EXPECT_EQ(tasks.canceled, expected_tasks);
  EXPECT_EQ(timers.calls, expected_timers);
  EXPECT_EQ(timers.canceled, expected_timers);
  EXPECT_EQ(embedded_timers.canceled, 2);
  EXPECT_EQ(embedded_timers.calls, 2);
  EXPECT_EQ(idle.calls, 6);
  EXPECT_EQ(idle.canceled, 6);
  EXPECT_EQ(micro.calls, 4);
  EXPECT_EQ(micro.canceled, 4);
  EXPECT_EQ(inbox.calls, 10);
  EXPECT_EQ(inbox.canceled, 10);
  EXPECT_EQ(cmds.calls, 1);
  EXPECT_EQ(cmds.canceled, 1);
  EXPECT_EQ(cleanups.calls, 4);  // one per reaction
  EXPECT_EQ(cleanups.ran, 0);    // no handler ran
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(prov.destroyed, 1);
  EXPECT_EQ(prov.released, 1);
  EXPECT_EQ(log.str(), "");  // nothing ran
  EXPECT_EQ(gr.calls, 1);
  EXPECT_EQ(gr.queue_rc, PTS_ECLOSED);
  EXPECT_EQ(gr.timer_rc, PTS_ECLOSED);
  EXPECT_EQ(gr.micro_rc, PTS_ECLOSED);
  EXPECT_EQ(gr.global_rc, PTS_ECLOSED);
}

TEST(Destroy, DetachThenFreeReleasesOnlyOnce) {
  pts_loop *loop = new_loop();
  pts_global *g;
  ASSERT_EQ(pts_global_new(loop, &g), 0);
  Counter c;
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_GENERIC, count_fn, &c), 0);
  ASSERT_EQ(pts_timer_start(g, 100, count_fn, &c, nullptr), 0);
  ASSERT_EQ(pts_request_idle_callback(g, count_idle, &c, 100, nullptr), 0);
  ASSERT_EQ(pts_global_detach(g), 0);
  EXPECT_EQ(c.canceled, 3);
  EXPECT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(c.calls, 3);
}

TEST(Destroy, EmptyLoopsAndManyGlobalsFreeCleanly) {
  for (int i = 0; i < 20; i++) {
    pts_loop *loop = new_loop(i % 2);
    for (int k = 0; k < i; k++) {
      pts_global *g;
      ASSERT_EQ(pts_global_new(loop, &g), 0);
    }
    EXPECT_EQ(pts_loop_free(loop), 0);
  }
}
