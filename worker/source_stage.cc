#include "worker/source_stage.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/status_macros.h"

namespace tunefleet::worker {
namespace {

namespace fs = std::filesystem;

absl::Status WriteFile(const fs::path& path, const std::string& content) {
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> StageSources(const std::string& cache_dir,
                                         const ArtifactCache& cache,
                                         const std::vector<v1::SourceFile>& sources) {
  std::string listing;
  for (const v1::SourceFile& file : sources) {
    absl::StrAppend(&listing, file.path(), ":", file.digest(), "\n");
  }
  const fs::path dir = fs::path(cache_dir) / "sources" / Sha256Hex(listing);
  std::error_code error;
  if (fs::is_directory(dir, error)) return dir.string();
  ASSIGN_OR_RETURN(std::string temp, cache.TempPathFor(dir.string()));
  for (const v1::SourceFile& file : sources) {
    if (file.path().empty() || file.path()[0] == '/' ||
        file.path().find("..") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("source path \"", file.path(), "\" leaves the kernel dir"));
    }
    RETURN_IF_ERROR(WriteFile(fs::path(temp) / file.path(), file.content()));
  }
  fs::rename(temp, dir, error);
  if (error) fs::remove_all(temp, error);  // another thread staged it first
  return dir.string();
}

ScopedRemove::~ScopedRemove() {
  std::error_code ignored;
  if (!dir.empty()) fs::remove_all(dir, ignored);
}

}  // namespace tunefleet::worker
