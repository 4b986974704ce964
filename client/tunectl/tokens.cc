// tunectl admin token create|list|revoke.
#include <nlohmann/json.hpp>

#include "client/tunectl/commands.h"
#include "client/tunectl/exit_codes.h"

namespace tunefleet::tunectl {
namespace {

nlohmann::ordered_json TokenJson(const TokenInfo& info) {
  return {{"id", info.id},
          {"name", info.name},
          {"role", info.role},
          {"created_unix_ms", info.created_unix_ms},
          {"revoked_unix_ms", info.revoked_unix_ms}};
}

}  // namespace

int RunTokenCreate(Client& client, const std::string& name, const std::string& role,
                   const Console& console) {
  absl::StatusOr<IssuedToken> issued = client.CreateToken(name, role);
  if (!issued.ok()) return ReportError(console, issued.status());
  if (console.format == OutputFormat::kJson) {
    nlohmann::ordered_json json = TokenJson(issued->info);
    json["token"] = issued->token;
    *console.out << JsonDocument(json);
    return kExitOk;
  }
  Notes(console) << "token " << issued->info.id << " for " << issued->info.name << " (role "
               << issued->info.role << "); it is shown only this once\n";
  *console.out << issued->token << "\n";
  return kExitOk;
}

int RunTokenList(Client& client, const Console& console) {
  absl::StatusOr<std::vector<TokenInfo>> tokens = client.ListTokens();
  if (!tokens.ok()) return ReportError(console, tokens.status());
  if (console.format == OutputFormat::kJson) {
    nlohmann::ordered_json json = nlohmann::ordered_json::array();
    for (const TokenInfo& info : *tokens) json.push_back(TokenJson(info));
    *console.out << JsonDocument(json);
    return kExitOk;
  }
  std::vector<Row> rows;
  const absl::Time now = console.now();
  for (const TokenInfo& info : *tokens) {
    rows.push_back({info.id, info.name, info.role, FormatAge(info.created_unix_ms, now),
                    info.revoked_unix_ms == 0 ? "-" : FormatAge(info.revoked_unix_ms, now)});
  }
  *console.out << RenderTable({"ID", "NAME", "ROLE", "CREATED", "REVOKED"}, rows);
  return kExitOk;
}

int RunTokenRevoke(Client& client, const std::string& id, const Console& console) {
  absl::StatusOr<TokenInfo> revoked = client.RevokeToken(id);
  if (!revoked.ok()) return ReportError(console, revoked.status());
  Notes(console) << "revoked token " << revoked->id << " of " << revoked->name << "\n";
  return kExitOk;
}

}  // namespace tunefleet::tunectl
