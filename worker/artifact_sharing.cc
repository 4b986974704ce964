#include "worker/artifact_sharing.h"

#include <filesystem>
#include <iterator>
#include <system_error>
#include <utility>

#include "common/file_util.h"
#include "spdlog/spdlog.h"

namespace tunefleet::worker {

namespace {

// Beside an artifact this worker fetched rather than compiled: an own build
// compiles it again.
std::string FetchedMarker(const ArtifactLocation& where) {
  return where.artifact_path + ".fetched";
}

}  // namespace

absl::StatusOr<CompileOutcome> ArtifactSharing::Compile(const CompileJob& job) {
  const std::optional<ArtifactLocation> where = compiler_->Locate(job);
  if (!where.has_value()) return compiler_->Compile(job);
  // Another compile of the key (the reference of two leases, say) must not
  // fetch over what this one builds, nor this one publish what it fetched.
  KeyLocks::Hold hold(&building_, where->key);
  std::error_code error;
  CompileJob build = job;
  bool fetched = false;
  bool unshared = false;
  {
    absl::MutexLock lock(&unshared_mu_);
    unshared = unshared_.contains(where->key);
  }
  if (job.own_build || unshared) {
    // A copy fetched from the coordinator is built again, in place.
    build.rebuild = std::filesystem::exists(FetchedMarker(*where), error);
  } else {
    fetched = !std::filesystem::exists(where->artifact_path, error) && Fetch(*where);
  }
  absl::StatusOr<CompileOutcome> outcome = compiler_->Compile(build);
  if (build.rebuild && outcome.ok() && !outcome->ok) {
    // The sources do not compile: the fetched copy is no build of them.
    std::filesystem::remove(where->artifact_path, error);
    std::filesystem::remove(FetchedMarker(*where), error);
  }
  if (!outcome.ok() || !outcome->ok) return outcome;
  if (build.rebuild) std::filesystem::remove(FetchedMarker(*where), error);  // built here now
  if (fetched && outcome->cached) {
    outcome->fetched = true;
  } else if (!unshared && (!outcome->cached || job.own_build)) {
    // What was built here is published; an own build always is, so that
    // the coordinator compares it with whatever it shares under the key now.
    Share(job, *where);
  }
  return outcome;
}

void ArtifactSharing::SetUnshared(std::vector<std::string> keys) {
  absl::MutexLock lock(&unshared_mu_);
  unshared_ = absl::flat_hash_set<std::string>(std::make_move_iterator(keys.begin()),
                                               std::make_move_iterator(keys.end()));
}

bool ArtifactSharing::Fetch(const ArtifactLocation& where) {
  absl::StatusOr<v1::Artifact> artifact = coordinator_->GetArtifact(where.key);
  if (!artifact.ok()) {
    if (!absl::IsNotFound(artifact.status()) && !warned_fetch_.exchange(true)) {
      spdlog::warn("shared artifacts: cannot fetch, compiling here: {}",
                   artifact.status().ToString());
    }
    return false;
  }
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(where.artifact_path).parent_path(),
                                      error);
  // The marker first, so that an own build finds whatever was fetched; then
  // the log: a compile that finds the artifact reads the log beside it.
  absl::Status written = WriteFileAtomic(FetchedMarker(where), "");
  if (written.ok() && !where.log_path.empty()) {
    written = WriteFileAtomic(where.log_path, artifact->compile_log());
  }
  if (written.ok()) written = WriteFileAtomic(where.artifact_path, artifact->content());
  if (!written.ok()) {
    spdlog::warn("shared artifacts: cannot write a fetched artifact: {}", written.ToString());
    return false;
  }
  ++fetched_;
  return true;
}

void ArtifactSharing::Share(const CompileJob& job, const ArtifactLocation& where) {
  absl::StatusOr<std::string> content = ReadFile(where.artifact_path);
  if (!content.ok()) return;
  v1::PutArtifactRequest request;
  request.set_key(where.key);
  request.set_job_id(job.job_id);
  *request.mutable_config() = job.config;
  request.set_reference(job.reference);
  v1::Artifact& artifact = *request.mutable_artifact();
  artifact.set_content(*std::move(content));
  if (!where.log_path.empty()) artifact.set_compile_log(ReadFile(where.log_path).value_or(""));
  absl::Status put = coordinator_->PutArtifact(request);
  if (put.ok()) {
    ++shared_;
  } else if (absl::IsFailedPrecondition(put)) {
    // What this worker compiled differs from what was shared under the key.
    spdlog::warn("shared artifacts: {} (job {})", std::string(put.message()), job.job_id);
  } else if (!warned_share_.exchange(true)) {
    spdlog::warn("shared artifacts: cannot share an artifact: {}", put.ToString());
  }
}

}  // namespace tunefleet::worker
