// tests/model/api.h: the operation interface the differential fuzzer drives.
//
// Two implementations: the reference model (model.h, a literal transcription
// of the spec with no code shared with the library) and the library adapter
// (lib_backend.h, calling the public C API). Objects are named by small
// indices handed out in creation order on each side; as long as both sides
// agree on every return code (which is traced), the indices agree too.
//
// Values are reduced to what the trace compares: undefined, an integer, or an
// error named by its code ("EABORT", "ETIMEDOUT", "EERROR", ...).
#ifndef PTSCHED_TESTS_MODEL_API_H
#define PTSCHED_TESTS_MODEL_API_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ptsfuzz {

struct Val {
  enum Kind { U, I, E, P } k = U;
  int64_t i = 0;  // kind I: the integer; kind P: the promise's index
  std::string code;  // kind E: "EABORT", "ETIMEDOUT", "EERROR", ...
  static Val Undef() { return Val(); }
  static Val Int(int64_t v) {
    Val r;
    r.k = I;
    r.i = v;
    return r;
  }
  static Val Err(const std::string &c) {
    Val r;
    r.k = E;
    r.code = c;
    return r;
  }
  static Val Promise(int index) {
    Val r;
    r.k = P;
    r.i = index;
    return r;
  }
  std::string str() const {
    switch (k) {
      case U: return "undefined";
      case I: return std::to_string(i);
      case P: return "promise#" + std::to_string(i);
      default: return code;
    }
  }
};

// Priorities as numbers: 0 background, 1 user-visible, 2 user-blocking.
enum { kPrioUnset = -1, kPrioInherit = -2 };
// Yield signal option: a signal index, or one of these.
enum { kSigNone = -1, kSigInherit = -2 };
// Event types.
enum { kEvAbort = 0, kEvPriorityChange = 1 };
// Ordinary task sources (same order as the C API).
enum { kSrcInput = 0, kSrcTimer, kSrcMessage, kSrcGeneric, kSrcCount };

struct Ev {
  int type;
  int target;  // signal index
  int previous_priority;
};

using TaskFn = std::function<Val()>;
using VoidFn = std::function<void()>;
using StatusFn = std::function<void(int status)>;  // 0 or an error code
using ReactFn = std::function<Val(const Val &)>;
using ListenFn = std::function<void(const Ev &)>;

// Every function returns an index (>= 0) or a 0 on success, else an error
// code name via err(): the return is negative and err(rc) names it.
class Api {
 public:
  virtual ~Api() {}
  // Error code names shared by both sides, as negative numbers.
  virtual std::string err(int rc) = 0;

  virtual int global_new() = 0;  // global 0 exists from the start
  virtual int set_active(int g, bool active) = 0;
  // Returns the controller index; its signal gets the next signal index.
  virtual int controller_new(bool task, int priority) = 0;
  virtual int controller_signal(int c) = 0;
  virtual int abort(int c, const Val *reason) = 0;
  virtual int set_priority(int c, int priority) = 0;
  // Returns a signal index. task: TaskSignal.any (prio_src >= 0 wins over prio).
  virtual int signal_any(bool task, const std::vector<int> &srcs, int prio,
                         int prio_src) = 0;
  virtual int signal_timeout(int g, uint64_t ms) = 0;
  virtual int signal_abort_new(const Val *reason) = 0;
  // "a=<0|1> r=<reason> p=<priority or ->" for the trace.
  virtual std::string signal_info(int s) = 0;
  virtual int add_listener(int s, int type, int lid, bool once,
                           const ListenFn &fn) = 0;
  virtual int remove_listener(int s, int type, int lid) = 0;
  // The handler attribute (onabort / onprioritychange); lid < 0 removes it.
  virtual int set_handler(int s, int type, int lid, const ListenFn &fn) = 0;

  // Returns the result promise's index.
  virtual int post_task(int g, int prio, int sig, int64_t delay_ms,
                        const TaskFn &fn) = 0;
  virtual int yield(int g, int sig, int prio) = 0;
  // The direct-callback forms: fn(0) runs as the task / continuation, or
  // fn(error) when it never will (the error is named by err()).
  virtual int post_direct(int g, int prio, int sig, int64_t delay_ms,
                          const StatusFn &fn) = 0;
  virtual int yield_direct(int g, int sig, int prio, const StatusFn &fn) = 0;
  virtual int then(int p, const ReactFn &on_ok, const ReactFn &on_err) = 0;
  virtual int promise_new() = 0;
  virtual int promise_resolve(int p, const Val &v) = 0;

  virtual int queue_task(int g, int source, const VoidFn &fn) = 0;
  virtual int timer_start(int g, uint64_t ms, const VoidFn &fn) = 0;
  virtual int queue_microtask(const VoidFn &fn) = 0;

  // One iteration of the loop (pts__loop_step); returns 1 if a task ran.
  virtual int run_step() = 0;
  virtual int run_until_idle() = 0;
  virtual int advance_ms(uint64_t ms) = 0;
  virtual uint64_t now_ms() = 0;
};

}  // namespace ptsfuzz

#endif  // PTSCHED_TESTS_MODEL_API_H
