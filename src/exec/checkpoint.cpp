#include "gpuexpand/exec/checkpoint.hpp"

#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {
namespace {

using nlohmann::json;

std::string q(const std::string& s) { return shell_quote(s); }

std::string quoted_list(const std::set<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += " " + q(item);
  return out;
}

}  // namespace

std::string checkpoint_dir(int64_t run_id, const std::string& phase, const std::string& root) {
  return root + "/" + std::to_string(run_id) + "/" + phase;
}

std::string checkpoint_script(int64_t run_id, const std::string& phase, const PhaseTouch& touch,
                              const std::string& root) {
  const std::string d = q(checkpoint_dir(run_id, phase, root));
  std::string s = "set -e\nexport LC_ALL=C\numask 077\nd=" + d + "\n";
  s += "rm -rf \"$d\" && mkdir -p \"$d\"\n";
  s += ": > \"$d/absent\"; : > \"$d/present\"\n";
  std::set<std::string> paths = touch.files;
  paths.insert(touch.directories.begin(), touch.directories.end());
  for (const auto& path : paths) {
    s += "if [ -e " + q(path) + " ] || [ -L " + q(path) + " ]; then printf '%s\\n' " + q(path) +
         " >> \"$d/present\"; else printf '%s\\n' " + q(path) + " >> \"$d/absent\"; fi\n";
  }
  // Contents, modes, owners and symlinks as they are; directories without
  // their contents (a mountpoint may have a filesystem on it).
  s += "if [ -s \"$d/present\" ]; then tar -cpPf \"$d/files.tar\" --no-recursion -T \"$d/present\"; fi\n";
  if (!touch.packages.empty()) {
    s += "if command -v dpkg-query >/dev/null 2>&1; then dpkg-query -W -f='${Package}\\t${db:Status-Abbrev}\\t${Version}\\n'" +
         quoted_list(touch.packages) +
         // Installed ("ii", or "hi" when held): NAME, VERSION, and whether it was held.
         " 2>/dev/null | awk -F'\\t' '$2 ~ /^.i/ {print $1\"\\t\"$3\"\\t\"substr($2,1,1)}' > \"$d/packages\" || true\n";
    s += "else rpm -q --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\n'" + quoted_list(touch.packages) +
         " 2>/dev/null | grep -v 'not installed' > \"$d/packages\" || true; fi\n";
  }
  for (const auto& service : touch.services) {
    const std::string unit = q(service + ".service");
    s += "printf '%s\\t%s\\t%s\\n' " + q(service) + " \"$(systemctl is-enabled " + unit +
         " 2>/dev/null || true)\" \"$(systemctl is-active " + unit + " 2>/dev/null || true)\" >> \"$d/services\"\n";
  }
  for (const auto& key : touch.sysctl_keys) {
    std::string path = key;
    for (auto& c : path) c = c == '.' ? '/' : c;
    s += "printf '%s\\t%s\\n' " + q(key) + " \"$(cat " + q("/proc/sys/" + path) + " 2>/dev/null || echo @@missing)\" >> "
         "\"$d/sysctl\"\n";
  }
  for (const auto& target : touch.mount_targets) {
    s += "if mountpoint -q " + q(target) + " 2>/dev/null; then printf '%s\\t1\\n' " + q(target) +
         "; else printf '%s\\t0\\n' " + q(target) + "; fi >> \"$d/mounts\"\n";
  }
  if (touch.hostname) s += "cat /proc/sys/kernel/hostname > \"$d/hostname\"\n";
  s += "echo ok > \"$d/complete\"\n";
  return s;
}

std::string restore_script(int64_t run_id, const std::string& phase, const PhaseTouch& touch,
                           const std::string& root) {
  const std::string d = q(checkpoint_dir(run_id, phase, root));
  // Keep going on errors: restore as much as possible, then report.
  std::string s = "export LC_ALL=C\nd=" + d + "\nrc=0\n";
  s += "[ -f \"$d/complete\" ] || { echo \"checkpoint $d is incomplete or missing\" >&2; exit 2; }\n";
  s += "fail() { echo \"restore: $*\" >&2; rc=1; }\n";
  for (const auto& target : touch.mount_targets) {
    s += "if grep -qx " + q(target + "\t0") + " \"$d/mounts\" 2>/dev/null && mountpoint -q " + q(target) +
         "; then umount " + q(target) + " || umount -l " + q(target) + " || fail " + q("umount " + target) + "; fi\n";
  }
  // Files: remove what did not exist, put back what did (content, mode, owner).
  s += "while IFS= read -r p; do [ -n \"$p\" ] || continue; if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then rmdir \"$p\" "
       "2>/dev/null || fail \"cannot remove directory $p (not empty)\"; else rm -f \"$p\"; fi; done < \"$d/absent\"\n";
  s += "if [ -f \"$d/files.tar\" ]; then tar -xpPf \"$d/files.tar\" || fail 'restoring files'; fi\n";
  for (const auto& key : touch.sysctl_keys) {
    s += "v=$(awk -F'\\t' -v k=" + q(key) + " '$1==k {print $2}' \"$d/sysctl\"); [ \"$v\" = @@missing ] || sysctl -q -w " +
         q(key) + "=\"$v\" || fail " + q("sysctl " + key) + "\n";
  }
  // Command steps' own rollbacks, newest first, after the files are back
  // (they may read the restored configuration) and before packages are
  // purged (they may need the phase's tools: `scontrol delete` needs
  // slurm-client).
  // They can read what the checkpoint saw (services, packages) in
  // $GPUEXPAND_CHECKPOINT.
  if (!touch.command_rollbacks.empty()) s += "export GPUEXPAND_CHECKPOINT=\"$d\"\n";
  for (auto it = touch.command_rollbacks.rbegin(); it != touch.command_rollbacks.rend(); ++it) {
    // On lines of their own: a rollback that ends in a comment must not
    // comment out the closing parenthesis.
    s += "(\n" + *it + "\n) || fail " + q("command rollback failed: " + *it) + "\n";
  }
  if (!touch.packages.empty()) {
    // Back to the versions the checkpoint saw: downgrade or upgrade what was
    // there, purge what was not.
    s += "if command -v apt-get >/dev/null 2>&1; then export DEBIAN_FRONTEND=noninteractive; install=''; purge=''\n";
    for (const auto& name : touch.packages) {
      s += "  v=$(awk -F'\\t' -v n=" + q(name) + " '$1==n {print $2}' \"$d/packages\" 2>/dev/null)\n";
      s += "  if [ -n \"$v\" ]; then install=\"$install " + q(name) + "=$v\"; elif dpkg-query -W " + q(name) +
           " >/dev/null 2>&1; then purge=\"$purge " + q(name) + "\"; fi\n";
    }
    s += "  if [ -n \"$purge\" ]; then apt-get purge -y -q --allow-change-held-packages $purge >/dev/null || fail \"purge$purge\"; fi\n";
    s += "  if [ -n \"$install\" ]; then apt-get install -y -q --allow-downgrades --allow-change-held-packages "
         "-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold $install >/dev/null || fail "
         "\"install$install\"; fi\n";
    // Holds as the checkpoint saw them.
    for (const auto& name : touch.packages) {
      s += "  h=$(awk -F'\\t' -v n=" + q(name) + " '$1==n {print $3}' \"$d/packages\" 2>/dev/null)\n";
      s += "  if [ \"$h\" = h ]; then apt-mark hold " + q(name) + " >/dev/null; elif dpkg-query -W -f='${db:Status-Abbrev}' " +
           q(name) + " 2>/dev/null | grep -q '^h'; then apt-mark unhold " + q(name) + " >/dev/null; fi\n";
    }
    s += "elif command -v dnf >/dev/null 2>&1; then\n";
    for (const auto& name : touch.packages) {
      s += "  v=$(awk -F'\\t' -v n=" + q(name) + " '$1==n {print $2}' \"$d/packages\" 2>/dev/null)\n";
      s += "  if [ -n \"$v\" ]; then dnf install -y -q --allowerasing " + q(name) + "-\"$v\" || fail " +
           q("dnf install " + name) + "; elif rpm -q " + q(name) + " >/dev/null 2>&1; then dnf remove -y -q " +
           q(name) + " || fail " + q("dnf remove " + name) + "; fi\n";
    }
    s += "fi\n";
  }
  // Unit files and drop-ins may be back to what they were: systemd must
  // read them again before it starts or stops anything.
  if (!touch.services.empty()) s += "systemctl daemon-reload 2>/dev/null || true\n";
  for (const auto& service : touch.services) {
    const std::string unit = q(service + ".service");
    s += "line=$(awk -F'\\t' -v n=" + q(service) + " '$1==n' \"$d/services\"); enabled=$(printf '%s' \"$line\" | cut -f2); "
         "active=$(printf '%s' \"$line\" | cut -f3)\n";
    s += "case \"$enabled\" in enabled) systemctl enable -q " + unit + " 2>/dev/null ;; disabled) systemctl disable -q " +
         unit + " 2>/dev/null ;; esac\n";
    s += "if [ \"$active\" = active ]; then systemctl restart " + unit + " || fail " + q("start " + service) +
         "; elif systemctl is-active -q " + unit + " 2>/dev/null; then systemctl stop " + unit + "; fi\n";
  }
  if (touch.hostname) s += "[ -f \"$d/hostname\" ] && hostname \"$(cat \"$d/hostname\")\"\n";
  for (const auto& target : touch.mount_targets) {
    s += "if grep -qx " + q(target + "\t1") + " \"$d/mounts\" 2>/dev/null && ! mountpoint -q " + q(target) +
         "; then mount " + q(target) + " || fail " + q("mount " + target) + "; fi\n";
  }
  s += "exit $rc\n";
  return s;
}

}  // namespace gpuexpand
