#include "server/best_config_index.h"

#include <algorithm>
#include <tuple>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "common/tuning_key.h"

namespace tunefleet::server {
namespace {

absl::StatusOr<BestConfigAnswer> DefaultAnswer(const v1::KernelSpec& spec) {
  BestConfigAnswer answer;
  answer.source = BestConfigAnswer::Source::kDefault;
  ASSIGN_OR_RETURN(v1::Config config, ParseConfig(spec.default_config()));
  ASSIGN_OR_RETURN(answer.config, NormalizeConfig(spec, config));
  answer.config_text = ConfigToString(answer.config);
  return answer;
}

absl::StatusOr<BestConfigAnswer> RowAnswer(const BestRecord& record,
                                           const absl::StatusOr<v1::Shape>& shape) {
  BestConfigAnswer answer;
  ASSIGN_OR_RETURN(answer.config, ParseConfig(record.config));
  answer.config_text = record.config;
  answer.median_seconds = record.median_seconds;
  answer.tuning_key = record.tuning_key;
  answer.job_id = record.job_id;
  if (shape.ok()) answer.tuned_shape = *shape;
  answer.device_model = record.device_model;
  answer.toolkit = record.toolkit;
  answer.evidence = record.evidence;
  return answer;
}

void KeepBest(const std::optional<ShapeMatch>& match, std::optional<ShapeMatch>* best) {
  if (match.has_value() && (!best->has_value() || Precedes(*match, **best))) *best = match;
}

}  // namespace

void BestConfigIndex::PutKernel(const v1::JobSpec& spec) {
  KernelCode code;
  code.spec = spec.kernel();
  for (const v1::SourceFile& file : spec.sources()) {
    v1::SourceFile& kept = code.sources.emplace_back();
    kept.set_path(file.path());
    kept.set_digest(file.digest());
  }
  code.digest = KernelDigest(code.spec, code.sources);
  code.fallback = DefaultAnswer(code.spec);
  absl::StatusOr<std::unique_ptr<ConfigFit>> fit = ConfigFit::Create(code.spec);
  if (fit.ok()) code.fit = *std::move(fit);
  const std::string name = code.spec.name();

  absl::MutexLock write(&write_mu_);
  std::optional<Groups> groups;
  {
    absl::ReaderMutexLock read(&mu_);
    auto it = kernels_.find(name);
    if (it == kernels_.end()) {
      groups.emplace();
    } else if (!it->second.code.has_value() || it->second.code->digest != code.digest) {
      groups = BuildGroups(code, it->second);
    }
  }
  absl::MutexLock lock(&mu_);
  Kernel& kernel = kernels_[name];
  kernel.code = std::move(code);
  if (groups.has_value()) kernel.groups = std::move(*groups);
}

void BestConfigIndex::PutBest(const BestRecord& record) {
  Install(record, /*keep_faster=*/true);
}

void BestConfigIndex::ReplaceBest(const BestRecord& record) {
  Install(record, /*keep_faster=*/false);
}

void BestConfigIndex::RemoveBest(const std::string& tuning_key) {
  absl::MutexLock write(&write_mu_);
  absl::MutexLock lock(&mu_);
  EraseRow(tuning_key);
}

std::optional<BestRecord> BestConfigIndex::Get(const std::string& tuning_key) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = rows_.find(tuning_key);
  if (it == rows_.end()) return std::nullopt;
  return it->second.record;
}

void BestConfigIndex::Install(const BestRecord& record, bool keep_faster) {
  absl::StatusOr<v1::Shape> shape = ParseShape(record.shape);
  Row row{record, shape, RowAnswer(record, shape)};

  absl::MutexLock write(&write_mu_);
  std::optional<std::vector<int64_t>> point;
  {
    absl::ReaderMutexLock read(&mu_);
    auto stored = rows_.find(record.tuning_key);
    if (keep_faster && stored != rows_.end() &&
        !(stored->second.record.median_seconds > record.median_seconds)) {
      return;
    }
    auto kernel = kernels_.find(record.kernel_name);
    if (kernel != kernels_.end() && kernel->second.code.has_value()) {
      point = ServedPoint(*kernel->second.code, row);
    }
  }
  absl::MutexLock lock(&mu_);
  EraseRow(record.tuning_key);
  Kernel& kernel = kernels_[record.kernel_name];
  kernel.keys.insert(record.tuning_key);
  const uint32_t config_id = ConfigId(&kernel, row);
  if (point.has_value()) {
    kernel.groups.try_emplace(Target(record.device_model, record.toolkit), point->size())
        .first->second.Put(record.tuning_key, *point, config_id);
  }
  ++rows_of_model_[record.device_model];
  rows_.insert_or_assign(record.tuning_key, std::move(row));
}

std::vector<std::string> BestConfigIndex::KernelNames() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, kernel] : kernels_) {
    if (kernel.code.has_value()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool BestConfigIndex::HasDeviceModel(const std::string& device_model) const {
  absl::ReaderMutexLock lock(&mu_);
  return rows_of_model_.contains(device_model);
}

std::vector<std::string> BestConfigIndex::DeviceModels() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::string> models;
  for (const auto& [model, rows] : rows_of_model_) models.push_back(model);
  std::sort(models.begin(), models.end());
  return models;
}

absl::StatusOr<BestConfigAnswer> BestConfigIndex::Resolve(const std::string& kernel_name,
                                                          const v1::Shape& shape,
                                                          const std::string& device_model,
                                                          const std::string& toolkit) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = kernels_.find(kernel_name);
  if (it == kernels_.end() || !it->second.code.has_value()) {
    return absl::NotFoundError(absl::StrCat("kernel ", kernel_name, " was never submitted here"));
  }
  const Kernel& kernel = it->second;
  ASSIGN_OR_RETURN(v1::Shape normalized, NormalizeShape(kernel.code->spec, shape));
  absl::InlinedVector<int64_t, 4> values;
  for (const v1::DimValue& dim : normalized.dims()) values.push_back(dim.value());
  std::optional<ShapeMatch> best =
      Best(kernel, ShapeQuery(values), values, device_model, toolkit);
  if (best.has_value()) return AnswerOf(*best);
  ASSIGN_OR_RETURN(BestConfigAnswer answer, kernel.code->fallback);
  answer.device_model = device_model;
  answer.toolkit = toolkit;
  return answer;
}

std::vector<BestConfigAnswer> BestConfigIndex::Neighbours(const std::string& kernel_name,
                                                          const v1::Shape& shape,
                                                          const std::string& device_model,
                                                          const std::string& toolkit,
                                                          size_t k) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<BestConfigAnswer> out;
  auto it = kernels_.find(kernel_name);
  if (it == kernels_.end() || !it->second.code.has_value() || k == 0) return out;
  const Kernel& kernel = it->second;
  absl::StatusOr<v1::Shape> normalized = NormalizeShape(kernel.code->spec, shape);
  if (!normalized.ok()) return out;
  absl::InlinedVector<int64_t, 4> values;
  for (const v1::DimValue& dim : normalized->dims()) values.push_back(dim.value());
  const ShapeQuery query(values);
  // Rank 0: the same model and toolkit; 1: the same model; 2: the same
  // architecture family; 3: other models.
  const std::string family = ArchitectureFamily(device_model);
  std::vector<std::tuple<int, ShapeMatch>> ranked;
  for (const auto& [target, group] : kernel.groups) {
    const int rank = target.first == device_model   ? (target.second == toolkit ? 0 : 1)
                     : !family.empty() && ArchitectureFamily(target.first) == family ? 2
                                                                                     : 3;
    for (const ShapeMatch& match : group.NearestK(query, k)) ranked.emplace_back(rank, match);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) < std::get<0>(b);
    return Precedes(std::get<1>(a), std::get<1>(b));
  });
  absl::flat_hash_set<std::string> configs;
  for (const auto& [rank, match] : ranked) {
    if (out.size() >= k) break;
    absl::StatusOr<BestConfigAnswer> answer = AnswerOf(match);
    if (answer.ok() && configs.insert(answer->config_text).second) out.push_back(*answer);
  }
  return out;
}

std::vector<BestConfigAnswer> BestConfigIndex::TunedRows(const std::string& kernel_name,
                                                         const v1::Shape& shape,
                                                         const std::string& device_model,
                                                         size_t k, double max_distance) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<BestConfigAnswer> out;
  auto it = kernels_.find(kernel_name);
  if (it == kernels_.end() || !it->second.code.has_value() || k == 0) return out;
  absl::StatusOr<v1::Shape> normalized = NormalizeShape(it->second.code->spec, shape);
  if (!normalized.ok()) return out;
  absl::InlinedVector<int64_t, 4> values;
  for (const v1::DimValue& dim : normalized->dims()) values.push_back(dim.value());
  const ShapeQuery query(values);
  std::vector<ShapeMatch> matches;
  for (const auto& [target, group] : it->second.groups) {
    if (target.first != device_model) continue;
    for (const ShapeMatch& match : group.NearestK(query, k)) {
      if (match.distance <= max_distance) matches.push_back(match);
    }
  }
  std::sort(matches.begin(), matches.end(), Precedes);
  for (const ShapeMatch& match : matches) {
    if (out.size() >= k) break;
    absl::StatusOr<BestConfigAnswer> answer = AnswerOf(match);
    if (answer.ok()) out.push_back(*std::move(answer));
  }
  return out;
}

std::string ArchitectureFamily(absl::string_view device_model) {
  const size_t at = device_model.rfind(" sm_");
  if (at == absl::string_view::npos) return "";
  absl::string_view digits = device_model.substr(at + 4);
  if (digits.size() < 2 || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "";
  }
  return absl::StrCat("sm_", digits.substr(0, digits.size() - 1), "x");
}

std::optional<std::vector<int64_t>> BestConfigIndex::ServedPoint(const KernelCode& code,
                                                                 const Row& row) {
  if (!row.shape.ok()) return std::nullopt;
  const std::string key = ComputeTuningKey(
      {&code.spec, &code.sources, *row.shape, row.record.device_model, row.record.toolkit});
  if (key != row.record.tuning_key) return std::nullopt;
  std::vector<int64_t> point;
  for (const v1::Dimension& dim : code.spec.problem()) {
    std::optional<int64_t> value = FindDim(*row.shape, dim.name());
    // Such a row is infinitely far from every valid request.
    if (!value.has_value() || *value <= 0) return std::nullopt;
    point.push_back(*value);
  }
  return point;
}

uint32_t BestConfigIndex::ConfigId(Kernel* kernel, const Row& row) {
  auto [it, added] = kernel->config_ids.try_emplace(
      row.record.config, static_cast<uint32_t>(kernel->configs.size()));
  if (added) {
    kernel->configs.push_back(row.answer.ok() ? absl::StatusOr<v1::Config>(row.answer->config)
                                              : row.answer.status());
  }
  return it->second;
}

BestConfigIndex::Groups BestConfigIndex::BuildGroups(const KernelCode& code,
                                                     const Kernel& kernel) const {
  Groups groups;
  for (const std::string& key : kernel.keys) {
    const Row& row = rows_.at(key);
    std::optional<std::vector<int64_t>> point = ServedPoint(code, row);
    if (!point.has_value()) continue;
    groups.try_emplace(Target(row.record.device_model, row.record.toolkit), point->size())
        .first->second.Put(key, *point, kernel.config_ids.at(row.record.config));
  }
  return groups;
}

void BestConfigIndex::EraseRow(const std::string& tuning_key) {
  auto it = rows_.find(tuning_key);
  if (it == rows_.end()) return;
  const BestRecord& old = it->second.record;
  Kernel& kernel = kernels_.at(old.kernel_name);
  kernel.keys.erase(tuning_key);
  auto group = kernel.groups.find(Target(old.device_model, old.toolkit));
  if (group != kernel.groups.end()) group->second.Remove(tuning_key);
  auto model = rows_of_model_.find(old.device_model);
  if (--model->second == 0) rows_of_model_.erase(model);
  rows_.erase(it);
}

std::optional<ShapeMatch> BestConfigIndex::Best(const Kernel& kernel, const ShapeQuery& query,
                                                absl::Span<const int64_t> dims,
                                                const std::string& device_model,
                                                const std::string& toolkit) const {
  Matched groups;
  if (!device_model.empty() && !toolkit.empty()) {
    auto it = kernel.groups.find(Target(device_model, toolkit));
    if (it != kernel.groups.end()) groups.emplace_back(&it->first.first, &it->second);
  } else {
    for (const auto& [target, group] : kernel.groups) {
      if ((device_model.empty() || target.first == device_model) &&
          (toolkit.empty() || target.second == toolkit)) {
        groups.emplace_back(&target.first, &group);
      }
    }
  }
  std::optional<ShapeMatch> best;
  for (const auto& [model, group] : groups) KeepBest(group->Exact(query), &best);
  if (best.has_value()) return best;
  for (const auto& [model, group] : groups) KeepBest(group->Nearest(query), &best);
  if (!best.has_value()) return best;
  const Row& nearest = rows_.at(*best->tuning_key);
  const v1::Config* config = nearest.answer.ok() ? &nearest.answer->config : nullptr;
  if (Fits(*kernel.code, config, nearest.record.device_model, dims)) return best;
  return NearestFitting(kernel, groups, query, dims);
}

std::optional<ShapeMatch> BestConfigIndex::NearestFitting(const Kernel& kernel,
                                                          const Matched& groups,
                                                          const ShapeQuery& query,
                                                          absl::Span<const int64_t> dims) const {
  const KernelCode& code = *kernel.code;
  const bool per_model = code.fit != nullptr && code.fit->uses_limits();
  std::vector<int8_t> verdicts(kernel.configs.size(), -1);  // by config id: unknown, no, yes
  std::optional<ShapeMatch> fitting;
  for (const auto& [model, group] : groups) {
    if (per_model) std::fill(verdicts.begin(), verdicts.end(), -1);
    KeepBest(group->NearestWhere(query,
                                 [&, model = model](uint32_t id) {
                                   int8_t& verdict = verdicts[id];
                                   if (verdict < 0) {
                                     const auto& config = kernel.configs[id];
                                     verdict = Fits(code, config.ok() ? &*config : nullptr,
                                                    *model, dims);
                                   }
                                   return verdict == 1;
                                 }),
             &fitting);
  }
  return fitting;
}

bool BestConfigIndex::Fits(const KernelCode& code, const v1::Config* config,
                           const std::string& device_model,
                           absl::Span<const int64_t> dims) const {
  if (code.fit == nullptr || config == nullptr) return false;
  std::optional<DeviceLimits> limits;
  if (code.fit->uses_limits() && limits_of_) limits = limits_of_(device_model);
  return code.fit->Fits(dims, *config, limits.has_value() ? &*limits : nullptr);
}

absl::StatusOr<BestConfigAnswer> BestConfigIndex::AnswerOf(const ShapeMatch& match) const {
  ASSIGN_OR_RETURN(BestConfigAnswer answer, rows_.at(*match.tuning_key).answer);
  answer.source = match.distance == 0 ? BestConfigAnswer::Source::kExact
                                      : BestConfigAnswer::Source::kNearestShape;
  return answer;
}

}  // namespace tunefleet::server
