#include "tests/support/test_support.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace tunefleet::testing {

std::string SourceDir() {
  const char* dir = std::getenv("TUNEFLEET_SOURCE_DIR");
  return dir != nullptr ? dir : std::string(TUNEFLEET_DEFAULT_SOURCE_DIR);
}

std::string BuildDir() {
  const char* dir = std::getenv("TUNEFLEET_BUILD_DIR");
  return dir != nullptr ? dir : std::string(TUNEFLEET_DEFAULT_BUILD_DIR);
}

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "tunefleet-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace tunefleet::testing
