#!/usr/bin/env bash
# `gpuexpand apply` against the lab's real nodes: bare nodes converge, each
# phase's effect checked on the node itself; a second apply changes nothing
# in one round trip per node; a failed step rolls its phase back with the
# files byte for byte; two applies on the same nodes: the second exits 4;
# a controller killed with SIGKILL is resumed by the next apply, also when
# killed (or interrupted with SIGINT) in the middle of a step; --max-fail
# with a partly failed batch; driver change with reboot; rollback --to.
#
# Needs a running lab with at least 4 nodes (tests/lab/lab up --nodes 4).
# GPUEXPAND_BIN: the gpuexpand binary (default: build/test/src/gpuexpand, as scripts/test builds it).
# Last line: "N passed, M failed"; exit 0 only if nothing failed.
set -uo pipefail

# shellcheck source=tests/lab/test-lib.sh
source "$(dirname "$(readlink -f "$0")")/test-lib.sh"
state=$work/state.db

[[ -x "$gx" ]] || { echo "no gpuexpand binary at $gx"; bad "binary present"; finish; }
"$lab" status >/dev/null 2>&1 || { bad "lab is up (tests/lab/lab up --nodes 4)"; finish; }
"$lab" spec >"$work/lab.yaml"
check "lab spec validates" "$gx" validate "$work/lab.yaml"

# ---------------------------------------------------------------- converge
gxrun apply -y "$work/lab.yaml" --limit 'node-[01-03]' --state "$state"
check "first apply exits 0" test "$rc" -eq 0
check "first apply changed all three nodes" grep -q "3 nodes: 3 changed, 0 unchanged, 0 failed" <<<"$out"
for n in node-01 node-02 node-03; do
  check "$n: hostname is $n" on "$n" "$n" hostname
  check "$n: chrony uses the spec's server" on "$n" "server 198.18.0.1 iburst" "grep '^server' /etc/chrony/chrony.conf"
  check "$n: chronyd running" on "$n" active "systemctl is-active chrony"
  check "$n: chronyc sources lists the server" sshn "$n" "chronyc -n sources | grep -q 198.18.0.1"
  check "$n: driver 550.90.07 via nvidia-smi" on "$n" "550.90.07" \
    "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u"
  check "$n: 8 GPUs" on "$n" 8 "nvidia-smi -L | wc -l"
  check "$n: compute interface MTU 9000" on "$n" 9000 "cat /sys/class/net/eth1/mtu"
  i=$((10#${n#node-}))
  check "$n: eth1 has exactly the spec's compute address" on "$n" "198.18.1.$((10 + i))/24" \
    "ip -4 -o addr show dev eth1 | awk '{print \$4}'"
  check "$n: the address persisted for systemd-networkd with the MTU" on "$n" "MTUBytes=9000 Address=198.18.1.$((10 + i))/24" \
    "echo \$(grep -E '^(MTUBytes|Address)=' /etc/systemd/network/60-gpuexpand-eth1.network)"
  check "$n: /mnt/shared in fstab" sshn "$n" "grep -q ' /mnt/shared fuse.sshfs ' /etc/fstab"
  check "$n: /mnt/shared mounted" sshn "$n" "mountpoint -q /mnt/shared"
  check "$n: the checkpoint directory inside the mount" sshn "$n" "test -d /mnt/shared/checkpoints"
  check "$n: node exporter answers with metrics" sshn "$n" \
    "exec 3<>/dev/tcp/127.0.0.1/9100 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && grep -q '^node_' <&3"
  check "$n: checkpoints kept on the node" sshn "$n" "test -f /var/lib/gpuexpand/checkpoints/1/os-init/complete"
  # In service, not drained or down: idle, or alloc/mix while a job of a lab
  # test running beside this one (they share ctl's partition) holds it.
  check "$n: in service in Slurm with the spec's features and GRES" sshn "$n" \
    "sinfo -N -h -n $n -o '%t %f %G' | grep -Eqx '(idle|alloc|mix) h200,lab gpu:8' || { sinfo -N -h -n $n -o '%t %f %G'; false; }"
  check "$n: acceptance passed and recorded" sshn "$n" "test -s /var/lib/gpuexpand/accepted.json"
  check "$n: the driver is held (gpu.hold_packages defaults to true)" on "$n" nvidia-driver "apt-mark showhold"
  check "$n: apt pins the lab repository at 600 (pin_priority)" sshn "$n" \
    "apt-cache policy | grep -q ' 600 http://198.18.0.10/gxlab'"
  check "$n: the lab repository is its one package source, signature-checked" on "$n" \
    "gpuexpand-gxlab.sources Signed-By: /etc/apt/keyrings/gpuexpand-gxlab.gpg" \
    "echo \$(ls /etc/apt/sources.list.d) \$(grep -E '^(Signed-By|Trusted):' /etc/apt/sources.list.d/gpuexpand-gxlab.sources)"
done
network=$("$gx" status --state "$state" --output json | jq -r '.checks[][] | select(.check == "network") | "\(.node) \(.status) \(.detail)"')
check "first apply: each node pinged a peer's spec address over eth1, 9000 bytes unfragmented" \
  test "$(grep -cE '^node-0[1-3] pass .*9000-byte packets reach 198\.18\.1\.1[1-3] unfragmented' <<<"$network")" -eq 3
check "first apply: the multi-node job ran over the three nodes" \
  grep -q "acceptance  pass multinode: one job ran on 3 nodes" <<<"$out"
# (Only these nodes': tests on other nodes run side by side.)
check "no acceptance hold left" on node-01 0 "scontrol show reservation | grep -c 'ReservationName=gpuexpand-accept-node-0[1-3] '"
"$gx" report --state "$state" --html "$work/run.html" 2>/dev/null
check "report --html: the first apply's grid has the three nodes changed in every phase" \
  test "$(grep -c '<td>node-0[1-3]</td><td>changed</td>' "$work/run.html") $(grep -o '<td class="changed"' "$work/run.html" | wc -l)" = "3 21"

# ---------------------------------------------------------------- idempotent
out=$("$gx" apply -y "$work/lab.yaml" --limit 'node-[01-03]' --state "$state" 2>&1)
rc=$?
check "second apply exits 0" test "$rc" -eq 0
check "second apply changes nothing" grep -q "3 nodes: 0 changed, 3 unchanged, 0 failed" <<<"$out"
# (The controller answers the nodes' gres.conf checks: nodes that ask while
# it answers others share its next script, so 1 to 3 scripts there, after
# the preflight's `true`.)
second_run=$(sed -n 's/^run \([0-9]*\): applying.*/\1/p' <<<"$out")
commands_on() { sqlite3 "$state" "select count(*) from audit where run_id = ${second_run:-0} and node = '$1'"; }
check "second apply: one round trip per node" \
  test "$(commands_on node-01) $(commands_on node-02) $(commands_on node-03)" = "1 1 1"
check "  and on ctl the preflight plus at most one script per node" test "$(commands_on ctl)" -ge 2 -a "$(commands_on ctl)" -le 4
"$gx" plan "$work/lab.yaml" --limit 'node-[01-03]' --detailed-exitcode >/dev/null
check "plan --detailed-exitcode says nothing is pending (0)" test $? -eq 0

# ---------------------------------------------------------------- package answers
# dpkg and apt are asked again only when a file they read has changed: two
# probes in a row, and the second reuses the first's answer (its row is
# not written again); a package held behind gpuexpand's back (dpkg's
# database rewritten) is seen by the next probe, and so is its release.
answered_at() { sqlite3 "$state" "select saved_at from package_answers where node = '$1'"; }
# (The driver phase holds the driver's packages; jq is held only here.)
held_on_02() { "$gx" facts "$work/lab.yaml" --limit node-02 --state "$state" -o json | jq -c '.nodes["node-02"].held_packages | index("jq") != null'; }
held_on_02 >/dev/null
kept=$(answered_at node-02)
sleep 1  # saved_at counts seconds
check "package answers: node-02's answer is kept" test -n "$kept"
check "  a probe with nothing changed: jq is not held" test "$(held_on_02)" = false
check "  and reuses it" test "$(answered_at node-02)" = "$kept"
sshn node-02 "apt-mark hold jq" >/dev/null
check "  jq held on the node: the next probe sees it" test "$(held_on_02)" = true
check "  from dpkg, asked again" test "$(answered_at node-02)" != "$kept"
sshn node-02 "apt-mark unhold jq" >/dev/null
check "  released: the next probe sees that too" test "$(held_on_02)" = false

# ---------------------------------------------------------------- init --from
# A spec drafted from node-01 (converged: a node in service) validates, and
# planned against node-01 changes nothing in the phases it covers: only the
# acceptance phase (its settings are the draft's) is left.
"$gx" init --from root@198.18.0.11 -i "$client/id_ed25519" --known-hosts "$client/known_hosts" --cluster lab \
  --spec-out "$work/draft.yaml" --save-facts "$work/draft-facts.json" 2>"$work/init.err"
check "init --from node-01: exit 0" test $? -eq 0
sed 's/^/    /' "$work/init.err"
check "  it names the phases it reproduces" grep -q "it reproduces os-init, gpu-driver, rdma, storage, monitoring" "$work/init.err"
check "  the repository's key copied beside the draft, pinned by its fingerprint" \
  bash -c 'test -s "$1/keys/gxlab.gpg" && grep -q "key: \"keys/gxlab.gpg\"" "$1/draft.yaml"' _ "$work"
check "  the driver, MTU, mount and exporter as the lab spec has them" bash -c \
  'grep -q "driver_version: \"550.90.07\"" "$1" && grep -q "mtu: 9000" "$1" && grep -q "type: sshfs" "$1" && grep -q "\"eth1\": \"198.18.1.11/24\"" "$1"' _ "$work/draft.yaml"
check "  slurmd found and left to the operator (TODO)" grep -q "TODO: slurmd .* runs on node-01 (configuration from 198.18.0.10)" "$work/draft.yaml"
check "the draft validates" "$gx" validate "$work/draft.yaml"
"$gx" plan "$work/draft.yaml" --state "$state" --output json >"$work/draft-plan.json" 2>"$work/draft-plan.err"
check "planned against node-01, the draft changes nothing but the acceptance settings" \
  test "$(jq -c '[.plans[].phases[] | select((.changes | length) > 0) | .name]' "$work/draft-plan.json")" = '["acceptance"]'

# ---------------------------------------------------------------- reference nodes
# node-01 and node-02, converged, stand for the nodes in service
# (cluster.reference) and node-03 is planned against them: converged by the
# same spec, it matches them. /etc/motd, added to the compared facts, is
# then changed on node-03 by hand: exactly that is reported, and
# --consistency strict fails. The reference nodes are only probed.
ref='.cluster.reference = {nodes: [{hosts: "node-[01-02]", addresses: "198.18.0.[11-12]"}], facts: {add: ["files./etc/motd"]}}
  | .nodes = [{name: "node-03", address: "198.18.0.13", compute_addresses: {eth1: "198.18.1.13/24"}}]'
spec_with "$work/reference.yaml" "$ref"
gxrun plan "$work/reference.yaml" --state "$state"
check "reference: node-03 as converged matches node-[01-02] (exit 0)" test "$rc" -eq 0
check "  the report says so" grep -qE '^Consistent: node-03 matches the reference nodes node-\[01-02\] in [0-9]+ facts \(after apply\)$' <<<"$out"
# Only probed: one script each on stdin (audit: `sh -s`), whose output in
# the run log is the probe's (@@gpx: section markers).
only_probed() { # RUN — "node-01:1 node-02:1" when each ran one probe and nothing else
  local n
  for n in node-01 node-02; do
    printf '%s:%s%s ' "$n" "$(sqlite3 "$state" "select count(*) from audit where run_id = $1 and node = '$n' and command = 'sh -s'")" \
      "$(sqlite3 "$state" "select case count(*) when 0 then '' else ' and more' end from audit where run_id = $1 and node = '$n' and command <> 'sh -s'")"
    grep -q '@@gpx:os-release' "$(dirname "$state")/runs/$1/$n.log" || printf 'no probe output '
  done
}
plan_run=$(sqlite3 "$state" 'select max(id) from runs')
check "  the reference nodes were only probed: one read-only probe each" test "$(only_probed "$plan_run")" = "node-01:1 node-02:1 "
check "  and hold no lock" test "$(sqlite3 "$state" "select count(*) from locks where node in ('node-01', 'node-02')")" -eq 0
sshn node-03 "echo 'maintenance at 03:00' >> /etc/motd"
gxrun plan "$work/reference.yaml" --state "$state" --consistency strict
check "reference: a line added to node-03's /etc/motd: strict exits 1" test "$rc" -eq 1
motd_line=$(($(sshn node-01 'wc -l < /etc/motd') + 1))
check "  the one difference, with the reference's hosts" \
  test "$(grep '^  node-03: ' <<<"$out")" = "  node-03: files./etc/motd.content line $motd_line: maintenance at 03:00, reference line $motd_line: (end) (node-[01-02])"
gxrun verify "$work/reference.yaml" --state "$state" --consistency strict
check "  verify --consistency strict: the acceptance checks pass, the difference exits 3" \
  test "$rc-$(grep -c '^node-03  FAIL ' <<<"$out")" = "3-0"
check "  verify names the same difference, of the node as it is now" \
  test "$(grep '^  node-03: \|^Consistency' <<<"$out" | sed 's/ ([0-9]* facts,/ (N facts,/')" = "Consistency with the reference nodes node-[01-02] (N facts, the nodes now):
  node-03: files./etc/motd.content line $motd_line: maintenance at 03:00, reference line $motd_line: (end) (node-[01-02])"
verify_run=$(sqlite3 "$state" 'select max(id) from runs')
check "  verify only probed the reference nodes" test "$(only_probed "$verify_run")" = "node-01:1 node-02:1 "
sshn node-03 "sed -i '\$d' /etc/motd"

# On a terminal (script(1) gives it one) apply shows the plan and asks:
# nothing to change needs no question; "no" changes nothing; "yes" applies.
on_tty() { # ANSWER ARGS… — sets $out and $rc
  out=$(printf '%s\n' "$1" | script -qefc "$(printf '%q ' "$gx" "${@:2}")" /dev/null 2>&1)
  rc=$?
}
runs_before=$(sqlite3 "$state" "select count(*) from runs")
on_tty no apply "$work/lab.yaml" --limit node-03 --state "$state"
check "on a terminal, a converged node: the plan, 'Nothing to change.', exit 0, no run" \
  test "$rc-$(grep -c 'Nothing to change.' <<<"$out")-$(sqlite3 "$state" "select count(*) from runs")" = "0-1-$runs_before"
spec_with "$work/busybox.yaml" '.defaults.os.packages += ["busybox"]'
on_tty no apply "$work/busybox.yaml" --limit node-03 --state "$state"
check "on a terminal: the plan names the change and apply asks for 'yes'" \
  grep -q "package busybox: not installed" <<<"$out" && check "  the question" grep -q "Apply these changes to 1 node? Only 'yes' is taken as yes" <<<"$out"
check "  'no': exit 1, apply cancelled, nothing recorded or installed" \
  test "$rc-$(grep -c 'apply cancelled: nothing was changed' <<<"$out")-$(sqlite3 "$state" "select count(*) from runs")-$(sshn node-03 'dpkg -s busybox >/dev/null 2>&1 && echo in || echo out')" = "1-1-$runs_before-out"
# A plan taller than the terminal (6 rows here): its groups and summary
# first, the whole plan when asked for ('plan'), then the question again.
out=$(printf 'plan\nno\n' | script -qefc "stty rows 6; $(printf '%q ' "$gx" apply "$work/busybox.yaml" --limit node-03 --state "$state")" /dev/null 2>&1)
rc=$?
check "a short terminal: the outline first, the changes not shown" \
  bash -c 'grep -qE "^\([0-9]+ lines of changes not shown\)" <<<"$1" && grep -q "(.plan. shows the whole plan)" <<<"$1"' _ "$out"
check "  'plan' shows them, then 'no' cancels (exit 1)" \
  bash -c '[[ $2 == 1 ]] && grep -q "package busybox: not installed" <<<"$1" && grep -q "apply cancelled: nothing was changed" <<<"$1"' _ "$out" "$rc"
# apply --until shows and asks only what this run will do: a change in a
# later phase (the rdma phase's /etc/nccl.conf) is not this run's.
spec_with "$work/nccl-later.yaml" '.defaults.network.nccl.env = {NCCL_DEBUG: "WARN"}'
on_tty no apply "$work/nccl-later.yaml" --limit node-03 --until os-init --state "$state"
check "--until os-init, a change only in a later phase: 'Nothing to change.', exit 0" \
  test "$rc-$(grep -c 'Nothing to change.' <<<"$out")-$(grep -c '/etc/nccl.conf' <<<"$out")" = "0-1-0"
on_tty no apply "$work/nccl-later.yaml" --limit node-03 --until rdma --state "$state"
check "  --until rdma: the change shown and asked for" \
  bash -c 'grep -q "/etc/nccl.conf" <<<"$1" && grep -q "Apply these changes to 1 node?" <<<"$1"' _ "$out"
on_tty yes apply "$work/busybox.yaml" --limit node-03 --state "$state"
check "  'yes': it applies (exit 0, busybox installed)" test "$rc-$(sshn node-03 'dpkg -s busybox >/dev/null 2>&1 && echo in || echo out')" = "0-in"

# ---------------------------------------------------------------- rollback
# node-03 gets new NTP servers (chrony.conf is rewritten, chrony restarted)
# and a package that does not exist: the base-packages step after the
# config change fails, and the phase goes back to its checkpoint.
converged "$work/lab.yaml" node-03
before=$(sshn node-03 "sha256sum /etc/chrony/chrony.conf /etc/hosts /etc/hostname")
spec_with "$work/broken.yaml" '.defaults.os.ntp_servers += ["198.18.0.9"] | .defaults.os.packages += ["no-such-package-gx"]'
gxrun apply -y "$work/broken.yaml" --limit node-03 --state "$state"
broken_run=$(sed -n 's/^run \([0-9]*\): applying.*/\1/p' <<<"$out")
check "a failing step: apply exits 3" test "$rc" -eq 3
check "the failure names node, phase and step" grep -q "node-03: phase os-init, step base-packages: " <<<"$out"
check "the recap lists the failure by reason" grep -q "^  node-03: phase os-init, step base-packages: " <<<"$out"
check "  and the command that retries only what did not finish" \
  grep -qF "gpuexpand apply -y $work/broken.yaml --state $state --limit @failed" <<<"$out"
check "  --limit @failed selects node-03 from the store" \
  test "$("$gx" inventory "$work/lab.yaml" --limit @failed --state "$state" --hostlist 2>&1)" = node-03
logs=$("$gx" logs "$work/lab.yaml" node-03 --failed --state "$state" 2>&1)
check "logs --failed: apt's own words and its exit status, from the run's log of node-03" \
  grep -qzE "run $broken_run, node-03: .*Unable to locate package no-such-package-gx.*= exit 100 .*phase os-init: FAILED" <<<"$logs"
check "  the log keeps stdin by digest only (no file content)" \
  grep -q "^  stdin: [0-9]* bytes, sha256 [0-9a-f]\{64\}$" "$(dirname "$state")/runs/$broken_run/node-03.log"
check "the phase was rolled back" grep -q "rolled back" <<<"$out"
check "files byte for byte as before" test "$before" = "$(sshn node-03 "sha256sum /etc/chrony/chrony.conf /etc/hosts /etc/hostname")"
check "chrony running again after the restore" on node-03 active "systemctl is-active chrony"
status=$("$gx" status --state "$state" 2>&1)
check "status shows the rolled-back phase with its step" \
  grep -q "node-03 os-init (run $broken_run): step base-packages: " <<<"$status"
out=$("$gx" apply -y "$work/lab.yaml" --limit node-03 --state "$state" 2>&1)
check "after the rollback the node is converged for the original spec" grep -q "0 changed, 1 unchanged" <<<"$out"
out=$("$gx" apply -y "$work/lab.yaml" --limit @failed --state "$state" 2>&1)
check "  then --limit @failed has nothing left to retry (exit 0)" \
  grep -q "^--limit @failed: run [0-9]* (the last apply) left no node unfinished; nothing to do$" <<<"$out"
events=$("$gx" apply -y "$work/lab.yaml" --limit node-03 --state "$state" -o jsonl 2>"$work/events.err")
check "apply -o jsonl: stdout is JSON events only, run_started first, run_finished last" \
  test "$(jq -rs 'map(.event) | first + "," + last' <<<"$events")" = "run_started,run_finished"
check "  node-03 converged: node_finished unchanged, run_finished exit_code 0" \
  test "$(jq -rs '(map(select(.event == "node_finished"))[0].result) + "," + (map(select(.event == "run_finished"))[0].exit_code | tostring)' <<<"$events")" = "unchanged,0"

# ---------------------------------------------------------------- package sources
# node-03 converged. A key whose fingerprint is not the pinned one is
# refused before any node is touched; a repository whose InRelease was
# tampered with makes apt refuse, and os-init rolls back with apt's message;
# a source dropped from the spec is removed from the node.
converged "$work/lab.yaml" node-03
sources_before=$(sshn node-03 "sha256sum /etc/apt/sources.list.d/* /etc/apt/keyrings/*")
spec_with "$work/wrongkey.yaml" '.defaults.os.repositories[0].fingerprint = "A4285295FC7B1A81600062A9605C66F00D6C9793"'
gxrun apply -y "$work/wrongkey.yaml" --limit node-03 --state "$state"
check "a wrong key fingerprint: apply exits 1" test "$rc" -eq 1
check "  both fingerprints named, refused before any node is touched" \
  grep -q "but the spec pins A4285295FC7B1A81600062A9605C66F00D6C9793: refused before any node is touched" <<<"$out"
check "  the node's sources are as before" test "$sources_before" = "$(sshn node-03 "sha256sum /etc/apt/sources.list.d/* /etc/apt/keyrings/*")"

# Two more copies of the repository on ctl: "second" as it is, "tampered"
# with an InRelease that says something the key never signed (one changed
# character in its Label).
"$lab" ssh ctl -- "rm -rf /srv/www/tampered /srv/www/second && install -d /srv/www/tampered /srv/www/second &&
  for f in /srv/gxlab-mirror/*; do ln -s \"\$f\" /srv/www/tampered/; ln -s \"\$f\" /srv/www/second/; done &&
  rm /srv/www/tampered/InRelease /srv/www/tampered/Release.gpg &&
  sed 's/^Label: gpuexpand-lab/Label: gpuexpand-lap/' /srv/gxlab-mirror/InRelease >/srv/www/tampered/InRelease" </dev/null
spec_with "$work/tampered.yaml" '.defaults.os.repositories += [.defaults.os.repositories[0] + {name: "tampered", uris: ["http://198.18.0.10/tampered/"]}]'
gxrun apply -y "$work/tampered.yaml" --limit node-03 --state "$state"
check "a tampered repository: apply exits 3" test "$rc" -eq 3
check "  os-init failed at the repository step and was rolled back" \
  grep -q "node-03: phase os-init, step package-sources: " <<<"$out"
check "  apt's own message is shown" grep -qE "BADSIG|signatures were invalid|is not signed" <<<"$out"
check "  the node's sources are as before" test "$sources_before" = "$(sshn node-03 "sha256sum /etc/apt/sources.list.d/* /etc/apt/keyrings/*")"

spec_with "$work/second.yaml" '.defaults.os.repositories += [.defaults.os.repositories[0] + {name: "gxlab-second", uris: ["http://198.18.0.10/second/"]}]'
gxrun apply -y "$work/second.yaml" --limit node-03 --state "$state"
check "a second source: written with its key" on node-03 "gpuexpand-gxlab-second.gpg gpuexpand-gxlab.gpg" "echo \$(ls /etc/apt/keyrings)"
plan=$("$gx" plan "$work/lab.yaml" --limit node-03 2>&1)
check "dropped from the spec: the plan removes its files" \
  grep -q -- "- /etc/apt/sources.list.d/gpuexpand-gxlab-second.sources: no longer in os.repositories" <<<"$plan" || sed 's/^/    /' <<<"$plan"
gxrun apply -y "$work/lab.yaml" --limit node-03 --state "$state"
check "  and apply removes them" test "$sources_before" = "$(sshn node-03 "sha256sum /etc/apt/sources.list.d/* /etc/apt/keyrings/*")"
"$lab" ssh ctl -- rm -rf /srv/www/tampered /srv/www/second </dev/null

# A hold someone released (so an unattended upgrade could move the driver)
# is drift: planned, and applied back.
sshn node-03 "apt-mark unhold nvidia-driver >/dev/null"
plan=$("$gx" plan "$work/lab.yaml" --limit node-03 2>&1)
check "a released hold is planned back" grep -q "~ package nvidia-driver: 550.90.07 installed, not held" <<<"$plan" ||
  sed 's/^/    /' <<<"$plan"
out=$("$gx" apply -y "$work/lab.yaml" --limit node-03 --state "$state" 2>&1)
check "  and applied: held again" on node-03 nvidia-driver "apt-mark showhold"

# ---------------------------------------------------------------- max-fail
# One node at a time; the first fails (the bogus package): no further batch
# starts (an all-failed batch stops the rollout, and says so).
spec_with "$work/broken.yaml" '.defaults.os.packages += ["no-such-package-gx"]'
gxrun apply -y "$work/broken.yaml" --limit 'node-[01-03]' --batch 1 --max-fail 1 --state "$state"
check "--max-fail 1 with --batch 1: exit 3" test "$rc" -eq 3
check "it says why it stopped" grep -q "stopping: every node of the last batch failed; no further batches are started" <<<"$out"
check "the other two nodes were not started" grep -q "1 failed, 0 unreachable, 2 not started" <<<"$out"

# ---------------------------------------------------------------- apply plan.json
converged "$work/lab.yaml" node-03
spec_with "$work/ntp2.yaml" '.defaults.os.ntp_servers += ["198.18.0.9"]'
"$gx" plan "$work/ntp2.yaml" --limit node-03 --out "$work/plan.json" >/dev/null 2>&1
# No -y and no terminal: the saved plan was the review, so apply does not ask.
out=$("$gx" apply "$work/plan.json" --state "$state" 2>&1 </dev/null)
rc=$?
check "apply plan.json without -y (not asked: the plan was reviewed): exit 0" test "$rc" -eq 0
check "apply plan.json changed the planned node only" grep -q "1 node: 1 changed" <<<"$out"
check "the node has the planned configuration" sshn node-03 "grep -q '^server 198.18.0.9 iburst' /etc/chrony/chrony.conf"
"$gx" plan "$work/lab.yaml" --limit node-03 --out "$work/back.json" >/dev/null 2>&1
sshn node-03 "echo '# changed by hand' >> /etc/chrony/chrony.conf"
out=$("$gx" apply -y "$work/back.json" --state "$state" 2>&1)
rc=$?
check "a node that drifted since the plan: apply plan.json refuses (exit 1)" test "$rc" -eq 1
check "the refusal names the node" grep -q "refusing to apply $work/back.json: node-03 changed since the plan was made" <<<"$out"
out=$("$gx" apply -y "$work/lab.yaml" --limit node-03 --state "$state" 2>&1)
check "a fresh apply of the spec converges node-03 again" grep -q "1 node: 1 changed" <<<"$out"

# ---------------------------------------------------------------- locks
"$gx" apply -y "$work/lab.yaml" --limit node-04 --state "$state" >"$work/first.log" 2>&1 &
first=$!
for _ in $(seq 50); do grep -q "applying to" "$work/first.log" 2>/dev/null && break; sleep 0.1; done
out=$("$gx" apply -y "$work/lab.yaml" --limit 'node-[03-04]' --state "$state" 2>&1)
rc=$?
check "a second apply on overlapping nodes exits 4" test "$rc" -eq 4
check "it names the holder and the node" grep -q "node node-04 is locked by run" <<<"$out"
wait "$first"
rc=$?
check "the first apply finished" test "$rc" -eq 0 || sed 's/^/    /' "$work/first.log"

# ---------------------------------------------------------------- multinode_nodes
# node-01..04 converged: with validation.multinode_nodes 2, verify runs
# two 2-node jobs side by side instead of one over all four.
converged "$work/lab.yaml" 'node-[01-04]'
spec_with "$work/pairs.yaml" '.defaults.validation.multinode_nodes = 2'
out=$("$gx" verify "$work/pairs.yaml" --limit 'node-[01-04]' --state "$state" 2>&1)
rc=$?
check "verify with multinode_nodes 2 over 4 nodes: exit 0" test "$rc" -eq 0 || sed 's/^/    /' <<<"$out"
check "  each node was in a 2-node job" \
  test "$(grep -c '  pass  multinode (.*): one job ran on 2 nodes: ' <<<"$out")" -eq 4
check "  two different jobs" \
  test "$(grep -o 'one job ran on 2 nodes: .*' <<<"$out" | sort -u | wc -l)" -eq 2

# ---------------------------------------------------------------- kill + resume
# node-04 converged; give it a new MTU so os-init..rdma has work, kill the
# controller mid-run, then apply again.
converged "$work/lab.yaml" node-04
spec_with "$work/mtu.yaml" '.defaults.network.mtu = 8000'
sshn node-04 "rm -f /etc/chrony/chrony.conf"  # os-init work too
"$gx" apply -y "$work/mtu.yaml" --limit node-04 --state "$state" >"$work/killed.log" 2>&1 &
victim=$!
# Killed as soon as the run is on record (its first line): the whole apply
# takes about a second now, so a fixed sleep could outlast it.
for _ in $(seq 200); do grep -q "applying to" "$work/killed.log" 2>/dev/null && break; sleep 0.02; done
kill -9 "$victim" 2>/dev/null
wait "$victim" 2>/dev/null
gxrun apply -y "$work/mtu.yaml" --limit node-04 --state "$state"
check "after SIGKILL the next apply takes over and converges (exit 0)" test "$rc" -eq 0
check "it says it resumes the interrupted run" grep -q "was interrupted and its process is gone" <<<"$out"
check "store is consistent after the kill" test "$(sqlite3 "$state" 'pragma integrity_check')" = ok
check "node-04 has the new MTU" on node-04 8000 "cat /sys/class/net/eth1/mtu"
out=$("$gx" apply -y "$work/mtu.yaml" --limit node-04 --state "$state" 2>&1)
check "and then nothing is left to change" grep -q "0 changed, 1 unchanged" <<<"$out"

# ---------------------------------------------------------------- signals mid-phase
# Playbooks from a data dir with one slow step added to the storage phase,
# so a signal lands mid-step deterministically: the step marks its start on
# the node, the test waits for the mark, then signals the controller.
cp -r "$repo/schemas" "$repo/playbooks" "$work/"
cat >>"$work/playbooks/40-storage.yaml" <<'SLOW'

  - id: slow-step-for-tests
    type: command
    check: test -e /var/lib/gpuexpand-test/slow-done
    run: "mkdir -p /var/lib/gpuexpand-test && touch /var/lib/gpuexpand-test/slow-started && sleep 4 && touch /var/lib/gpuexpand-test/slow-done"
    rollback: "rm -f /var/lib/gpuexpand-test/slow-done /var/lib/gpuexpand-test/slow-started"
SLOW
slow_started() { sshn node-04 "test -e /var/lib/gpuexpand-test/slow-started"; }
spec_with "$work/mtu.yaml" '.defaults.network.mtu = 8000'
converged "$work/mtu.yaml" node-04
sshn node-04 "rm -rf /var/lib/gpuexpand-test"
"$gx" --data-dir "$work" apply -y "$work/mtu.yaml" --limit node-04 --state "$state" >"$work/int.log" 2>&1 &
victim=$!
check "SIGINT: the slow step started" eventually 60 slow_started
kill -INT "$victim"
wait "$victim"
rc=$?
sed 's/^/    /' "$work/int.log"
check "SIGINT mid-step: exit 130" test "$rc" -eq 130
check "the running step finished, then its phase was rolled back" \
  grep -q "node-04  storage  FAILED, rolled back .*: interrupted" "$work/int.log"
check "the rollback ran: the step's mark is gone" on node-04 gone "test -e /var/lib/gpuexpand-test/slow-done && echo there || echo gone"
check "the run is recorded as interrupted (exit 130)" \
  test "$(sqlite3 "$state" "select status || ' ' || exit_code from runs order by id desc limit 1")" = "interrupted 130"

"$gx" --data-dir "$work" apply -y "$work/mtu.yaml" --limit node-04 --state "$state" >"$work/kill.log" 2>&1 &
victim=$!
check "SIGKILL: the slow step started" eventually 60 slow_started
kill -9 "$victim"
wait "$victim" 2>/dev/null
killed_run=$(sqlite3 "$state" "select max(id) from runs")
gxrun --data-dir "$work" apply -y "$work/mtu.yaml" --limit node-04 --state "$state"
check "SIGKILL mid-step, then apply: exit 0" test "$rc" -eq 0
check "  it resumes the killed run" grep -q "run $killed_run (.*) was interrupted and its process is gone" <<<"$out"
# The killed controller's step goes on on the node (no terminal: sshd
# does not stop it) and may finish before the new run's probe: then the
# node has nothing left to change, which is right too. Never another phase.
redone=$(sqlite3 "$state" "select coalesce(group_concat(phase), '') from phase_results where run_id = (select max(id) from runs)")
check "  only the interrupted phase is done again, if anything (no finished phase redone): '$redone'" \
  test "$redone" = storage -o "$redone" = ""
check "  the step completed" on node-04 there "test -e /var/lib/gpuexpand-test/slow-done && echo there || echo gone"
check "  store consistent" test "$(sqlite3 "$state" 'pragma integrity_check')" = ok

# ---------------------------------------------------------------- max-fail, partly failed batch
# Batches of 2 over node-01..04: node-01 broken (a package that does not
# exist), node-02 already as the spec wants, node-03 with one change to
# make (a sysctl), node-04 with changes too (its MTU, from the section
# above). Every node is probed first: node-02 is done then, and the
# batches are node-01 + node-03, then node-04. The first is not all-failed
# (node-03 completes), but node-01's failure reaches --max-fail 1, so
# node-04's batch is not started: the run touched it only with its probe.
converged "$work/lab.yaml" node-02
spec_with "$work/partial.yaml" 'del(.rollout) | .nodes = [
  {name: "node-01", address: "198.18.0.11", compute_addresses: {eth1: "198.18.1.11/24"},
   os: {packages: [.defaults.os.packages[], "no-such-package-gx"]}},
  {name: "node-02", address: "198.18.0.12", compute_addresses: {eth1: "198.18.1.12/24"}},
  {name: "node-03", address: "198.18.0.13", compute_addresses: {eth1: "198.18.1.13/24"},
   os: {sysctl: (.defaults.os.sysctl + {"net.core.somaxconn": 4096})}},
  {name: "node-04", address: "198.18.0.14", compute_addresses: {eth1: "198.18.1.14/24"}}]'
gxrun apply -y "$work/partial.yaml" --batch 2 --max-fail 1 --state "$state"
check "partly failed batch with --max-fail 1: exit 3" test "$rc" -eq 3
check "  it stops at --max-fail and says so" \
  grep -q "stopping: 1 node failed, reaching --max-fail 1; no further batches are started" <<<"$out"
check "  node-02, with nothing to change, was done by the first probes" grep -q "node-02  nothing to change" <<<"$out"
check "  node-03 in node-01's batch finished" grep -q "node-03  os-init  changed" <<<"$out"
check "  node-04 was not started" grep -q "1 changed, 1 unchanged, 1 failed, 0 unreachable, 1 not started" <<<"$out"
check "  node-04 saw only its probe" \
  test "$(sqlite3 "$state" "select count(*) from audit where run_id = (select max(id) from runs) and node = 'node-04'")" = 1
converged "$work/lab.yaml" 'node-[03-04]'

# ---------------------------------------------------------------- driver change
# 550 -> 535 on node-02: the package is downgraded, the node rebooted (the
# stand-in driver reports a driver/library mismatch until then), verified.
converged "$work/lab.yaml" node-02
spec_with "$work/535.yaml" '.defaults.gpu.driver_version = "535.129.03"'
gxrun apply -y "$work/535.yaml" --limit node-02 --state "$state"
check "driver downgrade 550 -> 535 with a reboot: exit 0" test "$rc" -eq 0
check "  the held driver was moved, and is held at 535" on node-02 "nvidia-driver 535.129.03" \
  "echo \$(apt-mark showhold) \$(dpkg-query -W -f='\${Version}' nvidia-driver)"
check "nvidia-smi reports 535.129.03 after the reboot" on node-02 535.129.03 \
  "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u"
out=$("$gx" apply -y "$work/535.yaml" --limit node-02 --state "$state" 2>&1)
check "after the reboot nothing is left to change" grep -q "0 changed, 1 unchanged" <<<"$out"
# Upgrade back to 550, with a failure injected in a later step of the same
# phase (a fabric manager package the mirror does not have): the phase
# rolls back, the node keeps 535 and its files.
spec_with "$work/550fm.yaml" '.defaults.gpu.fabric_manager = true'
before=$(sshn node-02 "sha256sum /etc/hostname /etc/chrony/chrony.conf /etc/fstab")
gxrun apply -y "$work/550fm.yaml" --limit node-02 --state "$state"
check "upgrade with a failing later step: exit 3" test "$rc" -eq 3
check "it failed at the fabric manager step" grep -q "step fabric-manager-package" <<<"$out"
check "the driver package is back at 535" on node-02 "535.129.03" "dpkg-query -W -f='\${Version}' nvidia-driver"
check "  and held again, as the checkpoint found it" on node-02 nvidia-driver "apt-mark showhold"
check "nvidia-smi still reports 535.129.03" on node-02 535.129.03 \
  "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u"
check "files intact after the rollback" test "$before" = "$(sshn node-02 "sha256sum /etc/hostname /etc/chrony/chrony.conf /etc/fstab")"

# ---------------------------------------------------------------- NVIDIA's names, across branches
# gpu.source nvidia-cuda-repo on node-02: NVIDIA's package names and
# versions for two branches (tests/fixtures/nvidia-repo/SOURCES.md). The
# distribution's driver goes first, by hand, its kernel module unloaded as
# rmmod would (the stand-in's "loaded" version forgotten): a node arriving
# without a driver.
# 535 installed; then 550 replaces it in one apt run and the node reboots;
# then a move back to 535 that fails later in the phase is rolled back to
# the 550 packages, held as they were.
vendor_packages() { # the GPU packages installed on node-02, one "NAME VERSION STATUS" line each
  sshn node-02 "dpkg-query -W -f='\${Package} \${Version} \${db:Status-Abbrev}\n' 'nvidia-driver*' 'cuda-drivers*' \
    'nvidia-fabricmanager*' 'cuda-toolkit*' 2>/dev/null | awk '\$3 ~ /^.i/ {print \$1, \$2, \$3}' | sort"
}
sshn node-02 "apt-get purge -y -q --allow-change-held-packages nvidia-driver >/dev/null 2>&1; rm -f /run/nvidia-lab/loaded-version"
vendor='.defaults.gpu += {source: "nvidia-cuda-repo", fabric_manager: true}'
spec_with "$work/v535.yaml" "$vendor"' | .defaults.gpu += {driver_version: "535.183.01", cuda_version: "12.2"}'
spec_with "$work/v550.yaml" "$vendor"' | .defaults.gpu += {driver_version: "550.90.07", cuda_version: "12.4"}'
gxrun apply -y "$work/v535.yaml" --limit node-02 --until gpu-driver --state "$state"
check "NVIDIA's names, branch 535: exit 0" test "$rc" -eq 0
check "  nvidia-driver-535, cuda-drivers-535, the fabric manager and CUDA 12.2 at NVIDIA's versions, held" \
  test "$(vendor_packages)" = "$(printf '%s\n' 'cuda-drivers-535 535.183.01-1 hi' 'cuda-toolkit-12-2 12.2.2-1 hi' \
    'nvidia-driver-535 535.183.01-0ubuntu1 hi' 'nvidia-fabricmanager-535 535.183.01-1 hi')"
check "  nvidia-smi reports 535.183.01" on node-02 535.183.01 \
  "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u"
check "  the fabric manager runs" on node-02 active "systemctl is-active nvidia-fabricmanager"
plan=$("$gx" plan "$work/v550.yaml" --limit node-02 2>&1)
check "plan 535 -> 550: the version each name resolves to" \
  grep -q "+ package nvidia-driver-550: not installed, wanted 550.90.07 (550.90.07-0ubuntu1 in the sources)" <<<"$plan"
check "  and the 535 packages it replaces" \
  grep -q -- "- package nvidia-driver-535: 535.183.01-0ubuntu1 installed, replaced by nvidia-driver-550, cuda-drivers-550" <<<"$plan"
gxrun apply -y "$work/v550.yaml" --limit node-02 --until gpu-driver --state "$state"
check "NVIDIA's names, 535 -> 550 with a reboot: exit 0" test "$rc" -eq 0
check "  the 550 packages held, the 535 driver and fabric manager gone (CUDA 12.2 stays beside 12.4)" \
  test "$(vendor_packages)" = "$(printf '%s\n' 'cuda-drivers-550 550.90.07-1 hi' 'cuda-toolkit-12-2 12.2.2-1 hi' \
    'cuda-toolkit-12-4 12.4.1-1 hi' 'nvidia-driver-550 550.90.07-0ubuntu1 hi' 'nvidia-fabricmanager-550 550.90.07-1 hi')"
check "  nvidia-smi reports 550.90.07 after the reboot" on node-02 550.90.07 \
  "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u"
spec_with "$work/v535dcgm.yaml" "$vendor"' | .defaults.gpu += {driver_version: "535.183.01", cuda_version: "12.2", dcgm: true}'
gxrun apply -y "$work/v535dcgm.yaml" --limit node-02 --until gpu-driver --state "$state"
check "550 -> 535 failing at a later step (no DCGM in the mirror): exit 3" test "$rc" -eq 3
check "  it failed at the DCGM step and was rolled back" grep -q "gpu-driver  FAILED, rolled back .* at step dcgm-package" <<<"$out"
check "  the 550 packages are back, held; no 535 package is left" \
  test "$(vendor_packages)" = "$(printf '%s\n' 'cuda-drivers-550 550.90.07-1 hi' 'cuda-toolkit-12-2 12.2.2-1 hi' \
    'cuda-toolkit-12-4 12.4.1-1 hi' 'nvidia-driver-550 550.90.07-0ubuntu1 hi' 'nvidia-fabricmanager-550 550.90.07-1 hi')"
check "  nvidia-smi still reports 550.90.07" on node-02 550.90.07 \
  "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u"
out=$("$gx" apply -y "$work/v550.yaml" --limit node-02 --until gpu-driver --state "$state" 2>&1)
check "  and 550 has nothing left to change" grep -q "0 changed, 1 unchanged" <<<"$out" || sed 's/^/    /' <<<"$out"

# ---------------------------------------------------------------- GPU containers
# node-02 (NVIDIA's 550 packages from above) gets containerd (Debian's, a
# real daemon) and the container toolkit (a stand-in nvidia-ctk, as 1.17.8
# writes: tests/fixtures/nvidia-repo/SOURCES.md): nvidia-ctk configures the
# nvidia runtime into containerd's config.toml and containerd restarts; the
# CDI spec lists the 8 GPUs of the driver in use. A failure later in the
# phase puts config.toml back byte for byte.
containers='.defaults.os.packages += ["containerd"] | .defaults.gpu += {container_toolkit: true, container_runtime: "containerd"}'
spec_with "$work/ctr.yaml" "$vendor"' | .defaults.gpu += {driver_version: "550.90.07", cuda_version: "12.4"} | '"$containers"
spec_with "$work/ctrdcgm.yaml" "$vendor"' | .defaults.gpu += {driver_version: "550.90.07", cuda_version: "12.4", dcgm: true} | '"$containers"
gxrun apply -y "$work/ctr.yaml" --limit node-02 --until os-init --state "$state"
check "containerd from Debian installed and running" on node-02 active "systemctl is-active containerd"
pristine=$(sshn node-02 "sha256sum < /etc/containerd/config.toml")
gxrun apply -y "$work/ctrdcgm.yaml" --limit node-02 --until gpu-driver --state "$state"
check "toolkit and runtime, then a failing DCGM step: exit 3" grep -q "at step dcgm-package" <<<"$out"
check "  containerd's config.toml is back byte for byte, containerd still running" \
  test "$(sshn node-02 "sha256sum < /etc/containerd/config.toml; systemctl is-active containerd")" = "$pristine
active"
check "  the toolkit is gone again" on node-02 absent "command -v nvidia-ctk >/dev/null && echo present || echo absent"
gxrun apply -y "$work/ctr.yaml" --limit node-02 --until gpu-driver --state "$state"
check "container toolkit, containerd runtime and CDI: exit 0" test "$rc" -eq 0
check "  containerd's config names NVIDIA's runtime, and containerd restarted with it" sshn node-02 \
  "grep -q '^    BinaryName = \"/usr/bin/nvidia-container-runtime\"' /etc/containerd/config.toml && systemctl is-active -q containerd"
check "  the CDI spec lists the 8 GPUs by index and UUID, and all" on node-02 17 \
  "nvidia-ctk cdi list 2>/dev/null | grep -c '^nvidia.com/gpu='"
check "  it is the spec of the driver in use" sshn node-02 "grep -qF 'libcuda.so.550.90.07' /etc/cdi/nvidia.yaml"
out=$("$gx" apply -y "$work/ctr.yaml" --limit node-02 --until gpu-driver --state "$state" 2>&1)
check "  and then nothing is left to change" grep -q "0 changed, 1 unchanged" <<<"$out" || sed 's/^/    /' <<<"$out"

# ---------------------------------------------------------------- rollback --to
# node-01 converged; walk it back to the state right after os-init.
converged "$work/lab.yaml" node-01
gxrun rollback "$work/lab.yaml" --node node-01 --to os-init --state "$state"
check "rollback --to os-init exits 0" test "$rc" -eq 0
for phase in acceptance scheduler monitoring storage rdma gpu-driver; do
  check "rollback restored $phase" grep -q "node-01  $phase  restored" <<<"$out"
done
check "scheduler undone: node-01 gone from sinfo" bash -c '! "$1" ssh ctl -- sinfo -N -h -o %N | grep -qx node-01' _ "$lab"
check "scheduler undone: slurmd not installed" on node-01 absent \
  "dpkg-query -W -f='\${db:Status-Abbrev}' slurmd 2>/dev/null | grep -q '^ii' && echo present || echo absent"
check "acceptance undone: no record of it on the node" on node-01 gone \
  "test -e /var/lib/gpuexpand/accepted.json && echo there || echo gone"
check "os-init kept: hostname" on node-01 node-01 hostname
check "os-init kept: chrony running" on node-01 active "systemctl is-active chrony"
check "gpu-driver undone: no nvidia-driver package" on node-01 absent \
  "dpkg-query -W -f='\${db:Status-Abbrev}' nvidia-driver 2>/dev/null | grep -q '^ii' && echo present || echo absent"
check "rdma undone: MTU back to 1500" on node-01 1500 "cat /sys/class/net/eth1/mtu"
check "rdma undone: .network file gone" on node-01 gone "test -e /etc/systemd/network/60-gpuexpand-eth1.network && echo there || echo gone"
check "rdma undone: eth1 has no IPv4 address again" on node-01 none \
  "a=\$(ip -4 -o addr show dev eth1); echo \${a:-none}"
check "storage undone: not mounted, not in fstab" on node-01 "0 no" \
  "echo \$(grep -c /mnt/shared /etc/fstab) \$(mountpoint -q /mnt/shared && echo yes || echo no)"
check "monitoring undone: no node exporter" on node-01 absent \
  "dpkg-query -W -f='\${db:Status-Abbrev}' prometheus-node-exporter 2>/dev/null | grep -q '^ii' && echo present || echo absent"
plan=$("$gx" plan "$work/lab.yaml" --limit node-01 2>&1)
check "plan after the rollback: os-init has nothing to do" bash -c '! grep -q "^  os-init" <<<"$1"' _ "$plan"
check "plan after the rollback: gpu-driver wants the driver again" grep -q "+ package nvidia-driver" <<<"$plan"
out=$("$gx" apply -y "$work/lab.yaml" --limit node-01 --state "$state" 2>&1)
check "apply after the rollback converges again" grep -q "1 changed, 0 unchanged, 0 failed" <<<"$out" ||
  sed 's/^/    /' <<<"$out"

# ---------------------------------------------------------------- hostile values
# Values the schema lets through that a shell would read as syntax reach
# node-01 as written (tests/unit/hostile_values_test.cpp: which fields take
# what, the rest refused with file:line:col): a directory named exactly each
# value inside the mount, /etc/nccl.conf lines exactly KEY=VALUE, nothing run.
dirs=('$(touch${IFS}/tmp/gx-pwned-1)' 'a;touch${IFS}/tmp/gx-pwned-2' '`touch${IFS}/tmp/gx-pwned-3`' "q'uote\"d"
  '-rf' 'a|b&&c\\d' 'x>y<z*?[1]')
dirs_json=$(printf '%s\n' "${dirs[@]}" | jq -R . | jq -s -c .)
debug_value="INFO'; touch /tmp/gx-pwned-4; echo '"
ifname_value='$(touch /tmp/gx-pwned-5)`touch /tmp/gx-pwned-6`"\'
# A repository URI with what RFC 3986 allows and a shell reads as syntax
# (;, &, $IFS, $(…)): ctl serves the lab mirror at exactly that path too.
uri_path='gx;mkdir$IFS/tmp/gx-pwned-7;&x=$(id)'
uri="http://198.18.0.10/$uri_path/"
"$lab" ssh ctl -- "p=\$(echo $(printf '%s' "$uri_path" | base64 -w0) | base64 -d); mkdir -p \"/srv/www/\$(dirname \"\$p\")\" && ln -sfn /srv/gxlab-mirror \"/srv/www/\$p\"" </dev/null
spec_with "$work/hostile.yaml" --argjson dirs "$dirs_json" --arg debug "$debug_value" --arg ifname "$ifname_value" --arg uri "$uri" \
  '.defaults.storage[0].directories += $dirs | .defaults.network.nccl.env = {NCCL_DEBUG: $debug, NCCL_SOCKET_IFNAME: $ifname}
   | .defaults.os.repositories[0].uris = [$uri]'
check "hostile values: the spec validates (these fields take them)" "$gx" validate "$work/hostile.yaml"
gxrun apply -y "$work/hostile.yaml" --limit node-01 --until storage --state "$state"
check "hostile values: apply exits 0" test "$rc" -eq 0
for d in "${dirs[@]}"; do
  b=$(printf '%s' "$d" | base64 -w0)
  check "  a directory named exactly $d in the mount" sshn node-01 "test -d \"/mnt/shared/\$(echo $b | base64 -d)\""
done
nccl=$(sshn node-01 "base64 -w0 /etc/nccl.conf" | base64 -d)
check "  /etc/nccl.conf: NCCL_DEBUG exactly as written" grep -qFx "NCCL_DEBUG=$debug_value" <<<"$nccl"
check "  /etc/nccl.conf: NCCL_SOCKET_IFNAME exactly as written" grep -qFx "NCCL_SOCKET_IFNAME=$ifname_value" <<<"$nccl"
check "  the repository URI in the node's source exactly as written" on node-01 "URIs: $uri" \
  "grep '^URIs:' /etc/apt/sources.list.d/gpuexpand-gxlab.sources"
check "  and apt reads the repository there" sshn node-01 "apt-get update -q >/dev/null 2>&1 && apt-cache policy jq | grep -qF ' 600 http://198.18.0.10/$uri_path ./ Packages'"
check "  nothing in them ran on the node" on node-01 0 "ls -d /tmp/gx-pwned-* 2>/dev/null | wc -l"
check "  nor on the controller" on ctl 0 "ls -d /tmp/gx-pwned-* 2>/dev/null | wc -l"
check "  nor here" bash -c '! ls -d /tmp/gx-pwned-* 2>/dev/null'
out=$("$gx" apply -y "$work/hostile.yaml" --limit node-01 --until storage --state "$state" 2>&1)
check "  a second apply finds them in place (no change)" grep -q "0 changed, 1 unchanged" <<<"$out" || sed 's/^/    /' <<<"$out"
for d in "${dirs[@]}"; do # the share is ctl's, seen by every node: leave it as it was
  sshn node-01 "rm -rf -- \"/mnt/shared/\$(echo $(printf '%s' "$d" | base64 -w0) | base64 -d)\""
done

# ---------------------------------------------------------------- doctor
# Two nodes in service have no findings; then node-03 is broken by hand the
# way real nodes break (MTU reset, the share gone, slurmd stopped, a driver
# module that is not the installed one's) and node-04 is switched off:
# doctor names each with what to check next and exits 3.
gxrun doctor "$work/lab.yaml" --limit 'node-0[1,3]' --state "$state"
check "doctor: node-01 and node-03 in service, no findings (exit 0)" test "$rc" -eq 0
check "  it says so" grep -q "2 nodes: 2 without findings, 0 with; 0 errors" <<<"$out"
sshn node-03 "ip link set eth1 mtu 1500; umount -l /mnt/shared; systemctl stop slurmd; echo 535.161.08 >/run/nvidia-lab/loaded-version"
"$lab" stop node-04 >/dev/null 2>&1
gxrun doctor "$work/lab.yaml" --limit 'node-0[1,3-4]' --state "$state"
check "doctor: errors found (exit 3)" test "$rc" -eq 3
check "  node-03: the MTU set by hand" grep -q "ERROR network: MTU 1500 on eth1, wanted 9000" <<<"$out"
check "  node-03: the share unmounted" grep -q "ERROR storage: shared: /mnt/shared is not mounted" <<<"$out"
check "  node-03: slurmd stopped" grep -q "ERROR scheduler: slurmd is not running" <<<"$out"
check "  node-03: the loaded driver is not the installed one" grep -q "ERROR gpu: driver/library version mismatch" <<<"$out"
check "  node-04 switched off: unreachable, with what to check" grep -q "next: is the node up? ping 198.18.0.14;" <<<"$out"
# node-01 itself is as applied; its only finding may be the path to node-03
# (198.18.1.13 on eth1: node-NN is .10+NN), whose 1500 stops node-01's
# 9000-byte pings (doctor's path MTU check names the peer by its address).
check "  node-01: no finding but the path to node-03" bash -c \
  'awk "/^node-01/{f=1;next} /^node-/{f=0} f && /(ERROR|warn) /" <<<"$1" | grep -v "do not reach 198\.18\.1\.13 unfragmented" | { ! grep -q .; }' _ "$out"
"$lab" start node-04 >/dev/null 2>&1
sshn node-03 "echo 550.90.07 >/run/nvidia-lab/loaded-version; systemctl start slurmd"

# ---------------------------------------------------------------- live progress in a terminal
# apply in a real terminal (tmux) on node-03, which doctor left with its MTU
# and share to fix: the screen shows the live block (a bar per phase, the
# nodes' tally) while it runs, and after it the last frame, the summary and
# exit 0; no line per event. The playbooks of "signals mid-phase" (a 4 s
# step in storage) keep a phase running long enough to be seen for sure.
tmux kill-session -t gxprogress 2>/dev/null
tmux new-session -d -s gxprogress -x 180 -y 50 \
  "'$gx' --data-dir '$work' apply -y '$work/lab.yaml' --limit node-03 --state '$state' --color never; echo EXIT=\$?; sleep 120"
for i in $(seq 1 240); do
  tmux capture-pane -p -t gxprogress >"$work/pane.$i" 2>/dev/null
  grep -q '^EXIT=' "$work/pane.$i" && break
  sleep 0.5
done
final=$(cat "$work/pane.$i")
tmux kill-session -t gxprogress 2>/dev/null
check "terminal: a frame while it ran shows a phase with its bar and a running node" \
  bash -c 'grep -lE "^  (rdma|storage|scheduler|acceptance) +\[[#.]{20}\] [0-9]/1 done, .*, 1 running$" "$1"/pane.* | grep -q .' _ "$work"
check "  and the nodes' tally with the elapsed time" bash -c 'grep -lE "^  nodes: 0/1 finished: .* elapsed [0-9]+ s$" "$1"/pane.* | grep -q .' _ "$work"
check "  the last frame stays: node-03 finished, changed" grep -qE "^  nodes: 1/1 finished: 1 changed, 0 unchanged, 0 failed, 0 unreachable" <<<"$final"
check "  then the summary and exit 0" bash -c 'grep -q "^1 node: 1 changed, 0 unchanged, 0 failed" <<<"$1" && grep -q "^EXIT=0$" <<<"$1"' _ "$final"
check "  no line per event on a terminal" bash -c '! grep -qE "^node-03  [a-z-]+  changed" <<<"$1"' _ "$final"
# A failing phase on the terminal: the failure is printed above the live
# block as it happens, and the recap with the retry command ends the run.
tmux new-session -d -s gxprogress -x 200 -y 50 \
  "'$gx' apply -y '$work/broken.yaml' --limit node-03 --state '$state' --color never; echo EXIT=\$?; sleep 120"
for i in $(seq 1 240); do
  tmux capture-pane -p -J -t gxprogress >"$work/failpane" 2>/dev/null
  grep -q '^EXIT=' "$work/failpane" && break
  sleep 0.5
done
tmux kill-session -t gxprogress 2>/dev/null
check "terminal, a failing phase: the failure above the block, node, phase, step and why" \
  grep -qE "^node-03  os-init  FAILED, rolled back.* at step base-packages: .*no-such-package-gx" "$work/failpane"
check "  the recap: the failed node, the reason, the retry command, exit 3" bash -c \
  'grep -qE "^  failed +node-03$" "$1" && grep -q "^  node-03: phase os-init, step base-packages: " "$1" && grep -q -- "--limit @failed" "$1" && grep -q "^EXIT=3$" "$1"' _ "$work/failpane"
gxrun apply -y "$work/lab.yaml" --limit node-03 --state "$state"
# --progress plain on a terminal: the per-event lines a pipe gets, no live
# block redrawn in place (no cursor movement).
sshn node-03 "rm /etc/sysctl.d/90-gpuexpand.conf"  # drift that os-init mends
plain=$(script -qefc "$(printf '%q ' "$gx" apply -y "$work/lab.yaml" --limit node-03 --state "$state" --color never --progress plain)" /dev/null 2>&1)
check "terminal, --progress plain: one line per node and phase, as on a pipe" grep -qE "^node-03  os-init  changed" <<<"$plain"
check "  and no live block (no cursor movement)" bash -c '! grep -q "$(printf "\033\\[")" <<<"$1"' _ "$plain"

finish
