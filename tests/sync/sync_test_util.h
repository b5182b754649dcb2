// tests/sync/sync_test_util.h: shared pieces of the sync/ tests: the test
// command (an intrusive node plus a producer id and sequence number, reused
// from a per-producer pool), the stress-size switch and a monotonic clock.
#ifndef PTSCHED_TESTS_SYNC_TEST_UTIL_H
#define PTSCHED_TESTS_SYNC_TEST_UTIL_H

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "sync/mpsc.h"
#include "sync/parker.h"

namespace pts_sync_test {

// A command as a producer posts it. `busy` is the pool's ownership flag: the
// producer sets it before push, the consumer clears it (release) after it has
// read the fields, and the producer waits for it (acquire) before reusing the
// node, so ThreadSanitizer checks that a popped node is really done with.
struct Cmd {
  pts__mpsc_node node;
  uint32_t producer = 0;
  uint64_t seq = 0;
  std::atomic<bool> busy{false};
};

inline Cmd *cmd_of(pts__mpsc_node *n) {
  return reinterpret_cast<Cmd *>(reinterpret_cast<char *>(n) -
                                 offsetof(Cmd, node));
}

// True when PTS_STRESS_LONG=1: the long versions of the stress tests.
inline bool stress_long() {
  const char *v = std::getenv("PTS_STRESS_LONG");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

inline uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace pts_sync_test

#endif  // PTSCHED_TESTS_SYNC_TEST_UTIL_H
