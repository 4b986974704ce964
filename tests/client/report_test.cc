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

TEST(SweepReportDataTest, ARowPerShapeAndDeviceModelInTheSweepsOrder) {
  auto job = [](const std::string& id, const std::string& shape, JobState state) {
    Job j;
    j.id = id;
    j.kernel = "matmul";
    j.shape = shape;
    j.state = state;
    j.trials_done = 4;
    j.trials_total = 8;
    j.created_unix_ms = 1'700'000'000'000;
    j.updated_unix_ms = 1'700'000'060'000;
    return j;
  };
  auto target = [](const std::string& model, double best, double def) {
    JobTarget t;
    t.device_model = model;
    t.best_config = best > 0 ? "A=1" : "";
    t.best_seconds = best;
    t.default_seconds = def;
    return t;
  };
  Job tuned = job("j-1", "M=1", JobState::kSucceeded);
  tuned.targets = {target("H100", 0.001, 0.003), target("cpu", 0.5, 0.5)};
  Job failed = job("j-2", "M=2", JobState::kFailed);
  failed.reason = "no config passed";
  failed.targets = {target("H100", 0, 0)};
  Job queued = job("j-3", "M=4", JobState::kQueued);  // no target yet
  const std::vector<Job> jobs = {tuned, failed, queued};

  Json data = SweepReportData("s-1", jobs, "");
  EXPECT_EQ(data["kind"], "sweep");
  EXPECT_EQ(data["sweep"]["shapes"], 3);
  EXPECT_EQ(data["sweep"]["trials_done"], 12);
  EXPECT_EQ(data["sweep"]["states"]["succeeded"], 1);
  EXPECT_EQ(data["sweep"]["states"]["queued"], 1);
  ASSERT_EQ(data["rows"].size(), 4u);
  EXPECT_EQ(data["rows"][0]["shape"], "M=1");
  EXPECT_EQ(data["rows"][0]["device_model"], "H100");
  EXPECT_EQ(data["rows"][0]["default_seconds"], 0.003);
  EXPECT_EQ(data["rows"][1]["device_model"], "cpu");
  EXPECT_TRUE(data["rows"][2]["best_seconds"].is_null());  // failed: no best
  EXPECT_EQ(data["rows"][2]["reason"], "no config passed");
  EXPECT_EQ(data["rows"][3]["job_id"], "j-3");
  EXPECT_FALSE(data["rows"][3].contains("device_model"));

  Json h100 = SweepReportData("s-1", jobs, "H100");  // the queued shape has no H100 row yet
  ASSERT_EQ(h100["rows"].size(), 2u);
  EXPECT_EQ(h100["rows"][1]["shape"], "M=2");
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
