/* ptsched: tagged values for results, rejection and abort reasons.
 *
 * A pts_value is a small struct passed by value. Kinds that own memory
 * (PTS_VALUE_ERROR, PTS_VALUE_BOX, PTS_VALUE_PROMISE) hold a reference: copy
 * with pts_value_copy() and drop with pts_value_release(). The reference counts
 * of errors and boxes are atomic, so a value may be handed to another thread
 * (an agent's result back to its caller); promises belong to one loop and may
 * only be released on it.
 *
 * A callback "throws" by returning a value of kind PTS_VALUE_ERROR: the promise
 * it settles is rejected with it. Any other kind fulfils. (A C program has no
 * exceptions; this is the one convention, see docs/api.md.)
 */
#ifndef PTSCHED_VALUE_H
#define PTSCHED_VALUE_H

#include <stdbool.h>
#include <stdint.h>

#include "ptsched/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pts_error pts_error;     /* DOMException-style error, refcounted */
typedef struct pts_box pts_box;         /* a pointer with a destructor, refcounted */
typedef struct pts_promise pts_promise; /* see promise.h */

typedef enum pts_value_kind {
  PTS_VALUE_UNDEFINED = 0,
  PTS_VALUE_INT,     /* u.i */
  PTS_VALUE_DOUBLE,  /* u.d */
  PTS_VALUE_PTR,     /* u.ptr: borrowed pointer, never freed by ptsched */
  PTS_VALUE_BOX,     /* u.box: owned pointer, freed by its destructor */
  PTS_VALUE_ERROR,   /* u.error: an error; returning one from a callback throws */
  PTS_VALUE_PROMISE  /* u.promise: resolving with it adopts its state */
} pts_value_kind;

typedef struct pts_value {
  pts_value_kind kind;
  union {
    int64_t i;
    double d;
    void *ptr;
    pts_box *box;
    pts_error *error;
    pts_promise *promise;
  } u;
} pts_value;

/* Constructors. The _error and _box forms take over the caller's reference. */
static inline pts_value pts_undefined(void) {
  pts_value v;
  v.kind = PTS_VALUE_UNDEFINED;
  v.u.i = 0;
  return v;
}
static inline pts_value pts_int(int64_t i) {
  pts_value v;
  v.kind = PTS_VALUE_INT;
  v.u.i = i;
  return v;
}
static inline pts_value pts_double(double d) {
  pts_value v;
  v.kind = PTS_VALUE_DOUBLE;
  v.u.d = d;
  return v;
}
static inline pts_value pts_ptr(void *p) {
  pts_value v;
  v.kind = PTS_VALUE_PTR;
  v.u.ptr = p;
  return v;
}

/* Takes a new reference where the kind owns one; returns the same value. */
PTS_EXTERN pts_value pts_value_copy(pts_value v);
/* Drops the reference the value owns (no-op for plain kinds). Promise values
 * must be released on their loop's thread. */
PTS_EXTERN void pts_value_release(pts_value v);
/* Identity for owned kinds (same object), equality for plain kinds. */
PTS_EXTERN bool pts_value_same(pts_value a, pts_value b);

/* An error value with a DOM exception code (PTS_EABORT, PTS_ETYPE, ...) or any
 * other PTS_E* code, and a message (copied; NULL for the code's default).
 * Returns an undefined value only when out of memory (never for valid input). */
PTS_EXTERN pts_value pts_error_value(int code, const char *message);
/* The error's code, DOM name ("AbortError"; "Error" for non-DOM codes) and
 * message. The value must be of kind PTS_VALUE_ERROR; 0/NULL otherwise. */
PTS_EXTERN int pts_error_code(pts_value v);
PTS_EXTERN const char *pts_error_name(pts_value v);
PTS_EXTERN const char *pts_error_message(pts_value v);
/* True if v is an error with this code. */
PTS_EXTERN bool pts_value_is_error(pts_value v, int code);

/* A boxed pointer: destroy(ptr) runs when the last reference is released, on
 * whichever thread releases it. destroy may be NULL. */
PTS_EXTERN pts_value pts_box_value(void *ptr, void (*destroy)(void *ptr));
/* The pointer inside a PTS_VALUE_BOX or PTS_VALUE_PTR value, else NULL. */
PTS_EXTERN void *pts_value_pointer(pts_value v);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_VALUE_H */
