#pragma once
// Reading facts documents that may lack any key or hold another type there:
// a missing member reads as null, a non-string as "". Shared by the rules
// that walk facts field by field (doctor, spec_draft) and the spec's
// settings (gather: whether a node wants RDMA).

#include <string>

#include <nlohmann/json.hpp>

namespace gpuexpand::facts_json {

inline const nlohmann::json& at(const nlohmann::json& j, const std::string& key) {
  static const nlohmann::json null;
  const auto it = j.is_object() ? j.find(key) : j.end();
  return it == j.end() ? null : *it;
}

inline std::string text(const nlohmann::json& j, const std::string& key) {
  const nlohmann::json& v = at(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

}  // namespace gpuexpand::facts_json
