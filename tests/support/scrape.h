// Reading a Prometheus endpoint the way Prometheus does: an HTTP GET of the
// text exposition format, parsed into series.
#ifndef TUNEFLEET_TESTS_SUPPORT_SCRAPE_H_
#define TUNEFLEET_TESTS_SUPPORT_SCRAPE_H_

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace tunefleet::testing {

// The body of `GET http://<address><path>` (address "host:port", IPv4).
// Unavailable when nothing answers.
absl::StatusOr<std::string> HttpGet(const std::string& address, const std::string& path);

// Every sample of a text exposition, keyed by its series as written
// (`name{label="value",...}`, or `name` alone).
std::map<std::string, double> ParseSamples(const std::string& text);

// The metric family names a text exposition declares (its `# TYPE` lines).
std::set<std::string> ParseFamilies(const std::string& text);

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_SUPPORT_SCRAPE_H_
