#include "server/best_transfer.h"

#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/status_macros.h"
#include "common/tuning_key.h"
#include "common/version.h"

namespace tunefleet::server {
namespace {

using Specs = std::map<std::string, v1::JobSpec>;  // by kernel name

absl::StatusOr<Specs> StoredSpecs(Store* store) {
  ASSIGN_OR_RETURN(std::vector<KernelRecord> kernels, store->ListKernels());
  Specs specs;
  for (const KernelRecord& kernel : kernels) {
    v1::JobSpec spec;
    if (spec.ParseFromString(kernel.spec)) specs.emplace(kernel.name, std::move(spec));
  }
  return specs;
}

// Whether `spec`'s code gives the row its key: the rule by which the
// BestConfigIndex serves a row.
bool TunedWith(const v1::JobSpec& spec, const std::string& tuning_key, const std::string& shape,
               const std::string& device_model, const std::string& toolkit) {
  absl::StatusOr<v1::Shape> parsed = ParseShape(shape);
  if (!parsed.ok()) return false;
  std::vector<v1::SourceFile> sources;
  for (const v1::SourceFile& file : spec.sources()) {
    v1::SourceFile& kept = sources.emplace_back();
    kept.set_path(file.path());
    kept.set_digest(file.digest());
  }
  return ComputeTuningKey({&spec.kernel(), &sources, *parsed, device_model, toolkit}) ==
         tuning_key;
}

v1::ExportedBest ToExported(const BestRecord& row) {
  v1::ExportedBest out;
  out.set_tuning_key(row.tuning_key);
  out.set_kernel_name(row.kernel_name);
  out.set_shape(row.shape);
  out.set_device_model(row.device_model);
  out.set_toolkit(row.toolkit);
  out.set_config_text(row.config);
  out.set_median_seconds(row.median_seconds);
  out.set_job_id(row.job_id);
  out.set_updated_unix_ms(row.updated_unix_ms);
  out.set_imported(row.imported);
  out.set_origin(row.origin);
  if (!row.evidence.empty() && !out.mutable_evidence()->ParseFromString(row.evidence)) {
    out.clear_evidence();
  }
  return out;
}

// The row to store: the exporting fleet's provenance, marked imported here.
absl::StatusOr<BestRecord> FromExported(const v1::ExportedBest& row, const std::string& origin) {
  const std::string where = absl::StrCat("row ", row.tuning_key());
  if (row.tuning_key().empty() || row.kernel_name().empty()) {
    return absl::InvalidArgumentError("every row needs a tuning_key and a kernel_name");
  }
  if (!ParseShape(row.shape()).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": shape \"", row.shape(), "\" does not parse"));
  }
  if (row.config_text().empty() || !ParseConfig(row.config_text()).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": config \"", row.config_text(), "\" does not parse"));
  }
  if (!std::isfinite(row.median_seconds()) || row.median_seconds() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": median_seconds must be >= 0"));
  }
  // The evidence is the exporting fleet's, as the provenance is.
  return BestRecord{row.tuning_key(),   row.kernel_name(), row.shape(),
                    row.device_model(), row.toolkit(),     row.config_text(),
                    row.median_seconds(), row.job_id(),   row.updated_unix_ms(),
                    /*imported=*/true,  origin,            row.has_evidence()
                                                               ? row.evidence().SerializeAsString()
                                                               : std::string()};
}

absl::Status CheckKernels(const v1::ImportBestRequest& request) {
  for (const v1::ExportedKernel& kernel : request.kernels()) {
    if (kernel.spec().kernel().name().empty()) {
      return absl::InvalidArgumentError("every kernel needs its spec and name");
    }
  }
  return absl::OkStatus();
}

}  // namespace

BestTransfer::BestTransfer(Store* store, BestConfigIndex* index,
                           std::function<int64_t()> now_unix_ms)
    : store_(store), index_(index), now_unix_ms_(std::move(now_unix_ms)) {}

absl::StatusOr<v1::ExportBestResponse> BestTransfer::Export(const std::string& kernel_name,
                                                            const std::string& device_model) {
  ASSIGN_OR_RETURN(Specs specs, StoredSpecs(store_));
  if (!kernel_name.empty() && !specs.contains(kernel_name)) {
    return absl::NotFoundError(absl::StrCat("kernel ", kernel_name, " was never submitted here"));
  }
  ASSIGN_OR_RETURN(std::vector<BestRecord> rows, store_->ListBest(kernel_name, device_model, ""));
  v1::ExportBestResponse response;
  std::map<std::string, bool> kernels;  // the kernels the table names
  if (!kernel_name.empty()) kernels[kernel_name] = true;
  for (const BestRecord& row : rows) {
    auto spec = specs.find(row.kernel_name);
    if (spec == specs.end() ||
        !TunedWith(spec->second, row.tuning_key, row.shape, row.device_model, row.toolkit)) {
      continue;  // tuned with older code: not served, not exported
    }
    *response.add_rows() = ToExported(row);
    kernels[row.kernel_name] = true;
  }
  for (const auto& [name, unused] : kernels) *response.add_kernels()->mutable_spec() = specs[name];
  response.set_coordinator_version(kVersion);
  response.set_exported_unix_ms(now_unix_ms_());
  return response;
}

absl::StatusOr<ImportSummary> BestTransfer::Import(const v1::ImportBestRequest& request) {
  if (request.origin().empty()) return absl::InvalidArgumentError("origin is required");
  RETURN_IF_ERROR(CheckKernels(request));
  std::vector<BestRecord> rows;
  for (const v1::ExportedBest& row : request.rows()) {
    ASSIGN_OR_RETURN(rows.emplace_back(), FromExported(row, request.origin()));
  }
  ASSIGN_OR_RETURN(Specs specs, StoredSpecs(store_));
  ImportSummary summary;
  for (const v1::ExportedKernel& kernel : request.kernels()) {
    const std::string& name = kernel.spec().kernel().name();
    if (specs.contains(name)) continue;  // this fleet's newest code decides
    v1::JobSpec spec = kernel.spec();
    for (v1::SourceFile& file : *spec.mutable_sources()) file.clear_content();
    RETURN_IF_ERROR(store_->PutKernel({name, spec.SerializeAsString(), now_unix_ms_()}));
    index_->PutKernel(spec);
    specs.emplace(name, std::move(spec));
    ++summary.kernels_added;
  }
  for (const BestRecord& row : rows) {
    ASSIGN_OR_RETURN(bool written, store_->ImportBest(row, request.overwrite()));
    if (!written) {
      ++summary.kept_measured;
      continue;
    }
    index_->ReplaceBest(row);
    ++summary.imported;
    auto spec = specs.find(row.kernel_name);
    if (spec == specs.end() ||
        !TunedWith(spec->second, row.tuning_key, row.shape, row.device_model, row.toolkit)) {
      ++summary.not_served;
    }
  }
  return summary;
}

}  // namespace tunefleet::server
