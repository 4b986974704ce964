// The python backend's C++ side without a GPU, torch or triton: the probe
// (a real interpreter, the toolkit string), the compile step (real
// `python -m tunefleet.backend.compile --serve` servers on a kernel that
// needs no torch, a build that kills or hangs its server,
// with and without the bubblewrap sandbox), and the daemon's supervision of
// a Python benchmark child (`tunefleet-worker --child --backend python`
// exec'ing a stub child that answers, crashes, hangs and poisons itself).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/worker/worker_test_util.h"
#include "worker/backends.h"
#include "worker/child_process.h"
#include "worker/python/python_backend.h"
#include "worker/python/python_compiler.h"

namespace tunefleet::worker::python {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::tunefleet::testing::BuildDir;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::TempDir;
using ::tunefleet::worker::testing::TestSandbox;

#ifndef TUNEFLEET_TEST_PYTHON
#define TUNEFLEET_TEST_PYTHON "python3"
#endif

std::string PackageDir() { return BuildDir() + "/python"; }
std::string StubDir() { return SourceDir() + "/tests/worker/python_stub"; }

bool HavePackage() {
  return std::filesystem::exists(PackageDir() + "/tunefleet/v1/bench_child_pb2.py");
}

TEST(PythonProbeTest, ParsesToolkitPathsAndDevices) {
  absl::StatusOr<PythonInfo> info = ParseProbeOutput(
      "toolkit\tpython 3.12.3 triton 3.4.0 torch 2.8.0\n"
      "path\t/opt/venv\n"
      "some warning an import printed\n"
      "device\tGPU-0a1b\tNVIDIA H200 sm_90\tnvidia 580.1\tsm_count=132,l2_bytes=52428800\n"
      "note\tall good\n");
  ASSERT_OK(info);
  EXPECT_EQ(info->toolkit, "python 3.12.3 triton 3.4.0 torch 2.8.0");
  EXPECT_THAT(info->paths, ::testing::ElementsAre("/opt/venv"));
  ASSERT_EQ(info->devices.size(), 1u);
  const v1::Device& device = info->devices[0];
  EXPECT_EQ(device.id(), "GPU-0a1b");
  EXPECT_EQ(device.model(), "NVIDIA H200 sm_90");
  EXPECT_EQ(device.backend(), v1::BACKEND_PYTHON);
  ASSERT_EQ(device.limits_size(), 2);
  EXPECT_EQ(device.limits(0).name(), "sm_count");
  EXPECT_EQ(device.limits(0).value(), 132);
  EXPECT_FALSE(ParseProbeOutput("no toolkit here\n").ok());
  EXPECT_FALSE(ParseProbeOutput("toolkit\tpython 3\ndevice\tx\ty\tz\tsm_count=many\n").ok());
}

// One Configure per process: the suite shares it.
class PythonBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HavePackage()) return;
    state_ = new TempDir();
    configured_ = Configure({TUNEFLEET_TEST_PYTHON, PackageDir(), state_->path() + "/python"},
                            /*devices=*/true);
  }
  void SetUp() override {
    if (!HavePackage()) GTEST_SKIP() << "no Python package in " << PackageDir();
    ASSERT_OK(configured_);
  }
  static TempDir* state_;
  static absl::StatusOr<const PythonInfo*> configured_;
};
TempDir* PythonBackendTest::state_ = nullptr;
absl::StatusOr<const PythonInfo*> PythonBackendTest::configured_ =
    absl::UnknownError("not configured");

TEST_F(PythonBackendTest, ToolkitNamesTheInterpreterAndWhatIsInstalled) {
  const PythonInfo& info = Info();
  EXPECT_THAT(info.toolkit, StartsWith("python 3."));
  // Where torch and triton are installed the key names their versions too.
  if (info.notes.empty() || !absl::StrContains(info.notes[0], "not importable")) {
    EXPECT_THAT(info.toolkit, HasSubstr(" triton "));
    EXPECT_THAT(info.toolkit, HasSubstr(" torch "));
  }
  EXPECT_FALSE(info.paths.empty());
  absl::StatusOr<std::vector<v1::Device>> devices = DiscoverDevices(v1::BACKEND_PYTHON);
  if (devices.ok()) {
    for (const v1::Device& device : *devices) EXPECT_EQ(device.backend(), v1::BACKEND_PYTHON);
  } else {
    EXPECT_TRUE(absl::IsNotFound(devices.status())) << devices.status();
  }
  std::vector<std::pair<std::string, std::string>> env = ProcessEnvironment(info);
  EXPECT_THAT(env, ::testing::Contains(::testing::Pair("PYTHONPATH", info.package_dir)));
  EXPECT_THAT(env, ::testing::Contains(
                       ::testing::Pair("TRITON_CACHE_DIR", info.state_dir + "/triton")));
  EXPECT_THAT(env, ::testing::Contains(
                       ::testing::Pair("TILELANG_CACHE_DIR", info.state_dir + "/tilelang")));
}

struct StubJob {
  KernelBundle bundle;
  v1::Shape shape;
  v1::Device device;
};

StubJob LoadStub() {
  StubJob job;
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(StubDir());
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  if (bundle.ok()) job.bundle = *bundle;
  job.shape = *ParseShape("n=64");
  job.device.set_id("stub");
  job.device.set_model("stub device");
  job.device.set_backend(v1::BACKEND_PYTHON);
  return job;
}

CompileJob JobFor(const StubJob& stub, int mode, bool reference = false) {
  CompileJob job;
  job.spec = &stub.bundle.spec;
  job.sources = &stub.bundle.sources;
  job.config = *ParseConfig(absl::StrCat("MODE=", mode));
  job.device = stub.device;
  job.reference = reference;
  job.shape = stub.shape;
  return job;
}

void ExpectCompiles(const Sandbox& sandbox) {
  TempDir cache;
  CompilerOptions options;
  options.cache_dir = cache.path();
  options.sandbox = sandbox;
  absl::StatusOr<std::unique_ptr<PythonCompiler>> compiler =
      PythonCompiler::Create(options, Info());
  ASSERT_OK(compiler);
  const StubJob stub = LoadStub();

  absl::StatusOr<CompileOutcome> ok = (*compiler)->Compile(JobFor(stub, 0));
  ASSERT_OK(ok);
  EXPECT_TRUE(ok->ok) << ok->log;
  EXPECT_FALSE(ok->cached);
  EXPECT_TRUE(std::filesystem::exists(ok->artifact)) << ok->artifact;
  EXPECT_THAT(ok->artifact, ::testing::EndsWith(".zip"));

  absl::StatusOr<CompileOutcome> again = (*compiler)->Compile(JobFor(stub, 0));
  ASSERT_OK(again);
  EXPECT_TRUE(again->ok && again->cached);
  EXPECT_EQ(again->artifact, ok->artifact);

  absl::StatusOr<CompileOutcome> reference = (*compiler)->Compile(JobFor(stub, 0, true));
  ASSERT_OK(reference);
  EXPECT_TRUE(reference->ok) << reference->log;
  EXPECT_NE(reference->artifact, ok->artifact);

  absl::StatusOr<CompileOutcome> bad = (*compiler)->Compile(JobFor(stub, 1));
  ASSERT_OK(bad);
  EXPECT_FALSE(bad->ok);
  EXPECT_THAT(bad->log, HasSubstr("MODE=1 cannot be built for n=64"));
  EXPECT_THAT(bad->log, HasSubstr("Traceback"));
}

TEST_F(PythonBackendTest, CompilesAConfigAndReportsABuildThatRaises) {
  ExpectCompiles(Sandbox());
}

TEST_F(PythonBackendTest, CompilesInTheSandbox) {
  ExpectCompiles(TestSandbox());
}

// A config whose build kills its compile server (SIGSEGV) or hangs in it
// fails with the server's story (the signal and faulthandler's traceback;
// the deadline), the server is replaced, and the next config compiles.
void ExpectCompileServerFailuresAreContained(const Sandbox& sandbox) {
  TempDir cache;
  CompilerOptions options;
  options.cache_dir = cache.path();
  options.sandbox = sandbox;
  options.timeout = absl::Seconds(5);
  absl::StatusOr<std::unique_ptr<PythonCompiler>> compiler =
      PythonCompiler::Create(options, Info());
  ASSERT_OK(compiler);
  const StubJob stub = LoadStub();

  absl::StatusOr<CompileOutcome> crashed = (*compiler)->Compile(JobFor(stub, 2));
  ASSERT_OK(crashed);
  EXPECT_FALSE(crashed->ok);
  EXPECT_FALSE(crashed->timed_out);
  EXPECT_THAT(crashed->log, HasSubstr("compile server killed by SIGSEGV"));
  EXPECT_THAT(crashed->log, HasSubstr("stub.py"));

  absl::StatusOr<CompileOutcome> hung = (*compiler)->Compile(JobFor(stub, 3));
  ASSERT_OK(hung);
  EXPECT_FALSE(hung->ok);
  EXPECT_TRUE(hung->timed_out);
  EXPECT_THAT(hung->log, HasSubstr("compile timed out"));

  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<CompileOutcome> fine = (*compiler)->Compile(JobFor(stub, 0));
    ASSERT_OK(fine);
    EXPECT_TRUE(fine->ok) << fine->log;
  }
  absl::StatusOr<CompileOutcome> raises = (*compiler)->Compile(JobFor(stub, 1));
  ASSERT_OK(raises);
  EXPECT_FALSE(raises->ok);
  EXPECT_THAT(raises->log, HasSubstr("MODE=1 cannot be built"));
}

TEST_F(PythonBackendTest, ACompileServerThatDiesOrHangsIsReplaced) {
  ExpectCompileServerFailuresAreContained(Sandbox());
}

TEST_F(PythonBackendTest, ACompileServerThatDiesOrHangsIsReplacedInTheSandbox) {
  ExpectCompileServerFailuresAreContained(TestSandbox());
}

v1::ChildRequest RunRequest(int64_t index, int mode) {
  v1::ChildRequest request;
  request.mutable_run()->set_index(index);
  *request.mutable_run()->mutable_config() = *ParseConfig(absl::StrCat("MODE=", mode));
  return request;
}

TEST_F(PythonBackendTest, DaemonSupervisesAPythonChild) {
  ChildOptions options;
  options.argv = {testing::WorkerBinary(), "--child", "--backend", "python"};
  for (const auto& [name, value] : ProcessEnvironment(Info())) {
    if (name != "TUNEFLEET_PYTHON") options.env.emplace_back(name, value);
  }
  // TUNEFLEET_PYTHON is what the child execs: a wrapper that runs the stub
  // with the test's interpreter, passing on `-m tunefleet.backend.bench_child`.
  TempDir dir;
  const std::string wrapper = dir.path() + "/python";
  {
    std::ofstream out(wrapper);
    out << "#!/bin/sh\nexec " << Info().python << " " << StubDir() << "/stub_child.py \"$@\"\n";
  }
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  options.env.emplace_back("TUNEFLEET_PYTHON", wrapper);
  BenchChildProcess child(options);

  v1::ChildRequest prepare;
  prepare.mutable_prepare()->set_seed(1);
  absl::StatusOr<ChildReply> prepared = child.Call(prepare, absl::Seconds(30));
  ASSERT_OK(prepared);
  ASSERT_EQ(prepared->kind, ChildReply::Kind::kAnswered) << prepared->detail;
  EXPECT_TRUE(prepared->response.error().empty());

  absl::StatusOr<ChildReply> ok = child.Call(RunRequest(1, 0), absl::Seconds(30));
  ASSERT_OK(ok);
  ASSERT_EQ(ok->kind, ChildReply::Kind::kAnswered) << ok->detail;
  EXPECT_EQ(ok->response.index(), 1);
  EXPECT_EQ(ok->response.result().status(), v1::TRIAL_STATUS_OK);
  EXPECT_EQ(child.starts(), 1);

  absl::StatusOr<ChildReply> crashed = child.Call(RunRequest(2, 1), absl::Seconds(30));
  ASSERT_OK(crashed);
  EXPECT_EQ(crashed->kind, ChildReply::Kind::kDied);
  EXPECT_TRUE(crashed->exit.signaled);
  EXPECT_THAT(crashed->detail, HasSubstr("SIGSEGV"));

  // Respawned for the next request.
  absl::StatusOr<ChildReply> after = child.Call(RunRequest(3, 0), absl::Seconds(30));
  ASSERT_OK(after);
  ASSERT_EQ(after->kind, ChildReply::Kind::kAnswered) << after->detail;
  EXPECT_EQ(after->response.result().status(), v1::TRIAL_STATUS_OK);
  EXPECT_EQ(child.starts(), 2);

  absl::StatusOr<ChildReply> hung = child.Call(RunRequest(4, 2), absl::Seconds(2));
  ASSERT_OK(hung);
  EXPECT_EQ(hung->kind, ChildReply::Kind::kTimedOut);

  absl::StatusOr<ChildReply> poisoned = child.Call(RunRequest(5, 3), absl::Seconds(30));
  ASSERT_OK(poisoned);
  ASSERT_EQ(poisoned->kind, ChildReply::Kind::kAnswered) << poisoned->detail;
  EXPECT_EQ(poisoned->response.result().status(), v1::TRIAL_STATUS_CRASHED);
  EXPECT_TRUE(poisoned->response.exiting());
  EXPECT_EQ(child.starts(), 3);

  absl::StatusOr<ChildReply> last = child.Call(RunRequest(6, 0), absl::Seconds(30));
  ASSERT_OK(last);
  ASSERT_EQ(last->kind, ChildReply::Kind::kAnswered) << last->detail;
  EXPECT_EQ(child.starts(), 4);
  child.Stop();
}

TEST_F(PythonBackendTest, ARealChildWithoutTorchSaysSoAndExits) {
  if (absl::StrContains(Info().toolkit, " torch ")) GTEST_SKIP() << "torch is installed here";
  ChildOptions options;
  options.argv = {testing::WorkerBinary(), "--child", "--backend", "python"};
  options.env = ProcessEnvironment(Info());
  BenchChildProcess child(options);
  v1::ChildRequest prepare;
  prepare.mutable_prepare()->set_seed(1);
  absl::StatusOr<ChildReply> reply = child.Call(prepare, absl::Seconds(60));
  ASSERT_OK(reply);
  EXPECT_EQ(reply->kind, ChildReply::Kind::kDied);
  EXPECT_EQ(reply->exit.code, 5) << reply->detail;  // kChildExitNoBackend
}

}  // namespace
}  // namespace tunefleet::worker::python
