// The exported best-config table as a JSON document (docs/best-table-format.md):
// what `tunectl export` writes, `tunectl import` reads, and
// tunefleet::BestConfigTable loads offline. Private to the client library
// and tunectl.
#ifndef TUNEFLEET_CLIENT_BEST_TABLE_JSON_H_
#define TUNEFLEET_CLIENT_BEST_TABLE_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::client_internal {

inline constexpr char kBestTableFormat[] = "tunefleet.best_configs";
inline constexpr int kBestTableVersion = 1;

// The document of `table`, indented, ending with a newline.
std::string BestTableToJson(const v1::ExportBestResponse& table);
// INVALID_ARGUMENT for text that is not such a document (naming the field),
// or one of a newer version.
absl::StatusOr<v1::ExportBestResponse> BestTableFromJson(const std::string& text);

}  // namespace tunefleet::client_internal

#endif  // TUNEFLEET_CLIENT_BEST_TABLE_JSON_H_
