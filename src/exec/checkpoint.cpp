#include "gpuexpand/exec/checkpoint.hpp"

#include <algorithm>
#include <cctype>

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

// Whether `target` is mounted, from the kernel's table alone: `mountpoint`
// stats the path, which hangs on a share whose server stopped answering
// (sshfs or NFS with a cut link), the very mount a rollback must take back.
// The table escapes space, tab, newline and backslash as octal.
std::string is_mounted(const std::string& target) {
  std::string escaped;
  for (char c : target) {
    switch (c) {
      case ' ': escaped += "\\040"; break;
      case '\t': escaped += "\\011"; break;
      case '\n': escaped += "\\012"; break;
      case '\\': escaped += "\\134"; break;
      default: escaped += c;
    }
  }
  return "M=" + q(escaped) + " awk '$2 == ENVIRON[\"M\"] {m = 1} END {exit !m}' /proc/self/mounts";
}

bool has_control_character(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

bool has_dot_dot_component(const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    if (path.compare(start, end - start, "..") == 0 && end - start == 2) return true;
    start = end + 1;
  }
  return false;
}

// A value in the message as the spec would show it: control characters escaped.
std::string shown(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::string> bad_path(const std::string& path, const char* what) {
  if (path.empty() || path[0] != '/') return std::string(what) + " " + shown(path) + " is not an absolute path";
  if (has_dot_dot_component(path)) return std::string(what) + " " + shown(path) + " has a '..' component";
  if (has_control_character(path)) return std::string(what) + " " + shown(path) + " has a control character";
  return std::nullopt;
}

std::string refused_script(const std::string& reason) {
  return "printf '%s\\n' " + q("checkpoint refused: " + reason) + " >&2\nexit 2\n";
}

}  // namespace

std::optional<std::string> checkpoint_refusal(const std::string& phase, const PhaseTouch& touch,
                                              const std::string& root) {
  if (auto bad = bad_path(root, "the checkpoint root")) return bad;
  const bool phase_ok = !phase.empty() && std::isalnum(static_cast<unsigned char>(phase[0])) &&
                        std::all_of(phase.begin(), phase.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
                        });
  if (!phase_ok) {
    return "phase name " + shown(phase) + " is not one path component (letters, digits, '-', '_'): its checkpoint " +
           "directory must stay under " + root;
  }
  for (const auto* paths : {&touch.files, &touch.directories, &touch.mount_targets}) {
    for (const auto& path : *paths) {
      if (auto bad = bad_path(path, "path")) return bad;
    }
  }
  for (const auto& interface : touch.interfaces) {
    if (interface.empty() || interface.find('/') != std::string::npos || has_control_character(interface)) {
      return "interface name " + shown(interface) + " cannot name a file in the checkpoint directory (no '/', no " +
             "control characters)";
    }
  }
  for (const auto* names : {&touch.sysctl_keys, &touch.services}) {
    for (const auto& name : *names) {
      if (has_control_character(name)) return "name " + shown(name) + " has a control character";
    }
  }
  return std::nullopt;
}

std::string checkpoint_dir(int64_t run_id, const std::string& phase, const std::string& root) {
  return root + "/" + std::to_string(run_id) + "/" + phase;
}

std::string checkpoint_script(int64_t run_id, const std::string& phase, const PhaseTouch& touch,
                              const std::string& root) {
  if (auto refused = checkpoint_refusal(phase, touch, root)) return refused_script(*refused);
  const std::string d = q(checkpoint_dir(run_id, phase, root));
  std::string s = "set -e\nexport LC_ALL=C\numask 077\nd=" + d + "\n";
  // A full disk shows as whatever write failed first ("printf: I/O error"):
  // say what it is, so the operator frees space rather than hunting a bug.
  s += "trap 'rc=$?; if [ $rc -ne 0 ] && [ \"$(df -Pk \"$d\" 2>/dev/null | awk \"NR == 2 {print \\$4}\")\" = 0 ]; then "
       "echo \"no space left on device: the filesystem of $d is full\" >&2; fi; exit $rc' EXIT\n";
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
  if (!touch.packages.empty() || !touch.package_patterns.empty()) {
    // dpkg-query takes names and patterns alike and lists a package once.
    s += "if command -v dpkg-query >/dev/null 2>&1; then dpkg-query -W -f='${Package}\\t${db:Status-Abbrev}\\t${Version}\\n'" +
         quoted_list(touch.packages) + quoted_list(touch.package_patterns) +
         // Installed ("ii", or "hi" when held): NAME, VERSION, and whether it was held.
         " 2>/dev/null | awk -F'\\t' '$2 ~ /^.i/ {print $1\"\\t\"$3\"\\t\"substr($2,1,1)}' > \"$d/packages\" || true\n";
    // Every installed package: the restore purges what the phase pulled in
    // as a dependency (installed automatically since) as well.
    s += "  dpkg-query -W -f='${Package}\\t${db:Status-Abbrev}\\n' 2>/dev/null | awk -F'\\t' '$2 ~ /^.i/ {print $1}' > "
         "\"$d/installed\" || true\n";
    s += "else { ";
    if (!touch.packages.empty()) {
      s += "rpm -q --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\n'" + quoted_list(touch.packages) +
           " 2>/dev/null | grep -v 'not installed'; ";
    }
    if (!touch.package_patterns.empty()) {
      s += "rpm -qa --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\n'" + quoted_list(touch.package_patterns) + " 2>/dev/null; ";
    }
    s += "} > \"$d/packages\" || true; fi\n";
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
    s += "if " + is_mounted(target) + "; then printf '%s\\t1\\n' " + q(target) +
         "; else printf '%s\\t0\\n' " + q(target) + "; fi >> \"$d/mounts\"\n";
  }
  // Each interface's IPv4 addresses, or @@missing for no such interface.
  for (const auto& interface : touch.interfaces) {
    s += "if ip link show dev " + q(interface) + " >/dev/null 2>&1; then ip -4 -o addr show dev " + q(interface) +
         " | awk '{print $4}'; else echo @@missing; fi > \"$d\"/" + q("ipv4." + interface) + "\n";
  }
  if (touch.hostname) s += "cat /proc/sys/kernel/hostname > \"$d/hostname\"\n";
  s += "echo ok > \"$d/complete\"\n";
  return s;
}

std::string restore_script(int64_t run_id, const std::string& phase, const PhaseTouch& touch,
                           const std::string& root) {
  if (auto refused = checkpoint_refusal(phase, touch, root)) return refused_script(*refused);
  const std::string d = q(checkpoint_dir(run_id, phase, root));
  // Keep going on errors: restore as much as possible, then report.
  std::string s = "export LC_ALL=C\nd=" + d + "\nrc=0\n";
  s += "[ -f \"$d/complete\" ] || { echo \"checkpoint $d is incomplete or missing\" >&2; exit 2; }\n";
  s += "fail() { echo \"restore: $*\" >&2; rc=1; }\n";
  for (const auto& target : touch.mount_targets) {
    // -c: no canonical path, so umount stats nothing either; -l when the
    // share is busy (a process hung on it) or its server is gone.
    s += "if grep -qx " + q(target + "\t0") + " \"$d/mounts\" 2>/dev/null && " + is_mounted(target) +
         "; then umount -c " + q(target) + " 2>/dev/null || umount -l -c " + q(target) + " || fail " +
         q("umount " + target) + "; fi\n";
  }
  // Files: remove what did not exist, put back what did (content, mode, owner).
  s += "while IFS= read -r p; do [ -n \"$p\" ] || continue; if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then rmdir \"$p\" "
       "2>/dev/null || fail \"cannot remove directory $p (not empty)\"; else rm -f \"$p\"; fi; done < \"$d/absent\"\n";
  s += "if [ -f \"$d/files.tar\" ]; then tar -xpPf \"$d/files.tar\" || fail 'restoring files'; fi\n";
  for (const auto& key : touch.sysctl_keys) {
    s += "v=$(awk -F'\\t' -v k=" + q(key) + " '$1==k {print $2}' \"$d/sysctl\"); [ \"$v\" = @@missing ] || sysctl -q -w " +
         q(key) + "=\"$v\" || fail " + q("sysctl " + key) + "\n";
  }
  // Interfaces back to exactly the IPv4 addresses they had.
  for (const auto& interface : touch.interfaces) {
    const std::string dev = q(interface), saved = "\"$d\"/" + q("ipv4." + interface);
    s += "if [ -f " + saved + " ] && ! grep -qx @@missing " + saved + " && ip link show dev " + dev +
         " >/dev/null 2>&1; then\n";
    // A deleted primary address takes its subnet's secondaries along: an
    // address already gone is fine, and the saved ones are added after.
    s += "  for a in $(ip -4 -o addr show dev " + dev + " | awk '{print $4}'); do grep -qxF \"$a\" " + saved +
         " || ip addr del \"$a\" dev " + dev + " 2>/dev/null || ! ip -4 -o addr show dev " + dev +
         " | grep -qF \" $a \" || fail \"address $a on \"" + dev + "; done\n";
    s += "  while read -r a; do [ -z \"$a\" ] || ip addr replace \"$a\" brd + dev " + dev + " || fail \"address $a on \"" +
         dev + "; done < " + saved + "\n";
    s += "fi\n";
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
  if (!touch.packages.empty() || !touch.package_patterns.empty()) {
    // Back to the versions the checkpoint saw: downgrade or upgrade what was
    // there, purge what was not. The packages are the phase's names, and
    // what its patterns match now or matched then (a replaced driver
    // branch's packages come back, the new branch's go).
    // Word-split with globbing off and used quoted: a name is never code.
    std::string plain;
    for (const auto& name : touch.packages) plain += " " + name;
    s += "set -f\nnames=" + q(plain) + "\n";
    if (!touch.package_patterns.empty()) {
      s += "names=\"$names $(cut -f1 \"$d/packages\" 2>/dev/null) $({ dpkg-query -W -f='${Package}\\n'" +
           quoted_list(touch.package_patterns) + " || rpm -qa --qf '%{NAME}\\n'" + quoted_list(touch.package_patterns) +
           "; } 2>/dev/null)\"\n";
    }
    s += "names=$(printf '%s\\n' $names | sort -u)\n";
    s += "if command -v apt-get >/dev/null 2>&1; then export DEBIAN_FRONTEND=noninteractive; install=''; purge=''\n";
    s += "  for n in $names; do\n";
    s += "    v=$(awk -F'\\t' -v n=\"$n\" '$1==n {print $2}' \"$d/packages\" 2>/dev/null)\n";
    s += "    if [ -n \"$v\" ]; then install=\"$install $n=$v\"; elif dpkg-query -W -f='${db:Status-Abbrev}' \"$n\" 2>/dev/null | "
         "grep -q '^.i'; then purge=\"$purge $n\"; fi\n";
    s += "  done\n";
    s += "  if [ -n \"$purge\" ]; then apt-get purge -y -q --allow-change-held-packages $purge >/dev/null || fail \"purge$purge\"; fi\n";
    s += "  if [ -n \"$install\" ]; then apt-get install -y -q --allow-downgrades --allow-change-held-packages "
         "-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold $install >/dev/null || fail "
         "\"install$install\"; fi\n";
    // Dependencies the phase's packages pulled in: installed since the
    // checkpoint and marked automatic (never one someone asked for).
    s += "  if [ -f \"$d/installed\" ]; then new=$(dpkg-query -W -f='${Package}\\t${db:Status-Abbrev}\\n' 2>/dev/null | "
         "awk -F'\\t' '$2 ~ /^.i/ {print $1}' | grep -vxF -f \"$d/installed\")\n";
    s += "    auto=$([ -z \"$new\" ] || apt-mark showauto 2>/dev/null | grep -xF \"$new\")\n";
    s += "    if [ -n \"$auto\" ]; then apt-get purge -y -q --allow-change-held-packages $auto >/dev/null || fail \"purge$auto\"; fi; fi\n";
    // Holds as the checkpoint saw them.
    s += "  for n in $names; do\n";
    s += "    h=$(awk -F'\\t' -v n=\"$n\" '$1==n {print $3}' \"$d/packages\" 2>/dev/null)\n";
    s += "    if [ \"$h\" = h ]; then apt-mark hold \"$n\" >/dev/null; elif dpkg-query -W -f='${db:Status-Abbrev}' \"$n\" "
         "2>/dev/null | grep -q '^h'; then apt-mark unhold \"$n\" >/dev/null; fi\n";
    s += "  done\n";
    s += "elif command -v dnf >/dev/null 2>&1; then\n";
    s += "  for n in $names; do\n";
    s += "    v=$(awk -F'\\t' -v n=\"$n\" '$1==n {print $2}' \"$d/packages\" 2>/dev/null)\n";
    s += "    if [ -n \"$v\" ]; then dnf install -y -q --allowerasing \"$n-$v\" || fail \"dnf install $n\"; "
         "elif rpm -q \"$n\" >/dev/null 2>&1; then dnf remove -y -q \"$n\" || fail \"dnf remove $n\"; fi\n";
    s += "  done\n";
    s += "fi\nset +f\n";
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
    s += "if grep -qx " + q(target + "\t1") + " \"$d/mounts\" 2>/dev/null && ! " + is_mounted(target) +
         "; then mount " + q(target) + " || fail " + q("mount " + target) + "; fi\n";
  }
  s += "exit $rc\n";
  return s;
}

}  // namespace gpuexpand
