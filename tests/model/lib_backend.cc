// tests/model/lib_backend.cc: the library side of the differential fuzzer.
#include "tests/model/lib_backend.h"

#include <cstring>

// loop/loop_internal.h: one iteration of the loop (it includes C11 atomics,
// which C++ cannot, so the one declaration is repeated here).
extern "C" int pts__loop_step(pts_loop *loop);

namespace ptsfuzz {

pts_value LibBackend::to_pts(const Val &v) {
  switch (v.k) {
    case Val::P: return pts_promise_value(promises_.at((size_t)v.i));
    case Val::I: return pts_int(v.i);
    case Val::E: {
      int code = PTS_EERROR;
      if (v.code == "EABORT") code = PTS_EABORT;
      if (v.code == "ETIMEDOUT") code = PTS_ETIMEDOUT;
      return pts_error_value(code, NULL);
    }
    default: return pts_undefined();
  }
}

Val FromPts(pts_value v) {
  switch (v.kind) {
    case PTS_VALUE_INT: return Val::Int(v.u.i);
    case PTS_VALUE_UNDEFINED: return Val::Undef();
    case PTS_VALUE_ERROR: {
      std::string n = pts_err_name(pts_error_code(v));
      if (n.rfind("PTS_", 0) == 0) n = n.substr(4);
      return Val::Err(n);
    }
    default: return Val::Err("UNEXPECTED_KIND_" + std::to_string(v.kind));
  }
}

namespace {

struct TaskData {
  LibBackend *b;
  TaskFn fn;
};
pts_value TaskTrampoline(void *data, int status) {
  auto *f = static_cast<TaskData *>(data);
  pts_value r = pts_undefined();
  if (status == 0) r = f->b->to_pts(f->fn());
  delete f;
  return r;
}

void StatusTrampoline(void *data, int status) {
  auto *f = static_cast<StatusFn *>(data);
  (*f)(status);
  delete f;
}

void VoidTrampoline(void *data, int status) {
  auto *f = static_cast<VoidFn *>(data);
  if (status == 0) (*f)();
  delete f;
}

struct Reactions {
  LibBackend *b;
  ReactFn ok, err;
};
pts_value OnOk(void *d, pts_value v) {
  auto *r = static_cast<Reactions *>(d);
  return r->b->to_pts(r->ok(FromPts(v)));
}
pts_value OnErr(void *d, pts_value v) {
  auto *r = static_cast<Reactions *>(d);
  return r->b->to_pts(r->err(FromPts(v)));
}
void DeleteReactions(void *d) { delete static_cast<Reactions *>(d); }

void Listen(void *data, const pts_event *e) {
  auto *l = static_cast<LibBackend::ListenerData *>(data);
  Ev ev{e->type == PTS_EVENT_ABORT ? kEvAbort : kEvPriorityChange,
        l->b->signal_index(e->target), e->previous_priority};
  ListenFn fn = l->fn;  // the listener may be replaced while it runs
  fn(ev);
}
// A distinct function for handler attributes, so a handler never equals a
// listener in (type, fn, data).
void Handle(void *data, const pts_event *e) { Listen(data, e); }

}  // namespace

LibBackend::LibBackend() {
  pts_loop_options o;
  memset(&o, 0, sizeof o);
  o.virtual_clock = true;
  pts_loop_new(&o, &loop_);
  globals_.push_back(pts_loop_default_global(loop_));
  pts_global_scheduler(globals_[0]);
}

LibBackend::~LibBackend() {
  for (pts_promise *p : promises_) pts_promise_unref(p);
  for (pts_signal *s : signals_) pts_signal_unref(s);
  for (pts_controller *c : controllers_) pts_controller_unref(c);
  pts_loop_free(loop_);
}

std::string LibBackend::err(int rc) {
  std::string n = pts_err_name(rc);
  return n.rfind("PTS_", 0) == 0 ? n.substr(4) : n;
}

int LibBackend::signal_index(const pts_signal *s) {
  for (size_t i = 0; i < signals_.size(); i++)
    if (signals_[i] == s) return (int)i;
  return -1;
}

int LibBackend::add_signal(pts_signal *s) {
  signals_.push_back(s);
  return (int)signals_.size() - 1;
}

int LibBackend::global_new() {
  pts_global *g;
  int rc = pts_global_new(loop_, &g);
  if (rc) return rc;
  pts_global_scheduler(g);
  globals_.push_back(g);
  return (int)globals_.size() - 1;
}

int LibBackend::set_active(int g, bool active) {
  return pts_global_set_active(globals_.at(g), active);
}

int LibBackend::controller_new(bool task, int priority) {
  pts_controller *c;
  int rc = task ? pts_task_controller_new(loop_, priority, &c)
                : pts_abort_controller_new(loop_, &c);
  if (rc) return rc;
  controllers_.push_back(c);
  return (int)controllers_.size() - 1;
}

int LibBackend::controller_signal(int c) {
  pts_signal *s = pts_controller_signal(controllers_.at(c));
  pts_signal_ref(s);
  return add_signal(s);
}

int LibBackend::abort(int c, const Val *reason) {
  if (!reason) return pts_controller_abort(controllers_.at(c), NULL);
  pts_value v = to_pts(*reason);
  int rc = pts_controller_abort(controllers_.at(c), &v);
  pts_value_release(v);
  return rc;
}

int LibBackend::set_priority(int c, int priority) {
  return pts_controller_set_priority(controllers_.at(c), priority);
}

int LibBackend::signal_any(bool task, const std::vector<int> &srcs, int prio,
                           int prio_src) {
  std::vector<pts_signal *> ss;
  for (int i : srcs) ss.push_back(signals_.at(i));
  pts_signal *out;
  int rc;
  if (task) {
    pts_task_signal_any_init init = PTS_TASK_SIGNAL_ANY_INIT;
    init.priority = prio;
    init.priority_source = prio_src >= 0 ? signals_.at(prio_src) : NULL;
    rc = pts_task_signal_any(loop_, ss.data(), ss.size(), &init, &out);
  } else {
    rc = pts_signal_any(loop_, ss.data(), ss.size(), &out);
  }
  if (rc) return rc;
  return add_signal(out);
}

int LibBackend::signal_timeout(int g, uint64_t ms) {
  pts_signal *out;
  int rc = pts_signal_timeout_new(globals_.at(g), ms, &out);
  if (rc) return rc;
  return add_signal(out);
}

int LibBackend::signal_abort_new(const Val *reason) {
  pts_signal *out;
  int rc;
  if (!reason) {
    rc = pts_signal_abort_new(loop_, NULL, &out);
  } else {
    pts_value v = to_pts(*reason);
    rc = pts_signal_abort_new(loop_, &v, &out);
    pts_value_release(v);
  }
  if (rc) return rc;
  return add_signal(out);
}

std::string LibBackend::signal_info(int i) {
  pts_signal *s = signals_.at(i);
  bool ab = pts_signal_aborted(s);
  std::string r = std::string("a=") + (ab ? "1" : "0");
  if (ab) r += " r=" + FromPts(pts_signal_reason(s)).str();
  if (pts_signal_is_task_signal(s))
    r += " p=" + std::to_string(pts_signal_priority(s));
  return r;
}

int LibBackend::add_listener(int s, int type, int lid, bool once,
                             const ListenFn &fn) {
  auto &slot = listeners_[lid];
  if (!slot) slot.reset(new ListenerData{this, fn});
  if (!slot->fn) slot->fn = fn;  // made by an earlier remove_listener
  return pts_signal_add_listener(signals_.at(s), (pts_event_type)type, Listen,
                                 slot.get(), once);
}

int LibBackend::remove_listener(int s, int type, int lid) {
  auto &slot = listeners_[lid];
  if (!slot) slot.reset(new ListenerData{this, ListenFn()});
  return pts_signal_remove_listener(signals_.at(s), (pts_event_type)type,
                                    Listen, slot.get());
}

int LibBackend::set_handler(int s, int type, int lid, const ListenFn &fn) {
  if (lid < 0)
    return pts_signal_set_handler(signals_.at(s), (pts_event_type)type, NULL,
                                  NULL);
  auto &slot = handlers_[lid];
  if (!slot) slot.reset(new ListenerData{this, fn});
  return pts_signal_set_handler(signals_.at(s), (pts_event_type)type, Handle,
                                slot.get());
}

pts_post_options LibBackend::post_options(int prio, int sig,
                                          int64_t delay_ms) {
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.priority = prio;
  o.signal = sig >= 0 ? signals_.at(sig) : NULL;
  o.delay_ms = delay_ms;
  return o;
}

pts_yield_options LibBackend::yield_options(int sig, int prio) {
  pts_yield_options o = PTS_YIELD_OPTIONS_INIT;
  o.signal = sig >= 0 ? signals_.at(sig) : NULL;
  o.signal_inherit = sig == kSigInherit;
  o.priority = prio == kPrioInherit ? PTS_PRIORITY_INHERIT : prio;
  return o;
}

int LibBackend::post_task(int g, int prio, int sig, int64_t delay_ms,
                          const TaskFn &fn) {
  pts_post_options o = post_options(prio, sig, delay_ms);
  pts_promise *p;
  auto *f = new TaskData{this, fn};
  int rc = pts_scheduler_post_task(pts_global_scheduler(globals_.at(g)),
                                   TaskTrampoline, f, &o, &p);
  if (rc) {
    delete f;
    return rc;
  }
  promises_.push_back(p);
  return (int)promises_.size() - 1;
}

int LibBackend::yield(int g, int sig, int prio) {
  pts_yield_options o = yield_options(sig, prio);
  pts_promise *p;
  int rc = pts_scheduler_yield(pts_global_scheduler(globals_.at(g)), &o, &p);
  if (rc) return rc;
  promises_.push_back(p);
  return (int)promises_.size() - 1;
}

int LibBackend::post_direct(int g, int prio, int sig, int64_t delay_ms,
                            const StatusFn &fn) {
  pts_post_options o = post_options(prio, sig, delay_ms);
  auto *f = new StatusFn(fn);
  int rc = pts_scheduler_post_task_cb(pts_global_scheduler(globals_.at(g)),
                              StatusTrampoline, f, &o);
  if (rc) delete f;
  return rc;
}

int LibBackend::yield_direct(int g, int sig, int prio, const StatusFn &fn) {
  pts_yield_options o = yield_options(sig, prio);
  auto *f = new StatusFn(fn);
  int rc = pts_scheduler_yield_cb(pts_global_scheduler(globals_.at(g)), &o,
                                  StatusTrampoline, f);
  if (rc) delete f;
  return rc;
}

int LibBackend::then(int p, const ReactFn &on_ok, const ReactFn &on_err) {
  auto *r = new Reactions{this, on_ok, on_err};
  pts_promise *out;
  int rc = pts_promise_then(promises_.at(p), on_ok ? OnOk : NULL,
                            on_err ? OnErr : NULL, r, DeleteReactions, &out);
  if (rc) return rc;  // cleanup: the header says it runs only on success
  promises_.push_back(out);
  return (int)promises_.size() - 1;
}

int LibBackend::promise_new() {
  pts_promise *p;
  int rc = pts_promise_new(loop_, &p);
  if (rc) return rc;
  promises_.push_back(p);
  return (int)promises_.size() - 1;
}

int LibBackend::promise_resolve(int p, const Val &v) {
  return pts_promise_resolve(promises_.at(p), to_pts(v));
}

int LibBackend::queue_task(int g, int source, const VoidFn &fn) {
  auto *f = new VoidFn(fn);
  int rc = pts_queue_task(globals_.at(g), (pts_task_source)source,
                          VoidTrampoline, f);
  if (rc) delete f;
  return rc;
}

int LibBackend::timer_start(int g, uint64_t ms, const VoidFn &fn) {
  auto *f = new VoidFn(fn);
  int rc = pts_timer_start(globals_.at(g), ms, VoidTrampoline, f, NULL);
  if (rc) delete f;
  return rc;
}

int LibBackend::queue_microtask(const VoidFn &fn) {
  auto *f = new VoidFn(fn);
  int rc = pts_queue_microtask(loop_, VoidTrampoline, f);
  if (rc) delete f;
  return rc;
}

int LibBackend::run_step() { return pts__loop_step(loop_); }

int LibBackend::run_until_idle() {
  return pts_loop_run(loop_, PTS_RUN_UNTIL_IDLE);
}

int LibBackend::advance_ms(uint64_t ms) {
  return pts_loop_advance(loop_, ms * 1000000u);
}

uint64_t LibBackend::now_ms() { return pts_loop_now(loop_) / 1000000u; }

}  // namespace ptsfuzz
