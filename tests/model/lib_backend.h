// tests/model/lib_backend.h: the fuzzer's Api on top of the library's public
// C API (plus pts__loop_step for "one iteration"). One loop with a virtual
// clock per instance; everything is released in the destructor (references
// dropped, the loop freed), so ASan/LSan see any leak.
#ifndef PTSCHED_TESTS_MODEL_LIB_BACKEND_H
#define PTSCHED_TESTS_MODEL_LIB_BACKEND_H

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ptsched.h"
#include "tests/model/api.h"

namespace ptsfuzz {

class LibBackend : public Api {
 public:
  LibBackend();
  ~LibBackend() override;

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
  uint64_t now_ms() override;

  pts_loop *loop() { return loop_; }
  int signal_index(const pts_signal *s);
  // A value for the library: kind P becomes a new reference to the promise.
  pts_value to_pts(const Val &v);

  struct ListenerData {
    LibBackend *b;
    ListenFn fn;
  };

 private:
  int add_signal(pts_signal *s);  // takes over the reference
  pts_post_options post_options(int prio, int sig, int64_t delay_ms);
  pts_yield_options yield_options(int sig, int prio);
  pts_loop *loop_ = nullptr;
  std::vector<pts_global *> globals_;
  std::vector<pts_controller *> controllers_;
  std::vector<pts_signal *> signals_;
  std::vector<pts_promise *> promises_;
  std::map<int, std::unique_ptr<ListenerData>> listeners_;  // by lid
  std::map<int, std::unique_ptr<ListenerData>> handlers_;   // by lid
};

// Values back from the library (promises never come back here).
Val FromPts(pts_value v);

}  // namespace ptsfuzz

#endif  // PTSCHED_TESTS_MODEL_LIB_BACKEND_H
