/* sync/nodecache.h: storage for commands sent to another thread, with no
 * allocation per command in steady state.
 *
 * A producer thread takes blocks from its own cache (a plain free list, no
 * atomics); the consumer that applied the command gives the block back to
 * the cache of the thread that took it, through that cache's return stack.
 * The producer takes the whole return stack with one exchange when its free
 * list runs dry, and calls malloc only when that is empty too. So a stream of
 * posts recycles the same blocks, however many loops and threads it crosses;
 * per-producer FIFO and exactly-once are the inbox's business (mpsc.h), not
 * this file's.
 *
 * Who calls what: pts__node_get() and pts__node_put() from any thread; a
 * block may be put by any thread, once, after its last use.
 * pts__node_flush() from a consumer before it sleeps or exits: blocks it
 * gives back are batched per home (one compare-and-swap per batch), and a
 * batch not yet flushed is not yet reusable by its producer.
 *
 * Memory: each thread's cache keeps what it has had in flight at the most
 * (up to PTS__NODE_CACHE_MAX blocks per class; beyond that blocks are freed
 * once the thread has gone a second without needing all of them),
 * and the cache of a thread that exits is kept for the next thread that
 * starts (so blocks still in flight always have a home to return to).
 * Under AddressSanitizer every get is a malloc and every put a free, so the
 * sanitizer sees each block's lifetime. Design and figures: docs/sync.md.
 */
#ifndef PTSCHED_SYNC_NODECACHE_H
#define PTSCHED_SYNC_NODECACHE_H

#include <stddef.h>
#include <stdint.h>

/* Usable bytes of the two block classes (a block is 8 bytes more). */
#define PTS__NODE_SMALL 120
#define PTS__NODE_LARGE 248
/* Blocks a thread's cache keeps per class once it has stopped growing
 * (nodecache.c, TRIM_DELAY_NS). */
#define PTS__NODE_CACHE_MAX 65536

#ifdef __cplusplus
extern "C" {
#endif

/* Any thread. A block of at least size bytes (<= PTS__NODE_LARGE), aligned
 * to 8, or NULL when out of memory. */
void *pts__node_get(size_t size);

/* Any thread: the block is free again (NULL is ignored). */
void pts__node_put(void *block);

/* Any thread: hands back the blocks this thread has batched for other
 * threads' caches. Cheap when there is nothing to flush. */
void pts__node_flush(void);

/* For tests and benchmarks: blocks malloc'd by this layer since the process
 * started (all threads), and blocks in flight or cached (malloc'd, not yet
 * freed). */
uint64_t pts__node_mallocs(void);
uint64_t pts__node_live(void);

/* For tests: how long a cache over PTS__NODE_CACHE_MAX keeps its surplus
 * after it last needed all of it (default one second; 0 trims at once). */
void pts__node_set_trim_delay_ns(uint64_t ns);
/* For tests: the clock of the trim delay (NULL: CLOCK_MONOTONIC_COARSE). */
typedef uint64_t (*pts__node_clock_fn)(void);
void pts__node_set_clock(pts__node_clock_fn now_ns);

#ifdef __cplusplus
}
#endif

#endif /* PTSCHED_SYNC_NODECACHE_H */
