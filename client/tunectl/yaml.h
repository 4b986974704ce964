// `-o yaml`: the JSON documents tunectl prints, as YAML (block style, keys
// in the same order; every string double-quoted, as in JSON, so no value is
// read back as another type).
#ifndef TUNEFLEET_CLIENT_TUNECTL_YAML_H_
#define TUNEFLEET_CLIENT_TUNECTL_YAML_H_

#include <string>

#include "absl/status/statusor.h"

namespace tunefleet::tunectl {

// The YAML document of the JSON document `json_text`; INVALID_ARGUMENT when
// it is not JSON.
absl::StatusOr<std::string> JsonToYaml(const std::string& json_text);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_YAML_H_
