#include <string>
#include <vector>

#include "client/tunectl/trials.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunefleet::tunectl {
namespace {

using ::testing::HasSubstr;

Trial MakeTrial(const std::string& config, const std::string& status, const std::string& error) {
  Trial trial;
  trial.config = config;
  trial.status = status;
  trial.error = error;
  return trial;
}

TEST(CsvFieldTest, QuotesOnlyFieldsThatNeedItAndDoublesQuotes) {
  EXPECT_EQ(CsvField("BLOCK=64"), "BLOCK=64");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("line\nnext"), "\"line\nnext\"");
}

TEST(ReasonSummaryTest, JoinsTheFirstLineWithTheFirstDiagnostic) {
  EXPECT_EQ(ReasonSummary("", 100), "");
  EXPECT_EQ(ReasonSummary("killed by signal 11 (SIGSEGV)", 100),
            "killed by signal 11 (SIGSEGV)");
  EXPECT_EQ(ReasonSummary("compiler exit code 1\nIn file x:\nx.cc:3:2: error: nope\nmore", 100),
            "compiler exit code 1: x.cc:3:2: error: nope...");
  EXPECT_EQ(ReasonSummary(std::string(30, 'x'), 10), "xxxxxxxxxx...");
}

TEST(TrialsFormatTest, CsvHasAHeaderAndTheFullErrorLast) {
  Trial ok = MakeTrial("B=1", "OK", "");
  ok.median_seconds = 0.5;
  Trial failed = MakeTrial("B=2", "COMPILE_ERROR", "exit 1\nx.cc: error, bad");
  std::string csv = TrialsCsv({ok, failed});
  EXPECT_THAT(csv, ::testing::StartsWith("config,device_model,status,"));
  EXPECT_THAT(csv, HasSubstr("B=1,,OK,0.5,"));
  EXPECT_THAT(csv, HasSubstr(",\"exit 1\nx.cc: error, bad\"\r\n"));
}

TEST(TrialsFormatTest, WideTableAddsTheSpreadProvenanceAndKey) {
  Trial ok = MakeTrial("B=1", "OK", "");
  ok.principal = "host:gpu-7";
  ok.tuning_key = "k-123";
  ok.clock_mhz = 1980;
  const std::string wide = TrialsTable({ok}, /*wide=*/true);
  EXPECT_THAT(wide, HasSubstr("PRINCIPAL"));
  EXPECT_THAT(wide, HasSubstr("host:gpu-7"));
  EXPECT_THAT(wide, HasSubstr("1980 MHz"));
  EXPECT_THAT(wide, HasSubstr("k-123"));
  EXPECT_THAT(TrialsTable({ok}), ::testing::Not(HasSubstr("PRINCIPAL")));
}

TEST(TrialsFormatTest, WideTableAndJsonSayHowRepeatableAMeasurementWas) {
  Trial finalist = MakeTrial("B=1", "OK", "");
  finalist.rounds = 5;
  finalist.rounds_cv = 0.0041;
  finalist.retaken_samples = 3;
  finalist.low_clock_samples = 1;
  finalist.median_seconds = 2.8e-4;
  finalist.calibration_seconds = 5.0e-4;
  Trial cut = MakeTrial("B=2", "OK", "");
  cut.cut_early = true;
  const std::string wide = TrialsTable({finalist, cut, MakeTrial("B=3", "OK", "")}, true);
  EXPECT_THAT(wide, HasSubstr("NOTES"));
  EXPECT_THAT(wide, HasSubstr("cal 0.5600, 5 rounds CV 0.41%, 3 retaken, 1 low clock"));
  EXPECT_THAT(wide, HasSubstr("cut early"));
  const std::string json = TrialsJson("j-1", {finalist});
  EXPECT_THAT(json, HasSubstr("\"rounds\": 5"));
  EXPECT_THAT(json, HasSubstr("\"retaken_samples\": 3"));
  EXPECT_THAT(json, HasSubstr("\"low_clock_samples\": 1"));
  EXPECT_THAT(json, HasSubstr("\"calibration_seconds\": 0.0005"));
  EXPECT_THAT(json, HasSubstr("\"cut_early\": false"));
}

TEST(TrialsFormatTest, TableShowsTheReasonAndJsonTheWholeError) {
  Trial failed = MakeTrial("B=2", "TIMEOUT", "deadline of 2 s passed");
  EXPECT_THAT(TrialsTable({failed}), HasSubstr("deadline of 2 s passed"));
  EXPECT_THAT(TrialsJson("j-1", {failed}), HasSubstr("\"error\": \"deadline of 2 s passed\""));
}

}  // namespace
}  // namespace tunefleet::tunectl
