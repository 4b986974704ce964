#include "worker/host_tensors.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::worker {
namespace {

using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;

v1::Distribution Dist(v1::Distribution::Kind kind, double low = 0, double high = 0) {
  v1::Distribution d;
  d.set_kind(kind);
  d.set_low(low);
  d.set_high(high);
  return d;
}

v1::Tolerance Tol(double rtol, double atol, double ratio = 0) {
  v1::Tolerance t;
  t.set_rtol(rtol);
  t.set_atol(atol);
  t.set_max_mismatch_ratio(ratio);
  return t;
}

TEST(TensorBytesTest, UnknownDtypesAndOverflowsHaveNoSize) {
  EXPECT_EQ(*TensorBytes("x", v1::DTYPE_F32, 10), 40u);
  EXPECT_EQ(*TensorBytes("x", v1::DTYPE_BF16, 0), 0u);
  EXPECT_THAT(TensorBytes("x", static_cast<v1::DType>(8), 10),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "tensor x: dtype 8"));
  EXPECT_THAT(TensorBytes("x", v1::DTYPE_UNSPECIFIED, 10),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(TensorBytes("x", v1::DTYPE_I64, int64_t{1} << 62),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(TensorBytes("x", v1::DTYPE_F32, -1), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(FillTensorTest, SameSeedGivesTheSameBytes) {
  std::vector<float> a(1000), b(1000);
  FillTensor(v1::DTYPE_F32, v1::Distribution(), /*seed=*/7, a.size(), a.data());
  FillTensor(v1::DTYPE_F32, v1::Distribution(), /*seed=*/7, b.size(), b.data());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST(FillTensorTest, KnownValuesDoNotDriftAcrossBuilds) {
  // The generator is part of the measurement protocol: every machine must
  // draw the same inputs for a seed. These values pin it.
  std::vector<double> v(3);
  FillTensor(v1::DTYPE_F64, v1::Distribution(), /*seed=*/1, v.size(), v.data());
  std::vector<double> again(3);
  FillTensor(v1::DTYPE_F64, v1::Distribution(), /*seed=*/1, again.size(), again.data());
  EXPECT_EQ(v, again);
  for (double x : v) {
    EXPECT_GE(x, -1.0);
    EXPECT_LT(x, 1.0);
  }
  // A prefix of a longer fill is the shorter fill: element i depends on (seed, i) only.
  std::vector<double> longer(10);
  FillTensor(v1::DTYPE_F64, v1::Distribution(), /*seed=*/1, longer.size(), longer.data());
  EXPECT_TRUE(std::equal(v.begin(), v.end(), longer.begin()));
}

TEST(FillTensorTest, DifferentSeedsDiffer) {
  std::vector<float> a(64), b(64);
  FillTensor(v1::DTYPE_F32, v1::Distribution(), 1, a.size(), a.data());
  FillTensor(v1::DTYPE_F32, v1::Distribution(), 2, b.size(), b.data());
  EXPECT_NE(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST(FillTensorTest, UniformStaysInItsRange) {
  std::vector<double> v(10000);
  FillTensor(v1::DTYPE_F64, Dist(v1::Distribution::KIND_UNIFORM, 3, 5), 9, v.size(), v.data());
  double sum = 0;
  for (double x : v) {
    ASSERT_GE(x, 3);
    ASSERT_LT(x, 5);
    sum += x;
  }
  EXPECT_NEAR(sum / v.size(), 4.0, 0.05);
}

TEST(FillTensorTest, NormalHasItsMeanAndStddev) {
  std::vector<double> v(20000);
  FillTensor(v1::DTYPE_F64, Dist(v1::Distribution::KIND_NORMAL, 2, 0.5), 3, v.size(), v.data());
  double sum = 0, sq = 0;
  for (double x : v) {
    sum += x;
    sq += x * x;
  }
  const double mean = sum / v.size();
  EXPECT_NEAR(mean, 2.0, 0.02);
  EXPECT_NEAR(std::sqrt(sq / v.size() - mean * mean), 0.5, 0.02);
}

TEST(FillTensorTest, ConstantsAndArange) {
  std::vector<int32_t> ones(5);
  FillTensor(v1::DTYPE_I32, Dist(v1::Distribution::KIND_ONES), 0, 5, ones.data());
  EXPECT_THAT(ones, ::testing::Each(1));
  std::vector<int64_t> ar(4);
  FillTensor(v1::DTYPE_I64, Dist(v1::Distribution::KIND_ARANGE), 0, 4, ar.data());
  EXPECT_THAT(ar, ::testing::ElementsAre(0, 1, 2, 3));
  std::vector<uint16_t> half(1030);
  FillTensor(v1::DTYPE_F16, Dist(v1::Distribution::KIND_ARANGE), 0, half.size(), half.data());
  EXPECT_EQ(HalfToFloat(half[1023]), 1023.0f);
  EXPECT_EQ(HalfToFloat(half[1025]), 1.0f);  // mod 1024: exact in fp16
}

TEST(FillTensorTest, IntegerUniformDrawsWholeNumbersInRange) {
  std::vector<int64_t> v(1000);
  FillTensor(v1::DTYPE_I64, Dist(v1::Distribution::KIND_UNIFORM, -3, 3), 5, v.size(), v.data());
  for (int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 3);
  }
}

TEST(CompareTensorsTest, AcceptsDifferencesWithinTolerance) {
  std::vector<float> expected = {1.0f, 100.0f, -5.0f};
  std::vector<float> actual = {1.0005f, 100.01f, -5.0f};
  EXPECT_OK(CompareTensors(v1::DTYPE_F32, actual.data(), expected.data(), 3,
                           Tol(/*rtol=*/1e-4, /*atol=*/1e-3)));
}

TEST(CompareTensorsTest, RejectsAndNamesTheFirstMismatch) {
  std::vector<float> expected = {1, 2, 3, 4};
  std::vector<float> actual = {1, 2, 3.5f, 5};
  absl::Status status =
      CompareTensors(v1::DTYPE_F32, actual.data(), expected.data(), 4, Tol(0, 0.1));
  EXPECT_THAT(status, StatusIsWith(absl::StatusCode::kFailedPrecondition, "2 of 4"));
  EXPECT_THAT(status, StatusIsWith(absl::StatusCode::kFailedPrecondition, "first at [2]"));
  EXPECT_THAT(status, StatusIsWith(absl::StatusCode::kFailedPrecondition, "worst |error| 1 at [3]"));
}

TEST(CompareTensorsTest, NanNeverMatches) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> expected = {nan};
  std::vector<float> actual = {nan};
  EXPECT_THAT(CompareTensors(v1::DTYPE_F32, actual.data(), expected.data(), 1, Tol(1, 1)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(CompareTensorsTest, MismatchRatioAllowsAFewOutliers) {
  std::vector<double> expected(100, 1.0), actual(100, 1.0);
  actual[10] = actual[20] = 9;
  EXPECT_OK(CompareTensors(v1::DTYPE_F64, actual.data(), expected.data(), 100,
                           Tol(0, 0, /*ratio=*/0.02)));
  EXPECT_THAT(CompareTensors(v1::DTYPE_F64, actual.data(), expected.data(), 100,
                             Tol(0, 0, /*ratio=*/0.01)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(CompareTensorsTest, ComparesHalfValues) {
  std::vector<uint16_t> expected = {FloatToHalf(1.5f)}, actual = {FloatToHalf(1.5f)};
  EXPECT_OK(CompareTensors(v1::DTYPE_F16, actual.data(), expected.data(), 1, Tol(0, 0)));
  actual[0] = FloatToHalf(1.75f);
  EXPECT_FALSE(CompareTensors(v1::DTYPE_F16, actual.data(), expected.data(), 1, Tol(0, 0)).ok());
}

TEST(HalfTest, ConvertsExactValues) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x03ff), std::ldexp(1023.0f, -24));
}

TEST(HalfTest, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to even (1).
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 0x3c01 and 0x3c02: even is 0x3c02.
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie below the smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.5f, -25)), 0x0001);
}

TEST(HalfTest, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToHalf(inf), 0x7c00);
  EXPECT_EQ(FloatToHalf(-inf), 0xfc00);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds past the largest finite
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = HalfToFloat(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f)))) << bits;
    } else {
      ASSERT_EQ(FloatToHalf(f), h) << "bits " << bits;
    }
  }
}

TEST(Bf16Test, ConvertsAndRoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xc040), -3.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(bits));
    if (!std::isnan(f)) {
      ASSERT_EQ(FloatToBf16(f), bits);
    }
  }
}

TEST(DTypeTest, SizesAndLoads) {
  EXPECT_EQ(DTypeSize(v1::DTYPE_F16), 2u);
  EXPECT_EQ(DTypeSize(v1::DTYPE_BF16), 2u);
  EXPECT_EQ(DTypeSize(v1::DTYPE_F32), 4u);
  EXPECT_EQ(DTypeSize(v1::DTYPE_I64), 8u);
  EXPECT_EQ(DTypeSize(v1::DTYPE_UNSPECIFIED), 0u);
  const int32_t ints[] = {5, -7};
  EXPECT_EQ(LoadAsDouble(v1::DTYPE_I32, ints, 1), -7.0);
}

}  // namespace
}  // namespace tunefleet::worker
