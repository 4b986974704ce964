// tunefleet-nvrtc: one NVRTC compilation in its own process, so that the
// NvrtcCompiler can abandon a pathological compile by killing it.
//
//   tunefleet-nvrtc <source file> <program name> <out.cubin> <out.log> [nvrtc options...]
//
// Exit 0: compiled, cubin and log written. Exit 1: the source did not
// compile, the program log written. Exit 2: NVRTC could not run (message in
// the log file and on stderr).
#include <pthread.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "worker/cuda/cuda_driver.h"
#include "worker/cuda/nvrtc_program.h"

namespace {

bool WriteFile(const std::string& path, const std::string& data) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(file);
}

int Fail(const std::string& log_path, const std::string& message) {
  WriteFile(log_path, message);
  std::fprintf(stderr, "tunefleet-nvrtc: %s\n", message.c_str());
  return 2;
}

struct Compilation {
  std::string source;
  std::string name;
  std::string cubin_path;
  std::string log_path;
  std::vector<std::string> options;
  int exit_code = 2;
};

void* Compile(void* arg) {
  Compilation& c = *static_cast<Compilation*>(arg);
  auto nvrtc = tunefleet::worker::cuda::LoadNvrtc();
  if (!nvrtc.ok()) {
    c.exit_code = Fail(c.log_path, std::string(nvrtc.status().message()));
    return nullptr;
  }
  auto output = tunefleet::worker::cuda::RunNvrtc(**nvrtc, c.source, c.name, c.options);
  if (!output.ok()) {
    c.exit_code = Fail(c.log_path, std::string(output.status().message()));
  } else if (!WriteFile(c.log_path, output->log)) {
    c.exit_code = Fail(c.log_path, "cannot write " + c.log_path);
  } else if (!output->ok) {
    c.exit_code = 1;
  } else if (!WriteFile(c.cubin_path, output->cubin)) {
    c.exit_code = Fail(c.log_path, "cannot write " + c.cubin_path);
  } else {
    c.exit_code = 0;
  }
  return nullptr;
}

// NVRTC recurses deeply on large straight-line or template-heavy sources; a
// thread with a large stack keeps such a compile from overflowing the
// default 8 MiB main-thread stack.
constexpr size_t kCompileStackBytes = size_t{1} << 30;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: %s <source> <name> <out.cubin> <out.log> [options...]\n",
                 argv[0]);
    return 2;
  }
  const std::string source_path = argv[1];
  const std::string name = argv[2];
  const std::string cubin_path = argv[3];
  const std::string log_path = argv[4];
  std::vector<std::string> options(argv + 5, argv + argc);

  std::ifstream file(source_path, std::ios::binary);
  if (!file) return Fail(log_path, "cannot read " + source_path);
  std::ostringstream source;
  source << file.rdbuf();

  Compilation compilation{source.str(), name, cubin_path, log_path, std::move(options)};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kCompileStackBytes);
  pthread_t thread;
  if (pthread_create(&thread, &attr, Compile, &compilation) != 0) {
    Compile(&compilation);  // no big stack to be had: compile on this one
  } else {
    pthread_join(thread, nullptr);
  }
  pthread_attr_destroy(&attr);
  return compilation.exit_code;
}
