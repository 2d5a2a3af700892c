// Parsers for nvidia-smi's query CSV, default table, failure texts and
// `topo -m` matrix. Tested on real captures in tests/fixtures/tool-output/.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>

#include "gpuexpand/facts/tool_parsers.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;
using tool_text::lines;
using tool_text::number;
using tool_text::trim;
using tool_text::valid_utf8;

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = s.find(separator);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// nvidia-smi's ways of saying "no value": "[N/A]", "[Not Supported]",
// "[Unknown Error]", "[Requested functionality has been deprecated]", "N/A",
// and an empty field.
bool is_missing(std::string_view v) { return v.empty() || v == "N/A" || (v.front() == '[' && v.back() == ']'); }

std::optional<double> finite_number(std::string_view s) {
  auto value = number<double>(s);  // from_chars also reads "nan" and "inf"
  if (value && !std::isfinite(*value)) return std::nullopt;
  return value;
}

// "81559 MiB" -> "81559" (the header form prints units; nounits does not).
std::string_view without_unit(std::string_view v, std::string_view unit) {
  if (v.size() > unit.size() && v.ends_with(unit)) return trim(v.substr(0, v.size() - unit.size()));
  return v;
}

// The summary every `gpus` object has, from its devices.
json summarize(json devices, json driver_version) {
  json gpus = json::object();
  gpus["driver_version"] = std::move(driver_version);
  gpus["count"] = devices.size();
  json models = json::array();
  std::optional<bool> persistence = devices.empty() ? std::nullopt : std::optional<bool>(true);
  for (const auto& device : devices) {
    const auto& name = device["name"];
    if (std::find(models.begin(), models.end(), name) == models.end()) models.push_back(name);
    const auto p = device.find("persistence_mode");
    if (p != device.end() && p->is_boolean()) {
      if (!p->get<bool>()) persistence = false;
    } else if (persistence.value_or(false)) {
      persistence = std::nullopt;  // unknown on one GPU, none seen off yet
    }
  }
  gpus["model"] = models.empty() ? json(nullptr) : models[0];
  if (models.size() > 1) gpus["models"] = models;
  gpus["persistence_mode"] = persistence ? json(*persistence) : json(nullptr);
  gpus["devices"] = std::move(devices);
  return gpus;
}

// ------------------------------------------------------------------ query CSV

constexpr std::string_view kQuery = "nvidia-smi query: ";

// A header line is all field names ("memory.total [MiB]"); a data line
// starts with an index or a GPU name, which has blanks.
std::string_view column_name(std::string_view field) { return trim(field.substr(0, field.find(" ["))); }

bool is_header(const std::vector<std::string_view>& fields) {
  return std::all_of(fields.begin(), fields.end(), [](std::string_view field) {
    const auto name = column_name(field);
    return !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
           std::all_of(name.begin(), name.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
           });
  });
}

Error field_error(size_t line, std::string_view field, std::string_view value, std::string_view expected) {
  return make_error(std::string(kQuery) + "line " + std::to_string(line) + ": " + std::string(field) + " '" +
                    std::string(value) + "' is not " + std::string(expected));
}

using Row = std::map<std::string_view, std::string_view>;

// One gpu_device from a row; only queried columns become keys.
Result<json> device_from_row(const Row& row, size_t line, size_t position) {
  json device = json::object();
  const auto get = [&](std::string_view column) -> std::optional<std::string_view> {
    const auto it = row.find(column);
    if (it == row.end()) return std::nullopt;
    return it->second;
  };

  if (const auto index = get("index")) {
    const auto value = number<std::int64_t>(*index);
    if (!value) return field_error(line, "index", *index, "a number");
    device["index"] = *value;
  } else {
    device["index"] = position;
  }
  const auto name = get("name").value_or("");
  if (is_missing(name)) return field_error(line, "name", name, "a GPU name");
  device["name"] = name;

  const auto text = [&](std::string_view column, const char* key) {
    if (const auto v = get(column)) device[key] = is_missing(*v) ? json(nullptr) : json(*v);
  };
  text("uuid", "uuid");
  text("pci.bus_id", "pci_bus_id");
  text("ecc.mode.current", "ecc_mode");
  text("mig.mode.current", "mig_mode");  // not in the probe's list; header form only

  struct Numeric {
    std::string_view column;
    const char* key;
    std::string_view unit;
    bool integer;
  };
  for (const Numeric& n : {Numeric{"memory.total", "memory_total_mib", "MiB", true},
                           Numeric{"ecc.errors.uncorrected.volatile.total", "ecc_uncorrected_volatile", "", true},
                           Numeric{"temperature.gpu", "temperature_c", "", true},
                           Numeric{"power.draw", "power_draw_w", "W", false}}) {
    const auto v = get(n.column);
    if (!v) continue;
    if (is_missing(*v)) {
      device[n.key] = nullptr;
      continue;
    }
    const auto digits = n.unit.empty() ? *v : without_unit(*v, n.unit);
    if (n.integer) {
      const auto value = number<std::int64_t>(digits);
      if (!value) return field_error(line, n.column, *v, "a whole number");
      device[n.key] = *value;
    } else {
      const auto value = finite_number(digits);
      if (!value) return field_error(line, n.column, *v, "a number");
      device[n.key] = *value;
    }
  }

  if (const auto v = get("persistence_mode")) {
    if (is_missing(*v)) {
      device["persistence_mode"] = nullptr;
    } else if (*v == "Enabled" || *v == "Disabled") {
      device["persistence_mode"] = *v == "Enabled";
    } else {
      return field_error(line, "persistence_mode", *v, "Enabled or Disabled");
    }
  }
  return device;
}

// ---------------------------------------------------------------- table

// The token after `label` on `line` ("Driver Version:" -> "550.90.07").
std::optional<std::string_view> token_after(std::string_view line, std::string_view label) {
  const auto at = line.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  const auto rest = words(line.substr(at + label.size()));
  if (rest.empty() || rest[0] == "|") return std::nullopt;
  return rest[0];
}

// "|  0  NVIDIA H100 ...  On  |  00000000:19:00.0 Off |  0 |" -> cells.
std::vector<std::string_view> table_cells(std::string_view line) {
  line.remove_prefix(1);
  if (!line.empty() && line.back() == '|') line.remove_suffix(1);
  auto cells = split(line, '|');
  for (auto& cell : cells) cell = trim(cell);
  return cells;
}

// First row of a GPU block: "<index>  <name>  <On|Off>" in the first cell.
std::optional<json> gpu_first_row(const std::vector<std::string_view>& cells) {
  if (cells.size() < 3) return std::nullopt;
  const auto first = cells[0];
  size_t digits = 0;
  while (digits < first.size() && is_digit(first[digits])) ++digits;
  if (digits == 0 || digits == first.size() || !is_space(first[digits])) return std::nullopt;
  const auto index = number<std::int64_t>(first.substr(0, digits));
  auto name = trim(first.substr(digits));
  if (!index || name.empty()) return std::nullopt;

  json device = {{"index", *index}};
  json persistence = nullptr;
  for (const auto& [suffix, on] : {std::pair<std::string_view, bool>{" On", true}, {" Off", false}}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      persistence = on;
      name = trim(name.substr(0, name.size() - suffix.size()));
    }
  }
  device["name"] = name;
  const auto bus = words(cells[1]);
  device["pci_bus_id"] = bus.empty() ? json(nullptr) : json(bus[0]);
  device["persistence_mode"] = persistence;
  // "Volatile Uncorr. ECC": a count, "N/A" without ECC, and "On" with MIG
  // enabled (the counts are then per MIG device).
  const auto ecc = number<std::int64_t>(cells[2]);
  device["ecc_uncorrected_volatile"] = ecc ? json(*ecc) : json(nullptr);
  device["temperature_c"] = nullptr;
  device["power_draw_w"] = nullptr;
  device["memory_total_mib"] = nullptr;
  device["mig_mode"] = nullptr;
  return device;
}

// Second row: "N/A   27C    P0    72W /  700W | 1MiB /  81559MiB | 0%  Default".
// The fan column is "N/A" on these GPUs, so the power "/" is found as a word.
void gpu_second_row(const std::vector<std::string_view>& cells, json& device) {
  if (cells.size() < 2) return;
  const auto tokens = words(cells[0]);
  const auto slash = static_cast<size_t>(std::find(tokens.begin(), tokens.end(), "/") - tokens.begin());
  for (size_t i = 0; i < std::min(slash, tokens.size()); ++i) {
    if (tokens[i].size() > 1 && tokens[i].back() == 'C' && is_digit(tokens[i][0])) {
      if (const auto t = number<std::int64_t>(tokens[i].substr(0, tokens[i].size() - 1))) device["temperature_c"] = *t;
    }
  }
  if (slash > 0 && slash < tokens.size()) {
    if (const auto w = finite_number(without_unit(tokens[slash - 1], "W"))) device["power_draw_w"] = *w;
  }
  const auto memory = cells[1].find('/');
  if (memory != std::string_view::npos) {
    if (const auto mib = number<std::int64_t>(without_unit(trim(cells[1].substr(memory + 1)), "MiB"))) {
      device["memory_total_mib"] = *mib;
    }
  }
}

// ---------------------------------------------------------------- topo -m

constexpr std::string_view kTopo = "nvidia-smi topo: ";

// ESC [ params final-byte (colours, underline). One capture has them.
std::string without_ansi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\x1b') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
    } else {
      ++i;  // two-character escape
    }
  }
  return out;
}

bool is_gpu_label(std::string_view label) {
  return label.size() > 3 && label.starts_with("GPU") &&
         std::all_of(label.begin() + 3, label.end(), [](char c) { return is_digit(c); });
}

std::string line_prefix(std::string_view tool, size_t line) {
  return std::string(tool) + "line " + std::to_string(line) + ": ";
}

}  // namespace

std::string nvidia_smi_query_command() {
  return "nvidia-smi --query-gpu=" + std::string(kNvidiaSmiQueryFields) + " --format=" +
         std::string(kNvidiaSmiQueryFormat);
}

Result<json> parse_nvidia_smi_query(std::string_view csv) {
  if (!valid_utf8(csv)) return make_error(std::string(kQuery) + "output is not valid UTF-8");
  if (trim(csv).empty()) return make_error(std::string(kQuery) + "empty output");
  if (const auto failure = nvidia_smi_failure(csv, 0)) {
    return make_error(std::string(kQuery) + (*failure)["error"].get<std::string>());
  }

  std::vector<std::string_view> columns = split(kNvidiaSmiQueryFields, ',');
  bool first = true;
  json devices = json::array();
  json driver = nullptr;
  const auto all = lines(csv);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto line = trim(all[i]);
    const size_t number_in_text = i + 1;
    if (line.empty()) continue;
    auto fields = split(line, ',');
    for (auto& field : fields) field = trim(field);

    if (std::exchange(first, false) && is_header(fields)) {
      columns.clear();
      for (const auto field : fields) columns.push_back(column_name(field));
      if (std::find(columns.begin(), columns.end(), "name") == columns.end()) {
        return make_error(std::string(kQuery) + "the header has no name column");
      }
      continue;
    }
    // What nvidia-smi prints in place of a row for a GPU that fell off the bus.
    if (line.starts_with("Unable to determine the device handle")) {
      return make_error(line_prefix(kQuery, number_in_text) + std::string(line));
    }
    if (fields.size() != columns.size()) {
      return make_error(std::string(kQuery) + "line " + std::to_string(number_in_text) + " has " +
                        std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields") +
                        ", expected " + std::to_string(columns.size()));
    }
    Row row;
    for (size_t c = 0; c < columns.size(); ++c) row[columns[c]] = fields[c];
    auto device = device_from_row(row, number_in_text, devices.size());
    if (!device) return device.error();
    if (const auto it = row.find("driver_version"); it != row.end() && driver.is_null() && !is_missing(it->second)) {
      driver = it->second;
    }
    devices.push_back(std::move(device).value());
  }
  if (devices.empty()) return make_error(std::string(kQuery) + "no GPU lines after the header");
  return summarize(std::move(devices), std::move(driver));
}

std::optional<json> nvidia_smi_failure(std::string_view output, int exit_code) {
  const auto failed = [](std::string message) {
    return json{{"count", 0},          {"devices", json::array()}, {"driver_version", nullptr},
                {"cuda_version", nullptr}, {"model", nullptr},         {"persistence_mode", nullptr},
                {"error", std::move(message)}};
  };
  const auto text = trim(output);
  const auto has = [&](std::string_view needle) { return text.find(needle) != std::string_view::npos; };

  // bash: "nvidia-smi: command not found"; dash: "sh: 1: nvidia-smi: not found".
  if (exit_code == 127 || has("nvidia-smi: command not found") || has("nvidia-smi: not found")) {
    return failed("nvidia-smi is not installed (command not found)");
  }
  if (text.empty()) return failed("nvidia-smi printed nothing (exit code " + std::to_string(exit_code) + ")");
  if (has("couldn't communicate with the NVIDIA driver")) {
    return failed("nvidia-smi cannot communicate with the NVIDIA driver: it is not installed or not loaded");
  }
  if (has("Driver/library version mismatch")) {
    // Newer drivers add "NVML library version: 550.144" (the user-space side).
    std::string library;
    if (const auto v = token_after(text, "NVML library version:");
        v && std::all_of(v->begin(), v->end(), [](char c) { return is_digit(c) || c == '.'; })) {
      library = " (NVML library " + std::string(*v) + ")";
    }
    json gpus = failed("NVML driver/library version mismatch" + library +
                       ": the loaded kernel module differs from the installed driver; reboot or reload the module");
    gpus["driver_mismatch"] = true;  // the reboot after a driver change is due
    return gpus;
  }
  if (const auto at = text.find("Failed to initialize NVML: "); at != std::string_view::npos) {
    const auto reason = trim(split(text.substr(at + 27), '\n')[0]);
    return failed("nvidia-smi failed to initialize NVML: " +
                  (valid_utf8(reason) ? std::string(reason) : std::string("unreadable reason")));
  }
  if (has("No devices were found")) return failed("nvidia-smi found no GPUs (No devices were found)");
  return std::nullopt;
}

Result<json> parse_nvidia_smi_table(std::string_view text) {
  constexpr std::string_view kTable = "nvidia-smi table: ";
  if (!valid_utf8(text)) return make_error(std::string(kTable) + "output is not valid UTF-8");
  const auto all = lines(text);
  size_t banner = 0;
  while (banner < all.size() && all[banner].find("Driver Version:") == std::string_view::npos) ++banner;
  if (banner == all.size()) return make_error(std::string(kTable) + "no 'Driver Version:' banner");
  const auto driver = token_after(all[banner], "Driver Version:");
  const auto cuda = token_after(all[banner], "CUDA Version:");
  if (!driver) return make_error(line_prefix(kTable, banner + 1) + "no driver version after 'Driver Version:'");

  enum class Section { kGpus, kMig, kOther } section = Section::kGpus;
  json devices = json::array();
  std::map<std::int64_t, std::int64_t> mig_devices;  // by GPU index
  bool mig_table = false;
  size_t row_in_block = 0;  // 1 = the GPU's first row
  for (size_t i = banner + 1; i < all.size(); ++i) {
    const auto line = trim(all[i]);
    if (line.find("MIG devices:") != std::string_view::npos) {
      section = Section::kMig;
      mig_table = true;
      continue;
    }
    if (line.find("Processes:") != std::string_view::npos) section = Section::kOther;
    if (!line.starts_with('|')) {
      row_in_block = 0;  // "+----+" ends a GPU block
      continue;
    }
    const auto cells = table_cells(line);
    if (section == Section::kMig) {
      // "|  0    2   0   0  | ..." = GPU, GI, CI, MIG device.
      const auto ids = words(cells[0]);
      if (ids.size() == 4 && std::all_of(ids.begin(), ids.end(), [](auto w) { return number<int>(w).has_value(); })) {
        ++mig_devices[*number<std::int64_t>(ids[0])];
      }
      continue;
    }
    if (section != Section::kGpus) continue;
    if (auto device = gpu_first_row(cells)) {
      devices.push_back(std::move(*device));
      row_in_block = 1;
    } else if (row_in_block == 1 && !devices.empty()) {
      gpu_second_row(cells, devices.back());
      row_in_block = 2;
    } else if (row_in_block == 2 && !devices.empty() && cells.size() >= 3 && cells[0].empty()) {
      // Third row (drivers >= 450): "MIG M." in the last cell.
      devices.back()["mig_mode"] = is_missing(cells[2]) ? json(nullptr) : json(cells[2]);
      row_in_block = 3;
    }
  }
  if (devices.empty()) return make_error(std::string(kTable) + "no GPU rows");
  if (mig_table) {
    for (auto& device : devices) {
      if (device["mig_mode"] == "Enabled") device["mig_devices"] = mig_devices[device["index"].get<std::int64_t>()];
    }
  }
  auto gpus = summarize(std::move(devices), json(*driver));
  gpus["cuda_version"] = (!cuda || is_missing(*cuda)) ? json(nullptr) : json(*cuda);
  return gpus;
}

Result<json> parse_nvidia_smi_topology(std::string_view raw) {
  if (!valid_utf8(raw)) return make_error(std::string(kTopo) + "output is not valid UTF-8");
  const std::string text = without_ansi(raw);
  const auto all = lines(text);
  size_t at = 0;
  while (at < all.size() && trim(all[at]).empty()) ++at;
  if (at == all.size()) return make_error(std::string(kTopo) + "empty output");

  // Header: "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID".
  // Device columns come first; the others have blanks in their names.
  const auto header = split(all[at], '\t');
  if (header.size() < 2 || !trim(header[0]).empty()) {
    return make_error(line_prefix(kTopo, at + 1) + "not the matrix header (a tab, then GPU0, GPU1, ...)");
  }
  std::vector<std::string_view> labels;
  std::vector<std::string_view> extra;  // CPU Affinity, NUMA Affinity, GPU NUMA ID
  for (size_t c = 1; c < header.size(); ++c) {
    const auto name = trim(header[c]);
    if (name.empty()) continue;
    if (extra.empty() && name.find(' ') == std::string_view::npos) {
      labels.push_back(name);
    } else {
      extra.push_back(name);
    }
  }
  if (labels.empty()) return make_error(line_prefix(kTopo, at + 1) + "the header names no GPU or NIC");

  // Rows until the blank line before "Legend:".
  std::vector<std::vector<std::string_view>> links(labels.size());
  std::vector<std::vector<std::string_view>> extras(labels.size());
  size_t row = at + 1;
  for (; row < all.size(); ++row) {
    const auto line = trim(all[row]);
    if (line.empty() || line.starts_with("Legend")) break;
    const auto cells = split(all[row], '\t');
    const auto label = trim(cells[0]);
    const auto pos = static_cast<size_t>(std::find(labels.begin(), labels.end(), label) - labels.begin());
    if (pos == labels.size()) {
      return make_error(line_prefix(kTopo, row + 1) + "'" + std::string(label) + "' is not a column of the header");
    }
    if (!links[pos].empty()) return make_error(line_prefix(kTopo, row + 1) + "second row for " + std::string(label));
    if (cells.size() - 1 < labels.size()) {
      return make_error(std::string(kTopo) + "row " + std::string(label) + " has " + std::to_string(cells.size() - 1) +
                        " links, expected " + std::to_string(labels.size()));
    }
    for (size_t c = 0; c < labels.size(); ++c) {
      const auto value = trim(cells[c + 1]);
      if (value.empty()) {
        return make_error(std::string(kTopo) + "row " + std::string(label) + " has no link to " +
                          std::string(labels[c]));
      }
      links[pos].push_back(value);
    }
    // After the links, nvidia-smi puts an extra tab before "GPU NUMA ID"
    // and NIC rows have only tabs: keep the values, in header order.
    for (size_t c = labels.size() + 1; c < cells.size(); ++c) {
      if (const auto value = trim(cells[c]); !value.empty()) extras[pos].push_back(value);
    }
    if (extras[pos].size() > extra.size()) {
      return make_error(std::string(kTopo) + "row " + std::string(label) + " has " +
                        std::to_string(extras[pos].size()) + " affinity values, expected " +
                        std::to_string(extra.size()));
    }
  }
  for (size_t d = 0; d < labels.size(); ++d) {
    if (links[d].empty()) return make_error(std::string(kTopo) + "no row for " + std::string(labels[d]));
  }

  // "NIC Legend:" maps NIC0 -> mlx5_0 (drivers before ~470 print mlx5_0 as
  // the column itself).
  std::map<std::string_view, std::string_view> legend;
  bool in_legend = false;
  for (; row < all.size(); ++row) {
    const auto line = trim(all[row]);
    if (line == "NIC Legend:") {
      in_legend = true;
    } else if (in_legend && !line.empty()) {
      const auto colon = line.find(':');
      if (colon != std::string_view::npos) legend[trim(line.substr(0, colon))] = trim(line.substr(colon + 1));
    }
  }

  std::vector<std::string_view> names;
  json devices = json::array();
  for (size_t d = 0; d < labels.size(); ++d) {
    const auto it = legend.find(labels[d]);
    names.push_back(it != legend.end() && !it->second.empty() ? it->second : labels[d]);
    json device = {{"label", labels[d]}, {"name", names.back()}, {"kind", is_gpu_label(labels[d]) ? "gpu" : "nic"}};
    if (is_gpu_label(labels[d])) {
      device["cpu_affinity"] = nullptr;
      device["numa_affinity"] = nullptr;
      device["gpu_numa_id"] = nullptr;
      for (size_t e = 0; e < extras[d].size(); ++e) {
        const auto value = extras[d][e];
        if (is_missing(value)) continue;
        if (extra[e] == "CPU Affinity") {
          device["cpu_affinity"] = value;
        } else if (extra[e] == "NUMA Affinity") {
          device["numa_affinity"] = value;
        } else if (extra[e] == "GPU NUMA ID") {
          const auto id = number<std::int64_t>(value);
          if (!id) {
            return make_error(std::string(kTopo) + "row " + std::string(labels[d]) + ": GPU NUMA ID '" +
                              std::string(value) + "' is not a number");
          }
          device["gpu_numa_id"] = *id;
        }
      }
    }
    devices.push_back(std::move(device));
  }
  json matrix = json::object();
  for (size_t r = 0; r < labels.size(); ++r) {
    json row_links = json::object();
    for (size_t c = 0; c < labels.size(); ++c) row_links[std::string(names[c])] = links[r][c];
    matrix[std::string(names[r])] = std::move(row_links);
  }
  return json{{"devices", std::move(devices)}, {"links", std::move(matrix)}};
}

}  // namespace gpuexpand
