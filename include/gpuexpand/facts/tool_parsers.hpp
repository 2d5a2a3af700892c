#pragma once
// Pure parsers for what GPU and RDMA tools print on a node. The probe runs
// the tools in its one SSH round trip and hands their text here; each
// parser returns a fragment of the facts document (schemas/facts.schema.json:
// the `gpus` object or `network.rdma` ports). No I/O, no exceptions: text
// the parser does not understand is an Error with one exact line, because a
// misread fact would make the planner change a node for the wrong reason.
//
// Conventions shared by all parsers:
// - A value the tool could not read ("[N/A]", "[Not Supported]", "N/A") is
//   null, never guessed.
// - CRLF line ends, trailing blanks and a missing final newline are accepted.
// - Output that is not valid UTF-8 is an error (it could not be stored in
//   the JSON facts document).

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "gpuexpand/util/result.hpp"

namespace gpuexpand {

// ----------------------------------------------------------------- nvidia-smi

// The --query-gpu list the probe runs, in the column order
// parse_nvidia_smi_query expects for the headerless form. The probe builds
// its command from this constant so the two cannot drift apart.
inline constexpr std::string_view kNvidiaSmiQueryFields =
    "index,name,uuid,pci.bus_id,driver_version,memory.total,persistence_mode,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.total,temperature.gpu,power.draw";
inline constexpr std::string_view kNvidiaSmiQueryFormat = "csv,noheader,nounits";

// "nvidia-smi --query-gpu=<kNvidiaSmiQueryFields> --format=csv,noheader,nounits"
std::string nvidia_smi_query_command();

// Output of the query command above. Returns the facts `gpus` object:
//   {driver_version, count, model, persistence_mode, devices: [gpu_device]}
// plus "models" (distinct names, index order) when the GPUs differ; `model`
// is then GPU 0's. persistence_mode is true only if every GPU has it on,
// false if any has it off, else null.
// Also accepts --format=csv with a header (any field order and subset, units
// such as "81559 MiB" or "77.71 W"): columns are found by name, fields not
// queried are absent, and without an index column a GPU's index is its row
// (nvidia-smi lists GPUs in index order).
Result<nlohmann::json> parse_nvidia_smi_query(std::string_view csv);

// Recognises nvidia-smi's failure texts: driver not loaded, NVML
// driver/library version mismatch, any other "Failed to initialize NVML",
// "No devices were found", command not found (text or exit 127), empty
// output. Returns the `gpus` object {count: 0, devices: [], driver_version:
// null, cuda_version: null, model: null, persistence_mode: null, error:
// "<one line>"}; nullopt when the text is not a known failure.
std::optional<nlohmann::json> nvidia_smi_failure(std::string_view output, int exit_code);

// The default `nvidia-smi` table: driver and CUDA version from the banner,
// and per GPU the index, name (may be cut short by old drivers), bus id,
// persistence mode, temperature, power draw, memory total, volatile
// uncorrected ECC count, MIG mode and (with MIG on) the number of MIG
// devices. Same shape as parse_nvidia_smi_query plus cuda_version.
Result<nlohmann::json> parse_nvidia_smi_table(std::string_view text);

// `nvidia-smi topo -m`: the `gpus.topology` object
//   {devices: [{label, name, kind, cpu_affinity, numa_affinity, gpu_numa_id}],
//    links: {name: {name: "X" | "NV18" | "PIX" | "PXB" | "PHB" | "NODE" | "SYS"}}}
// `label` is the column as printed (GPU0, NIC3); `name` is the NIC's RDMA
// device from the NIC Legend (mlx5_3) so links join with network.rdma.
// Affinity keys are present for GPUs only ("N/A" -> null).
Result<nlohmann::json> parse_nvidia_smi_topology(std::string_view text);

// ----------------------------------------------------------------------- RDMA
// Port states are normalised so ibstat and `rdma link` agree: state is
// lower case with "Initializing" -> "init" (down, init, armed, active);
// physical_state is snake case (link_up, disabled, polling, ...);
// link_layer is lower case (infiniband, ethernet).

// `ibstat`: one `network.rdma` port (rdma_port) per CA port, netdev null.
// An "ibpanic:" line (ibstat exits 255) is an error: the list would be
// silently incomplete.
Result<nlohmann::json> parse_ibstat(std::string_view text);

// `ibdev2netdev` lines "mlx5_0 port 1 ==> ibp12s0 (Up)":
// [{device, port, netdev, netdev_state: "up" | "down"}]. Empty output is [].
Result<nlohmann::json> parse_ibdev2netdev(std::string_view text);

// `rdma link show` lines "link mlx5_0/1 state ACTIVE physical_state LINK_UP
// netdev ens1f0np0": [{device, port, state, physical_state, netdev}] (valid
// rdma_port objects; netdev null when the line has none). Empty output is [].
Result<nlohmann::json> parse_rdma_link(std::string_view text);

// Sets `netdev` of each port from the entries (either parser above) with
// the same device and port; other ports are left as they are. Never throws:
// entries of the wrong shape are skipped.
nlohmann::json merge_rdma_netdevs(nlohmann::json ports, const nlohmann::json& netdevs);

// apt's source files as the probe prints them ("@@file PATH", then the
// file): [{file, uris, suites, enabled}] per one-line entry (deb, deb-src)
// of a .list file or /etc/apt/sources.list and per deb822 stanza of a
// .sources file. Lines it cannot read are skipped.
nlohmann::json apt_sources_facts(std::string_view body);

// ------------------------------------------------------------------ internal
// Text helpers shared by the parsers (inline here because the parsers live
// in two files); not part of the API.
namespace tool_text {

inline std::string_view trim(std::string_view s) {
  constexpr std::string_view kBlank = " \t\r\n\f\v";
  const auto first = s.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlank) - first + 1);
}

// Lines without their "\n" or "\r\n"; a final line without newline counts,
// an empty text has no lines. Index + 1 is the line number in messages.
inline std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

// nlohmann::json::dump throws on invalid UTF-8, so such text never reaches
// the facts document.
inline bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t extra = 0;
    if (c < 0x80) extra = 0;
    else if (c >= 0xC2 && c <= 0xDF) extra = 1;
    else if (c >= 0xE0 && c <= 0xEF) extra = 2;
    else if (c >= 0xF0 && c <= 0xF4) extra = 3;
    else return false;
    if (i + extra >= s.size()) return false;  // sequence cut short
    for (size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    // Overlong 3/4-byte forms, UTF-16 surrogates and code points > U+10FFFF.
    if (extra >= 2) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
          (c == 0xF4 && c1 > 0x8F))
        return false;
    }
    i += extra + 1;
  }
  return true;
}

// The whole of `s` as a number (std::from_chars: no locale, no exceptions).
template <class T>
std::optional<T> number(std::string_view s) {
  T value{};
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace tool_text

}  // namespace gpuexpand
