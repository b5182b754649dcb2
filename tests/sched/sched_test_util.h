// tests/sched/sched_test_util.h: a fixture and small helpers that let the
// scheduler tests read like the WPT files they port: post a task with a C++
// lambda, chain reactions ("await"), record ids, and end every test with a
// leak check (the loop freed, no scheduler state, signal or controller left).
#ifndef PTSCHED_TESTS_SCHED_TEST_UTIL_H
#define PTSCHED_TESTS_SCHED_TEST_UTIL_H

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ptsched.h"
#include "sched/sched_internal.h"
#include "sched/signal_internal.h"

namespace ptstest {

using ValueFn = std::function<pts_value()>;
using ReactFn = std::function<pts_value(pts_value)>;
using StatusFn = std::function<void(int)>;

// Trampolines: the std::function lives on the heap until called once.
inline pts_value CallValue(void *d, int status) {
  auto *f = static_cast<ValueFn *>(d);
  pts_value v = status == 0 ? (*f)() : pts_undefined();
  delete f;
  return v;
}
inline void CallStatus(void *d, int status) {
  auto *f = static_cast<StatusFn *>(d);
  (*f)(status);
  delete f;
}
inline pts_value CallReact(void *d, pts_value arg) {
  return (*static_cast<ReactFn *>(d))(arg);
}
inline void DeleteReact(void *d) { delete static_cast<ReactFn *>(d); }
struct Handlers {
  ReactFn ok, err;
};
inline pts_value OnOk(void *d, pts_value v) {
  auto *h = static_cast<Handlers *>(d);
  return h->ok ? h->ok(v) : pts_value_copy(v);
}
inline pts_value OnErr(void *d, pts_value v) {
  return static_cast<Handlers *>(d)->err(v);
}
inline void DeleteHandlers(void *d) { delete static_cast<Handlers *>(d); }

inline pts_post_options Prio(int p) {
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = p;
  return o;
}
inline pts_post_options Sig(pts_signal *s) {
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.signal = s;
  return o;
}
inline pts_post_options NoOpts() {
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  return o;
}
inline pts_yield_options YNone() {
  pts_yield_options o = PTS_YIELD_OPTIONS_INIT;
  return o;
}
inline pts_yield_options YPrio(int p) {
  pts_yield_options o = PTS_YIELD_OPTIONS_INIT;
  o.priority = p;
  return o;
}
inline pts_yield_options YSig(pts_signal *s) {
  pts_yield_options o = PTS_YIELD_OPTIONS_INIT;
  o.signal = s;
  return o;
}
inline pts_yield_options YSigInherit() {
  pts_yield_options o = PTS_YIELD_OPTIONS_INIT;
  o.signal_inherit = 1;
  return o;
}

// A user thenable (value.h) whose then hook is a C++ function of the
// resolvers; *destroyed (if given) counts its release.
using ThenFn = std::function<pts_value(pts_resolvers *)>;
struct ThenBox {
  ThenFn fn;
  int *destroyed;
};
inline pts_value CallThen(void *d, pts_resolvers *r) { return static_cast<ThenBox *>(d)->fn(r); }
inline void DestroyThen(void *d) {
  auto *b = static_cast<ThenBox *>(d);
  if (b->destroyed) (*b->destroyed)++;
  delete b;
}
inline pts_value Thenable(ThenFn fn, int *destroyed = nullptr) {
  pts_value v = pts_thenable_value(CallThen, new ThenBox{std::move(fn), destroyed},
                                   DestroyThen);
  EXPECT_EQ(v.kind, PTS_VALUE_THENABLE);
  return v;
}

class SchedTest : public ::testing::Test {
 public:
  bool virtual_clock_ = true;

  void SetUp() override {
    pts_loop_options o{};
    o.virtual_clock = virtual_clock_;
    ASSERT_EQ(pts_loop_new(&o, &loop), 0);
    g = pts_loop_default_global(loop);
    s = pts_global_scheduler(g);
    ASSERT_NE(s, nullptr);
  }

  void TearDown() override {
    FreeLoop();
    EXPECT_EQ(pts__sched_live_states(), 0u);
    EXPECT_EQ(pts__signal_live_count(), 0u);
    EXPECT_EQ(pts__controller_live_count(), 0u);
  }

  // Drops the fixture's references, then frees the loop (releasing pending
  // work with PTS_ECANCELED).
  void FreeLoop() {
    for (pts_promise *p : promises) pts_promise_unref(p);
    promises.clear();
    for (pts_controller *c : controllers) pts_controller_unref(c);
    controllers.clear();
    for (pts_signal *sg : signals) pts_signal_unref(sg);
    signals.clear();
    if (loop) {
      ASSERT_EQ(pts_loop_free(loop), 0);
      loop = nullptr;
    }
  }

  // Runs the loop until nothing is runnable now.
  void Run() { ASSERT_GE(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0); }
  // Virtual clock: moves time by ms (running what becomes due).
  void Advance(uint64_t ms) { ASSERT_EQ(pts_loop_advance(loop, ms * 1000000u), 0); }

  pts__sched_stats Stats() {
    pts__sched_stats st{};
    pts__sched_get_stats(loop, &st);
    return st;
  }
  void ExpectNoLiveTasks() {
    pts__sched_stats st = Stats();
    EXPECT_EQ(st.live_tasks, 0u);
    EXPECT_EQ(st.live_queues, 0u);
    EXPECT_EQ(st.delayed_tasks, 0u);
  }

  pts_promise *Keep(pts_promise *p) {
    if (p) promises.push_back(p);
    return p;
  }

  // postTask(f, options): the promise (kept by the fixture) or nullptr on
  // error (rc gets the code).
  pts_promise *Post(ValueFn f, pts_post_options o, int *rc = nullptr,
                    pts_scheduler *on = nullptr) {
    pts_promise *p = nullptr;
    auto *fn = new ValueFn(std::move(f));
    int r = pts_scheduler_post_task(on ? on : s, CallValue, fn, &o, &p);
    if (rc) *rc = r;
    if (r != 0) {
      delete fn;
      return nullptr;
    }
    return Keep(p);
  }
  pts_promise *Post(ValueFn f) { return Post(std::move(f), NoOpts()); }

  // postTask(() => { ids.push(id) }, options)
  pts_promise *PostId(const std::string &id, pts_post_options o,
                      pts_scheduler *on = nullptr) {
    return Post(
        [this, id] {
          ids.push_back(id);
          return pts_undefined();
        },
        o, nullptr, on);
  }

  // Direct-callback form.
  int PostCb(StatusFn f, const pts_post_options *o, pts_scheduler *on = nullptr) {
    auto *fn = new StatusFn(std::move(f));
    int r = pts_scheduler_post_task_cb(on ? on : s, CallStatus, fn, o);
    if (r != 0) delete fn;
    return r;
  }

  pts_promise *Yield(const pts_yield_options *o, int *rc = nullptr,
                     pts_scheduler *on = nullptr) {
    pts_promise *p = nullptr;
    int r = pts_scheduler_yield(on ? on : s, o, &p);
    if (rc) *rc = r;
    if (r != 0) return nullptr;
    return Keep(p);
  }
  pts_promise *Yield() { return Yield(nullptr); }

  int YieldCb(StatusFn f, const pts_yield_options *o) {
    auto *fn = new StatusFn(std::move(f));
    int r = pts_scheduler_yield_cb(s, o, CallStatus, fn);
    if (r != 0) delete fn;
    return r;
  }

  // p.then(onFulfilled, onRejected); either may be empty (pass through).
  pts_promise *Then(pts_promise *p, ReactFn on_ok, ReactFn on_err = nullptr) {
    pts_promise *out = nullptr;
    auto *h = new Handlers{std::move(on_ok), std::move(on_err)};
    EXPECT_EQ(pts_promise_then(p, OnOk, h->err ? OnErr : nullptr, h,
                               DeleteHandlers, &out),
              0);
    return Keep(out);
  }

  // A pending promise and a way to resolve it later (Promise.withResolvers).
  pts_promise *NewPromise() {
    pts_promise *p = nullptr;
    EXPECT_EQ(pts_promise_new(loop, &p), 0);
    return Keep(p);
  }
  pts_promise *Resolved() {
    pts_promise *p = NewPromise();
    pts_promise_resolve(p, pts_undefined());
    return p;
  }
  // Promise.all(ps) as far as the WPT ports need it: fulfilled (with
  // undefined) once every one of ps is, rejected with the first rejection.
  pts_promise *All(const std::vector<pts_promise *> &ps) {
    pts_promise *all = NewPromise();
    auto left = std::make_shared<size_t>(ps.size());
    if (ps.empty()) pts_promise_resolve(all, pts_undefined());
    for (pts_promise *p : ps) {
      Then(
          p,
          [all, left](pts_value) {
            if (--*left == 0) pts_promise_resolve(all, pts_undefined());
            return pts_undefined();
          },
          [all](pts_value e) {
            pts_promise_reject(all, pts_value_copy(e));
            return pts_undefined();
          });
    }
    return all;
  }
  // await Promise.all(tasks), checked after the loop ran: every one fulfilled.
  static void ExpectAllFulfilled(const std::vector<pts_promise *> &ps) {
    for (size_t i = 0; i < ps.size(); i++) EXPECT_TRUE(Fulfilled(ps[i])) << "task " << i;
  }

  // new TaskController({priority}): the controller (kept) and its signal.
  pts_controller *TaskController(int priority = PTS_PRIORITY_USER_VISIBLE) {
    pts_controller *c = nullptr;
    EXPECT_EQ(pts_task_controller_new(loop, priority, &c), 0);
    controllers.push_back(c);
    return c;
  }
  pts_controller *AbortController() {
    pts_controller *c = nullptr;
    EXPECT_EQ(pts_abort_controller_new(loop, &c), 0);
    controllers.push_back(c);
    return c;
  }
  pts_signal *KeepSignal(pts_signal *sg) {
    signals.push_back(sg);
    return sg;
  }
  // TaskSignal.any([], {priority}) and TaskSignal.any([], {priority: signal}).
  pts_signal *AnyFixed(int priority) {
    pts_task_signal_any_init init = PTS_TASK_SIGNAL_ANY_INIT;
    init.priority = priority;
    pts_signal *out = nullptr;
    EXPECT_EQ(pts_task_signal_any(loop, nullptr, 0, &init, &out), 0);
    return KeepSignal(out);
  }
  pts_signal *AnyFrom(pts_signal *source) {
    pts_task_signal_any_init init = PTS_TASK_SIGNAL_ANY_INIT;
    init.priority_source = source;
    pts_signal *out = nullptr;
    EXPECT_EQ(pts_task_signal_any(loop, nullptr, 0, &init, &out), 0);
    return KeepSignal(out);
  }

  // setTimeout(f, ms) as a task on the timer source.
  void SetTimeout(StatusFn f, uint64_t ms = 0) {
    auto *fn = new StatusFn(std::move(f));
    EXPECT_EQ(pts_timer_start(g, ms, CallStatus, fn, nullptr), 0);
  }
  // new Promise(resolve => setTimeout(resolve, ms))
  pts_promise *TimeoutPromise(uint64_t ms = 0) {
    pts_promise *p = NewPromise();
    pts_promise_ref(p);
    SetTimeout(
        [p](int status) {
          if (status == 0) pts_promise_resolve(p, pts_undefined());
          pts_promise_unref(p);
        },
        ms);
    return p;
  }
  // A task on another source resolving a promise (stands for fetch()).
  pts_promise *MessagePromise() {
    pts_promise *p = NewPromise();
    pts_promise_ref(p);
    auto *fn = new StatusFn([p](int status) {
      if (status == 0) pts_promise_resolve(p, pts_undefined());
      pts_promise_unref(p);
    });
    EXPECT_EQ(pts_queue_task(g, PTS_SOURCE_MESSAGE, CallStatus, fn), 0);
    return p;
  }
  void QueueMicrotask(StatusFn f) {
    auto *fn = new StatusFn(std::move(f));
    EXPECT_EQ(pts_queue_microtask(loop, CallStatus, fn), 0);
  }

  // "ids.push(id)" as a reaction.
  ReactFn PushR(const std::string &id) {
    return [this, id](pts_value) {
      ids.push_back(id);
      return pts_undefined();
    };
  }
  void Push(const std::string &id) { ids.push_back(id); }

  std::string Ids() const {
    std::string r;
    for (size_t i = 0; i < ids.size(); i++) r += (i ? "," : "") + ids[i];
    return r;
  }

  static bool Fulfilled(pts_promise *p) {
    return pts_promise_get_state(p) == PTS_PROMISE_FULFILLED;
  }
  static bool RejectedWith(pts_promise *p, int code) {
    return pts_promise_get_state(p) == PTS_PROMISE_REJECTED &&
           pts_value_is_error(pts_promise_get_result(p), code);
  }

  pts_loop *loop = nullptr;
  pts_global *g = nullptr;
  pts_scheduler *s = nullptr;
  std::vector<std::string> ids;
  std::vector<pts_promise *> promises;
  std::vector<pts_controller *> controllers;
  std::vector<pts_signal *> signals;
};

}  // namespace ptstest

#endif  // PTSCHED_TESTS_SCHED_TEST_UTIL_H
