#include "common/grpc_logging.h"

#include <grpc/support/log.h>

#include <memory>
#include <string>

#include "spdlog/spdlog.h"

namespace tunefleet {
namespace {

// Never freed: gRPC may call LogFromGrpc while statics are destroyed.
std::shared_ptr<spdlog::logger>* grpc_logger = nullptr;

void LogFromGrpc(gpr_log_func_args* args) {
  const spdlog::level::level_enum level =
      args->severity == GPR_LOG_SEVERITY_ERROR  ? spdlog::level::err
      : args->severity == GPR_LOG_SEVERITY_INFO ? spdlog::level::info
                                                : spdlog::level::debug;
  std::string file = args->file != nullptr ? args->file : "";
  if (const size_t slash = file.rfind('/'); slash != std::string::npos) file.erase(0, slash + 1);
  (*grpc_logger)->log(level, "grpc: {}:{} {}", file, args->line,
                      args->message != nullptr ? args->message : "");
}

}  // namespace

void RouteGrpcLogging() {
  if (grpc_logger == nullptr) {
    grpc_logger = new std::shared_ptr<spdlog::logger>(spdlog::default_logger());
  } else {
    *grpc_logger = spdlog::default_logger();
  }
  gpr_set_log_function(LogFromGrpc);
}

}  // namespace tunefleet
