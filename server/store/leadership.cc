#include "server/store/leadership.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/store/schema.h"

namespace tunefleet::server {
namespace {

// The session advisory lock of the leader ("tfleader" in ASCII). Advisory
// locks are per database: coordinators of other databases never meet it.
constexpr int64_t kLeaderLockKey = 0x74666c6561646572;

class PostgresLeadership final : public Leadership {
 public:
  PostgresLeadership(std::string conninfo, std::string holder, std::shared_ptr<LeaderFence> fence,
                     absl::Duration session_timeout)
      : conninfo_(std::move(conninfo)),
        holder_(std::move(holder)),
        fence_(std::move(fence)),
        session_timeout_ms_(absl::ToInt64Milliseconds(session_timeout)) {}

  absl::StatusOr<bool> TryAcquire() override {
    absl::MutexLock lock(&mu_);
    if (epoch_ != 0) return true;
    ASSIGN_OR_RETURN(std::optional<int64_t> epoch, Acquire());
    if (!epoch.has_value()) return false;
    epoch_ = *epoch;
    if (fence_ != nullptr) fence_->Set(epoch_);
    return true;
  }

  absl::Status Check() override {
    absl::MutexLock lock(&mu_);
    if (epoch_ == 0) {
      return absl::FailedPreconditionError("this coordinator does not lead the database");
    }
    if (connection_ == nullptr) return Reacquire();
    try {
      pqxx::nontransaction query(*connection_);
      const pqxx::result row =
          query.exec("SELECT epoch, holder FROM coordinator_leader WHERE id = 1");
      const int64_t epoch = row[0][0].as<int64_t>();
      if (epoch != epoch_) {
        return absl::FailedPreconditionError(
            absl::StrCat("another coordinator (", row[0][1].as<std::string>(),
                         ") took over the database at epoch ", epoch, "; this one led epoch ",
                         epoch_));
      }
      return absl::OkStatus();
    } catch (const pqxx::broken_connection&) {
      connection_.reset();
      return Reacquire();
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("postgres: checking the lead: ", e.what()));
    }
  }

  bool allows_standby() const override { return true; }
  int64_t epoch() const override {
    absl::MutexLock lock(&mu_);
    return epoch_;
  }

  void KeepAlive() override {
    absl::MutexLock lock(&mu_);
    if (epoch_ == 0 || connection_ == nullptr) return;
    try {
      pqxx::nontransaction query(*connection_);
      query.exec("SELECT 1");
    } catch (const std::exception&) {
      // A broken session is Check's to find and handle.
    }
  }

  std::string Leader() override {
    absl::MutexLock lock(&mu_);
    return LeaderLocked();
  }

 private:
  std::string LeaderLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    try {
      if (connection_ == nullptr) connection_ = std::make_unique<pqxx::connection>(conninfo_);
      pqxx::nontransaction query(*connection_);
      const pqxx::result row =
          query.exec("SELECT holder, epoch FROM coordinator_leader WHERE id = 1");
      if (row.empty() || row[0][0].as<std::string>().empty()) return "";
      return absl::StrCat(row[0][0].as<std::string>(), ", epoch ", row[0][1].as<int64_t>());
    } catch (const std::exception&) {
      if (epoch_ == 0) connection_.reset();  // a leader's goes through Check
      return "";
    }
  }

  // The session that held the lock ended (the server restarted, or the
  // connection was cut), and the lock with it. The lead is taken again only
  // when nobody led in between (the epoch moves on by one): else what this
  // process holds in memory may be stale, and it must stop.
  absl::Status Reacquire() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::StatusOr<std::optional<int64_t>> epoch = Acquire();
    if (!epoch.ok()) return epoch.status();  // Unavailable: try again later
    if (!epoch->has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the session that held the database's lead ended, and another coordinator (",
          LeaderLocked(), ") leads now; this one led epoch ", epoch_));
    }
    const int64_t previous = epoch_;
    epoch_ = **epoch;
    if (fence_ != nullptr) fence_->Set(epoch_);
    if (epoch_ != previous + 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the session that held the database's lead ended, and other coordinators led it ",
          "between epochs ", previous, " and ", epoch_, ": what this one holds may be stale"));
    }
    return absl::OkStatus();
  }

  // Takes the lock on a fresh session and raises the epoch: the new epoch,
  // nullopt while another session holds the lock, Unavailable when the
  // database cannot be reached.
  absl::StatusOr<std::optional<int64_t>> Acquire() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    try {
      if (connection_ == nullptr) {
        connection_ = std::make_unique<pqxx::connection>(conninfo_);
        // The server ends the session (and its lock) once it has been idle
        // this long: a leader paused or cut off longer leads no more
        // (PostgreSQL 14 and later; before, it keeps the lead while its
        // TCP connection lives).
        if (connection_->server_version() >= 140000) {
          pqxx::nontransaction set(*connection_);
          set.exec(absl::StrCat("SET idle_session_timeout = ", session_timeout_ms_));
        }
      }
      {
        pqxx::nontransaction query(*connection_);
        const pqxx::result locked =
            query.exec_params("SELECT pg_try_advisory_lock($1)", kLeaderLockKey);
        if (!locked[0][0].as<bool>()) return std::nullopt;
      }
      // The lock is this session's until the session ends: the new epoch
      // fences out whoever led before.
      pqxx::work txn(*connection_);
      const pqxx::result raised = txn.exec_params(
          "UPDATE coordinator_leader SET epoch = epoch + 1, holder = $1, since_unix_ms = $2 "
          "WHERE id = 1 RETURNING epoch",
          holder_, schema::NowUnixMs());
      if (raised.empty()) throw std::runtime_error("coordinator_leader has no row");
      const int64_t epoch = raised[0][0].as<int64_t>();
      txn.commit();
      return epoch;
    } catch (const std::exception& e) {
      connection_.reset();  // the session, and any lock it took, end with it
      return absl::UnavailableError(absl::StrCat("postgres: the leader lock: ", e.what()));
    }
  }

  const std::string conninfo_;
  const std::string holder_;
  const std::shared_ptr<LeaderFence> fence_;
  const int64_t session_timeout_ms_;
  // Guards the session: KeepAlive comes from a thread of its own.
  mutable absl::Mutex mu_;
  // Its session holds the lock once acquired.
  std::unique_ptr<pqxx::connection> connection_ ABSL_GUARDED_BY(mu_);
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
};

// An exclusive flock on "<file>.leader", which names the holder. The lock
// goes with the process, however it ends.
class SqliteFileLeadership final : public Leadership {
 public:
  SqliteFileLeadership(std::string path, int fd, std::string holder,
                       std::shared_ptr<LeaderFence> fence)
      : path_(std::move(path)), fd_(fd), holder_(std::move(holder)), fence_(std::move(fence)) {}
  ~SqliteFileLeadership() override { close(fd_); }

  absl::StatusOr<bool> TryAcquire() override {
    if (epoch_ != 0) return true;
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return false;
      return absl::UnavailableError(
          absl::StrCat("cannot lock ", path_, ": ", std::strerror(errno)));
    }
    // The name is for others' messages only: the lock holds without it.
    const std::string line = holder_ + "\n";
    named_ = ftruncate(fd_, 0) == 0 &&
             pwrite(fd_, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size());
    epoch_ = 1;
    if (fence_ != nullptr) fence_->Set(epoch_);
    return true;
  }
  absl::Status Check() override {
    return epoch_ != 0 ? absl::OkStatus()
                       : absl::FailedPreconditionError("this coordinator does not lead the database");
  }
  bool allows_standby() const override { return false; }
  int64_t epoch() const override { return epoch_; }
  std::string Leader() override {
    if (epoch_ != 0) return named_ ? holder_ : "";
    std::ifstream in(path_);
    std::string holder;
    std::getline(in, holder);
    return holder;
  }

 private:
  const std::string path_;
  const int fd_;
  const std::string holder_;
  const std::shared_ptr<LeaderFence> fence_;
  int64_t epoch_ = 0;
  bool named_ = false;
};

// A database no other process can open (SQLite in memory).
class SoleLeadership final : public Leadership {
 public:
  explicit SoleLeadership(std::shared_ptr<LeaderFence> fence) : fence_(std::move(fence)) {}
  absl::StatusOr<bool> TryAcquire() override {
    if (fence_ != nullptr) fence_->Set(1);
    return true;
  }
  absl::Status Check() override { return absl::OkStatus(); }
  bool allows_standby() const override { return false; }
  int64_t epoch() const override { return 1; }
  std::string Leader() override { return ""; }

 private:
  const std::shared_ptr<LeaderFence> fence_;
};

}  // namespace

std::unique_ptr<Leadership> NewPostgresLeadership(const std::string& conninfo,
                                                  const std::string& holder,
                                                  std::shared_ptr<LeaderFence> fence,
                                                  absl::Duration session_timeout) {
  return std::make_unique<PostgresLeadership>(conninfo, holder, std::move(fence),
                                              session_timeout);
}

absl::StatusOr<std::unique_ptr<Leadership>> NewSqliteFileLeadership(
    const std::string& path, const std::string& holder, std::shared_ptr<LeaderFence> fence) {
  const std::string lock_path = path + ".leader";
  const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open ", lock_path, ": ", std::strerror(errno)));
  }
  return std::make_unique<SqliteFileLeadership>(lock_path, fd, holder, std::move(fence));
}

std::unique_ptr<Leadership> NewSoleLeadership(std::shared_ptr<LeaderFence> fence) {
  return std::make_unique<SoleLeadership>(std::move(fence));
}

}  // namespace tunefleet::server
