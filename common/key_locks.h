// KeyLocks: a lock per string key, for work that must not overlap for one
// key (publishing one artifact key, building one artifact) while other keys
// go on. Only keys in use take memory.
//
//   KeyLocks locks;
//   {
//     KeyLocks::Hold hold(&locks, key);  // waits while another holds `key`
//     ...
//   }
#ifndef TUNEFLEET_COMMON_KEY_LOCKS_H_
#define TUNEFLEET_COMMON_KEY_LOCKS_H_

#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace tunefleet {

// Thread-safety: safe for concurrent use. Not reentrant: a thread that holds
// a key and asks for it again waits for good.
class KeyLocks {
 public:
  // Holds `key` from construction (waiting for it) to destruction.
  class Hold {
   public:
    Hold(KeyLocks* locks, std::string key) : locks_(locks), key_(std::move(key)) {
      locks_->Acquire(key_);
    }
    ~Hold() { locks_->Release(key_); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    KeyLocks* const locks_;
    const std::string key_;
  };

 private:
  void Acquire(const std::string& key) {
    absl::MutexLock lock(&mu_);
    auto free = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !held_.contains(key); };
    mu_.Await(absl::Condition(&free));
    held_.insert(key);
  }
  void Release(const std::string& key) {
    absl::MutexLock lock(&mu_);
    held_.erase(key);
  }

  absl::Mutex mu_;
  absl::flat_hash_set<std::string> held_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_KEY_LOCKS_H_
