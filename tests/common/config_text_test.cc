#include "common/config_text.h"

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::StatusIsWith;

TEST(ConfigTextTest, RoundTripsShortForm) {
  absl::StatusOr<v1::Config> config = ParseConfig("BLOCK_M=128, BLOCK_N=64,STAGES=-3");
  ASSERT_OK(config);
  EXPECT_EQ(ConfigToString(*config), "BLOCK_M=128,BLOCK_N=64,STAGES=-3");
  EXPECT_EQ(FindParam(*config, "BLOCK_N"), 64);
  EXPECT_EQ(FindParam(*config, "NOPE"), std::nullopt);
}

TEST(ConfigTextTest, EmptyTextIsEmptyConfig) {
  absl::StatusOr<v1::Config> config = ParseConfig("  ");
  ASSERT_OK(config);
  EXPECT_EQ(config->values_size(), 0);
}

TEST(ConfigTextTest, RejectsMalformedItemsNamingThem) {
  EXPECT_THAT(ParseConfig("A=1,B"), StatusIsWith(absl::StatusCode::kInvalidArgument, "\"B\""));
  EXPECT_THAT(ParseConfig("A=x"), StatusIsWith(absl::StatusCode::kInvalidArgument, "A"));
  EXPECT_THAT(ParseConfig("A=1,A=2"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "A given twice"));
  EXPECT_THAT(ParseConfig("=3"), StatusIsWith(absl::StatusCode::kInvalidArgument, "NAME=VALUE"));
  EXPECT_THAT(ParseShape("M=99999999999999999999"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "M"));
}

TEST(ConfigTextTest, ShapeKeepsTextOrder) {
  absl::StatusOr<v1::Shape> shape = ParseShape("N=2,M=1");
  ASSERT_OK(shape);
  EXPECT_EQ(ShapeToString(*shape), "N=2,M=1");
  EXPECT_EQ(FindDim(*shape, "M"), 1);
}

}  // namespace
}  // namespace tunefleet
