#include "worker/child_protocol.h"

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

TEST(MeasurementTest, StopRuleHonoursMinMaxAndBudget) {
  v1::MeasureOptions options = WithMeasureDefaults({});
  EXPECT_DOUBLE_EQ(options.budget_seconds(), 0.2);
  EXPECT_EQ(options.min_samples(), 5);
  EXPECT_TRUE(WantMoreSamples(options, 4, /*elapsed_seconds=*/10));  // below min
  EXPECT_TRUE(WantMoreSamples(options, 10, 0.1));
  EXPECT_FALSE(WantMoreSamples(options, 10, 0.3));   // budget spent
  EXPECT_FALSE(WantMoreSamples(options, 1000, 0));   // max reached
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

}  // namespace
}  // namespace tunefleet::worker
