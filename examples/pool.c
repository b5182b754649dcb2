/* examples/pool.c: several tenants on one worker pool, the way a multi-tenant
 * host uses ptsched. Three agents (each its own event loop, origin and weight)
 * share a pool of two threads under the fair policy. The main thread posts
 * work to them with postTask from outside, cancels part of one tenant's work
 * through a remote TaskController, and reads per-tenant statistics.
 *
 * Build against an installed ptsched:
 *   cc -std=c11 pool.c $(pkg-config --cflags --libs ptsched) -o pool
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <ptsched.h>

#define TENANTS 3
#define TASKS 40 /* per tenant */

struct tenant {
  const char *origin;
  uint32_t weight;
  pts_agent *agent;
  atomic_int done, aborted; /* results seen by on_result */
};

/* Runs as a task on the agent's pool thread: a little CPU work whose result
 * fulfils the task's promise. */
static pts_value work(void *data, int status) {
  if (status != 0) return pts_undefined(); /* aborted: never runs */
  uint64_t x = (uint64_t)(uintptr_t)data;
  for (int i = 0; i < 20000; i++) x = x * 6364136223846793005u + 1;
  return pts_int((int64_t)(x >> 33));
}

/* The outcome of a cross-thread postTask, on the agent's thread: status 0 and
 * the value, or PTS_EABORT and the abort reason (both borrowed). */
static void on_result(void *data, int status, pts_value result) {
  struct tenant *t = data;
  (void)result;
  if (status == 0)
    atomic_fetch_add(&t->done, 1);
  else if (status == PTS_EABORT)
    atomic_fetch_add(&t->aborted, 1);
}

int main(void) {
  printf("ptsched %s: a pool of tenants\n", pts_version_string());
  pts_pool_options po = {.threads = 2, .policy = PTS_POLICY_FAIR};
  pts_pool *pool;
  int rc = pts_pool_new(&po, &pool);
  if (rc != 0) {
    fprintf(stderr, "pts_pool_new: %s\n", pts_strerror(rc));
    return 1;
  }
  printf("%u threads, policy %s\n", pts_pool_threads(pool),
         pts_policy_name(po.policy));

  static struct tenant tenants[TENANTS] = {
      {.origin = "https://a.example", .weight = 1},
      {.origin = "https://b.example", .weight = 2},
      {.origin = "https://c.example", .weight = 1},
  };
  for (int i = 0; i < TENANTS; i++) {
    pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
    ao.origin = tenants[i].origin;
    ao.weight = tenants[i].weight;
    rc = pts_agent_new(pool, &ao, &tenants[i].agent);
    if (rc != 0) {
      fprintf(stderr, "pts_agent_new: %s\n", pts_strerror(rc));
      return 1;
    }
  }

  /* Tenant c's background batch runs under a TaskController that lives on
   * c's loop; the handle is usable from this thread. */
  pts_remote_controller *batch;
  rc = pts_remote_controller_new_async(tenants[2].agent,
                                       PTS_PRIORITY_BACKGROUND, &batch);
  if (rc != 0) return 1;

  for (int n = 0; n < TASKS; n++) {
    for (int i = 0; i < TENANTS; i++) {
      pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
      o.priority = n % 2 ? PTS_PRIORITY_USER_VISIBLE : PTS_PRIORITY_BACKGROUND;
      if (i == 2) {
        o.priority = PTS_PRIORITY_UNSET; /* the controller's priority */
        o.controller = batch;
      }
      o.delay_ms = n % 10 == 9 ? 5 : 0;
      rc = pts_agent_post_task(tenants[i].agent, &o, work,
                               (void *)(uintptr_t)(n + 1), on_result,
                               &tenants[i], NULL);
      if (rc != 0) fprintf(stderr, "post: %s\n", pts_strerror(rc));
    }
  }
  /* Cancel what is left of tenant c's batch. It is applied on c's thread
   * between two tasks: some of the batch may already have run. */
  pts_remote_controller_abort(batch, NULL, NULL, NULL);

  /* Wait for every tenant: nothing runnable, no command pending; the 5 ms
   * delayed tasks are timers, so drain until every result arrived (at most
   * about 10 s). */
  int all = 0;
  for (int waited_ms = 0; !all && waited_ms < 10000; waited_ms++) {
    all = 1;
    for (int i = 0; i < TENANTS; i++) {
      pts_agent_drain(tenants[i].agent);
      int seen = atomic_load(&tenants[i].done) + atomic_load(&tenants[i].aborted);
      if (seen < TASKS) all = 0;
    }
    if (!all) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  }

  int ok = all; /* every result within 10 s */
  for (int i = 0; i < TENANTS; i++) {
    struct tenant *t = &tenants[i];
    pts_agent_stats st;
    pts_agent_get_stats(t->agent, &st);
    uint64_t tasks = 0;
    for (int c = 0; c < PTS_CLASS_COUNT; c++) tasks += st.tasks_run[c];
    printf("%-18s weight %u thread %d: %2d done, %2d aborted, %3llu tasks, "
           "%.2f ms CPU\n",
           t->origin, t->weight, pts_agent_thread(t->agent),
           atomic_load(&t->done), atomic_load(&t->aborted),
           (unsigned long long)tasks, (double)st.cpu_ns / 1e6);
    /* Tenants a and b lose nothing; every task of c either ran or aborted. */
    if (i < 2 && atomic_load(&t->done) != TASKS) ok = 0;
    if (atomic_load(&t->done) + atomic_load(&t->aborted) != TASKS) ok = 0;
  }

  pts_remote_controller_unref(batch);
  rc = pts_pool_shutdown(pool); /* destroys the agents, stops the threads */
  for (int i = 0; i < TENANTS; i++) pts_agent_unref(tenants[i].agent);
  printf("%s\n", ok && rc == 0 ? "every result arrived" : "FAILED");
  return ok && rc == 0 ? 0 : 1;
}
