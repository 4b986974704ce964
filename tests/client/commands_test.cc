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
  EXPECT_TRUE(ColorAllowed(/*terminal=*/true, nullptr, "xterm-256color"));
  EXPECT_TRUE(ColorAllowed(/*terminal=*/true, "", nullptr));
  EXPECT_FALSE(ColorAllowed(/*terminal=*/true, "1", "xterm"));
  EXPECT_FALSE(ColorAllowed(/*terminal=*/false, nullptr, "xterm"));
  EXPECT_FALSE(ColorAllowed(/*terminal=*/true, nullptr, "dumb"));
}

TEST(TunectlArgsTest, OutputFormatsAreThoseTheVerbPrints) {
  EXPECT_OK(CheckOutputFormat("jobs", "table"));
  EXPECT_OK(CheckOutputFormat("jobs", "wide"));
  EXPECT_OK(CheckOutputFormat("status", "json"));
  EXPECT_OK(CheckOutputFormat("trials", "csv"));
  EXPECT_THAT(CheckOutputFormat("jobs", "csv"),
              StatusIsWith(absl::StatusCode::kInvalidArgument,
                           "-o csv is not an output of 'jobs' (it has: table, json, wide, yaml)"));
  EXPECT_THAT(CheckOutputFormat("report", "json"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "the page goes to --out FILE"));
  EXPECT_THAT(CheckOutputFormat("status", "wide"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(TunectlArgsTest, TlsMismatchesHaveTheirOwnHintAndExitCode) {
  const absl::Status plaintext_server = absl::UnavailableError(
      "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Ssl handshake "
      "failed: SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number");
  EXPECT_THAT(TlsMismatchHint(plaintext_server), HasSubstr("--insecure"));
  EXPECT_EQ(ExitCodeForStatus(plaintext_server), kExitTls);
  const absl::Status tls_server = absl::UnavailableError(
      "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:1: Socket "
      "closed");
  EXPECT_THAT(TlsMismatchHint(tls_server), HasSubstr("it expects TLS"));
  EXPECT_EQ(ExitCodeForStatus(tls_server), kExitUnavailable);  // or a restart: retry
  const absl::Status untrusted = absl::UnavailableError(
      "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Ssl handshake "
      "failed: SSL_ERROR_SSL: error:0A000086:SSL routines::certificate verify failed");
  EXPECT_THAT(TlsMismatchHint(untrusted), HasSubstr("--ca-file"));
  EXPECT_EQ(ExitCodeForStatus(untrusted), kExitTls);
  // The words of a channel that balances over the coordinators by health.
  const absl::Status balanced = absl::UnavailableError(
      "connections to all backends failing; last error: UNKNOWN: ipv4:127.0.0.1:1: Ssl "
      "handshake failed: SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number");
  EXPECT_THAT(TlsMismatchHint(balanced), HasSubstr("--insecure"));
  EXPECT_EQ(ExitCodeForStatus(balanced), kExitTls);
  // A call cut after it connected is not about TLS, whatever the server said.
  EXPECT_EQ(TlsMismatchHint(absl::UnavailableError("Socket closed")), "");
  EXPECT_EQ(TlsMismatchHint(absl::UnavailableError("backend: certificate verify failed")), "");
  const absl::Status refused = absl::UnavailableError(
      "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Failed to "
      "connect to remote host: Connection refused");
  EXPECT_EQ(TlsMismatchHint(refused), "");
  EXPECT_EQ(ExitCodeForStatus(refused), kExitUnavailable);
}

constexpr char kSpec[] =
    "name: \"k\"\n"                            // 1
    "backend: BACKEND_CPU\n"                   // 2
    "params { name: \"A\" values: [1, 2] }\n"  // 3
    "params { name: \"A\" values: [3] }\n"     // 4
    "constraints { expr: \"A > 0\" }\n"        // 5
    "constraints { expr: \"A <\" }\n"          // 6
    "default_config: \"A=1\"\n"                // 7
    "args { name: \"C_map\" tensor_map { tensor: \"X\" } }\n";  // 8

TEST(TunectlSpecLocatorTest, FindsTheFieldAProblemNames) {
  EXPECT_EQ(LocateSpecProblem(kSpec, "constraint #2 \"A <\": bad"), 6);
  EXPECT_EQ(LocateSpecProblem(kSpec, "param name \"A\" is used twice"), 4);
  EXPECT_EQ(LocateSpecProblem(kSpec, "default_config: param A=9 ..."), 7);
  EXPECT_EQ(LocateSpecProblem(kSpec, "kernel name \"\" is not an identifier"),
            1);
  EXPECT_EQ(LocateSpecProblem(kSpec, "tensor map argument C_map names \"X\", which is no "
                                     "tensor argument"),
            8);
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
