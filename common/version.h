// The tunefleet version, from the CMake project version (one source).
#ifndef TUNEFLEET_COMMON_VERSION_H_
#define TUNEFLEET_COMMON_VERSION_H_

namespace tunefleet {

inline constexpr char kVersion[] = TUNEFLEET_VERSION;

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_VERSION_H_
