/* tests/loop/peek.c: a C window into the loop's private struct for tests
 * (loop_impl.h is C only). */
#include "loop/loop_impl.h"

uint64_t pts_test_loop_wakes(pts_loop *loop);
uint64_t pts_test_loop_wakes(pts_loop *loop) {
  return pts__parker_wake_syscalls(&loop->parker);
}
