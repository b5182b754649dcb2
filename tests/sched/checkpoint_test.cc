// tests/sched/checkpoint_test.cc: where microtask checkpoints happen (issue
// 18), from the spec's words.
//
// HTML "clean up after running script" (reached from WebIDL "invoke a
// callback function" and DOM "inner invoke"): "If the JavaScript execution
// context stack is now empty, perform a microtask checkpoint." So a callback
// that the event loop calls with nothing else on the stack is followed by a
// checkpoint right when it returns, inside its task and before the task's
// next step: before a postTask result is resolved with the callback's value
// (scheduling-tasks-and-continuations.bs.md, "schedule a postTask task":
// "Let callbackResult be the result of invoking callback ... resolve result
// with callbackResult"), and before the next abort listener when a task's
// steps fire an event (DOM "signal abort" from AbortSignal.timeout()'s task).
// A callback called from script (controller.abort() inside a task) runs with
// a non-empty stack: no checkpoint until the outermost callback returns.
#include <deque>

#include "tests/sched/sched_test_util.h"

using namespace ptstest;

namespace {

class CleanUpAfterRunningScript : public SchedTest {
 public:
  // An abort listener that records its name (and whether m ran by then).
  struct Listener {
    CleanUpAfterRunningScript *t;
    std::string name;
  };
  static void OnEvent(void *d, const pts_event *) {
    auto *l = static_cast<Listener *>(d);
    l->t->Push(l->name);
  }
  // An abort listener that records its name and queues a microtask naming
  // itself "m" + name.
  static void OnEventQueueing(void *d, const pts_event *) {
    auto *l = static_cast<Listener *>(d);
    l->t->Push(l->name);
    CleanUpAfterRunningScript *t = l->t;
    std::string m = "m" + l->name;
    t->QueueMicrotask([t, m](int) { t->Push(m); });
  }
  Listener *NewListener(const std::string &name) {
    listeners_.push_back(Listener{this, name});
    return &listeners_.back();
  }
  void Listen(pts_signal *sig, pts_listener_fn fn, const std::string &name,
              pts_event_type type = PTS_EVENT_ABORT) {
    ASSERT_EQ(pts_signal_add_listener(sig, type, fn, NewListener(name), false), 0);
  }

  // The body every kind of callback runs below: queue a microtask "m", then
  // abort a signal with two listeners "l1" and "l2" (nested: the stack is not
  // empty, so no checkpoint between them), then return. The checkpoint after
  // the callback runs "m" before anything else: "l1,l2,m".
  pts_controller *nested_ = nullptr;
  void ArmNested() {
    nested_ = AbortController();
    Listen(pts_controller_signal(nested_), OnEvent, "l1");
    Listen(pts_controller_signal(nested_), OnEvent, "l2");
  }
  void NestedBody() {
    Push("cb");
    QueueMicrotask([this](int) { Push("m"); });
    pts_controller_abort(nested_, nullptr);
  }

  std::deque<Listener> listeners_;
};

// spec: "Let callbackResult be the result of invoking callback": the
// checkpoint at the end of "invoke" drains the callback's microtasks, and
// each of them may queue more, before "resolve result with callbackResult".
// The example of issue 18: before the fix the order was a,result,b,c.
TEST_F(CleanUpAfterRunningScript, PostTaskResultIsResolvedAfterTheCallbacksMicrotasks) {
  pts_promise *task = Post([this] {
    pts_promise *d = NewPromise();
    pts_promise_resolve(d, pts_undefined());
    Then(d, [this, d](pts_value) {
      Push("a");
      Then(d, [this, d](pts_value) {
        Push("b");
        Then(d, PushR("c"));
        return pts_undefined();
      });
      return pts_undefined();
    });
    return pts_int(1);
  });
  Then(task, [this](pts_value v) {
    Push("result " + std::to_string(v.u.i));
    return pts_undefined();
  });
  Run();
  EXPECT_EQ(Ids(), "a,b,c,result 1");
}

// The flip case: a microtask of the callback aborts the task's own signal.
// The abort steps run before the result is resolved, so they reject it with
// the abort reason ("resolve" then finds it settled).
TEST_F(CleanUpAfterRunningScript, MicrotaskAbortingItsOwnSignalRejectsTheResult) {
  pts_controller *c = TaskController();
  pts_promise *task = Post(
      [this, c] {
        QueueMicrotask([c](int) { pts_controller_abort(c, nullptr); });
        return pts_int(1);
      },
      Sig(pts_controller_signal(c)));
  Run();
  EXPECT_TRUE(RejectedWith(task, PTS_EABORT));
}

// The same for a callback that throws: its microtasks (and theirs) run
// before the result is rejected with the error.
TEST_F(CleanUpAfterRunningScript, PostTaskResultIsRejectedAfterTheCallbacksMicrotasks) {
  pts_promise *task = Post([this] {
    QueueMicrotask([this](int) {
      Push("m1");
      QueueMicrotask([this](int) { Push("m2"); });
    });
    return pts_error_value(PTS_EERROR, "thrown");
  });
  Then(task, nullptr, [this](pts_value v) {
    Push(std::string("rejected ") + pts_error_message(v));
    return pts_undefined();
  });
  Run();
  EXPECT_EQ(Ids(), "m1,m2,rejected thrown");
}

// The direct-callback form: the callback is called once; a microtask of its
// own that aborts its signal does not call it again (the task is running).
TEST_F(CleanUpAfterRunningScript, DirectCallbackAbortingItsOwnSignalFromAMicrotaskIsNotCalledAgain) {
  pts_controller *c = TaskController();
  pts_post_options o = Sig(pts_controller_signal(c));
  ASSERT_EQ(PostCb(
                [this, c](int status) {
                  Push("cb " + std::to_string(status));
                  QueueMicrotask([this, c](int) {
                    pts_controller_abort(c, nullptr);
                    Push("aborted");
                  });
                },
                &o),
            0);
  Run();
  EXPECT_EQ(Ids(), "cb 0,aborted");
}

// DOM "signal abort" from AbortSignal.timeout()'s task: the task's steps are
// the event loop's, so every listener is called with an empty stack and its
// microtasks run before the next listener is called.
TEST_F(CleanUpAfterRunningScript, EachAbortListenerOfATimeoutIsFollowedByACheckpoint) {
  pts_signal *t = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(g, 5, &t), 0);
  KeepSignal(t);
  Listen(t, OnEventQueueing, "1");
  Listen(t, OnEventQueueing, "2");
  Advance(5);
  EXPECT_EQ(Ids(), "1,m1,2,m2");
}

// The same abort made by script (a task's callback calls abort()): the
// listeners run inside the callback, so their microtasks wait for it.
TEST_F(CleanUpAfterRunningScript, AbortListenersCalledFromScriptShareTheCallersCheckpoint) {
  pts_controller *c = AbortController();
  Listen(pts_controller_signal(c), OnEventQueueing, "1");
  Listen(pts_controller_signal(c), OnEventQueueing, "2");
  Post([this, c] {
    pts_controller_abort(c, nullptr);
    Push("after abort");
    return pts_undefined();
  });
  Run();
  EXPECT_EQ(Ids(), "1,2,after abort,m1,m2");
}

// The direct-callback form's abort notification stands for the spec's
// rejection of the result (docs/decisions.md): when a timeout's task aborts
// two tasks, each notification's microtasks run before the next one.
TEST_F(CleanUpAfterRunningScript, EachAbortNotificationFromATimeoutIsFollowedByACheckpoint) {
  pts_signal *t = nullptr;
  ASSERT_EQ(pts_signal_timeout_new(g, 5, &t), 0);
  KeepSignal(t);
  pts_post_options o = Sig(t);
  o.delay_ms = 10;
  for (const char *name : {"1", "2"}) {
    std::string n = name;
    ASSERT_EQ(PostCb(
                  [this, n](int status) {
                    Push(n + " status " + std::to_string(status));
                    QueueMicrotask([this, n](int) { Push("m" + n); });
                  },
                  &o),
              0);
  }
  Advance(10);
  EXPECT_EQ(Ids(), "1 status " + std::to_string(PTS_EABORT) + ",m1,2 status " +
                       std::to_string(PTS_EABORT) + ",m2");
}

// setPriority() from script fires prioritychange listeners with the stack
// not empty: no checkpoint between them.
TEST_F(CleanUpAfterRunningScript, PriorityChangeListenersCalledFromScriptShareTheCallersCheckpoint) {
  pts_controller *c = TaskController();
  Listen(pts_controller_signal(c), OnEventQueueing, "1", PTS_EVENT_PRIORITYCHANGE);
  Listen(pts_controller_signal(c), OnEventQueueing, "2", PTS_EVENT_PRIORITYCHANGE);
  Post([this, c] {
    EXPECT_EQ(pts_controller_set_priority(c, PTS_PRIORITY_BACKGROUND), 0);
    Push("after");
    return pts_undefined();
  });
  Run();
  EXPECT_EQ(Ids(), "1,2,after,m1,m2");
}

// Outside any run the caller of the API is script: an abort it makes runs
// its listeners without checkpoints; the microtasks wait for the loop.
TEST_F(CleanUpAfterRunningScript, OutsideARunTheCallerIsScript) {
  pts_controller *c = AbortController();
  Listen(pts_controller_signal(c), OnEventQueueing, "1");
  Listen(pts_controller_signal(c), OnEventQueueing, "2");
  pts_controller_abort(c, nullptr);
  EXPECT_EQ(Ids(), "1,2");
  Run();
  EXPECT_EQ(Ids(), "1,2,m1,m2");
}

// Every kind of callback the loop calls runs as script: listeners it fires
// run nested (no checkpoint between them), and its microtasks run when it
// returns, before the next callback. Each kind is checked on its own; a call
// site that skipped the wrapper would give "cb,l1,m,l2" (a checkpoint after
// the first nested listener) or leave "m" after "next".
TEST_F(CleanUpAfterRunningScript, PostTaskCallback) {
  ArmNested();
  Post([this] {
    NestedBody();
    return pts_undefined();
  });
  PostId("next", NoOpts());
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, DirectPostTaskCallback) {
  ArmNested();
  ASSERT_EQ(PostCb([this](int) { NestedBody(); }, nullptr), 0);
  PostId("next", NoOpts());
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, YieldContinuationCallback) {
  ArmNested();
  Post([this] {
    pts_yield_options o = YNone();
    EXPECT_EQ(YieldCb([this](int) { NestedBody(); }, &o), 0);
    return pts_undefined();
  });
  Run();
  PostId("next", NoOpts());
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, YieldContinuationAfterAwait) {
  ArmNested();
  Post([this] {
    Then(Yield(), [this](pts_value) {
      NestedBody();
      return pts_undefined();
    });
    return pts_undefined();
  });
  Run();
  PostId("next", NoOpts());
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, TimerCallback) {
  ArmNested();
  SetTimeout([this](int) { NestedBody(); }, 1);
  SetTimeout([this](int) { Push("next"); }, 1);
  Advance(1);
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, MessageCallback) {
  ArmNested();
  auto *fn = new StatusFn([this](int) { NestedBody(); });
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_MESSAGE, CallStatus, fn), 0);
  auto *next = new StatusFn([this](int) { Push("next"); });
  ASSERT_EQ(pts_queue_task(g, PTS_SOURCE_MESSAGE, CallStatus, next), 0);
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, CrossThreadMessageCallback) {
  ArmNested();
  auto *fn = new StatusFn([this](int) { NestedBody(); });
  ASSERT_EQ(pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, CallStatus, fn), 0);
  auto *next = new StatusFn([this](int) { Push("next"); });
  ASSERT_EQ(pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, CallStatus, next), 0);
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, CrossThreadRequestCallback) {
  ArmNested();
  pts_task_req req[2];
  auto *fn = new StatusFn([this](int) { NestedBody(); });
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &req[0],
                                               CallStatus, fn),
            0);
  auto *next = new StatusFn([this](int) { Push("next"); });
  ASSERT_EQ(pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &req[1],
                                               CallStatus, next),
            0);
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, LoopCallFromAnyThread) {
  ArmNested();
  auto *fn = new StatusFn([this](int) { NestedBody(); });
  ASSERT_EQ(pts_loop_call_from_any_thread(loop, CallStatus, fn), 0);
  auto *next = new StatusFn([this](int) { Push("next"); });
  ASSERT_EQ(pts_loop_call_from_any_thread(loop, CallStatus, next), 0);
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, IdleCallback) {
  ArmNested();
  auto idle = [](void *d, int status, const pts_idle_deadline *) {
    if (status == 0) static_cast<CleanUpAfterRunningScript *>(d)->NestedBody();
  };
  auto next = [](void *d, int status, const pts_idle_deadline *) {
    if (status == 0) static_cast<CleanUpAfterRunningScript *>(d)->Push("next");
  };
  ASSERT_EQ(pts_request_idle_callback(g, idle, this, 0, nullptr), 0);
  ASSERT_EQ(pts_request_idle_callback(g, next, this, 0, nullptr), 0);
  Run();
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

TEST_F(CleanUpAfterRunningScript, PromiseReaction) {
  // A reaction runs inside the checkpoint: the checkpoint is not re-entered,
  // so "m" runs after the reaction, still before "next".
  ArmNested();
  Post([this] {
    Then(Resolved(), [this](pts_value) {
      NestedBody();
      return pts_undefined();
    });
    return pts_undefined();
  });
  PostId("next", NoOpts());
  Run();
  EXPECT_EQ(Ids(), "cb,l1,l2,m,next");
}

}  // namespace
