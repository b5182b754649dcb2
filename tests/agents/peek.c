/* tests/agents/peek.c: a C window into the loop for the agents tests
 * (loop_internal.h is C only): the next enqueue order, taken. */
#include "loop/loop_internal.h"

uint64_t pts_test_take_order(pts_loop *loop);
uint64_t pts_test_take_order(pts_loop *loop) {
  return pts__loop_take_enqueue_order(loop);
}

#include "agents/agents_impl.h"

/* which = 0: cross-thread posts the scheduler accepted; 1: refused because
 * their signal was already aborted; 2: pts_agent_queue_task tasks run in
 * place. */
uint64_t pts_test_agent_posts(pts_agent *a, int which);
uint64_t pts_test_agent_posts(pts_agent *a, int which) {
  _Atomic uint64_t *c = which == 2   ? &a->st_queued_in_place
                        : which == 1 ? &a->st_posts_rejected
                                     : &a->st_posts_enqueued;
  return atomic_load_explicit(c, memory_order_relaxed);
}
