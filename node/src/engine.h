/* What the addon needs from V8 and Node's C++ API where Node-API falls short
 * (see engine.cc): the continuation-preserved embedder data, promises without
 * a global handle each, and the per-task run path. All of it runs on the
 * calling thread's isolate, inside a handle scope (a Node-API call, or the
 * one the function opens itself), and only on the environment's own thread.
 */
#ifndef PTS_NODE_ENGINE_H
#define PTS_NODE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include <node_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* V8's continuation-preserved embedder data: the current scheduling state
 * object, or undefined. */
napi_value pts_node_cped_get(void);
/* Sets it; promise reactions registered from now on carry value. */
void pts_node_cped_set(napi_value value);

/* The per-environment part: strong handles to run(slot), the task table and
 * the async resource tasks run under. Created by js_init, freed at teardown;
 * owner thread only. */
typedef struct pts_node_engine pts_node_engine;

/* NULL when out of memory. Must be called inside a Node-API callback. */
pts_node_engine *pts_node_engine_new(napi_value run, napi_value table,
                                     napi_value resource, int chunk_bits, void *host);

/* {post, yield, state, enter}: V8 functions for the calls made once per
 * task, which skip Node-API's per-call bookkeeping (see engine.cc; enter is
 * how run(slot) hands the task's promise and state over). NULL on
 * failure. */
napi_value pts_node_engine_functions(pts_node_engine *e);

/* Implemented by the binding for those functions (host is its per-environment
 * state): queue a postTask task without options, or a yield continuation at
 * user-visible priority without a signal. 0, or a PTS_E* code with nothing
 * queued. */
int pts_node_post_plain(void *host, int32_t slot);
int pts_node_yield_plain(void *host, int32_t index);

/* Keeps a yield continuation's promise (a pending promise JS made) until
 * pts_node_engine_settle_yield or _drop_yield; returns its index, or -1 if
 * promise is not a promise. */
int32_t pts_node_engine_keep_yield(pts_node_engine *e, napi_value promise);
/* Forgets the promise under index unsettled (its continuation was never
 * queued, so JS never saw it). */
void pts_node_engine_drop_yield(pts_node_engine *e, int32_t index);

/* Settles and forgets the promise under index: fulfils it with undefined
 * inside a Node callback scope (a yield continuation running as a task:
 * the continuation itself runs in the scope's microtask checkpoint) if ok,
 * else rejects it with reason (NULL for undefined). Returns 0, or -1 when
 * the isolate is terminating. The fulfilment's handles go to the caller's
 * handle scope; a rejection opens its own. */
int pts_node_engine_settle_yield(pts_node_engine *e, int32_t index, bool ok, napi_value reason);
void pts_node_engine_free(pts_node_engine *e);

/* Calls fn(arg) inside a V8 handle scope: the check phase's, which the two
 * run functions below use (they open none of their own); then forgets the
 * last task's promise. */
void pts_node_engine_scoped(pts_node_engine *e, void (*fn)(void *), void *arg);

/* Runs the task in `slot` of the table as one macrotask: calls run(slot)
 * inside a Node callback scope (run hands the slot's promise and state over
 * through enter(), which makes the state the embedder data; has_state says
 * the task may have one, to clear after; run frees the slot and returns the
 * callback's value), closes the scope
 * (nextTicks and the microtask checkpoint), and only then settles the
 * slot's promise with the value or exception (spec: "clean up after
 * running script" comes before the result settles), in a second scope
 * whose checkpoint runs the promise's reactions. An abort meanwhile
 * (pts_node_engine_reject_running) wins. Returns 0, or -1 when the isolate
 * is terminating (nothing more may run). Its handles go to the caller's
 * handle scope. */
int pts_node_engine_run(pts_node_engine *e, int32_t slot, bool has_state);

/* Rejects the running task's promise with reason (NULL for undefined) if it
 * is not settled yet: its abort steps ran while it was running. No-op when
 * no task runs. */
void pts_node_engine_reject_running(pts_node_engine *e, napi_value reason);

/* Rejects the promise of `slot` (its third entry) with reason (a value of
 * the caller's scope, or NULL for undefined). Opens its own handle scope. */
void pts_node_engine_reject(pts_node_engine *e, int32_t slot, napi_value reason);

#ifdef __cplusplus
}
#endif
#endif /* PTS_NODE_ENGINE_H */
