/* bench/demo.c: a short tour of the library that prints what it did. It is
 * the README's main job until the benchmark runner exists: posts tasks at
 * the three priorities, yields, changes a priority, aborts a task, delays one
 * on the real clock, and checks the order it observed against the spec's. */
#include <stdio.h>
#include <string.h>

#include "ptsched.h"

#define MAX_EVENTS 32

static char events[MAX_EVENTS][48];
static int n_events;

static void record(const char *what) {
  if (n_events < MAX_EVENTS) {
    snprintf(events[n_events], sizeof events[0], "%s", what);
    n_events++;
  }
  printf("  ran: %s\n", what);
}

static void named_task(void *data, int status) {
  if (status == 0) {
    record((const char *)data);
  } else {
    char line[48];
    snprintf(line, sizeof line, "%s (%s)", (const char *)data,
             pts_err_name(status));
    record(line);
  }
}

static pts_scheduler *scheduler;

static void yielding_task(void *data, int status) {
  (void)data;
  if (status != 0) return;
  record("background task, part 1");
  /* yield() with no options inherits background: the continuation runs
   * before other background tasks but after user-visible work. */
  pts_scheduler_yield_cb(scheduler, NULL, named_task,
                         (void *)"background task, part 2 (after yield)");
}

static int post(pts_signal *signal, int priority, uint64_t delay,
                pts_task_fn fn, const char *name) {
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.signal = signal;
  o.priority = priority;
  o.delay_ms = (int64_t)delay;
  int rc = pts_scheduler_post_task_cb(scheduler, fn, (void *)name, &o);
  if (rc != 0) fprintf(stderr, "post %s: %s\n", name, pts_strerror(rc));
  return rc;
}

int main(void) {
  pts_loop *loop;
  if (pts_loop_new(NULL, &loop) != 0) return 1;
  scheduler = pts_global_scheduler(pts_loop_default_global(loop));

  pts_controller *tc, *ac;
  pts_task_controller_new(loop, PTS_PRIORITY_BACKGROUND, &tc);
  pts_abort_controller_new(loop, &ac);

  printf("ptsched demo: posting 7 tasks on one loop\n");
  post(NULL, PTS_PRIORITY_BACKGROUND, 0, yielding_task, "");
  post(NULL, PTS_PRIORITY_USER_VISIBLE, 0, named_task, "user-visible task");
  post(NULL, PTS_PRIORITY_USER_BLOCKING, 0, named_task, "user-blocking task");
  post(pts_controller_signal(tc), PTS_PRIORITY_UNSET, 0, named_task,
       "dynamic task, background -> user-blocking");
  post(pts_controller_signal(ac), PTS_PRIORITY_USER_BLOCKING, 0, named_task,
       "aborted task");
  post(NULL, PTS_PRIORITY_USER_BLOCKING, 20, named_task,
       "user-blocking task delayed 20 ms");
  post(NULL, PTS_PRIORITY_BACKGROUND, 0, named_task, "background task 2");

  printf("setPriority(user-blocking) on the dynamic task's controller\n");
  pts_controller_set_priority(tc, PTS_PRIORITY_USER_BLOCKING);
  printf("abort() on the aborted task's controller\n");
  pts_controller_abort(ac, NULL);

  uint64_t t0 = pts_loop_now(loop);
  while (n_events < 8) pts_loop_run(loop, PTS_RUN_ONCE);
  double waited_ms = (double)(pts_loop_now(loop) - t0) / 1e6;

  static const char *const expected[] = {
      "aborted task (PTS_EABORT)",
      "user-blocking task",
      "dynamic task, background -> user-blocking",
      "user-visible task",
      "background task, part 1",
      "background task, part 2 (after yield)",
      "background task 2",
      "user-blocking task delayed 20 ms",
  };
  int ok = n_events == 8;
  for (int i = 0; ok && i < 8; i++) ok = strcmp(events[i], expected[i]) == 0;
  printf("order %s the spec's; the loop ran for %.1f ms\n",
         ok ? "matches" : "DOES NOT match", waited_ms);

  pts_controller_unref(tc);
  pts_controller_unref(ac);
  pts_loop_free(loop);
  return ok ? 0 : 1;
}
