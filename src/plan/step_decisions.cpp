#include "gpuexpand/plan/step_decisions.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/util/digest.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

const json* find(const json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string str(const json& params, const char* key, const std::string& fallback = "") {
  return param_text(params, key, fallback);
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::vector<std::string> string_list(const json& value) { return param_names(value); }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Sysctl values compare by their whitespace-separated fields:
// "4096 87380 6291456" equals the kernel's "4096\t87380\t6291456".
std::string normalize_sysctl(const std::string& value) {
  std::istringstream in(value);
  std::string out, field;
  while (in >> field) out += (out.empty() ? "" : " ") + field;
  return out;
}

std::string normalize_mode(const std::string& mode) {
  std::string m = mode;
  while (m.size() > 3 && m.front() == '0') m.erase(0, 1);
  return m;
}

struct Decider {
  const StepInstance& instance;
  const json& facts;
  const ChangedSteps& changed;
  std::vector<PlannedChange> out;

  void add(ChangeAction action, const std::string& target, const std::string& reason) {
    out.push_back({instance.key, instance.step->type, action, target, reason});
  }
  const json& params() const { return instance.params; }

  // A fact section the probe did not return: we cannot know, so we say so.
  bool unknown(const char* section, const std::string& target) {
    if (find(facts, section)) return false;
    add(ChangeAction::Unknown, target, std::string("no '") + section + "' in the facts; decided on the node");
    return true;
  }

  void hostname() {
    const std::string wanted = str(params(), "name");
    if (unknown("hostname", "hostname")) return;
    const std::string current = facts["hostname"].get<std::string>();
    if (current != wanted) add(ChangeAction::Update, "hostname", "is " + quoted(current) + ", wanted " + quoted(wanted));
  }

  void timezone() {
    const std::string wanted = str(params(), "zone");
    if (unknown("timezone", "timezone")) return;
    const std::string current = facts["timezone"].get<std::string>();
    if (current != wanted) add(ChangeAction::Update, "timezone", "is " + quoted(current) + ", wanted " + quoted(wanted));
  }

  const json* file_facts(const std::string& path) {
    const json* files = find(facts, "files");
    const json* f = files ? find(*files, path) : nullptr;
    if (!f) add(ChangeAction::Unknown, path, "not in the facts; decided on the node");
    return f;
  }

  void ownership(const json& f, const std::string& path) {
    const std::string mode = str(params(), "mode");
    if (!mode.empty() && find(f, "mode") && normalize_mode(str(f, "mode")) != normalize_mode(mode)) {
      add(ChangeAction::Update, path, "mode " + str(f, "mode") + ", wanted " + mode);
    }
    for (const char* key : {"owner", "group"}) {
      const std::string wanted = str(params(), key);
      if (!wanted.empty() && find(f, key) && str(f, key) != wanted) {
        add(ChangeAction::Update, path, std::string(key) + " " + str(f, key) + ", wanted " + wanted);
      }
    }
  }

  // The facts of a file that exists; nullptr (with the change said) when
  // the facts do not tell or the file is not there yet.
  const json* existing_file(const std::string& path) {
    const json* f = file_facts(path);
    if (f && !f->value("exists", false)) {
      add(ChangeAction::Create, path, "does not exist");
      return nullptr;
    }
    return f;
  }

  void file() {
    const std::string path = str(params(), "path");
    const json* f = existing_file(path);
    if (!f) return;
    std::string wanted = str(params(), "content");
    if (find(*f, "content")) {
      const std::string current = str(*f, "content");
      if (current != wanted) add(ChangeAction::Update, path, "content differs (" + line_change_summary(current, wanted) + ")");
    } else if (find(*f, "sha256")) {
      if (str(*f, "sha256") != sha256_hex(wanted)) add(ChangeAction::Update, path, "content differs");
    } else {
      add(ChangeAction::Unknown, path, "content not in the facts; decided on the node");
    }
    ownership(*f, path);
  }

  // A file from the operator's machine, compared by SHA-256 only: its
  // content (a munge key) is never in the facts, the plan or a log.
  void copy() {
    const std::string path = str(params(), "path");
    const json* f = existing_file(path);
    if (!f) return;
    const std::string wanted = str(params(), "src_sha256");
    if (wanted.empty() && str(params(), "src_host") == "controller") {
      add(ChangeAction::Unknown, path, str(params(), "src") + " on the controller: not found or not asked; decided at apply");
    } else if (wanted.empty()) {
      add(ChangeAction::Unknown, path, "cannot read " + str(params(), "src") + " here; decided at apply");
    } else if (!find(*f, "sha256")) {
      add(ChangeAction::Unknown, path, "digest not in the facts; decided on the node");
    } else if (str(*f, "sha256") != wanted) {
      add(ChangeAction::Update, path,
          "content differs from " + str(params(), "src") + (str(params(), "src_host") == "controller" ? " on the controller" : ""));
    }
    ownership(*f, path);
  }

  void line() {
    const std::string path = str(params(), "path");
    const std::string wanted = str(params(), "line");
    const json* f = existing_file(path);
    if (!f) return;
    if (!find(*f, "content")) {
      add(ChangeAction::Unknown, path, "content not in the facts; decided on the node");
      return;
    }
    const auto lines = split_lines(str(*f, "content"));
    if (std::find(lines.begin(), lines.end(), wanted) == lines.end()) {
      add(ChangeAction::Update, path, "line " + quoted(wanted) + " missing");
    }
  }

  void directory() {
    const std::string path = str(params(), "path");
    const json* f = file_facts(path);
    if (!f) return;
    if (!f->value("exists", false)) {
      add(ChangeAction::Create, path, "directory does not exist");
      return;
    }
    ownership(*f, path);
  }

  void package() {
    const std::string state = str(params(), "state", "present");
    const std::string version = str(params(), "version");
    const json* packages = find(facts, "packages");
    for (std::string name : string_list(params()["names"])) {
      std::string wanted = version;
      if (auto eq = name.find('='); eq != std::string::npos) {
        wanted = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const std::string target = "package " + name;
      const json* installed = packages ? find(*packages, name) : nullptr;
      if (!installed) {
        add(ChangeAction::Unknown, target, "not in the facts; decided on the node");
        continue;
      }
      const bool present = installed->is_string();
      if (state == "absent") {
        if (present) add(ChangeAction::Remove, target, installed->get<std::string>() + " installed, wanted absent");
        continue;
      }
      if (!present) {
        add(ChangeAction::Create, target, wanted.empty() ? "not installed" : "not installed, wanted " + wanted);
      } else if (!wanted.empty() && !package_version_matches(installed->get<std::string>(), wanted)) {
        add(ChangeAction::Update, target, installed->get<std::string>() + " installed, " + wanted + " wanted");
      }
    }
  }

  // Certain when a listed step certainly changes; unknown when only '?'
  // changes were planned for them; nullopt when none changes.
  std::optional<ChangeAction> trigger(const std::vector<std::string>& ids) const {
    std::optional<ChangeAction> result;
    for (const auto& id : ids) {
      auto it = changed.find(id);
      if (it == changed.end()) continue;
      if (it->second) return ChangeAction::Update;
      result = ChangeAction::Unknown;
    }
    return result;
  }

  std::string changed_list(const std::vector<std::string>& ids) const {
    std::string list;
    for (const auto& id : ids) {
      if (changed.count(id)) list += (list.empty() ? "" : ", ") + id;
    }
    return list;
  }

  void service() {
    const std::string name = str(params(), "name");
    const std::string target = "service " + name;
    const json* services = find(facts, "services");
    const json* s = services ? find(*services, name) : nullptr;
    const bool want_enabled = bool_param(params(), "enabled", true);
    const std::string want_state = str(params(), "state", "running");
    const auto restart = trigger(instance.step->restart_on);
    if (!s) {
      add(ChangeAction::Unknown, target, "not in the facts; decided on the node");
      return;
    }
    if (!s->value("exists", false)) {
      add(ChangeAction::Create, target,
          std::string("not installed yet; will be ") + (want_enabled ? "enabled and " : "") +
              (want_state == "running" ? "started" : "left stopped"));
      return;
    }
    const bool enabled = s->value("enabled", false);
    const bool active = s->value("active", false);
    if (enabled != want_enabled) {
      add(ChangeAction::Update, target, std::string(enabled ? "enabled" : "disabled") + ", wanted " +
                                            (want_enabled ? "enabled" : "disabled"));
    }
    if (want_state == "running" && !active) {
      add(ChangeAction::Update, target, "inactive, wanted running");
    } else if (want_state == "stopped" && active) {
      add(ChangeAction::Update, target, "running, wanted stopped");
    } else if (restart && active && want_state == "running") {
      add(*restart, target, std::string(*restart == ChangeAction::Update ? "restart: " : "restart if ") +
                                changed_list(instance.step->restart_on) + " changes");
    }
  }

  void sysctl() {
    const json& values = params()["values"];
    const json* live = find(facts, "sysctl");
    if (!values.is_object()) return;
    for (const auto& [key, value] : values.items()) {
      const std::string wanted = value.is_string() ? value.get<std::string>() : value.dump();
      const std::string target = "sysctl " + key;
      const json* current = live ? find(*live, key) : nullptr;
      if (!current) {
        add(ChangeAction::Unknown, target, "not in the facts; decided on the node");
      } else if (current->is_null()) {
        add(ChangeAction::Update, target, "not known to this kernel (no /proc/sys entry)");
      } else if (normalize_sysctl(current->get<std::string>()) != normalize_sysctl(wanted)) {
        add(ChangeAction::Update, target, normalize_sysctl(current->get<std::string>()) + ", wanted " + wanted);
      }
    }
  }

  void kernel_module() {
    const json* modules = find(facts, "kernel_modules");
    for (const auto& name : string_list(params()["names"])) {
      const std::string target = "module " + name;
      if (!modules || !find(*modules, "loaded")) {
        add(ChangeAction::Unknown, target, "not in the facts; decided on the node");
        continue;
      }
      const auto loaded = string_list((*modules)["loaded"]);
      // The kernel reports modules with '_' where names may use '-'.
      std::string canonical = name;
      std::replace(canonical.begin(), canonical.end(), '-', '_');
      if (std::find(loaded.begin(), loaded.end(), canonical) == loaded.end()) {
        add(ChangeAction::Update, target, "not loaded");
      }
    }
  }

  void mount() {
    const FstabFields wanted = mount_fstab_fields(params());
    const std::string target = "mount " + wanted.target;
    const json* fstab = find(facts, "fstab");
    const json* mounts = find(facts, "mounts");
    if (!fstab || !mounts) {
      add(ChangeAction::Unknown, target, "no 'fstab' or 'mounts' in the facts; decided on the node");
      return;
    }
    const json* entry = nullptr;
    for (const auto& e : *fstab) {
      if (str(e, "target") == wanted.target) entry = &e;
    }
    if (!entry) {
      add(ChangeAction::Create, target, "no fstab entry");
    } else {
      for (const auto& [field, value] : {std::pair{"source", wanted.source}, std::pair{"fstype", wanted.fstype},
                                         std::pair{"options", wanted.options}}) {
        const std::string current = str(*entry, field, std::string(field) == "options" ? "defaults" : "");
        if (current != value) {
          add(ChangeAction::Update, target,
              std::string("fstab ") + (std::string(field) == "fstype" ? "type" : field) + " " + current + ", wanted " + value);
        }
      }
    }
    const bool mounted = std::any_of(mounts->begin(), mounts->end(), [&](const json& m) { return str(m, "target") == wanted.target; });
    if (!mounted) add(ChangeAction::Update, target, "not mounted");
  }

  // Passed with the node's current acceptance settings, or not (yet).
  void acceptance() {
    const json* files = find(facts, "files");
    const json* f = files ? find(*files, kAcceptanceRecordPath) : nullptr;
    const std::string wanted = acceptance_record(params().value("settings", json::object()));
    if (!f) {
      add(ChangeAction::Unknown, "acceptance", "record not in the facts; decided on the node");
    } else if (!f->value("exists", false)) {
      add(ChangeAction::Create, "acceptance", "not passed yet");
    } else if (str(*f, "content") != wanted) {
      add(ChangeAction::Update, "acceptance", "passed with other settings; checked again");
    }
  }

  void command() {
    const json* checks = find(facts, "checks");
    const json* code = checks ? find(*checks, instance.key) : nullptr;
    const auto delegate = params().find("delegate_to");
    const bool on_controller = delegate != params().end() && *delegate == "controller";
    const std::string target = "command " + instance.key + (on_controller ? " (on the controller)" : "");
    if (!code) {
      add(ChangeAction::Unknown, target, "check not run yet; decided on the node");
    } else if (code->get<int>() != 0) {
      add(ChangeAction::Update, target, "check exited " + std::to_string(code->get<int>()));
    }
  }

  void reboot() {
    if (auto why = trigger(instance.step->reboot_on)) {
      add(*why, "reboot", std::string(*why == ChangeAction::Update ? "" : "if ") +
                              changed_list(instance.step->reboot_on) + " changes");
    }
  }

  void decide() {
    const std::string& type = instance.step->type;
    if (type == "hostname") hostname();
    else if (type == "timezone") timezone();
    else if (type == "file") file();
    else if (type == "copy") copy();
    else if (type == "acceptance") acceptance();
    else if (type == "line") line();
    else if (type == "directory") directory();
    else if (type == "package") package();
    else if (type == "service") service();
    else if (type == "sysctl") sysctl();
    else if (type == "kernel_module") kernel_module();
    else if (type == "mount") mount();
    else if (type == "command") command();
    else if (type == "reboot") reboot();
  }
};

}  // namespace

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
  f.source = str(params, "source");
  f.target = str(params, "path");
  const std::string type = str(params, "fstype");
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

std::vector<PlannedChange> decide_step(const StepInstance& instance, const nlohmann::json& facts,
                                       const ChangedSteps& changed_steps) {
  Decider decider{instance, facts, changed_steps, {}};
  decider.decide();
  return std::move(decider.out);
}

bool package_version_matches(const std::string& installed, const std::string& wanted) {
  std::string v = installed;
  if (auto colon = v.find(':'); colon != std::string::npos && wanted.find(':') == std::string::npos) {
    v = v.substr(colon + 1);
  }
  if (v == wanted) return true;
  if (v.size() > wanted.size() && v.compare(0, wanted.size(), wanted) == 0) {
    const char next = v[wanted.size()];
    return next == '-' || next == '+' || next == '~';
  }
  return false;
}

std::string line_change_summary(const std::string& current, const std::string& wanted) {
  const auto a = split_lines(current);
  const auto b = split_lines(wanted);
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
