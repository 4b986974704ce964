#include "client/tunectl/man_pages.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "client/tunectl/help.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace tunefleet::tunectl {
namespace {

// Text as roff shows it verbatim: backslashes escaped, and no line taken
// for a request (one starting with '.' or '\'').
std::string RoffText(const std::string& text) {
  std::string escaped = absl::StrReplaceAll(text, {{"\\", "\\e"}, {"-", "\\-"}});
  std::vector<std::string> lines = absl::StrSplit(escaped, '\n');
  for (std::string& line : lines) {
    if (!line.empty() && (line[0] == '.' || line[0] == '\'')) line = "\\&" + line;
  }
  return absl::StrJoin(lines, "\n");
}

void Collect(const CLI::App& command, std::vector<ManPage>* pages) {
  for (const CLI::App* verb : command.get_subcommands({})) {
    if (verb->get_name() == "man-pages") continue;
    const std::string path = CommandPath(verb);
    std::string help = verb->help();
    const std::string usage = "Usage: " + verb->get_name() + " ";
    if (const size_t at = help.find(usage); at != std::string::npos) {
      help.replace(at, usage.size(), "Usage: " + path + " ");
    }
    pages->push_back({path, verb->get_description(), help});
    Collect(*verb, pages);
  }
}

}  // namespace

std::string ManPageRoff(const ManPage& page, const std::string& version) {
  const std::string name = absl::StrReplaceAll(page.path, {{" ", "-"}});
  std::string title = name;
  absl::AsciiStrToUpper(&title);
  return absl::StrCat(
      ".TH ", title, " 1 \"\" \"tunectl ", version, "\" \"tunefleet\"\n",
      ".SH NAME\n", RoffText(name), " \\- ", RoffText(page.description), "\n",
      ".SH SYNOPSIS\n.B ", RoffText(page.path), "\n[OPTIONS]\n",
      ".SH DESCRIPTION\n", RoffText(page.description), ".\n",
      ".SH USAGE\n.nf\n", RoffText(page.help), "\n.fi\n",
      ".SH SEE ALSO\n.BR tunectl (1)\n");
}

absl::Status WriteManPages(const CLI::App& app, const std::string& dir,
                           const std::string& version) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  }
  std::vector<ManPage> pages;
  Collect(app, &pages);
  for (const ManPage& page : pages) {
    const std::string file =
        absl::StrCat(dir, "/", absl::StrReplaceAll(page.path, {{" ", "-"}}), ".1");
    RETURN_IF_ERROR(WriteFileAtomic(file, ManPageRoff(page, version)));
  }
  return absl::OkStatus();
}

}  // namespace tunefleet::tunectl
