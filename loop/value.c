/* loop/value.c: the tagged values of value.h. Errors and boxes are immutable
 * after creation and carry an atomic reference count, so a value may cross
 * threads; the thread that drops the last reference frees the object.
 * Promise values delegate to the promise's own (owner-thread) count.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ptsched/promise.h"
#include "sync/alloc.h"
#include "ptsched/value.h"

struct pts_error {
  atomic_uint refs;
  int code;
  char message[]; /* copied, NUL-terminated */
};

struct pts_box {
  atomic_uint refs;
  void *ptr;
  void (*destroy)(void *ptr);
};

/* Out of memory, pts_error_value still gives an error for every listed code:
 * an immortal one with the code's own sentence (its count starts far from
 * zero, and balanced copies and releases never bring it down to 1). So the
 * errors the library makes itself (the AbortError of an abort without a
 * reason, AbortSignal.timeout's TimeoutError, the PTS_ENOMEM rejections) do
 * not turn into undefined, or into an abort that never happens. Same layout
 * as pts_error, with room for the longest sentence of the list. */
#define IMMORTAL (1u << 30)
typedef struct {
  atomic_uint refs;
  int code;
  char message[72];
} fallback_error;
static fallback_error fallbacks[PTS__ERRNO_COUNT] = {
#define XX(name, dom, msg) {IMMORTAL, -(int)PTS__ERRNO_IDX_##name - 1, msg},
    PTS_ERRNO_MAP(XX)
#undef XX
};

pts_value pts_error_value(int code, const char *message) {
  if (message == NULL) message = pts_strerror(code);
  size_t len = strlen(message);
  pts_error *e = pts__malloc(sizeof *e + len + 1);
  if (e == NULL) {
    int idx = -code - 1;
    if (code >= 0 || idx >= (int)PTS__ERRNO_COUNT) return pts_undefined();
    pts_value v;
    v.kind = PTS_VALUE_ERROR;
    v.u.error = (pts_error *)&fallbacks[idx];
    return v;
  }
  atomic_init(&e->refs, 1);
  e->code = code;
  memcpy(e->message, message, len + 1);
  pts_value v;
  v.kind = PTS_VALUE_ERROR;
  v.u.error = e;
  return v;
}

pts_value pts_box_value(void *ptr, void (*destroy)(void *ptr)) {
  pts_box *b = pts__malloc(sizeof *b);
  /* Out of memory: undefined, and ptr stays the caller's (it can tell by
   * the kind). */
  if (b == NULL) return pts_undefined();
  atomic_init(&b->refs, 1);
  b->ptr = ptr;
  b->destroy = destroy;
  return (pts_value){.kind = PTS_VALUE_BOX, .u = {.box = b}};
}

struct pts_thenable {
  atomic_uint refs;
  pts_then_fn then;
  void *data;
  void (*destroy)(void *data);
};

pts_value pts_thenable_value(pts_then_fn then, void *data, void (*destroy)(void *data)) {
  if (then == NULL) return pts_undefined();
  pts_thenable *t = pts__malloc(sizeof *t);
  if (t == NULL) return pts_undefined();
  atomic_init(&t->refs, 1);
  t->then = then;
  t->data = data;
  t->destroy = destroy;
  return (pts_value){.kind = PTS_VALUE_THENABLE, .u = {.thenable = t}};
}

pts_value pts__thenable_call(pts_thenable *t, pts_resolvers *r) {
  return t->then(t->data, r);
}

pts_value pts_value_copy(pts_value v) {
  switch (v.kind) {
    case PTS_VALUE_ERROR:
      /* Relaxed: taking a reference needs no ordering, the holder's
       * reference already keeps the object alive. */
      atomic_fetch_add_explicit(&v.u.error->refs, 1, memory_order_relaxed);
      break;
    case PTS_VALUE_BOX:
      atomic_fetch_add_explicit(&v.u.box->refs, 1, memory_order_relaxed);
      break;
    case PTS_VALUE_PROMISE:
      pts_promise_ref(v.u.promise);
      break;
    case PTS_VALUE_THENABLE:
      atomic_fetch_add_explicit(&v.u.thenable->refs, 1, memory_order_relaxed);
      break;
    default:
      break;
  }
  return v;
}

void pts_value_release(pts_value v) {
  switch (v.kind) {
    case PTS_VALUE_ERROR:
      /* acq_rel: the freeing thread must see every other holder's reads
       * done (the classic release-decrement, acquire-before-free). */
      if (atomic_fetch_sub_explicit(&v.u.error->refs, 1,
                                    memory_order_acq_rel) == 1)
        pts__free(v.u.error);
      break;
    case PTS_VALUE_BOX:
      if (atomic_fetch_sub_explicit(&v.u.box->refs, 1, memory_order_acq_rel) ==
          1) {
        pts_box *b = v.u.box;
        if (b->destroy) b->destroy(b->ptr);
        pts__free(b);
      }
      break;
    case PTS_VALUE_PROMISE:
      pts_promise_unref(v.u.promise);
      break;
    case PTS_VALUE_THENABLE:
      if (atomic_fetch_sub_explicit(&v.u.thenable->refs, 1,
                                    memory_order_acq_rel) == 1) {
        pts_thenable *t = v.u.thenable;
        if (t->destroy) t->destroy(t->data);
        pts__free(t);
      }
      break;
    default:
      break;
  }
}

bool pts_value_same(pts_value a, pts_value b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case PTS_VALUE_UNDEFINED:
      return true;
    case PTS_VALUE_INT:
      return a.u.i == b.u.i;
    case PTS_VALUE_DOUBLE:
      /* ECMA-262 Number::sameValue: NaN is the same as NaN, +0 is not -0. */
      if (isnan(a.u.d)) return isnan(b.u.d);
      if (a.u.d == 0 && b.u.d == 0) return signbit(a.u.d) == signbit(b.u.d);
      return a.u.d == b.u.d;
    case PTS_VALUE_PTR:
      return a.u.ptr == b.u.ptr;
    case PTS_VALUE_BOX:
      return a.u.box == b.u.box;
    case PTS_VALUE_ERROR:
      return a.u.error == b.u.error;
    case PTS_VALUE_PROMISE:
      return a.u.promise == b.u.promise;
    case PTS_VALUE_THENABLE:
      return a.u.thenable == b.u.thenable;
  }
  return false;
}

int pts_error_code(pts_value v) {
  return v.kind == PTS_VALUE_ERROR ? v.u.error->code : 0;
}

const char *pts_error_name(pts_value v) {
  if (v.kind != PTS_VALUE_ERROR) return NULL;
  const char *dom = pts_err_dom_name(v.u.error->code);
  return dom ? dom : "Error";
}

const char *pts_error_message(pts_value v) {
  return v.kind == PTS_VALUE_ERROR ? v.u.error->message : NULL;
}

bool pts_value_is_error(pts_value v, int code) {
  return v.kind == PTS_VALUE_ERROR && v.u.error->code == code;
}

void *pts_value_pointer(pts_value v) {
  if (v.kind == PTS_VALUE_BOX) return v.u.box->ptr;
  if (v.kind == PTS_VALUE_PTR) return v.u.ptr;
  if (v.kind == PTS_VALUE_THENABLE) return v.u.thenable->data;
  return NULL;
}
