/** @file ptsched/common.h
 * @brief Common definitions shared by every public header: the export macro,
 * the error codes and the task priorities.
 *
 * One error convention for the whole API (STYLE.md section 5): functions
 * return int, 0 on success or a negative PTS_E* code. The codes come from one
 * list, PTS_ERRNO_MAP, which also generates pts_strerror() and pts_err_name().
 * DOMException-style errors of the spec (AbortError, TypeError, ...) are codes
 * too, and travel inside values as pts_error objects (see value.h).
 *
 * @par Threads
 * Everything here may be called from any thread.
 */
#ifndef PTSCHED_COMMON_H
#define PTSCHED_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a function of the public API. The library is built with
 * -fvisibility=hidden, so only declarations carrying this macro are exported
 * from libptsched.so; everything else stays internal. */
#if defined(__GNUC__)
#define PTS_EXTERN __attribute__((visibility("default")))
#else
#define PTS_EXTERN
#endif

/** The one list of error codes, as an X-macro: XX(NAME, dom_name_or_NULL,
 * message). The code PTS_<NAME> is the negated position in the list, minus
 * one (PTS_EINVAL is -1). New codes are only ever appended, so existing values
 * never change (ABI). */
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
  XX(EERROR, "Error", "generic script error")                                  \
  XX(EINVALIDSTATE, "InvalidStateError", "the object is in the wrong state")    \
  XX(EQUOTA, "QuotaExceededError", "a quota of the agent is exhausted")

/* Positions in the list; the public codes below are -(position + 1). */
/** @cond PTS_INTERNAL */
enum pts__errno_index {
#define PTS__ERRNO_ENUM(name, dom, msg) PTS__ERRNO_IDX_##name,
  PTS_ERRNO_MAP(PTS__ERRNO_ENUM)
#undef PTS__ERRNO_ENUM
  PTS__ERRNO_COUNT
};
/** @endcond */
/** Success: every int-returning function returns 0 (or a count) when it works. */
#define PTS_OK 0

/** Invalid argument: a NULL object or callback, an unknown enum value outside the WebIDL cases. */
#define PTS_EINVAL (-(int)PTS__ERRNO_IDX_EINVAL - 1)
/** Out of memory; the call changed nothing. */
#define PTS_ENOMEM (-(int)PTS__ERRNO_IDX_ENOMEM - 1)
/** An object of another loop, or (checked in debug builds) a call from a thread that does not own the object. */
#define PTS_EFOREIGN (-(int)PTS__ERRNO_IDX_EFOREIGN - 1)
/** Resource busy, e.g. the loop is already running, or a blocking call from a pool thread. */
#define PTS_EBUSY (-(int)PTS__ERRNO_IDX_EBUSY - 1)
/** The loop, global, agent or pool is closed, detached or destroyed. */
#define PTS_ECLOSED (-(int)PTS__ERRNO_IDX_ECLOSED - 1)
/** Status given to a callback released without running (its global detached, its loop freed). */
#define PTS_ECANCELED (-(int)PTS__ERRNO_IDX_ECANCELED - 1)
/** No such item (a timer, idle callback or listener not registered). */
#define PTS_ENOTFOUND (-(int)PTS__ERRNO_IDX_ENOTFOUND - 1)
/** DOMException "AbortError": the operation was aborted (a signal aborted). */
#define PTS_EABORT (-(int)PTS__ERRNO_IDX_EABORT - 1)
/** DOMException "TimeoutError": AbortSignal.timeout() fired. */
#define PTS_ETIMEDOUT (-(int)PTS__ERRNO_IDX_ETIMEDOUT - 1)
/** DOMException "NotAllowedError", e.g. setPriority() during its own prioritychange dispatch. */
#define PTS_ENOTALLOWED (-(int)PTS__ERRNO_IDX_ENOTALLOWED - 1)
/** DOMException "NotSupportedError", e.g. yield() on a detached global. */
#define PTS_ENOTSUPPORTED (-(int)PTS__ERRNO_IDX_ENOTSUPPORTED - 1)
/** "TypeError": a WebIDL conversion failed (unknown priority, delay out of [EnforceRange]). */
#define PTS_ETYPE (-(int)PTS__ERRNO_IDX_ETYPE - 1)
/** "RangeError": a value out of range. */
#define PTS_ERANGE (-(int)PTS__ERRNO_IDX_ERANGE - 1)
/** A generic script "Error": a callback returned (threw) an error value. */
#define PTS_EERROR (-(int)PTS__ERRNO_IDX_EERROR - 1)
/** DOMException "InvalidStateError", e.g. dispatching an event that is being dispatched. */
#define PTS_EINVALIDSTATE (-(int)PTS__ERRNO_IDX_EINVALIDSTATE - 1)
/** DOMException "QuotaExceededError" (since 5.0): the call would take an
 * agent past one of its limits (pts_agent_limits); nothing was done. */
#define PTS_EQUOTA (-(int)PTS__ERRNO_IDX_EQUOTA - 1)

/** A human sentence for a code: "success" for 0, "unknown error" for anything
 * that is not a PTS_E* code. Any thread.
 * @return a static string owned by the library; never NULL. */
PTS_EXTERN const char *pts_strerror(int code);
/** The code's macro name ("PTS_EABORT"; "PTS_OK" for 0), or "PTS_UNKNOWN".
 * Any thread.
 * @return a static string owned by the library; never NULL. */
PTS_EXTERN const char *pts_err_name(int code);
/** The DOMException name a code stands for ("AbortError", "TypeError"...), or
 * NULL when the code is not a DOM exception (PTS_EINVAL, PTS_ENOMEM, ...).
 * Any thread.
 * @return a static string owned by the library, or NULL. */
PTS_EXTERN const char *pts_err_dom_name(int code);

/** The spec's TaskPriority enum (spec 2.1, "Task and Continuation
 * Priorities"). The numeric values order them (higher = more urgent) and index
 * arrays; they are part of the ABI and never change. */
typedef enum pts_priority {
  PTS_PRIORITY_BACKGROUND = 0,   /**< "background": lowest, work that can wait */
  PTS_PRIORITY_USER_VISIBLE = 1, /**< "user-visible": the default of postTask() */
  PTS_PRIORITY_USER_BLOCKING = 2 /**< "user-blocking": highest, blocks the user */
} pts_priority;
/** Number of priorities: the size of an array indexed by pts_priority. */
#define PTS_PRIORITY_COUNT 3

/** The IDL string of a priority: "user-blocking", "user-visible",
 * "background"; NULL for an unknown value. Any thread.
 * @return a static string owned by the library, or NULL. */
PTS_EXTERN const char *pts_priority_name(int priority);
/** Parses a TaskPriority IDL string into *out (the WebIDL enum conversion).
 * Any thread.
 * @retval 0 success; *out is set.
 * @retval PTS_ETYPE unknown name (the IDL conversion error), or name or out
 * NULL; *out unchanged. */
PTS_EXTERN int pts_priority_parse(const char *name, pts_priority *out);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_COMMON_H */
