// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr, which
// this Abseil release does not provide.
#ifndef TUNEFLEET_COMMON_STATUS_MACROS_H_
#define TUNEFLEET_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TF_STATUS_CONCAT_INNER_(a, b) a##b
#define TF_STATUS_CONCAT_(a, b) TF_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the enclosing
// function when it is not OK.
#define RETURN_IF_ERROR(expr)                                \
  do {                                                       \
    ::absl::Status tf_status_ = (expr);                      \
    if (!tf_status_.ok()) return tf_status_;                 \
  } while (0)

// ASSIGN_OR_RETURN(T lhs, StatusOr<T> expr): moves the value into `lhs` or
// returns the error from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  TF_ASSIGN_OR_RETURN_IMPL_(TF_STATUS_CONCAT_(tf_statusor_, __LINE__), lhs, expr)

#define TF_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // TUNEFLEET_COMMON_STATUS_MACROS_H_
