// Finds the line of kernel.textproto that a spec problem is about, so
// `tunectl validate` can say "kernel.textproto:14: constraint #3 ...".
#ifndef TUNEFLEET_CLIENT_TUNECTL_SPEC_LOCATOR_H_
#define TUNEFLEET_CLIENT_TUNECTL_SPEC_LOCATOR_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace tunefleet::tunectl {

// The 1-based line of the field that `problem` names, for the messages of
// ValidateKernelSpec, LoadKernelDir and ConfigSpace::Create ("param X ...",
// "constraint #3 ...", "derived y ...", "default_config: ...", "cannot read
// <dir>/<source>"). nullopt when the text does not parse, the message names
// no field, or the field is absent from the text (e.g. "entry is not set").
std::optional<int> LocateSpecProblem(absl::string_view spec_text,
                                     absl::string_view problem);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_SPEC_LOCATOR_H_
