// The early-cut rule (CutEarly, docs/measurement.md) and its helpers, as
// pure arithmetic; the stop rules against the cases the Python twin
// (python/tunefleet/backend/measure.py) answers too.
#include "worker/measurement.h"

#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_support.h"

namespace tunefleet::worker {
namespace {

v1::MeasureOptions Options(int min_samples, double cut_factor = 0) {
  v1::MeasureOptions options;
  options.set_min_samples(min_samples);
  options.set_cut_factor(cut_factor);
  return WithMeasureDefaults(options);
}

std::vector<double> Sorted(std::vector<double> samples) {
  std::vector<double> sorted;
  for (double s : samples) InsertSorted(s, &sorted);
  return sorted;
}

TEST(MeasurementTest, CutFactorDefaultsToOneAndAHalf) {
  EXPECT_DOUBLE_EQ(WithMeasureDefaults({}).cut_factor(), 1.5);
  EXPECT_DOUBLE_EQ(Options(5, 3).cut_factor(), 3);
  EXPECT_DOUBLE_EQ(Options(5, -1).cut_factor(), -1);
}

TEST(MeasurementTest, InsertSortedKeepsSamplesAscending) {
  EXPECT_EQ(Sorted({3, 1, 2, 2, 0.5}), (std::vector<double>{0.5, 1, 2, 2, 3}));
}

TEST(MeasurementTest, CutsAClearlySlowerConfigOnceItHasMinSamples) {
  const v1::MeasureOptions options = Options(/*min_samples=*/3);
  // p20 of {2, 2} would be 2 > 1.5 x 1, but two samples are not enough.
  EXPECT_FALSE(CutEarly(options, /*best_seconds=*/1.0, Sorted({2, 2})));
  EXPECT_TRUE(CutEarly(options, /*best_seconds=*/1.0, Sorted({2, 2, 2})));
}

TEST(MeasurementTest, ComparesTheP20WithKTimesTheBest) {
  const v1::MeasureOptions options = Options(/*min_samples=*/5);
  // Sorted {1.4, 1.6, 2, 2, 2}: p20 = 1.4 + 0.8 x 0.2 = 1.56.
  const std::vector<double> samples = Sorted({2, 1.6, 2, 1.4, 2});
  EXPECT_TRUE(CutEarly(options, /*best_seconds=*/1.0, samples));    // 1.56 > 1.5
  EXPECT_FALSE(CutEarly(options, /*best_seconds=*/1.04, samples));  // 1.56 = 1.56
  EXPECT_FALSE(CutEarly(options, /*best_seconds=*/1.1, samples));   // 1.56 < 1.65
}

TEST(MeasurementTest, OneFastSampleAmongSlowOnesKeepsAConfig) {
  // A config whose fast samples reach the best is not "clearly slower",
  // however slow its median: the p20 decides, not the median.
  const v1::MeasureOptions options = Options(/*min_samples=*/5);
  EXPECT_FALSE(CutEarly(options, /*best_seconds=*/1.0, Sorted({1.0, 1.1, 9, 9, 9})));
}

TEST(MeasurementTest, NeverCutsWithoutABestOrWithTheRuleOff) {
  const std::vector<double> slow = Sorted({10, 10, 10, 10, 10});
  EXPECT_FALSE(CutEarly(Options(5), /*best_seconds=*/0, slow));
  EXPECT_FALSE(CutEarly(Options(5, /*cut_factor=*/-1), /*best_seconds=*/1, slow));
  EXPECT_TRUE(CutEarly(Options(5, /*cut_factor=*/9), /*best_seconds=*/1, slow));
  EXPECT_FALSE(CutEarly(Options(5, /*cut_factor=*/10), /*best_seconds=*/1, slow));
}

// tests/worker/measurement_cases.json: each case's options, with defaults.
v1::MeasureOptions CaseOptions(const nlohmann::json& options) {
  v1::MeasureOptions out;
  out.set_min_samples(options.value("min_samples", 0));
  out.set_max_samples(options.value("max_samples", 0));
  out.set_budget_seconds(options.value("budget_seconds", 0.0));
  out.set_cut_factor(options.value("cut_factor", 0.0));
  out.set_precision(options.value("precision", 0.0));
  out.set_warmup_seconds(options.value("warmup_seconds", 0.0));
  return WithMeasureDefaults(out);
}

nlohmann::json SharedCases(const std::string& rule) {
  std::ifstream in(::tunefleet::testing::SourceDir() + "/tests/worker/measurement_cases.json");
  nlohmann::json cases = nlohmann::json::parse(in);
  EXPECT_FALSE(cases[rule].empty()) << rule;
  return cases[rule];
}

TEST(MeasurementCasesTest, MedianPrecise) {
  for (const nlohmann::json& c : SharedCases("median_precise")) {
    EXPECT_EQ(MedianPrecise(CaseOptions(c["options"]), c["sorted"].get<std::vector<double>>()),
              c["expected"].get<bool>())
        << c["name"];
  }
}

TEST(MeasurementCasesTest, WantMoreSamples) {
  for (const nlohmann::json& c : SharedCases("want_more_samples")) {
    EXPECT_EQ(WantMoreSamples(CaseOptions(c["options"]), c["sorted"].get<std::vector<double>>(),
                              c["elapsed"].get<double>()),
              c["expected"].get<bool>())
        << c["name"];
  }
}

TEST(MeasurementCasesTest, WarmupSeconds) {
  for (const nlohmann::json& c : SharedCases("warmup_seconds")) {
    const double idle = c["idle"].is_string() ? std::numeric_limits<double>::infinity()
                                              : c["idle"].get<double>();
    EXPECT_DOUBLE_EQ(WarmupSeconds(CaseOptions(c["options"]), idle, c["call"].get<double>()),
                     c["expected"].get<double>())
        << c["name"];
  }
}

TEST(MeasurementCasesTest, CutEarly) {
  for (const nlohmann::json& c : SharedCases("cut_early")) {
    EXPECT_EQ(CutEarly(CaseOptions(c["options"]), c["best"].get<double>(),
                       c["sorted"].get<std::vector<double>>()),
              c["expected"].get<bool>())
        << c["name"];
  }
}

TEST(MeasurementCasesTest, ClockCalibration) {
  for (const nlohmann::json& c : SharedCases("clock_calibration")) {
    EXPECT_DOUBLE_EQ(ClockCalibration(c["median"].get<double>(),
                                      c["seconds"].get<std::vector<double>>(),
                                      c["mhz"].get<std::vector<double>>()),
                     c["expected"].get<double>())
        << c["name"];
  }
}

}  // namespace
}  // namespace tunefleet::worker
