// tunefleet-coordinator: the composition root. Flags are read here only and
// copied into CoordinatorOptions.
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/strings/str_cat.h"
#include "common/database_url.h"
#include "common/grpc_logging.h"
#include "common/logging.h"
#include "common/usable_cpus.h"
#include "spdlog/spdlog.h"
#include "server/coordinator.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:7070";
  std::string database;
  std::string database_file;
  std::string data_dir = "tunefleet-data";
  std::string artifact_dir;
  int64_t artifact_cache_mib = 4096;
  std::vector<std::string> artifact_builders;
  std::vector<std::string> device_models;
  std::string address_file;
  std::string metrics_address_file;
  std::string metrics_listen = "127.0.0.1:9464";
  int64_t lease_ttl_ms = 10000;
  int64_t lease_idle_limit_s = 600;
  int64_t lease_max_age_s = 1800;
  int64_t orphan_timeout_s = 600;
  int max_watches_per_principal = 64;
  int max_watches = 1024;
  int64_t heartbeat_ms = 1000;
  int64_t standby_poll_ms = 500;
  int64_t leader_session_timeout_ms = 15000;
  int64_t forget_workers_after_ms = 0;
  int batch_size = 4;
  int64_t max_space_points = 10'000'000;
  int64_t max_trials = 100'000;
  int64_t max_tensor_bytes = int64_t{16} << 30;
  int finalists = 5;
  int warm_start = 8;
  int history_shapes = 8;
  int history_rows = 512;
  double history_max_factor = 16;
  int report_threads = 64;
  int report_nice = 10;
  int lease_threads = -1;
  bool lease_receipts = true;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  bool insecure = false;
  std::string admin_token_file;
  int max_active_jobs = 100;
  int64_t max_trials_per_day = 5'000'000;
  int max_leases_per_device = 2;
  double max_lease_share = 0.5;
  std::string log_level = "info";
  std::string log_format = "text";
  std::string verify_best = "auto";
  double verify_margin = 0.10;
  double verify_tolerance = 0.25;
  int64_t verify_wait_ms = 5000;
  double spot_check_rate = 0.1;
  double audit_build_rate = 0.05;
  double spot_check_tolerance = 1.0;
  int64_t spot_check_wait_ms = 30000;
};

void AddSecurityFlags(CLI::App& app, Flags& flags) {
  app.add_option("--tls-cert", flags.tls_cert, "PEM certificate chain the coordinator presents");
  app.add_option("--tls-key", flags.tls_key, "PEM private key of --tls-cert");
  app.add_option("--tls-client-ca", flags.tls_client_ca,
                 "PEM CA that signs worker certificates (a worker's identity is its "
                 "certificate's common name)");
  app.add_flag("--insecure", flags.insecure,
               "serve plaintext and authenticate nobody: every caller is an admin "
               "(development only)");
  app.add_option("--admin-token-file", flags.admin_token_file,
                 "trust the admin token in this file; a new one is written (mode 0600) when "
                 "the file does not exist");
  app.add_option("--max-active-jobs", flags.max_active_jobs,
                 "unfinished jobs one principal may have (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-trials-per-day", flags.max_trials_per_day,
                 "trials measured for one principal's jobs over 24 hours (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--artifact-builders", flags.artifact_builders,
                 "principals (as `tunectl workers` shows them) whose shared artifacts every "
                 "worker may fetch: compile-only workers the fleet trusts as it trusts its "
                 "compiler")
      ->delimiter(',');
}

void AddVerifyFlags(CLI::App& app, Flags& flags) {
  app.add_option("--max-leases-per-device", flags.max_leases_per_device,
                 "most leases one worker device holds at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--max-lease-share", flags.max_lease_share,
                 "while another principal asks for a job target's work, one principal's search "
                 "leases hold at most this share of the target's open configs (1: no bound)")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
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
  app.add_option("--spot-check-rate", flags.spot_check_rate,
                 "the share of each principal's search results re-measured by another "
                 "principal (besides its first, every new best and a suspect's); 0: none")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--audit-build-rate", flags.audit_build_rate,
                 "the share of search leases whose configs a worker builds from the sources "
                 "instead of fetching shared artifacts, which catches a poisoned artifact in "
                 "the search too (the finalists round and verifications always build)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--spot-check-tolerance", flags.spot_check_tolerance,
                 "a spot check agrees when the two times are within a factor of 1 + tolerance")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--spot-check-wait-ms", flags.spot_check_wait_ms,
                 "how long a spot check (or its referee) waits for a device of another "
                 "principal before it is dropped")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

// TLS is all or nothing, and plaintext only when asked for by name.
bool CheckSecurityFlags(const Flags& flags) {
  const bool any_tls =
      !flags.tls_cert.empty() || !flags.tls_key.empty() || !flags.tls_client_ca.empty();
  if (flags.insecure && any_tls) {
    spdlog::critical("--insecure and --tls-* exclude each other");
    return false;
  }
  if (flags.insecure) {
    spdlog::warn("--insecure: plaintext, no authentication; anyone who can reach the port can "
                 "submit code to the fleet's hosts and change its results");
    return true;
  }
  if (flags.tls_cert.empty() || flags.tls_key.empty() || flags.tls_client_ca.empty()) {
    spdlog::critical("give --tls-cert, --tls-key and --tls-client-ca (scripts/dev-ca.sh makes "
                     "a development CA), or --insecure");
    return false;
  }
  return true;
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
                 "(default: TUNEFLEET_DATABASE, else SQLite under --data-dir); a password "
                 "given here is visible to every local user: prefer --database-file");
  app.add_option("--database-file", flags.database_file,
                 "file whose first line is the store URL; must not be readable by group or "
                 "others");
  app.add_option("--data-dir", flags.data_dir, "directory of the embedded SQLite store")
      ->capture_default_str();
  app.add_option("--address-file", flags.address_file,
                 "write the bound host:port to this file once serving");
  app.add_option("--metrics-address-file", flags.metrics_address_file,
                 "write the bound host:port of /metrics to this file once serving");
  app.add_option("--metrics-listen", flags.metrics_listen,
                 "host:port of the Prometheus /metrics endpoint; empty turns it off")
      ->capture_default_str();
  app.add_option("--lease-ttl-ms", flags.lease_ttl_ms,
                 "a lease not renewed for this long expires")->capture_default_str();
  app.add_option("--lease-idle-limit-s", flags.lease_idle_limit_s,
                 "a lease that reports no result for this long is taken back, even while "
                 "its worker heartbeats")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--lease-max-age-s", flags.lease_max_age_s,
                 "a lease is taken back (its unreported configs as lost) this long after it "
                 "was granted, however it reports")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--max-watches-per-principal", flags.max_watches_per_principal,
                 "WatchJob streams one principal may hold open at once (each holds "
                 "memory, not a thread)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--max-watches", flags.max_watches, "WatchJob streams open at once in all")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--orphan-timeout-s", flags.orphan_timeout_s,
                 "a job target with no live worker of its device model for this long is "
                 "given up (stop reason no_workers); the job ends with its other targets")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--heartbeat-ms", flags.heartbeat_ms, "worker heartbeat interval")
      ->capture_default_str();
  app.add_option("--standby-poll-ms", flags.standby_poll_ms,
                 "how often a standby (another coordinator leads the PostgreSQL database) "
                 "tries for the lead, and a leader checks it still holds it; a leader that "
                 "lost it exits with code 3")
      ->check(CLI::Range(int64_t{50}, int64_t{60'000}))
      ->capture_default_str();
  app.add_option("--leader-session-timeout-ms", flags.leader_session_timeout_ms,
                 "PostgreSQL: the leader's lock session ends when it has sent nothing for this "
                 "long, so a leader paused or cut off longer loses the lead to a standby (at "
                 "least 4 x --standby-poll-ms)")
      ->check(CLI::Range(int64_t{1000}, int64_t{3'600'000}))
      ->capture_default_str();
  app.add_option("--device-model", flags.device_models,
                 "a device model workers may register, as `tunectl workers` shows it "
                 "(repeat for each; none: any model)");
  app.add_option("--forget-workers-after-ms", flags.forget_workers_after_ms,
                 "a worker silent this long leaves the worker list (0: 30 heartbeat "
                 "intervals)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch-size", flags.batch_size, "trials per lease")->capture_default_str();
  app.add_option("--max-space-points", flags.max_space_points,
                 "largest config space accepted")->capture_default_str();
  app.add_option("--finalists", flags.finalists,
                 "configs re-measured, interleaved, before the winner is chosen (0: off)")
      ->capture_default_str();
  app.add_option("--warm-start", flags.warm_start,
                 "best configs of the nearest tuned shapes a new target measures first (0: off)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--history-shapes", flags.history_shapes,
                 "model strategy: tuned shapes of the same kernel and device model whose trials "
                 "it trains on, nearest first (0: no history)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  app.add_option("--history-rows", flags.history_rows,
                 "model strategy: most trials of those shapes it trains on")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--history-max-factor", flags.history_max_factor,
                 "model strategy: shapes farther than this factor (the product over dims of "
                 "each dim's ratio) are not read")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e12));
  app.add_option("--report-threads", flags.report_threads,
                 "threads that record reported results (reports that arrive together share "
                 "one store transaction)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--lease-threads", flags.lease_threads,
                 "threads that try LeaseWork calls at once (a call that finds no work waits "
                 "without one); 0: gRPC's threads try them; -1: 16 with two or more usable "
                 "CPUs, else 0")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1024));
  app.add_option("--report-nice", flags.report_nice,
                 "how far below the threads that answer applications' reads those threads run "
                 "(added to their nice value; 0 runs them alike)")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  app.add_flag("--lease-receipts,!--no-lease-receipts", flags.lease_receipts,
               "seal search leases with receipts, so that a restart or a standby's takeover "
               "keeps what workers measured across it (--no-lease-receipts: measured again)")
      ->capture_default_str();
  app.add_option("--max-trials", flags.max_trials,
                 "most configs one job measures per device model")->capture_default_str();
  app.add_option("--log-level", flags.log_level,
                 "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  app.add_option("--log-format", flags.log_format,
                 "text, or json: one JSON object per line (time, level, logger, message) "
                 "for log collectors")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--max-tensor-bytes", flags.max_tensor_bytes,
                 "largest total size of a job's tensors (default 16 GiB)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--artifact-dir", flags.artifact_dir,
                 "where compiled artifacts that workers share are kept (default: "
                 "<data-dir>/artifacts)");
  app.add_option("--artifact-cache-mib", flags.artifact_cache_mib,
                 "most MiB of shared artifacts kept, least recently used evicted first; 0 "
                 "turns sharing off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

// The store URL from --database, --database-file or TUNEFLEET_DATABASE.
absl::StatusOr<std::string> DatabaseUrl(const Flags& flags) {
  tunefleet::DatabaseUrlSources sources{flags.database, flags.database_file, std::nullopt};
  if (const char* env = std::getenv("TUNEFLEET_DATABASE"); env != nullptr) {
    sources.environment = env;
  }
  if (tunefleet::HasPassword(flags.database)) {
    spdlog::warn("the password in --database is visible to every local user (ps); use "
                 "--database-file or TUNEFLEET_DATABASE");
  }
  return tunefleet::ResolveDatabaseUrl(sources);
}

tunefleet::server::CoordinatorOptions OptionsFromFlags(const Flags& flags,
                                                       std::string database_url) {
  tunefleet::server::CoordinatorOptions options;
  options.listen = flags.listen;
  options.database_url = std::move(database_url);
  options.data_dir = flags.data_dir;
  options.artifact_dir = flags.artifact_dir;
  options.artifact_cache_bytes = flags.artifact_cache_mib << 20;
  options.artifact_builders = flags.artifact_builders;
  options.max_watches_per_principal = flags.max_watches_per_principal;
  options.max_watches = flags.max_watches;
  options.metrics_listen = flags.metrics_listen;
  options.heartbeat_interval = absl::Milliseconds(flags.heartbeat_ms);
  options.standby_poll = absl::Milliseconds(flags.standby_poll_ms);
  options.leader_session_timeout = absl::Milliseconds(flags.leader_session_timeout_ms);
  if (flags.forget_workers_after_ms > 0) {
    options.forget_workers_after = absl::Milliseconds(flags.forget_workers_after_ms);
  }
  options.device_models = flags.device_models;
  options.jobs.lease_ttl = absl::Milliseconds(flags.lease_ttl_ms);
  options.jobs.lease_idle_limit = absl::Seconds(flags.lease_idle_limit_s);
  options.jobs.lease_max_age = absl::Seconds(flags.lease_max_age_s);
  options.jobs.orphan_timeout = absl::Seconds(flags.orphan_timeout_s);
  options.jobs.batch_size = flags.batch_size;
  options.jobs.max_space_points = flags.max_space_points;
  options.jobs.max_trials = flags.max_trials;
  options.jobs.max_tensor_bytes = flags.max_tensor_bytes;
  options.jobs.finalists = flags.finalists;
  options.jobs.warm_start = flags.warm_start;
  options.jobs.history.shapes = static_cast<size_t>(flags.history_shapes);
  options.jobs.history.rows = static_cast<size_t>(flags.history_rows);
  options.jobs.history.max_distance = std::log(flags.history_max_factor);
  options.jobs.max_leases_per_device = flags.max_leases_per_device;
  options.jobs.max_lease_share = flags.max_lease_share;
  options.jobs.verify = VerifyOptionsFromFlags(flags);
  options.jobs.spot.rate = flags.spot_check_rate;
  options.jobs.audit_build_rate = flags.audit_build_rate;
  options.jobs.spot.tolerance = flags.spot_check_tolerance;
  options.jobs.spot.wait = absl::Milliseconds(flags.spot_check_wait_ms);
  options.report_threads = flags.report_threads;
  options.report_nice = flags.report_nice;
  options.lease_threads = flags.lease_threads;
  options.lease_receipts = flags.lease_receipts;
  options.tls = tunefleet::ServerTls{flags.tls_cert, flags.tls_key, flags.tls_client_ca};
  options.admin_token_file = flags.admin_token_file;
  options.jobs.quotas.max_active_jobs = flags.max_active_jobs;
  options.jobs.quotas.max_trials_per_day = flags.max_trials_per_day;
  return options;
}

// glibc gives threads that allocate arenas of their own, up to 8 per core,
// and each arena keeps what was freed in it. The coordinator runs some 80
// threads (report pool, gRPC): unchecked, its memory creeps up with the
// arenas they touch. Two per usable CPU keep it level; MALLOC_ARENA_MAX, when set,
// is left to decide.
void LimitMallocArenas() {
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) return;
  mallopt(M_ARENA_MAX, 2 * tunefleet::UsableCpus());
}

// Written whole or not at all: a reader polling for the file never sees half.
void WriteAddressFile(const std::string& path, const std::string& address) {
  if (path.empty()) return;
  std::ofstream(path + ".tmp") << address << "\n";
  std::rename((path + ".tmp").c_str(), path.c_str());
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
  AddSecurityFlags(app, flags);
  AddVerifyFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  const absl::Status logging = tunefleet::ConfigureLogging(
      "coordinator",
      flags.log_format == "json" ? tunefleet::LogFormat::kJson : tunefleet::LogFormat::kText,
      flags.log_level);
  if (!logging.ok()) {
    std::cerr << "tunefleet-coordinator: " << logging.message() << "\n";
    return 2;
  }
  tunefleet::RouteGrpcLogging();
  if (!CheckSecurityFlags(flags)) return 2;
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

  absl::StatusOr<std::string> database_url = DatabaseUrl(flags);
  if (!database_url.ok()) {
    spdlog::critical("{}", database_url.status().ToString());
    return 2;
  }
  if (!database_url->empty()) spdlog::info("store {}", tunefleet::RedactUrl(*database_url));
  const tunefleet::server::CoordinatorOptions options =
      OptionsFromFlags(flags, *std::move(database_url));
  auto coordinator = tunefleet::server::Coordinator::Start(options);
  if (!coordinator.ok()) {
    // libpq quotes pieces of a URL it cannot parse, the password included.
    spdlog::critical("{}", tunefleet::RedactPasswordOf(options.database_url,
                                                       coordinator.status().ToString()));
    return 1;
  }
  const std::string address =
      HostOf(options.listen) + ":" + std::to_string((*coordinator)->port());
  std::string metrics_address;
  if ((*coordinator)->metrics_port() != 0) {
    metrics_address = HostOf(options.metrics_listen) + ":" +
                      std::to_string((*coordinator)->metrics_port());
    WriteAddressFile(flags.metrics_address_file, metrics_address);
  }
  // A standby listens (health alone) and takes over on its own.
  const std::string standby =
      (*coordinator)->leading()
          ? ""
          : absl::StrCat(" as a standby (", (*coordinator)->leader().empty()
                                                ? std::string("another coordinator")
                                                : (*coordinator)->leader(),
                         " leads the database)");
  // The banner for people; JSON logs hold only JSON (the line below says it).
  if (flags.log_format != "json") {
    std::cout << "tunefleet-coordinator listening on " << address << standby
              << (metrics_address.empty() ? "" : ", metrics on " + metrics_address + "/metrics")
              << std::endl;
  }
  spdlog::info("listening on {}{}{}", address, standby,
               (*coordinator)->metrics_port() == 0
                   ? ""
                   : absl::StrCat(", metrics on port ", (*coordinator)->metrics_port()));
  spdlog::info("{} usable CPUs (affinity and cgroup quota); {} report threads, {} lease threads",
               tunefleet::UsableCpus(), flags.report_threads,
               tunefleet::server::LeaseThreadsFor(flags.lease_threads));
  WriteAddressFile(flags.address_file, address);
  // Until a stop signal, or until the coordinator lost its database's lead
  // (another took over): then it must not serve on, and a supervisor starts
  // it again as a standby.
  const timespec poll = {0, 200'000'000};
  while (true) {
    const int signal = sigtimedwait(&stop_signals, nullptr, &poll);
    if (signal > 0) {
      spdlog::info("signal {} ({}): draining", signal, strsignal(signal));
      (*coordinator)->Shutdown(absl::Seconds(5));
      return 0;
    }
    if (const absl::Status lost = (*coordinator)->Lost(); !lost.ok()) {
      (*coordinator)->Shutdown(absl::Seconds(1));
      spdlog::critical("exiting: {}", lost.ToString());
      return 3;
    }
  }
}
