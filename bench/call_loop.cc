#include "bench/call_loop.h"

#include <utility>

namespace tunefleet::bench {

struct CallLoop::TimerTag : Tag {
  grpc::Alarm alarm;
  std::function<void(bool)> fn;
  void Run(bool ok) override { fn(ok); }
};

CallLoop::CallLoop() : thread_([this] { Loop(); }) {}

CallLoop::~CallLoop() { Stop([] {}); }

void CallLoop::Post(std::function<void()> fn) {
  if (stop_posted_.load()) return;
  auto* tag = new TimerTag();
  tag->fn = [this, fn = std::move(fn)](bool) {
    if (!stopping_) fn();
  };
  Started();
  tag->alarm.Set(&cq_, absl::ToChronoTime(absl::Now()), tag);
}

void CallLoop::After(absl::Time when, std::function<void(bool fired)> fn) {
  auto* tag = new TimerTag();
  // A timer pending at Stop fires at once with fired = false, so that
  // Stop never waits out a timer.
  tag->fn = [this, fn = std::move(fn)](bool ok) { fn(ok && !stopping_); };
  Started();
  tag->alarm.Set(&cq_, absl::ToChronoTime(stopping_ ? absl::Now() : when), tag);
  timers_.insert(tag);
}

void CallLoop::Stop(std::function<void()> on_stop) {
  if (stop_posted_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  auto* tag = new TimerTag();
  tag->fn = [this, on_stop = std::move(on_stop)](bool) {
    stopping_ = true;
    on_stop();
    for (Tag* timer : timers_) static_cast<TimerTag*>(timer)->alarm.Cancel();
  };
  Started();
  tag->alarm.Set(&cq_, absl::ToChronoTime(absl::Now()), tag);
  thread_.join();
}

void CallLoop::Loop() {
  void* raw = nullptr;
  bool ok = false;
  while (cq_.Next(&raw, &ok)) {
    auto* tag = static_cast<Tag*>(raw);
    timers_.erase(tag);
    tag->Run(ok);
    delete tag;
    if (outstanding_.fetch_sub(1) == 1 && stopping_) cq_.Shutdown();
  }
}

}  // namespace tunefleet::bench
