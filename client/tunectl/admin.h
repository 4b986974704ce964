// tunectl's `admin` verbs: operator repairs through the coordinator's
// AdminService. They speak to the service directly (not through the public
// client library, which serves applications).
#ifndef TUNEFLEET_CLIENT_TUNECTL_ADMIN_H_
#define TUNEFLEET_CLIENT_TUNECTL_ADMIN_H_

#include <string>

#include "client/tunectl/commands.h"

namespace tunefleet::tunectl {

// Which trials `admin invalidate` excludes: those matching every field set.
struct InvalidateFlags {
  std::string worker;  // a worker principal or worker id
  std::string tuning_key;
  std::string job_id;
};

// Excludes the matching trials and derives the affected bests again; prints
// how many trials and keys changed (table) or the counts and keys (json).
// Exit 2 (usage) when no filter is given.
int RunAdminInvalidate(const ClientOptions& options, const InvalidateFlags& flags,
                       const Console& console);
// Lifts the quarantine of a worker principal.
int RunAdminRelease(const ClientOptions& options, const std::string& principal,
                    const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_ADMIN_H_
