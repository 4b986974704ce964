// best_config_bench: how long one BestConfigIndex::Resolve takes on one
// thread, for N tuned shapes of one kernel on one device model and toolkit.
// Prints, per N: the time to load the rows (PutKernel, then PutBest each),
// and the mean and p99 nanoseconds of an exact hit, a nearest-shape answer
// whose config fits the asked shape, a default answer (a model nothing was
// tuned on) and a default answer after every row was found not to fit
// (`nofit`, the worst case). Every row carries the spec's default config:
// for matmul, one that fits a shape with every dim at least 64 (the nearest
// queries) and none with M under 32 (the nofit queries).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/tuning_key.h"
#include "server/best_config_index.h"

namespace tunefleet::bench {
namespace {

using Clock = std::chrono::steady_clock;
using server::BestConfigAnswer;
using server::BestConfigIndex;
using server::BestRecord;

struct Flags {
  std::string kernel_dir = "kernels/cpu/matmul";
  std::vector<int> rows = {1000, 10000, 100000};
  int queries = 20000;
  uint64_t seed = 1;
};

constexpr char kModel[] = "bench-cpu (16 cores)";
constexpr char kToolkit[] = "gcc 12.2.0";

struct Latency {
  double mean_ns = 0;
  double p99_ns = 0;
};

// A shape with every problem dim drawn log-uniformly from [2^low, 16384].
std::string RandomShape(const v1::KernelSpec& spec, std::mt19937_64* rng, double low = 0) {
  std::uniform_real_distribution<double> exponent(low, 14);
  std::string text;
  for (const v1::Dimension& dim : spec.problem()) {
    absl::StrAppend(&text, text.empty() ? "" : ",", dim.name(), "=",
                    static_cast<int64_t>(std::exp2(exponent(*rng))));
  }
  return text;
}

std::vector<std::string> DistinctShapes(const v1::KernelSpec& spec, int n,
                                        std::mt19937_64* rng) {
  absl::flat_hash_set<std::string> seen;
  std::vector<std::string> shapes;
  while (static_cast<int>(shapes.size()) < n) {
    std::string shape = RandomShape(spec, rng);
    if (seen.insert(shape).second) shapes.push_back(std::move(shape));
  }
  return shapes;
}

BestRecord RowFor(const v1::JobSpec& spec, const std::string& shape, int i) {
  std::vector<v1::SourceFile> sources(spec.sources().begin(), spec.sources().end());
  BestRecord row;
  row.kernel_name = spec.kernel().name();
  row.shape = shape;
  row.device_model = kModel;
  row.toolkit = kToolkit;
  row.tuning_key =
      ComputeTuningKey({&spec.kernel(), &sources, *ParseShape(shape), kModel, kToolkit});
  row.config = spec.kernel().default_config();
  row.median_seconds = 1e-3 * (1 + i % 97);
  row.job_id = absl::StrCat("j-", i);
  return row;
}

// Resolves every query once, timing each call.
Latency Measure(const BestConfigIndex& index, const std::string& kernel,
                const std::vector<v1::Shape>& queries, const std::string& model,
                BestConfigAnswer::Source expected) {
  std::vector<double> ns;
  ns.reserve(queries.size());
  int wrong = 0;
  for (const v1::Shape& shape : queries) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<BestConfigAnswer> answer = index.Resolve(kernel, shape, model, kToolkit);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count());
    if (!answer.ok() || answer->source != expected) ++wrong;
  }
  if (wrong > 0) std::fprintf(stderr, "%d answers of an unexpected kind\n", wrong);
  Latency latency;
  for (double x : ns) latency.mean_ns += x / ns.size();
  std::sort(ns.begin(), ns.end());
  latency.p99_ns = ns[ns.size() * 99 / 100];
  return latency;
}

std::vector<v1::Shape> Parsed(const std::vector<std::string>& texts) {
  std::vector<v1::Shape> shapes;
  for (const std::string& text : texts) shapes.push_back(*ParseShape(text));
  return shapes;
}

void RunOne(const v1::JobSpec& spec, int n, const Flags& flags) {
  std::mt19937_64 rng(flags.seed);
  std::vector<std::string> tuned = DistinctShapes(spec.kernel(), n, &rng);
  std::vector<BestRecord> rows;
  for (int i = 0; i < n; ++i) rows.push_back(RowFor(spec, tuned[i], i));

  BestConfigIndex index;
  const Clock::time_point start = Clock::now();
  index.PutKernel(spec);
  for (const BestRecord& row : rows) index.PutBest(row);
  const double load_s = std::chrono::duration<double>(Clock::now() - start).count();

  absl::flat_hash_set<std::string> tuned_set(tuned.begin(), tuned.end());
  std::vector<std::string> exact_texts, near_texts, nofit_texts;
  for (int i = 0; i < flags.queries; ++i) {
    exact_texts.push_back(tuned[rng() % tuned.size()]);
    std::string shape;
    do shape = RandomShape(spec.kernel(), &rng, /*low=*/6); while (tuned_set.contains(shape));
    near_texts.push_back(std::move(shape));
  }
  while (static_cast<int>(nofit_texts.size()) < std::max(1, flags.queries / 100)) {
    v1::Shape shape = *ParseShape(RandomShape(spec.kernel(), &rng));
    shape.mutable_dims(0)->set_value(1 + static_cast<int64_t>(rng() % 31));
    std::string text = ShapeToString(shape);
    if (!tuned_set.contains(text)) nofit_texts.push_back(std::move(text));
  }
  const std::string& kernel = spec.kernel().name();
  const Latency exact = Measure(index, kernel, Parsed(exact_texts), kModel,
                                BestConfigAnswer::Source::kExact);
  const Latency nearest = Measure(index, kernel, Parsed(near_texts), kModel,
                                  BestConfigAnswer::Source::kNearestShape);
  const Latency fallback = Measure(index, kernel, Parsed(near_texts), "untuned-model",
                                   BestConfigAnswer::Source::kDefault);
  const Latency nofit = Measure(index, kernel, Parsed(nofit_texts), kModel,
                                BestConfigAnswer::Source::kDefault);
  std::printf("%8d %9.3f %11.0f %11.0f %11.0f %11.0f %11.0f %11.0f %11.0f %11.0f\n", n, load_s,
              exact.mean_ns, exact.p99_ns, nearest.mean_ns, nearest.p99_ns,
              fallback.mean_ns, fallback.p99_ns, nofit.mean_ns, nofit.p99_ns);
}

}  // namespace
}  // namespace tunefleet::bench

int main(int argc, char** argv) {
  tunefleet::bench::Flags flags;
  CLI::App app{"Times BestConfigIndex::Resolve on one thread."};
  app.add_option("--kernel", flags.kernel_dir, "kernel directory")->capture_default_str();
  app.add_option("--rows", flags.rows, "tuned shapes, one table line each")
      ->capture_default_str();
  app.add_option("--queries", flags.queries, "queries per kind")->capture_default_str();
  app.add_option("--seed", flags.seed, "random seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<tunefleet::KernelBundle> bundle = tunefleet::LoadKernelDir(flags.kernel_dir);
  if (!bundle.ok()) {
    std::fprintf(stderr, "%s\n", bundle.status().ToString().c_str());
    return 1;
  }
  tunefleet::v1::JobSpec spec;
  *spec.mutable_kernel() = bundle->spec;
  for (const auto& file : bundle->sources) *spec.add_sources() = file;
  std::printf("%8s %9s %11s %11s %11s %11s %11s %11s %11s %11s\n", "rows", "load_s", "exact_ns",
              "exact_p99", "nearest_ns", "nearest_p99", "default_ns", "default_p99", "nofit_ns",
              "nofit_p99");
  for (int n : flags.rows) tunefleet::bench::RunOne(spec, n, flags);
  return 0;
}
