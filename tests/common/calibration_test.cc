#include "common/calibration.h"

#include <limits>

#include "gtest/gtest.h"

namespace tunefleet {
namespace {

TEST(CalibrationTest, ACalibratedTimeIsTheMedianInUnitsOfTheReference) {
  EXPECT_DOUBLE_EQ(CalibratedTime(3e-4, 2e-4), 1.5);
  EXPECT_DOUBLE_EQ(CalibratedTime(3e-4, 0), 3e-4);  // uncalibrated: the raw median
  v1::Measurement m;
  m.set_median_seconds(1e-3);
  m.set_calibration_seconds(4e-3);
  EXPECT_DOUBLE_EQ(CalibratedTime(m), 0.25);
}

TEST(CalibrationTest, OnlyAFinitePositiveTimeIsACalibration) {
  // A worker could report anything; none of these may make a config look
  // infinitely fast or poison a comparison.
  for (double bad : {0.0, -1e-3, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_FALSE(Calibrated(bad)) << bad;
    EXPECT_DOUBLE_EQ(CalibratedTime(2e-3, bad), 2e-3) << bad;
  }
  EXPECT_TRUE(Calibrated(1e-9));
}

TEST(CalibrationTest, APairComparesCalibratedOnlyWhenBothSidesAre) {
  // Device B runs the reference 10% slower, and the config 10% slower too.
  EXPECT_DOUBLE_EQ(TimeRatio(1.1e-3, 2.2e-3, 1e-3, 2e-3), 1.0);
  // One side uncalibrated: raw medians.
  EXPECT_DOUBLE_EQ(TimeRatio(1.1e-3, 2.2e-3, 1e-3, 0), 1.1);
  EXPECT_DOUBLE_EQ(TimeRatio(1.1e-3, 0, 1e-3, 2e-3), 1.1);
  EXPECT_EQ(TimeRatio(1e-3, 0, 0, 0), 0);  // nothing to compare with
}

}  // namespace
}  // namespace tunefleet
