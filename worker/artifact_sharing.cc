#include "worker/artifact_sharing.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "common/file_util.h"
#include "spdlog/spdlog.h"

namespace tunefleet::worker {

absl::StatusOr<CompileOutcome> ArtifactSharing::Compile(const CompileJob& job) {
  const std::optional<ArtifactLocation> where = compiler_->Locate(job);
  if (!where.has_value()) return compiler_->Compile(job);
  std::error_code error;
  const bool fetched = !std::filesystem::exists(where->artifact_path, error) && Fetch(*where);
  absl::StatusOr<CompileOutcome> outcome = compiler_->Compile(job);
  if (!outcome.ok() || !outcome->ok) return outcome;
  if (fetched && outcome->cached) {
    outcome->fetched = true;
  } else if (!outcome->cached) {
    Share(*where);
  }
  return outcome;
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
  // The log first: a compile that finds the artifact reads the log beside it.
  absl::Status written = absl::OkStatus();
  if (!where.log_path.empty()) written = WriteFileAtomic(where.log_path, artifact->compile_log());
  if (written.ok()) written = WriteFileAtomic(where.artifact_path, artifact->content());
  if (!written.ok()) {
    spdlog::warn("shared artifacts: cannot write a fetched artifact: {}", written.ToString());
    return false;
  }
  ++fetched_;
  return true;
}

void ArtifactSharing::Share(const ArtifactLocation& where) {
  absl::StatusOr<std::string> content = ReadFile(where.artifact_path);
  if (!content.ok()) return;
  v1::Artifact artifact;
  artifact.set_content(*std::move(content));
  if (!where.log_path.empty()) artifact.set_compile_log(ReadFile(where.log_path).value_or(""));
  absl::Status put = coordinator_->PutArtifact(where.key, artifact);
  if (put.ok()) {
    ++shared_;
  } else if (!warned_share_.exchange(true)) {
    spdlog::warn("shared artifacts: cannot share an artifact: {}", put.ToString());
  }
}

}  // namespace tunefleet::worker
