// Algorithm steps WPT does not reach: abort and priority change algorithms
// (sched/signal_internal.h), listener ordering edge cases, re-entrancy, has
// fixed priority, argument checks.
#include "signal_test_util.h"

namespace ptstest {
namespace {

constexpr int UB = PTS_PRIORITY_USER_BLOCKING;
constexpr int UV = PTS_PRIORITY_USER_VISIBLE;
constexpr int BG = PTS_PRIORITY_BACKGROUND;

// An algorithm node embedded in a test object, as the scheduler embeds it.
struct Algo {
  pts__algo node;
  std::string *log;
  std::string tag;
  pts_signal *signal = nullptr;
  Algo *remove_other = nullptr;  // removes this one when it runs
  bool remove_self = false;
  bool check_dependent_aborted = false;
  pts_signal *dependent = nullptr;
};
static Algo *algo_of(pts__algo *a) { return reinterpret_cast<Algo *>(a); }
static void run_abort_algo(pts__algo *a) {
  Algo *x = algo_of(a);
  *x->log += x->tag;
  EXPECT_FALSE(pts__algo_linked(a)) << "emptied as it runs";
  if (x->remove_other) pts__signal_remove_abort_algo(x->signal, &x->remove_other->node);
  if (x->check_dependent_aborted) {
    EXPECT_TRUE(pts_signal_aborted(x->dependent));
  }
}
static void run_prio_algo(pts__algo *a) {
  Algo *x = algo_of(a);
  *x->log += x->tag;
  if (x->remove_other) pts__signal_remove_priority_algo(x->signal, &x->remove_other->node);
  if (x->remove_self) pts__signal_remove_priority_algo(x->signal, a);
}

class SignalSteps : public SignalTest {};

TEST_F(SignalSteps, AbortAlgorithmsRunInOrderBeforeListenersAndAreEmptied) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Algo a{{}, &log, "a", s}, b{{}, &log, "b", s};
  pts__algo_init(&a.node, run_abort_algo);
  pts__algo_init(&b.node, run_abort_algo);
  Tag l{&log, "L"};
  pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &l, false);
  pts__signal_add_abort_algo(s, &a.node);
  pts__signal_add_abort_algo(s, &b.node);
  EXPECT_TRUE(pts__algo_linked(&a.node));
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "abL");
  EXPECT_FALSE(pts__algo_linked(&a.node));
  EXPECT_FALSE(pts__algo_linked(&b.node));
  // DOM "add": does nothing on an aborted signal.
  pts__signal_add_abort_algo(s, &a.node);
  EXPECT_FALSE(pts__algo_linked(&a.node));
  pts_controller_unref(c);
}

TEST_F(SignalSteps, RemovedAbortAlgorithmDoesNotRun) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Algo a{{}, &log, "a", s}, b{{}, &log, "b", s}, d{{}, &log, "d", s};
  pts__algo_init(&a.node, run_abort_algo);
  pts__algo_init(&b.node, run_abort_algo);
  pts__algo_init(&d.node, run_abort_algo);
  a.remove_other = &b;  // an algorithm removes one that has not run yet
  pts__signal_add_abort_algo(s, &a.node);
  pts__signal_add_abort_algo(s, &b.node);
  pts__signal_add_abort_algo(s, &d.node);
  pts__signal_remove_abort_algo(s, &d.node);
  pts__signal_remove_abort_algo(s, &d.node);  // not linked: no-op
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "a");
  pts_controller_unref(c);
}

TEST_F(SignalSteps, DependentsAreMarkedBeforeAnyAbortAlgorithmRuns) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  pts_signal *dep = any({s});
  std::string log;
  Algo a{{}, &log, "a", s};
  a.check_dependent_aborted = true;
  a.dependent = dep;
  Algo b{{}, &log, "b", dep};
  pts__algo_init(&a.node, run_abort_algo);
  pts__algo_init(&b.node, run_abort_algo);
  pts__signal_add_abort_algo(s, &a.node);
  pts__signal_add_abort_algo(dep, &b.node);
  Tag l1{&log, "S"}, l2{&log, "D"};
  pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &l1, false);
  pts_signal_add_listener(dep, PTS_EVENT_ABORT, append_tag, &l2, false);
  pts_controller_abort(c, nullptr);
  // spec: the signal's abort steps (algorithms, then event), then each dependent's.
  EXPECT_EQ(log, "aSbD");
  EXPECT_TRUE(pts_value_same(pts_signal_reason(dep), pts_signal_reason(s)));
  pts_signal_unref(dep);
  pts_controller_unref(c);
}

TEST_F(SignalSteps, DependentsShareTheSameReasonReference) {
  BoxCounter bc;
  pts_value reason = counted_box(&bc);
  pts_controller *c = abort_controller();
  pts_signal *d1 = any({pts_controller_signal(c)});
  pts_signal *d2 = task_any({pts_controller_signal(c)});
  pts_controller_abort(c, &reason);
  pts_value_release(reason);
  EXPECT_EQ(pts_value_pointer(pts_signal_reason(d1)), &bc);
  EXPECT_TRUE(pts_value_same(pts_signal_reason(d1), pts_signal_reason(d2)));
  pts_controller_unref(c);
  pts_signal_unref(d1);
  EXPECT_EQ(bc.destroyed, 0);
  pts_signal_unref(d2);
  EXPECT_EQ(bc.destroyed, 1);  // released exactly once, by the last holder
}

TEST_F(SignalSteps, PriorityAlgorithmsRunBeforeEventAndMayRemoveThemselvesOrOthers) {
  pts_controller *c = task_controller();
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Algo a{{}, &log, "a", s}, b{{}, &log, "b", s}, d{{}, &log, "d", s};
  pts__algo_init(&a.node, run_prio_algo);
  pts__algo_init(&b.node, run_prio_algo);
  pts__algo_init(&d.node, run_prio_algo);
  a.remove_self = true;
  b.remove_other = &d;
  pts__signal_add_priority_algo(s, &a.node);
  pts__signal_add_priority_algo(s, &b.node);
  pts__signal_add_priority_algo(s, &d.node);
  Tag l{&log, "E"};
  pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, append_tag, &l, false);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(log, "abE");
  EXPECT_FALSE(pts__algo_linked(&a.node));
  EXPECT_TRUE(pts__algo_linked(&b.node));
  pts_controller_set_priority(c, UB);
  EXPECT_EQ(log, "abEbE");
  pts__signal_remove_priority_algo(s, &b.node);
  // Priority algorithms are not emptied by the change, unlike abort algorithms.
  pts_controller_unref(c);
}

TEST_F(SignalSteps, PriorityAlgorithmsOfDependentsRunAfterTheSourceEvent) {
  pts_controller *c = task_controller();
  pts_signal *s = pts_controller_signal(c);
  pts_signal *dep = task_any({}, s);
  std::string log;
  Algo a{{}, &log, "a", s}, b{{}, &log, "b", dep};
  pts__algo_init(&a.node, run_prio_algo);
  pts__algo_init(&b.node, run_prio_algo);
  pts__signal_add_priority_algo(s, &a.node);
  pts__signal_add_priority_algo(dep, &b.node);
  Tag l1{&log, "S"}, l2{&log, "D"};
  pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, append_tag, &l1, false);
  pts_signal_add_listener(dep, PTS_EVENT_PRIORITYCHANGE, append_tag, &l2, false);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(log, "aSbD");
  pts__signal_remove_priority_algo(s, &a.node);
  pts__signal_remove_priority_algo(dep, &b.node);
  pts_signal_unref(dep);
  pts_controller_unref(c);
}

TEST_F(SignalSteps, SamePriorityIsANoOp) {
  pts_controller *c = task_controller(UB);
  Count n;
  pts_signal_set_handler(pts_controller_signal(c), PTS_EVENT_PRIORITYCHANGE, count_event, &n);
  EXPECT_EQ(pts_controller_set_priority(c, UB), 0);
  EXPECT_EQ(n.n, 0);
  pts_controller_unref(c);
}

struct Reentry {
  pts_controller *c;
  int same_rc = 1, other_rc = 1, other_priority_rc = 1;
  pts_controller *other = nullptr;
};
static void set_again(void *data, const pts_event *) {
  auto *r = static_cast<Reentry *>(data);
  // Step 1 comes before step 2: even the same value is refused while changing.
  r->same_rc = pts_controller_set_priority(r->c, BG);
  r->other_rc = pts_controller_set_priority(r->c, UB);
  if (r->other) r->other_priority_rc = pts_controller_set_priority(r->other, UB);
}

TEST_F(SignalSteps, NotAllowedErrorLeavesPriorityUnchanged) {
  pts_controller *c = task_controller(UV), *other = task_controller(UV);
  Reentry r{c};
  r.other = other;
  pts_signal_set_handler(pts_controller_signal(c), PTS_EVENT_PRIORITYCHANGE, set_again, &r);
  ASSERT_EQ(pts_controller_set_priority(c, BG), 0);
  EXPECT_EQ(r.same_rc, PTS_ENOTALLOWED);
  EXPECT_EQ(r.other_rc, PTS_ENOTALLOWED);
  EXPECT_EQ(r.other_priority_rc, 0) << "another signal may change during the dispatch";
  EXPECT_EQ(pts_signal_priority(pts_controller_signal(c)), BG);
  EXPECT_EQ(pts_signal_priority(pts_controller_signal(other)), UB);
  // The flag is cleared afterwards (step 8).
  EXPECT_EQ(pts_controller_set_priority(c, UV), 0);
  EXPECT_EQ(pts_signal_priority(pts_controller_signal(c)), UV);
  pts_controller_unref(c);
  pts_controller_unref(other);
}

struct RootFromDependent {
  pts_controller *root;
  int rc = 1;
};
static void set_root(void *data, const pts_event *) {
  auto *r = static_cast<RootFromDependent *>(data);
  r->rc = pts_controller_set_priority(r->root, UB);
}

TEST_F(SignalSteps, DependentListenerCannotChangeTheRootDuringItsChange) {
  pts_controller *c = task_controller(UV);
  pts_signal *dep = task_any({}, pts_controller_signal(c));
  RootFromDependent r{c};
  pts_signal_set_handler(dep, PTS_EVENT_PRIORITYCHANGE, set_root, &r);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(r.rc, PTS_ENOTALLOWED);
  EXPECT_EQ(pts_signal_priority(dep), BG);
  pts_signal_unref(dep);
  pts_controller_unref(c);
}

TEST_F(SignalSteps, PreviousPriorityOfDependentEvents) {
  pts_controller *c = task_controller(UB);
  pts_signal *dep = task_any({}, pts_controller_signal(c));
  Count n;
  pts_signal_set_handler(dep, PTS_EVENT_PRIORITYCHANGE, count_event, &n);
  pts_controller_set_priority(c, BG);
  ASSERT_EQ(n.n, 1);
  EXPECT_EQ(n.last.previous_priority, UB);
  EXPECT_EQ(n.last.target, dep);
  pts_signal_unref(dep);
  pts_controller_unref(c);
}

struct SetPrioOnAbort {
  pts_controller *c;
  int rc = 1;
  std::string *log;
};
static void set_priority_on_abort(void *data, const pts_event *) {
  auto *s = static_cast<SetPrioOnAbort *>(data);
  *s->log += "A";
  s->rc = pts_controller_set_priority(s->c, BG);
  *s->log += "a";
}

TEST_F(SignalSteps, SetPriorityFromAnAbortListenerNestsDispatch) {
  pts_controller *c = task_controller(UV);
  std::string log;
  SetPrioOnAbort sp{c, 1, &log};
  Tag p{&log, "P"};
  pts_signal_add_listener(pts_controller_signal(c), PTS_EVENT_ABORT, set_priority_on_abort, &sp,
                          false);
  pts_signal_add_listener(pts_controller_signal(c), PTS_EVENT_PRIORITYCHANGE, append_tag, &p,
                          false);
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(sp.rc, 0);
  EXPECT_EQ(log, "APa");
  pts_controller_unref(c);
}

TEST_F(SignalSteps, HasFixedPriority) {
  pts_controller *c = task_controller();
  pts_signal *fixed = task_any({}, BG);
  pts_signal *dynamic = task_any({}, pts_controller_signal(c));
  pts_signal *from_fixed = task_any({}, fixed);
  pts_signal *from_dynamic = task_any({}, dynamic);
  pts_signal *abort_any = any({});
  EXPECT_TRUE(pts_signal_has_fixed_priority(fixed));
  EXPECT_FALSE(pts_signal_has_fixed_priority(dynamic));
  EXPECT_TRUE(pts_signal_has_fixed_priority(from_fixed));  // source fixed: not linked
  EXPECT_EQ(pts_signal_priority(from_fixed), BG);
  EXPECT_FALSE(pts_signal_has_fixed_priority(from_dynamic));
  EXPECT_FALSE(pts_signal_has_fixed_priority(pts_controller_signal(c)));  // not dependent
  EXPECT_FALSE(pts_signal_has_fixed_priority(abort_any));                 // not a TaskSignal
  // from_dynamic was flattened to the controller's signal: dropping the
  // intermediate signal does not cut it off.
  pts_signal_unref(dynamic);
  pts_controller_set_priority(c, UB);
  EXPECT_EQ(pts_signal_priority(from_dynamic), UB);
  // When the root goes, the dependent keeps its priority, now fixed.
  pts_controller_unref(c);
  EXPECT_TRUE(pts_signal_has_fixed_priority(from_dynamic));
  EXPECT_EQ(pts_signal_priority(from_dynamic), UB);
  for (auto *s : {fixed, from_fixed, from_dynamic, abort_any}) pts_signal_unref(s);
}

TEST_F(SignalSteps, FixedPriorityUnabortableSignal) {
  for (int p : {BG, UV, UB}) {
    pts_signal *s = nullptr;
    ASSERT_EQ(pts__signal_new_fixed(loop_, (pts_priority)p, &s), 0);
    EXPECT_TRUE(pts_signal_is_task_signal(s));
    EXPECT_TRUE(pts_signal_has_fixed_priority(s));
    EXPECT_EQ(pts_signal_priority(s), p);
    EXPECT_FALSE(pts_signal_aborted(s));
    pts_signal_unref(s);
  }
  pts_signal *s = nullptr;
  EXPECT_EQ(pts__signal_new_fixed(loop_, (pts_priority)7, &s), PTS_ETYPE);
  EXPECT_EQ(s, nullptr);
}

TEST_F(SignalSteps, AbortControllerHasNoPriority) {
  pts_controller *c = abort_controller();
  EXPECT_EQ(pts_controller_set_priority(c, BG), PTS_EINVAL);
  EXPECT_EQ(pts_signal_priority(pts_controller_signal(c)), PTS_EINVAL);
  EXPECT_FALSE(pts_signal_is_task_signal(pts_controller_signal(c)));
  pts_controller_unref(c);
}

TEST_F(SignalSteps, UnknownPriorityIsTypeErrorAndChangesNothing) {
  pts_controller *c = nullptr;
  size_t before = live_signals();
  EXPECT_EQ(pts_task_controller_new(loop_, 3, &c), PTS_ETYPE);
  EXPECT_EQ(pts_task_controller_new(loop_, -1, &c), PTS_ETYPE);
  EXPECT_EQ(c, nullptr);
  c = task_controller(UB);
  Count n;
  pts_signal_set_handler(pts_controller_signal(c), PTS_EVENT_PRIORITYCHANGE, count_event, &n);
  EXPECT_EQ(pts_controller_set_priority(c, 5), PTS_ETYPE);
  EXPECT_EQ(pts_signal_priority(pts_controller_signal(c)), UB);
  EXPECT_EQ(n.n, 0);
  pts_task_signal_any_init init = {42, nullptr};
  pts_signal *s = nullptr;
  EXPECT_EQ(pts_task_signal_any(loop_, nullptr, 0, &init, &s), PTS_ETYPE);
  EXPECT_EQ(s, nullptr);
  // An AbortSignal is not a TaskSignal: the IDL union conversion fails.
  pts_controller *ac = abort_controller();
  init = {UV, pts_controller_signal(ac)};
  EXPECT_EQ(pts_task_signal_any(loop_, nullptr, 0, &init, &s), PTS_ETYPE);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(live_signals(), before + 2);
  pts_controller_unref(c);
  pts_controller_unref(ac);
}

TEST_F(SignalSteps, AnyRejectsNullAndForeignSignals) {
  pts_loop *other = nullptr;
  ASSERT_EQ(pts_loop_new(nullptr, &other), 0);
  pts_controller *mine = abort_controller();
  pts_controller *theirs = nullptr;
  ASSERT_EQ(pts_task_controller_new(other, UV, &theirs), 0);
  size_t before = live_signals();
  pts_signal *out = nullptr;
  pts_signal *list[2] = {pts_controller_signal(mine), nullptr};
  EXPECT_EQ(pts_signal_any(loop_, list, 2, &out), PTS_EINVAL);
  EXPECT_EQ(pts_task_signal_any(loop_, list, 2, nullptr, &out), PTS_EINVAL);
  EXPECT_EQ(pts_signal_any(loop_, nullptr, 1, &out), PTS_EINVAL);
  EXPECT_EQ(pts_signal_any(loop_, list, 1, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_signal_any(nullptr, list, 1, &out), PTS_EINVAL);
  list[1] = pts_controller_signal(theirs);
  EXPECT_EQ(pts_signal_any(loop_, list, 2, &out), PTS_EFOREIGN);
  EXPECT_EQ(pts_task_signal_any(loop_, list, 2, nullptr, &out), PTS_EFOREIGN);
  pts_task_signal_any_init init = {UV, pts_controller_signal(theirs)};
  EXPECT_EQ(pts_task_signal_any(loop_, list, 1, &init, &out), PTS_EFOREIGN);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(live_signals(), before);
  // Nothing was linked: aborting the other loop's controller reaches nobody here.
  pts_controller_abort(theirs, nullptr);
  pts_controller_unref(theirs);
  pts_controller_unref(mine);
  ASSERT_EQ(pts_loop_free(other), 0);
}

TEST_F(SignalSteps, NullArgumentsAreRejected) {
  pts_controller *c = nullptr;
  EXPECT_EQ(pts_abort_controller_new(nullptr, &c), PTS_EINVAL);
  EXPECT_EQ(pts_abort_controller_new(loop_, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_controller_abort(nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_controller_set_priority(nullptr, UV), PTS_EINVAL);
  EXPECT_EQ(pts_signal_add_listener(nullptr, PTS_EVENT_ABORT, count_event, nullptr, false),
            PTS_EINVAL);
  EXPECT_EQ(pts_signal_timeout_new(nullptr, 1, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_signal_abort_new(nullptr, nullptr, nullptr), PTS_EINVAL);
  c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  EXPECT_EQ(pts_signal_add_listener(s, PTS_EVENT_ABORT, nullptr, nullptr, false), PTS_EINVAL);
  EXPECT_EQ(pts_signal_add_listener(s, (pts_event_type)9, count_event, nullptr, false),
            PTS_EINVAL);
  EXPECT_EQ(pts_signal_set_handler(s, (pts_event_type)9, count_event, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_signal_remove_listener(s, PTS_EVENT_ABORT, count_event, nullptr), PTS_ENOTFOUND);
  EXPECT_FALSE(pts_signal_aborted(nullptr));
  EXPECT_EQ(pts_signal_get_loop(s), loop_);
  pts_controller_unref(c);
}

// ---- events ----

class SignalEvents : public SignalTest {};

TEST_F(SignalEvents, HandlerKeepsItsSlotAndReappendsAfterRemoval) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Tag a{&log, "a"}, h{&log, "h"}, h2{&log, "H"}, b{&log, "b"};
  pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &a, false);
  pts_signal_set_handler(s, PTS_EVENT_ABORT, append_tag, &h);
  pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &b, false);
  pts_signal_set_handler(s, PTS_EVENT_ABORT, append_tag, &h2);  // same slot
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "aHb");
  pts_controller_unref(c);

  c = abort_controller();
  s = pts_controller_signal(c);
  log.clear();
  pts_signal_set_handler(s, PTS_EVENT_ABORT, append_tag, &h);
  pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &a, false);
  pts_signal_set_handler(s, PTS_EVENT_ABORT, nullptr, nullptr);  // removed
  pts_signal_set_handler(s, PTS_EVENT_ABORT, nullptr, nullptr);  // again: nothing
  pts_signal_set_handler(s, PTS_EVENT_ABORT, append_tag, &h2);   // appended at the end
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "aH");
  pts_controller_unref(c);
}

TEST_F(SignalEvents, DuplicateListenerNotAddedButHandlerIsDistinct) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Tag a{&log, "a"}, b{&log, "b"};
  EXPECT_EQ(pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &a, false), 0);
  EXPECT_EQ(pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &a, true), 0);  // dup
  EXPECT_EQ(pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &b, false), 0);
  EXPECT_EQ(pts_signal_set_handler(s, PTS_EVENT_ABORT, append_tag, &a), 0);  // handler: distinct
  // Same (fn, data) for another type is a different listener.
  EXPECT_EQ(pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, append_tag, &a, false), 0);
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "aba");
  // removeEventListener does not remove the handler.
  EXPECT_EQ(pts_signal_remove_listener(s, PTS_EVENT_ABORT, append_tag, &a), 0);
  EXPECT_EQ(pts_signal_remove_listener(s, PTS_EVENT_ABORT, append_tag, &a), PTS_ENOTFOUND);
  pts_controller_unref(c);
}

TEST_F(SignalEvents, OnceListenerRunsOnceAndMayBeAddedAgain) {
  pts_controller *c = task_controller();
  pts_signal *s = pts_controller_signal(c);
  Count n;
  pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, count_event, &n, true);
  pts_controller_set_priority(c, BG);
  pts_controller_set_priority(c, UB);
  EXPECT_EQ(n.n, 1);
  EXPECT_EQ(pts_signal_remove_listener(s, PTS_EVENT_PRIORITYCHANGE, count_event, &n),
            PTS_ENOTFOUND);
  pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, count_event, &n, true);
  pts_controller_set_priority(c, UV);
  EXPECT_EQ(n.n, 2);
  pts_controller_unref(c);
}

struct Mutator {
  pts_signal *s;
  std::string *log;
  std::string tag;
  Tag *remove_tag = nullptr;  // remove this append_tag listener
  Tag *add_tag = nullptr;     // add this append_tag listener
  bool remove_self = false;
  Tag *handler = nullptr;     // set the handler to this
};
static void mutate(void *data, const pts_event *ev) {
  auto *m = static_cast<Mutator *>(data);
  *m->log += m->tag;
  if (m->remove_tag) {
    EXPECT_EQ(pts_signal_remove_listener(m->s, ev->type, append_tag, m->remove_tag), 0);
  }
  if (m->add_tag) pts_signal_add_listener(m->s, ev->type, append_tag, m->add_tag, false);
  if (m->remove_self) {
    EXPECT_EQ(pts_signal_remove_listener(m->s, ev->type, mutate, m), 0);
  }
  if (m->handler) pts_signal_set_handler(m->s, ev->type, append_tag, m->handler);
}

TEST_F(SignalEvents, RemovedDuringDispatchDoesNotRunAddedDoesNotRunInThatDispatch) {
  pts_controller *c = task_controller();
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Tag later{&log, "x"}, added{&log, "n"}, b{&log, "b"};
  Mutator m{s, &log, "m"};
  m.remove_tag = &later;
  m.add_tag = &added;
  m.remove_self = true;
  pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, mutate, &m, false);
  pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, append_tag, &later, false);
  pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, append_tag, &b, false);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(log, "mb");
  pts_controller_set_priority(c, UB);  // self-removed is gone, the added one runs now
  EXPECT_EQ(log, "mbbn");
  pts_controller_unref(c);
}

TEST_F(SignalEvents, HandlerChangedDuringDispatchRunsTheNewValueInItsSlot) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Tag h1{&log, "1"}, h2{&log, "2"}, z{&log, "z"};
  Mutator m{s, &log, "m"};
  m.handler = &h2;
  pts_signal_add_listener(s, PTS_EVENT_ABORT, mutate, &m, false);
  pts_signal_set_handler(s, PTS_EVENT_ABORT, append_tag, &h1);
  pts_signal_add_listener(s, PTS_EVENT_ABORT, append_tag, &z, false);
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "m2z");
  pts_controller_unref(c);
}

TEST_F(SignalEvents, HandlerSetDuringDispatchDoesNotRunInIt) {
  pts_controller *c = abort_controller();
  pts_signal *s = pts_controller_signal(c);
  std::string log;
  Tag h{&log, "h"};
  Mutator m{s, &log, "m"};
  m.handler = &h;
  pts_signal_add_listener(s, PTS_EVENT_ABORT, mutate, &m, false);
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "m");
  pts_controller_unref(c);
}

struct Dropper {
  pts_controller *c;
  pts_signal *dep;
  bool after_ok = false;
};
static void drop_everything(void *data, const pts_event *ev) {
  auto *d = static_cast<Dropper *>(data);
  // The target stays alive until the dispatch ends, whatever is dropped here.
  if (d->c) pts_controller_unref(d->c);
  if (d->dep) pts_signal_unref(d->dep);
  d->c = nullptr;
  d->dep = nullptr;
  pts_signal_remove_listener(ev->target, ev->type, drop_everything, data);
  d->after_ok = pts_signal_aborted(ev->target);
}

TEST_F(SignalEvents, ListenerMayDropItsLastReferenceToTheSignal) {
  pts_controller *c = abort_controller();
  size_t before = live_signals();
  Dropper d{c, nullptr};
  Count later;
  pts_signal_add_listener(pts_controller_signal(c), PTS_EVENT_ABORT, drop_everything, &d, false);
  pts_signal_add_listener(pts_controller_signal(c), PTS_EVENT_ABORT, count_event, &later, false);
  pts_controller_abort(c, nullptr);
  EXPECT_TRUE(d.after_ok);
  EXPECT_EQ(later.n, 1);
  EXPECT_EQ(live_signals(), before - 1);
}

TEST_F(SignalEvents, DependentListenerMayDropItselfAndItsSource) {
  pts_controller *c = task_controller();
  pts_signal *dep = task_any({pts_controller_signal(c)}, pts_controller_signal(c));
  pts_signal *dep2 = task_any({}, pts_controller_signal(c));
  Count n2;
  pts_signal_add_listener(dep2, PTS_EVENT_PRIORITYCHANGE, count_event, &n2, false);
  pts_signal_unref(dep2);  // kept alive by its listener and its source
  Dropper d{c, dep};
  pts_signal_add_listener(dep, PTS_EVENT_PRIORITYCHANGE, drop_everything, &d, false);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(n2.n, 1) << "the next dependent still runs after the previous one freed things";
  EXPECT_EQ(live_signals(), 0u);
}

struct AbortOtherController {
  pts_controller *other;
  std::string *log;
};
static void abort_other_ctl(void *data, const pts_event *) {
  auto *a = static_cast<AbortOtherController *>(data);
  *a->log += "[";
  pts_controller_abort(a->other, nullptr);
  *a->log += "]";
}

TEST_F(SignalEvents, ListenerAbortingAnotherSignalNestsItsDispatch) {
  pts_controller *c1 = abort_controller(), *c2 = abort_controller();
  std::string log;
  AbortOtherController ao{c2, &log};
  Tag t1{&log, "1"}, t2{&log, "2"};
  pts_signal_add_listener(pts_controller_signal(c1), PTS_EVENT_ABORT, abort_other_ctl, &ao, false);
  pts_signal_add_listener(pts_controller_signal(c1), PTS_EVENT_ABORT, append_tag, &t1, false);
  pts_signal_add_listener(pts_controller_signal(c2), PTS_EVENT_ABORT, append_tag, &t2, false);
  pts_controller_abort(c1, nullptr);
  EXPECT_EQ(log, "[2]1");
  pts_controller_unref(c1);
  pts_controller_unref(c2);
}

TEST_F(SignalEvents, AbortTwiceFiresOnceEvenFromInsideTheDispatch) {
  pts_controller *c = abort_controller();
  std::string log;
  AbortOtherController self{c, &log};
  pts_signal_add_listener(pts_controller_signal(c), PTS_EVENT_ABORT, abort_other_ctl, &self,
                          false);
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "[]");
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(log, "[]");
  pts_controller_unref(c);
}

}  // namespace
}  // namespace ptstest
