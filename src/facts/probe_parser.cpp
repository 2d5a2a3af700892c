// Turns the probe's marked sections into a facts document. Every section
// is optional: a tool that is missing, or prints garbage, leaves its facts
// absent or null (never guessed), and the planner then says '?' for them.

#include <fnmatch.h>

#include "gpuexpand/util/utf8.hpp"

#include <charconv>
#include <map>
#include <algorithm>
#include <sstream>
#include <optional>
#include <set>

#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/facts/tool_parsers.hpp"
#include "gpuexpand/util/hostlist.hpp"
#include "gpuexpand/util/base64.hpp"
#include "gpuexpand/util/digest.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

struct Section {
  std::string name;
  std::string arg;
  std::string body;
};

std::vector<Section> split_sections(std::string_view output) {
  std::vector<Section> sections;
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(pos, end - pos);
    if (line.rfind("@@gpx:", 0) == 0) {
      Section s;
      std::string_view header = line.substr(6);
      const size_t space = header.find(' ');
      s.name = std::string(header.substr(0, space));
      if (space != std::string_view::npos) s.arg = std::string(header.substr(space + 1));
      sections.push_back(std::move(s));
    } else if (!sections.empty()) {
      sections.back().body.append(line.data(), line.size());
      sections.back().body += '\n';
    }
    pos = end + 1;
  }
  // The generator prints an empty line before each marker.
  for (auto& s : sections) {
    while (!s.body.empty() && s.body.back() == '\n') s.body.pop_back();
  }
  return sections;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  return out;
}

std::string unquote(std::string v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return v;
}

template <class T>
std::optional<T> to_number(std::string_view s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::string trimmed(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

// A check's answer: its exit code, then the last line it printed (its
// own words on what is wrong), kept when there is one.
void record_check(const Section& s, json& facts) {
  const auto body_lines = lines_of(s.body);
  if (body_lines.empty()) return;
  auto code = to_number<int>(trimmed(body_lines.front()));
  if (!code) return;
  facts["checks"][s.arg] = *code;
  if (body_lines.size() > 1) {
    const std::string said = trimmed(replace_invalid_utf8(body_lines[1]));
    if (!said.empty()) facts["check_output"][s.arg] = said;
  }
}

json os_facts(const std::string& os_release, const std::string& kernel, const std::string& managers) {
  std::map<std::string, std::string> fields;
  for (const auto& line : lines_of(os_release)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) fields[line.substr(0, eq)] = unquote(line.substr(eq + 1));
  }
  json os = json::object();
  if (fields.count("ID")) os["id"] = fields["ID"];
  if (fields.count("VERSION_ID")) os["version_id"] = fields["VERSION_ID"];
  if (fields.count("PRETTY_NAME")) os["pretty_name"] = fields["PRETTY_NAME"];
  const std::string family_hint = fields["ID"] + " " + fields["ID_LIKE"];
  auto mentions = [&](const char* word) { return family_hint.find(word) != std::string::npos; };
  os["family"] = (mentions("debian") || mentions("ubuntu")) ? "debian"
                 : (mentions("rhel") || mentions("fedora") || mentions("centos") || mentions("rocky")) ? "rhel"
                                                                                                         : "other";
  const auto k = lines_of(kernel);
  if (!k.empty()) os["kernel"] = k[0];
  if (k.size() > 1) os["arch"] = k[1];
  const auto m = lines_of(managers);
  os["package_manager"] = m.empty() ? "none" : (m[0] == "apt-get" ? "apt" : m[0]);
  return os;
}

std::string timezone_from(const std::string& body) {
  std::string tz = trimmed(body);
  for (const char* prefix : {"/usr/share/zoneinfo/", "../usr/share/zoneinfo/", "/usr/share/zoneinfo/posix/"}) {
    if (auto at = tz.find(prefix); at != std::string::npos) tz = tz.substr(at + std::string(prefix).size());
  }
  return tz;
}

// `states`: each time sync unit and its ActiveState, the preferred first.
json time_sync_facts(const std::vector<std::pair<std::string, std::string>>& states, const std::string& sources) {
  json sync = {{"service", nullptr}, {"active", false}, {"synchronized", nullptr}, {"servers", json::array()}};
  for (const auto& [unit, state] : states) {
    if (state == "active" && sync["service"].is_null()) {
      sync["service"] = unit == "chronyd" ? "chrony" : unit;
      sync["active"] = true;
    }
  }
  // chronyc -c sources: mode,state,address,stratum,... ('*' = selected)
  bool any_source = false, selected = false;
  for (const auto& line : lines_of(sources)) {
    std::vector<std::string> fields;
    std::stringstream in(line);
    for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
    if (fields.size() < 3) continue;
    any_source = true;
    selected = selected || fields[1] == "*";
    sync["servers"].push_back(fields[2]);
  }
  if (any_source) sync["synchronized"] = selected;
  return sync;
}

void cpu_facts(const std::string& body, json& facts) {
  const auto l = lines_of(body);
  json cpu = json::object();
  if (l.size() > 0) {
    if (auto n = to_number<long>(trimmed(l[0]))) cpu["threads"] = *n;
  }
  if (l.size() > 1) {
    const auto colon = l[1].find(':');
    if (colon != std::string::npos) cpu["model"] = trimmed(l[1].substr(colon + 1));
  }
  if (l.size() > 2) {
    if (auto n = to_number<long>(trimmed(l[2])); n && *n > 0) cpu["sockets"] = *n;
  }
  if (l.size() > 3) {
    if (auto n = to_number<long>(trimmed(l[3])); n && *n > 0) facts["numa_nodes"] = *n;
  }
  if (l.size() > 4) {
    std::istringstream in(l[4]);
    std::string label;
    long kib = 0;
    if (in >> label >> kib) facts["memory_mib"] = kib / 1024;
  }
  facts["cpu"] = cpu;
}

// Binary (a keyring): JSON strings must be UTF-8, so its digest for the
// steps and its bytes as base64 for init's drafts.
void set_file_content(json& f, const std::string& content) {
  if (!first_invalid_utf8(content)) {
    f["content"] = content;
  } else {
    f["sha256"] = sha256_hex(content);
    f["content_base64"] = base64_encode(content);
  }
}

// sha256sum's "HASH  PATH" line: the hash, or nothing for any other line
// (base64, a marker, a path sha256sum escaped with a leading "\\").
std::optional<std::string> sha256sum_hash(const std::string& line) {
  if (line.size() <= 66 || line.compare(64, 2, "  ") != 0) return std::nullopt;
  std::string hash = line.substr(0, 64);
  if (hash.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  return hash;
}

// Where a file's content comes after the files (gx_files): its bytes in
// the file-bytes section (add_file_bytes), its digest in file-digests
// (add_file_digests).
enum class Follows { nothing, bytes, digest };

json file_facts(const std::string& body, Follows& follows) {
  follows = Follows::nothing;
  const auto l = lines_of(body);
  if (l.empty() || l[0].empty()) return {{"exists", false}};
  std::istringstream in(l[0]);
  std::string mode, owner, group, size;
  in >> mode >> owner >> group >> size;
  std::string kind;
  std::getline(in, kind);
  json f = {{"exists", true}};
  if (!mode.empty()) f["mode"] = mode.size() < 4 ? std::string(4 - mode.size(), '0') + mode : mode;
  if (!owner.empty()) f["owner"] = owner;
  if (!group.empty()) f["group"] = group;
  if (auto n = to_number<long>(size)) f["size"] = *n;
  if (l.size() > 1) {
    // A large file: sha256sum's "HASH  PATH"; a small one: base64 (no
    // spaces), or "@@bytes" / "@@digest" where its bytes / digest come
    // after the files.
    if (auto hash = sha256sum_hash(l[1])) {
      f["sha256"] = *hash;
    } else if (l[1] == "@@bytes") {
      follows = Follows::bytes;
    } else if (l[1] == "@@digest") {
      follows = Follows::digest;
    } else if (auto content = base64_decode(l[1])) {
      set_file_content(f, *content);
    }
  } else if (trimmed(kind) == "regular empty file") {
    f["content"] = "";
  }
  return f;
}

// The small files of gx_files, in the order asked, as the probe's awk
// printed them: "@@file", then each of the file's lines after a ">". A
// file is its lines joined by newlines, with one more after the last
// where the stat size says the file ended with one; where neither is as
// long as stat said (the file changed between the stat and the read, or
// the awk lost a byte), that file has no content: the plan leaves it to
// be decided on the node, which is harmless; a wrong content would not be.
void add_file_bytes(const std::string& body, std::vector<std::string>& pending, json& files) {
  std::vector<std::string> contents;
  std::vector<bool> any_line;
  size_t pos = 0;
  while (pos <= body.size() && !body.empty()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    const std::string_view line(body.data() + pos, end - pos);
    if (line == "@@file") {
      contents.emplace_back();
      any_line.push_back(false);
    } else if (!contents.empty() && !line.empty() && line.front() == '>') {
      if (any_line.back()) contents.back() += '\n';
      contents.back().append(line.substr(1));
      any_line.back() = true;
    }
    pos = end + 1;
  }
  for (size_t i = 0; i < pending.size() && i < contents.size(); ++i) {
    json& f = files[pending[i]];
    const auto size = f.value("size", size_t{0});
    if (any_line[i] && contents[i].size() + 1 == size) contents[i] += '\n';
    if (contents[i].size() == size && size > 0) set_file_content(f, contents[i]);
  }
  pending.clear();
}

// One sha256sum for the secret files: "HASH  PATH" lines in the order
// asked, matched by path. A file gone before sha256sum read it has no line
// (and no digest: the plan leaves it to the node); a path sha256sum had to
// escape (a backslash or newline in it) begins its line with "\\" and
// matches nothing, likewise.
void add_file_digests(const std::string& body, std::vector<std::string>& pending, json& files) {
  std::set<std::string> wanted(pending.begin(), pending.end());
  for (const auto& line : lines_of(body)) {
    const auto hash = sha256sum_hash(line);
    if (hash && wanted.count(line.substr(66))) files[line.substr(66)]["sha256"] = *hash;
  }
  pending.clear();
}

// `systemctl show -p Id -p LoadState -p UnitFileState -p ActiveState`:
// a block of NAME=VALUE lines per unit, by unit name without ".service".
// An alias answers with its unit's Id (chronyd.service -> chrony.service
// on Debian), so a name can be missing although it was asked for.
std::map<std::string, std::map<std::string, std::string>> unit_blocks(const std::string& body) {
  std::map<std::string, std::map<std::string, std::string>> units;
  std::map<std::string, std::string> current;
  auto flush = [&] {
    std::string id = current["Id"];
    if (id.size() > 8 && id.compare(id.size() - 8, 8, ".service") == 0) id = id.substr(0, id.size() - 8);
    if (!id.empty()) units.emplace(id, current);
    current.clear();
  };
  for (const auto& line : lines_of(body)) {
    if (line.empty()) {
      flush();
      continue;
    }
    const auto eq = line.find('=');
    if (eq != std::string::npos) current[line.substr(0, eq)] = line.substr(eq + 1);
  }
  flush();
  return units;
}

// What `systemctl is-active UNIT` would print: its ActiveState, and
// "inactive" for a unit systemd does not know or did not answer for.
std::string active_state(const std::map<std::string, std::map<std::string, std::string>>& units, const std::string& name) {
  const auto found = units.find(name);
  if (found == units.end()) return "inactive";
  const auto state = found->second.find("ActiveState");
  return state == found->second.end() || state->second.empty() ? "inactive" : state->second;
}

json services_facts(const std::map<std::string, std::map<std::string, std::string>>& units,
                    const std::set<std::string>& requested) {
  json services = json::object();
  for (const auto& name : requested) {
    const auto found = units.find(name);
    // No systemd or no output: unknown, not "absent".
    if (found == units.end()) continue;
    auto field = [&](const char* key) {
      const auto v = found->second.find(key);
      return v == found->second.end() ? std::string() : v->second;
    };
    const bool exists = field("LoadState") != "not-found" && !field("LoadState").empty();
    const std::string file_state = field("UnitFileState");
    json s = {{"exists", exists}};
    if (exists) {
      s["enabled"] = file_state == "enabled" || file_state == "enabled-runtime" || file_state == "alias";
      s["active"] = field("ActiveState") == "active";
      s["state"] = field("ActiveState");
    }
    services[name] = s;
  }
  return services;
}

// grep -H's "PATH:VALUE" lines, one key's lines together; a key whose file
// printed nothing is missing (null).
json sysctl_facts(const std::string& body, const std::set<std::string>& keys) {
  json out = json::object();
  std::map<std::string, std::string> by_path;
  for (const auto& key : keys) by_path[sysctl_path(key)] = key;
  std::map<std::string, std::string> values;
  for (const auto& line : lines_of(body)) {
    // The longest requested path the line starts with, then ':'.
    const std::string* key = nullptr;
    size_t taken = 0;
    for (const auto& [path, name] : by_path) {
      if (path.size() > taken && line.size() > path.size() && line.compare(0, path.size(), path) == 0 &&
          line[path.size()] == ':') {
        key = &name;
        taken = path.size();
      }
    }
    if (!key) continue;
    const auto [at, first] = values.try_emplace(*key);
    if (!first) at->second += '\n';
    at->second += line.substr(taken + 1);
  }
  for (const auto& key : keys) out[key] = values.count(key) ? json(trimmed(values[key])) : json(nullptr);
  return out;
}

// /proc/self/mounts escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_field(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string octal = field.substr(i + 1, 3);
      if (octal.find_first_not_of("01234567") == std::string::npos) {
        out += static_cast<char>(std::stoi(octal, nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

json mounts_facts(const std::string& body) {
  json mounts = json::array();
  for (const auto& line : lines_of(body)) {
    std::istringstream in(line);
    std::string source, target, fstype, options;
    if (!(in >> source >> target >> fstype >> options)) continue;
    mounts.push_back({{"source", unescape_mount_field(source)}, {"target", unescape_mount_field(target)},
                      {"fstype", fstype}, {"options", options}});
  }
  return mounts;
}

json fstab_facts(const std::string& body) {
  json entries = json::array();
  for (const auto& line : lines_of(body)) {
    const std::string t = trimmed(line);
    if (t.empty() || t[0] == '#') continue;
    std::istringstream in(t);
    std::string source, target, fstype, options = "defaults", dump = "0", pass = "0";
    if (!(in >> source >> target >> fstype)) continue;
    in >> options >> dump >> pass;
    entries.push_back({{"source", unescape_mount_field(source)}, {"target", unescape_mount_field(target)},
                       {"fstype", fstype}, {"options", options}, {"dump", to_number<long>(dump).value_or(0)},
                       {"pass", to_number<long>(pass).value_or(0)}});
  }
  return entries;
}

// `ip -j -d addr show`: each link's details and its addresses.
json interfaces_facts(const std::string& links_json) {
  json interfaces = json::array();
  json links = json::parse(links_json, nullptr, false);
  if (!links.is_array()) return interfaces;
  for (const auto& link : links) {
    const std::string name = link.value("ifname", "");
    if (name.empty()) continue;
    json i = {{"name", name}, {"mtu", link.value("mtu", 0)}};
    std::string state = link.value("operstate", "UNKNOWN");
    for (auto& c : state) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    i["state"] = state;
    if (link.contains("address") && link["address"].is_string()) i["mac"] = link["address"];
    json addresses = json::array();
    for (const auto& info : link.value("addr_info", json::array())) {
      if (info.contains("local")) {
        addresses.push_back(info["local"].get<std::string>() + "/" + std::to_string(info.value("prefixlen", 0)));
      }
    }
    i["addresses"] = std::move(addresses);
    if (link.contains("linkinfo") && link["linkinfo"].contains("info_kind")) {
      i["kind"] = link["linkinfo"]["info_kind"];
      if (i["kind"] == "bond") {
        json members = json::array();
        for (const auto& other : links) {
          if (other.value("master", "") == name) members.push_back(other.value("ifname", ""));
        }
        json bond = {{"members", members}};
        const json& data = link["linkinfo"].value("info_data", json::object());
        if (data.contains("mode") && data["mode"].is_string()) bond["mode"] = data["mode"];
        i["bond"] = bond;
      }
    }
    interfaces.push_back(std::move(i));
  }
  return interfaces;
}

json slurm_facts(const std::string& active, const std::string& node_line) {
  json slurm = {{"slurmd_active", trimmed(active) == "active"}};
  const std::string line = trimmed(node_line);
  if (line.empty()) {
    slurm["registered"] = nullptr;  // no scontrol, or no controller to ask
    slurm["node_state"] = nullptr;
    return slurm;
  }
  // "NodeName=n1 Arch=x86_64 ... State=IDLE ... Reason=maint [root@2026-...]"
  const bool registered = line.rfind("NodeName=", 0) == 0;
  slurm["registered"] = registered;
  slurm["node_state"] = nullptr;
  if (!registered) return slurm;
  auto field = [&](const std::string& key) -> std::optional<std::string> {
    const std::string needle = " " + key + "=";
    auto at = line.find(needle);
    if (at == std::string::npos) return std::nullopt;
    at += needle.size();
    // Reason runs to the end of the line (it may hold spaces).
    if (key == "Reason") return line.substr(at);
    return line.substr(at, line.find(' ', at) - at);
  };
  if (auto state = field("State")) slurm["node_state"] = *state;
  if (auto reason = field("Reason")) slurm["reason"] = *reason;
  if (auto features = field("AvailableFeatures"); features && *features != "(null)") {
    json list = json::array();
    std::stringstream in(*features);
    for (std::string f; std::getline(in, f, ',');) list.push_back(f);
    slurm["features"] = list;
  }
  if (auto gres = field("Gres")) slurm["gres"] = *gres;
  if (auto memory = field("RealMemory")) {
    if (auto mb = to_number<long long>(*memory)) slurm["real_memory_mb"] = *mb;
  }
  if (auto cpus = field("CPUAlloc")) {
    if (auto n = to_number<long long>(*cpus)) slurm["cpus_allocated"] = *n;
  }
  return slurm;
}

json gpu_facts(const std::map<std::string, const Section*>& by_name) {
  const Section* query = by_name.count("nvidia-query") ? by_name.at("nvidia-query") : nullptr;
  if (!query || trimmed(query->body) == "@@missing") {
    return {{"count", 0}, {"driver_version", nullptr}, {"model", nullptr}, {"error", "nvidia-smi is not installed"}};
  }
  std::string body = query->body;
  int rc = 0;
  if (auto at = body.rfind("@@rc "); at != std::string::npos) {
    rc = to_number<int>(trimmed(body.substr(at + 5))).value_or(1);
    body = body.substr(0, at);
  }
  if (auto failure = nvidia_smi_failure(body, rc)) return *failure;
  auto parsed = parse_nvidia_smi_query(body);
  if (!parsed) return {{"count", 0}, {"driver_version", nullptr}, {"model", nullptr}, {"error", parsed.error().message}};
  json gpus = parsed.value();
  if (by_name.count("nvidia-table")) {
    if (auto table = parse_nvidia_smi_table(by_name.at("nvidia-table")->body);
        table && table->contains("cuda_version")) {
      gpus["cuda_version"] = (*table)["cuda_version"];
    }
  }
  if (by_name.count("nvidia-topo")) {
    if (auto topology = parse_nvidia_smi_topology(by_name.at("nvidia-topo")->body)) gpus["topology"] = *topology;
  }
  return gpus;
}

// "/dev/nvidia10" -> 10; anything but /dev/nvidiaN -> nullopt.
std::optional<long> device_number(const std::string& path) {
  static constexpr std::string_view prefix = "/dev/nvidia";
  if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string digits = path.substr(prefix.size());
  if (digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stol(digits);
}

// The device files /dev/nvidiaN in numeric order, and the same folded the
// way gres.conf's File= takes them (/dev/nvidia[0-7]); null without any.
void add_gpu_device_files(const std::string& body, json& gpus) {
  std::map<long, std::string> by_number;
  for (const auto& line : lines_of(body)) {
    const std::string path = trimmed(line);
    if (const auto n = device_number(path)) by_number.emplace(*n, path);
  }
  json files = json::array();
  std::vector<std::string> names;
  for (const auto& [n, path] : by_number) {
    files.push_back(path);
    names.push_back(path);
  }
  gpus["device_files"] = files;
  gpus["gres_file"] = names.empty() ? json(nullptr) : json(fold_hostlist(names));
}

json rdma_facts(const std::map<std::string, const Section*>& by_name) {
  auto body = [&](const char* name) { return by_name.count(name) ? by_name.at(name)->body : std::string(); };
  json ports = json::array();
  if (auto ib = parse_ibstat(body("ibstat")); ib && !body("ibstat").empty()) {
    ports = *ib;
  } else if (auto link = parse_rdma_link(body("rdma-link"))) {
    ports = *link;
  }
  if (auto netdevs = parse_ibdev2netdev(body("ibdev2netdev")); netdevs && !netdevs->empty()) {
    ports = merge_rdma_netdevs(ports, *netdevs);
  } else if (auto link = parse_rdma_link(body("rdma-link")); link && !link->empty()) {
    ports = merge_rdma_netdevs(ports, *link);
  }
  return ports;
}

Result<nlohmann::json> parse_whole_probe_output(std::string_view output, const std::string& node,
                                                const FactsRequest& request, const std::string& collected_at) {
  const auto sections = split_sections(output);
  if (sections.empty() || sections.back().name != "end") {
    return make_error("the facts probe's output is incomplete (no end marker): the node's shell stopped early");
  }
  std::map<std::string, const Section*> by_name;
  for (const auto& s : sections) {
    if (s.arg.empty()) by_name[s.name] = &s;
  }
  auto body = [&](const char* name) { return by_name.count(name) ? by_name.at(name)->body : std::string(); };

  json facts = {{"schema_version", 1}, {"node", node}, {"collected_at", collected_at}};
  facts["os"] = os_facts(body("os-release"), body("kernel"), body("package-manager"));
  facts["hostname"] = trimmed(body("hostname"));
  if (std::string tz = timezone_from(body("timezone")); !tz.empty()) facts["timezone"] = tz;
  const auto units = unit_blocks(body("units"));
  facts["time_sync"] = time_sync_facts({{"chrony", active_state(units, "chrony")},
                                        {"chronyd", active_state(units, "chronyd")},
                                        {"systemd-timesyncd", active_state(units, "systemd-timesyncd")}},
                                       body("chrony-sources"));
  cpu_facts(body("cpu"), facts);

  facts["sysctl"] = sysctl_facts(body("sysctls"), request.sysctl_keys);
  facts["packages"] = json::object();
  facts["files"] = json::object();
  facts["disk_free_bytes"] = json::object();
  facts["checks"] = json::object();
  // Requested packages the package database does not list are not installed.
  for (const auto& p : request.packages) facts["packages"][p] = nullptr;
  std::vector<std::string> bytes_pending, digests_pending;
  for (const auto& s : sections) {
    if (s.name == "file") {
      Follows follows = Follows::nothing;
      facts["files"][s.arg] = file_facts(s.body, follows);
      if (follows == Follows::bytes) bytes_pending.push_back(s.arg);
      if (follows == Follows::digest) digests_pending.push_back(s.arg);
    } else if (s.name == "file-bytes") {
      add_file_bytes(s.body, bytes_pending, facts["files"]);
    } else if (s.name == "file-digests") {
      add_file_digests(s.body, digests_pending, facts["files"]);
    } else if (s.name == "listing") {
      json names = json::array();
      for (const auto& line : lines_of(s.body)) {
        if (!line.empty()) names.push_back(line);
      }
      facts["directories"][s.arg] = std::move(names);
    } else if (s.name == "df") {
      std::istringstream in(lines_of(s.body).empty() ? "" : lines_of(s.body).back());
      std::string fs;
      long size = 0, used = 0, avail = 0;
      if (in >> fs >> size >> used >> avail) facts["disk_free_bytes"][s.arg] = avail;
    } else if (s.name == "check") {
      record_check(s, facts);
    }
  }
  json held = json::array();
  for (const auto& line : lines_of(body("packages"))) {
    std::vector<std::string> fields;
    std::stringstream in(line);
    for (std::string f; std::getline(in, f, '\t');) fields.push_back(f);
    if (fields.size() < 3) continue;
    if (!request.packages.count(fields[0])) {
      // A package a pattern matched: only an installed one is a fact.
      const bool matched = std::any_of(request.package_patterns.begin(), request.package_patterns.end(),
                                       [&](const std::string& p) { return ::fnmatch(p.c_str(), fields[0].c_str(), 0) == 0; });
      if (!matched || fields[1].size() < 2 || fields[1][1] != 'i') continue;
    }
    // dpkg's db:Status-Abbrev: the wanted action, then the state: "ii " is
    // installed, "hi " installed and held, "rc " removed with its config left.
    const bool installed = fields[1].size() >= 2 && fields[1][1] == 'i';
    facts["packages"][fields[0]] = installed ? json(fields[2]) : json(nullptr);
    if (installed && fields[1][0] == 'h') held.push_back(fields[0]);
  }
  // Holds are dpkg's; on rpm nodes (versionlock) the facts do not say.
  if ((!request.packages.empty() || !request.package_patterns.empty()) &&
      facts["os"].value("package_manager", "") == "apt") {
    facts["held_packages"] = held;
  }
  if (const auto candidates = lines_of(body("package-candidates")); !candidates.empty() && trimmed(candidates.front()) == "@@apt") {
    // apt-cache madison: " NAME | VERSION | SOURCE", newest first.
    json& offered = facts["package_candidates"];
    for (const auto& p : request.versioned_packages) offered[p] = json::array();
    for (size_t i = 1; i < candidates.size(); ++i) {
      const auto& line = candidates[i];
      const auto bar = line.find('|');
      const auto bar2 = bar == std::string::npos ? bar : line.find('|', bar + 1);
      if (bar2 == std::string::npos) continue;
      const std::string name = trimmed(line.substr(0, bar)), version = trimmed(line.substr(bar + 1, bar2 - bar - 1));
      if (!offered.contains(name) || version.empty()) continue;
      if (std::find(offered[name].begin(), offered[name].end(), json(version)) == offered[name].end()) {
        offered[name].push_back(version);
      }
    }
  }
  if (const auto policy = lines_of(body("package-policy")); !policy.empty() && trimmed(policy.front()) == "@@apt") {
    // apt-cache policy: "NAME:" then "  Installed: V|(none)", "  Candidate: V|(none)", a version table.
    json& candidates = facts["package_install_candidates"];
    candidates = json::object();
    std::string name;
    for (size_t i = 1; i < policy.size(); ++i) {
      const std::string& line = policy[i];
      if (!line.empty() && line[0] != ' ' && line.back() == ':') {
        name = line.substr(0, line.size() - 1);
      } else if (const std::string t = trimmed(line); !name.empty() && t.rfind("Candidate: ", 0) == 0) {
        const std::string version = trimmed(t.substr(11));
        if (request.unpinned_packages.count(name) && !version.empty() && version != "(none)") candidates[name] = version;
        name.clear();
      }
    }
  }
  if (!request.services.empty()) facts["services"] = services_facts(units, request.services);
  if (request.apt_sources && by_name.count("apt-sources")) facts["apt_sources"] = apt_sources_facts(body("apt-sources"));
  json modules = json::array();
  for (const auto& m : lines_of(body("modules"))) {
    if (!m.empty()) modules.push_back(m);
  }
  facts["kernel_modules"] = {{"loaded", modules}};
  facts["gpus"] = gpu_facts(by_name);
  add_gpu_device_files(body("gpu-device-files"), facts["gpus"]);
  facts["network"] = {{"interfaces", interfaces_facts(body("ip-addr"))}};
  // Not asked is not "no ports": left out rather than empty.
  if (request.rdma_ports) facts["network"]["rdma"] = rdma_facts(by_name);
  facts["mounts"] = mounts_facts(body("mounts"));
  facts["fstab"] = fstab_facts(body("fstab"));
  facts["scheduler"] = {{"slurm", slurm_facts(active_state(units, "slurmd"), body("slurm-node"))},
                        {"kubernetes", {{"kubelet_active", active_state(units, "kubelet") == "active"}}}};
  return facts;
}

constexpr std::string_view kInputsMarker = "\n@@gpx:package-inputs\n";
constexpr std::string_view kInputsEndMarker = "\n@@gpx:package-inputs-end\n";

// Where the package part begins: its last marker, as split_sections keeps
// the last section of a name (text printed earlier, an apt source file's,
// cannot stand in for it).
size_t package_part_at(std::string_view output) { return output.rfind(kInputsMarker); }

// Whether the newest change time among stat's lines is a whole second: a
// file system that keeps no finer times, on which a same-size edit within
// the second of the probe would not show, so no answer is kept. (Only the
// newest: files unpacked from an image may carry whole-second times on any
// file system, but what the node itself wrote last carries its own.)
bool times_are_whole_seconds(std::string_view inputs) {
  std::pair<long long, std::string> newest{-1, ""};
  for (const auto& line : lines_of(std::string(inputs))) {
    const std::string ctime = line.substr(line.rfind(' ') + 1);
    const size_t dot = ctime.find('.');
    const auto seconds = to_number<long long>(std::string_view(ctime).substr(0, dot));
    if (!seconds || dot == std::string::npos || ctime.size() - dot != 10) return true;
    newest = std::max(newest, {*seconds, ctime.substr(dot + 1)});
  }
  return newest.first < 0 || newest.second == "000000000";
}

// The raw text from `from` to the next section marker (its newlines kept):
// a section's bytes as printed, where split_sections trims them.
std::string_view raw_body(std::string_view output, size_t from) {
  const size_t next = output.find("\n@@gpx:", from);
  return output.substr(from, next == std::string_view::npos ? std::string_view::npos : next - from);
}

// The output with an earlier package answer put where the probe printed
// "@@same" for it: the same bytes the tools printed when they last ran.
Result<std::optional<std::string>> with_earlier_packages(std::string_view output, const FactsRequest& request) {
  const size_t at = package_part_at(output);
  const std::optional<std::string> as_printed;
  if (at == std::string_view::npos || output.substr(at + kInputsMarker.size(), 7) != "@@same\n") return as_printed;
  const size_t end = output.find(kInputsEndMarker, at);
  if (end == std::string_view::npos) return as_printed;  // incomplete: the end marker check says so
  if (!request.earlier_packages) {
    return make_error("the probe reused an earlier answer about packages that this run does not hold");
  }
  std::string whole;
  whole.reserve(output.size() + request.earlier_packages->output.size());
  whole.append(output.substr(0, at)).append(request.earlier_packages->output).append(output.substr(end));
  return std::optional<std::string>(std::move(whole));
}

}  // namespace

std::optional<EarlierPackageAnswer> package_answer_to_keep(std::string_view output, const FactsRequest& request) {
  if (!request.fingerprint_packages) return std::nullopt;
  const size_t at = package_part_at(output);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t end = output.find(kInputsEndMarker, at);
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view inputs = raw_body(output, at + kInputsMarker.size());
  if (!inputs.empty() && inputs.back() == '\n') inputs.remove_suffix(1);
  // "@@same": the earlier answer stands. No dpkg database: nothing of an
  // rpm node is reused (its database is not among the inputs).
  if (inputs == "@@same" || (inputs.rfind("/var/lib/dpkg/status ", 0) != 0 &&
                             inputs.find("\n/var/lib/dpkg/status ") == std::string_view::npos)) {
    return std::nullopt;
  }
  if (output.find("\n@@gpx:end\n", end) == std::string_view::npos || times_are_whole_seconds(inputs)) return std::nullopt;
  // Configuration that points apt or dpkg at other files: they may change
  // while the inputs do not. The probe's awk prints it after the package
  // part, as the first of its sections: the first such marker after the
  // part. None (a probe cut short) keeps nothing.
  static constexpr std::string_view kConfig = "\n@@gpx:package-config\n";
  const size_t config = output.find(kConfig, end);
  if (config == std::string_view::npos || !raw_body(output, config + kConfig.size()).empty()) return std::nullopt;
  return EarlierPackageAnswer{package_sections_key(request), std::string(inputs), std::string(output.substr(at, end - at))};
}

Result<nlohmann::json> parse_probe_output(std::string_view output, const std::string& node,
                                          const FactsRequest& request, const std::string& collected_at) {
  auto whole = with_earlier_packages(output, request);
  if (!whole) return whole.error();
  return parse_whole_probe_output(whole->has_value() ? std::string_view(**whole) : output, node, request, collected_at);
}


Result<void> merge_controller_checks(std::string_view output, nlohmann::json& facts) {
  const auto sections = split_sections(output);
  if (sections.empty() || sections.back().name != "end") {
    return make_error("the controller's check script stopped early (no end marker)");
  }
  if (!facts.contains("checks") || !facts["checks"].is_object()) facts["checks"] = json::object();
  for (const auto& s : sections) {
    if (s.name == "check") {
      record_check(s, facts);
    } else if (s.name == "digest") {
      const std::string digest = trimmed(s.body);
      const bool hex = digest.size() == 64 && digest.find_first_not_of("0123456789abcdef") == std::string::npos;
      facts["controller_files"][s.arg] = hex ? json(digest) : json(nullptr);
    }
  }
  return {};
}

std::vector<std::string> merge_controller_answer(const CommandOutcome& outcome,
                                                 const std::map<std::string, nlohmann::json*>& facts_by_node) {
  std::vector<std::string> problems;
  auto parts = outcome.ok() ? split_controller_output(outcome.out)
                            : Result<std::map<std::string, std::string>>(make_error(outcome.message));
  for (const auto& [node, facts] : facts_by_node) {
    if (!parts) {
      problems.push_back(node + ": its checks on the controller did not run: " + parts.error().message);
    } else if (auto part = parts->find(node); part == parts->end()) {
      problems.push_back(node + ": the controller's answer has no part for this node");
    } else if (auto merged = merge_controller_checks(part->second, *facts); !merged) {
      problems.push_back(node + ": " + merged.error().message);
    }
  }
  return problems;
}

}  // namespace gpuexpand
