#include "gpuexpand/plan/predict.hpp"

#include "gpuexpand/plan/step_decisions.hpp"

#include <algorithm>

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string text(const json& params, const char* key, const std::string& fallback = "") {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::vector<std::string> names_of(const json& value) {
  std::vector<std::string> out;
  if (value.is_string()) out.push_back(value.get<std::string>());
  if (value.is_array()) {
    for (const auto& v : value) out.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

json& file_entry(json& facts, const std::string& path) {
  json& entry = facts["files"][path];
  if (!entry.is_object()) entry = json::object();
  return entry;
}

void set_ownership(json& entry, const json& params) {
  for (const char* key : {"mode", "owner", "group"}) {
    if (params.contains(key)) entry[key] = params[key];
  }
}

}  // namespace

void predict_facts_after(const ResolvedStep& step, json& facts) {
  const json& p = step.params;
  const std::string& type = step.type;
  if (type == "hostname") {
    facts["hostname"] = text(p, "name");
  } else if (type == "timezone") {
    facts["timezone"] = text(p, "zone");
  } else if (type == "file") {
    json& entry = file_entry(facts, text(p, "path"));
    entry["exists"] = true;
    entry["content"] = text(p, "content");
    entry.erase("sha256");
    set_ownership(entry, p);
  } else if (type == "line") {
    json& entry = file_entry(facts, text(p, "path"));
    std::string content = entry.value("content", std::string());
    if (!content.empty() && content.back() != '\n') content += '\n';
    entry["exists"] = true;
    entry["content"] = content + text(p, "line") + "\n";
  } else if (type == "directory") {
    json& entry = file_entry(facts, text(p, "path"));
    entry["exists"] = true;
    set_ownership(entry, p);
  } else if (type == "package") {
    const bool absent = text(p, "state", "present") == "absent";
    for (std::string name : names_of(p.value("names", json()))) {
      std::string version = text(p, "version", "");
      if (auto eq = name.find('='); eq != std::string::npos) {
        version = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      json& installed = facts["packages"][name];
      if (absent) {
        installed = nullptr;
      } else if (!version.empty()) {
        installed = version;
      } else if (!installed.is_string()) {
        installed = "installed";
      }
    }
  } else if (type == "service") {
    json& service = facts["services"][text(p, "name")];
    service["exists"] = true;
    service["enabled"] = bool_param(p, "enabled", true);
    service["active"] = text(p, "state", "running") == "running";
  } else if (type == "sysctl") {
    if (p.contains("values") && p["values"].is_object()) {
      for (const auto& [key, value] : p["values"].items()) {
        facts["sysctl"][key] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    }
  } else if (type == "kernel_module") {
    json& loaded = facts["kernel_modules"]["loaded"];
    if (!loaded.is_array()) loaded = json::array();
    for (std::string name : names_of(p.value("names", json()))) {
      std::replace(name.begin(), name.end(), '-', '_');
      if (std::find(loaded.begin(), loaded.end(), name) == loaded.end()) loaded.push_back(name);
    }
  } else if (type == "mount") {
    const FstabFields f = mount_fstab_fields(p);
    json entry = {{"source", f.source}, {"target", f.target}, {"fstype", f.fstype}, {"options", f.options},
                  {"dump", 0}, {"pass", 0}};
    auto drop_target = [&](json& list) {
      if (!list.is_array()) list = json::array();
      list.erase(std::remove_if(list.begin(), list.end(), [&](const json& e) { return e.value("target", "") == f.target; }),
                 list.end());
    };
    drop_target(facts["fstab"]);
    facts["fstab"].push_back(entry);
    drop_target(facts["mounts"]);
    facts["mounts"].push_back({{"target", f.target}, {"source", f.source}, {"fstype", f.fstype}, {"options", f.options}});
  } else if (type == "command") {
    facts["checks"][step.key] = 0;
  }
  // reboot: the node comes back with the same facts plus what the driver
  // steps predicted; nothing of its own to record.
}

}  // namespace gpuexpand
