/* loop/version.c: the linked library's version (include/ptsched/version.h).
 * The macros are compiled in here, so these report the library's version, not
 * the one of the headers a caller was built against. */
#include "ptsched/version.h"

const char *pts_version_string(void) { return PTS_VERSION_STRING; }

unsigned pts_version(void) { return (unsigned)PTS_VERSION_NUMBER; }
