#include "common/database_url.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/file_util.h"
#include "common/private_file.h"
#include "common/status_macros.h"

namespace tunefleet {
namespace {

constexpr char kMask[] = "***";

absl::StatusOr<std::string> FirstLineOf(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat("--database-file ", path, ": ",
                                            std::strerror(errno)));
  }
  RETURN_IF_ERROR(CheckPrivateFile(absl::StrCat("--database-file ", path), info, "a password"));
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::string line = text.substr(0, text.find('\n'));
  return std::string(absl::StripAsciiWhitespace(line));
}

// Where the passwords of `url` are, [begin, end) each, in order: the
// userinfo's (user:PASSWORD@host) and the values of `password=` query
// parameters.
std::vector<std::pair<size_t, size_t>> PasswordSpans(absl::string_view url) {
  std::vector<std::pair<size_t, size_t>> spans;
  const size_t scheme_end = url.find("://");
  if (scheme_end != absl::string_view::npos) {
    const size_t begin = scheme_end + 3;
    const size_t authority_end = std::min(url.find_first_of("/?#", begin), url.size());
    const size_t at = url.substr(0, authority_end).rfind('@');
    const size_t colon = url.substr(0, at == absl::string_view::npos ? 0 : at).find(':', begin);
    if (at != absl::string_view::npos && at >= begin && colon != absl::string_view::npos) {
      spans.emplace_back(colon + 1, at);
    }
  }
  const size_t query = url.find('?');
  if (query == absl::string_view::npos) return spans;
  for (size_t at = url.find("password=", query); at != absl::string_view::npos;
       at = url.find("password=", at + 1)) {
    if (url[at - 1] != '?' && url[at - 1] != '&') continue;
    spans.emplace_back(at + 9, std::min(url.find('&', at + 9), url.size()));
  }
  return spans;
}

}  // namespace

absl::StatusOr<std::string> ResolveDatabaseUrl(const DatabaseUrlSources& sources) {
  if (!sources.flag.empty() && !sources.file.empty()) {
    return absl::InvalidArgumentError("give --database or --database-file, not both");
  }
  std::string url;
  std::string from;
  if (!sources.flag.empty()) {
    url = sources.flag, from = "--database";
  } else if (!sources.file.empty()) {
    ASSIGN_OR_RETURN(url, FirstLineOf(sources.file));
    from = absl::StrCat("--database-file ", sources.file);
  } else if (sources.environment.has_value()) {
    url = *sources.environment, from = "TUNEFLEET_DATABASE";
    if (url.empty()) return url;  // set but empty: the default store
  } else {
    return std::string();
  }
  if (url.empty()) return absl::InvalidArgumentError(absl::StrCat(from, " is empty"));
  return url;
}

std::string RedactUrl(absl::string_view url) {
  std::string out(url);
  const auto spans = PasswordSpans(url);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    out.replace(it->first, it->second - it->first, kMask);
  }
  return out;
}

bool HasPassword(absl::string_view url) { return !PasswordSpans(url).empty(); }

std::string RedactPasswordOf(absl::string_view url, absl::string_view text) {
  std::string out(text);
  for (const auto& [begin, end] : PasswordSpans(url)) {
    if (end > begin) out = absl::StrReplaceAll(out, {{url.substr(begin, end - begin), kMask}});
  }
  return out;
}

}  // namespace tunefleet
