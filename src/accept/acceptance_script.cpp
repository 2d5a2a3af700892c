// The node-side acceptance checks as one POSIX sh script (see
// acceptance.hpp): the scheduler's test job, the MTU ping, RDMA and NCCL
// bandwidth, RoCE QoS, storage writes, exporter scrapes and the
// playbook's own checks, each printing "@@check" lines. Every value from
// the spec or the facts is shell-quoted here.

#include "gpuexpand/accept/acceptance.hpp"
#include "settings_access.hpp"

namespace gpuexpand {
namespace {

using accept_detail::member;
using accept_detail::number;
using accept_detail::q;
using accept_detail::strings;
using accept_detail::text;
using accept_detail::wants;
using nlohmann::json;

// In a shell function that measured $bw: fail the network check when it
// is below `min` (nothing when the spec sets no minimum). `what` may use
// the function's variables; it is put in double quotes.
std::string below_minimum(const json& min, const std::string& what, const std::string& unit) {
  if (!min.is_number()) return "";
  const std::string m = min.dump();
  return "  if ! awk -v b=\"$bw\" -v m=" + q(m) + " 'BEGIN {exit !(b + 0 >= m + 0)}'; then res network fail \"$t\" \"" +
         what + ", below the minimum " + m + " " + unit + "\"; return; fi\n";
}

}  // namespace

std::string acceptance_script(const json& settings, const PingPeers& peers, AcceptanceMode mode,
                              const NodeHardware& hardware) {
  const RdmaPairs& rdma = hardware.rdma;
  const std::string node = text(settings, "node");
  const long job_timeout = number(settings, "job_timeout", 120);
  std::string s;
  s += "# gpuexpand acceptance checks\n";
  s += kRemoteScriptEnvironment;
  s += "now() { date +%s%N; }\n";
  // res CHECK STATUS START DETAIL: one result line, detail on one line.
  s += "res() { printf '@@check %s %s %s %s\\n' \"$1\" \"$2\" \"$(awk -v a=\"$3\" -v b=\"$(now)\" "
       "'BEGIN{printf \"%.2f\", (b-a)/1e9}')\" \"$(printf '%s' \"$4\" | tr '\\n\\t' '  ' | cut -c1-400)\"; }\n";
  s += "N=" + q(node) + "\n";

  const json& slurm = member(settings, "slurm");
  if (wants(settings, "scheduler") && slurm.is_object()) {
    s += "R=" + q(text(slurm, "reservation")) + "\n";
    s += "sched() {\n";
    s += "  t=$(now)\n";
    s += "  line=$(timeout 15 scontrol show node \"$N\" -o 2>&1)\n";
    s += "  case \"$line\" in NodeName=*) ;; *) res scheduler fail \"$t\" \"not registered with the controller: $line\"; "
         "return;; esac\n";
    s += "  f() { printf '%s\\n' \"$line\" | tr ' ' '\\n' | sed -n \"s/^$1=//p\" | head -n 1; }\n";
    if (mode == AcceptanceMode::Apply) {
      // A node gpuexpand drained after a failed acceptance gets another
      // chance; the reservation still keeps user jobs off it.
      s += "  case \"$(f State)\" in *DRAIN*) if printf '%s' \"$line\" | grep -q ' Reason=gpuexpand acceptance'; then\n";
      s += "    scontrol update nodename=\"$N\" state=resume >/dev/null 2>&1; sleep 2;"
           " line=$(timeout 15 scontrol show node \"$N\" -o 2>&1); fi;; esac\n";
    }
    // A node (re)registered a moment ago can show NOT_RESPONDING until the
    // controller's next ping: give it up to 30 s before judging.
    s += "  i=0; while [ $i -lt 30 ] && printf '%s' \"$(f State)\" | grep -q NOT_RESPONDING; do sleep 1; i=$((i + 1));"
         " line=$(timeout 15 scontrol show node \"$N\" -o 2>&1); done\n";
    s += "  state=$(f State); feats=$(f AvailableFeatures); gres=$(f Gres)\n";
    s += "  case \"$state\" in *DRAIN*|*DOWN*|*FAIL*|*INVAL*|*NOT_RESPONDING*|*FUTURE*) res scheduler fail \"$t\" "
         "\"state $state$(printf '%s' \"$line\" | sed -n 's/.* Reason=/, reason: /p')\"; return;; esac\n";
    s += "  missing=\n";
    for (const auto& feature : strings(member(slurm, "features"))) {
      s += "  case \",$feats,\" in *," + q(feature) + ",*) ;; *) missing=\"$missing feature \"" + q(feature) + ";; esac\n";
    }
    for (const auto& gres : strings(member(slurm, "gres"))) {
      s += "  case \",$gres,\" in *," + q(gres) + ",*|*," + q(gres) + "\\(*) ;; *) missing=\"$missing GRES \"" + q(gres) +
           ";; esac\n";
    }
    s += "  [ -z \"$missing\" ] || { res scheduler fail \"$t\" \"missing$missing (the controller has Features=$feats "
         "Gres=$gres)\"; return; }\n";
    s += "  r=; scontrol show reservation \"$R\" >/dev/null 2>&1 && r=\"--reservation=$R\"\n";
    s += "  out=$(timeout " + std::to_string(job_timeout) +
         " srun -Q $r -w \"$N\" -N 1 -n 1 -t 2 -J gpuexpand-acceptance hostname 2>&1); rc=$?\n";
    s += "  if [ $rc -eq 0 ] && [ \"$out\" = \"$N\" ]; then res scheduler pass \"$t\" \"state $state, features $feats, "
         "GRES $gres; a test job ran on $N${r:+ in reservation $R}\"\n";
    // The hold as a field of its own (verify leaves a held node out of the
    // multi-node job: one job runs in at most one reservation).
    s += "    [ -z \"$r\" ] || printf '@@held %s\\n' \"$R\"\n";
    s += "  elif [ $rc -eq 124 ]; then res scheduler fail \"$t\" \"the test job did not run within " +
         std::to_string(job_timeout) + " s\"\n";
    s += "  else res scheduler fail \"$t\" \"the test job failed (exit $rc): $out\"; fi\n";
    s += "}\nsched\n";
  }

  if (wants(settings, "network")) {
    for (const auto& i : member(settings, "interfaces")) {
      const std::string name = text(i, "name");
      const long mtu = number(i, "mtu", 1500);
      const std::string size = std::to_string(mtu - 28);  // IPv4 + ICMP headers
      auto peer = peers.find(name);
      s += "t=$(now)\n";
      if (peer == peers.end()) {
        s += "res network skip \"$t\" " + q(name + ": no other node of this run has an IPv4 address on " + name +
                                             " to ping") + "\n";
        continue;
      }
      const std::string what = name + ": " + std::to_string(mtu) + "-byte packets ";
      s += "if ! command -v ping >/dev/null 2>&1; then res network fail \"$t\" 'ping is not installed (iputils-ping)'\n";
      s += "elif ping -M do -s " + size + " -c 2 -W 2 -I " + q(name) + " " + q(peer->second) +
           " >/dev/null 2>&1; then res network pass \"$t\" " + q(what + "reach " + peer->second + " unfragmented") + "\n";
      s += "else res network fail \"$t\" " +
           q(what + "do not reach " + peer->second + " (ping -M do -s " + size + ")") + "; fi\n";
    }
  }

  if (wants(settings, "network") && text(settings, "rdma", "none") != "none" && !rdma.empty()) {
    // HCA to HCA on this node: the server on B, the client on A, the
    // out-of-band exchange over 127.0.0.1; the writes cross the fabric.
    // perftest prints a table under "BW average[Gb/sec]": the last row's
    // fourth column is the average.
    const json& min = member(settings, "min_rdma_gbps");
    // rdma_bw DEV_A PORT_A DEV_B PORT_B TCP_PORT: the client retries
    // while the server is not listening yet; the server never outlives it.
    s += "rdma_bw() {\n  t=$(now)\n";
    s += "  if ! command -v ib_write_bw >/dev/null 2>&1; then res network fail \"$t\" 'ib_write_bw is not installed "
         "(perftest)'; return; fi\n";
    s += "  timeout 60 ib_write_bw -d \"$3\" -i \"$4\" -p \"$5\" -D 5 -F --report_gbits >/dev/null 2>&1 &\n  srv=$!\n";
    s += "  n=0\n  while :; do\n    sleep 1\n";
    s += "    out=$(timeout 60 ib_write_bw -d \"$1\" -i \"$2\" -p \"$5\" -D 5 -F --report_gbits 127.0.0.1 2>&1); rc=$?\n";
    s += "    n=$((n + 1))\n    case \"$out\" in *\"Couldn't connect\"*) [ $n -lt 3 ] && continue ;; esac\n    break\n  done\n";
    s += "  kill \"$srv\" 2>/dev/null; wait \"$srv\" 2>/dev/null\n";
    s += "  bw=$(printf '%s\\n' \"$out\" | awk '/BW average\\[Gb\\/sec\\]/ {h = 1; next} h && $1 ~ /^[0-9]+$/ && NF >= 4 "
         "{v = $4} END {if (v != \"\") print v}')\n";
    s += "  if [ $rc -ne 0 ] || [ -z \"$bw\" ]; then res network fail \"$t\" \"ib_write_bw $1 -> $3 failed (exit $rc): "
         "$(printf '%s' \"$out\" | tail -n 2)\"; return; fi\n";
    s += below_minimum(min, "ib_write_bw $1 -> $3: $bw Gb/s", "Gb/s");
    s += "  res network pass \"$t\" \"ib_write_bw $1 -> $3: $bw Gb/s\"\n}\n";
    for (size_t k = 0; k < rdma.size(); ++k) {
      const auto& [a, b] = rdma[k];
      s += "rdma_bw " + q(a.device) + " " + std::to_string(a.port) + " " + q(b.device) + " " + std::to_string(b.port) +
           " " + std::to_string(18515 + k) + "\n";
    }
  }

  if (wants(settings, "network") && hardware.gpus >= 2) {
    // NCCL over the node's GPUs (NVLink/NVSwitch), where nccl-tests is
    // installed (it is not packaged: a skip says so). nccl-tests ends with
    // "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth : X".
    const json& min = member(settings, "min_nccl_busbw");
    const std::string g = std::to_string(hardware.gpus);
    s += "nccl() {\n  t=$(now)\n";
    s += "  if ! command -v all_reduce_perf >/dev/null 2>&1; then res network skip \"$t\" 'NCCL: all_reduce_perf "
         "(nccl-tests) is not installed'; return; fi\n";
    s += "  out=$(timeout " + std::to_string(job_timeout) + " all_reduce_perf -b 8M -e 256M -f 2 -g " + g +
         " 2>&1); rc=$?\n";
    s += "  bw=$(printf '%s\\n' \"$out\" | sed -n 's/^# Avg bus bandwidth *: *\\([0-9.][0-9.]*\\).*/\\1/p' | tail -n 1)\n";
    s += "  wrong=$(printf '%s\\n' \"$out\" | sed -n 's/^# Out of bounds values *: *\\([0-9][0-9]*\\).*/\\1/p' | tail -n 1)\n";
    s += "  if [ $rc -ne 0 ] || [ -z \"$bw\" ]; then res network fail \"$t\" \"NCCL: all_reduce_perf over " + g +
         " GPUs failed (exit $rc): $(printf '%s' \"$out\" | tail -n 2)\"; return; fi\n";
    s += "  if [ \"${wrong:-0}\" != 0 ]; then res network fail \"$t\" \"NCCL: all_reduce_perf over " + g +
         " GPUs: $wrong out-of-bounds values\"; return; fi\n";
    s += below_minimum(min, "NCCL: all_reduce_perf over " + g + " GPUs: bus bandwidth $bw GB/s", "GB/s");
    s += "  res network pass \"$t\" \"NCCL: all_reduce_perf over " + g + " GPUs: bus bandwidth $bw GB/s\"\n}\nnccl\n";
  }

  if (wants(settings, "network")) {
    const json& pfc = member(settings, "pfc_on");
    const json& ecn = member(settings, "ecn_priorities");
    if (const json& topo = member(settings, "nccl_topology_file"); topo.is_string()) {
      const std::string path = topo.get<std::string>();
      s += "t=$(now); if grep -q '<system' " + q(path) + " 2>/dev/null; then res network pass \"$t\" " +
           q("NCCL topology " + path + " present") + "; else res network fail \"$t\" " +
           q("NCCL topology " + path + " is missing or not an NCCL topology (no <system>)") + "; fi\n";
    }
    for (const auto& i : member(settings, "interfaces")) {
      const std::string name = text(i, "name");
      const std::string qname = q(name);
      if (pfc.is_string()) {
        const std::string want = pfc.get<std::string>();
        s += "t=$(now); if cur=$(dcb pfc show dev " + qname + " prio-pfc 2>/dev/null); then got=$(printf '%s\n' $cur | "
             "sed -n 's/^\\([0-7]\\):on$/\\1/p' | sort -n | paste -sd, -)\n";
        s += "  if [ \"$got\" = " + q(want) + " ]; then res network pass \"$t\" " + q(name + ": PFC on priorities " + want) +
             "; else res network fail \"$t\" " + q(name + ": PFC on priorities ") + "\"${got:-none}\"" +
             q(", expected " + want) + "; fi\n";
        s += "else res network skip \"$t\" " +
             q(name + ": PFC not checked: the NIC has no DCB support (dcb pfc show failed)") + "; fi\n";
      }
      if (ecn.is_string()) {
        const std::string e = "/sys/class/net/" + name + "/ecn";
        s += "t=$(now); if [ -d " + q(e + "/roce_np/enable") + " ]; then bad=\n";
        s += "  for p in $(printf '%s' " + q(ecn.get<std::string>()) +
             " | tr ',' ' '); do for s in roce_np roce_rp; do [ \"$(cat " + q(e) +
             "/$s/enable/$p 2>/dev/null)\" = 1 ] || bad=\"$bad $s/$p\"; done; done\n";
        s += "  if [ -z \"$bad\" ]; then res network pass \"$t\" " + q(name + ": ECN on for the lossless priorities") +
             "; else res network fail \"$t\" " + q(name + ": ECN off for") + "\"$bad\"; fi\n";
        s += "else res network skip \"$t\" " + q(name + ": ECN not checked: no mlx5 ECN controls in " + e) + "; fi\n";
      }
    }
  }

  if (wants(settings, "storage")) {
    for (const auto& m : member(settings, "mounts")) {
      const std::string mp = text(m, "mountpoint");
      const long min = number(m, "min_mbps", 0);
      const std::string qmp = q(mp);
      s += "t=$(now); f=" + q(mp + "/.gpuexpand-acceptance-" + node) + "\n";
      s += "if ! mountpoint -q " + qmp + "; then res storage fail \"$t\" " + q(mp + " is not mounted") + "\n";
      s += "elif s=$(now) && dd if=/dev/zero of=\"$f\" bs=1M count=32 conv=fsync 2>/dev/null; then e=$(now)\n";
      // Read back what was written (the size proves it; the page cache
      // may serve it, so no read figure is claimed).
      s += "  r=$(dd if=\"$f\" bs=1M 2>/dev/null | wc -c); rm -f \"$f\"\n";
      // 32 MiB = 33.554432 MB
      s += "  mbps=$(awk -v a=\"$s\" -v b=\"$e\" 'BEGIN{d=(b-a)/1e9; if (d<=0) d=1e-9; printf \"%d\", 33.554432/d}')\n";
      s += "  if [ \"$r\" -ne 33554432 ]; then res storage fail \"$t\" " + q(mp + ": ") +
           "\"read back $r of 33554432 bytes written\"\n";
      s += "  elif [ \"$mbps\" -lt " + std::to_string(min) + " ]; then res storage fail \"$t\" " + q(mp + ": ") +
           "\"$mbps MB/s write, below the minimum " + std::to_string(min) + " MB/s\"\n";
      s += "  else res storage pass \"$t\" " + q(mp + ": writable, ") + "\"$mbps MB/s write, read back\"; fi\n";
      s += "else rm -f \"$f\"; res storage fail \"$t\" " + q(mp + " is not writable") + "; fi\n";
    }
  }

  // GPUs inside a container, as NVIDIA documents the check: docker through
  // the nvidia runtime the gpu-driver phase configured, else podman
  // through the CDI spec; nothing to run without an image or an engine.
  if (const json& c = member(settings, "container"); wants(settings, "container") && c.is_object()) {
    const std::string image = text(c, "image");
    const long count = number(c, "expected_count", 0);
    const std::string limit = std::to_string(job_timeout);
    s += "t=$(now)\n";
    if (image.empty()) {
      s += "res container skip \"$t\" 'no validation.container_image to run'\n";
    } else {
      s += "out=''; how=''\n";
      if (const std::string r = text(c, "pyxis_reservation"); !r.empty()) {
        // A job on this node asking for its GPUs, in a container pyxis starts
        // (named as gpuexpand's jobs are: the scheduler playbook waits for
        // them before it reconfigures slurmctld).
        s += "if command -v srun >/dev/null 2>&1; then how='Slurm job (pyxis)'; out=$(timeout " + limit +
             " srun -Q --reservation=" + q(r) + " -w \"$N\" -N 1 --gres=gpu:" + std::to_string(count) +
             " -J gpuexpand-acceptance --container-image=" + q(image) + " nvidia-smi -L 2>&1)\nel";
      }
      s += "if [ " + q(text(c, "runtime")) + " = docker ] && command -v docker >/dev/null 2>&1; then how=docker; "
           "out=$(timeout " + limit + " docker run --rm --runtime=nvidia --gpus all " + q(image) + " nvidia-smi -L 2>&1)\n";
      s += "elif command -v podman >/dev/null 2>&1; then how=podman; out=$(timeout " + limit +
           " podman run --rm --device nvidia.com/gpu=all --security-opt=label=disable " + q(image) + " nvidia-smi -L 2>&1); fi\n";
      s += "if [ -z \"$how\" ]; then res container skip \"$t\" 'no engine to run a container: docker (container_runtime: "
           "docker) or podman (CDI)'\n";
      s += "else n=$(printf '%s\\n' \"$out\" | grep -c '^GPU [0-9]')\n";
      s += "  if [ \"$n\" -eq " + std::to_string(count) + " ]; then res container pass \"$t\" \"a $how container sees $n GPUs (\"" +
           q(image) + "\")\"\n";
      s += "  else res container fail \"$t\" \"a $how container sees $n GPUs, wanted " + std::to_string(count) +
           ": $(printf '%s\\n' \"$out\" | tail -n 1)\"; fi\nfi\n";
    }
  }

  if (wants(settings, "monitoring")) {
    s += "scrape() {\n";
    s += "  if command -v curl >/dev/null 2>&1; then curl -fsS --max-time 10 \"http://127.0.0.1:$1/metrics\"\n";
    s += "  elif command -v wget >/dev/null 2>&1; then wget -q -T 10 -O - \"http://127.0.0.1:$1/metrics\"\n";
    s += "  else timeout 10 bash -c 'exec 3<>\"/dev/tcp/127.0.0.1/$0\" && printf \"GET /metrics HTTP/1.0\\r\\n\\r\\n\" >&3 "
         "&& cat <&3' \"$1\"; fi\n";
    s += "}\n";
    for (const auto& e : member(settings, "exporters")) {
      const std::string port = std::to_string(number(e, "port", 0));
      const std::string metric = text(e, "metric");
      const std::string what = text(e, "name") + " on port " + port;
      s += "t=$(now); if scrape " + port + " 2>/dev/null | grep -q " + q("^" + metric) + "; then res monitoring pass \"$t\" " +
           q(what + " serves " + metric) + "; else res monitoring fail \"$t\" " + q(what + " does not serve " + metric) +
           "; fi\n";
    }
  }
  // The playbook's own checks: each command in its own sh with a time
  // limit; exit 0 passes, its last output line is the detail.
  for (const auto& c : member(settings, "custom")) {
    const std::string name = text(c, "name");
    s += "t=$(now); out=$(timeout " + std::to_string(number(c, "timeout", 60)) + " sh -c " + q(text(c, "command")) +
         " 2>&1 </dev/null); rc=$?; last=$(printf '%s\n' \"$out\" | tail -n 1)\n";
    s += "if [ $rc -eq 0 ]; then res " + q(name) + " pass \"$t\" \"$last\"; elif [ $rc -eq 124 ]; then res " + q(name) +
         " fail \"$t\" \"did not finish within " + std::to_string(number(c, "timeout", 60)) + " s\"; else res " + q(name) +
         " fail \"$t\" \"exit $rc${last:+: $last}\"; fi\n";
  }
  s += "echo @@end\n";
  return s;
}

}  // namespace gpuexpand
