// Who may read a file that holds a secret: its owner, and a group of this
// process's own (systemd's 0640 root:tunefleet, a Kubernetes Secret's 0440
// under fsGroup); never others, never a writable group, never a foreign
// group.
#include "common/private_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;

struct stat Info(mode_t mode, gid_t gid) {
  struct stat info = {};
  info.st_mode = S_IFREG | mode;
  info.st_uid = geteuid();
  info.st_gid = gid;
  return info;
}

// A group id this process is not in.
gid_t ForeignGroup() {
  for (gid_t gid = 54321;; ++gid) {
    if (!IsOwnGroup(gid)) return gid;
  }
}

TEST(CheckPrivateFileTest, OwnerOnlyModesAreAccepted) {
  for (mode_t mode : {0600, 0400, 0700}) {
    EXPECT_OK(CheckPrivateFile("f", Info(mode, ForeignGroup()), "a password"));
  }
}

TEST(CheckPrivateFileTest, GroupReadableOnlyByAGroupOfThisProcess) {
  EXPECT_OK(CheckPrivateFile("f", Info(0640, getegid()), "a password"));
  EXPECT_OK(CheckPrivateFile("f", Info(0440, getegid()), "a password"));
  EXPECT_THAT(CheckPrivateFile("--token-file t", Info(0440, ForeignGroup()), "the admin token"),
              StatusIsWith(absl::StatusCode::kFailedPrecondition, "is not one"));
}

TEST(CheckPrivateFileTest, AFileAnotherUserOwnsIsRefused) {
  struct stat info = Info(0600, getegid());
  info.st_uid = 0;  // root's: root may change it anyway
  EXPECT_OK(CheckPrivateFile("f", info, "a password"));
  info.st_uid = geteuid() == 12345 ? 12346 : 12345;
  EXPECT_THAT(CheckPrivateFile("--admin-token-file t", info, "the admin token"),
              StatusIsWith(absl::StatusCode::kFailedPrecondition, "who could change it"));
}

TEST(CheckPrivateFileTest, OthersOrAWritableGroupAreRefusedWithTheFix) {
  for (mode_t mode : {0644, 0604, 0660, 0670, 0601}) {
    EXPECT_THAT(CheckPrivateFile("--database-file d", Info(mode, getegid()), "a password"),
                StatusIs(absl::StatusCode::kFailedPrecondition))
        << mode;
  }
  EXPECT_THAT(CheckPrivateFile("--database-file d", Info(0644, getegid()), "a password"),
              StatusIsWith(absl::StatusCode::kFailedPrecondition,
                           "--database-file d: permissions 0644 are too open: the file holds "
                           "a password"));
}

}  // namespace
}  // namespace tunefleet
