#pragma once
// The semantic checks run even where the schema found errors (one pass
// reports everything), so they read values only of the type they expect
// and never throw on the others: a number where a version string belongs
// is the schema's error to report, with its location.

#include <string>

#include <nlohmann/json.hpp>

namespace gpuexpand {

inline std::string text_at(const nlohmann::json& object, const char* key, const std::string& fallback = "") {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

inline bool flag_at(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return false;
  const auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace gpuexpand
