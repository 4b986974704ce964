// Whole-file reads and atomic whole-file writes.
#ifndef TUNEFLEET_COMMON_FILE_UTIL_H_
#define TUNEFLEET_COMMON_FILE_UTIL_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tunefleet {

// The bytes of the file at `path`; NotFound when it cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `data` to a temporary file beside `path`, then renames it over
// `path`: readers see the old file or the whole new one, never a part.
// Internal when the directory is not writable. Safe to call from several
// threads and processes for the same path (the last rename wins).
absl::Status WriteFileAtomic(const std::string& path, const std::string& data);
// As above, and the file has permission bits `mode` (e.g. 0600: its owner
// only) from its creation on, whatever the process's umask.
absl::Status WriteFileAtomic(const std::string& path, const std::string& data, mode_t mode);

// Which version of the file at `path` is there now: its device, inode,
// modification time (ns) and size, "dev-ino-mtime-size". A file written
// again (WriteFileAtomic, a rename over it) is another version. NotFound
// when it cannot be stat'ed.
absl::StatusOr<std::string> FileVersion(const std::string& path);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_FILE_UTIL_H_
