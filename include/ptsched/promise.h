/** @file ptsched/promise.h
 * @brief Promises owned by a loop (ECMAScript promise semantics in C): the
 * results of postTask() and yield().
 *
 * @par Threads
 * Owner thread of the promise's loop only. Reactions run as
 * microtasks on that thread, in registration order, each with the scheduling
 * state that was current when it was registered (spec section 4).
 *
 * @par Ownership
 * pts_promise_new() and the out-promise of pts_promise_then() give
 * the caller one reference; drop it with pts_promise_unref(). Whatever settles
 * a promise (a reaction, a scheduler task) holds its own reference until then,
 * so reactions still run after the caller's reference is gone.
 *
 * @par Errors
 * Every int-returning function returns 0, PTS_EINVAL for a NULL
 * promise or loop, or PTS_ENOMEM (PTS_EQUOTA on an agent's loop at its byte
 * limit, pts_agent_limits.bytes); PTS_EFOREIGN (debug builds) from a foreign
 * thread. A call that fails registers nothing and calls nothing. Each
 * function lists every code it can return.
 */
#ifndef PTSCHED_PROMISE_H
#define PTSCHED_PROMISE_H

#include "ptsched/common.h"
#include "ptsched/loop.h"
#include "ptsched/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The [[PromiseState]] of a promise. */
typedef enum pts_promise_state {
  PTS_PROMISE_PENDING = 0, /**< not settled yet */
  PTS_PROMISE_FULFILLED,   /**< fulfilled with a value */
  PTS_PROMISE_REJECTED     /**< rejected with a reason */
} pts_promise_state;

/** A reaction handler: arg is borrowed; the returned value is owned by the
 * caller of the handler and settles the derived promise (a PTS_VALUE_ERROR
 * rejects it: that is how a handler throws; a PTS_VALUE_PROMISE is adopted). */
typedef pts_value (*pts_reaction_fn)(void *data, pts_value arg);

/** A new pending promise on the loop (NewPromiseCapability); *out gets the
 * caller's reference. Owner thread.
 * @retval 0 success.
 * @retval PTS_EINVAL loop or out is NULL.
 * @retval PTS_ENOMEM out of memory.
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_EQUOTA an agent's loop at its byte limit
 * (pts_agent_limits.bytes). */
PTS_EXTERN int pts_promise_new(pts_loop *loop, pts_promise **out);
/** Takes one more reference. NULL is a no-op. Owner thread. */
PTS_EXTERN void pts_promise_ref(pts_promise *p);
/** Drops one reference; the last one frees the promise (reactions already
 * registered keep their own). NULL is a no-op. Owner thread. */
PTS_EXTERN void pts_promise_unref(pts_promise *p);

/** Promise resolve function. Resolving with a PTS_VALUE_PROMISE adopts its
 * state through a job (one extra tick, as NewPromiseResolveThenableJob); with
 * the promise itself rejects with a TypeError. Once resolved or settled,
 * later calls are ignored. Takes over v's reference. Owner thread.
 * @retval 0 resolved, or ignored (v released).
 * @retval PTS_EINVAL p is NULL (v released).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds); v is not
 * released. */
PTS_EXTERN int pts_promise_resolve(pts_promise *p, pts_value v);
/** Promise reject function. Reactions run as microtasks. Once resolved, later
 * calls are ignored. Takes over reason's reference. Owner thread.
 * @retval 0 rejected, or ignored (reason released).
 * @retval PTS_EINVAL p is NULL (reason released).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds); reason is
 * not released. */
PTS_EXTERN int pts_promise_reject(pts_promise *p, pts_value reason);

/** Promise.prototype.then(onFulfilled, onRejected) (PerformPromiseThen):
 * either handler may be NULL (pass through). The handler runs as a microtask
 * on the owner thread, with the scheduling state current at this call
 * (HostMakeJobCallback). cleanup(data), if not NULL, runs exactly once: after
 * the handler ran, or when it never will (loop freed). *out (may be NULL) gets
 * a reference to the derived promise. Owner thread.
 * @retval 0 registered.
 * @retval PTS_EINVAL p is NULL.
 * @retval PTS_ENOMEM out of memory (nothing registered, cleanup not called).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_EQUOTA an agent's loop at its byte limit
 * (pts_agent_limits.bytes); as PTS_ENOMEM. */
PTS_EXTERN int pts_promise_then(pts_promise *p, pts_reaction_fn on_fulfilled,
                                pts_reaction_fn on_rejected, void *data,
                                void (*cleanup)(void *data), pts_promise **out);
/** Promise.prototype.catch(onRejected) = then(NULL, onRejected), with the same
 * rules as pts_promise_then(). Owner thread.
 * @retval 0 registered.
 * @retval PTS_EINVAL p is NULL.
 * @retval PTS_ENOMEM out of memory (nothing registered, cleanup not called).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_EQUOTA an agent's loop at its byte limit
 * (pts_agent_limits.bytes); as PTS_ENOMEM. */
PTS_EXTERN int pts_promise_catch(pts_promise *p, pts_reaction_fn on_rejected,
                                 void *data, void (*cleanup)(void *data),
                                 pts_promise **out);
/** Promise.prototype.finally(onFinally): on_finally gets the settled value
 * borrowed; its return value is ignored unless it is an error (which then
 * rejects), as in ES; otherwise the derived promise settles as p did. NULL
 * on_finally is then(NULL, NULL). Other rules as pts_promise_then(). Owner
 * thread.
 * @retval 0 registered.
 * @retval PTS_EINVAL p is NULL.
 * @retval PTS_ENOMEM out of memory (nothing registered, cleanup not called).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds).
 * @retval PTS_EQUOTA an agent's loop at its byte limit
 * (pts_agent_limits.bytes); as PTS_ENOMEM. */
PTS_EXTERN int pts_promise_finally(pts_promise *p, pts_reaction_fn on_finally,
                                   void *data, void (*cleanup)(void *data),
                                   pts_promise **out);

/** The promise's [[PromiseState]]; PTS_PROMISE_PENDING for NULL. Owner
 * thread. */
PTS_EXTERN pts_promise_state pts_promise_get_state(const pts_promise *p);
/** The fulfilment value or rejection reason (borrowed: pts_value_copy() it to
 * keep it past the promise), undefined if pending. Owner thread. */
PTS_EXTERN pts_value pts_promise_get_result(const pts_promise *p);
/** The loop that owns the promise (borrowed); NULL for NULL. Any thread. */
PTS_EXTERN pts_loop *pts_promise_get_loop(const pts_promise *p);

/** A value of kind PTS_VALUE_PROMISE holding a new reference to p (release it
 * with pts_value_release() on the owner thread). Owner thread. */
PTS_EXTERN pts_value pts_promise_value(pts_promise *p);

/* ---- the resolving functions a thenable's then hook gets (value.h) ---- */

/** resolve(v) of the pair. The first call of either function of the pair
 * settles (or adopts into) the promise as pts_promise_resolve() would (a
 * promise or thenable value is adopted through a job, the promise itself is a
 * TypeError, an error value rejects); later calls are ignored. Takes over v's
 * reference. Owner thread of the promise's loop, while the loop lives.
 * @retval 0 done, or ignored (v released).
 * @retval PTS_EINVAL r is NULL (v released).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds); v is not
 * released. */
PTS_EXTERN int pts_resolvers_resolve(pts_resolvers *r, pts_value v);
/** reject(reason) of the pair, with the same first-call-wins rule as
 * pts_resolvers_resolve(). Takes over reason's reference. Owner thread of the
 * promise's loop, while the loop lives.
 * @retval 0 done, or ignored (reason released).
 * @retval PTS_EINVAL r is NULL (reason released).
 * @retval PTS_EFOREIGN called from a foreign thread (debug builds); reason is
 * not released. */
PTS_EXTERN int pts_resolvers_reject(pts_resolvers *r, pts_value reason);
/** Takes one more reference to the pair (the then hook borrows it: take one
 * to call it after the hook returned). NULL is a no-op. Owner thread. */
PTS_EXTERN void pts_resolvers_ref(pts_resolvers *r);
/** Drops one reference; the last frees the pair (a promise it never settled
 * stays pending, as in ES). NULL is a no-op. Owner thread. */
PTS_EXTERN void pts_resolvers_unref(pts_resolvers *r);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_PROMISE_H */
