// Helpers shared by every test tier.
#ifndef TUNEFLEET_TESTS_SUPPORT_TEST_SUPPORT_H_
#define TUNEFLEET_TESTS_SUPPORT_TEST_SUPPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace tunefleet::testing {

// Matches an absl::Status or absl::StatusOr<T> whose code is `code`.
MATCHER_P(StatusIs, code, "") {
  absl::Status status;
  if constexpr (std::is_same_v<std::decay_t<arg_type>, absl::Status>) {
    status = arg;
  } else {
    status = arg.status();
  }
  *result_listener << "status is " << status;
  return status.code() == code;
}

// Matches a status whose code is `code` and whose message contains `text`.
MATCHER_P2(StatusIsWith, code, text, "") {
  absl::Status status;
  if constexpr (std::is_same_v<std::decay_t<arg_type>, absl::Status>) {
    status = arg;
  } else {
    status = arg.status();
  }
  *result_listener << "status is " << status;
  return status.code() == code &&
         status.message().find(text) != absl::string_view::npos;
}

inline const absl::Status& StatusOf(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// Assert/expect that an absl::Status or absl::StatusOr is OK, printing it if
// not; `expr` is evaluated once.
#define ASSERT_OK(expr)                                              \
  do {                                                               \
    const auto& tf_status_or_ = (expr);                              \
    const absl::Status& tf_status_ =                                 \
        ::tunefleet::testing::StatusOf(tf_status_or_);               \
    ASSERT_TRUE(tf_status_.ok()) << tf_status_;                      \
  } while (0)
#define EXPECT_OK(expr)                                              \
  do {                                                               \
    const auto& tf_status_or_ = (expr);                              \
    const absl::Status& tf_status_ =                                 \
        ::tunefleet::testing::StatusOf(tf_status_or_);               \
    EXPECT_TRUE(tf_status_.ok()) << tf_status_;                      \
  } while (0)

// The repository root and the CMake build directory (from the environment
// ctest sets, else paths relative to the test binary's working directory).
std::string SourceDir();
std::string BuildDir();

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_SUPPORT_TEST_SUPPORT_H_
