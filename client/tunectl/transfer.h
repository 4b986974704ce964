// tunectl's `export` and `import` verbs: a coordinator's best configs as a
// JSON table (docs/best-table-format.md), and such a table into a coordinator.
#ifndef TUNEFLEET_CLIENT_TUNECTL_TRANSFER_H_
#define TUNEFLEET_CLIENT_TUNECTL_TRANSFER_H_

#include <string>

#include "client/tunectl/commands.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

// Prints the table of `kernel` (on `device_model`, "" for every model) on
// stdout, whatever the output format: it is a JSON document.
int RunExport(Client& client, const std::string& kernel, const std::string& device_model,
              const Console& console);

// Prints tunectl's version, then the coordinator's (exit 6 and the client's
// alone when the coordinator cannot be reached).
int RunVersion(Client& client, const Console& console);

struct ImportFlags {
  std::string file;
  std::string origin;      // "": the file's name
  bool overwrite = false;  // replace measured rows too
};

// Imports the table in `flags.file` (role admin); prints what was written
// and kept. Exit 5 when the file cannot be read, 1 when it is not a table.
int RunImport(Client& client, const ImportFlags& flags, const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_TRANSFER_H_
