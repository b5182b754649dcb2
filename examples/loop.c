/* examples/loop.c: one event loop and its scheduler, the way a single-tenant
 * host uses ptsched. It posts tasks at the three priorities, delays one,
 * aborts one through an AbortController (its promise is rejected with the
 * reason), re-prioritises one through a TaskController, and splits a long
 * background task with yield(). Then it checks the order the tasks ran in
 * against the spec's and exits non-zero if it differs.
 *
 * Build against an installed ptsched:
 *   cc -std=c11 loop.c $(pkg-config --cflags --libs ptsched) -o loop
 */
#include <stdio.h>
#include <string.h>

#include <ptsched.h>

static pts_scheduler *scheduler;
static const char *ran[16]; /* task names in the order they ran */
static int n_ran;
static int pending; /* tasks and reactions still to come */

/* A postTask callback (promise form): status 0 means "run now"; the value
 * returned fulfils the task's promise. Any other status means it will never
 * run (aborted or cancelled): the promise is already rejected. */
static pts_value task(void *data, int status) {
  const char *name = data;
  if (status != 0) {
    printf("  %-34s never runs: %s\n", name, pts_err_name(status));
    return pts_undefined();
  }
  printf("  %-34s runs\n", name);
  ran[n_ran++] = name;
  return pts_int((int64_t)strlen(name));
}

/* then(): the fulfilment value of a task's promise. */
static pts_value on_done(void *data, pts_value result) {
  (void)data;
  (void)result;
  pending--;
  return pts_undefined();
}

/* catch(): the rejection reason of an aborted task's promise (borrowed). */
static pts_value on_abort(void *data, pts_value reason) {
  printf("  %-34s rejected: %s: %s\n", (const char *)data,
         pts_error_name(reason), pts_error_message(reason));
  pending--;
  return pts_undefined();
}

/* postTask(callback, {signal, priority, delay}) and a reaction on its promise. */
static void post(const char *name, pts_signal *signal, int priority,
                 int64_t delay_ms) {
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  o.signal = signal;
  o.priority = priority;
  o.delay_ms = delay_ms;
  pts_promise *p;
  int rc = pts_scheduler_post_task(scheduler, task, (void *)name, &o, &p);
  if (rc != 0) {
    fprintf(stderr, "postTask(%s): %s\n", name, pts_strerror(rc));
    return;
  }
  pending++;
  pts_promise_then(p, on_done, on_abort, (void *)name, NULL, NULL);
  pts_promise_unref(p); /* the reaction keeps what it needs */
}

/* A long background job in two parts: yield() between them lets more urgent
 * work run, and the continuation keeps the background priority. */
static void long_job_part2(void *data, int status) {
  if (status == 0) {
    printf("  %-34s runs\n", "background job, part 2");
    ran[n_ran++] = "background job, part 2";
  }
  (void)data;
  pending--;
}

static pts_value long_job(void *data, int status) {
  (void)data;
  if (status != 0) return pts_undefined();
  printf("  %-34s runs, then yields\n", "background job, part 1");
  ran[n_ran++] = "background job, part 1";
  /* The job stays pending until part 2 ends (or now, if yield fails). */
  if (pts_scheduler_yield_cb(scheduler, NULL, long_job_part2, NULL) != 0)
    pending--;
  return pts_undefined();
}

int main(void) {
  printf("ptsched %s: one loop\n", pts_version_string());
  pts_loop *loop;
  int rc = pts_loop_new(NULL, &loop);
  if (rc != 0) {
    fprintf(stderr, "pts_loop_new: %s\n", pts_strerror(rc));
    return 1;
  }
  scheduler = pts_global_scheduler(pts_loop_default_global(loop));

  pts_controller *abort_ctl, *task_ctl;
  pts_abort_controller_new(loop, &abort_ctl);
  pts_task_controller_new(loop, PTS_PRIORITY_BACKGROUND, &task_ctl);

  pts_promise *job;
  pts_post_options bg = PTS_POST_OPTIONS_INIT;
  bg.priority = PTS_PRIORITY_BACKGROUND;
  if (pts_scheduler_post_task(scheduler, long_job, NULL, &bg, &job) == 0) {
    pending++;
    pts_promise_unref(job);
  }
  post("user-visible task", NULL, PTS_PRIORITY_UNSET, 0);
  post("user-blocking task", NULL, PTS_PRIORITY_USER_BLOCKING, 0);
  post("delayed user-blocking task (30 ms)", NULL, PTS_PRIORITY_USER_BLOCKING,
       30);
  post("task of an aborted controller", pts_controller_signal(abort_ctl),
       PTS_PRIORITY_USER_BLOCKING, 0);
  post("task moved to user-blocking", pts_controller_signal(task_ctl),
       PTS_PRIORITY_UNSET, 0);

  /* controller.abort(reason): the reason is copied, so drop ours after. */
  pts_value reason = pts_error_value(PTS_EABORT, "the user navigated away");
  pts_controller_abort(abort_ctl, &reason);
  pts_value_release(reason);
  /* controller.setPriority("user-blocking"): a prioritychange event, and the
   * task moves to the user-blocking queue. */
  pts_controller_set_priority(task_ctl, PTS_PRIORITY_USER_BLOCKING);

  uint64_t t0 = pts_loop_now(loop);
  while (pending > 0) pts_loop_run(loop, PTS_RUN_ONCE);
  printf("done after %.1f ms\n", (double)(pts_loop_now(loop) - t0) / 1e6);

  static const char *const spec_order[] = {
      "user-blocking task",     "task moved to user-blocking",
      "user-visible task",      "background job, part 1",
      "background job, part 2", "delayed user-blocking task (30 ms)",
  };
  int n = (int)(sizeof spec_order / sizeof spec_order[0]);
  int ok = n_ran == n;
  for (int i = 0; ok && i < n; i++) ok = strcmp(ran[i], spec_order[i]) == 0;
  printf("order %s the spec's\n", ok ? "matches" : "DOES NOT match");

  pts_controller_unref(abort_ctl);
  pts_controller_unref(task_ctl);
  pts_loop_free(loop);
  return ok ? 0 : 1;
}
