// The loop driven from a worker pool (loop_internal.h, "driving a loop from a
// worker pool"): attach/detach and ownership, the wake hook replacing the
// parker, poll (commands and due timers applied, no task run, the urgency of
// the next task, no effect on the starvation guard, a re-wake when it leaves
// commands behind), step, the next deadline and the stop request.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "ptsched/scheduler.h"
#include "util.h"

extern "C" uint64_t pts_test_loop_wakes(pts_loop *loop);
extern "C" pts__mpsc_node *pts_test_loop_begin_push(pts_loop *loop, pts__command *cmd);
extern "C" void pts_test_loop_end_push(pts__mpsc_node *prev, pts__command *cmd);

namespace {

struct Hook {
  std::atomic<int> calls{0};
  static void fn(void *ctx) { static_cast<Hook *>(ctx)->calls.fetch_add(1); }
};

void count(void *data, int status) {
  if (status == 0) static_cast<std::atomic<int> *>(data)->fetch_add(1);
}

TEST(PoolHooks, AttachClaimsTheLoopUntilDetach) {
  pts_loop *l = new_loop();
  Hook h;
  EXPECT_EQ(PTS_EINVAL, pts__loop_pool_attach(l, nullptr, &h));
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  EXPECT_TRUE(pts__loop_is_owner(l));
  EXPECT_EQ(PTS_EBUSY, pts__loop_pool_attach(l, Hook::fn, &h));
  EXPECT_EQ(PTS_EBUSY, pts_loop_run(l, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(PTS_EBUSY, pts_loop_free(l));
  pts__loop_pool_detach(l);
  EXPECT_EQ(0, pts_loop_run(l, PTS_RUN_UNTIL_IDLE));
  // Attach from another thread: it becomes the owner.
  std::thread t([&] {
    ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
    EXPECT_TRUE(pts__loop_is_owner(l));
    pts__loop_pool_detach(l);
  });
  t.join();
  EXPECT_FALSE(pts__loop_is_owner(l));
  pts__loop_bind_thread(l);
  EXPECT_EQ(0, pts_loop_free(l));
}

TEST(PoolHooks, WakeHookReplacesTheParker) {
  pts_loop *l = new_loop();
  Hook h;
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  std::atomic<int> ran{0};
  std::thread t([&] {
    EXPECT_EQ(0, pts_loop_call_from_any_thread(l, count, &ran));
    EXPECT_EQ(0, pts_queue_task_from_any_thread(pts_loop_default_global(l),
                                                PTS_SOURCE_MESSAGE, count, &ran));
    EXPECT_EQ(0, pts_loop_stop(l));
  });
  t.join();
  EXPECT_EQ(3, h.calls.load());  // after every push, and on stop
  EXPECT_EQ(0u, pts_test_loop_wakes(l));
  EXPECT_TRUE(pts__loop_take_stop(l));
  EXPECT_FALSE(pts__loop_take_stop(l));
  // The command runs at the poll; the task only at a step.
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll(l, false));
  EXPECT_EQ(1, ran.load());
  EXPECT_EQ(1, pts__loop_step(l));
  EXPECT_EQ(2, ran.load());
  EXPECT_EQ(0, pts__loop_step(l));
  EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll(l, false));
  pts__loop_pool_detach(l);
  // Detached: the parker is back.
  EXPECT_EQ(0, pts_loop_call_from_any_thread(l, count, &ran));
  EXPECT_EQ(3, h.calls.load());
  EXPECT_EQ(1, pts_loop_run(l, PTS_RUN_UNTIL_IDLE) >= 0 ? 1 : 0);
  EXPECT_EQ(3, ran.load());
  EXPECT_EQ(0, pts_loop_free(l));
}

void noop_idle(void *, int, const pts_idle_deadline *) {}

TEST(PoolHooks, PollReportsTheUrgencyOfTheNextTask) {
  pts_loop *l = new_loop();
  Log log;
  FakeProvider fp;
  fp.install(l, &log);
  Hook h;
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  pts_global *g = pts_loop_default_global(l);
  EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll(l, false));
  ASSERT_EQ(0, pts_request_idle_callback(g, noop_idle, nullptr, 0, nullptr));
  EXPECT_EQ(PTS__URGENCY_IDLE, pts__loop_poll(l, false));
  fp.post(0, "bg");
  EXPECT_EQ(PTS__URGENCY_LOW, pts__loop_poll(l, false));
  fp.post(2, "uv");
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll(l, false));
  fp.post(4, "ub");
  EXPECT_EQ(PTS__URGENCY_HIGH, pts__loop_poll(l, false));
  Rec in{&log, "input"};
  ASSERT_EQ(0, pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &in));
  EXPECT_EQ(PTS__URGENCY_INPUT, pts__loop_poll(l, false));
  EXPECT_EQ("", log.str());  // polls run nothing
  while (pts__loop_step(l) == 1) {
  }
  EXPECT_EQ("input ub uv bg", log.str());
  EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll(l, false));
  pts__loop_pool_detach(l);
  EXPECT_EQ(0, pts_loop_free(l));
}

TEST(PoolHooks, PollDoesNotAdvanceTheStarvationGuard) {
  pts_loop *l = new_loop(false, 1);
  Log log;
  Hook h;
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  pts_global *g = pts_loop_default_global(l);
  Rec i1{&log, "i1"}, i2{&log, "i2"}, m1{&log, "m1"};
  ASSERT_EQ(0, pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &i1));
  ASSERT_EQ(0, pts_queue_task(g, PTS_SOURCE_USER_INPUT, rec_fn, &i2));
  ASSERT_EQ(0, pts_queue_task(g, PTS_SOURCE_MESSAGE, rec_fn, &m1));
  for (int k = 0; k < 5; k++) EXPECT_EQ(PTS__URGENCY_INPUT, pts__loop_poll(l, false));
  ASSERT_EQ(1, pts__loop_step(l));
  // The guard now owes the message class one task: poll says so, twice.
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll(l, false));
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll(l, false));
  ASSERT_EQ(1, pts__loop_step(l));
  ASSERT_EQ(1, pts__loop_step(l));
  EXPECT_EQ("i1 m1 i2", log.str());
  pts__loop_pool_detach(l);
  EXPECT_EQ(0, pts_loop_free(l));
}

TEST(PoolHooks, PollFiresDueTimersAndReportsTheNextDeadline) {
  pts_loop *l = new_loop();
  Hook h;
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  pts_global *g = pts_loop_default_global(l);
  EXPECT_EQ(UINT64_MAX, pts__loop_next_deadline(l));
  std::atomic<int> ran{0};
  uint64_t t0 = pts_loop_now(l);
  uint64_t id;
  ASSERT_EQ(0, pts_timer_start(g, 60000, count, &ran, &id));
  ASSERT_EQ(0, pts_timer_start(g, 1, count, &ran, nullptr));
  uint64_t d = pts__loop_next_deadline(l);
  EXPECT_GE(d, t0 + kMs);
  EXPECT_LE(d, pts_loop_now(l) + kMs);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll(l, false));  // the 1 ms timer's task
  EXPECT_EQ(0, ran.load());
  EXPECT_GE(pts__loop_next_deadline(l), t0 + 60000 * kMs);
  EXPECT_EQ(1, pts__loop_step(l));
  EXPECT_EQ(1, ran.load());
  ASSERT_EQ(0, pts_timer_cancel(g, id));
  EXPECT_EQ(UINT64_MAX, pts__loop_next_deadline(l));
  pts__loop_pool_detach(l);
  EXPECT_EQ(0, pts_loop_free(l));
}

TEST(PoolHooks, PollWakesAgainWhenItLeavesCommandsBehind) {
  pts_loop *l = new_loop();
  Hook h;
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  std::atomic<int> ran{0};
  const int n = 3000;  // more than one inbox batch
  for (int i = 0; i < n; i++) ASSERT_EQ(0, pts_loop_call_from_any_thread(l, count, &ran));
  int before = h.calls.load();
  EXPECT_EQ(n, before);
  EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll(l, false));
  EXPECT_LT(ran.load(), n);
  EXPECT_EQ(before + 1, h.calls.load());  // come back: there is more
  while (ran.load() < n) pts__loop_poll(l, false);
  int after = h.calls.load();
  EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll(l, false));
  EXPECT_EQ(after, h.calls.load());  // nothing left: no wake
  pts__loop_pool_detach(l);
  EXPECT_EQ(0, pts_loop_free(l));
}

struct Applied {
  pts__command cmd;
  int applied = 0;
};
void applied_fn(pts__command *c, int status) {
  if (status == 0) reinterpret_cast<Applied *>(c)->applied++;
}
static const pts__command_type applied_fn_type = {PTS__CMD_APPLY, applied_fn};

// A poll that meets a push stopped between its exchange and its link (the
// producer's wake hook ran before the owner gave the wake token back, so
// nobody else will wake the owner for it) calls the wake hook itself, and
// the command is applied by the poll after the link lands. Without it the
// owner slept on the command (found with a ping-pong of two agents).
TEST(PoolHooks, PollComesBackForAPushStoppedMidway) {
  pts_loop *l = new_loop();
  Hook h;
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  for (bool leave_inbox : {false, true}) {
    Applied c;
    c.cmd.type = &applied_fn_type;
    pts__mpsc_node *prev = pts_test_loop_begin_push(l, &c.cmd);
    int before = h.calls.load();
    EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll(l, leave_inbox));
    EXPECT_EQ(before + 1, h.calls.load());  // come back
    EXPECT_EQ(0, c.applied);
    pts_test_loop_end_push(prev, &c.cmd);
    EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll(l, false));
    EXPECT_EQ(1, c.applied);
    EXPECT_EQ(before + 1, h.calls.load());  // nothing left: no wake
  }
  pts__loop_pool_detach(l);
  EXPECT_EQ(0, pts_loop_free(l));
}

// A command the runner below may run in place: it logs "run N" when run,
// "apply N" (or "cancel N") when applied the usual way.
struct RCmd {
  pts__command cmd;
  int id;
  bool runnable;
  std::vector<std::string> *log;
};
void rcmd_apply(pts__command *c, int status) {
  auto *r = reinterpret_cast<RCmd *>(c);
  r->log->push_back((status == 0 ? "apply " : "cancel ") + std::to_string(r->id));
}
// Of a kind the loop gives its command runner (as the agents layer's posts).
static const pts__command_type rcmd_apply_type = {PTS__CMD_AGENT_TASK, rcmd_apply};
// Runs the commands behind the first in the same call, as the agents
// layer's runner does.
pts__command *rcmd_runner(pts_loop *l, pts__command *c, pts__inbox_pass *pass) {
  do {
    if (c->type != &rcmd_apply_type) return c;
    auto *r = reinterpret_cast<RCmd *>(c);
    if (!r->runnable) return c;
    r->log->push_back("run " + std::to_string(r->id));
    pts__inbox_pass_ran(pass, 5);  // as a provider task of effective priority 4 (user-blocking)
  } while ((c = pts__loop_inbox_next(l, pass)) != NULL);
  return nullptr;
}

// pts__loop_last_urgency: the class of the task the last step ran, for
// each kind of pick (the agents layer counts tasks_run by it): scheduler
// tasks by effective priority (a yield continuation one above its
// priority's tasks), an input task, a generic task, an idle callback.
void idle_noop(void *, int, const pts_idle_deadline *) {}

TEST(PoolHooks, TheLastUrgencyIsTheClassOfTheTaskTheStepRan) {
  pts_loop *l = new_loop();
  pts_global *g = pts_loop_default_global(l);
  pts_scheduler *s = pts_global_scheduler(g);
  std::atomic<int> ran{0};
  struct Case {
    int priority;
    bool yield;
    int urgency;
  };
  const Case cases[] = {
      {PTS_PRIORITY_BACKGROUND, false, PTS__URGENCY_LOW},      // effective 0
      {PTS_PRIORITY_BACKGROUND, true, PTS__URGENCY_LOW},       // 1
      {PTS_PRIORITY_USER_VISIBLE, false, PTS__URGENCY_FIFO},   // 2
      {PTS_PRIORITY_USER_VISIBLE, true, PTS__URGENCY_HIGH},    // 3
      {PTS_PRIORITY_USER_BLOCKING, false, PTS__URGENCY_HIGH},  // 4
      {PTS_PRIORITY_USER_BLOCKING, true, PTS__URGENCY_HIGH},   // 5
  };
  for (const Case &c : cases) {
    if (c.yield) {
      pts_yield_options yo = PTS_YIELD_OPTIONS_INIT;
      yo.priority = c.priority;
      ASSERT_EQ(0, pts_scheduler_yield_cb(s, &yo, count, &ran));
    } else {
      pts_post_options po = PTS_POST_OPTIONS_INIT;
      po.priority = c.priority;
      ASSERT_EQ(0, pts_scheduler_post_task_cb(s, count, &ran, &po));
    }
    EXPECT_EQ(1, pts__loop_step(l));
    EXPECT_EQ(c.urgency, pts__loop_last_urgency(l)) << c.priority << (c.yield ? " yield" : "");
  }
  ASSERT_EQ(0, pts_queue_task(g, PTS_SOURCE_USER_INPUT, count, &ran));
  EXPECT_EQ(1, pts__loop_step(l));
  EXPECT_EQ(PTS__URGENCY_INPUT, pts__loop_last_urgency(l));
  ASSERT_EQ(0, pts_queue_task(g, PTS_SOURCE_GENERIC, count, &ran));
  EXPECT_EQ(1, pts__loop_step(l));
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_last_urgency(l));
  EXPECT_EQ(8, ran.load());
  ASSERT_EQ(0, pts_request_idle_callback(g, idle_noop, nullptr, 0, nullptr));
  EXPECT_EQ(1, pts__loop_step(l));
  EXPECT_EQ(PTS__URGENCY_IDLE, pts__loop_last_urgency(l));
  EXPECT_EQ(0, pts_loop_free(l));
}

// The post-step poll with only provider tasks queued: the urgency of the
// provider's most urgent task, from peek, or from the provider's word of
// levels once it gave one (pts__loop_set_provider_levels), which the poll
// then reads instead of peek.
TEST(PoolHooks, ThePostStepPollTakesPeeksAnswerOrTheWordOfLevels) {
  pts_loop *l = new_loop();
  Log log;
  FakeProvider prov;
  prov.install(l, &log);
  EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll_after_step(l));
  prov.post(0, "b");
  EXPECT_EQ(PTS__URGENCY_LOW, pts__loop_poll_after_step(l));
  prov.post(2, "v");
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll_after_step(l));
  prov.post(4, "u");
  EXPECT_EQ(PTS__URGENCY_HIGH, pts__loop_poll_after_step(l));
  // The word, not the queues: it says what the provider says it has.
  uint32_t levels = 1u << 1;
  pts__loop_set_provider_levels(l, &levels);
  EXPECT_EQ(PTS__URGENCY_LOW, pts__loop_poll_after_step(l));
  levels = (1u << 2) | 1u;
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll_after_step(l));
  levels = 1u << 5;
  EXPECT_EQ(PTS__URGENCY_HIGH, pts__loop_poll_after_step(l));
  pts__loop_set_provider_levels(l, nullptr);
  EXPECT_EQ(PTS__URGENCY_HIGH, pts__loop_poll_after_step(l));  // peek again
  EXPECT_EQ(0, pts_loop_free(l));
}

// The command runner (loop_internal.h) sees a command only when nothing else
// is runnable, and its pick is the step's; a command it declines is applied.
// A poll that may leave the inbox does so only when the inbox is all the
// work there is.
TEST(PoolHooks, TheCommandRunnerRunsACommandOnlyWhenNothingElseIsRunnable) {
  pts_loop *l = new_loop();
  Hook h;
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  pts__loop_set_command_runner(l, rcmd_runner);
  std::vector<std::string> log;
  RCmd c[4] = {{{}, 1, true, &log}, {{}, 2, true, &log}, {{}, 3, false, &log},
               {{}, 4, true, &log}};
  for (RCmd &r : c) r.cmd.type = &rcmd_apply_type;
  pts__loop_send_from_any_thread(l, &c[0].cmd);
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll(l, true));  // left to the step
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(1, pts__loop_step(l));
  EXPECT_EQ(PTS__URGENCY_HIGH, pts__loop_last_urgency(l));
  // An ordinary task is ready: the poll drains, the runner is not asked.
  std::atomic<int> ran{0};
  ASSERT_EQ(0, pts_queue_task(pts_loop_default_global(l), PTS_SOURCE_GENERIC, count, &ran));
  pts__loop_send_from_any_thread(l, &c[1].cmd);
  EXPECT_EQ(PTS__URGENCY_FIFO, pts__loop_poll(l, true));
  EXPECT_EQ(1, pts__loop_step(l));
  EXPECT_EQ(1, ran.load());
  // Declined: applied as usual, and the drain applies what follows it.
  pts__loop_send_from_any_thread(l, &c[2].cmd);
  pts__loop_send_from_any_thread(l, &c[3].cmd);
  EXPECT_EQ(0, pts__loop_step(l));
  EXPECT_EQ(PTS__URGENCY_NONE, pts__loop_poll(l, true));
  EXPECT_EQ(log, (std::vector<std::string>{"run 1", "apply 2", "apply 3", "apply 4"}));
  pts__loop_pool_detach(l);
  EXPECT_EQ(0, pts_loop_free(l));
}

// The inbox run of a pool thread with one loop: up to max commands run in
// place in one call, each counted by its class; nothing when another task is
// ready; a declined command is applied together with the rest.
TEST(PoolHooks, RunInboxRunsUpToMaxInPlaceAndCountsThemByClass) {
  pts_loop *l = new_loop();
  Hook h;
  ASSERT_EQ(0, pts__loop_pool_attach(l, Hook::fn, &h));
  pts__loop_set_command_runner(l, rcmd_runner);
  std::vector<std::string> log;
  RCmd c[5] = {{{}, 1, true, &log}, {{}, 2, true, &log}, {{}, 3, true, &log},
               {{}, 4, false, &log}, {{}, 5, true, &log}};
  for (RCmd &r : c) r.cmd.type = &rcmd_apply_type;
  std::atomic<int> ran{0};
  pts_global *g = pts_loop_default_global(l);
  ASSERT_EQ(0, pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, count, &ran));
  for (int i = 0; i < 3; i++) pts__loop_send_from_any_thread(l, &c[i].cmd);
  uint32_t counts[PTS__URGENCY_COUNT] = {0};
  EXPECT_EQ(3u, pts__loop_run_inbox(l, 3, counts));
  EXPECT_EQ(1, ran.load());
  EXPECT_EQ(1u, counts[PTS__URGENCY_FIFO]);  // the message task
  EXPECT_EQ(2u, counts[PTS__URGENCY_HIGH]);  // the runner's pick
  EXPECT_EQ(PTS__URGENCY_HIGH, pts__loop_last_urgency(l));
  EXPECT_EQ(0u, pts__loop_run_inbox(l, 0, counts));
  ASSERT_EQ(0, pts_queue_task(g, PTS_SOURCE_GENERIC, count, &ran));
  EXPECT_EQ(0u, pts__loop_run_inbox(l, 8, counts));  // a task is ready
  EXPECT_EQ(1, pts__loop_step(l));                   // which drains the inbox
  EXPECT_EQ(2, ran.load());
  EXPECT_EQ(0u, pts__loop_run_inbox(l, 8, counts));  // empty
  pts__loop_send_from_any_thread(l, &c[3].cmd);
  pts__loop_send_from_any_thread(l, &c[4].cmd);
  EXPECT_EQ(0u, pts__loop_run_inbox(l, 8, counts));
  EXPECT_EQ(log, (std::vector<std::string>{"run 1", "run 2", "apply 3", "apply 4", "apply 5"}));
  EXPECT_EQ(2u, counts[PTS__URGENCY_HIGH]);
  pts__loop_pool_detach(l);
  EXPECT_EQ(0, pts_loop_free(l));
}

}  // namespace
