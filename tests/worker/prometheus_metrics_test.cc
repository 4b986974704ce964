// The worker's exporter on 127.0.0.1:0, read back over HTTP: what each
// report becomes, per device.
#include "worker/prometheus_metrics.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/scrape.h"
#include "tests/support/test_support.h"

namespace tunefleet::worker {
namespace {

using ::tunefleet::testing::HttpGet;
using ::tunefleet::testing::ParseSamples;

v1::Device Device(const std::string& id, v1::Backend backend) {
  v1::Device device;
  device.set_id(id);
  device.set_model("model");
  device.set_backend(backend);
  return device;
}

v1::TrialResult Result(v1::TrialStatus status, double compile_seconds = 0,
                       double clock_mhz = 0) {
  v1::TrialResult result;
  result.set_status(status);
  result.set_compile_seconds(compile_seconds);
  result.mutable_measurement()->set_clock_mhz(clock_mhz);
  return result;
}

class PrometheusWorkerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto metrics = PrometheusWorkerMetrics::Start(
        "127.0.0.1:0", "9.9.9", "cuda",
        {Device("GPU-a", v1::BACKEND_CUDA), Device("cpu0", v1::BACKEND_CPU)});
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = *std::move(metrics);
  }

  std::map<std::string, double> Scrape() {
    absl::StatusOr<std::string> text =
        HttpGet(absl::StrCat("127.0.0.1:", metrics_->port()), "/metrics");
    EXPECT_TRUE(text.ok()) << text.status();
    return ParseSamples(text.ok() ? *text : "");
  }

  std::unique_ptr<PrometheusWorkerMetrics> metrics_;
};

TEST_F(PrometheusWorkerMetricsTest, CountsEachDeviceApartAndDropsUnknownDevices) {
  metrics_->TrialFinished("GPU-a", Result(v1::TRIAL_STATUS_OK, /*compile_seconds=*/0.5));
  metrics_->TrialFinished("GPU-a", Result(v1::TRIAL_STATUS_WRONG_RESULT, 0.25));
  metrics_->TrialFinished("cpu0", Result(v1::TRIAL_STATUS_OK));
  metrics_->TrialFinished("GPU-unknown", Result(v1::TRIAL_STATUS_OK));
  std::map<std::string, double> samples = Scrape();
  EXPECT_EQ(samples["tunefleet_worker_trials_total{device=\"GPU-a\",outcome=\"ok\"}"], 1);
  EXPECT_EQ(samples["tunefleet_worker_trials_total{device=\"GPU-a\",outcome=\"wrong_result\"}"], 1);
  EXPECT_EQ(samples["tunefleet_worker_trials_total{device=\"cpu0\",outcome=\"ok\"}"], 1);
  EXPECT_EQ(samples["tunefleet_worker_compile_seconds_count{device=\"GPU-a\"}"], 2);
  EXPECT_EQ(samples["tunefleet_worker_compile_seconds_sum{device=\"GPU-a\"}"], 0.75);
  EXPECT_EQ(samples["tunefleet_worker_compile_seconds_count{device=\"cpu0\"}"], 0);
  EXPECT_FALSE(samples.contains("tunefleet_worker_trials_total{device=\"GPU-unknown\",outcome=\"ok\"}"));
  EXPECT_EQ(samples["tunefleet_worker_info{backend=\"cuda\",version=\"9.9.9\"}"], 1);
}

TEST_F(PrometheusWorkerMetricsTest, KillsCountAsRestartsAndClocksOnlyWhereKnown) {
  metrics_->Measured("GPU-a", Result(v1::TRIAL_STATUS_OK, 0, /*clock_mhz=*/1980),
                     absl::Milliseconds(250), {});
  metrics_->Measured("GPU-a", Result(v1::TRIAL_STATUS_CRASHED), absl::Milliseconds(10), {});
  metrics_->Measured("GPU-a", Result(v1::TRIAL_STATUS_TIMEOUT), absl::Seconds(2), {});
  metrics_->Measured("cpu0", Result(v1::TRIAL_STATUS_OK), absl::Milliseconds(5), {});
  std::map<std::string, double> samples = Scrape();
  EXPECT_EQ(samples["tunefleet_worker_measure_seconds_count{device=\"GPU-a\"}"], 3);
  EXPECT_EQ(samples["tunefleet_worker_child_restarts_total{device=\"GPU-a\",reason=\"crashed\"}"], 1);
  EXPECT_EQ(samples["tunefleet_worker_child_restarts_total{device=\"GPU-a\",reason=\"timeout\"}"], 1);
  EXPECT_EQ(samples["tunefleet_worker_child_restarts_total{device=\"cpu0\",reason=\"crashed\"}"], 0);
  EXPECT_EQ(samples["tunefleet_worker_sm_clock_mhz{device=\"GPU-a\"}"], 1980);
  EXPECT_FALSE(samples.contains("tunefleet_worker_sm_clock_mhz{device=\"cpu0\"}"));
}

TEST_F(PrometheusWorkerMetricsTest, PhasesAddUpAndTheRestIsOutsideTheChild) {
  v1::TrialPhases phases;
  phases.set_load_seconds(0.001);
  phases.set_check_seconds(0.004);
  phases.set_warmup_seconds(0.002);
  phases.set_sampling_seconds(0.018);
  metrics_->Measured("GPU-a", Result(v1::TRIAL_STATUS_OK), absl::Milliseconds(30), phases);
  metrics_->Measured("GPU-a", Result(v1::TRIAL_STATUS_OK), absl::Milliseconds(30), phases);
  // A child that keeps no phases adds nothing; nor does a wait shorter than
  // the child's own count (clocks of two processes) make `outside` negative.
  metrics_->Measured("GPU-a", Result(v1::TRIAL_STATUS_CRASHED), absl::Seconds(1), {});
  metrics_->Measured("cpu0", Result(v1::TRIAL_STATUS_OK), absl::Milliseconds(20), phases);
  std::map<std::string, double> samples = Scrape();
  auto phase = [&](const std::string& device, const std::string& name) {
    return samples[absl::StrCat("tunefleet_worker_trial_phase_seconds_total{device=\"", device,
                                "\",phase=\"", name, "\"}")];
  };
  EXPECT_DOUBLE_EQ(phase("GPU-a", "load"), 0.002);
  EXPECT_DOUBLE_EQ(phase("GPU-a", "check"), 0.008);
  EXPECT_DOUBLE_EQ(phase("GPU-a", "warmup"), 0.004);
  EXPECT_DOUBLE_EQ(phase("GPU-a", "sampling"), 0.036);
  EXPECT_NEAR(phase("GPU-a", "outside"), 0.010, 1e-12);
  EXPECT_DOUBLE_EQ(phase("cpu0", "sampling"), 0.018);
  EXPECT_DOUBLE_EQ(phase("cpu0", "outside"), 0);
}

TEST_F(PrometheusWorkerMetricsTest, ChildStartsAndLeaseWaitsAccumulate) {
  metrics_->ChildStarts("GPU-a", 1);
  metrics_->ChildStarts("GPU-a", 1);  // the same child: nothing new
  metrics_->ChildStarts("GPU-a", 3);
  metrics_->LeaseWaited("GPU-a", absl::Seconds(5), /*granted=*/false);
  metrics_->LeaseWaited("GPU-a", absl::Milliseconds(3), /*granted=*/true);
  std::map<std::string, double> samples = Scrape();
  EXPECT_EQ(samples["tunefleet_worker_child_starts_total{device=\"GPU-a\"}"], 3);
  EXPECT_EQ(samples["tunefleet_worker_lease_wait_seconds_count{device=\"GPU-a\"}"], 2);
  EXPECT_EQ(samples["tunefleet_worker_leases_total{device=\"GPU-a\"}"], 1);
  EXPECT_GT(samples["process_start_time_seconds"], 1.6e9);
}

TEST(PrometheusWorkerMetricsStartTest, ExportsHowTheWorkerSizedItsPools) {
  auto metrics = PrometheusWorkerMetrics::Start("127.0.0.1:0", "v", "python", {},
                                                WorkerPools{16, 12, 12});
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  absl::StatusOr<std::string> text =
      HttpGet(absl::StrCat("127.0.0.1:", (*metrics)->port()), "/metrics");
  ASSERT_TRUE(text.ok()) << text.status();
  std::map<std::string, double> samples = ParseSamples(*text);
  EXPECT_EQ(samples["tunefleet_worker_usable_cpus"], 16);
  EXPECT_EQ(samples["tunefleet_worker_compile_threads"], 12);
  EXPECT_EQ(samples["tunefleet_worker_compile_servers"], 12);
}

TEST(PrometheusWorkerMetricsStartTest, ATakenPortIsUnavailable) {
  auto first = PrometheusWorkerMetrics::Start("127.0.0.1:0", "v", "cpu", {});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = PrometheusWorkerMetrics::Start(
      absl::StrCat("127.0.0.1:", (*first)->port()), "v", "cpu", {});
  EXPECT_THAT(second, ::tunefleet::testing::StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace tunefleet::worker
