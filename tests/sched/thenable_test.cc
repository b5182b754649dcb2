// tests/sched/thenable_test.cc: thenables (issue 18), from ECMA-262's words.
//
// Promise Resolve Functions: "If resolution is not an Object, fulfill ...
// Let then be Get(resolution, "then") ... If IsCallable(thenAction) is false,
// fulfill ... Let thenJobCallback be HostMakeJobCallback(thenAction). Let job
// be NewPromiseResolveThenableJob(promise, resolution, thenJobCallback).
// Perform HostEnqueuePromiseJob(job)". The job: "Let resolvingFunctions be
// CreateResolvingFunctions(promiseToResolve). Let thenCallResult be
// Completion(HostCallJobCallback(then, thenable, « resolve, reject »)). If
// thenCallResult is an abrupt completion, return Call(reject, undefined,
// « thenCallResult.[[Value]] »)". The resolving functions share one
// [[AlreadyResolved]] record: only the first call of either counts.
// With the scheduling spec's §4 patches, the then hook runs with the
// scheduling state current at the resolve (so a yield in it inherits).
#include <deque>

#include "tests/sched/sched_test_util.h"

using namespace ptstest;

namespace {

class Thenables : public SchedTest {
 public:
  // p.then(v => ids.push("fulfilled " + v), e => ids.push("rejected " + msg))
  void Watch(pts_promise *p) {
    Then(
        p,
        [this](pts_value v) {
          Push("fulfilled " + std::to_string(v.u.i));
          return pts_undefined();
        },
        [this](pts_value e) {
          const char *m = pts_error_message(e);
          Push(std::string("rejected ") + (m ? m : "?"));
          return pts_undefined();
        });
  }
  // A task (with options o) that awaits a thenable whose then hook runs
  // hook(): "await thenable" makes a promise resolved with it (PromiseResolve).
  // A job runs before the thenable's: after it the current state is null
  // (HostCallJobCallback), so the hook can only see the captured state.
  void PostAwaitingThenable(pts_post_options o, std::function<void()> hook) {
    Post(
        [this, hook] {
          QueueMicrotask([](int) {});
          pts_promise_resolve(NewPromise(), Thenable([hook](pts_resolvers *r) {
                                hook();
                                pts_resolvers_resolve(r, pts_undefined());
                                return pts_undefined();
                              }));
          return pts_undefined();
        },
        o);
  }
};

TEST_F(Thenables, ResolvingCallsThenOneMicrotaskLater) {
  pts_promise *p = NewPromise();
  Watch(p);
  int destroyed = 0;
  ASSERT_EQ(pts_promise_resolve(p, Thenable(
                                       [this](pts_resolvers *r) {
                                         Push("then");
                                         pts_resolvers_resolve(r, pts_int(42));
                                         return pts_undefined();
                                       },
                                       &destroyed)),
            0);
  EXPECT_EQ(Ids(), "") << "then is called from a job, not by resolve";
  QueueMicrotask([this](int) { Push("m"); });
  Run();
  EXPECT_EQ(Ids(), "then,m,fulfilled 42");
  EXPECT_EQ(destroyed, 1) << "the job released the thenable";
}

TEST_F(Thenables, ThenThatThrowsRejects) {
  pts_promise *p = NewPromise();
  Watch(p);
  pts_promise_resolve(p, Thenable([](pts_resolvers *) {
                        return pts_error_value(PTS_EERROR, "thrown");
                      }));
  Run();
  EXPECT_EQ(Ids(), "rejected thrown");
}

TEST_F(Thenables, AThrowAfterResolvingIsIgnored) {
  pts_promise *p = NewPromise();
  Watch(p);
  pts_promise_resolve(p, Thenable([](pts_resolvers *r) {
                        pts_resolvers_resolve(r, pts_int(1));
                        return pts_error_value(PTS_EERROR, "thrown");
                      }));
  Run();
  EXPECT_EQ(Ids(), "fulfilled 1");
}

TEST_F(Thenables, OnlyTheFirstCallOfEitherFunctionCounts) {
  pts_promise *both = NewPromise();
  Watch(both);
  pts_promise_resolve(both, Thenable([](pts_resolvers *r) {
                        EXPECT_EQ(pts_resolvers_resolve(r, pts_int(1)), 0);
                        EXPECT_EQ(pts_resolvers_reject(r, pts_error_value(PTS_EERROR, "no")), 0);
                        EXPECT_EQ(pts_resolvers_resolve(r, pts_int(2)), 0);
                        return pts_undefined();
                      }));
  pts_promise *reject_first = NewPromise();
  Watch(reject_first);
  pts_promise_resolve(reject_first, Thenable([](pts_resolvers *r) {
                        pts_resolvers_reject(r, pts_error_value(PTS_EERROR, "first"));
                        pts_resolvers_resolve(r, pts_int(3));
                        pts_resolvers_reject(r, pts_error_value(PTS_EERROR, "second"));
                        return pts_undefined();
                      }));
  Run();
  EXPECT_EQ(Ids(), "fulfilled 1,rejected first");
}

TEST_F(Thenables, ResolversKeptPastTheHookSettleLater) {
  pts_promise *p = NewPromise();
  Watch(p);
  pts_resolvers *kept = nullptr;
  pts_promise_resolve(p, Thenable([&kept](pts_resolvers *r) {
                        pts_resolvers_ref(r);
                        kept = r;
                        return pts_undefined();
                      }));
  Run();
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(pts_promise_get_state(p), PTS_PROMISE_PENDING);
  PostId("task", NoOpts());
  Run();
  EXPECT_EQ(pts_resolvers_resolve(kept, pts_int(7)), 0);
  pts_resolvers_unref(kept);
  Run();
  EXPECT_EQ(Ids(), "task,fulfilled 7");
}

TEST_F(Thenables, ResolvingWithAThenableAgainTakesAnotherJob) {
  pts_promise *p = NewPromise();
  Watch(p);
  pts_promise_resolve(p, Thenable([this](pts_resolvers *r) {
                        Push("outer");
                        pts_resolvers_resolve(r, Thenable([this](pts_resolvers *r2) {
                                                Push("inner");
                                                pts_resolvers_resolve(r2, pts_int(9));
                                                return pts_undefined();
                                              }));
                        return pts_undefined();
                      }));
  Run();
  EXPECT_EQ(Ids(), "outer,inner,fulfilled 9");
}

// A reaction handler that returns a thenable: the derived promise adopts it.
TEST_F(Thenables, AHandlerReturningAThenableIsAdopted) {
  pts_promise *derived = Then(Resolved(), [](pts_value) {
    return Thenable([](pts_resolvers *r) {
      pts_resolvers_resolve(r, pts_int(4));
      return pts_undefined();
    });
  });
  Watch(derived);
  Run();
  EXPECT_EQ(Ids(), "fulfilled 4");
}

// postTask's callback returns a thenable: "resolve result with
// callbackResult" comes after the callback's microtask checkpoint, so the
// callback's microtasks run before the then hook is called.
TEST_F(Thenables, APostTaskResultAdoptsAThenableAfterTheCallbacksMicrotasks) {
  pts_promise *task = Post([this] {
    QueueMicrotask([this](int) { Push("m"); });
    return Thenable([this](pts_resolvers *r) {
      Push("then");
      pts_resolvers_resolve(r, pts_int(5));
      return pts_undefined();
    });
  });
  Watch(task);
  Run();
  EXPECT_EQ(Ids(), "m,then,fulfilled 5");
}

// "await thenable" in a task: the then hook runs with the task's scheduling
// state, so a yield in it inherits the task's signal (aborted: the yield is
// rejected) ...
TEST_F(Thenables, AYieldInTheThenHookInheritsTheTasksSignal) {
  pts_controller *c = TaskController();
  pts_promise *yp = nullptr;
  PostAwaitingThenable(Sig(pts_controller_signal(c)), [&] {
    pts_controller_abort(c, nullptr);
    yp = Yield();
  });
  Run();
  ASSERT_NE(yp, nullptr);
  EXPECT_TRUE(RejectedWith(yp, PTS_EABORT));
}

// ... and its priority: a background task's continuation runs after a
// user-visible task posted first (it would run before it with no state).
TEST_F(Thenables, AYieldInTheThenHookInheritsTheTasksPriority) {
  pts_controller *c = TaskController(PTS_PRIORITY_BACKGROUND);
  PostAwaitingThenable(Sig(pts_controller_signal(c)), [this] {
    PostId("user-visible task", NoOpts());
    Then(Yield(), PushR("continuation"));
  });
  Run();
  EXPECT_EQ(Ids(), "user-visible task,continuation");
}

// Outside any task the state is null: the same yield does not inherit.
TEST_F(Thenables, WithNoStateAtTheResolveTheHookHasNone) {
  pts_promise *awaited = NewPromise();
  pts_promise_resolve(awaited, Thenable([this](pts_resolvers *r) {
                        PostId("user-visible task", NoOpts());
                        Then(Yield(), PushR("continuation"));
                        pts_resolvers_resolve(r, pts_undefined());
                        return pts_undefined();
                      }));
  Run();
  EXPECT_EQ(Ids(), "continuation,user-visible task");
}

TEST_F(Thenables, ValueRulesAndRelease) {
  int destroyed = 0;
  pts_value t = Thenable([](pts_resolvers *) { return pts_undefined(); }, &destroyed);
  pts_value u = pts_value_copy(t);
  EXPECT_TRUE(pts_value_same(t, u));
  pts_value other = Thenable([](pts_resolvers *) { return pts_undefined(); }, &destroyed);
  EXPECT_FALSE(pts_value_same(t, other));
  EXPECT_NE(pts_value_pointer(t), nullptr);
  EXPECT_EQ(pts_value_pointer(t), pts_value_pointer(u));
  pts_value_release(u);
  EXPECT_EQ(destroyed, 0);
  pts_value_release(t);
  EXPECT_EQ(destroyed, 1);
  pts_value_release(other);
  EXPECT_EQ(destroyed, 2);
  EXPECT_EQ(pts_thenable_value(nullptr, nullptr, nullptr).kind, PTS_VALUE_UNDEFINED);
}

// A thenable job still pending when the loop is freed: the thenable is
// released (destroy runs), its hook never called.
TEST_F(Thenables, APendingJobIsReleasedWithTheLoop) {
  int destroyed = 0;
  bool called = false;
  pts_promise *p = NewPromise();
  pts_promise_resolve(p, Thenable(
                             [&called](pts_resolvers *) {
                               called = true;
                               return pts_undefined();
                             },
                             &destroyed));
  FreeLoop();
  EXPECT_FALSE(called);
  EXPECT_EQ(destroyed, 1);
}

}  // namespace
