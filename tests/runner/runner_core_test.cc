// Tests of bench/runner/core.h, the pure parts of ptsched-bench: what it
// reports (median/min/max, percentiles, Jain's index, ratios and whether a
// target is met), how it names figures
// (suite.scenario.figure), how it writes JSON strings and how it reads its
// command line. Nothing here reads a clock or starts a thread.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench/runner/core.h"

namespace {

TEST(RunnerSummary, OddCountMedianIsTheMiddleValue) {
  const double v[] = {5, 1, 9, 3, 7};
  rb_summary s;
  ASSERT_EQ(0, rb_summarize(v, 5, &s));
  EXPECT_EQ(5.0, s.median);
  EXPECT_EQ(1.0, s.min);
  EXPECT_EQ(9.0, s.max);
  EXPECT_EQ(5u, s.n);
  // The input is left as it was.
  EXPECT_EQ(5.0, v[0]);
  EXPECT_EQ(1.0, v[1]);
}

TEST(RunnerSummary, EvenCountMedianIsTheMeanOfTheMiddleTwo) {
  const double v[] = {4, 1, 3, 2};
  rb_summary s;
  ASSERT_EQ(0, rb_summarize(v, 4, &s));
  EXPECT_DOUBLE_EQ(2.5, s.median);
  EXPECT_EQ(1.0, s.min);
  EXPECT_EQ(4.0, s.max);
}

TEST(RunnerSummary, SingleSampleAndEmptyInput) {
  const double one[] = {42.5};
  rb_summary s;
  ASSERT_EQ(0, rb_summarize(one, 1, &s));
  EXPECT_EQ(42.5, s.median);
  EXPECT_EQ(42.5, s.min);
  EXPECT_EQ(42.5, s.max);
  EXPECT_EQ(-1, rb_summarize(one, 0, &s));
  EXPECT_EQ(0u, s.n);
  EXPECT_EQ(-1, rb_summarize(nullptr, 3, &s));
}

TEST(RunnerPercentile, NearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; i++) v.push_back(i);
  EXPECT_EQ(50.0, rb_percentile_sorted(v.data(), v.size(), 0.50));
  EXPECT_EQ(99.0, rb_percentile_sorted(v.data(), v.size(), 0.99));
  EXPECT_EQ(100.0, rb_percentile_sorted(v.data(), v.size(), 0.999));
  EXPECT_EQ(1.0, rb_percentile_sorted(v.data(), v.size(), 0.0));
  EXPECT_EQ(100.0, rb_percentile_sorted(v.data(), v.size(), 1.0));
  const double ten[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(5.0, rb_percentile_sorted(ten, 10, 0.5));
  EXPECT_EQ(10.0, rb_percentile_sorted(ten, 10, 0.95));
  EXPECT_EQ(0.0, rb_percentile_sorted(nullptr, 0, 0.5));
}

TEST(RunnerPercentile, SortOrdersAscending) {
  double v[] = {3, -1, 2.5, 0, 10};
  rb_sort(v, 5);
  EXPECT_EQ(-1.0, v[0]);
  EXPECT_EQ(0.0, v[1]);
  EXPECT_EQ(2.5, v[2]);
  EXPECT_EQ(3.0, v[3]);
  EXPECT_EQ(10.0, v[4]);
}

TEST(RunnerJain, EqualSharesGiveOne) {
  const double x[] = {3, 3, 3, 3};
  EXPECT_DOUBLE_EQ(1.0, rb_jain_index(x, 4));
}

TEST(RunnerJain, OneTakesAllGivesOneOverN) {
  const double x[] = {0, 7, 0, 0};
  EXPECT_DOUBLE_EQ(0.25, rb_jain_index(x, 4));
}

TEST(RunnerJain, KnownValue) {
  // (1+2+3)^2 / (3 * (1+4+9)) = 36 / 42.
  const double x[] = {1, 2, 3};
  EXPECT_DOUBLE_EQ(36.0 / 42.0, rb_jain_index(x, 3));
}

TEST(RunnerJain, RejectsBadInput) {
  const double neg[] = {1, -1};
  const double zero[] = {0, 0};
  EXPECT_EQ(-1, rb_jain_index(nullptr, 2));
  EXPECT_EQ(-1, rb_jain_index(neg, 0));
  EXPECT_EQ(-1, rb_jain_index(neg, 2));
  EXPECT_EQ(-1, rb_jain_index(zero, 2));
}

TEST(RunnerJain, WeightedSharesFollowingWeightsGiveOne) {
  const double used[] = {10, 10, 20, 40};
  const double w[] = {1, 1, 2, 4};
  EXPECT_NEAR(1.0, rb_weighted_jain(used, w, 4), 1e-12);
  // Equal use against unequal weights is not fair by weight.
  const double flat[] = {1, 1, 1, 1};
  double j = rb_weighted_jain(flat, w, 4);
  EXPECT_GT(j, 0.25);
  EXPECT_LT(j, 0.9);
  const double badw[] = {1, 0, 1, 1};
  EXPECT_EQ(-1, rb_weighted_jain(used, badw, 4));
}

TEST(RunnerRatio, DividesTwoMedians) {
  double r = -1;
  ASSERT_EQ(0, rb_ratio(36.0, 45.0, &r));
  EXPECT_DOUBLE_EQ(0.8, r);
  ASSERT_EQ(0, rb_ratio(0.0, 12.5, &r));
  EXPECT_EQ(0.0, r);
}

TEST(RunnerRatio, RefusesAMissingOrZeroDenominator) {
  double r = 7;
  EXPECT_EQ(-1, rb_ratio(10, 0, &r));
  EXPECT_EQ(-1, rb_ratio(10, -3, &r));
  EXPECT_EQ(-1, rb_ratio(NAN, 2, &r));
  EXPECT_EQ(-1, rb_ratio(2, INFINITY, &r));
  EXPECT_EQ(7.0, r);  // untouched
}

TEST(RunnerTarget, CostsMustStayAtOrBelowHigherIsBetterAtOrAbove) {
  EXPECT_TRUE(rb_target_met(0.8, 0.8, false));  // the bound itself is met
  EXPECT_FALSE(rb_target_met(0.81, 0.8, false));
  EXPECT_TRUE(rb_target_met(0, 0, false));      // "0 bytes allocated"
  EXPECT_FALSE(rb_target_met(1e-6, 0, false));
  EXPECT_TRUE(rb_target_met(0.96, 0.95, true));
  EXPECT_FALSE(rb_target_met(0.94, 0.95, true));
}

TEST(RunnerTarget, StatusSaysOkOrByHowMuchItIsMissed) {
  char buf[96];
  rb_target_status(buf, sizeof buf, 16, 20, false, "ns");
  EXPECT_STREQ("ok (<=20)", buf);
  rb_target_status(buf, sizeof buf, 0.999, 0.95, true, "index");
  EXPECT_STREQ("ok (>=0.95)", buf);
  rb_target_status(buf, sizeof buf, 36, 20, false, "ns");
  EXPECT_STREQ("MISSED by 16 ns (80%)", buf);
  rb_target_status(buf, sizeof buf, 0.9, 0.95, true, "index");
  EXPECT_STREQ("MISSED by 0.05 index (5.3%)", buf);
  rb_target_status(buf, sizeof buf, 24010.8, 23937.6, false, "us");
  EXPECT_STREQ("MISSED by 73.2 us (0.31%)", buf);
  // A target of 0 has no percentage to miss by.
  rb_target_status(buf, sizeof buf, 24, 0, false, "B");
  EXPECT_STREQ("MISSED by 24 B", buf);
  rb_target_status(buf, sizeof buf, 0, 0, false, "B");
  EXPECT_STREQ("ok (<=0)", buf);
  // A short buffer still ends with a NUL.
  char small[6];
  rb_target_status(small, sizeof small, 36, 20, false, "ns");
  EXPECT_EQ(5u, std::string(small).size());
}

// A stream's sides: each run's producer over its posts and consumer from
// its first task to its last, the first run (the warm-up's) left out.
TEST(RunnerSides, EachRunGivesItsProducerAndConsumerPerTaskLessTheWarmUp) {
  rb_sides s = {};
  const double *p = nullptr, *c = nullptr;
  EXPECT_EQ(0u, rb_sides_measured(&s, &p, &c));
  // Warm-up: 1,000 tasks, posted in 50 us, run from 60 us to 90 us.
  ASSERT_EQ(0, rb_sides_add(&s, 1000, 51000, 61000, 91000, 1000));
  EXPECT_EQ(0u, rb_sides_measured(&s, &p, &c));  // the warm-up alone: none
  // Two measured runs: producer-bound (posting ends with the last task),
  // then consumer-bound.
  ASSERT_EQ(0, rb_sides_add(&s, 0, 40000, 1000, 41000, 1000));
  ASSERT_EQ(0, rb_sides_add(&s, 0, 16000, 2000, 32000, 1000));
  ASSERT_EQ(2u, rb_sides_measured(&s, &p, &c));
  EXPECT_DOUBLE_EQ(40.0, p[0]);
  EXPECT_DOUBLE_EQ(40.0, c[0]);
  EXPECT_DOUBLE_EQ(16.0, p[1]);
  EXPECT_DOUBLE_EQ(30.0, c[1]);
  // More runs than the first allocation holds.
  for (int i = 0; i < 40; i++) ASSERT_EQ(0, rb_sides_add(&s, 0, 10 * i, 0, 20 * i, 10));
  ASSERT_EQ(42u, rb_sides_measured(&s, &p, &c));
  EXPECT_DOUBLE_EQ(39.0, p[41]);
  EXPECT_DOUBLE_EQ(78.0, c[41]);
  rb_sides_free(&s);
  EXPECT_EQ(0u, rb_sides_measured(&s, &p, &c));
  EXPECT_EQ(nullptr, s.producer);
}

TEST(RunnerSides, RefusesAnEmptyRunOrTimesOutOfOrder) {
  rb_sides s = {};
  EXPECT_EQ(-1, rb_sides_add(&s, 0, 10, 0, 10, 0));   // no task
  EXPECT_EQ(-1, rb_sides_add(&s, 10, 5, 10, 20, 1));  // posting ends before it starts
  EXPECT_EQ(-1, rb_sides_add(&s, 10, 20, 5, 20, 1));  // a task before the first post
  EXPECT_EQ(-1, rb_sides_add(&s, 0, 20, 15, 10, 1));  // the last task before the first
  EXPECT_EQ(0u, s.n);
  rb_sides_free(&s);
}

TEST(RunnerKey, ValidKeys) {
  EXPECT_TRUE(rb_key_valid("throughput.post_run_callback.ns_per_task"));
  EXPECT_TRUE(rb_key_valid("leak.round_robin.s1_bits_per_window"));
  EXPECT_TRUE(rb_key_valid("a.b.c"));
  EXPECT_TRUE(rb_key_valid("scale.fair_t2_a64.ns_per_task"));
}

TEST(RunnerKey, InvalidKeys) {
  EXPECT_FALSE(rb_key_valid(nullptr));
  EXPECT_FALSE(rb_key_valid(""));
  EXPECT_TRUE(rb_key_valid("a.b"));  // a figure of the whole suite
  EXPECT_FALSE(rb_key_valid("a"));
  EXPECT_FALSE(rb_key_valid("a."));
  EXPECT_FALSE(rb_key_valid("a.b.c.d"));
  EXPECT_FALSE(rb_key_valid(".b.c"));
  EXPECT_FALSE(rb_key_valid("a..c"));
  EXPECT_FALSE(rb_key_valid("a.b."));
  EXPECT_FALSE(rb_key_valid("a.round-robin.c"));
  EXPECT_FALSE(rb_key_valid("A.b.c"));
  EXPECT_FALSE(rb_key_valid("a.b c.d"));
  EXPECT_FALSE(rb_key_valid(std::string(RB_KEY_MAX, 'a').c_str()));
}

TEST(RunnerKey, MakeJoinsAndChecks) {
  char buf[RB_KEY_MAX];
  ASSERT_EQ(0, rb_key_make(buf, sizeof buf, "yield", "roundtrip", "ns"));
  EXPECT_STREQ("yield.roundtrip.ns", buf);
  EXPECT_EQ(-1, rb_key_make(buf, sizeof buf, "yield", "round.trip", "ns"));
  EXPECT_STREQ("", buf);
  EXPECT_EQ(-1, rb_key_make(buf, sizeof buf, "yield", "", "ns"));
  char small[8];
  EXPECT_EQ(-1, rb_key_make(small, sizeof small, "yield", "roundtrip", "ns"));
  EXPECT_STREQ("", small);
}

TEST(RunnerKey, PartMapsPolicyNames) {
  char buf[32];
  rb_key_part(buf, sizeof buf, "round-robin");
  EXPECT_STREQ("round_robin", buf);
  rb_key_part(buf, sizeof buf, "Time-Partitioned");
  EXPECT_STREQ("time_partitioned", buf);
  char tiny[4];
  rb_key_part(tiny, sizeof tiny, "strict");
  EXPECT_STREQ("str", tiny);
}

TEST(RunnerJson, EscapesStrings) {
  char buf[64];
  EXPECT_EQ(5, rb_json_string(buf, sizeof buf, "abc"));
  EXPECT_STREQ("\"abc\"", buf);
  rb_json_string(buf, sizeof buf, "a\"b\\c\nd\te");
  EXPECT_STREQ("\"a\\\"b\\\\c\\nd\\te\"", buf);
  rb_json_string(buf, sizeof buf, "\x01");
  EXPECT_STREQ("\"\\u0001\"", buf);
  rb_json_string(buf, sizeof buf, nullptr);
  EXPECT_STREQ("\"\"", buf);
  char small[4];
  EXPECT_EQ(-1, rb_json_string(small, sizeof small, "abcd"));
}

// argv as the parser sees it (argv[0] is the program).
struct Args {
  std::vector<std::string> s;
  std::vector<char *> p;
  explicit Args(std::initializer_list<const char *> a) {
    s.emplace_back("ptsched-bench");
    for (const char *x : a) s.emplace_back(x);
    for (auto &x : s) p.push_back(&x[0]);
  }
  int argc() const { return static_cast<int>(p.size()); }
  char *const *argv() const { return p.data(); }
};

TEST(RunnerOptions, DefaultsRunEverySuite) {
  Args a({});
  rb_options o;
  char err[128];
  ASSERT_EQ(0, rb_parse_options(a.argc(), a.argv(), &o, err, sizeof err));
  for (size_t i = 0; i < rb_suite_count; i++) EXPECT_TRUE(o.suites[i]) << rb_suite_names[i];
  EXPECT_FALSE(o.quick);
  EXPECT_EQ(RB_DEFAULT_RUNS, o.runs);
  EXPECT_EQ(nullptr, o.out);
}

TEST(RunnerOptions, SuiteListQuickRunsOut) {
  Args a({"--suite", "yield,control", "--quick", "--runs", "7", "--out", "/tmp/x"});
  rb_options o;
  char err[128];
  ASSERT_EQ(0, rb_parse_options(a.argc(), a.argv(), &o, err, sizeof err)) << err;
  for (size_t i = 0; i < rb_suite_count; i++) {
    bool want = std::string(rb_suite_names[i]) == "yield" ||
                std::string(rb_suite_names[i]) == "control";
    EXPECT_EQ(want, o.suites[i]) << rb_suite_names[i];
  }
  EXPECT_TRUE(o.quick);
  EXPECT_EQ(7, o.runs);
  EXPECT_STREQ("/tmp/x", o.out);
}

TEST(RunnerOptions, EqualsFormsAndRepeatedSuite) {
  Args a({"--suite=leak", "--suite", "memory", "--runs=2", "--out=o"});
  rb_options o;
  char err[128];
  ASSERT_EQ(0, rb_parse_options(a.argc(), a.argv(), &o, err, sizeof err)) << err;
  EXPECT_TRUE(o.suites[rb_suite_index("leak")]);
  EXPECT_TRUE(o.suites[rb_suite_index("memory")]);
  EXPECT_FALSE(o.suites[rb_suite_index("throughput")]);
  EXPECT_EQ(2, o.runs);
  EXPECT_STREQ("o", o.out);
}

TEST(RunnerOptions, QuickLowersDefaultRuns) {
  Args a({"--quick"});
  rb_options o;
  char err[128];
  ASSERT_EQ(0, rb_parse_options(a.argc(), a.argv(), &o, err, sizeof err));
  EXPECT_EQ(RB_QUICK_RUNS, o.runs);
}

TEST(RunnerOptions, LongIsTheLeakSuitesLongMode) {
  Args a({"--suite", "leak", "--long"});
  rb_options o;
  char err[128];
  ASSERT_EQ(0, rb_parse_options(a.argc(), a.argv(), &o, err, sizeof err));
  EXPECT_TRUE(o.long_run);
  EXPECT_FALSE(o.quick);
  EXPECT_EQ(RB_DEFAULT_RUNS, o.runs);
}

TEST(RunnerOptions, ListHelpNoPlots) {
  Args a({"--list", "--no-plots", "-h"});
  rb_options o;
  char err[128];
  ASSERT_EQ(0, rb_parse_options(a.argc(), a.argv(), &o, err, sizeof err));
  EXPECT_TRUE(o.list);
  EXPECT_TRUE(o.no_plots);
  EXPECT_TRUE(o.help);
}

TEST(RunnerOptions, Errors) {
  const std::vector<std::vector<const char *>> bad = {
      {"--suite", "nope"}, {"--suite", "yield,"}, {"--suite", ""},   {"--suite"},
      {"--runs", "0"},     {"--runs", "x"},       {"--runs", "1001"}, {"--runs", "3x"},
      {"--out", ""},       {"--out"},             {"--fast"},         {"yield"},
  };
  for (const auto &b : bad) {
    std::vector<std::string> s = {"ptsched-bench"};
    for (const char *x : b) s.emplace_back(x);
    std::vector<char *> p;
    for (auto &x : s) p.push_back(&x[0]);
    rb_options o;
    char err[128] = "";
    EXPECT_EQ(-1, rb_parse_options(static_cast<int>(p.size()), p.data(), &o, err, sizeof err))
        << s.size() << " " << (b.empty() ? "" : b[0]);
    EXPECT_NE('\0', err[0]);
  }
}

TEST(RunnerOptions, SuiteIndexKnowsEverySuiteOfTheIssue) {
  for (const char *n : {"throughput", "crossthread", "yield", "control", "scale", "latency",
                        "fairness", "memory", "leak"})
    EXPECT_GE(rb_suite_index(n), 0) << n;
  EXPECT_EQ(-1, rb_suite_index("bogus"));
  EXPECT_EQ(-1, rb_suite_index(nullptr));
}

}  // namespace
