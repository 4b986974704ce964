#include "client/tunectl/transfer.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/export_formats.h"
#include "common/file_util.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

int UsageError(const Console& console, const absl::Status& status) {
  ReportError(console, status);
  return kExitUsage;
}

// INVALID_ARGUMENT for an unknown format, or a --batch-dim of another.
absl::StatusOr<ExportOptions> OptionsOf(const ExportFlags& flags) {
  absl::StatusOr<TableFormat> format = ParseTableFormat(flags.format);
  if (!format.ok()) return format.status();
  if (!flags.batch_dim.empty() && *format != TableFormat::kVllm) {
    return absl::InvalidArgumentError("--batch-dim applies to --format vllm only");
  }
  ExportOptions options;
  options.format = *format;
  options.device_model = flags.device_model;
  options.toolkit = flags.toolkit;
  options.where = flags.where;
  if (!flags.batch_dim.empty()) options.batch_dim = flags.batch_dim;
  return options;
}

}  // namespace

int RunExport(Client& client, const ExportFlags& flags, const Console& console) {
  // A usage error is told before the coordinator is asked.
  if (absl::StatusOr<ExportOptions> options = OptionsOf(flags); !options.ok()) {
    return UsageError(console, options.status());
  }
  absl::StatusOr<std::string> table = client.ExportBest(flags.kernel, flags.device_model);
  if (!table.ok()) return ReportError(console, table.status());
  return WriteExport(*table, flags, console);
}

int WriteExport(const std::string& table_json, const ExportFlags& flags, const Console& console) {
  absl::StatusOr<ExportOptions> options = OptionsOf(flags);
  if (!options.ok()) return UsageError(console, options.status());
  absl::StatusOr<ExportedDocument> document = ConvertTable(table_json, *options);
  if (!document.ok()) return ReportError(console, document.status());
  if (flags.out_dir.empty()) {
    *console.out << document->text;
    if (options->format == TableFormat::kVllm) {
      Notes(console) << "tunectl: vLLM looks for this file as "
                     << Printable(document->file_name) << "\n";
    }
    return kExitOk;
  }
  if (document->file_name.find('/') != std::string::npos) {  // a device model's '/'
    return ReportError(console, absl::InvalidArgumentError(absl::StrCat(
                                    "cannot name a file ", document->file_name, ": drop --out")));
  }
  const std::string path = (std::filesystem::path(flags.out_dir) / document->file_name).string();
  if (absl::Status written = WriteFileAtomic(path, document->text); !written.ok()) {
    return ReportError(console, written);
  }
  Notes(console) << "tunectl: wrote " << Printable(path) << "\n";
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
  absl::StatusOr<TableFormat> format = ParseImportFormat(flags.format);
  if (!format.ok()) return UsageError(console, format.status());
  absl::StatusOr<std::string> text = ReadFile(flags.file);
  if (!text.ok()) return ReportError(console, text.status());
  absl::StatusOr<std::string> table = ToTunefleetTable(*format, *text);
  if (!table.ok()) return ReportError(console, table.status());
  const std::string origin =
      flags.origin.empty() ? std::filesystem::path(flags.file).filename().string() : flags.origin;
  absl::StatusOr<ImportResult> result = client.ImportBest(*table, origin, flags.overwrite);
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
