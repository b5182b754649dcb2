/* bench/probe/switch_probe.c: the scale suite's workload (bench/runner,
 * suite_agents.c: each agent's 8 chains of tasks that re-post themselves)
 * as a small program, for instruction counts under callgrind and pinned
 * wall-time pairs between two builds (per_task.sh; docs/benchmarks.md,
 * "Instructions per task").
 *
 *   switch_probe THREADS QUANTUM_NS AGENTS TASKS [BALANCE [POLICY [REPS]]]
 *
 * Prints, per repetition, the run's ns per task and the tasks run. A run
 * ends when every agent has posted its share of TASKS and every chain has
 * ended. With PIN=1 in the environment, pool thread i is bound to CPU i
 * modulo the CPUs online (pts_pool_pin_thread); with STATS=1 each
 * repetition's line adds each thread's steps, busy time and loops moved
 * in and out (pts_pool_get_thread_stats). Exit status 1 on bad
 * arguments, 2 if the library refuses a call. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/probe/probe.h"
#include "include/ptsched.h"

enum { CHAINS = 8 };

/* An agent's chains; one line each, as in the runner (neighbours may run
 * on different threads). */
typedef struct chains {
  _Alignas(64) pts_agent *agent;
  pts_scheduler *s;
  size_t remaining; /* tasks still to post (agent thread) */
  size_t running;   /* chains not ended (agent thread) */
  size_t ran;       /* tasks run (agent thread; read after drain) */
  int failed;
  atomic_size_t *left; /* agents not finished */
  sem_t *done;         /* posted when left reaches 0 */
} chains;

static void chain_end(chains *c) {
  if (--c->running == 0 && atomic_fetch_sub(c->left, 1) == 1) sem_post(c->done);
}

static void chain_task(void *data, int status) {
  chains *c = data;
  if (status != 0) return; /* released at destroy */
  c->ran++;
  if (c->remaining > 0) {
    c->remaining--;
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.priority = PTS_PRIORITY_USER_VISIBLE;
    if (pts_scheduler_post_task_cb(c->s, chain_task, c, &o) == 0) return;
    c->failed = 1;
  }
  chain_end(c);
}

static void chains_seed(void *data, int status) {
  chains *c = data;
  if (status != 0) return;
  c->s = pts_global_scheduler(pts_loop_default_global(pts_agent_loop(c->agent)));
  for (int i = 0; i < CHAINS && c->remaining > 0; i++) {
    c->remaining--;
    pts_post_options o = PTS_POST_OPTIONS_INIT;
    o.priority = PTS_PRIORITY_USER_VISIBLE;
    if (pts_scheduler_post_task_cb(c->s, chain_task, c, &o) != 0) {
      c->failed = 1;
      break;
    }
    c->running++;
  }
  if (c->running == 0) { /* nothing posted: this agent is finished */
    c->running = 1;
    chain_end(c);
  }
}

static int number(const char *s, unsigned long long *out) {
  char *end;
  errno = 0;
  *out = strtoull(s, &end, 10);
  return errno == 0 && end != s && *end == '\0' ? 0 : -1;
}

int main(int argc, char **argv) {
  unsigned long long v[7] = {0, 0, 0, 0, 0, PTS_POLICY_ROUND_ROBIN, 1};
  int bad = argc < 5 || argc > 8;
  for (int i = 1; !bad && i < argc; i++) bad = number(argv[i], &v[i - 1]) != 0;
  if (bad || v[0] == 0 || v[2] == 0 || v[3] < v[2] || v[5] >= PTS_POLICY_COUNT || v[6] == 0) {
    fprintf(stderr, "usage: %s THREADS QUANTUM_NS AGENTS TASKS [BALANCE [POLICY [REPS]]]\n"
                    "  TASKS >= AGENTS; POLICY 0-%d (pts_policy); prints ns per task\n",
            argv[0], PTS_POLICY_COUNT - 1);
    return 1;
  }
  size_t m = (size_t)v[2], tasks = (size_t)v[3];
  pts_pool_options po;
  memset(&po, 0, sizeof po);
  po.threads = (unsigned)v[0];
  po.quantum_ns = v[1];
  po.balance = v[4] != 0;
  po.policy = (pts_policy)v[5];
  po.seed = 42;
  pts_pool *pool = NULL;
  pts_agent **agents = calloc(m, sizeof *agents);
  chains *ch = aligned_alloc(64, m * sizeof *ch);
  int rc = pts_pool_new(&po, &pool);
  if (rc != 0 || agents == NULL || ch == NULL) {
    fprintf(stderr, "switch_probe: pool: %s\n", rc != 0 ? pts_strerror(rc) : "out of memory");
    return 2;
  }
  const char *pin = getenv("PIN");
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  for (unsigned t = 0; pin != NULL && pin[0] == '1' && t < po.threads; t++)
    if ((rc = pts_pool_pin_thread(pool, t, (int)(t % (unsigned long)(ncpu > 0 ? ncpu : 1)))) != 0) {
      fprintf(stderr, "switch_probe: pin thread %u: %s\n", t, pts_strerror(rc));
      return 2;
    }
  /* STATS=1: each thread's steps, busy time and loops moved in and out
   * over each repetition (pts_pool_get_thread_stats). */
  const char *st = getenv("STATS");
  bool stats = st != NULL && st[0] == '1';
  pts_thread_stats *last = calloc(po.threads, sizeof *last);
  if (last == NULL) return 2;
  size_t made = 0;
  for (; made < m; made++) {
    char origin[32];
    snprintf(origin, sizeof origin, "tenant%zu", made);
    pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
    ao.origin = origin;
    ao.thread = -1;
    if ((rc = pts_agent_new(pool, &ao, &agents[made])) != 0) {
      fprintf(stderr, "switch_probe: agent %zu: %s\n", made, pts_strerror(rc));
      break;
    }
  }
  int status = made == m ? 0 : 2;
  for (unsigned long long r = 0; status == 0 && r < v[6]; r++) {
    atomic_size_t left;
    sem_t done;
    atomic_init(&left, m);
    sem_init(&done, 0, 0);
    memset(ch, 0, m * sizeof *ch);
    for (size_t i = 0; i < m; i++)
      ch[i] = (chains){.agent = agents[i], .remaining = tasks / m, .left = &left, .done = &done};
    uint64_t t0 = probe_now_ns();
    for (size_t i = 0; i < m && status == 0; i++)
      if ((rc = pts_agent_queue_task(agents[i], PTS_SOURCE_GENERIC, chains_seed, &ch[i])) != 0) {
        fprintf(stderr, "switch_probe: queue: %s\n", pts_strerror(rc));
        status = 2; /* the agents queued so far end when destroyed */
      }
    if (status == 0) sem_wait(&done);
    uint64_t t1 = probe_now_ns();
    size_t ran = 0;
    for (size_t i = 0; i < m; i++) {
      if (pts_agent_drain(agents[i]) != 0) status = 2;
      ran += ch[i].ran;
      if (ch[i].failed) status = 2;
    }
    sem_destroy(&done);
    if (status == 0) printf("%.2f ns/task (%zu tasks)", (double)(t1 - t0) / (double)ran, ran);
    for (unsigned t = 0; status == 0 && stats && t < po.threads; t++) {
      pts_thread_stats ts;
      if (pts_pool_get_thread_stats(pool, t, &ts) != 0) continue;
      printf("  [%u: steps %llu busy %.2f ms moves in %llu out %llu]", t,
             (unsigned long long)(ts.steps - last[t].steps), (ts.busy_ns - last[t].busy_ns) / 1e6,
             (unsigned long long)(ts.moves_in - last[t].moves_in),
             (unsigned long long)(ts.moves_out - last[t].moves_out));
      last[t] = ts;
    }
    if (status == 0) printf("\n");
  }
  for (size_t i = 0; i < made; i++) {
    pts_agent_destroy(agents[i], true);
    pts_agent_unref(agents[i]);
  }
  pts_pool_shutdown(pool);
  free(agents);
  free(ch);
  free(last);
  return status;
}
