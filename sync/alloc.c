/* The test side of the allocation seam (alloc.h): the attempt counter and
 * the armed k. Relaxed everywhere: the counter only numbers attempts, and a
 * test reads it after joining or stopping whatever allocated. */
#include "alloc.h"

#include <pthread.h>

_Atomic int pts__alloc_armed = 0;
static _Atomic uint64_t count, fail_k, failures;

/* Distinct call sites seen while armed, since the process started: the
 * return address of this out-of-line tick is a point inside the function
 * the wrapper was inlined into, one per allocation call in the source. A
 * mutex: armed is test mode only. */
#define MAX_SITES 512
static void *sites[MAX_SITES];
static unsigned nsites;
static pthread_mutex_t sites_mu = PTHREAD_MUTEX_INITIALIZER;

static void note_site(void *site) {
  pthread_mutex_lock(&sites_mu);
  unsigned i = 0;
  while (i < nsites && sites[i] != site) i++;
  if (i == nsites && nsites < MAX_SITES) sites[nsites++] = site;
  pthread_mutex_unlock(&sites_mu);
}

__attribute__((noinline)) bool pts__alloc_tick(void) {
  note_site(__builtin_return_address(0));
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

uint64_t pts__alloc_sites(void) {
  pthread_mutex_lock(&sites_mu);
  uint64_t n = nsites;
  pthread_mutex_unlock(&sites_mu);
  return n;
}
