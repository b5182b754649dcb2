// The version macros and the linked library's version agree, and the string
// has the MAJOR.MINOR.PATCH form the install step and ptsched.pc rely on.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "ptsched.h"

TEST(Version, StringMatchesMacros) {
  char want[64];
  std::snprintf(want, sizeof want, "%d.%d.%d", PTS_VERSION_MAJOR,
                PTS_VERSION_MINOR, PTS_VERSION_PATCH);
  ASSERT_NE(pts_version_string(), nullptr);
  EXPECT_STREQ(pts_version_string(), want);
  EXPECT_STREQ(PTS_VERSION_STRING, want);
}

TEST(Version, NumberMatchesMacros) {
  EXPECT_EQ(pts_version(), (unsigned)(PTS_VERSION_MAJOR * 10000 +
                                      PTS_VERSION_MINOR * 100 +
                                      PTS_VERSION_PATCH));
  EXPECT_EQ(pts_version(), (unsigned)PTS_VERSION_NUMBER);
  EXPECT_GE(PTS_VERSION_MINOR, 0);
  EXPECT_LT(PTS_VERSION_MINOR, 100);
  EXPECT_LT(PTS_VERSION_PATCH, 100);
}

TEST(Version, StableAcrossCalls) {
  // A static string: the same pointer every time, never freed.
  EXPECT_EQ(pts_version_string(), pts_version_string());
  EXPECT_EQ(std::string(pts_version_string()).find('.'),
            std::to_string(PTS_VERSION_MAJOR).size());
}
