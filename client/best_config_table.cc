// tunefleet::BestConfigTable: an exported table, looked up offline in the
// coordinator's tiers (exact shape, nearest shape valid at the asked shape,
// default config).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "client/best_table_json.h"
#include "client/convert.h"
#include "common/config_fit.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
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
  client_internal::SetEvidence(row.evidence(), &best);
  return best;
}

}  // namespace

// The loaded rows by kernel, each parsed once, and the specs the table carries.
struct BestConfigTable::Rows {
  struct Row {
    v1::ExportedBest row;
    Dims dims;
    absl::StatusOr<v1::Config> config;
  };
  struct Kernel {
    v1::KernelSpec spec;
    // Whether a row's config fits a shape; nullptr when the spec's
    // constraints do not compile (then no nearest row is served).
    std::unique_ptr<const ConfigFit> fit;

    // The values of `shape` in spec order; nullopt when it is not a shape of
    // the spec (NormalizeShape).
    std::optional<std::vector<int64_t>> SpecDims(const v1::Shape& shape) const {
      absl::StatusOr<v1::Shape> normalized = NormalizeShape(spec, shape);
      if (!normalized.ok()) return std::nullopt;
      std::vector<int64_t> dims;
      for (const v1::DimValue& dim : normalized->dims()) dims.push_back(dim.value());
      return dims;
    }
    // Whether `row`'s config fits the shape `dims` (SpecDims).
    bool Fits(const std::optional<std::vector<int64_t>>& dims, const Row& row) const {
      return fit != nullptr && dims.has_value() && row.config.ok() && fit->Fits(*dims, *row.config);
    }
  };
  std::map<std::string, std::vector<Row>> by_kernel;
  std::map<std::string, Kernel> kernels;  // by name
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
    Rows::Kernel& code = rows->kernels[kernel.spec().kernel().name()];
    code.spec = kernel.spec().kernel();
    absl::StatusOr<std::unique_ptr<ConfigFit>> fit = ConfigFit::Create(code.spec);
    code.fit = fit.ok() ? *std::move(fit) : nullptr;
  }
  for (const v1::ExportedBest& row : table.rows()) {
    absl::StatusOr<v1::Shape> shape = ParseShape(row.shape());
    if (!shape.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("row ", row.tuning_key(), ": ", shape.status().message()));
    }
    rows->by_kernel[row.kernel_name()].push_back(
        {row, DimsOf(*shape), ParseConfig(row.config_text())});
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
  auto known = rows_->kernels.find(kernel);
  const Rows::Kernel* code = known == rows_->kernels.end() ? nullptr : &known->second;
  // Every row of the kernel, model and toolkit at a finite distance, nearest
  // first, ties to the smallest tuning key.
  std::vector<std::pair<double, const Rows::Row*>> near;
  auto rows = rows_->by_kernel.find(kernel);
  if (rows != rows_->by_kernel.end()) {
    for (const Rows::Row& row : rows->second) {
      if ((!device_model.empty() && row.row.device_model() != device_model) ||
          (!toolkit.empty() && row.row.toolkit() != toolkit)) {
        continue;
      }
      const double distance = Distance(query, row.dims);
      if (distance != std::numeric_limits<double>::infinity()) near.emplace_back(distance, &row);
    }
  }
  std::sort(near.begin(), near.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second->row.tuning_key() < b.second->row.tuning_key();
  });
  if (!near.empty() && near.front().first == 0) return Answer(near.front().second->row, 0);
  if (code == nullptr) {
    return absl::NotFoundError(absl::StrCat("the table has no spec of kernel ", kernel));
  }
  const std::optional<std::vector<int64_t>> dims = code->SpecDims(parsed);
  absl::flat_hash_map<absl::string_view, bool> fits;  // by config text: each checked once
  for (const auto& [distance, row] : near) {
    auto [verdict, added] = fits.try_emplace(row->row.config_text(), false);
    if (added) verdict->second = code->Fits(dims, *row);
    if (verdict->second) return Answer(row->row, distance);
  }
  BestConfig best;
  best.source = BestConfig::Source::kDefault;
  best.config = code->spec.default_config();
  SetValues(best.config, &best);
  best.device_model = device_model;
  best.toolkit = toolkit;
  return best;
}

}  // namespace tunefleet
