/* sched/state.c: scheduling states (spec section 2, "scheduling state"):
 * made, shared and released, and the spec's "compute the scheduling state
 * from options". A state is immutable once made, so equal states are shared
 * by reference: the context's cached fixed ones ({null, fixed[p]}, which
 * also serve the idle callbacks), the inherited one for yield, or one made
 * per call. live_states counts the ones made per call, over all loops.
 */
#include "sched/sched_impl.h"

static atomic_uint_fast64_t live_states;

void pts__sched_state_destroy(pts_sched_state *h) {
  sstate *st = (sstate *)h;
  if (st->abort) pts_signal_unref(st->abort);
  pts_signal_unref(st->prio);
  if (!st->cached) atomic_fetch_sub_explicit(&live_states, 1, memory_order_relaxed);
  pts__loop_pool_free(st->loop, st, sizeof *st);
}

sstate *pts__sched_state_new(pts_loop *loop, pts_signal *abort, pts_signal *prio, bool cached) {
  sstate *st = pts__loop_pool_alloc(loop, sizeof *st);
  if (!st) return NULL;
  st->hdr.refs = 1;
  st->hdr.destroy = pts__sched_state_destroy;
  st->loop = loop;
  st->abort = abort;
  st->prio = prio;
  st->cached = cached;
  if (abort) pts_signal_ref(abort);
  pts_signal_ref(prio);
  if (!cached) atomic_fetch_add_explicit(&live_states, 1, memory_order_relaxed);
  return st;
}

uint64_t pts__sched_live_states(void) {
  return atomic_load_explicit(&live_states, memory_order_relaxed);
}

/* The loop's current scheduling state if it is one of ours. */
static sstate *current_state(pts_loop *loop) {
  pts_sched_state *h = pts__loop_current_state(loop);
  return (h && h->destroy == pts__sched_state_destroy) ? (sstate *)h : NULL;
}

/* A reference to the state {abort, prio}: a cached or the inherited one when
 * equal, else a new one. */
static int state_get(sctx *c, sstate *inh, pts_signal *abort, pts_signal *prio,
                     sstate **out) {
  if (!abort) {
    for (int p = 0; p < PTS_PRIORITY_COUNT; p++) {
      if (prio == c->fixed[p]) {
        *out = c->fixed_state[p];
        pts__state_ref(&c->fixed_state[p]->hdr);
        return 0;
      }
    }
  }
  if (inh && inh->abort == abort && inh->prio == prio) {
    pts__state_ref(&inh->hdr);
    *out = inh;
    return 0;
  }
  *out = pts__sched_state_new(c->loop, abort, prio, false);
  return *out ? 0 : pts__enomem();
}

/* spec: compute the scheduling state from options. signal_mode is OPT_NULL,
 * OPT_GIVEN (sig) or OPT_INHERIT; prio is a pts_priority,
 * PTS_PRIORITY_UNSET (null) or PTS_PRIORITY_INHERIT. */
int pts__sched_compute_state(sctx *c, int signal_mode, pts_signal *sig, int prio, sstate **out) {
  sstate *inh = current_state(c->loop);
  pts_signal *abort = NULL, *ps = NULL;
  if (signal_mode == OPT_INHERIT) {
    if (inh) abort = inh->abort;
  } else if (signal_mode == OPT_GIVEN) {
    abort = sig;
  }
  if (prio == PTS_PRIORITY_INHERIT) {
    if (inh) ps = inh->prio;
  } else if (prio >= 0) {
    ps = c->fixed[prio];
  } else if (signal_mode == OPT_GIVEN && pts_signal_is_task_signal(sig)) {
    ps = sig;
  }
  if (!ps) ps = c->fixed[PTS_PRIORITY_USER_VISIBLE];
  return state_get(c, inh, abort, ps, out);
}

/* The idle callbacks' state (spec section 4, requestIdleCallback). */
pts_sched_state *pts__sched_idle_state(pts_loop *loop) {
  sctx *c = pts__loop_provider_ctx(loop);
  if (!c) return NULL;
  return pts__state_ref(&c->fixed_state[PTS_PRIORITY_BACKGROUND]->hdr);
}
