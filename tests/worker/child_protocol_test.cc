#include "worker/child_protocol.h"

#include <cmath>
#include <fcntl.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "worker/measurement.h"

namespace tunefleet::worker {
namespace {

using ::tunefleet::testing::StatusIs;

class Pipe {
 public:
  Pipe() { EXPECT_EQ(pipe2(fds_, O_CLOEXEC), 0); }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  int read_fd() const { return fds_[0]; }
  int write_fd() const { return fds_[1]; }
  void CloseRead() {
    if (fds_[0] >= 0) close(fds_[0]);
    fds_[0] = -1;
  }
  void CloseWrite() {
    if (fds_[1] >= 0) close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(ChildProtocolTest, RoundTripsSeveralMessages) {
  Pipe pipe;
  v1::ChildRequest first, second;
  first.mutable_run()->set_index(7);
  first.mutable_run()->set_artifact(std::string(300, 'x'));  // multi-byte length
  second.mutable_prepare()->set_seed(42);
  ASSERT_OK(WriteMessage(pipe.write_fd(), first));
  ASSERT_OK(WriteMessage(pipe.write_fd(), second));
  MessageReader reader(pipe.read_fd());
  v1::ChildRequest got;
  ASSERT_OK(reader.Read(&got));
  EXPECT_EQ(got.run().index(), 7);
  EXPECT_EQ(got.run().artifact().size(), 300u);
  ASSERT_OK(reader.Read(&got));
  EXPECT_EQ(got.prepare().seed(), 42u);
}

TEST(ChildProtocolTest, TimesOutWithoutAMessage) {
  Pipe pipe;
  MessageReader reader(pipe.read_fd());
  v1::ChildRequest got;
  EXPECT_THAT(reader.Read(&got, absl::Now() + absl::Milliseconds(20)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(ChildProtocolTest, ReportsEofAsUnavailable) {
  Pipe pipe;
  pipe.CloseWrite();
  MessageReader reader(pipe.read_fd());
  v1::ChildRequest got;
  EXPECT_THAT(reader.Read(&got), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(ChildProtocolTest, WritingToAClosedPipeIsUnavailableNotSigpipe) {
  Pipe pipe;
  pipe.CloseRead();
  v1::ChildRequest request;
  request.mutable_run()->set_index(1);
  EXPECT_THAT(WriteMessage(pipe.write_fd(), request), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(ChildProtocolTest, RefusesOversizedFrames) {
  Pipe pipe;
  const unsigned char huge[] = {0xff, 0xff, 0xff, 0xff, 0x7f};  // ~34 GB
  ASSERT_EQ(write(pipe.write_fd(), huge, sizeof(huge)), 5);
  MessageReader reader(pipe.read_fd());
  v1::ChildRequest got;
  EXPECT_THAT(reader.Read(&got), StatusIs(absl::StatusCode::kDataLoss));
}

TEST(MeasurementTest, SummarizesWithInterpolatedQuantiles) {
  v1::Measurement m = Summarize({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(m.median_seconds(), 3);
  EXPECT_DOUBLE_EQ(m.p20_seconds(), 1.8);
  EXPECT_DOUBLE_EQ(m.p80_seconds(), 4.2);
  EXPECT_EQ(m.samples(), 5);
  EXPECT_DOUBLE_EQ(Summarize({2}).median_seconds(), 2);
}

// `n` samples, sorted, far too spread for the precision rule to stop them.
std::vector<double> Noisy(int n) {
  std::vector<double> samples;
  for (int i = 0; i < n; ++i) samples.push_back(i < n / 2 ? 1.0 : 2.0);
  return samples;
}

TEST(MeasurementTest, StopRuleHonoursMinMaxAndBudget) {
  v1::MeasureOptions options = WithMeasureDefaults({});
  EXPECT_DOUBLE_EQ(options.budget_seconds(), 0.2);
  EXPECT_EQ(options.min_samples(), 5);
  EXPECT_DOUBLE_EQ(options.precision(), 0.005);
  EXPECT_TRUE(WantMoreSamples(options, Noisy(4), /*elapsed_seconds=*/10));  // below min
  EXPECT_TRUE(WantMoreSamples(options, Noisy(10), 0.1));
  EXPECT_FALSE(WantMoreSamples(options, Noisy(10), 0.3));   // budget spent
  EXPECT_FALSE(WantMoreSamples(options, Noisy(1000), 0));   // max reached
  // A steady kernel stops as soon as its median is known to +/- 0.5%.
  EXPECT_FALSE(WantMoreSamples(options, {1.0, 1.001, 1.002, 1.003, 1.004}, 0));
}

TEST(MeasurementTest, SlowKernelsTakeFewerSamplesToMeetTheDeadline) {
  v1::MeasureOptions options = WithMeasureDefaults({});
  options.set_run_seconds_limit(10);
  // Fast: the protocol fits, nothing changes.
  EXPECT_EQ(FitToDeadline(options, 0.001).min_samples(), 5);
  EXPECT_DOUBLE_EQ(FitToDeadline(options, 0.001).warmup_seconds(), 0.02);
  // 1.4 s a call: 1 + 1 + 5 calls would take ~10 s; 3 samples fit in 5 s.
  v1::MeasureOptions slow = FitToDeadline(options, 1.4);
  EXPECT_DOUBLE_EQ(slow.warmup_seconds(), 0);
  EXPECT_EQ(slow.min_samples(), 3);
  EXPECT_EQ(slow.max_samples(), 3);
  // Slower than the whole room: still one sample.
  EXPECT_EQ(FitToDeadline(options, 7).min_samples(), 1);
  options.set_run_seconds_limit(0);  // no deadline known
  EXPECT_EQ(FitToDeadline(options, 100).min_samples(), 5);
}

v1::Measurement Round(double median, double p20, double p80, int64_t samples,
                      double clock_mhz = 0) {
  v1::Measurement m;
  m.set_median_seconds(median);
  m.set_p20_seconds(p20);
  m.set_p80_seconds(p80);
  m.set_samples(samples);
  m.set_clock_mhz(clock_mhz);
  return m;
}

TEST(MeasurementTest, CombineRoundsTakesMediansOfTheRoundsAndSumsSamples) {
  // Each statistic is the median of its own column, not of one round: the
  // rounds' order does not matter.
  v1::Measurement m = CombineRounds({Round(3.0, 2.5, 4.0, 10, 1800),
                                     Round(1.0, 0.5, 9.0, 7, 1900),
                                     Round(2.0, 1.5, 2.5, 5, 2000)});
  EXPECT_DOUBLE_EQ(m.median_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(m.p20_seconds(), 1.5);
  EXPECT_DOUBLE_EQ(m.p80_seconds(), 4.0);
  EXPECT_EQ(m.samples(), 22);
  EXPECT_DOUBLE_EQ(m.clock_mhz(), 1900);
}

TEST(MeasurementTest, LowClockSamplesAreUnderTheFractionOfTheRecentMaximum) {
  const v1::MeasureOptions options = WithMeasureDefaults({});
  EXPECT_DOUBLE_EQ(options.low_clock_fraction(), 0.9);
  // 0.9 x 1980 = 1782: 1700 and 1500 are low; 0 is unknown, never low.
  EXPECT_EQ(LowClockSamples(options, {1980, 1700, 1800, 0, 1500}, 1980),
            (std::vector<size_t>{1, 4}));
  EXPECT_TRUE(LowClockSamples(options, {1980, 1700}, 0).empty());  // no maximum known
  v1::MeasureOptions off = options;
  off.set_low_clock_fraction(-1);
  EXPECT_TRUE(LowClockSamples(off, {1980, 1000}, 1980).empty());
}

TEST(MeasurementTest, CoefficientOfVariationIsTheSampleStdDevOverTheMean) {
  EXPECT_EQ(CoefficientOfVariation({}), 0);
  EXPECT_EQ(CoefficientOfVariation({2.0}), 0);
  EXPECT_EQ(CoefficientOfVariation({2.0, 2.0, 2.0}), 0);
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({1.0, 3.0}), std::sqrt(2.0) / 2.0);
}

TEST(MeasurementTest, UnseparatedKeepsTheWinnerAndWhoIsWithinTwiceTheCombinedStandardError) {
  // Winner 1.00 +- 0.01; B 1.05 (far), C 1.005 (within the noise), D failed.
  const std::vector<double> a = {0.99, 1.00, 1.01};
  const std::vector<double> b = {1.04, 1.05, 1.06};
  const std::vector<double> c = {0.995, 1.005, 1.015};
  EXPECT_EQ(Unseparated({b, a, c, {}}), (std::vector<size_t>{1, 2}));
  EXPECT_TRUE(Unseparated({a, b}).empty());                     // separated
  EXPECT_TRUE(Unseparated({a, {}}).empty());                    // one left
  EXPECT_TRUE(Unseparated({}).empty());
  EXPECT_EQ(Unseparated({{1.0}, {2.0}}), (std::vector<size_t>{0, 1}));  // one round: noise unknown
  // More rounds shrink the standard error: the same gap separates.
  const std::vector<double> a9 = {0.99, 1.00, 1.01, 0.99, 1.00, 1.01, 0.99, 1.00, 1.01};
  const std::vector<double> c9 = {1.005, 1.015, 1.025, 1.005, 1.015, 1.025, 1.005, 1.015, 1.025};
  EXPECT_EQ(Unseparated({a, {1.005, 1.015, 1.025}}), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(Unseparated({a9, c9}).empty());
}

TEST(MeasurementTest, CombineRoundsOfAnEvenCountAveragesTheMiddleTwo) {
  v1::Measurement m = CombineRounds({Round(4, 3, 5, 5), Round(1, 0.5, 2, 5),
                                     Round(2, 1, 3, 6), Round(10, 9, 11, 5)});
  EXPECT_DOUBLE_EQ(m.median_seconds(), 3);  // (2 + 4) / 2
  EXPECT_DOUBLE_EQ(m.p20_seconds(), 2);     // (1 + 3) / 2
  EXPECT_DOUBLE_EQ(m.p80_seconds(), 4);     // (3 + 5) / 2
  EXPECT_EQ(m.samples(), 21);
  EXPECT_DOUBLE_EQ(m.clock_mhz(), 0);  // unknown (CPU) stays unknown
}

// Calibration (docs/measurement.md): a drifting device. The config takes
// 1.0x its reference in every round while the device slows by a third and
// back; the combined calibrated time stays 1.0x whatever the raw medians do.
TEST(MeasurementTest, CombineRoundsCalibratesEachRoundByItsOwnCalibration) {
  auto calibrated = [](double median, double calibration) {
    v1::Measurement m = Round(median, median, median, 5);
    m.set_calibration_seconds(calibration);
    return m;
  };
  v1::Measurement m = CombineRounds(
      {calibrated(1.0, 1.0), calibrated(1.5, 1.5), calibrated(1.2, 1.2)});
  EXPECT_DOUBLE_EQ(m.median_seconds(), 1.2);
  EXPECT_DOUBLE_EQ(m.median_seconds() / m.calibration_seconds(), 1.0);
  // The calibrated median is the median of the rounds' ratios, not the
  // ratio of the medians: 0.5x, 2x, 1x -> 1x.
  m = CombineRounds({calibrated(1.0, 2.0), calibrated(2.0, 1.0), calibrated(3.0, 3.0)});
  EXPECT_DOUBLE_EQ(m.median_seconds() / m.calibration_seconds(), 1.0);
  // One uncalibrated round: the combination is uncalibrated.
  m = CombineRounds({calibrated(1.0, 2.0), Round(1.0, 1.0, 1.0, 5)});
  EXPECT_EQ(m.calibration_seconds(), 0);
}

TEST(MeasurementTest, TheCalibrationIsDueFirstThenOnceTheIntervalHasPassed) {
  using Clock = Calibration::Clock;
  const v1::MeasureOptions options = WithMeasureDefaults({});
  EXPECT_DOUBLE_EQ(options.calibration_interval_seconds(), 0.5);
  const Clock::time_point t0 = Clock::now();
  Calibration calibration;
  EXPECT_EQ(calibration.seconds(), 0);
  EXPECT_TRUE(calibration.Due(options, t0));  // never timed
  calibration.Record(2e-4, t0);
  EXPECT_EQ(calibration.seconds(), 2e-4);
  EXPECT_FALSE(calibration.Due(options, t0 + std::chrono::milliseconds(400)));
  EXPECT_TRUE(calibration.Due(options, t0 + std::chrono::milliseconds(600)));
  v1::MeasureOptions off = options;
  off.set_calibration_interval_seconds(-1);
  EXPECT_FALSE(Calibration().Due(off, t0));  // calibration turned off
}

TEST(MeasurementTest, TheReferenceIsTimedWithAQuarterOfTheBudgetToAKnownMedianAndNeverCut) {
  v1::MeasureOptions options;
  options.set_budget_seconds(0.1);
  options.set_precision(-1);  // the finalists round samples to the budget
  const v1::MeasureOptions calibration = CalibrationOptions(options);
  EXPECT_DOUBLE_EQ(calibration.budget_seconds(), 0.025);
  EXPECT_DOUBLE_EQ(calibration.precision(), 0.005);
  EXPECT_LT(calibration.cut_factor(), 0);
  EXPECT_EQ(calibration.min_samples(), 5);
}

TEST(MeasurementTest, CombineRoundsOfOneRoundIsThatRound) {
  v1::Measurement only = Round(1e-5, 9e-6, 2e-5, 42, 1410);
  v1::Measurement m = CombineRounds({only});
  EXPECT_DOUBLE_EQ(m.median_seconds(), only.median_seconds());
  EXPECT_DOUBLE_EQ(m.p20_seconds(), only.p20_seconds());
  EXPECT_DOUBLE_EQ(m.p80_seconds(), only.p80_seconds());
  EXPECT_EQ(m.samples(), 42);
  EXPECT_DOUBLE_EQ(m.clock_mhz(), 1410);
}

TEST(MeasurementTest, PerRoundOptionsSplitTheBudgetButNotTheMinimum) {
  v1::MeasureOptions options;
  options.set_budget_seconds(0.3);
  options.set_min_samples(4);
  v1::MeasureOptions round = PerRoundOptions(options, 3);
  EXPECT_DOUBLE_EQ(round.budget_seconds(), 0.1);
  EXPECT_EQ(round.min_samples(), 4);       // every round takes at least this
  EXPECT_EQ(round.max_samples(), 1000);    // defaults filled in, per round
  EXPECT_DOUBLE_EQ(round.warmup_seconds(), 0.02);
  // Defaults first: the default 0.2 s budget is what gets split.
  EXPECT_DOUBLE_EQ(PerRoundOptions({}, 4).budget_seconds(), 0.05);
  EXPECT_DOUBLE_EQ(PerRoundOptions(options, 0).budget_seconds(), 0.3);  // 0 counts as 1
  // A round whose budget is spent still takes min_samples; a round samples
  // its whole budget, however steady the kernel.
  EXPECT_TRUE(WantMoreSamples(round, Noisy(3), /*elapsed_seconds=*/1.0));
  EXPECT_FALSE(WantMoreSamples(round, Noisy(4), 0.11));
  EXPECT_LT(round.precision(), 0);
  EXPECT_TRUE(WantMoreSamples(round, {1, 1, 1, 1, 1}, 0.05));
}

}  // namespace
}  // namespace tunefleet::worker
