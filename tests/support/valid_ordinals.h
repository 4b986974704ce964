// Every valid config of a space, for the tests of the search strategies.
#ifndef TUNEFLEET_TESTS_SUPPORT_VALID_ORDINALS_H_
#define TUNEFLEET_TESTS_SUPPORT_VALID_ORDINALS_H_

#include <cstdint>
#include <set>

#include "common/config_space.h"

namespace tunefleet::testing {

// Every valid config of `space`, by ordinal (one walk of the space).
inline std::set<uint64_t> ValidOrdinals(ConfigSpace* space) {
  std::set<uint64_t> valid;
  ConfigEnumerator enumerator(space);
  uint64_t ordinal = 0;
  while (enumerator.Next(&ordinal)) valid.insert(ordinal);
  return valid;
}

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_SUPPORT_VALID_ORDINALS_H_
