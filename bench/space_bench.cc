// space_bench: how long walking a config space takes. For a GEMM-like CUDA
// space of 1e6 and of 1e7 points, and for the 1e7 one with only a constraint
// on its last param (nothing to prune), it prints the valid configs, the
// seconds to enumerate them, the seconds MakeStrategy takes (exhaustive and
// random, placeholder limits) and the seconds of a submission's two walks
// (placeholder limits, then one device model). The digests identify the
// enumerated ordinals and the random sample, so two builds can be compared.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "google/protobuf/text_format.h"
#include "server/search_strategy.h"

namespace tunefleet::bench {
namespace {

constexpr int kRepeats = 3;

// Ten values per param: six params make 1e6 points, seven make 1e7.
constexpr const char* kSpec = R"pb(
  name: "space_bench"
  backend: BACKEND_CUDA
  sources: "gemm.cu"
  entry: "gemm"
  problem { name: "M" }
  problem { name: "N" }
  problem { name: "K" }
  params { name: "BLOCK_M" values: [16, 32, 48, 64, 96, 128, 160, 192, 224, 256] }
  params { name: "BLOCK_N" values: [16, 32, 48, 64, 96, 128, 160, 192, 224, 256] }
  params { name: "BLOCK_K" values: [8, 16, 24, 32, 48, 64, 80, 96, 112, 128] }
  params { name: "WARPS_M" values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }
  params { name: "WARPS_N" values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }
  params { name: "STAGES" values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }
  derived { name: "threads" expr: "WARPS_M * WARPS_N * warp_size" }
  derived { name: "smem_bytes" expr: "(BLOCK_M + BLOCK_N) * BLOCK_K * 2 * STAGES" }
  constraints { expr: "BLOCK_M % (16 * WARPS_M) == 0" }
  constraints { expr: "BLOCK_N % (16 * WARPS_N) == 0" }
  constraints { expr: "threads <= max_threads_per_block" }
  constraints { expr: "is_pow2(WARPS_M * WARPS_N) && WARPS_M * WARPS_N >= 4" }
  constraints { expr: "STAGES >= 2 && STAGES <= 6" }
  constraints { expr: "smem_bytes <= max_smem_per_block_optin" }
  constraints { expr: "BLOCK_M <= M && BLOCK_N <= N && BLOCK_K <= K" }
)pb";

struct Row {
  std::string name;
  uint64_t points = 0;
  int64_t valid = 0;
  uint64_t digest = 0;
  double enumerate_s = 0;
  double exhaustive_s = 0;
  std::string exhaustive_outcome;
  double random_s = 0;
  uint64_t random_digest = 0;
  double submit_s = 0;
};

v1::KernelSpec Spec(bool split_k) {
  v1::KernelSpec spec;
  google::protobuf::TextFormat::ParseFromString(kSpec, &spec);
  spec.set_default_config(
      "BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,WARPS_M=2,WARPS_N=2,STAGES=2");
  if (split_k) {
    v1::Parameter* param = spec.add_params();
    param->set_name("SPLIT_K");
    for (int v = 1; v <= 10; ++v) param->add_values(v);
    spec.add_constraints()->set_expr("K % (BLOCK_K * SPLIT_K) == 0 && is_pow2(SPLIT_K)");
    spec.set_default_config(spec.default_config() + ",SPLIT_K=1");
  }
  return spec;
}

// The 1e7 space with only the constraint on its last param, which no prefix
// can break: the walk binds every point.
v1::KernelSpec LastParamOnlySpec() {
  v1::KernelSpec spec = Spec(/*split_k=*/true);
  std::string last = spec.constraints(spec.constraints_size() - 1).expr();
  spec.clear_constraints();
  spec.add_constraints()->set_expr(last);
  return spec;
}

DeviceLimits DeviceModelLimits() {
  DeviceLimits limits = PlaceholderLimits(v1::BACKEND_CUDA);
  limits["max_smem_per_block_optin"] = 101376;  // a smaller part than the placeholder
  limits["sm_count"] = 84;
  return limits;
}

double Seconds(const std::function<void()>& body) {
  double best = 1e300;
  for (int i = 0; i < kRepeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

uint64_t Mix(uint64_t digest, uint64_t ordinal) {
  return (digest ^ ordinal) * 0x100000001b3ULL;
}

std::unique_ptr<ConfigSpace> Space(const v1::KernelSpec& spec,
                                   const DeviceLimits& limits) {
  absl::StatusOr<v1::Shape> shape = ParseShape("M=4096,N=4096,K=4096");
  if (shape.ok()) shape = NormalizeShape(spec, *shape);
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space =
      shape.ok() ? ConfigSpace::Create(spec, *shape, limits) : shape.status();
  if (!space.ok()) {
    std::fprintf(stderr, "space_bench: %s\n", space.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(space);
}

server::StrategyOptions Options(const v1::KernelSpec& spec, ConfigSpace* space,
                                const std::string& name) {
  server::StrategyOptions options;
  options.name = name;
  options.seed = 7;
  absl::StatusOr<v1::Config> config = ParseConfig(spec.default_config());
  if (config.ok()) config = NormalizeConfig(spec, *config);
  absl::StatusOr<uint64_t> ordinal =
      config.ok() ? space->OrdinalOf(*config) : config.status();
  if (ordinal.ok()) options.default_ordinal = *ordinal;
  return options;
}

Row Measure(const std::string& name, const v1::KernelSpec& spec) {
  Row row;
  row.name = name;
  auto space = Space(spec, PlaceholderLimits(v1::BACKEND_CUDA));
  row.points = space->full_size();
  row.enumerate_s = Seconds([&] {
    ConfigEnumerator enumerator(space.get());
    row.valid = 0;
    row.digest = 0;
    for (uint64_t ordinal = 0; enumerator.Next(&ordinal); ++row.valid) {
      row.digest = Mix(row.digest, ordinal);
    }
  });
  server::StrategyOptions exhaustive = Options(spec, space.get(), "exhaustive");
  row.exhaustive_s = Seconds([&] {
    auto strategy = server::MakeStrategy(space.get(), exhaustive);
    row.exhaustive_outcome =
        strategy.ok() ? "ok" : absl::StatusCodeToString(strategy.status().code());
  });
  server::StrategyOptions random = Options(spec, space.get(), "random");
  row.random_s = Seconds([&] {
    auto strategy = server::MakeStrategy(space.get(), random);
    row.random_digest = 0;
    if (!strategy.ok()) return;
    for (uint64_t ordinal : (*strategy)->Propose(1 << 20)) {
      row.random_digest = Mix(row.random_digest, ordinal);
    }
  });
  row.submit_s = Seconds([&] {
    for (const DeviceLimits& limits :
         {PlaceholderLimits(v1::BACKEND_CUDA), DeviceModelLimits()}) {
      auto walked = Space(spec, limits);
      (void)server::MakeStrategy(walked.get(), Options(spec, walked.get(), "exhaustive"));
    }
  });
  return row;
}

void Print(const Row& row) {
  std::printf("%-8s %10llu %8lld %16llx %12.3f %12.3f %-18s %10.3f %16llx %10.3f\n",
              row.name.c_str(), static_cast<unsigned long long>(row.points),
              static_cast<long long>(row.valid),
              static_cast<unsigned long long>(row.digest), row.enumerate_s,
              row.exhaustive_s, row.exhaustive_outcome.c_str(), row.random_s,
              static_cast<unsigned long long>(row.random_digest), row.submit_s);
}

}  // namespace
}  // namespace tunefleet::bench

int main() {
  using tunefleet::bench::Measure;
  using tunefleet::bench::Print;
  using tunefleet::bench::Spec;
  std::printf("%-8s %10s %8s %16s %12s %12s %-18s %10s %16s %10s\n", "space",
              "points", "valid", "valid_digest", "enumerate_s", "exhaustive_s",
              "exhaustive", "random_s", "random_digest", "submit_s");
  Print(Measure("1e6", Spec(/*split_k=*/false)));
  Print(Measure("1e7", Spec(/*split_k=*/true)));
  Print(Measure("1e7-last", tunefleet::bench::LastParamOnlySpec()));
  return 0;
}
