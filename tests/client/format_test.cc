#include "client/tunectl/format.h"

#include <nlohmann/json.hpp>

#include "client/tunectl/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::tunectl {
namespace {

using ::testing::HasSubstr;

Job FinishedJob() {
  Job job;
  job.id = "j-1";
  job.kernel = "matmul";
  job.shape = "M=64";
  job.state = JobState::kSucceeded;
  job.trials_total = 4;
  job.trials_done = 4;
  job.outcomes = {{"OK", 3}, {"COMPILE_ERROR", 1}};
  JobTarget target;
  target.device_model = "cpu";
  target.best_config = "B=2";
  target.best_seconds = 0.001;
  target.default_seconds = 0.003;
  job.targets.push_back(target);
  for (int i = 0; i < 6; ++i) {
    job.top_trials.push_back({.config = "B=" + std::to_string(i),
                              .median_seconds = 0.001 * (i + 1),
                              .status = "OK",
                              .device_model = "cpu"});
  }
  return job;
}

TEST(TunectlFormatTest, SecondsPickAReadableUnit) {
  EXPECT_EQ(FormatSeconds(0), "-");
  EXPECT_EQ(FormatSeconds(2.5), "2.50 s");
  EXPECT_EQ(FormatSeconds(0.00123), "1.23 ms");
  EXPECT_EQ(FormatSeconds(4.56e-5), "45.6 us");
  EXPECT_EQ(FormatSeconds(7e-9), "7 ns");
}

TEST(TunectlFormatTest, DurationsAndAges) {
  EXPECT_EQ(HumanDuration(absl::Seconds(45)), "45s");
  EXPECT_EQ(HumanDuration(absl::Seconds(187)), "3m07s");
  EXPECT_EQ(HumanDuration(absl::Seconds(7500)), "2h05m");
  absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(FormatAge(990 * 1000, now), "10s ago");
  EXPECT_EQ(FormatAge(0, now), "-");
}

TEST(TunectlFormatTest, SpeedUpNeedsBothTimes) {
  JobTarget target;
  target.best_seconds = 1;
  EXPECT_EQ(SpeedUp(target), 0);
  target.default_seconds = 3;
  EXPECT_DOUBLE_EQ(SpeedUp(target), 3);
}

TEST(TunectlFormatTest, TablesAlignColumns) {
  EXPECT_EQ(RenderTable({"A", "BB"}, {{"long", "x"}, {"s", "y"}}),
            "A     BB\nlong  x\ns     y\n");
}

TEST(TunectlFormatTest, JobDetailsSummarizeBestSpeedUpAndFiveFastest) {
  std::string text = JobDetails(FinishedJob());
  EXPECT_THAT(text, HasSubstr("1 ms  B=2"));
  EXPECT_THAT(text, HasSubstr("3.00x faster"));
  EXPECT_THAT(text, HasSubstr("COMPILE_ERROR 1, OK 3"));
  EXPECT_THAT(text, HasSubstr("B=4"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("B=5")));  // only five
}

TEST(TunectlFormatTest, JobJsonIsStable) {
  Job job;
  job.id = "j";
  job.state = JobState::kQueued;
  job.outcomes = {{"OK", 1}};
  EXPECT_EQ(JobJson(job),
            "{\n"
            "  \"id\": \"j\",\n"
            "  \"kernel\": \"\",\n"
            "  \"shape\": \"\",\n"
            "  \"state\": \"QUEUED\",\n"
            "  \"reason\": \"\",\n"
            "  \"strategy\": \"\",\n"
            "  \"owner\": \"\",\n"
            "  \"trials_total\": 0,\n"
            "  \"trials_done\": 0,\n"
            "  \"outcomes\": {\n"
            "    \"OK\": 1\n"
            "  },\n"
            "  \"targets\": [],\n"
            "  \"top_trials\": [],\n"
            "  \"created_unix_ms\": 0,\n"
            "  \"updated_unix_ms\": 0,\n"
            "  \"stop_reason\": \"\",\n"
            "  \"trials_budget\": 0,\n"
            "  \"time_budget_seconds\": 0,\n"
            "  \"plateau_batches\": 0,\n"
            "  \"started_unix_ms\": 0,\n"
            "  \"sweep_id\": \"\"\n"
            "}\n");
}

TEST(TunectlFormatTest, StatusShowsTheStrategyBudgetStopRulesAndWhyItStopped) {
  Job job = FinishedJob();
  job.strategy = "model";
  job.trials_budget = 64;
  job.time_budget_seconds = 600;
  job.plateau_batches = 5;
  job.stop_reason = "time_budget";
  const std::string text = JobDetails(job);
  EXPECT_THAT(text, HasSubstr("model, budget 64 trials; time budget 600 s, plateau 5 batches"));
  EXPECT_THAT(text, HasSubstr("stopped   time budget"));
  EXPECT_THAT(JobsTable({job}, absl::FromUnixSeconds(0), /*wide=*/true),
              HasSubstr("time budget"));
  EXPECT_THAT(JobJson(job), HasSubstr("\"stop_reason\": \"time_budget\""));
}

TEST(TunectlFormatTest, StatusSaysWhatTheRetuneDidToTheServedBest) {
  Job job = FinishedJob();
  EXPECT_THAT(JobDetails(job), ::testing::Not(HasSubstr("outcome")));
  JobTarget& target = job.targets[0];
  target.best_seconds = 0.0084;
  target.retune = "regressed";
  target.served_job_id = "j-0";
  target.served_seconds = 0.005;
  target.previous_job_id = "j-0";
  target.previous_seconds = 0.005;
  EXPECT_THAT(JobDetails(job), HasSubstr("outcome  REGRESSED: its best 8.4 ms is not faster "
                                         "than 5 ms of job j-0, which is still served"));
  EXPECT_THAT(JobJson(job), HasSubstr("\"outcome\": \"regressed\""));

  target.retune = "forced";
  target.served_job_id = job.id;
  target.replace_reason = "new toolkit";
  EXPECT_THAT(JobDetails(job),
              HasSubstr("FORCED: served instead of 5 ms of job j-0 (new toolkit)"));
  target.retune = "replaced";
  EXPECT_EQ(RetuneText(target), "REPLACED: faster than 5 ms of job j-0");
  target.retune = "confirmed";
  target.served_seconds = 0.0051;
  EXPECT_EQ(RetuneText(target),
            "CONFIRMED: re-measured the served config, tied with the job's fastest: 5.1 ms now "
            "(was 5 ms of job j-0)");
}

TEST(TunectlFormatTest, JobJsonKeepsDecimalsAndSurvivesInvalidUtf8) {
  Job job;
  job.id = "j1";
  job.kernel = std::string("bad\xff\xfename");  // not UTF-8
  JobTarget target;
  target.best_seconds = 0.25;
  target.default_seconds = 1.5;
  job.targets.push_back(target);
  const std::string text = JobJson(job);
  nlohmann::json parsed = nlohmann::json::parse(text);  // valid JSON
  EXPECT_EQ(parsed["targets"][0]["best_seconds"].get<double>(), 0.25);
  EXPECT_EQ(parsed["targets"][0]["default_seconds"].get<double>(), 1.5);
  EXPECT_EQ(parsed["kernel"].get<std::string>(), "bad\xef\xbf\xbd\xef\xbf\xbdname");
}

TEST(TunectlFormatTest, PrintableEscapesControlsAndInvalidUtf8) {
  EXPECT_EQ(Printable("matmul BLOCK_M=64"), "matmul BLOCK_M=64");
  EXPECT_EQ(Printable("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(Printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(Printable(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(Printable("del\x7f"), "del\\x7f");
  EXPECT_EQ(Printable("csi\xc2\x9b" "31m"), "csi\\u009b31m");  // C1 control
  EXPECT_EQ(Printable("raw\x9b" "31m"), "raw\\x9b31m");     // stray byte
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");             // overlong '/'
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // surrogate
  EXPECT_EQ(Printable("cut \xe2\x82"), "cut \\xe2\\x82");
  EXPECT_EQ(Printable("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"),
            "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80");  // kept
}

TEST(TunectlFormatTest, TablesAndDetailsEscapeServerText) {
  Job job = FinishedJob();
  job.kernel = "\x1b[31mred";
  job.reason = "two\nlines";
  job.targets[0].device_model = "gpu\x1b[0m";
  const std::string details = JobDetails(job);
  EXPECT_EQ(details.find('\x1b'), std::string::npos) << details;
  EXPECT_THAT(details, HasSubstr("\\x1b[31mred"));
  EXPECT_THAT(details, HasSubstr("two\\nlines"));
  EXPECT_THAT(details, HasSubstr("target gpu\\x1b[0m"));
  const std::string table = JobsTable({job}, absl::Now());
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
}

TEST(TunectlFormatTest, BestConfigJsonListsValues) {
  BestConfig best;
  best.source = BestConfig::Source::kExact;
  best.values = {{"A", 1}};
  EXPECT_THAT(BestConfigJson(best),
              HasSubstr("\"values\": {\n    \"A\": 1\n  }"));
  EXPECT_THAT(BestConfigJson(best), HasSubstr("\"source\": \"EXACT\""));
}

TEST(TunectlFormatTest, BestConfigSaysHowSureItIs) {
  BestConfig best;
  best.source = BestConfig::Source::kExact;
  best.config = "B=2";
  best.median_seconds = 1.004e-3;
  EXPECT_THAT(BestConfigDetails(best), ::testing::Not(HasSubstr("tie set")));
  best.tie_set = {{"B=1", 1.000e-3, 0}, {"B=2", 1.004e-3, 0.004}, {"B=7", 1.006e-3, 0.006}};
  best.configs_in_round = 5;
  best.rounds = 4;
  best.rounds_cv = 0.0031;
  best.measurements = 3;
  best.devices = 2;
  const std::string details = BestConfigDetails(best);
  EXPECT_THAT(details, HasSubstr("tie set   3 configs within 0.60% of the fastest (of 5 in its round)"));
  EXPECT_THAT(details, HasSubstr("B=1  1 ms (+0.00%)"));
  EXPECT_THAT(details, HasSubstr("tied    B=7  1.01 ms (+0.60%)"));
  EXPECT_THAT(details, HasSubstr("CV 0.31% over 4 finalist rounds"));
  EXPECT_THAT(details, HasSubstr("3 time(s) on 2 device(s)"));
  const std::string json = BestConfigJson(best);
  EXPECT_THAT(json, HasSubstr("\"gap\": 0.006"));
  EXPECT_THAT(json, HasSubstr("\"devices\": 2"));
  best.tie_set.resize(1);
  EXPECT_THAT(BestConfigDetails(best),
              HasSubstr("none: ahead of the other 4 config(s) of its round beyond the noise"));
  best.configs_in_round = 1;  // a verification round re-measures the candidate alone
  EXPECT_THAT(BestConfigDetails(best), HasSubstr("none: its round measured it alone"));
}

TEST(TunectlFormatTest, BestConfigShowsItsCalibration) {
  BestConfig best;
  best.source = BestConfig::Source::kExact;
  best.config = "B=2";
  best.median_seconds = 2.8e-4;
  EXPECT_THAT(BestConfigDetails(best), ::testing::Not(HasSubstr("calibrated")));
  best.calibration_seconds = 5.0e-4;  // a million cycles at 2000 MHz
  EXPECT_THAT(BestConfigDetails(best),
              HasSubstr("0.5600 (the median over its calibration, 500 us)"));
  EXPECT_THAT(BestConfigJson(best), HasSubstr("\"calibration_seconds\": 0.0005"));
}

TEST(TunectlFormatTest, WorkersTableGroupsDevicesByModel) {
  WorkerInfo worker;
  worker.id = "w";
  worker.devices = {{"0", "H100", "CUDA"}, {"1", "H100", "CUDA"}};
  EXPECT_THAT(WorkersTable({worker}, absl::Now()), HasSubstr("2x H100"));
}

TEST(TunectlExitCodeTest, StatusCodesMapToDocumentedExits) {
  EXPECT_EQ(ExitCodeForStatus(absl::OkStatus()), kExitOk);
  EXPECT_EQ(ExitCodeForStatus(absl::NotFoundError("")), kExitNotFound);
  EXPECT_EQ(ExitCodeForStatus(absl::UnavailableError("")), kExitUnavailable);
  EXPECT_EQ(ExitCodeForStatus(absl::DeadlineExceededError("")),
            kExitUnavailable);
  EXPECT_EQ(ExitCodeForStatus(absl::PermissionDeniedError("")), kExitAuth);
  EXPECT_EQ(ExitCodeForStatus(absl::CancelledError("")), kExitInterrupted);
  EXPECT_EQ(ExitCodeForStatus(absl::InvalidArgumentError("")), kExitFailure);
}

TEST(TunectlExitCodeTest, JobsWithFailedTrialsExitThree) {
  Job job = FinishedJob();
  EXPECT_EQ(ExitCodeForJob(job), kExitJobFailed);
  job.outcomes.erase("COMPILE_ERROR");
  EXPECT_EQ(ExitCodeForJob(job), kExitOk);
  job.state = JobState::kFailed;
  EXPECT_EQ(ExitCodeForJob(job), kExitJobFailed);
}

}  // namespace
}  // namespace tunefleet::tunectl
