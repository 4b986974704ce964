// Which pairs of param values the configs tried so far have covered: the
// basis of the adaptive strategies' spread-out draws. Two params interact
// most often pairwise (a block size with a warp count, a tile with a pipeline
// depth), so a draw that covers value pairs not seen yet reaches a region the
// results say nothing about sooner than a uniform draw does (the idea of
// pairwise covering arrays in combinatorial testing).
#ifndef TUNEFLEET_SERVER_PAIR_COVERAGE_H_
#define TUNEFLEET_SERVER_PAIR_COVERAGE_H_

#include <cstdint>
#include <vector>

#include "server/valid_configs.h"

namespace tunefleet::server {

// Thread-safety: not thread-safe.
class PairCoverage {
 public:
  // Coverage is kept only while the pairs number at most kMaxPairs; beyond
  // that (params with very many values) enabled() is false and every config
  // covers nothing new.
  static constexpr uint64_t kMaxPairs = uint64_t{1} << 20;

  explicit PairCoverage(const ConfigDigits& digits);

  bool enabled() const { return !covered_.empty(); }
  // Marks every value pair of `digits` (one value index per param) covered.
  void Add(const std::vector<int>& digits);
  // The value pairs of `digits` not covered yet; 0 when disabled.
  int Uncovered(const std::vector<int>& digits) const;

 private:
  // The index of the pair (p, digits[p]), (q, digits[q]), p < q.
  uint64_t Index(int p, int q, const std::vector<int>& digits) const;

  std::vector<int> radix_;
  std::vector<uint64_t> offset_;  // p * params + q -> first index of the pair (p, q)
  std::vector<bool> covered_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_PAIR_COVERAGE_H_
