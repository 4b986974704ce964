// The gRPC adapter of TokenService: proto in, one TokenBook call, proto out.
// Only admins reach it (the AuthProcessor checks before the handler runs).
#ifndef TUNEFLEET_SERVER_TOKEN_SERVICE_H_
#define TUNEFLEET_SERVER_TOKEN_SERVICE_H_

#include "server/auth_processor.h"
#include "server/token_book.h"
#include "tunefleet/v1/token_service.grpc.pb.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use.
class TokenServiceImpl final : public v1::TokenService::Service {
 public:
  // `tokens` and `callers` must outlive the service.
  TokenServiceImpl(TokenBook* tokens, const Callers* callers)
      : tokens_(tokens), callers_(callers) {}

  grpc::Status CreateToken(grpc::ServerContext* context, const v1::CreateTokenRequest* request,
                           v1::CreateTokenResponse* response) override;
  grpc::Status ListTokens(grpc::ServerContext* context, const v1::ListTokensRequest* request,
                          v1::ListTokensResponse* response) override;
  grpc::Status RevokeToken(grpc::ServerContext* context, const v1::RevokeTokenRequest* request,
                           v1::RevokeTokenResponse* response) override;

 private:
  TokenBook* const tokens_;
  const Callers* const callers_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TOKEN_SERVICE_H_
