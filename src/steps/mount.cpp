// mount: an fstab entry for a mount point, and the file system mounted there.

#include "gpuexpand/steps/decision.hpp"
#include "kinds.hpp"
#include "gpuexpand/util/shell_quote.hpp"

#include <algorithm>

namespace gpuexpand::steps {
namespace {

class Mount final : public StepKind {
 public:
  Mount() : StepKind("mount", {"source", "path", "fstype"}, {"options"}) {}

  void decide(const StepInstance& step, const json& facts, Decision& d) const override {
    const FstabFields wanted = mount_fstab_fields(step.params);
    const std::string target = "mount " + wanted.target;
    const json* fstab = member(facts, "fstab");
    const json* mounts = member(facts, "mounts");
    if (!fstab || !mounts) {
      d.add(ChangeAction::Unknown, target, "no 'fstab' or 'mounts' in the facts; decided on the node");
      return;
    }
    const json* entry = nullptr;
    for (const auto& e : *fstab) {
      if (param_text(e, "target") == wanted.target) entry = &e;
    }
    if (!entry) {
      d.add(ChangeAction::Create, target, "no fstab entry");
    } else {
      for (const auto& [field, value] : {std::pair{"source", wanted.source}, std::pair{"fstype", wanted.fstype},
                                         std::pair{"options", wanted.options}}) {
        const std::string current = param_text(*entry, field, std::string(field) == "options" ? "defaults" : "");
        if (current != value) {
          d.add(ChangeAction::Update, target,
                std::string("fstab ") + (std::string(field) == "fstype" ? "type" : field) + " " + current +
                    ", wanted " + value);
        }
      }
    }
    const bool mounted = std::any_of(mounts->begin(), mounts->end(),
                                     [&](const json& m) { return param_text(m, "target") == wanted.target; });
    if (!mounted) d.add(ChangeAction::Update, target, "not mounted");
  }

  void predict(const ResolvedStep& step, json& facts) const override {
    const FstabFields f = mount_fstab_fields(step.params);
    json entry = {{"source", f.source}, {"target", f.target}, {"fstype", f.fstype}, {"options", f.options},
                  {"dump", 0}, {"pass", 0}};
    auto drop_target = [&](json& list) {
      if (!list.is_array()) list = json::array();
      list.erase(std::remove_if(list.begin(), list.end(),
                                [&](const json& e) { return e.value("target", "") == f.target; }),
                 list.end());
    };
    drop_target(facts["fstab"]);
    facts["fstab"].push_back(entry);
    drop_target(facts["mounts"]);
    facts["mounts"].push_back({{"target", f.target}, {"source", f.source}, {"fstype", f.fstype}, {"options", f.options}});
  }

  void touch(const ResolvedStep& step, PhaseTouch& touch) const override {
    touch.files.insert("/etc/fstab");
    touch.mount_targets.insert(mount_fstab_fields(step.params).target);
    touch.directories.insert(mount_fstab_fields(step.params).target);
  }

  Result<ActionCommand> action(const ResolvedStep& step, const ActionContext&) const override {
    const FstabFields f = mount_fstab_fields(step.params);
    const std::string target = shell_quote(f.target);
    // Replace this target's fstab line (fields compared unescaped), keep
    // every other line byte for byte, then mount or remount.
    std::string command = "mkdir -p -- " + target + " && t=$(mktemp /etc/.fstab.gpuexpand.XXXXXX) && awk -v m=" +
                          shell_quote(f.target) +
                          " '{t=$2; gsub(/\\\\040/,\" \",t)} !(t==m && $1 !~ /^#/)' /etc/fstab > \"$t\" && printf '%s\\n' " +
                          shell_quote(fstab_line(f)) + " >> \"$t\" && chmod 0644 \"$t\" && mv -f \"$t\" /etc/fstab && " +
                          "if mountpoint -q " + target + "; then umount " + target + " && mount " + target +
                          "; else mount " + target + "; fi";
    return ActionCommand{command, ""};
  }

 private:
  static std::string fstab_line(const FstabFields& f) {
    auto escape = [](std::string s) {
      std::string out;
      for (char c : s) out += c == ' ' ? std::string("\\040") : std::string(1, c);
      return out;
    };
    return escape(f.source) + " " + escape(f.target) + " " + f.fstype + " " + f.options + " 0 0";
  }
};

}  // namespace

GPUEXPAND_STEP_KIND(mount, Mount)

}  // namespace gpuexpand::steps
