/* loop/promise.c: promises with ECMAScript semantics (ECMA-262, "Promise
 * Objects"), owned by one loop.
 *
 * A reaction is one record per then() (both handlers in it), queued as a
 * microtask when its promise settles (spec: TriggerPromiseReactions,
 * NewPromiseReactionJob). Resolving with a promise queues one job (spec:
 * NewPromiseResolveThenableJob) that registers an adopting reaction on it,
 * so adoption costs the standard two extra ticks. finally() follows the spec
 * exactly (thenFinally / catchFinally with PromiseResolve and a value thunk),
 * so its tick counts match too.
 *
 * State capture (spec section 4): a user reaction captures the loop's current
 * scheduling state at registration (HostMakeJobCallback) and restores it
 * while its handler runs (HostCallJobCallback). Internal reactions (adoption,
 * finally's thunk) call no user code and capture nothing.
 *
 * References: the caller's, each reaction's on the promise it will settle
 * (its target), the thenable job's on both promises. A promise is freed when
 * its count reaches zero; its pending reactions are then released (cleanup
 * runs, their targets lose a reference). Every live promise is on the loop's
 * list so pts_loop_free can release the rest (cycles, leaked references),
 * except an embedded one (a postTask result in its task's block) while its
 * task lives: the task releases it, and it joins the list if it outlives
 * the task.
 *
 * One C convention on top of ES: an error value is never a fulfilment value.
 * Resolving with a PTS_VALUE_ERROR rejects (value.h: returning an error is
 * how a callback throws).
 */
#include <stdlib.h>

#include "loop/loop_impl.h"

struct pts_promise {
  pts__list link; /* first: the loop's live list */
  uint32_t refs;
  uint8_t state;         /* pts_promise_state */
  bool already_resolved; /* spec: [[AlreadyResolved]] of its resolving functions */
  bool embedded;         /* in a caller's block (pts__promise_embed) */
  pts_loop *loop;
  pts_value result;
  struct reaction *rhead, *rtail; /* spec: [[PromiseFulfill/RejectReactions]] */
};

_Static_assert(sizeof(struct pts_promise) <= PTS__PROMISE_BLOCK - PTS__PROMISE_OFFSET,
               "an embedded promise fits its block's second half");

enum rkind { R_THEN, R_FINALLY, R_ADOPT, R_THUNK };

typedef struct reaction {
  pts__microtask mt; /* first: the job */
  struct reaction *next;
  uint8_t kind;
  bool rejected;     /* set when triggered: which handler applies */
  bool thunk_reject; /* R_THUNK: the thunk throws its value */
  pts_loop *loop;
  pts_promise *target; /* the promise this reaction settles (one reference) */
  union {
    struct {
      pts_reaction_fn on_ful, on_rej;
    } h;
    pts_value thunk; /* R_THUNK: the value finally passes on */
  } u;
  void *data;
  void (*cleanup)(void *data);
  pts_sched_state *state; /* HostMakeJobCallback's [[SchedulingState]] */
  pts_value arg;          /* the settled value, once triggered */
} reaction;

typedef struct thenable_job {
  pts__microtask mt;
  pts_loop *loop;
  pts_promise *p;        /* the promise being resolved */
  pts_promise *thenable; /* the promise it adopts */
} thenable_job;

/* A user thenable's job: its then hook, the captured state. */
typedef struct user_thenable_job {
  pts__microtask mt;
  pts_loop *loop;
  pts_promise *p;           /* the promise being resolved (one reference) */
  pts_value thenable;       /* PTS_VALUE_THENABLE (one reference) */
  pts_sched_state *state;   /* HostMakeJobCallback's [[SchedulingState]] */
} user_thenable_job;

/* spec: CreateResolvingFunctions: the pair shares one [[AlreadyResolved]]
 * record; it holds a reference to its promise. */
struct pts_resolvers {
  uint32_t refs;
  bool already_resolved;
  pts_promise *p;
};

static void settle(pts_promise *p, pts_promise_state st, pts_value v);
static void resolve_inner(pts_promise *p, pts_value v);

/* ---- lifetime ---- */

static void promise_init(pts_loop *loop, pts_promise *p, bool embedded) {
  p->refs = 1;
  p->state = PTS_PROMISE_PENDING;
  p->already_resolved = false;
  p->embedded = embedded;
  p->loop = loop;
  p->result = pts_undefined();
  p->rhead = p->rtail = NULL;
  /* An embedded promise joins the live list only if it outlives its
   * caller's part (pts__promise_drop_embedded): until then that part
   * releases it, at the latest when the loop's provider is destroyed. */
  if (!embedded) pts__list_prepend(&loop->live, &p->link);
}

static pts_promise *promise_create(pts_loop *loop) {
  pts_promise *p = pts__loop_pool_alloc(loop, sizeof *p);
  if (p == NULL) return NULL;
  promise_init(loop, p, false);
  return p;
}

pts_promise *pts__promise_embed(pts_loop *loop, void *block) {
  pts_promise *p = (pts_promise *)((char *)block + PTS__PROMISE_OFFSET);
  promise_init(loop, p, true);
  return p;
}

/* The memory of a promise no one holds: an embedded one frees its whole
 * block (its caller's part has ended: that part held a reference). */
static void promise_block_free(pts_loop *loop, pts_promise *p) {
  if (p->embedded)
    pts__loop_pool_free(loop, (char *)p - PTS__PROMISE_OFFSET, PTS__PROMISE_BLOCK);
  else
    pts__loop_pool_free(loop, p, sizeof *p);
}

static void release_reaction(reaction *r) {
  pts_loop *loop = r->loop;
  if (r->cleanup) r->cleanup(r->data);
  if (r->kind == R_THUNK) pts_value_release(r->u.thunk);
  pts_value_release(r->arg);
  pts__state_unref(r->state);
  pts_promise *target = r->target;
  pts__loop_pool_free(loop, r, sizeof *r);
  if (target) pts_promise_unref(target);
}

/* Detaches a promise's contents and releases them. The promise itself is not
 * touched after the detach, so a release that drops its last reference is
 * safe. */
static void release_contents(pts_promise *p) {
  reaction *r = p->rhead;
  pts_value result = p->result;
  p->rhead = p->rtail = NULL;
  p->result = pts_undefined();
  while (r != NULL) {
    reaction *next = r->next;
    release_reaction(r);
    r = next;
  }
  pts_value_release(result);
}

int pts_promise_new(pts_loop *loop, pts_promise **out) {
  if (loop == NULL || out == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(loop);
  pts_promise *p = promise_create(loop);
  if (p == NULL) return pts__enomem();
  *out = p;
  return 0;
}

void pts_promise_ref(pts_promise *p) {
  if (p == NULL || pts__loop_foreign(p->loop, __func__)) return;
  p->refs++;
}

/* The hot case (settled with a value that holds nothing, no reactions) has
 * nothing to release. */
static inline void promise_release_contents(pts_promise *p) {
  if (p->rhead != NULL || p->result.kind >= PTS_VALUE_BOX) release_contents(p);
}

/* The last reference went: out of line, so the common unref (a count that
 * stays above zero) is a decrement and a branch. An embedded promise is on
 * the live list by then: its caller's part, which held a reference, has
 * ended. */
static __attribute__((noinline)) void promise_free(pts_promise *p) {
  pts_loop *loop = p->loop;
  pts__list_remove(&p->link);
  promise_release_contents(p);
  promise_block_free(loop, p);
}

/* pts__promise_drop_embedded when the promise lives on or holds something
 * (its count is already decremented). */
static __attribute__((noinline)) bool drop_embedded_slow(pts_promise *p) {
  if (p->refs != 0) {
    pts__list_prepend(&p->loop->live, &p->link); /* it lives on: the loop tracks it */
    return false;
  }
  release_contents(p);
  return true;
}

/* Small, so the run path inlines its common case: the last reference of a
 * result that holds nothing. */
bool pts__promise_drop_embedded(pts_promise *p) {
  if (--p->refs == 0 && p->rhead == NULL && p->result.kind < PTS_VALUE_BOX) return true;
  return drop_embedded_slow(p);
}

void pts_promise_unref(pts_promise *p) {
  if (p == NULL || pts__loop_foreign(p->loop, __func__)) return;
  if (--p->refs == 0) promise_free(p);
}

void pts__promises_sweep(pts_loop *loop) {
  /* Move each live promise to the swept list, then release what it holds;
   * that may free other promises (normally, through their counts) or make
   * new ones, hence the loop until the live list is empty. */
  while (!pts__list_empty(&loop->live)) {
    pts__list *l = pts__list_first(&loop->live);
    pts__list_remove(l);
    pts__list_prepend(&loop->swept, l);
    release_contents((pts_promise *)l);
  }
  /* What is left is still referenced by someone: pts_loop_free frees it
   * anyway (loop.h: the loop owns its promises). */
  while (!pts__list_empty(&loop->swept)) {
    pts__list *l = pts__list_first(&loop->swept);
    pts__list_remove(l);
    promise_block_free(loop, (pts_promise *)l);
  }
}

/* ---- settling ---- */

static void queue_reaction(pts_promise *p, reaction *r) {
  r->rejected = p->state == PTS_PROMISE_REJECTED;
  r->arg = pts_value_copy(p->result);
  pts__loop_queue_microtask_node(r->loop, &r->mt);
}

/* spec: FulfillPromise / RejectPromise, then TriggerPromiseReactions. Takes
 * over v. */
static void settle(pts_promise *p, pts_promise_state st, pts_value v) {
  if (p->state != PTS_PROMISE_PENDING) { /* cannot happen via the API */
    pts_value_release(v);
    return;
  }
  p->state = st;
  p->result = v;
  reaction *r = p->rhead;
  p->rhead = p->rtail = NULL;
  while (r != NULL) {
    reaction *next = r->next;
    queue_reaction(p, r);
    r = next;
  }
}

/* spec: PerformPromiseThen, with the reaction already built. */
static void perform_then(pts_promise *p, reaction *r) {
  r->next = NULL;
  if (p->state == PTS_PROMISE_PENDING) {
    if (p->rtail)
      p->rtail->next = r;
    else
      p->rhead = r;
    p->rtail = r;
  } else {
    queue_reaction(p, r);
  }
}

static void thenable_job_run(pts__microtask *mt, int status);
static void user_thenable_job_run(pts__microtask *mt, int status);

/* spec: Promise Resolve Functions, from step 7 (after [[AlreadyResolved]]).
 * Takes over v. */
static void resolve_inner(pts_promise *p, pts_value v) {
  if (v.kind == PTS_VALUE_PROMISE && v.u.promise == p) {
    pts_value_release(v);
    settle(p, PTS_PROMISE_REJECTED,
           pts_error_value(PTS_ETYPE, "promise resolved with itself"));
  } else if (v.kind == PTS_VALUE_ERROR) {
    settle(p, PTS_PROMISE_REJECTED, v);
  } else if (v.kind == PTS_VALUE_THENABLE) {
    user_thenable_job *j = pts__loop_pool_alloc(p->loop, sizeof *j);
    if (j == NULL) {
      pts_value_release(v);
      settle(p, PTS_PROMISE_REJECTED, pts_error_value(PTS_ENOMEM, NULL));
      return;
    }
    j->mt.run = user_thenable_job_run;
    j->loop = p->loop;
    p->refs++; /* the job's, then its resolvers' */
    j->p = p;
    j->thenable = v;
    /* spec: HostMakeJobCallback(then) in the resolve function. */
    j->state = pts__state_ref(pts__loop_current_state(p->loop));
    pts__loop_queue_microtask_node(p->loop, &j->mt);
  } else if (v.kind == PTS_VALUE_PROMISE) {
    thenable_job *j = pts__loop_pool_alloc(p->loop, sizeof *j);
    if (j == NULL) {
      pts_value_release(v);
      settle(p, PTS_PROMISE_REJECTED, pts_error_value(PTS_ENOMEM, NULL));
      return;
    }
    j->mt.run = thenable_job_run;
    j->loop = p->loop;
    p->refs++; /* the job will settle p */
    j->p = p;
    j->thenable = v.u.promise; /* v's reference */
    pts__loop_queue_microtask_node(p->loop, &j->mt);
  } else {
    settle(p, PTS_PROMISE_FULFILLED, v);
  }
}

/* Resolve a reaction's target with a handler's outcome, unless something
 * already resolved it (the caller may own the derived promise). */
static void resolve_target(pts_promise *t, pts_value v, bool reject) {
  if (t == NULL || t->already_resolved) {
    pts_value_release(v);
    return;
  }
  t->already_resolved = true;
  if (reject)
    settle(t, PTS_PROMISE_REJECTED, v);
  else
    resolve_inner(t, v);
}

int pts_promise_resolve(pts_promise *p, pts_value v) {
  if (p == NULL) {
    pts_value_release(v);
    return PTS_EINVAL;
  }
  PTS__CHECK_OWNER(p->loop);
  pts__promise_settle_result(p, v);
  return 0;
}

void pts__promise_settle_result(pts_promise *p, pts_value v) {
  if (p->already_resolved) {
    pts_value_release(v);
    return;
  }
  p->already_resolved = true;
  if (v.kind < PTS_VALUE_ERROR && p->rhead == NULL) {
    /* spec: FulfillPromise with no reactions to trigger (a postTask result
     * nobody awaits yet): the state and the value are all there is. */
    p->state = PTS_PROMISE_FULFILLED;
    p->result = v;
    return;
  }
  resolve_inner(p, v); /* an error value rejects */
}

int pts_promise_reject(pts_promise *p, pts_value reason) {
  if (p == NULL) {
    pts_value_release(reason);
    return PTS_EINVAL;
  }
  PTS__CHECK_OWNER(p->loop);
  if (p->already_resolved) {
    pts_value_release(reason);
    return 0;
  }
  p->already_resolved = true;
  settle(p, PTS_PROMISE_REJECTED, reason);
  return 0;
}

/* ---- jobs ---- */

static reaction *reaction_new(pts_loop *loop, int kind, pts_promise *target) {
  reaction *r = pts__loop_pool_alloc(loop, sizeof *r);
  if (r == NULL) return NULL;
  r->mt.run = NULL; /* set below, after the forward declaration */
  r->next = NULL;
  r->kind = (uint8_t)kind;
  r->rejected = false;
  r->thunk_reject = false;
  r->loop = loop;
  r->target = target;
  r->u.h.on_ful = r->u.h.on_rej = NULL;
  r->data = NULL;
  r->cleanup = NULL;
  r->state = NULL;
  r->arg = pts_undefined();
  return r;
}

static void reaction_run(pts__microtask *mt, int status);

/* spec: NewPromiseResolveThenableJob: thenable.then(resolve, reject) with
 * fresh resolving functions for p. */
static void thenable_job_run(pts__microtask *mt, int status) {
  thenable_job *j = (thenable_job *)mt;
  pts_loop *loop = j->loop;
  pts_promise *p = j->p, *thenable = j->thenable;
  pts__loop_pool_free(loop, j, sizeof *j);
  reaction *r = status == 0 ? reaction_new(loop, R_ADOPT, p) : NULL;
  if (r != NULL) {
    r->mt.run = reaction_run;
    perform_then(thenable, r); /* r holds p's reference now */
  } else {
    if (status == 0)
      settle(p, PTS_PROMISE_REJECTED, pts_error_value(PTS_ENOMEM, NULL));
    pts_promise_unref(p);
  }
  pts_promise_unref(thenable);
}

/* spec: NewPromiseResolveThenableJob for a user thenable: fresh resolving
 * functions, then HostCallJobCallback(then, thenable, resolve, reject)
 * under the captured state; an abrupt completion (an error value returned)
 * calls reject (ignored once the pair resolved). */
static void user_thenable_job_run(pts__microtask *mt, int status) {
  user_thenable_job *j = (user_thenable_job *)mt;
  pts_loop *loop = j->loop;
  pts_promise *p = j->p;
  pts_value thenable = j->thenable;
  pts_sched_state *state = j->state;
  pts__loop_pool_free(loop, j, sizeof *j);
  pts_resolvers *r = status == 0 ? pts__loop_pool_alloc(loop, sizeof *r) : NULL;
  if (r == NULL) {
    if (status == 0)
      settle(p, PTS_PROMISE_REJECTED, pts_error_value(PTS_ENOMEM, NULL));
    pts_promise_unref(p);
  } else {
    r->refs = 1;
    r->already_resolved = false;
    r->p = p; /* the job's reference moves to the pair */
    pts__loop_swap_state(loop, state);
    pts_value out = pts__thenable_call(thenable.u.thenable, r);
    pts__loop_swap_state(loop, NULL);
    if (out.kind == PTS_VALUE_ERROR)
      pts_resolvers_reject(r, out);
    else
      pts_value_release(out);
    pts_resolvers_unref(r);
  }
  pts__state_unref(state);
  pts_value_release(thenable);
}

int pts_resolvers_resolve(pts_resolvers *r, pts_value v) {
  if (r == NULL) {
    pts_value_release(v);
    return PTS_EINVAL;
  }
  PTS__CHECK_OWNER(r->p->loop);
  if (r->already_resolved) {
    pts_value_release(v);
    return 0;
  }
  r->already_resolved = true;
  resolve_inner(r->p, v);
  return 0;
}

int pts_resolvers_reject(pts_resolvers *r, pts_value reason) {
  if (r == NULL) {
    pts_value_release(reason);
    return PTS_EINVAL;
  }
  PTS__CHECK_OWNER(r->p->loop);
  if (r->already_resolved) {
    pts_value_release(reason);
    return 0;
  }
  r->already_resolved = true;
  settle(r->p, PTS_PROMISE_REJECTED, reason);
  return 0;
}

void pts_resolvers_ref(pts_resolvers *r) {
  if (r == NULL || pts__loop_foreign(r->p->loop, __func__)) return;
  r->refs++;
}

void pts_resolvers_unref(pts_resolvers *r) {
  if (r == NULL || pts__loop_foreign(r->p->loop, __func__)) return;
  if (--r->refs != 0) return;
  pts_promise *p = r->p;
  pts__loop_pool_free(p->loop, r, sizeof *r);
  pts_promise_unref(p);
}

/* spec: finally's thenFinally / catchFinally, after onFinally returned r2
 * (not an error): PromiseResolve(r2).then(valueThunk or thrower). */
static void finally_continue(reaction *r, pts_value r2) {
  pts_loop *loop = r->loop;
  pts_promise *p2, *p3;
  if (r2.kind == PTS_VALUE_PROMISE) {
    p2 = r2.u.promise; /* spec: PromiseResolve returns a promise as is */
  } else {
    p2 = promise_create(loop);
    if (p2 == NULL) {
      pts_value_release(r2);
      resolve_target(r->target, pts_error_value(PTS_ENOMEM, NULL), true);
      return;
    }
    p2->already_resolved = true;
    resolve_inner(p2, r2); /* a thenable is adopted through its job */
  }
  p3 = promise_create(loop);
  reaction *t = p3 ? reaction_new(loop, R_THUNK, p3) : NULL;
  if (t == NULL) {
    if (p3) pts_promise_unref(p3);
    pts_promise_unref(p2);
    resolve_target(r->target, pts_error_value(PTS_ENOMEM, NULL), true);
    return;
  }
  t->mt.run = reaction_run;
  p3->refs++; /* t settles p3 */
  t->u.thunk = pts_value_copy(r->arg);
  t->thunk_reject = r->rejected;
  perform_then(p2, t);
  pts_promise_unref(p2);
  pts_value v3;
  v3.kind = PTS_VALUE_PROMISE;
  v3.u.promise = p3; /* our creation reference moves into the value */
  resolve_target(r->target, v3, false);
}

/* spec: NewPromiseReactionJob (and the internal reactions above). */
static void reaction_run(pts__microtask *mt, int status) {
  reaction *r = (reaction *)mt;
  if (status != 0) {
    release_reaction(r);
    return;
  }
  pts_loop *loop = r->loop;
  switch (r->kind) {
    case R_ADOPT:
      /* The fresh resolving functions of the thenable job. */
      if (r->target->state == PTS_PROMISE_PENDING) {
        if (r->rejected)
          settle(r->target, PTS_PROMISE_REJECTED, pts_value_copy(r->arg));
        else
          resolve_inner(r->target, pts_value_copy(r->arg));
      }
      break;
    case R_THUNK:
      if (r->rejected) {
        resolve_target(r->target, pts_value_copy(r->arg), true);
      } else {
        resolve_target(r->target, r->u.thunk, r->thunk_reject);
        r->u.thunk = pts_undefined();
      }
      break;
    case R_THEN: {
      pts_reaction_fn h = r->rejected ? r->u.h.on_rej : r->u.h.on_ful;
      if (h == NULL) {
        /* spec: handler undefined: pass the value or reason through. */
        resolve_target(r->target, pts_value_copy(r->arg), r->rejected);
        break;
      }
      /* HostCallJobCallback: the captured state, then null (spec 4). */
      pts__loop_swap_state(loop, r->state);
      pts_value out = h(r->data, r->arg);
      pts__loop_swap_state(loop, NULL);
      resolve_target(r->target, out, out.kind == PTS_VALUE_ERROR);
      break;
    }
    case R_FINALLY: {
      pts__loop_swap_state(loop, r->state);
      pts_value r2 = r->u.h.on_ful(r->data, r->arg);
      pts__loop_swap_state(loop, NULL);
      if (r2.kind == PTS_VALUE_ERROR)
        resolve_target(r->target, r2, true);
      else if (r->target == NULL || r->target->already_resolved)
        pts_value_release(r2);
      else
        finally_continue(r, r2);
      break;
    }
  }
  release_reaction(r);
}

/* ---- then / catch / finally ---- */

static int add_user_reaction(pts_promise *p, int kind, pts_reaction_fn on_ful,
                             pts_reaction_fn on_rej, void *data,
                             void (*cleanup)(void *), pts_promise **out) {
  if (p == NULL) return PTS_EINVAL;
  PTS__CHECK_OWNER(p->loop);
  pts_loop *loop = p->loop;
  pts_promise *derived = NULL;
  if (out != NULL) {
    derived = promise_create(loop);
    if (derived == NULL) return pts__enomem();
  }
  reaction *r = reaction_new(loop, kind, derived);
  if (r == NULL) {
    if (derived) pts_promise_unref(derived);
    return pts__enomem();
  }
  if (derived) derived->refs++; /* the reaction's, besides the caller's */
  r->mt.run = reaction_run;
  r->u.h.on_ful = on_ful;
  r->u.h.on_rej = on_rej;
  r->data = data;
  r->cleanup = cleanup;
  r->state = pts__state_ref(pts__loop_current_state(loop)); /* HostMakeJobCallback */
  perform_then(p, r);
  if (out != NULL) *out = derived;
  return 0;
}

int pts_promise_then(pts_promise *p, pts_reaction_fn on_fulfilled,
                     pts_reaction_fn on_rejected, void *data,
                     void (*cleanup)(void *data), pts_promise **out) {
  return add_user_reaction(p, R_THEN, on_fulfilled, on_rejected, data, cleanup,
                           out);
}

int pts_promise_catch(pts_promise *p, pts_reaction_fn on_rejected, void *data,
                      void (*cleanup)(void *data), pts_promise **out) {
  return add_user_reaction(p, R_THEN, NULL, on_rejected, data, cleanup, out);
}

int pts_promise_finally(pts_promise *p, pts_reaction_fn on_finally, void *data,
                        void (*cleanup)(void *data), pts_promise **out) {
  /* spec: a non-callable onFinally is then(onFinally, onFinally). */
  if (on_finally == NULL)
    return add_user_reaction(p, R_THEN, NULL, NULL, data, cleanup, out);
  return add_user_reaction(p, R_FINALLY, on_finally, on_finally, data, cleanup,
                           out);
}

/* ---- accessors ---- */

pts_promise_state pts_promise_get_state(const pts_promise *p) {
  return p ? p->state : PTS_PROMISE_PENDING;
}

pts_value pts_promise_get_result(const pts_promise *p) {
  return p ? p->result : pts_undefined();
}

pts_loop *pts_promise_get_loop(const pts_promise *p) { return p ? p->loop : NULL; }

pts_value pts_promise_value(pts_promise *p) {
  pts_promise_ref(p);
  pts_value v;
  v.kind = PTS_VALUE_PROMISE;
  v.u.promise = p;
  return v;
}
