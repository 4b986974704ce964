// The tuned shapes of one (kernel, device model, toolkit): which rows were
// tuned for exactly a given shape, and which row is nearest to it.
#ifndef TUNEFLEET_SERVER_TUNED_SHAPES_H_
#define TUNEFLEET_SERVER_TUNED_SHAPES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"

namespace tunefleet::server {

// A shape as the dims of the kernel's spec, in spec order, each converted to
// double (the precision in which shape distances are computed).
using ShapePoint = absl::InlinedVector<double, 4>;

// A requested shape, prepared once and asked of every group it may match.
struct ShapeQuery {
  // REQUIRES: every value > 0 (a normalized shape).
  explicit ShapeQuery(absl::Span<const int64_t> values);
  ShapePoint point;
  std::vector<double> logs;  // log of each value of `point`
};

// A row's distance to a query and its key.
// REQUIRES: `tuning_key` points into the TunedShapes that made it, which
// must not change while the match is in use.
struct ShapeMatch {
  const std::string* tuning_key = nullptr;
  double distance = 0;
};

// True when `a` is preferred: a smaller distance, then a smaller tuning key
// (the order in which the store lists rows).
bool Precedes(const ShapeMatch& a, const ShapeMatch& b);

// Distance between shapes: the sum over dims of |log(a / b)|, so shapes that
// differ by the same factor in any dimension are equally near. It is 0
// exactly when every dim of the two points is equal.
//
// Thread-safety: not thread-safe; owned and locked by the BestConfigIndex.
class TunedShapes {
 public:
  // `dims`: how many problem dims every point has.
  explicit TunedShapes(size_t dims) : dims_(dims) {}

  // Adds the row `tuning_key` at `values` (the row's dims in spec order),
  // replacing a row with the same key. `tag` is the caller's, handed to
  // NearestWhere's filter (the BestConfigIndex's id of the row's config).
  // REQUIRES: values.size() == dims and every value > 0.
  void Put(const std::string& tuning_key, absl::Span<const int64_t> values, uint32_t tag = 0);
  // Removes the row `tuning_key`; nothing when there is none.
  void Remove(const std::string& tuning_key);

  // The row at exactly `query`'s point with the smallest tuning key; one
  // hash lookup. REQUIRES: query.point.size() == dims.
  std::optional<ShapeMatch> Exact(const ShapeQuery& query) const;
  // The row nearest to `query` (ties to the smallest tuning key), or none
  // when empty. Rows are visited outwards from the query's first dim, in the
  // order of their first dim's log, and the walk stops in each direction
  // once that dim alone is farther than the nearest row found: the distance
  // is at least the first dim's term. REQUIRES: query.point.size() == dims.
  std::optional<ShapeMatch> Nearest(const ShapeQuery& query) const;
  // The nearest row whose tag `accept` takes (ties to the smallest tuning
  // key), or none. The same walk, bounded by the nearest row accepted so
  // far: `accept` is called for each row within the bound (every row when
  // none is accepted, at the cost of an approximate distance and one call
  // per row). REQUIRES: query.point.size() == dims.
  std::optional<ShapeMatch> NearestWhere(const ShapeQuery& query,
                                         absl::FunctionRef<bool(uint32_t tag)> accept) const;
  // The `k` rows nearest to `query`, nearest first (Precedes), the exact
  // row included. Visits every row: for planning, not for lookups.
  std::vector<ShapeMatch> NearestK(const ShapeQuery& query, size_t k) const;

  size_t size() const { return keys_.size(); }

 private:
  double ApproximateDistance(size_t row, const ShapeQuery& query) const;
  // Calls `visit(row)` for every row whose first-dim term alone could be
  // within `*bound` (which `visit` may lower), nearest first dim first.
  template <typename Visit>
  void VisitOutwards(const ShapeQuery& query, const double* bound, Visit visit) const;
  template <typename Accept>
  std::optional<ShapeMatch> NearestAccepted(const ShapeQuery& query, Accept accept) const;
  double Distance(size_t row, const ShapeQuery& query) const;
  void MoveRow(size_t from, size_t to);

  const size_t dims_;
  // Row i: keys_[i], tags_[i], its point at points_[i * dims_ ...], their
  // logs at logs_[i * dims_ ...]. Rows have no order; removal moves the last
  // row in.
  std::vector<std::string> keys_;
  std::vector<uint32_t> tags_;
  std::vector<double> points_;
  std::vector<double> logs_;
  absl::flat_hash_map<std::string, size_t> row_of_;
  absl::flat_hash_map<ShapePoint, absl::InlinedVector<size_t, 1>> rows_at_;
  // (log of the first dim, row) of every row, sorted; empty when dims_ == 0.
  std::vector<std::pair<double, size_t>> by_first_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TUNED_SHAPES_H_
