#include "client/tunectl/yaml.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::tunectl {
namespace {

TEST(YamlTest, NestedObjectsAndListsBecomeBlocksInKeyOrder) {
  absl::StatusOr<std::string> yaml = JsonToYaml(
      R"({"jobs": [{"id": "j-1", "state": "OK", "n": 3}, {"id": "j-2", "tags": []}],
          "next": null, "ok": true, "values": {"B": 64}})");
  ASSERT_OK(yaml);
  EXPECT_EQ(*yaml,
            "\"jobs\":\n"
            "  -\n"
            "    \"id\": \"j-1\"\n"
            "    \"state\": \"OK\"\n"
            "    \"n\": 3\n"
            "  -\n"
            "    \"id\": \"j-2\"\n"
            "    \"tags\": []\n"
            "\"next\": null\n"
            "\"ok\": true\n"
            "\"values\":\n"
            "  \"B\": 64\n");
}

TEST(YamlTest, StringsAreQuotedSoTheyStayStrings) {
  absl::StatusOr<std::string> yaml = JsonToYaml(R"({"a": "yes", "b": "1.0", "c": "x: y\n"})");
  ASSERT_OK(yaml);
  EXPECT_EQ(*yaml, "\"a\": \"yes\"\n\"b\": \"1.0\"\n\"c\": \"x: y\\n\"\n");
  EXPECT_THAT(JsonToYaml("{not json"), testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace tunefleet::tunectl
