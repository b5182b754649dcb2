/* ptsched: promises owned by a loop (ECMAScript promise semantics in C).
 *
 * Threads: owner thread of the promise's loop only. Reactions run as
 * microtasks on that thread, in registration order, each with the scheduling
 * state that was current when it was registered (spec section 4).
 *
 * Ownership: pts_promise_new() and the out-promise of pts_promise_then() give
 * the caller one reference; drop it with pts_promise_unref(). Whatever settles
 * a promise (a reaction, a scheduler task) holds its own reference until then,
 * so reactions still run after the caller's reference is gone.
 */
#ifndef PTSCHED_PROMISE_H
#define PTSCHED_PROMISE_H

#include "ptsched/common.h"
#include "ptsched/loop.h"
#include "ptsched/value.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pts_promise_state {
  PTS_PROMISE_PENDING = 0,
  PTS_PROMISE_FULFILLED,
  PTS_PROMISE_REJECTED
} pts_promise_state;

/* A reaction handler: arg is borrowed; the returned value is owned by the
 * caller of the handler and settles the derived promise (a PTS_VALUE_ERROR
 * rejects it: that is how a handler throws; a PTS_VALUE_PROMISE is adopted). */
typedef pts_value (*pts_reaction_fn)(void *data, pts_value arg);

PTS_EXTERN int pts_promise_new(pts_loop *loop, pts_promise **out);
PTS_EXTERN void pts_promise_ref(pts_promise *p);
PTS_EXTERN void pts_promise_unref(pts_promise *p);

/* Promise resolve function: takes over v's reference. Resolving with a
 * PTS_VALUE_PROMISE adopts its state through a job (one extra tick, as
 * NewPromiseResolveThenableJob); with the promise itself rejects with a
 * TypeError. Once resolved or settled, later calls are ignored (return 0). */
PTS_EXTERN int pts_promise_resolve(pts_promise *p, pts_value v);
/* Promise reject function: takes over reason's reference. */
PTS_EXTERN int pts_promise_reject(pts_promise *p, pts_value reason);

/* then(onFulfilled, onRejected): either handler may be NULL (pass through).
 * cleanup(data), if not NULL, runs exactly once: after the handler ran, or
 * when it never will (loop freed). *out (may be NULL) gets the derived promise. */
PTS_EXTERN int pts_promise_then(pts_promise *p, pts_reaction_fn on_fulfilled,
                                pts_reaction_fn on_rejected, void *data,
                                void (*cleanup)(void *data), pts_promise **out);
/* catch(onRejected) = then(NULL, onRejected). */
PTS_EXTERN int pts_promise_catch(pts_promise *p, pts_reaction_fn on_rejected,
                                 void *data, void (*cleanup)(void *data),
                                 pts_promise **out);
/* finally(onFinally): on_finally gets the settled value borrowed; its return
 * value is ignored unless it is an error (which then rejects), as in ES. */
PTS_EXTERN int pts_promise_finally(pts_promise *p, pts_reaction_fn on_finally,
                                   void *data, void (*cleanup)(void *data),
                                   pts_promise **out);

PTS_EXTERN pts_promise_state pts_promise_get_state(const pts_promise *p);
/* The fulfilment value or rejection reason (borrowed), undefined if pending. */
PTS_EXTERN pts_value pts_promise_get_result(const pts_promise *p);
PTS_EXTERN pts_loop *pts_promise_get_loop(const pts_promise *p);

/* A value of kind PTS_VALUE_PROMISE holding a new reference to p. */
PTS_EXTERN pts_value pts_promise_value(pts_promise *p);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_PROMISE_H */
