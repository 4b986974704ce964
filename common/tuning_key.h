// The tuning key: the identity of one tuning answer. Two requests share a key
// exactly when a config's measured time on one answers the other.
#ifndef TUNEFLEET_COMMON_TUNING_KEY_H_
#define TUNEFLEET_COMMON_TUNING_KEY_H_

#include <string>
#include <vector>

#include "tunefleet/v1/kernel_spec.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet {

// The measurement-protocol version (docs/measurement.md). It salts every key:
// bumping it disowns every stored result.
inline constexpr int kMeasurementProtocolVersion = 6;

struct TuningKeyInputs {
  const v1::KernelSpec* spec = nullptr;
  const std::vector<v1::SourceFile>* sources = nullptr;  // digests suffice
  v1::Shape shape;           // normalized: spec order
  std::string device_model;  // name plus compute capability / core count
  std::string toolkit;       // compiler name and version
};

// The canonical text that is hashed; one "field=value" per line. Exposed so
// that tools and tests can show what a key stands for.
std::string CanonicalKeyText(const TuningKeyInputs& inputs);

// Lowercase hex SHA-256 of CanonicalKeyText, cut to 32 characters (128 bits).
std::string ComputeTuningKey(const TuningKeyInputs& inputs);

// Digest of what decides the generated code and its launch: the sources'
// digests, entry, compile options, derived values, launch and arguments.
// Parameter value lists, constraints and config sets are left out, so a
// config's timing stays valid when the space grows.
std::string KernelDigest(const v1::KernelSpec& spec,
                         const std::vector<v1::SourceFile>& sources);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_TUNING_KEY_H_
