#include "client/tunectl/transfer.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "client/tunectl/exit_codes.h"
#include "common/file_util.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {

int RunExport(Client& client, const std::string& kernel, const std::string& device_model,
              const Console& console) {
  absl::StatusOr<std::string> table = client.ExportBest(kernel, device_model);
  if (!table.ok()) return ReportError(console, table.status());
  *console.out << *table;
  return kExitOk;
}

int RunVersion(Client& client, const Console& console) {
  absl::StatusOr<std::string> server = client.ServerVersion();
  if (console.format == OutputFormat::kJson) {
    nlohmann::ordered_json json = {{"client", ClientVersion()}};
    if (server.ok()) json["server"] = *server;
    *console.out << JsonDocument(json);
  } else {
    *console.out << RenderTable({}, {{"client", ClientVersion()},
                                     {"server", server.ok() ? *server : "-"}});
  }
  return server.ok() ? kExitOk : ReportError(console, server.status());
}

int RunImport(Client& client, const ImportFlags& flags, const Console& console) {
  absl::StatusOr<std::string> text = ReadFile(flags.file);
  if (!text.ok()) return ReportError(console, text.status());
  const std::string origin =
      flags.origin.empty() ? std::filesystem::path(flags.file).filename().string() : flags.origin;
  absl::StatusOr<ImportResult> result = client.ImportBest(*text, origin, flags.overwrite);
  if (!result.ok()) return ReportError(console, result.status());
  if (console.format == OutputFormat::kJson) {
    *console.out << JsonDocument({{"origin", origin},
                                  {"imported", result->imported},
                                  {"kept_measured", result->kept_measured},
                                  {"kernels_added", result->kernels_added},
                                  {"not_served", result->not_served}});
    return kExitOk;
  }
  *console.out << RenderTable({}, {{"origin", origin},
                                   {"imported", absl::StrCat(result->imported)},
                                   {"kept measured", absl::StrCat(result->kept_measured)},
                                   {"kernels added", absl::StrCat(result->kernels_added)},
                                   {"not served", absl::StrCat(result->not_served)}});
  if (result->kept_measured > 0 && !flags.overwrite) {
    Notes(console) << "tunectl: " << result->kept_measured
                 << " rows were kept as measured here; --overwrite replaces them\n";
  }
  return kExitOk;
}

}  // namespace tunefleet::tunectl
