#include "server/long_polls.h"

#include <utility>

#include "absl/synchronization/notification.h"

namespace tunefleet::server {

LongPolls::TryLease LongPolls::FirstOf(std::vector<LeaseSource*> sources) {
  return [sources = std::move(sources)](const LeaseQuery& query) -> Result {
    for (LeaseSource* source : sources) {
      Result grant = source->TryLease(query);
      if (!grant.ok() || grant->has_value()) return grant;
    }
    return std::nullopt;
  };
}

LongPolls::LongPolls(TryLease try_lease, absl::Duration max_wait,
                     absl::Duration retry_interval)
    : try_lease_(std::move(try_lease)),
      max_wait_(max_wait),
      retry_interval_(retry_interval),
      dispatcher_([this] { Dispatch(); }) {}

LongPolls::~LongPolls() {
  Shutdown();
  dispatcher_.join();
}

void LongPolls::Wait(const LeaseQuery& query, absl::Duration wait, Done done,
                     Cancelled cancelled) {
  bool refused = false;
  {
    absl::MutexLock lock(&mu_);
    refused = stopping_;
  }
  if (refused) {
    done(absl::UnavailableError("the coordinator is shutting down"));
    return;
  }
  Result first = try_lease_(query);
  if (!first.ok() || first->has_value() || wait <= absl::ZeroDuration()) {
    done(std::move(first));
    return;
  }
  absl::ReleasableMutexLock lock(&mu_);
  if (stopping_) {
    lock.Release();
    done(absl::UnavailableError("the coordinator is shutting down"));
    return;
  }
  waiters_.push_back(Waiter{query, absl::Now() + std::min(wait, max_wait_), std::move(done),
                            std::move(cancelled)});
}

LongPolls::Result LongPolls::WaitBlocking(const LeaseQuery& query, absl::Duration wait) {
  absl::Notification finished;
  Result result = std::nullopt;
  Wait(query, wait, [&](Result r) {
    result = std::move(r);
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

void LongPolls::Notify() {
  absl::MutexLock lock(&mu_);
  notified_ = true;
}

void LongPolls::Shutdown() {
  std::list<Waiter> ended;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    ended.swap(waiters_);
  }
  for (Waiter& waiter : ended) {
    waiter.done(absl::UnavailableError("the coordinator is shutting down"));
  }
}

size_t LongPolls::waiting() const {
  absl::MutexLock lock(&mu_);
  return waiters_.size();
}

void LongPolls::Dispatch() {
  while (true) {
    std::list<Waiter> batch;
    {
      absl::MutexLock lock(&mu_);
      absl::Time wake = absl::Now() + retry_interval_;
      for (const Waiter& waiter : waiters_) wake = std::min(wake, waiter.deadline);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return notified_ || stopping_;
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), wake);
      if (stopping_) return;
      notified_ = false;
      batch.swap(waiters_);
    }
    TryAll(&batch);
    absl::ReleasableMutexLock lock(&mu_);
    if (stopping_) {
      lock.Release();
      for (Waiter& waiter : batch) {
        waiter.done(absl::UnavailableError("the coordinator is shutting down"));
      }
      return;
    }
    // Calls that arrived meanwhile go after the older ones.
    waiters_.splice(waiters_.begin(), batch);
  }
}

void LongPolls::TryAll(std::list<Waiter>* waiters) {
  const absl::Time now = absl::Now();
  for (auto it = waiters->begin(); it != waiters->end();) {
    Result result = std::nullopt;
    const bool gone = it->cancelled != nullptr && it->cancelled();
    if (!gone && now < it->deadline) result = try_lease_(it->query);
    if (!gone && now < it->deadline && result.ok() && !result->has_value()) {
      ++it;
      continue;
    }
    it->done(std::move(result));
    it = waiters->erase(it);
  }
}

}  // namespace tunefleet::server
