/* tests/loop/peek.c: a C window into the loop's private struct for tests
 * (loop_impl.h is C only). */
#include "loop/loop_impl.h"

uint64_t pts_test_loop_wakes(pts_loop *loop);
uint64_t pts_test_loop_wakes(pts_loop *loop) {
  return pts__parker_wake_syscalls(&loop->parker);
}

/* A producer stopped between the two steps of its push (sync/mpsc.c):
 * begin_push exchanges cmd into the inbox's head and returns the node its
 * link goes into; end_push writes that link. */
pts__mpsc_node *pts_test_loop_begin_push(pts_loop *loop, pts__command *cmd);
pts__mpsc_node *pts_test_loop_begin_push(pts_loop *loop, pts__command *cmd) {
  atomic_store_explicit(&cmd->node.next, NULL, memory_order_relaxed);
  return atomic_exchange_explicit(&loop->inbox.head, &cmd->node, memory_order_seq_cst);
}
void pts_test_loop_end_push(pts__mpsc_node *prev, pts__command *cmd);
void pts_test_loop_end_push(pts__mpsc_node *prev, pts__command *cmd) {
  atomic_store_explicit(&prev->next, &cmd->node, memory_order_release);
}

/* The inbox pass's wait at a stream's tail (loop.c, inbox_next). */
uint32_t pts_test_loop_stream_wait(pts_loop *loop);
uint32_t pts_test_loop_stream_wait(pts_loop *loop) {
  return loop->stream_seen ? loop->stream_wait : 0; /* 0: no wait */
}
void pts_test_loop_set_stream_wait(pts_loop *loop, uint32_t wait);
void pts_test_loop_set_stream_wait(pts_loop *loop, uint32_t wait) {
  loop->stream_seen = wait != 0;
  loop->stream_wait = wait != 0 ? wait : PTS__STREAM_WAIT_MIN;
}
uint32_t pts_test_stream_wait_next(uint32_t wait, bool came);
uint32_t pts_test_stream_wait_next(uint32_t wait, bool came) {
  return pts__stream_wait_next(wait, came);
}
uint32_t pts_test_stream_wait_min(void);
uint32_t pts_test_stream_wait_min(void) { return PTS__STREAM_WAIT_MIN; }
uint32_t pts_test_stream_wait_max(void);
uint32_t pts_test_stream_wait_max(void) { return PTS__STREAM_WAIT_MAX; }

/* The ready list's count (loop_impl.h, nready) and its length by a walk:
 * the hot paths trust the count, so the two must agree. */
uint32_t pts_test_loop_ready_count(pts_loop *loop);
uint32_t pts_test_loop_ready_count(pts_loop *loop) { return loop->nready; }
uint32_t pts_test_loop_ready_len(pts_loop *loop);
uint32_t pts_test_loop_ready_len(pts_loop *loop) {
  uint32_t n = 0;
  pts__list_each(r, &loop->ready) n++;
  return n;
}
