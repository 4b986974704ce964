// Runs the built tunectl as a user would: offline verbs, and online verbs
// against the in-test fake coordinator.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/fake_tuning_service.h"
#include "tests/support/test_support.h"

namespace tunefleet::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `command` in sh, stdout and stderr together.
Outcome Shell(const std::string& shell_command) {
  std::string command = shell_command + " 2>&1";
  Outcome run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe))
    run.output.append(buffer, n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

Outcome Tunectl(const std::string& args) { return Shell(BuildDir() + "/bin/tunectl " + args); }

TEST(TunectlBinaryTest, ValidatesTheMatmulKernel) {
  Outcome run = Tunectl("validate " + SourceDir() +
                        "/kernels/cpu/matmul --shape M=512,N=512,K=512");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("parameters     5"));
  EXPECT_THAT(run.output, HasSubstr("full space     256 configs"));
  EXPECT_THAT(run.output,
              ::testing::ContainsRegex("valid configs  [0-9]+ of 256"));
}

TEST(TunectlBinaryTest, AMistypedCommandIsNamedWithTheNearestOne) {
  Outcome run = Tunectl("--server localhost:1 stauts j-1");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("unknown command 'stauts'; did you mean 'status'?"));
  run = Tunectl("frobnicate");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("unknown command 'frobnicate'"));
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("did you mean")));
}

// Completes `words` (the last one being typed) with the generated bash script.
// `words` may end with "''" for an empty word being completed; `env` is put
// before bash ("NAME=value ...").
Outcome BashComplete(const std::string& shell, const std::string& words,
                     const std::string& env = "") {
  const std::string script =
      "source <(" + BuildDir() + "/bin/tunectl completion " + shell + ") && "
      "COMP_WORDS=(" + words + ") && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _tunectl && "
      "echo \"${COMPREPLY[*]}\"";
  std::string command = env + " bash -c '" + script + "' 2>&1";
  Outcome run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) run.output.append(buffer, n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

TEST(TunectlBinaryTest, BashCompletionCompletesVerbsFlagsAndSubVerbs) {
  EXPECT_EQ(BashComplete("bash", "tunectl st").output, "status\n");
  EXPECT_EQ(BashComplete("bash", "tunectl --server h:1 tri").output, "trials\n");
  EXPECT_EQ(BashComplete("bash", "tunectl trials J --st").output, "--status\n");
  EXPECT_EQ(BashComplete("bash", "tunectl admin token c").output, "create\n");
  Outcome zsh = Tunectl("completion zsh");
  EXPECT_EQ(zsh.exit_code, 0);
  EXPECT_THAT(zsh.output, HasSubstr("bashcompinit"));
  EXPECT_EQ(Tunectl("completion fish").exit_code, 2);
}

TEST(TunectlBinaryTest, TheManPageDescribesTheVerbs) {
  const std::string page = BuildDir() + "/man/tunectl.1";
  std::ifstream file(page);
  if (!file) GTEST_SKIP() << page << " was not made (help2man is missing)";
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr(".TH TUNECTL \"1\""));
  EXPECT_THAT(text.str(), HasSubstr("trials"));
  EXPECT_THAT(text.str(), HasSubstr("job finished with failed trials"));  // the exit codes
}

TEST(TunectlBinaryTest, VersionFlagPrintsTheVersion) {
  Outcome run = Tunectl("--version");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, MatchesRegex("tunectl [0-9]+\\.[0-9]+\\.[0-9]+\n"));
}

TEST(TunectlBinaryTest, MalformedSpecFailsWithFileAndLine) {
  TempDir dir;
  std::ofstream(dir.path() + "/kernel.textproto")
      << "name: \"broken\"\nbackend: BACKEND_CPU\nparams { name: \"A\" values: "
         "[1, }\n";
  Outcome run = Tunectl("validate " + dir.path());
  EXPECT_THAT(run.exit_code, ::testing::AnyOf(1, 2)) << run.output;
  EXPECT_THAT(run.output, HasSubstr("kernel.textproto:3:"));
}

TEST(TunectlBinaryTest, UsageErrorsExitTwoAndHelpListsExitCodes) {
  EXPECT_EQ(Tunectl("submit").exit_code, 2);
  EXPECT_EQ(Tunectl("--output xml jobs").exit_code, 2);
  Outcome help = Tunectl("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("130  interrupted"));
}

TEST(TunectlBinaryTest, AdminVerbsNeedAFilterOrAWorker) {
  Outcome run = Tunectl("--server 127.0.0.1:1 admin invalidate");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("--worker, --key or --job"));
  EXPECT_EQ(Tunectl("admin release").exit_code, 2);
  EXPECT_EQ(Tunectl("admin").exit_code, 2);
  Outcome unreachable =
      Tunectl("--server 127.0.0.1:1 --timeout 2 admin invalidate --worker host:x");
  EXPECT_EQ(unreachable.exit_code, 6) << unreachable.output;
}

TEST(TunectlBinaryTest, MistypedFlagsAndSubVerbsAreNamedWithTheNearestOne) {
  Outcome run = Tunectl("submit --strateg random");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("unknown option '--strateg' for 'tunectl submit'; did you "
                                    "mean '--strategy'?"));
  run = Tunectl("admin tokn create");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("unknown command 'tokn' for 'tunectl admin'; did you mean 'token'?"));
  run = Tunectl("admin");
  EXPECT_THAT(run.output, HasSubstr("'tunectl admin' needs one of: token, invalidate, release"));
  // A mistyped global option with its value as the next word: the option
  // is named, not its value as a command.
  run = Tunectl("--sever 127.0.0.1:1 jobs");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("unknown option '--sever'; did you mean '--server'?"));
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("unknown command")));
}

TEST(TunectlBinaryTest, HelpVerbShowsThatVerbsHelp) {
  Outcome run = Tunectl("help submit");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("Usage: tunectl submit [OPTIONS] KERNEL_DIR"));
  EXPECT_THAT(run.output, HasSubstr("--strategy"));
  run = Tunectl("help admin token create");
  EXPECT_THAT(run.output, HasSubstr("Usage: tunectl admin token create"));
  run = Tunectl("help sbumit");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("did you mean 'submit'?"));
}

TEST(TunectlBinaryTest, EveryVerbHasAManualPage) {
  TempDir dir;
  Outcome run = Tunectl("man-pages " + dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* verb : {"submit", "best", "export", "health", "admin-token-create",
                           "config-use-context"}) {
    const std::string page = dir.path() + "/tunectl-" + verb + ".1";
    std::ifstream in(page);
    ASSERT_TRUE(in.good()) << page;
    std::stringstream text;
    text << in.rdbuf();
    std::string title = std::string("TUNECTL-") + verb;
    std::transform(title.begin(), title.end(), title.begin(), ::toupper);
    EXPECT_THAT(text.str(), HasSubstr(".TH " + title + " 1")) << page;
    EXPECT_THAT(text.str(), HasSubstr(".SH NAME\ntunectl\\-")) << page;
  }
  std::ifstream submit(dir.path() + "/tunectl-submit.1");
  std::stringstream text;
  text << submit.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("\\-\\-strategy"));
  EXPECT_THAT(text.str(), HasSubstr("Usage: tunectl submit"));
  EXPECT_THAT(Tunectl("--help").output, ::testing::Not(HasSubstr("man-pages")));
  if (Shell("command -v man").exit_code == 0) {  // it renders
    Outcome man = Shell("MANWIDTH=100 man -l " + dir.path() + "/tunectl-submit.1");
    EXPECT_EQ(man.exit_code, 0) << man.output;
    EXPECT_THAT(man.output, HasSubstr("--strategy"));
  }
}

// Every example a verb's help shows parses: run against no coordinator, it
// may fail to connect or find a file, but never with a usage error.
// The verbs `tunectl help PATH` lists under "Subcommands:", with their
// paths ("admin token create"); a verb without subcommands is a leaf.
void LeafVerbs(const std::string& path, std::vector<std::string>* leaves) {
  const std::string help = Tunectl("help " + path).output;
  const size_t at = help.find("Subcommands:\n");
  if (at == std::string::npos) {
    if (!path.empty()) leaves->push_back(path);
    return;
  }
  for (absl::string_view line : absl::StrSplit(help.substr(at + 13), '\n')) {
    if (!absl::ConsumePrefix(&line, "  ")) break;  // the section ends at a blank line
    const std::string verb(line.substr(0, line.find(' ')));
    LeafVerbs(path.empty() ? verb : path + " " + verb, leaves);
  }
}

TEST(TunectlBinaryTest, EveryHelpExampleIsAValidCommand) {
  TempDir dir;
  int examples = 0;
  // Every verb, in an order whose examples build on each other (a context
  // is set before it is used).
  const std::vector<std::string> verbs = {
      "submit", "watch", "status", "sweep", "cancel", "jobs", "trials", "profile", "best",
      "export", "import", "version", "health", "history", "compare", "help", "completion",
      "report", "workers", "validate", "admin token create", "admin token list",
      "admin token revoke", "admin invalidate", "admin release", "config get-contexts",
      "config set-context", "config current-context", "config use-context"};
  std::vector<std::string> leaves;
  LeafVerbs("", &leaves);
  for (const std::string& leaf : leaves) {
    EXPECT_NE(std::find(verbs.begin(), verbs.end(), leaf), verbs.end())
        << "tunectl " << leaf << " has no examples here";
  }
  for (const std::string& verb : verbs) {
    const std::string help = Tunectl(std::string("help ") + verb).output;
    const size_t at = help.find("Examples:\n");
    ASSERT_NE(at, std::string::npos) << verb << " has no examples:\n" << help;
    std::string joined = absl::StrReplaceAll(help.substr(at), {{"\\\n", " "}});
    for (absl::string_view line : absl::StrSplit(joined, '\n')) {
      line = absl::StripLeadingAsciiWhitespace(line);
      if (!absl::ConsumePrefix(&line, "tunectl ")) continue;
      std::string command(line.substr(0, line.find(" # ")));
      command = absl::StrReplaceAll(command, {{" > ", " >/dev/null #"}, {"~/", dir.path() + "/"}});
      ++examples;
      Outcome run = Shell("cd " + SourceDir() + " && TUNEFLEET_CONFIG=" + dir.path() +
                          "/config HOME=" + dir.path() + " " + BuildDir() +
                          "/bin/tunectl --timeout 1 " +
                          (absl::StrContains(command, "--server") ? "" : "--server 127.0.0.1:1 ") +
                          command);
      EXPECT_NE(run.exit_code, 2) << "tunectl " << command << "\n" << run.output;
    }
  }
  EXPECT_GE(examples, 40);
}

TEST(TunectlBinaryTest, OutputFormatsAVerbDoesNotPrintAreRefused) {
  Outcome run = Tunectl("--server 127.0.0.1:1 -o csv jobs");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("-o csv is not an output of 'jobs'"));
  run = Tunectl("--server 127.0.0.1:1 report j-1 -o json");  // not a file named json
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("the page goes to --out FILE"));
}

TEST(TunectlBinaryTest, UnreachableServerExitsSix) {
  Outcome run = Tunectl("--server 127.0.0.1:1 --timeout 2 workers");
  EXPECT_EQ(run.exit_code, 6) << run.output;
  EXPECT_THAT(run.output, HasSubstr("127.0.0.1:1"));
}

// Starts tunectl with `args`, sends it SIGINT once its output contains
// `interrupt_after` (never when empty), and collects its output.
Outcome TunectlInterrupted(std::vector<std::string> args,
                           const std::string& interrupt_after) {
  std::string binary = BuildDir() + "/bin/tunectl";
  args.insert(args.begin(), binary);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  Outcome run;
  bool sent = interrupt_after.empty();
  char buffer[4096];
  while (ssize_t n = read(fds[0], buffer, sizeof(buffer))) {
    if (n < 0) break;
    run.output.append(buffer, n);
    if (!sent && run.output.find(interrupt_after) != std::string::npos) {
      sent = kill(pid, SIGINT) == 0;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

class TunectlOnlineTest : public ::testing::Test {
 protected:
  FakeTuningService service_;
  FakeServer server_{&service_};
};

TEST_F(TunectlOnlineTest, TlsAgainstAPlaintextCoordinatorHasItsOwnMessageAndExitCode) {
  TempDir dir;
  ASSERT_EQ(Shell(SourceDir() + "/scripts/dev-ca.sh " + dir.path() + " coordinator").exit_code, 0);
  Outcome run = Tunectl("--server " + server_.address() + " --ca-file " + dir.path() +
                        "/ca.crt --timeout 3 workers");
  EXPECT_EQ(run.exit_code, 7) << run.output;
  EXPECT_THAT(run.output, HasSubstr("give --insecure"));
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("ssl_transport_security.cc")))
      << "gRPC core's own line";
}

TEST_F(TunectlOnlineTest, JsonPathPrintsOneFieldForScripts) {
  service_.AddJob("job-1", {MakeJob("job-1", v1::JOB_STATE_SUCCEEDED, 2, 2)});
  Outcome run = Tunectl("--insecure --server " + server_.address() +
                        " status job-1 -o 'jsonpath={.state}'");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "SUCCEEDED\n");
  run = Tunectl("--insecure --server " + server_.address() +
                " status job-1 -o 'jsonpath={.no_such_field}'");
  EXPECT_EQ(run.exit_code, 5) << run.output;
  EXPECT_THAT(run.output, HasSubstr("nothing at .no_such_field"));
  EXPECT_EQ(Tunectl("--server 127.0.0.1:1 -o jsonpath={.x} report j-1").exit_code, 2);
}

TEST_F(TunectlOnlineTest, CompletionOffersTheCoordinatorsJobsAndKernels) {
  service_.AddJob("job-1", {MakeJob("job-1", v1::JOB_STATE_SUCCEEDED, 2, 2)});
  service_.AddJob("job-2", {MakeJob("job-2", v1::JOB_STATE_RUNNING, 1, 2)});
  TempDir dir;
  const std::string env = "TUNEFLEET_SERVER=" + server_.address() +
                          " TUNEFLEET_INSECURE=1 TUNEFLEET_COMPLETION_TIMEOUT=10 HOME=" +
                          dir.path();
  const std::string self = BuildDir() + "/bin/tunectl";
  EXPECT_EQ(BashComplete("bash", self + " status job", env).output, "job-1 job-2\n");
  EXPECT_EQ(BashComplete("bash", self + " trials job-2", env).output, "job-2\n");
  EXPECT_EQ(BashComplete("bash", self + " -o j", env).output, "json jsonpath=\n");
  // A name that is no plain word (here one a shell would expand) is left out.
  const std::string hostile = "$(touch " + dir.path() + "/ran)";
  service_.AddJob(hostile, {MakeJob(hostile, v1::JOB_STATE_RUNNING, 1, 2)});
  EXPECT_EQ(BashComplete("bash", self + " status job", env).output, "job-1 job-2\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/ran"));
  // No coordinator: no ids, and no error on the terminal.
  EXPECT_EQ(BashComplete("bash", self + " status job",
                         "TUNEFLEET_SERVER=127.0.0.1:1 TUNEFLEET_INSECURE=1 HOME=" + dir.path())
                .output,
            "");
}

TEST_F(TunectlOnlineTest, SigintDuringWatchExits130AndLeavesTheJob) {
  Outcome run = TunectlInterrupted(
      {"watch", kEndlessJob, "--insecure", "--server", server_.address()}, "RUNNING 1/10");
  EXPECT_EQ(run.exit_code, 130) << run.output;
  EXPECT_THAT(run.output, HasSubstr("tunectl cancel endless"));
}

TEST_F(TunectlOnlineTest, SubmitWaitPrintsTheFinalJobAsJson) {
  service_.AddJob("job-1", {MakeJob("job-1", v1::JOB_STATE_RUNNING, 1, 2),
                            MakeJob("job-1", v1::JOB_STATE_SUCCEEDED, 2, 2)});
  Outcome run = TunectlInterrupted(
      {"submit", SourceDir() + "/kernels/cpu/matmul", "--shape",
       "M=64,N=64,K=64", "--wait", "-o", "json", "--insecure", "--server", server_.address()},
      /*interrupt_after=*/"");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("\"state\": \"SUCCEEDED\""));
}

TEST_F(TunectlOnlineTest, EscapeBytesFromTheServerNeverReachTheTerminal) {
  v1::Job job = MakeJob("evil", v1::JOB_STATE_FAILED, 1, 1);
  job.set_kernel_name("\x1b]0;owned\x07matmul");
  job.set_reason("line one\n\x1b[2Jcleared");  // proto3 strings are valid UTF-8
  v1::Target* target = job.add_targets();
  target->set_device_model("cpu\xc2\x9b" "31m");
  service_.AddJob("evil", {job});
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"status", "evil"}, std::vector<std::string>{"jobs"},
        std::vector<std::string>{"status", "\x1b[31mnope"}}) {
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), {"--insecure", "--server", server_.address()});
    Outcome run = TunectlInterrupted(argv, /*interrupt_after=*/"");
    EXPECT_EQ(run.output.find_first_of("\x1b\x07\xff"), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("\xc2\x9b"), std::string::npos) << run.output;
    if (args[0] == "jobs" || args[1] == "evil") {
      EXPECT_THAT(run.output, HasSubstr("\\x1b]0;owned\\x07matmul")) << run.output;
    }
  }
}

// tunectl with `args` and only the config file `config` (no TUNEFLEET_*
// variable of the test's own environment).
Outcome TunectlWithConfig(const std::string& config, const std::string& args) {
  return Shell("env -u TUNEFLEET_SERVER -u TUNEFLEET_TOKEN "
                 "-u TUNEFLEET_CA_FILE -u TUNEFLEET_INSECURE TUNEFLEET_CONFIG=" + config + " " +
                 BuildDir() + "/bin/tunectl " + args);
}

TEST_F(TunectlOnlineTest, ContextsChooseTheCoordinator) {
  service_.AddJob("job-1", {MakeJob("job-1", v1::JOB_STATE_SUCCEEDED, 2, 2)});
  TempDir dir;
  const std::string config = dir.path() + "/tunefleet/config";
  Outcome run = TunectlWithConfig(config, "config set-context dev --server " +
                                              server_.address() + " --insecure");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  run = TunectlWithConfig(config, "config set-context prod --server 127.0.0.1:1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(TunectlWithConfig(config, "config use-context dev").exit_code, 0);
  EXPECT_EQ(TunectlWithConfig(config, "config current-context").output, "dev\n");
  run = TunectlWithConfig(config, "config get-contexts");
  EXPECT_THAT(run.output, HasSubstr("*        dev   " + server_.address() + "\n"));
  EXPECT_THAT(run.output, HasSubstr("prod"));
  run = TunectlWithConfig(config, "status job-1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("SUCCEEDED"));
  run = TunectlWithConfig(config, "status job-1 --context prod --timeout 2");
  EXPECT_EQ(run.exit_code, 6) << run.output;  // unreachable
  EXPECT_THAT(run.output, HasSubstr("127.0.0.1:1"));
  run = TunectlWithConfig(config, "--context staging status job-1");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("no context 'staging'"));
  // TUNEFLEET_CONTEXT picks the context, as it does for the C++ and Python
  // clients (tests/data/client_settings_cases.json).
  run = Shell("TUNEFLEET_CONTEXT=prod TUNEFLEET_CONFIG=" + config + " " + BuildDir() +
              "/bin/tunectl --timeout 2 status job-1");
  EXPECT_EQ(run.exit_code, 6) << run.output;
  EXPECT_THAT(run.output, HasSubstr("127.0.0.1:1"));
}

// A context's key wins over the same key at the top of the file.
TEST_F(TunectlOnlineTest, TheContextWinsOverTheTopLevel) {
  service_.AddJob("job-1", {MakeJob("job-1", v1::JOB_STATE_SUCCEEDED, 2, 2)});
  TempDir dir;
  const std::string config = dir.path() + "/config";
  std::ofstream(config) << "current-context = \"dev\"\nserver = \"127.0.0.1:1\"\n"
                        << "insecure = true\n\n[dev]\nserver = \"" << server_.address()
                        << "\"\n";
  Outcome run = Shell("TUNEFLEET_CONFIG=" + config + " " + BuildDir() +
                      "/bin/tunectl --timeout 2 status job-1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("SUCCEEDED"));
}

TEST(TunectlBinaryTest, AnUnknownKeyInTheConfigFileIsNamed) {
  TempDir dir;
  const std::string config = dir.path() + "/config";
  std::ofstream(config) << "server = localhost:1\ntimout = 3\n";
  Outcome run = TunectlWithConfig(config, "workers");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("unknown key 'timout'"));
  EXPECT_THAT(run.output, HasSubstr(config));
  run = TunectlWithConfig(dir.path() + "/missing", "--config " + dir.path() + "/none workers");
  EXPECT_EQ(run.exit_code, 2) << run.output;
}

}  // namespace
}  // namespace tunefleet::testing
