// `-o jsonpath=EXPR`: fields of the JSON a verb prints, for scripts.
#include "client/tunectl/json_path.h"

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::tunectl {
namespace {

using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;

constexpr char kJobs[] = R"({
  "jobs": [
    {"id": "j1", "state": "SUCCEEDED", "targets": [{"best": {"config": "B=1", "median_seconds": 0.5}}]},
    {"id": "j2", "state": "RUNNING", "targets": [], "tags": {"a": 1, "b": true}}
  ],
  "next_page_token": ""
})";

TEST(JsonPathTest, MembersIndicesAndWildcardsSelectWhatScriptsNeed) {
  EXPECT_EQ(*SelectJsonPath(kJobs, "{.jobs[0].id}"), "j1\n");
  EXPECT_EQ(*SelectJsonPath(kJobs, ".jobs[-1].state"), "RUNNING\n");
  EXPECT_EQ(*SelectJsonPath(kJobs, "{.jobs[*].id}"), "j1\nj2\n");
  EXPECT_EQ(*SelectJsonPath(kJobs, "{.jobs[0].targets[0].best.median_seconds}"), "0.5\n");
  EXPECT_EQ(*SelectJsonPath(kJobs, "{.jobs[1].tags}"), "{\"a\":1,\"b\":true}\n");
  EXPECT_EQ(*SelectJsonPath(kJobs, "{.jobs[1].tags[*]}"), "1\ntrue\n");
  EXPECT_EQ(*SelectJsonPath(kJobs, "{.jobs[0]['state']}"), "SUCCEEDED\n");
  EXPECT_EQ(*SelectJsonPath(kJobs, "jobs[1].id"), "j2\n");  // the leading '.' may go
  EXPECT_EQ(*SelectJsonPath(R"("x")", "{.}"), "x\n");
  EXPECT_EQ(*SelectJsonPath(kJobs, "{.next_page_token}"), "\n");
}

TEST(JsonPathTest, WhatMatchesNothingOrDoesNotParseSaysWhere) {
  EXPECT_THAT(SelectJsonPath(kJobs, "{.jobs[5].id}"),
              StatusIsWith(absl::StatusCode::kNotFound, "nothing at .jobs[5]"));
  EXPECT_THAT(SelectJsonPath(kJobs, "{.jobs[0].nope}"),
              StatusIsWith(absl::StatusCode::kNotFound, "nothing at .jobs[0].nope"));
  EXPECT_THAT(SelectJsonPath(kJobs, "{.jobs[x]}"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "'[x]' is no index"));
  EXPECT_THAT(SelectJsonPath(kJobs, "{.jobs[0}"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SelectJsonPath(kJobs, "{.jobs..id}"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SelectJsonPath("not json", "{.a}"), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace tunefleet::tunectl
