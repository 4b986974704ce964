#include "server/shared_artifacts.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/sha256.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {
namespace fs = std::filesystem;

namespace {

constexpr size_t kKeyLength = 64;

// An artifact's name, and its path below the directory: "<SHA-256 of the
// principal, 16 hex digits>/<key>".
std::string NameOf(const std::string& principal, const std::string& key) {
  return absl::StrCat(Sha256Hex(principal).substr(0, 16), "/", key);
}

// The principal part of a name (NameOf).
std::string OwnerOf(const std::string& name) { return name.substr(0, name.find('/')); }

}  // namespace

absl::Status CheckArtifactKey(const std::string& key) {
  const bool hex = std::all_of(key.begin(), key.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
  });
  if (key.size() != kKeyLength || !hex) {
    return absl::InvalidArgumentError(
        "an artifact key is a SHA-256: 64 lowercase hexadecimal digits");
  }
  return absl::OkStatus();
}

SharedArtifacts::SharedArtifacts(SharedArtifactsOptions options, CoordinatorMetrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {}

void SharedArtifacts::ReportSizeLocked() {
  if (metrics_ != nullptr) metrics_->ArtifactsShelved(static_cast<int64_t>(entries_.size()), bytes_);
}

absl::StatusOr<std::unique_ptr<SharedArtifacts>> SharedArtifacts::Open(
    SharedArtifactsOptions options, CoordinatorMetrics* metrics) {
  std::unique_ptr<SharedArtifacts> shelf(new SharedArtifacts(std::move(options), metrics));
  if (!shelf->enabled()) return shelf;
  if (absl::Status indexed = shelf->Index(); !indexed.ok()) return indexed;
  return shelf;
}

absl::Status SharedArtifacts::Index() {
  std::error_code error;
  fs::create_directories(options_.dir, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot create the artifact directory ", options_.dir, ": ",
                     error.message()));
  }
  std::vector<std::string> evicted;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = fs::recursive_directory_iterator(options_.dir, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      if (it.depth() != 1 || !it->is_regular_file(error)) continue;
      const std::string key = it->path().filename().string();
      if (!CheckArtifactKey(key).ok()) continue;  // a temporary file of a crashed write
      const int64_t size = static_cast<int64_t>(it->file_size(error));
      if (error) break;
      const std::string name =
          absl::StrCat(it->path().parent_path().filename().string(), "/", key);
      entries_[name] = Entry{size, ++uses_};
      bytes_ += size;
    }
    if (!error) evicted = EvictLocked();
    ReportSizeLocked();
  }
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot read the artifact directory ", options_.dir, ": ",
                     error.message()));
  }
  for (const std::string& path : evicted) fs::remove(path, error);
  spdlog::info("shared artifacts: {} ({} bytes) under {}", count(), bytes(), options_.dir);
  return absl::OkStatus();
}

std::string SharedArtifacts::PathOf(const std::string& name) const {
  return absl::StrCat(options_.dir, "/", name);
}

absl::Status SharedArtifacts::Put(const std::string& principal, const std::string& key,
                                  const v1::Artifact& artifact) {
  if (absl::Status valid = CheckArtifactKey(key); !valid.ok()) return valid;
  if (!enabled()) return absl::OkStatus();
  const std::string bytes = artifact.SerializeAsString();
  if (static_cast<int64_t>(bytes.size()) > options_.max_artifact_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("an artifact of ", bytes.size(),
                                                   " bytes is over the limit of ",
                                                   options_.max_artifact_bytes));
  }
  const std::string name = NameOf(principal, key);
  {
    absl::MutexLock lock(&mu_);
    if (entries_.contains(name)) return absl::OkStatus();  // the key names the bytes
  }
  const std::string path = PathOf(name);
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  if (absl::Status written = WriteFileAtomic(path, bytes); !written.ok()) {
    return absl::UnavailableError(written.message());
  }
  std::vector<std::string> evicted;
  {
    absl::MutexLock lock(&mu_);
    auto [it, added] = entries_.try_emplace(name, Entry{static_cast<int64_t>(bytes.size()), 0});
    it->second.last_used = ++uses_;
    if (added) bytes_ += it->second.bytes;
    evicted = EvictLocked();
    ReportSizeLocked();
  }
  for (const std::string& old : evicted) fs::remove(old, error);
  return absl::OkStatus();
}

absl::StatusOr<v1::Artifact> SharedArtifacts::Get(const std::string& principal,
                                                  const std::string& key) {
  if (absl::Status valid = CheckArtifactKey(key); !valid.ok()) return valid;
  if (!enabled()) {
    return absl::FailedPreconditionError("the coordinator shares no artifacts");
  }
  absl::StatusOr<v1::Artifact> own = GetOwn(principal, key);
  for (size_t i = 0; absl::IsNotFound(own.status()) && i < options_.builders.size(); ++i) {
    if (options_.builders[i] != principal) own = GetOwn(options_.builders[i], key);
  }
  if (metrics_ != nullptr) metrics_->ArtifactRequested(own.ok());
  return own;
}

absl::StatusOr<v1::Artifact> SharedArtifacts::GetOwn(const std::string& principal,
                                                     const std::string& key) {
  const std::string name = NameOf(principal, key);
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return absl::NotFoundError("no such artifact");
    it->second.last_used = ++uses_;
  }
  absl::StatusOr<std::string> bytes = ReadFile(PathOf(name));
  v1::Artifact artifact;
  if (!bytes.ok() || !artifact.ParseFromString(*bytes)) {
    // Evicted meanwhile, or damaged on disk: gone either way.
    absl::MutexLock lock(&mu_);
    if (auto it = entries_.find(name); it != entries_.end()) {
      bytes_ -= it->second.bytes;
      entries_.erase(it);
    }
    ReportSizeLocked();
    return absl::NotFoundError("no such artifact");
  }
  return artifact;
}

std::vector<std::string> SharedArtifacts::EvictLocked() {
  std::vector<std::string> paths;
  if (bytes_ <= options_.capacity_bytes) return paths;
  // Each principal's bytes, by the principal part of the names.
  absl::flat_hash_map<std::string, int64_t> held;
  std::vector<std::pair<uint64_t, std::string>> by_use;
  by_use.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) {
    by_use.emplace_back(entry.last_used, name);
    held[OwnerOf(name)] += entry.bytes;
  }
  std::sort(by_use.begin(), by_use.end());
  // Only principals over their fair share lose artifacts: when every one
  // holds at most capacity / principals, the shelf fits.
  const int64_t fair = options_.capacity_bytes / static_cast<int64_t>(held.size());
  for (const auto& [used, name] : by_use) {
    if (bytes_ <= options_.capacity_bytes) break;
    int64_t& owner = held[OwnerOf(name)];
    if (owner <= fair) continue;
    auto it = entries_.find(name);
    owner -= it->second.bytes;
    bytes_ -= it->second.bytes;
    entries_.erase(it);
    paths.push_back(PathOf(name));
  }
  return paths;
}

int64_t SharedArtifacts::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

int64_t SharedArtifacts::count() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(entries_.size());
}

}  // namespace tunefleet::server
