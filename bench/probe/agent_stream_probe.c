/* bench/probe/agent_stream_probe.c: the crossthread suite's agent streams
 * (bench/runner/suite_agents.c, crossthread.agent_queue and
 * agent_post_task_*) as a small program that repeats one in one process and
 * prints each repetition: the poster's posts timed alone, the stream (first
 * post to last task, as the runner counts it) and the command blocks of the
 * node cache (sync/nodecache.h) live after it. The side whose figure equals
 * the stream's is the bottleneck.
 *
 *   agent_stream_probe queue|cached|req TASKS REPS
 *
 * queue: pts_agent_queue_task; cached: pts_agent_post_task (its block from
 * the poster's node cache); req: pts_agent_post_task_req with caller-owned
 * requests, touched before the clock starts. The poster runs on the first
 * CPU the process may use and the pool's thread on the second (the
 * runner's placement). SPIN=N adds an empty loop of N turns to each task,
 * to slow the consumer. DEPTH=N first posts N tasks while the pool's
 * thread is held, so the poster's node cache holds at least N blocks, as a
 * deep stream earlier in the process leaves it (the runner's loop streams
 * run before its agent streams). Exit status 1 on bad arguments, 2 if the
 * library refuses a call. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/probe/probe.h"
#include "include/ptsched.h"
#include "sync/nodecache.h"

enum { QUEUE, CACHED, REQ };

typedef struct stream {
  size_t n;
  sem_t done;
  /* The consumer's line: written on every task. */
  _Alignas(64) size_t count;
  uint64_t end;
} stream;

static int spin;
static int cpus[2] = {-1, -1};

static void task(void *data, int status) {
  stream *x = data;
  if (status != 0) return;
  for (int i = 0; i < spin; i++) __asm__ volatile("");
  if (++x->count == x->n) {
    x->end = probe_now_ns();
    sem_post(&x->done);
  }
}

static pts_value task_cb(void *data, int status) {
  task(data, status);
  return pts_undefined();
}

static void hold(void *data, int status) {
  if (status == 0) sem_wait(data);
}

static void bind_pool_thread(void *data, int status) {
  (void)data;
  if (status == 0) probe_bind_to(cpus[1]);
}

static int post(pts_agent *a, int how, pts_agent_task_req *req, stream *x) {
  pts_agent_post_options o = PTS_AGENT_POST_OPTIONS_INIT;
  o.priority = PTS_PRIORITY_USER_VISIBLE;
  if (how == REQ) return pts_agent_post_task_req(a, PTS_PRIORITY_USER_VISIBLE, req, task_cb, x);
  if (how == CACHED) return pts_agent_post_task(a, &o, task_cb, x, NULL, NULL, NULL);
  return pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, task, x);
}

/* n posts of how's kind while the pool's thread waits in a task, then the
 * thread is let go and the posts run. */
static int deep_burst(pts_agent *a, int how, size_t n) {
  if (n == 0) return 0;
  pts_agent_task_req *reqs = how == REQ ? calloc(n, sizeof *reqs) : NULL;
  sem_t go;
  stream x;
  memset(&x, 0, sizeof x);
  x.n = n;
  if ((how == REQ && reqs == NULL) || sem_init(&go, 0, 0) != 0) {
    free(reqs);
    return 2;
  }
  if (sem_init(&x.done, 0, 0) != 0) {
    sem_destroy(&go);
    free(reqs);
    return 2;
  }
  int rc = pts_agent_queue_task(a, PTS_SOURCE_GENERIC, hold, &go) == 0 ? 0 : 2;
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (post(a, how, reqs != NULL ? &reqs[i] : NULL, &x) != 0) rc = 2;
  sem_post(&go); /* a hold that never ran (refused) leaves a count nobody takes */
  if (rc == 0) sem_wait(&x.done);
  if (pts_agent_drain(a) != 0) rc = 2;
  sem_destroy(&x.done);
  sem_destroy(&go);
  free(reqs);
  return rc;
}

int main(int argc, char **argv) {
  const char *hows[] = {"queue", "cached", "req"};
  int how = -1;
  for (int i = 0; argc == 4 && i < 3; i++)
    if (strcmp(argv[1], hows[i]) == 0) how = i;
  size_t n = argc == 4 ? strtoull(argv[2], NULL, 10) : 0;
  int reps = argc == 4 ? atoi(argv[3]) : 0;
  if (how < 0 || n == 0 || reps < 1) {
    fprintf(stderr, "usage: %s queue|cached|req TASKS REPS (both > 0)\n", argv[0]);
    return 1;
  }
  spin = getenv("SPIN") != NULL ? atoi(getenv("SPIN")) : 0;
  probe_first_cpus(cpus);
  probe_bind_to(cpus[0]);
  pts_agent_options o = PTS_AGENT_OPTIONS_INIT;
  o.origin = "probe";
  pts_pool *pool = NULL;
  pts_agent *a = NULL;
  pts_agent_task_req *reqs = how == REQ ? calloc(n, sizeof *reqs) : NULL;
  int rc = 2;
  if ((how != REQ || reqs != NULL) && probe_pool_of_one(&o, &pool, &a) == 0 &&
      pts_agent_queue_task(a, PTS_SOURCE_GENERIC, bind_pool_thread, NULL) == 0 &&
      pts_agent_drain(a) == 0) {
    const char *depth = getenv("DEPTH");
    rc = depth != NULL ? deep_burst(a, how, strtoull(depth, NULL, 10)) : 0;
    for (int r = 0; rc == 0 && r < reps; r++) {
      if (reqs != NULL) memset(reqs, 0, n * sizeof *reqs);
      stream x;
      memset(&x, 0, sizeof x);
      x.n = n;
      if (sem_init(&x.done, 0, 0) != 0) {
        rc = 2;
        break;
      }
      uint64_t t0 = probe_now_ns();
      for (size_t i = 0; rc == 0 && i < n; i++)
        if (post(a, how, reqs != NULL ? &reqs[i] : NULL, &x) != 0) rc = 2;
      uint64_t tp = probe_now_ns();
      if (rc == 0) {
        sem_wait(&x.done);
        printf("poster %.1f ns/post, stream %.1f ns/task, blocks live %llu\n",
               (double)(tp - t0) / (double)n, (double)(x.end - t0) / (double)n,
               (unsigned long long)pts__node_live());
      }
      if (pts_agent_drain(a) != 0) rc = 2;
      sem_destroy(&x.done);
    }
  }
  if (a != NULL) {
    if (pts_agent_destroy(a, true) != 0) rc = 2;
    pts_agent_unref(a);
  }
  if (pool != NULL && pts_pool_shutdown(pool) != 0) rc = 2;
  free(reqs);
  return rc;
}
