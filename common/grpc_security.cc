#include "common/grpc_security.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <grpcpp/security/server_credentials.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunefleet {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    std::string message = absl::StrCat("cannot read ", path, ": ", std::strerror(err));
    return err == EACCES ? absl::PermissionDeniedError(message) : absl::NotFoundError(message);
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (content.str().empty()) return absl::InvalidArgumentError(absl::StrCat(path, " is empty"));
  return content.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTls& tls) {
  if (tls.insecure()) return grpc::InsecureServerCredentials();
  if (tls.key_file.empty() || tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs a certificate, its key and the CA of worker certificates");
  }
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  ASSIGN_OR_RETURN(options.pem_root_certs, ReadSecretFile(tls.client_ca_file));
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.private_key, ReadSecretFile(tls.key_file));
  ASSIGN_OR_RETURN(pair.cert_chain, ReadSecretFile(tls.cert_file));
  options.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ChannelSecurity& security) {
  if (security.insecure) {
    if (!security.token.empty()) {
      return absl::InvalidArgumentError("a token is never sent over a plaintext connection");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (security.cert_file.empty() != security.key_file.empty()) {
    return absl::InvalidArgumentError("a client certificate needs its key, and the key its "
                                      "certificate");
  }
  grpc::SslCredentialsOptions options;
  if (!security.ca_file.empty()) {
    ASSIGN_OR_RETURN(options.pem_root_certs, ReadSecretFile(security.ca_file));
  }
  if (!security.cert_file.empty()) {
    ASSIGN_OR_RETURN(options.pem_private_key, ReadSecretFile(security.key_file));
    ASSIGN_OR_RETURN(options.pem_cert_chain, ReadSecretFile(security.cert_file));
  }
  std::shared_ptr<grpc::ChannelCredentials> channel = grpc::SslCredentials(options);
  if (security.token.empty()) return channel;
  return grpc::CompositeChannelCredentials(channel,
                                           grpc::AccessTokenCredentials(security.token));
}

}  // namespace tunefleet
