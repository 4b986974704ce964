// tunectl's argument helpers and offline validation, called in-process.
#include "client/tunectl/commands.h"

#include <fstream>
#include <sstream>

#include "client/tunectl/exit_codes.h"
#include "client/tunectl/spec_locator.h"
#include "client/tunectl/validate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::tunectl {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;
using ::tunefleet::testing::TempDir;

TEST(TunectlArgsTest, ServerComesFromFlagThenEnvThenDefault) {
  EXPECT_EQ(ResolveServer("flag:1", "env:2"), "flag:1");
  EXPECT_EQ(ResolveServer("", "env:2"), "env:2");
  EXPECT_EQ(ResolveServer("", ""), "localhost:7070");
  EXPECT_EQ(ResolveServer("", nullptr), "localhost:7070");
}

TEST(TunectlArgsTest, TimeoutBecomesTheCallDeadline) {
  absl::StatusOr<ClientOptions> options = MakeClientOptions("h:1", 0.25);
  ASSERT_OK(options.status());
  EXPECT_EQ(options->deadline, std::chrono::milliseconds(250));
  EXPECT_THAT(MakeClientOptions("h:1", 0),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(TunectlArgsTest, NoColorTurnsColorOff) {
  EXPECT_TRUE(ColorAllowed(/*terminal=*/true, nullptr));
  EXPECT_TRUE(ColorAllowed(/*terminal=*/true, ""));
  EXPECT_FALSE(ColorAllowed(/*terminal=*/true, "1"));
  EXPECT_FALSE(ColorAllowed(/*terminal=*/false, nullptr));
}

constexpr char kSpec[] =
    "name: \"k\"\n"                            // 1
    "backend: BACKEND_CPU\n"                   // 2
    "params { name: \"A\" values: [1, 2] }\n"  // 3
    "params { name: \"A\" values: [3] }\n"     // 4
    "constraints { expr: \"A > 0\" }\n"        // 5
    "constraints { expr: \"A <\" }\n"          // 6
    "default_config: \"A=1\"\n";               // 7

TEST(TunectlSpecLocatorTest, FindsTheFieldAProblemNames) {
  EXPECT_EQ(LocateSpecProblem(kSpec, "constraint #2 \"A <\": bad"), 6);
  EXPECT_EQ(LocateSpecProblem(kSpec, "param name \"A\" is used twice"), 4);
  EXPECT_EQ(LocateSpecProblem(kSpec, "default_config: param A=9 ..."), 7);
  EXPECT_EQ(LocateSpecProblem(kSpec, "kernel name \"\" is not an identifier"),
            1);
}

TEST(TunectlSpecLocatorTest, NoLineForAbsentFieldsOrUnparsableText) {
  EXPECT_EQ(LocateSpecProblem(kSpec, "entry is not set"), std::nullopt);
  EXPECT_EQ(LocateSpecProblem("name: {", "entry is not set"), std::nullopt);
}

class TunectlValidateTest : public ::testing::Test {
 protected:
  // A copy of the matmul kernel whose spec has `from` replaced by `to`.
  std::string BrokenMatmul(const std::string& from, const std::string& to) {
    std::string source = SourceDir() + "/kernels/cpu/matmul/";
    for (const char* file : {"matmul.cc", "reference.cc"}) {
      std::ifstream in(source + file);
      std::ofstream(dir_.path() + "/" + file) << in.rdbuf();
    }
    std::ifstream in(source + "kernel.textproto");
    std::string spec((std::istreambuf_iterator<char>(in)), {});
    size_t at = spec.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    spec.replace(at, from.size(), to);
    std::ofstream(dir_.path() + "/kernel.textproto") << spec;
    return dir_.path();
  }
  TempDir dir_;
};

TEST_F(TunectlValidateTest, CountsValidConfigsForAShape) {
  absl::StatusOr<ValidateReport> report = ValidateKernelDirectory(
      SourceDir() + "/kernels/cpu/matmul", "M=512,N=512,K=512");
  ASSERT_OK(report.status());
  EXPECT_EQ(report->parameters, 5);
  EXPECT_EQ(report->full_size, 256u);
  ASSERT_TRUE(report->valid_configs.has_value());
  EXPECT_GT(*report->valid_configs, 0u);
  EXPECT_LE(*report->valid_configs, 256u);
  EXPECT_EQ(report->default_problem, "");
}

TEST_F(TunectlValidateTest, WithoutAShapeSaysCountingNeedsOne) {
  absl::StatusOr<ValidateReport> report =
      ValidateKernelDirectory(SourceDir() + "/kernels/cpu/matmul", "");
  ASSERT_OK(report.status());
  EXPECT_FALSE(report->valid_configs.has_value());
  EXPECT_THAT(ValidateReportText(*report), HasSubstr("pass --shape"));
}

TEST_F(TunectlValidateTest, ExpressionErrorsCarryTheirLine) {
  std::string dir =
      BrokenMatmul("BLOCK_M % UNROLL == 0", "BLOCK_M % UNROL == 0");
  EXPECT_THAT(ValidateKernelDirectory(dir, ""),
              StatusIsWith(absl::StatusCode::kInvalidArgument,
                           "kernel.textproto:25: constraint #3"));
}

TEST_F(TunectlValidateTest, MissingSourcesAreNotFoundAtTheirLine) {
  std::string dir =
      BrokenMatmul("sources: \"matmul.cc\"", "sources: \"gone.cc\"");
  EXPECT_THAT(
      ValidateKernelDirectory(dir, ""),
      StatusIsWith(absl::StatusCode::kNotFound, "kernel.textproto:6: "));
}

TEST_F(TunectlValidateTest, AShapeThatDoesNotParseIsAUsageError) {
  std::ostringstream out, err;
  Console console;
  console.out = &out;
  console.err = &err;
  EXPECT_EQ(RunValidate(SourceDir() + "/kernels/cpu/matmul", "M=", console),
            kExitUsage);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace tunefleet::tunectl
