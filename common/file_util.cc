#include "common/file_util.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tunefleet {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream data;
  data << file.rdbuf();
  return data.str();
}

absl::Status WriteFileAtomic(const std::string& path, const std::string& data) {
  // Unique per process and thread, so concurrent writers never share it.
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid(), ".",
                                       std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file) return absl::InternalError(absl::StrCat("cannot write ", tmp));
    file.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!file) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat("rename to ", path, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace tunefleet
