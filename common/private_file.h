// Files that hold a secret (the admin token, a database URL with its
// password): who may read them.
#ifndef TUNEFLEET_COMMON_PRIVATE_FILE_H_
#define TUNEFLEET_COMMON_PRIVATE_FILE_H_

#include <sys/stat.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tunefleet {

// OK when the file (`info`, from stat() of `path`) is private to this
// process: owned by this process's user or by root (no one else may change
// it), nothing for others, nothing writable by the group, and readable
// by the group only when that group is one of this process's own (its
// effective or a supplementary group). That admits 0600 and 0400, and the
// two ways deployments hand a service its secrets: a systemd host's
// `0640 root:tunefleet` and a Kubernetes Secret volume under the pod's
// fsGroup (0440, group fsGroup). FailedPrecondition otherwise, naming the
// mode, what the file holds and the fix. `flag` is how the file was named
// ("--admin-token-file /etc/...").
absl::Status CheckPrivateFile(const std::string& flag, const struct stat& info,
                              absl::string_view holds);

// Whether `gid` is this process's effective group or a supplementary one.
bool IsOwnGroup(gid_t gid);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_PRIVATE_FILE_H_
