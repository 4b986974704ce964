#include "server/worker_registry.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::server {
namespace {

using ::tunefleet::testing::StatusIs;

WorkerRegistration Cpu(const std::string& model) {
  v1::Device device;
  device.set_id("cpu0");
  device.set_model(model);
  device.set_backend(v1::BACKEND_CPU);
  return WorkerRegistration{"host", {device}, "g++ 12", "host", ""};
}

class WorkerRegistryTest : public ::testing::Test {
 protected:
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  WorkerRegistry registry_{absl::Seconds(3), [this] { return now_; },
                           /*forget_after=*/absl::Seconds(30)};
};

TEST_F(WorkerRegistryTest, SilentWorkersDieThenAreForgotten) {
  const std::string quiet = *registry_.Register(Cpu("a"));
  const std::string chatty = *registry_.Register(Cpu("b"));
  now_ += absl::Seconds(4);
  registry_.Touch(chatty);
  EXPECT_FALSE(registry_.Alive(quiet));
  EXPECT_TRUE(registry_.Alive(chatty));
  EXPECT_EQ(registry_.CountAlive(), 1);
  // A call from a dead worker is a sign of life.
  absl::StatusOr<WorkerRegistry::ModelOf> model = registry_.TouchDevice(quiet, "cpu0");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->model, "a");
  EXPECT_TRUE(registry_.Alive(quiet));
  EXPECT_THAT(registry_.TouchDevice(quiet, "gpu7"), StatusIs(absl::StatusCode::kNotFound));
  now_ += absl::Seconds(4);
  registry_.Touch(chatty);
  ASSERT_EQ(registry_.LiveModels(v1::BACKEND_CPU).size(), 1u);
  EXPECT_EQ(registry_.List().size(), 2u);  // dead, still listed
  EXPECT_EQ(registry_.Prune(), 0);
  now_ += absl::Seconds(27);
  registry_.Touch(chatty);
  EXPECT_EQ(registry_.Prune(), 1);
  ASSERT_EQ(registry_.List().size(), 1u);
  EXPECT_EQ(registry_.List()[0].worker_id(), chatty);
  // A forgotten worker that calls again is told to register again.
  EXPECT_FALSE(registry_.Touch(quiet));
  EXPECT_THAT(registry_.TouchDevice(quiet, ""), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(WorkerRegistryTest, ModelsSeenStayKnownAfterTheirWorkersAreForgotten) {
  EXPECT_FALSE(registry_.SawModel("a"));
  ASSERT_TRUE(registry_.Register(Cpu("b")).ok());
  ASSERT_TRUE(registry_.Register(Cpu("a")).ok());
  ASSERT_TRUE(registry_.Register(Cpu("a")).ok());
  EXPECT_FALSE(registry_.Register(Cpu("")).ok());  // refused: not seen
  now_ += absl::Seconds(60);
  EXPECT_EQ(registry_.Prune(), 3);
  EXPECT_TRUE(registry_.SawModel("a"));
  EXPECT_FALSE(registry_.SawModel("c"));
  EXPECT_EQ(registry_.SeenModels(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(WorkerRegistryTest, RegistrationsWithoutUsableDevicesAreRefused) {
  EXPECT_THAT(registry_.Register(WorkerRegistration{"host", {}, "g++", "", ""}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  WorkerRegistration no_model = Cpu("");
  EXPECT_THAT(registry_.Register(no_model), StatusIs(absl::StatusCode::kInvalidArgument));
  WorkerRegistration no_principal = Cpu("m");
  no_principal.principal.clear();
  EXPECT_THAT(registry_.Register(no_principal), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(WorkerRegistryTest, ARegistrationNamesBoundedDevicesAndModels) {
  WorkerRegistration many = Cpu("m");
  while (many.devices.size() < kMaxDevicesPerWorker) {
    v1::Device device = many.devices[0];
    device.set_id(absl::StrCat("cpu", many.devices.size()));
    many.devices.push_back(device);
  }
  EXPECT_OK(registry_.Register(many));
  many.devices.push_back(many.devices[1]);
  EXPECT_THAT(registry_.Register(many), StatusIs(absl::StatusCode::kInvalidArgument));

  WorkerRegistration invented = Cpu("model-0");
  invented.principal = "host:inventor";
  for (size_t i = 1; i <= kMaxModelsPerPrincipal; ++i) {
    v1::Device device = invented.devices[0];
    device.set_id(absl::StrCat("dev", i));
    device.set_model(absl::StrCat("model-", i));
    invented.devices.push_back(device);
  }
  EXPECT_THAT(registry_.Register(invented), StatusIs(absl::StatusCode::kInvalidArgument));
  invented.devices.pop_back();
  EXPECT_OK(registry_.Register(invented));  // 8 models
  // Registering again, with a ninth model, is refused too: the cap is the
  // principal's. Its eight models again are fine (a restarted worker).
  WorkerRegistration ninth = Cpu("model-9");
  ninth.principal = "host:inventor";
  EXPECT_THAT(registry_.Register(ninth), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_OK(registry_.Register(invented));
}

TEST_F(WorkerRegistryTest, WithAnAllowlistOnlyItsModelsRegister) {
  WorkerRegistry allowlisted(absl::Seconds(3), [this] { return now_; }, absl::Seconds(30),
                             {"NVIDIA H100 80GB HBM3", "NVIDIA H200"});
  EXPECT_OK(allowlisted.Register(Cpu("NVIDIA H200")));
  EXPECT_THAT(allowlisted.Register(Cpu("NVIDIA H100")),
              StatusIs(absl::StatusCode::kPermissionDenied));
  // One invented model refuses the whole registration, and is never seen.
  WorkerRegistration mixed = Cpu("NVIDIA H100 80GB HBM3");
  mixed.devices.push_back(Cpu("invented").devices[0]);
  mixed.devices.back().set_id("cpu1");
  EXPECT_THAT(allowlisted.Register(mixed), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_FALSE(allowlisted.SawModel("invented"));
  EXPECT_FALSE(allowlisted.SawModel("NVIDIA H100 80GB HBM3"));
  // Compile-only workers register no device: the list does not concern them.
  WorkerRegistration builder{"builder", {}, "nvrtc 13.0", "builder", "sm_90"};
  EXPECT_OK(allowlisted.Register(builder));
}

TEST_F(WorkerRegistryTest, LiveDevicesOfAModelCarryTheirPrincipals) {
  WorkerRegistration a = Cpu("m");
  a.principal = "host-a";
  WorkerRegistration b = Cpu("m");
  b.principal = "host-b";
  const std::string id_a = *registry_.Register(a);
  *registry_.Register(b);
  *registry_.Register(Cpu("other"));

  std::vector<LiveDevice> devices = registry_.LiveDevices("m", "g++ 12");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_NE(devices[0].principal, devices[1].principal);
  EXPECT_EQ(*registry_.PrincipalOf(id_a), "host-a");
  absl::StatusOr<WorkerRegistry::ModelOf> model = registry_.TouchDevice(id_a, "");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->principal, "host-a");
  EXPECT_EQ(model->device_id, "cpu0");
  EXPECT_THAT(registry_.PrincipalOf("nobody"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(WorkerRegistryTest, AnyLiveDeviceWalksTheModelsPrincipalsAndTheirLiveWorkers) {
  const auto principal_of = [](const std::string& model, const std::string& principal) {
    WorkerRegistration registration = Cpu(model);
    registration.principal = principal;
    return registration;
  };
  // One principal with many workers, another with one that falls silent.
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(registry_.Register(principal_of("m", "crowd")).ok());
  const std::string lone = *registry_.Register(principal_of("m", "lone"));
  ASSERT_TRUE(registry_.Register(principal_of("other", "elsewhere")).ok());
  std::vector<std::string> asked;
  const auto besides = [&](const std::string& excluded) {
    asked.clear();
    return registry_.AnyLiveDevice("m", "g++ 12", [&](const std::string& principal) {
      asked.push_back(principal);
      return principal != excluded;
    });
  };
  EXPECT_TRUE(besides("crowd"));
  EXPECT_LE(asked.size(), 2u) << "principals are asked, not devices";
  EXPECT_TRUE(besides("lone"));
  EXPECT_FALSE(registry_.AnyLiveDevice("m", "clang 17", [](const std::string&) { return true; }))
      << "another toolkit";
  EXPECT_FALSE(registry_.AnyLiveDevice("none", "g++ 12", [](const std::string&) { return true; }));

  // Only the lone worker heartbeats: the crowd is dead, then forgotten.
  now_ += absl::Seconds(4);
  registry_.Touch(lone);
  EXPECT_FALSE(besides("lone"));
  EXPECT_TRUE(besides("crowd"));
  now_ += absl::Seconds(27);
  registry_.Touch(lone);
  EXPECT_EQ(registry_.Prune(), 51);
  EXPECT_FALSE(besides("lone"));
  EXPECT_EQ(asked, std::vector<std::string>{"lone"}) << "the forgotten leave the walk";
  ASSERT_EQ(registry_.LiveDevices("m", "g++ 12").size(), 1u);
}

}  // namespace
}  // namespace tunefleet::server
