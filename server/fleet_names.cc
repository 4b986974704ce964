#include "server/fleet_names.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/suggest.h"

namespace tunefleet::server {
namespace {

// `what`: "kernel" or "device model"; `none`: why nothing is known yet.
absl::Status Unknown(absl::string_view field, absl::string_view what, const std::string& name,
                     std::vector<std::string> known, absl::string_view none) {
  std::string message =
      absl::StrCat(field, " \"", name, "\" names no ", what, " this coordinator knows");
  if (known.empty()) {
    return absl::NotFoundError(absl::StrCat(message, "; it knows none yet: ", none));
  }
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  const size_t total = known.size();
  std::vector<std::string> listed = NamesToList(name, std::move(known));
  const std::string names = absl::StrJoin(listed, ", ", [](std::string* out, const std::string& n) {
    absl::StrAppend(out, "\"", n, "\"");
  });
  if (listed.size() == total) {
    return absl::NotFoundError(absl::StrCat(message, "; known ", what, "s: ", names));
  }
  return absl::NotFoundError(
      absl::StrCat(message, "; the nearest of its ", total, " known ", what, "s: ", names));
}

}  // namespace

FleetNames::FleetNames(const BestConfigIndex* index, const WorkerRegistry* workers)
    : index_(index), workers_(workers) {}

absl::Status FleetNames::CheckKernel(absl::string_view field, const std::string& name) const {
  if (name.empty()) return absl::OkStatus();
  std::vector<std::string> known;
  if (index_ != nullptr) known = index_->KernelNames();
  if (std::binary_search(known.begin(), known.end(), name)) return absl::OkStatus();
  return Unknown(field, "kernel", name, std::move(known), "no kernel was submitted or imported");
}

absl::Status FleetNames::CheckDeviceModel(absl::string_view field, const std::string& model) const {
  if (model.empty()) return absl::OkStatus();
  if (index_ != nullptr && index_->HasDeviceModel(model)) return absl::OkStatus();
  if (workers_->SawModel(model)) return absl::OkStatus();
  std::vector<std::string> known = workers_->SeenModels();
  if (index_ != nullptr) {
    for (std::string& row_model : index_->DeviceModels()) known.push_back(std::move(row_model));
  }
  return Unknown(field, "device model", model, std::move(known),
                 "no worker has registered and no stored best config names a model");
}

}  // namespace tunefleet::server
