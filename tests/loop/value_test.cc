// Values: errors and boxes are refcounted (atomically), copy/release balance,
// promise values delegate to the promise's count.
#include <atomic>
#include <cstring>
#include <thread>

#include "util.h"

TEST(Value, ErrorCarriesCodeNameAndCopiedMessage) {
  char msg[] = "boom";
  pts_value e = pts_error_value(PTS_EABORT, msg);
  msg[0] = 'X';  // the value holds its own copy
  ASSERT_EQ(e.kind, PTS_VALUE_ERROR);
  EXPECT_EQ(pts_error_code(e), PTS_EABORT);
  EXPECT_STREQ(pts_error_name(e), "AbortError");
  EXPECT_STREQ(pts_error_message(e), "boom");
  EXPECT_TRUE(pts_value_is_error(e, PTS_EABORT));
  EXPECT_FALSE(pts_value_is_error(e, PTS_ETYPE));
  pts_value c = pts_value_copy(e);
  EXPECT_TRUE(pts_value_same(c, e));
  pts_value_release(e);
  EXPECT_STREQ(pts_error_message(c), "boom");  // still alive: one ref left
  pts_value_release(c);

  pts_value d = pts_error_value(PTS_EINVAL, nullptr);
  EXPECT_STREQ(pts_error_message(d), pts_strerror(PTS_EINVAL));
  EXPECT_STREQ(pts_error_name(d), "Error");  // not a DOM code
  pts_value_release(d);
}

TEST(Value, AccessorsOnOtherKindsReturnZero) {
  pts_value i = pts_int(7);
  EXPECT_EQ(pts_error_code(i), 0);
  EXPECT_EQ(pts_error_name(i), nullptr);
  EXPECT_EQ(pts_error_message(i), nullptr);
  EXPECT_FALSE(pts_value_is_error(i, PTS_EABORT));
  EXPECT_EQ(pts_value_pointer(i), nullptr);
  int x;
  EXPECT_EQ(pts_value_pointer(pts_ptr(&x)), &x);
  EXPECT_TRUE(pts_value_same(pts_int(3), pts_int(3)));
  EXPECT_FALSE(pts_value_same(pts_int(3), pts_int(4)));
  EXPECT_FALSE(pts_value_same(pts_int(3), pts_double(3)));
  EXPECT_TRUE(pts_value_same(pts_double(1.5), pts_double(1.5)));
  EXPECT_TRUE(pts_value_same(pts_undefined(), pts_undefined()));
  // Plain kinds: copy/release are no-ops.
  pts_value_release(pts_value_copy(i));
}

static std::atomic<int> box_destroyed{0};
static void box_destroy(void *p) {
  box_destroyed++;
  delete static_cast<int *>(p);
}

TEST(Value, BoxDestroyRunsOnceOnLastReleaseFromAnyThread) {
  box_destroyed = 0;
  pts_value b = pts_box_value(new int(5), box_destroy);
  ASSERT_EQ(b.kind, PTS_VALUE_BOX);
  EXPECT_EQ(*static_cast<int *>(pts_value_pointer(b)), 5);
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; i++) {
    pts_value c = pts_value_copy(b);
    ts.emplace_back([c] {
      for (int k = 0; k < 1000; k++) pts_value_release(pts_value_copy(c));
      pts_value_release(c);
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(box_destroyed.load(), 0);
  pts_value_release(b);
  EXPECT_EQ(box_destroyed.load(), 1);
  pts_value nb = pts_box_value(nullptr, nullptr);  // NULL destroy is fine
  pts_value_release(nb);
}

TEST(Value, ErrorCrossesThreads) {
  pts_value e = pts_error_value(PTS_ETIMEDOUT, "late");
  pts_value c = pts_value_copy(e);
  std::thread t([c] { pts_value_release(c); });
  t.join();
  EXPECT_STREQ(pts_error_name(e), "TimeoutError");
  pts_value_release(e);
}

TEST(Value, PromiseValueDelegatesToPromiseRefs) {
  pts_loop *loop = new_loop();
  pts_promise *p;
  ASSERT_EQ(pts_promise_new(loop, &p), 0);
  pts_value v = pts_promise_value(p);  // +1
  pts_value c = pts_value_copy(v);     // +1
  EXPECT_TRUE(pts_value_same(v, c));
  pts_promise_unref(p);  // the creation ref
  pts_value_release(v);
  // Still alive through c: settle it and read back.
  ASSERT_EQ(pts_promise_resolve(c.u.promise, pts_int(9)), 0);
  EXPECT_EQ(pts_promise_get_state(c.u.promise), PTS_PROMISE_FULFILLED);
  EXPECT_EQ(pts_promise_get_result(c.u.promise).u.i, 9);
  pts_value_release(c);  // freed here (ASan checks)
  EXPECT_EQ(pts_loop_free(loop), 0);
}
