#include "client/tunectl/sweep.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::tunectl {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIsWith;

// ExpandShapes(text), which must succeed.
std::vector<std::string> Expanded(const std::string& text) {
  absl::StatusOr<std::vector<std::string>> shapes = ExpandShapes(text);
  EXPECT_TRUE(shapes.ok()) << shapes.status();
  return shapes.ok() ? *shapes : std::vector<std::string>();
}

// The cases the Python package's shapes.expand passes too
// (tests/python/test_offline.py).
TEST(ExpandShapesTest, AnswersEverySharedCase) {
  std::ifstream in(SourceDir() + "/tests/data/shape_ranges.json");
  const nlohmann::json cases = nlohmann::json::parse(in)["cases"];
  ASSERT_FALSE(cases.empty());
  for (const nlohmann::json& c : cases) {
    const std::string text = c["text"];
    SCOPED_TRACE(text);
    absl::StatusOr<std::vector<std::string>> shapes = ExpandShapes(text);
    if (c.contains("error")) {
      EXPECT_THAT(shapes, StatusIsWith(absl::StatusCode::kInvalidArgument,
                                       c["error"].get<std::string>()));
    } else {
      ASSERT_TRUE(shapes.ok()) << shapes.status();
      EXPECT_EQ(*shapes, c["expect"].get<std::vector<std::string>>());
    }
  }
}

TEST(ExpandShapesTest, AShapeWithoutListsIsKeptAsWritten) {
  EXPECT_THAT(Expanded("M=1024, N=1024,K=1024"),
              ElementsAre("M=1024, N=1024,K=1024"));
}

TEST(ExpandShapesTest, ListsMakeEveryCombinationTheFirstDimSlowest) {
  EXPECT_THAT(Expanded("M=1,2,N=8,16,K=4"),
              ElementsAre("M=1,N=8,K=4", "M=1,N=16,K=4", "M=2,N=8,K=4",
                          "M=2,N=16,K=4"));
}

TEST(ExpandShapesTest, RangesAreGeometricOrArithmeticByTheirFirstTerms) {
  const std::vector<std::string> doubling = Expanded("M=1,2,4,...,4096,N=4096");
  ASSERT_THAT(doubling, SizeIs(13));
  EXPECT_EQ(doubling.front(), "M=1,N=4096");
  EXPECT_EQ(doubling.back(), "M=4096,N=4096");
  EXPECT_THAT(Expanded("B=64,128,...,320"),
              ElementsAre("B=64", "B=128", "B=192", "B=256", "B=320"));
  EXPECT_THAT(Expanded("B=16,8,...,0"), ElementsAre("B=16", "B=8", "B=0"));
  EXPECT_THAT(Expanded("B=2,6,18,...,162"),
              ElementsAre("B=2", "B=6", "B=18", "B=54", "B=162"));
}

TEST(ExpandShapesTest, WhatDoesNotParseIsNamed) {
  EXPECT_THAT(
      ExpandShapes("M=1,2,4,...,100"),
      StatusIsWith(absl::StatusCode::kInvalidArgument, "100 is not a term"));
  EXPECT_THAT(ExpandShapes("M=1,2,5,...,100"),
              StatusIsWith(absl::StatusCode::kInvalidArgument,
                           "neither one difference"));
  EXPECT_THAT(
      ExpandShapes("M=1,...,8"),
      StatusIsWith(absl::StatusCode::kInvalidArgument, "two or more terms"));
  EXPECT_THAT(
      ExpandShapes("M=1,2,...,4,8"),
      StatusIsWith(absl::StatusCode::kInvalidArgument, "then the last term"));
  EXPECT_THAT(
      ExpandShapes("M=1,x"),
      StatusIsWith(absl::StatusCode::kInvalidArgument, "'x' is not a number"));
  EXPECT_THAT(ExpandShapes("1,2"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "NAME=VALUE"));
  EXPECT_THAT(
      ExpandShapes("M=1,2,...,2000,N=1,2"),
      StatusIsWith(absl::StatusCode::kInvalidArgument, "more than 1024"));
  EXPECT_THAT(
      ExpandShapes("M=1,2,...,100000000"),
      StatusIsWith(absl::StatusCode::kInvalidArgument, "more than 1024 terms"));
}

}  // namespace
}  // namespace tunefleet::tunectl
