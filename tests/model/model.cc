// tests/model/model.cc: the reference model's algorithms. Each function
// names the spec algorithm it transcribes; steps follow the text in order.
// See model.h for what is modelled and the one deliberate option.
#include "tests/model/model.h"

#include <algorithm>
#include <cstdint>

namespace ptsmodel {

Model::Model() {
  // The loop is created with one default global.
  globals_.push_back(new Global{0, true, Scheduler{}});
  globals_[0]->scheduler.global = globals_[0];
}

Model::~Model() {
  for (Global *g : globals_) delete g;
  for (Controller *c : controllers_) delete c;
}

std::string Model::err(int rc) {
  switch (rc) {
    case kEINVAL: return "EINVAL";
    case kENOTFOUND: return "ENOTFOUND";
    case kENOTALLOWED: return "ENOTALLOWED";
    case kETYPE: return "ETYPE";
    case kEABORT: return "EABORT";
    default: return "E?" + std::to_string(rc);
  }
}

// ==== script and microtasks (HTML) ====

// spec (HTML): invoke a callback, then "clean up after running script": when
// the JavaScript execution context stack is empty, perform a microtask
// checkpoint.
template <class F>
auto Model::invoke(F f) -> decltype(f()) {
  struct Guard {
    Model *m;
    ~Guard() {
      m->script_depth_--;
      if (m->script_depth_ == 0) m->perform_microtask_checkpoint();
    }
  };
  script_depth_++;
  Guard g{this};
  return f();
}

// spec (HTML): perform a microtask checkpoint.
void Model::perform_microtask_checkpoint() {
  if (performing_checkpoint_) return;
  performing_checkpoint_ = true;
  while (!microtasks_.empty()) {
    VoidFn job = microtasks_.front();
    microtasks_.pop_front();
    job();
  }
  performing_checkpoint_ = false;
}

// HostEnqueuePromiseJob with a JobCallback made by HostMakeJobCallback (spec
// §4: it captures the current scheduling state); the job runs it under
// HostCallJobCallback (set the state, call, set the state to null).
void Model::queue_job(VoidFn job, State *captured) {
  microtasks_.push_back([this, job, captured] {
    current_state_ = captured;
    job();
    current_state_ = nullptr;
  });
}

// ==== promises (ECMA-262, with the C convention of value.h: resolving
// with an error value rejects) ====

Promise *Model::new_promise() {
  own_promises_.emplace_back(new Promise);
  Promise *p = own_promises_.back().get();
  p->index = (int)promises_.size();
  promises_.push_back(p);
  return p;
}

// The promise's resolve function. A promise value is adopted through a
// NewPromiseResolveThenableJob: one job later its then() is called with a
// fresh pair of resolving functions.
void Model::resolve(Promise *p, const Val &v) {
  if (p->already_resolved) return;
  p->already_resolved = true;
  if (v.k != Val::P) {
    settle(p, v.k != Val::E, v);
    return;
  }
  Promise *thenable = promises_[v.i];
  if (thenable == p) {  // self resolution: a TypeError
    settle(p, false, Val::Err("ETYPE"));
    return;
  }
  queue_job(
      [this, p, thenable] {
        auto done = std::make_shared<bool>(false);  // the fresh pair's record
        then_internal(
            thenable,
            [this, p, done](const Val &x) {
              if (!*done) {
                *done = true;
                settle(p, true, x);
              }
              return Val::Undef();
            },
            [this, p, done](const Val &x) {
              if (!*done) {
                *done = true;
                settle(p, false, x);
              }
              return Val::Undef();
            },
            new_hidden_promise());
      },
      current_state_);
}

// A promise the API never sees (then()'s derived promise inside a job).
Promise *Model::new_hidden_promise() {
  own_promises_.emplace_back(new Promise);
  return own_promises_.back().get();
}

// The promise's reject function.
void Model::reject(Promise *p, const Val &v) {
  if (p->already_resolved) return;
  p->already_resolved = true;
  settle(p, false, v);
}

// FulfillPromise / RejectPromise, then TriggerPromiseReactions.
void Model::settle(Promise *p, bool ok, const Val &v) {
  p->st = ok ? Promise::Fulfilled : Promise::Rejected;
  p->result = v;
  trigger(p);
}

void Model::trigger(Promise *p) {
  std::vector<Reaction> rs;
  rs.swap(p->reactions);
  for (Reaction &r : rs) {
    bool ok = p->st == Promise::Fulfilled;
    Val arg = p->result;
    // NewPromiseReactionJob
    queue_job(
        [this, r, ok, arg] {
          const ReactFn &h = ok ? r.on_ok : r.on_err;
          if (!h) {  // handler empty: pass through
            if (ok)
              resolve(r.derived, arg);
            else
              reject(r.derived, arg);
            return;
          }
          Val res = invoke([&] { return h(arg); });
          if (res.k == Val::E)
            reject(r.derived, res);
          else
            resolve(r.derived, res);
        },
        r.state);
  }
}

// PerformPromiseThen
void Model::then_internal(Promise *p, ReactFn ok, ReactFn err,
                          Promise *derived) {
  Reaction r{ok, err, derived, current_state_};  // HostMakeJobCallback
  p->reactions.push_back(r);
  if (p->st != Promise::Pending) trigger(p);
}

int Model::then(int p, const ReactFn &on_ok, const ReactFn &on_err) {
  if (p < 0 || p >= (int)promises_.size()) return kEINVAL;
  Promise *d = new_promise();
  then_internal(promises_[p], on_ok, on_err, d);
  return d->index;
}

int Model::promise_new() { return new_promise()->index; }

int Model::promise_resolve(int p, const Val &v) {
  if (p < 0 || p >= (int)promises_.size()) return kEINVAL;
  resolve(promises_[p], v);
  return 0;
}

int Model::queue_microtask(const VoidFn &fn) {
  // queueMicrotask captures the scheduling state (docs/decisions.md).
  queue_job([this, fn] { invoke([&] { fn(); }); }, current_state_);
  return 0;
}

// ==== signals (DOM, §3) ====

Signal *Model::new_signal(bool task) {
  own_signals_.emplace_back(new Signal);
  Signal *s = own_signals_.back().get();
  s->is_task = task;
  s->index = (int)signals_.size();
  signals_.push_back(s);
  return s;
}

// spec (DOM): signal abort
void Model::signal_abort(Signal *s, const Val &reason) {
  // 1. If signal is aborted, return.
  if (s->aborted) return;
  // 2. Set its abort reason.
  s->aborted = true;
  s->reason = reason;
  // 3-4. Mark every non-aborted dependent first.
  std::vector<Signal *> to_abort;
  for (Signal *d : s->dependent_signals) {
    if (d->aborted) continue;
    d->aborted = true;
    d->reason = s->reason;
    to_abort.push_back(d);
  }
  // 5. Run the abort steps for signal.
  run_abort_steps(s);
  // 6. Then for each dependent.
  for (Signal *d : to_abort) run_abort_steps(d);
}

// spec (DOM): run the abort steps
void Model::run_abort_steps(Signal *s) {
  std::vector<Signal::Algo> algos;
  algos.swap(s->abort_algorithms);  // run each, then empty the set
  for (Signal::Algo &a : algos) a.fn();
  fire(s, Ev{ptsfuzz::kEvAbort, s->index, 0});
}

int Model::add_algorithm(Signal *s, VoidFn fn) {
  if (s->aborted) return 0;  // spec: if aborted, do nothing
  int id = next_algo_id_++;
  s->abort_algorithms.push_back({id, fn});
  return id;
}

void Model::remove_algorithm(Signal *s, int id) {
  auto &v = s->abort_algorithms;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [id](const Signal::Algo &a) { return a.id == id; }),
          v.end());
}

// spec (DOM): dispatch an event: listeners in order, a clone of the list;
// removed ones are skipped; "once" ones are removed before their call.
void Model::fire(Signal *s, const Ev &ev) {
  std::vector<std::shared_ptr<Listener>> ls = s->listeners;
  for (auto &l : ls) {
    if (l->removed || l->type != ev.type) continue;
    if (l->once) {
      l->removed = true;
      auto &v = s->listeners;
      v.erase(std::find(v.begin(), v.end(), l));
    }
    ListenFn fn = l->fn;
    invoke([&] { fn(ev); });
  }
}

int Model::add_listener(int si, int type, int lid, bool once,
                        const ListenFn &fn) {
  if (si < 0 || si >= (int)signals_.size()) return kEINVAL;
  Signal *s = signals_[si];
  for (auto &l : s->listeners)
    if (!l->is_handler && l->type == type && l->lid == lid) return 0;
  auto l = std::make_shared<Listener>();
  l->type = type;
  l->lid = lid;
  l->once = once;
  l->fn = fn;
  s->listeners.push_back(l);
  return 0;
}

int Model::remove_listener(int si, int type, int lid) {
  if (si < 0 || si >= (int)signals_.size()) return kEINVAL;
  Signal *s = signals_[si];
  for (auto it = s->listeners.begin(); it != s->listeners.end(); ++it) {
    auto &l = *it;
    if (!l->is_handler && l->type == type && l->lid == lid) {
      l->removed = true;
      s->listeners.erase(it);
      return 0;
    }
  }
  return kENOTFOUND;
}

// The event handler attribute: keeps the place it first got; null removes.
int Model::set_handler(int si, int type, int lid, const ListenFn &fn) {
  if (si < 0 || si >= (int)signals_.size()) return kEINVAL;
  Signal *s = signals_[si];
  for (auto it = s->listeners.begin(); it != s->listeners.end(); ++it) {
    auto &l = *it;
    if (l->is_handler && l->type == type) {
      if (lid < 0) {
        l->removed = true;
        s->listeners.erase(it);
      } else {
        l->fn = fn;
        l->lid = lid;
      }
      return 0;
    }
  }
  if (lid < 0) return 0;
  auto l = std::make_shared<Listener>();
  l->type = type;
  l->lid = lid;
  l->once = false;
  l->is_handler = true;
  l->fn = fn;
  s->listeners.push_back(l);
  return 0;
}

// spec (DOM): create a dependent signal
Signal *Model::create_dependent_signal(const std::vector<Signal *> &srcs,
                                       bool task) {
  Signal *r = new_signal(task);
  for (Signal *s : srcs) {
    if (s->aborted) {
      r->aborted = true;
      r->reason = s->reason;
      return r;
    }
  }
  r->dependent = true;
  auto link = [r](Signal *src) {
    if (std::find(r->source_signals.begin(), r->source_signals.end(), src) ==
        r->source_signals.end())
      r->source_signals.push_back(src);
    if (std::find(src->dependent_signals.begin(), src->dependent_signals.end(),
                  r) == src->dependent_signals.end())
      src->dependent_signals.push_back(r);
  };
  for (Signal *s : srcs) {
    if (!s->dependent)
      link(s);
    else
      for (Signal *src : s->source_signals) link(src);
  }
  return r;
}

// spec (§3): create a dependent task signal
Signal *Model::create_dependent_task_signal(const std::vector<Signal *> &srcs,
                                            int prio, Signal *source) {
  Signal *r = create_dependent_signal(srcs, true);
  r->dependent = true;
  if (source == nullptr) {
    r->priority = prio;
  } else {
    r->priority = source->priority;
    if (!has_fixed_priority(source)) {
      if (source->dependent) source = source->priority_source;
      r->priority_source = source;
      source->priority_dependents.push_back(r);
    }
  }
  return r;
}

// spec (§3): create a fixed priority unabortable task signal (cached, one
// per priority, as the note allows). Not in the API's signal list.
Signal *Model::fixed_priority_unabortable(int prio) {
  if (fixed_[prio] == nullptr) {
    own_signals_.emplace_back(new Signal);
    Signal *s = own_signals_.back().get();
    s->is_task = true;
    s->dependent = true;
    s->priority = prio;
    fixed_[prio] = s;
  }
  return fixed_[prio];
}

// spec (§3): signal priority change
int Model::signal_priority_change(Signal *s, int prio) {
  if (s->priority_changing) return kENOTALLOWED;  // 1. NotAllowedError
  if (s->priority == prio) return 0;              // 2.
  s->priority_changing = true;                    // 3.
  int previous = s->priority;                     // 4.
  s->priority = prio;
  std::vector<VoidFn> algos = s->priority_change_algorithms;  // 5.
  for (VoidFn &a : algos) a();
  fire(s, Ev{ptsfuzz::kEvPriorityChange, s->index, previous});  // 6.
  // 7. "For each dependent of signal's dependent signals": the set is read
  // live, so a dependent created by a listener during this loop (whose
  // priority was copied from a signal not yet updated) is visited too and
  // ends with its source's priority. A snapshot would leave it stale; the
  // text does not say which (see docs/reliability.md, findings).
  for (size_t k = 0; k < s->priority_dependents.size(); k++)
    signal_priority_change(s->priority_dependents[k], prio);
  s->priority_changing = false;  // 8.
  return 0;
}

int Model::controller_new(bool task, int priority) {
  if (task && (priority < 0 || priority > 2)) return kETYPE;
  Signal *s = new_signal(task);
  if (task) s->priority = priority;
  controllers_.push_back(new Controller{task, s});
  return (int)controllers_.size() - 1;
}

int Model::controller_signal(int c) {
  if (c < 0 || c >= (int)controllers_.size()) return kEINVAL;
  return controllers_[c]->signal->index;
}

int Model::abort(int c, const Val *reason) {
  if (c < 0 || c >= (int)controllers_.size()) return kEINVAL;
  signal_abort(controllers_[c]->signal,
               reason ? *reason : Val::Err("EABORT"));
  return 0;
}

int Model::set_priority(int c, int priority) {
  if (c < 0 || c >= (int)controllers_.size()) return kEINVAL;
  Controller *k = controllers_[c];
  if (!k->is_task) return kEINVAL;
  if (priority < 0 || priority > 2) return kETYPE;
  return signal_priority_change(k->signal, priority);
}

int Model::signal_any(bool task, const std::vector<int> &srcs, int prio,
                      int prio_src) {
  std::vector<Signal *> ss;
  for (int i : srcs) {
    if (i < 0 || i >= (int)signals_.size()) return kEINVAL;
    ss.push_back(signals_[i]);
  }
  if (!task) return create_dependent_signal(ss, false)->index;
  Signal *source = nullptr;
  if (prio_src >= 0) {
    if (prio_src >= (int)signals_.size()) return kEINVAL;
    source = signals_[prio_src];
    if (!source->is_task) return kETYPE;  // IDL: (TaskPriority or TaskSignal)
  } else if (prio < 0 || prio > 2) {
    return kETYPE;
  }
  return create_dependent_task_signal(ss, prio, source)->index;
}

// spec (DOM): AbortSignal.timeout(ms): run steps after a timeout (timer task
// source) that queue a task to signal abort with a TimeoutError.
int Model::signal_timeout(int gi, uint64_t ms) {
  if (gi < 0 || gi >= (int)globals_.size()) return kEINVAL;
  Global *g = globals_[gi];
  Signal *s = new_signal(false);
  start_timer(g, ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u,
              [this, g, s] {
                queue_ord(g, ptsfuzz::kSrcTimer,
                          [this, s] { signal_abort(s, Val::Err("ETIMEDOUT")); });
              });
  return s->index;
}

int Model::signal_abort_new(const Val *reason) {
  Signal *s = new_signal(false);
  s->aborted = true;
  s->reason = reason ? *reason : Val::Err("EABORT");
  return s->index;
}

std::string Model::signal_info(int si) {
  if (si < 0 || si >= (int)signals_.size()) return "?";
  Signal *s = signals_[si];
  std::string r = std::string("a=") + (s->aborted ? "1" : "0");
  if (s->aborted) r += " r=" + s->reason.str();
  if (s->is_task) r += " p=" + std::to_string(s->priority);
  return r;
}

// ==== the scheduler (§2) ====

// spec: compute the scheduling state from options
State *Model::compute_state(bool sig_inherit, Signal *sig, bool prio_inherit,
                            int prio) {
  own_states_.emplace_back(new State);
  State *r = own_states_.back().get();
  State *inherited = current_state_;
  if (sig_inherit) {
    if (inherited) r->abort_source = inherited->abort_source;
  } else {
    r->abort_source = sig;
  }
  if (prio_inherit) {
    if (inherited) r->priority_source = inherited->priority_source;
  } else if (prio >= 0) {
    r->priority_source = fixed_priority_unabortable(prio);
  } else if (sig != nullptr && sig->is_task) {
    r->priority_source = sig;
  }
  if (r->priority_source == nullptr)
    r->priority_source = fixed_priority_unabortable(1);
  return r;
}

// spec: create a scheduler task queue
Queue *Model::create_queue(int prio, bool cont, VoidFn removal) {
  own_queues_.emplace_back(new Queue);
  Queue *q = own_queues_.back().get();
  q->priority = prio;
  q->is_continuation = cont;
  q->removal_steps = removal;
  return q;
}

// spec: create a task handle (its abort steps are added here; the task
// complete steps are written out in schedule_task_invoke). For the direct
// callback forms, "reject result" becomes "call the callback with
// PTS_EABORT" (at once, once).
Handle *Model::create_handle(Outcome *out, Signal *signal) {
  own_handles_.emplace_back(new Handle);
  Handle *h = own_handles_.back().get();
  h->signal = signal;
  if (signal != nullptr) {
    h->abort_algo_id = add_algorithm(signal, [this, h, out, signal] {
      // abort steps
      if (out->result) {
        reject(out->result, signal->reason);
      } else if (!out->called) {
        out->called = true;
        StatusFn fn = out->direct;
        invoke([&] { fn(kEABORT); });
      }
      // docs/decisions.md: aborting a delayed task removes its timer (the spec lets
      // it run and find the signal aborted; only the virtual clock's stops
      // in pts_loop_advance can tell the difference).
      if (h->delay != nullptr) {
        timers_.remove(h->delay);
        h->delay = nullptr;
      }
      if (h->task != nullptr) {
        h->queue->tasks.remove(h->task);
        if (h->queue->tasks.empty()) h->queue->removal_steps();
      }
    });
  }
  return h;
}

// spec: select the scheduler task queue. Removal steps remove the map entry
// only if it still maps to this queue (docs/decisions.md: the seed text's defect).
Queue *Model::select_queue(Scheduler *s, Signal *sig, bool cont) {
  if (!has_fixed_priority(sig)) {
    auto key = std::make_pair(sig, cont);
    if (!s->dynamic_map.count(key)) {
      Queue *q = create_queue(sig->priority, cont, nullptr);
      q->removal_steps = [s, key, q] {
        auto it = s->dynamic_map.find(key);
        if (it != s->dynamic_map.end() && it->second == q)
          s->dynamic_map.erase(it);
      };
      s->dynamic_map[key] = q;
      sig->priority_change_algorithms.push_back(
          [q, sig] { q->priority = sig->priority; });
    }
    return s->dynamic_map[key];
  }
  auto key = std::make_pair(sig->priority, cont);
  if (!s->static_map.count(key)) {
    Queue *q = create_queue(sig->priority, cont, nullptr);
    q->removal_steps = [s, key, q] {
      auto it = s->static_map.find(key);
      if (it != s->static_map.end() && it->second == q)
        s->static_map.erase(it);
    };
    s->static_map[key] = q;
  }
  return s->static_map[key];
}

// spec: schedule a task to invoke an algorithm
void Model::schedule_task_invoke(Scheduler *s, Handle *h, VoidFn steps) {
  uint64_t order = next_enqueue_order_++;
  own_tasks_.emplace_back(new SchedTask);
  SchedTask *t = own_tasks_.back().get();
  t->enqueue_order = order;
  t->document = s->global;
  t->steps = [this, h, steps] {
    steps();
    // task complete steps
    if (h->signal) remove_algorithm(h->signal, h->abort_algo_id);
    if (h->queue->tasks.empty()) h->queue->removal_steps();
  };
  h->queue->tasks.push_back(t);
  h->task = t;
}

// spec: schedule a postTask task. run(state) is the task's steps between
// setting and clearing the current scheduling state.
int Model::schedule_post(int gi, int prio, int si, int64_t delay_ms,
                         Outcome *out, std::function<void(State *)> run) {
  // WebIDL conversions (docs/api.md): unknown priority or delay out of range.
  if (gi < 0 || gi >= (int)globals_.size()) return kEINVAL;
  if (prio != ptsfuzz::kPrioUnset && (prio < 0 || prio > 2)) return kETYPE;
  if (delay_ms < 0 || delay_ms > (int64_t(1) << 53) - 1) return kETYPE;
  Signal *sigopt = nullptr;
  if (si >= 0) {
    if (si >= (int)signals_.size()) return kEINVAL;
    sigopt = signals_[si];
  }
  Scheduler *scheduler = &globals_[gi]->scheduler;
  if (!out->direct) out->result = new_promise();           // 1.
  State *state = compute_state(false, sigopt, false, prio);  // 2.
  Signal *signal = state->abort_source;                      // 3.
  if (signal != nullptr && signal->aborted) {                // 4.
    if (!out->result) return kEABORT;  // docs/decisions.md: direct form fails
    reject(out->result, signal->reason);
    return out->result->index;
  }
  Handle *h = create_handle(out, signal);  // 5-6.
  auto enqueue_steps = [this, scheduler, h, state, run] {  // 7.
    h->queue = select_queue(scheduler, state->priority_source, false);
    schedule_task_invoke(scheduler, h, [this, state, run] {
      current_state_ = state;
      run(state);
      current_state_ = nullptr;
    });
  };
  if (delay_ms > 0) {  // 8-9.
    h->delay = start_timer(scheduler->global, uint64_t(delay_ms) * 1000000u,
                           [h, signal, enqueue_steps] {
                             h->delay = nullptr;
                             if (signal == nullptr || !signal->aborted)
                               enqueue_steps();
                           });
  } else {
    enqueue_steps();  // 10.
  }
  return out->result ? out->result->index : 0;  // 11.
}

int Model::post_task(int gi, int prio, int si, int64_t delay_ms,
                     const TaskFn &callback) {
  own_outcomes_.emplace_back(new Outcome);
  Outcome *out = own_outcomes_.back().get();
  return schedule_post(gi, prio, si, delay_ms, out, [this, out, callback](State *) {
    Promise *result = out->result;
    Val r = invoke([&] { return callback(); });
    if (r.k == Val::E)
      reject(result, r);
    else
      resolve(result, r);
  });
}

int Model::post_direct(int gi, int prio, int si, int64_t delay_ms,
                       const StatusFn &fn) {
  own_outcomes_.emplace_back(new Outcome);
  Outcome *out = own_outcomes_.back().get();
  out->direct = fn;
  return schedule_post(gi, prio, si, delay_ms, out, [this, out](State *) {
    if (out->called) return;  // aborted before: never a second call
    out->called = true;
    StatusFn f = out->direct;
    invoke([&] { f(0); });
  });
}

// spec: schedule a yield continuation
int Model::schedule_yield(int gi, int si, int prio, Outcome *out, bool direct) {
  if (gi < 0 || gi >= (int)globals_.size()) return kEINVAL;
  if (prio != ptsfuzz::kPrioUnset && prio != ptsfuzz::kPrioInherit &&
      (prio < 0 || prio > 2))
    return kETYPE;
  Signal *sig = nullptr;
  if (si >= 0) {
    if (si >= (int)signals_.size()) return kEINVAL;
    sig = signals_[si];
  }
  Scheduler *scheduler = &globals_[gi]->scheduler;
  if (!direct) out->result = new_promise();  // 1.
  bool abort_given = si != ptsfuzz::kSigNone;
  bool prio_given = prio != ptsfuzz::kPrioUnset;
  bool abort_inherit = si == ptsfuzz::kSigInherit;
  bool prio_inherit = prio == ptsfuzz::kPrioInherit;
  if (!abort_given && !prio_given) {  // 4.
    abort_inherit = true;
    prio_inherit = true;
  } else if (abort_inherit && !prio_given) {  // 5.
    prio_inherit = true;
  }
  State *state = compute_state(abort_inherit, sig, prio_inherit,
                               prio_inherit ? -1 : prio);  // 6.
  Signal *signal = state->abort_source;                    // 7.
  if (signal != nullptr && signal->aborted) {              // 8.
    if (direct) return kEABORT;
    reject(out->result, signal->reason);
    return out->result->index;
  }
  Handle *h = create_handle(out, signal);  // 9-10.
  h->queue = select_queue(scheduler, state->priority_source, true);  // 11.
  schedule_task_invoke(scheduler, h, [this, out, state] {
    if (out->result) {
      resolve(out->result, Val::Undef());  // spec: resolve result
      return;
    }
    // Direct form (scheduler.h): the callback runs as the continuation with
    // the computed state current, so a yield inside it inherits again.
    if (out->called) return;
    out->called = true;
    StatusFn f = out->direct;
    current_state_ = state;
    invoke([&] { f(0); });
    current_state_ = nullptr;
  });
  return out->result ? out->result->index : 0;
}

int Model::yield(int gi, int si, int prio) {
  own_outcomes_.emplace_back(new Outcome);
  return schedule_yield(gi, si, prio, own_outcomes_.back().get(), false);
}

int Model::yield_direct(int gi, int si, int prio, const StatusFn &fn) {
  own_outcomes_.emplace_back(new Outcome);
  Outcome *out = own_outcomes_.back().get();
  out->direct = fn;
  return schedule_yield(gi, si, prio, out, true);
}

std::vector<Queue *> Model::runnable_queues(Scheduler *s) {
  std::vector<Queue *> qs;
  for (auto &kv : s->static_map) qs.push_back(kv.second);
  for (auto &kv : s->dynamic_map) qs.push_back(kv.second);
  std::vector<Queue *> r;
  for (Queue *q : qs)
    if (first_runnable(q) != nullptr) r.push_back(q);
  return r;
}

SchedTask *Model::first_runnable(Queue *q) {
  for (SchedTask *t : q->tasks)
    if (runnable(t)) return t;
  return nullptr;
}

// spec: select the next scheduler task queue from all schedulers
Queue *Model::select_next_queue() {
  std::vector<Queue *> queues;
  for (Global *g : globals_) {
    std::vector<Queue *> r = runnable_queues(&g->scheduler);
    queues.insert(queues.end(), r.begin(), r.end());
  }
  if (queues.empty()) return nullptr;
  int maxp = -1;
  for (Queue *q : queues) maxp = std::max(maxp, effective_priority(q));
  Queue *best = nullptr;
  for (Queue *q : queues) {
    if (effective_priority(q) != maxp) continue;
    if (best == nullptr || first_runnable(q)->enqueue_order <
                               first_runnable(best)->enqueue_order)
      best = q;
  }
  return best;
}

// ==== the loop (HTML event loop with docs/loop.md's policy) ====

int Model::global_new() {
  Global *g = new Global{(int)globals_.size(), true, Scheduler{}};
  g->scheduler.global = g;
  globals_.push_back(g);
  return g->index;
}

// Fully active or not: an inactive global's tasks are not runnable and its
// timers stop counting down (docs/loop.md).
int Model::set_active(int gi, bool active) {
  if (gi < 0 || gi >= (int)globals_.size()) return kEINVAL;
  Global *g = globals_[gi];
  if (g->active == active) return 0;
  g->active = active;
  for (Timer *t : timers_) {
    if (t->global != g) continue;
    if (!active && !t->paused) {
      t->remaining = t->deadline == UINT64_MAX ? UINT64_MAX
                     : t->deadline > now_      ? t->deadline - now_
                                               : 0;
      t->deadline = UINT64_MAX;
      t->paused = true;
    } else if (active && t->paused) {
      t->deadline = t->remaining > UINT64_MAX - now_ ? UINT64_MAX
                                                     : now_ + t->remaining;
      t->paused = false;
    }
  }
  return 0;
}

void Model::queue_ord(Global *g, int source, VoidFn steps) {
  own_ord_.emplace_back(new OrdTask{next_enqueue_order_++, g, source, steps});
  ord_tasks_.push_back(own_ord_.back().get());
}

int Model::queue_task(int gi, int source, const VoidFn &fn) {
  if (gi < 0 || gi >= (int)globals_.size()) return kEINVAL;
  if (source < 0 || source >= ptsfuzz::kSrcCount) return kEINVAL;
  queue_ord(globals_[gi], source, [this, fn] { invoke([&] { fn(); }); });
  return 0;
}

Timer *Model::start_timer(Global *g, uint64_t delay_ns, VoidFn completion) {
  own_timers_.emplace_back(new Timer);
  Timer *t = own_timers_.back().get();
  t->seq = timer_seq_++;
  t->global = g;
  t->completion = completion;
  if (g->active) {
    t->deadline = delay_ns > UINT64_MAX - now_ ? UINT64_MAX : now_ + delay_ns;
  } else {
    t->paused = true;
    t->remaining = delay_ns;
    t->deadline = UINT64_MAX;
  }
  timers_.push_back(t);
  return t;
}

// setTimeout-like: a 0 ms timer queues its task at the call (docs/decisions.md).
int Model::timer_start(int gi, uint64_t ms, const VoidFn &fn) {
  if (gi < 0 || gi >= (int)globals_.size()) return kEINVAL;
  Global *g = globals_[gi];
  VoidFn task = [this, fn] { invoke([&] { fn(); }); };
  if (ms == 0) {
    queue_ord(g, ptsfuzz::kSrcTimer, task);
  } else {
    start_timer(g, ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u,
                [this, g, task] { queue_ord(g, ptsfuzz::kSrcTimer, task); });
  }
  return 0;
}

// The timer phase: every due timer in (deadline, start sequence) order;
// timers started during the phase wait for the next one.
bool Model::fire_due_timers() {
  uint64_t limit = timer_seq_;
  bool fired = false;
  for (;;) {
    Timer *best = nullptr;
    for (Timer *t : timers_) {
      if (t->paused || t->deadline == UINT64_MAX || t->deadline > now_ ||
          t->seq >= limit)
        continue;
      if (best == nullptr || t->deadline < best->deadline ||
          (t->deadline == best->deadline && t->seq < best->seq))
        best = t;
    }
    if (best == nullptr) break;
    timers_.remove(best);
    fired = true;
    best->completion();
  }
  return fired;
}

// One iteration: due timers, a checkpoint if microtasks are pending, one task
// chosen by the default policy, a checkpoint.
int Model::step() {
  int did = 0;
  if (fire_due_timers()) did = 2;
  if (!microtasks_.empty()) {
    perform_microtask_checkpoint();
    did = 2;
  }
  OrdTask *input = nullptr, *fifo = nullptr;
  for (OrdTask *t : ord_tasks_) {
    if (!t->global->active) continue;
    OrdTask *&slot = t->source == ptsfuzz::kSrcInput ? input : fifo;
    if (slot == nullptr || t->order < slot->order) slot = t;
  }
  Queue *sq = select_next_queue();
  int eff = sq ? effective_priority(sq) : -1;
  OrdTask *run_ord = nullptr;
  bool run_sched = false;
  if (input) {
    run_ord = input;
  } else if (sq && eff >= 3) {
    run_sched = true;
  } else if (fifo && !(sq && eff == 2 &&
                       first_runnable(sq)->enqueue_order < fifo->order)) {
    run_ord = fifo;
  } else if (sq) {
    run_sched = true;
  }
  if (run_ord) {
    ord_tasks_.remove(run_ord);
    run_ord->steps();
  } else if (run_sched) {
    SchedTask *t = first_runnable(sq);
    sq->tasks.remove(t);
    t->steps();
  } else {
    return did;
  }
  perform_microtask_checkpoint();
  return 1;
}

int Model::run_step() {
  script_depth_ = 0;
  int r = step();
  script_depth_ = 1;
  return r == 1 ? 1 : 0;
}

void Model::run_until_idle_internal() {
  while (step() != 0) {
  }
}

int Model::run_until_idle() {
  script_depth_ = 0;
  int ran = 0;
  int d;
  while ((d = step()) != 0)
    if (d == 1) ran = 1;
  script_depth_ = 1;
  return ran;
}

// Virtual clock (docs/loop.md): stop at each timer deadline on the way, run
// until idle there; end at start + delta, run until idle.
int Model::advance_ms(uint64_t ms) {
  script_depth_ = 0;
  uint64_t delta = ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u;
  uint64_t target = delta > UINT64_MAX - now_ ? UINT64_MAX : now_ + delta;
  for (;;) {
    uint64_t d = UINT64_MAX;
    for (Timer *t : timers_)
      if (!t->paused) d = std::min(d, t->deadline);
    if (d == UINT64_MAX || d > target) break;
    if (d > now_) now_ = d;
    run_until_idle_internal();
  }
  now_ = target;
  run_until_idle_internal();
  script_depth_ = 1;
  return 0;
}

}  // namespace ptsmodel
