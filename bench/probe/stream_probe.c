/* bench/probe/stream_probe.c: the crossthread suite's stream (bench/runner,
 * suite_loop.c, crossthread.post) as a small program that times its two
 * sides apart: a producer thread posts TASKS caller-owned requests
 * (pts_queue_task_req_from_any_thread) to a loop that another thread runs.
 *
 *   stream_probe TASKS [REPS [cached]]
 *
 * With `cached`, the producer posts with pts_queue_task_from_any_thread
 * (blocks from its node cache, sync/nodecache.h: crossthread.post_cached)
 * instead of caller-owned requests.
 * Prints per repetition: the producer's ns per post (its loop alone), the
 * delay to the first task, the consumer's ns per task from its first task
 * to its last, and the stream's ns per task (first post to last task), as
 * the runner counts it. The side whose figure equals the stream's is the
 * bottleneck. With PIN=1 the producer runs on the first CPU the process may
 * use and the consumer on the second (the runner's placement); PIN=2
 * swaps them. Under callgrind (--separate-threads=yes) the consumer
 * thread's file counts its instructions per task. Exit status 1 on bad
 * arguments, 2 if the library refuses a call. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/probe/probe.h"
#include "include/ptsched.h"

typedef struct stream {
  pts_loop *loop;
  size_t n;
  int consumer_cpu; /* -1: unbound */
  atomic_int ready;
  /* The consumer's line: written on every task. */
  _Alignas(64) size_t count;
  uint64_t first, end;
} stream;

static void task(void *data, int status) {
  stream *x = data;
  if (status != 0) return;
  if (++x->count == 1) x->first = probe_now_ns();
  if (x->count == x->n) {
    x->end = probe_now_ns();
    pts_loop_stop(x->loop);
  }
}

static void *consumer(void *arg) {
  stream *x = arg;
  probe_bind_to(x->consumer_cpu);
  atomic_store_explicit(&x->ready, 1, memory_order_release);
  (void)pts_loop_run(x->loop, PTS_RUN_FOREVER);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4 || (argc == 4 && strcmp(argv[3], "cached") != 0)) {
    fprintf(stderr, "usage: %s TASKS [REPS [cached]]\n", argv[0]);
    return 1;
  }
  size_t n = strtoull(argv[1], NULL, 10);
  int reps = argc > 2 ? atoi(argv[2]) : 1;
  bool cached = argc == 4;
  if (n == 0 || reps < 1) {
    fprintf(stderr, "TASKS and REPS must be positive\n");
    return 1;
  }
  int cpus[2] = {-1, -1};
  const char *pin = getenv("PIN");
  if (pin != NULL && (pin[0] == '1' || pin[0] == '2')) {
    probe_first_cpus(cpus);
    if (pin[0] == '2') {
      int c = cpus[0];
      cpus[0] = cpus[1];
      cpus[1] = c;
    }
  }
  probe_bind_to(cpus[0]);
  /* One cache line each, as the header recommends; touched before the
   * clock, as the runner does. The cached form takes none. */
  pts_task_req *reqs = cached ? NULL : aligned_alloc(64, n * sizeof *reqs);
  if (!cached && reqs == NULL) return 2;
  for (int r = 0; r < reps; r++) {
    if (reqs != NULL) memset(reqs, 0, n * sizeof *reqs);
    stream x;
    memset(&x, 0, sizeof x);
    x.n = n;
    x.consumer_cpu = cpus[1];
    if (pts_loop_new(NULL, &x.loop) != 0) return 2;
    pts_global *g = pts_loop_default_global(x.loop);
    pthread_t th;
    if (pthread_create(&th, NULL, consumer, &x) != 0) return 2;
    while (!atomic_load_explicit(&x.ready, memory_order_acquire)) sched_yield();
    uint64_t t0 = probe_now_ns();
    for (size_t i = 0; i < n; i++)
      if ((cached ? pts_queue_task_from_any_thread(g, PTS_SOURCE_MESSAGE, task, &x)
                  : pts_queue_task_req_from_any_thread(g, PTS_SOURCE_MESSAGE, &reqs[i], task,
                                                       &x)) != 0)
        return 2;
    uint64_t tp = probe_now_ns();
    pthread_join(th, NULL);
    pts_loop_free(x.loop);
    if (x.count != n) return 2;
    printf("producer %.1f ns/post, first task after %.1f us, consumer %.1f ns/task, "
           "stream %.1f ns/task\n",
           (double)(tp - t0) / (double)n, (double)(x.first - t0) / 1e3,
           (double)(x.end - x.first) / (double)n, (double)(x.end - t0) / (double)n);
  }
  free(reqs);
  return 0;
}
