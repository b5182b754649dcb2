/* The test side of the allocation seam (alloc.h): the attempt counter and
 * the armed k. Relaxed everywhere: the counter only numbers attempts, and a
 * test reads it after joining or stopping whatever allocated. */
#include "alloc.h"

_Atomic int pts__alloc_armed = 0;
static _Atomic uint64_t count, fail_k, failures;

bool pts__alloc_tick(void) {
  uint64_t n = atomic_fetch_add_explicit(&count, 1, memory_order_relaxed) + 1;
  if (n != atomic_load_explicit(&fail_k, memory_order_relaxed)) return false;
  atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
  return true;
}

void pts__alloc_fail_at(uint64_t k) {
  atomic_store_explicit(&count, 0, memory_order_relaxed);
  atomic_store_explicit(&failures, 0, memory_order_relaxed);
  atomic_store_explicit(&fail_k, k, memory_order_relaxed);
  atomic_store_explicit(&pts__alloc_armed, 1, memory_order_relaxed);
}

void pts__alloc_disarm(void) {
  atomic_store_explicit(&pts__alloc_armed, 0, memory_order_relaxed);
  atomic_store_explicit(&fail_k, 0, memory_order_relaxed);
}

uint64_t pts__alloc_count(void) { return atomic_load_explicit(&count, memory_order_relaxed); }

uint64_t pts__alloc_failures(void) {
  return atomic_load_explicit(&failures, memory_order_relaxed);
}
