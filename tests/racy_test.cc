// A deliberate data race, kept out of the default suite (tag "manual"): run
//   bazel test --config=tsan //tests:racy_test
// and ThreadSanitizer must report it and fail the test. Proof that the tsan
// config really instruments the code.
#include <gtest/gtest.h>

#include <thread>

static int unguarded_counter;  // written by two threads with no ordering

static void bump() {
  for (int i = 0; i < 100000; i++) unguarded_counter = unguarded_counter + 1;
}

TEST(Racy, TwoThreadsWriteOneIntWithoutSync) {
  std::thread a(bump), b(bump);
  a.join();
  b.join();
  EXPECT_GT(unguarded_counter, 0);
}
