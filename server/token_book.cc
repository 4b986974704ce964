#include "server/token_book.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>

#include <openssl/rand.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/private_file.h"
#include "common/sha256.h"
#include "common/status_macros.h"

namespace tunefleet::server {
namespace {

constexpr absl::string_view kPrefix = "tft_";

std::string RandomHex(int bytes) {
  std::string raw(bytes, '\0');
  // RAND_bytes fails only when the OS has no entropy to seed from.
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), bytes) != 1) {
    std::abort();
  }
  return absl::BytesToHexString(raw);
}

std::string NewToken(std::string* id) {
  *id = RandomHex(6);
  return absl::StrCat(kPrefix, *id, "_", RandomHex(32));
}

bool LooksLikeToken(absl::string_view token) {
  return absl::StartsWith(token, kPrefix) && token.size() < 256;
}

}  // namespace

bool IsValidPrincipalName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '@' && c != '-') return false;
  }
  return true;
}

TokenBook::TokenBook(Store* store, Clock clock) : store_(store), clock_(std::move(clock)) {}

absl::Status TokenBook::Load() {
  ASSIGN_OR_RETURN(std::vector<TokenRecord> tokens, store_->ListTokens());
  absl::MutexLock lock(&mu_);
  for (TokenRecord& token : tokens) by_hash_[token.secret_hash] = std::move(token);
  return absl::OkStatus();
}

absl::Status TokenBook::Put(const TokenRecord& record) {
  RETURN_IF_ERROR(store_->PutToken(record));
  absl::MutexLock lock(&mu_);
  by_hash_[record.secret_hash] = record;
  return absl::OkStatus();
}

absl::StatusOr<TokenBook::Issued> TokenBook::Create(const std::string& name, Role role) {
  if (!IsValidPrincipalName(name)) {
    return absl::InvalidArgumentError(
        "a token's name is 1 to 64 of the characters A-Z a-z 0-9 . _ @ -");
  }
  if (role != Role::kRead && role != Role::kSubmit && role != Role::kAdmin) {
    return absl::InvalidArgumentError("a token's role is read, submit or admin");
  }
  Issued issued;
  issued.token = NewToken(&issued.record.id);
  issued.record.name = name;
  issued.record.role = RoleName(role);
  issued.record.secret_hash = Sha256Hex(issued.token);
  issued.record.created_unix_ms = absl::ToUnixMillis(clock_());
  RETURN_IF_ERROR(Put(issued.record));
  return issued;
}

absl::StatusOr<TokenRecord> TokenBook::Revoke(const std::string& id) {
  std::optional<TokenRecord> found;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [hash, record] : by_hash_) {
      if (record.id == id) found = record;
    }
  }
  if (!found.has_value()) return absl::NotFoundError(absl::StrCat("no token ", id));
  if (found->revoked_unix_ms == 0) {
    found->revoked_unix_ms = absl::ToUnixMillis(clock_());
    RETURN_IF_ERROR(Put(*found));
  }
  return *found;
}

std::vector<TokenRecord> TokenBook::List() {
  std::vector<TokenRecord> tokens;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [hash, record] : by_hash_) tokens.push_back(record);
  }
  std::sort(tokens.begin(), tokens.end(),
            [](const TokenRecord& a, const TokenRecord& b) { return a.id < b.id; });
  return tokens;
}

std::optional<Caller> TokenBook::Authenticate(absl::string_view token) {
  if (!LooksLikeToken(token)) return std::nullopt;
  const std::string hash = Sha256Hex(token);
  absl::MutexLock lock(&mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end() || it->second.revoked_unix_ms != 0) return std::nullopt;
  absl::StatusOr<Role> role = ParseTokenRole(it->second.role);
  if (!role.ok()) return std::nullopt;
  return Caller{it->second.name, *role, /*authenticated=*/true};
}

absl::Status TokenBook::Bootstrap(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    if (errno != ENOENT) {
      return absl::PermissionDeniedError(absl::StrCat("cannot read ", path, ": ",
                                                      std::strerror(errno)));
    }
    ASSIGN_OR_RETURN(Issued issued, Create("admin", Role::kAdmin));
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
      return absl::PermissionDeniedError(absl::StrCat("cannot create ", path, ": ",
                                                      std::strerror(errno)));
    }
    const std::string line = issued.token + "\n";
    const bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    close(fd);
    if (!written) return absl::InternalError(absl::StrCat("cannot write ", path));
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckPrivateFile(absl::StrCat("--admin-token-file ", path), info,
                                   "the admin token"));
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  token = std::string(absl::StripAsciiWhitespace(token));
  if (!LooksLikeToken(token)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " holds no tunefleet token (tft_...)"));
  }
  const std::string hash = Sha256Hex(token);
  {
    absl::MutexLock lock(&mu_);
    auto it = by_hash_.find(hash);
    if (it != by_hash_.end()) {
      if (it->second.revoked_unix_ms == 0) return absl::OkStatus();
      return absl::FailedPreconditionError(absl::StrCat(
          "the token in ", path, " was revoked: remove the file to have a new one made"));
    }
  }
  TokenRecord record;
  record.id = RandomHex(6);
  record.name = "admin";
  record.role = RoleName(Role::kAdmin);
  record.secret_hash = hash;
  record.created_unix_ms = absl::ToUnixMillis(clock_());
  return Put(record);
}

}  // namespace tunefleet::server
