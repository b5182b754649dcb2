/* tests/agents/peek.c: a C window into the loop for the agents tests
 * (loop_internal.h is C only): the next enqueue order, taken. */
#include "loop/loop_internal.h"

uint64_t pts_test_take_order(pts_loop *loop);
uint64_t pts_test_take_order(pts_loop *loop) {
  return pts__loop_take_enqueue_order(loop);
}

#include "agents/agents_impl.h"

/* which = 0: cross-thread posts the scheduler accepted; 1: refused because
 * their signal was already aborted. */
uint64_t pts_test_agent_posts(pts_agent *a, int which);
uint64_t pts_test_agent_posts(pts_agent *a, int which) {
  return atomic_load_explicit(which ? &a->st_posts_rejected : &a->st_posts_enqueued,
                              memory_order_relaxed);
}
