#include "worker/cpu/cpu_compiler.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/compile_options.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "worker/cpu/cpu_device.h"
#include "worker/source_stage.h"

namespace tunefleet::worker {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string>& BaseFlags() {
  static const auto* flags = new std::vector<std::string>{
      "-O3", "-march=native", "-fPIC", "-shared", "-std=c++17"};
  return *flags;
}

bool IsTranslationUnit(const std::string& path) {
  for (const char* ext : {".cc", ".cpp", ".cxx", ".c", ".C"}) {
    if (absl::EndsWith(path, ext)) return true;
  }
  return false;
}

// "g++ 12.2.0" / "clang++ 14.0.6" from the compiler's own reports.
absl::StatusOr<std::string> ToolkitOf(const std::string& program) {
  ASSIGN_OR_RETURN(CommandResult version, RunCommand({program, "--version"},
                                                     absl::Seconds(30)));
  if (!version.exit.success()) {
    return absl::FailedPreconditionError(
        absl::StrCat(program, " --version failed: ", version.exit.ToString()));
  }
  std::string first_line(version.output.substr(0, version.output.find('\n')));
  size_t clang = first_line.find("clang version ");
  if (clang != std::string::npos) {
    std::string rest = first_line.substr(clang + 14);
    return absl::StrCat("clang++ ", rest.substr(0, rest.find(' ')));
  }
  ASSIGN_OR_RETURN(CommandResult full,
                   RunCommand({program, "-dumpfullversion"}, absl::Seconds(30)));
  std::string number(absl::StripAsciiWhitespace(full.output));
  if (!full.exit.success() || number.empty()) {
    number = first_line.substr(first_line.rfind(' ') + 1);
  }
  return absl::StrCat("g++ ", number);
}

absl::StatusOr<std::string> FindCompiler(const std::string& requested) {
  if (!requested.empty()) return FindProgram(requested);
  for (const char* name : {"c++", "g++", "clang++"}) {
    absl::StatusOr<std::string> path = FindProgram(name);
    if (path.ok()) return path;
  }
  return absl::NotFoundError("no C++ compiler (c++, g++, clang++) in PATH");
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct CommandLine {
  std::vector<std::string> argv;
  ArtifactKeyInputs key;
};

absl::StatusOr<CommandLine> BuildCommand(const CompileJob& job,
                                         const std::string& program,
                                         const std::string& toolkit) {
  const v1::KernelSpec& spec = *job.spec;
  CommandLine cmd;
  cmd.key.backend = "cpu";
  cmd.key.toolkit = toolkit;
  // -march=native: the code may use every feature of this host's CPU.
  cmd.key.target = absl::StrCat(job.device.model(), " features ", CpuFeatureDigest());
  cmd.key.reference = job.reference;
  cmd.key.entry = job.reference ? spec.reference().entry() : spec.entry();
  for (const v1::SourceFile& file : *job.sources) {
    cmd.key.sources.emplace_back(file.path(), file.digest());
  }
  const auto& files = job.reference ? spec.reference().sources() : spec.sources();
  for (const std::string& file : files) {
    if (IsTranslationUnit(file)) cmd.key.compile_files.push_back(file);
  }
  if (cmd.key.compile_files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no C++ translation unit among the ", job.reference ? "reference " : "",
        "sources"));
  }
  cmd.key.options = BaseFlags();
  cmd.key.options.insert(cmd.key.options.end(), spec.compile_options().begin(),
                         spec.compile_options().end());
  for (const v1::ParamValue& param : job.config.values()) {
    cmd.key.macros.emplace_back(param.name(), param.value());
  }
  cmd.argv.push_back(program);
  cmd.argv.insert(cmd.argv.end(), cmd.key.options.begin(), cmd.key.options.end());
  for (const auto& [name, value] : cmd.key.macros) {
    cmd.argv.push_back(absl::StrCat("-D", name, "=", value));
  }
  return cmd;
}

JobFiles JobFilesOf(const CompileJob& job, const std::string& source_dir) {
  JobFiles files;
  files.dir = source_dir;
  for (const v1::SourceFile& file : *job.sources) files.paths.push_back(file.path());
  return files;
}

// The compiler's process: in the sandbox, in the staged sources (relative
// paths, so that diagnostics name the job's files as the spec does), writing
// only `scratch`; its output goes to <scratch>/compile.log. The staging
// directory is mapped to "." in what the compiler records (debug
// information, __FILE__), so that every worker compiles a key to the same
// bytes (SharedArtifacts compares them).
SubprocessOptions CompilerProcess(const Sandbox& sandbox, CommandLine cmd,
                                  const std::string& source_dir, const std::string& scratch,
                                  const std::string& output) {
  cmd.argv.insert(cmd.argv.end(), {absl::StrCat("-ffile-prefix-map=", source_dir, "=."), "-I",
                                   ".", "-o", output});
  cmd.argv.insert(cmd.argv.end(), cmd.key.compile_files.begin(), cmd.key.compile_files.end());
  SubprocessOptions options;
  options.argv = std::move(cmd.argv);
  options.stdout_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = scratch + "/compile.log";
  options.stderr_mode = SubprocessOptions::Output::kStdout;
  options.new_process_group = true;  // a timeout kills cc1plus/as/ld too
  SandboxPolicy policy;
  policy.read_only = {source_dir};
  policy.writable = {scratch};
  policy.working_dir = source_dir;
  sandbox.Apply(policy, &options);
  return options;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuCompiler>> CpuCompiler::Create(
    const CompilerOptions& options) {
  if (options.cache_dir.empty()) {
    return absl::InvalidArgumentError("CpuCompiler: cache_dir is not set");
  }
  ASSIGN_OR_RETURN(std::string program, FindCompiler(options.program));
  ASSIGN_OR_RETURN(std::string toolkit, ToolkitOf(program));
  return std::unique_ptr<CpuCompiler>(
      new CpuCompiler(options, std::move(program), std::move(toolkit)));
}

CpuCompiler::CpuCompiler(CompilerOptions options, std::string program,
                         std::string toolkit)
    : options_(std::move(options)),
      program_(std::move(program)),
      toolkit_(std::move(toolkit)),
      cache_(options_.cache_dir + "/artifacts/cpu") {}

absl::StatusOr<std::string> CpuCompiler::MakeScratchDir() const {
  const fs::path root = fs::path(options_.cache_dir) / "scratch";
  std::error_code error;
  fs::create_directories(root, error);
  std::string pattern = (root / "cc-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno)));
  }
  return pattern;
}

std::optional<ArtifactLocation> CpuCompiler::Locate(const CompileJob& job) const {
  if (job.spec == nullptr || job.sources == nullptr ||
      !CheckCompileOptions(v1::BACKEND_CPU, job.spec->compile_options()).ok()) {
    return std::nullopt;
  }
  absl::StatusOr<CommandLine> cmd = BuildCommand(job, program_, toolkit_);
  if (!cmd.ok()) return std::nullopt;
  ArtifactLocation where;
  where.key = ArtifactKey(cmd->key);
  where.artifact_path = cache_.PathFor(where.key, ".so");
  return where;
}

absl::StatusOr<CompileOutcome> CpuCompiler::Compile(const CompileJob& job) {
  if (job.spec == nullptr || job.sources == nullptr) {
    return absl::InvalidArgumentError("CompileJob without spec or sources");
  }
  CompileOutcome outcome;
  // Checked at submit too; a worker does not trust its coordinator with this.
  if (absl::Status allowed = CheckCompileOptions(v1::BACKEND_CPU, job.spec->compile_options());
      !allowed.ok()) {
    outcome.log = std::string(allowed.message());
    return outcome;
  }
  ASSIGN_OR_RETURN(CommandLine cmd, BuildCommand(job, program_, toolkit_));
  const std::string artifact = cache_.PathFor(ArtifactKey(cmd.key), ".so");
  if (!job.rebuild && cache_.Contains(artifact)) {
    outcome.ok = outcome.cached = true;
    outcome.artifact = artifact;
    return outcome;
  }
  ASSIGN_OR_RETURN(std::string source_dir,
                   StageSources(options_.cache_dir, cache_, *job.sources));
  ASSIGN_OR_RETURN(std::string scratch, MakeScratchDir());
  const ScopedRemove cleanup{scratch};
  const std::string output = scratch + "/out.so";
  const SubprocessOptions options =
      CompilerProcess(options_.sandbox, std::move(cmd), source_dir, scratch, output);
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> proc, Subprocess::Start(options));
  absl::StatusOr<ExitInfo> exit = proc->Wait(options_.timeout);
  if (absl::IsDeadlineExceeded(exit.status())) {
    proc->KillAndWait();
    outcome.timed_out = true;
  } else if (!exit.ok()) {
    return exit.status();
  } else {
    exit = options_.sandbox.CommandExit(*exit);
  }
  outcome.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  outcome.log = JobCompilerLog(ReadFileOrEmpty(options.stdout_path), JobFilesOf(job, source_dir));
  if (outcome.timed_out || !exit->success()) {
    const std::string why = outcome.timed_out
        ? absl::StrCat("compile timed out after ", absl::FormatDuration(options_.timeout))
        : absl::StrCat("compiler ", exit->ToString());
    outcome.log = outcome.log.empty() ? why : absl::StrCat(why, "\n", outcome.log);
    return outcome;
  }
  // The scratch dir shares the cache's file system: an atomic rename.
  std::error_code error;
  fs::create_directories(fs::path(artifact).parent_path(), error);
  RETURN_IF_ERROR(cache_.Publish(output, artifact));
  outcome.ok = true;
  outcome.artifact = artifact;
  return outcome;
}

}  // namespace tunefleet::worker
