#include "gpuexpand/steps/params.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "gpuexpand/steps/decision.hpp"

namespace gpuexpand {

using nlohmann::json;

std::string list_element_name(const nlohmann::json& element) {
  if (!element.is_object()) return "";
  for (const char* key : {"name", "target", "device", "id"}) {
    if (const auto it = element.find(key); it != element.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

std::string param_text(const nlohmann::json& params, const char* key, const std::string& fallback) {
  if (!params.is_object()) return fallback;
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::vector<std::string> param_names(const nlohmann::json& value) {
  std::vector<std::string> out;
  if (value.is_string()) {
    out.push_back(value.get<std::string>());
  } else if (value.is_array()) {
    for (const auto& v : value) out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

bool bool_param(const nlohmann::json& params, const char* key, bool fallback) {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return fallback;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) {
    const std::string v = it->get<std::string>();
    if (v == "true" || v == "yes" || v == "1") return true;
    if (v == "false" || v == "no" || v == "0") return false;
  }
  return fallback;
}

FstabFields mount_fstab_fields(const nlohmann::json& params) {
  FstabFields f;
  f.source = param_text(params, "source");
  f.target = param_text(params, "path");
  const std::string type = param_text(params, "fstype");
  // fstab(5) names: FUSE filesystems carry their helper, bind mounts have no type.
  f.fstype = type == "sshfs" ? "fuse.sshfs" : (type == "bind" ? "none" : type);
  const json options = params.value("options", json("defaults"));
  if (options.is_array()) {
    for (const auto& o : options) f.options += (f.options.empty() ? "" : ",") + (o.is_string() ? o.get<std::string>() : o.dump());
  } else if (options.is_string()) {
    f.options = options.get<std::string>();
  }
  if (f.options.empty()) f.options = "defaults";
  if (type == "bind") f.options = f.options == "defaults" ? "bind" : "bind," + f.options;
  return f;
}

std::string string_param(const json& params, const char* key) {
  auto it = params.find(key);
  return it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> string_names(const json& value) {
  std::vector<std::string> out;
  if (value.is_string()) out.push_back(value.get<std::string>());
  if (value.is_array()) {
    for (const auto& v : value) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

Result<void> need_shape(const json& params, const char* key, bool ok, const char* what) {
  if (!params.contains(key) || ok) return {};
  return make_error("'" + std::string(key) + "' must be " + what + ", got " + params[key].dump());
}

bool package_version_matches(const std::string& installed, const std::string& wanted) {
  if (wanted.empty()) return true;
  // [epoch:]upstream[-revision]. The installed epoch counts only when the
  // wanted version names one (no epoch means 0).
  std::string v = installed;
  const bool wanted_epoch = wanted.find(':') != std::string::npos;
  const auto colon = v.find(':');
  if (!wanted_epoch && colon != std::string::npos) v = v.substr(colon + 1);
  if (wanted_epoch && colon == std::string::npos) v = "0:" + v;
  const auto continues = [](const std::string& text, const std::string& prefix, const char* separators) {
    return text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0 &&
           std::strchr(separators, text[prefix.size()]) != nullptr;
  };
  const std::string after_epoch = wanted_epoch ? wanted.substr(wanted.find(':') + 1) : wanted;
  if (after_epoch.find('-') != std::string::npos) {
    // A revision given: exactly that package build (a binNMU "+b1" or a
    // "~" backport of it too).
    return v == wanted || continues(v, wanted, "+~");
  }
  // No revision: the upstream version (before the last '-') is the wanted
  // one, or lies under it: "550" is the 550 branch, "12.4" any 12.4.x,
  // "550.90.07" matches 550.90.07-1 and 550.90.07-0ubuntu0.22.04.1 but not
  // 550.90.070.
  std::string upstream = v;
  if (auto dash = upstream.rfind('-'); dash != std::string::npos) upstream.resize(dash);
  return upstream == wanted || continues(upstream, wanted, ".+~");
}

std::string line_change_summary(const std::string& current, const std::string& wanted) {
  const auto a = steps::split_lines(current);
  const auto b = steps::split_lines(wanted);
  size_t common = 0;
  if (a.size() * b.size() <= 4'000'000) {
    std::vector<size_t> row(b.size() + 1, 0), prev(b.size() + 1, 0);
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        row[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], row[j - 1]);
      }
      std::swap(row, prev);
    }
    common = prev[b.size()];
  } else {
    std::multiset<std::string> left(a.begin(), a.end());
    for (const auto& line : b) {
      if (auto it = left.find(line); it != left.end()) {
        left.erase(it);
        ++common;
      }
    }
  }
  return "+" + std::to_string(b.size() - common) + " -" + std::to_string(a.size() - common) + " lines";
}

}  // namespace gpuexpand
