#include "worker/source_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/status_macros.h"

namespace tunefleet::worker {
namespace {

bool IsDigest(const std::string& digest) {
  if (digest.size() != 64) return false;
  for (char c : digest) {
    if (!absl::ascii_isxdigit(c) || absl::ascii_isupper(c)) return false;
  }
  return true;
}

}  // namespace

std::string SourceCache::DiskPath(const std::string& digest) const {
  return absl::StrCat(dir_, "/", digest);
}

absl::StatusOr<std::string> SourceCache::Get(const std::string& digest) {
  if (!IsDigest(digest)) {
    return absl::InvalidArgumentError(absl::StrCat("malformed digest \"", digest, "\""));
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = memory_.find(digest);
    if (it != memory_.end()) return it->second;
  }
  std::string content;
  bool from_disk = false;
  if (!dir_.empty()) {
    std::ifstream in(DiskPath(digest), std::ios::binary);
    if (in) {
      std::stringstream buffer;
      buffer << in.rdbuf();
      content = buffer.str();
      from_disk = Sha256Hex(content) == digest;  // a damaged file is re-fetched
    }
  }
  if (!from_disk) {
    {
      absl::MutexLock lock(&mu_);
      ++fetches_;
    }
    ASSIGN_OR_RETURN(content, fetch_(digest));
    if (Sha256Hex(content) != digest) {
      return absl::DataLossError(absl::StrCat("blob ", digest, " does not match its digest"));
    }
    if (!dir_.empty()) {
      std::error_code error;
      std::filesystem::create_directories(dir_, error);
      static std::atomic<uint64_t> counter{0};
      const std::string temp =
          absl::StrCat(DiskPath(digest), ".tmp.", getpid(), ".", counter.fetch_add(1));
      std::ofstream(temp, std::ios::binary) << content;
      std::rename(temp.c_str(), DiskPath(digest).c_str());
    }
  }
  absl::MutexLock lock(&mu_);
  memory_[digest] = content;
  return content;
}

absl::StatusOr<std::vector<v1::SourceFile>> SourceCache::Resolve(
    const google::protobuf::RepeatedPtrField<v1::SourceFile>& files) {
  std::vector<v1::SourceFile> resolved;
  for (const v1::SourceFile& file : files) {
    v1::SourceFile& out = resolved.emplace_back(file);
    if (!file.content().empty()) {
      if (Sha256Hex(file.content()) != file.digest()) {
        return absl::DataLossError(absl::StrCat(file.path(), " does not match its digest"));
      }
      continue;
    }
    ASSIGN_OR_RETURN(*out.mutable_content(), Get(file.digest()));
  }
  return resolved;
}

int SourceCache::fetches() const {
  absl::MutexLock lock(&mu_);
  return fetches_;
}

}  // namespace tunefleet::worker
