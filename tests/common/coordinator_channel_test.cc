// How a list of coordinator addresses becomes one gRPC target: the cases of
// tests/data/coordinator_target_cases.json, which the Python package's
// tests run too.
#include "common/coordinator_channel.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIsWith;

TEST(CoordinatorChannelTest, EverySharedCaseParsesAsItSays) {
  std::ifstream in(SourceDir() + "/tests/data/coordinator_target_cases.json");
  const nlohmann::json cases = nlohmann::json::parse(in);
  ASSERT_GE(cases["cases"].size(), 10u);
  for (const nlohmann::json& c : cases["cases"]) {
    const std::string addresses = c["addresses"];
    absl::StatusOr<CoordinatorTarget> target = ParseCoordinatorTarget(addresses);
    if (c.contains("error")) {
      EXPECT_THAT(target, StatusIsWith(absl::StatusCode::kInvalidArgument,
                                       c["error"].get<std::string>()))
          << addresses;
      continue;
    }
    ASSERT_TRUE(target.ok()) << addresses << ": " << target.status();
    EXPECT_EQ(target->target, c["target"].get<std::string>()) << addresses;
    EXPECT_EQ(target->authority, c["authority"].get<std::string>()) << addresses;
  }
}

}  // namespace
}  // namespace tunefleet
