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
std::string OwnerDigest(const std::string& principal) {
  return Sha256Hex(principal).substr(0, 16);
}
std::string NameOf(const std::string& principal, const std::string& key) {
  return absl::StrCat(OwnerDigest(principal), "/", key);
}

// The principal part of a name (NameOf).
std::string OwnerOf(const std::string& name) { return name.substr(0, name.find('/')); }

// The directory of conflicted names, below the shelf's.
constexpr char kConflicts[] = "conflicts";
// A principal with this many conflicts is broken or lying: its publishes
// are refused (each conflict holds a marker file and a name in memory).
constexpr int kMaxConflictsPerPrincipal = 1024;

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
      if (!it->is_regular_file(error)) continue;
      const std::string key = it->path().filename().string();
      if (!CheckArtifactKey(key).ok()) continue;  // a temporary file of a crashed write
      const fs::path owner = it->path().parent_path();
      const std::string name = absl::StrCat(owner.filename().string(), "/", key);
      if (it.depth() == 2 && owner.parent_path().filename() == kConflicts) {
        conflicted_.insert(name);
        continue;
      }
      if (it.depth() != 1 || owner.filename() == kConflicts) continue;
      const int64_t size = static_cast<int64_t>(it->file_size(error));
      if (error) break;
      Entry& entry = entries_[name];
      entry.bytes = size;
      entry.last_used = ++uses_;
      bytes_ += size;
    }
    CountConflictsLocked();
    // A conflict recorded while its copy's file was being written.
    for (const std::string& name : conflicted_) {
      if (entries_.contains(name)) {
        evicted.push_back(PathOf(name));
        ForgetLocked(name);
      }
    }
    if (!error) {
      std::vector<std::string> over = EvictLocked();
      evicted.insert(evicted.end(), over.begin(), over.end());
    }
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

absl::Status SharedArtifacts::Put(const ArtifactPublisher& publisher, const std::string& key,
                                  const v1::Artifact& artifact) {
  if (absl::Status valid = CheckArtifactKey(key); !valid.ok()) return valid;
  if (!enabled()) return absl::OkStatus();
  const std::string bytes = artifact.SerializeAsString();
  if (static_cast<int64_t>(bytes.size()) > options_.max_artifact_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("an artifact of ", bytes.size(),
                                                   " bytes is over the limit of ",
                                                   options_.max_artifact_bytes));
  }
  const std::string name = NameOf(publisher.principal, key);
  auto conflicted = [&] {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact ", key, " is shared no more: two publishes of it differed"));
  };
  // What is compared is what is written over: no other publish of the key
  // in between, and no purge.
  absl::ReaderMutexLock publishing(&publish_mu_);
  KeyLocks::Hold hold(&publishing_, key);
  std::optional<std::string> served;
  {
    absl::MutexLock lock(&mu_);
    if (conflicted_.contains(name)) return conflicted();
    if (auto it = conflicts_by_owner_.find(OwnerOf(name));
        it != conflicts_by_owner_.end() && it->second >= kMaxConflictsPerPrincipal) {
      return absl::ResourceExhaustedError(absl::StrCat(
          publisher.principal, " published ", it->second, " artifacts that conflicted: its "
          "publishes are refused until `tunectl admin invalidate --worker` repairs it"));
    }
    served = ServedNameLocked(publisher.principal, key);
  }
  if (served.has_value()) {
    // The key names the bytes: what is shared under it must be what this
    // publisher compiled.
    absl::StatusOr<std::string> shelved = ReadFile(PathOf(*served));
    v1::Artifact copy;
    if (shelved.ok() && copy.ParseFromString(*shelved)) {
      if (copy.content() != artifact.content()) {
        Conflict(publisher, key, name, *served);
        return conflicted();
      }
      if (*served == name) {  // the same bytes again
        absl::MutexLock lock(&mu_);
        if (auto it = entries_.find(name); it != entries_.end()) it->second.last_used = ++uses_;
        return absl::OkStatus();
      }
    }
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
    Entry& entry = entries_[name];  // new, or a damaged copy written over
    bytes_ += static_cast<int64_t>(bytes.size()) - entry.bytes;
    entry.bytes = static_cast<int64_t>(bytes.size());
    entry.last_used = ++uses_;
    entry.worker_id = publisher.worker_id;
    entry.job_id = publisher.job_id;
    evicted = EvictLocked();
    ReportSizeLocked();
  }
  for (const std::string& old : evicted) fs::remove(old, error);
  return absl::OkStatus();
}

std::optional<std::string> SharedArtifacts::ServedNameLocked(const std::string& principal,
                                                             const std::string& key) const {
  if (std::string own = NameOf(principal, key); entries_.contains(own)) return own;
  for (const std::string& builder : options_.builders) {
    if (builder == principal) continue;
    if (std::string built = NameOf(builder, key); entries_.contains(built)) return built;
  }
  return std::nullopt;
}

void SharedArtifacts::Conflict(const ArtifactPublisher& publisher, const std::string& key,
                               const std::string& own, const std::string& served) {
  // Against a builder's copy, only the publisher's principal stops sharing
  // the key (and stops being served the builder's copy of it): one
  // principal's publish never takes a builder's artifact from the others.
  const bool builders = served != own;
  std::string first_by = "an earlier run of the coordinator";
  {
    absl::MutexLock lock(&mu_);
    if (auto it = entries_.find(served); it != entries_.end() && !it->second.worker_id.empty()) {
      first_by = absl::StrCat("worker ", it->second.worker_id, " (job ", it->second.job_id, ")");
    }
  }
  // The marker first: a crash before the copy is gone must not serve it again.
  const std::string marker = absl::StrCat(options_.dir, "/", kConflicts, "/", own);
  std::error_code error;
  fs::create_directories(fs::path(marker).parent_path(), error);
  if (absl::Status kept = WriteFileAtomic(marker, ""); !kept.ok()) {
    spdlog::error("shared artifacts: cannot record the conflict of {} (it holds until a "
                  "restart): {}",
                  own, kept.ToString());
  }
  {
    absl::MutexLock lock(&mu_);
    ForgetLocked(own);
    conflicted_.insert(own);
    CountConflictsLocked();
    ReportSizeLocked();
  }
  fs::remove(PathOf(own), error);
  if (metrics_ != nullptr) metrics_->ArtifactConflicted();
  spdlog::warn(
      "shared artifacts: CONFLICT on key {}: worker {} of {} (job {}) compiled content that "
      "differs from the copy {} published{}; {} shares the key no more (its workers compile "
      "it themselves). One side published bytes the key's sources do not compile to: a "
      "poisoned artifact, or a host whose toolchain differs. Check both hosts; `tunectl admin "
      "invalidate --worker` the one at fault",
      key, publisher.worker_id, publisher.principal, publisher.job_id, first_by,
      builders ? " (a builder's, which others are still served)" : "", publisher.principal);
}

void SharedArtifacts::CountConflictsLocked() {
  conflicts_.store(static_cast<int64_t>(conflicted_.size()), std::memory_order_relaxed);
  conflicts_by_owner_.clear();
  for (const std::string& name : conflicted_) ++conflicts_by_owner_[OwnerOf(name)];
}

void SharedArtifacts::ForgetLocked(const std::string& name) {
  if (auto it = entries_.find(name); it != entries_.end()) {
    bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
}

int64_t SharedArtifacts::Purge(const std::string& principal) {
  if (!enabled()) return 0;
  absl::MutexLock publishing(&publish_mu_);  // no publish half done meanwhile
  const std::string owner = OwnerDigest(principal);
  std::vector<std::string> names;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : entries_) {
      if (OwnerOf(name) == owner) names.push_back(name);
    }
    for (const std::string& name : names) ForgetLocked(name);
    // Its conflicts are forgotten too: the repaired host shares again.
    absl::erase_if(conflicted_, [&](const std::string& name) { return OwnerOf(name) == owner; });
    CountConflictsLocked();
    ReportSizeLocked();
  }
  std::error_code error;
  for (const std::string& name : names) fs::remove(PathOf(name), error);
  fs::remove_all(absl::StrCat(options_.dir, "/", kConflicts, "/", owner), error);
  if (!names.empty()) {
    spdlog::warn("shared artifacts: dropped the {} artifacts {} published", names.size(),
                 principal);
  }
  return static_cast<int64_t>(names.size());
}

absl::StatusOr<v1::Artifact> SharedArtifacts::Get(const std::string& principal,
                                                  const std::string& key) {
  if (absl::Status valid = CheckArtifactKey(key); !valid.ok()) return valid;
  if (!enabled()) {
    return absl::FailedPreconditionError("the coordinator shares no artifacts");
  }
  {
    absl::MutexLock lock(&mu_);
    if (conflicted_.contains(NameOf(principal, key))) {
      if (metrics_ != nullptr) metrics_->ArtifactRequested(false);
      return absl::NotFoundError("the artifact is shared no more: two publishes differed");
    }
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
    ForgetLocked(name);
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

std::vector<std::string> SharedArtifacts::Unshared(const std::string& principal) const {
  constexpr size_t kMost = 1024;
  const std::string owner = OwnerDigest(principal);
  std::vector<std::string> keys;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& name : conflicted_) {
      if (OwnerOf(name) == owner) keys.push_back(name.substr(name.find('/') + 1));
    }
  }
  std::sort(keys.begin(), keys.end());
  if (keys.size() > kMost) keys.resize(kMost);
  return keys;
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
