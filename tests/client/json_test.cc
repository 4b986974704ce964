#include "client/tunectl/json.h"

#include <limits>

#include "gtest/gtest.h"

namespace tunefleet::tunectl {
namespace {

TEST(TunectlJsonTest, WritesIndentedNestedDocuments) {
  JsonWriter json;
  json.BeginObject();
  json.Key("a").Int(1);
  json.Key("b").BeginArray().String("x").Bool(false).EndArray();
  json.Key("c").BeginObject().EndObject();
  json.EndObject();
  EXPECT_EQ(json.str(),
            "{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    false\n  ],\n"
            "  \"c\": {}\n}\n");
}

TEST(TunectlJsonTest, EscapesStrings) {
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
}

TEST(TunectlJsonTest, NonFiniteNumbersAreNull) {
  JsonWriter json;
  json.BeginArray()
      .Double(std::numeric_limits<double>::infinity())
      .Double(0.25)
      .EndArray();
  EXPECT_EQ(json.str(), "[\n  null,\n  0.25\n]\n");
}

}  // namespace
}  // namespace tunefleet::tunectl
