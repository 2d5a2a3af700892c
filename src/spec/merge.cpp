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

// A mapping taken whole from one layer is about to receive keys from
// another: record each existing child's own origin first, so the children
// the new layer leaves alone still point at the layer they came from.
void split_whole_mapping(OriginMap& origins, const std::string& here, const nlohmann::json& existing) {
  auto it = origins.find(here);
  if (it == origins.end() || !it->second.whole) return;
  const std::string from = it->second.pointer;
  for (const auto& [key, _] : existing.items()) {
    origins[json_pointer_append(here, key)] = {json_pointer_append(from, key), true};
  }
  it->second.whole = false;
}

// A layer's null removes what an earlier layer set. Inside a mapping taken
// whole (no earlier layer set it), there is nothing to remove, and the null
// must not stay behind as a value: `mode:` left empty in a node entry means
// the default mode, not a null one.
nlohmann::json without_nulls(const nlohmann::json& value) {
  if (!value.is_object()) return value;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, child] : value.items()) {
    if (!child.is_null()) out[key] = without_nulls(child);
  }
  return out;
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
      split_whole_mapping(origins, here, target[key]);
      deep_merge(target[key], value, from, origins, here);
      continue;
    }
    forget_subtree(origins, here);
    target[key] = without_nulls(value);
    origins[here] = {from, true};
  }
}

std::string origin_of(const OriginMap& origins, const std::string& effective_pointer) {
  if (auto it = origins.find(effective_pointer); it != origins.end()) return it->second.pointer;
  for (std::string p = effective_pointer; !p.empty();) {
    p = p.substr(0, p.rfind('/'));
    auto it = origins.find(p);
    if (it != origins.end() && it->second.whole) return it->second.pointer + effective_pointer.substr(p.size());
  }
  return "";
}

}  // namespace gpuexpand
