// A small streaming JSON writer for tunectl's `-o json`: objects and arrays
// indented by two spaces, keys in the order written, so output is stable.
#ifndef TUNEFLEET_CLIENT_TUNECTL_JSON_H_
#define TUNEFLEET_CLIENT_TUNECTL_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tunefleet::tunectl {

// Thread-safety: not thread-safe. Misuse (a value without a key inside an
// object, unbalanced End calls) is a programming error and is not detected.
class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  // Non-finite values are written as null.
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  // The document so far, with a trailing newline once it is complete.
  std::string str() const;

 private:
  void BeforeValue();
  void Open(char bracket);
  void Close(char bracket);
  void NewLine();

  std::string out_;
  // Per open container: whether it holds an element yet.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

// `text` as a quoted JSON string.
std::string JsonQuote(std::string_view text);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_JSON_H_
