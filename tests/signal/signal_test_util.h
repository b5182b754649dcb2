// tests/signal/signal_test_util.h: the fixture every signal test uses (a loop
// with a virtual clock, freed at the end, then a check that no signal,
// controller or reason value is left) and small listener helpers.
#ifndef PTS_TESTS_SIGNAL_UTIL_H
#define PTS_TESTS_SIGNAL_UTIL_H

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ptsched.h"
#include "sched/signal_internal.h"

namespace ptstest {

// A box value whose destructor counts, to check reasons are released once.
struct BoxCounter {
  int destroyed = 0;
};
inline void box_destroy(void *p) { static_cast<BoxCounter *>(p)->destroyed++; }
inline pts_value counted_box(BoxCounter *c) { return pts_box_value(c, box_destroy); }

// A listener that appends a tag to a log.
struct Tag {
  std::string *log;
  std::string tag;
};
inline void append_tag(void *data, const pts_event *) {
  Tag *t = static_cast<Tag *>(data);
  *t->log += t->tag;
}

// Counts calls and remembers the last event.
struct Count {
  int n = 0;
  pts_event last{};
};
inline void count_event(void *data, const pts_event *ev) {
  Count *c = static_cast<Count *>(data);
  c->n++;
  c->last = *ev;
}

class SignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signals_at_start_ = pts__signal_live_count();
    controllers_at_start_ = pts__controller_live_count();
    pts_loop_options opts{};
    opts.virtual_clock = true;
    ASSERT_EQ(pts_loop_new(&opts, &loop_), 0);
    global_ = pts_loop_default_global(loop_);
  }
  void TearDown() override {
    // Everything a test made must be gone once its handles are dropped; the
    // loop goes last (a pending timeout is released with it).
    ASSERT_EQ(pts_loop_free(loop_), 0);
    EXPECT_EQ(pts__signal_live_count(), signals_at_start_) << "leaked signals";
    EXPECT_EQ(pts__controller_live_count(), controllers_at_start_)
        << "leaked controllers";
  }

  pts_controller *abort_controller() {
    pts_controller *c = nullptr;
    EXPECT_EQ(pts_abort_controller_new(loop_, &c), 0);
    return c;
  }
  pts_controller *task_controller(int priority = PTS_PRIORITY_USER_VISIBLE) {
    pts_controller *c = nullptr;
    EXPECT_EQ(pts_task_controller_new(loop_, priority, &c), 0);
    return c;
  }
  pts_signal *any(std::vector<pts_signal *> v) {
    pts_signal *s = nullptr;
    EXPECT_EQ(pts_signal_any(loop_, v.data(), v.size(), &s), 0);
    return s;
  }
  pts_signal *task_any(std::vector<pts_signal *> v, int priority) {
    pts_task_signal_any_init init = {priority, nullptr};
    pts_signal *s = nullptr;
    EXPECT_EQ(pts_task_signal_any(loop_, v.data(), v.size(), &init, &s), 0);
    return s;
  }
  pts_signal *task_any(std::vector<pts_signal *> v, pts_signal *source) {
    pts_task_signal_any_init init = {PTS_PRIORITY_USER_VISIBLE, source};
    pts_signal *s = nullptr;
    EXPECT_EQ(pts_task_signal_any(loop_, v.data(), v.size(), &init, &s), 0);
    return s;
  }
  pts_signal *task_any(std::vector<pts_signal *> v) {
    pts_signal *s = nullptr;
    EXPECT_EQ(pts_task_signal_any(loop_, v.data(), v.size(), nullptr, &s), 0);
    return s;
  }
  size_t live_signals() const { return pts__signal_live_count() - signals_at_start_; }
  void advance_ms(uint64_t ms) { ASSERT_EQ(pts_loop_advance(loop_, ms * 1000000u), 0); }

  pts_loop *loop_ = nullptr;
  pts_global *global_ = nullptr;
  size_t signals_at_start_ = 0;
  size_t controllers_at_start_ = 0;
};

}  // namespace ptstest

#endif
