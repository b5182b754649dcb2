/* ptsched: common definitions shared by every public header.
 *
 * One error convention for the whole API (STYLE.md section 5): functions
 * return int, 0 on success or a negative PTS_E* code. The codes come from one
 * list, PTS_ERRNO_MAP, which also generates pts_strerror() and pts_err_name().
 * DOMException-style errors of the spec (AbortError, TypeError, ...) are codes
 * too, and travel inside values as pts_error objects (see value.h).
 *
 * Threads: everything here may be called from any thread.
 */
#ifndef PTSCHED_COMMON_H
#define PTSCHED_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The one export macro: the library is built with -fvisibility=hidden. */
#if defined(__GNUC__)
#define PTS_EXTERN __attribute__((visibility("default")))
#else
#define PTS_EXTERN
#endif

/* XX(NAME, dom_name_or_NULL, message). Codes are the negated position + 1. */
#define PTS_ERRNO_MAP(XX)                                                      \
  XX(EINVAL, NULL, "invalid argument")                                         \
  XX(ENOMEM, NULL, "out of memory")                                            \
  XX(EFOREIGN, NULL, "object used from a thread or loop that does not own it") \
  XX(EBUSY, NULL, "resource busy (e.g. loop already running)")                 \
  XX(ECLOSED, NULL, "loop, global, agent or pool is closed or destroyed")      \
  XX(ECANCELED, NULL, "operation canceled before it ran")                      \
  XX(ENOTFOUND, NULL, "no such item")                                          \
  XX(EABORT, "AbortError", "the operation was aborted")                        \
  XX(ETIMEDOUT, "TimeoutError", "the operation timed out")                     \
  XX(ENOTALLOWED, "NotAllowedError", "the operation is not allowed now")       \
  XX(ENOTSUPPORTED, "NotSupportedError", "the operation is not supported")     \
  XX(ETYPE, "TypeError", "type error (invalid argument per WebIDL)")           \
  XX(ERANGE, "RangeError", "value out of range")                               \
  XX(EERROR, "Error", "generic script error")

/* Positions in the list; the public codes below are -(position + 1). */
enum pts__errno_index {
#define PTS__ERRNO_ENUM(name, dom, msg) PTS__ERRNO_IDX_##name,
  PTS_ERRNO_MAP(PTS__ERRNO_ENUM)
#undef PTS__ERRNO_ENUM
  PTS__ERRNO_COUNT
};
#define PTS_OK 0

#define PTS_EINVAL (-(int)PTS__ERRNO_IDX_EINVAL - 1)
#define PTS_ENOMEM (-(int)PTS__ERRNO_IDX_ENOMEM - 1)
#define PTS_EFOREIGN (-(int)PTS__ERRNO_IDX_EFOREIGN - 1)
#define PTS_EBUSY (-(int)PTS__ERRNO_IDX_EBUSY - 1)
#define PTS_ECLOSED (-(int)PTS__ERRNO_IDX_ECLOSED - 1)
#define PTS_ECANCELED (-(int)PTS__ERRNO_IDX_ECANCELED - 1)
#define PTS_ENOTFOUND (-(int)PTS__ERRNO_IDX_ENOTFOUND - 1)
#define PTS_EABORT (-(int)PTS__ERRNO_IDX_EABORT - 1)
#define PTS_ETIMEDOUT (-(int)PTS__ERRNO_IDX_ETIMEDOUT - 1)
#define PTS_ENOTALLOWED (-(int)PTS__ERRNO_IDX_ENOTALLOWED - 1)
#define PTS_ENOTSUPPORTED (-(int)PTS__ERRNO_IDX_ENOTSUPPORTED - 1)
#define PTS_ETYPE (-(int)PTS__ERRNO_IDX_ETYPE - 1)
#define PTS_ERANGE (-(int)PTS__ERRNO_IDX_ERANGE - 1)
#define PTS_EERROR (-(int)PTS__ERRNO_IDX_EERROR - 1)

/* A human sentence for a code ("unknown error" for anything else). Never NULL. */
PTS_EXTERN const char *pts_strerror(int code);
/* The code's name ("PTS_EABORT"), or "PTS_UNKNOWN". Never NULL. */
PTS_EXTERN const char *pts_err_name(int code);
/* The DOMException name a code stands for ("AbortError"), or NULL when the
 * code is not a DOM exception (PTS_EINVAL, PTS_ENOMEM, ...). */
PTS_EXTERN const char *pts_err_dom_name(int code);

/* The three task priorities of the spec, highest first in meaning. The numeric
 * values order them (higher = more urgent) and index arrays. */
typedef enum pts_priority {
  PTS_PRIORITY_BACKGROUND = 0,
  PTS_PRIORITY_USER_VISIBLE = 1,
  PTS_PRIORITY_USER_BLOCKING = 2
} pts_priority;
#define PTS_PRIORITY_COUNT 3

/* "user-blocking", "user-visible", "background"; NULL for an unknown value. */
PTS_EXTERN const char *pts_priority_name(int priority);
/* Parses a priority name; PTS_ETYPE (the IDL enum conversion error) if unknown. */
PTS_EXTERN int pts_priority_parse(const char *name, pts_priority *out);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_COMMON_H */
