// tests/agents/quantized_test.cc: the study's additions to the agents layer
// (agents/study.h): the quantized policy on a real pool and in the virtual
// thread, and the virtual thread's cost model.
#include <gtest/gtest.h>

#include <atomic>

#include "agents/study.h"
#include "ptsched.h"

namespace {

TEST(Quantized, PublicConstructorStillRejectsIt) {
  pts_pool_options o = {1, static_cast<pts_policy>(PTS__POLICY_QUANTIZED), 0, 0};
  pts_pool *p = nullptr;
  EXPECT_EQ(pts_pool_new(&o, &p), PTS_EINVAL);
  EXPECT_STREQ(pts__policy_name_ext(PTS__POLICY_QUANTIZED), "quantized");
  EXPECT_STREQ(pts__policy_name_ext(PTS_POLICY_FAIR), "fair");
}

std::atomic<int> ran{0};
pts_value count(void *, int status) {
  if (status == 0) ran++;
  return pts_undefined();
}

TEST(Quantized, RealPoolRunsEveryAgentsTasks) {
  pts_pool_options o = {1, static_cast<pts_policy>(PTS__POLICY_QUANTIZED), 0, 0};
  pts_pool *p = nullptr;
  ASSERT_EQ(pts__pool_new_ext(&o, nullptr, &p), 0);
  pts_agent *a[2];
  for (auto &x : a) {
    pts_agent_options ao = PTS_AGENT_OPTIONS_INIT;
    ao.thread = 0;
    ASSERT_EQ(pts_agent_new(p, &ao, &x), 0);
  }
  ran = 0;
  for (int i = 0; i < 200; i++)
    for (auto *x : a) ASSERT_EQ(pts_agent_post_task(x, nullptr, count, nullptr, nullptr, nullptr, nullptr), 0);
  for (auto *x : a) ASSERT_EQ(pts_agent_drain(x), 0);
  EXPECT_EQ(ran.load(), 400);
  EXPECT_EQ(pts_pool_shutdown(p), 0);
  for (auto *x : a) pts_agent_unref(x);
}

struct Chain {
  pts_scheduler *s;
  uint64_t done;
};
void chain(void *d, int status) {
  auto *c = static_cast<Chain *>(d);
  if (status != 0) return;
  pts__vthread_charge(10000);
  c->done++;
  pts_scheduler_post(c->s, chain, c, nullptr);
}

// An agent that stays idle drops to the low level after one epoch: the busy
// one then gets 15 of 16 slots; before, it had half.
TEST(Quantized, VirtualIdleAgentGivesBackAllButOneSlotAfterAnEpoch) {
  pts__vthread_options o{};
  o.policy = PTS__POLICY_QUANTIZED;
  o.quant.epoch_frames = 25;  // 100 ms epochs: a short test
  pts__vthread *t = nullptr;
  ASSERT_EQ(pts__vthread_new(&o, &t), 0);
  pts_loop *l0, *l1;
  ASSERT_EQ(pts__vthread_add(t, 1, &l0), 0);
  ASSERT_EQ(pts__vthread_add(t, 1, &l1), 1);
  Chain c{pts_global_scheduler(pts_loop_default_global(l0)), 0};
  chain(&c, 0);
  ASSERT_EQ(pts__vthread_run(t, 100000000), 0);  // epoch 0: both high
  uint64_t first = c.done;
  EXPECT_NEAR(static_cast<double>(first), 100e6 / 2 / 10e3, 100);
  ASSERT_EQ(pts__vthread_run(t, 200000000), 0);  // epoch 1: the idle one is low
  EXPECT_NEAR(static_cast<double>(c.done - first), 100e6 * 15 / 16 / 10e3, 100);
  EXPECT_EQ(pts__vthread_busy_ns(t, 1), 0u);
  pts__vthread_free(t);
}

// The virtual clock is exact: a lone chain of 10 us tasks runs 1000 of them
// in 10 ms under any work-conserving policy.
TEST(VThread, CostModelIsExact) {
  for (int p = 0; p < PTS_POLICY_TIME_PARTITIONED; p++) {
    pts__vthread_options o{};
    o.policy = p;
    pts__vthread *t = nullptr;
    ASSERT_EQ(pts__vthread_new(&o, &t), 0);
    pts_loop *l;
    ASSERT_EQ(pts__vthread_add(t, 1, &l), 0);
    Chain c{pts_global_scheduler(pts_loop_default_global(l)), 0};
    chain(&c, 0);
    ASSERT_EQ(pts__vthread_run(t, 10000000), 0);
    EXPECT_EQ(c.done, 1001u);  // the first ran outside, 1000 inside
    EXPECT_EQ(pts__vthread_busy_ns(t, 0), 10000000u);
    pts__vthread_free(t);
  }
}

}  // namespace
