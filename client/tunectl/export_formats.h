// A coordinator's best-config table (docs/best-table-format.md) in the
// formats its consumers read: vLLM's tuned-config files, Kernel Tuner's T4
// results, a Triton-autotune-style cache the Python decorator loads, and
// tunefleet's own. Pure functions over the JSON text: `tunectl export` and
// `tunectl import` call them, tests call them without a coordinator.
// Thread-safety: no state; call from any thread.
#ifndef TUNEFLEET_CLIENT_TUNECTL_EXPORT_FORMATS_H_
#define TUNEFLEET_CLIENT_TUNECTL_EXPORT_FORMATS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tunefleet::tunectl {

// kTunefleet: the table as the coordinator exports it. kVllm: one JSON
// object, batch size -> config, for one device model. kT4: Kernel Tuner's T4
// results (schema 1.0.0), one correct result per row. kTriton: format
// "tunefleet.triton_autotune", the shape key -> config of one device model.
enum class TableFormat { kTunefleet, kVllm, kT4, kTriton };

// "tunefleet", "vllm", "t4" or "triton".
const char* TableFormatName(TableFormat format);
// INVALID_ARGUMENT, listing the valid names, for any other name.
absl::StatusOr<TableFormat> ParseTableFormat(absl::string_view name);
// The formats `tunectl import` reads: tunefleet and t4. INVALID_ARGUMENT,
// saying what vllm and triton lack, for those; as ParseTableFormat else.
absl::StatusOr<TableFormat> ParseImportFormat(absl::string_view name);

struct ExportOptions {
  // Default kTunefleet.
  TableFormat format = TableFormat::kTunefleet;
  // Only rows measured on this device model; default "", every model.
  std::string device_model;
  // Only rows of this toolkit; default "", every toolkit.
  std::string toolkit;
  // Only rows whose shape has these dim values ("K=4096,N=14336"); default
  // "", every row.
  std::string where;
  // kVllm: the dim whose value keys the configs (the batch size); default "M".
  std::string batch_dim = "M";
};

struct ExportedDocument {
  // The name its consumer looks for, e.g. vLLM's
  // "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json".
  std::string file_name;
  std::string text;  // the document, ending with a newline
};

// The table `table_json` (what Client::ExportBest returns, of one kernel for
// kVllm and kTriton) in `options.format`, with the rows `options` selects.
// INVALID_ARGUMENT when the table does not parse, `where` does not parse or
// names a dim the kernel lacks, or (kVllm, kTriton) the rows are of several
// device models or toolkits (naming them), of several kernels, or (kVllm)
// lack `batch_dim` or differ in another dim (naming the dims and values).
// NOT_FOUND when kVllm or kTriton selects no row.
absl::StatusOr<ExportedDocument> ConvertTable(const std::string& table_json,
                                              const ExportOptions& options);

// The best-config table (format tunefleet) that the document `text` in
// `format` holds, checked as `tunectl import` reads it. INVALID_ARGUMENT,
// naming the member, for text that is not such a document or for kVllm and
// kTriton, which do not carry the rows' tuning keys.
absl::StatusOr<std::string> ToTunefleetTable(TableFormat format, const std::string& text);

// vLLM's device_name for a device model as workers report it: the name
// without its " sm_90" (or " (sm_90)") suffix, spaces as '_', as vLLM writes
// torch.cuda.get_device_name(). "NVIDIA H100 80GB HBM3 sm_90" ->
// "NVIDIA_H100_80GB_HBM3".
std::string VllmDeviceName(const std::string& device_model);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_EXPORT_FORMATS_H_
