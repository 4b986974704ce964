// CompiledExpr: one spec expression compiled by muParser against a
// ConfigSpace's symbol table. Private to common/ (ConfigSpace, ConfigFit).
#ifndef TUNEFLEET_COMMON_COMPILED_EXPR_H_
#define TUNEFLEET_COMMON_COMPILED_EXPR_H_

#include <muParser.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace tunefleet {

// One expression compiled against the space's symbol table.
//
// Thread-safety: not thread-safe; evaluation writes the parser's stack.
class CompiledExpr {
 public:
  CompiledExpr(std::string text, std::string what)
      : text_(std::move(text)), what_(std::move(what)) {}
  mu::Parser& parser() { return parser_; }
  const std::string& text() const { return text_; }
  const std::string& what() const { return what_; }
  // Symbol indices of the variables the expression reads.
  std::vector<size_t>& uses() { return uses_; }
  const std::vector<size_t>& uses() const { return uses_; }
  absl::StatusOr<double> Eval() {
    try {
      return parser_.Eval();
    } catch (const mu::Parser::exception_type& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(what_, " \"", text_, "\": ", e.GetMsg()));
    }
  }
  // Eval without a message: NaN when the evaluation fails.
  double ValueOrNan() {
    try {
      return parser_.Eval();
    } catch (const mu::Parser::exception_type&) {
      return std::nan("");
    }
  }
  // As a constraint: neither zero, NaN nor an error.
  bool Holds() {
    double value = ValueOrNan();
    return value != 0 && !std::isnan(value);
  }

 private:
  std::string text_;
  std::string what_;
  mu::Parser parser_;
  std::vector<size_t> uses_;
};

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_COMPILED_EXPR_H_
