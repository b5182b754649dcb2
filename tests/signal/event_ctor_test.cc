// tests/signal/event_ctor_test.cc: new TaskPriorityChangeEvent(type, init)
// (spec 3.1: "constructor(DOMString type, TaskPriorityChangeEventInit
// priorityChangeEventInitDict)", with "required TaskPriority
// previousPriority"; "The previousPriority getter steps are to return the
// value that the corresponding attribute was initialized to") and its
// dispatch with EventTarget.dispatchEvent (DOM: "If event's dispatch flag is
// set, or if its initialized flag is not set, then throw an
// InvalidStateError"; "Initialize event's isTrusted attribute to false").
#include "tests/signal/signal_test_util.h"

namespace ptstest {
namespace {

class TaskPriorityChangeEventCtor : public SignalTest {};

TEST_F(TaskPriorityChangeEventCtor, ConstructsAnUntrustedUndispatchedEvent) {
  pts_priority_change_event_init init = {PTS_PRIORITY_USER_BLOCKING};
  pts_event *ev = nullptr;
  ASSERT_EQ(pts_priority_change_event_new("prioritychange", &init, &ev), 0);
  EXPECT_EQ(ev->type, PTS_EVENT_PRIORITYCHANGE);
  EXPECT_STREQ(ev->type_name, "prioritychange");
  EXPECT_EQ(ev->previous_priority, PTS_PRIORITY_USER_BLOCKING);
  EXPECT_EQ(ev->target, nullptr);
  EXPECT_FALSE(ev->is_trusted);
  EXPECT_FALSE(ev->dispatching);
  pts_event_free(ev);
}

TEST_F(TaskPriorityChangeEventCtor, AnyTypeNameIsKept) {
  pts_priority_change_event_init init = {PTS_PRIORITY_BACKGROUND};
  pts_event *ev = nullptr;
  std::string name = "my-event";
  ASSERT_EQ(pts_priority_change_event_new(name.c_str(), &init, &ev), 0);
  name = "changed";  // the name was copied
  EXPECT_EQ(ev->type, PTS_EVENT_OTHER);
  EXPECT_STREQ(ev->type_name, "my-event");
  pts_event_free(ev);
  ASSERT_EQ(pts_priority_change_event_new("abort", &init, &ev), 0);
  EXPECT_EQ(ev->type, PTS_EVENT_ABORT);
  pts_event_free(ev);
  ASSERT_EQ(pts_priority_change_event_new("", &init, &ev), 0);
  EXPECT_EQ(ev->type, PTS_EVENT_OTHER);
  EXPECT_STREQ(ev->type_name, "");
  pts_event_free(ev);
}

// WebIDL: the dictionary's previousPriority is required and a TaskPriority;
// both arguments are required.
TEST_F(TaskPriorityChangeEventCtor, DictionaryChecksAreTypeErrors) {
  pts_event *ev = reinterpret_cast<pts_event *>(0x1);
  pts_priority_change_event_init missing = {-1};
  EXPECT_EQ(pts_priority_change_event_new("prioritychange", &missing, &ev), PTS_ETYPE);
  pts_priority_change_event_init bad = {3};
  EXPECT_EQ(pts_priority_change_event_new("prioritychange", &bad, &ev), PTS_ETYPE);
  pts_priority_change_event_init neg = {-7};
  EXPECT_EQ(pts_priority_change_event_new("prioritychange", &neg, &ev), PTS_ETYPE);
  pts_priority_change_event_init ok = {PTS_PRIORITY_USER_VISIBLE};
  EXPECT_EQ(pts_priority_change_event_new("prioritychange", nullptr, &ev), PTS_ETYPE);
  EXPECT_EQ(pts_priority_change_event_new(nullptr, &ok, &ev), PTS_ETYPE);
  EXPECT_EQ(ev, reinterpret_cast<pts_event *>(0x1));  // untouched on error
  EXPECT_EQ(pts_priority_change_event_new("prioritychange", &ok, nullptr), PTS_EINVAL);
  EXPECT_STREQ(pts_err_dom_name(PTS_ETYPE), "TypeError");
}

// Dispatched at a TaskSignal, the event reaches its prioritychange listeners
// in order, with the target set, untrusted, and the signal's own priority
// untouched (only signal priority change changes it).
TEST_F(TaskPriorityChangeEventCtor, DispatchReachesTheListenersOfItsType) {
  pts_controller *c = task_controller(PTS_PRIORITY_USER_VISIBLE);
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Tag a{&log, "a"}, b{&log, "b"}, ab{&log, "X"};
  Count seen;
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, append_tag, &a, false), 0);
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, count_event, &seen, false), 0);
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, append_tag, &b, true), 0);
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &ab, false), 0);
  pts_priority_change_event_init init = {PTS_PRIORITY_BACKGROUND};
  pts_event *ev = nullptr;
  ASSERT_EQ(pts_priority_change_event_new("prioritychange", &init, &ev), 0);
  ASSERT_EQ(pts_signal_dispatch_event(s, ev), 0);
  EXPECT_EQ(log, "ab");
  EXPECT_EQ(seen.n, 1);
  EXPECT_EQ(seen.last.target, s);
  EXPECT_EQ(seen.last.previous_priority, PTS_PRIORITY_BACKGROUND);
  EXPECT_FALSE(seen.last.is_trusted);
  EXPECT_TRUE(seen.last.dispatching);
  EXPECT_FALSE(ev->dispatching);
  EXPECT_EQ(ev->target, s);
  EXPECT_EQ(pts_signal_priority(s), PTS_PRIORITY_USER_VISIBLE);
  EXPECT_FALSE(pts_signal_aborted(s));
  // Again: the once listener is gone.
  ASSERT_EQ(pts_signal_dispatch_event(s, ev), 0);
  EXPECT_EQ(log, "aba");
  EXPECT_EQ(seen.n, 2);
  // The event keeps its target alive past the caller's references.
  pts_controller_unref(c);
  EXPECT_EQ(ev->target, s);
  EXPECT_EQ(pts_signal_priority(ev->target), PTS_PRIORITY_USER_VISIBLE);
  pts_event_free(ev);
}

TEST_F(TaskPriorityChangeEventCtor, AnEventOfAnotherTypeReachesNoListener) {
  pts_controller *c = task_controller();
  pts_signal *s = pts_controller_signal(c);
  Count seen;
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, count_event, &seen, false), 0);
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_ABORT, count_event, &seen, false), 0);
  EXPECT_EQ(pts_signal_add_listener(s, PTS_EVENT_OTHER, count_event, &seen, false), PTS_EINVAL);
  pts_priority_change_event_init init = {PTS_PRIORITY_BACKGROUND};
  pts_event *ev = nullptr;
  ASSERT_EQ(pts_priority_change_event_new("other", &init, &ev), 0);
  EXPECT_EQ(pts_signal_dispatch_event(s, ev), 0);
  EXPECT_EQ(seen.n, 0);
  EXPECT_EQ(ev->target, s);
  // An "abort" event dispatched by script does not abort the signal.
  pts_event *ab = nullptr;
  ASSERT_EQ(pts_priority_change_event_new("abort", &init, &ab), 0);
  EXPECT_EQ(pts_signal_dispatch_event(s, ab), 0);
  EXPECT_EQ(seen.n, 1);
  EXPECT_EQ(seen.last.type, PTS_EVENT_ABORT);
  EXPECT_FALSE(pts_signal_aborted(s));
  pts_event_free(ab);
  pts_event_free(ev);
  pts_controller_unref(c);
}

// DOM dispatchEvent step 1: an event whose dispatch flag is set cannot be
// dispatched (InvalidStateError): the constructed one from its own listener,
// and the event the library fired, which a listener borrows.
struct Redispatch {
  pts_signal *s;
  int rc_own = 1;
  int rc_fired = 1;
  pts_event *own = nullptr;
};
void redispatch(void *d, const pts_event *ev) {
  auto *r = static_cast<Redispatch *>(d);
  if (ev->is_trusted)
    r->rc_fired = pts_signal_dispatch_event(r->s, const_cast<pts_event *>(ev));
  else
    r->rc_own = pts_signal_dispatch_event(r->s, r->own);
}

TEST_F(TaskPriorityChangeEventCtor, DispatchingAnEventBeingDispatchedIsAnInvalidStateError) {
  pts_controller *c = task_controller();
  pts_signal *s = pts_controller_signal(c);
  Redispatch r{s};
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, redispatch, &r, false), 0);
  pts_priority_change_event_init init = {PTS_PRIORITY_BACKGROUND};
  ASSERT_EQ(pts_priority_change_event_new("prioritychange", &init, &r.own), 0);
  ASSERT_EQ(pts_signal_dispatch_event(s, r.own), 0);
  EXPECT_EQ(r.rc_own, PTS_EINVALIDSTATE);
  ASSERT_EQ(pts_controller_set_priority(c, PTS_PRIORITY_BACKGROUND), 0);
  EXPECT_EQ(r.rc_fired, PTS_EINVALIDSTATE);
  EXPECT_STREQ(pts_err_dom_name(PTS_EINVALIDSTATE), "InvalidStateError");
  EXPECT_STREQ(pts_err_name(PTS_EINVALIDSTATE), "PTS_EINVALIDSTATE");
  EXPECT_EQ(pts_signal_dispatch_event(nullptr, r.own), PTS_EINVAL);
  EXPECT_EQ(pts_signal_dispatch_event(s, nullptr), PTS_EINVAL);
  pts_event_free(r.own);
  pts_event_free(nullptr);
  pts_controller_unref(c);
}

// Events the library fires are trusted and carry their type names.
TEST_F(TaskPriorityChangeEventCtor, FiredEventsAreTrustedAndNamed) {
  pts_controller *c = task_controller();
  pts_signal *s = pts_controller_signal(c);
  Count seen;
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, count_event, &seen, false), 0);
  ASSERT_EQ(pts_controller_set_priority(c, PTS_PRIORITY_BACKGROUND), 0);
  EXPECT_TRUE(seen.last.is_trusted);
  EXPECT_STREQ(seen.last.type_name, "prioritychange");
  ASSERT_EQ(pts_signal_add_listener(s, PTS_EVENT_ABORT, count_event, &seen, false), 0);
  ASSERT_EQ(pts_controller_abort(c, nullptr), 0);
  EXPECT_TRUE(seen.last.is_trusted);
  EXPECT_STREQ(seen.last.type_name, "abort");
  pts_controller_unref(c);
}

}  // namespace
}  // namespace ptstest
