#include "common/tuning_key.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/sha256.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace tunefleet {
namespace {

std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

}  // namespace

std::string KernelDigest(const v1::KernelSpec& spec,
                         const std::vector<v1::SourceFile>& sources) {
  v1::KernelSpec code;
  code.set_name(spec.name());
  code.set_backend(spec.backend());
  code.set_entry(spec.entry());
  *code.mutable_sources() = spec.sources();
  *code.mutable_compile_options() = spec.compile_options();
  *code.mutable_problem() = spec.problem();
  *code.mutable_derived() = spec.derived();
  *code.mutable_launch() = spec.launch();
  *code.mutable_args() = spec.args();
  for (auto& dim : *code.mutable_problem()) dim.clear_description();
  std::string text = DeterministicBytes(code);
  for (const std::string& path : spec.sources()) {
    auto it = std::find_if(sources.begin(), sources.end(),
                           [&](const v1::SourceFile& f) { return f.path() == path; });
    absl::StrAppend(&text, "\n", path, ":",
                    it == sources.end() ? "missing" : it->digest());
  }
  return Sha256Hex(text);
}

std::string CanonicalKeyText(const TuningKeyInputs& in) {
  std::string dtypes;
  for (const v1::Argument& arg : in.spec->args()) {
    if (arg.has_tensor()) {
      absl::StrAppend(&dtypes, dtypes.empty() ? "" : ",", arg.name(), ":",
                      v1::DType_Name(arg.tensor().dtype()));
    }
  }
  return absl::StrCat("tunefleet-tuning-key\n",
                      "kernel=", in.spec->name(), "\n",
                      "code=", KernelDigest(*in.spec, *in.sources), "\n",
                      "shape=", ShapeToString(in.shape), "\n",
                      "dtypes=", dtypes, "\n",
                      "device_model=", in.device_model, "\n",
                      "toolkit=", in.toolkit, "\n",
                      "protocol=", kMeasurementProtocolVersion, "\n");
}

std::string ComputeTuningKey(const TuningKeyInputs& inputs) {
  return Sha256Hex(CanonicalKeyText(inputs)).substr(0, 32);
}

}  // namespace tunefleet
