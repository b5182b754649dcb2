// Ports of WPT scheduler/task-controller-abort1.any.js,
// task-controller-abort2.any.js, task-controller-abort-signal-and-priority.any.js,
// task-controller-setPriority1.any.js, task-controller-setPriority-repeated.any.js,
// task-controller-setPriority-delayed-task.any.js and
// task-signal-any-post-task-run-order.tentative.any.js: signals driving the
// scheduler through its abort and priority algorithms (sched/tasks.c,
// sched/queues.c).
#include "signal_test_util.h"

namespace ptstest {
namespace {

constexpr int UB = PTS_PRIORITY_USER_BLOCKING;
constexpr int UV = PTS_PRIORITY_USER_VISIBLE;
constexpr int BG = PTS_PRIORITY_BACKGROUND;

struct Job {
  std::vector<std::string> *order;
  std::string id;
  int64_t result = 0;
  bool ran = false;
  pts_controller *set_controller = nullptr;  // setPriority(set_priority) when run
  int set_priority = UB;
  pts_loop *loop = nullptr;
  uint64_t ran_at_ns = 0;
};
static pts_value run_job(void *data, int status) {
  auto *j = static_cast<Job *>(data);
  if (status != 0) return pts_undefined();
  j->ran = true;
  if (j->order) j->order->push_back(j->id);
  if (j->loop) j->ran_at_ns = pts_loop_now(j->loop);
  if (j->set_controller) {
    EXPECT_EQ(pts_controller_set_priority(j->set_controller, j->set_priority), 0);
  }
  return pts_int(j->result);
}

class TaskControllerWPT : public SignalTest {
 protected:
  pts_promise *post(Job *j, pts_signal *signal, int priority = PTS_PRIORITY_UNSET,
                    int64_t delay_ms = 0) {
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.signal = signal;
    o.priority = priority;
    o.delay_ms = delay_ms;
    pts_promise *p = nullptr;
    EXPECT_EQ(pts_scheduler_post_task(pts_global_scheduler(global_), run_job, j, &o, &p), 0);
    return p;
  }
  void run() { ASSERT_GE(pts_loop_run(loop_, PTS_RUN_UNTIL_IDLE), 0); }
  static std::string joined(const std::vector<std::string> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + v[i];
    return s;
  }
  // await Promise.all(tasks)
  static void expect_all_fulfilled(const std::vector<pts_promise *> &ps) {
    for (size_t i = 0; i < ps.size(); i++) {
      EXPECT_EQ(pts_promise_get_state(ps[i]), PTS_PROMISE_FULFILLED) << "task " << i;
    }
  }
  static void expect_abort_error(pts_promise *p) {
    EXPECT_EQ(pts_promise_get_state(p), PTS_PROMISE_REJECTED);
    EXPECT_STREQ(pts_error_name(pts_promise_get_result(p)), "AbortError");
  }
};

// task-controller-abort1: "Test that TaskController.abort() prevents a task
// from running and rejects the promise"
TEST_F(TaskControllerWPT, Abort1_AbortPreventsATaskFromRunningAndRejectsThePromise) {
  pts_controller *c = task_controller();
  Job j{nullptr, "0"};
  pts_promise *p = post(&j, pts_controller_signal(c));
  pts_controller_abort(c, nullptr);
  run();
  expect_abort_error(p);
  EXPECT_FALSE(j.ran);
  pts_promise_unref(p);
  pts_controller_unref(c);
}

// task-controller-abort2: "Test aborting a task aborts the appropriate task"
TEST_F(TaskControllerWPT, Abort2_AbortingATaskAbortsTheAppropriateTask) {
  pts_controller *cs[5];
  Job jobs[5];
  pts_promise *ps[5];
  for (int i = 0; i < 5; i++) {
    cs[i] = task_controller();
    jobs[i] = Job{nullptr, std::to_string(i), i};
    ps[i] = post(&jobs[i], pts_controller_signal(cs[i]));
  }
  pts_controller_abort(cs[2], nullptr);
  run();
  expect_abort_error(ps[2]);
  std::string results;
  for (int i = 0; i < 5; i++) {
    if (i == 2) continue;
    ASSERT_EQ(pts_promise_get_state(ps[i]), PTS_PROMISE_FULFILLED);
    results += (results.empty() ? "" : ",") + std::to_string(pts_promise_get_result(ps[i]).u.i);
  }
  EXPECT_EQ(results, "0,1,3,4");
  for (int i = 0; i < 5; i++) {
    pts_promise_unref(ps[i]);
    pts_controller_unref(cs[i]);
  }
}

// task-controller-abort-signal-and-priority: "Test that when
// scheduler.postTask() is given both a signal and priority, the signal abort
// is honored"
TEST_F(TaskControllerWPT, AbortSignalAndPriority_SignalAbortIsHonored) {
  pts_controller *c = task_controller();
  Job j1{nullptr, "1"}, j2{nullptr, "2"};
  pts_promise *t1 = post(&j1, pts_controller_signal(c));
  pts_promise *t2 = post(&j2, pts_controller_signal(c), BG);
  pts_controller_abort(c, nullptr);
  run();
  expect_abort_error(t1);
  expect_abort_error(t2);
  pts_promise_unref(t1);
  pts_promise_unref(t2);
  pts_controller_unref(c);
}

// task-controller-setPriority1: "Test that TaskController.setPriority()
// changes the priority of all associated tasks"
TEST_F(TaskControllerWPT, SetPriority1_ChangesThePriorityOfAllAssociatedTasks) {
  pts_controller *c = task_controller();
  pts_signal *signal = pts_controller_signal(c);
  std::vector<std::string> order;
  std::vector<Job> jobs(7);
  std::vector<pts_promise *> ps;
  for (int i = 0; i < 5; i++) {
    jobs[i] = Job{&order, std::to_string(i)};
    ps.push_back(post(&jobs[i], signal));
  }
  jobs[5] = Job{&order, "5"};
  ps.push_back(post(&jobs[5], nullptr, UB));
  jobs[6] = Job{&order, "6"};
  ps.push_back(post(&jobs[6], nullptr, UV));
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(pts_signal_priority(signal), BG);
  run();
  EXPECT_EQ(joined(order), "5,6,0,1,2,3,4");
  expect_all_fulfilled(ps);
  for (auto *p : ps) pts_promise_unref(p);
  pts_controller_unref(c);
}

// task-controller-setPriority-repeated: "TaskController.setPriority() changes
// the priority of all associated tasks when called repeatedly"
TEST_F(TaskControllerWPT, SetPriorityRepeated_WhenCalledRepeatedly) {
  pts_controller *c = task_controller();
  pts_signal *signal = pts_controller_signal(c);
  std::vector<std::string> order;
  std::vector<pts_promise *> ps;
  Job j[6];
  for (int i = 0; i < 6; i++) j[i] = Job{&order, std::to_string(i)};
  ps.push_back(post(&j[0], signal));
  ps.push_back(post(&j[1], nullptr, UB));
  ps.push_back(post(&j[2], nullptr, UV));
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(pts_signal_priority(signal), BG);
  run();
  EXPECT_EQ(joined(order), "1,2,0");
  expect_all_fulfilled(ps);
  order.clear();
  ps.push_back(post(&j[3], signal));
  ps.push_back(post(&j[4], nullptr, UB));
  ps.push_back(post(&j[5], nullptr, UV));
  pts_controller_set_priority(c, UB);
  EXPECT_EQ(pts_signal_priority(signal), UB);
  run();
  EXPECT_EQ(joined(order), "3,4,5");
  expect_all_fulfilled(ps);
  for (auto *p : ps) pts_promise_unref(p);
  pts_controller_unref(c);
}

// task-controller-setPriority-repeated: "TaskController.setPriority() changes
// the priority of all associated tasks when called repeatedly before tasks run"
TEST_F(TaskControllerWPT, SetPriorityRepeated_WhenCalledRepeatedlyBeforeTasksRun) {
  pts_controller *c = task_controller();
  pts_signal *signal = pts_controller_signal(c);
  std::vector<std::string> order;
  std::vector<pts_promise *> ps;
  Job j[3] = {{&order, "0"}, {&order, "1"}, {&order, "2"}};
  ps.push_back(post(&j[0], signal));
  ps.push_back(post(&j[1], nullptr, UB));
  ps.push_back(post(&j[2], nullptr, UV));
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(pts_signal_priority(signal), BG);
  pts_controller_set_priority(c, UV);
  EXPECT_EQ(pts_signal_priority(signal), UV);
  pts_controller_set_priority(c, UB);
  EXPECT_EQ(pts_signal_priority(signal), UB);
  run();
  EXPECT_EQ(joined(order), "0,1,2");
  expect_all_fulfilled(ps);
  for (auto *p : ps) pts_promise_unref(p);
  pts_controller_unref(c);
}

// task-controller-setPriority-delayed-task: "Tests delay when changing a
// delayed task's priority"
TEST_F(TaskControllerWPT, SetPriorityDelayedTask_DelayWhenChangingADelayedTasksPriority) {
  uint64_t start = pts_loop_now(loop_);
  pts_controller *c = task_controller(BG);
  std::vector<std::string> order;
  Job j1{&order, "1"}, j2{&order, "2"};
  j1.set_controller = c;
  j1.set_priority = UB;
  j2.loop = loop_;
  pts_promise *t1 = post(&j1, nullptr, UB, 10);
  pts_promise *t2 = post(&j2, pts_controller_signal(c), PTS_PRIORITY_UNSET, 20);
  advance_ms(30);
  EXPECT_EQ(joined(order), "1,2");
  EXPECT_GE(j2.ran_at_ns - start, 20u * 1000000u);
  EXPECT_EQ(pts_promise_get_state(t1), PTS_PROMISE_FULFILLED);
  EXPECT_EQ(pts_promise_get_state(t2), PTS_PROMISE_FULFILLED);
  pts_promise_unref(t1);
  pts_promise_unref(t2);
  pts_controller_unref(c);
}

// task-signal-any-post-task-run-order: "scheduler.postTask() tasks run in
// priority order with a fixed priority composite signal"
TEST_F(TaskControllerWPT, AnyPostTaskRunOrder_FixedPriorityCompositeSignal) {
  std::vector<std::string> order;
  std::vector<pts_promise *> ps;
  struct {
    const char *id;
    int p;
  } spec[] = {{"B1", BG}, {"B2", BG}, {"UV1", UV}, {"UV2", UV}, {"UB1", UB}, {"UB2", UB}};
  std::vector<Job> jobs(6);
  for (int i = 0; i < 6; i++) {
    jobs[i] = Job{&order, spec[i].id};
    pts_signal *s = task_any({}, spec[i].p);
    ps.push_back(post(&jobs[i], s));
    pts_signal_unref(s);
  }
  run();
  EXPECT_EQ(joined(order), "UB1,UB2,UV1,UV2,B1,B2");
  expect_all_fulfilled(ps);
  for (auto *p : ps) pts_promise_unref(p);
}

// "scheduler.postTask() tasks run in priority order with a dynamic priority
// composite signal"
TEST_F(TaskControllerWPT, AnyPostTaskRunOrder_DynamicPriorityCompositeSignal) {
  std::vector<std::string> order;
  std::vector<pts_promise *> ps;
  pts_controller *c = task_controller(UB);
  pts_signal *signal = task_any({}, pts_controller_signal(c));
  Job j[6] = {{&order, "B1"},  {&order, "B2"},  {&order, "UV1"},
              {&order, "UV2"}, {&order, "UB1"}, {&order, "UB2"}};
  ps.push_back(post(&j[0], signal));
  ps.push_back(post(&j[1], signal));
  ps.push_back(post(&j[2], nullptr, UV));
  ps.push_back(post(&j[3], nullptr, UV));
  ps.push_back(post(&j[4], nullptr, UB));
  ps.push_back(post(&j[5], nullptr, UB));
  pts_controller_set_priority(c, BG);
  run();
  EXPECT_EQ(joined(order), "UB1,UB2,UV1,UV2,B1,B2");
  expect_all_fulfilled(ps);
  for (auto *p : ps) pts_promise_unref(p);
  pts_signal_unref(signal);
  pts_controller_unref(c);
}

// "scheduler.postTask() tasks run in priority order with a composite signal
// whose source has fixed priority"
TEST_F(TaskControllerWPT, AnyPostTaskRunOrder_CompositeSignalWhoseSourceHasFixedPriority) {
  std::vector<std::string> order;
  std::vector<pts_promise *> ps;
  pts_signal *parent = task_any({}, BG);
  pts_signal *signal = task_any({}, parent);
  Job j[6] = {{&order, "B1"},  {&order, "B2"},  {&order, "UV1"},
              {&order, "UV2"}, {&order, "UB1"}, {&order, "UB2"}};
  ps.push_back(post(&j[0], signal));
  ps.push_back(post(&j[1], signal));
  ps.push_back(post(&j[2], nullptr, UV));
  ps.push_back(post(&j[3], nullptr, UV));
  ps.push_back(post(&j[4], nullptr, UB));
  ps.push_back(post(&j[5], nullptr, UB));
  run();
  EXPECT_EQ(joined(order), "UB1,UB2,UV1,UV2,B1,B2");
  expect_all_fulfilled(ps);
  for (auto *p : ps) pts_promise_unref(p);
  pts_signal_unref(signal);
  pts_signal_unref(parent);
}

// Not WPT: a dependent signal the caller dropped stays alive for the
// scheduler's algorithms and aborts its task when the source aborts.
TEST_F(TaskControllerWPT, DroppedDependentSignalStillAbortsItsTask) {
  pts_controller *c = task_controller();
  pts_signal *d = task_any({pts_controller_signal(c)}, pts_controller_signal(c));
  Job j{nullptr, "x"};
  pts_promise *p = post(&j, d);
  pts_signal_unref(d);
  pts_controller_abort(c, nullptr);
  run();
  expect_abort_error(p);
  EXPECT_FALSE(j.ran);
  pts_promise_unref(p);
  pts_controller_unref(c);
}

}  // namespace
}  // namespace ptstest
