// Reading kernel specs: kernels/<backend>/<name>/kernel.textproto plus the
// source files it names, and the structural checks every spec must pass.
#ifndef TUNEFLEET_COMMON_SPEC_LOADER_H_
#define TUNEFLEET_COMMON_SPEC_LOADER_H_

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet {

inline constexpr char kSpecFileName[] = "kernel.textproto";

// A spec with the contents of every file it names (kernel and reference
// sources), each with its SHA-256 digest.
struct KernelBundle {
  v1::KernelSpec spec;
  std::vector<v1::SourceFile> sources;
};

// Parses spec text. Errors are InvalidArgument and read
// "<filename>:<line>:<column>: <problem>".
absl::StatusOr<v1::KernelSpec> ParseKernelSpec(absl::string_view text,
                                               absl::string_view filename);

// Reads `dir`/kernel.textproto and its sources, then validates the spec.
// NotFound when a file is missing, InvalidArgument for a bad spec.
absl::StatusOr<KernelBundle> LoadKernelDir(const std::string& dir);

// Checks what does not need expression evaluation: a name, a backend, an
// entry, unique identifiers, non-empty value lists, typed arguments, a
// default config that picks a listed value for every parameter.
absl::Status ValidateKernelSpec(const v1::KernelSpec& spec);

// Returns `shape` ordered as the spec's problem dims. InvalidArgument when a
// dim is missing, unknown, repeated, or not positive.
absl::StatusOr<v1::Shape> NormalizeShape(const v1::KernelSpec& spec,
                                         const v1::Shape& shape);

// Returns `config` ordered as the spec's params. InvalidArgument when a param
// is missing or unknown, or its value is not one of the listed values.
absl::StatusOr<v1::Config> NormalizeConfig(const v1::KernelSpec& spec,
                                           const v1::Config& config);

// The spec's default_config, parsed and normalized: the config the reference
// is compiled with and the one every job measures first. The errors of
// ParseConfig and NormalizeConfig.
absl::StatusOr<v1::Config> DefaultConfig(const v1::KernelSpec& spec);

// The index of the tensor argument named `name` (argument names are unique
// in a valid spec), or -1 when no tensor argument has that name.
int TensorArgIndex(const v1::KernelSpec& spec, absl::string_view name);

// Every file path a spec names: `sources`, then `reference.sources`.
std::vector<std::string> SpecFilePaths(const v1::KernelSpec& spec);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_SPEC_LOADER_H_
