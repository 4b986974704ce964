#include "worker/python/python_compiler.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/compile_options.h"
#include "common/config_text.h"
#include "common/status_macros.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "worker/compile_log.h"
#include "worker/source_stage.h"

namespace tunefleet::worker::python {
namespace {

namespace fs = std::filesystem;

ArtifactKeyInputs KeyOf(const CompileJob& job, const std::string& toolkit) {
  ArtifactKeyInputs key;
  key.backend = "python";
  key.toolkit = toolkit;
  key.target = job.device.model();
  key.reference = job.reference;
  key.entry = job.reference ? job.spec->reference().entry() : job.spec->entry();
  for (const v1::SourceFile& file : *job.sources) {
    key.sources.emplace_back(file.path(), file.digest());
  }
  // A Triton kernel is specialized on its launch arguments: the shape.
  key.options.push_back(absl::StrCat("shape:", ShapeToString(job.shape)));
  if (!job.reference) {
    for (const v1::ParamValue& param : job.config.values()) {
      key.macros.emplace_back(param.name(), param.value());
    }
  }
  return key;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PythonCompiler>> PythonCompiler::Create(
    const CompilerOptions& options, const PythonInfo& info) {
  if (options.cache_dir.empty()) {
    return absl::InvalidArgumentError("PythonCompiler: cache_dir is not set");
  }
  return std::unique_ptr<PythonCompiler>(new PythonCompiler(options, info));
}

PythonCompiler::PythonCompiler(CompilerOptions options, PythonInfo info)
    : options_(std::move(options)),
      info_(std::move(info)),
      cache_(options_.cache_dir + "/artifacts/python"),
      servers_(std::make_unique<CompileServerPool>(CompileServerOptions{
          info_, options_.sandbox, options_.cache_dir + "/scratch/python",
          options_.timeout})) {
  // The imports take seconds (16 at once: about 10 s on an H200 host).
  servers_->Prestart(info_.compile_servers, std::max(absl::Seconds(180), options_.timeout));
}

absl::StatusOr<CompileOutcome> PythonCompiler::Compile(const CompileJob& job) {
  if (job.spec == nullptr || job.sources == nullptr) {
    return absl::InvalidArgumentError("CompileJob without spec or sources");
  }
  CompileOutcome outcome;
  // Checked at submit too; a worker does not trust its coordinator with this.
  if (absl::Status allowed =
          CheckCompileOptions(v1::BACKEND_PYTHON, job.spec->compile_options());
      !allowed.ok()) {
    outcome.log = std::string(allowed.message());
    return outcome;
  }
  const std::string artifact = cache_.PathFor(ArtifactKey(KeyOf(job, info_.toolkit)), ".zip");
  if (cache_.Contains(artifact)) {
    outcome.ok = outcome.cached = true;
    outcome.artifact = artifact;
    return outcome;
  }
  ASSIGN_OR_RETURN(std::string source_dir,
                   StageSources(options_.cache_dir, cache_, *job.sources));
  v1::PythonCompileRequest request;
  *request.mutable_kernel() = *job.spec;
  *request.mutable_shape() = job.shape;
  *request.mutable_config() = job.config;
  request.set_reference(job.reference);
  request.set_source_dir(source_dir);
  *request.mutable_limits() = job.device.limits();
  ASSIGN_OR_RETURN(ServedCompile served, servers_->Compile(std::move(request)));
  const ScopedRemove cleanup{served.code == 0 ? served.output : std::string()};
  outcome.seconds = served.seconds;
  outcome.timed_out = served.timed_out;
  outcome.log = TrimLog(served.log);
  if (served.answered && served.code == 2) {
    return absl::InternalError(absl::StrCat("python compile server: ", outcome.log));
  }
  if (!served.answered) return outcome;
  if (served.code != 0) {
    outcome.log = absl::StrCat("the config does not compile\n", outcome.log);
    return outcome;
  }
  std::error_code error;
  fs::create_directories(fs::path(artifact).parent_path(), error);
  RETURN_IF_ERROR(cache_.Publish(served.output, artifact));
  outcome.ok = true;
  outcome.artifact = artifact;
  return outcome;
}

absl::StatusOr<std::unique_ptr<Compiler>> CreatePythonCompiler(const CompilerOptions& options) {
  const PythonInfo* info = Configured();
  if (info == nullptr) {
    return absl::FailedPreconditionError("python backend: not configured (no probe ran)");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PythonCompiler> compiler,
                   PythonCompiler::Create(options, *info));
  return std::unique_ptr<Compiler>(std::move(compiler));
}

}  // namespace tunefleet::worker::python
