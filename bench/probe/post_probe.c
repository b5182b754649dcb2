/* bench/probe/post_probe.c: the crossthread suite's posts with their two
 * sides held apart, for callgrind (--separate-threads=yes): the consumer is
 * held by a task that waits on a semaphore while the producer posts TASKS
 * tasks, then it runs them; so each thread's instructions are its side's
 * only. Instructions are what two builds are compared by when the wall
 * clock cannot tell 3% apart (docs/benchmarks.md, "Comparing two builds";
 * post_probe.sh takes the difference of two sizes).
 *
 *   post_probe MODE TASKS
 *
 * MODE:
 *   loop        pts_queue_task_req_from_any_thread to a loop run by another
 *               thread (crossthread.post);
 *   agent       pts_agent_post_task_req to an agent alone on a one-thread
 *               pool (crossthread.agent_post_task_unlimited);
 *   limited     the same to an agent with every limit set and none reached
 *               (crossthread.agent_post_task_limited);
 *   own         the agent posts to itself on its thread, in batches of 256,
 *               with pts_scheduler_post_task_cb (agents.own_post_run_*);
 *               TASKS post+runs, all on the pool thread;
 *   chain       one loop on thread 1, each task posting the next with
 *               pts_scheduler_post_task_cb (yield.post_chain);
 *   promise     one loop on thread 1: batches of 1,000 posts with
 *               pts_scheduler_post_task, each result promise dropped, then
 *               a run until idle (throughput.post_run_promise);
 *   mixed       the same with pts_scheduler_post_task_cb at three
 *               priorities in a fixed hashed pattern
 *               (throughput.mixed_priority).
 * Thread 1 is the producer; the consumer is the next thread that runs
 * ptsched code (the loop's thread, or the pool's). Prints the consumer's
 * run, its first task to its last, in ns a task (a wall time: run it
 * pinned, `taskset -c 0`, and alternate two builds). Exit status 1 on bad
 * arguments, 2 if the library refuses a call or a task is lost. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/probe/probe.h"
#include "include/ptsched.h"

#define OWN_BATCH 256

typedef struct held {
  sem_t hold, done;
  atomic_int holding;
  size_t n, count, posted;
  uint64_t start, end; /* the consumer's run: its first task to its last */
  pts_loop *loop;   /* loop mode: stopped by the last task */
  pts_agent *agent; /* own mode */
} held;

static void wait_holding(held *h) {
  while (!atomic_load_explicit(&h->holding, memory_order_acquire)) sched_yield();
}

/* Counts a task; the last one ends the consumer's run. */
static bool count_task(held *h) {
  if (++h->count != h->n) return false;
  h->end = probe_now_ns();
  return true;
}

/* The consumer's first task: it holds the thread until the posts are in. */
static void hold_task(void *data, int status) {
  held *h = data;
  if (status != 0) return;
  atomic_store_explicit(&h->holding, 1, memory_order_release);
  sem_wait(&h->hold);
  h->start = probe_now_ns();
}

/* ---- loop ---- */

static void loop_task(void *data, int status) {
  held *h = data;
  if (status == 0 && count_task(h)) pts_loop_stop(h->loop);
}

static void *loop_thread(void *arg) {
  held *h = arg;
  (void)pts_loop_run(h->loop, PTS_RUN_FOREVER);
  return NULL;
}

static int run_loop(held *h, pts_task_req *reqs) {
  if (pts_loop_new(NULL, &h->loop) != 0) return 2;
  pts_global *g = pts_loop_default_global(h->loop);
  pthread_t th;
  if (pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, hold_task, h) != 0 ||
      pthread_create(&th, NULL, loop_thread, h) != 0)
    return 2;
  wait_holding(h);
  for (size_t i = 0; i < h->n; i++)
    if (pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &reqs[i], loop_task, h) != 0)
      return 2;
  sem_post(&h->hold);
  pthread_join(th, NULL);
  pts_loop_free(h->loop);
  return h->count == h->n ? 0 : 2;
}

/* ---- agent and limited ---- */

static pts_value agent_task(void *data, int status) {
  held *h = data;
  if (status == 0 && count_task(h)) sem_post(&h->done);
  return pts_undefined();
}

static int run_agent(held *h, pts_agent *a, pts_agent_task_req *reqs) {
  if (pts_agent_queue_task(a, PTS_SOURCE_MESSAGE, hold_task, h) != 0) return 2;
  wait_holding(h);
  for (size_t i = 0; i < h->n; i++)
    if (pts_agent_post_task_req(a, PTS_PRIORITY_USER_VISIBLE, &reqs[i], agent_task, h) != 0)
      return 2;
  sem_post(&h->hold);
  sem_wait(&h->done);
  return pts_agent_drain(a) == 0 && h->count == h->n ? 0 : 2;
}

/* ---- own ---- */

static void own_batch(held *h);

static void own_task(void *data, int status) {
  held *h = data;
  if (status != 0) return;
  if (count_task(h))
    sem_post(&h->done);
  else if (h->count == h->posted)
    own_batch(h);
}

static void own_batch(held *h) {
  pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(h->agent)));
  for (int i = 0; i < OWN_BATCH && h->posted < h->n; i++, h->posted++)
    if (pts_scheduler_post_task_cb(s, own_task, h, NULL) != 0) return; /* lost: exit 2 */
}

static void own_start(void *data, int status) {
  if (status != 0) return;
  ((held *)data)->start = probe_now_ns();
  own_batch(data);
}

static int run_own(held *h, pts_agent *a) {
  h->agent = a;
  if (pts_agent_queue_task(a, PTS_SOURCE_GENERIC, own_start, h) != 0) return 2;
  sem_wait(&h->done);
  return pts_agent_drain(a) == 0 && h->count == h->n ? 0 : 2;
}

/* ---- chain ---- */

static void chain_task(void *data, int status) {
  held *h = data;
  if (status != 0) return;
  pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(h->loop));
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  if (!count_task(h)) (void)pts_scheduler_post_task_cb(s, chain_task, h, &o); /* lost: exit 2 */
}

static int run_chain(held *h) {
  if (pts_loop_new(NULL, &h->loop) != 0) return 2;
  pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(h->loop));
  pts_post_options o = PTS_POST_OPTIONS_INIT;
  h->start = probe_now_ns();
  int rc = pts_scheduler_post_task_cb(s, chain_task, h, &o) == 0 &&
                   pts_loop_run(h->loop, PTS_RUN_UNTIL_IDLE) >= 0 && h->count == h->n
               ? 0
               : 2;
  return pts_loop_free(h->loop) == 0 ? rc : 2;
}

/* ---- promise and mixed ---- */

#define LOOP_BATCH 1000

static pts_value batch_cb(void *data, int status) {
  if (status == 0) (void)count_task(data);
  return pts_undefined();
}

static void batch_task(void *data, int status) {
  if (status == 0) (void)count_task(data);
}

/* The runner's pattern of three priorities (bench/runner/peers.c). */
static int mixed_priority(size_t i) {
  uint32_t x = (uint32_t)i * 2654435761u;
  x ^= x >> 15;
  return (int)(x % 3u);
}

static int run_batches(held *h, bool promise) {
  if (pts_loop_new(NULL, &h->loop) != 0) return 2;
  pts_scheduler *s = pts_global_scheduler(pts_loop_default_global(h->loop));
  int rc = 0;
  h->start = probe_now_ns();
  for (size_t done = 0; rc == 0 && done < h->n; done += LOOP_BATCH) {
    for (size_t i = 0; rc == 0 && i < LOOP_BATCH && done + i < h->n; i++) {
      pts_post_options o = PTS_POST_OPTIONS_INIT;
      if (promise) {
        pts_promise *p = NULL;
        rc = pts_scheduler_post_task(s, batch_cb, h, &o, &p) == 0 ? 0 : 2;
        pts_promise_unref(p); /* as a binding drops an unused result */
      } else {
        o.priority = mixed_priority(i);
        rc = pts_scheduler_post_task_cb(s, batch_task, h, &o) == 0 ? 0 : 2;
      }
    }
    if (rc == 0 && pts_loop_run(h->loop, PTS_RUN_UNTIL_IDLE) < 0) rc = 2;
  }
  if (rc == 0 && h->count != h->n) rc = 2;
  return pts_loop_free(h->loop) == 0 ? rc : 2;
}

int main(int argc, char **argv) {
  const char *modes[] = {"loop", "agent", "limited", "own", "chain", "promise", "mixed"};
  int mode = -1;
  for (int i = 0; argc == 3 && i < 7; i++)
    if (strcmp(argv[1], modes[i]) == 0) mode = i;
  size_t n = argc == 3 ? strtoull(argv[2], NULL, 10) : 0;
  if (mode < 0 || n == 0) {
    fprintf(stderr, "usage: %s loop|agent|limited|own|chain|promise|mixed TASKS (TASKS > 0)\n",
            argv[0]);
    return 1;
  }
  held h;
  memset(&h, 0, sizeof h);
  h.n = n;
  if (sem_init(&h.hold, 0, 0) != 0 || sem_init(&h.done, 0, 0) != 0) return 2;
  int rc = 2;
  if (mode == 4) {
    rc = run_chain(&h);
  } else if (mode >= 5) {
    rc = run_batches(&h, mode == 5);
  } else if (mode == 0) {
    pts_task_req *reqs = calloc(n, sizeof *reqs);
    if (reqs != NULL) rc = run_loop(&h, reqs);
    free(reqs);
  } else {
    pts_agent_options o = PTS_AGENT_OPTIONS_INIT;
    o.origin = "probe";
    if (mode == 2) {
      uint64_t far = UINT64_C(1) << 40;
      o.limits = (pts_agent_limits){far, far, far};
    }
    pts_pool *pool = NULL;
    pts_agent *a = NULL;
    pts_agent_task_req *reqs = mode == 3 ? NULL : calloc(n, sizeof *reqs);
    if ((mode == 3 || reqs != NULL) && probe_pool_of_one(&o, &pool, &a) == 0) {
      rc = mode == 3 ? run_own(&h, a) : run_agent(&h, a, reqs);
      if (pts_agent_destroy(a, true) != 0) rc = 2;
      pts_agent_unref(a);
    }
    if (pool != NULL && pts_pool_shutdown(pool) != 0) rc = 2;
    free(reqs);
  }
  sem_destroy(&h.hold);
  sem_destroy(&h.done);
  if (rc == 0)
    printf("%s: %zu tasks, the consumer's run %.2f ns a task\n", modes[mode], n,
           (double)(h.end - h.start) / (double)n);
  return rc;
}
