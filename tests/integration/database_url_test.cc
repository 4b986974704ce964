// The coordinator process takes its PostgreSQL URL from TUNEFLEET_DATABASE or
// --database-file (never only argv), against a database of the real server of
// scripts/with-postgres.sh, and never prints the password.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "gtest/gtest.h"
#include "server/store/store.h"
#include "tests/server/store/test_database.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class DatabaseUrlTest : public ::testing::Test {
 protected:
  // A database of the test's own on the server of scripts/with-postgres.sh:
  // two coordinators on one database are a leader and a standby, and the
  // tests run side by side.
  void SetUp() override {
    server::testing::SkipOrFailWithoutPostgres();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<server::testing::TestDatabase>> database =
        server::testing::TestDatabase::Create(server::testing::Backend::kPostgres);
    ASSERT_OK(database);
    database_ = *std::move(database);
    url_ = database_->url();
  }

  // Starts the coordinator with `args` and `env`, its stderr in a file.
  void Start(std::vector<std::string> args,
             std::vector<std::pair<std::string, std::string>> env) {
    SubprocessOptions options;
    options.argv = {BuildDir() + "/bin/tunefleet-coordinator", "--listen", "127.0.0.1:0",
                    "--data-dir", dir_.path() + "/data", "--metrics-listen", "",
                    "--address-file", address_file_, "--insecure"};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.env = std::move(env);
    options.stdout_mode = SubprocessOptions::Output::kNull;
    options.stderr_mode = SubprocessOptions::Output::kFile;
    options.stderr_path = stderr_path_;
    absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(options);
    ASSERT_OK(started);
    coordinator_ = *std::move(started);
  }

  // Waits for the address file; "" when the coordinator exited first.
  std::string WaitForAddress() {
    for (int i = 0; i < 600; ++i) {
      std::ifstream in(address_file_);
      std::string address;
      if (in >> address) return address;
      if (coordinator_->Poll().has_value()) return "";
      absl::SleepFor(absl::Milliseconds(50));
    }
    return "";
  }

  // Submits a job through the coordinator and finds it in PostgreSQL.
  void ExpectJobsGoToPostgres() {
    const std::string address = WaitForAddress();
    ASSERT_FALSE(address.empty()) << Slurp(stderr_path_);
    ClientOptions client_options;
    client_options.target = address;
    client_options.insecure = true;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
    ASSERT_OK(client);
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = "M=64,N=64,K=64";
    absl::StatusOr<Job> job = (*client)->Submit(request);
    ASSERT_OK(job);
    absl::StatusOr<std::unique_ptr<server::Store>> store = server::OpenStore(url_);
    ASSERT_OK(store);
    EXPECT_OK((*store)->GetJob(job->id));
    EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/data/tunefleet.db"));
    coordinator_->Kill(SIGTERM);
    ASSERT_OK(coordinator_->Wait(absl::Seconds(30)));
    const std::string log = Slurp(stderr_path_);
    EXPECT_THAT(log, HasSubstr(":***@")) << log;
    EXPECT_THAT(log, Not(HasSubstr("secret"))) << log;
  }

  std::string WriteUrlFile(mode_t mode) {
    const std::string path = dir_.path() + "/database-url";
    std::ofstream(path) << url_ << "\n";
    chmod(path.c_str(), mode);
    return path;
  }

  TempDir dir_;
  std::unique_ptr<server::testing::TestDatabase> database_;
  std::string url_;
  std::string address_file_ = dir_.path() + "/address";
  std::string stderr_path_ = dir_.path() + "/stderr";
  std::unique_ptr<Subprocess> coordinator_;
};

TEST_F(DatabaseUrlTest, CoordinatorUsesTheUrlFromTheEnvironment) {
  Start({}, {{"TUNEFLEET_DATABASE", url_}});
  ExpectJobsGoToPostgres();
}

TEST_F(DatabaseUrlTest, CoordinatorUsesTheUrlFromAPrivateFile) {
  Start({"--database-file", WriteUrlFile(0600)}, {});
  ExpectJobsGoToPostgres();
}

TEST_F(DatabaseUrlTest, CoordinatorRefusesAFileOthersCanRead) {
  Start({"--database-file", WriteUrlFile(0644)}, {});
  absl::StatusOr<ExitInfo> exit = coordinator_->Wait(absl::Seconds(30));
  ASSERT_OK(exit);
  EXPECT_NE(exit->code, 0);
  const std::string log = Slurp(stderr_path_);
  EXPECT_THAT(log, HasSubstr("too open")) << log;
  EXPECT_THAT(log, Not(HasSubstr("secret"))) << log;
}

TEST_F(DatabaseUrlTest, AUrlTheDatabaseClientCannotParseIsReportedWithoutItsPassword) {
  // libpq quotes the malformed token, here the password itself.
  Start({}, {{"TUNEFLEET_DATABASE", "postgresql://tunefleet:se%zzcret@127.0.0.1:1/db"}});
  absl::StatusOr<ExitInfo> exit = coordinator_->Wait(absl::Seconds(60));
  ASSERT_OK(exit);
  EXPECT_NE(exit->code, 0);
  const std::string log = Slurp(stderr_path_);
  EXPECT_THAT(log, Not(HasSubstr("se%zzcret"))) << log;
  EXPECT_THAT(log, HasSubstr("***")) << log;
}

}  // namespace
}  // namespace tunefleet::testing
