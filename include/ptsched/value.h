/** @file ptsched/value.h
 * @brief Tagged values: task results, promise fulfilment values, rejection
 * and abort reasons (the ECMAScript values of the spec, in C).
 *
 * A pts_value is a small struct passed by value. Kinds that own memory
 * (PTS_VALUE_ERROR, PTS_VALUE_BOX, PTS_VALUE_PROMISE, PTS_VALUE_THENABLE) hold
 * a reference: copy with pts_value_copy() and drop with pts_value_release().
 * The reference counts of errors, boxes and thenables are atomic, so a value may be handed to another thread
 * (an agent's result back to its caller); promises belong to one loop and may
 * only be released on it.
 *
 * A callback "throws" by returning a value of kind PTS_VALUE_ERROR: the promise
 * it settles is rejected with it. Any other kind fulfils. (A C program has no
 * exceptions; this is the one convention, see docs/api.md.)
 *
 * @par Threads
 * Every function here may be called from any thread, except that a
 * PTS_VALUE_PROMISE value may only be copied or released on its loop's owner
 * thread.
 */
#ifndef PTSCHED_VALUE_H
#define PTSCHED_VALUE_H

#include <stdbool.h>
#include <stdint.h>

#include "ptsched/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A DOMException-style error (code, name, message); opaque, refcounted
 * (atomic). Held by PTS_VALUE_ERROR values. */
typedef struct pts_error pts_error;
/** A pointer with a destructor; opaque, refcounted (atomic). Held by
 * PTS_VALUE_BOX values. */
typedef struct pts_box pts_box;
/** A promise owned by a loop; opaque, see promise.h. */
typedef struct pts_promise pts_promise;
/** A thenable: an embedder's object with a callable `then` (a script
 * engine's object, a Lua table with `then`); opaque, refcounted (atomic).
 * Held by PTS_VALUE_THENABLE values. */
typedef struct pts_thenable pts_thenable;
/** A pair of promise resolving functions (ECMA-262 CreateResolvingFunctions)
 * handed to a thenable's then hook; opaque, see promise.h. */
typedef struct pts_resolvers pts_resolvers;

/** What a pts_value holds. Values are part of the ABI: new kinds are only
 * ever appended. */
typedef enum pts_value_kind {
  PTS_VALUE_UNDEFINED = 0, /**< ECMAScript undefined; nothing in u */
  PTS_VALUE_INT,     /**< u.i */
  PTS_VALUE_DOUBLE,  /**< u.d */
  PTS_VALUE_PTR,     /**< u.ptr: borrowed pointer, never freed by ptsched */
  PTS_VALUE_BOX,     /**< u.box: owned pointer, freed by its destructor */
  PTS_VALUE_ERROR,   /**< u.error: an error; returning one from a callback throws */
  PTS_VALUE_PROMISE, /**< u.promise: resolving with it adopts its state */
  PTS_VALUE_THENABLE /**< u.thenable: resolving with it calls its then hook
                          one microtask later (NewPromiseResolveThenableJob) */
} pts_value_kind;

/** A tagged value, passed by value (16 bytes on LP64).
 *
 * ABI: the layout (kind, then an 8-byte union) is fixed for a major version;
 * embedders may declare pts_value variables and read the fields directly.
 * Build values with the constructors below rather than by hand, so owned
 * kinds hold a valid reference. */
typedef struct pts_value {
  pts_value_kind kind; /**< which member of u is valid */
  /** The payload, selected by kind. */
  union {
    int64_t i;            /**< PTS_VALUE_INT */
    double d;             /**< PTS_VALUE_DOUBLE */
    void *ptr;            /**< PTS_VALUE_PTR: borrowed */
    pts_box *box;         /**< PTS_VALUE_BOX: one reference */
    pts_error *error;     /**< PTS_VALUE_ERROR: one reference */
    pts_promise *promise; /**< PTS_VALUE_PROMISE: one reference */
    pts_thenable *thenable; /**< PTS_VALUE_THENABLE: one reference */
  } u;
} pts_value;

/* Constructors. The _error and _box forms take over the caller's reference. */
/** The undefined value. Owns nothing. Any thread. */
static inline pts_value pts_undefined(void) {
  pts_value v;
  v.kind = PTS_VALUE_UNDEFINED;
  v.u.i = 0;
  return v;
}
/** An integer value. Owns nothing. Any thread. */
static inline pts_value pts_int(int64_t i) {
  pts_value v;
  v.kind = PTS_VALUE_INT;
  v.u.i = i;
  return v;
}
/** A double value. Owns nothing. Any thread. */
static inline pts_value pts_double(double d) {
  pts_value v;
  v.kind = PTS_VALUE_DOUBLE;
  v.u.d = d;
  return v;
}
/** A borrowed pointer: ptsched never frees p (use pts_box_value() for that).
 * Any thread. */
static inline pts_value pts_ptr(void *p) {
  pts_value v;
  v.kind = PTS_VALUE_PTR;
  v.u.ptr = p;
  return v;
}

/** Takes a new reference where the kind owns one (error, box, promise) and
 * returns the same value; plain kinds are returned as they are. Any thread
 * (promise values: their loop's owner thread only). */
PTS_EXTERN pts_value pts_value_copy(pts_value v);
/** Drops the reference the value owns (no-op for plain kinds). A box whose last
 * reference goes runs its destructor on this thread. Promise values must be
 * released on their loop's owner thread; others on any thread. */
PTS_EXTERN void pts_value_release(pts_value v);
/** SameValue (ECMA-262 7.2.10) of two values: identity for owned kinds (same
 * object), equality of kind and payload for plain kinds, with doubles
 * compared as Number::sameValue (NaN is the same as NaN, +0 is not the same
 * as -0). A value of an unknown kind is the same as nothing. Borrows both.
 * Any thread. */
PTS_EXTERN bool pts_value_same(pts_value a, pts_value b);

/** A new error value (a DOMException when code is one: PTS_EABORT ->
 * "AbortError", PTS_ETYPE -> "TypeError", ...) with any PTS_E* code and a
 * message (copied; NULL for the code's pts_strerror() sentence). Any thread.
 * @return a PTS_VALUE_ERROR value holding one reference (release it with
 * pts_value_release(), or hand it to a function that takes it over). Out of
 * memory: for a listed code, a shared error of that code with its
 * pts_strerror() sentence (message is dropped); for an unknown code, an
 * undefined value. */
PTS_EXTERN pts_value pts_error_value(int code, const char *message);
/** The code of an error value (PTS_EABORT, ...); 0 if v is not of kind
 * PTS_VALUE_ERROR. Borrows v. Any thread. */
PTS_EXTERN int pts_error_code(pts_value v);
/** The error's name: the DOMException name ("AbortError"), "Error" for
 * non-DOM codes; NULL if v is not of kind PTS_VALUE_ERROR. A static string.
 * Any thread. */
PTS_EXTERN const char *pts_error_name(pts_value v);
/** The error's message; NULL if v is not of kind PTS_VALUE_ERROR. The string
 * is owned by the error and lives as long as it. Any thread. */
PTS_EXTERN const char *pts_error_message(pts_value v);
/** True if v is an error value with this code. Borrows v. Any thread. */
PTS_EXTERN bool pts_value_is_error(pts_value v, int code);

/** A boxed pointer: destroy(ptr) runs when the last reference is released, on
 * whichever thread releases it. destroy may be NULL. Any thread.
 * @return a PTS_VALUE_BOX value holding one reference; an undefined value
 * when out of memory (destroy is then not called: ptr stays the caller's). */
PTS_EXTERN pts_value pts_box_value(void *ptr, void (*destroy)(void *ptr));
/** A thenable's then hook: thenable.then(resolve, reject), called by the
 * loop in a microtask (a promise job) on the thread of the promise being
 * resolved, with the scheduling state that was current when the promise was
 * resolved with the thenable (HostMakeJobCallback / HostCallJobCallback, so
 * a yield() in it inherits). data is the thenable's; resolvers is borrowed
 * for the call: pts_resolvers_ref() it to settle later (promise.h).
 * Returning a PTS_VALUE_ERROR is a throw: it rejects the promise unless
 * the resolvers already resolved it. Any other returned value is released. */
typedef pts_value (*pts_then_fn)(void *data, pts_resolvers *resolvers);
/** A thenable value: an object whose `then` is callable (the embedder has
 * done ECMA-262's Get(resolution, "then") and found a function; a getter that
 * throws is the embedder's error value instead). Resolving a promise with it
 * follows the spec exactly: one microtask later then(data, resolvers) is
 * called; only the first call of either resolving function counts.
 * destroy(data), may be NULL, runs when the last reference is released, on
 * whichever thread releases it. Any thread.
 * @return a PTS_VALUE_THENABLE value holding one reference; an undefined
 * value when then is NULL or out of memory (destroy is then not called). */
PTS_EXTERN pts_value pts_thenable_value(pts_then_fn then, void *data,
                                        void (*destroy)(void *data));
/** The pointer inside a PTS_VALUE_BOX or PTS_VALUE_PTR value, or a
 * PTS_VALUE_THENABLE's data (borrowed), else NULL. Any thread. */
PTS_EXTERN void *pts_value_pointer(pts_value v);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_VALUE_H */
