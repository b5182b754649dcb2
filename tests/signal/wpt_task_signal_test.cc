// Ports of WPT scheduler/task-signal-any-priority.tentative.any.js,
// scheduler/task-signal-onprioritychange.any.js and
// scheduler/task-controller-setPriority-recursive.any.js.
#include "signal_test_util.h"

namespace ptstest {
namespace {

constexpr int UB = PTS_PRIORITY_USER_BLOCKING;
constexpr int UV = PTS_PRIORITY_USER_VISIBLE;
constexpr int BG = PTS_PRIORITY_BACKGROUND;

class TaskSignalAnyPriority : public SignalTest {};

// "TaskSignal.any() returns a user-visible TaskSignal when no priority is specified"
TEST_F(TaskSignalAnyPriority, ReturnsUserVisibleTaskSignalWhenNoPriorityIsSpecified) {
  pts_signal *s = task_any({});
  EXPECT_TRUE(pts_signal_is_task_signal(s));
  EXPECT_EQ(pts_signal_priority(s), UV);
  pts_signal_unref(s);
}

// "TaskSignal.any() returns a signal with the correct priority when intialized with a string"
TEST_F(TaskSignalAnyPriority, ReturnsSignalWithCorrectPriorityWhenInitializedWithAString) {
  for (int p : {UB, UV, BG}) {
    pts_signal *s = task_any({}, p);
    EXPECT_EQ(pts_signal_priority(s), p);
    pts_signal_unref(s);
  }
}

// "TaskSignal.any() returns a signal with the correct priority when intialized with a TaskSignal"
TEST_F(TaskSignalAnyPriority, ReturnsSignalWithCorrectPriorityWhenInitializedWithATaskSignal) {
  for (int p : {UB, UV, BG}) {
    pts_controller *c = task_controller(p);
    pts_signal *s = task_any({}, pts_controller_signal(c));
    EXPECT_EQ(pts_signal_priority(s), p);
    pts_signal_unref(s);
    pts_controller_unref(c);
  }
}

// "TaskSignal.any() returns a signal with dynamic priority"
TEST_F(TaskSignalAnyPriority, ReturnsSignalWithDynamicPriority) {
  pts_controller *c = task_controller(UB);
  pts_signal *s = task_any({}, pts_controller_signal(c));
  EXPECT_EQ(pts_signal_priority(s), UB);
  for (int p : {UV, BG, UB}) {
    ASSERT_EQ(pts_controller_set_priority(c, p), 0);
    EXPECT_EQ(pts_signal_priority(s), p);
  }
  pts_signal_unref(s);
  pts_controller_unref(c);
}

struct TargetCount {
  pts_signal *expected;
  int n = 0;
};
static void count_with_target(void *data, const pts_event *ev) {
  auto *t = static_cast<TargetCount *>(data);
  EXPECT_EQ(ev->target, t->expected)
      << "The event target is the signal returned by TaskSignal.any()";
  EXPECT_EQ(ev->type, PTS_EVENT_PRIORITYCHANGE);
  t->n++;
}

// "Priority change events fire for composite signals"
TEST_F(TaskSignalAnyPriority, PriorityChangeEventsFireForCompositeSignals) {
  pts_controller *c = task_controller();
  pts_signal *s = task_any({}, pts_controller_signal(c));
  TargetCount tc{s};
  pts_signal_set_handler(s, PTS_EVENT_PRIORITYCHANGE, count_with_target, &tc);
  int expected = 0;
  for (int p : {BG, UV, UB}) {
    pts_controller_set_priority(c, p);
    EXPECT_EQ(tc.n, ++expected);
  }
  pts_signal_unref(s);
  pts_controller_unref(c);
}

// "Priority change events fire for composite signals with intermediate sources"
TEST_F(TaskSignalAnyPriority, PriorityChangeEventsFireForCompositeSignalsWithIntermediateSources) {
  pts_controller *c = task_controller();
  std::vector<pts_signal *> chain;
  chain.push_back(task_any({}, pts_controller_signal(c)));
  for (int i = 0; i < 4; i++) chain.push_back(task_any({}, chain.back()));
  pts_signal *s = chain.back();
  EXPECT_EQ(pts_signal_priority(s), UV);
  TargetCount tc{s};
  pts_signal_set_handler(s, PTS_EVENT_PRIORITYCHANGE, count_with_target, &tc);
  int expected = 0;
  for (int p : {BG, UV, UB}) {
    pts_controller_set_priority(c, p);
    EXPECT_EQ(tc.n, ++expected);
    EXPECT_EQ(pts_signal_priority(s), p);
  }
  for (auto *x : chain) pts_signal_unref(x);
  pts_controller_unref(c);
}

struct PushId {
  std::vector<int> *results;
  int id;
};
static void push_id(void *data, const pts_event *) {
  auto *p = static_cast<PushId *>(data);
  p->results->push_back(p->id);
}

// "Priority change propagates to multiple dependent signals in the right order"
TEST_F(TaskSignalAnyPriority, PriorityChangePropagatesToMultipleDependentSignalsInTheRightOrder) {
  pts_controller *c = task_controller();
  std::vector<pts_signal *> signals, all;
  std::vector<int> results;
  std::vector<PushId> ids;
  ids.reserve(6);
  int id = 0;
  for (int i = 0; i < 3; i++) {
    pts_signal *s = task_any({}, pts_controller_signal(c));
    ids.push_back(PushId{&results, id++});
    pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, push_id, &ids.back(), false);
    signals.push_back(s);
    all.push_back(s);
  }
  for (int i = 0; i < 3; i++) {
    pts_signal *s = task_any({}, signals[i]);
    ids.push_back(PushId{&results, id++});
    pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, push_id, &ids.back(), false);
    all.push_back(s);
  }
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(results, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  pts_controller_set_priority(c, UB);
  EXPECT_EQ(results, (std::vector<int>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  for (auto *x : all) pts_signal_unref(x);
  pts_controller_unref(c);
}

static void unreached(void *, const pts_event *) { ADD_FAILURE() << "listener called"; }

// "TaskSignal.any() does not propagate abort when not given dependent abort signals"
TEST_F(TaskSignalAnyPriority, DoesNotPropagateAbortWhenNotGivenDependentAbortSignals) {
  pts_controller *c = task_controller();
  pts_signal *s = task_any({}, pts_controller_signal(c));
  pts_signal_set_handler(s, PTS_EVENT_ABORT, unreached, nullptr);
  pts_controller_abort(c, nullptr);
  EXPECT_FALSE(pts_signal_aborted(s));
  pts_signal_unref(s);
  pts_controller_unref(c);
}

// "TaskSignal.any() propagates abort and priority"
TEST_F(TaskSignalAnyPriority, PropagatesAbortAndPriority) {
  pts_controller *tc = task_controller();
  pts_controller *ac = abort_controller();
  pts_signal *s = task_any({pts_controller_signal(ac)}, pts_controller_signal(tc));
  Count prio, abort;
  pts_signal_set_handler(s, PTS_EVENT_PRIORITYCHANGE, count_event, &prio);
  pts_signal_set_handler(s, PTS_EVENT_ABORT, count_event, &abort);
  pts_controller_set_priority(tc, BG);
  EXPECT_EQ(pts_signal_priority(s), BG);
  EXPECT_EQ(prio.n, 1);
  pts_controller_abort(tc, nullptr);
  EXPECT_EQ(abort.n, 0) << "The signal should use abortController for abort";
  pts_controller_abort(ac, nullptr);
  EXPECT_EQ(abort.n, 1);
  pts_controller_set_priority(tc, UV);
  EXPECT_EQ(pts_signal_priority(s), UV);
  EXPECT_EQ(prio.n, 2);
  pts_signal_unref(s);
  pts_controller_unref(tc);
  pts_controller_unref(ac);
}

// "TaskSignal.any() propagates priority after returning an aborted signal"
TEST_F(TaskSignalAnyPriority, PropagatesPriorityAfterReturningAnAbortedSignal) {
  pts_controller *c = task_controller();
  pts_signal *aborted = nullptr;
  ASSERT_EQ(pts_signal_abort_new(loop_, nullptr, &aborted), 0);
  pts_signal *s = task_any({aborted}, pts_controller_signal(c));
  EXPECT_TRUE(pts_signal_aborted(s));
  Count n;
  pts_signal_set_handler(s, PTS_EVENT_PRIORITYCHANGE, count_event, &n);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(n.n, 1);
  pts_signal_unref(s);
  pts_signal_unref(aborted);
  pts_controller_unref(c);
}

struct AddDuring {
  pts_signal *source;
  pts_signal *made = nullptr;
  bool fired = false;
};
static void add_dependent_during(void *data, const pts_event *) {
  auto *a = static_cast<AddDuring *>(data);
  a->fired = true;
  pts_task_signal_any_init init = {UV, a->source};
  ASSERT_EQ(pts_task_signal_any(pts_signal_get_loop(a->source), nullptr, 0, &init, &a->made), 0);
  EXPECT_EQ(pts_signal_priority(a->made), BG);
  pts_signal_set_handler(a->made, PTS_EVENT_PRIORITYCHANGE, unreached, nullptr);
}

// "TaskSignal.any() does not fire prioritychange for dependents added during prioritychange"
TEST_F(TaskSignalAnyPriority, DoesNotFirePrioritychangeForDependentsAddedDuringPrioritychange) {
  // Add a dependent in the initial event dispatch stage.
  pts_controller *c = task_controller();
  AddDuring a1{pts_controller_signal(c)};
  pts_signal_set_handler(pts_controller_signal(c), PTS_EVENT_PRIORITYCHANGE,
                         add_dependent_during, &a1);
  pts_controller_set_priority(c, BG);
  EXPECT_TRUE(a1.fired);
  // Add a dependent while signaling prioritychange on dependents.
  pts_controller *c2 = task_controller();
  pts_signal *s = task_any({}, pts_controller_signal(c2));
  AddDuring a2{s};
  pts_signal_set_handler(s, PTS_EVENT_PRIORITYCHANGE, add_dependent_during, &a2);
  pts_controller_set_priority(c2, BG);
  EXPECT_TRUE(a2.fired);
  pts_signal_unref(a1.made);
  pts_signal_unref(a2.made);
  pts_signal_unref(s);
  pts_controller_unref(c);
  pts_controller_unref(c2);
}

// ---- scheduler/task-signal-onprioritychange.any.js ----

struct OnPrio {
  pts_controller *c;
  int n = 0;
};
static void onprio_check(void *data, const pts_event *ev) {
  auto *o = static_cast<OnPrio *>(data);
  o->n++;
  EXPECT_EQ(pts_signal_priority(pts_controller_signal(o->c)), BG);
  EXPECT_EQ(ev->type, PTS_EVENT_PRIORITYCHANGE);
  EXPECT_EQ(pts_signal_priority(ev->target), BG);
  EXPECT_EQ(ev->previous_priority, UV);
}

class TaskSignalOnprioritychange : public SignalTest {};

// "Test that TaskSignal.onprioritychange listens for prioritychange events"
TEST_F(TaskSignalOnprioritychange, ListensForPrioritychangeEvents) {
  pts_controller *c = task_controller(UV);
  OnPrio o{c};
  pts_signal_set_handler(pts_controller_signal(c), PTS_EVENT_PRIORITYCHANGE, onprio_check, &o);
  ASSERT_EQ(pts_controller_set_priority(c, BG), 0);
  EXPECT_EQ(o.n, 1);
  pts_controller_unref(c);
}

// ---- scheduler/task-controller-setPriority-recursive.any.js ----

static void recursive_set(void *data, const pts_event *) {
  auto *o = static_cast<OnPrio *>(data);
  o->n++;
  EXPECT_EQ(pts_signal_priority(pts_controller_signal(o->c)), BG);
  EXPECT_EQ(pts_controller_set_priority(o->c, UB), PTS_ENOTALLOWED);
  EXPECT_STREQ(pts_err_dom_name(PTS_ENOTALLOWED), "NotAllowedError");
}

class TaskControllerSetPriorityRecursive : public SignalTest {};

// "Test that TaskController.setPriority() throws an error if called recursively"
TEST_F(TaskControllerSetPriorityRecursive, ThrowsAnErrorIfCalledRecursively) {
  pts_controller *c = task_controller();
  OnPrio o{c};
  pts_signal_set_handler(pts_controller_signal(c), PTS_EVENT_PRIORITYCHANGE, recursive_set, &o);
  ASSERT_EQ(pts_controller_set_priority(c, BG), 0);
  EXPECT_EQ(o.n, 1);
  EXPECT_EQ(pts_signal_priority(pts_controller_signal(c)), BG);
  pts_controller_unref(c);
}

}  // namespace
}  // namespace ptstest
