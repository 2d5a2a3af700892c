#include "gpuexpand/spec/cluster_spec.hpp"

#include "gpuexpand/util/digest.hpp"

#include <charconv>

namespace gpuexpand {

size_t CountOrPercent::resolve(size_t total) const {
  if (value <= 0) return 0;
  const auto v = static_cast<size_t>(value);
  if (!percent) return v;
  return (total * v + 99) / 100;
}

std::string CountOrPercent::to_string() const {
  return std::to_string(value) + (percent ? "%" : "");
}

std::optional<CountOrPercent> parse_count_or_percent(const nlohmann::json& value) {
  if (value.is_number_integer()) {
    const auto n = value.get<long>();
    if (n < 0) return std::nullopt;
    return CountOrPercent{n, false};
  }
  if (!value.is_string()) return std::nullopt;
  std::string text = value.get<std::string>();
  CountOrPercent out;
  if (!text.empty() && text.back() == '%') {
    out.percent = true;
    text.pop_back();
  }
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out.value);
  if (ec != std::errc() || end != text.data() + text.size() || out.value < 0) return std::nullopt;
  if (out.percent && out.value > 100) return std::nullopt;
  return out;
}

nlohmann::json node_variables(const ClusterSpec& spec, const NodeSpec& node) {
  nlohmann::json vars = node.settings ? *node.settings : nlohmann::json::object();
  vars["node"] = {{"name", node.name}, {"address", node.address}, {"rack", node.rack}, {"groups", node.groups}};
  vars["cluster"] = {{"name", spec.cluster_name}};
  if (!node.compute_addresses.empty() && vars.contains("network") && vars["network"].is_object() &&
      vars["network"].contains("compute_interfaces") && vars["network"]["compute_interfaces"].is_array()) {
    for (auto& interface : vars["network"]["compute_interfaces"]) {
      if (!interface.is_object() || !interface.contains("name") || !interface["name"].is_string()) continue;
      for (const auto& [name, cidr] : node.compute_addresses) {
        if (name == interface["name"].get<std::string>()) interface["address"] = cidr;
      }
    }
  }
  return vars;
}

}  // namespace gpuexpand

namespace gpuexpand {

std::string spec_digest(const ClusterSpec& spec) {
  // Files beside the spec count by their path from it: the same spec and
  // keys in another checkout have the same identity.
  const auto slash = spec.file.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : spec.file.substr(0, slash + 1);
  std::string identity = spec.document.dump();
  for (const auto& [path, digest] : spec.local_file_digests) {
    const bool beside = !dir.empty() && path.rfind(dir, 0) == 0;
    identity += "\n" + (beside ? path.substr(dir.size()) : path) + "=" + digest;
  }
  return sha256_hex(identity);
}

}  // namespace gpuexpand
