// The CPU priority of the calling thread.
//
// On Linux the nice value is a per-thread attribute (setpriority on a thread
// id changes that thread only), and raising it needs no privilege. A thread
// that does bulk work lowers its own priority so that, on a saturated core,
// the threads that answer latency-bound calls are scheduled first: CFS
// weighs a thread at nice 10 about a tenth of one at nice 0.
#ifndef TUNEFLEET_COMMON_THREAD_PRIORITY_H_
#define TUNEFLEET_COMMON_THREAD_PRIORITY_H_

#include "absl/status/status.h"

namespace tunefleet {

// Adds `nice` (> 0) to the calling thread's nice value, at most up to 19;
// 0 or less changes nothing. Internal with errno's text when the kernel
// refuses.
absl::Status LowerThisThreadPriority(int nice);

// The calling thread's nice value.
int ThisThreadNice();

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_THREAD_PRIORITY_H_
