#include "worker/compile_log.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tunefleet::worker {
namespace {

bool IsIndented(absl::string_view line) {
  return !line.empty() && (line[0] == ' ' || line[0] == '\t');
}

// `"path", line N`
std::optional<absl::string_view> QuotedLocation(absl::string_view line) {
  if (!absl::ConsumePrefix(&line, "\"")) return std::nullopt;
  const size_t end = line.find('"');
  if (end == absl::string_view::npos || !absl::StartsWith(line.substr(end), "\", line ")) {
    return std::nullopt;
  }
  return line.substr(0, end);
}

// `path(123): ...`
std::optional<absl::string_view> NvrtcLocation(absl::string_view line) {
  const size_t open = line.find('(');
  if (open == 0 || open == absl::string_view::npos) return std::nullopt;
  absl::string_view rest = line.substr(open + 1);
  const size_t digits = std::find_if_not(rest.begin(), rest.end(), absl::ascii_isdigit) -
                        rest.begin();
  if (digits == 0 || !absl::StartsWith(rest.substr(digits), "):")) return std::nullopt;
  return line.substr(0, open);
}

// `path:...` where path has no blank: `kernel.cc:3:1: error`, `cc1plus: note`.
std::optional<absl::string_view> ColonLocation(absl::string_view line) {
  const size_t colon = line.find(':');
  if (colon == 0 || colon == absl::string_view::npos) return std::nullopt;
  absl::string_view path = line.substr(0, colon);
  if (absl::StrContains(path, ' ') || absl::StrContains(path, '\t')) return std::nullopt;
  return path;
}

// The path a diagnostic header starts with, or nullopt for other lines.
std::optional<absl::string_view> HeaderPath(absl::string_view line) {
  absl::string_view rest = line;
  if (absl::ConsumePrefix(&rest, "In file included from ")) return ColonLocation(rest);
  if (IsIndented(line)) {
    rest = absl::StripLeadingAsciiWhitespace(line);
    if (absl::ConsumePrefix(&rest, "from ")) return ColonLocation(rest);
    return std::nullopt;
  }
  if (auto quoted = QuotedLocation(line)) return quoted;
  if (auto nvrtc = NvrtcLocation(line)) return nvrtc;
  return ColonLocation(line);
}

bool IsJobFile(absl::string_view path, const JobFiles& files) {
  // A word without '/' or '.' is a tool or pseudo-file: cc1plus, <built-in>.
  if (!absl::StrContains(path, '/') && !absl::StrContains(path, '.')) return true;
  if (!files.dir.empty()) absl::ConsumePrefix(&path, absl::StrCat(files.dir, "/"));
  while (absl::ConsumePrefix(&path, "./")) {
  }
  return std::find(files.paths.begin(), files.paths.end(), path) != files.paths.end();
}

}  // namespace

std::string TrimLog(const std::string& log, size_t max_bytes) {
  if (log.size() <= max_bytes) return log;
  const size_t head = max_bytes * 3 / 4;
  const size_t tail = max_bytes - head;
  return absl::StrCat(log.substr(0, head), "\n... [", log.size() - head - tail,
                      " bytes trimmed] ...\n", log.substr(log.size() - tail));
}

std::string FilterCompilerLog(absl::string_view log, const JobFiles& files) {
  const bool ends_with_newline = absl::ConsumeSuffix(&log, "\n");
  std::vector<absl::string_view> kept;
  int dropped = 0;
  bool keep = true;  // the fate of the last header, for the lines under it
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    absl::ConsumeSuffix(&line, "\r");
    if (std::optional<absl::string_view> path = HeaderPath(line)) {
      keep = IsJobFile(*path, files);
    } else if (!IsIndented(line)) {
      keep = true;
    }
    if (keep) {
      kept.push_back(line);
    } else {
      ++dropped;
    }
  }
  std::string text = absl::StrJoin(kept, "\n");
  if (ends_with_newline) text += "\n";
  if (dropped == 0) return text;
  return absl::StrCat(text, text.empty() || ends_with_newline ? "" : "\n", "[", dropped,
                      " line(s) about files outside the kernel's sources omitted]\n");
}

std::string JobCompilerLog(absl::string_view log, const JobFiles& files, size_t max_bytes) {
  return TrimLog(FilterCompilerLog(log, files), max_bytes);
}

}  // namespace tunefleet::worker
