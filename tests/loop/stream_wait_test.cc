// The inbox pass's wait at a stream's tail (loop.c, inbox_next): a pass
// that reaches the inbox's last node with no successor linked waits before
// it takes it, once it has found a successor linked (a stream). The wait
// grows while the stream goes on, up to a cap, and stops when it ends; an
// empty inbox is not waited on. The stream's
// exactly-once and order under real producers are loop_test's
// ManyProducers tests.
#include <chrono>
#include <cstdint>
#include <thread>

#include "util.h"

extern "C" uint32_t pts_test_loop_stream_wait(pts_loop *loop);
extern "C" void pts_test_loop_set_stream_wait(pts_loop *loop, uint32_t wait);
extern "C" uint32_t pts_test_stream_wait_next(uint32_t wait, bool came);
extern "C" uint32_t pts_test_stream_wait_min(void);
extern "C" uint32_t pts_test_stream_wait_max(void);
extern "C" pts__mpsc_node *pts_test_loop_begin_push(pts_loop *loop, pts__command *cmd);
extern "C" void pts_test_loop_end_push(pts__mpsc_node *prev, pts__command *cmd);

namespace {

void never_applied(pts__command *, int) { ADD_FAILURE() << "the pass returns it, not applies it"; }
const pts__command_type cmd_type = {PTS__CMD_APPLY, never_applied};

TEST(StreamWait, DoublesWhileTheStreamGoesOnUpToTheCapAndStopsWhenItEnds) {
  const uint32_t lo = pts_test_stream_wait_min(), hi = pts_test_stream_wait_max();
  ASSERT_LT(lo, hi);
  uint32_t w = lo, waits = 0;
  while (w < hi) {  // a successor came during every wait
    uint32_t next = pts_test_stream_wait_next(w, true);
    EXPECT_EQ(next, w * 2 < hi ? w * 2 : hi);
    w = next;
    waits++;
  }
  EXPECT_LE(waits, 8u);                             // the cap in a few catch-ups
  EXPECT_EQ(pts_test_stream_wait_next(hi, true), hi);  // and no further
  EXPECT_EQ(pts_test_stream_wait_next(hi, false), 0u);  // a wait with none: the end
  EXPECT_EQ(pts_test_stream_wait_next(lo, false), 0u);
}

// Single-threaded, so no successor can come during a wait: the pass takes a
// node whose successor is linked at once, waits only at the last node, and
// that wait ends the stream.
TEST(StreamWait, OnlyTheLastNodeIsWaitedOnAndItsWaitEndsTheStream) {
  pts_loop *l = new_loop();
  const uint32_t lo = pts_test_stream_wait_min();
  pts__inbox_pass pass{};
  pass.max = 100;
  pts_test_loop_set_stream_wait(l, 8 * lo);
  EXPECT_EQ(nullptr, pts__loop_inbox_next(l, &pass));  // empty: not waited on
  EXPECT_EQ(8 * lo, pts_test_loop_stream_wait(l));
  pts__command c[2];
  for (pts__command &cmd : c) {
    cmd.type = &cmd_type;
    pts__loop_send_from_any_thread(l, &cmd);
  }
  EXPECT_EQ(&c[0], pts__loop_inbox_next(l, &pass));  // its successor is linked
  EXPECT_EQ(8 * lo, pts_test_loop_stream_wait(l));
  EXPECT_EQ(&c[1], pts__loop_inbox_next(l, &pass));  // the last: after a wait
  EXPECT_EQ(0u, pts_test_loop_stream_wait(l));  // in which none came
  EXPECT_EQ(nullptr, pts__loop_inbox_next(l, &pass));
  EXPECT_EQ(0u, pts_test_loop_stream_wait(l));
  // A pass at its limit (a step's pass of one task: a pool's loop that is
  // not alone on its thread) takes nothing and does not wait.
  pts_test_loop_set_stream_wait(l, 8 * lo);
  pts__command last;
  last.type = &cmd_type;
  pts__loop_send_from_any_thread(l, &last);
  pass.ran = pass.max;
  EXPECT_EQ(nullptr, pts__loop_inbox_next(l, &pass));
  EXPECT_EQ(8 * lo, pts_test_loop_stream_wait(l));
  pass.ran = 0;
  EXPECT_EQ(&last, pts__loop_inbox_next(l, &pass));
  EXPECT_EQ(0, pts_loop_free(l));
}

// A new loop has seen no stream: a last node is taken at once, with no
// wait (two loops answering each other on one CPU find their answers so,
// one at a time, and a wait only delayed each round trip). A successor
// found linked shows a stream, and the next last node is waited on.
TEST(StreamWait, NoWaitUntilASuccessorIsFoundLinked) {
  pts_loop *l = new_loop();
  const uint32_t lo = pts_test_stream_wait_min();
  pts__inbox_pass pass{};
  pass.max = 100;
  EXPECT_EQ(0u, pts_test_loop_stream_wait(l));  // no stream seen
  pts__command c[3];
  for (pts__command &cmd : c) cmd.type = &cmd_type;
  pts__loop_send_from_any_thread(l, &c[0]);
  EXPECT_EQ(&c[0], pts__loop_inbox_next(l, &pass));  // alone: taken at once
  EXPECT_EQ(0u, pts_test_loop_stream_wait(l));
  pts__loop_send_from_any_thread(l, &c[1]);
  pts__loop_send_from_any_thread(l, &c[2]);
  EXPECT_EQ(&c[1], pts__loop_inbox_next(l, &pass));  // its successor linked
  EXPECT_EQ(lo, pts_test_loop_stream_wait(l));       // a stream: the wait armed
  EXPECT_EQ(&c[2], pts__loop_inbox_next(l, &pass));  // waited on, none came
  EXPECT_EQ(0u, pts_test_loop_stream_wait(l));
  EXPECT_EQ(0, pts_loop_free(l));
}

// A successor that comes while the pass waits at the last node: the pass
// takes that node and the wait grows (to the cap, from a wait set above
// half of it). Another thread links the successor 100 us after the pass
// starts a wait of a few ms; an attempt in which the link lands outside the
// wait says nothing, and is made again with a longer wait.
TEST(StreamWait, ASuccessorDuringTheWaitGrowsIt) {
  const uint32_t hi = pts_test_stream_wait_max();
  bool grew = false;
  for (int attempt = 0; attempt < 5 && !grew; attempt++) {
    pts_loop *l = new_loop();
    pts__inbox_pass pass{};
    pass.max = 100;
    pts__command a, b;
    a.type = b.type = &cmd_type;
    pts__loop_send_from_any_thread(l, &a);
    pts__mpsc_node *prev = pts_test_loop_begin_push(l, &b);  // b pushed, not linked
    const uint32_t wait = (1u << 16) << attempt;               // >= 1.7 ms of pauses
    pts_test_loop_set_stream_wait(l, wait);
    std::thread link([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      pts_test_loop_end_push(prev, &b);
    });
    pts__command *got = pts__loop_inbox_next(l, &pass);
    uint32_t after = pts_test_loop_stream_wait(l);
    link.join();
    if (got == &a && after == hi) grew = true;  // came during the wait
    else if (got == &a) EXPECT_EQ(wait, after);  // linked before the pass looked
    else EXPECT_EQ(0u, after);                   // after the wait: a mid-push, stopped
    while (pts__loop_inbox_next(l, &pass) != nullptr) {
    }
    EXPECT_EQ(0, pts_loop_free(l));
  }
  EXPECT_TRUE(grew);
}

}  // namespace
