// Where tunectl takes its connection settings from.
#include "client/tunectl/connection.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace tunefleet::tunectl {
namespace {

using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::TempDir;

class ConnectionTest : public ::testing::Test {
 protected:
  Environment Env() {
    return [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  TempDir dir_;
  std::map<std::string, std::string> env_{{"HOME", "/nonexistent"}};
};

TEST_F(ConnectionTest, TheFlagWinsOverTheEnvironment) {
  ConnectionFlags flags;
  ClientOptions options;
  env_["TUNEFLEET_TOKEN_FILE"] = Write("env.token", "from-env-file\n");
  ASSERT_OK(ApplyConnectionSettings(flags, Env(), &options));
  EXPECT_EQ(options.ca_file, "");
  EXPECT_EQ(options.token, "from-env-file");
  env_["TUNEFLEET_CA_FILE"] = "/env/ca.pem";
  env_["TUNEFLEET_TOKEN"] = "from-env";
  ASSERT_OK(ApplyConnectionSettings(flags, Env(), &options));
  EXPECT_EQ(options.ca_file, "/env/ca.pem");
  EXPECT_EQ(options.token, "from-env");
  flags.ca_file = "/flag/ca.pem";
  flags.token_file = Write("flag.token", "  from-flag  \n");
  ASSERT_OK(ApplyConnectionSettings(flags, Env(), &options));
  EXPECT_EQ(options.ca_file, "/flag/ca.pem");
  EXPECT_EQ(options.token, "from-flag");
}

TEST_F(ConnectionTest, InsecureSendsNoToken) {
  env_["TUNEFLEET_TOKEN"] = "secret";
  env_["TUNEFLEET_INSECURE"] = "1";
  ClientOptions options;
  ASSERT_OK(ApplyConnectionSettings(ConnectionFlags{}, Env(), &options));
  EXPECT_TRUE(options.insecure);
  EXPECT_TRUE(options.token.empty());
}

TEST_F(ConnectionTest, TheDefaultTokenFileIsReadWhenItExists) {
  env_["XDG_CONFIG_HOME"] = dir_.path();
  ClientOptions options;
  ASSERT_OK(ApplyConnectionSettings(ConnectionFlags{}, Env(), &options));
  EXPECT_TRUE(options.token.empty());
  std::filesystem::create_directories(dir_.path() + "/tunefleet");
  Write("tunefleet/token", "tft_default\n");
  ASSERT_OK(ApplyConnectionSettings(ConnectionFlags{}, Env(), &options));
  EXPECT_EQ(options.token, "tft_default");
}

TEST_F(ConnectionTest, AMissingOrEmptyTokenFileIsAnError) {
  ConnectionFlags flags;
  flags.token_file = dir_.path() + "/missing";
  ClientOptions options;
  EXPECT_THAT(ApplyConnectionSettings(flags, Env(), &options),
              StatusIs(absl::StatusCode::kNotFound));
  flags.token_file = Write("empty", "\n");
  EXPECT_THAT(ApplyConnectionSettings(flags, Env(), &options),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace tunefleet::tunectl
