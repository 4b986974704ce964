#include "client/tunectl/sweep.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::tunectl {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIsWith;

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

TEST(ExpandShapesTest, TheCapCountsShapesAndARangesTerms) {
  absl::StatusOr<std::vector<std::string>> six = ExpandShapes("M=1,2,3,N=1,2", 6);
  ASSERT_TRUE(six.ok()) << six.status();
  EXPECT_EQ(six->size(), 6u);
  EXPECT_THAT(ExpandShapes("M=1,2,3,N=1,2", 5),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "more than 5 shapes"));
  EXPECT_THAT(ExpandShapes("M=1,2,...,10", 4),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "more than 4 terms"));
}

}  // namespace
}  // namespace tunefleet::tunectl
