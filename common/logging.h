// Process-wide logging set-up for the coordinator and the worker: spdlog to
// stderr, as plain text for people or one JSON object per line for log
// collectors (journald, Loki, Fluent Bit, Kubernetes).
//
// JSON lines look like
//   {"time":"2026-11-23T04:20:00.123Z","level":"info","logger":"coordinator",
//    "message":"job j-1 submitted: ...","job_id":"j-1","kernel":"matmul"}
// with the message escaped as JSON (quotes, backslashes, control
// characters; bytes that are not UTF-8 become U+FFFD). Levels are trace,
// debug, info, warn, error and critical. The fields after the message are
// those of the LogFields in scope on the logging thread (job_id, kernel,
// worker, lease) and the process's (SetProcessLogField), in name order; an
// inner scope's field wins over an outer one's and over the process's.
// RouteGrpcLogging (grpc_logging.h) sends gRPC's own lines here too.
#ifndef TUNEFLEET_COMMON_LOGGING_H_
#define TUNEFLEET_COMMON_LOGGING_H_

#include <initializer_list>
#include <string>
#include <utility>

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

// Fields every JSON line of this thread carries while the object lives
// (nested scopes add theirs; an inner field of the same name wins):
//   LogFields fields({{"job_id", job.id()}, {"kernel", job.kernel()}});
// Text lines are unchanged. Not copyable; destroy in the creating thread.
class LogFields {
 public:
  explicit LogFields(std::initializer_list<std::pair<const char*, std::string>> fields);
  ~LogFields();
  LogFields(const LogFields&) = delete;
  LogFields& operator=(const LogFields&) = delete;

 private:
  size_t count_;
};

// A field every JSON line of the process carries from now on (e.g. the
// worker's id once registered); an empty value removes it. Thread-safe.
void SetProcessLogField(const std::string& name, const std::string& value);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_LOGGING_H_
