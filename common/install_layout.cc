#include "common/install_layout.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

// The installed helpers' directory relative to the programs' (set by CMake
// from GNUInstallDirs: bin → libexec/tunefleet).
#ifndef TUNEFLEET_HELPERS_FROM_BINDIR
#define TUNEFLEET_HELPERS_FROM_BINDIR "../libexec/tunefleet"
#endif
#ifndef TUNEFLEET_PYTHON_FROM_BINDIR
#define TUNEFLEET_PYTHON_FROM_BINDIR "../lib/python3/dist-packages"
#endif

namespace tunefleet {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> HelperDirectories() {
  const fs::path self = SelfDirectory();
  return {self, (self / TUNEFLEET_HELPERS_FROM_BINDIR).lexically_normal()};
}

}  // namespace

std::string SelfExecutable() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? "" : self.string();
}

std::string SelfDirectory() {
  const std::string self = SelfExecutable();
  return self.empty() ? "." : fs::path(self).parent_path().string();
}

std::string FindHelperProgram(absl::string_view name) {
  for (const fs::path& directory : HelperDirectories()) {
    const fs::path candidate = directory / std::string(name);
    std::error_code error;
    if (fs::is_regular_file(candidate, error) && access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
  }
  return "";
}

std::string FindPythonPackage(absl::string_view marker) {
  const fs::path self = SelfDirectory();
  for (const fs::path& directory :
       {self / ".." / "python", self / TUNEFLEET_PYTHON_FROM_BINDIR}) {
    std::error_code error;
    if (fs::exists(directory / "tunefleet" / std::string(marker), error)) {
      return directory.lexically_normal().string();
    }
  }
  return "";
}

std::string HelperSearchPath() {
  std::vector<std::string> directories;
  for (const fs::path& directory : HelperDirectories()) directories.push_back(directory.string());
  return absl::StrJoin(directories, ", ");
}

}  // namespace tunefleet
