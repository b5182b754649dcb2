/* sync/parker.h: one thread sleeps until another wakes it or a deadline
 * passes, with a system call only when the sleeper really sleeps.
 *
 * Protocol (consumer = the loop's owner thread, producers = any thread):
 * 1. The consumer calls pts__parker_prepare(), then checks once more for work
 *    (the inbox, due timers, stop flag).
 * 2. If it found work, it calls pts__parker_cancel(); otherwise
 *    pts__parker_park(), which returns at once if a producer called
 *    pts__parker_unpark() since step 1, and otherwise sleeps until unpark or
 *    the deadline.
 * 3. A producer makes its work visible first (push to the inbox, set a flag)
 *    and then calls pts__parker_unpark(): an atomic read while the consumer is
 *    running, a compare-and-swap while it is preparing, and a futex wake only
 *    when it is parked (asleep or about to be).
 * Because the producer publishes before unpark and the consumer announces
 * before its last check, a wake-up can never be lost (docs/sync.md).
 * Requirement: the producer's publishing write and the consumer's check must
 * be seq_cst atomics (pts__mpsc_push and pts__mpsc_is_empty are), because
 * prepare/unpark form a store-then-load pair on each side (Dekker); a release
 * store alone could be reordered after unpark's load on a weak machine.
 *
 * Threads: init, prepare, cancel and park from the consumer only; unpark and
 * wake_syscalls from any thread. park() handles spurious wake-ups and EINTR
 * itself: it returns only after an unpark (since prepare) or the deadline.
 */
#ifndef PTSCHED_SYNC_PARKER_H
#define PTSCHED_SYNC_PARKER_H

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include "sync/cacheline.h"

typedef struct pts__parker {
  /* The futex word: RUNNING, PREPARING, PARKED or NOTIFIED (parker.c). */
  alignas(PTS__CACHELINE) PTS__ATOMIC(uint32_t) state;
  /* Futex wakes issued; written only on the (rare) wake path, so it shares
   * the line with state. */
  PTS__ATOMIC(uint64_t) wakes;
} pts__parker;

#define PTS__PARK_FOREVER UINT64_MAX

#ifdef __cplusplus
extern "C" {
#endif

void pts__parker_init(pts__parker *p);
void pts__parker_prepare(pts__parker *p);
void pts__parker_cancel(pts__parker *p);
/* timeout_ns is relative (CLOCK_MONOTONIC); PTS__PARK_FOREVER for none. */
void pts__parker_park(pts__parker *p, uint64_t timeout_ns);
/* Any thread. */
void pts__parker_unpark(pts__parker *p);
/* Counts of futex wakes issued, for tests and benchmarks (relaxed). */
uint64_t pts__parker_wake_syscalls(const pts__parker *p);
/* Any thread, a racy snapshot for tests and diagnostics: true once the
 * consumer has committed to sleeping (in or about to enter futex_wait) and no
 * unpark has reached it yet. */
bool pts__parker_is_parked(const pts__parker *p);

#ifdef __cplusplus
}
#endif

#endif /* PTSCHED_SYNC_PARKER_H */
