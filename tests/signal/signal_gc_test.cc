// The ownership rules of signal.h (DOM 3.2.1 and spec section 3 garbage
// collection, as reference counts): a dependent signal lives while the caller
// holds it, or while it has listeners or algorithms and a source that can
// still abort or re-prioritise it; otherwise it is freed and unlinked.
#include "signal_test_util.h"

namespace ptstest {
namespace {

constexpr int UB = PTS_PRIORITY_USER_BLOCKING;
constexpr int BG = PTS_PRIORITY_BACKGROUND;

class SignalGC : public SignalTest {};

TEST_F(SignalGC, UnobservedDependentIsFreedAtOnce) {
  pts_controller *c = abort_controller();
  pts_signal *d = any({pts_controller_signal(c)});
  EXPECT_EQ(live_signals(), 2u);
  pts_signal_unref(d);
  EXPECT_EQ(live_signals(), 1u);
  pts_controller_abort(c, nullptr);  // nobody left to reach
  pts_controller_unref(c);
  EXPECT_EQ(live_signals(), 0u);
}

TEST_F(SignalGC, DependentWithAbortListenerLivesUntilItsSourceAborts) {
  pts_controller *c = abort_controller();
  pts_signal *d = any({pts_controller_signal(c)});
  Count n;
  pts_signal_add_listener(d, PTS_EVENT_ABORT, count_event, &n, false);
  pts_signal_unref(d);
  EXPECT_EQ(live_signals(), 2u) << "observable: listener and a source that can abort";
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(n.n, 1);
  EXPECT_EQ(n.last.target, d);
  EXPECT_EQ(live_signals(), 1u) << "aborted: can never fire again";
  pts_controller_unref(c);
}

TEST_F(SignalGC, DependentWithAbortListenerIsFreedWhenItsSourcesGo) {
  pts_controller *c1 = abort_controller(), *c2 = abort_controller();
  pts_signal *d = any({pts_controller_signal(c1), pts_controller_signal(c2)});
  Count n;
  pts_signal_add_listener(d, PTS_EVENT_ABORT, count_event, &n, false);
  pts_signal_unref(d);
  pts_controller_unref(c1);
  EXPECT_EQ(live_signals(), 2u) << "c2 can still abort it";
  pts_controller_unref(c2);
  EXPECT_EQ(live_signals(), 0u);
  EXPECT_EQ(n.n, 0);
}

TEST_F(SignalGC, RemovingTheLastListenerFreesAnUnheldDependent) {
  pts_controller *c = abort_controller();
  pts_signal *d = any({pts_controller_signal(c)});
  Count n;
  pts_signal_add_listener(d, PTS_EVENT_ABORT, count_event, &n, false);
  pts_signal_set_handler(d, PTS_EVENT_ABORT, count_event, &n);
  pts_signal_unref(d);
  EXPECT_EQ(pts_signal_remove_listener(d, PTS_EVENT_ABORT, count_event, &n), 0);
  EXPECT_EQ(live_signals(), 2u) << "the handler still observes it";
  pts_signal_set_handler(d, PTS_EVENT_ABORT, nullptr, nullptr);
  EXPECT_EQ(live_signals(), 1u);
  pts_controller_unref(c);
}

static void noop_algo(pts__algo *) {}

TEST_F(SignalGC, AbortAlgorithmKeepsAnUnheldDependentAlive) {
  pts_controller *c = abort_controller();
  pts_signal *d = any({pts_controller_signal(c)});
  pts__algo a;
  pts__algo_init(&a, noop_algo);
  pts__signal_add_abort_algo(d, &a);
  pts_signal_unref(d);
  EXPECT_EQ(live_signals(), 2u);
  pts__signal_remove_abort_algo(d, &a);
  EXPECT_EQ(live_signals(), 1u);
  pts_controller_unref(c);
}

TEST_F(SignalGC, FreedSignalLeavesItsAlgorithmsIdle) {
  pts_controller *c = abort_controller();
  pts__algo a, p;
  pts__algo_init(&a, noop_algo);
  pts__algo_init(&p, noop_algo);
  pts_signal *s = pts_controller_signal(c);
  pts__signal_add_abort_algo(s, &a);
  pts_controller_unref(c);  // nobody can abort it: freed
  EXPECT_EQ(live_signals(), 0u);
  EXPECT_FALSE(pts__algo_linked(&a));
  pts__signal_remove_abort_algo(s, &a);  // no-op, s is not touched
  pts_controller *t = task_controller();
  pts__signal_add_priority_algo(pts_controller_signal(t), &p);
  pts_controller_unref(t);
  EXPECT_FALSE(pts__algo_linked(&p));
}

TEST_F(SignalGC, DependentWithPrioritychangeListenerLivesWhileItsSourceDoes) {
  pts_controller *c = task_controller();
  pts_signal *d = task_any({}, pts_controller_signal(c));
  Count n;
  pts_signal_set_handler(d, PTS_EVENT_PRIORITYCHANGE, count_event, &n);
  pts_signal_unref(d);
  EXPECT_EQ(live_signals(), 2u);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(n.n, 1);
  pts_controller_abort(c, nullptr);  // no abort source: abort changes nothing
  EXPECT_EQ(live_signals(), 2u);
  pts_controller_set_priority(c, UB);
  EXPECT_EQ(n.n, 2);
  pts_controller_unref(c);
  EXPECT_EQ(live_signals(), 0u);
}

TEST_F(SignalGC, AbortListenerDoesNotKeepAPriorityOnlyDependent) {
  pts_controller *c = task_controller();
  pts_signal *d = task_any({}, pts_controller_signal(c));
  Count n;
  pts_signal_set_handler(d, PTS_EVENT_ABORT, count_event, &n);
  pts_signal_unref(d);
  EXPECT_EQ(live_signals(), 1u) << "no source can abort it, no priority observer";
  pts_controller_unref(c);
}

TEST_F(SignalGC, HeldDependentOutlivesItsSourcesAndNeverAborts) {
  pts_controller *c = abort_controller();
  pts_signal *d = any({pts_controller_signal(c)});
  pts_controller_unref(c);
  EXPECT_EQ(live_signals(), 1u);
  EXPECT_FALSE(pts_signal_aborted(d));
  pts_signal *d2 = any({d});  // flattening finds no live source
  EXPECT_FALSE(pts_signal_aborted(d2));
  pts_signal_unref(d2);
  pts_signal_unref(d);
}

TEST_F(SignalGC, ReleasedTimeoutSignalStillFiresThenIsFreed) {
  pts_signal *t = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(global_, 10, &t), 0);
  pts_signal *d = any({t});
  Count n;
  pts_signal_add_listener(d, PTS_EVENT_ABORT, count_event, &n, false);
  pts_signal_unref(d);
  pts_signal_unref(t);
  EXPECT_EQ(live_signals(), 2u);
  advance_ms(10);
  EXPECT_EQ(n.n, 1);
  EXPECT_EQ(live_signals(), 0u);
}

TEST_F(SignalGC, PendingTimeoutIsReleasedWithTheLoop) {
  pts_signal *t = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(global_, 1000, &t), 0);
  Count n;
  pts_signal_add_listener(t, PTS_EVENT_ABORT, count_event, &n, false);
  pts_signal_unref(t);
  EXPECT_EQ(live_signals(), 1u);
  // TearDown frees the loop: the timer is cancelled and the signal freed.
}

TEST_F(SignalGC, TimeoutTaskQueuedButNotRunIsReleasedWithTheLoop) {
  pts_signal *t = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(global_, 0, &t), 0);
  pts_signal_unref(t);
  EXPECT_EQ(live_signals(), 1u);
}

TEST_F(SignalGC, ReasonIsReleasedOnceWhenEverySignalIsGone) {
  BoxCounter bc;
  {
    pts_value reason = counted_box(&bc);
    pts_controller *c = abort_controller();
    std::vector<pts_signal *> deps;
    for (int i = 0; i < 10; i++) deps.push_back(any({pts_controller_signal(c)}));
    pts_controller_abort(c, &reason);
    pts_value_release(reason);
    pts_signal *late = any({deps[3]});  // copies the reason again
    pts_controller_unref(c);
    for (auto *d : deps) pts_signal_unref(d);
    EXPECT_EQ(bc.destroyed, 0);
    pts_value thrown;
    EXPECT_EQ(pts_signal_throw_if_aborted(late, &thrown), PTS_EABORT);
    pts_signal_unref(late);
    EXPECT_EQ(bc.destroyed, 0);
    pts_value_release(thrown);
  }
  EXPECT_EQ(bc.destroyed, 1);
}

// The chain tests: 10,000 dependents, built and dropped; LSan and the live
// counter must find nothing left.
constexpr int kChain = 10000;

TEST_F(SignalGC, ChainOfTenThousandHeldDependentsIsFreed) {
  pts_controller *c = task_controller();
  std::vector<pts_signal *> chain;
  chain.reserve(kChain);
  chain.push_back(task_any({pts_controller_signal(c)}, pts_controller_signal(c)));
  for (int i = 1; i < kChain; i++) chain.push_back(task_any({chain.back()}, chain.back()));
  EXPECT_EQ(live_signals(), (size_t)kChain + 1);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(pts_signal_priority(chain.back()), BG);
  pts_controller_abort(c, nullptr);
  EXPECT_TRUE(pts_signal_aborted(chain.back()));
  for (auto *s : chain) pts_signal_unref(s);
  EXPECT_EQ(live_signals(), 1u);
  pts_controller_unref(c);
}

TEST_F(SignalGC, ChainOfTenThousandDroppedAsBuiltIsFreed) {
  pts_controller *c = abort_controller();
  pts_signal *prev = any({pts_controller_signal(c)});
  for (int i = 1; i < kChain; i++) {
    pts_signal *next = any({prev});
    pts_signal_unref(prev);
    prev = next;
  }
  EXPECT_EQ(live_signals(), 2u);
  pts_signal_unref(prev);
  pts_controller_unref(c);
}

TEST_F(SignalGC, ChainOfTenThousandObservedDependentsLivesUntilAbortThenIsFreed) {
  pts_controller *c = task_controller();
  Count aborts, changes;
  pts_signal *prev = nullptr;
  for (int i = 0; i < kChain; i++) {
    pts_signal *src = prev ? prev : pts_controller_signal(c);
    pts_signal *s = task_any({src}, src);
    pts_signal_add_listener(s, PTS_EVENT_ABORT, count_event, &aborts, false);
    pts_signal_add_listener(s, PTS_EVENT_PRIORITYCHANGE, count_event, &changes, false);
    if (prev) pts_signal_unref(prev);
    prev = s;
  }
  pts_signal_unref(prev);
  EXPECT_EQ(live_signals(), (size_t)kChain + 1);
  pts_controller_set_priority(c, BG);
  EXPECT_EQ(changes.n, kChain);
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(aborts.n, kChain);
  EXPECT_EQ(live_signals(), (size_t)kChain + 1) << "still observable through priority";
  pts_controller_unref(c);
  EXPECT_EQ(live_signals(), 0u);
}

TEST_F(SignalGC, WideAnyOverManySourcesUnlinksFromEach) {
  std::vector<pts_controller *> cs;
  std::vector<pts_signal *> sigs;
  for (int i = 0; i < 100; i++) {
    cs.push_back(i % 2 ? task_controller() : abort_controller());
    sigs.push_back(pts_controller_signal(cs.back()));
  }
  pts_signal *all = any(sigs);
  pts_signal *all2 = task_any({all, all, sigs[5]});
  Count n;
  pts_signal_add_listener(all2, PTS_EVENT_ABORT, count_event, &n, false);
  pts_signal_unref(all);
  pts_signal_unref(all2);
  for (int i = 0; i < 99; i++) pts_controller_unref(cs[i]);
  EXPECT_EQ(live_signals(), 2u);
  pts_controller_abort(cs[99], nullptr);
  EXPECT_EQ(n.n, 1);
  EXPECT_EQ(live_signals(), 1u);
  pts_controller_unref(cs[99]);
}

}  // namespace
}  // namespace ptstest
