#!/usr/bin/env bash
# `gpuexpand doctor` against lab nodes put into the states the
# troubleshooting table names (issue 14): node-10 (converged) broken the
# ways real nodes break, one at a time or together: an uncorrectable ECC
# error, a GPU device file gone, persistence off, the compute link down,
# the disk full, fstab's mount options edited, a switch port with a smaller
# MTU than the path needs, the share slower than the
# spec's minimum, Slurm's GRES above the GPUs visible, NCCL's environment
# and its topology file;
# node-07 reached as a user whose sudo rights are gone; reaching node-10 on a
# wrong port, with a changed host key, an unauthorized key, a name no DNS
# knows; this machine's key, known_hosts and store unusable. Each finding
# is checked by its words and doctor's exit code; node-08 (in service)
# stays without findings throughout.
#
# node-10 removed from the Slurm controller, then registered with a
# RealMemory above its memory (Slurm refuses the registration), mended by
# what doctor says to do.
#
# node-10's clock 400 s behind (libfaketime in its SSH sessions: every
# node runs on the host's kernel clock).
#
# The kernel's Xid lines for node-10's first GPU, written by the lab into
# the kernel log (the host's, which every node shares: node-10 alone may
# read it), then gone after node-10 is power-cycled, as on a machine.
#
# RDMA ports come from an ibstat stand-in printing a real capture (this
# kernel has no RDMA subsystem), as the GPUs come from the nvidia-smi
# stand-in.
#
# Needs a running lab with 10 nodes.
# GPUEXPAND_BIN: the gpuexpand binary (default: build/test/src/gpuexpand, as scripts/test builds it).
# Last line: "N passed, M failed"; exit 0 only if nothing failed.
set -uo pipefail

# shellcheck source=tests/lab/test-lib.sh
source "$(dirname "$(readlink -f "$0")")/test-lib.sh"
state=$work/state.db
# Whatever a section breaks is mended on the way out, failed or not.
mend() {
  "$lab" unfill node-10 >/dev/null 2>&1
  "$lab" kernel-log node-10 off >/dev/null 2>&1
  rm -rf "$work"
}
trap mend EXIT

[[ -x "$gx" ]] || { echo "no gpuexpand binary at $gx"; bad "binary present"; finish; }
grep -q '^node-10 ' <<<"$("$lab" status 2>/dev/null)" || { bad "lab is up with 10 nodes"; finish; }
"$lab" spec >"$work/lab.yaml"
converged "$work/lab.yaml" 'node-[08,10]'

doctor() { # SPEC ARGS… — sets $out and $rc
  gxrun doctor "$@" --state "$state"
}
has() { # TEXT — a line of doctor's output is exactly TEXT (an ERROR/warn line with its area)
  grep -qxF -- "$1" <<<"$out" || { echo "    no line: $1"; return 1; }
}
has_like() { # ERE — a line of doctor's output matches
  grep -qE -- "$1" <<<"$out" || { echo "    no line like: $1"; return 1; }
}

doctor "$work/lab.yaml" --limit 'node-[08,10]'
check "doctor: node-08 and node-10 in service, no findings (exit 0)" test "$rc" -eq 0

# ---------------------------------------------------------------- the GPUs
# The stand-in driver's hardware state (/etc/nvidia-lab.conf, the device
# files it made at load): GPU 3's memory failed, /dev/nvidia7 is gone,
# nvidia-persistenced stopped.
sshn node-10 "echo 'ECC_UNCORRECTED=\"0 0 0 2 0 0 0 0\"' >>/etc/nvidia-lab.conf; rm -f /dev/nvidia7; systemctl stop nvidia-persistenced"
doctor "$work/lab.yaml" --limit 'node-[08,10]'
check "GPUs: errors found (exit 3)" test "$rc" -eq 3
check "  GPU 3's uncorrectable ECC errors" has "  ERROR gpu: GPU 3: 2 uncorrectable ECC errors"
check "  a device file missing" has "  ERROR gpu: 7 of 8 /dev/nvidia* device files"
check "  persistence mode off" has "  warn  gpu: persistence mode off"
check "  node-08 has none" bash -c '! grep -q "^node-08$" <<<"$1"' _ "$out"
sshn node-10 "sed -i '/^ECC_UNCORRECTED=/d' /etc/nvidia-lab.conf; /usr/lib/nvidia-lab/nvidia-lab-load; systemctl start nvidia-persistenced"

# ---------------------------------------------------------------- network, storage, disk
sshn node-10 "ip link set eth1 down; cp -p /etc/fstab /root/fstab.gx-test; sed -i 's/allow_other,reconnect,/allow_other,/' /etc/fstab"
"$lab" fill node-10 >/dev/null
doctor "$work/lab.yaml" --limit 'node-[08,10]'
check "network, storage, disk: errors found (exit 3)" test "$rc" -eq 3
check "  node-08 cannot reach node-10's eth1: said so, not blamed on the MTU" \
  has "  warn  network: eth1: 198.18.1.20 does not answer a small ping: the MTU along the path is not measured"
check "  the compute link down" has "  ERROR network: eth1 is down"
check "  fstab's options edited" has_like "^  warn  storage: shared: fstab mounts /mnt/shared with allow_other,IdentityFile=/root/.ssh/id_ed25519, the spec wants allow_other,reconnect,IdentityFile=/root/.ssh/id_ed25519$"
check "  the disk full" has_like "^  ERROR disk: [0-9]+ MiB free under /var/lib/gpuexpand \(at least 1024 MiB needed\)$"
"$lab" unfill node-10 >/dev/null
sshn node-10 "ip link set eth1 up; cp -p /root/fstab.gx-test /etc/fstab; rm -f /root/fstab.gx-test"

# The MTU along the path: node-10's compute port on the switch (the host
# end of its eth1) at 1500 while both nodes' interfaces say 9000.
ip link set gx1-node-10 mtu 1500
doctor "$work/lab.yaml" --limit 'node-[08,10]'
ip link set gx1-node-10 mtu 9000
check "a switch port with a smaller MTU: exit 3" test "$rc" -eq 3
check "  node-10's full-size packets do not reach node-08" has "  ERROR network: eth1: 9000-byte packets do not reach 198.18.1.18 unfragmented (ping -M do -s 8972), small ones do: the path does not carry the MTU"
check "  nor node-08's node-10" has "  ERROR network: eth1: 9000-byte packets do not reach 198.18.1.20 unfragmented (ping -M do -s 8972), small ones do: the path does not carry the MTU"
check "  while each interface's own MTU is right" bash -c '! grep -q "MTU 1500 on eth1" <<<"$1"' _ "$out"

# The share, measured as acceptance measures it, against a minimum no
# sshfs on this machine reaches.
spec_with "$work/fast-share.yaml" '.defaults.storage[0].min_throughput_mbps = 100000'
doctor "$work/fast-share.yaml" --limit node-10
check "storage below the spec's minimum: exit 3" test "$rc" -eq 3
check "  named with the rate measured" has_like "^  ERROR storage: /mnt/shared: [0-9]+ MB/s write, below the minimum 100000 MB/s$"
check "  and what to look at next" grep -q "next: the server's load and the path to it (iperf3" <<<"$out"
# Its own file only: the share is every lab node's, and an acceptance run
# beside this test (lab_apply's nodes) writes and removes theirs meanwhile.
check "  the test file is gone from the share" on node-10 0 "ls -A /mnt/shared | grep -c -F -x .gpuexpand-acceptance-node-10"

# ---------------------------------------------------------------- Slurm's GRES above the GPUs visible
# Four GPUs left (a GPU fell off the bus): Slurm still offers the eight the
# node registered with.
sshn node-10 "sed -i 's/^COUNT=.*/COUNT=4/' /etc/nvidia-lab.conf && /usr/lib/nvidia-lab/nvidia-lab-load"
doctor "$work/lab.yaml" --limit node-10
check "four of eight GPUs left: exit 3" test "$rc" -eq 3
check "  the GPUs visible" has "  ERROR gpu: 4 GPUs visible, 8 expected"
check "  Slurm offering more than the node has" has_like "^  ERROR scheduler: Slurm offers 8 GPUs \(GRES gpu:8\), 4 "
sshn node-10 "sed -i 's/^COUNT=.*/COUNT=8/' /etc/nvidia-lab.conf && /usr/lib/nvidia-lab/nvidia-lab-load"
doctor "$work/lab.yaml" --limit 'node-[08,10]'
check "every state mended: no findings again (exit 0)" test "$rc" -eq 0

# ---------------------------------------------------------------- the driver's module not loaded
# The stand-in driver's "module" is its load record (nvidia-lab-load writes
# it at boot): gone, nvidia-smi says what the real one says without the
# kernel module, and the device files stay.
sshn node-10 "rm -f /run/nvidia-lab/loaded-version"
doctor "$work/lab.yaml" --limit node-10
sshn node-10 "/usr/lib/nvidia-lab/nvidia-lab-load"
check "the NVIDIA module not loaded: exit 3" test "$rc" -eq 3
check "  named, with what to look at" has "  ERROR gpu: the NVIDIA kernel module is not loaded"
check "  next: lsmod and dkms" grep -q "next: lsmod | grep nvidia; dkms status" <<<"$out"

# ---------------------------------------------------------------- the node is not what the spec says
# A spec written for another model and driver branch, and node-10's time
# sync stopped: warnings (exit 0), each with the plan or unit to look at.
spec_with "$work/other-model.yaml" '.defaults.gpu.expected_model = "NVIDIA H100 80GB HBM3" | .defaults.gpu.driver_version = "535"'
sshn node-10 "systemctl stop chrony"
doctor "$work/other-model.yaml" --limit node-10
sshn node-10 "systemctl start chrony"
check "another model and driver, time sync stopped: warnings only (exit 0)" test "$rc" -eq 0
check "  the model" has "  warn  gpu: model NVIDIA H200, expected NVIDIA H100 80GB HBM3"
check "  the driver in use" has_like "^  warn  gpu: driver 550\.[0-9.]+ in use, the spec wants 535$"
check "  no time sync service" has "  warn  clock: no time sync service running"

# ---------------------------------------------------------------- the kernel's Xid lines
# Every lab node runs on the host's kernel, so there is one kernel log for
# all of them. node-10 alone is let read it (`lab kernel-log`: CAP_SYSLOG
# from its next boot), and the lab writes into it what NVIDIA's driver
# writes for node-10's first GPU (`lab xid`, the bus id its nvidia-smi
# reports): the GPU fell off the bus once, an application's graphics
# exception twice. Power-cycled, the node starts a new boot and doctor
# reads only this boot's lines, as a machine's reboot empties its log.
"$lab" kernel-log node-10 on >/dev/null
doctor "$work/lab.yaml" --limit node-10
check "node-10 reads the kernel log, no Xid in this boot: exit 0" test "$rc" -eq 0
check "  (it can read it)" sshn node-10 "dmesg >/dev/null"
bus=$(sshn node-10 "nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1" | tr A-F a-f)
"$lab" xid node-10 79 "pid='<unknown>', name=<unknown>, GPU has fallen off the bus." >/dev/null
for i in 1 2; do
  "$lab" xid node-10 13 "pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter" >/dev/null
done
check "  the lines name node-10's first GPU ($bus)" \
  sshn node-10 "dmesg | grep -qF 'NVRM: Xid (PCI:0000:${bus:9:5}): 79, pid='"
doctor "$work/lab.yaml" --limit 'node-[08,10]'
check "Xid 79 and two Xid 13: exit 3" test "$rc" -eq 3
check "  the GPU off the bus, an error" has "  ERROR gpu: Xid 79 in the kernel log (1x): the GPU has fallen off the bus"
check "  the application's exceptions, a warning" \
  has "  warn  gpu: Xid 13 in the kernel log (2x): graphics engine exception (often the application)"
check "  next: the kernel log and the catalogue" grep -qF "next: dmesg -T | grep -i xid; NVIDIA's Xid catalogue for 79" <<<"$out"
check "  node-08 has none (it may not read the kernel log)" bash -c '! grep -q "^node-08$" <<<"$1"' _ "$out"
"$lab" stop node-10 >/dev/null 2>&1
"$lab" start node-10 >/dev/null 2>&1
doctor "$work/lab.yaml" --limit node-10
check "power-cycled: the last boot's Xid lines are not this boot's (exit 0)" test "$rc" -eq 0
check "  though the kernel log still holds them" sshn node-10 "dmesg | grep -qF 'NVRM: Xid'"
"$lab" kernel-log node-10 off >/dev/null

# ---------------------------------------------------------------- the clock
# Every lab node runs on the host's kernel clock, so no node's clock can
# be set apart for real. libfaketime (Debian's package, which scripts/setup
# installs here), put into node-10's SSH sessions through /etc/environment
# (pam_env: sshd itself is left alone, its seccomp sandbox kills a
# preloaded libfaketime), makes every command gpuexpand runs there see a
# clock 400 s behind: what a node whose clock drifted shows whoever asks.
faketime_lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
if [[ ! -r $faketime_lib ]]; then
  echo "SKIP - a node's clock set apart: libfaketime is not installed here (apt-get install libfaketime; scripts/setup does)"
else
  sshn node-10 "mkdir -p /usr/local/lib/gx-lab && echo $(base64 -w0 "$faketime_lib") | base64 -d >/usr/local/lib/gx-lab/libfaketime.so.1 &&
    touch /etc/environment && cp -p /etc/environment /root/environment.gx-test &&
    printf 'LD_PRELOAD=/usr/local/lib/gx-lab/libfaketime.so.1\nFAKETIME=-400\n' >>/etc/environment"
  node_time=$(sshn node-10 "date +%s")
  behind=$(($(date +%s) - ${node_time:-0}))
  doctor "$work/lab.yaml" --limit node-10
  sshn node-10 "cp -p /root/environment.gx-test /etc/environment && rm -f /root/environment.gx-test && rm -rf /usr/local/lib/gx-lab" 2>/dev/null
  check "node-10's sessions see a clock 400 s behind ($behind s)" test "$behind" -ge 395 -a "$behind" -le 405
  check "a clock 400 s behind: exit 3" test "$rc" -eq 3
  check "  named, with what it breaks" has_like "^  ERROR clock: clock (39[5-9]|40[0-5]) s behind this machine: munge credentials \(Slurm\) fail beyond 300 s$"
  check "  next: chrony's view" grep -q "next: chronyc tracking; chronyc sources" <<<"$out"
  node_time=$(sshn node-10 "date +%s")
  check "  the clock is the host's again" test "$(($(date +%s) - ${node_time:-0}))" -le 5
fi

# ---------------------------------------------------------------- the fabric manager not running
# A spec that wants the fabric manager (NVSwitch systems) against node-10,
# which runs none (the lab's driver source has no fabric manager package at
# 550; apply-test.sh installs one from NVIDIA's repository layout and shows
# it running).
spec_with "$work/fm.yaml" '.defaults.gpu.fabric_manager = true'
doctor "$work/fm.yaml" --limit node-10
check "the fabric manager wanted, not running: exit 3" test "$rc" -eq 3
check "  named with what NVLink jobs then see" \
  has "  ERROR gpu: nvidia-fabricmanager is not running: NVLink jobs fail (CUDA error 802, system not yet initialized)"
check "  next: its status and version" grep -q "next: systemctl status nvidia-fabricmanager; its version must equal the driver's" <<<"$out"

# ---------------------------------------------------------------- RDMA devices and ports
# The HCAs are hardware this machine lacks (its kernel has no RDMA
# subsystem), so they are stood in for as the GPUs are: an ibstat on
# node-10 printing, byte for byte, what the real one printed on an 8-GPU
# H100 server with three of its Ethernet ports down
# (tests/fixtures/tool-output/ibstat-cx7-ib-ndr400-h100x8-3eth-down.txt,
# SOURCES.md there). The spec says the compute fabric is InfiniBand.
spec_with "$work/ib.yaml" '.defaults.network.rdma.kind = "infiniband"'
doctor "$work/ib.yaml" --limit node-10
check "InfiniBand wanted, no HCA on the node: exit 3" test "$rc" -eq 3
check "  no RDMA devices, with what to look at" has "  ERROR network: no RDMA devices (rdma.kind infiniband)"
ibstat_capture=$repo/tests/fixtures/tool-output/ibstat-cx7-ib-ndr400-h100x8-3eth-down.txt
sshn node-10 "mkdir -p /usr/local/lib/gx-lab && echo $(base64 -w0 "$ibstat_capture") | base64 -d >/usr/local/lib/gx-lab/ibstat.txt &&
  printf '#!/bin/sh\nexec cat /usr/local/lib/gx-lab/ibstat.txt\n' >/usr/local/sbin/ibstat && chmod 0755 /usr/local/sbin/ibstat"
doctor "$work/ib.yaml" --limit node-10
sshn node-10 "rm -rf /usr/local/sbin/ibstat /usr/local/lib/gx-lab"
check "HCAs with three ports down: exit 3" test "$rc" -eq 3
check "  each port down named" bash -c 'for p in mlx5_2 mlx5_7 mlx5_8; do grep -qxF "  ERROR network: RDMA port $p/1 is down" <<<"$1" || exit 1; done' _ "$out"
check "  the active ports not" bash -c '! grep -q "RDMA port mlx5_0/" <<<"$1"' _ "$out"
check "  no longer 'no RDMA devices'" bash -c '! grep -q "no RDMA devices" <<<"$1"' _ "$out"

# ---------------------------------------------------------------- NCCL's environment edited by hand
# /etc/nccl.conf as the spec writes it (the rdma phase), then its
# interface changed to one the node does not have.
spec_with "$work/nccl.yaml" '.defaults.network.nccl.env = {NCCL_SOCKET_IFNAME: "eth1", NCCL_DEBUG: "WARN"}'
gxrun apply -y "$work/nccl.yaml" --limit node-10 --until rdma --state "$state"
check "nccl: /etc/nccl.conf written (exit 0)" test "$rc" -eq 0
sshn node-10 "sed -i 's/^NCCL_SOCKET_IFNAME=.*/NCCL_SOCKET_IFNAME=eth7/' /etc/nccl.conf"
doctor "$work/nccl.yaml" --limit node-10
check "nccl.conf edited by hand: a warning (exit 0)" test "$rc" -eq 0
check "  its value against the spec's" has "  warn  network: NCCL_SOCKET_IFNAME=eth7 in /etc/nccl.conf, the spec wants eth1"
# A spec written for another node model names an interface this one lacks.
spec_with "$work/nccl-model.yaml" '.defaults.network.nccl.env = {NCCL_SOCKET_IFNAME: "ens108np0", NCCL_DEBUG: "WARN"}'
doctor "$work/nccl-model.yaml" --limit node-10
check "the spec's NCCL interface is not on the node: exit 3" test "$rc" -eq 3
check "  named" has "  ERROR network: NCCL_SOCKET_IFNAME names ens108np0, which this node does not have"
# The NCCL topology file the spec copies from this machine (NCCL_TOPO_FILE
# points at it), removed on the node: named, then copied back by what
# doctor says to run.
cat >"$work/topo.xml" <<'XML'
<system version="1">
  <cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:19:00.0" class="0x030200" vendor="0x10de" device="0x2330" subsystem_vendor="0x10de" subsystem_device="0x16c1" link_speed="32.0 GT/s PCIe" link_width="16"/>
  </cpu>
</system>
XML
spec_with "$work/topo.yaml" ".defaults.network.nccl += {env: {NCCL_TOPO_FILE: \"/etc/nccl-topo.xml\"}, topology_file: \"/etc/nccl-topo.xml\", topology_source: \"$work/topo.xml\"}"
gxrun apply -y "$work/topo.yaml" --limit node-10 --until rdma --state "$state"
check "nccl topology: copied to the node (exit 0)" on node-10 "$(sha256sum <"$work/topo.xml")" "sha256sum </etc/nccl-topo.xml"
sshn node-10 "rm -f /etc/nccl-topo.xml"
doctor "$work/topo.yaml" --limit node-10
check "the topology file gone: exit 3" test "$rc" -eq 3
check "  named" has "  ERROR network: the NCCL topology file /etc/nccl-topo.xml is missing"
check "  next: the rdma phase" grep -q "next: gpuexpand apply --until rdma copies it" <<<"$out"
gxrun apply -y "$work/topo.yaml" --limit node-10 --until rdma --state "$state"
doctor "$work/topo.yaml" --limit node-10
check "  mended by apply --until rdma: doctor quiet (exit 0)" test "$rc" -eq 0
sshn node-10 "rm -f /etc/nccl.conf /etc/nccl-topo.xml"

# ---------------------------------------------------------------- Slurm's registration
# node-10 gone from the controller while its slurmd runs (a controller
# restored from an old state, an operator's `scontrol delete`).
sshn ctl "scontrol delete nodename=node-10"
doctor "$work/lab.yaml" --limit node-10
check "not registered with the controller: a warning (exit 0)" test "$rc" -eq 0
check "  named" has "  warn  scheduler: not registered with the Slurm controller"
check "  next: the scheduler phase" grep -q "next: gpuexpand apply --until scheduler" <<<"$out"
# slurmd's --conf edited by hand to a RealMemory above what the node has:
# it registers with that, and Slurm refuses the registration (it drains
# the node and refuses `state=resume`).
big=$(($(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo) + 40000))
sshn node-10 "sed -i 's/--conf \"Gres=/--conf \"RealMemory=$big Gres=/' /etc/systemd/system/slurmd.service.d/gpuexpand.conf &&
  systemctl daemon-reload && systemctl restart slurmd"
refused() { sshn ctl "scontrol show node node-10 -o" | grep -q ' State=[^ ]*INVALID_REG'; }
check "  Slurm refuses node-10's registration (INVALID_REG)" eventually 20 refused
doctor "$work/lab.yaml" --limit node-10
check "a RealMemory the node does not have: exit 3" test "$rc" -eq 3
check "  the refused registration, not just 'drained'" has "  ERROR scheduler: Slurm refused the node's registration (UNKNOWN+DRAIN+DYNAMIC_NORM+INVALID_REG)"
check "  the memory, Slurm's against the node's" \
  has_like "^  ERROR scheduler: Slurm expects RealMemory=$big MB, the node has [0-9]+ MiB: Slurm drains it \(Low RealMemory\)$"
check "  no resume advice (Slurm refuses it here)" bash -c '! grep -q "state=resume" <<<"$1"' _ "$out"
# What doctor says to do, done: the scheduler phase writes slurmd's unit
# again and registers the node anew.
gxrun apply -y "$work/lab.yaml" --limit node-10 --until scheduler --state "$state"
check "apply --until scheduler mends it (exit 0)" test "$rc" -eq 0
registered_as_found() {
  local line
  line=$(sshn ctl "scontrol show node node-10 -o")
  [[ $line == NodeName=node-10\ * ]] && ! grep -Eq " State=[^ ]*(INVALID_REG|DRAIN)| RealMemory=$big " <<<"$line"
}
check "  Slurm has node-10 with the memory slurmd finds, not refused" registered_as_found
findings() { grep -A1 "^  \(ERROR\|warn \)" <<<"$out"; }
quiet() { doctor "$work/lab.yaml" --limit node-10; [[ $rc -eq 0 ]] && ! grep -q "^  \(ERROR\|warn \)" <<<"$out"; }
# The controller takes a registration in on its own time (slurmd's
# messages are asynchronous): a finding right after the apply is kept for
# the log's end, and doctor asked once more 10 s later, when it must be quiet.
if ! quiet; then
  noted "right after apply --until scheduler, doctor said (exit $rc): $(findings)"
  sleep 10
  quiet
fi
check "  doctor has nothing more to say (exit 0)" bash -c '[[ $1 -eq 0 ]] && ! grep -q "^  \(ERROR\|warn \)" <<<"$2"' _ "$rc" "$out" ||
  detail "exit $rc: $(findings)"

# ---------------------------------------------------------------- reaching the nodes
# node-07's user ops without its sudoers line (as lab_sudo leaves it;
# made here when this test runs alone).
with_lab_source node-07 'command -v sudo >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q sudo >/dev/null 2>&1'
"$lab" ssh node-07 -- "(id ops >/dev/null 2>&1 || useradd -m -s /bin/bash ops) &&
  install -d -m 0700 -o ops -g ops /home/ops/.ssh && install -m 0600 -o ops -g ops /root/.ssh/authorized_keys /home/ops/.ssh/ &&
  rm -f /etc/sudoers.d/ops" </dev/null
spec_with "$work/sudo.yaml" '.ssh += {user: "ops", become: "sudo"}'
doctor "$work/sudo.yaml" --limit node-07
check "sudo without a password gone: exit 3" test "$rc" -eq 3
check "  named" has_like "^  ERROR connection: node-07 \(198\.18\.0\.17\): sudo needs a password for ops"
check "  with the line to give" grep -q "next: give ops NOPASSWD sudo on the node (docs/security.md lists the line)" <<<"$out"

spec_with "$work/port.yaml" '.ssh.port = 2222 | .ssh.connect_timeout = 3'
doctor "$work/port.yaml" --limit node-10
check "a port sshd does not listen on: refused, exit 3" has_like "^  ERROR connection: node-10 \(198\.18\.0\.20\).*refused"
check "  next: the port" grep -q "is sshd running on port 2222, a firewall?" <<<"$out"

# A known_hosts whose entry for node-10 carries node-08's key (a reinstalled node).
sed "s|^198.18.0.20,node-10 .*|198.18.0.20,node-10 $(cut -d' ' -f2,3 <<<"$(grep '^198.18.0.18,node-08 ' "$client/known_hosts")")|" \
  "$client/known_hosts" >"$work/known_hosts.changed"
spec_with "$work/changed.yaml" ".ssh.known_hosts = \"$work/known_hosts.changed\""
doctor "$work/changed.yaml" --limit node-10
check "a changed host key: exit 3" test "$rc" -eq 3
check "  named, never accepted" has_like "^  ERROR connection: node-10 .*(changed|CHANGED)"
check "  next: verify it out of band" grep -q "reinstalled? verify the new key out of band, then ssh-keygen -R 198.18.0.20" <<<"$out"

ssh-keygen -q -t ed25519 -N '' -f "$work/stranger" -C stranger
spec_with "$work/stranger.yaml" ".ssh.identity_file = \"$work/stranger\""
doctor "$work/stranger.yaml" --limit node-10
check "a key the node does not know: exit 3" test "$rc" -eq 3
check "  authentication named" has_like "^  ERROR connection: node-10 .*(authentication|Authentication)"
check "  next: authorized_keys" grep -q "is the public key of $work/stranger in ~root/.ssh/authorized_keys on the node?" <<<"$out"

spec_with "$work/dns.yaml" '.nodes = [{name: "node-10-gone.invalid"}]'
doctor "$work/dns.yaml"
check "a name no DNS knows: exit 3" test "$rc" -eq 3
check "  next: getent hosts" grep -q "next: getent hosts node-10-gone.invalid on this machine" <<<"$out"

# ---------------------------------------------------------------- this machine
: >"$work/known_hosts.empty"
spec_with "$work/local.yaml" ".ssh.identity_file = \"$work/no-such-key\" | .ssh.known_hosts = \"$work/known_hosts.empty\""
touch "$work/not-a-folder"
gxrun doctor "$work/local.yaml" --limit node-10 --state "$work/not-a-folder/state.db"
check "this machine: exit 3" test "$rc" -eq 3
check "  the SSH key it cannot read" has_like "^  ERROR local: cannot read the SSH key $work/no-such-key$"
check "  node-10 not in known_hosts" has_like "^  warn  local: 1 node\(s\) not in $work/known_hosts.empty: node-10$"
check "  the store's folder it cannot write" has_like "^  ERROR local: cannot write the state store's folder $work/not-a-folder"

finish
