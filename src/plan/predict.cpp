#include "gpuexpand/plan/predict.hpp"

#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/plan/step_decisions.hpp"

#include <algorithm>

namespace gpuexpand {
namespace {

using nlohmann::json;

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
    facts["hostname"] = param_text(p, "name");
  } else if (type == "timezone") {
    facts["timezone"] = param_text(p, "zone");
  } else if (type == "file") {
    json& entry = file_entry(facts, param_text(p, "path"));
    entry["exists"] = true;
    entry["content"] = param_text(p, "content");
    entry.erase("sha256");
    set_ownership(entry, p);
  } else if (type == "copy") {
    json& entry = file_entry(facts, param_text(p, "path"));
    entry["exists"] = true;
    entry.erase("content");
    entry["sha256"] = param_text(p, "src_sha256");
    set_ownership(entry, p);
  } else if (type == "acceptance") {
    json& entry = file_entry(facts, kAcceptanceRecordPath);
    entry["exists"] = true;
    entry["content"] = acceptance_record(p.value("settings", json::object()));
    entry.erase("sha256");
  } else if (type == "line") {
    json& entry = file_entry(facts, param_text(p, "path"));
    std::string content = entry.value("content", std::string());
    if (!content.empty() && content.back() != '\n') content += '\n';
    entry["exists"] = true;
    entry["content"] = content + param_text(p, "line") + "\n";
  } else if (type == "directory") {
    json& entry = file_entry(facts, param_text(p, "path"));
    entry["exists"] = true;
    set_ownership(entry, p);
  } else if (type == "package") {
    const bool absent = param_text(p, "state", "present") == "absent";
    for (std::string name : param_names(p.value("names", json()))) {
      std::string version = param_text(p, "version", "");
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
    json& service = facts["services"][param_text(p, "name")];
    service["exists"] = true;
    service["enabled"] = bool_param(p, "enabled", true);
    service["active"] = param_text(p, "state", "running") == "running";
  } else if (type == "sysctl") {
    if (p.contains("values") && p["values"].is_object()) {
      for (const auto& [key, value] : p["values"].items()) {
        facts["sysctl"][key] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    }
  } else if (type == "kernel_module") {
    json& loaded = facts["kernel_modules"]["loaded"];
    if (!loaded.is_array()) loaded = json::array();
    for (std::string name : param_names(p.value("names", json()))) {
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
