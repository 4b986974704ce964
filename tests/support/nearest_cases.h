// The shared nearest-shape fallback cases (tests/data/nearest_fallback.json),
// read for the C++ tests of the BestConfigIndex, the BestConfigTable and
// ConfigFit; tests/python/test_offline.py reads the same file.
#ifndef TUNEFLEET_TESTS_SUPPORT_NEAREST_CASES_H_
#define TUNEFLEET_TESTS_SUPPORT_NEAREST_CASES_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::testing {

// A tuned row of a case; `id` names it in the case's answer.
struct NearestRow {
  std::string id;
  std::string shape;
  std::string config;
  std::string device_model;
  std::string toolkit;
};

// Rows, a question and its answer: `tier` is "EXACT", "NEAREST" or
// "DEFAULT"; the served row is `row`, else the row of the smallest tuning
// key among `smallest_key_of`; a DEFAULT answer is `config`.
struct NearestCase {
  std::string name;
  v1::JobSpec spec;  // the kernel's spec, with its sources when a kernel dir
  std::vector<NearestRow> rows;
  std::string shape;
  std::string device_model;
  std::string toolkit;
  std::string tier;
  std::string row;
  std::vector<std::string> smallest_key_of;
  std::string config;

  // The id of the row the answer serves, given each row's tuning key.
  std::string ServedRow(const std::function<std::string(const NearestRow&)>& key_of) const;
  const NearestRow& Row(const std::string& id) const;
};

// An expression of the spec syntax and its value with `names` bound.
struct ExpressionCase {
  std::string expr;
  std::map<std::string, double> names;
  double value = 0;
};

// The cases of the file; InvalidArgument or NotFound when it cannot be read.
absl::StatusOr<std::vector<NearestCase>> LoadNearestCases();
absl::StatusOr<std::vector<ExpressionCase>> LoadExpressionCases();

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_SUPPORT_NEAREST_CASES_H_
