// SIGINT handling for watches: Ctrl-C ends the watch cleanly (the job keeps
// running on the server) instead of killing tunectl mid-line.
#ifndef TUNEFLEET_CLIENT_TUNECTL_INTERRUPT_H_
#define TUNEFLEET_CLIENT_TUNECTL_INTERRUPT_H_

#include <signal.h>

#include <thread>

#include "tunefleet/client.h"

namespace tunefleet::tunectl {

// While alive, SIGINT calls `client->CancelWatches()`, so Client::Watch
// returns CANCELLED. The previous SIGINT disposition returns on destruction.
// At most one may exist at a time. Thread-safety: create and destroy on one
// thread; a helper thread of its own makes the call.
class SigintCancelsWatches {
 public:
  explicit SigintCancelsWatches(Client* client);
  ~SigintCancelsWatches();
  SigintCancelsWatches(const SigintCancelsWatches&) = delete;
  SigintCancelsWatches& operator=(const SigintCancelsWatches&) = delete;

 private:
  void Serve();

  Client* const client_;
  bool installed_ = false;
  struct sigaction previous_ {};
  std::thread thread_;
};

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_INTERRUPT_H_
