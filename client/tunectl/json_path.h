// `-o jsonpath=EXPR`: one field of the JSON document a verb prints, for
// scripts, in kubectl's JSONPath subset:
//
//   tunectl status JOB -o 'jsonpath={.state}'                      SUCCEEDED
//   tunectl best matmul --shape M=64,N=64,K=64 -o 'jsonpath={.config}'
//   tunectl jobs -o 'jsonpath={.jobs[*].id}'                       one id per line
//
// EXPR is `{...}` (the braces optional) of `.name` and `['name']` members,
// `[N]` indices (negative from the end) and `[*]` (every element or
// member). Strings print bare, numbers and booleans as JSON, objects and
// arrays as compact JSON; with `[*]`, one match per line.
#ifndef TUNEFLEET_CLIENT_TUNECTL_JSON_PATH_H_
#define TUNEFLEET_CLIENT_TUNECTL_JSON_PATH_H_

#include <string>

#include "absl/status/statusor.h"

namespace tunefleet::tunectl {

// The matches of `path` in the JSON document `json_text`, one per line.
// INVALID_ARGUMENT for a path that does not parse or text that is not JSON;
// NOT_FOUND naming the first step that matches nothing.
absl::StatusOr<std::string> SelectJsonPath(const std::string& json_text, const std::string& path);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_JSON_PATH_H_
