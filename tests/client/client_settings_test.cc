// Where a client finds its coordinator and credentials: the cases of
// tests/data/client_settings_cases.json, which the Python package's
// settings pass too (tests/python/test_offline.py).
#include "client/client_settings.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_support.h"

namespace tunefleet {
namespace {

namespace fs = std::filesystem;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::TempDir;

nlohmann::json Cases() {
  std::ifstream in(SourceDir() + "/tests/data/client_settings_cases.json");
  return nlohmann::json::parse(in)["cases"];
}

TEST(ClientSettingsTest, SharedCasesResolveAsTheyDoInPython) {
  const nlohmann::json cases = Cases();
  ASSERT_GE(cases.size(), 10u);
  for (const nlohmann::json& test : cases) {
    SCOPED_TRACE(test["name"].get<std::string>());
    TempDir dir;
    const auto expand = [&dir](const std::string& text) {
      return absl::StrReplaceAll(text, {{"$DIR", dir.path()}});
    };
    for (const auto& [relative, text] : test["files"].items()) {
      const fs::path path = fs::path(dir.path()) / relative;
      fs::create_directories(path.parent_path());
      std::ofstream(path) << expand(text.get<std::string>());
    }
    std::map<std::string, std::string> variables = {{"HOME", dir.path() + "/home"}};
    for (const auto& [name, value] : test["env"].items()) {
      variables[name] = expand(value.get<std::string>());
    }
    const Environment env = [&variables](const char* name) -> const char* {
      auto it = variables.find(name);
      return it == variables.end() ? nullptr : it->second.c_str();
    };
    absl::StatusOr<ClientOptions> options = ResolveClientOptions(env);
    if (test.contains("error")) {
      ASSERT_FALSE(options.ok());
      EXPECT_EQ(absl::StatusCodeToString(options.status().code()), test["error"].get<std::string>())
          << options.status();
      continue;
    }
    ASSERT_TRUE(options.ok()) << options.status();
    const nlohmann::json& expect = test["expect"];
    EXPECT_EQ(options->target, expect["server"].get<std::string>());
    EXPECT_EQ(options->insecure, expect["insecure"].get<bool>());
    EXPECT_EQ(options->ca_file, expand(expect["ca_file"].get<std::string>()));
    EXPECT_EQ(options->token, expect["token"].get<std::string>());
    EXPECT_EQ(options->deadline.count(), expect["deadline_ms"].get<int64_t>());
  }
}

}  // namespace
}  // namespace tunefleet
