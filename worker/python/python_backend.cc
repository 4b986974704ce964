#include "worker/python/python_backend.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/install_layout.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "spdlog/spdlog.h"
#include "worker/bench_child.h"

namespace tunefleet::worker::python {
namespace {

namespace fs = std::filesystem;

absl::Mutex info_mu(absl::kConstInit);
PythonInfo* configured ABSL_GUARDED_BY(info_mu) = nullptr;

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::string Absolute(const std::string& path) {
  std::error_code error;
  fs::path absolute = fs::weakly_canonical(fs::absolute(path), error);
  return error ? path : absolute.string();
}

absl::StatusOr<std::string> RunProbe(const PythonInfo& info, bool devices) {
  const fs::path out = fs::path(info.state_dir) / absl::StrCat("probe-", getpid(), ".txt");
  SubprocessOptions options;
  options.argv = {info.python, "-m", "tunefleet.backend.probe"};
  if (devices) options.argv.push_back("devices");
  options.env = ProcessEnvironment(info);
  options.stdout_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = out.string();
  options.stderr_mode = SubprocessOptions::Output::kStdout;
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> proc, Subprocess::Start(options));
  absl::StatusOr<ExitInfo> exit = proc->Wait(absl::Seconds(180));
  if (!exit.ok()) proc->KillAndWait();
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::error_code ignored;
  fs::remove(out, ignored);
  if (!exit.ok() || !exit->success()) {
    return absl::FailedPreconditionError(absl::StrCat(
        info.python, " -m tunefleet.backend.probe (PYTHONPATH=", info.package_dir, ") ",
        exit.ok() ? exit->ToString() : std::string(exit.status().message()), ": ",
        text.str()));
  }
  return text.str();
}

}  // namespace

absl::StatusOr<PythonInfo> ParseProbeOutput(const std::string& output) {
  PythonInfo info;
  for (absl::string_view line : absl::StrSplit(output, '\n', absl::SkipEmpty())) {
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    const std::string& kind = fields[0];
    if (kind == "toolkit" && fields.size() == 2) {
      info.toolkit = fields[1];
    } else if (kind == "path" && fields.size() == 2) {
      info.paths.push_back(fields[1]);
    } else if (kind == "note" && fields.size() == 2) {
      info.notes.push_back(fields[1]);
    } else if (kind == "device" && fields.size() == 5) {
      v1::Device& device = info.devices.emplace_back();
      device.set_id(fields[1]);
      device.set_model(fields[2]);
      device.set_driver(fields[3]);
      device.set_backend(v1::BACKEND_PYTHON);
      for (absl::string_view pair : absl::StrSplit(fields[4], ',', absl::SkipEmpty())) {
        std::pair<std::string, std::string> kv = absl::StrSplit(pair, '=');
        double value = 0;
        if (!absl::SimpleAtod(kv.second, &value)) {
          return absl::InvalidArgumentError(absl::StrCat("probe: bad limit \"", pair, "\""));
        }
        v1::DeviceLimit* limit = device.add_limits();
        limit->set_name(kv.first);
        limit->set_value(value);
      }
    } else {
      // Anything else (a warning an import printed) is not the probe's.
      continue;
    }
  }
  if (info.toolkit.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("probe printed no toolkit line: ", output));
  }
  return info;
}

absl::StatusOr<const PythonInfo*> Configure(const PythonOptions& options, bool devices) {
  absl::MutexLock lock(&info_mu);
  if (configured != nullptr) return configured;
  if (options.state_dir.empty()) {
    return absl::InvalidArgumentError("python backend: state_dir is not set");
  }
  if (options.compile_servers < 1) {
    return absl::InvalidArgumentError("python backend: compile_servers must be at least 1");
  }
  PythonInfo info;
  const std::string python =
      options.python.empty() ? EnvOr("TUNEFLEET_PYTHON", "python3") : options.python;
  absl::StatusOr<std::string> found = FindProgram(python);
  if (!found.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("python backend: no interpreter \"", python,
                     "\" (set --python or TUNEFLEET_PYTHON)"));
  }
  // Not canonicalized: a virtual environment's python is a symlink whose
  // own path decides its site-packages.
  info.python = *found;
  info.package_dir = Absolute(
      !options.package_dir.empty()
          ? options.package_dir
          : EnvOr("TUNEFLEET_PYTHON_PACKAGE", FindPythonPackage("backend/probe.py")));
  std::error_code error;
  if (!fs::exists(fs::path(info.package_dir) / "tunefleet" / "backend" / "probe.py", error)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "python backend: no tunefleet package (with its generated stubs) in ", info.package_dir,
        " (set --python-package or TUNEFLEET_PYTHON_PACKAGE to the build's python/ dir or the site directory it was installed to)"));
  }
  fs::create_directories(fs::path(options.state_dir) / "triton", error);
  if (error) {
    return absl::FailedPreconditionError(
        absl::StrCat("python backend: cannot create ", options.state_dir, ": ", error.message()));
  }
  info.state_dir = Absolute(options.state_dir);
  ASSIGN_OR_RETURN(std::string output, RunProbe(info, devices));
  ASSIGN_OR_RETURN(PythonInfo probed, ParseProbeOutput(output));
  info.toolkit = probed.toolkit;
  info.paths = probed.paths;
  info.devices = probed.devices;
  info.notes = probed.notes;
  info.compile_servers = options.compile_servers;
  for (const std::string& note : info.notes) spdlog::info("python backend: {}", note);
  configured = new PythonInfo(std::move(info));
  return configured;
}

const PythonInfo* Configured() {
  absl::MutexLock lock(&info_mu);
  return configured;
}

const PythonInfo& Info() { return *Configured(); }

absl::StatusOr<std::vector<v1::Device>> Devices() {
  absl::MutexLock lock(&info_mu);
  if (configured == nullptr) {
    return absl::FailedPreconditionError("python backend: not configured");
  }
  if (configured->devices.empty()) {
    return absl::NotFoundError(absl::StrCat("torch sees no GPU (",
                                            absl::StrJoin(configured->notes, "; "), ")"));
  }
  return configured->devices;
}

std::vector<std::pair<std::string, std::string>> ProcessEnvironment(const PythonInfo& info) {
  return {{"PYTHONPATH", info.package_dir},
          {"PYTHONDONTWRITEBYTECODE", "1"},
          {"PYTHONUNBUFFERED", "1"},
          {"PYTHONNOUSERSITE", "1"},
          {"TRITON_CACHE_DIR", (fs::path(info.state_dir) / "triton").string()},
          {"TILELANG_CACHE_DIR", (fs::path(info.state_dir) / "tilelang").string()},
          {"TILELANG_TMP_DIR", (fs::path(info.state_dir) / "tilelang" / "tmp").string()},
          {"TRITON_HOME", info.state_dir},
          {"TUNEFLEET_PYTHON", info.python}};
}

SandboxPolicy ProcessSandboxPolicy(const PythonInfo& info) {
  SandboxPolicy policy;
  std::vector<std::string> candidates = info.paths;
  candidates.push_back(info.python);
  candidates.push_back(info.package_dir);
  // Only the outermost of nested paths: bwrap cannot make a mount point
  // inside a read-only bind (a virtual environment's bin/python3 is a
  // symlink inside its prefix, already visible through the prefix).
  for (const std::string& path : candidates) {
    const bool nested = std::any_of(candidates.begin(), candidates.end(), [&](const std::string& outer) {
      return outer != path && absl::StartsWith(path, absl::StrCat(outer, "/"));
    });
    if (!nested && std::find(policy.read_only.begin(), policy.read_only.end(), path) ==
                       policy.read_only.end()) {
      policy.read_only.push_back(path);
    }
  }
  policy.writable = {info.state_dir};
  // torch and triton reserve large virtual ranges even without a GPU.
  policy.unlimited_address_space = true;
  const std::vector<std::string> gpus = HostNvidiaDeviceNodes();
  if (!gpus.empty()) {
    AddCudaDevices(gpus, &policy);
    policy.read_only.push_back("/sys");  // the driver reads PCI and NUMA topology there
  }
  policy.env = ProcessEnvironment(info);
  policy.env.emplace_back("HOME", info.state_dir);
  return policy;
}

int ExecBenchChild(const std::string& log_format) {
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // kept across execve
  if (getppid() != parent) return kChildExitOk;
  setenv("TUNEFLEET_LOG_FORMAT", log_format.c_str(), /*overwrite=*/1);
  const std::string python = EnvOr("TUNEFLEET_PYTHON", "python3");
  execlp(python.c_str(), python.c_str(), "-m", "tunefleet.backend.bench_child",
         static_cast<char*>(nullptr));
  spdlog::error("bench child: cannot run {}: {}", python, std::strerror(errno));
  return kChildExitNoBackend;
}

}  // namespace tunefleet::worker::python
