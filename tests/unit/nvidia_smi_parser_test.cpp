// nvidia-smi parsers on real captures (tests/fixtures/tool-output/, see
// SOURCES.md there) and on hand-made edge cases. Every parsed `gpus` object
// must also be valid in schemas/facts.schema.json.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "gpuexpand/facts/tool_parsers.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  if (!in) ADD_FAILURE() << "cannot read " << path;
  return out.str();
}

std::string fixture(const std::string& name) {
  return read_file(std::string(GPUEXPAND_SOURCE_DIR) + "/tests/fixtures/tool-output/" + name);
}

// Schema errors of a minimal facts document holding `gpus`; "" when valid.
std::string gpus_schema_errors(const json& gpus) {
  static valijson::Schema schema;
  static const bool loaded = [] {
    const json document = json::parse(read_file(std::string(GPUEXPAND_SOURCE_DIR) + "/schemas/facts.schema.json"));
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(document);
    parser.populateSchema(adapter, schema);
    return true;
  }();
  (void)loaded;
  const json facts = {{"schema_version", 1}, {"node", "n"}, {"gpus", gpus}, {"network", {{"rdma", json::array()}}}};
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(facts);
  if (validator.validate(schema, adapter, &results)) return "";
  std::string errors;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    for (const auto& part : error.context) errors += part;
    errors += ": " + error.description + "\n";
  }
  return errors;
}

json parsed_query(std::string_view text) {
  auto result = parse_nvidia_smi_query(text);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? result.value() : json();
}

std::string query_error(std::string_view text) {
  auto result = parse_nvidia_smi_query(text);
  EXPECT_FALSE(result.ok()) << "parsed: " << (result.ok() ? result.value().dump() : "");
  return result.ok() ? "" : result.error().message;
}

std::string crlf(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

// ------------------------------------------------------------------ query

TEST(NvidiaSmiQuery, FieldsAreColumnsOfRealNvidiaSmiAndTheCommandUsesThem) {
  // The probe's field names must be ones nvidia-smi knows: the 590 captures
  // queried every field, so each of ours is a column of their header.
  for (const char* name :
       {"nvidia-smi-query-gpu-allfields-h100x1-590.48.01.csv", "nvidia-smi-query-gpu-allfields-h200x1-590.48.01.csv"}) {
    const auto header = fixture(name).substr(0, fixture(name).find('\n'));
    std::string_view fields = kNvidiaSmiQueryFields;
    while (!fields.empty()) {
      const auto field = std::string(fields.substr(0, fields.find(',')));
      EXPECT_TRUE(header.find(", " + field + ",") != std::string::npos ||
                  header.find(", " + field + " [") != std::string::npos || header.starts_with(field + ","))
          << field << " is not a column of " << name;
      fields.remove_prefix(std::min(fields.size(), field.size() + 1));
    }
  }
  EXPECT_EQ(nvidia_smi_query_command(),
            "nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,persistence_mode,"
            "ecc.mode.current,ecc.errors.uncorrected.volatile.total,temperature.gpu,power.draw "
            "--format=csv,noheader,nounits");
}

TEST(NvidiaSmiQuery, RealH200AllFieldsCaptureWithHeaderAndUnits) {
  const auto gpus = parsed_query(fixture("nvidia-smi-query-gpu-allfields-h200x1-590.48.01.csv"));
  EXPECT_EQ(gpus["count"], 1);
  EXPECT_EQ(gpus["model"], "NVIDIA H200");
  EXPECT_EQ(gpus["driver_version"], "590.48.01");
  EXPECT_EQ(gpus["persistence_mode"], true);
  EXPECT_FALSE(gpus.contains("models"));
  const auto& gpu = gpus["devices"][0];
  EXPECT_EQ(gpu["index"], 0);
  EXPECT_EQ(gpu["uuid"], "GPU-00000000-0000-0000-0000-000000000000");  // masked by the uploader
  EXPECT_EQ(gpu["pci_bus_id"], "00000000:83:00.0");
  EXPECT_EQ(gpu["memory_total_mib"], 143771);
  EXPECT_EQ(gpu["persistence_mode"], true);
  EXPECT_EQ(gpu["ecc_mode"], "Enabled");
  EXPECT_EQ(gpu["ecc_uncorrected_volatile"], 0);
  EXPECT_EQ(gpu["temperature_c"], 28);
  EXPECT_DOUBLE_EQ(gpu["power_draw_w"].get<double>(), 77.71);
  EXPECT_EQ(gpu["mig_mode"], "Disabled");
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiQuery, RealH100AllFieldsCapture) {
  const auto gpus = parsed_query(fixture("nvidia-smi-query-gpu-allfields-h100x1-590.48.01.csv"));
  EXPECT_EQ(gpus["count"], 1);
  EXPECT_EQ(gpus["model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus["driver_version"], "590.48.01");
  const auto& gpu = gpus["devices"][0];
  EXPECT_EQ(gpu["pci_bus_id"], "00000000:00:09.0");
  EXPECT_EQ(gpu["memory_total_mib"], 81559);
  EXPECT_EQ(gpu["temperature_c"], 41);
  EXPECT_DOUBLE_EQ(gpu["power_draw_w"].get<double>(), 69.85);
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiQuery, RealNameAndMemoryOnlyCaptureOfEightH100) {
  // --format=csv with two columns: no index column (row = index), no driver.
  const auto gpus = parsed_query(fixture("nvidia-smi-query-name-memtotal-h100x8.csv"));
  EXPECT_EQ(gpus["count"], 8);
  EXPECT_EQ(gpus["model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus["driver_version"], nullptr);
  EXPECT_EQ(gpus["persistence_mode"], nullptr) << "not queried, so unknown";
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(gpus["devices"][i]["index"], i);
    EXPECT_EQ(gpus["devices"][i]["memory_total_mib"], 81559);
    EXPECT_FALSE(gpus["devices"][i].contains("uuid"));
  }
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiQuery, ProbeFormatCutFromTheRealH200Capture) {
  // The probe's exact columns, values taken from the real capture (which has
  // units: the parser accepts both), without header.
  const auto csv = fixture("nvidia-smi-query-gpu-allfields-h200x1-590.48.01.csv");
  std::vector<std::string> header, values;
  std::stringstream head(csv.substr(0, csv.find('\n'))), row(csv.substr(csv.find('\n') + 1));
  for (std::string cell; std::getline(head, cell, ',');) header.push_back(cell.substr(cell.find_first_not_of(' ')));
  for (std::string cell; std::getline(row, cell, ',');) values.push_back(cell);
  ASSERT_EQ(header.size(), values.size());
  std::string line;
  std::string_view fields = kNvidiaSmiQueryFields;
  while (!fields.empty()) {
    const auto field = std::string(fields.substr(0, fields.find(',')));
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == field || header[i].starts_with(field + " [")) {
        line += (line.empty() ? "" : ", ") + values[i].substr(values[i].find_first_not_of(' '));
      }
    }
    fields.remove_prefix(std::min(fields.size(), field.size() + 1));
  }
  EXPECT_EQ(line, "0, NVIDIA H200, GPU-00000000-0000-0000-0000-000000000000, 00000000:83:00.0, 590.48.01, 143771 MiB, "
                  "Enabled, Enabled, 0, 28, 77.71 W");
  const auto gpus = parsed_query(line + "\n");
  EXPECT_EQ(gpus["devices"][0]["memory_total_mib"], 143771);
  EXPECT_DOUBLE_EQ(gpus["devices"][0]["power_draw_w"].get<double>(), 77.71);
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

// What the probe's command prints on an 8x H100 node (hand-made, in the
// shape of the captures above: nounits, ", " separators).
const std::string kEightH100 =
    "0, NVIDIA H100 80GB HBM3, GPU-1a2b3c4d-0000-1111-2222-333344445555, 00000000:18:00.0, 590.48.01, 81559, Enabled, "
    "Enabled, 0, 33, 139.52\n"
    "1, NVIDIA H100 80GB HBM3, GPU-1a2b3c4d-0000-1111-2222-333344445556, 00000000:2A:00.0, 590.48.01, 81559, Enabled, "
    "Enabled, 0, 33, 131.10\n"
    "2, NVIDIA H100 80GB HBM3, GPU-1a2b3c4d-0000-1111-2222-333344445557, 00000000:3A:00.0, 590.48.01, 81559, Enabled, "
    "Enabled, 2, 35, 140.00\n";

TEST(NvidiaSmiQuery, ProbeFormatAllFields) {
  const auto gpus = parsed_query(kEightH100);
  EXPECT_EQ(gpus["count"], 3);
  EXPECT_EQ(gpus["model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus["driver_version"], "590.48.01");
  EXPECT_EQ(gpus["persistence_mode"], true);
  const auto& gpu = gpus["devices"][2];
  EXPECT_EQ(gpu, json::parse(R"({"index": 2, "name": "NVIDIA H100 80GB HBM3",
      "uuid": "GPU-1a2b3c4d-0000-1111-2222-333344445557", "pci_bus_id": "00000000:3A:00.0",
      "memory_total_mib": 81559, "persistence_mode": true, "ecc_mode": "Enabled",
      "ecc_uncorrected_volatile": 2, "temperature_c": 35, "power_draw_w": 140.0})"));
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiQuery, UnreadableValuesAreNull) {
  const auto gpus = parsed_query(
      "0, Tesla T4, [N/A], 00000000:00:04.0, 470.82.01, 15109, [Not Supported], N/A, [N/A], [Unknown Error], "
      "[N/A]\n");
  const auto& gpu = gpus["devices"][0];
  for (const char* key : {"uuid", "persistence_mode", "ecc_mode", "ecc_uncorrected_volatile", "temperature_c",
                          "power_draw_w"}) {
    EXPECT_EQ(gpu[key], nullptr) << key;
  }
  EXPECT_EQ(gpus["persistence_mode"], nullptr);
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiQuery, MixedModelsAndPersistence) {
  const auto gpus = parsed_query(
      "0, NVIDIA A100-SXM4-80GB, GPU-a, 00000000:07:00.0, 535.54.03, 81920, Enabled, Enabled, 0, 30, 60.1\n"
      "1, NVIDIA A100-SXM4-40GB, GPU-b, 00000000:0F:00.0, 535.54.03, 40960, Disabled, Enabled, 0, 31, 59.0\n"
      "2, NVIDIA A100-SXM4-80GB, GPU-c, 00000000:47:00.0, 535.54.03, 81920, [N/A], Enabled, 0, 29, 61.0\n");
  EXPECT_EQ(gpus["model"], "NVIDIA A100-SXM4-80GB") << "GPU 0's";
  EXPECT_EQ(gpus["models"], json({"NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB"}));
  EXPECT_EQ(gpus["persistence_mode"], false) << "one GPU has it off";
  EXPECT_EQ(gpus_schema_errors(gpus), "");

  const auto unknown = parsed_query(
      "0, NVIDIA H200, GPU-a, 00000000:07:00.0, 550.90.07, 143771, Enabled, Enabled, 0, 30, 60.1\n"
      "1, NVIDIA H200, GPU-b, 00000000:0F:00.0, 550.90.07, 143771, [N/A], Enabled, 0, 31, 59.0\n");
  EXPECT_EQ(unknown["persistence_mode"], nullptr) << "on for one, unknown for the other";
}

TEST(NvidiaSmiQuery, CrlfTrailingBlanksAndNoFinalNewline) {
  auto messy = crlf(kEightH100);
  messy.insert(messy.find('\r'), "   \t");
  messy += "\r\n\r\n";
  EXPECT_EQ(parsed_query(messy), parsed_query(kEightH100));
  EXPECT_EQ(parsed_query(kEightH100.substr(0, kEightH100.size() - 1)), parsed_query(kEightH100));
  const auto header = crlf(fixture("nvidia-smi-query-name-memtotal-h100x8.csv"));
  EXPECT_EQ(parsed_query(header), parsed_query(fixture("nvidia-smi-query-name-memtotal-h100x8.csv")));
}

TEST(NvidiaSmiQuery, ErrorsAreExact) {
  EXPECT_EQ(query_error(""), "nvidia-smi query: empty output");
  EXPECT_EQ(query_error(" \n\r\n"), "nvidia-smi query: empty output");
  // Truncated third line (the SSH channel closed mid-output).
  const auto truncated = kEightH100.substr(0, kEightH100.rfind(", 35, 140"));
  EXPECT_EQ(query_error(truncated), "nvidia-smi query: line 3 has 9 fields, expected 11");
  EXPECT_EQ(query_error("hello world\n"), "nvidia-smi query: line 1 has 1 field, expected 11");
  EXPECT_EQ(query_error(std::string("\xff\xfe garbage")), "nvidia-smi query: output is not valid UTF-8");
  EXPECT_EQ(query_error("0, H100, GPU-a, 00:18.0, 590.48.01, lots, Enabled, Enabled, 0, 33, 139\n"),
            "nvidia-smi query: line 1: memory.total 'lots' is not a whole number");
  EXPECT_EQ(query_error("0, H100, GPU-a, 00:18.0, 590.48.01, 81559, Enabled, Enabled, 0, 33, nan\n"),
            "nvidia-smi query: line 1: power.draw 'nan' is not a number");
  EXPECT_EQ(query_error("0, H100, GPU-a, 00:18.0, 590.48.01, 81559, Maybe, Enabled, 0, 33, 1\n"),
            "nvidia-smi query: line 1: persistence_mode 'Maybe' is not Enabled or Disabled");
  EXPECT_EQ(query_error("x, H100, GPU-a, 00:18.0, 590.48.01, 81559, Enabled, Enabled, 0, 33, 1\n"),
            "nvidia-smi query: line 1: index 'x' is not a number");
  EXPECT_EQ(query_error("0, [Unknown Error], GPU-a, 00:18.0, 590.48.01, 81559, Enabled, Enabled, 0, 33, 1\n"),
            "nvidia-smi query: line 1: name '[Unknown Error]' is not a GPU name");
  EXPECT_EQ(query_error("index, memory.total [MiB]\n0, 81559 MiB\n"), "nvidia-smi query: the header has no name column");
  EXPECT_EQ(query_error("name, memory.total [MiB]\n"), "nvidia-smi query: no GPU lines after the header");
  EXPECT_EQ(query_error(kEightH100 + "Unable to determine the device handle for GPU0000:CA:00.0: Unknown Error\n"),
            "nvidia-smi query: line 4: Unable to determine the device handle for GPU0000:CA:00.0: Unknown Error");
  // A failure text fed to the query parser says what it is.
  EXPECT_EQ(query_error(fixture("nvidia-smi-error-no-driver.txt")),
            "nvidia-smi query: nvidia-smi cannot communicate with the NVIDIA driver: it is not installed or not "
            "loaded");
}

// ---------------------------------------------------------------- failures

json failure(const std::string& output, int exit_code) {
  auto result = nvidia_smi_failure(output, exit_code);
  EXPECT_TRUE(result.has_value()) << output;
  if (!result) return json();
  EXPECT_EQ((*result)["count"], 0);
  EXPECT_EQ((*result)["devices"], json::array());
  EXPECT_EQ((*result)["driver_version"], nullptr);
  EXPECT_EQ(gpus_schema_errors(*result), "");
  return *result;
}

TEST(NvidiaSmiFailure, RealFailureTexts) {
  EXPECT_EQ(failure(fixture("nvidia-smi-error-no-driver.txt"), 9)["error"],
            "nvidia-smi cannot communicate with the NVIDIA driver: it is not installed or not loaded");
  EXPECT_EQ(failure(fixture("nvidia-smi-error-nvml-mismatch-550.144.txt"), 18)["error"],
            "NVML driver/library version mismatch (NVML library 550.144): the loaded kernel module differs from the "
            "installed driver; reboot or reload the module");
  EXPECT_EQ(failure(fixture("nvidia-smi-error-nvml-mismatch-legacy-465.txt"), 18)["error"],
            "NVML driver/library version mismatch: the loaded kernel module differs from the installed driver; "
            "reboot or reload the module");
  // A mismatch says a reboot is due (the driver phase's reboot step reads it).
  EXPECT_EQ(failure(fixture("nvidia-smi-error-nvml-mismatch-550.144.txt"), 18)["driver_mismatch"], true);
  EXPECT_FALSE(failure(fixture("nvidia-smi-error-no-driver.txt"), 9).contains("driver_mismatch"));
}

TEST(NvidiaSmiFailure, MissingToolEmptyOutputAndOtherNvmlErrors) {
  const std::string not_installed = "nvidia-smi is not installed (command not found)";
  EXPECT_EQ(failure("bash: line 1: nvidia-smi: command not found\n", 127)["error"], not_installed);
  EXPECT_EQ(failure("sh: 1: nvidia-smi: not found\n", 127)["error"], not_installed);  // dash
  EXPECT_EQ(failure("", 127)["error"], not_installed);
  EXPECT_EQ(failure("", 0)["error"], "nvidia-smi printed nothing (exit code 0)");
  EXPECT_EQ(failure("\r\n", 255)["error"], "nvidia-smi printed nothing (exit code 255)");
  EXPECT_EQ(failure("No devices were found\n", 6)["error"], "nvidia-smi found no GPUs (No devices were found)");
  EXPECT_EQ(failure("Failed to initialize NVML: Unknown Error\n", 255)["error"],
            "nvidia-smi failed to initialize NVML: Unknown Error");
}

TEST(NvidiaSmiFailure, RealOutputIsNotAFailure) {
  for (const char* name : {"nvidia-smi-h100x8-550.90.07.txt", "nvidia-smi-h100x1-mig-590.48.01.txt",
                           "nvidia-smi-query-gpu-allfields-h200x1-590.48.01.csv", "nvidia-smi-topo-m-h100x8-cx7x12.txt"}) {
    EXPECT_EQ(nvidia_smi_failure(fixture(name), 0), std::nullopt) << name;
  }
  EXPECT_EQ(nvidia_smi_failure(kEightH100, 0), std::nullopt);
  EXPECT_EQ(nvidia_smi_failure("something else entirely", 1), std::nullopt);
}

// ------------------------------------------------------------------ table

json parsed_table(const std::string& text) {
  auto result = parse_nvidia_smi_table(text);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? result.value() : json();
}

TEST(NvidiaSmiTable, RealH100x8Driver550) {
  // No final newline, "|----" under the banner.
  const auto gpus = parsed_table(fixture("nvidia-smi-h100x8-550.90.07.txt"));
  EXPECT_EQ(gpus["driver_version"], "550.90.07");
  EXPECT_EQ(gpus["cuda_version"], "12.4");
  EXPECT_EQ(gpus["count"], 8);
  EXPECT_EQ(gpus["model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus["persistence_mode"], true);
  EXPECT_EQ(gpus["devices"][0], json::parse(R"({"index": 0, "name": "NVIDIA H100 80GB HBM3",
      "pci_bus_id": "00000000:19:00.0", "persistence_mode": true, "ecc_uncorrected_volatile": 0,
      "temperature_c": 27, "power_draw_w": 72.0, "memory_total_mib": 81559, "mig_mode": "Disabled"})"));
  EXPECT_EQ(gpus["devices"][7]["pci_bus_id"], "00000000:DB:00.0");
  EXPECT_EQ(gpus["devices"][7]["index"], 7);
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiTable, RealH100x8Driver590WithProcesses) {
  // "+----" under the banner, trailing blanks on the date line, busy GPUs
  // and a process table that must not count as GPUs.
  const auto gpus = parsed_table(fixture("nvidia-smi-h100x8-590.48.01.txt"));
  EXPECT_EQ(gpus["driver_version"], "590.48.01");
  EXPECT_EQ(gpus["cuda_version"], "13.1");
  EXPECT_EQ(gpus["count"], 8);
  EXPECT_EQ(gpus["devices"][0]["power_draw_w"], 139.0);
  EXPECT_EQ(gpus["devices"][5]["pci_bus_id"], "00000000:AB:00.0");
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiTable, RealA100x8Driver550InDocker) {
  const auto gpus = parsed_table(fixture("nvidia-smi-a100-sxm4-40gbx8-550.54.15.txt"));
  EXPECT_EQ(gpus["driver_version"], "550.54.15");
  EXPECT_EQ(gpus["cuda_version"], "12.4");
  EXPECT_EQ(gpus["count"], 8);
  EXPECT_EQ(gpus["model"], "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gpus["devices"][4]["pci_bus_id"], "00000000:8D:00.0");
  EXPECT_EQ(gpus["devices"][4]["memory_total_mib"], 40960);
  EXPECT_EQ(gpus["devices"][4]["temperature_c"], 35);
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiTable, RealH100WithMigEnabled) {
  const auto gpus = parsed_table(fixture("nvidia-smi-h100x1-mig-590.48.01.txt"));
  EXPECT_EQ(gpus["count"], 1) << "MIG device rows are not GPUs";
  const auto& gpu = gpus["devices"][0];
  EXPECT_EQ(gpu["mig_mode"], "Enabled");
  EXPECT_EQ(gpu["mig_devices"], 4);
  EXPECT_EQ(gpu["ecc_uncorrected_volatile"], nullptr) << "the ECC column says 'On' with MIG";
  EXPECT_EQ(gpu["memory_total_mib"], 81559);
  EXPECT_EQ(gpu["power_draw_w"], 98.0);
  EXPECT_EQ(gpus_schema_errors(gpus), "");
}

TEST(NvidiaSmiTable, CrlfGivesTheSameFacts) {
  const auto text = fixture("nvidia-smi-h100x8-590.48.01.txt");
  EXPECT_EQ(parsed_table(crlf(text)), parsed_table(text));
}

TEST(NvidiaSmiTable, OlderLayoutWithCutNamesAndPersistenceOff) {
  // Hand-made in the 470 layout: narrower columns, name cut with "...".
  const auto gpus = parsed_table(
      "+-----------------------------------------------------------------------------+\n"
      "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |\n"
      "|-------------------------------+----------------------+----------------------+\n"
      "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
      "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
      "|                               |                      |               MIG M. |\n"
      "|===============================+======================+======================|\n"
      "|   0  Tesla V100-SXM2...  Off  | 00000000:00:1E.0 Off |                    0 |\n"
      "| N/A   34C    P0    42W / 300W |      0MiB / 16160MiB |      0%      Default |\n"
      "|                               |                      |                  N/A |\n"
      "+-------------------------------+----------------------+----------------------+\n");
  EXPECT_EQ(gpus["driver_version"], "470.82.01");
  EXPECT_EQ(gpus["cuda_version"], "11.4");
  EXPECT_EQ(gpus["devices"][0]["name"], "Tesla V100-SXM2...");
  EXPECT_EQ(gpus["devices"][0]["persistence_mode"], false);
  EXPECT_EQ(gpus["devices"][0]["mig_mode"], nullptr);
  EXPECT_EQ(gpus["devices"][0]["memory_total_mib"], 16160);
  EXPECT_EQ(gpus["devices"][0]["temperature_c"], 34);
  EXPECT_EQ(gpus["devices"][0]["power_draw_w"], 42.0);
  EXPECT_EQ(gpus["persistence_mode"], false);
}

TEST(NvidiaSmiTable, Errors) {
  const auto error = [](const std::string& text) {
    auto result = parse_nvidia_smi_table(text);
    return result.ok() ? "parsed: " + result.value().dump() : result.error().message;
  };
  EXPECT_EQ(error(""), "nvidia-smi table: no 'Driver Version:' banner");
  EXPECT_EQ(error(fixture("nvidia-smi-error-no-driver.txt")), "nvidia-smi table: no 'Driver Version:' banner");
  const auto text = fixture("nvidia-smi-h100x8-550.90.07.txt");
  EXPECT_EQ(error(text.substr(0, text.find("|   0  "))), "nvidia-smi table: no GPU rows");
  EXPECT_EQ(error("| Driver Version:\n"), "nvidia-smi table: line 1: no driver version after 'Driver Version:'");
  EXPECT_EQ(error("\x80"), "nvidia-smi table: output is not valid UTF-8");
}

// --------------------------------------------------------------- topology

json parsed_topology(const std::string& text) {
  auto result = parse_nvidia_smi_topology(text);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? result.value() : json();
}

std::string topology_error(const std::string& text) {
  auto result = parse_nvidia_smi_topology(text);
  return result.ok() ? "parsed: " + result.value().dump() : result.error().message;
}

TEST(NvidiaSmiTopology, RealEightH100TwelveNics) {
  const auto topology = parsed_topology(fixture("nvidia-smi-topo-m-h100x8-cx7x12.txt"));
  const auto& devices = topology["devices"];
  ASSERT_EQ(devices.size(), 20u);
  EXPECT_EQ(devices[0], json::parse(R"({"label": "GPU0", "name": "GPU0", "kind": "gpu",
      "cpu_affinity": "0-191", "numa_affinity": "0", "gpu_numa_id": null})"));
  EXPECT_EQ(devices[8], json::parse(R"({"label": "NIC0", "name": "mlx5_0", "kind": "nic"})"));
  EXPECT_EQ(devices[19]["name"], "mlx5_11");
  const auto& links = topology["links"];
  EXPECT_EQ(links["GPU0"]["GPU1"], "NV18");
  EXPECT_EQ(links["GPU0"]["GPU0"], "X");
  EXPECT_EQ(links["GPU0"]["mlx5_0"], "PIX");
  EXPECT_EQ(links["GPU0"]["mlx5_1"], "NODE");
  EXPECT_EQ(links["GPU3"]["mlx5_5"], "PIX") << "NIC3/NIC4 are not GPU3's";
  EXPECT_EQ(links["mlx5_3"]["mlx5_4"], "PIX") << "two ports of one card";
  EXPECT_EQ(links["GPU7"]["mlx5_11"], "PIX");
  EXPECT_EQ(links["mlx5_11"]["GPU7"], "PIX");
  EXPECT_EQ(links.size(), 20u);
  EXPECT_EQ(gpus_schema_errors({{"count", 8}, {"topology", topology}}), "");
}

TEST(NvidiaSmiTopology, RealSingleH100WithAnsiEscapes) {
  const auto topology = parsed_topology(fixture("nvidia-smi-topo-m-h100x1-ansi-escapes.txt"));
  EXPECT_EQ(topology, json::parse(R"({"devices": [{"label": "GPU0", "name": "GPU0", "kind": "gpu",
      "cpu_affinity": "0-19", "numa_affinity": "0", "gpu_numa_id": null}],
      "links": {"GPU0": {"GPU0": "X"}}})"));
  EXPECT_EQ(gpus_schema_errors({{"topology", topology}}), "");
}

TEST(NvidiaSmiTopology, OlderLayoutWithNicNamesAsColumnsAndCrlf) {
  // Hand-made in the older layout: NICs are columns by their own names, no
  // GPU NUMA ID column, no NIC Legend.
  const auto topology = parsed_topology(crlf(
      "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tNV12\tSYS\t0-23,48-71\t0\n"
      "GPU1\tNV12\t X \tPXB\t24-47,72-95\t1\n"
      "mlx5_0\tSYS\tPXB\t X \t\t\n"
      "\n"
      "Legend:\n"
      "  X    = Self\n"));
  EXPECT_EQ(topology["links"]["GPU1"]["mlx5_0"], "PXB");
  EXPECT_EQ(topology["devices"][1]["cpu_affinity"], "24-47,72-95");
  EXPECT_EQ(topology["devices"][1]["numa_affinity"], "1");
  EXPECT_EQ(topology["devices"][2], json::parse(R"({"label": "mlx5_0", "name": "mlx5_0", "kind": "nic"})"));
  EXPECT_EQ(gpus_schema_errors({{"topology", topology}}), "");
}

TEST(NvidiaSmiTopology, GpuNumaIdNumber) {
  const auto topology = parsed_topology("\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-71\t0\t\t4\n");
  EXPECT_EQ(topology["devices"][0]["gpu_numa_id"], 4);
  EXPECT_EQ(topology_error("\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-71\t0\t\tfour\n"),
            "nvidia-smi topo: row GPU0: GPU NUMA ID 'four' is not a number");
}

TEST(NvidiaSmiTopology, Errors) {
  const auto text = fixture("nvidia-smi-topo-m-h100x8-cx7x12.txt");
  EXPECT_EQ(topology_error(""), "nvidia-smi topo: empty output");
  EXPECT_EQ(topology_error("hello\n"), "nvidia-smi topo: line 1: not the matrix header (a tab, then GPU0, GPU1, ...)");
  EXPECT_EQ(topology_error(fixture("nvidia-smi-error-no-driver.txt")),
            "nvidia-smi topo: line 1: not the matrix header (a tab, then GPU0, GPU1, ...)");
  // Cut after NIC1's row: the matrix is incomplete.
  size_t cut = 0;
  for (int i = 0; i < 11; ++i) cut = text.find('\n', cut) + 1;
  EXPECT_EQ(topology_error(text.substr(0, cut)), "nvidia-smi topo: no row for NIC2");
  EXPECT_EQ(topology_error(text.substr(0, text.find("\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPIX"))),
            "nvidia-smi topo: row GPU0 has 1 links, expected 20");
  EXPECT_EQ(topology_error("\tGPU0\tGPU1\nGPU0\t X \t\nGPU1\tNV4\t X \n"), "nvidia-smi topo: row GPU0 has no link to GPU1");
  EXPECT_EQ(topology_error("\tGPU0\nGPU9\t X \n"), "nvidia-smi topo: line 2: 'GPU9' is not a column of the header");
  EXPECT_EQ(topology_error("\tGPU0\nGPU0\t X \nGPU0\t X \n"), "nvidia-smi topo: line 3: second row for GPU0");
  EXPECT_EQ(topology_error("\tGPU0\tCPU Affinity\nGPU0\t X \t0-3\t1\n"),
            "nvidia-smi topo: row GPU0 has 2 affinity values, expected 1");
  EXPECT_EQ(topology_error("\tCPU Affinity\n"), "nvidia-smi topo: line 1: the header names no GPU or NIC");
  EXPECT_EQ(topology_error("\t\xc3(\n"), "nvidia-smi topo: output is not valid UTF-8");
}

TEST(FactsSchema, RejectsWhatItShould) {
  // The validator used above is live: a wrong shape is reported.
  EXPECT_NE(gpus_schema_errors({{"topology", "GPU0 X"}}), "");
  EXPECT_NE(gpus_schema_errors({{"devices", {{{"index", 0}}}}}), "") << "name is required";
  EXPECT_NE(gpus_schema_errors({{"extra", 1}}), "");
}

}  // namespace
}  // namespace gpuexpand
