#include "worker/artifact_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"

namespace tunefleet::worker {

std::string ArtifactKey(const ArtifactKeyInputs& inputs) {
  // v2: shared artifacts are compared byte for byte (CPU builds map their
  // staging directory; fetched copies are marked), so no key of v1 is
  // shared again.
  std::string text = "tunefleet-artifact-v2\n";
  absl::StrAppend(&text, "backend=", inputs.backend, "\n", "toolkit=", inputs.toolkit,
                  "\n", "target=", inputs.target, "\n");
  for (const auto& [path, digest] : inputs.sources) {
    absl::StrAppend(&text, "source=", path, ":", digest, "\n");
  }
  for (const std::string& file : inputs.compile_files) {
    absl::StrAppend(&text, "compile=", file, "\n");
  }
  absl::StrAppend(&text, "entry=", inputs.entry, "\n");
  for (const std::string& option : inputs.options) {
    // Length-prefixed, so options containing newlines cannot collide.
    absl::StrAppend(&text, "option=", option.size(), ":", option, "\n");
  }
  for (const auto& [name, value] : inputs.macros) {
    absl::StrAppend(&text, "macro=", name, "=", value, "\n");
  }
  absl::StrAppend(&text, "reference=", inputs.reference ? 1 : 0, "\n");
  return Sha256Hex(text);
}

std::string ArtifactCache::PathFor(const std::string& key,
                                   const std::string& suffix) const {
  return absl::StrCat(dir_, "/", key.substr(0, 2), "/", key, suffix);
}

bool ArtifactCache::Contains(const std::string& path) const {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

absl::StatusOr<std::string> ArtifactCache::TempPathFor(
    const std::string& final_path) const {
  static std::atomic<uint64_t> counter{0};
  std::error_code error;
  std::filesystem::path parent = std::filesystem::path(final_path).parent_path();
  std::filesystem::create_directories(parent, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", parent.string(), ": ", error.message()));
  }
  return absl::StrCat(final_path, ".tmp.", getpid(), ".", counter.fetch_add(1));
}

absl::Status ArtifactCache::Publish(const std::string& temp_path,
                                    const std::string& final_path) const {
  if (std::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("rename ", temp_path, " -> ", final_path,
                                            ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace tunefleet::worker
