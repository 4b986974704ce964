// The CPU compiler against hostile kernels: the real compiler, in the
// worker's default sandbox and without one.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"
#include "tests/worker/worker_test_util.h"
#include "worker/cpu/cpu_compiler.h"
#include "worker/cpu/cpu_device.h"

namespace tunefleet::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::tunefleet::testing::TempDir;
using ::tunefleet::worker::testing::LoadJob;
using ::tunefleet::worker::testing::TestSandbox;

class CpuCompilerSandboxTest : public ::testing::Test {
 protected:
  std::unique_ptr<CpuCompiler> MakeCompiler(Sandbox sandbox) {
    CompilerOptions options;
    options.cache_dir = cache_.path();
    options.sandbox = std::move(sandbox);
    absl::StatusOr<std::unique_ptr<CpuCompiler>> compiler = CpuCompiler::Create(options);
    EXPECT_TRUE(compiler.ok()) << compiler.status();
    return compiler.ok() ? *std::move(compiler) : nullptr;
  }

  // The matmul kernel's default config with its source replaced by `source`.
  CompileOutcome Compile(CpuCompiler* compiler, const std::string& source,
                         const std::vector<std::string>& extra_options = {}) {
    job_ = LoadJob("kernels/cpu/matmul", "M=64,N=64,K=64");
    job_.sources[0].set_content(source);
    job_.sources[0].clear_digest();
    for (const std::string& option : extra_options) job_.spec.add_compile_options(option);
    CompileJob compile{&job_.spec, &job_.sources, v1::Config(), DiscoverCpuDevice(),
                       /*reference=*/false, v1::Shape()};
    absl::StatusOr<CompileOutcome> outcome = compiler->Compile(compile);
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    return outcome.ok() ? *outcome : CompileOutcome();
  }

  TempDir cache_;
  TempDir outside_;
  JobContext job_;
};

TEST_F(CpuCompilerSandboxTest, WorkerRefusesWrapperOptionWithoutRunningIt) {
  std::unique_ptr<CpuCompiler> compiler = MakeCompiler(TestSandbox());
  ASSERT_NE(compiler, nullptr);
  const std::string marker = outside_.path() + "/pwned";
  CompileOutcome outcome =
      Compile(compiler.get(), "int x;\n", {"-wrapper", "/bin/sh,-c,touch " + marker});
  EXPECT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.log, HasSubstr("\"-wrapper\" is not allowed"));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(CpuCompilerSandboxTest, SandboxedCompilerCannotReadFilesOutsideTheJob) {
  std::unique_ptr<CpuCompiler> compiler = MakeCompiler(TestSandbox());
  ASSERT_NE(compiler, nullptr);
  const std::string secret = outside_.path() + "/worker.key";
  std::ofstream(secret) << "#error SECRET-KEY-MATERIAL\n";
  CompileOutcome outcome = Compile(compiler.get(), "#include \"" + secret + "\"\n");
  EXPECT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.log, Not(HasSubstr("SECRET-KEY-MATERIAL")));
  EXPECT_THAT(outcome.log, HasSubstr("No such file"));  // not even visible
}

TEST_F(CpuCompilerSandboxTest, ErrorTextNeverEchoesAnIncludedSystemFileEvenUnsandboxed) {
  std::unique_ptr<CpuCompiler> compiler = MakeCompiler(Sandbox());
  ASSERT_NE(compiler, nullptr);
  CompileOutcome outcome =
      Compile(compiler.get(), "#include \"/etc/passwd\"\n;\nint y = z;\n");
  EXPECT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.log, Not(HasSubstr("root:")));
  EXPECT_THAT(outcome.log, Not(HasSubstr("/bin/")));
  EXPECT_THAT(outcome.log, HasSubstr("matmul.cc:3:9: error"));  // the job's own error stays
  EXPECT_THAT(outcome.log, HasSubstr("int y = z;"));             // with its excerpt
}

TEST_F(CpuCompilerSandboxTest, ValidSourceCompilesInTheSandbox) {
  std::unique_ptr<CpuCompiler> compiler = MakeCompiler(TestSandbox());
  ASSERT_NE(compiler, nullptr);
  CompileOutcome outcome = Compile(
      compiler.get(), "#include <vector>\nextern \"C\" int matmul() { return 0; }\n");
  EXPECT_TRUE(outcome.ok) << outcome.log;
  EXPECT_TRUE(std::filesystem::exists(outcome.artifact));
}

}  // namespace
}  // namespace tunefleet::worker
