// tests/model/program.cc: the generator and the interpreter of fuzz programs.
#include "tests/model/program.h"

#include <memory>
#include <sstream>

namespace ptsfuzz {

namespace {

class Bytes {
 public:
  Bytes(const uint8_t *d, size_t n) : d_(d), n_(n) {}
  unsigned next() { return i_ < n_ ? d_[i_++] : 0; }
  unsigned pick(unsigned n) { return n ? next() % n : 0; }
  bool done() const { return i_ >= n_; }

 private:
  const uint8_t *d_;
  size_t n_, i_ = 0;
};

struct Gen {
  Bytes &in;
  int next_id = 1;
  size_t budget;

  Action make(int depth, bool top) {
    Action x;
    x.id = next_id++;
    // Weights per op (kOpCount entries); loop control only at top level.
    static const unsigned kWeight[kOpCount] = {
        5 /*post*/,      3 /*yield*/,     2 /*abort*/,    4 /*setPriority*/,
        2 /*newTC*/,     1 /*newAC*/,     3 /*any*/,      1 /*timeout*/,
        1 /*abortNew*/,  4 /*addListener*/, 1 /*removeListener*/,
        1 /*setHandler*/, 2 /*queueTask*/, 1 /*timer*/,   2 /*microtask*/,
        1 /*chain*/,     1 /*info*/,      3 /*postCb*/,   2 /*yieldCb*/,
        2 /*setActive*/, 1 /*newGlobal*/,
        3 /*step*/,      3 /*runIdle*/,   3 /*advance*/};
    unsigned n = top ? kOpCount : kSetActive, total = 0;
    for (unsigned i = 0; i < n; i++) total += kWeight[i];
    unsigned r = (in.next() << 8 | in.next()) % total;
    x.op = kPost;
    for (unsigned i = 0; i < n; i++) {
      if (r < kWeight[i]) {
        x.op = (Op)i;
        break;
      }
      r -= kWeight[i];
    }
    x.a = (int)in.next();
    x.b = (int)in.next();
    x.c = (int)in.next();
    x.d = (int)in.next();
    x.ret = (int)in.pick(4);
    switch (x.op) {
      case kPost:
      case kYield:
      case kPostCb:
      case kYieldCb:
      case kQueueTask:
      case kTimer:
      case kMicrotask:
      case kAddListener:
      case kSetHandler:
        if (depth < 3) {
          unsigned n = in.pick(depth == 0 ? 4 : 3);
          for (unsigned i = 0; i < n && budget > 0; i++) {
            budget--;
            x.body.push_back(make(depth + 1, false));
          }
        }
        break;
      case kAny: {
        unsigned n = in.pick(4);
        for (unsigned i = 0; i < n; i++) x.list.push_back((int)in.next());
        break;
      }
      case kAdvance: {
        static const int64_t steps[] = {0, 1, 1, 2, 3, 5, 10, 100};
        x.e = steps[in.pick(8)];
        break;
      }
      default:
        break;
    }
    return x;
  }
};

void List(const Action &x, int depth, std::ostringstream &o) {
  static const char *names[] = {
      "post", "yield", "abort", "setPriority", "newTaskController",
      "newAbortController", "any", "timeout", "abortNew", "addListener",
      "removeListener", "setHandler", "queueTask", "timer", "microtask",
      "chain", "info", "postCb", "yieldCb", "setActive", "newGlobal", "step", "runIdle", "advance"};
  o << std::string(depth * 2, ' ') << "#" << x.id << " " << names[x.op]
    << " a=" << x.a << " b=" << x.b << " c=" << x.c << " d=" << x.d
    << " ret=" << x.ret;
  if (x.e) o << " e=" << x.e;
  if (!x.list.empty()) {
    o << " list=";
    for (int v : x.list) o << v << ",";
  }
  o << "\n";
  for (const Action &c : x.body) List(c, depth + 1, o);
}

size_t Count(const std::vector<Action> &v) {
  size_t n = 0;
  for (const Action &x : v) n += 1 + Count(x.body);
  return n;
}

// The interpreter: one per run, shared by every closure it hands out.
struct Interp : std::enable_shared_from_this<Interp> {
  Api *api;
  RunResult res;
  uint64_t max_ops;
  int tasks = 0, yields = 0, promises_made = 0;
  int globals = 1, controllers = 0, signals = 0;
  std::vector<int> task_controllers;  // indices of TaskControllers

  void trace(const std::string &s) { res.trace.push_back(s); }
  // A signal index: half the time one of the four newest.
  int sig_of(int v) const {
    if (v % 2) return signals - 1 - (v / 2) % (signals < 4 ? signals : 4);
    return (v / 2) % signals;
  }
  std::string rc(int r) { return r < 0 ? api->err(r) : std::to_string(r); }

  Val ret_of(const Action &x, int tid) {
    if (x.ret == 1) return Val::Int(tid);
    if (x.ret == 2) return Val::Err("EERROR");
    if (x.ret == 3) {
      // A promise, fulfilled now: the result adopts it (two ticks later).
      int q = api->promise_new();
      if (q < 0) return Val::Undef();
      api->promise_resolve(q, Val::Int(1000 + tid));
      return Val::Promise(q);
    }
    return Val::Undef();
  }

  void body(const std::vector<Action> &b, bool top) {
    for (const Action &x : b) exec(x, top);
  }

  // A priority argument: mostly valid, sometimes unset, rarely invalid.
  static int prio_of(int v) {
    int r = v % 8;
    if (r < 3) return r;
    if (r < 7) return kPrioUnset;
    return 5;  // invalid: TypeError
  }

  // The options of a post and of a yield, from an action's fields.
  struct PostArgs {
    int g, prio, sig;
    int64_t delay;
    std::string str() const {
      return " g" + std::to_string(g) + " p" + std::to_string(prio) + " s" +
             std::to_string(sig) + " d" + std::to_string(delay);
    }
  };
  PostArgs post_args(const Action &x) const {
    return PostArgs{x.a % globals, prio_of(x.b),
                    (x.c % 3 == 0 || signals == 0) ? -1 : x.c % signals,
                    x.d % 4 == 0 ? (x.d / 4) % 4 : 0};
  }
  struct YieldArgs {
    int g, sig, prio;
    std::string str() const {
      return " g" + std::to_string(g) + " s" + std::to_string(sig) + " p" +
             std::to_string(prio);
    }
  };
  YieldArgs yield_args(const Action &x) const {
    int sig = x.c % 4 == 0   ? kSigNone
              : x.c % 4 == 1 ? kSigInherit
              : signals      ? x.c % signals
                             : kSigNone;
    return YieldArgs{x.a % globals, sig,
                     x.b % 5 == 3 ? kPrioInherit : prio_of(x.b)};
  }

  void exec(const Action &x, bool top) {
    if (res.ops >= max_ops) return;
    res.ops++;
    std::shared_ptr<Interp> self = shared_from_this();
    std::string tag = "#" + std::to_string(x.id) + " ";
    switch (x.op) {
      case kPost: {
        PostArgs pa = post_args(x);
        int tid = ++tasks;
        const Action *px = &x;
        int p = api->post_task(pa.g, pa.prio, pa.sig, pa.delay, [self, px, tid] {
          self->trace("T" + std::to_string(tid) + " run");
          self->body(px->body, false);
          return self->ret_of(*px, tid);
        });
        trace(tag + "post T" + std::to_string(tid) + pa.str() + " -> " +
              (p < 0 ? rc(p) : "ok"));
        if (p >= 0) {
          std::string t = "T" + std::to_string(tid);
          api->then(
              p,
              [self, t](const Val &v) {
                self->trace(t + " fulfilled " + v.str());
                return Val::Undef();
              },
              [self, t](const Val &v) {
                self->trace(t + " rejected " + v.str());
                return Val::Undef();
              });
        }
        break;
      }
      case kPostCb: {
        PostArgs pa = post_args(x);
        int tid = ++tasks;
        const Action *px = &x;
        std::string t = "T" + std::to_string(tid);
        int r = api->post_direct(pa.g, pa.prio, pa.sig, pa.delay,
                                 [self, px, t](int st) {
          if (st != 0) {
            self->trace(t + " status " + self->api->err(st));
            return;
          }
          self->trace(t + " run");
          self->body(px->body, false);
        });
        trace(tag + "postCb " + t + pa.str() + " -> " + rc(r));
        break;
      }
      case kYieldCb: {
        YieldArgs ya = yield_args(x);
        std::string y = "Y" + std::to_string(++yields);
        const Action *px = &x;
        int r = api->yield_direct(ya.g, ya.sig, ya.prio, [self, px, y](int st) {
          if (st != 0) {
            self->trace(y + " status " + self->api->err(st));
            return;
          }
          self->trace(y + " resumed");
          self->body(px->body, false);
        });
        trace(tag + "yieldCb " + y + ya.str() + " -> " + rc(r));
        break;
      }
      case kYield: {
        YieldArgs ya = yield_args(x);
        int yid = ++yields;
        int p = api->yield(ya.g, ya.sig, ya.prio);
        std::string y = "Y" + std::to_string(yid);
        trace(tag + "yield " + y + ya.str() + " -> " + (p < 0 ? rc(p) : "ok"));
        if (p >= 0) {
          const Action *px = &x;
          api->then(
              p,
              [self, y, px](const Val &) {
                self->trace(y + " resumed");
                self->body(px->body, false);
                return Val::Undef();
              },
              [self, y](const Val &v) {
                self->trace(y + " rejected " + v.str());
                return Val::Undef();
              });
        }
        break;
      }
      case kAbort: {
        if (!controllers) break;
        int c = x.a % controllers;
        Val reason = Val::Int(x.id);
        int r = api->abort(c, x.b % 2 ? &reason : nullptr);
        trace(tag + "abort C" + std::to_string(c) + " -> " + rc(r));
        break;
      }
      case kSetPriority: {
        if (!controllers) break;
        int c;
        if (!task_controllers.empty() && x.a % 4 != 0)
          c = task_controllers[x.a % task_controllers.size()];
        else
          c = x.a % controllers;
        int p = x.b % 7 == 6 ? 3 : x.b % 3;
        int r = api->set_priority(c, p);
        trace(tag + "setPriority C" + std::to_string(c) + " " +
              std::to_string(p) + " -> " + rc(r));
        break;
      }
      case kNewTaskController:
      case kNewAbortController: {
        bool task = x.op == kNewTaskController;
        int c = api->controller_new(task, task ? x.a % 3 : 0);
        trace(tag + "controller -> " + rc(c));
        if (c >= 0) {
          controllers++;
          if (task) task_controllers.push_back(c);
          int s = api->controller_signal(c);
          trace(tag + "signal S" + std::to_string(s));
          signals++;
        }
        break;
      }
      case kAny: {
        std::vector<int> srcs;
        if (signals)
          for (int v : x.list) srcs.push_back(sig_of(v));
        bool task = x.a % 3 != 0;
        int prio = x.b % 3;
        int psrc = (task && signals && x.c % 2 == 0) ? sig_of(x.c / 2) : -1;
        int s = api->signal_any(task, srcs, prio, psrc);
        std::string l;
        for (int v : srcs) l += std::to_string(v) + ",";
        trace(tag + (task ? "TaskSignal.any(" : "AbortSignal.any(") + l +
              " p" + std::to_string(prio) + " src" + std::to_string(psrc) +
              ") -> " + rc(s));
        if (s >= 0) signals++;
        break;
      }
      case kTimeout: {
        int g = x.a % globals;
        int s = api->signal_timeout(g, x.b % 4);
        trace(tag + "timeout g" + std::to_string(g) + " " +
              std::to_string(x.b % 4) + " -> " + rc(s));
        if (s >= 0) signals++;
        break;
      }
      case kAbortNew: {
        Val reason = Val::Int(x.id);
        int s = api->signal_abort_new(x.b % 2 ? &reason : nullptr);
        trace(tag + "AbortSignal.abort -> " + rc(s));
        if (s >= 0) signals++;
        break;
      }
      case kAddListener:
      case kSetHandler: {
        if (!signals) break;
        int s = sig_of(x.a);
        int type = x.b % 2;
        const Action *px = &x;
        std::string l = "L" + std::to_string(x.id);
        ListenFn fn = [self, px, l](const Ev &ev) {
          self->trace(l + (ev.type == kEvAbort ? " abort S" : " pc S") +
                      std::to_string(ev.target) +
                      (ev.type == kEvAbort
                           ? ""
                           : " prev=" + std::to_string(ev.previous_priority)) +
                      " " + self->api->signal_info(ev.target));
          self->body(px->body, false);
        };
        int r;
        if (x.op == kAddListener) {
          r = api->add_listener(s, type, x.id, x.c % 3 == 0, fn);
          trace(tag + "addListener " + l + " S" + std::to_string(s) + " t" +
                std::to_string(type) + " -> " + rc(r));
        } else {
          int lid = x.c % 4 == 0 ? -1 : x.id;
          r = api->set_handler(s, type, lid, fn);
          trace(tag + "setHandler " + (lid < 0 ? "null" : l) + " S" +
                std::to_string(s) + " t" + std::to_string(type) + " -> " +
                rc(r));
        }
        break;
      }
      case kRemoveListener: {
        if (!signals) break;
        int s = x.a % signals;
        // Listener ids are action ids: guess a nearby one.
        int lid = x.id - 1 - x.c % 8;
        int r = api->remove_listener(s, x.b % 2, lid);
        trace(tag + "removeListener L" + std::to_string(lid) + " S" +
              std::to_string(s) + " -> " + rc(r));
        break;
      }
      case kQueueTask:
      case kTimer: {
        int g = x.a % globals;
        const Action *px = &x;
        std::string n = "Q" + std::to_string(x.id);
        VoidFn fn = [self, px, n] {
          self->trace(n + " run");
          self->body(px->body, false);
        };
        int r;
        if (x.op == kQueueTask) {
          r = api->queue_task(g, x.b % kSrcCount, fn);
          trace(tag + "queueTask " + n + " g" + std::to_string(g) + " src" +
                std::to_string(x.b % kSrcCount) + " -> " + rc(r));
        } else {
          r = api->timer_start(g, x.b % 4, fn);
          trace(tag + "timer " + n + " g" + std::to_string(g) + " " +
                std::to_string(x.b % 4) + " -> " + rc(r));
        }
        break;
      }
      case kMicrotask: {
        const Action *px = &x;
        std::string n = "M" + std::to_string(x.id);
        int r = api->queue_microtask([self, px, n] {
          self->trace(n + " run");
          self->body(px->body, false);
        });
        trace(tag + "microtask " + n + " -> " + rc(r));
        break;
      }
      case kChain: {
        int depth = 1 + x.a % 4;
        int d = api->promise_new();
        if (d < 0) break;
        api->promise_resolve(d, Val::Int(x.id));
        std::string n = "C" + std::to_string(x.id);
        auto link = std::make_shared<std::function<void(int)>>();
        std::weak_ptr<std::function<void(int)>> wlink = link;
        *link = [self, d, n, depth, wlink](int i) {
          auto l = wlink.lock();
          self->api->then(
              d,
              [self, n, i, depth, l](const Val &v) {
                self->trace(n + "." + std::to_string(i) + " " + v.str());
                if (i < depth && l) (*l)(i + 1);
                return Val::Undef();
              },
              ReactFn());
        };
        chains.push_back(link);
        (*link)(1);
        trace(tag + "chain " + n + " depth " + std::to_string(depth));
        break;
      }
      case kInfo: {
        if (!signals) break;
        int s = x.a % signals;
        trace(tag + "S" + std::to_string(s) + " " + api->signal_info(s));
        break;
      }
      case kSetActive: {
        if (!top) break;
        int g = x.a % globals;
        bool on = x.b % 2;
        trace(tag + "setActive g" + std::to_string(g) + " " +
              std::to_string(on) + " -> " + rc(api->set_active(g, on)));
        break;
      }
      case kNewGlobal: {
        if (!top || globals >= 3) break;
        int g = api->global_new();
        trace(tag + "newGlobal -> " + rc(g));
        if (g >= 0) globals++;
        break;
      }
      case kStep:
        if (!top) break;
        trace(tag + "step -> " + rc(api->run_step()));
        break;
      case kRunIdle:
        if (!top) break;
        trace(tag + "runUntilIdle -> " + rc(api->run_until_idle()));
        break;
      case kAdvance:
        if (!top) break;
        trace(tag + "advance " + std::to_string(x.e) + " -> " +
              rc(api->advance_ms((uint64_t)x.e)));
        break;
      default:
        break;
    }
  }

  std::vector<std::shared_ptr<std::function<void(int)>>> chains;
};

}  // namespace

size_t Program::nodes() const { return Count(top); }

std::string Program::str() const {
  std::ostringstream o;
  for (const Action &x : top) List(x, 0, o);
  return o.str();
}

Program Generate(const uint8_t *data, size_t size, size_t max_top) {
  Bytes in(data, size);
  Gen g{in, 1, 4 * max_top};
  Program p;
  while (!in.done() && p.top.size() < max_top) p.top.push_back(g.make(0, true));
  return p;
}

RunResult Run(const Program &p, Api *api, uint64_t max_ops) {
  auto in = std::make_shared<Interp>();
  in->api = api;
  in->max_ops = max_ops;
  in->body(p.top, true);
  // Everything still runnable runs, and every timer fires.
  in->trace("end runUntilIdle -> " + in->rc(api->run_until_idle()));
  in->trace("end advance -> " + in->rc(api->advance_ms(1000)));
  RunResult r = in->res;
  in->chains.clear();
  return r;
}

long FirstDifference(const std::vector<std::string> &a,
                     const std::vector<std::string> &b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return (long)i;
  if (a.size() != b.size()) return (long)n;
  return -1;
}

}  // namespace ptsfuzz
