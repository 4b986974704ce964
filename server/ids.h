// The ids the coordinator hands out for jobs and sweeps.
#ifndef TUNEFLEET_SERVER_IDS_H_
#define TUNEFLEET_SERVER_IDS_H_

#include <string>

#include "absl/time/time.h"

namespace tunefleet::server {

// `prefix`, `now` in unix milliseconds (hex) and 32 random bits (hex): ids
// that sort by creation time and do not repeat. Thread-safe.
std::string NewId(char prefix, absl::Time now);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_IDS_H_
