// The BestConfigIndex: every stored best row in memory, grouped by kernel,
// device model and toolkit, so that "what is my best config?" is answered
// without the store: the exact shape, else the nearest tuned shape of the
// same kernel on the same device model and toolkit whose config is valid at
// the asked shape, else the spec's default.
#ifndef TUNEFLEET_SERVER_BEST_CONFIG_INDEX_H_
#define TUNEFLEET_SERVER_BEST_CONFIG_INDEX_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/config_fit.h"
#include "common/config_space.h"
#include "server/store/store.h"
#include "server/tuned_shapes.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// The answer to "what is my best config?".
struct BestConfigAnswer {
  enum class Source { kExact, kNearestShape, kDefault };
  Source source = Source::kDefault;
  v1::Config config;          // the row's, or the spec's default (normalized)
  std::string config_text;
  double median_seconds = 0;  // 0 for kDefault
  std::string tuning_key;     // empty for kDefault
  std::string job_id;         // empty for kDefault
  v1::Shape tuned_shape;      // the row's shape as stored; empty for kDefault
  std::string device_model;   // the row's; for kDefault the request's
  std::string toolkit;        // the row's; for kDefault the request's
  std::string evidence;       // the row's (BestRecord::evidence); empty for kDefault
};

// The architecture family of a device model: "sm_9x" for a model named as
// CUDA workers name theirs ("NVIDIA H200 sm_90", compute capability 9.0),
// one family per major compute capability; "" when the name carries none
// (CPU models).
std::string ArchitectureFamily(absl::string_view device_model);

// Only rows whose stored tuning key is the key the kernel's newest spec
// gives their shape, model and toolkit are served (a row tuned with older
// code or measurement protocol is not); rows whose shape does not parse are
// not served either. Of the served rows of the kernel that match the model
// and toolkit asked for, a row at distance 0 (TunedShapes) is exact and is
// served as is (ties to the smallest tuning key). Otherwise the rows are
// taken nearest first (ties to the smallest tuning key) and the first whose
// config fits the asked shape (ConfigFit: the newest spec's constraints at
// that shape, with the limits of the row's device model where `limits_of`
// knows them) is served; when none fits, the spec's default config.
//
// Thread-safety: safe for concurrent use. Resolve takes only a reader lock
// and copies no sources. PutKernel and PutBest run one at a time and hash
// under a reader lock, so Resolve is blocked only while they install what
// they computed.
class BestConfigIndex {
 public:
  // The limits a device model's workers reported; nullopt when unknown. Called
  // by Resolve under the index's reader lock, and only for a spec with a
  // checked constraint that names a device limit; must not call the index.
  using LimitsOf = std::function<std::optional<DeviceLimits>(const std::string& device_model)>;

  // `limits_of`: empty, every limit takes its placeholder value (ConfigFit).
  explicit BestConfigIndex(LimitsOf limits_of = nullptr) : limits_of_(std::move(limits_of)) {}
  BestConfigIndex(const BestConfigIndex&) = delete;
  BestConfigIndex& operator=(const BestConfigIndex&) = delete;

  // Makes `spec` the newest spec of its kernel. Only the kernel spec and the
  // sources' paths and digests are kept, and its constraints compiled once
  // (ConfigFit). When the code digest (KernelDigest) changes, every row of
  // the kernel has its key checked again, here; when it does not, nothing is
  // recomputed.
  void PutKernel(const v1::JobSpec& spec);

  // A best row the store accepted. Follows the store's keep-faster rule: the
  // row replaces the one with the same tuning key only when there is none or
  // the stored median is larger. Its key is checked here, once.
  void PutBest(const BestRecord& row);
  // A best row the store accepted by Store::PutBest: replaces the key's row
  // whatever its median (a derived best, which may be slower).
  void ReplaceBest(const BestRecord& row);
  // Forgets the key's row (its best was removed from the store).
  void RemoveBest(const std::string& tuning_key);
  // The key's row; nullopt when there is none.
  std::optional<BestRecord> Get(const std::string& tuning_key) const;

  // The kernels PutKernel saw, sorted.
  std::vector<std::string> KernelNames() const;
  // Whether a row of `device_model` is held (served or not). O(1).
  bool HasDeviceModel(const std::string& device_model) const;
  // The device models of the rows held, sorted.
  std::vector<std::string> DeviceModels() const;

  // Empty `device_model` or `toolkit` match any. NotFound when PutKernel
  // never saw the kernel; InvalidArgument for a shape NormalizeShape refuses;
  // InvalidArgument when the exact row's config does not parse (a nearest
  // row's that does not parse does not fit). Costs: an exact answer, one
  // hash lookup; else the nearest walk (TunedShapes::Nearest) and one
  // ConfigFit check of that row; only when it does not fit, a walk of each
  // matching group for its nearest row that fits (TunedShapes::NearestWhere,
  // every row when none does), each distinct config checked once (once per
  // device model when a checked constraint names a limit).
  absl::StatusOr<BestConfigAnswer> Resolve(const std::string& kernel_name,
                                           const v1::Shape& shape,
                                           const std::string& device_model,
                                           const std::string& toolkit) const;

  // Warm-start material for tuning `shape`: the best configs of up to `k`
  // served rows of the kernel, distinct configs, nearest first; rows of the
  // same device model and toolkit come before rows of the same model with
  // another toolkit, then rows of other models of the same architecture
  // family (ArchitectureFamily), then any other model. Empty when the kernel
  // is unknown or the shape does not normalize.
  std::vector<BestConfigAnswer> Neighbours(const std::string& kernel_name,
                                           const v1::Shape& shape,
                                           const std::string& device_model,
                                           const std::string& toolkit, size_t k) const;

  // Up to `k` served rows of the kernel on `device_model` (any toolkit) at
  // most `max_distance` from `shape` (TunedShapes' distance), nearest first,
  // ties to the smallest tuning key: the tuned shapes whose trials the model
  // strategy learns from (FleetHistory). Empty when the kernel is unknown or
  // the shape does not normalize.
  std::vector<BestConfigAnswer> TunedRows(const std::string& kernel_name,
                                          const v1::Shape& shape,
                                          const std::string& device_model, size_t k,
                                          double max_distance = HUGE_VAL) const;

 private:
  // What the newest spec of a kernel decides.
  struct KernelCode {
    v1::KernelSpec spec;
    std::vector<v1::SourceFile> sources;  // paths and digests, no contents
    std::string digest;                   // KernelDigest
    absl::StatusOr<BestConfigAnswer> fallback;  // the default config
    // Whether a row's config fits a shape; nullptr when the spec's
    // constraints do not compile (then no nearest row is served).
    std::unique_ptr<const ConfigFit> fit;
  };
  // A stored row, parsed once.
  struct Row {
    BestRecord record;
    absl::StatusOr<v1::Shape> shape;
    absl::StatusOr<BestConfigAnswer> answer;  // an error when config does not parse
  };
  using Target = std::pair<std::string, std::string>;  // (device model, toolkit)
  using Groups = absl::flat_hash_map<Target, TunedShapes>;
  struct Kernel {
    std::optional<KernelCode> code;           // none until PutKernel
    absl::flat_hash_set<std::string> keys;    // every row of the kernel
    Groups groups;                            // the served rows
    // Every config text a row of the kernel had, parsed, by id (the rows'
    // tags in `groups`). Never shrinks: one entry per distinct config.
    absl::flat_hash_map<std::string, uint32_t> config_ids;
    std::vector<absl::StatusOr<v1::Config>> configs;
  };
  // The groups a query matches, with their device model.
  using Matched = absl::InlinedVector<std::pair<const std::string*, const TunedShapes*>, 8>;

  // The row's dims in spec order when `code` serves it.
  static std::optional<std::vector<int64_t>> ServedPoint(const KernelCode& code,
                                                         const Row& row);
  // The id of the row's config in `kernel`, added when new.
  static uint32_t ConfigId(Kernel* kernel, const Row& row);
  Groups BuildGroups(const KernelCode& code, const Kernel& kernel) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void EraseRow(const std::string& tuning_key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Install(const BestRecord& record, bool keep_faster) ABSL_LOCKS_EXCLUDED(mu_);
  // The served row: the exact one, else the nearest whose config fits `dims`
  // (the query's values).
  std::optional<ShapeMatch> Best(const Kernel& kernel, const ShapeQuery& query,
                                 absl::Span<const int64_t> dims,
                                 const std::string& device_model,
                                 const std::string& toolkit) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The nearest row of `groups` whose config fits `dims`.
  std::optional<ShapeMatch> NearestFitting(const Kernel& kernel, const Matched& groups,
                                           const ShapeQuery& query,
                                           absl::Span<const int64_t> dims) const;
  // Whether `config` (nullptr: one that does not parse) fits the shape
  // `dims` by `code`'s spec on `device_model`.
  bool Fits(const KernelCode& code, const v1::Config* config, const std::string& device_model,
            absl::Span<const int64_t> dims) const;
  absl::StatusOr<BestConfigAnswer> AnswerOf(const ShapeMatch& match) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Held by PutKernel and PutBest from start to end: nothing changes between
  // what they compute under a reader lock and what they install.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  const LimitsOf limits_of_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Row> rows_ ABSL_GUARDED_BY(mu_);  // by tuning key
  absl::flat_hash_map<std::string, Kernel> kernels_ ABSL_GUARDED_BY(mu_);  // by name
  // How many of rows_ name each device model (no entry for none).
  absl::flat_hash_map<std::string, int64_t> rows_of_model_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_BEST_CONFIG_INDEX_H_
