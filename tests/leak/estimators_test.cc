// tests/leak/estimators_test.cc: the study's estimators on cases with known
// answers: MI of independent and identical variables, the Miller-Madow
// term, the shuffled floor, binning, the classifier and Fano's bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "bench/leak/leak.h"
#include "ptsched/common.h"

namespace {

std::vector<int> bits(size_t n, uint64_t seed) {
  std::vector<int> v(n);
  uint64_t s = seed;
  for (auto &b : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<int>(s >> 63);
  }
  return v;
}

TEST(Estimators, EntropyOfKnownHistograms) {
  uint64_t fair[2] = {50, 50}, one[3] = {10, 0, 0}, four[4] = {5, 5, 5, 5};
  EXPECT_DOUBLE_EQ(lk_entropy(fair, 2, false), 1.0);
  EXPECT_DOUBLE_EQ(lk_entropy(one, 3, false), 0.0);
  EXPECT_DOUBLE_EQ(lk_entropy(four, 4, false), 2.0);
  // Miller-Madow adds (m - 1) / (2 N ln 2) bits: m = 4, N = 20.
  EXPECT_NEAR(lk_entropy(four, 4, true), 2.0 + 3.0 / (40.0 * std::log(2.0)), 1e-12);
  // One non-empty cell: no correction.
  EXPECT_DOUBLE_EQ(lk_entropy(one, 3, true), 0.0);
}

TEST(Estimators, MutualInformationIdenticalIsEntropy) {
  auto x = bits(4000, 1);
  double mi = lk_mi(x.data(), x.data(), x.size(), 2, 2, false);
  uint64_t c[2] = {0, 0};
  for (int b : x) c[b]++;
  EXPECT_NEAR(mi, lk_entropy(c, 2, false), 1e-12);
  EXPECT_GT(mi, 0.99);
  // Corrected: the three terms' corrections (1 + 1 - 1 cells) leave +1/(2N ln2).
  EXPECT_NEAR(lk_mi(x.data(), x.data(), x.size(), 2, 2, true),
              mi + 1.0 / (2.0 * 4000 * std::log(2.0)), 1e-12);
}

TEST(Estimators, MutualInformationIndependentIsNearZeroAndBelowFloor) {
  auto x = bits(4000, 2);
  auto y8 = bits(4000 * 3, 3);
  std::vector<int> y(4000);
  for (size_t i = 0; i < y.size(); i++) y[i] = y8[3 * i] * 4 + y8[3 * i + 1] * 2 + y8[3 * i + 2];
  double plug = lk_mi(x.data(), y.data(), x.size(), 2, 8, false);
  double mm = lk_mi(x.data(), y.data(), x.size(), 2, 8, true);
  // The plug-in estimate is biased up by about (kx-1)(ky-1)/(2N ln2) bits;
  // Miller-Madow removes it.
  double bias = 7.0 / (2.0 * 4000 * std::log(2.0));
  EXPECT_LT(std::fabs(mm), plug);
  EXPECT_NEAR(plug - mm, bias, 1e-12);
  EXPECT_LT(std::fabs(mm), 0.004);
  double floor = lk_mi_floor(x.data(), y.data(), x.size(), 2, 8, 200, 9);
  EXPECT_GT(floor, 0.0);
  EXPECT_LT(floor, 0.01);
  // A constant observation carries exactly nothing.
  std::vector<int> z(4000, 0);
  EXPECT_EQ(lk_mi(x.data(), z.data(), x.size(), 2, 1, true), 0.0);
}

TEST(Estimators, BinningKeepsFewValuesExactAndEqualValuesTogether) {
  std::vector<double> v = {3, 1, 3, 2, 1};
  std::vector<int> b(v.size());
  ASSERT_EQ(lk_bin(v.data(), v.size(), 16, b.data()), 3);
  EXPECT_EQ(b[0], 2);
  EXPECT_EQ(b[1], 0);
  EXPECT_EQ(b[3], 1);
  std::vector<double> w(1000);
  for (size_t i = 0; i < w.size(); i++) w[i] = static_cast<double>(i % 100);
  std::vector<int> c(w.size());
  int k = lk_bin(w.data(), w.size(), 10, c.data());
  EXPECT_EQ(k, 10);
  for (size_t i = 0; i < w.size(); i++) EXPECT_EQ(c[i], c[i % 100]);
}

TEST(Estimators, ClassifierAndFanoBound) {
  auto x = bits(2000, 4);
  EXPECT_DOUBLE_EQ(lk_classify(x.data(), x.data(), x.size(), 2, 2), 1.0);
  auto y = bits(2000, 5);
  double acc = lk_classify(x.data(), y.data(), x.size(), 2, 2);
  EXPECT_NEAR(acc, 0.5, 0.06);
  // Fano: 0 bits of a 1-bit secret allow only guessing; 1 bit allows all.
  EXPECT_NEAR(lk_fano_max_accuracy(1.0, 0.0, 2), 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(lk_fano_max_accuracy(1.0, 1.0, 2), 1.0);
  // Binary case: accuracy <= 1 - h2^-1(1 - I).
  EXPECT_NEAR(lk_fano_max_accuracy(1.0, 1.0 - lk_h2(0.1), 2), 0.9, 1e-9);
  EXPECT_NEAR(lk_h2_inv(lk_h2(0.2)), 0.2, 1e-9);
  // m = 4 uniform, no information: Pe >= 3/4.
  EXPECT_NEAR(lk_fano_max_accuracy(2.0, 0.0, 4), 0.25, 1e-6);
}

TEST(Estimators, YoudenOfPerfectAndUselessDetectors) {
  std::vector<double> s(1000);
  std::vector<uint8_t> t(1000);
  auto x = bits(1000, 6);
  for (size_t i = 0; i < s.size(); i++) {
    t[i] = static_cast<uint8_t>(x[i]);
    s[i] = x[i] ? 10.0 : 1.0;
  }
  EXPECT_DOUBLE_EQ(lk_youden(s.data(), t.data(), s.size()), 1.0);
  std::vector<double> c(1000, 5.0);
  EXPECT_DOUBLE_EQ(lk_youden(c.data(), t.data(), c.size()), 0.0);
}

// Windows the harness marked as left out (it posted late) do not enter the
// analysis: here they carry the opposite of the secret; without them the
// observation tells the secret exactly (1 bit), with them much less.
TEST(Estimators, AnalysisLeavesOutExcludedWindows) {
  const uint32_t n = 2000;
  auto x = bits(n, 7);
  std::vector<uint8_t> secret(n), excluded(n);
  std::vector<double> obs(n);
  for (uint32_t i = 0; i < n; i++) {
    secret[i] = static_cast<uint8_t>(x[i]);
    excluded[i] = i % 3 == 0;
    obs[i] = (x[i] != 0) != (excluded[i] != 0) ? 10.0 : 1.0;
  }
  lk_trace tr{};
  tr.windows = n;
  tr.secret = secret.data();
  tr.obs = obs.data();
  lk_result with{}, without{};
  ASSERT_EQ(lk_analyse(&tr, LK_S1, 20, 3, &without), 0);
  tr.excluded = excluded.data();
  ASSERT_EQ(lk_analyse(&tr, LK_S1, 20, 3, &with), 0);
  EXPECT_GT(with.bits, 0.99);
  EXPECT_DOUBLE_EQ(with.accuracy, 1.0);
  EXPECT_LT(without.bits, 0.2);
  std::fill(excluded.begin(), excluded.end(), 1);
  EXPECT_EQ(lk_analyse(&tr, LK_S1, 20, 3, &with), PTS_EINVAL);
}

}  // namespace
