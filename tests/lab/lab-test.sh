#!/usr/bin/env bash
# Self-test of the gpuexpand lab: proves the lab itself, not gpuexpand.
#
# Usage: lab-test.sh [--emulator-only]
#   Needs a running lab (tests/lab/lab up) unless --emulator-only.
#   GPUEXPAND_BIN: gpuexpand binary used to validate `lab spec`
#   (default: build/test/src/gpuexpand, as scripts/test builds it; skipped if absent).
#
# Prints one line per check and, as its last line, "N passed, M failed".
# Exit status: 0 only if nothing failed.
set -uo pipefail

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
repo=$(cd "$here/../.." && pwd)
lab=$here/lab
fixtures=$repo/tests/fixtures/tool-output
client=${GXLAB_STATE:-/var/lib/gpuexpand-lab}/client
passed=0 failed=0

ok() { passed=$((passed + 1)); echo "ok   - $*"; }
bad() { failed=$((failed + 1)); echo "FAIL - $*"; }
check() { # DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  ((failed == 0))
  exit
}

# shellcheck source=tests/lab/lab-source.sh
source "$here/lab-source.sh"

# ssh exactly as gpuexpand will: the lab key, the lab known_hosts, strict.
sshn() {
  local addr=$1
  shift
  ssh -i "$client/id_ed25519" -o IdentitiesOnly=yes -o UserKnownHostsFile="$client/known_hosts" \
    -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes \
    -o ConnectTimeout=5 -o LogLevel=ERROR "root@$addr" "$@" </dev/null
}

# ---------------------------------------------------------------------------
# The nvidia-smi stand-in against the real captures (no lab needed).
emulator_tests() {
  local tmp out
  tmp=$(mktemp -d)
  "$here/build-driver-pkgs.sh" "$tmp" 550.90.07 >/dev/null
  dpkg-deb -x "$tmp/nvidia-driver_550.90.07_amd64.deb" "$tmp/root"
  sed -i "s|^SHARE=.*|SHARE=$tmp/root/usr/share/nvidia-lab|" "$tmp/root/usr/bin/nvidia-smi"
  printf 'MODEL="NVIDIA H100 80GB HBM3"\nMEMORY_MIB=81559\n' >"$tmp/h100.conf"
  local smi=$tmp/root/usr/bin/nvidia-smi
  # The persistence daemon's PID file lives in /run on a node; fake one here.
  local env=(env NVIDIA_LAB_CONF="$tmp/h100.conf" NVIDIA_LAB_LOADED=550.90.07)

  # Captured with persistence on (nvidia-persistenced does not run here).
  out=$("${env[@]}" NVIDIA_LAB_PERSISTENCE=Enabled NVIDIA_LAB_TIME="Mon Jan 20 10:18:26 2025" "$smi")
  check "nvidia-smi table == real 550.90.07 capture (8x H100 config)" \
    diff <(cat "$fixtures/nvidia-smi-h100x8-550.90.07.txt"; echo) <(echo "$out")
  check "nvidia-smi --query-gpu=name,memory.total --format=csv == real capture" \
    diff "$fixtures/nvidia-smi-query-name-memtotal-h100x8.csv" <("${env[@]}" "$smi" --query-gpu=name,memory.total --format=csv)
  out=$(NVIDIA_LAB_LOADED=550.90.07 "$smi" --query-gpu=name,driver_version,memory.total --format=csv,noheader,nounits)
  check "--format=csv,noheader,nounits: 8 lines 'NVIDIA H200, 550.90.07, 143771'" \
    test "$(sort -u <<<"$out")" == "NVIDIA H200, 550.90.07, 143771" -a "$(wc -l <<<"$out")" == 8
  out=$(NVIDIA_LAB_LOADED=550.90.07 "$smi" --query-gpu=pci.device_id,power.limit --format=csv | head -1)
  check "--query-gpu headers come from the real H200 capture" test "$out" == "pci.device_id, power.limit [W]"
  check "-L lists 8 GPUs" test "$(NVIDIA_LAB_LOADED=550.90.07 "$smi" -L | grep -c '^GPU [0-7]: NVIDIA H200 (UUID: GPU-')" == 8
  # A real nvidia-smi is one process: the stand-in's answer to the probe's
  # query needs no other program (no PATH), so it costs the probe one exec.
  out=$(env -i PATH=/nonexistent NVIDIA_LAB_LOADED=550.90.07 /bin/bash "$smi" --query-gpu=index,uuid,serial --format=csv,noheader)
  check "--query-gpu=index,uuid,serial: 8 distinct UUIDs and serials, no program started (no PATH)" \
    test "$(grep -cE '^[0-7], GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}, 1650[0-9]{9}$' <<<"$out")" == 8 -a \
    "$(cut -d, -f2 <<<"$out" | sort -u | wc -l)" == 8 -a "$(cut -d, -f3 <<<"$out" | sort -u | wc -l)" == 8
  check "the same UUIDs on every call, other ones on another machine id" \
    test "$out" == "$(env -i PATH=/nonexistent NVIDIA_LAB_LOADED=550.90.07 /bin/bash "$smi" --query-gpu=index,uuid,serial --format=csv,noheader)" -a \
    "$out" != "$(env -i PATH=/nonexistent HOSTNAME=other NVIDIA_LAB_LOADED=550.90.07 NVIDIA_LAB_MACHINE_ID=/dev/null /bin/bash "$smi" --query-gpu=index,uuid,serial --format=csv,noheader)"
  out=$(NVIDIA_LAB_LOADED=550.90.07 "$smi" -q)
  check "-q: 8 GPU blocks, driver version, H200 memory" \
    test "$(grep -c '^GPU 00000000:' <<<"$out")" == 8 -a \
    "$(grep -c '^Driver Version                            : 550.90.07$' <<<"$out")" == 1 -a \
    "$(grep -c '^        Total                             : 143771 MiB$' <<<"$out")" == 8
  check "-q: GPU block lines match the real capture's layout" \
    diff <(awk '/^GPU 0000/{n++} n==1' "$fixtures/nvidia-smi-q-text-h100x8-535.161.08.txt" | sed 's/:.*//' | grep -v '^$') \
    <(awk '/^GPU 0000/{n++} n==1' <<<"$out" | sed 's/:.*//' | grep -v '^$')
  check "topo -m: header and rows as in the real capture (tabs)" \
    test "$(NVIDIA_LAB_LOADED=550.90.07 "$smi" topo -m | head -2 | tail -1)" == "$(printf 'GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t0-191\t0\t\tN/A')"
  check "driver not loaded: the real 'couldn't communicate' message, exit 9" \
    diff <(head -1 "$fixtures/nvidia-smi-error-no-driver.txt") <(NVIDIA_LAB_LOADED= "$smi" | head -1)
  out=$(NVIDIA_LAB_LOADED=535.129.03 "$smi")
  check "upgraded without reboot: NVML version mismatch, exit 18" \
    test "$out" == "$(printf 'Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.90')"
  rm -rf "$tmp"
}

emulator_tests
[[ ${1-} == --emulator-only ]] && finish

# ---------------------------------------------------------------------------
# The running lab.
if ! "$lab" status >/dev/null 2>&1; then
  bad "lab status: every node on and answering (run tests/lab/lab up first)"
  "$lab" status
  finish
fi
ok "lab status: every node on and answering over SSH"

mapfile -t nodes < <("$lab" status | awk 'NR > 1 && $1 != "ctl" {print $1}')
check "at least one compute node" test "${#nodes[@]}" -ge 1

hostnames=()
for n in "${nodes[@]}"; do
  idx=$((10#${n#node-}))
  addr=198.18.0.$((10 + idx))
  hn=$(sshn "$addr" hostname) || { bad "$n: ssh root@$addr with strict host key checking"; continue; }
  ok "$n: ssh root@$addr with strict host key checking (hostname $hn)"
  hostnames+=("$hn")
  check "$n: eth0 is $addr/24" sshn "$addr" "ip -4 -o addr show dev eth0 | grep -q ' $addr/24 '"
  if [[ $hn == srv-* ]]; then
    # Untouched by gpuexpand: must look like a server out of the factory,
    # its compute interface cabled but not configured.
    check "$n: bare (no chrony/timesyncd, slurmd, munge, driver; eth1 MTU 1500)" sshn "$addr" \
      '! dpkg -s chrony systemd-timesyncd slurmd munge nvidia-driver prometheus-node-exporter sshfs >/dev/null 2>&1 && ! pgrep -x slurmd >/dev/null && test "$(cat /sys/class/net/eth1/mtu)" = 1500'
    check "$n: eth1 has no IPv4 address and is down (gpuexpand configures it)" sshn "$addr" \
      'test -z "$(ip -4 -o addr show dev eth1)" && ip -o link show dev eth1 | grep -q "state DOWN"'
  else
    # Applied (or rolled back) by an earlier test: the spec's address or none.
    check "$n: eth1 has the spec's compute address 198.18.1.$((10 + idx))/24 or none" sshn "$addr" \
      "a=\$(ip -4 -o addr show dev eth1 | awk '{print \$4}'); [ -z \"\$a\" ] || [ \"\$a\" = 198.18.1.$((10 + idx))/24 ]"
  fi
done
check "every node has its own hostname" test "$(printf '%s\n' "${hostnames[@]}" | sort -u | wc -l)" == "${#nodes[@]}"

# Host key checking really is on: a wrong key for node-01 must be refused
# (and, as a control, the same command with the lab's known_hosts works).
tmpkh=$(mktemp)
ssh-keygen -q -t ed25519 -N '' -f "$tmpkh.k" >/dev/null
awk -v k="$(cut -d' ' -f1,2 "$tmpkh.k.pub")" '$1 == "198.18.0.11,node-01" { $0 = $1 " " k } { print }' \
  "$client/known_hosts" >"$tmpkh"
check "a wrong host key is refused (StrictHostKeyChecking=yes)" \
  bash -c "grep -q '^198.18.0.11,node-01 ' '$tmpkh' && ! cmp -s '$tmpkh' '$client/known_hosts' &&
    ! ssh -i '$client/id_ed25519' -o IdentitiesOnly=yes -o UserKnownHostsFile='$tmpkh' -o GlobalKnownHostsFile=/dev/null \
      -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=5 root@198.18.0.11 true </dev/null 2>/dev/null"
rm -f "$tmpkh" "$tmpkh.k" "$tmpkh.k.pub"

first=198.18.0.$((10 + 10#${nodes[0]#node-}))
# The nodes know no package source (gpuexpand's os.repositories adds the
# lab's); ctl serves the mirror over HTTP, its InRelease signed by the key
# the client holds.
check "${nodes[0]}: no package source configured (sources.list empty, sources.list.d empty)" sshn "$first" \
  '! grep -qEv "^[[:space:]]*(#|$)" /etc/apt/sources.list && test -z "$(ls -A /etc/apt/sources.list.d)"'
check "${nodes[0]}: without a source apt has no driver to install" sshn "$first" \
  'apt-get -q update >/dev/null 2>&1; test -z "$(apt-cache policy nvidia-driver)"'
inrelease=$(sshn "$first" '/usr/lib/apt/apt-helper download-file http://198.18.0.10/gxlab/InRelease /tmp/gx-InRelease >/dev/null &&
  cat /tmp/gx-InRelease; rm -f /tmp/gx-InRelease')
check "ctl serves the mirror over HTTP; its InRelease verifies with the client's gxlab-repo.gpg" \
  bash -c 'gpgv --keyring "$1" <(printf "%s\n" "$2") 2>/dev/null' _ "$client/gxlab-repo.gpg" "$inrelease"
policy=$(with_lab_source "${nodes[0]}" 'apt-cache policy nvidia-driver')
check "${nodes[0]}: through that source nvidia-driver 535.129.03 and 550.90.07 are available" \
  test "$(grep -cE '^ +(\*\*\* )?(535\.129\.03|550\.90\.07) ' <<<"$policy")" == 2
policy=$(with_lab_source "${nodes[0]}" 'apt-cache madison nvidia-driver-535 nvidia-driver-550 cuda-drivers-535 cuda-drivers-550 nvidia-fabricmanager-535 nvidia-fabricmanager-550 cuda-toolkit-12-2 cuda-toolkit-12-4' |
  awk -F'|' '{gsub(/ /, ""); print $1, $2}' | sort)
check "${nodes[0]}: NVIDIA's names and versions of two branches (tests/fixtures/nvidia-repo/SOURCES.md)" \
  test "$policy" = "$(printf '%s\n' 'cuda-drivers-535 535.183.01-1' 'cuda-drivers-550 550.90.07-1' 'cuda-toolkit-12-2 12.2.2-1' \
    'cuda-toolkit-12-4 12.4.1-1' 'nvidia-driver-535 535.183.01-0ubuntu1' 'nvidia-driver-550 550.90.07-0ubuntu1' \
    'nvidia-fabricmanager-535 535.183.01-1' 'nvidia-fabricmanager-550 550.90.07-1')"
check "${nodes[0]}: NVIDIA's container toolkit 1.17.8-1 and Debian's containerd are offered" with_lab_source "${nodes[0]}" \
  'apt-cache madison nvidia-container-toolkit nvidia-container-toolkit-base | grep -c " 1.17.8-1 " | grep -qx 2 && apt-cache show containerd >/dev/null'
check "${nodes[0]}: the repository has the phase packages" with_lab_source "${nodes[0]}" \
  'for p in chrony prometheus-node-exporter slurmd munge rdma-core ibverbs-utils infiniband-diags sshfs rsync jq; do apt-cache show "$p" >/dev/null 2>&1 || exit 1; done'
check "${nodes[0]}: the temporary source is gone again" sshn "$first" 'test -z "$(ls -A /etc/apt/sources.list.d)"'
check "${nodes[0]}: reaches ctl over SSH with its own root key (sshfs storage prerequisite)" \
  sshn "$first" 'ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=5 root@198.18.0.10 test -d /srv/shared'
check "${nodes[0]}: /dev/fuse is present (sshfs)" sshn "$first" 'test -c /dev/fuse'
if ((${#nodes[@]} > 1)); then
  # The compute network carries traffic between nodes: checked with
  # addresses of its own in 198.18.1.200+ (never a node's), removed again.
  second=198.18.0.$((10 + 10#${nodes[1]#node-}))
  sshn "$first" 'ip link set eth1 up && ip addr add 198.18.1.201/24 dev eth1' &&
    sshn "$second" 'ip link set eth1 up && ip addr add 198.18.1.202/24 dev eth1'
  check "${nodes[0]} -> ${nodes[1]} over the compute network (eth1, 198.18.1.202)" sshn "$first" \
    "timeout 3 bash -c '</dev/tcp/198.18.1.202/22'"
  for a in "$first 201" "$second 202"; do
    # shellcheck disable=SC2086
    set -- $a
    sshn "$1" "ip addr del 198.18.1.$2/24 dev eth1; [ -n \"\$(ip -4 -o addr show dev eth1)\" ] || ip link set eth1 down"
  done
fi

check "ctl: sinfo answers" sshn 198.18.0.10 'sinfo -h -o %P | grep -q gpu'
check "ctl: slurmctld and munge active" sshn 198.18.0.10 'systemctl is-active --quiet slurmctld munge'
check "ctl: munge key is the lab's client munge.key" \
  test "$(sshn 198.18.0.10 'sha256sum </etc/munge/munge.key')" == "$(sha256sum <"$client/munge.key")"
check "ctl: /srv/shared exported (exists)" sshn 198.18.0.10 'test -d /srv/shared'

spec=$(mktemp --suffix=.yaml)
"$lab" spec >"$spec"
bin=${GPUEXPAND_BIN:-$repo/build/test/src/gpuexpand}
if [[ -x $bin ]]; then
  check "lab spec passes gpuexpand validate" "$bin" validate "$spec"
else
  echo "skip - lab spec validation (no gpuexpand binary at $bin)"
fi
check "lab spec lists ${#nodes[@]} nodes and the lab's client files" \
  grep -q "identity_file: $client/id_ed25519" "$spec"
rm -f "$spec"

finish
