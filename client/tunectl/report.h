// tunectl's `report` verb: one self-contained HTML page about a job (every
// config's time, failures with their reasons, the distribution of times, best
// against default, each parameter's effect), about a sweep (each shape's
// state, best and speed-up, and the sweep as a whole) or about a kernel (its
// best per shape and device model over time, as `history` lists it).
//
// The page opens offline: Chart.js (Debian's libjs-chart.js) is inlined, the
// data is embedded as JSON, nothing else is referenced. When the charts are
// drawn the page sets `data-rendered="true"` on <body>; a script error sets
// `data-error` to its message and shows it at the top of the page.
#ifndef TUNEFLEET_CLIENT_TUNECTL_REPORT_H_
#define TUNEFLEET_CLIENT_TUNECTL_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/tunectl/commands.h"
#include "client/tunectl/history.h"
#include "nlohmann/json.hpp"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

// Debian's UMD build of Chart.js, usable from a plain <script>.
inline constexpr char kDefaultChartJs[] = "/usr/share/javascript/chart.js/chart.min.js";

struct ReportFlags {
  std::string subject;       // a job id, else a sweep id, else a kernel name
  std::string device_model;  // only this device model; default: every one
  // Where the page goes; "-" is stdout. Default: report-<subject>.html.
  std::string path;
  // Chart.js to inline. Default: kDefaultChartJs.
  std::string chart_js = kDefaultChartJs;
};

// The data of a job's page: the job, its targets and one trial per config
// and device model (the search round's when there is one); excluded trials
// are left out and counted; and its Nsight Compute profiles, when it has
// any (shown as a table per device model). Only `device_model`'s when it is
// not empty.
nlohmann::ordered_json JobReportData(const Job& job, const std::vector<Trial>& trials,
                                     const std::string& device_model,
                                     const std::vector<KernelProfile>& profiles = {});

// The data of a sweep's page: the sweep's totals and one row per shape and
// device model, in the sweep's order (`jobs` as SweepJobs returns them), a
// shape with no target yet (queued) in one row without a device model.
// Only `device_model`'s rows when it is not empty.
nlohmann::ordered_json SweepReportData(const std::string& sweep_id, const std::vector<Job>& jobs,
                                       const std::string& device_model);

// The data of a kernel's page: `points` as HistoryOf orders them.
nlohmann::ordered_json KernelReportData(const std::string& kernel,
                                        const std::vector<HistoryPoint>& points);

// `json` serialised so that it can sit inside a <script> element: every '<'
// is written as \u003c, so no "</script>" or "<!--" can end or change it.
std::string ScriptSafeJson(const nlohmann::ordered_json& json);

// The whole page: `title`, `data` (JobReportData or KernelReportData) and
// `chart_js`, the text of Chart.js. REQUIRES: `chart_js` holds no "</script".
std::string ReportHtml(absl::string_view title, const nlohmann::ordered_json& data,
                       absl::string_view chart_js);

// Writes the page of the job `flags.subject`, or, when no job has that id,
// of the sweep of that id, else of the kernel of that name (NotFound when it
// has no succeeded job either).
// FailedPrecondition when Chart.js cannot be read.
int RunReport(Client& client, const ReportFlags& flags, const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_REPORT_H_
