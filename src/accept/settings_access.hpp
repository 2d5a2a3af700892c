#pragma once
// Reading acceptance settings and facts documents without throwing: a
// missing or mistyped member reads as absent. Shared by the files of
// accept/ (private).

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpuexpand/accept/check_result.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand::accept_detail {

using nlohmann::json;

inline std::string q(const std::string& s) { return shell_quote(s); }

inline const json& member(const json& object, const char* key) {
  static const json null;
  if (!object.is_object()) return null;
  auto it = object.find(key);
  return it == object.end() ? null : *it;
}

inline std::string text(const json& object, const char* key, const std::string& fallback = "") {
  const json& v = member(object, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

inline long number(const json& object, const char* key, long fallback) {
  const json& v = member(object, key);
  return v.is_number_integer() ? v.get<long>() : fallback;
}

inline bool wants(const json& settings, const std::string& check) {
  const json& checks = member(settings, "checks");
  return checks.is_array() && std::find(checks.begin(), checks.end(), json(check)) != checks.end();
}

inline std::vector<std::string> strings(const json& list) {
  std::vector<std::string> out;
  if (list.is_array()) {
    for (const auto& v : list) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

inline CheckResult result(const std::string& check, CheckStatus status, const std::string& detail) {
  CheckResult r;
  r.check = check;
  r.status = status;
  r.detail = detail;
  return r;
}

}  // namespace gpuexpand::accept_detail
