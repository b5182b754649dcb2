/* sync/parker.c: a futex-based parker, one sleeper (the consumer) and any
 * number of wakers (producers), with no system call while the sleeper runs.
 *
 * The futex word is the state, one of:
 *   RUNNING   the consumer is busy; unpark is one atomic load, nothing else.
 *   PREPARING the consumer announced it is about to sleep and is doing its
 *             last check for work; unpark turns this into NOTIFIED (a CAS,
 *             no system call) and park then returns at once.
 *   PARKED    the consumer is in (or entering) futex_wait; unpark turns it
 *             into NOTIFIED and issues one FUTEX_WAKE (the only syscall).
 *   NOTIFIED  an unpark arrived since prepare; only the consumer leaves it.
 *
 * Protocol, consumer side (the numbering of parker.h):
 * 1. prepare: state = PREPARING (seq_cst store), then check for work.
 * 2a. cancel: state = RUNNING.
 * 2b. park: CAS PREPARING -> PARKED. If that fails the state is NOTIFIED:
 *     reset to RUNNING and return. Otherwise futex_wait(state, PARKED,
 *     deadline); whatever wakes it (FUTEX_WAKE, EINTR, a spurious return,
 *     EAGAIN because the word already changed), reread the state: NOTIFIED
 *     means return; the deadline passed means exchange to RUNNING and return;
 *     anything else means wait again, with the same absolute deadline.
 * Producer side:
 * 3. publish the work (seq_cst), then unpark: load the state (seq_cst); if
 *    RUNNING or NOTIFIED, done. If PREPARING or PARKED, CAS it to NOTIFIED;
 *    the producer whose CAS replaced PARKED issues the FUTEX_WAKE.
 *
 * Why no wake-up is lost: the consumer's prepare store precedes its check,
 * and the producer's publish precedes its state load, all seq_cst. In the
 * single total order of those four operations, either the check comes after
 * the publish (the consumer sees the work and cancels) or the producer's load
 * comes after prepare (it sees PREPARING or PARKED and notifies). If the
 * consumer reaches futex_wait after the notify, the kernel compares the word
 * with PARKED, finds NOTIFIED and returns EAGAIN instead of sleeping.
 * Since only one producer can win the CAS out of PARKED, at most one wake
 * syscall is issued per park.
 */
#define _GNU_SOURCE
#include "sync/parker.h"

#include <errno.h>
#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { RUNNING = 0, PREPARING = 1, PARKED = 2, NOTIFIED = 3 };

#define NS_PER_SEC 1000000000ull

/* Sleeps while *word == expect, until a wake or the absolute CLOCK_MONOTONIC
 * deadline (NULL: none). Returns 0 or an errno value (ETIMEDOUT, EINTR,
 * EAGAIN); callers reread the word in every case. */
static int futex_wait(_Atomic uint32_t *word, uint32_t expect,
                      const struct timespec *deadline) {
  /* FUTEX_WAIT_BITSET takes an absolute deadline, so a retry after EINTR or a
   * spurious return does not stretch the total wait. PRIVATE: the word is
   * never shared across processes. */
  long r = syscall(SYS_futex, (uint32_t *)word,
                   FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expect, deadline,
                   NULL, FUTEX_BITSET_MATCH_ANY);
  return r == 0 ? 0 : errno;
}

static void futex_wake_one(_Atomic uint32_t *word) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1,
          NULL, NULL, 0);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

void pts__parker_init(pts__parker *p) {
  /* Relaxed: the parker is published by whatever hands it to other threads. */
  atomic_store_explicit(&p->state, RUNNING, memory_order_relaxed);
  atomic_store_explicit(&p->wakes, 0, memory_order_relaxed);
}

void pts__parker_prepare(pts__parker *p) {
  /* seq_cst: this store must be ordered before the consumer's last check for
   * work (a load); only seq_cst forbids that store-load reordering. */
  atomic_store_explicit(&p->state, PREPARING, memory_order_seq_cst);
}

void pts__parker_cancel(pts__parker *p) {
  /* Relaxed: the consumer found its work through the queue's own acquire
   * loads; overwriting a NOTIFIED here loses nothing, it already woke. */
  atomic_store_explicit(&p->state, RUNNING, memory_order_relaxed);
}

/* Back to RUNNING after a wake. Acquire: whatever the producer published
 * before its release CAS to NOTIFIED (a plain flag, say) is visible. */
static void leave(pts__parker *p) {
  (void)atomic_exchange_explicit(&p->state, RUNNING, memory_order_acquire);
}

void pts__parker_park(pts__parker *p, uint64_t timeout_ns) {
  uint32_t expect = PREPARING;
  /* Acquire (also on failure): if an unpark already turned PREPARING into
   * NOTIFIED, see what that producer published. Relaxed would do for the
   * success case, the futex wait itself is no memory access we rely on. */
  if (!atomic_compare_exchange_strong_explicit(&p->state, &expect, PARKED,
                                               memory_order_acquire,
                                               memory_order_acquire)) {
    leave(p); /* NOTIFIED since prepare: return at once */
    return;
  }
  if (timeout_ns == 0) {
    leave(p);
    return;
  }

  struct timespec deadline, *dl = NULL;
  uint64_t end = 0;
  if (timeout_ns != PTS__PARK_FOREVER) {
    uint64_t start = now_ns();
    /* A deadline that overflows 64-bit ns (about 584 years) is forever. */
    if (timeout_ns <= UINT64_MAX - start) {
      end = start + timeout_ns;
      deadline.tv_sec = (time_t)(end / NS_PER_SEC);
      deadline.tv_nsec = (long)(end % NS_PER_SEC);
      dl = &deadline;
    }
  }

  for (;;) {
    int err = futex_wait(&p->state, PARKED, dl);
    /* Acquire: pairs with the producer's release CAS to NOTIFIED. */
    if (atomic_load_explicit(&p->state, memory_order_acquire) == NOTIFIED) {
      leave(p);
      return;
    }
    if (dl != NULL && (err == ETIMEDOUT || now_ns() >= end)) {
      leave(p); /* a racing unpark may still wake nobody: harmless */
      return;
    }
    /* EINTR, a spurious return or a stale EAGAIN: sleep again. */
  }
}

void pts__parker_unpark(pts__parker *p) {
  /* seq_cst: the producer's half of the Dekker pair (its publish, a seq_cst
   * write, then this load); see the file comment. */
  uint32_t s = atomic_load_explicit(&p->state, memory_order_seq_cst);
  while (s == PREPARING || s == PARKED) {
    /* Release: the consumer's acquire of NOTIFIED sees our published work.
     * seq_cst is not needed here: the decision was made by the load above.
     * Failure relaxed: we only loop on the value read. */
    if (atomic_compare_exchange_weak_explicit(&p->state, &s, NOTIFIED,
                                              memory_order_release,
                                              memory_order_relaxed)) {
      if (s == PARKED) {
        futex_wake_one(&p->state);
        /* Relaxed: a statistic, read by tests after joining threads. */
        atomic_fetch_add_explicit(&p->wakes, 1, memory_order_relaxed);
      }
      return;
    }
  }
}

uint64_t pts__parker_wake_syscalls(const pts__parker *p) {
  /* Relaxed: a statistic; callers that need an exact figure join first. */
  return atomic_load_explicit(&((pts__parker *)p)->wakes,
                             memory_order_relaxed);
}

bool pts__parker_is_parked(const pts__parker *p) {
  /* Relaxed: a snapshot; callers synchronise through the queue, not this. */
  return atomic_load_explicit(&((pts__parker *)p)->state,
                              memory_order_relaxed) == PARKED;
}
