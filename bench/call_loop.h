// CallLoop: a gRPC completion queue drained by one thread, on which many
// simulated clients run as state machines (thousands of workers on one
// thread instead of a thread each).
#ifndef TUNEFLEET_BENCH_CALL_LOOP_H_
#define TUNEFLEET_BENCH_CALL_LOOP_H_

#include <grpcpp/alarm.h>
#include <grpcpp/client_context.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/support/async_unary_call.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tunefleet::bench {

// One finished unary call, as its handler sees it.
template <typename Response>
struct CallResult {
  grpc::Status status;
  Response response;
  absl::Duration latency;
};

// Thread-safety: Post and Stop may be called from any thread; everything
// else, and every handler, runs on the loop thread. Handlers must not block.
class CallLoop {
 public:
  CallLoop();
  // Stops (see Stop) and joins the thread.
  ~CallLoop();

  // Runs `fn` on the loop thread soon. Ignored once the loop is stopping.
  void Post(std::function<void()> fn);
  // Runs `fn(fired)` on the loop thread at `when`; `fired` is false when the
  // loop stopped first. Loop thread only.
  void After(absl::Time when, std::function<void(bool fired)> fn);

  // Starts a unary call: `prepare(context, cq)` is a stub's PrepareAsyncX
  // bound to its request. `done` runs on the loop thread. Returns the call's
  // context, valid until `done` runs (for TryCancel). Loop thread only.
  template <typename Response, typename Prepare>
  grpc::ClientContext* Call(Prepare prepare, absl::Duration timeout,
                            std::function<void(CallResult<Response>&)> done);

  // True once Stop was asked; loop thread only.
  bool stopping() const { return stopping_; }
  // Runs `on_stop` on the loop thread (to cancel long-polls), then ends the
  // thread when no call or timer is pending. Blocks until then; every call
  // has a deadline, so this ends.
  void Stop(std::function<void()> on_stop);

 private:
  // Something the queue will hand back: a finished call or a timer.
  struct Tag {
    virtual ~Tag() = default;
    virtual void Run(bool ok) = 0;
  };
  struct TimerTag;
  template <typename Response>
  struct CallTag;

  void Loop();
  void Started() { outstanding_.fetch_add(1); }

  grpc::CompletionQueue cq_;
  std::atomic<int> outstanding_{0};
  bool stopping_ = false;                // loop thread
  absl::flat_hash_set<Tag*> timers_;     // pending After() timers; loop thread
  std::atomic<bool> stop_posted_{false};
  std::thread thread_;
};

template <typename Response>
struct CallLoop::CallTag : Tag {
  grpc::ClientContext context;
  CallResult<Response> result;
  absl::Time start;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
  std::function<void(CallResult<Response>&)> done;
  void Run(bool) override {
    result.latency = absl::Now() - start;
    done(result);
  }
};

template <typename Response, typename Prepare>
grpc::ClientContext* CallLoop::Call(Prepare prepare, absl::Duration timeout,
                                    std::function<void(CallResult<Response>&)> done) {
  auto* tag = new CallTag<Response>();
  tag->done = std::move(done);
  tag->context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  tag->start = absl::Now();
  tag->reader = prepare(&tag->context, &cq_);
  tag->reader->StartCall();
  Started();
  tag->reader->Finish(&tag->result.response, &tag->result.status, tag);
  return &tag->context;
}

}  // namespace tunefleet::bench

#endif  // TUNEFLEET_BENCH_CALL_LOOP_H_
