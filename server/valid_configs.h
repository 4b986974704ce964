// The valid configs of a space as runs of consecutive ordinals, found in one
// walk, with what the learning strategies need on top: the i-th valid config
// (for uniform sampling), and a config's digits (its value index per param)
// to mutate and cross configs, and back.
#ifndef TUNEFLEET_SERVER_VALID_CONFIGS_H_
#define TUNEFLEET_SERVER_VALID_CONFIGS_H_

#include <cstdint>
#include <vector>

#include "common/config_space.h"

namespace tunefleet::server {

// Consecutive valid ordinals [first, first + count).
struct OrdinalRun {
  uint64_t first = 0;
  uint64_t count = 0;
};

// Thread-safety: immutable after construction.
class ValidConfigs {
 public:
  // Walks `space` once, stopping once more than `stop_after` valid configs
  // are found (then truncated() is true and only that many are held).
  static ValidConfigs Collect(ConfigSpace* space, int64_t stop_after);

  uint64_t count() const { return count_; }
  bool truncated() const { return truncated_; }
  const std::vector<OrdinalRun>& runs() const { return runs_; }
  // The index-th valid config in ordinal order. REQUIRES: index < count().
  uint64_t At(uint64_t index) const;

 private:
  std::vector<OrdinalRun> runs_;
  std::vector<uint64_t> starts_;  // valid configs before each run
  uint64_t count_ = 0;
  bool truncated_ = false;
};

// A config as one value index per param (spec order), the ordinal's
// mixed-radix digits: the last param varies fastest.
class ConfigDigits {
 public:
  explicit ConfigDigits(const v1::KernelSpec& spec);
  int params() const { return static_cast<int>(radix_.size()); }
  int radix(int param) const { return radix_[param]; }
  std::vector<int> Digits(uint64_t ordinal) const;
  uint64_t Ordinal(const std::vector<int>& digits) const;
  // The param values of a config, as doubles (a model's raw features).
  std::vector<double> Values(uint64_t ordinal) const;

 private:
  std::vector<int> radix_;
  std::vector<uint64_t> weight_;  // ordinal weight of each param's digit
  std::vector<std::vector<double>> values_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_VALID_CONFIGS_H_
