#pragma once
// Deep merge of settings layers, as operators know it from Helm values and
// Ansible's hash_behaviour=merge: mappings merge key by key, lists and
// scalars from the later layer replace the earlier value, and an explicit
// null removes the key. `origins` records, for every value set, the JSON
// pointer in the spec it came from, so later errors point at the right line.

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace gpuexpand {

using OriginMap = std::map<std::string, std::string>;  // effective pointer -> spec pointer

void deep_merge(nlohmann::json& target, const nlohmann::json& layer, const std::string& layer_pointer,
                OriginMap& origins, const std::string& target_pointer = "");

// The spec pointer an effective value came from (its nearest recorded
// ancestor's origin when the value itself is a merged mapping).
std::string origin_of(const OriginMap& origins, const std::string& effective_pointer);

}  // namespace gpuexpand
