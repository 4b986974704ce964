// What a compiler log may say to clients. A trial's error text is stored and
// shown to every client, so it carries only the compiler's diagnostics about
// the job's own files: never a line quoting another file (a system header,
// or /etc/passwd pulled in by `#include "/etc/passwd"`), never its source
// excerpts, and never more than kMaxCompileLogBytes.
//
// A line is a diagnostic header when it starts with a location, in GCC/Clang
// form (`path:line:col: error: ...`, `path: In function ...`,
// `In file included from path:line`, `   from path:line`) or in NVRTC form
// (`path(line): error: ...`, `"path", line N`). A header is kept when its
// path is one of the job's files (relative, or under the job's directory),
// or names no file at all (`cc1plus: ...`, `<command-line>: ...`). Indented
// lines (source excerpts, carets, notes' context) follow the fate of the
// header before them. Other lines (`compilation terminated.`, ptxas
// resource reports) are kept.
//
// Thread-safety: pure functions.
#ifndef TUNEFLEET_WORKER_COMPILE_LOG_H_
#define TUNEFLEET_WORKER_COMPILE_LOG_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tunefleet::worker {

// The most of a compiler log that a CompileOutcome keeps.
inline constexpr size_t kMaxCompileLogBytes = 8192;

// Trims `log` to at most about `max_bytes`, keeping the head (the first
// errors) and the tail, with a marker saying how much was cut.
std::string TrimLog(const std::string& log, size_t max_bytes = kMaxCompileLogBytes);

// The job's files and where they were staged, as FilterCompilerLog sees them.
struct JobFiles {
  std::vector<std::string> paths;  // relative, as in the spec ("kernel.cc")
  std::string dir;                 // absolute staging dir; may be empty
};

// `log` without the lines about other files (see the file comment), with a
// note saying how many lines were dropped.
std::string FilterCompilerLog(absl::string_view log, const JobFiles& files);

// FilterCompilerLog, then TrimLog to `max_bytes`.
std::string JobCompilerLog(absl::string_view log, const JobFiles& files,
                           size_t max_bytes = kMaxCompileLogBytes);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_COMPILE_LOG_H_
