// Transport security of tunefleet's gRPC connections, built in one place:
// TLS for every connection, client certificates (mutual TLS) for workers,
// bearer tokens for clients, and plaintext only when asked for by name.
#ifndef TUNEFLEET_COMMON_GRPC_SECURITY_H_
#define TUNEFLEET_COMMON_GRPC_SECURITY_H_

#include <memory>
#include <string>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"

namespace tunefleet {

// The coordinator's side. Empty `cert_file` means plaintext (--insecure).
struct ServerTls {
  // PEM certificate chain and private key the server presents.
  std::string cert_file;
  std::string key_file;
  // PEM CA bundle that signs worker certificates. A client that presents a
  // certificate must chain to it; one that presents none may still connect
  // (clients authenticate with tokens). REQUIRES: non-empty with cert_file.
  std::string client_ca_file;

  bool insecure() const { return cert_file.empty(); }
};

// A client's or worker's side of a connection.
struct ChannelSecurity {
  // Plaintext, no credentials at all. Default false.
  bool insecure = false;
  // PEM CA bundle to verify the coordinator with; empty: the system's roots.
  std::string ca_file;
  // A client certificate and key (workers); both empty for clients.
  std::string cert_file;
  std::string key_file;
  // A bearer token sent with every call (clients); empty for workers.
  std::string token;
};

// The whole file; NotFound or PermissionDenied naming the path, and
// InvalidArgument for an empty file.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

// Plaintext credentials when `tls.insecure()`, else TLS that requests and
// verifies client certificates against `client_ca_file`. Errors name the
// file that could not be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTls& tls);

// The credentials `security` describes. InvalidArgument for a certificate
// without its key (or the reverse), or for a token over plaintext.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ChannelSecurity& security);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_GRPC_SECURITY_H_
