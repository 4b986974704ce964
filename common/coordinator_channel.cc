#include "common/coordinator_channel.h"

#include <arpa/inet.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tunefleet {
namespace {

enum class Family { kNone, kIpv4, kIpv6 };

// The family of "a.b.c.d:port" or "[v6]:port"; kNone for anything else.
Family FamilyOf(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == address.size()) return Family::kNone;
  const std::string host(address.substr(0, colon));
  unsigned char bytes[16];
  if (inet_pton(AF_INET, host.c_str(), bytes) == 1) return Family::kIpv4;
  absl::string_view bracketed = host;
  if (absl::ConsumePrefix(&bracketed, "[") && absl::ConsumeSuffix(&bracketed, "]") &&
      inet_pton(AF_INET6, std::string(bracketed).c_str(), bytes) == 1) {
    return Family::kIpv6;
  }
  return Family::kNone;
}

}  // namespace

absl::StatusOr<CoordinatorTarget> ParseCoordinatorTarget(const std::string& addresses) {
  std::vector<std::string> items = absl::StrSplit(addresses, ',');
  for (std::string& item : items) item = std::string(absl::StripAsciiWhitespace(item));
  for (const std::string& item : items) {
    if (item.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the coordinator address \"", addresses, "\" has an empty item"));
    }
  }
  if (items.size() == 1) return CoordinatorTarget{items[0], ""};
  const Family family = FamilyOf(items[0]);
  for (const std::string& item : items) {
    const Family each = FamilyOf(item);
    if (each == Family::kNone) {
      return absl::InvalidArgumentError(absl::StrCat(
          "coordinator \"", item, "\" of the list \"", addresses,
          "\" is not an IP address and port; give a list of IP addresses, or one DNS name "
          "that resolves to every coordinator"));
    }
    if (each != family) {
      return absl::InvalidArgumentError(
          absl::StrCat("the coordinator list \"", addresses, "\" mixes IPv4 and IPv6"));
    }
  }
  return CoordinatorTarget{
      absl::StrCat(family == Family::kIpv4 ? "ipv4:" : "ipv6:", absl::StrJoin(items, ",")),
      items[0]};
}

void UseLeadingCoordinator(const CoordinatorTarget& target, const std::string& service,
                           grpc::ChannelArguments* args) {
  args->SetServiceConfigJSON(absl::StrCat(
      R"({"loadBalancingConfig":[{"round_robin":{}}],"healthCheckConfig":{"serviceName":")",
      service, R"("}})"));
  if (!target.authority.empty()) args->SetString(GRPC_ARG_DEFAULT_AUTHORITY, target.authority);
  // A connection to a coordinator that answers no ping is dropped, so the
  // balancer stops sending it calls.
  args->SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kCoordinatorKeepaliveMs);
  args->SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kCoordinatorKeepaliveTimeoutMs);
  args->SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args->SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
}

}  // namespace tunefleet
