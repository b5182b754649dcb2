/* bench/runner/peers.h: what ptsched is compared with in the same run.
 *
 * Physical floors (the least any scheduler can do for the scenario: an
 * intrusive FIFO push/pop with an indirect call, a three-level priority FIFO
 * with a bitmap, an atomic-exchange MPSC queue across two cores, a futex
 * ping-pong) and peer libraries from Debian (libevent 2.1 with event
 * priorities, libuv 1.x). Each function runs one batch and returns the
 * figure (ns per task, ns per round trip, bytes per task), or a negative
 * value if the batch could not run.
 *
 * Threads: called from the runner's main thread; the cross-thread scenarios
 * start and join their own threads inside the call.
 */
#ifndef PTS_BENCH_RUNNER_PEERS_H
#define PTS_BENCH_RUNNER_PEERS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The mixed-priority sequence every mixed scenario uses (0..2, 2 = most
 * urgent): the same pseudo-random pattern for ptsched, floors and peers. */
int rb_mixed_priority(size_t i);

/* Background tasks kept outstanding by every flood (ptsched and peers). */
#define RB_FLOOD 16

/* ---- floors ---- */
double rb_floor_fifo(size_t n, size_t batch);
double rb_floor_prio_fifo(size_t n, size_t batch);
double rb_floor_mpsc(size_t n);
double rb_floor_futex_rtt(size_t rounds);
/* Unlink n pending nodes of one signal and call each with a status. */
double rb_floor_abort(size_t n);
/* Move a whole queue between two bitmap levels (ns per move). */
double rb_floor_requeue(size_t moves);
/* Bytes per pending task of a malloc'd intrusive node {next, fn, data}. */
double rb_floor_node_bytes(size_t n);

/* ---- libevent (pre-created events with event_active, event_base_once) ---- */
double rb_libevent_active(size_t n, size_t batch, int mixed);
double rb_libevent_once(size_t n, size_t batch);
double rb_libevent_reactivate(size_t rounds);
double rb_libevent_xthread(size_t n);
double rb_libevent_wake_rtt(size_t rounds);
double rb_libevent_bytes_active(size_t n);
double rb_libevent_bytes_once(size_t n);
/* User-blocking start delays (ns) under a background flood on one base:
 * RB_FLOOD bg events spin bg_ns each and re-activate themselves; another
 * thread activates a high-priority event every gap_ns on average. Collects up
 * to nsamples delays, or fewer when rb_lat_budget_ns of wall time runs out
 * (a loaded machine must not stretch a run without bound). Returns the
 * number collected, or -1. */
int rb_libevent_latency(uint64_t bg_ns, uint64_t gap_ns, double *delays,
                        size_t nsamples);
/* The floor of that figure: the same flood and poster with no scheduler at
 * all. One bare thread runs the flood back to back (5 us spins, bg_ns each,
 * as RB_FLOOD outstanding tasks that re-post themselves keep a loop busy)
 * and checks an atomic flag between two spins; the poster, at the same
 * cadence and under the same budget, stores its send time in the flag; the
 * delay is send -> noticed. What is left is the wait for the spin in
 * progress plus the VM's scheduling noise. Same returns. */
int rb_floor_latency(uint64_t bg_ns, uint64_t gap_ns, double *delays,
                     size_t nsamples);
/* Wall-time budget of one latency run (every latency scenario obeys it). */
extern uint64_t rb_lat_budget_ns;

/* The poster every latency scenario shares (same seed, cadence, budget and
 * sleep-poll, so the floor, the peer and ptsched differ only in their
 * consumer). Up to k times: sleeps gap_ns/2 + uniform(0..gap_ns), clears
 * *done, calls send(arg), which stores the send time where its consumer
 * reads it and sends; then sleep-polls *done every 5 us (a spinning poster
 * would take the second core from the consumer) and copies *delay into
 * delays[i]. Stops early when rb_lat_budget_ns of wall time is spent or
 * send returns nonzero. Returns the number of delays stored. Called on the
 * poster's thread; the consumer sets *delay, then *done (release). */
typedef int (*rb_lat_send_fn)(void *arg);
size_t rb_lat_post(uint64_t gap_ns, double *delays, size_t k, rb_lat_send_fn send,
                   void *arg, atomic_int *done, const double *delay);

/* ---- Go (peer_go.c: bench/go/peer.go as a child process) ---- */
/* Builds the Go peer into outdir once; its path, or NULL with *why set. */
const char *rb_go_prepare(const char *workspace, const char *outdir, const char **why);
/* The scale scenario (agents goroutines, 8 chains each, tasks in all) on
 * GOMAXPROCS = threads: ns per task, or -1. */
double rb_go_scale(unsigned threads, size_t agents, size_t tasks);
/* The latency scenario (an rb_lat_fn): an urgent task into an idle tenant
 * beside a flooding one, GOMAXPROCS 1; delays from the intended send. */
int rb_go_latency(uint64_t bg_ns, uint64_t gap_ns, double *delays, size_t k);

/* ---- libuv (uv_async_send + a mutex-protected queue) ---- */
/* sides: each run's producer and consumer timed apart (core.h, rb_sides), or NULL. */
struct rb_sides;
double rb_libuv_async(size_t n, struct rb_sides *sides);
double rb_libuv_wake_rtt(size_t rounds);

#ifdef __cplusplus
}
#endif
#endif /* PTS_BENCH_RUNNER_PEERS_H */
