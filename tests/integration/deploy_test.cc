// deploy/ as an operator uses it: `cmake --install` into a scratch root,
// the systemd units verified and rated by systemd-analyze, the sysusers.d
// file applied by systemd-sysusers, the Kubernetes manifests parsed and
// checked, every metric a Grafana panel or an alert queries exported by a
// real coordinator or worker, and a real Prometheus scraping both.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "bench/local_fleet.h"
#include "gtest/gtest.h"
#include "tests/support/scrape.h"
#include "tests/support/test_support.h"
#include "tunefleet/client.h"

namespace tunefleet::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::tunefleet::bench::Fleet;
using ::tunefleet::bench::FleetOptions;
using ::tunefleet::bench::RunProgram;
using ::tunefleet::bench::RunResult;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool HaveProgram(const std::string& name) {
  absl::StatusOr<RunResult> found =
      RunProgram({"sh", "-c", "command -v " + name + " >/dev/null"}, absl::Seconds(10));
  return found.ok() && found->exit.success();
}

// Runs `command` through sh with stderr folded into stdout.
RunResult Shell(const std::string& command) {
  absl::StatusOr<RunResult> run = RunProgram({"sh", "-c", command + " 2>&1"}, absl::Minutes(2));
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? *run : RunResult();
}

// `cmake --install` of the build into `root`/usr, with the host's own units
// beside ours so that systemd-analyze finds the targets they name.
void InstallInto(const std::string& root) {
  RunResult install =
      Shell(absl::StrCat("cmake --install ", BuildDir(), " --prefix ", root, "/usr"));
  ASSERT_TRUE(install.exit.success()) << install.out;
}

class DeployTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(DeployTest, InstallPutsProgramsUnitsUserAndDocsInTheUsualPlaces) {
  InstallInto(dir_.path());
  for (const char* path :
       {"/usr/bin/tunefleet-coordinator", "/usr/bin/tunefleet-worker", "/usr/bin/tunectl",
        "/usr/lib/systemd/system/tunefleet-coordinator.service",
        "/usr/lib/systemd/system/tunefleet-worker.service", "/usr/lib/sysusers.d/tunefleet.conf",
        "/usr/share/doc/tunefleet/operations.md", "/usr/share/tunefleet/grafana/worker.json",
        "/usr/share/tunefleet/prometheus/tunefleet-rules.yml",
        "/usr/share/tunefleet/k8s/coordinator.yaml"}) {
    EXPECT_TRUE(fs::exists(dir_.path() + path)) << path << " not installed";
  }
  EXPECT_EQ(access((dir_.path() + "/usr/bin/tunefleet-coordinator").c_str(), X_OK), 0);
}

TEST_F(DeployTest, SystemdUnitsVerifyCleanlyAndScoreAtMostFive) {
  if (!HaveProgram("systemd-analyze")) GTEST_SKIP() << "systemd-analyze is not installed";
  InstallInto(dir_.path());
  RunResult copied = Shell(absl::StrCat("cp -r --no-clobber /usr/lib/systemd/system/. ",
                                        dir_.path(), "/usr/lib/systemd/system/"));
  ASSERT_TRUE(copied.exit.success()) << copied.out;
  for (const std::string unit : {"tunefleet-coordinator.service", "tunefleet-worker.service"}) {
    RunResult verify = Shell(absl::StrCat("systemd-analyze verify --man=no --root=", dir_.path(),
                                          " /usr/lib/systemd/system/", unit));
    EXPECT_TRUE(verify.exit.success()) << unit << ": " << verify.out;
    EXPECT_EQ(verify.out, "") << unit << " has warnings";  // unknown keys only warn
    RunResult security = Shell(absl::StrCat("systemd-analyze security --offline=true ",
                                            dir_.path(), "/usr/lib/systemd/system/", unit));
    std::smatch match;
    static const std::regex kOverall("Overall exposure level for [^:]+: ([0-9.]+)");
    ASSERT_TRUE(std::regex_search(security.out, match, kOverall)) << security.out;
    double score = 10;
    ASSERT_TRUE(absl::SimpleAtod(match[1].str(), &score));
    EXPECT_LE(score, 5.0) << unit << "\n" << security.out;
  }
}

// The unit hands TUNEFLEET_DATABASE over through its environment file, and
// nothing on its command line overrides it; the installed coordinator opens
// the store that variable names.
TEST_F(DeployTest, CoordinatorUnitTakesItsStoreFromTheEnvironmentFile) {
  const std::string unit =
      Slurp(SourceDir() + "/deploy/systemd/tunefleet-coordinator.service");
  EXPECT_THAT(unit, HasSubstr("\nEnvironmentFile=-/etc/tunefleet/coordinator.env\n"));
  const size_t exec = unit.find("\nExecStart=");
  ASSERT_NE(exec, std::string::npos);
  const std::string command = unit.substr(exec, unit.find("\n\n", exec) - exec);
  EXPECT_THAT(command, ::testing::Not(HasSubstr("--database")));

  InstallInto(dir_.path());
  const std::string store = dir_.path() + "/from-environment.db";
  SubprocessOptions options;
  options.argv = {dir_.path() + "/usr/bin/tunefleet-coordinator", "--listen", "127.0.0.1:0",
                  "--metrics-listen", "", "--insecure", "--data-dir", dir_.path() + "/data",
                  "--address-file", dir_.path() + "/address"};
  options.env = {{"TUNEFLEET_DATABASE", "sqlite://" + store}};
  options.stdout_mode = SubprocessOptions::Output::kNull;
  absl::StatusOr<std::unique_ptr<Subprocess>> coordinator = Subprocess::Start(options);
  ASSERT_OK(coordinator);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!fs::exists(dir_.path() + "/address") && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(dir_.path() + "/address")) << "the coordinator did not start";
  EXPECT_TRUE(fs::exists(store));
  EXPECT_FALSE(fs::exists(dir_.path() + "/data/tunefleet.db"));
  (*coordinator)->Kill(SIGTERM);
  absl::StatusOr<ExitInfo> exit = (*coordinator)->Wait(absl::Seconds(30));
  ASSERT_OK(exit);
  EXPECT_TRUE(exit->success()) << exit->ToString();
}

TEST_F(DeployTest, SysusersFileCreatesTheServiceUser) {
  if (!HaveProgram("systemd-sysusers")) GTEST_SKIP() << "systemd-sysusers is not installed";
  InstallInto(dir_.path());
  fs::create_directories(dir_.path() + "/etc");
  RunResult made = Shell(absl::StrCat("systemd-sysusers --root=", dir_.path(), " ", dir_.path(),
                                      "/usr/lib/sysusers.d/tunefleet.conf"));
  ASSERT_TRUE(made.exit.success()) << made.out;
  const std::string passwd = Slurp(dir_.path() + "/etc/passwd");
  EXPECT_THAT(passwd, ::testing::ContainsRegex("(^|\n)tunefleet:x:[0-9]+:[0-9]+:"));
  EXPECT_THAT(passwd, HasSubstr(":/var/lib/tunefleet:/usr/sbin/nologin"));
  EXPECT_THAT(Slurp(dir_.path() + "/etc/group"), HasSubstr("tunefleet:x:"));
}

// Every document of every file under deploy/k8s.
std::vector<YAML::Node> KubernetesDocuments() {
  std::vector<YAML::Node> documents;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/deploy/k8s")) {
    if (entry.path().extension() != ".yaml" ||
        entry.path().filename() == "kustomization.yaml") {
      continue;
    }
    for (const YAML::Node& document : YAML::LoadAllFromFile(entry.path().string())) {
      if (document.IsMap()) documents.push_back(document);
    }
  }
  return documents;
}

YAML::Node Find(const std::vector<YAML::Node>& documents, const std::string& kind) {
  for (const YAML::Node& document : documents) {
    if (document["kind"].as<std::string>() == kind) return document;
  }
  ADD_FAILURE() << "no " << kind;
  return YAML::Node();
}

std::map<std::string, std::string> Labels(const YAML::Node& node) {
  return node.IsMap() ? node.as<std::map<std::string, std::string>>()
                      : std::map<std::string, std::string>();
}

TEST_F(DeployTest, KubernetesManifestsHaveWhatTheFleetNeeds) {
  std::vector<YAML::Node> documents;
  ASSERT_NO_THROW(documents = KubernetesDocuments());
  for (const YAML::Node& document : documents) {
    EXPECT_TRUE(document["apiVersion"].IsScalar());
    EXPECT_TRUE(document["kind"].IsScalar());
    EXPECT_TRUE(document["metadata"]["name"].IsScalar());
  }
  const YAML::Node coordinator = Find(documents, "Deployment");
  EXPECT_EQ(coordinator["spec"]["replicas"].as<int>(), 2);  // a leader and a standby
  EXPECT_EQ(coordinator["spec"]["strategy"]["type"].as<std::string>(), "Recreate");
  const YAML::Node pod = coordinator["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/scrape"].as<std::string>(), "true");
  EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/port"].as<std::string>(), "9464");
  const YAML::Node container = pod["spec"]["containers"][0];
  bool database_from_secret = false;
  for (const YAML::Node& env : container["env"]) {
    database_from_secret |= env["name"].as<std::string>() == "TUNEFLEET_DATABASE" &&
                            env["valueFrom"]["secretKeyRef"]["name"].IsScalar();
  }
  EXPECT_TRUE(database_from_secret);
  for (const YAML::Node& arg : container["args"]) {
    EXPECT_FALSE(absl::StartsWith(arg.as<std::string>(), "--database="))
        << "a database URL on the command line";
  }
  EXPECT_TRUE(pod["spec"]["securityContext"]["runAsNonRoot"].as<bool>());
  const YAML::Node service = Find(documents, "Service");
  EXPECT_EQ(Labels(service["spec"]["selector"]), Labels(pod["metadata"]["labels"]));
  EXPECT_EQ(Labels(coordinator["spec"]["selector"]["matchLabels"]),
            Labels(pod["metadata"]["labels"]));
  bool grpc_port = false;
  for (const YAML::Node& port : service["spec"]["ports"]) grpc_port |= port["port"].as<int>() == 7070;
  EXPECT_TRUE(grpc_port);
  const YAML::Node worker = Find(documents, "DaemonSet");
  const YAML::Node worker_pod = worker["spec"]["template"];
  EXPECT_GE(worker_pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].as<int>(),
            1);
  EXPECT_EQ(worker_pod["metadata"]["annotations"]["prometheus.io/scrape"].as<std::string>(),
            "true");
  EXPECT_EQ(Labels(worker["spec"]["selector"]["matchLabels"]),
            Labels(worker_pod["metadata"]["labels"]));
  if (HaveProgram("kubectl")) {  // renders offline: the kustomization holds together
    RunResult rendered = Shell("kubectl kustomize " + SourceDir() + "/deploy/k8s");
    EXPECT_TRUE(rendered.exit.success()) << rendered.out;
    EXPECT_THAT(rendered.out, HasSubstr("kind: DaemonSet"));
  }
}

// The volume named `name` of a pod spec, and where its container mounts it.
YAML::Node Volume(const YAML::Node& pod_spec, const std::string& name) {
  for (const YAML::Node& volume : pod_spec["volumes"]) {
    if (volume["name"].as<std::string>() == name) return volume;
  }
  ADD_FAILURE() << "no volume " << name;
  return YAML::Node();
}

std::string MountPath(const YAML::Node& container, const std::string& volume) {
  for (const YAML::Node& mount : container["volumeMounts"]) {
    if (mount["name"].as<std::string>() == volume) return mount["mountPath"].as<std::string>();
  }
  ADD_FAILURE() << "volume " << volume << " not mounted";
  return "";
}

// The value of `--flag=VALUE` among a container's args.
std::string FlagValue(const YAML::Node& container, const std::string& flag) {
  for (const YAML::Node& arg : container["args"]) {
    const std::string text = arg.as<std::string>();
    if (absl::StartsWith(text, flag + "=")) return text.substr(flag.size() + 1);
  }
  ADD_FAILURE() << "no " << flag;
  return "";
}

// What kept the fleet of deploy/k8s from starting, and from having one
// principal per worker: the admin token's mode, the certificates' source,
// the readiness probe.
TEST_F(DeployTest, KubernetesSecretsCertificatesAndProbesLetTheFleetStart) {
  std::vector<YAML::Node> documents;
  ASSERT_NO_THROW(documents = KubernetesDocuments());
  const YAML::Node coordinator = Find(documents, "Deployment")["spec"]["template"]["spec"];
  const YAML::Node container = coordinator["containers"][0];
  // The token Secret is group-readable under the pod's fsGroup, which the
  // coordinator accepts as its own group (common/private_file.h).
  const YAML::Node token = Volume(coordinator, "admin-token");
  EXPECT_EQ(token["secret"]["defaultMode"].Scalar(), "0440");
  EXPECT_EQ(coordinator["securityContext"]["fsGroup"].as<int>(),
            coordinator["securityContext"]["runAsGroup"].as<int>());
  EXPECT_TRUE(absl::StartsWith(FlagValue(container, "--admin-token-file"),
                               MountPath(container, "admin-token") + "/"));
  // Its certificate, key and client CA from the Secret cert-manager writes.
  const YAML::Node certificate = Find(documents, "Certificate");
  const YAML::Node issuer = Find(documents, "Issuer");
  EXPECT_EQ(Volume(coordinator, "tls")["secret"]["secretName"].as<std::string>(),
            certificate["spec"]["secretName"].as<std::string>());
  for (const char* flag : {"--tls-cert", "--tls-key", "--tls-client-ca"}) {
    EXPECT_TRUE(absl::StartsWith(FlagValue(container, flag), MountPath(container, "tls") + "/"))
        << flag;
  }
  EXPECT_EQ(certificate["spec"]["issuerRef"]["name"].as<std::string>(),
            issuer["metadata"]["name"].as<std::string>());
  bool localhost = false;
  for (const YAML::Node& name : certificate["spec"]["dnsNames"]) {
    localhost |= name.as<std::string>() == "localhost";
  }
  EXPECT_TRUE(localhost) << "the readiness probe connects to 127.0.0.1";
  // Ready when gRPC health says SERVING, over the same TLS.
  std::string probe;
  for (const YAML::Node& word : container["readinessProbe"]["exec"]["command"]) {
    probe += word.as<std::string>() + " ";
  }
  EXPECT_THAT(probe, HasSubstr("/usr/bin/tunectl "));
  EXPECT_THAT(probe, HasSubstr(" health "));
  EXPECT_THAT(probe, HasSubstr("--ca-file=" + MountPath(container, "tls") + "/ca.crt"));
  // One certificate per worker pod: the csi-driver's, named after the pod.
  const YAML::Node worker = Find(documents, "DaemonSet")["spec"]["template"]["spec"];
  const YAML::Node worker_tls = Volume(worker, "tls");
  EXPECT_FALSE(worker_tls["secret"].IsDefined()) << "a Secret is one certificate for all";
  EXPECT_EQ(worker_tls["csi"]["driver"].as<std::string>(), "csi.cert-manager.io");
  const YAML::Node attributes = worker_tls["csi"]["volumeAttributes"];
  EXPECT_THAT(attributes["csi.cert-manager.io/common-name"].as<std::string>(),
              HasSubstr("${POD_NAME}"));
  EXPECT_EQ(attributes["csi.cert-manager.io/issuer-name"].as<std::string>(),
            issuer["metadata"]["name"].as<std::string>());
  EXPECT_THAT(attributes["csi.cert-manager.io/key-usages"].as<std::string>(),
              HasSubstr("client auth"));
  const YAML::Node worker_container = worker["containers"][0];
  for (const char* flag : {"--tls-cert", "--tls-key", "--tls-ca"}) {
    EXPECT_TRUE(absl::StartsWith(FlagValue(worker_container, flag),
                                 MountPath(worker_container, "tls") + "/"))
        << flag;
  }
  // What bubblewrap needs in a container (packages_test.sh runs the image's
  // worker so): user namespaces past the default seccomp profile, and a
  // /proc of its own, which a masked /proc refuses (only in a pod of its
  // own user namespace, for Kubernetes).
  EXPECT_EQ(worker["securityContext"]["seccompProfile"]["type"].as<std::string>(), "Unconfined");
  EXPECT_EQ(worker_container["securityContext"]["procMount"].as<std::string>(), "Unmasked");
  EXPECT_FALSE(worker["hostUsers"].as<bool>());
  EXPECT_FALSE(worker_container["securityContext"]["allowPrivilegeEscalation"].as<bool>());
}

// Every field of every built-in object is one the Kubernetes API knows at
// that place, of its type, and none it requires is missing; the checker
// itself refuses a misspelt and a missing field.
TEST_F(DeployTest, KubernetesManifestsMatchTheApiSchema) {
  if (!Shell("/usr/bin/python3 -c 'import kubernetes, yaml'").exit.success()) {
    GTEST_SKIP() << "the Kubernetes schema is not installed (Debian: python3-kubernetes)";
  }
  const std::string check = SourceDir() + "/tests/integration/k8s_schema_check.py";
  std::string manifests;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/deploy/k8s")) {
    if (entry.path().filename() != "kustomization.yaml") {
      absl::StrAppend(&manifests, " ", entry.path().string());
    }
  }
  RunResult checked = Shell("/usr/bin/python3 " + check + manifests);
  EXPECT_TRUE(checked.exit.success()) << checked.out;
  EXPECT_THAT(checked.out, HasSubstr(" 0 problems"));
  EXPECT_THAT(checked.out, ::testing::Not(HasSubstr(" 0 documents checked")));

  std::string broken = Slurp(SourceDir() + "/deploy/k8s/coordinator.yaml");
  ASSERT_THAT(broken, HasSubstr("containerPort:"));
  absl::StrReplaceAll({{"containerPort:", "port:"}}, &broken);
  const std::string path = dir_.path() + "/coordinator.yaml";
  std::ofstream(path) << broken;
  RunResult refused = Shell("/usr/bin/python3 " + check + " " + path);
  EXPECT_FALSE(refused.exit.success()) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("port: no such field of V1ContainerPort"));
  EXPECT_THAT(refused.out, HasSubstr("`container_port`, must not be `None`"));
}

TEST_F(DeployTest, AlertRulesPassPromtoolAndTheirUnitTests) {
  if (!HaveProgram("promtool")) GTEST_SKIP() << "promtool is not installed (Debian: prometheus)";
  const std::string dir = SourceDir() + "/deploy/prometheus";
  RunResult checked = Shell("promtool check rules " + dir + "/tunefleet-rules.yml");
  EXPECT_TRUE(checked.exit.success()) << checked.out;
  RunResult tested = Shell("promtool test rules " + dir + "/tunefleet-rules-test.yml");
  EXPECT_TRUE(tested.exit.success()) << tested.out;
}

// Every PromQL expression of the Grafana dashboards, "$var" unresolved.
std::vector<std::string> DashboardExpressions() {
  std::vector<std::string> exprs;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/deploy/grafana")) {
    const nlohmann::json dashboard = nlohmann::json::parse(Slurp(entry.path().string()));
    EXPECT_TRUE(dashboard.contains("uid") && dashboard.contains("title")) << entry.path();
    for (const nlohmann::json& panel : dashboard.at("panels")) {
      for (const nlohmann::json& target : panel.at("targets")) {
        exprs.push_back(target.at("expr").get<std::string>());
      }
    }
  }
  return exprs;
}

std::vector<std::string> RuleExpressions(std::set<std::string>* recorded) {
  std::vector<std::string> exprs;
  const YAML::Node rules =
      YAML::LoadFile(SourceDir() + "/deploy/prometheus/tunefleet-rules.yml");
  for (const YAML::Node& group : rules["groups"]) {
    for (const YAML::Node& rule : group["rules"]) {
      exprs.push_back(rule["expr"].as<std::string>());
      if (rule["record"]) recorded->insert(rule["record"].as<std::string>());
    }
  }
  return exprs;
}

// The metric names an expression reads (tunefleet_*, process_*, and
// recording rules' tunefleet:* names).
std::set<std::string> MetricNames(const std::string& expr) {
  static const std::regex kName("\\b((tunefleet|process)[_:][a-zA-Z0-9_:]*)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kName);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1].str());
  }
  return names;
}

// The sample names an exposition holds, and the families it declares.
void AddNames(const std::string& text, std::set<std::string>* names) {
  for (const auto& [series, value] : ParseSamples(text)) {
    names->insert(series.substr(0, series.find('{')));
  }
  for (const std::string& family : ParseFamilies(text)) names->insert(family);
}

std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

// A port free now on 127.0.0.1 (for programs that cannot report theirs).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t size = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size);
  close(fd);
  return ntohs(addr.sin_port);
}

class ScrapedFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FleetOptions options;
    options.bin_dir = BuildDir() + "/bin";
    options.data_dir = dir_.path();
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_OK(fleet_->StartCoordinator());
    ASSERT_OK(fleet_->StartWorker());
    ClientOptions client_options;
    client_options.target = fleet_->address();
    client_options.insecure = true;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(client_options);
    ASSERT_OK(client);
    SubmitRequest request;
    request.kernel_dir = SourceDir() + "/kernels/cpu/matmul";
    request.shape = "M=96,N=96,K=96";
    request.config_set = "quick";
    absl::StatusOr<Job> job = (*client)->Submit(request);
    ASSERT_OK(job);
    absl::StatusOr<Job> done = (*client)->Watch(job->id, [](const Job&) {});
    ASSERT_OK(done);
    ASSERT_EQ(done->state, JobState::kSucceeded) << done->reason;
    absl::StatusOr<std::string> worker = fleet_->WorkerMetricsAddress(0);
    ASSERT_OK(worker);
    worker_metrics_ = *worker;
  }

  TempDir dir_;
  std::unique_ptr<Fleet> fleet_;
  std::string worker_metrics_;
};

TEST_F(ScrapedFleetTest, EveryMetricADashboardOrAlertQueriesIsExported) {
  std::set<std::string> exported;
  for (const std::string& address : {fleet_->metrics_address(), worker_metrics_}) {
    absl::StatusOr<std::string> text = HttpGet(address, "/metrics");
    ASSERT_OK(text);
    AddNames(*text, &exported);
  }
  std::set<std::string> recorded;
  std::vector<std::string> exprs = RuleExpressions(&recorded);
  const std::vector<std::string> panels = DashboardExpressions();
  ASSERT_GE(panels.size(), 20u);
  exprs.insert(exprs.end(), panels.begin(), panels.end());
  // A CPU worker has no SM clock, so it exports no series of it; the gpu
  // tier's worker does. Its name is checked against the exporter's source.
  const std::set<std::string> gpu_only = {"tunefleet_worker_sm_clock_mhz"};
  const std::string exporter = Slurp(SourceDir() + "/worker/prometheus_metrics.cc");
  std::set<std::string> queried;
  for (const std::string& expr : exprs) {
    for (const std::string& name : MetricNames(expr)) {
      queried.insert(name);
      if (gpu_only.contains(name)) {
        EXPECT_THAT(exporter, HasSubstr("\"" + name + "\""));
        continue;
      }
      EXPECT_TRUE(exported.contains(name) || recorded.contains(name))
          << name << " (in " << expr << ") is exported by neither process";
    }
  }
  // The check has teeth: both processes' metrics are among those queried.
  EXPECT_TRUE(queried.contains("tunefleet_worker_trials_total"));
  EXPECT_TRUE(queried.contains("tunefleet_coordinator_jobs"));
  EXPECT_TRUE(queried.contains("tunefleet_coordinator_profile_requests_pending"));
  EXPECT_TRUE(queried.contains("tunefleet_coordinator_profiles_total"));
}

TEST_F(ScrapedFleetTest, RealPrometheusScrapesTheCoordinatorAndAWorker) {
  if (!HaveProgram("prometheus")) {
    GTEST_SKIP() << "the prometheus binary is not installed (Debian: prometheus)";
  }
  const std::string config = dir_.path() + "/prometheus.yml";
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        << "rule_files:\n  - " << SourceDir()
                        << "/deploy/prometheus/tunefleet-rules.yml\n"
                        << "scrape_configs:\n"
                        << "  - job_name: tunefleet-coordinator\n    static_configs:\n"
                        << "      - targets: [\"" << fleet_->metrics_address() << "\"]\n"
                        << "  - job_name: tunefleet-worker\n    static_configs:\n"
                        << "      - targets: [\"" << worker_metrics_ << "\"]\n";
  const std::string web = absl::StrCat("127.0.0.1:", FreePort());
  SubprocessOptions options;
  options.argv = {"prometheus", "--config.file=" + config,
                  "--storage.tsdb.path=" + dir_.path() + "/tsdb",
                  "--web.listen-address=" + web};
  options.stdout_mode = SubprocessOptions::Output::kNull;
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = dir_.path() + "/prometheus.log";
  absl::StatusOr<std::unique_ptr<Subprocess>> prometheus = Subprocess::Start(options);
  ASSERT_OK(prometheus);
  auto query = [&](const std::string& promql) -> nlohmann::json {
    absl::StatusOr<std::string> body = HttpGet(web, "/api/v1/query?query=" + UrlEncode(promql));
    if (!body.ok()) return nlohmann::json();
    return nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  };
  // Both targets up, and a tunefleet metric of each stored.
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  auto up_count = [&] {
    nlohmann::json up = query("sum(up{job=~\"tunefleet-.*\"})");
    if (!up.is_object() || up.value("status", "") != "success" ||
        up["data"]["result"].empty()) {
      return 0.0;
    }
    return std::stod(up["data"]["result"][0]["value"][1].get<std::string>());
  };
  while (up_count() < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(200));
  ASSERT_EQ(up_count(), 2) << Slurp(options.stderr_path);
  nlohmann::json coordinator = query("tunefleet_coordinator_info");
  ASSERT_EQ(coordinator.value("status", ""), "success");
  EXPECT_EQ(coordinator["data"]["result"].size(), 1u) << coordinator.dump();
  nlohmann::json trials = query("tunefleet_worker_trials_total{outcome=\"ok\"}");
  ASSERT_EQ(trials.value("status", ""), "success");
  ASSERT_EQ(trials["data"]["result"].size(), 1u) << trials.dump();
  EXPECT_GT(std::stod(trials["data"]["result"][0]["value"][1].get<std::string>()), 0);
  // The benchmark child said where its trials' time went.
  nlohmann::json sampling = query("tunefleet_worker_trial_phase_seconds_total{phase=\"sampling\"}");
  ASSERT_EQ(sampling.value("status", ""), "success");
  ASSERT_EQ(sampling["data"]["result"].size(), 1u) << sampling.dump();
  EXPECT_GT(std::stod(sampling["data"]["result"][0]["value"][1].get<std::string>()), 0);
  // Every dashboard expression is PromQL Prometheus accepts.
  for (const std::string& expr : DashboardExpressions()) {
    const std::string resolved = absl::StrReplaceAll(expr, {{"$instance", ".*"}});
    nlohmann::json answer = query(resolved);
    EXPECT_EQ(answer.value("status", ""), "success") << expr << ": " << answer.dump();
  }
  (*prometheus)->Kill(SIGTERM);
  EXPECT_OK((*prometheus)->Wait(absl::Seconds(30)));
}

}  // namespace
}  // namespace tunefleet::testing
