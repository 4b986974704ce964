#include "common/private_file.h"

#include <unistd.h>

#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tunefleet {

bool IsOwnGroup(gid_t gid) {
  if (gid == getegid()) return true;
  const int count = getgroups(0, nullptr);
  if (count <= 0) return false;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  const int listed = getgroups(count, groups.data());
  for (int i = 0; i < listed; ++i) {
    if (groups[static_cast<size_t>(i)] == gid) return true;
  }
  return false;
}

absl::Status CheckPrivateFile(const std::string& flag, const struct stat& info,
                              absl::string_view holds) {
  if (info.st_uid != geteuid() && info.st_uid != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        flag, ": the file holds ", holds, " and belongs to uid ", info.st_uid,
        ", who could change it: it must belong to this process's user or to root"));
  }
  const mode_t mode = info.st_mode & 0777;
  const bool others = (mode & S_IRWXO) != 0;
  const bool group_writable = (mode & (S_IWGRP | S_IXGRP)) != 0;
  const bool foreign_group = (mode & S_IRGRP) != 0 && !IsOwnGroup(info.st_gid);
  if (!others && !group_writable && !foreign_group) return absl::OkStatus();
  char octal[8];
  std::snprintf(octal, sizeof(octal), "%04o", static_cast<unsigned>(mode));
  return absl::FailedPreconditionError(absl::StrCat(
      flag, ": permissions ", octal, " are too open: the file holds ", holds,
      " and must be readable by its owner only (chmod 600), or also by a group this process "
      "is in (chmod 640)",
      foreign_group ? absl::StrCat("; its group ", info.st_gid, " is not one") : ""));
}

}  // namespace tunefleet
