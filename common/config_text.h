// The short text form of configs and shapes: "BLOCK_M=128,BLOCK_N=64".
// Printing follows the message's order; parsing keeps the text's order.
#ifndef TUNEFLEET_COMMON_CONFIG_TEXT_H_
#define TUNEFLEET_COMMON_CONFIG_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet {

using NameValues = std::vector<std::pair<std::string, int64_t>>;

// Parses "A=1,B=2" (spaces allowed around items). Fails with InvalidArgument
// naming the bad item on a missing '=', a non-integer value, an empty or
// repeated name. An empty string parses to no items.
absl::StatusOr<NameValues> ParseNameValues(absl::string_view text);
std::string FormatNameValues(const NameValues& items);

absl::StatusOr<v1::Config> ParseConfig(absl::string_view text);
std::string ConfigToString(const v1::Config& config);

absl::StatusOr<v1::Shape> ParseShape(absl::string_view text);
std::string ShapeToString(const v1::Shape& shape);

// Returns the value of `name` in `config`/`shape`, if present.
std::optional<int64_t> FindParam(const v1::Config& config, absl::string_view name);
std::optional<int64_t> FindDim(const v1::Shape& shape, absl::string_view name);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_CONFIG_TEXT_H_
