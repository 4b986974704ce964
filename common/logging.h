// Process-wide logging set-up for the coordinator and the worker: spdlog to
// stderr, as plain text for people or one JSON object per line for log
// collectors (journald, Loki, Fluent Bit, Kubernetes).
//
// JSON lines look like
//   {"time":"2026-11-23T04:20:00.123Z","level":"info","logger":"coordinator",
//    "message":"job j-1 submitted: ..."}
// with the message escaped as JSON (quotes, backslashes, control
// characters; bytes that are not UTF-8 become U+FFFD).
#ifndef TUNEFLEET_COMMON_LOGGING_H_
#define TUNEFLEET_COMMON_LOGGING_H_

#include <string>

#include "absl/status/status.h"

namespace tunefleet {

enum class LogFormat { kText, kJson };

// Makes a stderr logger named `name` the default one, in `format`, at
// `level` (trace, debug, info, warn, error, critical, off). InvalidArgument
// for an unknown level. Call once, from main, before any thread logs.
absl::Status ConfigureLogging(const std::string& name, LogFormat format,
                              const std::string& level);

// `text` as the contents of a JSON string (without the quotes).
std::string JsonEscape(const std::string& text);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_LOGGING_H_
