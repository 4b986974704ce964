#include "server/fleet_names.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;

v1::JobSpec SpecNamed(const std::string& name) {
  v1::JobSpec spec;
  spec.mutable_kernel()->set_name(name);
  spec.mutable_kernel()->set_default_config("A=1");
  return spec;
}

BestRecord RowOn(const std::string& model, const std::string& key) {
  BestRecord row;
  row.tuning_key = key;
  row.kernel_name = "matmul";
  row.shape = "M=1";
  row.device_model = model;
  row.toolkit = "g++";
  row.config = "A=1";
  row.median_seconds = 1;
  return row;
}

WorkerRegistration Cpu(const std::string& model) {
  v1::Device device;
  device.set_id("cpu0");
  device.set_model(model);
  device.set_backend(v1::BACKEND_CPU);
  return WorkerRegistration{"host", {device}, "g++", "host", ""};
}

class FleetNamesTest : public ::testing::Test {
 protected:
  BestConfigIndex index_;
  WorkerRegistry workers_{absl::Seconds(3), [] { return absl::Now(); }};
  FleetNames names_{&index_, &workers_};
};

TEST_F(FleetNamesTest, AnEmptyNameFiltersNothingAndIsAlwaysKnown) {
  EXPECT_OK(names_.CheckKernel("kernel_name", ""));
  EXPECT_OK(names_.CheckDeviceModel("device_model", ""));
}

TEST_F(FleetNamesTest, NothingKnownYetSaysSo) {
  EXPECT_THAT(names_.CheckKernel("kernel_name", "matmul"),
              StatusIsWith(absl::StatusCode::kNotFound,
                           "kernel_name \"matmul\" names no kernel this coordinator knows; it "
                           "knows none yet: no kernel was submitted or imported"));
  EXPECT_THAT(names_.CheckDeviceModel("device_model", "H100"),
              StatusIsWith(absl::StatusCode::kNotFound, "it knows none yet"));
}

TEST_F(FleetNamesTest, KernelsAreKnownOnceTheirSpecIs) {
  index_.PutBest(RowOn("m", "k1"));  // a row alone does not make its kernel known
  EXPECT_THAT(names_.CheckKernel("kernel_name", "matmul"), StatusIs(absl::StatusCode::kNotFound));
  index_.PutKernel(SpecNamed("matmul"));
  index_.PutKernel(SpecNamed("softmax"));
  EXPECT_OK(names_.CheckKernel("kernel_name", "matmul"));
  EXPECT_THAT(names_.CheckKernel("kernel", "matmull"),
              StatusIsWith(absl::StatusCode::kNotFound,
                           "kernel \"matmull\" names no kernel this coordinator knows; known "
                           "kernels: \"matmul\", \"softmax\""));
}

TEST_F(FleetNamesTest, ModelsAreKnownFromRowsAndFromWorkersThatRegistered) {
  index_.PutBest(RowOn("row-model", "k1"));
  ASSERT_TRUE(workers_.Register(Cpu("worker-model")).ok());
  EXPECT_OK(names_.CheckDeviceModel("device_model", "row-model"));
  EXPECT_OK(names_.CheckDeviceModel("device_model", "worker-model"));
  EXPECT_THAT(names_.CheckDeviceModel("device_model", "row-modle"),
              StatusIsWith(absl::StatusCode::kNotFound,
                           "known device models: \"row-model\", \"worker-model\""));
  index_.RemoveBest("k1");  // its last row gone, the model is not known by it
  EXPECT_THAT(names_.CheckDeviceModel("device_model", "row-model"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(FleetNamesTest, ALongListIsCutToTheNearestNames) {
  for (int i = 0; i < 20; ++i)
    index_.PutBest(RowOn("model-" + std::to_string(i), std::to_string(i)));
  ASSERT_TRUE(workers_.Register(Cpu("NVIDIA H100 80GB HBM3 sm_90")).ok());
  absl::Status status = names_.CheckDeviceModel("device_model", "H100");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(status.message(),
              HasSubstr("; the nearest of its 21 known device models: \"NVIDIA H100 80GB HBM3 "
                        "sm_90\", "));
}

}  // namespace
}  // namespace tunefleet::server
