// PlanTensorMap: the rules of cuTensorMapEncodeTiled, checked without a GPU.
#include "worker/cuda/tensor_map.h"

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::worker::cuda {
namespace {

using ::tunefleet::testing::StatusIsWith;

TEST(PlanTensorMapTest, LaysOutAGemmTileInnermostFirst) {
  absl::StatusOr<TensorMapLayout> layout =
      PlanTensorMap(v1::DTYPE_F16, {1000, 4096}, {128, 64}, 128);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->dtype, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(layout->rank, 2u);
  EXPECT_EQ(layout->dims[0], 4096u);
  EXPECT_EQ(layout->dims[1], 1000u);
  EXPECT_EQ(layout->strides[0], 4096u * 2);
  EXPECT_EQ(layout->box[0], 64u);
  EXPECT_EQ(layout->box[1], 128u);
  EXPECT_EQ(layout->element_strides[0], 1u);
  EXPECT_EQ(layout->swizzle, CU_TENSOR_MAP_SWIZZLE_128B);

  layout = PlanTensorMap(v1::DTYPE_F32, {3, 5, 8}, {1, 5, 4}, 0);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->strides[0], 8u * 4);
  EXPECT_EQ(layout->strides[1], 5u * 8 * 4);
  EXPECT_EQ(layout->swizzle, CU_TENSOR_MAP_SWIZZLE_NONE);
}

TEST(PlanTensorMapTest, NamesTheRuleABoxOrTensorBreaks) {
  const auto invalid = absl::StatusCode::kInvalidArgument;
  // A row of 1001 halves does not start every row on 16 bytes.
  EXPECT_THAT(PlanTensorMap(v1::DTYPE_F16, {129, 1001}, {64, 64}, 128),
              StatusIsWith(invalid, "not a multiple of 16"));
  EXPECT_THAT(PlanTensorMap(v1::DTYPE_F16, {4096, 4096}, {512, 64}, 128),
              StatusIsWith(invalid, "box dim 512"));
  EXPECT_THAT(PlanTensorMap(v1::DTYPE_F16, {4096, 4096}, {128, 128}, 128),
              StatusIsWith(invalid, "over the 128-byte swizzle span"));
  EXPECT_THAT(PlanTensorMap(v1::DTYPE_F16, {4096, 4096}, {128, 4}, 0),
              StatusIsWith(invalid, "innermost row is 8 bytes"));
  EXPECT_THAT(PlanTensorMap(v1::DTYPE_F16, {4096, 4096}, {128, 64}, 96),
              StatusIsWith(invalid, "swizzle_bytes 96"));
  EXPECT_THAT(PlanTensorMap(v1::DTYPE_F16, {4096}, {128, 64}, 0),
              StatusIsWith(invalid, "2 box dims for a tensor of 1"));
  EXPECT_THAT(PlanTensorMap(v1::DTYPE_F16, {1, 1, 1, 1, 1, 8}, {1, 1, 1, 1, 1, 8}, 0),
              StatusIsWith(invalid, "6 dims"));
  EXPECT_THAT(PlanTensorMap(v1::DTYPE_UNSPECIFIED, {8}, {8}, 0),
              StatusIsWith(invalid, "no tensor map element type"));
}

}  // namespace
}  // namespace tunefleet::worker::cuda
