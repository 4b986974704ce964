#include "server/tuned_shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tunefleet::server {

ShapeQuery::ShapeQuery(absl::Span<const int64_t> values) {
  for (int64_t value : values) {
    point.push_back(static_cast<double>(value));
    logs.push_back(std::log(point.back()));
  }
}

bool Precedes(const ShapeMatch& a, const ShapeMatch& b) {
  if (a.distance != b.distance) return a.distance < b.distance;
  return *a.tuning_key < *b.tuning_key;
}

void TunedShapes::Put(const std::string& tuning_key, absl::Span<const int64_t> values,
                      uint32_t tag) {
  Remove(tuning_key);
  const size_t row = keys_.size();
  keys_.push_back(tuning_key);
  tags_.push_back(tag);
  ShapePoint point;
  for (int64_t value : values) {
    point.push_back(static_cast<double>(value));
    points_.push_back(point.back());
    logs_.push_back(std::log(point.back()));
  }
  row_of_[tuning_key] = row;
  rows_at_[point].push_back(row);
  if (dims_ > 0) {
    const std::pair<double, size_t> entry(logs_[row * dims_], row);
    by_first_.insert(std::lower_bound(by_first_.begin(), by_first_.end(), entry), entry);
  }
}

void TunedShapes::Remove(const std::string& tuning_key) {
  auto it = row_of_.find(tuning_key);
  if (it == row_of_.end()) return;
  const size_t row = it->second;
  row_of_.erase(it);
  ShapePoint point(points_.begin() + row * dims_, points_.begin() + (row + 1) * dims_);
  auto at = rows_at_.find(point);
  at->second.erase(std::find(at->second.begin(), at->second.end(), row));
  if (at->second.empty()) rows_at_.erase(at);
  if (dims_ > 0) {
    by_first_.erase(std::lower_bound(by_first_.begin(), by_first_.end(),
                                     std::make_pair(logs_[row * dims_], row)));
  }
  const size_t last = keys_.size() - 1;
  if (row != last) MoveRow(last, row);
  keys_.pop_back();
  tags_.pop_back();
  points_.resize(last * dims_);
  logs_.resize(last * dims_);
}

void TunedShapes::MoveRow(size_t from, size_t to) {
  if (dims_ > 0) {
    const double first = logs_[from * dims_];
    auto entry = std::lower_bound(by_first_.begin(), by_first_.end(),
                                  std::make_pair(first, from));
    by_first_.erase(entry);
    const std::pair<double, size_t> moved(first, to);
    by_first_.insert(std::lower_bound(by_first_.begin(), by_first_.end(), moved), moved);
  }
  keys_[to] = std::move(keys_[from]);
  tags_[to] = tags_[from];
  std::copy_n(points_.begin() + from * dims_, dims_, points_.begin() + to * dims_);
  std::copy_n(logs_.begin() + from * dims_, dims_, logs_.begin() + to * dims_);
  row_of_[keys_[to]] = to;
  ShapePoint point(points_.begin() + to * dims_, points_.begin() + (to + 1) * dims_);
  absl::InlinedVector<size_t, 1>& rows = rows_at_[point];
  *std::find(rows.begin(), rows.end(), from) = to;
}

std::optional<ShapeMatch> TunedShapes::Exact(const ShapeQuery& query) const {
  auto at = rows_at_.find(query.point);
  if (at == rows_at_.end()) return std::nullopt;
  const std::string* first = nullptr;
  for (size_t row : at->second) {
    if (first == nullptr || keys_[row] < *first) first = &keys_[row];
  }
  return ShapeMatch{first, /*distance=*/0};
}

template <typename Visit>
void TunedShapes::VisitOutwards(const ShapeQuery& query, const double* bound,
                                Visit visit) const {
  if (dims_ == 0) {
    for (size_t row = 0; row < keys_.size(); ++row) visit(row);
    return;
  }
  const double q = query.logs[0];
  auto right = std::lower_bound(by_first_.begin(), by_first_.end(),
                                std::make_pair(q, size_t{0}));
  auto left = std::make_reverse_iterator(right);
  bool go_right = right != by_first_.end();
  bool go_left = left != by_first_.rend();
  while (go_right || go_left) {
    if (go_right) {
      if (right->first - q > *bound) {
        go_right = false;
      } else {
        visit(right->second);
        go_right = ++right != by_first_.end();
      }
    }
    if (go_left) {
      if (q - left->first > *bound) {
        go_left = false;
      } else {
        visit(left->second);
        go_left = ++left != by_first_.rend();
      }
    }
  }
}

std::optional<ShapeMatch> TunedShapes::Nearest(const ShapeQuery& query) const {
  return NearestAccepted(query, [](uint32_t) { return true; });
}

std::optional<ShapeMatch> TunedShapes::NearestWhere(
    const ShapeQuery& query, absl::FunctionRef<bool(uint32_t tag)> accept) const {
  return NearestAccepted(query, accept);
}

template <typename Accept>
std::optional<ShapeMatch> TunedShapes::NearestAccepted(const ShapeQuery& query,
                                                       Accept accept) const {
  if (keys_.empty()) return std::nullopt;
  // A difference of logs rounds unlike the log of a ratio, which defines the
  // distance: every row within rounding of the smallest is measured exactly,
  // so near-ties fall as a scan of the rows in key order decides them. The
  // two differ by a few ulps of log(INT64_MAX) per dim, far below the slack.
  auto slack = [](double distance) { return 1e-9 * (1 + distance); };
  double smallest = std::numeric_limits<double>::infinity();
  double bound = smallest;
  std::vector<std::pair<size_t, double>> candidates;  // within the bound when seen
  VisitOutwards(query, &bound, [&](size_t row) {
    const double distance = ApproximateDistance(row, query);
    if (distance > bound || !accept(tags_[row])) return;
    candidates.emplace_back(row, distance);
    if (distance < smallest) {
      smallest = distance;
      bound = smallest + slack(smallest);
    }
  });
  std::optional<ShapeMatch> nearest;
  for (const auto& [row, distance] : candidates) {
    if (distance > bound) continue;  // nearer rows came later
    ShapeMatch match{&keys_[row], Distance(row, query)};
    if (!nearest.has_value() || Precedes(match, *nearest)) nearest = match;
  }
  return nearest;
}

std::vector<ShapeMatch> TunedShapes::NearestK(const ShapeQuery& query, size_t k) const {
  std::vector<ShapeMatch> matches;
  matches.reserve(keys_.size());
  for (size_t row = 0; row < keys_.size(); ++row) {
    matches.push_back(ShapeMatch{&keys_[row], Distance(row, query)});
  }
  const size_t keep = std::min(k, matches.size());
  std::partial_sort(matches.begin(), matches.begin() + static_cast<std::ptrdiff_t>(keep),
                    matches.end(), Precedes);
  matches.resize(keep);
  return matches;
}

double TunedShapes::ApproximateDistance(size_t row, const ShapeQuery& query) const {
  const double* logs = logs_.data() + row * dims_;
  double distance = 0;
  for (size_t dim = 0; dim < dims_; ++dim) distance += std::abs(query.logs[dim] - logs[dim]);
  return distance;
}

double TunedShapes::Distance(size_t row, const ShapeQuery& query) const {
  const double* point = points_.data() + row * dims_;
  double distance = 0;
  for (size_t dim = 0; dim < dims_; ++dim) {
    distance += std::abs(std::log(query.point[dim] / point[dim]));
  }
  return distance;
}

}  // namespace tunefleet::server
