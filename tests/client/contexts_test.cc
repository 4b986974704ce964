// tunectl's config file and its contexts: the file edited by the `config`
// verbs, and read through CLI11 into flags.
#include "client/tunectl/contexts.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::tunectl {
namespace {

using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::TempDir;
using ::testing::HasSubstr;

const std::set<std::string> kVerbs = {"submit", "config"};
constexpr std::filesystem::perms kOwnerOnly =
    std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;

class ContextsTest : public ::testing::Test {
 protected:
  TempDir dir_;  // first: path_ is in it
  std::string path_ = dir_.path() + "/tunefleet/config";
  std::map<std::string, std::string> env_;

  Environment Env() {
    return [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
  }

  // The --server and --timeout a tiny app reads from the file, given `argv`.
  std::pair<std::string, double> Parse(std::vector<std::string> argv) {
    CLI::App app;
    std::string server, context, strategy;
    double timeout = 10;
    app.add_option("--server", server);
    app.add_option("--timeout", timeout);
    app.add_option("--context", context);
    app.add_flag("--insecure");
    app.add_option("--ca-file");
    app.add_subcommand("submit")->add_option("--strategy", strategy);
    app.add_subcommand("config");
    app.set_config("--config", path_);
    app.config_formatter(std::make_shared<ContextConfig>(
        kVerbs, [&app] { return app.get_option("--context")->as<std::string>(); }, Env()));
    app.allow_config_extras(CLI::config_extras_mode::error);
    argv.insert(argv.begin(), "tunectl");
    std::vector<const char*> args;
    for (const std::string& arg : argv) args.push_back(arg.c_str());
    app.parse(static_cast<int>(args.size()), args.data());
    return {server, timeout};
  }

  void WriteConfig(const std::string& text) {
    std::filesystem::create_directories(dir_.path() + "/tunefleet");
    std::ofstream(path_) << text;
  }
};

TEST_F(ContextsTest, SetContextCreatesTheFileAndUpdatesOnlyTheGivenKeys) {
  ASSERT_OK(SetContext(path_, "prod", {"prod:7070", "/ca.pem", "", false}, kVerbs));
  ASSERT_OK(SetContext(path_, "dev", {"localhost:7070", "", "", true}, kVerbs));
  ASSERT_OK(SetContext(path_, "prod", {"", "", "/prod.token", false}, kVerbs));
  absl::StatusOr<std::vector<ContextInfo>> contexts = ListContexts(path_, kVerbs);
  ASSERT_OK(contexts);
  ASSERT_EQ(contexts->size(), 2u);
  EXPECT_EQ((*contexts)[0].name, "prod");
  EXPECT_EQ((*contexts)[0].server, "prod:7070");
  EXPECT_EQ((*contexts)[1].server, "localhost:7070");
  absl::StatusOr<std::string> text = ReadFile(path_);
  ASSERT_OK(text);
  EXPECT_THAT(*text, HasSubstr("[prod]\nserver = \"prod:7070\"\nca_file = \"/ca.pem\"\n"
                               "token_file = \"/prod.token\"\n"));
  EXPECT_THAT(*text, HasSubstr("[dev]\nserver = \"localhost:7070\"\ninsecure = \"true\"\n"));
  EXPECT_EQ(std::filesystem::status(path_).permissions(), kOwnerOnly);
}

TEST_F(ContextsTest, SetContextRefusesNamesOfVerbsAndOddCharacters) {
  EXPECT_THAT(SetContext(path_, "submit", {}, kVerbs),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SetContext(path_, "a b", {}, kVerbs), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SetContext(path_, "", {}, kVerbs), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(ContextsTest, UseContextSetsTheCurrentOneBeforeTheSections) {
  EXPECT_THAT(CurrentContext(path_), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(SetContext(path_, "prod", {"prod:7070", "", "", false}, kVerbs));
  EXPECT_THAT(UseContext(path_, "nope", kVerbs), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(UseContext(path_, "prod", kVerbs));
  ASSERT_OK(SetContext(path_, "dev", {"localhost:1", "", "", false}, kVerbs));
  ASSERT_OK(UseContext(path_, "dev", kVerbs));
  EXPECT_EQ(*CurrentContext(path_), "dev");
  absl::StatusOr<std::string> text = ReadFile(path_);
  ASSERT_OK(text);
  EXPECT_EQ(text->find("current-context"), 0u) << *text;
  EXPECT_EQ(text->find("current-context", 1), std::string::npos) << *text;
  EXPECT_TRUE((*ListContexts(path_, kVerbs))[1].current);
}

TEST_F(ContextsTest, TheCurrentContextsKeysBecomeFlags) {
  WriteConfig("current-context = \"prod\"\ntimeout = 30\nsubmit.strategy = random\n\n"
              "[prod]\nserver = \"prod:7070\"\n\n[dev]\nserver = dev:7070\ninsecure = true\n");
  EXPECT_EQ(Parse({}), std::make_pair(std::string("prod:7070"), 30.0));
  EXPECT_EQ(Parse({"--context", "dev"}).first, "dev:7070");
  EXPECT_EQ(Parse({"--server", "flag:1"}).first, "flag:1");
  env_["TUNEFLEET_SERVER"] = "env:1";
  EXPECT_EQ(Parse({}).first, "");  // the environment's, which main reads, wins over the file
}

TEST_F(ContextsTest, AVerbsSectionHoldsItsFlagsAndIsNoContext) {
  WriteConfig("current-context = \"prod\"\n\n[submit]\nstrategy = \"random\"\n\n"
              "[prod]\nserver = \"prod:7070\"\n");
  absl::StatusOr<std::vector<ContextInfo>> contexts = ListContexts(path_, kVerbs);
  ASSERT_OK(contexts);
  ASSERT_EQ(contexts->size(), 1u);
  EXPECT_EQ((*contexts)[0].name, "prod");
  EXPECT_EQ((*contexts)[0].server, "prod:7070");
  EXPECT_TRUE((*contexts)[0].current);
  EXPECT_THAT(UseContext(path_, "submit", kVerbs), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(Parse({}).first, "prod:7070");
  try {
    Parse({"--context", "submit"});
    ADD_FAILURE() << "no error";
  } catch (const CLI::ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no context 'submit' in the config file (it has: prod)"));
  }
  ASSERT_OK(UseContext(path_, "prod", kVerbs));  // rewritten owner-only
  EXPECT_EQ(std::filesystem::status(path_).permissions(), kOwnerOnly);
}

TEST_F(ContextsTest, TheOlderFlatFileStillWorks) {
  WriteConfig("# comment\nserver = old:7070\nca_file = /ca.pem\n");
  EXPECT_EQ(Parse({}).first, "old:7070");
}

TEST_F(ContextsTest, UnknownKeysAndContextsAreErrorsNamingThem) {
  WriteConfig("[prod]\nserver = \"prod:7070\"\nservr = x\n");
  try {
    Parse({"--context", "prod"});
    ADD_FAILURE() << "no error";
  } catch (const CLI::ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("servr"));
  }
  try {
    Parse({"--context", "staging"});
    ADD_FAILURE() << "no error";
  } catch (const CLI::ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no context 'staging'"));
    EXPECT_THAT(e.what(), HasSubstr("prod"));
  }
}

TEST_F(ContextsTest, TheDefaultPathIsTheEnvironmentsElseTheUsersConfigDirectory) {
  env_["HOME"] = dir_.path();
  EXPECT_EQ(DefaultContextConfigPath(Env()), dir_.path() + "/.config/tunefleet/config");
  std::filesystem::create_directories(dir_.path() + "/.config/tunefleet");
  std::ofstream(dir_.path() + "/.config/tunefleet/tunectl.conf") << "server = x:1\n";
  EXPECT_EQ(DefaultContextConfigPath(Env()), dir_.path() + "/.config/tunefleet/tunectl.conf");
  env_["XDG_CONFIG_HOME"] = "/xdg";
  EXPECT_EQ(DefaultContextConfigPath(Env()), "/xdg/tunefleet/config");
  env_["TUNEFLEET_CONFIG"] = "/etc/t.conf";
  EXPECT_EQ(DefaultContextConfigPath(Env()), "/etc/t.conf");
}

}  // namespace
}  // namespace tunefleet::tunectl
