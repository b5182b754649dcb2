// The public header compiles as C++ (this file) and as C (header_c.c), and
// the error list generates consistent names and messages.
#include <gtest/gtest.h>

#include <cstring>

#include "ptsched.h"

extern "C" int pts_test_header_c_priority(void);

TEST(Header, CompilesAsCAndCxx) {
  // 7 + (-1) + (-1) + user-visible (1)
  EXPECT_EQ(pts_test_header_c_priority(), 6);
}

TEST(Errors, NamesAndMessagesComeFromOneList) {
  EXPECT_STREQ(pts_err_name(PTS_EABORT), "PTS_EABORT");
  EXPECT_STREQ(pts_err_dom_name(PTS_EABORT), "AbortError");
  EXPECT_STREQ(pts_err_dom_name(PTS_ETIMEDOUT), "TimeoutError");
  EXPECT_STREQ(pts_err_dom_name(PTS_ENOTALLOWED), "NotAllowedError");
  EXPECT_STREQ(pts_err_dom_name(PTS_ETYPE), "TypeError");
  EXPECT_EQ(pts_err_dom_name(PTS_EINVAL), nullptr);
  EXPECT_STREQ(pts_err_name(0), "PTS_OK");
  EXPECT_STREQ(pts_err_name(-1000), "PTS_UNKNOWN");
  EXPECT_STREQ(pts_err_name(5), "PTS_UNKNOWN");
  EXPECT_STREQ(pts_strerror(-1000), "unknown error");
  // Every code has a distinct name and a non-empty message.
  for (int c = PTS_EINVAL; c >= PTS_EERROR; c--) {
    EXPECT_STRNE(pts_err_name(c), "PTS_UNKNOWN") << c;
    EXPECT_GT(std::strlen(pts_strerror(c)), 0u) << c;
    for (int d = c - 1; d >= PTS_EERROR; d--)
      EXPECT_STRNE(pts_err_name(c), pts_err_name(d));
  }
}

TEST(Priority, NamesRoundTripAndUnknownIsTypeError) {
  for (int p = 0; p < PTS_PRIORITY_COUNT; p++) {
    pts_priority out;
    ASSERT_EQ(pts_priority_parse(pts_priority_name(p), &out), 0);
    EXPECT_EQ(out, p);
  }
  pts_priority out = PTS_PRIORITY_BACKGROUND;
  EXPECT_EQ(pts_priority_parse("urgent", &out), PTS_ETYPE);
  EXPECT_EQ(pts_priority_parse(nullptr, &out), PTS_ETYPE);
  EXPECT_EQ(pts_priority_name(3), nullptr);
  EXPECT_EQ(pts_priority_name(-1), nullptr);
  EXPECT_STREQ(pts_priority_name(PTS_PRIORITY_USER_BLOCKING), "user-blocking");
}
