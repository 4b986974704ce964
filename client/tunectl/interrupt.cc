#include "client/tunectl/interrupt.h"

#include <unistd.h>

#include <cerrno>

namespace tunefleet::tunectl {
namespace {

// The handler may only write to a pipe; the thread behind it does the rest.
int g_pipe[2] = {-1, -1};
constexpr char kInterrupt = 'i';
constexpr char kStop = 's';

void OnSigint(int) {
  int saved = errno;
  ssize_t ignored = write(g_pipe[1], &kInterrupt, 1);
  (void)ignored;
  errno = saved;
}

}  // namespace

SigintCancelsWatches::SigintCancelsWatches(Client* client) : client_(client) {
  if (pipe(g_pipe) != 0) return;  // no handler: Ctrl-C kills as usual
  struct sigaction action {};
  action.sa_handler = OnSigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  installed_ = sigaction(SIGINT, &action, &previous_) == 0;
  thread_ = std::thread([this] { Serve(); });
}

SigintCancelsWatches::~SigintCancelsWatches() {
  if (installed_) sigaction(SIGINT, &previous_, nullptr);
  if (thread_.joinable()) {
    ssize_t ignored = write(g_pipe[1], &kStop, 1);
    (void)ignored;
    thread_.join();
  }
  if (g_pipe[0] >= 0) close(g_pipe[0]);
  if (g_pipe[1] >= 0) close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
}

void SigintCancelsWatches::Serve() {
  char byte = 0;
  for (;;) {
    ssize_t n = read(g_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kStop) return;
    client_->CancelWatches();
  }
}

}  // namespace tunefleet::tunectl
