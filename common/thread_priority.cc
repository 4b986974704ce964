#include "common/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tunefleet {
namespace {

id_t ThisThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }

}  // namespace

int ThisThreadNice() { return getpriority(PRIO_PROCESS, ThisThreadId()); }

absl::Status LowerThisThreadPriority(int nice) {
  if (nice <= 0) return absl::OkStatus();
  errno = 0;
  const int now = ThisThreadNice();
  if (errno == 0 && setpriority(PRIO_PROCESS, ThisThreadId(), std::min(19, now + nice)) == 0) {
    return absl::OkStatus();
  }
  return absl::InternalError(
      absl::StrCat("could not lower the thread's CPU priority: ", std::strerror(errno)));
}

}  // namespace tunefleet
