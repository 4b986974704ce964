#include "server/sweeps.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "server/ids.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {
absl::StatusOr<std::vector<v1::Shape>> SweepSubmitter::CheckShapes(
    const v1::JobSpec& spec, const std::vector<v1::Shape>& shapes) {
  if (shapes.empty()) return absl::InvalidArgumentError("shapes: a sweep needs at least one");
  if (shapes.size() > kMaxShapes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "shapes: ", shapes.size(), " shapes; a sweep holds at most ", kMaxShapes));
  }
  if (spec.shape().dims_size() > 0) {
    return absl::InvalidArgumentError("spec.shape: a sweep takes its shapes from `shapes`");
  }
  std::vector<v1::Shape> normalized;
  absl::flat_hash_set<std::string> seen;
  for (size_t i = 0; i < shapes.size(); ++i) {
    absl::StatusOr<v1::Shape> shape = NormalizeShape(spec.kernel(), shapes[i]);
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes[", i, "]: ", shape.status().message()));
    }
    if (!seen.insert(ShapeToString(*shape)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes[", i, "]: ", ShapeToString(*shape), " is given twice"));
    }
    normalized.push_back(*std::move(shape));
  }
  return normalized;
}

absl::StatusOr<SweepGrant> SweepSubmitter::Submit(const v1::JobSpec& spec,
                                                  const std::vector<v1::Shape>& shapes,
                                                  const std::string& owner) {
  ASSIGN_OR_RETURN(std::vector<v1::Shape> normalized, CheckShapes(spec, shapes));
  SweepGrant grant;
  grant.sweep_id = NewId('s', absl::Now());
  v1::JobSpec one = spec;
  one.set_sweep_id(grant.sweep_id);
  for (const v1::Shape& shape : normalized) {
    *one.mutable_shape() = shape;
    absl::StatusOr<v1::Job> job = jobs_->Submit(one, owner);
    if (!job.ok()) {
      // All or none: what was made before goes, and the error is the job's.
      for (const v1::Job& made : grant.jobs) (void)jobs_->Cancel(made.id());
      return absl::Status(job.status().code(),
                          absl::StrCat("shape ", ShapeToString(shape), ": ",
                                       job.status().message()));
    }
    grant.jobs.push_back(*std::move(job));
  }
  spdlog::info("sweep {} submitted by {}: kernel {}, {} shape(s)", grant.sweep_id,
               owner.empty() ? "(anonymous)" : owner, spec.kernel().name(), grant.jobs.size());
  return grant;
}

}  // namespace tunefleet::server
