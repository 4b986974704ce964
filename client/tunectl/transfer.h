// tunectl's `export` and `import` verbs: a coordinator's best configs as a
// JSON table (docs/best-table-format.md) or in a consumer's format
// (export_formats.h), and such a table into a coordinator.
#ifndef TUNEFLEET_CLIENT_TUNECTL_TRANSFER_H_
#define TUNEFLEET_CLIENT_TUNECTL_TRANSFER_H_

#include <string>

#include "client/tunectl/commands.h"
#include "client/tunectl/export_formats.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

struct ExportFlags {
  std::string kernel;
  std::string format = "tunefleet";  // a name ParseTableFormat reads
  std::string device_model;          // "": every model
  std::string toolkit;               // "": every toolkit
  std::string where;                 // "K=4096,N=14336": only those shapes; "": all
  std::string batch_dim;             // vllm only; "": "M"
  std::string out_dir;               // "": the document on stdout
};

// Prints the table of `flags.kernel` in `flags.format` on stdout, whatever
// the output format (it is a JSON document), or writes it into
// `flags.out_dir` under the name its consumer looks for (ConvertTable).
// Exit 2 for a --batch-dim without --format vllm.
int RunExport(Client& client, const ExportFlags& flags, const Console& console);
// RunExport's work once the coordinator's table `table_json` is in hand.
int WriteExport(const std::string& table_json, const ExportFlags& flags, const Console& console);

// Prints tunectl's version, then the coordinator's (exit 6 and the client's
// alone when the coordinator cannot be reached).
int RunVersion(Client& client, const Console& console);

struct ImportFlags {
  std::string file;
  std::string origin;      // "": the file's name
  bool overwrite = false;  // replace measured rows too
  std::string format = "tunefleet";  // a name ParseImportFormat reads
};

// Imports the table in `flags.file` (role admin); prints what was written
// and kept. Exit 5 when the file cannot be read, 1 when it is not a table
// in `flags.format`.
int RunImport(Client& client, const ImportFlags& flags, const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_TRANSFER_H_
