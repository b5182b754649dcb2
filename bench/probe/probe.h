/* bench/probe/probe.h: what the probes share (header-only, static inline):
 * the clock they time with, binding a thread to a CPU, the first two CPUs
 * the process may use, and a pool of one thread with one agent. */
#ifndef PTSCHED_BENCH_PROBE_PROBE_H
#define PTSCHED_BENCH_PROBE_PROBE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "include/ptsched.h"

static inline uint64_t probe_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Binds the calling thread to cpu; -1 leaves it unbound. */
static inline void probe_bind_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  (void)pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* The first two CPUs the process may use, or -1, -1 if it has fewer. */
static inline void probe_first_cpus(int cpus[2]) {
  cpu_set_t set;
  int k = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
      if (CPU_ISSET(c, &set)) cpus[k++] = c;
  if (k < 2) cpus[0] = cpus[1] = -1;
}

/* A strict pool of one thread (seed 42) and one agent made with o. 0, or
 * the library's error; on an error *pool is what needs shutting down (or
 * NULL) and *a is NULL. */
static inline int probe_pool_of_one(const pts_agent_options *o, pts_pool **pool, pts_agent **a) {
  pts_pool_options po;
  memset(&po, 0, sizeof po);
  po.threads = 1;
  po.policy = PTS_POLICY_STRICT;
  po.seed = 42;
  *pool = NULL;
  *a = NULL;
  int rc = pts_pool_new(&po, pool);
  return rc != 0 ? rc : pts_agent_new(*pool, o, a);
}

#endif /* PTSCHED_BENCH_PROBE_PROBE_H */
