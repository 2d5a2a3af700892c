// package: packages installed (at a version) or absent, through apt or dnf.

#include "gpuexpand/steps/decision.hpp"
#include "gpuexpand/util/shell_quote.hpp"
#include "kinds.hpp"

namespace gpuexpand::steps {
namespace {

class Package final : public StepKind {
 public:
  Package() : StepKind("package", {"names"}, {"version", "state"}) {}

  Result<void> check_rendered(const json& params) const override { return need_names(params); }

  void request_facts(const ResolvedStep& step, FactsRequest& request) const override {
    for (std::string name : string_names(step.params.value("names", json()))) {
      request.packages.insert(name.substr(0, name.find('=')));
    }
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
      if (!present) {
        d.add(ChangeAction::Create, target, wanted.empty() ? "not installed" : "not installed, wanted " + wanted);
      } else if (!wanted.empty() && !package_version_matches(installed->get<std::string>(), wanted)) {
        d.add(ChangeAction::Update, target, installed->get<std::string>() + " installed, " + wanted + " wanted");
      }
    }
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    const bool absent = param_text(step.params, "state", "present") == "absent";
    for (const auto& [name, version] : wanted_versions(step.params)) {
      json& installed = facts["packages"][name];
      if (absent) {
        installed = nullptr;
      } else if (!version.empty()) {
        installed = version;
      } else if (!installed.is_string()) {
        installed = "installed";
      }
    }
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    for (const auto& n : step.params.value("names", json::array())) {
      if (n.is_string()) touch.packages.insert(n.get<std::string>().substr(0, n.get<std::string>().find('=')));
    }
  }

  bool installs_packages() const override { return true; }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext& context) const override {
    const auto wanted = wanted_versions(step.params);
    if (param_text(step.params, "state", "present") == "absent") {
      std::vector<std::string> names;
      for (const auto& [name, _] : wanted) names.push_back(name);
      return ActionCommand{remove_packages_command(names, context.package_manager), ""};
    }
    return ActionCommand{install_packages_command(wanted, context.package_manager, context.refresh_package_index), ""};
  }

 private:
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

std::string install_packages_command(const std::vector<std::pair<std::string, std::string>>& name_and_version,
                                     PackageManager manager, bool refresh_index) {
  if (manager == PackageManager::Dnf) {
    std::string list;
    for (const auto& [name, version] : name_and_version) list += " " + shell_quote(version.empty() ? name : name + "-" + version);
    // `dnf install NAME-VERSION` upgrades or downgrades to exactly that version.
    return (refresh_index ? std::string("dnf makecache -q && ") : std::string()) + "dnf install -y -q --allowerasing" +
           list;
  }
  // apt: exact versions are resolved on the node, because "550.90.07" is
  // "550.90.07-1" in the archive; an epoch ("1:") is ignored when comparing.
  std::string command = "export DEBIAN_FRONTEND=noninteractive; ";
  if (refresh_index) command += "apt-get update -q >/dev/null || exit $?; ";
  std::string list;
  size_t pinned = 0;
  for (const auto& [name, version] : name_and_version) {
    if (version.empty()) {
      list += " " + shell_quote(name);
      continue;
    }
    const std::string var = "p" + std::to_string(pinned++);
    command += "v=$(apt-cache madison " + shell_quote(name) + " | awk -F'|' -v w=" + shell_quote(version) +
               " '{x=$2; gsub(/ /,\"\",x); y=x; sub(/^[0-9]+:/,\"\",y); if (y==w || index(y, w\"-\")==1 || "
               "index(y, w\"+\")==1 || index(y, w\"~\")==1) {print x; exit}}'); [ -n \"$v\" ] || { echo " +
               shell_quote(name + ": version " + version + " is not in the package sources") + " >&2; exit 100; }; " + var +
               "=" + shell_quote(name + "=") + "\"$v\"; ";
    list += " \"$" + var + "\"";
  }
  return command + "apt-get install -y -q --allow-downgrades -o Dpkg::Options::=--force-confdef " +
         "-o Dpkg::Options::=--force-confold" + list;
}

std::string remove_packages_command(const std::vector<std::string>& names, PackageManager manager) {
  std::string list;
  for (const auto& n : names) list += " " + shell_quote(n);
  return manager == PackageManager::Apt ? "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q" + list
                                        : "dnf remove -y -q" + list;
}

}  // namespace gpuexpand
