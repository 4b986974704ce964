#include "server/source_blobs.h"

#include <vector>

namespace tunefleet::server {

std::shared_ptr<const v1::JobSpec> WithoutContents(v1::JobSpec spec) {
  for (v1::SourceFile& file : *spec.mutable_sources()) file.clear_content();
  return std::make_shared<const v1::JobSpec>(std::move(spec));
}

SourceBlobs::SourceBlobs(Store* store) : store_(store) {}

absl::Status SourceBlobs::Save(const v1::JobSpec& spec) {
  std::vector<BlobRecord> blobs;
  blobs.reserve(spec.sources_size());
  for (const v1::SourceFile& file : spec.sources()) {
    blobs.push_back(BlobRecord{file.digest(), file.content()});
  }
  return store_->PutBlobs(blobs);
}

void SourceBlobs::Hold(const v1::JobSpec& spec) {
  absl::MutexLock lock(&mu_);
  for (const v1::SourceFile& file : spec.sources()) {
    Entry& entry = held_[file.digest()];
    ++entry.holds;
    if (!entry.loaded && !file.content().empty()) {
      entry.content = file.content();
      entry.loaded = true;
    }
  }
}

void SourceBlobs::Release(const v1::JobSpec& spec) {
  absl::MutexLock lock(&mu_);
  for (const v1::SourceFile& file : spec.sources()) {
    auto it = held_.find(file.digest());
    if (it != held_.end() && --it->second.holds <= 0) held_.erase(it);
  }
}

absl::StatusOr<std::string> SourceBlobs::Get(const std::string& digest) {
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = held_.find(digest);
    if (it != held_.end() && it->second.loaded) return it->second.content;
  }
  absl::StatusOr<std::string> content = store_->GetBlob(digest);
  if (!content.ok()) return content.status();
  absl::MutexLock lock(&mu_);
  auto it = held_.find(digest);
  if (it != held_.end() && !it->second.loaded) {
    it->second.content = *content;  // held by a live job: keep it
    it->second.loaded = true;
  }
  return content;
}

size_t SourceBlobs::held() const {
  absl::ReaderMutexLock lock(&mu_);
  return held_.size();
}

}  // namespace tunefleet::server
