// package: packages installed (at a version) or absent, through apt or dnf.

#include <fnmatch.h>

#include <algorithm>
#include <optional>
#include <regex>

#include "gpuexpand/steps/decision.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "kinds.hpp"

namespace gpuexpand::steps {
namespace {

class Package final : public StepKind {
 public:
  Package() : StepKind("package", {"names"}, {"version", "state", "hold", "replaces"}) {}

  Result<void> check_rendered(const json& params) const override {
    if (auto names = need_names(params); !names) return names;
    if (!params.contains("replaces") || params["replaces"].is_null()) return {};
    if (!params["replaces"].is_array()) return make_error("'replaces' must be a list of package name patterns");
    // dpkg-query and rpm read these as shell-style patterns of names.
    static const std::regex pattern("^[a-z0-9][a-z0-9+.*?\\[\\]-]*$");
    for (const auto& p : params["replaces"]) {
      if (!p.is_string() || !std::regex_match(p.get<std::string>(), pattern)) {
        return make_error("'replaces': " + p.dump() + " is not a package name pattern (like cuda-drivers-[0-9]*)");
      }
    }
    if (param_text(params, "state", "present") == "absent") return make_error("'replaces' goes with state: present");
    return {};
  }

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    const bool absent = param_text(step.params, "state", "present") == "absent";
    for (const auto& [name, version] : wanted_versions(step.params)) {
      request.packages.insert(name);
      if (!version.empty() && !absent) request.versioned_packages.insert(name);
      if (version.empty() && !absent) request.unpinned_packages.insert(name);
    }
    for (const auto& p : replaced_patterns(step.params)) request.package_patterns.insert(p);
  }

  void decide(const StepInstance& step, const json& facts, Decision& d) const override {
    const std::string state = d.param("state", "present");
    const json* packages = member(facts, "packages");
    for (const auto& [name, wanted] : wanted_versions(step.params)) {
      const std::string target = "package " + name;
      const json* installed = packages ? member(*packages, name) : nullptr;
      if (!installed) {
        d.add(ChangeAction::Unknown, target, "not in the facts; decided on the node");
        continue;
      }
      const bool present = installed->is_string();
      if (state == "absent") {
        if (present) d.add(ChangeAction::Remove, target, installed->get<std::string>() + " installed, wanted absent");
        continue;
      }
      // What `wanted` resolves to in the node's sources, when the facts know.
      const Offered offered = offered_version(facts, name, wanted);
      if (!present) {
        d.add(ChangeAction::Create, target,
              wanted.empty() ? "not installed" + install_candidate_note(facts, name) : "not installed, wanted " + wanted + offered.note);
      } else if (!wanted.empty() && !package_version_matches(installed->get<std::string>(), wanted)) {
        d.add(ChangeAction::Update, target, installed->get<std::string>() + " installed, " + wanted + " wanted" + offered.note);
      } else if (!offered.version.empty() && offered.version != installed->get<std::string>()) {
        // "550" is the newest 550.x offered, not any 550.x.
        d.add(ChangeAction::Update, target,
              installed->get<std::string>() + " installed, the sources offer " + offered.version + " for " + wanted);
      } else if (const auto hold = hold_wanted(step.params); hold && present) {
        // Holds are facts on apt nodes only; rpm nodes get their versionlock
        // whenever the step runs.
        if (const json* held = member(facts, "held_packages"); held && held->is_array()) {
          const bool is_held = std::find(held->begin(), held->end(), json(name)) != held->end();
          if (*hold && !is_held) {
            d.add_bookkeeping(ChangeAction::Update, target, installed->get<std::string>() + " installed, not held");
          }
          if (!*hold && is_held) d.add_bookkeeping(ChangeAction::Update, target, "held, wanted not held");
        }
      }
    }
    // Installed packages the step replaces (another driver branch's).
    if (packages && state != "absent") {
      for (const auto& name : replaced_installed(step.params, *packages)) {
        d.add(ChangeAction::Remove, "package " + name,
              (*packages)[name].get<std::string>() + " installed, replaced by " + joined_names(step.params));
      }
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    const bool absent = param_text(step.params, "state", "present") == "absent";
    const auto hold = absent ? std::optional<bool>(false) : hold_wanted(step.params);
    if (!absent && facts.contains("packages") && facts["packages"].is_object()) {
      for (const auto& name : replaced_installed(step.params, facts["packages"])) {
        facts["packages"][name] = nullptr;
        if (facts.contains("held_packages") && facts["held_packages"].is_array()) {
          json& held = facts["held_packages"];
          held.erase(std::remove(held.begin(), held.end(), json(name)), held.end());
        }
      }
    }
    for (const auto& [name, version] : wanted_versions(step.params)) {
      if (hold && facts.contains("held_packages") && facts["held_packages"].is_array()) {
        json& held = facts["held_packages"];
        held.erase(std::remove(held.begin(), held.end(), json(name)), held.end());
        if (*hold) held.push_back(name);
      }
      const std::string resolved = offered_version(facts, name, version).version;
      json& installed = facts["packages"][name];
      if (absent) {
        installed = nullptr;
      } else if (!resolved.empty()) {
        installed = resolved;
      } else if (!version.empty()) {
        installed = version;
      } else if (!installed.is_string()) {
        const std::string candidate = install_candidate(facts, name);
        installed = candidate.empty() ? "installed" : candidate;
      }
    }
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    for (const auto& n : step.params.value("names", json::array())) {
      if (n.is_string()) touch.packages.insert(n.get<std::string>().substr(0, n.get<std::string>().find('=')));
    }
    for (const auto& p : replaced_patterns(step.params)) touch.package_patterns.insert(p);
  }

  bool installs_packages() const override { return true; }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext& context) const override {
    const auto wanted = wanted_versions(step.params);
    if (param_text(step.params, "state", "present") == "absent") {
      std::vector<std::string> names;
      for (const auto& [name, _] : wanted) names.push_back(name);
      return ActionCommand{remove_packages_command(names, context.package_manager), ""};
    }
    const auto replaces = replaced_patterns(step.params);
    std::string command = install_packages_command(wanted, context.package_manager, context.refresh_package_index,
                                                   hold_wanted(step.params).has_value(), replaces);
    if (const auto hold = hold_wanted(step.params)) {
      std::vector<std::string> names;
      for (const auto& [name, _] : wanted) names.push_back(name);
      command += " && " + hold_packages_command(names, *hold, context.package_manager);
    }
    return ActionCommand{command, ""};
  }

 private:
  static std::vector<std::string> replaced_patterns(const json& params) {
    std::vector<std::string> out;
    if (params.contains("replaces") && params["replaces"].is_array()) {
      for (const auto& p : params["replaces"]) {
        if (p.is_string()) out.push_back(p.get<std::string>());
      }
    }
    return out;
  }

  // Installed packages (in `packages`, the facts' map) matching a pattern
  // of the step's `replaces`, other than the ones it installs.
  static std::vector<std::string> replaced_installed(const json& params, const json& packages) {
    std::vector<std::string> out;
    const auto patterns = replaced_patterns(params);
    if (patterns.empty() || !packages.is_object()) return out;
    std::vector<std::string> wanted;
    for (const auto& [name, _] : wanted_versions(params)) wanted.push_back(name);
    for (const auto& [name, version] : packages.items()) {
      if (!version.is_string() || std::find(wanted.begin(), wanted.end(), name) != wanted.end()) continue;
      for (const auto& p : patterns) {
        if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) {
          out.push_back(name);
          break;
        }
      }
    }
    return out;
  }

  static std::string joined_names(const json& params) {
    std::string out;
    for (const auto& [name, _] : wanted_versions(params)) out += (out.empty() ? "" : ", ") + name;
    return out;
  }

  // `hold` given: true holds, false releases; absent: holds are left alone.
  static std::optional<bool> hold_wanted(const json& params) {
    if (!params.contains("hold") || params["hold"].is_null()) return std::nullopt;
    return bool_param(params, "hold", false);
  }

  // The version apt installs NAME at, where the facts know it (reference
  // specs ask the probe, FactsRequest::unpinned_packages): "" otherwise.
  static std::string install_candidate(const json& facts, const std::string& name) {
    const json* all = member(facts, "package_install_candidates");
    const json* version = all ? member(*all, name) : nullptr;
    return version && version->is_string() ? version->get<std::string>() : "";
  }
  static std::string install_candidate_note(const json& facts, const std::string& name) {
    const std::string version = install_candidate(facts, name);
    return version.empty() ? "" : " (" + version + " in the sources)";
  }

  struct Offered {
    std::string version;  // the newest offered version matching, "" when unknown or none
    std::string note;     // for reasons: " (550.90.07-1 in the sources)"
  };
  static Offered offered_version(const json& facts, const std::string& name, const std::string& wanted) {
    Offered out;
    if (wanted.empty()) return out;
    const json* all = member(facts, "package_candidates");
    const json* list = all ? member(*all, name) : nullptr;
    if (!list || !list->is_array()) return out;
    for (const auto& v : *list) {
      if (v.is_string() && package_version_matches(v.get<std::string>(), wanted)) {
        out.version = v.get<std::string>();
        out.note = " (" + out.version + " in the sources)";
        return out;
      }
    }
    out.note = " (not in the node's sources now)";
    return out;
  }

  // (name, version) per entry of `names`: "name=1.2" pins that entry, else `version` applies.
  static std::vector<std::pair<std::string, std::string>> wanted_versions(const json& p) {
    std::vector<std::pair<std::string, std::string>> out;
    for (std::string name : param_names(p.value("names", json()))) {
      std::string version = param_text(p, "version");
      if (auto eq = name.find('='); eq != std::string::npos) {
        version = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      out.emplace_back(name, version);
    }
    return out;
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(package, Package)

}  // namespace gpuexpand::steps

namespace gpuexpand {

Result<PackageManager> package_manager_of(const nlohmann::json& facts) {
  const std::string pm = facts.contains("os") ? facts["os"].value("package_manager", "none") : "none";
  if (pm == "apt") return PackageManager::Apt;
  if (pm == "dnf" || pm == "yum") return PackageManager::Dnf;
  return make_error("no supported package manager on the node (found '" + pm + "'; apt and dnf are supported)");
}

std::string version_select_awk(const std::string& wanted, int field) {
  // package_version_matches (steps/params.cpp) in awk: the first line whose
  // version matches is printed, so the input comes newest first.
  return "awk -F'|' -v w=" + shell_quote(wanted) + " -v f=" + std::to_string(field) +
         " '{x=$f; gsub(/ /,\"\",x); y=x; e=index(w,\":\"); "
         "if (e) { if (y !~ /^[0-9]+:/) y=\"0:\" y } else sub(/^[0-9]+:/,\"\",y); "
         "r=substr(w,e+1); "
         "if (index(r,\"-\")) ok=(y==w || index(y,w\"+\")==1 || index(y,w\"~\")==1); "
         "else { u=y; sub(/-[^-]*$/,\"\",u); ok=(u==w || index(u,w\".\")==1 || index(u,w\"+\")==1 || index(u,w\"~\")==1) } "
         "if (ok) {print x; exit}}'";
}

std::string install_packages_command(const std::vector<std::pair<std::string, std::string>>& name_and_version,
                                     PackageManager manager, bool refresh_index, bool change_held,
                                     const std::vector<std::string>& replaces) {
  // Versions are resolved on the node, newest matching first: "550" is the
  // newest 550.x the sources offer, "550.90.07" is "550.90.07-1" there.
  std::string command;
  std::string list;
  size_t pinned = 0;
  auto resolve = [&](const std::string& name, const std::string& version, const std::string& lister, int field,
                     const std::string& joiner) {
    const std::string var = "p" + std::to_string(pinned++);
    command += "v=$(" + lister + " | " + version_select_awk(version, field) + "); [ -n \"$v\" ] || { echo " +
               shell_quote(name + ": version " + version + " is not in the package sources") + " >&2; exit 100; }; " +
               var + "=" + shell_quote(name + joiner) + "\"$v\"; ";
    list += " \"$" + var + "\"";
  };
  // The installed packages `replaces` matches, other than the ones
  // installed here, in $r: removed in the same transaction (apt's NAME-)
  // or right after (dnf).
  std::string patterns, keep;
  for (const auto& p : replaces) patterns += " " + shell_quote(p);
  for (const auto& [name, _] : name_and_version) keep += " -e " + shell_quote(name);
  if (manager == PackageManager::Dnf) {
    if (refresh_index) command += "dnf makecache -q || exit $?; ";
    if (!replaces.empty()) {
      command += "r=$(rpm -qa --qf '%{NAME}\\n'" + patterns + " 2>/dev/null | grep -vxF" + keep + "); ";
    }
    for (const auto& [name, version] : name_and_version) {
      if (version.empty()) {
        list += " " + shell_quote(name);
        continue;
      }
      // dnf install NAME-[EPOCH:]VERSION-RELEASE upgrades or downgrades to exactly that build.
      resolve(name, version,
              "dnf repoquery -q --showduplicates --qf '%{epoch}:%{version}-%{release}' " + shell_quote(name) +
                  " 2>/dev/null | sed 's/^0://' | sort -rV",
              1, "-");
    }
    // A versionlock on the old version would keep dnf from moving it.
    if (change_held) {
      std::string names;
      for (const auto& [name, _] : name_and_version) names += " " + shell_quote(name);
      command += "dnf -q versionlock delete" + names + " >/dev/null 2>&1; ";
    }
    command += "dnf install -y -q --allowerasing" + list;
    if (!replaces.empty()) command += " && { [ -z \"$r\" ] || dnf remove -y -q $r; }";
    return command;
  }
  command = "export DEBIAN_FRONTEND=noninteractive; ";
  if (refresh_index) command += "apt-get update -q >/dev/null || exit $?; ";
  for (const auto& [name, version] : name_and_version) {
    if (version.empty()) {
      list += " " + shell_quote(name);
      continue;
    }
    // apt-cache madison lists a package's versions newest first.
    resolve(name, version, "apt-cache madison " + shell_quote(name), 2, "=");
  }
  if (!replaces.empty()) {
    command += "r=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\\n'" + patterns +
               " 2>/dev/null | awk '$2 ~ /^.i/ {print $1 \"-\"}' | grep -vxF" +
               [&] {
                 std::string minus;
                 for (const auto& [name, _] : name_and_version) minus += " -e " + shell_quote(name + "-");
                 return minus;
               }() +
               "); ";
    list += " $r";
  }
  // A step that manages holds may move its own held packages, and one that
  // replaces packages may remove held ones; any other step stops at a
  // package someone held ("Held packages were changed").
  return command + "apt-get install -y -q --allow-downgrades " +
         (change_held || !replaces.empty() ? "--allow-change-held-packages " : "") +
         "-o Dpkg::Options::=--force-confdef " + "-o Dpkg::Options::=--force-confold" + list;
}

std::string hold_packages_command(const std::vector<std::string>& names, bool hold, PackageManager manager) {
  std::string list;
  for (const auto& n : names) list += " " + shell_quote(n);
  if (manager == PackageManager::Dnf) {
    return hold ? "{ dnf -q versionlock add" + list +
                      " >/dev/null || { echo 'dnf versionlock failed: is python3-dnf-plugin-versionlock installed?' >&2; "
                      "exit 1; }; }"
                : "{ dnf -q versionlock delete" + list + " >/dev/null 2>&1 || true; }";
  }
  return std::string("apt-mark ") + (hold ? "hold" : "unhold") + list + " >/dev/null";
}

std::string remove_packages_command(const std::vector<std::string>& names, PackageManager manager) {
  std::string list;
  for (const auto& n : names) list += " " + shell_quote(n);
  return manager == PackageManager::Apt ? "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q" + list
                                        : "dnf remove -y -q" + list;
}

}  // namespace gpuexpand
