// tunefleet-coordinator: the composition root. Flags are read here only and
// copied into CoordinatorOptions.
#include <malloc.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/coordinator.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:7070";
  std::string database;
  std::string data_dir = "tunefleet-data";
  std::string address_file;
  std::string metrics_listen = "127.0.0.1:9464";
  int64_t lease_ttl_ms = 10000;
  int64_t heartbeat_ms = 1000;
  int batch_size = 4;
  int64_t max_space_points = 10'000'000;
  int64_t max_trials = 100'000;
  int finalists = 5;
  int report_threads = 64;
  int max_leases_per_device = 2;
  std::string verify_best = "auto";
  double verify_margin = 0.10;
  double verify_tolerance = 0.25;
  int64_t verify_wait_ms = 5000;
};

void AddVerifyFlags(CLI::App& app, Flags& flags) {
  app.add_option("--max-leases-per-device", flags.max_leases_per_device,
                 "most leases one worker device holds at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--verify-best", flags.verify_best,
                 "re-measure a new best on another worker before serving it: auto (serve "
                 "unverified when no verifier is alive or none came within --verify-wait-ms), "
                 "required (wait for one), off")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "required", "off"}));
  app.add_option("--verify-margin", flags.verify_margin,
                 "verify a best that beats the served one by more than this fraction")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--verify-tolerance", flags.verify_tolerance,
                 "a claim agrees when claimed >= verified / (1 + tolerance)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--verify-wait-ms", flags.verify_wait_ms,
                 "auto: how long a new best waits for a verifier")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

tunefleet::server::VerifyOptions VerifyOptionsFromFlags(const Flags& flags) {
  using tunefleet::server::VerifyMode;
  tunefleet::server::VerifyOptions verify;
  verify.mode = flags.verify_best == "off"        ? VerifyMode::kOff
                : flags.verify_best == "required" ? VerifyMode::kRequired
                                                  : VerifyMode::kAuto;
  verify.margin = flags.verify_margin;
  verify.tolerance = flags.verify_tolerance;
  verify.wait = absl::Milliseconds(flags.verify_wait_ms);
  return verify;
}

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("--listen", flags.listen, "host:port to serve on; port 0 picks a free port")
      ->capture_default_str();
  app.add_option("--database", flags.database,
                 "store URL: sqlite:///path.db or postgresql://user:pass@host:port/db "
                 "(default: SQLite under --data-dir)");
  app.add_option("--data-dir", flags.data_dir, "directory of the embedded SQLite store")
      ->capture_default_str();
  app.add_option("--address-file", flags.address_file,
                 "write the bound host:port to this file once serving");
  app.add_option("--metrics-listen", flags.metrics_listen,
                 "host:port of the Prometheus /metrics endpoint; empty turns it off")
      ->capture_default_str();
  app.add_option("--lease-ttl-ms", flags.lease_ttl_ms,
                 "a lease not renewed for this long expires")->capture_default_str();
  app.add_option("--heartbeat-ms", flags.heartbeat_ms, "worker heartbeat interval")
      ->capture_default_str();
  app.add_option("--batch-size", flags.batch_size, "trials per lease")->capture_default_str();
  app.add_option("--max-space-points", flags.max_space_points,
                 "largest config space accepted")->capture_default_str();
  app.add_option("--finalists", flags.finalists,
                 "configs re-measured, interleaved, before the winner is chosen (0: off)")
      ->capture_default_str();
  app.add_option("--report-threads", flags.report_threads,
                 "threads that record reported results (reports that arrive together share "
                 "one store transaction)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--max-trials", flags.max_trials,
                 "most configs one job measures per device model")->capture_default_str();
}

tunefleet::server::CoordinatorOptions OptionsFromFlags(const Flags& flags) {
  tunefleet::server::CoordinatorOptions options;
  options.listen = flags.listen;
  options.database_url = flags.database;
  options.data_dir = flags.data_dir;
  options.metrics_listen = flags.metrics_listen;
  options.heartbeat_interval = absl::Milliseconds(flags.heartbeat_ms);
  options.jobs.lease_ttl = absl::Milliseconds(flags.lease_ttl_ms);
  options.jobs.batch_size = flags.batch_size;
  options.jobs.max_space_points = flags.max_space_points;
  options.jobs.max_trials = flags.max_trials;
  options.jobs.finalists = flags.finalists;
  options.jobs.max_leases_per_device = flags.max_leases_per_device;
  options.jobs.verify = VerifyOptionsFromFlags(flags);
  options.report_threads = flags.report_threads;
  return options;
}

// glibc gives threads that allocate arenas of their own, up to 8 per core,
// and each arena keeps what was freed in it. The coordinator runs some 80
// threads (report pool, gRPC): unchecked, its memory creeps up with the
// arenas they touch. Two per core keep it level; MALLOC_ARENA_MAX, when set,
// is left to decide.
void LimitMallocArenas() {
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) return;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  mallopt(M_ARENA_MAX, static_cast<int>(2 * cores));
}

std::string HostOf(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  return host.empty() || host == "0.0.0.0" || host == "[::]" ? "127.0.0.1" : host;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tunefleet-coordinator: receives tuning jobs, leases trials to "
               "workers, keeps every result and the best configs"};
  Flags flags;
  AddFlags(app, flags);
  AddVerifyFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  LimitMallocArenas();
  // Abseil built without NDEBUG (as Debian's is) checks every lock
  // acquisition for deadlock cycles, which costs the coordinator's hot paths
  // a graph update per lock; the tests keep the check on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Block the stop signals before any thread starts; main waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const tunefleet::server::CoordinatorOptions options = OptionsFromFlags(flags);
  auto coordinator = tunefleet::server::Coordinator::Start(options);
  if (!coordinator.ok()) {
    std::cerr << "tunefleet-coordinator: " << coordinator.status() << "\n";
    return 1;
  }
  const std::string address =
      HostOf(options.listen) + ":" + std::to_string((*coordinator)->port());
  std::cout << "tunefleet-coordinator listening on " << address;
  if ((*coordinator)->metrics_port() != 0) {
    std::cout << ", metrics on " << HostOf(options.metrics_listen) << ":"
              << (*coordinator)->metrics_port() << "/metrics";
  }
  std::cout << std::endl;
  if (!flags.address_file.empty()) {
    const std::string& path = flags.address_file;
    std::ofstream(path + ".tmp") << address << "\n";
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::cerr << "tunefleet-coordinator: signal " << signal << ", draining" << std::endl;
  (*coordinator)->Shutdown(absl::Seconds(5));
  return 0;
}
