#include "gpuexpand/spec/merge.hpp"

#include "gpuexpand/spec/yaml_document.hpp"

namespace gpuexpand {
namespace {

void forget_subtree(OriginMap& origins, const std::string& pointer) {
  auto it = origins.lower_bound(pointer);
  while (it != origins.end() && it->first.compare(0, pointer.size(), pointer) == 0) {
    const bool inside = it->first.size() == pointer.size() || it->first[pointer.size()] == '/';
    it = inside ? origins.erase(it) : std::next(it);
  }
}

}  // namespace

void deep_merge(nlohmann::json& target, const nlohmann::json& layer, const std::string& layer_pointer,
                OriginMap& origins, const std::string& target_pointer) {
  if (!layer.is_object()) return;
  if (!target.is_object()) target = nlohmann::json::object();
  for (const auto& [key, value] : layer.items()) {
    const std::string here = json_pointer_append(target_pointer, key);
    const std::string from = json_pointer_append(layer_pointer, key);
    if (value.is_null()) {
      target.erase(key);
      forget_subtree(origins, here);
      continue;
    }
    if (value.is_object() && target.contains(key) && target[key].is_object()) {
      origins[here] = from;
      deep_merge(target[key], value, from, origins, here);
      continue;
    }
    forget_subtree(origins, here);
    target[key] = value;
    origins[here] = from;
  }
}

std::string origin_of(const OriginMap& origins, const std::string& effective_pointer) {
  for (std::string p = effective_pointer;;) {
    if (auto it = origins.find(p); it != origins.end()) {
      // Deeper parts of a replaced value keep their relative path.
      return it->second + effective_pointer.substr(p.size());
    }
    auto slash = p.rfind('/');
    if (slash == std::string::npos || p.empty()) return "";
    p = p.substr(0, slash);
  }
}

}  // namespace gpuexpand
