// Ports of WPT dom/abort/resources/abort-signal-any-tests.js, run the way
// dom/abort/abort-signal-any.any.js (AbortSignal with AbortController) and
// scheduler/task-signal-any-abort.tentative.any.js (TaskSignal with
// AbortController and with TaskController) run it. Test names: WPT test name,
// parameter: the signal interface and the controller interface.
#include "signal_test_util.h"

namespace ptstest {
namespace {

struct AnyParam {
  bool task_signal;      // TaskSignal.any instead of AbortSignal.any
  bool task_controller;  // TaskController instead of AbortController
  const char *name;
};

class AbortSignalAny : public SignalTest,
                       public ::testing::WithParamInterface<AnyParam> {
 protected:
  pts_signal *Any(std::vector<pts_signal *> v) {
    pts_signal *s = GetParam().task_signal ? task_any(v) : any(v);
    if (s) {
      EXPECT_EQ(pts_signal_is_task_signal(s), GetParam().task_signal);
    }
    return s;
  }
  pts_controller *Controller() {
    return GetParam().task_controller ? task_controller() : abort_controller();
  }
};

// abortSignalAnySignalOnlyTests: "<I>.any() works with an empty array of signals"
class AbortSignalAnySignalOnly : public AbortSignalAny {};
TEST_P(AbortSignalAnySignalOnly, WorksWithEmptyArrayOfSignals) {
  pts_signal *s = Any({});
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(pts_signal_aborted(s));
  pts_signal_unref(s);
}

struct TargetCheck {
  pts_signal *expected;
  bool fired = false;
};
static void check_target(void *data, const pts_event *ev) {
  auto *t = static_cast<TargetCheck *>(data);
  EXPECT_EQ(ev->target, t->expected) << "the event target is the signal any() returned";
  EXPECT_EQ(ev->type, PTS_EVENT_ABORT);
  t->fired = true;
}

// "<I>.any() follows a single signal (using <C>)"
TEST_P(AbortSignalAny, FollowsASingleSignal) {
  pts_controller *c = Controller();
  pts_signal *signal = pts_controller_signal(c);
  pts_signal *clone = Any({signal});
  EXPECT_FALSE(pts_signal_aborted(clone));
  EXPECT_EQ(pts_signal_reason(clone).kind, PTS_VALUE_UNDEFINED);
  EXPECT_NE(signal, clone);
  TargetCheck tc{clone};
  pts_signal_set_handler(clone, PTS_EVENT_ABORT, check_target, &tc);
  pts_value reason = pts_int(1234);  // "reason string"
  pts_controller_abort(c, &reason);
  EXPECT_TRUE(pts_signal_aborted(signal));
  EXPECT_TRUE(pts_signal_aborted(clone));
  EXPECT_TRUE(tc.fired);
  EXPECT_TRUE(pts_value_same(pts_signal_reason(clone), reason));
  pts_signal_unref(clone);
  pts_controller_unref(c);
}

// "<I>.any() follows multiple signals (using <C>)"
TEST_P(AbortSignalAny, FollowsMultipleSignals) {
  for (int i = 0; i < 3; ++i) {
    pts_controller *cs[3];
    for (auto &c : cs) c = Controller();
    pts_signal *combined = Any({pts_controller_signal(cs[0]), pts_controller_signal(cs[1]),
                                pts_controller_signal(cs[2])});
    TargetCheck tc{combined};
    pts_signal_set_handler(combined, PTS_EVENT_ABORT, check_target, &tc);
    pts_controller_abort(cs[i], nullptr);
    EXPECT_TRUE(tc.fired);
    EXPECT_TRUE(pts_signal_aborted(combined));
    EXPECT_EQ(pts_signal_reason(combined).kind, PTS_VALUE_ERROR);
    EXPECT_STREQ(pts_error_name(pts_signal_reason(combined)), "AbortError");
    pts_signal_unref(combined);
    for (auto &c : cs) pts_controller_unref(c);
  }
}

// "<I>.any() returns an aborted signal if passed an aborted signal (using <C>)"
TEST_P(AbortSignalAny, ReturnsAbortedSignalIfPassedAbortedSignal) {
  pts_controller *cs[3];
  for (auto &c : cs) c = Controller();
  pts_value r1 = pts_int(1), r2 = pts_int(2);
  pts_controller_abort(cs[1], &r1);
  pts_controller_abort(cs[2], &r2);
  pts_signal *s = Any({pts_controller_signal(cs[0]), pts_controller_signal(cs[1]),
                       pts_controller_signal(cs[2])});
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), r1))
      << "The signal should be aborted with the first reason";
  pts_signal_unref(s);
  for (auto &c : cs) pts_controller_unref(c);
}

// "<I>.any() can be passed the same signal more than once (using <C>)"
TEST_P(AbortSignalAny, CanBePassedTheSameSignalMoreThanOnce) {
  pts_controller *c = Controller();
  pts_signal *s = Any({pts_controller_signal(c), pts_controller_signal(c)});
  EXPECT_FALSE(pts_signal_aborted(s));
  Count n;
  pts_signal_add_listener(s, PTS_EVENT_ABORT, count_event, &n, false);
  pts_value reason = pts_int(5);
  pts_controller_abort(c, &reason);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), reason));
  EXPECT_EQ(n.n, 1);  // linked once: a set of sources
  pts_signal_unref(s);
  pts_controller_unref(c);
}

// "<I>.any() uses the first instance of a duplicate signal (using <C>)"
TEST_P(AbortSignalAny, UsesTheFirstInstanceOfADuplicateSignal) {
  pts_controller *c1 = Controller(), *c2 = Controller();
  pts_value r1 = pts_int(1), r2 = pts_int(2);
  pts_controller_abort(c1, &r1);
  pts_controller_abort(c2, &r2);
  pts_signal *s = Any({pts_controller_signal(c1), pts_controller_signal(c2),
                       pts_controller_signal(c1)});
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), r1));
  pts_signal_unref(s);
  pts_controller_unref(c1);
  pts_controller_unref(c2);
}

// "<I>.any() signals are composable (using <C>)"
TEST_P(AbortSignalAny, SignalsAreComposable) {
  for (int i = 0; i < 3; ++i) {
    pts_controller *cs[3];
    for (auto &c : cs) c = Controller();
    pts_signal *c1 = Any({pts_controller_signal(cs[0]), pts_controller_signal(cs[1])});
    pts_signal *c2 = Any({c1, pts_controller_signal(cs[2])});
    Count n;
    pts_signal_set_handler(c2, PTS_EVENT_ABORT, count_event, &n);
    pts_controller_abort(cs[i], nullptr);
    EXPECT_EQ(n.n, 1);
    EXPECT_TRUE(pts_signal_aborted(c2));
    EXPECT_STREQ(pts_error_name(pts_signal_reason(c2)), "AbortError");
    pts_signal_unref(c1);
    pts_signal_unref(c2);
    for (auto &c : cs) pts_controller_unref(c);
  }
}

// "<I>.any() works with signals returned by AbortSignal.timeout() (using <C>)"
TEST_P(AbortSignalAny, WorksWithSignalsReturnedByAbortSignalTimeout) {
  pts_controller *c = Controller();
  pts_signal *timeout = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(global_, 5, &timeout), 0);
  pts_signal *combined = Any({pts_controller_signal(c), timeout});
  TargetCheck tc{combined};
  pts_signal_set_handler(combined, PTS_EVENT_ABORT, check_target, &tc);
  advance_ms(5);
  EXPECT_TRUE(tc.fired);
  EXPECT_TRUE(pts_signal_aborted(combined));
  EXPECT_EQ(pts_signal_reason(combined).kind, PTS_VALUE_ERROR);
  EXPECT_STREQ(pts_error_name(pts_signal_reason(combined)), "TimeoutError");
  pts_signal_unref(combined);
  pts_signal_unref(timeout);
  pts_controller_unref(c);
}

// "<I>.any() works with intermediate signals (using <C>)"
TEST_P(AbortSignalAny, WorksWithIntermediateSignals) {
  pts_controller *c = Controller();
  std::vector<pts_signal *> chain;
  chain.push_back(Any({pts_controller_signal(c)}));
  for (int i = 0; i < 3; i++) chain.push_back(Any({chain.back()}));
  pts_signal *combined = chain.back();
  Count n;
  pts_signal_set_handler(combined, PTS_EVENT_ABORT, count_event, &n);
  EXPECT_EQ(n.n, 0);
  EXPECT_FALSE(pts_signal_aborted(combined));
  pts_value reason = pts_int(99);  // "the reason"
  pts_controller_abort(c, &reason);
  EXPECT_EQ(n.n, 1);
  EXPECT_TRUE(pts_signal_aborted(combined));
  EXPECT_TRUE(pts_value_same(pts_signal_reason(combined), reason));
  for (auto *s : chain) pts_signal_unref(s);
  pts_controller_unref(c);
}

// "Abort events for <I>.any() signals fire in the right order (using <C>)"
TEST_P(AbortSignalAny, AbortEventsFireInTheRightOrder) {
  pts_controller *c = Controller();
  std::vector<pts_signal *> signals;
  signals.push_back(pts_controller_signal(c));
  signals.push_back(Any({pts_controller_signal(c)}));
  signals.push_back(Any({pts_controller_signal(c)}));
  signals.push_back(Any({signals[0]}));
  signals.push_back(Any({signals[1]}));
  std::string result;
  std::vector<Tag> tags;
  tags.reserve(signals.size());
  for (size_t i = 0; i < signals.size(); i++) {
    tags.push_back(Tag{&result, std::to_string(i)});
    pts_signal_add_listener(signals[i], PTS_EVENT_ABORT, append_tag, &tags[i], false);
  }
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(result, "01234");
  for (size_t i = 1; i < signals.size(); i++) pts_signal_unref(signals[i]);
  pts_controller_unref(c);
}

struct MarkedCheck {
  AbortSignalAny *test;
  pts_controller *controller;
  pts_signal *signal1, *signal2;
  bool fired = false;
};
static void marked_before_listener(void *data, const pts_event *) {
  auto *m = static_cast<MarkedCheck *>(data);
  pts_signal *signal3 = nullptr;
  if (m->test->GetParam().task_signal) {
    ASSERT_EQ(pts_task_signal_any(pts_signal_get_loop(m->signal2), &m->signal2, 1, nullptr,
                                  &signal3), 0);
  } else {
    ASSERT_EQ(pts_signal_any(pts_signal_get_loop(m->signal2), &m->signal2, 1, &signal3), 0);
  }
  EXPECT_TRUE(pts_signal_aborted(pts_controller_signal(m->controller)));
  EXPECT_TRUE(pts_signal_aborted(m->signal1));
  EXPECT_TRUE(pts_signal_aborted(m->signal2));
  EXPECT_TRUE(pts_signal_aborted(signal3));
  pts_signal_unref(signal3);
  m->fired = true;
}

// "Dependent signals for <I>.any() are marked aborted before abort events fire (using <C>)"
TEST_P(AbortSignalAny, DependentSignalsAreMarkedAbortedBeforeAbortEventsFire) {
  pts_controller *c = Controller();
  pts_signal *signal1 = Any({pts_controller_signal(c)});
  pts_signal *signal2 = Any({signal1});
  MarkedCheck m{this, c, signal1, signal2};
  pts_signal_add_listener(pts_controller_signal(c), PTS_EVENT_ABORT, marked_before_listener, &m,
                          false);
  pts_controller_abort(c, nullptr);
  EXPECT_TRUE(m.fired) << "event fired";
  pts_signal_unref(signal1);
  pts_signal_unref(signal2);
  pts_controller_unref(c);
}

struct AbortOther {
  pts_controller *other;
  pts_value reason;
};
static void abort_other(void *data, const pts_event *) {
  auto *a = static_cast<AbortOther *>(data);
  pts_controller_abort(a->other, &a->reason);
}

// "Dependent signals for <I>.any() are aborted correctly for reentrant aborts (using <C>)"
TEST_P(AbortSignalAny, DependentSignalsAreAbortedCorrectlyForReentrantAborts) {
  pts_controller *c1 = Controller(), *c2 = Controller();
  pts_signal *signal = Any({pts_controller_signal(c1), pts_controller_signal(c2)});
  AbortOther ao{c2, pts_int(2)};
  pts_signal_add_listener(pts_controller_signal(c1), PTS_EVENT_ABORT, abort_other, &ao, false);
  Count n;
  pts_signal_add_listener(signal, PTS_EVENT_ABORT, count_event, &n, false);
  pts_value r1 = pts_int(1);
  pts_controller_abort(c1, &r1);
  EXPECT_EQ(n.n, 1);
  EXPECT_TRUE(pts_signal_aborted(signal));
  EXPECT_TRUE(pts_value_same(pts_signal_reason(signal), r1));
  EXPECT_TRUE(pts_signal_aborted(pts_controller_signal(c2)));
  pts_signal_unref(signal);
  pts_controller_unref(c1);
  pts_controller_unref(c2);
}

std::string ParamName(const ::testing::TestParamInfo<AnyParam> &info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(
    WPT, AbortSignalAnySignalOnly,
    ::testing::Values(AnyParam{false, false, "AbortSignal"}, AnyParam{true, false, "TaskSignal"}),
    ParamName);

INSTANTIATE_TEST_SUITE_P(
    WPT, AbortSignalAny,
    ::testing::Values(AnyParam{false, false, "AbortSignal_using_AbortController"},
                      AnyParam{true, false, "TaskSignal_using_AbortController"},
                      AnyParam{true, true, "TaskSignal_using_TaskController"}),
    ParamName);

}  // namespace
}  // namespace ptstest
