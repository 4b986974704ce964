// Where a tunefleet program finds its companions: helper programs, which sit
// beside it in a build tree (build/bin) and under <prefix>/libexec/tunefleet
// once installed (`cmake --install`, the image, the Debian layout), and the
// Python package (build/python; <prefix>/lib/python3*/dist-packages).
#ifndef TUNEFLEET_COMMON_INSTALL_LAYOUT_H_
#define TUNEFLEET_COMMON_INSTALL_LAYOUT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace tunefleet {

// The running program's path (/proc/self/exe); "" when it cannot be read.
std::string SelfExecutable();

// The directory holding the running program; "." when it cannot be read.
std::string SelfDirectory();

// The path of the helper program `name` (e.g. "tunefleet-nvrtc"): beside
// the running program first, then in the installed libexec directory
// relative to it (<prefix>/bin/../libexec/tunefleet); "" when neither
// holds an executable file of that name.
std::string FindHelperProgram(absl::string_view name);

// The directory holding the `tunefleet` Python package (one with
// tunefleet/<marker>): the build tree's python/ beside bin/, else the
// installed site directory relative to the running program; "" when
// neither has it.
std::string FindPythonPackage(absl::string_view marker);

// The places FindHelperProgram looks, in order, for messages that say
// where a missing helper was expected.
std::string HelperSearchPath();

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_INSTALL_LAYOUT_H_
