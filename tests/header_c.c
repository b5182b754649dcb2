/* Compiles the public header as C11 (the C++ side is header_test.cc). */
#include "ptsched.h"

int pts_test_header_c_priority(void);
int pts_test_header_c_priority(void) {
  pts_post_options post = PTS_POST_OPTIONS_INIT;
  pts_yield_options yield = PTS_YIELD_OPTIONS_INIT;
  pts_task_signal_any_init any = PTS_TASK_SIGNAL_ANY_INIT;
  pts_value v = pts_int(7);
  return (int)v.u.i + post.priority + yield.priority + any.priority;
}
