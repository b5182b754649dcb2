// tests/catalogue/bad_input_test.cc: the bad-input catalogue of
// docs/reliability.md, one test per row (or per small group of rows of one
// function). Each checks what the caller gets, that a failed call changed
// nothing and called nothing, and (in the fixture) that nothing leaked:
// controllers, signals and scheduling states are counted by the library,
// memory by LSan under --config=asan.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "ptsched.h"
#include "sched/sched_internal.h"
#include "sched/signal_internal.h"

namespace {

class Catalogue : public ::testing::Test {
 protected:
  void SetUp() override {
    controllers_ = pts__controller_live_count();
    signals_ = pts__signal_live_count();
    states_ = pts__sched_live_states();
    pts_loop_options o;
    memset(&o, 0, sizeof o);
    o.virtual_clock = true;
    ASSERT_EQ(0, pts_loop_new(&o, &loop));
    g = pts_loop_default_global(loop);
    s = pts_global_scheduler(g);
  }
  void TearDown() override {
    if (loop) {
      EXPECT_EQ(0, pts_loop_free(loop));
    }
    EXPECT_EQ(controllers_, pts__controller_live_count()) << "controller leaked";
    EXPECT_EQ(signals_, pts__signal_live_count()) << "signal leaked";
    EXPECT_EQ(states_, pts__sched_live_states()) << "scheduling state leaked";
  }
  // A one-thread pool (strict policy) with one agent on it.
  void OneThreadPoolWithAnAgent(pts_pool **pool, pts_agent **a) {
    pts_pool_options po;
    memset(&po, 0, sizeof po);
    po.threads = 1;
    ASSERT_EQ(0, pts_pool_new(&po, pool));
    ASSERT_EQ(0, pts_agent_new(*pool, nullptr, a));
  }
  pts_loop *loop = nullptr;
  pts_global *g = nullptr;
  pts_scheduler *s = nullptr;
  size_t controllers_ = 0, signals_ = 0;
  uint64_t states_ = 0;
};

// Counts calls and remembers the last status.
struct Count {
  int calls = 0;
  int status = 1;
};
void CountFn(void *d, int status) {
  auto *c = static_cast<Count *>(d);
  c->calls++;
  c->status = status;
}
pts_value CountCb(void *d, int status) {
  CountFn(d, status);
  return pts_undefined();
}
void CountListener(void *d, const pts_event *) { static_cast<Count *>(d)->calls++; }
void CountIdle(void *d, int status, const pts_idle_deadline *) { CountFn(d, status); }

// ---- common.h ----

TEST_F(Catalogue, ErrorNamesOfUnknownCodes) {
  EXPECT_STREQ("unknown error", pts_strerror(12345));
  EXPECT_STREQ("unknown error", pts_strerror(-9999));
  EXPECT_STREQ("PTS_UNKNOWN", pts_err_name(-9999));
  EXPECT_EQ(nullptr, pts_err_dom_name(PTS_EINVAL));
  EXPECT_EQ(nullptr, pts_err_dom_name(-9999));
}

TEST_F(Catalogue, PriorityNamesOutOfRangeAndUnknown) {
  EXPECT_EQ(nullptr, pts_priority_name(3));
  EXPECT_EQ(nullptr, pts_priority_name(-1));
  pts_priority p = PTS_PRIORITY_BACKGROUND;
  EXPECT_EQ(PTS_ETYPE, pts_priority_parse("urgent", &p));
  EXPECT_EQ(PTS_ETYPE, pts_priority_parse("", &p));
  EXPECT_EQ(PTS_ETYPE, pts_priority_parse("User-Blocking", &p));
  EXPECT_EQ(PTS_ETYPE, pts_priority_parse(nullptr, &p));
  EXPECT_EQ(PTS_ETYPE, pts_priority_parse("background", nullptr));
  EXPECT_EQ(PTS_PRIORITY_BACKGROUND, p) << "a failed parse wrote its output";
}

// ---- value.h ----

TEST_F(Catalogue, ErrorAccessorsOnNonErrorValues) {
  EXPECT_EQ(0, pts_error_code(pts_int(3)));
  EXPECT_EQ(nullptr, pts_error_name(pts_int(3)));
  EXPECT_EQ(nullptr, pts_error_message(pts_undefined()));
  EXPECT_FALSE(pts_value_is_error(pts_int(3), PTS_EABORT));
  EXPECT_EQ(nullptr, pts_value_pointer(pts_int(3)));
  pts_value_release(pts_undefined());  // no-op
  pts_value_release(pts_double(NAN));  // no-op
  pts_value e = pts_error_value(-9999, nullptr);  // unknown code: still a value
  EXPECT_EQ(PTS_VALUE_ERROR, e.kind);
  pts_value_release(e);
}

TEST_F(Catalogue, ValueCopySameAndBoxOnPlainUnknownAndNaNValues) {
  // Plain kinds: copy returns the value as it is, release is a no-op.
  pts_value plain[] = {pts_undefined(), pts_int(-1), pts_double(NAN), pts_ptr(nullptr)};
  for (const pts_value &v : plain) {
    pts_value c = pts_value_copy(v);
    EXPECT_EQ(v.kind, c.kind);
    EXPECT_EQ(0, memcmp(&v.u, &c.u, sizeof v.u));
    pts_value_release(c);
  }
  // An unknown kind (hand-built): copied as it is, released as a no-op,
  // never the same as anything (not even itself).
  // Set and read through memcpy: 8 is past PTS_VALUE_THENABLE and outside
  // the C++ enum's range, so the test never loads it as the enum (UBSan).
  pts_value unknown;
  const int kUnknownKind = 8;
  memcpy(&unknown.kind, &kUnknownKind, sizeof kUnknownKind);
  unknown.u.i = 7;
  pts_value uc = pts_value_copy(unknown);
  int uc_kind;
  memcpy(&uc_kind, &uc.kind, sizeof uc_kind);
  EXPECT_EQ(kUnknownKind, uc_kind);
  EXPECT_EQ(7, uc.u.i);
  pts_value_release(uc);
  EXPECT_FALSE(pts_value_same(unknown, unknown));
  EXPECT_EQ(0, pts_error_code(unknown));
  EXPECT_EQ(nullptr, pts_value_pointer(unknown));
  // Different kinds are never the same, even with equal payloads.
  EXPECT_FALSE(pts_value_same(pts_int(0), pts_undefined()));
  EXPECT_FALSE(pts_value_same(pts_int(0), pts_ptr(nullptr)));
  // Doubles compare as Number::sameValue (found by the catalogue: they were
  // compared with ==): NaN is the same as NaN, +0 is not the same as -0.
  EXPECT_TRUE(pts_value_same(pts_double(NAN), pts_double(NAN)));
  EXPECT_FALSE(pts_value_same(pts_double(0.0), pts_double(-0.0)));
  EXPECT_TRUE(pts_value_same(pts_double(-0.0), pts_double(-0.0)));
  EXPECT_TRUE(pts_value_same(pts_double(1.5), pts_double(1.5)));
  EXPECT_FALSE(pts_value_same(pts_double(NAN), pts_double(1.5)));
  // A box of NULL with no destructor: a box value, pointer NULL, released
  // without calling anything.
  pts_value b = pts_box_value(nullptr, nullptr);
  ASSERT_EQ(PTS_VALUE_BOX, b.kind);
  EXPECT_EQ(nullptr, pts_value_pointer(b));
  pts_value b2 = pts_value_copy(b);
  EXPECT_TRUE(pts_value_same(b, b2));
  pts_value_release(b2);
  pts_value_release(b);
}

// ---- version.h ----

TEST_F(Catalogue, VersionFunctionsTakeNoInput) {
  // Nothing to pass wrong: the same answer on every thread.
  const char *v = pts_version_string();
  ASSERT_NE(nullptr, v);
  EXPECT_STREQ(PTS_VERSION_STRING, v);
  EXPECT_EQ((unsigned)PTS_VERSION_NUMBER, pts_version());
  const char *other = nullptr;
  unsigned num = 0;
  std::thread([&] {
    other = pts_version_string();
    num = pts_version();
  }).join();
  EXPECT_EQ(v, other);
  EXPECT_EQ((unsigned)PTS_VERSION_NUMBER, num);
}

// ---- loop.h: the loop ----

TEST_F(Catalogue, LoopNullArguments) {
  EXPECT_EQ(PTS_EINVAL, pts_loop_new(nullptr, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_loop_free(nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_loop_run(nullptr, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(PTS_EINVAL, pts_loop_stop(nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_loop_advance(nullptr, 1));
  EXPECT_EQ(PTS_EINVAL, pts_global_new(nullptr, &g));
  pts_global *unset = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_global_new(loop, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_global_new(nullptr, &unset));
  EXPECT_EQ(nullptr, unset);
  EXPECT_EQ(PTS_EINVAL, pts_global_set_active(nullptr, false));
  EXPECT_EQ(PTS_EINVAL, pts_global_detach(nullptr));
}

TEST_F(Catalogue, LoopRunUnknownMode) {
  EXPECT_EQ(PTS_EINVAL, pts_loop_run(loop, (pts_run_mode)3));
  EXPECT_EQ(PTS_EINVAL, pts_loop_run(loop, (pts_run_mode)-1));
}

TEST_F(Catalogue, LoopAndGlobalAccessorsOnNull) {
  EXPECT_EQ(nullptr, pts_loop_default_global(nullptr));
  EXPECT_EQ(0u, pts_loop_now(nullptr));
  EXPECT_FALSE(pts_global_is_active(nullptr));
  EXPECT_FALSE(pts_global_is_detached(nullptr));
  EXPECT_EQ(nullptr, pts_global_loop(nullptr));
  EXPECT_EQ(nullptr, pts_global_scheduler(nullptr));
  // From a foreign thread the scheduler is refused (debug builds: a report
  // on stderr); the loop accessor is any-thread.
  pts_scheduler *foreign = s;
  pts_loop *gl = nullptr;
  std::thread([&] {
    foreign = pts_global_scheduler(g);
    gl = pts_global_loop(g);
  }).join();
#ifndef NDEBUG
  EXPECT_EQ(nullptr, foreign);
#endif
  EXPECT_EQ(loop, gl);
  EXPECT_EQ(s, pts_global_scheduler(g)) << "the owner still gets the same scheduler";
  EXPECT_TRUE(pts_global_is_active(g));
  EXPECT_FALSE(pts_global_is_detached(g));
}

struct Reentry {
  pts_loop *loop;
  int run = 1, adv = 1, free_ = 1;
};

TEST_F(Catalogue, LoopRunFreeAdvanceInsideACallbackAreBusy) {
  Reentry r{loop};
  ASSERT_EQ(0, pts_queue_task(g, PTS_SOURCE_GENERIC, [](void *d, int st) {
    if (st) return;
    auto *r = static_cast<Reentry *>(d);
    r->run = pts_loop_run(r->loop, PTS_RUN_UNTIL_IDLE);
    r->adv = pts_loop_advance(r->loop, 1);
    r->free_ = pts_loop_free(r->loop);
  }, &r));
  EXPECT_EQ(1, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(PTS_EBUSY, r.run);
  EXPECT_EQ(PTS_EBUSY, r.adv);
  EXPECT_EQ(PTS_EBUSY, r.free_);
}

TEST_F(Catalogue, AdvanceOnARealClockLoop) {
  pts_loop *real;
  ASSERT_EQ(0, pts_loop_new(nullptr, &real));
  EXPECT_EQ(PTS_EINVAL, pts_loop_advance(real, 1));
  EXPECT_EQ(0, pts_loop_free(real));
}

TEST_F(Catalogue, AdvanceByAHugeDeltaSaturates) {
  Count c;
  uint64_t id;
  ASSERT_EQ(0, pts_timer_start(g, UINT64_MAX, CountFn, &c, &id));
  EXPECT_EQ(0, pts_loop_advance(loop, UINT64_MAX));
  EXPECT_EQ(UINT64_MAX, pts_loop_now(loop));
  EXPECT_EQ(0, pts_loop_advance(loop, UINT64_MAX));  // still saturated
  EXPECT_EQ(UINT64_MAX, pts_loop_now(loop));
  EXPECT_EQ(0, c.calls) << "a saturated (never) timer fired";
  EXPECT_EQ(0, pts_timer_cancel(g, id));
}

// ---- loop.h: tasks, microtasks, timers, idle callbacks ----

TEST_F(Catalogue, QueueTaskBadArguments) {
  Count c;
  EXPECT_EQ(PTS_EINVAL, pts_queue_task(nullptr, PTS_SOURCE_GENERIC, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task(g, PTS_SOURCE_COUNT, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task(g, (pts_task_source)-1, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task(g, PTS_SOURCE_GENERIC, nullptr, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task_from_any_thread(nullptr, PTS_SOURCE_GENERIC, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task_from_any_thread(g, PTS_SOURCE_COUNT, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_loop_call_from_any_thread(nullptr, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_loop_call_from_any_thread(loop, nullptr, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_microtask(nullptr, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_microtask(loop, nullptr, &c));
  EXPECT_EQ(0, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(0, c.calls);
}

TEST_F(Catalogue, QueueTaskReqBadArgumentsLeaveTheRequestUntouched) {
  Count c;
  pts_task_req *req = static_cast<pts_task_req *>(aligned_alloc(64, sizeof(pts_task_req)));
  ASSERT_NE(nullptr, req);
  memset(req, 0xA5, sizeof *req);
  pts_task_req before;
  memcpy(&before, req, sizeof before);
  EXPECT_EQ(PTS_EINVAL, pts_queue_task_req_from_any_thread(nullptr, PTS_SOURCE_GENERIC, req, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task_req_from_any_thread(g, PTS_SOURCE_GENERIC, nullptr, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task_req_from_any_thread(g, PTS_SOURCE_GENERIC, req, nullptr, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task_req_from_any_thread(g, PTS_SOURCE_COUNT, req, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_queue_task_req_from_any_thread(g, (pts_task_source)-1, req, CountFn, &c));
  int rc = 1;
  std::thread([&] {
    rc = pts_queue_task_req_from_any_thread(g, (pts_task_source)99, req, CountFn, &c);
  }).join();
  EXPECT_EQ(PTS_EINVAL, rc);
  EXPECT_EQ(0, memcmp(&before, req, sizeof before)) << "a refused request was written";
  EXPECT_EQ(0, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(0, c.calls);
  free(req);
}

TEST_F(Catalogue, IdleDeadlineFunctionsOnNull) {
  // NULL (what an idle callback gets with a non-zero status): 0 and false.
  EXPECT_EQ(0u, pts_idle_time_remaining(nullptr));
  EXPECT_FALSE(pts_idle_did_timeout(nullptr));
  // A cancelled request's callback is never called, so it never sees a
  // deadline; a released one gets NULL.
  struct Seen {
    int calls = 0, status = 1;
    const pts_idle_deadline *d = reinterpret_cast<const pts_idle_deadline *>(1);
  } seen;
  pts_global *g2;
  ASSERT_EQ(0, pts_global_new(loop, &g2));
  ASSERT_EQ(0, pts_request_idle_callback(g2, [](void *p, int st, const pts_idle_deadline *d) {
    auto *s = static_cast<Seen *>(p);
    s->calls++;
    s->status = st;
    s->d = d;
    EXPECT_EQ(0u, pts_idle_time_remaining(d));
    EXPECT_FALSE(pts_idle_did_timeout(d));
  }, &seen, 0, nullptr));
  EXPECT_EQ(0, pts_global_detach(g2));
  EXPECT_EQ(1, seen.calls);
  EXPECT_EQ(PTS_ECANCELED, seen.status);
  EXPECT_EQ(nullptr, seen.d);
}

struct Captured {
  pts_loop *loop;
  pts_sched_state *st = nullptr;
};

TEST_F(Catalogue, SchedulingStateFunctionsOnNull) {
  EXPECT_EQ(nullptr, pts_loop_capture_state(nullptr));
  pts_loop_leave_state(nullptr);         // no-op
  pts_sched_state_unref(nullptr);        // no-op
  pts_loop_enter_state(nullptr, nullptr);  // no-op
  // A real state (captured inside a scheduler task), entered on a NULL loop:
  // nothing changes, the reference stays the caller's.
  Captured cap{loop};
  ASSERT_EQ(0, pts_scheduler_post_task_cb(s, [](void *d, int st) {
    if (st) return;
    auto *c = static_cast<Captured *>(d);
    c->st = pts_loop_capture_state(c->loop);
  }, &cap, nullptr));
  EXPECT_EQ(1, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  ASSERT_NE(nullptr, cap.st);
  EXPECT_EQ(nullptr, pts_loop_capture_state(loop)) << "no current state outside a task";
  pts_loop_enter_state(nullptr, cap.st);
  EXPECT_EQ(nullptr, pts_loop_capture_state(loop)) << "entering on NULL changed the loop";
  // From a foreign thread (debug builds: refused with a report on stderr).
  pts_sched_state *foreign = reinterpret_cast<pts_sched_state *>(1);
  std::thread([&] {
    pts_loop_enter_state(loop, cap.st);
    foreign = pts_loop_capture_state(loop);
    pts_loop_leave_state(loop);
  }).join();
#ifndef NDEBUG
  EXPECT_EQ(nullptr, foreign);
  EXPECT_EQ(nullptr, pts_loop_capture_state(loop)) << "a foreign enter changed the loop";
#else
  pts_sched_state_unref(foreign);
#endif
  pts_sched_state_unref(cap.st);
}

TEST_F(Catalogue, WorkOnADetachedGlobal) {
  pts_global *g2;
  ASSERT_EQ(0, pts_global_new(loop, &g2));
  pts_scheduler *s2 = pts_global_scheduler(g2);
  Count pending;
  ASSERT_EQ(0, pts_queue_task(g2, PTS_SOURCE_GENERIC, CountFn, &pending));
  EXPECT_EQ(0, pts_global_detach(g2));
  EXPECT_EQ(1, pending.calls);
  EXPECT_EQ(PTS_ECANCELED, pending.status);
  EXPECT_EQ(0, pts_global_detach(g2)) << "second detach is a no-op";
  Count c;
  EXPECT_EQ(PTS_ECLOSED, pts_queue_task(g2, PTS_SOURCE_GENERIC, CountFn, &c));
  EXPECT_EQ(PTS_ECLOSED, pts_timer_start(g2, 1, CountFn, &c, nullptr));
  EXPECT_EQ(PTS_ECLOSED, pts_request_idle_callback(g2, CountIdle, &c, 0, nullptr));
  pts_signal *t;
  EXPECT_EQ(PTS_ECLOSED, pts_signal_timeout_new(g2, 1, &t));
  pts_promise *p = nullptr;
  EXPECT_EQ(PTS_ECLOSED, pts_scheduler_post_task(s2, CountCb, &c, nullptr, &p));
  EXPECT_EQ(nullptr, p);
  EXPECT_EQ(PTS_ECLOSED, pts_scheduler_post_task_cb(s2, CountFn, &c, nullptr));
  EXPECT_EQ(PTS_ENOTSUPPORTED, pts_scheduler_yield(s2, nullptr, &p));
  EXPECT_EQ(PTS_ENOTSUPPORTED, pts_scheduler_yield_cb(s2, nullptr, CountFn, &c));
  // From another thread: accepted, then released with PTS_ECANCELED.
  int rc = -1;
  std::thread([&] { rc = pts_queue_task_from_any_thread(g2, PTS_SOURCE_GENERIC, CountFn, &c); }).join();
  if (rc == 0) {
    EXPECT_EQ(0, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
    EXPECT_EQ(1, c.calls);
    EXPECT_EQ(PTS_ECANCELED, c.status);
  } else {
    EXPECT_EQ(PTS_ECLOSED, rc);
    EXPECT_EQ(0, c.calls);
  }
}

TEST_F(Catalogue, TimerBadArgumentsAndUnknownIds) {
  Count c;
  EXPECT_EQ(PTS_EINVAL, pts_timer_start(nullptr, 1, CountFn, &c, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_timer_start(g, 1, nullptr, &c, nullptr));
  EXPECT_EQ(PTS_ENOTFOUND, pts_timer_cancel(g, 0));
  EXPECT_EQ(PTS_ENOTFOUND, pts_timer_cancel(g, 987654321));
  EXPECT_EQ(PTS_EINVAL, pts_timer_cancel(nullptr, 1));
  uint64_t id;
  ASSERT_EQ(0, pts_timer_start(g, 5, CountFn, &c, &id));
  EXPECT_EQ(0, pts_timer_cancel(g, id));
  EXPECT_EQ(PTS_ENOTFOUND, pts_timer_cancel(g, id)) << "double cancel";
  ASSERT_EQ(0, pts_timer_start(g, 1, CountFn, &c, &id));
  EXPECT_EQ(0, pts_loop_advance(loop, 2000000));
  EXPECT_EQ(1, c.calls);
  EXPECT_EQ(PTS_ENOTFOUND, pts_timer_cancel(g, id)) << "cancel after it ran";
}

TEST_F(Catalogue, IdleCallbackBadArgumentsAndUnknownIds) {
  Count c;
  EXPECT_EQ(PTS_EINVAL, pts_request_idle_callback(nullptr, CountIdle, &c, 0, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_request_idle_callback(g, nullptr, &c, 0, nullptr));
  EXPECT_EQ(PTS_ENOTFOUND, pts_cancel_idle_callback(g, 987654321));
  EXPECT_EQ(PTS_EINVAL, pts_cancel_idle_callback(nullptr, 1));
  uint64_t id;
  ASSERT_EQ(0, pts_request_idle_callback(g, CountIdle, &c, 0, &id));
  EXPECT_EQ(0, pts_cancel_idle_callback(g, id));
  EXPECT_EQ(PTS_ENOTFOUND, pts_cancel_idle_callback(g, id)) << "double cancel";
  EXPECT_EQ(0, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(0, c.calls);
}

TEST_F(Catalogue, ForeignThreadCallsAreRefused) {
  Count c;
  int q = 0, m = 0, t = 0, post = 0, ab = 0;
  pts_controller *ctl;
  ASSERT_EQ(0, pts_abort_controller_new(loop, &ctl));
  std::thread([&] {
    q = pts_queue_task(g, PTS_SOURCE_GENERIC, CountFn, &c);
    m = pts_queue_microtask(loop, CountFn, &c);
    t = pts_timer_start(g, 1, CountFn, &c, nullptr);
    post = pts_scheduler_post_task_cb(s, CountFn, &c, nullptr);
    ab = pts_controller_abort(ctl, nullptr);
  }).join();
#ifndef NDEBUG
  EXPECT_EQ(PTS_EFOREIGN, q);
  EXPECT_EQ(PTS_EFOREIGN, m);
  EXPECT_EQ(PTS_EFOREIGN, t);
  EXPECT_EQ(PTS_EFOREIGN, post);
  EXPECT_EQ(PTS_EFOREIGN, ab);
#endif
  EXPECT_FALSE(pts_signal_aborted(pts_controller_signal(ctl)));
  EXPECT_EQ(0, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(0, c.calls);
  pts_controller_unref(ctl);
}

// ---- promise.h ----

int box_freed = 0;
void FreeBox(void *) { box_freed++; }

TEST_F(Catalogue, PromiseBadArguments) {
  pts_promise *p;
  EXPECT_EQ(PTS_EINVAL, pts_promise_new(nullptr, &p));
  EXPECT_EQ(PTS_EINVAL, pts_promise_new(loop, nullptr));
  box_freed = 0;
  // resolve/reject with NULL take over the value anyway: no leak.
  EXPECT_EQ(PTS_EINVAL, pts_promise_resolve(nullptr, pts_box_value(nullptr, FreeBox)));
  EXPECT_EQ(PTS_EINVAL, pts_promise_reject(nullptr, pts_box_value(nullptr, FreeBox)));
  EXPECT_EQ(2, box_freed);
  EXPECT_EQ(PTS_EINVAL, pts_promise_then(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_promise_catch(nullptr, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_promise_finally(nullptr, nullptr, nullptr, nullptr, nullptr));
}

TEST_F(Catalogue, PromiseResolvedTwiceOrWithItself) {
  pts_promise *p;
  ASSERT_EQ(0, pts_promise_new(loop, &p));
  EXPECT_EQ(0, pts_promise_resolve(p, pts_int(1)));
  EXPECT_EQ(0, pts_promise_resolve(p, pts_int(2)));  // ignored
  EXPECT_EQ(0, pts_promise_reject(p, pts_error_value(PTS_EERROR, "late")));
  EXPECT_EQ(PTS_PROMISE_FULFILLED, pts_promise_get_state(p));
  EXPECT_EQ(1, pts_promise_get_result(p).u.i);
  pts_promise *q;
  ASSERT_EQ(0, pts_promise_new(loop, &q));
  EXPECT_EQ(0, pts_promise_resolve(q, pts_promise_value(q)));
  EXPECT_EQ(0, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(PTS_PROMISE_REJECTED, pts_promise_get_state(q));
  EXPECT_TRUE(pts_value_is_error(pts_promise_get_result(q), PTS_ETYPE));
  pts_promise_unref(p);
  pts_promise_unref(q);
}

TEST_F(Catalogue, PromiseAccessorsOnNull) {
  pts_promise_ref(nullptr);    // no-op
  pts_promise_unref(nullptr);  // no-op
  EXPECT_EQ(PTS_PROMISE_PENDING, pts_promise_get_state(nullptr));
  EXPECT_EQ(PTS_VALUE_UNDEFINED, pts_promise_get_result(nullptr).kind);
  EXPECT_EQ(nullptr, pts_promise_get_loop(nullptr));
  // The header does not say: a promise-kind value holding NULL, whose
  // release is a no-op.
  pts_value v = pts_promise_value(nullptr);
  EXPECT_EQ(PTS_VALUE_PROMISE, v.kind);
  EXPECT_EQ(nullptr, v.u.promise);
  pts_value_release(v);
}

// ---- signal.h ----

TEST_F(Catalogue, ControllersBadArguments) {
  pts_controller *c = nullptr;
  EXPECT_EQ(PTS_ETYPE, pts_task_controller_new(loop, 3, &c));
  EXPECT_EQ(PTS_ETYPE, pts_task_controller_new(loop, -1, &c));
  EXPECT_EQ(PTS_ETYPE, pts_task_controller_new(loop, PTS_PRIORITY_INHERIT, &c));
  EXPECT_EQ(nullptr, c);
  EXPECT_EQ(PTS_EINVAL, pts_abort_controller_new(nullptr, &c));
  EXPECT_EQ(PTS_EINVAL, pts_abort_controller_new(loop, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_controller_abort(nullptr, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_controller_set_priority(nullptr, 1));
  EXPECT_EQ(nullptr, pts_controller_signal(nullptr));
  pts_controller_unref(nullptr);  // no-op
  pts_controller_ref(nullptr);    // no-op
}

TEST_F(Catalogue, DoubleAbortFiresOnceAndKeepsTheFirstReason) {
  pts_controller *c;
  ASSERT_EQ(0, pts_abort_controller_new(loop, &c));
  pts_signal *sig = pts_controller_signal(c);
  Count ev;
  ASSERT_EQ(0, pts_signal_add_listener(sig, PTS_EVENT_ABORT, CountListener, &ev, false));
  pts_value r1 = pts_int(1), r2 = pts_int(2);
  EXPECT_EQ(0, pts_controller_abort(c, &r1));
  EXPECT_EQ(0, pts_controller_abort(c, &r2));
  EXPECT_EQ(0, pts_controller_abort(c, nullptr));
  EXPECT_EQ(1, ev.calls);
  EXPECT_EQ(1, pts_signal_reason(sig).u.i);
  pts_controller_unref(c);
}

struct PcReentry {
  pts_controller *c;
  int inner = 1, same = 1, calls = 0;
};

TEST_F(Catalogue, SetPriorityBadValuesAndInsideItsOwnPriorityChange) {
  pts_controller *ac, *tc;
  ASSERT_EQ(0, pts_abort_controller_new(loop, &ac));
  ASSERT_EQ(0, pts_task_controller_new(loop, PTS_PRIORITY_BACKGROUND, &tc));
  EXPECT_EQ(PTS_EINVAL, pts_controller_set_priority(ac, 1)) << "AbortController";
  EXPECT_EQ(PTS_EINVAL, pts_controller_set_priority(ac, 9)) << "AbortController first";
  EXPECT_EQ(PTS_ETYPE, pts_controller_set_priority(tc, 3));
  EXPECT_EQ(PTS_ETYPE, pts_controller_set_priority(tc, -1));
  EXPECT_EQ(PTS_ETYPE, pts_controller_set_priority(tc, PTS_PRIORITY_INHERIT));
  EXPECT_EQ(PTS_PRIORITY_BACKGROUND, pts_signal_priority(pts_controller_signal(tc)));
  PcReentry r{tc};
  ASSERT_EQ(0, pts_signal_add_listener(pts_controller_signal(tc), PTS_EVENT_PRIORITYCHANGE,
                                       [](void *d, const pts_event *) {
                                         auto *r = static_cast<PcReentry *>(d);
                                         r->calls++;
                                         r->inner = pts_controller_set_priority(r->c, 0);
                                         r->same = pts_controller_set_priority(r->c, 2);
                                       },
                                       &r, false));
  EXPECT_EQ(0, pts_controller_set_priority(tc, 2));
  EXPECT_EQ(1, r.calls);
  EXPECT_EQ(PTS_ENOTALLOWED, r.inner);
  EXPECT_EQ(PTS_ENOTALLOWED, r.same) << "spec: NotAllowedError before the equality check";
  EXPECT_EQ(0, pts_controller_set_priority(tc, 2)) << "same priority: no event";
  EXPECT_EQ(1, r.calls);
  pts_controller_unref(ac);
  pts_controller_unref(tc);
}

TEST_F(Catalogue, AnyBadSignalLists) {
  pts_controller *c;
  ASSERT_EQ(0, pts_abort_controller_new(loop, &c));
  pts_signal *list[2] = {pts_controller_signal(c), nullptr};
  pts_signal *out = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_signal_any(loop, list, 2, &out));
  EXPECT_EQ(PTS_EINVAL, pts_signal_any(nullptr, list, 1, &out));
  EXPECT_EQ(PTS_EINVAL, pts_signal_any(loop, list, 1, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_signal_any(loop, nullptr, 1, &out));
  EXPECT_EQ(PTS_EINVAL, pts_task_signal_any(loop, nullptr, 1, nullptr, &out));
  pts_task_signal_any_init init = PTS_TASK_SIGNAL_ANY_INIT;
  EXPECT_EQ(PTS_EINVAL, pts_task_signal_any(loop, list, 2, &init, &out));
  init.priority = 7;
  EXPECT_EQ(PTS_ETYPE, pts_task_signal_any(loop, list, 1, &init, &out));
  init.priority = PTS_PRIORITY_USER_VISIBLE;
  init.priority_source = pts_controller_signal(c);  // an AbortSignal
  EXPECT_EQ(PTS_ETYPE, pts_task_signal_any(loop, list, 1, &init, &out));
  EXPECT_EQ(nullptr, out);
  // A signal of another loop.
  pts_loop *other;
  ASSERT_EQ(0, pts_loop_new(nullptr, &other));
  pts_controller *oc;
  ASSERT_EQ(0, pts_abort_controller_new(other, &oc));
  pts_signal *foreign[1] = {pts_controller_signal(oc)};
  EXPECT_EQ(PTS_EFOREIGN, pts_signal_any(loop, foreign, 1, &out));
  init.priority_source = nullptr;
  EXPECT_EQ(PTS_EFOREIGN, pts_task_signal_any(loop, foreign, 1, &init, &out));
  EXPECT_EQ(nullptr, out);
  // n = 0: a signal that never aborts.
  ASSERT_EQ(0, pts_signal_any(loop, nullptr, 0, &out));
  EXPECT_FALSE(pts_signal_aborted(out));
  pts_signal_unref(out);
  pts_controller_unref(oc);
  EXPECT_EQ(0, pts_loop_free(other));
  pts_controller_unref(c);
}

TEST_F(Catalogue, SignalFactoriesAndQueriesBadArguments) {
  pts_signal *out = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_signal_timeout_new(nullptr, 1, &out));
  EXPECT_EQ(PTS_EINVAL, pts_signal_timeout_new(g, 1, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_signal_abort_new(nullptr, nullptr, &out));
  EXPECT_EQ(PTS_EINVAL, pts_signal_abort_new(loop, nullptr, nullptr));
  EXPECT_FALSE(pts_signal_aborted(nullptr));
  EXPECT_FALSE(pts_signal_is_task_signal(nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_signal_priority(nullptr));
  EXPECT_EQ(nullptr, pts_signal_get_loop(nullptr));
  EXPECT_EQ(PTS_VALUE_UNDEFINED, pts_signal_reason(nullptr).kind);
  pts_value untouched = pts_int(5);
  EXPECT_EQ(PTS_EINVAL, pts_signal_throw_if_aborted(nullptr, &untouched));
  EXPECT_EQ(PTS_EINVAL, pts_signal_throw_if_aborted(nullptr, nullptr));
  EXPECT_EQ(5, untouched.u.i) << "a failed throwIfAborted wrote its output";
  EXPECT_FALSE(pts_signal_has_fixed_priority(nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_signal_add_listener(nullptr, PTS_EVENT_ABORT, CountListener, nullptr, false));
  EXPECT_EQ(PTS_EINVAL, pts_signal_remove_listener(nullptr, PTS_EVENT_ABORT, CountListener, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_signal_set_handler(nullptr, PTS_EVENT_ABORT, CountListener, nullptr));
  pts_signal_ref(nullptr);    // no-op
  pts_signal_unref(nullptr);  // no-op
  // An AbortSignal has no priority.
  ASSERT_EQ(0, pts_signal_abort_new(loop, nullptr, &out));
  EXPECT_EQ(PTS_EINVAL, pts_signal_priority(out));
  EXPECT_EQ(PTS_EABORT, pts_signal_throw_if_aborted(out, nullptr));
  pts_signal_unref(out);
}

TEST_F(Catalogue, TimeoutOfAHugeDurationNeverFires) {
  pts_signal *t;
  ASSERT_EQ(0, pts_signal_timeout_new(g, UINT64_MAX, &t));
  EXPECT_EQ(0, pts_loop_advance(loop, UINT64_MAX / 2));
  EXPECT_FALSE(pts_signal_aborted(t));
  pts_signal_unref(t);
}

TEST_F(Catalogue, ListenersDuplicateUnknownTypeAndUnknownRemoval) {
  pts_controller *c;
  ASSERT_EQ(0, pts_abort_controller_new(loop, &c));
  pts_signal *sig = pts_controller_signal(c);
  Count ev;
  EXPECT_EQ(0, pts_signal_add_listener(sig, PTS_EVENT_ABORT, CountListener, &ev, false));
  EXPECT_EQ(0, pts_signal_add_listener(sig, PTS_EVENT_ABORT, CountListener, &ev, true));
  EXPECT_EQ(PTS_EINVAL, pts_signal_add_listener(sig, (pts_event_type)7, CountListener, &ev, false));
  EXPECT_EQ(PTS_EINVAL, pts_signal_add_listener(sig, PTS_EVENT_ABORT, nullptr, &ev, false));
  EXPECT_EQ(PTS_ENOTFOUND, pts_signal_remove_listener(sig, PTS_EVENT_PRIORITYCHANGE, CountListener, &ev));
  EXPECT_EQ(PTS_ENOTFOUND, pts_signal_remove_listener(sig, PTS_EVENT_ABORT, CountListener, nullptr));
  EXPECT_EQ(0, pts_signal_set_handler(sig, PTS_EVENT_ABORT, nullptr, nullptr)) << "removing an unset handler";
  EXPECT_EQ(0, pts_controller_abort(c, nullptr));
  EXPECT_EQ(1, ev.calls) << "the duplicate was not added";
  pts_controller_unref(c);
}

pts_value NeverThen(void *, pts_resolvers *) { return pts_undefined(); }

TEST_F(Catalogue, ThenablesAndResolversBadArguments) {
  EXPECT_EQ(PTS_VALUE_UNDEFINED, pts_thenable_value(nullptr, nullptr, nullptr).kind);
  EXPECT_EQ(PTS_EINVAL, pts_resolvers_resolve(nullptr, pts_int(1)));
  // The reason's reference is taken over even when the call fails: LSan
  // would report the error otherwise.
  EXPECT_EQ(PTS_EINVAL, pts_resolvers_reject(nullptr, pts_error_value(PTS_EERROR, "x")));
  EXPECT_EQ(PTS_EINVAL, pts_resolvers_resolve(nullptr, pts_thenable_value(NeverThen, nullptr, nullptr)));
  pts_resolvers_ref(nullptr);
  pts_resolvers_unref(nullptr);
}

TEST_F(Catalogue, ConstructedEventsBadArguments) {
  pts_event *ev = nullptr;
  pts_priority_change_event_init ok = {PTS_PRIORITY_USER_VISIBLE};
  pts_priority_change_event_init missing = {-1};
  pts_priority_change_event_init bad = {9};
  EXPECT_EQ(PTS_EINVAL, pts_priority_change_event_new("prioritychange", &ok, nullptr));
  EXPECT_EQ(PTS_ETYPE, pts_priority_change_event_new(nullptr, &ok, &ev));
  EXPECT_EQ(PTS_ETYPE, pts_priority_change_event_new("prioritychange", nullptr, &ev));
  EXPECT_EQ(PTS_ETYPE, pts_priority_change_event_new("prioritychange", &missing, &ev));
  EXPECT_EQ(PTS_ETYPE, pts_priority_change_event_new("prioritychange", &bad, &ev));
  EXPECT_EQ(nullptr, ev) << "out untouched";
  pts_event_free(nullptr);
  ASSERT_EQ(0, pts_priority_change_event_new("prioritychange", &ok, &ev));
  pts_controller *c;
  ASSERT_EQ(0, pts_task_controller_new(loop, PTS_PRIORITY_USER_VISIBLE, &c));
  EXPECT_EQ(PTS_EINVAL, pts_signal_dispatch_event(nullptr, ev));
  EXPECT_EQ(PTS_EINVAL, pts_signal_dispatch_event(pts_controller_signal(c), nullptr));
  EXPECT_EQ(nullptr, ev->target) << "nothing dispatched";
  pts_event_free(ev);
  pts_controller_unref(c);
}

// ---- scheduler.h ----

TEST_F(Catalogue, PostTaskBadOptions) {
  Count c;
  pts_promise *p = nullptr;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  EXPECT_EQ(PTS_EINVAL, pts_scheduler_post_task(nullptr, CountCb, &c, &o, &p));
  EXPECT_EQ(PTS_EINVAL, pts_scheduler_post_task(s, nullptr, &c, &o, &p));
  EXPECT_EQ(PTS_EINVAL, pts_scheduler_post_task_cb(s, nullptr, &c, &o));
  for (int prio : {3, -3, 100, PTS_PRIORITY_INHERIT}) {
    o.priority = prio;
    EXPECT_EQ(PTS_ETYPE, pts_scheduler_post_task(s, CountCb, &c, &o, &p)) << prio;
    EXPECT_EQ(PTS_ETYPE, pts_scheduler_post_task_cb(s, CountFn, &c, &o)) << prio;
  }
  o.priority = PTS_PRIORITY_UNSET;
  for (int64_t d : {int64_t(-1), INT64_MIN, (int64_t(1) << 53), INT64_MAX}) {
    o.delay_ms = d;
    EXPECT_EQ(PTS_ETYPE, pts_scheduler_post_task(s, CountCb, &c, &o, &p)) << d;
    EXPECT_EQ(PTS_ETYPE, pts_scheduler_post_task_cb(s, CountFn, &c, &o)) << d;
  }
  EXPECT_EQ(nullptr, p);
  EXPECT_EQ(0, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(0, c.calls);
  // The largest valid delay is accepted; an abort releases it.
  pts_controller *ctl;
  ASSERT_EQ(0, pts_abort_controller_new(loop, &ctl));
  o.delay_ms = (int64_t(1) << 53) - 1;
  o.signal = pts_controller_signal(ctl);
  ASSERT_EQ(0, pts_scheduler_post_task(s, CountCb, &c, &o, &p));
  EXPECT_EQ(0, pts_controller_abort(ctl, nullptr));
  EXPECT_EQ(1, c.calls);
  EXPECT_EQ(PTS_EABORT, c.status);
  EXPECT_EQ(PTS_PROMISE_REJECTED, pts_promise_get_state(p));
  pts_promise_unref(p);
  pts_controller_unref(ctl);
}

TEST_F(Catalogue, PostTaskWithAForeignOrAbortedSignal) {
  pts_loop *other;
  ASSERT_EQ(0, pts_loop_new(nullptr, &other));
  pts_controller *oc;
  ASSERT_EQ(0, pts_task_controller_new(other, 1, &oc));
  Count c;
  pts_promise *p = nullptr;
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.signal = pts_controller_signal(oc);
  EXPECT_EQ(PTS_EFOREIGN, pts_scheduler_post_task(s, CountCb, &c, &o, &p));
  EXPECT_EQ(PTS_EFOREIGN, pts_scheduler_post_task_cb(s, CountFn, &c, &o));
  pts_yield_options yo = PTS_YIELD_OPTIONS_INIT;
  yo.signal = pts_controller_signal(oc);
  EXPECT_EQ(PTS_EFOREIGN, pts_scheduler_yield(s, &yo, &p));
  EXPECT_EQ(nullptr, p);
  EXPECT_EQ(0, c.calls);
  pts_controller_unref(oc);
  EXPECT_EQ(0, pts_loop_free(other));
  // Already aborted: the promise form returns a rejected promise and calls
  // the callback with PTS_EABORT; the direct form fails with PTS_EABORT.
  pts_signal *ab;
  pts_value reason = pts_int(42);
  ASSERT_EQ(0, pts_signal_abort_new(loop, &reason, &ab));
  o.signal = ab;
  ASSERT_EQ(0, pts_scheduler_post_task(s, CountCb, &c, &o, &p));
  EXPECT_EQ(1, c.calls);
  EXPECT_EQ(PTS_EABORT, c.status);
  EXPECT_EQ(PTS_PROMISE_REJECTED, pts_promise_get_state(p));
  EXPECT_EQ(42, pts_promise_get_result(p).u.i);
  pts_promise_unref(p);
  Count d;
  EXPECT_EQ(PTS_EABORT, pts_scheduler_post_task_cb(s, CountFn, &d, &o));
  EXPECT_EQ(0, d.calls);
  pts_signal_unref(ab);
}

TEST_F(Catalogue, YieldBadOptions) {
  pts_promise *p = nullptr;
  pts_yield_options yo = PTS_YIELD_OPTIONS_INIT;
  EXPECT_EQ(PTS_EINVAL, pts_scheduler_yield(nullptr, &yo, &p));
  // out NULL is accepted (as for postTask; scheduler.h does not say so for
  // yield): the continuation is queued and nothing observes it.
  EXPECT_EQ(0, pts_scheduler_yield(s, &yo, nullptr));
  EXPECT_EQ(1, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(PTS_EINVAL, pts_scheduler_yield_cb(s, &yo, nullptr, nullptr));
  for (int prio : {3, -3, 100}) {
    yo.priority = prio;
    EXPECT_EQ(PTS_ETYPE, pts_scheduler_yield(s, &yo, &p)) << prio;
  }
  EXPECT_EQ(nullptr, p);
}

struct DetachSelf {
  pts_global *g;
  pts_scheduler *s;
  int after = 1;
  Count sibling;
};

TEST_F(Catalogue, DetachTheGlobalFromInsideItsOwnTask) {
  pts_global *g2;
  ASSERT_EQ(0, pts_global_new(loop, &g2));
  DetachSelf d{g2, pts_global_scheduler(g2), 1, Count()};
  ASSERT_EQ(0, pts_scheduler_post_task_cb(d.s, [](void *data, int st) {
    if (st) return;
    auto *d = static_cast<DetachSelf *>(data);
    EXPECT_EQ(0, pts_global_detach(d->g));
    d->after = pts_scheduler_post_task_cb(d->s, CountFn, &d->sibling, nullptr);
  }, &d, nullptr));
  ASSERT_EQ(0, pts_scheduler_post_task_cb(d.s, CountFn, &d.sibling, nullptr));
  EXPECT_EQ(1, pts_loop_run(loop, PTS_RUN_UNTIL_IDLE));
  EXPECT_EQ(PTS_ECLOSED, d.after);
  EXPECT_EQ(1, d.sibling.calls);
  EXPECT_EQ(PTS_ECANCELED, d.sibling.status);
}

// ---- agents.h ----

TEST_F(Catalogue, AgentsBadArgumentsAndClosedAgents) {
  pts_pool_options po;
  memset(&po, 0, sizeof po);
  po.threads = 1;
  po.policy = (pts_policy)PTS_POLICY_COUNT;
  pts_pool *pool = nullptr;
  EXPECT_NE(0, pts_pool_new(&po, &pool)) << "unknown policy";
  EXPECT_EQ(PTS_EINVAL, pts_pool_new(nullptr, nullptr));
  po.policy = PTS_POLICY_STRICT;
  ASSERT_EQ(0, pts_pool_new(&po, &pool));
  pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
  ao.thread = 5;  // no such thread
  pts_agent *a = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_agent_new(pool, &ao, &a));
  EXPECT_EQ(nullptr, a);
  ao.thread = -1;
  ASSERT_EQ(0, pts_agent_new(pool, &ao, &a));
  Count c;
  pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
  o.priority = 3;
  EXPECT_EQ(PTS_ETYPE, pts_agent_post_task(a, &o, CountCb, &c, nullptr, nullptr, nullptr));
  o.priority = PTS_PRIORITY_UNSET;
  o.delay_ms = -1;
  EXPECT_EQ(PTS_ETYPE, pts_agent_post_task(a, &o, CountCb, &c, nullptr, nullptr, nullptr));
  o.delay_ms = 0;
  EXPECT_EQ(PTS_EINVAL, pts_agent_post_task(a, &o, nullptr, &c, nullptr, nullptr, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_agent_post_task(nullptr, &o, CountCb, &c, nullptr, nullptr, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_agent_queue_task(a, PTS_SOURCE_COUNT, CountFn, &c));
  pts_remote_controller *rc;
  ASSERT_EQ(0, pts_remote_controller_new_async(a, PTS_PRIORITY_USER_VISIBLE, &rc));
  EXPECT_EQ(PTS_ETYPE, pts_remote_controller_set_priority(rc, 3, CountFn, &c));
  pts_promise *fake = nullptr;
  pts_value promise_reason;
  promise_reason.kind = PTS_VALUE_PROMISE;
  promise_reason.u.promise = fake;
  EXPECT_EQ(PTS_EINVAL, pts_remote_controller_abort(rc, &promise_reason, CountFn, &c));
  // A controller of another agent.
  pts_agent *b;
  ASSERT_EQ(0, pts_agent_new(pool, nullptr, &b));
  o.controller = rc;
  EXPECT_EQ(PTS_EFOREIGN, pts_agent_post_task(b, &o, CountCb, &c, nullptr, nullptr, nullptr));
  o.controller = nullptr;
  // Destroyed: later calls are PTS_ECLOSED and call nothing.
  EXPECT_EQ(0, pts_agent_destroy(a, true));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_destroy(a, true));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_post_task(a, &o, CountCb, &c, nullptr, nullptr, nullptr));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, CountFn, &c));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_drain(a));
  int r1 = pts_remote_controller_abort(rc, nullptr, CountFn, &c);
  EXPECT_TRUE(r1 == PTS_ECLOSED || r1 == 0) << r1;
  EXPECT_EQ(0, pts_pool_shutdown(pool));
  // A remote controller call accepted before the close is answered once,
  // with PTS_ECLOSED; a refused one never.
  EXPECT_EQ(r1 == 0 ? 1 : 0, c.calls);
  if (r1 == 0) {
    EXPECT_EQ(PTS_ECLOSED, c.status);
  }
  pts_remote_controller_unref(rc);
  pts_agent_unref(a);
  pts_agent_unref(b);
}

struct FromPool {
  pts_pool *pool;
  pts_agent *self;
  std::atomic<int> shutdown{1}, drain{1}, destroy{1};
};

TEST_F(Catalogue, AgentsBlockingCallsFromAPoolThreadAreBusy) {
  pts_pool *pool;
  pts_agent *a;
  ASSERT_NO_FATAL_FAILURE(OneThreadPoolWithAnAgent(&pool, &a));
  FromPool f{pool, a};
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, [](void *d, int st) {
    if (st) return;
    auto *f = static_cast<FromPool *>(d);
    f->shutdown = pts_pool_shutdown(f->pool);
    f->drain = pts_agent_drain(f->self);
    f->destroy = pts_agent_destroy(f->self, true);
  }, &f));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(PTS_EBUSY, f.shutdown.load());
  EXPECT_EQ(PTS_EBUSY, f.drain.load());
  EXPECT_EQ(PTS_EBUSY, f.destroy.load());
  EXPECT_EQ(0, pts_pool_shutdown(pool));
  pts_agent_unref(a);
}

TEST_F(Catalogue, AgentMoveBadArguments) {
  pts_pool *pool = nullptr;
  pts_agent *a = nullptr;
  OneThreadPoolWithAnAgent(&pool, &a);
  EXPECT_EQ(PTS_EINVAL, pts_agent_move(nullptr, 0));
  EXPECT_EQ(PTS_EINVAL, pts_agent_move(a, -1));
  EXPECT_EQ(PTS_EINVAL, pts_agent_move(a, 1));  // thread 1 of 1
  EXPECT_EQ(PTS_EINVAL, pts_agent_move(a, INT32_MAX));
  EXPECT_EQ(0, pts_agent_move(a, 0));  // where it is: nothing to do
  ASSERT_EQ(0, pts_agent_drain(a));     // the request was applied
  pts_agent_stats st;
  ASSERT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(0u, st.moves);
  EXPECT_EQ(0, pts_agent_thread(a));
  EXPECT_EQ(0, pts_agent_destroy(a, true));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_move(a, 0));
  EXPECT_EQ(0, pts_pool_shutdown(pool));
  EXPECT_EQ(PTS_ECLOSED, pts_agent_move(a, 0));
  pts_agent_unref(a);
}

TEST_F(Catalogue, AgentAndPoolAccessorsAndStatisticsBadArguments) {
  EXPECT_EQ(nullptr, pts_policy_name(PTS_POLICY_COUNT));
  EXPECT_EQ(nullptr, pts_policy_name(-1));
  EXPECT_EQ(0u, pts_pool_threads(nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_pool_shutdown(nullptr));
  pts_pool_options po;
  memset(&po, 0, sizeof po);
  po.threads = 4097;  // above the pool's limit of 4096
  pts_pool *pool = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_pool_new(&po, &pool));
  EXPECT_EQ(nullptr, pool);
  po.threads = 1;
  EXPECT_EQ(PTS_EINVAL, pts_pool_new(&po, nullptr));
  ASSERT_EQ(0, pts_pool_new(&po, &pool));
  EXPECT_EQ(1u, pts_pool_threads(pool));
  pts_agent *a = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_agent_new(nullptr, nullptr, &a));
  EXPECT_EQ(PTS_EINVAL, pts_agent_new(pool, nullptr, nullptr));
  pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
  ao.thread = -2;  // neither a thread nor "by rule"
  EXPECT_EQ(PTS_EINVAL, pts_agent_new(pool, &ao, &a));
  EXPECT_EQ(nullptr, a);
  ASSERT_EQ(0, pts_agent_new(pool, nullptr, &a));
  pts_agent_ref(nullptr);    // no-op
  pts_agent_unref(nullptr);  // no-op
  EXPECT_EQ(PTS_EINVAL, pts_agent_thread(nullptr));
  EXPECT_EQ(0, pts_agent_thread(a));
  EXPECT_EQ(nullptr, pts_agent_loop(nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_agent_destroy(nullptr, true));
  EXPECT_EQ(PTS_EINVAL, pts_agent_destroy(nullptr, false));
  EXPECT_EQ(PTS_EINVAL, pts_agent_drain(nullptr));
  Count c;
  EXPECT_EQ(PTS_EINVAL, pts_agent_queue_task(nullptr, PTS_SOURCE_GENERIC, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, nullptr, &c));
  EXPECT_EQ(PTS_EINVAL, pts_agent_queue_task(a, (pts_task_source)-1, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_agent_post_task(a, nullptr, nullptr, &c, nullptr, nullptr, nullptr));
  // Statistics: NULL object or output, a thread out of range; the output is
  // left as it was.
  pts_agent_stats st;
  memset(&st, 0xA5, sizeof st);
  pts_agent_stats st_before = st;
  EXPECT_EQ(PTS_EINVAL, pts_agent_get_stats(nullptr, &st));
  EXPECT_EQ(PTS_EINVAL, pts_agent_get_stats(a, nullptr));
  EXPECT_EQ(0, memcmp(&st_before, &st, sizeof st));
  pts_thread_stats ts;
  memset(&ts, 0xA5, sizeof ts);
  pts_thread_stats ts_before = ts;
  EXPECT_EQ(PTS_EINVAL, pts_pool_get_thread_stats(nullptr, 0, &ts));
  EXPECT_EQ(PTS_EINVAL, pts_pool_get_thread_stats(pool, 0, nullptr));
  EXPECT_EQ(PTS_EINVAL, pts_pool_get_thread_stats(pool, 1, &ts));
  EXPECT_EQ(PTS_EINVAL, pts_pool_get_thread_stats(pool, UINT32_MAX, &ts));
  EXPECT_EQ(0, memcmp(&ts_before, &ts, sizeof ts));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0, c.calls);
  EXPECT_EQ(0, pts_agent_get_stats(a, &st));
  EXPECT_EQ(0, pts_pool_get_thread_stats(pool, 0, &ts));
  EXPECT_EQ(0, pts_pool_shutdown(pool));
  EXPECT_EQ(0, c.calls);
  pts_agent_unref(a);
}

struct RemoteInside {
  pts_agent *a;
  std::atomic<int> bad_prio{1}, null_out{1}, ok{1};
  std::atomic<bool> got_null_rc{false}, got_own{false};
};

TEST_F(Catalogue, RemoteControllersBadArguments) {
  pts_pool *pool;
  pts_agent *a;
  ASSERT_NO_FATAL_FAILURE(OneThreadPoolWithAnAgent(&pool, &a));
  pts_remote_controller *rc = nullptr;
  EXPECT_EQ(PTS_EINVAL, pts_remote_controller_new_async(nullptr, 0, &rc));
  EXPECT_EQ(PTS_EINVAL, pts_remote_controller_new_async(a, 0, nullptr));
  EXPECT_EQ(PTS_ETYPE, pts_remote_controller_new_async(a, 3, &rc));
  EXPECT_EQ(PTS_EINVAL, pts_remote_controller_new(nullptr, 0, &rc));
  EXPECT_EQ(PTS_EINVAL, pts_remote_controller_new(a, 0, nullptr));
  EXPECT_EQ(PTS_EFOREIGN, pts_remote_controller_new(a, 0, &rc)) << "not on the agent's thread";
  EXPECT_EQ(nullptr, rc);
  pts_remote_controller_ref(nullptr);    // no-op
  pts_remote_controller_unref(nullptr);  // no-op
  EXPECT_EQ(nullptr, pts_remote_controller_get(nullptr));
  Count c;
  EXPECT_EQ(PTS_EINVAL, pts_remote_controller_abort(nullptr, nullptr, CountFn, &c));
  EXPECT_EQ(PTS_EINVAL, pts_remote_controller_set_priority(nullptr, 1, CountFn, &c));
  // On the agent's thread: an unknown priority and a NULL out are refused.
  RemoteInside in{a};
  ASSERT_EQ(0, pts_agent_queue_task(a, PTS_SOURCE_GENERIC, [](void *d, int st) {
    if (st) return;
    auto *in = static_cast<RemoteInside *>(d);
    pts_remote_controller *r = nullptr;
    in->bad_prio = pts_remote_controller_new(in->a, 3, &r);
    in->null_out = pts_remote_controller_new(in->a, 0, nullptr);
    in->got_null_rc = pts_remote_controller_get(nullptr) == nullptr && r == nullptr;
    in->ok = pts_remote_controller_new(in->a, 1, &r);
    if (r != nullptr) {
      in->got_own = pts_remote_controller_get(r) != nullptr;
      pts_remote_controller_unref(r);
    }
  }, &in));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(PTS_ETYPE, in.bad_prio.load());
  EXPECT_EQ(PTS_EINVAL, in.null_out.load());
  EXPECT_TRUE(in.got_null_rc.load());
  EXPECT_EQ(0, in.ok.load());
  EXPECT_TRUE(in.got_own.load());
  // Off the agent's thread, get gives NULL even for a valid handle.
  ASSERT_EQ(0, pts_remote_controller_new_async(a, 0, &rc));
  EXPECT_EQ(nullptr, pts_remote_controller_get(rc));
  ASSERT_EQ(0, pts_agent_drain(a));
  EXPECT_EQ(0, c.calls);
  pts_remote_controller_unref(rc);
  EXPECT_EQ(0, pts_pool_shutdown(pool));
  pts_agent_unref(a);
}

}  // namespace
