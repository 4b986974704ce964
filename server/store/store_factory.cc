// OpenStore: picks the Store implementation from the URL scheme.
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
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

absl::StatusOr<std::unique_ptr<Store>> OpenPostgres(
    const std::string& conninfo) {
  ASSIGN_OR_RETURN(std::unique_ptr<PostgresStore> store,
                   PostgresStore::Open(conninfo));
  return store;
}

// The part before the first ':', for error messages: the rest of a URL may
// hold a password.
absl::string_view Scheme(absl::string_view url) {
  return url.substr(0, url.find(':'));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& url) {
  absl::string_view view = url;
  if (absl::StartsWith(view, kSqlitePrefix)) {
    return OpenSqlite(std::string(view.substr(kSqlitePrefix.size())));
  }
  if (absl::StartsWith(view, "postgresql://") ||
      absl::StartsWith(view, "postgres://")) {
    return OpenPostgres(url);  // libpq parses URIs itself.
  }
  if (absl::StartsWith(view, kPostgresKeyValuePrefix)) {
    return OpenPostgres(
        std::string(view.substr(kPostgresKeyValuePrefix.size())));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown store URL scheme \"", Scheme(view),
                   "\": want sqlite:///path, postgresql:// or postgres://"));
}

}  // namespace tunefleet::server
