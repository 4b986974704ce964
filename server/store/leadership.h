// Leadership: which coordinator process leads a database. One leads at a
// time; on PostgreSQL the others wait as standbys and one of them takes over
// once the leader is gone.
//
// On PostgreSQL the leader holds a session advisory lock on a connection of
// its own, and each new leader raises the epoch in coordinator_leader. The
// server ends that session once it has been idle for the session timeout
// (idle_session_timeout): a leader checks its lead far more often, so only
// a leader paused (or cut off) for longer loses it, and the lock with it. A
// store fenced with the leader's LeaderFence checks that epoch in every
// write transaction (SELECT ... FOR SHARE, so a takeover waits for writes in
// flight and every later write sees it): a leader whose session ended while
// it was paused or cut off cannot write once a standby took over. A SQLite
// file is led by the process that holds an exclusive lock on "<file>.leader"
// (one host, no standby); an in-memory SQLite database by its own process.
#ifndef TUNEFLEET_SERVER_STORE_LEADERSHIP_H_
#define TUNEFLEET_SERVER_STORE_LEADERSHIP_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tunefleet::server {

// The epoch under which this process leads its database, shared by its
// Leadership (which sets it) and its fenced store (which checks it).
// Thread-safe.
class LeaderFence {
 public:
  // 0 while the process leads nothing: a fenced store then writes nothing.
  int64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  void Set(int64_t epoch) { epoch_.store(epoch, std::memory_order_release); }

 private:
  std::atomic<int64_t> epoch_{0};
};

// One owner calls it (the coordinator's ticker), but for KeepAlive, which a
// second thread may call at any time.
class Leadership {
 public:
  virtual ~Leadership() = default;
  // Keeps the lead's session busy (PostgreSQL: a round trip on it), so that
  // the server's idle timeout ends it only once this process stops running,
  // not while its ticker is slow or it is taking over. Call it every
  // standby poll from a thread of its own; a no-op when nothing is led.
  virtual void KeepAlive() {}
  // Takes the lead when no other process holds it: true, and the fence
  // carries the new epoch. False while another process leads; Unavailable
  // when the database cannot be reached.
  virtual absl::StatusOr<bool> TryAcquire() = 0;
  // OK while this process leads. FailedPrecondition once it lost the lead
  // (its session ended, or another process took over): it must stop
  // serving. Unavailable when that cannot be told now.
  virtual absl::Status Check() = 0;
  // Whether a process that is refused the lead may wait for it (false for a
  // SQLite file: a second coordinator on one file is an error).
  virtual bool allows_standby() const = 0;
  // The epoch this process leads under; 0 before TryAcquire succeeded.
  virtual int64_t epoch() const = 0;
  // Who leads now, for messages ("host:pid since ..."); "" when unknown.
  virtual std::string Leader() = 0;
};

// How long PostgreSQL keeps a lock session that sends nothing, by default:
// a paused leader loses its lead this long after its last check.
inline constexpr absl::Duration kDefaultLeaderSessionTimeout = absl::Seconds(15);

// The leadership of the database at `url` (OpenStore's URLs) for this
// process, named `holder` (host:pid) for operators; `fence` (may be null)
// gets the epoch; `session_timeout` (PostgreSQL 14 and later) ends the
// lock's session once it has been idle that long (KeepAlive must be called
// more often).
// InvalidArgument for an unknown URL or a session timeout under 1 s;
// Unavailable when the database or the lock file cannot be opened.
absl::StatusOr<std::unique_ptr<Leadership>> OpenLeadership(
    const std::string& url, const std::string& holder, std::shared_ptr<LeaderFence> fence,
    absl::Duration session_timeout = kDefaultLeaderSessionTimeout);

// For OpenLeadership: each kind of database's.
std::unique_ptr<Leadership> NewPostgresLeadership(
    const std::string& conninfo, const std::string& holder, std::shared_ptr<LeaderFence> fence,
    absl::Duration session_timeout = kDefaultLeaderSessionTimeout);
absl::StatusOr<std::unique_ptr<Leadership>> NewSqliteFileLeadership(
    const std::string& path, const std::string& holder, std::shared_ptr<LeaderFence> fence);
std::unique_ptr<Leadership> NewSoleLeadership(std::shared_ptr<LeaderFence> fence);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STORE_LEADERSHIP_H_
