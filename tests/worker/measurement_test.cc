// The early-cut rule (CutEarly, docs/measurement.md) and its helpers, as
// pure arithmetic.
#include "worker/measurement.h"

#include <vector>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace tunefleet::worker
