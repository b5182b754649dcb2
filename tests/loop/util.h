// Shared fakes for the loop tests: a recording log, a fake scheduling state
// with a destroy counter, and a fake task provider with per-priority FIFOs.
#ifndef PTSCHED_TESTS_LOOP_UTIL_H
#define PTSCHED_TESTS_LOOP_UTIL_H

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

extern "C" {
#include "loop/loop_internal.h"
#include "ptsched/common.h"
#include "ptsched/loop.h"
#include "ptsched/promise.h"
#include "ptsched/value.h"
}

constexpr uint64_t kMs = 1000000;

// A log of labels; task callbacks take a Rec* as data.
struct Log {
  std::vector<std::string> v;
  void add(const std::string &s) { v.push_back(s); }
  std::string str() const {
    std::string out;
    for (size_t i = 0; i < v.size(); i++) out += (i ? " " : "") + v[i];
    return out;
  }
};

struct Rec {
  Log *log;
  std::string label;
  int calls = 0;
  int last_status = 1;
};

inline void rec_fn(void *data, int status) {
  Rec *r = static_cast<Rec *>(data);
  r->calls++;
  r->last_status = status;
  if (status == 0) r->log->add(r->label);
  else r->log->add(r->label + "!");
}

// A scheduling state with a destroy counter.
struct FakeState {
  pts_sched_state hdr;  // first: the loop sees only this
  int *destroyed;
  int tag;
};

inline void fake_state_destroy(pts_sched_state *s) {
  FakeState *f = reinterpret_cast<FakeState *>(s);
  (*f->destroyed)++;
  delete f;
}

inline FakeState *fake_state_new(int *destroyed, int tag) {
  FakeState *f = new FakeState;
  f->hdr.refs = 1;
  f->hdr.destroy = fake_state_destroy;
  f->destroyed = destroyed;
  f->tag = tag;
  return f;
}

inline int state_tag(pts_loop *loop) {
  pts_sched_state *s = pts__loop_current_state(loop);
  return s ? reinterpret_cast<FakeState *>(s)->tag : 0;
}

// A provider with one FIFO per effective priority 0..5.
struct FakeProvider {
  struct Item {
    uint64_t order;
    std::string label;
  };
  pts_loop *loop = nullptr;
  Log *log = nullptr;
  std::deque<Item> q[6];
  std::vector<int> changes;  // global_changed "what" values
  int destroyed = 0;
  int released = 0;  // items dropped at destroy

  void post(int prio, const std::string &label) {
    q[prio].push_back({pts__loop_take_enqueue_order(loop), label});
  }

  static int peek(void *ctx, uint64_t *order) {
    FakeProvider *p = static_cast<FakeProvider *>(ctx);
    for (int i = 5; i >= 0; i--) {
      if (!p->q[i].empty()) {
        *order = p->q[i].front().order;
        return i;
      }
    }
    return -1;
  }
  static int run_next(void *ctx) {
    FakeProvider *p = static_cast<FakeProvider *>(ctx);
    for (int i = 5; i >= 0; i--) {
      if (!p->q[i].empty()) {
        p->log->add(p->q[i].front().label);
        p->q[i].pop_front();
        return i + 1;
      }
    }
    return 0;  // the loop may ask without peeking first (loop_internal.h)
  }
  // As the contract in loop_internal.h says: tasks while the loop allows.
  static int run_burst(void *ctx) {
    FakeProvider *p = static_cast<FakeProvider *>(ctx);
    int last = 0;
    while (pts__loop_burst_may_continue(p->loop)) {
      int ran = run_next(ctx);
      if (!ran) break;
      last = ran;
      pts__loop_after_task(p->loop);
    }
    return last;
  }
  static void global_changed(void *ctx, pts_global *, int what) {
    static_cast<FakeProvider *>(ctx)->changes.push_back(what);
  }
  static void destroy(void *ctx) {
    FakeProvider *p = static_cast<FakeProvider *>(ctx);
    p->destroyed++;
    for (auto &qq : p->q) {
      p->released += (int)qq.size();
      qq.clear();
    }
  }
  static const pts__provider_ops *ops() {
    static const pts__provider_ops o = {peek, run_next, run_burst, global_changed, destroy};
    return &o;
  }
  void install(pts_loop *l, Log *lg) {
    loop = l;
    log = lg;
    ASSERT_EQ(pts__loop_set_provider(l, ops(), this), 0);
  }
};

inline pts_loop *new_loop(bool virtual_clock = false, uint32_t starvation = 0) {
  pts_loop_options o{};
  o.virtual_clock = virtual_clock;
  o.starvation_limit = starvation;
  pts_loop *l = nullptr;
  EXPECT_EQ(pts_loop_new(&o, &l), 0);
  return l;
}

#endif
