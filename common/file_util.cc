#include "common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
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

namespace {

// Writes `data` to a new file `path`, created with `mode` less the umask, then
// set to exactly `mode` when `exact`.
absl::Status WriteNewFile(const std::string& path, const std::string& data, mode_t mode,
                          bool exact) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  int error = 0;
  if (exact && fchmod(fd, mode) != 0) error = errno;
  for (size_t done = 0; error == 0 && done < data.size();) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = n < 0 ? errno : EIO;
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (close(fd) != 0 && error == 0) error = errno;
  if (error == 0) return absl::OkStatus();
  std::remove(path.c_str());
  return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
}

absl::Status WriteAndRename(const std::string& path, const std::string& data, mode_t mode,
                            bool exact) {
  // Unique per process and thread, so concurrent writers never share it.
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid(), ".",
                                       std::hash<std::thread::id>()(std::this_thread::get_id()));
  if (absl::Status written = WriteNewFile(tmp, data, mode, exact); !written.ok()) return written;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat("rename to ", path, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFileAtomic(const std::string& path, const std::string& data) {
  return WriteAndRename(path, data, 0666, /*exact=*/false);  // as std::ofstream creates files
}

absl::Status WriteFileAtomic(const std::string& path, const std::string& data, mode_t mode) {
  return WriteAndRename(path, data, mode, /*exact=*/true);
}

absl::StatusOr<std::string> FileVersion(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  }
  const int64_t mtime_ns =
      static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  return absl::StrCat(info.st_dev, "-", info.st_ino, "-", mtime_ns, "-", info.st_size);
}

}  // namespace tunefleet
