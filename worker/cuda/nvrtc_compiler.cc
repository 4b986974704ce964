#include "worker/cuda/nvrtc_compiler.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "common/compile_options.h"
#include "common/file_util.h"
#include "common/install_layout.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "common/status_macros.h"
#include "worker/compile_log.h"
#include "worker/cuda/cuda_devices.h"

extern char** environ;

namespace tunefleet::worker::cuda {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
// The log of a failed compile, led by its first line that names an error
// (NVRTC and ptxas print informational lines before it), so that one-line
// summaries show the cause.
std::string WithErrorFirst(const std::string& log) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, "error")) return absl::StrCat(line, "\n", log);
  }
  return log;
}

// A relative path that stays inside its directory.
bool IsSafeRelativePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  for (const fs::path& part : fs::path(path)) {
    if (part == "..") return false;
  }
  return true;
}

const std::string& MainSourcePath(const CompileJob& job) {
  return job.reference ? job.spec->reference().sources(0) : job.spec->sources(0);
}

absl::Status ValidateJob(const CompileJob& job) {
  if (job.spec == nullptr || job.sources == nullptr) {
    return absl::InvalidArgumentError("compile job without spec or sources");
  }
  if (job.reference && job.spec->reference().sources_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel ", job.spec->name(), " has no reference sources"));
  }
  if (!job.reference && job.spec->sources_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel ", job.spec->name(), " has no sources"));
  }
  for (const v1::SourceFile& file : *job.sources) {
    if (!IsSafeRelativePath(file.path())) {
      return absl::InvalidArgumentError(
          absl::StrCat("source path \"", file.path(), "\" leaves the kernel dir"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ArchFor(const CompileJob& job) {
  double major = DeviceLimit(job.device, "cc_major", -1);
  double minor = DeviceLimit(job.device, "cc_minor", -1);
  if (major < 0 || minor < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", job.device.id(), " has no cc_major/cc_minor limits"));
  }
  std::string arch = absl::StrCat("sm_", static_cast<int>(major), static_cast<int>(minor));
  // Arch-specific targets ("a") exist from sm_90 on; older devices get the
  // plain one, and the spec's constraints keep them off the Hopper paths.
  for (const std::string& option : job.spec->compile_options()) {
    if (option == kArchSpecificOption && major >= 9) arch += "a";
  }
  return arch;
}

// The cache key: everything that can change the cubin.
std::string CacheKey(const Nvrtc& nvrtc, const CompileJob& job,
                     const std::vector<std::string>& options) {
  std::string text = absl::StrCat("tunefleet-nvrtc-cache-v1\nnvrtc ", nvrtc.major,
                                  ".", nvrtc.minor, "\nreference ", job.reference,
                                  "\nentry ", job.reference ? job.spec->reference().entry()
                                                            : job.spec->entry(),
                                  "\nmain ", MainSourcePath(job), "\n");
  for (const std::string& option : options) {
    absl::StrAppend(&text, "option ", option, "\n");
  }
  for (const v1::SourceFile& file : *job.sources) {
    std::string digest = file.digest().empty() ? Sha256Hex(file.content()) : file.digest();
    absl::StrAppend(&text, "source ", file.path(), " ", digest, "\n");
  }
  return Sha256Hex(text);
}

// Writes every source of the job under `dir`, keeping relative paths.
absl::Status WriteSources(const CompileJob& job, const std::string& dir) {
  for (const v1::SourceFile& file : *job.sources) {
    fs::path path = fs::path(dir) / file.path();
    std::error_code error;
    fs::create_directories(path.parent_path(), error);
    if (error) return absl::InternalError(absl::StrCat("mkdir ", path.string(), ": ", error.message()));
    RETURN_IF_ERROR(WriteFileAtomic(path.string(), file.content()));
  }
  return absl::OkStatus();
}

JobFiles JobFilesOf(const CompileJob& job, const std::string& work_dir) {
  JobFiles files;
  files.dir = work_dir;
  for (const v1::SourceFile& file : *job.sources) files.paths.push_back(file.path());
  return files;
}

struct HelperExit {
  bool timed_out = false;
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
};

// Runs `argv` and waits up to `timeout_seconds`, SIGKILLing it after that.
absl::StatusOr<HelperExit> RunWithDeadline(const std::vector<std::string>& argv,
                                           double timeout_seconds) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int error = posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (error != 0) {
    return absl::InternalError(absl::StrCat("spawn ", argv[0], ": ", std::strerror(error)));
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  HelperExit result;
  int status = 0;
  auto sleep = std::chrono::microseconds(200);
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
    }
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.timed_out = true;
      return result;
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(20000));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace

std::string DefaultNvrtcHelperPath() { return FindHelperProgram(kNvrtcHelperName); }

absl::StatusOr<std::vector<std::string>> NvrtcOptionsFor(const CompileJob& job,
                                                         const std::string& source_dir) {
  ASSIGN_OR_RETURN(std::string arch, ArchFor(job));
  std::vector<std::string> options = {absl::StrCat("--gpu-architecture=", arch),
                                      "-std=c++17", "--ptxas-options=-v"};
  std::string include = CudaIncludeDir();
  if (!include.empty()) options.push_back(absl::StrCat("-I", include));
  fs::path main_dir = (fs::path(source_dir) / MainSourcePath(job)).parent_path();
  options.push_back(absl::StrCat("-I", main_dir.string()));
  for (const v1::ParamValue& param : job.config.values()) {
    options.push_back(absl::StrCat("-D", param.name(), "=", param.value()));
  }
  for (const std::string& option : job.spec->compile_options()) {
    if (option != kArchSpecificOption) options.push_back(option);
  }
  return options;
}

absl::StatusOr<std::unique_ptr<NvrtcCompiler>> NvrtcCompiler::Create(
    NvrtcCompilerOptions options) {
  if (options.cache_dir.empty()) return absl::InvalidArgumentError("cache_dir is empty");
  if (options.sandbox.enabled() && options.helper_path.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the sandbox needs the ", kNvrtcHelperName, " helper program, which is in "
                     "none of ", HelperSearchPath(), " (in-process NVRTC could read any file "
                     "the worker can)"));
  }
  if (!(options.timeout_seconds > 0)) {
    return absl::InvalidArgumentError("timeout_seconds must be positive");
  }
  ASSIGN_OR_RETURN(const Nvrtc* nvrtc, LoadNvrtc());
  std::error_code error;
  fs::create_directories(options.cache_dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", options.cache_dir, ": ", error.message()));
  }
  return std::unique_ptr<NvrtcCompiler>(new NvrtcCompiler(nvrtc, std::move(options)));
}

std::string NvrtcCompiler::toolkit() const {
  return absl::StrCat("nvrtc ", nvrtc_->major, ".", nvrtc_->minor);
}

absl::Status NvrtcCompiler::RunHelper(const CompileJob& job, const std::string& work_dir,
                                      const std::vector<std::string>& options,
                                      NvrtcOutput* output, bool* timed_out) const {
  const std::string main_path = (fs::path(work_dir) / MainSourcePath(job)).string();
  const std::string out_cubin = work_dir + "/out.cubin";
  const std::string out_log = work_dir + "/out.log";
  std::vector<std::string> argv = {options_.helper_path, main_path, MainSourcePath(job),
                                   out_cubin, out_log};
  argv.insert(argv.end(), options.begin(), options.end());
  SandboxPolicy policy;
  policy.read_only = {options_.helper_path};
  if (const std::string include = CudaIncludeDir(); !include.empty()) {
    policy.read_only.push_back(include);
  }
  policy.writable = {work_dir};
  policy.working_dir = work_dir;
  ASSIGN_OR_RETURN(HelperExit exit, RunWithDeadline(options_.sandbox.Wrap(policy, argv),
                                                    options_.timeout_seconds));
  output->log = ReadFile(out_log).value_or("");
  *timed_out = exit.timed_out;
  if (exit.timed_out) return absl::OkStatus();
  const ExitInfo command = options_.sandbox.CommandExit(
      ExitInfo{exit.signal != 0, exit.exit_code, exit.signal});
  if (command.success()) {
    ASSIGN_OR_RETURN(output->cubin, ReadFile(out_cubin));
    output->ok = true;
  } else if (command.signaled) {
    // This config's source crashed the compiler: a failed compile, not a
    // failure of the worker.
    output->log = absl::StrCat("NVRTC crashed (", SignalName(command.signal),
                               ") compiling this config\n", output->log);
  } else if (command.code != 1) {
    return absl::InternalError(absl::StrCat(options_.helper_path, " failed (",
                                            command.ToString(), "): ", output->log));
  }
  return absl::OkStatus();
}

absl::StatusOr<ArtifactLocation> NvrtcCompiler::LocationOf(const CompileJob& job) const {
  // The key sees placeholders for the per-compile source directory, whose
  // contents it hashes instead, and for CUDA's headers, which NVRTC's version
  // (also in the key) decides wherever a host keeps them: hosts share cubins
  // (worker/artifact_sharing.h).
  ASSIGN_OR_RETURN(std::vector<std::string> key_options, NvrtcOptionsFor(job, "<src>"));
  if (const std::string include = CudaIncludeDir(); !include.empty()) {
    std::replace(key_options.begin(), key_options.end(), absl::StrCat("-I", include),
                 std::string("-I<cuda-include>"));
  }
  ArtifactLocation where;
  where.key = CacheKey(*nvrtc_, job, key_options);
  where.artifact_path = (fs::path(options_.cache_dir) / (where.key + ".cubin")).string();
  where.log_path = (fs::path(options_.cache_dir) / (where.key + ".log")).string();
  return where;
}

std::optional<ArtifactLocation> NvrtcCompiler::Locate(const CompileJob& job) const {
  if (!ValidateJob(job).ok() ||
      !CheckCompileOptions(v1::BACKEND_CUDA, job.spec->compile_options()).ok()) {
    return std::nullopt;
  }
  absl::StatusOr<ArtifactLocation> where = LocationOf(job);
  if (!where.ok()) return std::nullopt;
  return *std::move(where);
}

absl::StatusOr<CompileOutcome> NvrtcCompiler::Compile(const CompileJob& job) {
  RETURN_IF_ERROR(ValidateJob(job));
  CompileOutcome outcome;
  // Checked at submit too; a worker does not trust its coordinator with this.
  if (absl::Status allowed = CheckCompileOptions(v1::BACKEND_CUDA, job.spec->compile_options());
      !allowed.ok()) {
    outcome.log = std::string(allowed.message());
    return outcome;
  }
  ASSIGN_OR_RETURN(ArtifactLocation where, LocationOf(job));
  const std::string& cubin_path = where.artifact_path;
  const std::string& log_path = where.log_path;

  std::error_code exists_error;
  if (!job.rebuild && fs::exists(cubin_path, exists_error)) {
    outcome.ok = true;
    outcome.cached = true;
    outcome.artifact = cubin_path;
    outcome.log = ReadFile(log_path).value_or("");
    return outcome;
  }

  // A per-compile directory for the sources, outside the artifact cache
  // that benchmark children see.
  const fs::path scratch = options_.scratch_dir.empty() ? options_.cache_dir
                                                        : options_.scratch_dir;
  fs::create_directories(scratch, exists_error);
  std::string pattern = (scratch / "nvrtc-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno)));
  }
  const std::string work_dir = pattern;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{work_dir};

  ASSIGN_OR_RETURN(std::vector<std::string> options, NvrtcOptionsFor(job, work_dir));
  RETURN_IF_ERROR(WriteSources(job, work_dir));
  const auto start = Clock::now();
  NvrtcOutput output;
  if (options_.helper_path.empty()) {
    const std::string main_path = (fs::path(work_dir) / MainSourcePath(job)).string();
    ASSIGN_OR_RETURN(std::string source, ReadFile(main_path));
    ASSIGN_OR_RETURN(output, RunNvrtc(*nvrtc_, source, MainSourcePath(job), options));
  } else {
    RETURN_IF_ERROR(RunHelper(job, work_dir, options, &output, &outcome.timed_out));
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // NVRTC's log size counts its terminating NUL, and the ptxas log follows it.
  output.log.erase(std::remove(output.log.begin(), output.log.end(), '\0'), output.log.end());
  outcome.log = JobCompilerLog(output.log, JobFilesOf(job, work_dir));
  if (outcome.timed_out) {
    outcome.log = absl::StrCat("compile abandoned after ", options_.timeout_seconds, " s\n",
                               outcome.log);
    return outcome;
  }
  if (!output.ok) {
    outcome.log = WithErrorFirst(outcome.log);
    return outcome;
  }
  RETURN_IF_ERROR(WriteFileAtomic(log_path, outcome.log));
  RETURN_IF_ERROR(WriteFileAtomic(cubin_path, output.cubin));
  outcome.ok = true;
  outcome.artifact = cubin_path;
  return outcome;
}

}  // namespace tunefleet::worker::cuda
