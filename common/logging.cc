#include "common/logging.h"

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "spdlog/formatter.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace tunefleet {
namespace {

// Length of the UTF-8 sequence starting at text[i], or 0 when invalid.
size_t Utf8Length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  const size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3
                                   : (lead >> 3) == 0x1E     ? 4
                                                             : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return length;
}

// The fields of the LogFields alive on this thread, oldest first.
thread_local std::vector<std::pair<const char*, std::string>> thread_fields;

absl::Mutex process_fields_mu(absl::kConstInit);
std::map<std::string, std::string>* process_fields ABSL_GUARDED_BY(process_fields_mu) = nullptr;

// The level as the docs and --log-level name it ("warn", not "warning").
const char* LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    default: return "off";
  }
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const absl::Time time = absl::FromChrono(msg.time);
    std::string line = absl::StrCat(
        "{\"time\":\"", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone()),
        "\",\"level\":\"", LevelName(msg.level), "\",\"logger\":\"",
        JsonEscape(std::string(msg.logger_name.data(), msg.logger_name.size())),
        "\",\"message\":\"", JsonEscape(std::string(msg.payload.data(), msg.payload.size())),
        "\"");
    // Innermost first, each name once: the thread's scopes, then the process's.
    std::map<std::string, std::string> fields;
    for (auto it = thread_fields.rbegin(); it != thread_fields.rend(); ++it) {
      fields.emplace(it->first, it->second);
    }
    {
      absl::MutexLock lock(&process_fields_mu);
      if (process_fields != nullptr) fields.insert(process_fields->begin(), process_fields->end());
    }
    for (const auto& [name, value] : fields) {
      absl::StrAppend(&line, ",\"", JsonEscape(name), "\":\"", JsonEscape(value), "\"");
    }
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

LogFields::LogFields(std::initializer_list<std::pair<const char*, std::string>> fields)
    : count_(fields.size()) {
  thread_fields.insert(thread_fields.end(), fields.begin(), fields.end());
}

LogFields::~LogFields() { thread_fields.resize(thread_fields.size() - count_); }

void SetProcessLogField(const std::string& name, const std::string& value) {
  absl::MutexLock lock(&process_fields_mu);
  if (process_fields == nullptr) process_fields = new std::map<std::string, std::string>();
  if (value.empty()) {
    process_fields->erase(name);
  } else {
    (*process_fields)[name] = value;
  }
}

std::string JsonEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      absl::StrAppend(&out, "\\", std::string(1, static_cast<char>(c)));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += absl::StrFormat("\\u%04x", c);
    } else if (const size_t length = Utf8Length(text, i); length == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    } else {
      out.append(text, i, length);
      i += length;
      continue;
    }
    ++i;
  }
  return out;
}

absl::Status ConfigureLogging(const std::string& name, LogFormat format,
                              const std::string& level) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown log level \"", level, "\" (trace, debug, info, warn, error, critical, off)"));
  }
  std::shared_ptr<spdlog::logger> logger = spdlog::get(name);
  if (logger == nullptr) logger = spdlog::stderr_logger_mt(name);
  if (format == LogFormat::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n: %v", spdlog::pattern_time_type::utc));
  }
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
  return absl::OkStatus();
}

}  // namespace tunefleet
