/* loop/errors.c: the error codes' names and messages, generated from the one
 * list PTS_ERRNO_MAP in include/ptsched/common.h, and the priority names. */
#include <stddef.h>
#include <string.h>

#include "ptsched/common.h"

static int code_index(int code) {
  int idx = -code - 1;
  return (code < 0 && idx < (int)PTS__ERRNO_COUNT) ? idx : -1;
}

const char *pts_strerror(int code) {
#define XX(name, dom, msg) msg,
  static const char *const messages[] = {PTS_ERRNO_MAP(XX)};
#undef XX
  if (code == 0) return "success";
  int idx = code_index(code);
  return idx < 0 ? "unknown error" : messages[idx];
}

const char *pts_err_name(int code) {
#define XX(name, dom, msg) "PTS_" #name,
  static const char *const names[] = {PTS_ERRNO_MAP(XX)};
#undef XX
  if (code == 0) return "PTS_OK";
  int idx = code_index(code);
  return idx < 0 ? "PTS_UNKNOWN" : names[idx];
}

const char *pts_err_dom_name(int code) {
#define XX(name, dom, msg) dom,
  static const char *const doms[] = {PTS_ERRNO_MAP(XX)};
#undef XX
  int idx = code_index(code);
  return idx < 0 ? NULL : doms[idx];
}

static const char *const priority_names[PTS_PRIORITY_COUNT] = {
    [PTS_PRIORITY_BACKGROUND] = "background",
    [PTS_PRIORITY_USER_VISIBLE] = "user-visible",
    [PTS_PRIORITY_USER_BLOCKING] = "user-blocking",
};

const char *pts_priority_name(int priority) {
  if (priority < 0 || priority >= PTS_PRIORITY_COUNT) return NULL;
  return priority_names[priority];
}

int pts_priority_parse(const char *name, pts_priority *out) {
  if (name == NULL || out == NULL) return PTS_ETYPE;
  for (int p = 0; p < PTS_PRIORITY_COUNT; p++) {
    if (strcmp(name, priority_names[p]) == 0) {
      *out = (pts_priority)p;
      return 0;
    }
  }
  return PTS_ETYPE;
}
