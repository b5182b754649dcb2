/** @file ptsched/version.h
 * @brief The library's version, at compile time (macros) and at run time
 * (pts_version_string()).
 *
 * The version follows semantic versioning. PTS_VERSION_MAJOR is also the
 * shared library's SONAME suffix (libptsched.so.MAJOR): it changes only
 * when the ABI breaks (a removed or changed function, or a changed layout of
 * a struct embedders allocate, see the ABI notes in docs/install.md). MINOR
 * grows with additions, PATCH with fixes.
 *
 * @par Threads
 * Everything here may be called from any thread.
 */
#ifndef PTSCHED_VERSION_H
#define PTSCHED_VERSION_H

#include "ptsched/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Major version: the SONAME suffix; changes when the ABI breaks. */
#define PTS_VERSION_MAJOR 5
/** Minor version: grows with backward-compatible additions. */
#define PTS_VERSION_MINOR 3
/** Patch version: grows with fixes that change no interface. */
#define PTS_VERSION_PATCH 0

/** @cond PTS_INTERNAL */
#define PTS__VERSION_STR2(x) #x
#define PTS__VERSION_STR(x) PTS__VERSION_STR2(x)
/** @endcond */

/** The version as a string literal, "MAJOR.MINOR.PATCH" (e.g. "0.1.0"). */
#define PTS_VERSION_STRING                         \
  PTS__VERSION_STR(PTS_VERSION_MAJOR)              \
  "." PTS__VERSION_STR(PTS_VERSION_MINOR) "." PTS__VERSION_STR(PTS_VERSION_PATCH)

/** The version as one integer, MAJOR * 10000 + MINOR * 100 + PATCH, for
 * preprocessor comparisons (`#if PTS_VERSION_NUMBER >= 100`). */
#define PTS_VERSION_NUMBER \
  (PTS_VERSION_MAJOR * 10000 + PTS_VERSION_MINOR * 100 + PTS_VERSION_PATCH)

/** The version of the library actually linked, "MAJOR.MINOR.PATCH".
 *
 * Compare it with PTS_VERSION_STRING to detect a program compiled against
 * other headers than the library it runs with. Not part of the spec. Any
 * thread.
 *
 * @return a static string owned by the library; never NULL, never freed. */
PTS_EXTERN const char *pts_version_string(void);

/** The linked library's version as PTS_VERSION_NUMBER computes it. Any thread. */
PTS_EXTERN unsigned pts_version(void);

#ifdef __cplusplus
}
#endif
#endif /* PTSCHED_VERSION_H */
