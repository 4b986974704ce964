#include "common/database_url.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
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
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 0777));
    return absl::FailedPreconditionError(absl::StrCat(
        "--database-file ", path, ": permissions ", mode,
        " are too open: the file holds a password and must not be accessible by group "
        "or others (chmod 600 ", path, ")"));
  }
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::string line = text.substr(0, text.find('\n'));
  return std::string(absl::StripAsciiWhitespace(line));
}

// The part of `url` between "://" and the host: [begin, end) of the
// userinfo, or npos when there is none.
std::pair<size_t, size_t> Userinfo(absl::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == absl::string_view::npos) return {absl::string_view::npos, 0};
  const size_t begin = scheme_end + 3;
  const size_t authority_end = url.find_first_of("/?#", begin);
  const size_t at = url.substr(0, authority_end).rfind('@');
  if (at == absl::string_view::npos || at < begin) return {absl::string_view::npos, 0};
  return {begin, at};
}

// Masks the values of `password=` parameters of the query in place.
void MaskQueryPassword(std::string* url) {
  const size_t query = url->find('?');
  if (query == std::string::npos) return;
  for (size_t at = url->find("password=", query); at != std::string::npos;
       at = url->find("password=", at + 1)) {
    const char before = (*url)[at - 1];
    if (before != '?' && before != '&') continue;
    const size_t begin = at + 9;
    const size_t end = std::min(url->find('&', begin), url->size());
    url->replace(begin, end - begin, kMask);
  }
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
  auto [begin, end] = Userinfo(url);
  if (begin != absl::string_view::npos) {
    const size_t colon = out.find(':', begin);
    if (colon != std::string::npos && colon < end) {
      out.replace(colon + 1, end - colon - 1, kMask);
    }
  }
  MaskQueryPassword(&out);
  return out;
}

bool HasPassword(absl::string_view url) { return RedactUrl(url) != url; }

}  // namespace tunefleet
