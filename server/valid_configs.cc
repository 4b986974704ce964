#include "server/valid_configs.h"

#include <algorithm>

namespace tunefleet::server {

ValidConfigs ValidConfigs::Collect(ConfigSpace* space, int64_t stop_after) {
  ValidConfigs valid;
  ConfigEnumerator enumerator(space);
  OrdinalRun run;
  const uint64_t cap = static_cast<uint64_t>(std::max<int64_t>(stop_after, 0));
  while (valid.count_ <= cap && enumerator.NextRun(&run.first, &run.count)) {
    valid.count_ += run.count;
    OrdinalRun* last = valid.runs_.empty() ? nullptr : &valid.runs_.back();
    if (last != nullptr && last->first + last->count == run.first) {
      last->count += run.count;
    } else {
      valid.runs_.push_back(run);
    }
  }
  if (valid.count_ > cap) {
    valid.truncated_ = true;
    // Keep exactly `cap` + 1 (callers only ask whether it is over the cap).
  }
  uint64_t before = 0;
  valid.starts_.reserve(valid.runs_.size());
  for (const OrdinalRun& r : valid.runs_) {
    valid.starts_.push_back(before);
    before += r.count;
  }
  return valid;
}

uint64_t ValidConfigs::At(uint64_t index) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), index);
  const size_t run = static_cast<size_t>(it - starts_.begin()) - 1;
  return runs_[run].first + (index - starts_[run]);
}

ConfigDigits::ConfigDigits(const v1::KernelSpec& spec) {
  const int n = spec.params_size();
  radix_.resize(n);
  weight_.resize(n);
  values_.resize(n);
  uint64_t weight = 1;
  for (int i = n - 1; i >= 0; --i) {
    const v1::Parameter& param = spec.params(i);
    radix_[i] = std::max(1, param.values_size());
    weight_[i] = weight;
    weight *= static_cast<uint64_t>(radix_[i]);
    for (int64_t value : param.values()) values_[i].push_back(static_cast<double>(value));
    if (values_[i].empty()) values_[i].push_back(0);
  }
}

std::vector<int> ConfigDigits::Digits(uint64_t ordinal) const {
  std::vector<int> digits(radix_.size());
  for (size_t i = 0; i < radix_.size(); ++i) {
    digits[i] = static_cast<int>((ordinal / weight_[i]) % static_cast<uint64_t>(radix_[i]));
  }
  return digits;
}

uint64_t ConfigDigits::Ordinal(const std::vector<int>& digits) const {
  uint64_t ordinal = 0;
  for (size_t i = 0; i < radix_.size(); ++i) {
    ordinal += static_cast<uint64_t>(digits[i]) * weight_[i];
  }
  return ordinal;
}

std::vector<double> ConfigDigits::Values(uint64_t ordinal) const {
  std::vector<double> values(radix_.size());
  for (size_t i = 0; i < radix_.size(); ++i) {
    values[i] = values_[i][(ordinal / weight_[i]) % static_cast<uint64_t>(radix_[i])];
  }
  return values;
}

}  // namespace tunefleet::server
