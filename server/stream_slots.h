// StreamSlots: bounds the server streams open at once, per principal and in
// all. A WatchJob stream holds no thread (JobWatches) but holds memory for
// its whole life, so without a bound one read token could fill the
// coordinator's memory, or keep every other principal's watch out.
#ifndef TUNEFLEET_SERVER_STREAM_SLOTS_H_
#define TUNEFLEET_SERVER_STREAM_SLOTS_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use. A Slot is movable, not copyable,
// and must not outlive the StreamSlots that gave it.
class StreamSlots {
 public:
  // One open stream; gives its slot back when destroyed.
  class Slot {
   public:
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;
    ~Slot();

   private:
    friend class StreamSlots;
    Slot(StreamSlots* slots, std::string principal);
    StreamSlots* slots_;  // null once moved from
    std::string principal_;
  };

  // `per_principal` and `total`: the most streams open at once for one
  // principal and for everyone. REQUIRES: both >= 1.
  StreamSlots(int per_principal, int total);

  // A slot for `principal` ("" for an unauthenticated caller, which counts as
  // one principal). ResourceExhausted, naming the limit, when its share or
  // the total is taken.
  absl::StatusOr<Slot> Acquire(const std::string& principal);
  int open() const;

 private:
  void Release(const std::string& principal);

  const int per_principal_;
  const int total_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> open_ ABSL_GUARDED_BY(mu_);
  int open_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STREAM_SLOTS_H_
