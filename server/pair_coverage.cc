#include "server/pair_coverage.h"

namespace tunefleet::server {

PairCoverage::PairCoverage(const ConfigDigits& digits) {
  const int n = digits.params();
  radix_.resize(n);
  for (int p = 0; p < n; ++p) radix_[p] = digits.radix(p);
  offset_.assign(static_cast<size_t>(n) * n, 0);
  uint64_t pairs = 0;
  for (int p = 0; p < n; ++p) {
    for (int q = p + 1; q < n; ++q) {
      offset_[static_cast<size_t>(p) * n + q] = pairs;
      pairs += static_cast<uint64_t>(radix_[p]) * static_cast<uint64_t>(radix_[q]);
      if (pairs > kMaxPairs) return;  // disabled: covered_ stays empty
    }
  }
  covered_.assign(pairs, false);
}

uint64_t PairCoverage::Index(int p, int q, const std::vector<int>& digits) const {
  const size_t n = radix_.size();
  return offset_[p * n + q] + static_cast<uint64_t>(digits[p]) * radix_[q] +
         static_cast<uint64_t>(digits[q]);
}

void PairCoverage::Add(const std::vector<int>& digits) {
  if (!enabled()) return;
  const int n = static_cast<int>(radix_.size());
  for (int p = 0; p < n; ++p) {
    for (int q = p + 1; q < n; ++q) covered_[Index(p, q, digits)] = true;
  }
}

int PairCoverage::Uncovered(const std::vector<int>& digits) const {
  if (!enabled()) return 0;
  const int n = static_cast<int>(radix_.size());
  int uncovered = 0;
  for (int p = 0; p < n; ++p) {
    for (int q = p + 1; q < n; ++q) uncovered += covered_[Index(p, q, digits)] ? 0 : 1;
  }
  return uncovered;
}

}  // namespace tunefleet::server
