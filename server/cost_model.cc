#include "server/cost_model.h"

#include <xgboost/c_api.h>

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace tunefleet::server {
namespace {

absl::Status Check(int code, const char* what) {
  if (code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", XGBGetLastError()));
}

// Owns a DMatrixHandle.
struct Matrix {
  DMatrixHandle handle = nullptr;
  ~Matrix() {
    if (handle != nullptr) XGDMatrixFree(handle);
  }
};

absl::Status MakeMatrix(const std::vector<float>& rows, int features, Matrix* matrix) {
  if (features <= 0 || rows.empty() || rows.size() % static_cast<size_t>(features) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(rows.size(), " values are not rows of ", features, " features"));
  }
  return Check(XGDMatrixCreateFromMat(rows.data(), rows.size() / features, features, NAN,
                                      &matrix->handle),
               "XGDMatrixCreateFromMat");
}

}  // namespace

CostModel::~CostModel() { Release(); }

void CostModel::Release() {
  if (booster_ != nullptr) XGBoosterFree(booster_);
  booster_ = nullptr;
}

absl::Status CostModel::Fit(const std::vector<float>& rows, int features,
                            const std::vector<float>& targets,
                            const std::vector<float>& weights) {
  Matrix train;
  if (absl::Status made = MakeMatrix(rows, features, &train); !made.ok()) return made;
  if (targets.size() != rows.size() / features) {
    return absl::InvalidArgumentError(
        absl::StrCat(targets.size(), " targets for ", rows.size() / features, " rows"));
  }
  if (!weights.empty() && weights.size() != targets.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(weights.size(), " weights for ", targets.size(), " rows"));
  }
  if (absl::Status s = Check(XGDMatrixSetFloatInfo(train.handle, "label", targets.data(),
                                                   targets.size()),
                             "XGDMatrixSetFloatInfo");
      !s.ok()) {
    return s;
  }
  if (!weights.empty()) {
    if (absl::Status s = Check(XGDMatrixSetFloatInfo(train.handle, "weight", weights.data(),
                                                     weights.size()),
                               "XGDMatrixSetFloatInfo");
        !s.ok()) {
      return s;
    }
  }
  Release();
  BoosterHandle booster = nullptr;
  if (absl::Status s = Check(XGBoosterCreate(&train.handle, 1, &booster), "XGBoosterCreate");
      !s.ok()) {
    return s;
  }
  booster_ = booster;
  const std::pair<const char*, std::string> params[] = {
      {"objective", "reg:squarederror"},
      {"tree_method", "exact"},
      {"nthread", "1"},
      {"verbosity", "0"},
      {"max_depth", std::to_string(options_.max_depth)},
      {"eta", std::to_string(options_.eta)},
      {"min_child_weight", "1"},
      {"seed", std::to_string(options_.seed)},
  };
  for (const auto& [name, value] : params) {
    if (absl::Status s = Check(XGBoosterSetParam(booster_, name, value.c_str()),
                               "XGBoosterSetParam");
        !s.ok()) {
      Release();
      return s;
    }
  }
  for (int round = 0; round < options_.rounds; ++round) {
    if (absl::Status s = Check(XGBoosterUpdateOneIter(booster_, round, train.handle),
                               "XGBoosterUpdateOneIter");
        !s.ok()) {
      Release();
      return s;
    }
  }
  features_ = features;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> CostModel::Predict(const std::vector<float>& rows,
                                                      int features) const {
  if (booster_ == nullptr) return absl::FailedPreconditionError("the model is not fitted");
  if (features != features_) {
    return absl::InvalidArgumentError(
        absl::StrCat("fitted on ", features_, " features, asked with ", features));
  }
  Matrix matrix;
  if (absl::Status made = MakeMatrix(rows, features, &matrix); !made.ok()) return made;
  bst_ulong length = 0;
  const float* out = nullptr;
  if (absl::Status s = Check(XGBoosterPredict(booster_, matrix.handle, 0, 0, 0, &length, &out),
                             "XGBoosterPredict");
      !s.ok()) {
    return s;
  }
  return std::vector<float>(out, out + length);
}

}  // namespace tunefleet::server
