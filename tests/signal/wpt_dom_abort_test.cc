// Ports of WPT dom/abort/event.any.js, dom/abort/AbortSignal.any.js and
// dom/abort/timeout.any.js (AbortSignal.timeout()). Test names: file, then WPT
// test name. JS strings and objects used as reasons become ints (compared by
// value) and error or box values (compared by identity with pts_value_same).
// Every check of those files is ported except what has no C counterpart:
// '"reason" in signal', 'instanceof AbortSignal/DOMException' (a reason's
// DOMException-ness is its error kind and name here) and the abort event's
// bubbles/isTrusted (pts_event has neither: events never bubble and only the
// library fires them).
#include "signal_test_util.h"

namespace ptstest {
namespace {

class DomAbortEvent : public SignalTest {};

struct StateCheck {
  pts_signal *s;
  std::string state = "begin";
};
static void state_listener(void *data, const pts_event *) {
  auto *st = static_cast<StateCheck *>(data);
  EXPECT_EQ(st->state, "begin");
  st->state = "aborted";
}

// "AbortController abort() should fire event synchronously"
TEST_F(DomAbortEvent, AbortFiresEventSynchronously) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  StateCheck st{s};
  EXPECT_FALSE(pts_signal_aborted(s));
  EXPECT_EQ(pts_signal_reason(s).kind, PTS_VALUE_UNDEFINED);
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_ABORT, state_listener, &st, false), 0);
  ASSERT_EQ(pts_controller_abort(c, nullptr), 0);
  EXPECT_EQ(st.state, "aborted");
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_TRUE(pts_value_is_error(pts_signal_reason(s), PTS_EABORT));
  EXPECT_STREQ(pts_error_name(pts_signal_reason(s)), "AbortError");
  EXPECT_EQ(pts_controller_abort(c, nullptr), 0);
  pts_controller_unref(c);
}

// "controller.signal should always return the same object"
TEST_F(DomAbortEvent, ControllerSignalAlwaysSameObject) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  EXPECT_EQ(pts_controller_signal(c), s);
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(pts_controller_signal(c), s);
  pts_controller_unref(c);
}

// "controller.abort() should do nothing the second time it is called"
TEST_F(DomAbortEvent, SecondAbortDoesNothing) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  Count n;
  pts_signal_set_handler(s, PTS_EVENT_ABORT, count_event, &n);
  pts_controller_abort(c, nullptr);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_EQ(n.n, 1);
  pts_value first = pts_signal_reason(s);
  pts_value other = pts_int(7);
  EXPECT_EQ(pts_controller_abort(c, &other), 0);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_EQ(n.n, 1);
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), first));
  pts_controller_unref(c);
}

static void unreached(void *, const pts_event *) { ADD_FAILURE() << "listener called"; }

// "event handler should not be called if added after controller.abort()"
TEST_F(DomAbortEvent, HandlerAddedAfterAbortNotCalled) {
  pts_controller *c = abort_controller();
  pts_controller_abort(c, nullptr);
  pts_signal_set_handler(pts_controller_signal(c), PTS_EVENT_ABORT, unreached, nullptr);
  ASSERT_EQ(pts_loop_run(loop_, PTS_RUN_UNTIL_IDLE) >= 0, true);
  pts_controller_unref(c);
}

// "the abort event should have the right properties"
TEST_F(DomAbortEvent, AbortEventHasRightProperties) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  Count n;
  pts_signal_set_handler(s, PTS_EVENT_ABORT, count_event, &n);
  pts_controller_abort(c, nullptr);
  ASSERT_EQ(n.n, 1);
  EXPECT_EQ(n.last.type, PTS_EVENT_ABORT);
  EXPECT_EQ(n.last.target, s);
  pts_controller_unref(c);
}

// "AbortController abort(reason) should set signal.reason"
TEST_F(DomAbortEvent, AbortWithReasonSetsReason) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  EXPECT_EQ(pts_signal_reason(s).kind, PTS_VALUE_UNDEFINED);
  pts_value reason = pts_error_value(PTS_EERROR, "hello");
  pts_controller_abort(c, &reason);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), reason));
  pts_value_release(reason);
  pts_controller_unref(c);
}

// "aborting AbortController without reason creates an "AbortError" DOMException"
TEST_F(DomAbortEvent, AbortWithoutReasonCreatesAbortError) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  EXPECT_EQ(pts_signal_reason(s).kind, PTS_VALUE_UNDEFINED);
  pts_controller_abort(c, nullptr);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_EQ(pts_error_code(pts_signal_reason(s)), PTS_EABORT);
  EXPECT_STREQ(pts_error_name(pts_signal_reason(s)), "AbortError");
  pts_controller_unref(c);
}

// "AbortController abort(undefined) creates an "AbortError" DOMException"
TEST_F(DomAbortEvent, AbortUndefinedCreatesAbortError) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  pts_value undef = pts_undefined();
  pts_controller_abort(c, &undef);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_STREQ(pts_error_name(pts_signal_reason(s)), "AbortError");
  pts_controller_unref(c);
}

// "AbortController abort(null) should set signal.reason" (null: a NULL pointer)
TEST_F(DomAbortEvent, AbortNullSetsReason) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  pts_value null_v = pts_ptr(nullptr);
  pts_controller_abort(c, &null_v);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_EQ(pts_signal_reason(s).kind, PTS_VALUE_PTR);
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), null_v));
  pts_controller_unref(c);
}

// "static aborting signal should have right properties"
TEST_F(DomAbortEvent, StaticAbortingSignalProperties) {
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_abort_new(loop_, nullptr, &s), 0);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_STREQ(pts_error_name(pts_signal_reason(s)), "AbortError");
  EXPECT_FALSE(pts_signal_is_task_signal(s));
  pts_signal_unref(s);
}

// "static aborting signal with reason should set signal.reason"
TEST_F(DomAbortEvent, StaticAbortingSignalWithReason) {
  BoxCounter bc;
  pts_value reason = counted_box(&bc);
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_abort_new(loop_, &reason, &s), 0);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), reason));
  pts_value_release(reason);
  EXPECT_EQ(bc.destroyed, 0);  // the signal holds its reason
  pts_signal_unref(s);
  EXPECT_EQ(bc.destroyed, 1);
}

// "throwIfAborted() should throw abort.reason if signal aborted"
TEST_F(DomAbortEvent, ThrowIfAbortedThrowsReason) {
  pts_value reason = pts_error_value(PTS_EERROR, "boom");
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_abort_new(loop_, &reason, &s), 0);
  EXPECT_TRUE(pts_signal_aborted(s));
  pts_value thrown = pts_undefined();
  EXPECT_EQ(pts_signal_throw_if_aborted(s, &thrown), PTS_EABORT);
  EXPECT_TRUE(pts_value_same(thrown, reason));
  pts_value_release(thrown);
  EXPECT_EQ(pts_signal_throw_if_aborted(s, nullptr), PTS_EABORT);
  pts_value_release(reason);
  pts_signal_unref(s);
}

// "throwIfAborted() should throw primitive abort.reason if signal aborted"
TEST_F(DomAbortEvent, ThrowIfAbortedThrowsPrimitiveReason) {
  pts_value reason = pts_int(42);  // 'hello'
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_abort_new(loop_, &reason, &s), 0);
  pts_value thrown = pts_undefined();
  EXPECT_EQ(pts_signal_throw_if_aborted(s, &thrown), PTS_EABORT);
  EXPECT_EQ(thrown.kind, PTS_VALUE_INT);
  EXPECT_EQ(thrown.u.i, 42);
  pts_signal_unref(s);
}

// "throwIfAborted() should not throw if signal not aborted"
TEST_F(DomAbortEvent, ThrowIfAbortedDoesNotThrowIfNotAborted) {
  pts_controller *c = abort_controller();
  EXPECT_FALSE(pts_signal_aborted(pts_controller_signal(c)));
  pts_value thrown = pts_int(1);
  EXPECT_EQ(pts_signal_throw_if_aborted(pts_controller_signal(c), &thrown), 0);
  EXPECT_EQ(thrown.kind, PTS_VALUE_INT);  // untouched
  pts_controller_unref(c);
}

// "AbortSignal.reason returns the same DOMException"
TEST_F(DomAbortEvent, StaticSignalReasonReturnsSameException) {
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_abort_new(loop_, nullptr, &s), 0);
  EXPECT_EQ(pts_signal_reason(s).kind, PTS_VALUE_ERROR);
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), pts_signal_reason(s)));
  pts_signal_unref(s);
}

// "AbortController.signal.reason returns the same DOMException"
TEST_F(DomAbortEvent, ControllerSignalReasonReturnsSameException) {
  pts_controller *c = abort_controller();
  pts_controller_abort(c, nullptr);
  pts_signal *s = pts_controller_signal(c);
  EXPECT_EQ(pts_signal_reason(s).kind, PTS_VALUE_ERROR);
  EXPECT_TRUE(pts_value_same(pts_signal_reason(s), pts_signal_reason(s)));
  pts_controller_unref(c);
}

// ---- dom/abort/AbortSignal.any.js ----

class DomAbortSignalStatic : public SignalTest {};

// "the AbortSignal.abort() static returns an already aborted signal"
TEST_F(DomAbortSignalStatic, AbortStaticReturnsAbortedSignal) {
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_abort_new(loop_, nullptr, &s), 0);
  EXPECT_FALSE(pts_signal_is_task_signal(s));
  EXPECT_TRUE(pts_signal_aborted(s));
  pts_signal_unref(s);
}

// "signal returned by AbortSignal.abort() should not fire abort event"
TEST_F(DomAbortSignalStatic, AbortStaticSignalDoesNotFireAbortEvent) {
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_abort_new(loop_, nullptr, &s), 0);
  pts_signal_add_listener(s, PTS_EVENT_ABORT, unreached, nullptr, false);
  pts_signal_set_handler(s, PTS_EVENT_ABORT, unreached, nullptr);
  advance_ms(2000);
  pts_signal_unref(s);
}

// ---- dom/abort/abort-signal-timeout.any.js ----

class DomAbortSignalTimeout : public SignalTest {};

// "AbortSignal.timeout() returns a non-aborted signal"
TEST_F(DomAbortSignalTimeout, ReturnsNonAbortedSignal) {
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(global_, 0, &s), 0);
  EXPECT_FALSE(pts_signal_is_task_signal(s));
  EXPECT_FALSE(pts_signal_aborted(s));
  pts_signal_unref(s);
}

// "Signal returned by AbortSignal.timeout() times out"
TEST_F(DomAbortSignalTimeout, SignalTimesOut) {
  pts_signal *s = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(global_, 5, &s), 0);
  Count n;
  pts_signal_set_handler(s, PTS_EVENT_ABORT, count_event, &n);
  advance_ms(4);
  EXPECT_EQ(n.n, 0);
  EXPECT_FALSE(pts_signal_aborted(s));
  advance_ms(1);
  ASSERT_EQ(n.n, 1);
  EXPECT_TRUE(pts_signal_aborted(s));
  EXPECT_EQ(pts_error_code(pts_signal_reason(s)), PTS_ETIMEDOUT);
  EXPECT_STREQ(pts_error_name(pts_signal_reason(s)), "TimeoutError");
  pts_signal_unref(s);
}

// "AbortSignal timeouts fire in order"
TEST_F(DomAbortSignalTimeout, TimeoutsFireInOrder) {
  std::string log;
  Tag tags[4] = {{&log, "1"}, {&log, "2"}, {&log, "3"}, {&log, "done"}};
  for (auto &t : tags) {
    pts_signal *s = nullptr;
    ASSERT_EQ(pts_signal_timeout_new(global_, 5, &s), 0);
    pts_signal_set_handler(s, PTS_EVENT_ABORT, append_tag, &t);
    pts_signal_unref(s);  // the pending timeout keeps it alive
  }
  advance_ms(5);
  EXPECT_EQ(log, "123done");
}

}  // namespace
}  // namespace ptstest
