// A replacement of the global operator new and delete for the test binary it
// is linked into: every allocation is counted, so a test can check that a
// piece of code makes none. The replacement lives in its own source file so
// that the compiler never sees new's malloc and delete's free in one caller.
#ifndef TUNEFLEET_TESTS_COMMON_COUNTING_ALLOCATOR_H_
#define TUNEFLEET_TESTS_COMMON_COUNTING_ALLOCATOR_H_

#include <cstdint>

namespace tunefleet::testing {

// Allocations through operator new since the process started. Thread-safe.
int64_t HeapAllocations();

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_COMMON_COUNTING_ALLOCATOR_H_
