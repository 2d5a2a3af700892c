#pragma once
// Deep merge of settings layers, as operators know it from Helm values and
// Ansible's hash_behaviour=merge: mappings merge key by key, lists and
// scalars from the later layer replace the earlier value, and an explicit
// null removes the key. `origins` records where every effective value came
// from in the spec, so later errors point at the right line.

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace gpuexpand {

struct Origin {
  std::string pointer;  // JSON pointer into the spec
  bool whole = true;    // the value came from there as a whole (not merged from several layers)
};
using OriginMap = std::map<std::string, Origin>;  // effective pointer -> origin

void deep_merge(nlohmann::json& target, const nlohmann::json& layer, const std::string& layer_pointer,
                OriginMap& origins, const std::string& target_pointer = "");

// The spec pointer an effective value came from: its own record, or the
// nearest ancestor that was taken whole from one layer (plus the rest of
// the path). A mapping merged from several layers points at its first.
std::string origin_of(const OriginMap& origins, const std::string& effective_pointer);

}  // namespace gpuexpand
