// tunefleet::BestConfigTable: an exported table, looked up offline in the
// coordinator's tiers (exact shape, nearest shape, default config).
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "client/best_table_json.h"
#include "common/config_text.h"
#include "common/status_macros.h"
#include "tunefleet/client.h"

namespace tunefleet {
namespace {

using Dims = std::map<std::string, int64_t>;

Dims DimsOf(const v1::Shape& shape) {
  Dims dims;
  for (const v1::DimValue& dim : shape.dims()) dims[dim.name()] = dim.value();
  return dims;
}

// Sum over the query's dims of |log(a / b)|; infinite when the row lacks one
// of them or a value is not positive.
double Distance(const Dims& query, const Dims& row) {
  if (query.size() != row.size()) return std::numeric_limits<double>::infinity();
  double distance = 0;
  for (const auto& [name, value] : query) {
    auto it = row.find(name);
    if (it == row.end() || value <= 0 || it->second <= 0) {
      return std::numeric_limits<double>::infinity();
    }
    distance += std::abs(std::log(static_cast<double>(value) / static_cast<double>(it->second)));
  }
  return distance;
}

void SetValues(const std::string& config, BestConfig* best) {
  absl::StatusOr<v1::Config> parsed = ParseConfig(config);
  if (!parsed.ok()) return;
  for (const v1::ParamValue& value : parsed->values()) best->values[value.name()] = value.value();
}

BestConfig Answer(const v1::ExportedBest& row, double distance) {
  BestConfig best;
  best.source = distance == 0 ? BestConfig::Source::kExact : BestConfig::Source::kNearestShape;
  best.config = row.config_text();
  SetValues(row.config_text(), &best);
  best.median_seconds = row.median_seconds();
  best.tuning_key = row.tuning_key();
  best.job_id = row.job_id();
  best.tuned_shape = row.shape();
  best.device_model = row.device_model();
  best.toolkit = row.toolkit();
  return best;
}

}  // namespace

// The loaded rows by kernel, each parsed once.
struct BestConfigTable::Rows {
  struct Row {
    v1::ExportedBest row;
    Dims dims;
  };
  std::map<std::string, std::vector<Row>> by_kernel;
  std::map<std::string, std::string> default_config;  // by kernel
  size_t size = 0;
};

BestConfigTable::BestConfigTable(std::shared_ptr<const Rows> rows) : rows_(std::move(rows)) {}

absl::StatusOr<BestConfigTable> BestConfigTable::Load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << file.rdbuf();
  return Parse(text.str());
}

absl::StatusOr<BestConfigTable> BestConfigTable::Parse(const std::string& json) {
  ASSIGN_OR_RETURN(v1::ExportBestResponse table, client_internal::BestTableFromJson(json));
  auto rows = std::make_shared<Rows>();
  for (const v1::ExportedKernel& kernel : table.kernels()) {
    rows->default_config[kernel.spec().kernel().name()] = kernel.spec().kernel().default_config();
  }
  for (const v1::ExportedBest& row : table.rows()) {
    absl::StatusOr<v1::Shape> shape = ParseShape(row.shape());
    if (!shape.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("row ", row.tuning_key(), ": ", shape.status().message()));
    }
    rows->by_kernel[row.kernel_name()].push_back({row, DimsOf(*shape)});
    ++rows->size;
  }
  return BestConfigTable(std::move(rows));
}

size_t BestConfigTable::size() const { return rows_->size; }

absl::StatusOr<BestConfig> BestConfigTable::Lookup(const std::string& kernel,
                                                   const std::string& shape,
                                                   const std::string& device_model,
                                                   const std::string& toolkit) const {
  ASSIGN_OR_RETURN(v1::Shape parsed, ParseShape(shape));
  const Dims query = DimsOf(parsed);
  const Rows::Row* nearest = nullptr;
  double nearest_distance = std::numeric_limits<double>::infinity();
  static const std::vector<Rows::Row> kNoRows;
  auto rows = rows_->by_kernel.find(kernel);
  for (const Rows::Row& row : rows == rows_->by_kernel.end() ? kNoRows : rows->second) {
    if ((!device_model.empty() && row.row.device_model() != device_model) ||
        (!toolkit.empty() && row.row.toolkit() != toolkit)) {
      continue;
    }
    const double distance = Distance(query, row.dims);
    if (distance < nearest_distance ||
        (distance == nearest_distance && nearest != nullptr &&
         row.row.tuning_key() < nearest->row.tuning_key())) {
      nearest = &row;
      nearest_distance = distance;
    }
  }
  if (nearest != nullptr) return Answer(nearest->row, nearest_distance);
  auto fallback = rows_->default_config.find(kernel);
  if (fallback == rows_->default_config.end()) {
    return absl::NotFoundError(absl::StrCat("the table has no kernel ", kernel));
  }
  BestConfig best;
  best.source = BestConfig::Source::kDefault;
  best.config = fallback->second;
  SetValues(fallback->second, &best);
  best.device_model = device_model;
  best.toolkit = toolkit;
  return best;
}

}  // namespace tunefleet
