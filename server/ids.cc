#include "server/ids.h"

#include <random>

#include "absl/base/const_init.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace tunefleet::server {

std::string NewId(char prefix, absl::Time now) {
  static std::mt19937_64 rng(std::random_device{}());
  static absl::Mutex rng_mu(absl::kConstInit);
  absl::MutexLock lock(&rng_mu);
  return absl::StrFormat("%c%x%08x", prefix, absl::ToUnixMillis(now),
                         static_cast<unsigned>(rng() & 0xffffffff));
}

}  // namespace tunefleet::server
