// An application that asks tunefleet for its kernel's best config at
// start-up and falls back to the config compiled into it when the service
// cannot answer within a short deadline: start-up never waits on tuning.
//
//   best_config_example KERNEL_NAME SHAPE [SERVER]
//   best_config_example matmul M=1024,N=1024,K=1024 tuner:7070
//
// The coordinator, its CA and the token come from where tunectl and the
// Python package find them (ClientOptions::FromEnvironment: TUNEFLEET_*,
// then the current context of ~/.config/tunefleet/config); SERVER, when
// given, overrides the address. Uses only the public header, as an
// application outside this repository would.
#include <chrono>
#include <cstdio>
#include <string>

#include "tunefleet/client.h"

namespace {

// The config the application ships with (here: matmul's spec default).
constexpr char kCompiledInConfig[] =
    "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0";
// Long enough for a healthy coordinator, short enough not to delay start-up.
constexpr std::chrono::milliseconds kStartupDeadline(500);

struct Choice {
  std::string config;
  std::string source;
};

Choice ChooseConfig(const std::string& kernel, const std::string& shape,
                    const std::string& server) {
  absl::StatusOr<tunefleet::ClientOptions> options = tunefleet::ClientOptions::FromEnvironment();
  if (!options.ok()) {
    std::fprintf(stderr, "tunefleet settings: %s\n", options.status().ToString().c_str());
    return {kCompiledInConfig, "compiled-in default"};
  }
  if (!server.empty()) options->target = server;
  options->deadline = kStartupDeadline;
  absl::StatusOr<std::unique_ptr<tunefleet::Client>> client =
      tunefleet::Client::Connect(*options);
  absl::StatusOr<tunefleet::BestConfig> best =
      client.ok() ? (*client)->GetBestConfig(kernel, shape) : client.status();
  if (!best.ok()) {
    std::fprintf(stderr, "tunefleet did not answer (%s)\n",
                 best.status().ToString().c_str());
    return {kCompiledInConfig, "compiled-in default"};
  }
  std::string source = std::string("tunefleet, ") +
                       tunefleet::BestConfigSourceName(best->source);
  if (best->median_seconds > 0) {
    source += ", " + std::to_string(best->median_seconds * 1e3) + " ms on " +
              best->device_model;
  }
  return {best->config, source};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s KERNEL_NAME SHAPE [SERVER]\n", argv[0]);
    return 2;
  }
  Choice choice = ChooseConfig(argv[1], argv[2], argc == 4 ? argv[3] : "");
  std::printf("config: %s\nsource: %s\n", choice.config.c_str(),
              choice.source.c_str());
  return 0;
}
