// Promises: reaction order, chaining, adoption and finally tick counts
// compared with known ECMAScript orderings, self-resolution, refcounts,
// cleanup exactly once, and scheduling-state capture through then and
// queueMicrotask.
#include "util.h"

// A reaction that logs its label (and the value for ints) and returns a
// programmed value.
struct R {
  Log *log;
  std::string label;
  pts_value ret = pts_undefined();  // owned; returned as a copy
  pts_loop *loop = nullptr;
  int state_tag = -1;
  int cleanups = 0;
  pts_value seen = pts_undefined();
  ~R() {
    pts_value_release(ret);
    pts_value_release(seen);
  }
};
static pts_value r_fn(void *d, pts_value arg) {
  R *r = static_cast<R *>(d);
  r->log->add(r->label);
  pts_value_release(r->seen);
  r->seen = pts_value_copy(arg);
  if (r->loop) r->state_tag = state_tag(r->loop);
  return pts_value_copy(r->ret);
}
static void r_cleanup(void *d) { static_cast<R *>(d)->cleanups++; }

// Adds one: chaining integers.
static pts_value plus1(void *, pts_value arg) { return pts_int(arg.u.i + 1); }

static void drain(pts_loop *loop) { EXPECT_GE(pts_loop_run(loop, PTS_RUN_UNTIL_IDLE), 0); }

static pts_promise *resolved(pts_loop *loop, pts_value v) {
  pts_promise *p;
  EXPECT_EQ(pts_promise_new(loop, &p), 0);
  EXPECT_EQ(pts_promise_resolve(p, v), 0);
  return p;
}

// then(label) on p, dropping the derived promise unless asked for.
static pts_promise *then_log(pts_promise *p, R *r, bool keep = false) {
  pts_promise *out = nullptr;
  EXPECT_EQ(pts_promise_then(p, r_fn, nullptr, r, r_cleanup, keep ? &out : nullptr), 0);
  return out;
}

TEST(Promise, ReactionsRunAsMicrotasksInRegistrationOrder) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *p;
  ASSERT_EQ(pts_promise_new(loop, &p), 0);
  R a{&log, "a"}, b{&log, "b"}, c{&log, "c"};
  then_log(p, &a);
  then_log(p, &b);
  ASSERT_EQ(pts_promise_resolve(p, pts_int(5)), 0);
  then_log(p, &c);  // already settled: queued at once, after a and b
  EXPECT_EQ(log.str(), "");  // not synchronously
  drain(loop);
  EXPECT_EQ(log.str(), "a b c");
  EXPECT_EQ(a.seen.u.i, 5);
  EXPECT_EQ(a.cleanups + b.cleanups + c.cleanups, 3);
  pts_promise_unref(p);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Promise, ChainingPassesValuesAndRejections) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *p = resolved(loop, pts_int(1)), *q1, *q2, *q3;
  ASSERT_EQ(pts_promise_then(p, plus1, nullptr, nullptr, nullptr, &q1), 0);
  ASSERT_EQ(pts_promise_then(q1, plus1, nullptr, nullptr, nullptr, &q2), 0);
  ASSERT_EQ(pts_promise_then(q2, nullptr, nullptr, nullptr, nullptr, &q3), 0);  // pass through
  drain(loop);
  EXPECT_EQ(pts_promise_get_state(q3), PTS_PROMISE_FULFILLED);
  EXPECT_EQ(pts_promise_get_result(q3).u.i, 3);
  EXPECT_EQ(pts_promise_get_loop(q3), loop);

  // A handler that returns an error throws: the chain rejects, skips the
  // fulfilment handlers and reaches catch.
  R thrower{&log, "throw"}, skipped{&log, "skipped"}, caught{&log, "caught"};
  thrower.ret = pts_error_value(PTS_ERANGE, "bad");
  caught.ret = pts_int(42);
  pts_promise *e1, *e2, *e3;
  ASSERT_EQ(pts_promise_then(p, r_fn, nullptr, &thrower, nullptr, &e1), 0);
  ASSERT_EQ(pts_promise_then(e1, r_fn, nullptr, &skipped, r_cleanup, &e2), 0);
  ASSERT_EQ(pts_promise_catch(e2, r_fn, &caught, r_cleanup, &e3), 0);
  drain(loop);
  EXPECT_EQ(log.str(), "throw caught");
  EXPECT_TRUE(pts_value_is_error(caught.seen, PTS_ERANGE));
  EXPECT_EQ(pts_promise_get_state(e2), PTS_PROMISE_REJECTED);
  EXPECT_EQ(pts_promise_get_result(e3).u.i, 42);
  EXPECT_EQ(skipped.cleanups, 1);  // never ran its handler, still cleaned up
  for (pts_promise *x : {p, q1, q2, q3, e1, e2, e3}) pts_promise_unref(x);
  EXPECT_EQ(pts_promise_then(nullptr, plus1, nullptr, nullptr, nullptr, nullptr), PTS_EINVAL);
  EXPECT_EQ(pts_promise_new(nullptr, &p), PTS_EINVAL);
  EXPECT_EQ(pts_promise_new(loop, nullptr), PTS_EINVAL);
  // A bad call still takes over the value (no leak under ASan).
  EXPECT_EQ(pts_promise_resolve(nullptr, pts_error_value(PTS_EABORT, nullptr)), PTS_EINVAL);
  EXPECT_EQ(pts_promise_reject(nullptr, pts_error_value(PTS_EABORT, nullptr)), PTS_EINVAL);
  EXPECT_EQ(pts_promise_get_state(nullptr), PTS_PROMISE_PENDING);
  EXPECT_EQ(pts_promise_get_loop(nullptr), nullptr);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

// const p = Promise.resolve(); const a = new Promise(r => r(p));
// a.then(() => log('a'));
// p.then(() => log('t1')).then(() => log('t2')).then(() => log('t3'));
// ES: t1 t2 a t3 (resolving with a promise takes two extra ticks).
TEST(Promise, ResolveWithAPromiseTakesTwoExtraTicks) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *p = resolved(loop, pts_undefined()), *a;
  ASSERT_EQ(pts_promise_new(loop, &a), 0);
  ASSERT_EQ(pts_promise_resolve(a, pts_promise_value(p)), 0);
  R ra{&log, "a"}, t1{&log, "t1"}, t2{&log, "t2"}, t3{&log, "t3"};
  then_log(a, &ra);
  pts_promise *x1 = then_log(p, &t1, true);
  pts_promise *x2 = then_log(x1, &t2, true);
  then_log(x2, &t3);
  drain(loop);
  EXPECT_EQ(log.str(), "t1 t2 a t3");
  for (pts_promise *x : {p, a, x1, x2}) pts_promise_unref(x);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

// Promise.resolve().then(() => Promise.resolve()).then(() => log('x'));
// Promise.resolve().then(() => log(1)).then(() => log(2)).then(() => log(3))
//   .then(() => log(4));
// ES: 1 2 3 x 4.
TEST(Promise, HandlerReturningAPromiseIsAdopted) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *p = resolved(loop, pts_undefined()), *q = resolved(loop, pts_undefined());
  pts_promise *inner = resolved(loop, pts_int(7));
  R h{&log, "h"}, x{&log, "x"}, b1{&log, "1"}, b2{&log, "2"}, b3{&log, "3"}, b4{&log, "4"};
  h.ret = pts_promise_value(inner);
  pts_promise *d1 = then_log(p, &h, true);
  then_log(d1, &x);
  pts_promise *c1 = then_log(q, &b1, true), *c2 = then_log(c1, &b2, true),
              *c3 = then_log(c2, &b3, true);
  then_log(c3, &b4);
  drain(loop);
  EXPECT_EQ(log.str(), "h 1 2 3 x 4");
  EXPECT_EQ(x.seen.u.i, 7);  // the adopted value
  for (pts_promise *y : {p, q, inner, d1, c1, c2, c3}) pts_promise_unref(y);
  pts_value_release(h.ret);  // promise values die with their loop
  h.ret = pts_undefined();
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Promise, AdoptingAPendingPromiseFollowsItsRejection) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *a, *b;
  ASSERT_EQ(pts_promise_new(loop, &a), 0);
  ASSERT_EQ(pts_promise_new(loop, &b), 0);
  ASSERT_EQ(pts_promise_resolve(a, pts_promise_value(b)), 0);
  // Already resolved (locked in to b): later calls are ignored.
  EXPECT_EQ(pts_promise_resolve(a, pts_int(1)), 0);
  EXPECT_EQ(pts_promise_reject(a, pts_error_value(PTS_EABORT, nullptr)), 0);
  drain(loop);
  EXPECT_EQ(pts_promise_get_state(a), PTS_PROMISE_PENDING);
  ASSERT_EQ(pts_promise_reject(b, pts_error_value(PTS_ETIMEDOUT, nullptr)), 0);
  drain(loop);
  EXPECT_EQ(pts_promise_get_state(a), PTS_PROMISE_REJECTED);
  EXPECT_TRUE(pts_value_is_error(pts_promise_get_result(a), PTS_ETIMEDOUT));
  pts_promise_unref(a);
  pts_promise_unref(b);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Promise, SelfResolutionRejectsWithTypeError) {
  pts_loop *loop = new_loop();
  pts_promise *p;
  ASSERT_EQ(pts_promise_new(loop, &p), 0);
  ASSERT_EQ(pts_promise_resolve(p, pts_promise_value(p)), 0);
  EXPECT_EQ(pts_promise_get_state(p), PTS_PROMISE_REJECTED);
  EXPECT_TRUE(pts_value_is_error(pts_promise_get_result(p), PTS_ETYPE));
  EXPECT_STREQ(pts_error_name(pts_promise_get_result(p)), "TypeError");
  // A handler that returns its own derived promise: same TypeError.
  pts_promise *q = resolved(loop, pts_int(1)), *d;
  Log log;
  R self{&log, "self"};
  ASSERT_EQ(pts_promise_then(q, r_fn, nullptr, &self, nullptr, &d), 0);
  self.ret = pts_promise_value(d);
  drain(loop);
  EXPECT_TRUE(pts_value_is_error(pts_promise_get_result(d), PTS_ETYPE));
  pts_value_release(self.ret);  // breaks the test's own reference
  self.ret = pts_undefined();
  for (pts_promise *x : {p, q, d}) pts_promise_unref(x);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Promise, ResolvingWithAnErrorRejects) {
  pts_loop *loop = new_loop();
  pts_promise *p;
  ASSERT_EQ(pts_promise_new(loop, &p), 0);
  ASSERT_EQ(pts_promise_resolve(p, pts_error_value(PTS_EABORT, "x")), 0);
  EXPECT_EQ(pts_promise_get_state(p), PTS_PROMISE_REJECTED);
  pts_promise_unref(p);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

// Promise.resolve().finally(() => {}).then(() => log('f'));
// Promise.resolve().then(() => log(1)).then(() => log(2)).then(() => log(3))
//   .then(() => log(4));
// ES: 1 2 3 f 4 (finally costs as much as returning a promise).
TEST(Promise, FinallyTickCountAndValuePassThrough) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *p = resolved(loop, pts_int(9)), *q = resolved(loop, pts_undefined());
  R fin{&log, "fin"}, f{&log, "f"}, b1{&log, "1"}, b2{&log, "2"}, b3{&log, "3"}, b4{&log, "4"};
  fin.ret = pts_int(1000);  // ignored: finally passes the original value on
  pts_promise *d;
  ASSERT_EQ(pts_promise_finally(p, r_fn, &fin, r_cleanup, &d), 0);
  then_log(d, &f);
  pts_promise *c1 = then_log(q, &b1, true), *c2 = then_log(c1, &b2, true),
              *c3 = then_log(c2, &b3, true);
  then_log(c3, &b4);
  drain(loop);
  EXPECT_EQ(log.str(), "fin 1 2 3 f 4");
  EXPECT_EQ(f.seen.u.i, 9);
  EXPECT_EQ(fin.seen.u.i, 9);
  EXPECT_EQ(fin.cleanups, 1);
  for (pts_promise *y : {p, q, d, c1, c2, c3}) pts_promise_unref(y);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Promise, FinallyKeepsRejectionsAndItsOwnErrorWins) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *r1, *r2, *d1, *d2, *d3, *ok = resolved(loop, pts_int(1));
  ASSERT_EQ(pts_promise_new(loop, &r1), 0);
  ASSERT_EQ(pts_promise_reject(r1, pts_error_value(PTS_EABORT, nullptr)), 0);
  ASSERT_EQ(pts_promise_new(loop, &r2), 0);
  ASSERT_EQ(pts_promise_reject(r2, pts_error_value(PTS_EABORT, nullptr)), 0);
  R quiet{&log, "quiet"}, loud{&log, "loud"}, loud2{&log, "loud2"};
  loud.ret = pts_error_value(PTS_ERANGE, nullptr);
  loud2.ret = pts_error_value(PTS_ETYPE, nullptr);
  ASSERT_EQ(pts_promise_finally(r1, r_fn, &quiet, nullptr, &d1), 0);
  ASSERT_EQ(pts_promise_finally(r2, r_fn, &loud, nullptr, &d2), 0);
  ASSERT_EQ(pts_promise_finally(ok, r_fn, &loud2, nullptr, &d3), 0);
  drain(loop);
  EXPECT_TRUE(pts_value_is_error(pts_promise_get_result(d1), PTS_EABORT));
  EXPECT_TRUE(pts_value_is_error(pts_promise_get_result(d2), PTS_ERANGE));
  EXPECT_TRUE(pts_value_is_error(pts_promise_get_result(d3), PTS_ETYPE));
  EXPECT_TRUE(pts_value_is_error(quiet.seen, PTS_EABORT));
  // NULL onFinally: plain pass-through.
  pts_promise *d4;
  ASSERT_EQ(pts_promise_finally(ok, nullptr, nullptr, nullptr, &d4), 0);
  drain(loop);
  EXPECT_EQ(pts_promise_get_result(d4).u.i, 1);
  for (pts_promise *y : {r1, r2, d1, d2, d3, ok, d4}) pts_promise_unref(y);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Promise, FinallyWaitsForAReturnedPromise) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *p = resolved(loop, pts_int(3)), *wait, *d;
  ASSERT_EQ(pts_promise_new(loop, &wait), 0);
  R fin{&log, "fin"};
  fin.ret = pts_promise_value(wait);
  ASSERT_EQ(pts_promise_finally(p, r_fn, &fin, nullptr, &d), 0);
  drain(loop);
  EXPECT_EQ(pts_promise_get_state(d), PTS_PROMISE_PENDING);
  ASSERT_EQ(pts_promise_resolve(wait, pts_int(1000)), 0);
  drain(loop);
  EXPECT_EQ(pts_promise_get_state(d), PTS_PROMISE_FULFILLED);
  EXPECT_EQ(pts_promise_get_result(d).u.i, 3);
  for (pts_promise *y : {p, wait, d}) pts_promise_unref(y);
  pts_value_release(fin.ret);
  fin.ret = pts_undefined();
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Promise, ReactionsRunAfterTheCallerDroppedItsReferences) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *p, *d;
  ASSERT_EQ(pts_promise_new(loop, &p), 0);
  R a{&log, "a"}, b{&log, "b"};
  ASSERT_EQ(pts_promise_then(p, r_fn, nullptr, &a, r_cleanup, &d), 0);
  then_log(d, &b);
  pts_promise_unref(d);  // the reaction on p still holds d
  pts_promise_ref(p);
  pts_promise_unref(p);
  ASSERT_EQ(pts_promise_resolve(p, pts_int(1)), 0);
  pts_promise_unref(p);  // the queued job holds what it needs
  drain(loop);
  EXPECT_EQ(log.str(), "a b");
  EXPECT_EQ(a.cleanups + b.cleanups, 2);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

TEST(Promise, DroppingAPendingPromiseRunsCleanupsOnce) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *p, *d;
  ASSERT_EQ(pts_promise_new(loop, &p), 0);
  R a{&log, "a"}, b{&log, "b"};
  ASSERT_EQ(pts_promise_then(p, r_fn, r_fn, &a, r_cleanup, &d), 0);
  then_log(d, &b);
  pts_promise_unref(d);
  pts_promise_unref(p);  // nothing can settle p: everything is released
  EXPECT_EQ(a.cleanups, 1);
  EXPECT_EQ(b.cleanups, 1);
  drain(loop);
  EXPECT_EQ(log.str(), "");
  EXPECT_EQ(pts_loop_free(loop), 0);
  EXPECT_EQ(a.cleanups + b.cleanups, 2);
}

TEST(Promise, CyclesAndLeakedReferencesAreFreedWithTheLoop) {
  pts_loop *loop = new_loop();
  Log log;
  pts_promise *a, *b, *kept;
  ASSERT_EQ(pts_promise_new(loop, &a), 0);
  ASSERT_EQ(pts_promise_new(loop, &b), 0);
  ASSERT_EQ(pts_promise_resolve(a, pts_promise_value(b)), 0);
  ASSERT_EQ(pts_promise_resolve(b, pts_promise_value(a)), 0);
  drain(loop);  // a waits on b, b on a: a cycle of references
  ASSERT_EQ(pts_promise_new(loop, &kept), 0);
  R r{&log, "r"};
  then_log(kept, &r);
  pts_promise_unref(a);
  pts_promise_unref(b);
  EXPECT_EQ(pts_loop_free(loop), 0);  // kept's reference is never dropped
  EXPECT_EQ(r.cleanups, 1);
  EXPECT_EQ(log.str(), "");
}

// Scheduling-state capture: HostMakeJobCallback at registration,
// HostCallJobCallback around the job, through nested then and
// queueMicrotask.
struct Nest {
  pts_loop *loop;
  pts_promise *other;
  R *inner;
  int tag_here = -1;
  int micro_tag = -1;
};
static void micro_tag_fn(void *d, int status) {
  if (status) return;
  Nest *n = static_cast<Nest *>(d);
  n->micro_tag = state_tag(n->loop);
}
static pts_value nest_fn(void *d, pts_value) {
  Nest *n = static_cast<Nest *>(d);
  n->tag_here = state_tag(n->loop);
  // Registered while the captured state is current: inherits it.
  EXPECT_EQ(pts_promise_then(n->other, r_fn, nullptr, n->inner, nullptr, nullptr), 0);
  EXPECT_EQ(pts_queue_microtask(n->loop, micro_tag_fn, n), 0);
  return pts_undefined();
}

TEST(Promise, ReactionsCaptureAndRestoreTheSchedulingState) {
  pts_loop *loop = new_loop();
  Log log;
  int destroyed = 0;
  FakeState *s1 = fake_state_new(&destroyed, 1);
  FakeState *s2 = fake_state_new(&destroyed, 2);
  pts_promise *p, *other;
  ASSERT_EQ(pts_promise_new(loop, &p), 0);
  ASSERT_EQ(pts_promise_new(loop, &other), 0);
  R inner{&log, "inner"}, plain{&log, "plain"}, second{&log, "second"};
  inner.loop = plain.loop = second.loop = loop;
  Nest n{loop, other, &inner};

  pts_loop_enter_state(loop, &s1->hdr);
  pts_sched_state *cap = pts_loop_capture_state(loop);
  EXPECT_EQ(cap, &s1->hdr);
  EXPECT_EQ(s1->hdr.refs, 2u);
  ASSERT_EQ(pts_promise_then(p, nest_fn, nullptr, &n, nullptr, nullptr), 0);
  pts_loop_leave_state(loop);
  EXPECT_EQ(pts__loop_current_state(loop), nullptr);
  then_log(p, &plain);  // no state current: runs with none
  pts_loop_enter_state(loop, &s2->hdr);
  then_log(p, &second);
  pts_loop_leave_state(loop);
  pts_sched_state_unref(cap);
  pts_sched_state_unref(&s1->hdr);  // the test's own references
  pts_sched_state_unref(&s2->hdr);
  EXPECT_EQ(destroyed, 0);  // the reactions hold them

  ASSERT_EQ(pts_promise_resolve(p, pts_int(1)), 0);
  ASSERT_EQ(pts_promise_resolve(other, pts_int(2)), 0);
  drain(loop);
  EXPECT_EQ(n.tag_here, 1);
  EXPECT_EQ(n.micro_tag, 1);
  EXPECT_EQ(inner.state_tag, 1);
  EXPECT_EQ(plain.state_tag, 0);
  EXPECT_EQ(second.state_tag, 2);
  EXPECT_EQ(pts__loop_current_state(loop), nullptr);  // restored after each job
  EXPECT_EQ(destroyed, 2);                            // each exactly once
  pts_promise_unref(p);
  pts_promise_unref(other);
  EXPECT_EQ(pts_loop_free(loop), 0);
}

struct MicroState {
  pts_loop *loop;
  int tag = -1;
  int nested_tag = -1;
};
static void nested_micro(void *d, int status) {
  if (status == 0) static_cast<MicroState *>(d)->nested_tag = state_tag(static_cast<MicroState *>(d)->loop);
}
static void outer_micro(void *d, int status) {
  if (status) return;
  MicroState *m = static_cast<MicroState *>(d);
  m->tag = state_tag(m->loop);
  EXPECT_EQ(pts_queue_microtask(m->loop, nested_micro, m), 0);
}

TEST(Promise, QueueMicrotaskCapturesTheState) {
  pts_loop *loop = new_loop();
  int destroyed = 0;
  FakeState *s = fake_state_new(&destroyed, 5);
  MicroState m{loop};
  pts_sched_state *prev = pts__loop_swap_state(loop, &s->hdr);
  ASSERT_EQ(pts_queue_microtask(loop, outer_micro, &m), 0);
  pts__loop_swap_state(loop, prev);
  pts_sched_state_unref(&s->hdr);
  EXPECT_EQ(destroyed, 0);
  drain(loop);
  EXPECT_EQ(m.tag, 5);
  EXPECT_EQ(m.nested_tag, 5);
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(pts_loop_free(loop), 0);
}
