// `tunectl man-pages DIR`: one manual page per verb (tunectl-submit.1,
// tunectl-admin-token-create.1, ...), from the help the parser prints, so
// that `man tunectl-submit` and `tunectl help submit` say the same.
#ifndef TUNEFLEET_CLIENT_TUNECTL_MAN_PAGES_H_
#define TUNEFLEET_CLIENT_TUNECTL_MAN_PAGES_H_

#include <string>

#include "absl/status/status.h"

namespace CLI {
class App;
}

namespace tunefleet::tunectl {

// One verb's page.
struct ManPage {
  std::string path;         // "tunectl admin token create"
  std::string description;  // one line
  std::string help;         // what `tunectl help VERB` prints
};

// The roff source of `page`, section 1, for tunectl `version`; no date, so
// that a rebuild makes the same bytes.
std::string ManPageRoff(const ManPage& page, const std::string& version);

// Writes a page for every verb and sub-verb of `app` (but `man-pages`
// itself) into `dir`, named after the verb path with dashes.
absl::Status WriteManPages(const CLI::App& app, const std::string& dir,
                           const std::string& version);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_MAN_PAGES_H_
