// Helpers for integration tests that run a TLS loopback fleet (bench::Fleet)
// of this build's binaries and talk to it through the client library.
#ifndef TUNEFLEET_TESTS_SUPPORT_FLEET_CLIENT_H_
#define TUNEFLEET_TESTS_SUPPORT_FLEET_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/local_fleet.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {

// Options of a fleet of BuildDir()/bin's binaries, its data under `data_dir`,
// with TLS, tokens and certificates from scripts/dev-ca.sh; every other field
// keeps FleetOptions' default.
bench::FleetOptions SecureFleetOptions(std::string data_dir);

// The admin token the fleet's coordinator made at its first start, without
// surrounding whitespace.
// REQUIRES: fleet.secure() and fleet.StartCoordinator() succeeded.
absl::StatusOr<std::string> AdminToken(const bench::Fleet& fleet);

// A client of the fleet's coordinator that trusts the fleet's CA and presents
// `token`. REQUIRES: as AdminToken.
absl::StatusOr<std::unique_ptr<Client>> ConnectAs(const bench::Fleet& fleet,
                                                  std::string token);

// A plaintext client of a fleet started without TLS (every caller an admin).
// REQUIRES: !fleet.secure() and fleet.StartCoordinator() succeeded.
absl::StatusOr<std::unique_ptr<Client>> ConnectPlaintext(const bench::Fleet& fleet);

// ConnectAs(fleet, AdminToken(fleet)). REQUIRES: as AdminToken.
absl::StatusOr<std::unique_ptr<Client>> ConnectAdmin(const bench::Fleet& fleet);

// This build's tunectl with `args` as the fleet's admin (its --server and
// TunectlFlags first): stdout and the exit code. A failure to run it is
// reported to the test and answered as an empty RunResult.
bench::RunResult TunectlAsAdmin(const bench::Fleet& fleet, const std::vector<std::string>& args,
                                absl::Duration deadline = absl::Seconds(120));

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_SUPPORT_FLEET_CLIENT_H_
