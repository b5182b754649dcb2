// host/host.cc: tenants as SpiderMonkey realms on ptsched agents.
//
// Invariants (docs/host.md):
// 1. One JSContext per pool thread, made lazily by the first tenant task
//    that runs there (thread_local; the host is on a pool thread exactly when
//    the library calls one of its callbacks) and destroyed when the thread
//    exits (pts_pool_shutdown joins it).
// 2. A tenant is one agent, placed on an explicit thread with balancing off,
//    so its realm never leaves the context that made it.
// 3. Every promise job goes to the tenant's loop as a ptsched microtask
//    (HostJobQueue): checkpoints are where the library runs them.
// 4. JS wrappers hold the library's objects through handle objects whose
//    finalizer only queues them (no library call inside a GC); they are
//    released at the tenant's next callback, and all of them at teardown,
//    before the agent's loop is freed.
// 5. Host.pending counts every callback handed to the library and not yet
//    returned (tasks, timers, microtasks, messages, yields); at 0 every tenant
//    is idle. A callback releases its count only after its JS ran, so work it
//    queued is counted first. What a tenant queues for itself is counted in
//    Tenant.pending on its own thread, which holds one Host count while not
//    0 (hold(Tenant *)); the setup, start and teardown calls and messages,
//    sent from other threads, count in Host.pending directly.
// 6. A pending callback's JS values (Call) are traced edges, not persistent
//    roots: one tracer per context reaches them in major GCs, and minor GCs
//    skip them but for the store buffer's entries, so their cost does not
//    grow with the number of pending tasks.
#include "host/host.h"

#include <jsapi.h>
#include <js/CompilationAndEvaluation.h>
#include <js/Context.h>
#include <js/ContextOptions.h>
#include <js/Conversions.h>
#include <js/ErrorReport.h>
#include <js/Exception.h>
#include <js/GlobalObject.h>
#include <js/Initialization.h>
#include <js/Object.h>
#include <js/Promise.h>
#include <js/Realm.h>
#include <js/SourceText.h>
#include <js/Stack.h>
#include <js/String.h>
#include <js/TracingAPI.h>
#include <js/Array.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sched.h>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

namespace ptsh {
namespace {

const char kPrelude[] =
#include "host/prelude.inc"
    ;

struct Host;
struct Tenant;

// A library object held by a JS handle object (invariant 4).
struct HandleData {
  Tenant *t = nullptr;  // nullptr once released by teardown
  pts_signal *sig = nullptr;
  pts_controller *ctl = nullptr;
  JS::PersistentRooted<JSObject *> observed;  // the wrapper, while listened to
  bool listening = false;
};

// An error value of the library shown to JS: one JS object per pts_error, so
// signal.reason is the same object on every read.
struct ErrEntry {
  pts_value v;
  JS::PersistentRooted<JS::Value> js;
  ~ErrEntry() { pts_value_release(v); }
};

// A JS value the library keeps (an abort reason), as a box.
struct JsBox {
  JS::PersistentRooted<JS::Value> v;
};

// Aligned: the tenants of two threads do not share a cache line.
struct alignas(64) Tenant {
  Host *host = nullptr;
  long pending = 0;  // its own callbacks not yet returned (hold(Tenant *))
  size_t index = 0;
  std::string name, filename, source;
  pts_agent *agent = nullptr;
  int thread = -1;
  pts_loop *loop = nullptr;
  pts_global *global = nullptr;
  pts_scheduler *sched = nullptr;
  JSContext *cx = nullptr;
  bool alive = false;
  bool ready = false;  // setup_fn made the realm and ran the prelude
  uint64_t t0 = 0;
  JS::PersistentRooted<JSObject *> gobj, fire, make_error, deliver;
  std::unordered_map<pts_error *, std::unique_ptr<ErrEntry>> errs;
  std::set<HandleData *> live;
  std::vector<HandleData *> graveyard;
  // Promises rejected with no handler, reported by a task (rejections_fn)
  // queued when the first is added.
  std::vector<std::unique_ptr<JS::PersistentRooted<JSObject *>>> rejections;
  bool report_queued = false;
  std::unordered_map<uint64_t, struct Call *> timers;
  // The postTask whose callback or checkpoint is running (post_cb until its
  // reaction, post_settle): an abort rejects its JS promise at once.
  struct Call *running = nullptr;
  bool failed = false;
  std::string out;
  pts_agent_stats stats{};
};

struct Host {
  Options opts;
  std::vector<std::unique_ptr<Tenant>> tenants;
  std::atomic<long> pending{0};
  // The pool threads' CPU time from their first start task to their first
  // teardown (Timing.run_cpu_ns).
  std::atomic<uint64_t> run_cpu_ns{0};
  std::mutex mu;
  std::condition_variable cv;
  // run() is posting the start tasks; messages sent meanwhile wait in
  // early (both under mu) and run() posts them after the last start task.
  std::atomic<bool> starting{false};
  std::vector<struct Msg *> early;
  void hold() { pending.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    // acq_rel: the waiter reads tenant state written before the release.
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> g(mu);
      cv.notify_all();
    }
  }
  void wait_idle() {
    std::unique_lock<std::mutex> g(mu);
    cv.wait(g, [this] { return pending.load(std::memory_order_acquire) == 0; });
  }
};

// Invariant 5 per tenant: the callbacks a tenant's own code handed to the
// library are counted in Tenant.pending, on its thread only, and the tenant
// holds one count of Host.pending while its own is not 0. So a busy thread
// does not write the line all threads share once per callback.
void hold(Tenant *t) {
  if (t->pending++ == 0) t->host->hold();
}
void release(Tenant *t) {
  if (--t->pending == 0) t->host->release();
}

// A pending JS callback: postTask, yield, timers, microtasks, promise jobs.
// Its JS values are JS::Heap edges, not roots (invariant 6): the thread's
// tracer (trace_calls) reaches them in a major GC, and a minor GC finds the
// ones that point into the nursery in its store buffer, so a pending call
// costs a minor GC nothing. A call is made and freed on its tenant's thread
// and sits on that thread's list (ThreadState.calls) in between.
struct Call {
  Call *prev = nullptr, *next = nullptr;  // ThreadState.calls
  Tenant *t;
  JS::Heap<JSObject *> fn, promise;
  // A postTask's outcome, kept until its library promise settles
  // (post_settle): what the callback returned or threw.
  JS::Heap<JS::Value> result;
  bool threw = false;
  bool settled = false;        // the JS promise is settled
  bool reacted = false;        // post_settle ran
  bool loop_freed = false;     // the loop frees cp (post_cleanup)
  pts_promise *cp = nullptr;   // the library's result promise (a reference)
  int refs = 0;  // a postTask: its callback and its reaction's cleanup
  uint64_t timer_id = 0;   // the library's id of its armed timer
  uint64_t public_id = 0;  // a timer's id in JS (Tenant.timers' key)
  uint64_t interval = 0;   // setInterval's delay in ms, re-armed after each run
  bool repeat = false;     // setInterval
  bool cleared = false;    // clearInterval from its own callback
  explicit Call(Tenant *tt);
  ~Call();
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;
};

uint64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t mono_ns() { return clock_ns(CLOCK_MONOTONIC); }
uint64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

// ---- output and errors ----

void emit(Tenant *t, int stream, const std::string &text) {
  if (t->host->opts.capture) {
    std::string pre = stream == 2 ? "E: " : "";
    size_t at = 0;
    while (at <= text.size()) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      t->out += pre + text.substr(at, nl - at) + "\n";
      at = nl + 1;
    }
    return;
  }
  std::string line = t->host->tenants.size() > 1 ? "[" + t->name + "] " : "";
  line += text + "\n";
  FILE *f = stream == 2 ? stderr : stdout;
  fwrite(line.data(), 1, line.size(), f);
  fflush(f);
}

std::string to_utf8(JSContext *cx, JS::HandleValue v) {
  JS::RootedString s(cx, JS::ToString(cx, v));
  if (!s) {
    JS_ClearPendingException(cx);
    return "<unprintable>";
  }
  JS::UniqueChars c = JS_EncodeStringToUTF8(cx, s);
  return c ? std::string(c.get()) : std::string("<unprintable>");
}

std::string describe(JSContext *cx, JS::HandleValue exc) {
  std::string s = to_utf8(cx, exc);
  if (exc.isObject()) {
    JS::RootedObject o(cx, &exc.toObject());
    JS::RootedValue st(cx);
    if (JS_GetProperty(cx, o, "stack", &st) && st.isString()) {
      std::string stack = to_utf8(cx, st);
      while (!stack.empty() && stack.back() == '\n') stack.pop_back();
      if (!stack.empty()) s += "\n" + stack;
    }
    JS_ClearPendingException(cx);
  }
  return s;
}

void report(Tenant *t, const char *what, JS::HandleValue exc) {
  t->failed = true;
  emit(t, 2, t->name + ": " + what + " " + describe(t->cx, exc));
}

// The pending exception (or an uncatchable stop) of a JS call that failed.
void report_pending(Tenant *t) {
  JSContext *cx = t->cx;
  JS::RootedValue exc(cx);
  if (JS_IsExceptionPending(cx) && JS_GetPendingException(cx, &exc)) {
    JS_ClearPendingException(cx);
    report(t, "Uncaught", exc);
  } else {
    t->failed = true;
    emit(t, 2, t->name + ": uncatchable error (out of memory or stack)");
  }
}

Tenant *tenant_of(JSContext *cx) {
  JSObject *g = JS::CurrentGlobalOrNull(cx);
  return g ? JS::GetMaybePtrFromReservedSlot<Tenant>(g, 0) : nullptr;
}

bool make_error(JSContext *cx, Tenant *t, const char *name, const char *msg,
                JS::MutableHandleValue out) {
  JS::RootedValueArray<2> args(cx);
  args[0].setString(JS_NewStringCopyZ(cx, name));
  args[1].setString(JS_NewStringCopyZ(cx, msg ? msg : ""));
  if (!args[0].toString() || !args[1].toString()) return false;
  JS::RootedValue f(cx, JS::ObjectValue(*t->make_error));
  return JS::Call(cx, JS::UndefinedHandleValue, f, args, out);
}

// Throws the JS form of a library code; returns false for the native.
bool throw_code(JSContext *cx, int code, const char *msg = nullptr) {
  Tenant *t = tenant_of(cx);
  const char *name = pts_err_dom_name(code);
  JS::RootedValue e(cx);
  if (t && make_error(cx, t, name ? name : "Error", msg ? msg : pts_strerror(code), &e)) {
    JS_SetPendingException(cx, e);
  }
  return false;
}

bool to_js(JSContext *cx, Tenant *t, pts_value v, JS::MutableHandleValue out) {
  switch (v.kind) {
    case PTS_VALUE_INT:
      out.setNumber(static_cast<double>(v.u.i));
      return true;
    case PTS_VALUE_DOUBLE:
      out.setNumber(v.u.d);
      return true;
    case PTS_VALUE_BOX:
      out.set(static_cast<JsBox *>(pts_value_pointer(v))->v);
      return true;
    case PTS_VALUE_ERROR: {
      auto it = t->errs.find(v.u.error);
      if (it != t->errs.end()) {
        out.set(it->second->js);
        return true;
      }
      if (!make_error(cx, t, pts_error_name(v), pts_error_message(v), out)) return false;
      auto e = std::make_unique<ErrEntry>();
      e->v = pts_value_copy(v);
      e->js.init(cx, out);
      t->errs.emplace(v.u.error, std::move(e));
      return true;
    }
    default:
      out.setUndefined();
      return true;
  }
}

void box_free(void *p) { delete static_cast<JsBox *>(p); }

// An abort reason for the library: undefined means "make an AbortError".
bool reason_value(JSContext *cx, JS::HandleValue v, pts_value *out) {
  if (v.isUndefined()) {
    *out = pts_undefined();
    return true;
  }
  auto *b = new JsBox;
  b->v.init(cx, v);
  *out = pts_box_value(b, box_free);
  if (out->kind != PTS_VALUE_BOX) {
    delete b;
    JS_ReportOutOfMemory(cx);
    return false;
  }
  return true;
}

// ---- handles (invariant 4) ----

void on_event(void *data, const pts_event *ev);
void sync_running(Tenant *t);

void release_handle(HandleData *d) {
  if (d->listening) {
    pts_signal_remove_listener(d->sig, PTS_EVENT_ABORT, on_event, d);
    if (pts_signal_is_task_signal(d->sig)) {
      pts_signal_remove_listener(d->sig, PTS_EVENT_PRIORITYCHANGE, on_event, d);
    }
    d->listening = false;
  }
  d->observed.reset();
  pts_signal_unref(d->sig);
  pts_controller_unref(d->ctl);
  d->sig = nullptr;
  d->ctl = nullptr;
}

void handle_finalize(JS::GCContext *, JSObject *obj) {
  auto *d = JS::GetMaybePtrFromReservedSlot<HandleData>(obj, 0);
  if (!d) return;
  if (d->t) {
    d->t->live.erase(d);
    d->t->graveyard.push_back(d);  // released at the tenant's next callback
  } else {
    delete d;
  }
}

const JSClassOps handle_ops = {nullptr, nullptr, nullptr, nullptr, nullptr,
                               nullptr, handle_finalize, nullptr, nullptr,
                               nullptr};
const JSClass handle_class = {
    "PtsHandle", JSCLASS_HAS_RESERVED_SLOTS(1) | JSCLASS_FOREGROUND_FINALIZE,
    &handle_ops, nullptr, nullptr, nullptr};

void reap(Tenant *t) {
  while (!t->graveyard.empty()) {
    HandleData *d = t->graveyard.back();
    t->graveyard.pop_back();
    release_handle(d);
    delete d;
  }
}

bool new_handle(JSContext *cx, Tenant *t, pts_signal *sig, pts_controller *ctl,
                JS::MutableHandleValue out) {
  JSObject *o = JS_NewObject(cx, &handle_class);
  if (!o) {
    pts_signal_unref(sig);
    pts_controller_unref(ctl);
    return false;
  }
  auto *d = new HandleData;
  d->t = t;
  d->sig = sig;
  d->ctl = ctl;
  JS::SetReservedSlot(o, 0, JS::PrivateValue(d));
  t->live.insert(d);
  out.setObject(*o);
  return true;
}

HandleData *handle_arg(JSContext *cx, JS::HandleValue v, bool controller) {
  if (v.isObject() && JS::GetClass(&v.toObject()) == &handle_class) {
    auto *d = JS::GetMaybePtrFromReservedSlot<HandleData>(&v.toObject(), 0);
    if (d && d->t && (controller ? d->ctl != nullptr : d->sig != nullptr)) return d;
  }
  JS_ReportErrorASCII(cx, "not a %s handle", controller ? "controller" : "signal");
  return nullptr;
}

// The one library listener of an observed signal: hands the event to the
// prelude's dispatch, so JS listeners run where the library fires.
void on_event(void *data, const pts_event *ev) {
  auto *d = static_cast<HandleData *>(data);
  Tenant *t = d->t;
  if (!t || !t->alive) return;
  if (ev->type == PTS_EVENT_ABORT) sync_running(t);
  if (!d->observed.initialized() || !d->observed) return;
  JSContext *cx = t->cx;
  JSAutoRealm ar(cx, t->gobj);
  JS::RootedValueArray<3> args(cx);
  args[0].setObject(*d->observed);
  JSString *type = JS_NewStringCopyZ(cx, ev->type_name);
  if (!type) return report_pending(t);
  args[1].setString(type);
  const char *prev = pts_priority_name(ev->previous_priority);
  if (ev->type == PTS_EVENT_PRIORITYCHANGE && prev) {
    JSString *p = JS_NewStringCopyZ(cx, prev);
    if (!p) return report_pending(t);
    args[2].setString(p);
  }
  JS::RootedValue f(cx, JS::ObjectValue(*t->fire)), rv(cx);
  if (!JS::Call(cx, JS::UndefinedHandleValue, f, args, &rv)) report_pending(t);
}

// ---- the job queue (invariant 3) ----

void run_call_as_job(void *data, int status);

class HostJobQueue final : public JS::JobQueue {
 public:
  JSObject *getIncumbentGlobal(JSContext *cx) override {
    return JS::CurrentGlobalOrNull(cx);
  }
  bool enqueuePromiseJob(JSContext *cx, JS::HandleObject, JS::HandleObject job,
                         JS::HandleObject, JS::HandleObject) override {
    Tenant *t = tenant_of(cx);
    if (!t || !t->alive) return true;  // a realm being torn down: dropped
    auto *c = new Call(t);
    c->fn = job;
    hold(t);
    if (pts_queue_microtask(t->loop, run_call_as_job, c) != 0) {
      release(t);
      delete c;
      JS_ReportOutOfMemory(cx);
      return false;
    }
    return true;
  }
  // Checkpoints belong to the loop; the debugger's interruptions have nothing
  // of ours to run.
  void runJobs(JSContext *) override {}
  bool empty() const override { return true; }

 private:
  struct Saved : SavedJobQueue {};
  js::UniquePtr<SavedJobQueue> saveJobQueue(JSContext *) override {
    return js::MakeUnique<Saved>();
  }
};

void report_rejections(Tenant *t) {
  JSContext *cx = t->cx;
  JSAutoRealm ar(cx, t->gobj);
  for (auto &r : t->rejections) {
    JS::RootedObject p(cx, *r);
    JS::RootedValue reason(cx, JS::GetPromiseResult(p));
    report(t, "Uncaught (in promise)", reason);
  }
  t->rejections.clear();
}

// HTML "notify about rejected promises", as a task: it runs after the task
// (and its microtask checkpoint) that left them unhandled, so a handler
// added by then, in that task or one of its microtasks, takes the promise
// off the list; later ones do not undo the report (as in Node).
void rejections_fn(void *data, int status) {
  auto *t = static_cast<Tenant *>(data);
  t->report_queued = false;
  if (status == 0 && t->alive) report_rejections(t);
  release(t);
}

void on_rejection(JSContext *cx, bool, JS::HandleObject promise,
                  JS::PromiseRejectionHandlingState state, void *) {
  Tenant *t = tenant_of(cx);
  if (!t || !t->alive) return;
  if (state == JS::PromiseRejectionHandlingState::Unhandled) {
    t->rejections.push_back(std::make_unique<JS::PersistentRooted<JSObject *>>(cx, promise));
    if (!t->report_queued) {
      hold(t);
      if (pts_queue_task(t->global, PTS_SOURCE_GENERIC, rejections_fn, t) == 0) {
        t->report_queued = true;
      } else {
        release(t);  // reported at teardown
      }
    }
    return;
  }
  for (auto it = t->rejections.begin(); it != t->rejections.end(); ++it) {
    if (**it == promise) {
      t->rejections.erase(it);
      return;
    }
  }
}

struct ThreadState {
  JSContext *cx = nullptr;
  HostJobQueue *queue = nullptr;
  Call *calls = nullptr;  // the live calls of this thread's tenants
  bool timing = false;    // between the first start task and teardown
  uint64_t cpu0 = 0;      // the thread's CPU time at that start task
  ~ThreadState();
};
thread_local ThreadState tls;

Call::Call(Tenant *tt) : t(tt) {
  next = tls.calls;
  if (next) next->prev = this;
  tls.calls = this;
}

Call::~Call() {
  if (prev) {
    prev->next = next;
  } else {
    tls.calls = next;
  }
  if (next) next->prev = prev;
}

// The calls' edges, for major GCs (the engine calls no embedder tracer in a
// minor GC; invariant 6).
void trace_calls(JSTracer *trc, void *data) {
  for (Call *c = static_cast<ThreadState *>(data)->calls; c; c = c->next) {
    JS::TraceEdge(trc, &c->fn, "Call.fn");
    JS::TraceEdge(trc, &c->promise, "Call.promise");
    JS::TraceEdge(trc, &c->result, "Call.result");
  }
}

ThreadState::~ThreadState() {
  if (cx) {
    JS_RemoveExtraGCRootsTracer(cx, trace_calls, this);
    JS_DestroyContext(cx);
  }
  delete queue;
}

JSContext *thread_cx() {
  if (tls.cx) return tls.cx;
  JSContext *cx = JS_NewContext(JS::DefaultHeapMaxBytes);
  if (!cx) return nullptr;
  // One runtime holds every realm of its thread: the default heap limit
  // (32 MiB) is per runtime, and 32 tenants of host/bench/tasks.js on one
  // thread ran out of it. No limit but memory, as the js shell does.
  JS_SetGCParameter(cx, JSGC_MAX_BYTES, 0xffffffff);
  // Pool threads have the default 8 MiB stack; stay well inside it.
  JS_SetNativeStackQuota(cx, 1024 * 1024);
  // The nursery at 8 MiB from the start (16 MiB at most, the default
  // maximum) instead of SpiderMonkey's 256 KiB that grows with use: a burst
  // of pending tasks (host/bench/tasks.js posts 3,000 before the first one
  // runs) then dies young instead of being tenured by the minor GCs of a
  // small nursery. That burst went from 14,100 to 12,400 instructions a task
  // (callgrind, off-thread compilation off so that counts repeat; docs/
  // host.md). One nursery per thread: a thread's tenants share it.
  JS_SetGCParameter(cx, JSGC_MAX_NURSERY_BYTES, 16 * 1024 * 1024);
  JS_SetGCParameter(cx, JSGC_MIN_NURSERY_BYTES, 8 * 1024 * 1024);
  // No allocation and resolution stacks on promises (SpiderMonkey's
  // default captures both for every promise: about 3,400 instructions of
  // the 20,000 a postTask cost, host/bench/tasks.js under callgrind), only
  // for a realm a debugger observes, as Firefox does. Error stacks keep
  // their synchronous frames; "async*" frames across an await are gone.
  JS::ContextOptionsRef(cx).setAsyncStackCaptureDebuggeeOnly(true);
  if (!JS::InitSelfHostedCode(cx)) {
    JS_DestroyContext(cx);
    return nullptr;
  }
  if (!JS_AddExtraGCRootsTracer(cx, trace_calls, &tls)) {
    JS_DestroyContext(cx);
    return nullptr;
  }
  tls.cx = cx;
  tls.queue = new HostJobQueue;
  JS::SetJobQueue(cx, tls.queue);
  JS::SetPromiseRejectionTrackerCallback(cx, on_rejection, nullptr);
  return cx;
}

// ---- callbacks from the library ----

// Calls fn(); an exception is the tenant's uncaught error.
void call_reporting(Tenant *t, JS::HandleObject fn) {
  JSContext *cx = t->cx;
  JS::RootedValue f(cx, JS::ObjectValue(*fn)), rv(cx);
  if (!JS::Call(cx, JS::UndefinedHandleValue, f, JS::HandleValueArray::empty(), &rv)) {
    report_pending(t);
  }
}

void run_call(Call *c) {
  Tenant *t = c->t;
  JSAutoRealm ar(t->cx, t->gobj);
  JS::RootedObject fn(t->cx, c->fn);
  call_reporting(t, fn);
  reap(t);
}

void run_call_as_job(void *data, int status) {
  auto *c = static_cast<Call *>(data);
  Tenant *t = c->t;
  if (status == 0 && t->alive) run_call(c);
  delete c;
  release(t);
}

// postTask is the library's promise form (pts_scheduler_post_task), which
// keeps the spec's order of a task's steps:
// 1. post_cb(0) runs the callback and keeps its outcome in the Call; the
//    library then runs the callback's microtask checkpoint ("clean up after
//    running script") and only then settles its promise.
// 2. An abort of the task's signal while it is queued or running (callback
//    or checkpoint) rejects the library promise first, in the signal's
//    abort-step order; the outcome is then ignored.
// 3. post_settle, the promise's reaction (a microtask, before the next
//    task), settles the JS promise with the outcome if the library promise
//    fulfilled.
// 4. An abort rejects the JS promise where the library rejects its own, so
//    JS sees the abort steps' order: a queued task's in post_cb(PTS_EABORT);
//    the running one's (Tenant.running) in sync_running, called first by
//    each later step of the abort (the other tasks' post_cb, the abort
//    events) and when the abort returns (n_controllerAbort).
// The Call is freed when both the callback and the reaction's cleanup have
// let go of it (post_unref); only then is its pending count released.
void post_unref(void *data) {
  auto *c = static_cast<Call *>(data);
  if (--c->refs > 0) return;
  Tenant *t = c->t;
  if (t->running == c) t->running = nullptr;
  if (c->cp && !c->loop_freed) pts_promise_unref(c->cp);
  delete c;
  release(t);
}

// The reaction's cleanup. Without the reaction having run, the loop is
// being freed and is releasing cp's reactions: cp is the loop's to free
// then (it frees every promise it owns), not ours to unref in its sweep.
void post_cleanup(void *data) {
  auto *c = static_cast<Call *>(data);
  if (!c->reacted) c->loop_freed = true;
  post_unref(c);
}

// Rejects c's JS promise with its library promise's reason, once.
void post_reject(Call *c) {
  Tenant *t = c->t;
  if (c->settled || !t->alive) return;
  c->settled = true;
  JSContext *cx = t->cx;
  JSAutoRealm ar(cx, t->gobj);
  JS::RootedObject p(cx, c->promise);
  JS::RootedValue v(cx);
  if (!to_js(cx, t, pts_promise_get_result(c->cp), &v) || !JS::RejectPromise(cx, p, v)) {
    report_pending(t);
  }
}

// spec: the running task's abort steps, as JS sees them (step 4 above).
void sync_running(Tenant *t) {
  Call *c = t->running;
  if (c && pts_promise_get_state(c->cp) == PTS_PROMISE_REJECTED) post_reject(c);
}

pts_value post_cb(void *data, int status) {
  auto *c = static_cast<Call *>(data);
  Tenant *t = c->t;
  if (status == PTS_EABORT) {
    sync_running(t);
    // Inside the post (an already aborted signal) cp is not known yet: the
    // post rejects the JS promise when it returns.
    if (c->cp) post_reject(c);
  }
  if (status == 0 && t->alive) {
    t->running = c;
    JSContext *cx = t->cx;
    JSAutoRealm ar(cx, t->gobj);
    JS::RootedValue f(cx, JS::ObjectValue(*c->fn.get())), v(cx);
    if (JS::Call(cx, JS::UndefinedHandleValue, f, JS::HandleValueArray::empty(), &v)) {
      c->result = v;
    } else if (JS_IsExceptionPending(cx) && JS_GetPendingException(cx, &v)) {
      JS_ClearPendingException(cx);
      c->result = v;
      c->threw = true;
    } else {
      report_pending(t);  // uncatchable: the promise stays pending
    }
    reap(t);
  }
  post_unref(c);
  return pts_undefined();
}

pts_value post_settle(void *data, pts_value) {
  auto *c = static_cast<Call *>(data);
  Tenant *t = c->t;
  c->reacted = true;
  if (t->running == c) t->running = nullptr;
  if (!t->alive) return pts_undefined();
  if (pts_promise_get_state(c->cp) == PTS_PROMISE_REJECTED) {
    post_reject(c);  // already done unless the abort came from the library
  } else if (!c->settled) {
    c->settled = true;
    JSContext *cx = t->cx;
    JSAutoRealm ar(cx, t->gobj);
    JS::RootedObject p(cx, c->promise);
    JS::RootedValue v(cx, c->result);
    if (!(c->threw ? JS::RejectPromise(cx, p, v) : JS::ResolvePromise(cx, p, v))) report_pending(t);
  }
  reap(t);
  return pts_undefined();
}

pts_value yield_settle(Call *c, pts_value arg, bool fulfil) {
  Tenant *t = c->t;
  if (!t->alive) return pts_undefined();
  JSContext *cx = t->cx;
  JSAutoRealm ar(cx, t->gobj);
  JS::RootedObject p(cx, c->promise);
  JS::RootedValue v(cx);
  bool ok = fulfil ? JS::ResolvePromise(cx, p, JS::UndefinedHandleValue)
                   : to_js(cx, t, arg, &v) && JS::RejectPromise(cx, p, v);
  if (!ok) report_pending(t);
  reap(t);
  return pts_undefined();
}
pts_value yield_ok(void *data, pts_value arg) { return yield_settle(static_cast<Call *>(data), arg, true); }
pts_value yield_fail(void *data, pts_value arg) { return yield_settle(static_cast<Call *>(data), arg, false); }
void yield_done(void *data) {
  auto *c = static_cast<Call *>(data);
  Tenant *t = c->t;
  delete c;
  release(t);
}

// A timer's task. An interval is re-armed after its callback returns,
// unless it was cleared meanwhile (Call.cleared), with the same JS id; it
// keeps its pending count until then, so a tenant with an interval running
// is not idle (as in Node).
void timer_fn(void *data, int status) {
  auto *c = static_cast<Call *>(data);
  Tenant *t = c->t;
  if (c->repeat && status == 0 && t->alive) {
    run_call(c);
    if (!c->cleared && t->alive &&
        pts_timer_start(t->global, c->interval, timer_fn, c, &c->timer_id) == 0) {
      return;
    }
  }
  t->timers.erase(c->public_id);
  if (c->repeat) {
    delete c;
    release(t);
  } else {
    run_call_as_job(data, status);
  }
}

// ---- the natives the prelude calls (native.*) ----

#define NATIVE(name) bool name(JSContext *cx, unsigned argc, JS::Value *vp)
#define ARGS                                   \
  JS::CallArgs args = JS::CallArgsFromVp(argc, vp); \
  Tenant *t = tenant_of(cx);                   \
  if (!t) return false
// A native whose first argument is a signal handle, as d.
#define SIGNAL_ARGS                                             \
  ARGS;                                                         \
  HandleData *d = handle_arg(cx, args.get(0), false);           \
  if (!d) return false

bool priority_arg(JSContext *cx, JS::HandleValue v, int *out) {
  if (v.isUndefined()) {
    *out = PTS_PRIORITY_UNSET;
    return true;
  }
  // Compared in place: no copy of the string on a postTask's path.
  if (v.isString()) {
    for (int p = 0; p < PTS_PRIORITY_COUNT; p++) {
      bool match;
      if (!JS_StringEqualsAscii(cx, v.toString(), pts_priority_name(p), &match)) return false;
      if (match) {
        *out = p;
        return true;
      }
    }
  }
  std::string s = v.isString() ? to_utf8(cx, v) : std::string();
  pts_priority p;
  if (!v.isString() || pts_priority_parse(s.c_str(), &p) != 0) {
    return throw_code(cx, PTS_ETYPE, ("'" + s + "' is not a valid TaskPriority").c_str());
  }
  *out = p;
  return true;
}

bool set_priority_name(JSContext *cx, int p, JS::MutableHandleValue out) {
  JSString *s = JS_NewStringCopyZ(cx, pts_priority_name(p));
  if (!s) return false;
  out.setString(s);
  return true;
}

NATIVE(n_checkPriority) {
  ARGS;
  int p;
  if (!priority_arg(cx, args.get(0), &p)) return false;
  return set_priority_name(cx, p, args.rval());
}

NATIVE(n_now) {
  ARGS;
  args.rval().setNumber(static_cast<double>(pts_loop_now(t->loop) - t->t0) / 1e6);
  return true;
}

NATIVE(n_timeOrigin) {
  ARGS;
  args.rval().setNumber(static_cast<double>(t->t0) / 1e6);
  return true;
}

NATIVE(n_controllerNew) {
  ARGS;
  pts_controller *c;
  int rc;
  if (args.get(0).isUndefined()) {
    rc = pts_abort_controller_new(t->loop, &c);
  } else {
    int p;
    if (!priority_arg(cx, args.get(0), &p)) return false;
    rc = pts_task_controller_new(t->loop, p, &c);
  }
  if (rc != 0) return throw_code(cx, rc);
  return new_handle(cx, t, nullptr, c, args.rval());
}

NATIVE(n_controllerSignal) {
  ARGS;
  HandleData *d = handle_arg(cx, args.get(0), true);
  if (!d) return false;
  pts_signal *s = pts_controller_signal(d->ctl);
  pts_signal_ref(s);
  return new_handle(cx, t, s, nullptr, args.rval());
}

NATIVE(n_controllerAbort) {
  ARGS;
  HandleData *d = handle_arg(cx, args.get(0), true);
  if (!d) return false;
  pts_value r;
  if (!reason_value(cx, args.get(1), &r)) return false;
  int rc = pts_controller_abort(d->ctl, r.kind == PTS_VALUE_UNDEFINED ? nullptr : &r);
  pts_value_release(r);
  sync_running(t);
  args.rval().setUndefined();
  return rc == 0 ? true : throw_code(cx, rc);
}

NATIVE(n_controllerSetPriority) {
  ARGS;
  HandleData *d = handle_arg(cx, args.get(0), true);
  if (!d) return false;
  int p;
  if (!priority_arg(cx, args.get(1), &p)) return false;
  int rc = pts_controller_set_priority(d->ctl, p);
  args.rval().setUndefined();
  if (rc == PTS_ENOTALLOWED) {
    return throw_code(cx, rc, "setPriority() during this signal's prioritychange dispatch");
  }
  return rc == 0 ? true : throw_code(cx, rc);
}

NATIVE(n_signalAborted) {
  SIGNAL_ARGS;
  args.rval().setBoolean(pts_signal_aborted(d->sig));
  return true;
}

NATIVE(n_signalReason) {
  SIGNAL_ARGS;
  return to_js(cx, t, pts_signal_reason(d->sig), args.rval());
}

NATIVE(n_signalPriority) {
  SIGNAL_ARGS;
  int p = pts_signal_priority(d->sig);
  if (p < 0) return throw_code(cx, PTS_ETYPE, "not a TaskSignal");
  return set_priority_name(cx, p, args.rval());
}

NATIVE(n_signalIsTask) {
  SIGNAL_ARGS;
  args.rval().setBoolean(pts_signal_is_task_signal(d->sig));
  return true;
}

NATIVE(n_signalAbort) {
  ARGS;
  pts_value r;
  if (!reason_value(cx, args.get(0), &r)) return false;
  pts_signal *s;
  int rc = pts_signal_abort_new(t->loop, r.kind == PTS_VALUE_UNDEFINED ? nullptr : &r, &s);
  pts_value_release(r);
  if (rc != 0) return throw_code(cx, rc);
  return new_handle(cx, t, s, nullptr, args.rval());
}

NATIVE(n_signalTimeout) {
  ARGS;
  double ms = args.get(0).isNumber() ? args.get(0).toNumber() : 0;
  pts_signal *s;
  int rc = pts_signal_timeout_new(t->global, static_cast<uint64_t>(ms), &s);
  if (rc != 0) return throw_code(cx, rc);
  return new_handle(cx, t, s, nullptr, args.rval());
}

// signalAny(handles[], isTask, priority name | null, source handle | null)
NATIVE(n_signalAny) {
  ARGS;
  if (!args.get(0).isObject()) return throw_code(cx, PTS_ETYPE, "signals");
  JS::RootedObject arr(cx, &args.get(0).toObject());
  uint32_t n;
  if (!JS::GetArrayLength(cx, arr, &n)) return false;
  std::vector<pts_signal *> sigs(n);
  JS::RootedValue e(cx);
  for (uint32_t i = 0; i < n; i++) {
    if (!JS_GetElement(cx, arr, i, &e)) return false;
    HandleData *d = handle_arg(cx, e, false);
    if (!d) return false;
    sigs[i] = d->sig;
  }
  pts_signal *out;
  int rc;
  if (args.get(1).isTrue()) {
    pts_task_signal_any_init init = PTS_TASK_SIGNAL_ANY_INIT;
    if (args.get(3).isObject()) {
      HandleData *src = handle_arg(cx, args.get(3), false);
      if (!src) return false;
      init.priority_source = src->sig;
    } else if (!priority_arg(cx, args.get(2), &init.priority)) {
      return false;
    }
    rc = pts_task_signal_any(t->loop, sigs.data(), n, &init, &out);
  } else {
    rc = pts_signal_any(t->loop, sigs.data(), n, &out);
  }
  if (rc != 0) return throw_code(cx, rc);
  return new_handle(cx, t, out, nullptr, args.rval());
}

// observe(handle, wrapper | null): the portal listener on or off.
NATIVE(n_observe) {
  SIGNAL_ARGS;
  args.rval().setUndefined();
  if (args.get(1).isObject()) {
    if (!d->observed.initialized()) d->observed.init(cx);
    d->observed = &args.get(1).toObject();
    if (!d->listening) {
      int rc = pts_signal_add_listener(d->sig, PTS_EVENT_ABORT, on_event, d, false);
      if (rc == 0 && pts_signal_is_task_signal(d->sig)) {
        rc = pts_signal_add_listener(d->sig, PTS_EVENT_PRIORITYCHANGE, on_event, d, false);
        if (rc != 0) pts_signal_remove_listener(d->sig, PTS_EVENT_ABORT, on_event, d);
      }
      if (rc != 0) {
        d->observed.reset();
        return throw_code(cx, rc);
      }
      d->listening = true;
    }
  } else if (d->listening) {
    pts_signal_remove_listener(d->sig, PTS_EVENT_ABORT, on_event, d);
    if (pts_signal_is_task_signal(d->sig)) {
      pts_signal_remove_listener(d->sig, PTS_EVENT_PRIORITYCHANGE, on_event, d);
    }
    d->listening = false;
    d->observed.reset();
  }
  return true;
}

// postTask(callback, priority | undefined, signal handle | null, delay)
NATIVE(n_postTask) {
  ARGS;
  if (!args.get(0).isObject()) return throw_code(cx, PTS_ETYPE, "callback");
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  if (!priority_arg(cx, args.get(1), &o.priority)) return false;
  if (args.get(2).isObject()) {
    HandleData *d = handle_arg(cx, args.get(2), false);
    if (!d) return false;
    o.signal = d->sig;
  }
  o.delay_ms = args.get(3).isNumber() ? static_cast<int64_t>(args.get(3).toNumber()) : 0;
  JS::RootedObject p(cx, JS::NewPromiseObject(cx, nullptr));
  if (!p) return false;
  auto *c = new Call(t);
  c->fn = &args.get(0).toObject();
  c->promise = p;
  // Two holders: post_cb, and post_cleanup, the reaction's. Set
  // first: an already aborted signal calls post_cb inside the post.
  c->refs = 2;
  pts_promise *cp;
  int rc = pts_scheduler_post_task(t->sched, post_cb, c, &o, &cp);
  if (rc != 0) {  // the callback is never called
    delete c;
    JS::RootedValue r(cx);
    throw_code(cx, rc);
    if (!JS_GetPendingException(cx, &r)) return false;
    JS_ClearPendingException(cx);
    if (!JS::RejectPromise(cx, p, r)) return false;
    args.rval().setObject(*p);
    return true;
  }
  hold(t);
  c->cp = cp;  // post_unref drops the reference
  if (pts_promise_get_state(cp) == PTS_PROMISE_REJECTED) post_reject(c);
  rc = pts_promise_then(cp, post_settle, post_settle, c, post_cleanup, nullptr);
  if (rc != 0) {
    post_unref(c);  // the callback still holds it; the JS promise stays pending
    return throw_code(cx, rc);
  }
  args.rval().setObject(*p);
  return true;
}

// yield(priority | 'inherit' | undefined, signal handle | 'inherit' | undefined)
NATIVE(n_yield) {
  ARGS;
  pts_yield_options o = PTS_YIELD_OPTIONS_INIT;
  JS::HandleValue pv = args.get(0), sv = args.get(1);
  bool none = pv.isUndefined() && sv.isUndefined();
  if (pv.isString() && to_utf8(cx, pv) == "inherit") {
    o.priority = PTS_PRIORITY_INHERIT;
  } else if (!priority_arg(cx, pv, &o.priority)) {
    return false;
  }
  if (sv.isString()) {
    o.signal_inherit = 1;
  } else if (sv.isObject()) {
    HandleData *d = handle_arg(cx, sv, false);
    if (!d) return false;
    o.signal = d->sig;
  }
  JS::RootedObject p(cx, JS::NewPromiseObject(cx, nullptr));
  if (!p) return false;
  pts_promise *yp;
  int rc = pts_scheduler_yield(t->sched, none ? nullptr : &o, &yp);
  if (rc != 0) {
    JS::RootedValue r(cx);
    throw_code(cx, rc);
    if (!JS_GetPendingException(cx, &r)) return false;
    JS_ClearPendingException(cx);
    if (!JS::RejectPromise(cx, p, r)) return false;
    args.rval().setObject(*p);
    return true;
  }
  auto *c = new Call(t);
  c->promise = p;
  rc = pts_promise_then(yp, yield_ok, yield_fail, c, yield_done, nullptr);
  pts_promise_unref(yp);
  if (rc != 0) {
    delete c;
    return throw_code(cx, rc);
  }
  hold(t);
  args.rval().setObject(*p);
  return true;
}

// setTimeout(callback, ms, repeat): setInterval when repeat is true. The
// JS id is the library's id of the first timer; one id space for both, so
// clearTimeout clears an interval and clearInterval a timeout (HTML).
NATIVE(n_setTimeout) {
  ARGS;
  if (!args.get(0).isObject()) return throw_code(cx, PTS_ETYPE, "callback");
  double ms = args.get(1).isNumber() ? args.get(1).toNumber() : 0;
  auto *c = new Call(t);
  c->fn = &args.get(0).toObject();
  c->repeat = args.get(2).isTrue();
  c->interval = static_cast<uint64_t>(ms);
  int rc = pts_timer_start(t->global, c->interval, timer_fn, c, &c->timer_id);
  if (rc != 0) {
    delete c;
    return throw_code(cx, rc);
  }
  hold(t);
  c->public_id = c->timer_id;
  t->timers[c->public_id] = c;
  args.rval().setNumber(static_cast<double>(c->public_id));
  return true;
}

NATIVE(n_clearTimeout) {
  ARGS;
  args.rval().setUndefined();
  if (!args.get(0).isNumber()) return true;
  uint64_t id = static_cast<uint64_t>(args.get(0).toNumber());
  auto it = t->timers.find(id);
  if (it == t->timers.end()) return true;
  Call *c = it->second;
  if (pts_timer_cancel(t->global, c->timer_id) == 0) {
    delete c;
    t->timers.erase(it);
    release(t);
  } else if (c->repeat) {
    c->cleared = true;  // its callback is running: timer_fn lets it go
  }
  return true;
}

NATIVE(n_queueMicrotask) {
  ARGS;
  if (!args.get(0).isObject()) return throw_code(cx, PTS_ETYPE, "callback");
  auto *c = new Call(t);
  c->fn = &args.get(0).toObject();
  hold(t);
  int rc = pts_queue_microtask(t->loop, run_call_as_job, c);
  if (rc != 0) {
    release(t);
    delete c;
    return throw_code(cx, rc);
  }
  args.rval().setUndefined();
  return true;
}

NATIVE(n_print) {
  ARGS;
  int stream = args.get(0).isInt32() ? args.get(0).toInt32() : 1;
  emit(t, stream, to_utf8(cx, args.get(1)));
  args.rval().setUndefined();
  return true;
}

NATIVE(n_reportError) {
  ARGS;
  report(t, "Uncaught", args.get(0));
  args.rval().setUndefined();
  return true;
}

NATIVE(n_tenantName) {
  ARGS;
  JSString *s = JS_NewStringCopyUTF8Z(cx, JS::ConstUTF8CharsZ(t->name.c_str(), t->name.size()));
  if (!s) return false;
  args.rval().setString(s);
  return true;
}

NATIVE(n_tenantNames) {
  ARGS;
  JS::RootedObject arr(cx, JS::NewArrayObject(cx, t->host->tenants.size()));
  if (!arr) return false;
  for (size_t i = 0; i < t->host->tenants.size(); i++) {
    const std::string &n = t->host->tenants[i]->name;
    JS::RootedValue v(cx, JS::StringValue(JS_NewStringCopyUTF8Z(cx, JS::ConstUTF8CharsZ(n.c_str(), n.size()))));
    if (!v.toString() || !JS_SetElement(cx, arr, i, v)) return false;
  }
  args.rval().setObject(*arr);
  return true;
}

struct Msg {
  Tenant *to;
  std::string from, json;
};

pts_value msg_fn(void *data, int status) {
  auto *m = static_cast<Msg *>(data);
  Tenant *t = m->to;
  if (status == 0 && t->alive) {
    JSContext *cx = t->cx;
    JSAutoRealm ar(cx, t->gobj);
    JS::RootedValueArray<2> a(cx);
    JSString *from = JS_NewStringCopyUTF8Z(cx, JS::ConstUTF8CharsZ(m->from.c_str(), m->from.size()));
    JSString *json = JS_NewStringCopyUTF8Z(cx, JS::ConstUTF8CharsZ(m->json.c_str(), m->json.size()));
    if (from && json) {
      a[0].setString(from);
      a[1].setString(json);
      JS::RootedValue f(cx, JS::ObjectValue(*t->deliver)), rv(cx);
      if (!JS::Call(cx, JS::UndefinedHandleValue, f, a, &rv)) report_pending(t);
    } else {
      report_pending(t);
    }
    reap(t);
  }
  Host *h = t->host;
  delete m;
  h->release();
  return pts_undefined();
}

// postMessage(name, json): a postTask into the target agent, from any thread.
NATIVE(n_postMessage) {
  ARGS;
  std::string name = to_utf8(cx, args.get(0));
  Tenant *to = nullptr;
  for (auto &x : t->host->tenants) {
    if (x->name == name) to = x.get();
  }
  if (!to) return throw_code(cx, PTS_ENOTFOUND, ("no tenant named " + name).c_str());
  auto *m = new Msg{to, t->name, to_utf8(cx, args.get(1))};
  Host *h = t->host;
  h->hold();
  int rc = 0;
  // While the start tasks are being posted, a message waits for run() to
  // send it after them: its target's start task is then ahead of it in its
  // inbox (one producer), so the target's script has set onmessage.
  if (h->starting.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> g(h->mu);
    if (h->starting.load(std::memory_order_relaxed)) {
      h->early.push_back(m);
      m = nullptr;
    }
  }
  if (m) rc = pts_agent_post_task(to->agent, nullptr, msg_fn, m, nullptr, nullptr, nullptr);
  if (rc != 0) {
    delete m;
    h->release();
    return throw_code(cx, rc);
  }
  args.rval().setUndefined();
  return true;
}

const JSFunctionSpec natives[] = {
    JS_FN("checkPriority", n_checkPriority, 1, 0),
    JS_FN("now", n_now, 0, 0),
    JS_FN("timeOrigin", n_timeOrigin, 0, 0),
    JS_FN("controllerNew", n_controllerNew, 1, 0),
    JS_FN("controllerSignal", n_controllerSignal, 1, 0),
    JS_FN("controllerAbort", n_controllerAbort, 2, 0),
    JS_FN("controllerSetPriority", n_controllerSetPriority, 2, 0),
    JS_FN("signalAborted", n_signalAborted, 1, 0),
    JS_FN("signalReason", n_signalReason, 1, 0),
    JS_FN("signalPriority", n_signalPriority, 1, 0),
    JS_FN("signalIsTask", n_signalIsTask, 1, 0),
    JS_FN("signalAbort", n_signalAbort, 1, 0),
    JS_FN("signalTimeout", n_signalTimeout, 1, 0),
    JS_FN("signalAny", n_signalAny, 4, 0),
    JS_FN("observe", n_observe, 2, 0),
    JS_FN("postTask", n_postTask, 4, 0),
    JS_FN("yield", n_yield, 2, 0),
    JS_FN("setTimeout", n_setTimeout, 3, 0),
    JS_FN("clearTimeout", n_clearTimeout, 1, 0),
    JS_FN("queueMicrotask", n_queueMicrotask, 1, 0),
    JS_FN("print", n_print, 2, 0),
    JS_FN("reportError", n_reportError, 1, 0),
    JS_FN("tenantName", n_tenantName, 0, 0),
    JS_FN("tenantNames", n_tenantNames, 0, 0),
    JS_FN("postMessage", n_postMessage, 2, 0),
    JS_FS_END};

// ---- tenant lifecycle ----

const JSClass global_class = {"global", JSCLASS_GLOBAL_FLAGS_WITH_SLOTS(1),
                              &JS::DefaultGlobalClassOps, nullptr, nullptr,
                              nullptr};

bool evaluate(JSContext *cx, const char *file, const char *text, size_t len,
              JS::MutableHandleValue rv) {
  JS::CompileOptions co(cx);
  co.setFileAndLine(file, 1);
  JS::SourceText<mozilla::Utf8Unit> src;
  if (!src.init(cx, text, len, JS::SourceOwnership::Borrowed)) return false;
  return JS::Evaluate(cx, co, src, rv);
}

bool get_fn(JSContext *cx, JS::HandleObject hooks, const char *name,
            JS::PersistentRooted<JSObject *> *out) {
  JS::RootedValue v(cx);
  if (!JS_GetProperty(cx, hooks, name, &v) || !v.isObject()) return false;
  out->init(cx, &v.toObject());
  return true;
}

// The tenant's first task, on its pool thread: context, realm, prelude.
// Every tenant is set up before any script starts (run()), so the window
// from the scripts' start to idle holds no realm making (Timing.run_ns).
pts_value setup_fn(void *data, int status) {
  auto *t = static_cast<Tenant *>(data);
  Host *h = t->host;
  if (status != 0) {
    h->release();
    return pts_undefined();
  }
  JSContext *cx = thread_cx();
  if (!cx) {
    t->failed = true;
    emit(t, 2, t->name + ": could not create a JS context");
    h->release();
    return pts_undefined();
  }
  t->cx = cx;
  t->loop = pts_agent_loop(t->agent);
  t->global = pts_loop_default_global(t->loop);
  t->sched = pts_global_scheduler(t->global);
  t->t0 = pts_loop_now(t->loop);
  JS::RealmOptions ro;
  ro.creationOptions().setNewCompartmentAndZone();
  JS::RootedObject g(cx, JS_NewGlobalObject(cx, &global_class, nullptr,
                                            JS::FireOnNewGlobalHook, ro));
  if (!g) {
    t->failed = true;
    emit(t, 2, t->name + ": could not create a realm");
    h->release();
    return pts_undefined();
  }
  JS::SetReservedSlot(g, 0, JS::PrivateValue(t));
  t->gobj.init(cx, g);
  t->alive = true;
  {
    JSAutoRealm ar(cx, g);
    JS::RootedObject nat(cx, JS_NewPlainObject(cx));
    JS::RootedValue fn(cx), hooksv(cx);
    JS::RootedValueArray<2> a(cx);
    bool ok = JS::InitRealmStandardClasses(cx) && nat &&
              JS_DefineFunctions(cx, nat, natives) &&
              evaluate(cx, "ptsched:prelude.js", kPrelude, sizeof kPrelude - 1, &fn);
    if (ok) {
      a[0].setObject(*nat);
      a[1].setObject(*g);
      ok = JS::Call(cx, JS::UndefinedHandleValue, fn, a, &hooksv) && hooksv.isObject();
    }
    if (ok) {
      JS::RootedObject hooks(cx, &hooksv.toObject());
      ok = get_fn(cx, hooks, "fire", &t->fire) &&
           get_fn(cx, hooks, "makeError", &t->make_error) &&
           get_fn(cx, hooks, "deliver", &t->deliver);
    }
    if (!ok) report_pending(t);
    t->ready = ok;
    reap(t);
  }
  h->release();
  return pts_undefined();
}

// The tenant's start task: the preloads, then its script.
pts_value start_fn(void *data, int status) {
  auto *t = static_cast<Tenant *>(data);
  Host *h = t->host;
  if (!tls.timing) {
    tls.timing = true;
    tls.cpu0 = thread_cpu_ns();
  }
  if (status == 0 && t->alive && t->ready) {
    JSContext *cx = t->cx;
    JSAutoRealm ar(cx, t->gobj);
    JS::RootedValue rv(cx);
    bool ok = true;
    for (const auto &pre : h->opts.preload) {
      if (!evaluate(cx, pre.first.c_str(), pre.second.data(), pre.second.size(), &rv)) {
        ok = false;
        report_pending(t);
        break;
      }
    }
    if (ok && !evaluate(cx, t->filename.c_str(), t->source.data(), t->source.size(), &rv)) {
      report_pending(t);
    }
    reap(t);
  }
  h->release();
  return pts_undefined();
}

// On the tenant's thread, between two tasks, once all are idle: unhandled rejections are
// reported, every library object JS held is released, the roots go.
void teardown_fn(void *data, int status) {
  auto *t = static_cast<Tenant *>(data);
  Host *h = t->host;
  if (tls.timing) {
    tls.timing = false;
    h->run_cpu_ns.fetch_add(thread_cpu_ns() - tls.cpu0, std::memory_order_relaxed);
  }
  if (status == 0 && t->alive) {
    JSContext *cx = t->cx;
    report_rejections(t);
    {
      JSAutoRealm ar(cx, t->gobj);
      t->alive = false;
      reap(t);
      for (HandleData *d : t->live) {
        release_handle(d);
        d->t = nullptr;
      }
      t->live.clear();
      for (auto &kv : t->timers) {
        pts_timer_cancel(t->global, kv.second->timer_id);
        delete kv.second;
      }
      t->timers.clear();
      t->errs.clear();
    }
    t->fire.reset();
    t->make_error.reset();
    t->deliver.reset();
    JS::SetReservedSlot(t->gobj, 0, JS::UndefinedValue());
    t->gobj.reset();
  }
  h->release();
}

}  // namespace

bool init() { return JS_Init(); }
void shutdown() { JS_ShutDown(); }

uint64_t delay_quantile(const pts_agent_stats &s, double q) {
  uint64_t total = 0;
  for (uint64_t c : s.delay_hist) total += c;
  if (total == 0) return 0;
  uint64_t need = static_cast<uint64_t>(q * static_cast<double>(total) + 0.999999);
  if (need == 0) need = 1;
  uint64_t acc = 0;
  for (int i = 0; i < PTS_DELAY_BUCKETS; i++) {
    acc += s.delay_hist[i];
    if (acc >= need) return uint64_t{2} << i;
  }
  return uint64_t{2} << (PTS_DELAY_BUCKETS - 1);
}

int run(const Options &opts, const std::vector<TenantSpec> &specs,
        std::vector<Result> *results, Timing *timing) {
  Host h;
  h.opts = opts;
  pts_pool_options po = {};
  po.threads = opts.threads;
  po.policy = opts.policy;
  po.balance = false;  // a realm cannot leave its thread's context
  pts_pool *pool;
  int rc = pts_pool_new(&po, &pool);
  if (rc != 0) return rc;
  unsigned nth = pts_pool_threads(pool);
  std::vector<int> cpus(nth, -1);  // each thread's CPU, with pin_threads
  if (opts.pin_threads) {
    cpu_set_t set;
    std::vector<int> allowed;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) allowed.push_back(c);
    for (unsigned i = 0; i < nth && !allowed.empty() && rc == 0; i++)
      if ((rc = pts_pool_pin_thread(pool, i, allowed[i % allowed.size()])) == 0)
        cpus[i] = allowed[i % allowed.size()];
    if (allowed.empty()) rc = PTS_EINVAL;
    if (rc != 0) {
      pts_pool_shutdown(pool);
      return rc;
    }
  }
  for (size_t i = 0; i < specs.size(); i++) {
    auto t = std::make_unique<Tenant>();
    t->host = &h;
    t->index = i;
    t->name = specs[i].name;
    t->filename = specs[i].filename;
    t->source = specs[i].source;
    std::string origin = "tenant-" + std::to_string(i) + "-" + t->name;
    pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
    ao.origin = origin.c_str();
    ao.thread = static_cast<int>(i % nth);
    ao.pinned = true;
    t->thread = ao.thread;
    rc = pts_agent_new(pool, &ao, &t->agent);
    if (rc != 0) break;
    pts_agent_set_delay_stats(t->agent, true);
    h.tenants.push_back(std::move(t));
  }
  Timing tm;
  uint64_t at = mono_ns();
  if (rc == 0) {
    // Every realm first, then every script: the run's window (Timing.run_ns)
    // starts with all tenants ready.
    for (pts_task_callback fn : {setup_fn, start_fn}) {
      if (fn == start_fn) h.starting.store(true, std::memory_order_release);
      for (auto &t : h.tenants) {
        h.hold();
        if (pts_agent_post_task(t->agent, nullptr, fn, t.get(), nullptr, nullptr, nullptr) != 0) {
          h.release();
        }
      }
      if (fn == start_fn) {
        // Posted under mu, so a sender's later messages, sent directly
        // once starting is false, stay behind its early ones.
        size_t lost = 0;
        {
          std::lock_guard<std::mutex> g(h.mu);
          h.starting.store(false, std::memory_order_relaxed);
          for (Msg *m : h.early) {
            if (pts_agent_post_task(m->to->agent, nullptr, msg_fn, m, nullptr, nullptr, nullptr) != 0) {
              delete m;
              lost++;
            }
          }
          h.early.clear();
        }
        while (lost-- > 0) h.release();  // not under mu: release may take it
      }
      h.wait_idle();
      uint64_t now = mono_ns();
      (fn == setup_fn ? tm.setup_ns : tm.run_ns) = now - at;
      at = now;
    }
    // The teardown is not a task (it would count as one): it runs at the
    // tenant's next inbox drain.
    for (auto &t : h.tenants) {
      h.hold();
      if (!t->loop || pts_loop_call_from_any_thread(t->loop, teardown_fn, t.get()) != 0) {
        h.release();
      }
    }
    h.wait_idle();
  }
  tm.teardown_ns = mono_ns() - at;
  tm.run_cpu_ns = h.run_cpu_ns.load(std::memory_order_relaxed);
  if (timing) *timing = tm;
  // The counters of a step are added when the step ends, after the callback
  // that released the last pending count: read them once the agent is
  // destroyed, when no step of it can be running.
  for (auto &t : h.tenants) {
    pts_agent_destroy(t->agent, true);
    pts_agent_get_stats(t->agent, &t->stats);
  }
  pts_pool_shutdown(pool);
  if (results) {
    results->clear();
    for (auto &t : h.tenants) {
      Result r;
      r.name = t->name;
      r.thread = t->thread;
      r.cpu = cpus[static_cast<size_t>(t->thread)];
      r.failed = t->failed;
      r.out = t->out;
      r.stats = t->stats;
      results->push_back(std::move(r));
    }
  }
  for (auto &t : h.tenants) pts_agent_unref(t->agent);
  return rc;
}

}  // namespace ptsh
