// gRPC core's own log lines (a failed TLS handshake, a bad address) through
// the process's spdlog logger (logging.h), as "grpc: FILE:LINE message", so
// that a daemon's JSON log holds only JSON. Kept apart from logging.h so
// that code which logs needs no gRPC.
#ifndef TUNEFLEET_COMMON_GRPC_LOGGING_H_
#define TUNEFLEET_COMMON_GRPC_LOGGING_H_

namespace tunefleet {

// Routes gRPC's lines to the default logger as it is now. Call from main,
// after ConfigureLogging. The logger is kept alive to the end of the
// process: gRPC's threads may log during exit.
void RouteGrpcLogging();

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_GRPC_LOGGING_H_
