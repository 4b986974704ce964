#include "server/token_service.h"

#include "common/grpc_status.h"
#include "server/auth_processor.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {
namespace {

v1::TokenInfo ToProto(const TokenRecord& record) {
  v1::TokenInfo info;
  info.set_id(record.id);
  info.set_name(record.name);
  info.set_role(record.role);
  info.set_created_unix_ms(record.created_unix_ms);
  info.set_revoked_unix_ms(record.revoked_unix_ms);
  return info;
}

}  // namespace

grpc::Status TokenServiceImpl::CreateToken(grpc::ServerContext* context,
                                           const v1::CreateTokenRequest* request,
                                           v1::CreateTokenResponse* response) {
  absl::StatusOr<Caller> caller = callers_->Of(*context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  absl::StatusOr<Role> role = ParseTokenRole(request->role());
  if (!role.ok()) return ToGrpcStatus(role.status());
  absl::StatusOr<TokenBook::Issued> issued = tokens_->Create(request->name(), *role);
  if (!issued.ok()) return ToGrpcStatus(issued.status());
  spdlog::info("{} created token {} for {} (role {})", caller->principal,
               issued->record.id, issued->record.name, issued->record.role);
  *response->mutable_info() = ToProto(issued->record);
  response->set_token(std::move(issued->token));
  return grpc::Status::OK;
}

grpc::Status TokenServiceImpl::ListTokens(grpc::ServerContext*, const v1::ListTokensRequest*,
                                          v1::ListTokensResponse* response) {
  for (const TokenRecord& record : tokens_->List()) *response->add_tokens() = ToProto(record);
  return grpc::Status::OK;
}

grpc::Status TokenServiceImpl::RevokeToken(grpc::ServerContext* context,
                                           const v1::RevokeTokenRequest* request,
                                           v1::RevokeTokenResponse* response) {
  absl::StatusOr<Caller> caller = callers_->Of(*context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  absl::StatusOr<TokenRecord> revoked = tokens_->Revoke(request->id());
  if (!revoked.ok()) return ToGrpcStatus(revoked.status());
  spdlog::info("{} revoked token {} of {}", caller->principal, revoked->id,
               revoked->name);
  *response->mutable_info() = ToProto(*revoked);
  return grpc::Status::OK;
}

}  // namespace tunefleet::server
