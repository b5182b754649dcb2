/* bench/probe/slow_clock.c: an LD_PRELOAD shim whose clock_gettime runs at
 * 1/SLOWCLOCK of real speed (default 50, about valgrind's slowdown), so a
 * worker under callgrind keeps its native round lengths: the worker reads
 * the clock once per round of steps that took about 2 us (agents/worker.c,
 * "rounds"), and at valgrind's speed every round would be one step. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Exported despite the build's -fvisibility=hidden: it must interpose. */
__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *ts) {
  static _Atomic uint64_t base; /* the first reading: time runs slow from it */
  static _Atomic int scale;
  int k = atomic_load_explicit(&scale, memory_order_relaxed);
  if (k == 0) {
    const char *s = getenv("SLOWCLOCK");
    k = s != NULL && atoi(s) > 0 ? atoi(s) : 50;
    atomic_store_explicit(&scale, k, memory_order_relaxed);
  }
  struct timespec r;
  long rc = syscall(SYS_clock_gettime, id, &r);
  if (rc != 0) return (int)rc;
  uint64_t ns = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec, b = 0;
  if (!atomic_compare_exchange_strong(&base, &b, ns)) ns = b + (ns - b) / (uint64_t)k;
  ts->tv_sec = (time_t)(ns / 1000000000u);
  ts->tv_nsec = (long)(ns % 1000000000u);
  return 0;
}
