#include "gpuexpand/exec/step_actions.hpp"

#include "gpuexpand/plan/step_decisions.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/local_file.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string q(const std::string& s) { return shell_quote(s); }

// Mode and ownership for a path that exists; chown only when asked.
std::string ownership_commands(const json& p, const std::string& path) {
  std::string out;
  if (p.contains("mode")) out += " && chmod " + q(param_text(p, "mode")) + " " + path;
  const std::string owner = param_text(p, "owner"), group = param_text(p, "group");
  if (!owner.empty() || !group.empty()) out += " && chown " + q(owner + (group.empty() ? "" : ":" + group)) + " " + path;
  return out;
}

// Writes stdin to `path` atomically: a temporary file beside it, then a
// rename, so a reader never sees half a config file.
ActionCommand write_file(const json& p) {
  const std::string path = param_text(p, "path");
  const std::string qp = q(path);
  std::string command = "d=$(dirname -- " + qp + ") && mkdir -p -- \"$d\" && t=$(mktemp \"$d/.gpuexpand.XXXXXX\") && cat > \"$t\"";
  command += ownership_commands(p, "\"$t\"");
  command += " && mv -f -- \"$t\" " + qp + " || { rm -f -- \"$t\"; exit 1; }";
  return {command, param_text(p, "content")};
}

std::string fstab_line(const FstabFields& f) {
  auto escape = [](std::string s) {
    std::string out;
    for (char c : s) out += c == ' ' ? std::string("\\040") : std::string(1, c);
    return out;
  };
  return escape(f.source) + " " + escape(f.target) + " " + f.fstype + " " + f.options + " 0 0";
}

}  // namespace

Result<PackageManager> package_manager_of(const json& facts) {
  const std::string pm = facts.contains("os") ? facts["os"].value("package_manager", "none") : "none";
  if (pm == "apt") return PackageManager::Apt;
  if (pm == "dnf" || pm == "yum") return PackageManager::Dnf;
  return make_error("no supported package manager on the node (found '" + pm + "'; apt and dnf are supported)");
}

std::string install_packages_command(const std::vector<std::pair<std::string, std::string>>& name_and_version,
                                     PackageManager manager, bool refresh_index) {
  if (manager == PackageManager::Dnf) {
    std::string list;
    for (const auto& [name, version] : name_and_version) list += " " + q(version.empty() ? name : name + "-" + version);
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
      list += " " + q(name);
      continue;
    }
    const std::string var = "p" + std::to_string(pinned++);
    command += "v=$(apt-cache madison " + q(name) + " | awk -F'|' -v w=" + q(version) +
               " '{x=$2; gsub(/ /,\"\",x); y=x; sub(/^[0-9]+:/,\"\",y); if (y==w || index(y, w\"-\")==1 || "
               "index(y, w\"+\")==1 || index(y, w\"~\")==1) {print x; exit}}'); [ -n \"$v\" ] || { echo " +
               q(name + ": version " + version + " is not in the package sources") + " >&2; exit 100; }; " + var +
               "=" + q(name + "=") + "\"$v\"; ";
    list += " \"$" + var + "\"";
  }
  return command + "apt-get install -y -q --allow-downgrades -o Dpkg::Options::=--force-confdef " +
         "-o Dpkg::Options::=--force-confold" + list;
}

std::string remove_packages_command(const std::vector<std::string>& names, PackageManager manager) {
  std::string list;
  for (const auto& n : names) list += " " + q(n);
  return manager == PackageManager::Apt ? "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q" + list
                                        : "dnf remove -y -q" + list;
}

Result<ActionCommand> action_for(const ResolvedStep& step, const ActionContext& context) {
  const json& p = step.params;
  const std::string& type = step.type;
  if (type == "hostname") {
    const std::string name = q(param_text(p, "name"));
    return ActionCommand{"printf '%s\\n' " + name + " > /etc/hostname && hostname " + name, ""};
  }
  if (type == "timezone") {
    const std::string zone = param_text(p, "zone");
    return ActionCommand{"test -e " + q("/usr/share/zoneinfo/" + zone) + " || { echo " +
                             q("unknown time zone " + zone + " (is tzdata installed?)") + " >&2; exit 1; }; ln -sfn " +
                             q("/usr/share/zoneinfo/" + zone) + " /etc/localtime && printf '%s\\n' " + q(zone) +
                             " > /etc/timezone",
                         ""};
  }
  if (type == "file") return write_file(p);
  if (type == "copy") {
    if (param_text(p, "src_host") == "controller") {
      return make_error("step '" + step.key + "': its source is on the controller: the executor fetches it");
    }
    // Read now, at apply time, and checked against the digest the plan
    // compared: a source that changed since then is refused, not sent.
    auto data = read_local_file(param_text(p, "src"));
    if (!data) return make_error("step '" + step.key + "': " + data.error().message);
    return copy_action(step, std::move(data.value()));
  }
  if (type == "line") {
    const std::string path = q(param_text(p, "path"));
    const std::string line = q(param_text(p, "line"));
    return ActionCommand{"touch " + path + " && { grep -qxF -- " + line + " " + path + " || printf '%s\\n' " + line +
                             " >> " + path + "; }",
                         ""};
  }
  if (type == "directory") {
    const std::string path = q(param_text(p, "path"));
    return ActionCommand{"mkdir -p -- " + path + ownership_commands(p, path), ""};
  }
  if (type == "package") {
    const std::string state = param_text(p, "state", "present");
    std::vector<std::pair<std::string, std::string>> wanted;
    std::vector<std::string> names;
    for (std::string name : param_names(p.value("names", json()))) {
      std::string version = param_text(p, "version");
      if (auto eq = name.find('='); eq != std::string::npos) {
        version = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      wanted.emplace_back(name, version);
      names.push_back(name);
    }
    if (state == "absent") return ActionCommand{remove_packages_command(names, context.package_manager), ""};
    return ActionCommand{install_packages_command(wanted, context.package_manager, context.refresh_package_index), ""};
  }
  if (type == "service") {
    const std::string unit = q(param_text(p, "name"));
    const bool enabled = bool_param(p, "enabled", true);
    const std::string state = param_text(p, "state", "running");
    // daemon-reload first: an earlier step may have written a drop-in.
    std::string command = std::string("systemctl daemon-reload && systemctl ") + (enabled ? "enable " : "disable ") +
                          unit + " -q";
    // `restart` also starts a stopped unit; it is what restart_on asks for.
    command += state == "running" ? " && systemctl restart " + unit : " && systemctl stop " + unit;
    return ActionCommand{command, ""};
  }
  if (type == "sysctl") {
    std::string command;
    for (const auto& [key, value] : p["values"].items()) {
      if (!command.empty()) command += " && ";
      command += "sysctl -q -w " + q(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
    }
    return ActionCommand{command.empty() ? "true" : command, ""};
  }
  if (type == "kernel_module") {
    std::string command;
    for (const auto& name : param_names(p.value("names", json()))) {
      command += (command.empty() ? "" : " && ") + std::string("modprobe ") + q(name);
    }
    return ActionCommand{command.empty() ? "true" : command, ""};
  }
  if (type == "mount") {
    const FstabFields f = mount_fstab_fields(p);
    const std::string target = q(f.target);
    // Replace this target's fstab line (fields compared unescaped), keep
    // every other line byte for byte, then mount or remount.
    std::string command = "mkdir -p -- " + target + " && t=$(mktemp /etc/.fstab.gpuexpand.XXXXXX) && awk -v m=" +
                          q(f.target) +
                          " '{t=$2; gsub(/\\\\040/,\" \",t)} !(t==m && $1 !~ /^#/)' /etc/fstab > \"$t\" && printf '%s\\n' " +
                          q(fstab_line(f)) + " >> \"$t\" && chmod 0644 \"$t\" && mv -f \"$t\" /etc/fstab && " +
                          "if mountpoint -q " + target + "; then umount " + target + " && mount " + target +
                          "; else mount " + target + "; fi";
    return ActionCommand{command, ""};
  }
  if (type == "command") return ActionCommand{param_text(p, "run"), ""};
  if (type == "acceptance") return make_error("step '" + step.key + "': acceptance is run by the executor");
  if (type == "reboot") return ActionCommand{"systemctl --no-block reboot", ""};  // the executor also waits for the node
  return make_error("step '" + step.key + "': no action for type '" + type + "'");
}

Result<ActionCommand> copy_action(const ResolvedStep& step, std::string content) {
  const json& p = step.params;
  const std::string planned = param_text(p, "src_sha256");
  if (!planned.empty() && sha256_hex(content) != planned) {
    return make_error("step '" + step.key + "': " + param_text(p, "src") +
                      (param_text(p, "src_host") == "controller" ? " on the controller" : "") +
                      " changed since the plan was made");
  }
  json with_content = p;
  with_content["content"] = std::move(content);
  return write_file(with_content);
}

std::string controller_source_command(const ResolvedStep& step) {
  return "cat -- " + q(param_text(step.params, "src"));
}

}  // namespace gpuexpand
