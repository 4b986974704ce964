#include "tests/support/fleet_client.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::testing {

bench::FleetOptions SecureFleetOptions(std::string data_dir) {
  bench::FleetOptions options;
  options.bin_dir = BuildDir() + "/bin";
  options.data_dir = std::move(data_dir);
  options.dev_ca_script = SourceDir() + "/scripts/dev-ca.sh";
  return options;
}

absl::StatusOr<std::string> AdminToken(const bench::Fleet& fleet) {
  absl::StatusOr<std::string> token = ReadFile(fleet.admin_token_file());
  if (!token.ok()) return token.status();
  return std::string(absl::StripAsciiWhitespace(*token));
}

absl::StatusOr<std::unique_ptr<Client>> ConnectAs(const bench::Fleet& fleet,
                                                  std::string token) {
  ClientOptions options;
  options.target = fleet.address();
  options.ca_file = fleet.ca_file();
  options.token = std::move(token);
  return Client::Connect(options);
}

absl::StatusOr<std::unique_ptr<Client>> ConnectPlaintext(const bench::Fleet& fleet) {
  ClientOptions options;
  options.target = fleet.address();
  options.insecure = true;
  return Client::Connect(options);
}

absl::StatusOr<std::unique_ptr<Client>> ConnectAdmin(const bench::Fleet& fleet) {
  absl::StatusOr<std::string> token = AdminToken(fleet);
  if (!token.ok()) return token.status();
  return ConnectAs(fleet, *std::move(token));
}

bench::RunResult TunectlAsAdmin(const bench::Fleet& fleet, const std::vector<std::string>& args,
                                absl::Duration deadline) {
  std::vector<std::string> argv = {BuildDir() + "/bin/tunectl", "--server", fleet.address()};
  for (const std::string& flag : fleet.TunectlFlags()) argv.push_back(flag);
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<bench::RunResult> run = bench::RunProgram(argv, deadline);
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? *std::move(run) : bench::RunResult();
}

}  // namespace tunefleet::testing
