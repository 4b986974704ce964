// The data and the page of `tunectl report`, without a browser (the page
// drawn by Chromium is tests/integration/report_test.cc).
#include <string>
#include <vector>

#include "client/tunectl/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::tunectl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::ordered_json;

Trial MakeTrial(const std::string& config, const std::string& status, double seconds,
                const std::string& round = "search", const std::string& model = "cpu") {
  Trial trial;
  trial.config = config;
  trial.status = status;
  trial.median_seconds = seconds;
  trial.round = round;
  trial.device_model = model;
  return trial;
}

TEST(ScriptSafeJsonTest, NoTextInsideCanCloseTheScriptElement) {
  Json data = {{"error", "</script><script>alert(1)</script><!-- x"}};
  const std::string safe = ScriptSafeJson(data);
  EXPECT_THAT(safe, Not(HasSubstr("<")));
  EXPECT_EQ(Json::parse(safe), data);  // the same document once parsed
}

TEST(ReportHtmlTest, InlinesChartJsAndTheDataAndEscapesTheTitle) {
  const std::string html =
      ReportHtml("matmul <b>&", {{"kind", "job"}, {"x", "</script>"}}, "/*CHARTJS*/");
  EXPECT_THAT(html, HasSubstr("<title>matmul &lt;b&gt;&amp;</title>"));
  EXPECT_THAT(html, HasSubstr("/*CHARTJS*/"));
  EXPECT_THAT(html, HasSubstr("\\u003c/script>"));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
}

TEST(JobReportDataTest, KeepsOneTrialPerConfigPreferringTheSearchRound) {
  Job job;
  job.id = "j-1";
  JobTarget target;
  target.device_model = "cpu";
  target.toolkit = "gcc";
  target.tuning_key = "k";
  target.trials_total = target.trials_done = 3;
  target.best_config = "A=1,B=2";
  target.best_seconds = 0.001;
  target.default_seconds = 0.004;
  job.targets.push_back(target);
  Trial excluded = MakeTrial("A=9,B=9", "OK", 0.5);
  excluded.excluded = true;
  Trial failed = MakeTrial("A=4,B=2", "COMPILE_ERROR", 0);
  failed.error = "error: no";
  std::vector<Trial> trials = {MakeTrial("A=1,B=2", "OK", 0.0011, "verify"),
                               MakeTrial("A=1,B=2", "OK", 0.001, "search"),
                               MakeTrial("A=2,B=2", "OK", 0.002), failed, excluded,
                               MakeTrial("A=1,B=2", "OK", 0.003, "search", "other")};
  Json data = JobReportData(job, trials, "cpu");
  ASSERT_EQ(data["trials"].size(), 3u);
  EXPECT_EQ(data["trials"][0]["median_seconds"], 0.001);
  EXPECT_EQ(data["trials"][0]["values"]["B"], 2);
  EXPECT_TRUE(data["trials"][2]["median_seconds"].is_null());
  EXPECT_EQ(data["trials"][2]["error"], "error: no");
  EXPECT_EQ(data["excluded_trials"], 1);
  EXPECT_EQ(data["targets"][0]["default_seconds"], 0.004);
  EXPECT_EQ(JobReportData(job, trials, "")["trials"].size(), 4u);
}

TEST(KernelReportDataTest, ListsEveryPointWithUnknownTimesAsNull) {
  std::vector<HistoryPoint> points = {{1000, "M=1", "cpu", "j-1", "A=1", 0.5, 0, false, ""}};
  Json data = KernelReportData("matmul", points);
  EXPECT_EQ(data["kind"], "kernel");
  EXPECT_EQ(data["history"][0]["best_seconds"], 0.5);
  EXPECT_TRUE(data["history"][0]["default_seconds"].is_null());
}

}  // namespace
}  // namespace tunefleet::tunectl
