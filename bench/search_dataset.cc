#include "bench/search_dataset.h"

#include <zlib.h>

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace tunefleet::bench {
namespace {

constexpr char kMagic[] = "# tunefleet search dataset v1";
constexpr char kStatusPrefix[] = "TRIAL_STATUS_";

// gzip when the name ends in .gz; zlib reads plain files as they are.
struct GzFile {
  gzFile file = nullptr;
  ~GzFile() {
    if (file != nullptr) gzclose(file);
  }
};

std::string Header(absl::string_view name, absl::string_view value) {
  return absl::StrCat("# ", name, ": ", value, "\n");
}

constexpr absl::string_view kTrialsCsvHeader = "config,device_model,status,median_seconds,";

// Splits RFC 4180 text (fields may be quoted, and quoted fields may hold
// commas, quotes and line breaks; records end in LF or CRLF) into records.
// `*line` counts lines as it goes; false for an unterminated quote.
bool NextRecord(absl::string_view* text, std::vector<std::string>* fields, int* line) {
  fields->assign(1, "");
  bool quoted = false;
  size_t i = 0;
  for (; i < text->size(); ++i) {
    const char c = (*text)[i];
    if (quoted) {
      if (c == '"' && i + 1 < text->size() && (*text)[i + 1] == '"') {
        fields->back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++*line;
        fields->back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields->emplace_back();
    } else if (c == '\n') {
      ++*line;
      break;
    } else if (c != '\r') {
      fields->back() += c;
    }
  }
  text->remove_prefix(std::min(i + 1, text->size()));
  return !quoted;
}

// The rows of `tunectl trials -o csv` output: search rounds, not excluded.
absl::Status ReadTrialsCsv(absl::string_view text, const std::string& path, int first_line,
                           std::vector<DatasetRow>* rows) {
  int line = first_line;
  std::vector<std::string> header;
  NextRecord(&text, &header, &line);
  auto column = [&](absl::string_view name) -> int {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  const int config = column("config"), status = column("status"),
            seconds = column("median_seconds"), round = column("round"),
            excluded = column("excluded");
  std::vector<std::string> fields;
  while (!text.empty()) {
    const int at = line + 1;
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", at, ": ", why));
    };
    if (!NextRecord(&text, &fields, &line)) return bad("unterminated quoted field");
    if (fields.size() == 1 && fields[0].empty()) continue;
    if (fields.size() != header.size()) return bad("not as many fields as the header");
    if ((round >= 0 && fields[round] != "search") || (excluded >= 0 && fields[excluded] == "true")) {
      continue;
    }
    DatasetRow row;
    row.config = fields[config];
    v1::TrialStatus parsed;
    if (!v1::TrialStatus_Parse(absl::StrCat(kStatusPrefix, fields[status]), &parsed)) {
      return bad(absl::StrCat("unknown status ", fields[status]));
    }
    row.status = parsed;
    if (!absl::SimpleAtod(fields[seconds], &row.median_seconds)) {
      return bad("median_seconds is not a number");
    }
    rows->push_back(std::move(row));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteDataset(const SearchDataset& dataset, const std::string& path) {
  const bool gzip = absl::EndsWith(path, ".gz");
  GzFile out;
  out.file = gzopen(path.c_str(), gzip ? "wb9" : "wbT");
  if (out.file == nullptr) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  std::string text = absl::StrCat(kMagic, "\n", Header("kernel", dataset.kernel_dir),
                                  Header("shape", dataset.shape), Header("device", dataset.device));
  std::vector<std::string> limits;
  for (const auto& [name, value] : dataset.limits) {
    limits.push_back(absl::StrFormat("%s=%.17g", name, value));  // exact: limits decide validity
  }
  absl::StrAppend(&text, Header("limits", absl::StrJoin(limits, ",")),
                  "config,status,median_seconds\n");
  for (const DatasetRow& row : dataset.rows) {
    absl::string_view status = v1::TrialStatus_Name(row.status);
    absl::ConsumePrefix(&status, kStatusPrefix);
    absl::StrAppendFormat(&text, "\"%s\",%s,%.9g\n", row.config, status, row.median_seconds);
  }
  if (gzwrite(out.file, text.data(), static_cast<unsigned>(text.size())) !=
      static_cast<int>(text.size())) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  }
  const int closed = gzclose(out.file);
  out.file = nullptr;
  return closed == Z_OK ? absl::OkStatus()
                        : absl::UnavailableError(absl::StrCat("cannot finish ", path));
}

absl::StatusOr<SearchDataset> ReadDataset(const std::string& path) {
  GzFile in;
  in.file = gzopen(path.c_str(), "rb");
  if (in.file == nullptr) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(in.file, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  if (n < 0) return absl::DataLossError(absl::StrCat(path, ": not a readable gzip file"));

  SearchDataset dataset;
  int line_number = 0;
  bool magic = false;
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": ", why));
  };
  size_t offset = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (magic && absl::StartsWith(line, kTrialsCsvHeader)) {
      RETURN_IF_ERROR(ReadTrialsCsv(absl::string_view(text).substr(offset), path,
                                    line_number - 1, &dataset.rows));
      break;
    }
    offset += line.size() + 1;
    if (line.empty()) continue;
    if (line_number == 1) {
      if (line != kMagic) return bad("not a tunefleet search dataset (v1)");
      magic = true;
      continue;
    }
    if (absl::ConsumePrefix(&line, "# ")) {
      std::pair<absl::string_view, absl::string_view> field = absl::StrSplit(line, ": ");
      if (field.first == "kernel") dataset.kernel_dir = std::string(field.second);
      if (field.first == "shape") dataset.shape = std::string(field.second);
      if (field.first == "device") dataset.device = std::string(field.second);
      if (field.first == "limits") {
        for (absl::string_view entry : absl::StrSplit(field.second, ',', absl::SkipEmpty())) {
          std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(entry, '=');
          double value = 0;
          if (!absl::SimpleAtod(kv.second, &value)) return bad("a limit is not a number");
          dataset.limits[std::string(kv.first)] = value;
        }
      }
      continue;
    }
    if (line == "config,status,median_seconds") continue;
    if (!absl::ConsumePrefix(&line, "\"")) return bad("a row starts with its quoted config");
    const size_t quote = line.find('"');
    if (quote == absl::string_view::npos) return bad("unterminated config");
    DatasetRow row;
    row.config = std::string(line.substr(0, quote));
    std::vector<absl::string_view> rest = absl::StrSplit(line.substr(quote + 1), ',');
    if (rest.size() != 3 || !rest[0].empty()) return bad("expected \"config\",status,seconds");
    v1::TrialStatus status;
    if (!v1::TrialStatus_Parse(absl::StrCat(kStatusPrefix, rest[1]), &status)) {
      return bad(absl::StrCat("unknown status ", rest[1]));
    }
    row.status = status;
    if (!absl::SimpleAtod(rest[2], &row.median_seconds)) return bad("seconds is not a number");
    dataset.rows.push_back(std::move(row));
  }
  if (!magic) return absl::InvalidArgumentError(absl::StrCat(path, ": empty"));
  if (dataset.kernel_dir.empty() || dataset.shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no kernel or shape header"));
  }
  return dataset;
}

}  // namespace tunefleet::bench
