#include <algorithm>
#include <set>

#include "gpuexpand/accept/acceptance.hpp"
#include "gpuexpand/facts/probe.hpp"
#include "gpuexpand/facts/tool_parsers.hpp"
#include "gpuexpand/plan/controller.hpp"
#include "gpuexpand/plan/plan.hpp"
#include "gpuexpand/util/digest.hpp"
#include "gpuexpand/util/shell_quote.hpp"

namespace gpuexpand {
namespace {

// How long all of one script's checks may take together.
constexpr int kChecksTimeoutSeconds = 120;
// Between a gx_files call's secret files and the ones it may read whole: a
// path no file can have (/dev/null is not a directory), so stat prints
// nothing for it.
constexpr const char* kWholeFilesMark = "/dev/null/gx-whole";

// Checks are read-only by contract; bounded in time all the same, by one
// `timeout` and one `sh` for all of a script's checks: each check runs in
// a subshell of that sh (a fork, where its own `timeout` and `sh -c` were
// three programs, and a node's probe runs 4-20 checks). A check that hangs
// uses up the bound; its answer and those after it are then missing, and
// a step whose check has no answer is decided on the node. The exit code,
// then the last line the check printed (at most 200 bytes): what a check
// says about itself ("MTU 1500, wanted 9000") becomes the plan's reason.
// Shell builtins only past the check itself; the check sees no positional
// parameters, as under sh -c.
std::string check_lines(const std::map<std::string, std::string>& checks) {
  if (checks.empty()) return "";
  std::string inner =
      "m() { printf '\\n@@gpx:%s\\n' \"$*\"; }\n"
      "gx_check() {\n"
      "  m check \"$1\"; gx_c=$2; shift 2\n"
      "  o=$(eval \"$gx_c\" </dev/null 2>/dev/null); echo $?; o=${o##*\n}; printf '%.200s\\n' \"$o\"\n"
      "}\n";
  for (const auto& [key, command] : checks) inner += "gx_check " + shell_quote(key) + " " + shell_quote(command) + "\n";
  return "timeout " + std::to_string(kChecksTimeoutSeconds) + " sh -c " + shell_quote(inner) + " </dev/null 2>/dev/null\n";
}

// The package sections: what dpkg (or rpm) says of the requested packages,
// and the versions apt's sources offer. An exit status that says the tool
// itself failed (dpkg-query: 2 and up, 1 being "not installed"; apt-cache:
// any) sets gx_pbad, so that such an answer is never kept for reuse.
std::string package_sections(const FactsRequest& request) {
  std::string s;
  if (!request.packages.empty() || !request.package_patterns.empty()) {
    std::string names, patterns;
    for (const auto& p : request.packages) names += " " + shell_quote(p);
    for (const auto& p : request.package_patterns) patterns += " " + shell_quote(p);
    s += "m packages\n";
    // dpkg-query reads names and patterns alike; rpm -q takes names only,
    // rpm -qa patterns.
    s += "if command -v dpkg-query >/dev/null 2>&1; then dpkg-query -W -f='${Package}\\t${db:Status-Abbrev}\\t${Version}\\n'" +
         names + patterns + " 2>/dev/null; [ $? -le 1 ] || gx_pbad=1\n";
    s += "elif command -v rpm >/dev/null 2>&1; then ";
    if (!names.empty()) {
      s += "rpm -q --qf '%{NAME}\\tii \\t%{VERSION}-%{RELEASE}\\n'" + names + " 2>/dev/null | grep -v 'is not installed'";
    }
    if (!patterns.empty()) {
      s += std::string(names.empty() ? "" : "; ") + "rpm -qa --qf '%{NAME}\\tii \\t%{VERSION}-%{RELEASE}\\n'" + patterns +
           " 2>/dev/null";
    }
    s += "; fi\n";
  }
  if (!request.versioned_packages.empty()) {
    std::string names;
    for (const auto& p : request.versioned_packages) names += " " + shell_quote(p);
    // apt only: a dnf repoquery loads all metadata (seconds); dnf nodes
    // resolve the version at apply time.
    s += "m package-candidates; if command -v apt-cache >/dev/null 2>&1; then echo @@apt; apt-cache madison" + names +
         " 2>/dev/null || gx_pbad=1; fi\n";
  }
  if (!request.unpinned_packages.empty()) {
    std::string names;
    for (const auto& p : request.unpinned_packages) names += " " + shell_quote(p);
    s += "m package-policy; if command -v apt-cache >/dev/null 2>&1; then echo @@apt; apt-cache policy" + names +
         " 2>/dev/null || gx_pbad=1; fi\n";
  }
  return s;
}

// What the package sections read: dpkg's database (a pending journal in
// updates/ included), apt's configuration, preferences, sources and
// downloaded lists, and the machine id (Ubuntu's phased updates choose a
// candidate by it). Directories too: adding or removing a file changes
// theirs. A pattern no file matches is stat's error, not a line.
constexpr const char* kPackageInputs =
    "/etc/machine-id /var/lib/dpkg/status /var/lib/dpkg/arch /var/lib/dpkg/updates /var/lib/dpkg/updates/* "
    "/etc/apt /etc/apt/apt.conf* /etc/apt/apt.conf.d/* /etc/apt/preferences* /etc/apt/preferences.d/* "
    "/etc/apt/sources.list* /etc/apt/sources.list.d/* /var/lib/apt/lists /var/lib/apt/lists/*";

// package_sections_key of the sections as rendered.
std::string sections_key(const std::string& sections) {
  if (sections.empty()) return "";
  return sha256_hex(std::string("gpuexpand " GPUEXPAND_VERSION "\n") + kRemoteScriptEnvironment + kPackageInputs + "\n" +
                    sections);
}

// The package sections, and where the request asks for it their inputs'
// fingerprint first: inode, size, and modification and change times to
// the nanosecond of each file, one stat in all. With an earlier answer of
// the same key whose fingerprint is the same, "@@same" in place of the
// sections: dpkg-query, apt-cache and the two dpkg calls apt-cache makes
// are four programs of a probe's thirty (a sixth of its CPU on a
// converged node), and on a node nothing changed on they answer what
// they answered before. The sections end with a marker that says whether
// any of their tools failed (then the answer is not kept).
std::string package_part(const FactsRequest& request) {
  std::string sections = package_sections(request);
  if (sections.empty() || !request.fingerprint_packages) return sections;
  // APT_CONFIG or DPKG_ADMINDIR in the login's environment (sshd's
  // SetEnv, pam_env) point the tools at files not among the inputs: no
  // fingerprint then, so nothing is kept or reused.
  std::string s = "m package-inputs; gx_pbad= gx_pi=; [ -n \"${APT_CONFIG-}${DPKG_ADMINDIR-}\" ] || "
                  "gx_pi=$(stat -L -c '%n %i %s %.9Y %.9Z' -- " +
                  std::string(kPackageInputs) + " 2>/dev/null)\n";
  const auto& earlier = request.earlier_packages;
  if (earlier && !earlier->inputs.empty() && earlier->key == sections_key(sections)) {
    s += "if [ \"$gx_pi\" = " + shell_quote(earlier->inputs) + " ]; then echo @@same; else printf '%s\\n' \"$gx_pi\"\n" +
         sections + "fi\n";
  } else {
    s += "printf '%s\\n' \"$gx_pi\"\n" + sections;
  }
  return s + "m package-inputs-end${gx_pbad:+ failed}\n";
}

}  // namespace

std::string package_sections_key(const FactsRequest& request) { return sections_key(package_sections(request)); }

FactsRequest controller_request_for(const ClusterSpec& spec, const NodeSpec& node, const PlaybookSet& playbooks,
                                    const nlohmann::json& node_facts) {
  return facts_request_for(steps_to_probe(spec, node, playbooks, &node_facts));
}

std::string sysctl_path(const std::string& key) {
  std::string path = key;
  std::replace(path.begin(), path.end(), '.', '/');
  return "/proc/sys/" + path;
}

// The script prints "@@gpx:SECTION [ARG]" before each section's raw output.
// Values from the spec (paths, names, keys) are always shell-quoted; the
// check commands were rendered by the template engine in Shell context.
std::string probe_script(const FactsRequest& request) {
  std::string s;
  s += kProbeScriptHeader;
  s += kRemoteScriptEnvironment;
  s += "m() { printf '\\n@@gpx:%s\\n' \"$*\"; }\n";
  // stat's "MODE OWNER GROUP SIZE TYPE" -> is SIZE at most 64 KiB?
  s += "gx_small() { set -- $1; [ \"${4:-0}\" -le 65536 ]; }\n";
  // Small text files are printed with shell builtins, not cat: every
  // program the probe starts costs a fork and an exec (5-6 ms each on a
  // loaded node), and the probe is most of a no-op apply's time. Only for
  // files that can be read a byte at a time from any offset (dash's read
  // does that): regular files and the kernel's string sysctls.
  s += "gx_lines() { while IFS= read -r gx_l || [ -n \"$gx_l\" ]; do printf '%s\\n' \"$gx_l\"; done <\"$1\"; }\n";
  s += "m os-release; gx_lines /etc/os-release 2>/dev/null\n";
  // kernel.arch is uname's machine field (Linux 6.1 and later); uname on
  // older kernels.
  s += "m kernel; gx_lines /proc/sys/kernel/osrelease; gx_lines /proc/sys/kernel/arch 2>/dev/null || uname -m\n";
  s += "m hostname; gx_lines /proc/sys/kernel/hostname\n";
  s += "m timezone; readlink /etc/localtime 2>/dev/null || cat /etc/timezone 2>/dev/null\n";
  s += "m package-manager; for t in apt-get dnf yum; do command -v $t >/dev/null 2>&1 && echo $t; done\n";
  // One systemctl for every unit whose state is a fact, the time sync
  // daemons, slurmd and kubelet and the services steps manage: each
  // systemctl costs a program start and a D-Bus round trip (~10-20 ms on a
  // busy node). A block of properties per unit, by its Id; nothing where
  // systemd is not running (every unit then reads as unknown or inactive).
  {
    std::set<std::string> units = {"chrony.service", "chronyd.service", "systemd-timesyncd.service", "slurmd.service",
                                   "kubelet.service"};
    for (const auto& name : request.services) units.insert(name + ".service");
    std::string quoted;
    for (const auto& unit : units) quoted += " " + shell_quote(unit);
    s += "m units; systemctl show -p Id -p LoadState -p UnitFileState -p ActiveState" + quoted + " 2>/dev/null\n";
  }
  s += "m chrony-sources; command -v chronyc >/dev/null 2>&1 && timeout 5 chronyc -n -c sources 2>/dev/null\n";
  s += package_part(request);
  if (!request.files.empty()) {
    // One stat for every file, not one each (a spec's probe asks for tens
    // to hundreds of files, and each program costs a fork and an exec).
    // Its lines come in the order asked, each ending " PATH" and only for
    // files that exist; a file whose line is not next (gone or made since,
    // a newline in its name) is asked alone. Secret files (before the
    // kWholeFilesMark) come back as digests, all from one sha256sum after
    // the files; small files after the mark whole, read by the awk after
    // the files (their paths in gx_bytes; the parser checks each against
    // its stat size); an empty one, a link or a kernel's (their stat size
    // is not the length read) or one with a newline in its name alone, a
    // large one as a digest of its own. The files to digest are put after
    // the arguments asked ("$@" as the list: sh has no arrays), and the
    // asked ones shifted off at the end.
    s += "gx_nl='\n'\n";
    // CMD with the first N of ARGS, by the shell alone.
    s += "gx_head() { gx_k=$1 gx_c=$2; shift 2; gx_n=$#\n"
         "  for gx_f; do [ \"$gx_k\" -gt 0 ] && set -- \"$@\" \"$gx_f\"; gx_k=$((gx_k - 1)); done\n"
         "  shift \"$gx_n\"; \"$gx_c\" -- \"$@\"; }\n";
    s += "gx_files() {\n"
         "  gx_whole=0 gx_nd=0 gx_bytes=\n"
         "  gx_all=$(stat -c '%a %U %G %s %F %n' -- \"$@\" 2>/dev/null)\n"
         "  gx_asked=$#\n"
         "  for f; do\n"
         "    [ \"$f\" = " + std::string(kWholeFilesMark) + " ] && { gx_whole=1; continue; }\n"
         "    m file \"$f\"\n"
         "    gx_st=${gx_all%%\"$gx_nl\"*}\n"
         "    case $gx_st in\n"
         "      *\" $f\") gx_st=${gx_st%\" $f\"}\n"
         "        case $gx_all in *\"$gx_nl\"*) gx_all=${gx_all#*\"$gx_nl\"} ;; *) gx_all= ;; esac ;;\n"
         "      *) gx_st= ;;\n"
         "    esac\n"
         "    { [ -e \"$f\" ] || [ -L \"$f\" ]; } || continue\n"
         "    [ -n \"$gx_st\" ] || gx_st=$(stat -c '%a %U %G %s %F' -- \"$f\")\n"
         "    echo \"$gx_st\"\n"
         "    if [ -f \"$f\" ] && [ \"$gx_whole\" = 0 ]; then echo @@digest; set -- \"$@\" \"$f\"; gx_nd=$((gx_nd + 1))\n"
         "    elif [ -f \"$f\" ] && gx_small \"$gx_st\"; then\n"
         "      case $f:$gx_st in\n"
         "        *\"$gx_nl\"*|/proc/*|/sys/*|*' regular empty file'|*' symbolic link') base64 -w0 \"$f\"; echo ;;\n"
         "        *) echo @@bytes; gx_bytes=$gx_bytes$f$gx_nl ;;\n"
         "      esac\n"
         "    elif [ -f \"$f\" ]; then sha256sum \"$f\"; fi\n"
         "  done\n"
         "  shift \"$gx_asked\"\n"
         "  [ \"$gx_nd\" -eq 0 ] || { m file-digests; gx_head \"$gx_nd\" sha256sum \"$@\"; shift \"$gx_nd\"; }\n"
         "}\n";
    std::string whole, digest;
    for (const auto& path : request.files) {
      (request.secret_files.count(path) ? digest : whole) += " " + shell_quote(path);
    }
    s += "gx_files" + digest + (whole.empty() ? "" : " " + std::string(kWholeFilesMark) + whole) + "\n";
  }
  // CPUs (the processor lines), the first model name line (an empty line
  // where there is none, as on arm64), how many sockets (distinct physical
  // ids), NUMA nodes (a glob, counted by the shell) and the MemTotal line:
  // one program instead of nine. The same awk then prints the small text
  // files other sections want, each under its own marker (the arguments
  // after /proc/meminfo: "@SECTION" and that section's files), in the form
  // those sections always had: sysctls as grep -H's "PATH:VALUE" lines
  // (not the shell's read: dash reads a byte at a time, and an integer
  // sysctl read from an offset past 0 is empty), the mount table, and
  // each apt source file after "@@file PATH". One program, where a grep
  // and a cat per file were. Last, the small files gx_files asked for
  // (their paths in gx_bytes, a line each), under file-bytes: "@@file",
  // then each line of the file after a ">" (so no line of a file can pass
  // for a marker). The parser puts a file back from its lines and keeps it
  // only where that is as many bytes as stat said (mawk and gawk read NUL
  // and CR bytes as they are; a file that changed, or an awk that does
  // not, gives no content: decided on the node). Runs after the files:
  // one program for them, where a cat and a base64 were.
  s += "gx_count() { [ -e \"$1\" ] || shift; gx_n=$#; }; gx_count /sys/devices/system/node/node[0-9]*\n";
  std::string reads;
  if (request.fingerprint_packages && !package_sections(request).empty()) {
    // The configuration lines that would make apt or dpkg read files other
    // than the package inputs (package_part): apt's Dir and RootDir
    // settings (but its cache's and log's) and #include, dpkg's admindir,
    // instdir and root.
    // Where there are any, the controller keeps no answer. First of the
    // awk's sections, so the first such marker after the package part is
    // this one (no file's raw line printed before it).
    reads += " @package-config /etc/apt/apt.conf /etc/apt/apt.conf.d/* /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/*";
  }
  reads += " @mounts /proc/self/mounts";
  if (!request.sysctl_keys.empty()) {
    reads += " @sysctls";
    for (const auto& key : request.sysctl_keys) reads += " " + shell_quote(sysctl_path(key));
  }
  if (request.apt_sources) {
    // Each source file whole (they are small); a pattern nothing matched
    // stays as it is and reads as nothing.
    reads += " @apt-sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources";
  }
  s += "m cpu; gx_bytes=${gx_bytes-} awk -v numa=\"$gx_n\" '"
       "BEGIN { for (i = 3; i < ARGC; i++) { extra[i] = ARGV[i]; ARGV[i] = \"\" } } "
       "FNR == 1 { f++ } f == 1 && /^processor[ \\t]*:/ { n++ } "
       "f == 1 && /^model name/ && m == \"\" { m = $0 } f == 1 && /^physical id/ { p[$0] = 1 } "
       "f == 2 && /^MemTotal:/ { t = $0 } "
       "END { s = 0; for (k in p) s++; print n + 0; print m; print s; print numa; if (t != \"\") print t\n"
       "  for (i = 3; i < ARGC; i++) {\n"
       "    a = extra[i]\n"
       "    if (substr(a, 1, 1) == \"@\") { sec = substr(a, 2); printf \"\\n@@gpx:%s\\n\", sec; continue }\n"
       "    r = (getline l < a); if (r < 0) continue\n"
       "    if (sec == \"apt-sources\") print \"@@file \" a\n"
       "    while (r > 0) {\n"
       "      if (sec == \"sysctls\") print a \":\" l\n"
       "      else if (sec != \"package-config\") print l\n"
       "      else { k = tolower(l); if (k ~ /#include|rootdir|(^|[^a-z])dir[ \\t]*(::|[{\"])|^[ \\t]*(admindir|instdir|root)([ \\t=]|$)/ && k !~ /dir::(cache|log)/) print a \": \" l }\n"
       "      r = (getline l < a) }\n"
       "    close(a); if (sec == \"apt-sources\") print \"\"\n"
       "  }\n"
       "  n = split(ENVIRON[\"gx_bytes\"], fb, \"\\n\"); if (n > 1) printf \"\\n@@gpx:file-bytes\\n\"\n"
       "  for (i = 1; i <= n; i++) { a = fb[i]; if (a == \"\") continue; print \"@@file\"\n"
       "    while ((getline l < a) > 0) print \">\" l; close(a) } }' /proc/cpuinfo /proc/meminfo" + reads + "\n";
  for (const auto& dir : request.listed_directories) {
    // Names only, one per line; a missing directory lists nothing. Shell
    // builtins only: no fork per directory.
    s += "m listing " + shell_quote(dir) + "; for f in " + shell_quote(dir) +
         "/*; do [ -e \"$f\" ] && printf '%s\\n' \"${f##*/}\"; done; true\n";
  }
  s += "m modules; while read -r gx_l gx_rest; do printf '%s\\n' \"$gx_l\"; done 2>/dev/null </proc/modules\n";
  s += "m nvidia-query\n";
  s += "if command -v nvidia-smi >/dev/null 2>&1; then timeout 60 " + nvidia_smi_query_command() +
       " 2>&1; echo \"@@rc $?\"\n";
  if (request.gpu_details) {
    s += "m nvidia-table; timeout 60 nvidia-smi 2>&1\n";
    s += "m nvidia-topo; timeout 60 nvidia-smi topo -m 2>&1\n";
  }
  s += "else echo @@missing; fi\n";
  // The GPUs' device files, which Slurm's gres.conf names (File=): present
  // whether or not nvidia-smi works. Shell builtins only: no fork per GPU.
  s += "m gpu-device-files; for f in /dev/nvidia[0-9]*; do [ -e \"$f\" ] && echo \"$f\"; done; true\n";
  // `ip -d addr` prints each link's details (MTU, state, MAC, bond kind and
  // master) with its addresses: one program for both.
  s += "m ip-addr; ip -j -d addr show 2>/dev/null\n";
  if (request.rdma_ports) {
    s += "m rdma-link; command -v rdma >/dev/null 2>&1 && rdma link show 2>/dev/null\n";
    s += "m ibstat; command -v ibstat >/dev/null 2>&1 && timeout 20 ibstat 2>/dev/null\n";
    s += "m ibdev2netdev; command -v ibdev2netdev >/dev/null 2>&1 && ibdev2netdev 2>/dev/null\n";
  }
  s += "m fstab; gx_lines /etc/fstab 2>/dev/null\n";
  // The hostname by the shell's read (a string sysctl), not $(cat ...).
  // Printed whatever scontrol's exit: "Node X not found" (exit 1) is how
  // the facts know the node is not registered. Exported for the checks
  // after it (slurm-registration reads a NodeName line of its node
  // instead of asking slurmctld again).
  s += "m slurm-node; unset GX_SLURM_NODE; command -v scontrol >/dev/null 2>&1 && { read -r gx_host </proc/sys/kernel/hostname; "
       "GX_SLURM_NODE=$(timeout 10 scontrol show node \"$gx_host\" -o 2>/dev/null); "
       "printf '%s\\n' \"$GX_SLURM_NODE\"; export GX_SLURM_NODE; }\n";
  for (const auto& path : request.free_space_paths) {
    // The nearest directory that exists (a bare node has no
    // /var/lib/gpuexpand yet): its parent by the shell, not dirname.
    s += "m df " + shell_quote(path) + "; p=" + shell_quote(path) +
         "; while [ ! -e \"$p\" ]; do case $p in */*) p=${p%/*}; p=${p:-/} ;; *) p=/ ;; esac; done; "
         "df -P -B1 \"$p\" 2>/dev/null\n";
  }
  s += check_lines(request.checks);
  s += "m end\n";
  return s;
}

std::string controller_check_script(const std::map<std::string, FactsRequest>& by_node) {
  std::string s = kControllerScriptHeader;
  s += kRemoteScriptEnvironment;
  s += "m() { printf '\\n@@gpx:%s\\n' \"$*\"; }\n";
  for (const auto& [node, request] : by_node) {
    s += "m node " + shell_quote(node) + "\n" + check_lines(request.controller_checks);
    for (const auto& path : request.controller_files) {
      const std::string q = shell_quote(path);
      s += "m digest " + q + "; if [ -f " + q + " ]; then sha256sum < " + q + " | cut -c1-64; else echo @@missing; fi\n";
    }
  }
  return s + "m end\n";
}

Result<std::map<std::string, std::string>> split_controller_output(std::string_view output) {
  static constexpr std::string_view kNode = "\n@@gpx:node ", kEnd = "\n@@gpx:end\n";
  const size_t end = output.rfind(kEnd);
  if (end == std::string_view::npos || end + kEnd.size() != output.size()) {
    return make_error("the controller's check script stopped early (no end marker)");
  }
  std::map<std::string, std::string> out;
  for (size_t at = output.find(kNode); at != std::string_view::npos && at < end;) {
    const size_t name_end = output.find('\n', at + kNode.size());
    const size_t next = std::min(output.find(kNode, name_end), end);
    out[std::string(output.substr(at + kNode.size(), name_end - at - kNode.size()))] =
        std::string(output.substr(name_end, next - name_end)) + std::string(kEnd);
    at = next == end ? std::string_view::npos : next;
  }
  return out;
}

}  // namespace gpuexpand
