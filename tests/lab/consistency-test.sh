#!/usr/bin/env bash
# New nodes against the nodes in service (cluster.reference), on nodes of
# two Debian releases: node-08 is in service (the lab spec applied, Debian
# 12); node-09 is new and Debian 13 (trixie: `lab up --release
# node-09=trixie`); node-10 is new and was set up by hand from an older
# runbook (another driver branch, 535) with a sysctl changed by hand.
# The report must name exactly those differences and nothing else, strict
# mode must fail on them, fixing the spec or applying must empty it, and
# the reference node must only ever be probed. On node-09 the playbooks
# run on Debian 13, where os-init takes chrony's Debian 13 variant.
#
# Needs a running lab with 10 nodes, node-09 of trixie
# (tests/lab/lab up --nodes 10 --release node-09=trixie).
# GPUEXPAND_BIN: the gpuexpand binary (default: build/test/src/gpuexpand, as scripts/test builds it).
# Last line: "N passed, M failed"; exit 0 only if nothing failed.
set -uo pipefail

# shellcheck source=tests/lab/test-lib.sh
source "$(dirname "$(readlink -f "$0")")/test-lib.sh"
state=$work/state.db

[[ -x "$gx" ]] || { echo "no gpuexpand binary at $gx"; bad "binary present"; finish; }
grep -q '^node-09 .* trixie$' <<<"$("$lab" status 2>/dev/null)" ||
  { bad "lab is up with node-09 of trixie (tests/lab/lab up --nodes 10 --release node-09=trixie)"; finish; }
"$lab" spec >"$work/lab.yaml"

# ---------------------------------------------------------------- the nodes as they come
# node-08 in service; node-10 converged by an older runbook (driver 535),
# then a kernel parameter changed by hand.
spec_with "$work/old-runbook.yaml" '.defaults.gpu.driver_version = "535.129.03"'
# Both at once, each in its own store: the expansion's, $state, holds only
# what the expansion did.
"$gx" apply -y "$work/lab.yaml" --limit node-08 --state "$work/in-service.db" >"$work/node-08.log" 2>&1 &
in_service=$!
"$gx" apply -y "$work/old-runbook.yaml" --limit node-10 --state "$work/old-runbook.db" >"$work/node-10.log" 2>&1 &
old_runbook=$!
wait "$in_service" || { bad "precondition: node-08 applied with the lab spec"; sed 's/^/    /' "$work/node-08.log"; }
wait "$old_runbook" || { bad "precondition: node-10 applied with the older runbook"; sed 's/^/    /' "$work/node-10.log"; }
sshn node-10 "sysctl -qw net.core.somaxconn=1024"
check "node-10 runs driver 535.129.03" on node-10 535.129.03 "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u"

# The expansion spec: node-08 is the reference; node-09 (in the lab spec's
# trixie group: its packages come from the mirror's trixie part) and
# node-10 are the nodes to add.
expansion='.cluster.reference = {nodes: [{hosts: "node-08", addresses: "198.18.0.18"}]}
  | .nodes = [{hosts: "node-09", addresses: "198.18.0.19", groups: ["trixie"], compute_addresses: {eth1: "198.18.1.19/24"}},
              {hosts: "node-10", addresses: "198.18.0.20", compute_addresses: {eth1: "198.18.1.20/24"}}]'
spec_with "$work/expansion.yaml" "$expansion"
report() { sed -n '/^Consistenc/,$p' <<<"$out" | grep -v '^gpuexpand: '; }
only_probed() { # RUN — "1 sh -s" when node-08 ran one probe and nothing else in RUN
  echo "$(sqlite3 "$state" "select count(*) from audit where run_id = $1 and node = 'node-08'")" \
    "$(sqlite3 "$state" "select group_concat(distinct command) from audit where run_id = $1 and node = 'node-08'")"
}
last_run() { sqlite3 "$state" 'select max(id) from runs'; }

# ---------------------------------------------------------------- node-10 as it is
gxrun verify "$work/expansion.yaml" --limit node-10 --state "$state" --consistency strict
check "verify node-10 (strict): exit 3" test "$rc" -eq 3
check "  the report names exactly the driver branch and the hand-set sysctl" test "$(report | sed 's/ ([0-9]* facts,/ (N facts,/')" = \
  "Consistency with the reference nodes node-08 (N facts, the nodes now):
  node-10: gpus.driver_version 535.129.03, reference 550.90.07 (node-08)
  node-10: packages.nvidia-driver 535.129.03, reference 550.90.07 (node-08)
  node-10: sysctl.net.core.somaxconn 1024, reference 8192 (node-08)
  1 of 1 node differs from the reference"
check "  node-08 was only probed" test "$(only_probed "$(last_run)")" = "1 sh -s"

# ---------------------------------------------------------------- both new nodes, planned
# After apply node-10 will have the spec's driver and sysctl: the plan's
# report (the nodes after apply) holds only node-09's release against it.
gxrun plan "$work/expansion.yaml" --state "$state" --consistency strict
check "plan (strict): exit 1" test "$rc" -eq 1
check "  the report names exactly node-09's Debian release" test "$(report | sed 's/ ([0-9]* facts,/ (N facts,/')" = \
  "Consistency with the reference nodes node-08 (N facts, the nodes after apply):
  node-09: os.version_id 13, reference 12 (node-08)
  1 of 2 nodes differ from the reference"
check "  node-09's chrony.conf is the Debian 13 variant" \
  grep -q '^    + /etc/chrony/chrony.conf: does not exist  (variant: Debian 13 and later)$' <<<"$out"
check "  node-10 (Debian 12) gets no Debian 13 variant" bash -c '! sed -n "/^node-10/,/^\$/p" <<<"$1" | grep -q "variant: Debian 13"' _ "$out"
check "  node-08 was only probed, and holds no lock" \
  test "$(only_probed "$(last_run)") $(sqlite3 "$state" "select count(*) from locks where node = 'node-08'")" = "1 sh -s 0"
json=$("$gx" plan "$work/expansion.yaml" --state "$state" -o json 2>/dev/null)
check "  the JSON plan carries the report and the variant" test \
  "$(jq -r '[.consistency.consistent, .consistency.differences[0].fact, ([.plans[].phases[].changes[] | select(.variant == "Debian 13 and later") | .step] | unique | join(","))] | @tsv' <<<"$json")" = \
  "$(printf 'false\tos.version_id\tchrony-config-debian13')"

# The older runbook's driver branch in the spec itself (a rack block copied
# from it): the plan predicts what apply installs, so it names the branch;
# without it, node-10 matches.
spec_with "$work/stale-pin.yaml" "$expansion"' | .nodes[1].gpu = {driver_version: "535.129.03"}'
gxrun plan "$work/stale-pin.yaml" --limit node-10 --state "$state"
check "a stale driver pin in the spec: named as node-10 will be after apply" \
  grep -qx '  node-10: gpus.driver_version 535.129.03, reference 550.90.07 (node-08)' <<<"$(report)"
gxrun plan "$work/expansion.yaml" --limit node-10 --state "$state"
check "  the spec fixed: node-10 matches (after apply)" \
  grep -qE '^Consistent: node-10 matches the reference nodes node-08 in [0-9]+ facts \(after apply\)$' <<<"$out"

# ---------------------------------------------------------------- applying
gxrun apply -y "$work/expansion.yaml" --limit node-10 --state "$state"
check "apply node-10: exit 0 (the driver changed, with a reboot)" test "$rc" -eq 0
check "  sysctl as the spec says again" on node-10 8192 "sysctl -n net.core.somaxconn"
gxrun verify "$work/expansion.yaml" --limit node-10 --state "$state" --consistency strict
check "verify node-10 after apply (strict): exit 0, consistent" test "$rc" -eq 0
check "  the report is empty" \
  grep -qE '^Consistent: node-10 matches the reference nodes node-08 in [0-9]+ facts \(now\)$' <<<"$out"

# Debian 13 through the phases that do not register with Slurm: its slurmd
# (24.11) is newer than the controller's slurmctld (22.05), which Slurm
# does not support, and the report says so before the scheduler phase runs.
gxrun apply -y "$work/expansion.yaml" --limit node-09 --until monitoring --state "$state"
check "apply node-09 (Debian 13) --until monitoring: exit 0" test "$rc" -eq 0
check "  chrony reads leap seconds from the IERS list" on node-09 \
  "leapseclist /usr/share/zoneinfo/leap-seconds.list" "grep '^leap' /etc/chrony/chrony.conf"
check "  chronyd uses it" sshn node-09 "journalctl -u chrony -b --no-pager | grep -q 'Using leap second list /usr/share/zoneinfo/leap-seconds.list'"
check "  and runs without complaint about right/UTC" sshn node-09 "! journalctl -u chrony -b --no-pager | grep -q 'failed leap second check'"
check "  the sysctls set, live and persisted" on node-09 "1 8192 yes" \
  "echo \$(sysctl -n net.ipv4.tcp_mtu_probing net.core.somaxconn) \$(grep -q '^net.core.somaxconn = 8192$' /etc/sysctl.d/90-gpuexpand.conf && echo yes)"
check "  its packages from Debian 13" on node-09 "trixie" \
  "apt-cache policy chrony | grep -q 'deb13' && echo trixie"

# Now node-09 has its sources: the report compares each package at the
# version apt would install there. Expected: every package whose version
# differs between the two nodes (installed, or apt's candidate on node-09),
# read from dpkg and apt on the nodes themselves.
gxrun plan "$work/expansion.yaml" --limit node-09 --state "$state"
version_on() { # NODE PACKAGE — installed version, or apt's candidate, or -
  sshn "$1" "v=\$(dpkg-query -W -f='\${db:Status-Abbrev} \${Version}' $2 2>/dev/null | sed -n 's/^ii  *//p'); [ -n \"\$v\" ] || v=\$(apt-cache policy $2 2>/dev/null | sed -n 's/^  Candidate: //p'); echo \${v:--}"
}
expected="  node-09: os.version_id 13, reference 12 (node-08)"
for p in chrony iputils-ping jq munge nvidia-driver prometheus-node-exporter rsync slurm-client slurmd sshfs; do
  mine=$(version_on node-09 "$p") theirs=$(version_on node-08 "$p")
  [[ $mine == "$theirs" ]] || expected+=$'\n'"  node-09: packages.$p $mine, reference $theirs (node-08)"
done
check "the report names exactly node-09's release and its packages' versions" \
  test "$(report | grep '^  node-09: ' | sort)" = "$(sort <<<"$expected")"
check "  among them slurmd 24.11, which cannot register with the 22.05 controller" \
  grep -qE '^  node-09: packages\.slurmd 24\.11\.[^ ]*, reference 22\.05\.' <<<"$(report)"
check "  node-08 was only probed" test "$(only_probed "$(last_run)")" = "1 sh -s"

out=$("$gx" facts "$work/expansion.yaml" --diff node-08 node-09 --state "$state" 2>&1)
check "facts --diff node-08 node-09: the releases side by side" grep -qE '^os\.version_id +12 +13$' <<<"$out"
check "  and no audit entry on node-08 other than probes, in every run" \
  test "$(sqlite3 "$state" "select count(*) from audit where node = 'node-08' and command <> 'sh -s'")" -eq 0 ||
  sqlite3 "$state" "select run_id, command from audit where node = 'node-08' and command <> 'sh -s'"

finish
