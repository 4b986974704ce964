// tunectl export's formats (client/tunectl/export_formats.h) on one table,
// tests/client/data/triton_matmul.best.json: five rows of triton_matmul on
// an H100 (four, two values of K) and an A100. The Triton file it gives is
// tests/client/data/triton_matmul.autotune.json, which
// tests/python/test_export_formats.py serves the decorator from.
#include "client/tunectl/export_formats.h"

#include <google/protobuf/util/message_differencer.h>

#include <functional>
#include <sstream>
#include <string>

#include "client/best_table_json.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/transfer.h"
#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_support.h"

namespace tunefleet::tunectl {
namespace {

using ::testing::HasSubstr;
using ::tunefleet::testing::SourceDir;
using ::tunefleet::testing::StatusIs;
using ::tunefleet::testing::StatusIsWith;
using ::tunefleet::testing::TempDir;
using Json = nlohmann::json;

constexpr char kH100[] = "NVIDIA H100 80GB HBM3 sm_90";

std::string DataFile(const std::string& name) {
  absl::StatusOr<std::string> text = ReadFile(SourceDir() + "/tests/client/data/" + name);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

std::string Table() { return DataFile("triton_matmul.best.json"); }

ExportOptions Options(TableFormat format, const std::string& device = "",
                      const std::string& where = "") {
  ExportOptions options;
  options.format = format;
  options.device_model = device;
  options.where = where;
  return options;
}

Json Parsed(const std::string& text) { return Json::parse(text); }

// --- format names --------------------------------------------------------------

TEST(ExportFormatsTest, NamesEveryFormatAndRefusesOthersListingThem) {
  for (TableFormat format :
       {TableFormat::kTunefleet, TableFormat::kVllm, TableFormat::kT4, TableFormat::kTriton}) {
    absl::StatusOr<TableFormat> parsed = ParseTableFormat(TableFormatName(format));
    ASSERT_OK(parsed);
    EXPECT_EQ(*parsed, format);
  }
  EXPECT_THAT(ParseTableFormat("csv"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "tunefleet, vllm, t4, triton"));
}

TEST(ExportFormatsTest, ImportReadsTunefleetAndT4AndSaysWhatTheOthersLack) {
  EXPECT_OK(ParseImportFormat("tunefleet"));
  EXPECT_OK(ParseImportFormat("t4"));
  EXPECT_THAT(ParseImportFormat("vllm"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "tuning keys"));
  EXPECT_THAT(ParseImportFormat("triton"),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "tuning keys"));
  EXPECT_THAT(ToTunefleetTable(TableFormat::kVllm, "{}"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ExportFormatsTest, VllmDeviceNameIsTorchsNameWithUnderscores) {
  EXPECT_EQ(VllmDeviceName("NVIDIA H100 80GB HBM3 sm_90"), "NVIDIA_H100_80GB_HBM3");
  EXPECT_EQ(VllmDeviceName("NVIDIA H100 80GB HBM3 (sm_90)"), "NVIDIA_H100_80GB_HBM3");
  EXPECT_EQ(VllmDeviceName("NVIDIA A100-SXM4-80GB sm_80"), "NVIDIA_A100-SXM4-80GB");
  EXPECT_EQ(VllmDeviceName("AMD Instinct MI300X"), "AMD_Instinct_MI300X");
  EXPECT_EQ(VllmDeviceName("Some GPU sm_x"), "Some_GPU_sm_x");  // not a capability
}

// --- tunefleet ---------------------------------------------------------------

TEST(ExportFormatsTest, TunefleetKeepsEveryRowAndMemberWithoutFilters) {
  absl::StatusOr<ExportedDocument> document =
      ConvertTable(Table(), Options(TableFormat::kTunefleet));
  ASSERT_OK(document);
  EXPECT_EQ(document->file_name, "triton_matmul.best.json");
  EXPECT_EQ(Parsed(document->text), Parsed(Table()));
}

TEST(ExportFormatsTest, TunefleetKeepsOnlyTheRowsOfTheToolkitAndWhere) {
  ExportOptions options = Options(TableFormat::kTunefleet, "", "K=4096,M=16");
  options.toolkit = "triton-3.1.0";
  absl::StatusOr<ExportedDocument> document = ConvertTable(Table(), options);
  ASSERT_OK(document);
  const Json configs = Parsed(document->text)["configs"];
  ASSERT_EQ(configs.size(), 2);  // M=16 on the H100 and on the A100
  EXPECT_EQ(configs[0]["tuning_key"], "6cdf440f112bfedf474bb23578daf157");
  EXPECT_EQ(configs[1]["tuning_key"], "6b872d1fca1f76a2516dc3e3793dcaef");
  options.toolkit = "triton-3.0.0";
  document = ConvertTable(Table(), options);
  ASSERT_OK(document);
  EXPECT_TRUE(Parsed(document->text)["configs"].empty());
}

TEST(ExportFormatsTest, RefusesAWhereOfADimTheKernelLacksOrThatDoesNotParse) {
  EXPECT_THAT(ConvertTable(Table(), Options(TableFormat::kTunefleet, "", "E=8")),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "its dims: K, M, N"));
  EXPECT_THAT(ConvertTable(Table(), Options(TableFormat::kTunefleet, "", "K")),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ConvertTable("{\"format\": \"other\"}", Options(TableFormat::kT4)),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// --- vllm --------------------------------------------------------------------

TEST(ExportFormatsTest, VllmMapsEachBatchSizeToItsConfigInOrder) {
  absl::StatusOr<ExportedDocument> document =
      ConvertTable(Table(), Options(TableFormat::kVllm, kH100, "K=4096"));
  ASSERT_OK(document);
  EXPECT_EQ(document->file_name, "N=14336,K=4096,device_name=NVIDIA_H100_80GB_HBM3.json");
  const Json expected = Json::parse(R"({
    "1": {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_M": 1, "num_warps": 4,
          "num_stages": 4},
    "16": {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4,
           "num_stages": 3},
    "64": {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4,
           "num_stages": 3}})");
  EXPECT_EQ(Parsed(document->text), expected);
  // vLLM reads int(key) of every key, and the nearest batch size: numeric order, no metadata.
  EXPECT_EQ(document->text.find("\"1\""), document->text.find('"'));
  EXPECT_LT(document->text.find("\"16\""), document->text.find("\"64\""));
}

TEST(ExportFormatsTest, VllmNamesTheDimsThatDifferBesidesTheBatchDim) {
  EXPECT_THAT(ConvertTable(Table(), Options(TableFormat::kVllm, kH100)),
              StatusIsWith(absl::StatusCode::kInvalidArgument,
                           "also differ in K (1024, 4096): choose one value of each with "
                           "--where, e.g. --where K=1024"));
}

TEST(ExportFormatsTest, VllmNeedsOneDeviceModel) {
  EXPECT_THAT(ConvertTable(Table(), Options(TableFormat::kVllm, "", "K=4096")),
              StatusIsWith(absl::StatusCode::kInvalidArgument,
                           "2 device models (\"NVIDIA A100-SXM4-80GB sm_80\", "
                           "\"NVIDIA H100 80GB HBM3 sm_90\"): choose one with --device"));
  // One model present: no --device needed.
  EXPECT_OK(ConvertTable(Table(), Options(TableFormat::kVllm, "", "K=4096,M=1")));
}

TEST(ExportFormatsTest, VllmRefusesABatchDimTheKernelLacksAndAnEmptySelection) {
  ExportOptions options = Options(TableFormat::kVllm, kH100, "K=4096");
  options.batch_dim = "B";
  EXPECT_THAT(ConvertTable(Table(), options),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "--batch-dim B is not a dim"));
  EXPECT_THAT(ConvertTable(Table(), Options(TableFormat::kVllm, kH100, "K=8")),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(ExportFormatsTest, VllmKeysByAnotherBatchDim) {
  ExportOptions options = Options(TableFormat::kVllm, kH100, "M=64");
  options.batch_dim = "K";
  absl::StatusOr<ExportedDocument> document = ConvertTable(Table(), options);
  ASSERT_OK(document);
  EXPECT_EQ(document->file_name, "M=64,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json");
  const Json parsed = Parsed(document->text);
  EXPECT_EQ(parsed["1024"]["num_warps"], 8);
  EXPECT_EQ(parsed["4096"]["BLOCK_N"], 128);
}

// --- triton ------------------------------------------------------------------

TEST(ExportFormatsTest, TritonIsTheSharedAutotuneFile) {
  absl::StatusOr<ExportedDocument> document =
      ConvertTable(Table(), Options(TableFormat::kTriton, kH100));
  ASSERT_OK(document);
  EXPECT_EQ(document->file_name, "triton_matmul,device_name=NVIDIA_H100_80GB_HBM3.autotune.json");
  EXPECT_EQ(Parsed(document->text), Parsed(DataFile("triton_matmul.autotune.json")))
      << document->text;
}

TEST(ExportFormatsTest, TritonNeedsOneDeviceModelAndToolkit) {
  EXPECT_THAT(ConvertTable(Table(), Options(TableFormat::kTriton)),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "choose one with --device"));
}

TEST(ExportFormatsTest, TritonLeavesLaunchOptionsOutWhenTheSpecHasNone) {
  Json table = Parsed(Table());
  table["kernels"][0]["spec"]["kernel"]["default_config"] = "BLOCK_M=128";
  for (Json& row : table["configs"]) row["config"] = "BLOCK_M=64";
  absl::StatusOr<ExportedDocument> document =
      ConvertTable(table.dump(), Options(TableFormat::kTriton, kH100));
  ASSERT_OK(document);
  const Json parsed = Parsed(document->text);
  EXPECT_EQ(parsed["default"], Json::parse(R"({"kwargs": {"BLOCK_M": 128}})"));
  EXPECT_EQ(parsed["cache"]["1,14336,4096"],
            Json::parse(R"({"kwargs": {"BLOCK_M": 64}, "median_seconds": 2.14e-05})"));
}

TEST(ExportFormatsTest, VllmAndTritonRefuseTwoRowsOfOneShape) {
  Json table = Parsed(Table());
  Json twin = table["configs"][0];
  twin["tuning_key"] = "ffff0000ffff0000ffff0000ffff0000";
  table["configs"].push_back(twin);
  EXPECT_THAT(ConvertTable(table.dump(), Options(TableFormat::kVllm, kH100, "K=4096")),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "two rows of shape M=1,"));
  EXPECT_THAT(ConvertTable(table.dump(), Options(TableFormat::kTriton, kH100)),
              StatusIsWith(absl::StatusCode::kInvalidArgument, "two rows of shape M=1,"));
}

// --- t4 ----------------------------------------------------------------------

// The published T4 results schema (Kernel Tuner's schema/T4/1.0.0/
// results-schema.json), checked by hand: its `required` members of each
// result, and the type of every member it describes.
void ExpectValidT4(const Json& document) {
  ASSERT_TRUE(document.is_object());
  ASSERT_TRUE(document["schema_version"].is_string());
  EXPECT_THAT(document["schema_version"].get<std::string>(),
              ::testing::MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
  ASSERT_TRUE(document["results"].is_array());
  for (const Json& result : document["results"]) {
    for (const char* required : {"configuration", "times", "invalidity", "correctness"}) {
      EXPECT_TRUE(result.contains(required)) << required;
    }
    EXPECT_TRUE(result["timestamp"].is_string());
    EXPECT_TRUE(result["configuration"].is_object());
    EXPECT_TRUE(result["objectives"].is_array());
    EXPECT_TRUE(result["times"].is_object());
    EXPECT_THAT(result["invalidity"].get<std::string>(),
                ::testing::AnyOf("timeout", "compile", "runtime", "correctness", "constraints",
                                 "correct"));
    EXPECT_TRUE(result["correctness"].is_number());
    ASSERT_TRUE(result["measurements"].is_array());
    for (const Json& measurement : result["measurements"]) {
      EXPECT_TRUE(measurement["name"].is_string());
      EXPECT_TRUE(measurement["value"].is_number() || measurement["value"].is_string() ||
                  measurement["value"].is_array());
      EXPECT_TRUE(measurement["unit"].is_string());
    }
  }
}

TEST(ExportFormatsTest, T4HasOneCorrectResultPerRowWithItsTimeInMs) {
  absl::StatusOr<ExportedDocument> document = ConvertTable(Table(), Options(TableFormat::kT4));
  ASSERT_OK(document);
  EXPECT_EQ(document->file_name, "triton_matmul.t4.json");
  const Json t4 = Parsed(document->text);
  ExpectValidT4(t4);
  EXPECT_EQ(t4["schema_version"], "1.0.0");
  ASSERT_EQ(t4["results"].size(), 5);
  const Json& first = t4["results"][0];
  EXPECT_EQ(first["configuration"],
            Json::parse(R"({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_M": 1,
                            "num_warps": 4, "num_stages": 4})"));
  EXPECT_EQ(first["invalidity"], "correct");
  EXPECT_EQ(first["correctness"], 1);
  EXPECT_EQ(first["objectives"], Json::parse(R"(["time"])"));
  EXPECT_EQ(first["measurements"][0]["name"], "time");
  EXPECT_EQ(first["measurements"][0]["unit"], "ms");
  EXPECT_DOUBLE_EQ(first["measurements"][0]["value"].get<double>(), 0.0214);
  EXPECT_EQ(first["timestamp"], "2026-11-18T11:06:40.000Z");
  EXPECT_EQ(first["metadata"]["kernel"], "triton_matmul");
  EXPECT_EQ(first["metadata"]["shape"], "M=1,N=14336,K=4096");
  EXPECT_EQ(first["metadata"]["device_model"], kH100);
  EXPECT_EQ(first["metadata"]["toolkit"], "triton-3.1.0");
  EXPECT_EQ(t4["metadata"]["tunefleet"]["kernels"][0]["name"], "triton_matmul");
  EXPECT_EQ(t4["metadata"]["tunefleet"]["exported_by"], "tunefleet-coordinator 0.1.0");
}

TEST(ExportFormatsTest, T4RoundTripsEveryRow) {
  absl::StatusOr<ExportedDocument> t4 = ConvertTable(Table(), Options(TableFormat::kT4));
  ASSERT_OK(t4);
  absl::StatusOr<std::string> back = ToTunefleetTable(TableFormat::kT4, t4->text);
  ASSERT_OK(back);
  absl::StatusOr<v1::ExportBestResponse> original = client_internal::BestTableFromJson(Table());
  absl::StatusOr<v1::ExportBestResponse> returned = client_internal::BestTableFromJson(*back);
  ASSERT_OK(original);
  ASSERT_OK(returned);
  google::protobuf::util::MessageDifferencer differ;
  differ.set_float_comparison(google::protobuf::util::MessageDifferencer::APPROXIMATE);
  std::string differences;
  differ.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differ.Compare(*original, *returned)) << differences;
  EXPECT_TRUE(returned->rows(1).has_evidence());
  EXPECT_TRUE(returned->rows(4).imported());
}

// A T4 document with one result, `change` applied to it.
std::string T4With(const std::function<void(Json&)>& change) {
  absl::StatusOr<ExportedDocument> t4 =
      ConvertTable(Table(), Options(TableFormat::kT4, "", "M=1"));
  EXPECT_TRUE(t4.ok()) << t4.status();
  Json document = Parsed(t4.ok() ? t4->text : "{}");
  change(document["results"][0]);
  return document.dump();
}

TEST(ExportFormatsTest, T4ReaderNamesWhatIsMissingOrWrong) {
  const auto refused = [](const std::string& text, const std::string& why) {
    EXPECT_THAT(ToTunefleetTable(TableFormat::kT4, text),
                StatusIsWith(absl::StatusCode::kInvalidArgument, why))
        << text;
  };
  refused("[]", "not a JSON object");
  refused(R"({"schema_version": "2.0.0", "results": []})", "schema_version");
  refused(R"({"schema_version": "1.0.0", "results": []})", "metadata.tunefleet is missing");
  refused(T4With([](Json& r) { r["invalidity"] = "compile"; }), "only correct configs");
  refused(T4With([](Json& r) { r["metadata"].erase("tuning_key"); }), "metadata.tuning_key");
  refused(T4With([](Json& r) { r["configuration"]["BLOCK_M"] = 1.5; }),
          "BLOCK_M is not an integer");
  refused(T4With([](Json& r) { r["measurements"][0]["unit"] = "parsecs"; }), "unit of s");
  refused(T4With([](Json& r) { r["measurements"] = Json::array(); }), "no \"time\"");
  refused(T4With([](Json& r) { r["timestamp"] = "yesterday"; }), "RFC 3339");
  refused(T4With([](Json& r) { r["metadata"]["shape"] = 7; }), "metadata.shape");
}

TEST(ExportFormatsTest, T4ReaderTakesOtherUnitsAndOrdersParamsAsTheSpec) {
  const std::string text = T4With([](Json& r) {
    r["measurements"][0] = Json::parse(R"({"name": "time", "value": 21.4, "unit": "us"})");
    r["configuration"] = Json::parse(R"({"num_stages": 4, "num_warps": 4, "GROUP_M": 1,
                                         "BLOCK_K": 128, "BLOCK_N": 64, "BLOCK_M": 16})");
  });
  absl::StatusOr<std::string> back = ToTunefleetTable(TableFormat::kT4, text);
  ASSERT_OK(back);
  absl::StatusOr<v1::ExportBestResponse> table = client_internal::BestTableFromJson(*back);
  ASSERT_OK(table);
  ASSERT_EQ(table->rows_size(), 1);
  EXPECT_EQ(table->rows(0).config_text(),
            "BLOCK_M=16,BLOCK_N=64,BLOCK_K=128,GROUP_M=1,num_warps=4,num_stages=4");
  EXPECT_DOUBLE_EQ(table->rows(0).median_seconds(), 2.14e-05);
}

TEST(ExportFormatsTest, TunefleetImportChecksTheTable) {
  EXPECT_OK(ToTunefleetTable(TableFormat::kTunefleet, Table()));
  EXPECT_THAT(ToTunefleetTable(TableFormat::kTunefleet, "{\"format\": \"x\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// --- the verb, offline ---------------------------------------------------------

struct Captured {
  std::ostringstream out;
  std::ostringstream err;
  Console console;
  Captured() {
    console.out = &out;
    console.err = &err;
  }
};

TEST(ExportVerbTest, PrintsTheVllmFileAndSuggestsItsName) {
  Captured io;
  ExportFlags flags;
  flags.format = "vllm";
  flags.device_model = kH100;
  flags.where = "K=4096";
  EXPECT_EQ(WriteExport(Table(), flags, io.console), kExitOk);
  EXPECT_EQ(Parsed(io.out.str()).size(), 3);
  EXPECT_THAT(io.err.str(), HasSubstr("N=14336,K=4096,device_name=NVIDIA_H100_80GB_HBM3.json"));
}

TEST(ExportVerbTest, WritesIntoTheOutDirectoryUnderItsName) {
  TempDir dir;
  Captured io;
  ExportFlags flags;
  flags.format = "triton";
  flags.device_model = kH100;
  flags.out_dir = dir.path();
  EXPECT_EQ(WriteExport(Table(), flags, io.console), kExitOk);
  EXPECT_EQ(io.out.str(), "");
  absl::StatusOr<std::string> written =
      ReadFile(dir.path() + "/triton_matmul,device_name=NVIDIA_H100_80GB_HBM3.autotune.json");
  ASSERT_OK(written);
  EXPECT_EQ(Parsed(*written), Parsed(DataFile("triton_matmul.autotune.json")));
  EXPECT_THAT(io.err.str(), HasSubstr("wrote "));
}

TEST(ExportVerbTest, ABatchDimOfAnotherFormatIsAUsageError) {
  Captured io;
  ExportFlags flags;
  flags.format = "t4";
  flags.batch_dim = "M";
  EXPECT_EQ(WriteExport(Table(), flags, io.console), kExitUsage);
  EXPECT_THAT(io.err.str(), HasSubstr("--batch-dim applies to --format vllm only"));
  flags.format = "xml";
  flags.batch_dim = "";
  EXPECT_EQ(WriteExport(Table(), flags, io.console), kExitUsage);
}

TEST(ExportVerbTest, ARefusedSelectionExitsOneNamingTheDims) {
  Captured io;
  ExportFlags flags;
  flags.format = "vllm";
  flags.device_model = kH100;
  EXPECT_EQ(WriteExport(Table(), flags, io.console), kExitFailure);
  EXPECT_THAT(io.err.str(), HasSubstr("K (1024, 4096)"));
  EXPECT_EQ(io.out.str(), "");
}

}  // namespace
}  // namespace tunefleet::tunectl
