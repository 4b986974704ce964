// OpenStore and OpenLeadership: pick the implementation from the URL scheme.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "server/store/leadership.h"
#include "server/store/postgres_store.h"
#include "server/store/sqlite_store.h"
#include "server/store/store.h"

namespace tunefleet::server {
namespace {

constexpr absl::string_view kSqlitePrefix = "sqlite://";
constexpr absl::string_view kPostgresKeyValuePrefix = "postgresql:";

absl::StatusOr<std::unique_ptr<Store>> OpenSqlite(const std::string& path) {
  if (path.empty())
    return absl::InvalidArgumentError("sqlite URL without a path");
  if (SqliteStore::IsInMemory(path)) {
    ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store, SqliteStore::Open(path));
    return store;
  }
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  if (error) {
    return absl::UnavailableError(absl::StrCat(
        "cannot create directory ", parent.string(), ": ", error.message()));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store, SqliteStore::Open(path));
  return store;
}

absl::StatusOr<std::unique_ptr<Store>> OpenPostgres(const std::string& conninfo,
                                                    std::shared_ptr<const LeaderFence> fence) {
  PostgresStore::Options options;
  options.fence = std::move(fence);
  ASSIGN_OR_RETURN(std::unique_ptr<PostgresStore> store, PostgresStore::Open(conninfo, options));
  return store;
}

// The part before the first ':', for error messages: the rest of a URL may
// hold a password.
absl::string_view Scheme(absl::string_view url) {
  return url.substr(0, url.find(':'));
}

// Where a store URL points: an SQLite path, or a libpq connection string.
struct Location {
  bool postgres = false;
  std::string target;
};

absl::StatusOr<Location> Locate(const std::string& url) {
  absl::string_view view = url;
  if (absl::StartsWith(view, kSqlitePrefix)) {
    return Location{false, std::string(view.substr(kSqlitePrefix.size()))};
  }
  if (absl::StartsWith(view, "postgresql://") || absl::StartsWith(view, "postgres://")) {
    return Location{true, url};  // libpq parses URIs itself.
  }
  if (absl::StartsWith(view, kPostgresKeyValuePrefix)) {
    return Location{true, std::string(view.substr(kPostgresKeyValuePrefix.size()))};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown store URL scheme \"", Scheme(view),
                   "\": want sqlite:///path, postgresql:// or postgres://"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url,
                                                 std::shared_ptr<const LeaderFence> fence) {
  ASSIGN_OR_RETURN(Location location, Locate(url));
  if (location.postgres) return OpenPostgres(location.target, std::move(fence));
  return OpenSqlite(location.target);
}

absl::StatusOr<std::unique_ptr<Leadership>> OpenLeadership(const std::string& url,
                                                           const std::string& holder,
                                                           std::shared_ptr<LeaderFence> fence,
                                                           absl::Duration session_timeout) {
  if (session_timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the leader's session timeout must be at least 1 s, not ",
        absl::FormatDuration(session_timeout)));
  }
  ASSIGN_OR_RETURN(Location location, Locate(url));
  if (location.postgres) {
    return NewPostgresLeadership(location.target, holder, std::move(fence), session_timeout);
  }
  if (location.target.empty()) return absl::InvalidArgumentError("sqlite URL without a path");
  if (SqliteStore::IsInMemory(location.target)) return NewSoleLeadership(std::move(fence));
  return NewSqliteFileLeadership(location.target, holder, std::move(fence));
}

}  // namespace tunefleet::server
