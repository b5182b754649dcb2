// tests/model/model.h: the reference model. A naive, literal transcription of
// the spec algorithms (the spec's §2 scheduling, §3 controlling tasks
// with the DOM AbortSignal algorithms, §4 event-loop modifications), plus the
// project's decided open points (docs/decisions.md) and
// the default policy between scheduler tasks and other task sources
// (docs/loop.md). It shares no code with the library: plain lists scanned in
// full, the enqueue order as a counter, signals with lists of algorithms,
// promises as lists of reactions, a virtual clock in nanoseconds. Nothing is
// ever freed before the model is destroyed. Obviously right, not fast.
//
// Microtask checkpoints are the spec's: HTML "clean up after running script"
// performs one whenever a callback returns with the script stack empty (after
// a postTask callback, before its result promise is resolved; after each
// event listener called from a task; after each task callback), and again at
// the end of every task. (Until issue 18 the library checkpointed only at the
// end of a task, and the model had an option for that.)
#ifndef PTSCHED_TESTS_MODEL_MODEL_H
#define PTSCHED_TESTS_MODEL_MODEL_H

#include <deque>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/model/api.h"

namespace ptsmodel {

using ptsfuzz::Ev;
using ptsfuzz::ListenFn;
using ptsfuzz::ReactFn;
using ptsfuzz::StatusFn;
using ptsfuzz::TaskFn;
using ptsfuzz::Val;
using ptsfuzz::VoidFn;

struct Signal;
struct Queue;
struct Scheduler;
struct Global;
struct Timer;

// spec: scheduling state
struct State {
  Signal *abort_source = nullptr;
  Signal *priority_source = nullptr;
};

struct Listener {
  int type;
  int lid;
  bool once;
  bool removed = false;
  bool is_handler = false;
  ListenFn fn;
};

// DOM AbortSignal, and TaskSignal when is_task.
struct Signal {
  int index = -1;
  bool is_task = false;
  bool aborted = false;  // "aborted": the reason is not undefined
  Val reason;
  struct Algo {
    int id;
    VoidFn fn;
  };
  std::vector<Algo> abort_algorithms;
  bool dependent = false;
  std::vector<Signal *> source_signals;     // abort sources
  std::vector<Signal *> dependent_signals;  // abort dependents
  // TaskSignal
  int priority = 1;
  bool priority_changing = false;
  std::vector<VoidFn> priority_change_algorithms;
  Signal *priority_source = nullptr;  // "source signal"
  std::vector<Signal *> priority_dependents;
  // EventTarget
  std::vector<std::shared_ptr<Listener>> listeners;
};

struct Controller {
  bool is_task;
  Signal *signal;
};

// A promise: state, result, and its reactions (ECMA-262 PromiseReaction
// records), each with the scheduling state captured by HostMakeJobCallback.
struct Promise;
struct Reaction {
  ReactFn on_ok, on_err;  // empty: pass through
  Promise *derived;
  State *state;
};
struct Promise {
  int index = -1;
  enum { Pending, Fulfilled, Rejected } st = Pending;
  bool already_resolved = false;
  Val result;
  std::vector<Reaction> reactions;
};

// spec: scheduler task
struct SchedTask {
  uint64_t enqueue_order = 0;
  VoidFn steps;
  Global *document;
};

// spec: scheduler task queue
struct Queue {
  int priority;
  bool is_continuation;
  std::list<SchedTask *> tasks;
  VoidFn removal_steps;
};

// spec: task handle
struct Handle {
  SchedTask *task = nullptr;
  Queue *queue = nullptr;
  Signal *signal = nullptr;
  int abort_algo_id = 0;
  Timer *delay = nullptr;  // a postTask delay not yet elapsed
};

struct Scheduler {
  Global *global;
  // static priority task queue map: (priority, is continuation) -> queue
  std::map<std::pair<int, bool>, Queue *> static_map;
  // dynamic priority task queue map: (TaskSignal, is continuation) -> queue
  std::map<std::pair<Signal *, bool>, Queue *> dynamic_map;
};

struct Global {
  int index;
  bool active = true;
  Scheduler scheduler;
};

// An ordinary task (HTML task on one of the loop's task sources).
struct OrdTask {
  uint64_t order;
  Global *global;
  int source;
  VoidFn steps;
};

// A timer (run steps after a timeout): fires in the loop's timer phase.
struct Timer {
  uint64_t deadline;  // UINT64_MAX: paused or never
  uint64_t remaining;
  uint64_t seq;
  bool paused = false;
  Global *global;
  VoidFn completion;
};

class Model : public ptsfuzz::Api {
 public:
  Model();
  ~Model() override;

  std::string err(int rc) override;
  int global_new() override;
  int set_active(int g, bool active) override;
  int controller_new(bool task, int priority) override;
  int controller_signal(int c) override;
  int abort(int c, const Val *reason) override;
  int set_priority(int c, int priority) override;
  int signal_any(bool task, const std::vector<int> &srcs, int prio,
                 int prio_src) override;
  int signal_timeout(int g, uint64_t ms) override;
  int signal_abort_new(const Val *reason) override;
  std::string signal_info(int s) override;
  int add_listener(int s, int type, int lid, bool once,
                   const ListenFn &fn) override;
  int remove_listener(int s, int type, int lid) override;
  int set_handler(int s, int type, int lid, const ListenFn &fn) override;
  int post_task(int g, int prio, int sig, int64_t delay_ms,
                const TaskFn &fn) override;
  int yield(int g, int sig, int prio) override;
  int post_direct(int g, int prio, int sig, int64_t delay_ms,
                  const StatusFn &fn) override;
  int yield_direct(int g, int sig, int prio, const StatusFn &fn) override;
  int then(int p, const ReactFn &on_ok, const ReactFn &on_err) override;
  int promise_new() override;
  int promise_resolve(int p, const Val &v) override;
  int queue_task(int g, int source, const VoidFn &fn) override;
  int timer_start(int g, uint64_t ms, const VoidFn &fn) override;
  int queue_microtask(const VoidFn &fn) override;
  int run_step() override;
  int run_until_idle() override;
  int advance_ms(uint64_t ms) override;
  uint64_t now_ms() override { return now_ / 1000000u; }

 private:
  // Errors (negative), named by err().
  enum {
    kEINVAL = -1,
    kENOTFOUND = -2,
    kENOTALLOWED = -3,
    kETYPE = -4,
    kEABORT = -5
  };

  // ---- script and microtasks (HTML) ----
  template <class F>
  auto invoke(F f) -> decltype(f());
  void perform_microtask_checkpoint();
  void queue_job(VoidFn job, State *captured);

  // ---- promises (ECMA-262) ----
  Promise *new_promise();
  Promise *new_hidden_promise();
  void resolve(Promise *p, const Val &v);
  void reject(Promise *p, const Val &v);
  void settle(Promise *p, bool ok, const Val &v);
  void trigger(Promise *p);
  void then_internal(Promise *p, ReactFn ok, ReactFn err, Promise *derived);

  // ---- signals (DOM, §3) ----
  Signal *new_signal(bool task);
  void signal_abort(Signal *s, const Val &reason);
  void run_abort_steps(Signal *s);
  int add_algorithm(Signal *s, VoidFn fn);
  void remove_algorithm(Signal *s, int id);
  void fire(Signal *s, const Ev &ev);
  Signal *create_dependent_signal(const std::vector<Signal *> &srcs, bool task);
  Signal *create_dependent_task_signal(const std::vector<Signal *> &srcs,
                                       int prio, Signal *prio_src);
  Signal *fixed_priority_unabortable(int prio);
  int signal_priority_change(Signal *s, int prio);
  bool has_fixed_priority(const Signal *s) const {
    return s->dependent && s->priority_source == nullptr;
  }

  // ---- scheduler (§2) ----
  State *compute_state(bool sig_inherit, Signal *sig, bool prio_inherit,
                       int prio);
  Queue *create_queue(int prio, bool cont, VoidFn removal);
  // A task's outcome: the promise of the spec, or (direct-callback forms of
  // the C API) a callback told once whether it runs or is aborted.
  struct Outcome {
    Promise *result = nullptr;
    StatusFn direct;
    bool called = false;
  };
  Handle *create_handle(Outcome *out, Signal *signal);
  int schedule_post(int gi, int prio, int si, int64_t delay_ms, Outcome *out,
                    std::function<void(State *)> run);
  int schedule_yield(int gi, int si, int prio, Outcome *out, bool direct);
  std::vector<std::unique_ptr<Outcome>> own_outcomes_;
  Queue *select_queue(Scheduler *s, Signal *sig, bool cont);
  void schedule_task_invoke(Scheduler *s, Handle *h, VoidFn steps);
  std::vector<Queue *> runnable_queues(Scheduler *s);
  Queue *select_next_queue();
  static int effective_priority(const Queue *q) {
    return q->priority * 2 + (q->is_continuation ? 1 : 0);
  }
  bool runnable(const SchedTask *t) const { return t->document->active; }
  SchedTask *first_runnable(Queue *q);

  // ---- the loop ----
  Timer *start_timer(Global *g, uint64_t delay_ns, VoidFn completion);
  bool fire_due_timers();
  int step();  // 1: a task ran; 2: something else happened; 0: nothing
  void run_until_idle_internal();
  void queue_ord(Global *g, int source, VoidFn steps);

  int script_depth_ = 1;  // top-level embedder calls are script on the stack
  bool performing_checkpoint_ = false;
  std::deque<VoidFn> microtasks_;
  State *current_state_ = nullptr;
  uint64_t next_enqueue_order_ = 1;
  uint64_t timer_seq_ = 1;
  uint64_t now_ = 0;
  int next_algo_id_ = 1;
  std::vector<Global *> globals_;
  std::vector<Signal *> signals_;  // indexed by the API
  std::vector<Controller *> controllers_;
  std::vector<Promise *> promises_;  // indexed by the API
  std::list<OrdTask *> ord_tasks_;
  std::list<Timer *> timers_;
  Signal *fixed_[3] = {nullptr, nullptr, nullptr};
  // Owned objects, freed in the destructor.
  std::vector<std::unique_ptr<Signal>> own_signals_;
  std::vector<std::unique_ptr<Promise>> own_promises_;
  std::vector<std::unique_ptr<State>> own_states_;
  std::vector<std::unique_ptr<Queue>> own_queues_;
  std::vector<std::unique_ptr<Handle>> own_handles_;
  std::vector<std::unique_ptr<SchedTask>> own_tasks_;
  std::vector<std::unique_ptr<OrdTask>> own_ord_;
  std::vector<std::unique_ptr<Timer>> own_timers_;
};

}  // namespace ptsmodel

#endif  // PTSCHED_TESTS_MODEL_MODEL_H
