// tunectl: the command-line client of tunefleet. The composition root: flags
// are defined here and handed to the verbs in commands.h.
#include <grpc/support/log.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "client/tunectl/admin.h"
#include "client/tunectl/commands.h"
#include "client/tunectl/completion.h"
#include "client/tunectl/connection.h"
#include "client/tunectl/contexts.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/health.h"
#include "client/tunectl/help.h"
#include "client/tunectl/history.h"
#include "client/tunectl/interrupt.h"
#include "client/tunectl/json_path.h"
#include "client/tunectl/man_pages.h"
#include "client/tunectl/report.h"
#include "client/tunectl/suggest.h"
#include "client/tunectl/sweep.h"
#include "client/tunectl/transfer.h"
#include "client/tunectl/trials.h"
#include "client/tunectl/yaml.h"
#include "client/tunectl/profile.h"
#include "common/version.h"
#include "tunefleet/client.h"

namespace {

using namespace tunefleet;           // NOLINT(build/namespaces)
using namespace tunefleet::tunectl;  // NOLINT(build/namespaces)

struct Flags {
  std::string server;
  std::string config;  // the config file read, when there is one
  std::string context;
  std::string context_name;  // the NAME of `config use-context` and `set-context`
  ContextSettings context_settings;
  std::string output = "table";
  double timeout_seconds = 10;
  SubmitRequest submit;
  std::vector<std::string> shapes;  // submit: one, or several (a sweep)
  std::string shapes_file;
  std::string sweep_id;
  std::string health_service;  // health: "" = the whole coordinator
  std::vector<std::string> help_words;  // help: the verb (and sub-verb) to explain
  std::string man_dir;                  // man-pages: where the pages go
  bool wait = false;
  std::string job_id;
  std::string kernel;  // a directory for submit/validate, a name for best
  std::string shape;
  std::string device_model;
  std::string toolkit;
  JobsFlags jobs;
  std::string trial_status;
  ImportFlags import;
  ExportFlags export_best;
  std::string shell;
  std::string second_job;
  bool quiet = false;
  ConnectionFlags connection;
  std::string token_name;
  std::string token_role;
  std::string token_id;
  InvalidateFlags invalidate;
  std::string principal;
  ReportFlags report;
  ProfileFlags profile;
};

struct Verbs {
  CLI::App *submit, *watch, *status, *cancel, *jobs, *trials, *best, *workers, *validate;
  CLI::App* sweep;
  CLI::App *export_best, *import_best, *version, *completion, *history, *compare;
  CLI::App *token_create, *token_list, *token_revoke, *report;
  CLI::App *get_contexts, *current_context, *use_context, *set_context;
  CLI::App *admin_invalidate, *admin_release;
  CLI::App* profile;
  CLI::App* health;
  CLI::App* help;
  CLI::App* man_pages;
};

void DefineGlobalFlags(CLI::App& app, Flags& flags) {
  app.add_option("--server", flags.server,
                 "Coordinator host:port, or ip:port,ip:port for a leader and its standbys "
                 "(default: $TUNEFLEET_SERVER, else the config file's `server`, else "
                 "localhost:7070)");
  app.add_option("--context", flags.context,
                 "Use this context of the config file (default: $TUNEFLEET_CONTEXT, else its "
                 "current-context)")
      ->envname("TUNEFLEET_CONTEXT");
  app.add_option("-o,--output", flags.output,
                 "Output format: table, wide (jobs, trials, profile), json, yaml, csv "
                 "(trials, profile), or jsonpath={.field[0].sub} (one field of the JSON, for "
                 "scripts; [*] for every element)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (absl::StartsWith(value, "jsonpath=")) return "";
            for (const char* known : {"table", "wide", "json", "yaml", "csv"}) {
              if (value == known) return "";
            }
            return value + " is none of table, wide, json, yaml, csv, jsonpath=EXPR";
          },
          "FORMAT"))
      ->capture_default_str();
  app.add_option("--timeout", flags.timeout_seconds, "Seconds allowed per call")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("-q,--quiet", flags.quiet,
               "Print only data on stdout and errors on stderr: no progress, no notes");
  app.add_flag("--insecure", flags.connection.insecure,
               "Plaintext, no token: for a coordinator started with --insecure "
               "(or $TUNEFLEET_INSECURE=1, or `insecure = true` in the config file)");
  app.add_option("--ca-file", flags.connection.ca_file,
                 "PEM CA that signed the coordinator's certificate (default: "
                 "$TUNEFLEET_CA_FILE, else the config file's `ca_file`, else the system's)");
  app.add_option("--token-file", flags.connection.token_file,
                 "File holding the bearer token (default: $TUNEFLEET_TOKEN itself, else "
                 "$TUNEFLEET_TOKEN_FILE, else the config file's `token_file`, else "
                 "~/.config/tunefleet/token)");
}

void DefineAdmin(CLI::App& app, Flags& flags, Verbs* verbs) {
  CLI::App* admin = app.add_subcommand("admin", "Administer the coordinator (role admin)");
  admin->require_subcommand(1);
  CLI::App* token = admin->add_subcommand("token", "Manage bearer tokens");
  token->require_subcommand(1);
  verbs->token_create = token->add_subcommand(
      "create", "Create a token and print it (it is shown only once)");
  verbs->token_create->add_option("--name", flags.token_name, "The principal it names")
      ->required();
  verbs->token_create->add_option("--role", flags.token_role, "read, submit or admin")
      ->required()
      ->check(CLI::IsMember({"read", "submit", "admin"}));
  verbs->token_list = token->add_subcommand("list", "List the tokens (never their secrets)");
  verbs->token_revoke = token->add_subcommand("revoke", "Revoke a token");
  verbs->token_revoke->add_option("ID", flags.token_id, "Token id (see list)")->required();
  CLI::App* invalidate = admin->add_subcommand(
      "invalidate", "Exclude trials (kept for audit) and derive the affected bests again");
  invalidate->add_option("--worker", flags.invalidate.worker, "a worker principal or id");
  invalidate->add_option("--key", flags.invalidate.tuning_key, "a tuning key");
  invalidate->add_option("--job", flags.invalidate.job_id, "a job id");
  CLI::App* release = admin->add_subcommand("release", "Lift a worker's quarantine");
  release->add_option("--worker", flags.principal, "the quarantined principal")->required();
  verbs->admin_invalidate = invalidate;
  verbs->admin_release = release;
}

CLI::App* DefineSubmit(CLI::App& app, Flags& flags) {
  CLI::App* cmd = app.add_subcommand("submit", "Submit a tuning job");
  SubmitRequest& r = flags.submit;
  cmd->add_option("KERNEL_DIR", r.kernel_dir, "Directory of kernel.textproto")
      ->required();
  cmd->add_option("--shape", flags.shapes,
                  "Problem shape, e.g. M=1024,N=1024,K=1024; repeat it, or give a dim a "
                  "list or a range (M=16,32,64 or M=1,2,4,...,4096: every combination), to "
                  "submit a sweep (one job per shape, followed as one: tunectl sweep SWEEP_ID)");
  cmd->add_option("--shapes-file", flags.shapes_file,
                  "A sweep's shapes, one a line ('#' starts a comment)");
  cmd->add_option("--strategy", r.strategy,
                  "exhaustive (default), random, model (a learned cost model), "
                  "evolutionary (a genetic algorithm) or coordinate (one group of params "
                  "at a time: a function of several kernels)")
      ->check(CLI::IsMember({"exhaustive", "random", "model", "evolutionary", "coordinate"}));
  cmd->add_option("--budget", r.budget,
                  "random, model, evolutionary: configs to try (default 64); "
                  "coordinate: at most (default: until it converges)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--time-budget", r.time_budget_seconds,
                  "Stop proposing configs after this many seconds of the job's running "
                  "time (configs already out finish; default: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--plateau", r.plateau_batches,
                  "Stop after this many batches in a row improve the best by no more than "
                  "1 % (default: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--config-set", r.config_set,
                  "Tune only this named config set");
  cmd->add_option("--device", r.device_model, "Tune only on this device model");
  cmd->add_option("--seed", r.seed, "Seed of the random strategy and inputs");
  cmd->add_flag("--force", r.force_retune, "Measure even when already tuned");
  CLI::Option* replace = cmd->add_flag(
      "--replace", r.replace_best,
      "Serve this job's best even when it is slower than the best served now (implies "
      "--force; without it a slower retune is kept as a record and reported REGRESSED)");
  cmd->add_option("--replace-reason", r.replace_reason,
                  "Why --replace: logged by the coordinator and kept with the job")
      ->needs(replace);
  cmd->add_flag("--wait", flags.wait, "Watch the job until it finishes");
  return cmd;
}

CLI::App* DefineJobVerb(CLI::App& app, Flags& flags, const char* name,
                        const char* help) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->add_option("JOB", flags.job_id, "Job id")->required();
  return cmd;
}

CLI::App* DefineProfile(CLI::App& app, Flags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "profile", "Profile a finished job's fastest configs with Nsight Compute on a worker");
  ProfileFlags& p = flags.profile;
  cmd->add_option("JOB", p.job_id, "Job id")->required();
  cmd->add_option("--top", p.top, "Configs per target, fastest first (1..16)")
      ->capture_default_str();
  cmd->add_flag("--show", p.show, "Only show the stored (and pending) profiles");
  cmd->add_flag("--no-wait", p.no_wait, "Print what was queued and return");
  cmd->add_option_function<double>(
         "--wait", [&p](double seconds) { p.wait = absl::Seconds(seconds); },
         "Seconds to wait for the profiles (default 600)")
      ->check(CLI::PositiveNumber);
  return cmd;
}

CLI::App* DefineBest(CLI::App& app, Flags& flags) {
  CLI::App* cmd =
      app.add_subcommand("best", "Show the best known config of a kernel");
  cmd->add_option("KERNEL_NAME", flags.kernel, "Kernel name")->required();
  cmd->add_option("--shape", flags.shape, "Problem shape")->required();
  cmd->add_option("--device", flags.device_model,
                  "Device model (default: any)");
  cmd->add_option("--toolkit", flags.toolkit, "Toolkit (default: any)");
  return cmd;
}

CLI::App* DefineValidate(CLI::App& app, Flags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a kernel directory offline and size its config space");
  cmd->add_option("KERNEL_DIR", flags.kernel, "Directory of kernel.textproto")
      ->required();
  cmd->add_option("--shape", flags.shape,
                  "Problem shape, to count valid configs");
  return cmd;
}

CLI::App* DefineJobs(CLI::App& app, Flags& flags) {
  CLI::App* cmd = app.add_subcommand("jobs", "List jobs, newest first");
  cmd->add_option("--state", flags.jobs.state, "Only jobs in this state")
      ->transform(CLI::IsMember({"queued", "running", "succeeded", "failed", "cancelled"},
                                CLI::ignore_case));
  cmd->add_option("--kernel", flags.jobs.kernel, "Only jobs of this kernel");
  cmd->add_option("--owner", flags.jobs.owner, "Only jobs this principal submitted");
  cmd->add_option("--limit", flags.jobs.limit, "Jobs per page (default 100, at most 1000)")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--page-token", flags.jobs.page_token,
                  "Show the page after the previous one (printed on stderr)");
  return cmd;
}

void DefineTransfer(CLI::App& app, Flags& flags, Verbs* verbs) {
  // CLI11 validators: "" when the format is known, else why not.
  auto validator = [](auto parse) {
    return CLI::Validator(
        [parse](std::string& name) {
          absl::Status known = parse(name).status();
          return known.ok() ? std::string() : std::string(known.message());
        },
        "FORMAT");
  };
  ExportFlags& e = flags.export_best;
  verbs->export_best = app.add_subcommand(
      "export", "Print a kernel's best configs as a JSON table an application can ship, or in "
                "the format of vLLM, Kernel Tuner (T4) or Triton");
  verbs->export_best->add_option("KERNEL_NAME", e.kernel, "Kernel name")->required();
  verbs->export_best->add_option("--device", e.device_model, "Only this device model");
  verbs->export_best->add_option("--toolkit", e.toolkit, "Only this toolkit");
  verbs->export_best
      ->add_option("--format", e.format,
                   "tunefleet (the table import reads), vllm (batch size -> config, one "
                   "device), t4 (Kernel Tuner's T4 results), triton (shape -> triton.Config, "
                   "one device)")
      ->check(validator([](const std::string& name) { return ParseTableFormat(name); }))
      ->capture_default_str();
  verbs->export_best->add_option("--where", e.where,
                                 "Only shapes with these dim values, e.g. K=4096,N=14336");
  verbs->export_best->add_option("--batch-dim", e.batch_dim,
                                 "vllm: the dim whose values key the file (default: M)");
  verbs->export_best->add_option(
      "--out", e.out_dir, "Write the file into this directory under the name its consumer "
                          "looks for, instead of stdout");
  verbs->import_best = app.add_subcommand(
      "import", "Store the best configs of an exported table (role admin)");
  verbs->import_best->add_option("FILE", flags.import.file, "A table tunectl export wrote")
      ->required();
  verbs->import_best->add_option("--origin", flags.import.origin,
                                 "Where the rows come from (default: the file's name)");
  verbs->import_best->add_flag("--overwrite", flags.import.overwrite,
                               "Replace best configs measured here too");
  verbs->import_best
      ->add_option("--format", flags.import.format,
                   "tunefleet or t4 (vllm and triton files lack the rows' tuning keys)")
      ->check(validator([](const std::string& name) { return ParseImportFormat(name); }))
      ->capture_default_str();
}

CLI::App* DefineReport(CLI::App& app, Flags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write an HTML page of a job's configs and failures, of a sweep's shapes, or of a "
      "kernel's history");
  ReportFlags& r = flags.report;
  cmd->add_option("JOB_SWEEP_OR_KERNEL", r.subject, "A job id, else a sweep id, else a kernel name")
      ->required();
  cmd->add_option("--device", r.device_model, "Only this device model");
  cmd->add_option("--out", r.path,
                  "The page to write; - for stdout (default: report-JOB_SWEEP_OR_KERNEL.html)");
  cmd->add_option("--chart-js", r.chart_js, "Chart.js to inline (from libjs-chart.js)")
      ->capture_default_str();
  return cmd;
}

void DefineConfig(CLI::App& app, Flags& flags, Verbs* verbs) {
  CLI::App* config = app.add_subcommand("config", "Show or change the config file's contexts");
  config->require_subcommand(1);
  verbs->get_contexts = config->add_subcommand("get-contexts", "List the contexts");
  verbs->current_context =
      config->add_subcommand("current-context", "Print the current context's name");
  verbs->use_context = config->add_subcommand("use-context", "Make a context the current one");
  verbs->use_context->add_option("NAME", flags.context_name, "The context")
      ->required();
  verbs->set_context = config->add_subcommand(
      "set-context", "Create a context, or change its settings (the others are kept)");
  verbs->set_context->add_option("NAME", flags.context_name, "The context")->required();
  ContextSettings& s = flags.context_settings;
  verbs->set_context->add_option("--server", s.server, "Coordinator host:port");
  verbs->set_context->add_option("--ca-file", s.ca_file, "PEM CA of the coordinator");
  verbs->set_context->add_option("--token-file", s.token_file, "File holding the bearer token");
  verbs->set_context->add_flag("--insecure", s.insecure, "Plaintext, no token");
}

Verbs DefineVerbs(CLI::App& app, Flags& flags) {
  Verbs verbs{};
  verbs.submit = DefineSubmit(app, flags);
  verbs.watch =
      DefineJobVerb(app, flags, "watch", "Follow a job until it finishes");
  verbs.status = DefineJobVerb(app, flags, "status", "Show a job (or, given a sweep's id, its jobs)");
  verbs.sweep = app.add_subcommand("sweep", "Show a sweep's jobs, one row per shape");
  verbs.sweep->add_option("SWEEP", flags.sweep_id, "Sweep id (from submit)")->required();
  verbs.sweep->add_flag("--wait", flags.wait, "Follow the sweep until every shape finished");
  verbs.cancel = DefineJobVerb(app, flags, "cancel", "Cancel a job");
  verbs.jobs = DefineJobs(app, flags);
  verbs.trials = DefineJobVerb(app, flags, "trials",
                               "List every trial of a job with the reason of each failure");
  verbs.trials
      ->add_option("--status", flags.trial_status,
                   "Only trials with this outcome: ok, compile_error, invalid_config, "
                   "launch_error, crashed, timeout, wrong_result, quarantined, worker_lost")
      ->transform(CLI::IsMember({"ok", "compile_error", "invalid_config", "launch_error",
                                 "crashed", "timeout", "wrong_result", "quarantined",
                                 "worker_lost"},
                                CLI::ignore_case));
  verbs.profile = DefineProfile(app, flags);
  verbs.best = DefineBest(app, flags);
  DefineTransfer(app, flags, &verbs);
  verbs.version = app.add_subcommand("version", "Show tunectl's and the coordinator's versions");
  verbs.health = app.add_subcommand(
      "health", "Ask whether the coordinator serves (gRPC health; no token): exit 0 when SERVING");
  verbs.health->add_option("--service", flags.health_service,
                           "One service's health, e.g. tunefleet.v1.TuningService (default: "
                           "the whole coordinator)");
  verbs.history = app.add_subcommand(
      "history", "Show a kernel's best per shape and device model over time");
  verbs.history->add_option("KERNEL_NAME", flags.kernel, "Kernel name")->required();
  verbs.history->add_option("--device", flags.device_model, "Only this device model");
  verbs.compare = app.add_subcommand("compare", "Compare two jobs, config by config");
  verbs.compare->add_option("JOB", flags.job_id, "The first job")->required();
  verbs.compare->add_option("OTHER_JOB", flags.second_job, "The second job")->required();
  verbs.help = app.add_subcommand("help", "Show a verb's help: tunectl help submit");
  verbs.help->add_option("VERB", flags.help_words, "The verb, and its sub-verb if it has them");
  verbs.man_pages = app.add_subcommand("man-pages", "Write a manual page per verb into DIR");
  verbs.man_pages->group("");  // for the build; not listed
  verbs.man_pages->add_option("DIR", flags.man_dir, "Where the pages go")->required();
  verbs.completion = app.add_subcommand(
      "completion", "Print a shell completion script: source <(tunectl completion bash)");
  verbs.completion->add_option("SHELL", flags.shell, "bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  verbs.report = DefineReport(app, flags);
  verbs.workers = app.add_subcommand("workers", "List the workers");
  verbs.validate = DefineValidate(app, flags);
  DefineAdmin(app, flags, &verbs);
  DefineConfig(app, flags, &verbs);
  return verbs;
}

bool IsJsonPath(const std::string& output) { return absl::StartsWith(output, "jsonpath="); }

Console MakeConsole(const Flags& flags) {
  Console console;
  console.out = &std::cout;
  console.err = &std::cerr;
  console.quiet = flags.quiet;
  console.format = flags.output == "json" || flags.output == "yaml" || IsJsonPath(flags.output)
                       ? OutputFormat::kJson
                   : flags.output == "csv"  ? OutputFormat::kCsv
                   : flags.output == "wide" ? OutputFormat::kWide
                                           : OutputFormat::kTable;
  console.progress.terminal = isatty(STDERR_FILENO) == 1;
  console.progress.color =
      ColorAllowed(console.progress.terminal, std::getenv("NO_COLOR"), std::getenv("TERM"));
  return console;
}

const char* Getenv(const char* name) { return std::getenv(name); }

// The config file's settings are flags by now (see contexts.h).
std::string ServerAddress(const Flags& flags) {
  return ResolveServer(flags.server, std::getenv("TUNEFLEET_SERVER"));
}

int RunAdmin(Client& client, const Verbs& verbs, const Flags& flags, const Console& console) {
  if (verbs.token_create->parsed()) {
    return RunTokenCreate(client, flags.token_name, flags.token_role, console);
  }
  if (verbs.token_list->parsed()) return RunTokenList(client, console);
  return RunTokenRevoke(client, flags.token_id, console);
}

// `submit`: one shape is a job (RunSubmit), several a sweep (RunSubmitSweep).
int RunSubmitVerb(Client& client, const Flags& flags, const Console& console) {
  std::vector<std::string> given = flags.shapes;
  if (!flags.shapes_file.empty()) {
    absl::StatusOr<std::vector<std::string>> listed = ReadShapesFile(flags.shapes_file);
    if (!listed.ok()) return ReportError(console, listed.status());
    given.insert(given.end(), listed->begin(), listed->end());
  }
  std::vector<std::string> shapes;  // lists and ranges expanded
  for (const std::string& shape : given) {
    absl::StatusOr<std::vector<std::string>> named = ExpandShapes(shape);
    if (!named.ok()) return ReportError(console, named.status());
    shapes.insert(shapes.end(), named->begin(), named->end());
  }
  if (shapes.empty()) {
    *console.err << "tunectl: submit needs --shape (or --shapes-file)\n";
    return kExitUsage;
  }
  if (shapes.size() > 1) {
    return RunSubmitSweep(client, flags.submit, shapes, flags.wait, console);
  }
  SubmitRequest request = flags.submit;
  request.shape = shapes.front();
  std::optional<SigintCancelsWatches> sigint;
  if (flags.wait) sigint.emplace(&client);
  return RunSubmit(client, request, flags.wait, console);
}

int RunOnline(const Verbs& verbs, Flags flags, const Console& console) {
  absl::StatusOr<ClientOptions> options =
      MakeClientOptions(ServerAddress(flags), flags.timeout_seconds);
  if (!options.ok()) return ReportError(console, options.status());
  if (absl::Status applied = ApplyConnectionSettings(flags.connection, Getenv, &*options);
      !applied.ok()) {
    return ReportError(console, applied);
  }
  if (verbs.admin_invalidate->parsed()) {
    return RunAdminInvalidate(*options, flags.invalidate, console);
  }
  if (verbs.admin_release->parsed()) return RunAdminRelease(*options, flags.principal, console);
  if (verbs.health->parsed()) return RunHealth(*options, flags.health_service, console);
  absl::StatusOr<std::unique_ptr<Client>> connected = Client::Connect(*options);
  if (!connected.ok()) return ReportError(console, connected.status());
  Client& client = **connected;
  if (verbs.submit->parsed()) return RunSubmitVerb(client, flags, console);
  if (verbs.sweep->parsed()) return RunSweep(client, flags.sweep_id, flags.wait, console);
  if (verbs.watch->parsed()) {
    SigintCancelsWatches sigint(&client);
    return RunWatch(client, flags.job_id, console);
  }
  if (verbs.status->parsed()) return RunStatus(client, flags.job_id, console);
  if (verbs.cancel->parsed()) return RunCancel(client, flags.job_id, console);
  if (verbs.jobs->parsed()) return RunJobs(client, flags.jobs, console);
  if (verbs.trials->parsed()) return RunTrials(client, flags.job_id, flags.trial_status, console);
  if (verbs.profile->parsed()) return RunProfile(client, flags.profile, console);
  if (verbs.best->parsed()) {
    return RunBest(client, flags.kernel, flags.shape, flags.device_model,
                   flags.toolkit, console);
  }
  if (verbs.workers->parsed()) return RunWorkers(client, console);
  if (verbs.version->parsed()) return RunVersion(client, console);
  if (verbs.history->parsed()) {
    return RunHistory(client, flags.kernel, flags.device_model, console);
  }
  if (verbs.compare->parsed()) return RunCompare(client, flags.job_id, flags.second_job, console);
  if (verbs.export_best->parsed()) return RunExport(client, flags.export_best, console);
  if (verbs.import_best->parsed()) return RunImport(client, flags.import, console);
  if (verbs.report->parsed()) return RunReport(client, flags.report, console);
  return RunAdmin(client, verbs, flags, console);
}

std::set<std::string> VerbNames(const CLI::App& app) {
  std::set<std::string> names;
  for (const CLI::App* verb : app.get_subcommands({})) names.insert(verb->get_name());
  return names;
}

int RunConfig(const Verbs& verbs, const Flags& flags, const Console& console,
              const std::set<std::string>& verb_names) {
  if (flags.config.empty()) {
    return ReportError(console, absl::FailedPreconditionError(
                                    "no config file: set --config, $TUNEFLEET_CONFIG or $HOME"));
  }
  if (verbs.get_contexts->parsed()) return RunGetContexts(flags.config, verb_names, console);
  if (verbs.current_context->parsed()) return RunCurrentContext(flags.config, console);
  if (verbs.use_context->parsed()) {
    return RunUseContext(flags.config, flags.context_name, verb_names, console);
  }
  return RunSetContext(flags.config, flags.context_name, flags.context_settings, verb_names,
                       console);
}

int Run(const Verbs& verbs, const Flags& flags, const Console& console,
        const std::set<std::string>& verb_names) {
  if (verbs.validate->parsed()) return RunValidate(flags.kernel, flags.shape, console);
  if (verbs.get_contexts->get_parent()->parsed()) {
    return RunConfig(verbs, flags, console, verb_names);
  }
  return RunOnline(verbs, flags, console);
}

// The global flags whose next word is their value.
const std::vector<std::string> kValueFlags = {"--server",  "--config",  "--context",
                                              "-o",        "--output",  "--timeout",
                                              "--ca-file", "--token-file"};

CommandWords WordsOf(const CLI::App& app) {
  CommandWords words{app.get_name(), {}, {}};
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) words.flags.push_back("--" + name);
  }
  for (const CLI::App* verb : app.get_subcommands({})) words.verbs.push_back(WordsOf(*verb));
  return words;
}

// Names a mistyped verb (CLI11 would only say that one is required), or
// the mistyped global option before it whose value read as the verb.
std::optional<std::string> MistypedVerb(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> verbs;
  for (const CLI::App* verb : app.get_subcommands({})) verbs.push_back(verb->get_name());
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::set<std::string> values(kValueFlags.begin(), kValueFlags.end());
  std::optional<std::string> word = UnknownVerb(args, verbs, values);
  if (!word.has_value()) return std::nullopt;
  std::set<std::string> flags;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) flags.insert("--" + name);
    for (const std::string& name : option->get_snames()) flags.insert("-" + name);
  }
  if (std::optional<std::string> option = UnknownOption(args, flags, values);
      option.has_value()) {
    return UnknownOptionMessage(*option, flags);
  }
  return UnknownVerbMessage(*word, verbs);
}

}  // namespace

int main(int argc, char** argv) {
  // gRPC core's own lines (a raw "E1126 ... ssl_transport_security.cc")
  // would precede tunectl's message saying the same; GRPC_VERBOSITY asks
  // for them.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  // Named, so that help and the man page say "tunectl", not argv[0]'s path.
  CLI::App app{"tunectl: submit and follow tunefleet kernel-tuning jobs.", "tunectl"};
  app.footer(kExitCodeHelp);
  app.require_subcommand(1);
  app.fallthrough();  // global flags may follow the verb
  Flags flags;
  DefineGlobalFlags(app, flags);
  Verbs verbs = DefineVerbs(app, flags);
  AddExamples(app);
  const std::set<std::string> verb_names = VerbNames(app);
  CLI::Option* config = app.set_config(
      "--config", DefaultContextConfigPath(Getenv),
      "Config file: any global flag as `key = value`, and [contexts] (default: "
      "$TUNEFLEET_CONFIG, else ~/.config/tunefleet/config)");
  config->option_text("FILE");  // not the resolved default: help shows no home directory
  app.config_formatter(std::make_shared<ContextConfig>(
      verb_names,
      [&app] {
        // CLI11 reads the file before it applies TUNEFLEET_CONTEXT.
        const std::string flag = app.get_option("--context")->as<std::string>();
        const char* env = Getenv("TUNEFLEET_CONTEXT");
        return !flag.empty() || env == nullptr ? flag : std::string(env);
      },
      Getenv));
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.set_version_flag("--version", std::string("tunectl ") + kVersion);
  if (std::optional<std::string> message = MistypedVerb(app, argc, argv); message.has_value()) {
    std::cerr << "tunectl: " << *message << std::endl;
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ConfigError& e) {
    std::string message = e.what();
    const std::string extra = "INI was not able to parse ";
    if (message.rfind(extra, 0) == 0) {
      message = "unknown key '" + message.substr(extra.size()) + "'";
    }
    std::cerr << "tunectl: config file " << config->as<std::string>() << ": " << message
              << std::endl;
    return kExitUsage;
  } catch (const CLI::ExtrasError& e) {
    std::cerr << "tunectl: " << ExtrasMessage(app, e.what()) << std::endl;
    return kExitUsage;
  } catch (const CLI::RequiredError& e) {
    if (const CLI::App* command = DeepestParsed(app);
        command != &app && !command->get_subcommands({}).empty() &&
        absl::StrContains(e.what(), "subcommand")) {
      std::cerr << "tunectl: " << MissingSubVerbMessage(app, argc, argv) << std::endl;
      return kExitUsage;
    }
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, or the error and a hint
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (verbs.help->parsed()) return RunHelp(app, flags.help_words);
  if (verbs.man_pages->parsed()) {
    const absl::Status written = WriteManPages(app, flags.man_dir, kVersion);
    if (!written.ok()) std::cerr << "tunectl: " << written.message() << std::endl;
    return written.ok() ? kExitOk : kExitFailure;
  }
  if (const CLI::App* verb = DeepestParsed(app); verb != &app) {
    while (verb->get_parent() != &app) verb = verb->get_parent();
    if (absl::Status format = CheckOutputFormat(
            verb->get_name(), IsJsonPath(flags.output) ? "json" : flags.output);
        !format.ok()) {
      std::cerr << "tunectl: " << format.message() << std::endl;
      return kExitUsage;
    }
  }
  if (verbs.completion->parsed()) {
    CommandWords words = WordsOf(app);
    words.name = "tunectl";  // not argv[0], which may be a path
    std::cout << (flags.shell == "zsh" ? ZshCompletion(words, kValueFlags)
                                       : BashCompletion(words, kValueFlags));
    return kExitOk;
  }
  flags.config = config->as<std::string>();
  Console console = MakeConsole(flags);
  const bool yaml = flags.output == "yaml" && !verbs.export_best->parsed();
  if (!yaml && !IsJsonPath(flags.output)) return Run(verbs, flags, console, verb_names);
  // YAML and JSONPath read the JSON document the verb prints.
  std::ostringstream json;
  console.out = &json;
  const int code = Run(verbs, flags, console, verb_names);
  if (json.str().empty()) return code;
  if (yaml) {
    absl::StatusOr<std::string> converted = JsonToYaml(json.str());
    std::cout << (converted.ok() ? *converted : json.str());
    return code;
  }
  absl::StatusOr<std::string> selected =
      SelectJsonPath(json.str(), flags.output.substr(std::string("jsonpath=").size()));
  if (!selected.ok()) {
    std::cerr << "tunectl: " << selected.status().message() << std::endl;
    return code != kExitOk ? code
           : selected.status().code() == absl::StatusCode::kNotFound ? kExitNotFound
                                                                      : kExitUsage;
  }
  std::cout << *selected;
  return code;
}
