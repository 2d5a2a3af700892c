#!/usr/bin/env bash
# Slurm registration and acceptance against the lab's real slurmctld, on
# node-05 and node-06 (bare at the start): a node under acceptance takes no
# user job; bare -> idle with jobs; a second apply changes nothing; a
# feature change updates the node; a failed acceptance keeps the node out
# of service (drained, with the reason) until it passes; verify and the
# fault drill; rollback removes the node from sinfo. The munge key never
# reaches the state store.
#
# Needs a running lab with at least 6 nodes (tests/lab/lab up --nodes 6).
# GPUEXPAND_BIN: the gpuexpand binary (default: build/test/src/gpuexpand, as scripts/test builds it).
# Last line: "N passed, M failed"; exit 0 only if nothing failed.
set -uo pipefail

# shellcheck source=tests/lab/test-lib.sh
source "$(dirname "$(readlink -f "$0")")/test-lib.sh"
state=$work/state.db

ctl() { "$lab" ssh ctl -- "$1" </dev/null; } # ctl 'ONE COMMAND LINE' (ssh joins words: quote inside)
node_field() { # NODE FIELD -> the field of `scontrol show node NODE -o`, as the controller sees it
  if [[ $2 == Reason ]]; then # the last field, spaces and all
    ctl "scontrol show node $1 -o" | sed -n 's/.* Reason=//p'
  else
    ctl "scontrol show node $1 -o" | tr ' ' '\n' | sed -n "s/^$2=//p"
  fi
}
in_maintenance() { grep -q MAINTENANCE <<<"$(node_field "$1" State)"; }
job_state() { ctl "scontrol show job $1 -o 2>/dev/null" | tr ' ' '\n' | sed -n 's/^JobState=//p'; }
job_completed() { [[ $(job_state "$1") == COMPLETED ]]; }
user_job() { ctl "su alice -c 'sbatch --parsable -D /tmp -w $1 -N1 -t 1 --wrap hostname'"; } # NODE -> a user's job id

[[ -x "$gx" ]] || { echo "no gpuexpand binary at $gx"; bad "binary present"; finish; }
grep -q '^node-06 ' <<<"$("$lab" status 2>/dev/null)" || { bad "lab is up with 6 nodes (tests/lab/lab up --nodes 6)"; finish; }
"$lab" spec >"$work/lab.yaml"
nodes='node-[05-06]'

# A user of the cluster, known on the controller and both nodes.
for h in ctl node-05 node-06; do
  "$lab" ssh "$h" -- "id alice >/dev/null 2>&1 || useradd -m -u 2001 alice" </dev/null
done

# ---------------------------------------------------------------- held for acceptance
# At -vv with a debug log file: the secrets sent in this run (the munge key)
# must still reach none of what it writes (checked below).
"$gx" -vv --log-file "$work/debug.log" apply -y "$work/lab.yaml" --limit "$nodes" --until scheduler --state "$state" \
  >"$work/apply-vv.out" 2>&1
rc=$?
debug_line='^[0-9-]+T[0-9:.]+ debug ' # spdlog's pattern (src/cli/cli.cpp)
out=$(grep -vE "$debug_line" "$work/apply-vv.out")
echo "$out" | sed 's/^/    /'
check "apply -vv --until scheduler: exit 0" test "$rc" -eq 0
check "  its stderr has the debug lines of -vv" grep -qE "$debug_line" "$work/apply-vv.out"
check "the acceptance phase did not run" bash -c '! grep -q "  acceptance  " <<<"$1"' _ "$out"
check "node-05 registered with its features and GRES" test "$(node_field node-05 AvailableFeatures) $(node_field node-05 Gres)" = "h200,lab gpu:8"
check "node-05's gres.conf line on the controller, from its device files" \
  ctl "grep -qxF 'NodeName=node-05 Name=gpu File=/dev/nvidia[0-7]' /etc/slurm/gres.conf"
check "node-05 is in its maintenance reservation" eventually 10 in_maintenance node-05
check "node-05 is not drained (the hold stands in for the registration drain)" \
  bash -c '! grep -q DRAIN <<<"$1"' _ "$(node_field node-05 State)"
job=$(user_job node-05)
sleep 3
check "a user job asking for node-05 stays pending while it is under acceptance" test "$(job_state "$job")" = PENDING
reason=$(ctl "squeue -h -j $job -o %r")
check "  pending because the node is reserved ($reason)" grep -qi "ReqNodeNotAvail\|Reserv" <<<"$reason"
check "munge key on the node: mode 0400, owner munge, the spec's key" on node-05 \
  "400 munge $(sha256sum <"$client/munge.key" | cut -d' ' -f1)" \
  "echo \$(stat -c '%a %U' /etc/munge/munge.key) \$(sha256sum </etc/munge/munge.key | cut -d' ' -f1)"

# ---------------------------------------------------------------- acceptance releases
gxrun apply -y "$work/lab.yaml" --limit "$nodes" --state "$state"
check "apply: exit 0" test "$rc" -eq 0
check "acceptance passed on both nodes" test "$(grep -c 'acceptance  5 passed, 0 failed, 0 skipped' <<<"$out")" -eq 2
check "the multi-node job ran over both" grep -q "acceptance  pass multinode: one job ran on 2 nodes" <<<"$out"
check "the reservation is released" bash -c '! "$1" ssh ctl -- scontrol show reservation gpuexpand-accept-node-05 >/dev/null 2>&1' _ "$lab"
check "the user's pending job then runs" eventually 30 job_completed "$job"
check "sinfo: both idle with features and GRES" test "$(ctl "sinfo -N -h -n '$nodes' -o '%N %t %f %G'" | sort | tr '\n' ';')" \
  = "node-05 idle h200,lab gpu:8;node-06 idle h200,lab gpu:8;"
out=$("$gx" apply -y "$work/lab.yaml" --limit "$nodes" --state "$state" 2>&1)
check "second apply changes nothing" grep -q "2 nodes: 0 changed, 2 unchanged, 0 failed" <<<"$out"
# Secrets never leak: everything this test's runs wrote (output at -vv, the
# debug log, plan text and JSON, audit, status, the per-node run logs, the
# state store and its dump) holds no part of the munge key or of the SSH
# private key, raw, hex or base64 (tests/lab/secret-scan.py).
"$gx" -vv plan "$work/lab.yaml" --limit "$nodes" --state "$state" >"$work/plan-vv.txt" 2>&1
"$gx" -vv plan "$work/lab.yaml" --limit "$nodes" --state "$state" --output json >"$work/plan-vv.json" 2>&1
"$gx" -vv plan "$work/lab.yaml" --limit "$nodes" --state "$state" --diff >"$work/plan-diff.txt" 2>&1
"$gx" audit --state "$state" --output json >"$work/audit.json" 2>&1
"$gx" audit --state "$state" >"$work/audit.txt" 2>&1
"$gx" status --state "$state" --run 1 --output json >"$work/status-1.json" 2>&1
sqlite3 "$state" .dump >"$work/state.dump"
check "the audit shows what commands were fed by size and digest, as root" \
  grep -qE "  root +[0-9]+ +[0-9]+ +[0-9]+ B sha256:[0-9a-f]{12}  " "$work/audit.txt"
check "no part of the munge key in any output, log, plan, audit or the store" \
  python3 "$here/secret-scan.py" "$client/munge.key" "$work"
sed -n '2p' "$client/id_ed25519" >"$work/../ssh-key-line.$$" # a line of the private key's base64 body
check "no part of the SSH private key either" \
  python3 "$here/secret-scan.py" "$client/id_ed25519" "$work"
check "  (nor its body's text)" bash -c '! grep -rqF -f "$1" "$2"' _ "$work/../ssh-key-line.$$" "$work"
rm -f "$work/../ssh-key-line.$$"
check "every audited command names who ran it" bash -c '! grep -q "\"user\": \"\"" "$1"' _ "$work/audit.json"

# ---------------------------------------------------------------- feature change
spec_with "$work/features.yaml" '.defaults.scheduler.slurm.features += ["ndr"]'
gxrun apply -y "$work/features.yaml" --limit node-05 --state "$state"
check "feature change: exit 0" test "$rc" -eq 0
check "the controller has the new feature list" test "$(node_field node-05 AvailableFeatures)" = "h200,lab,ndr"
check "acceptance ran again for the new settings" grep -q "node-05  acceptance  5 passed" <<<"$out"
check "node-05 back in service" bash -c '[[ $1 == IDLE* && $1 != *DRAIN* && $1 != *MAINT* ]]' _ "$(node_field node-05 State)"

# ---------------------------------------------------------------- failed acceptance
spec_with "$work/slow.yaml" '.defaults.storage[0].min_throughput_mbps = 100000000'
gxrun apply -y "$work/slow.yaml" --limit node-06 --state "$state"
check "acceptance failure: exit 3" test "$rc" -eq 3
check "it names the failed check" grep -q "node-06: phase acceptance, step checks: acceptance failed: storage: /mnt/shared: " <<<"$out"
check "node-06 is drained" grep -q DRAIN <<<"$(node_field node-06 State)"
check "  with the failed check as the reason" grep -q "^gpuexpand acceptance: storage: /mnt/shared: .* below the minimum 100000000 MB/s" \
  <<<"$(node_field node-06 Reason)"
job=$(user_job node-06)
sleep 3
check "a user job asking for node-06 stays pending" test "$(job_state "$job")" = PENDING
ctl "scancel $job"
status=$("$gx" status --state "$state" 2>&1)
check "status shows the failed check" grep -q "FAIL storage: /mnt/shared: " <<<"$status"
gxrun doctor "$work/lab.yaml" --limit node-06 --state "$state"
check "doctor names the drain with Slurm's reason, from the controller" \
  grep -q "warn  scheduler: drained in Slurm (.*DRAIN.*): gpuexpand acceptance: storage: /mnt/shared: .* below the minimum" <<<"$out"
out=$("$gx" apply -y "$work/lab.yaml" --limit node-06 --state "$state" 2>&1)
check "with the spec's real minimum the next apply passes" grep -q "1 node: 1 changed, 0 unchanged, 0 failed" <<<"$out"
check "and node-06 is back in service" bash -c '[[ $1 == IDLE* && $1 != *DRAIN* ]]' _ "$(node_field node-06 State)"

# ---------------------------------------------------------------- verify + fault drill
gxrun verify "$work/lab.yaml" --limit "$nodes" --state "$state"
check "verify: exit 0" test "$rc" -eq 0
check "verify: a test job ran through Slurm on each node" test "$(grep -c 'pass  scheduler (.*a test job ran on node-0[56]' <<<"$out")" -eq 2
check "verify: the MTU end to end" grep -q "node-05  pass  network .*9000-byte packets reach 198.18.1.16 unfragmented" <<<"$out"
gxrun verify "$work/lab.yaml" --limit "$nodes" --state "$state" --fault-drill node-06 --drill-timeout 120
check "fault drill: exit 0" test "$rc" -eq 0
check "fault drill: the controller noticed" grep -q "fault drill node-06: the controller marked it .*NOT_RESPONDING after" <<<"$out"
check "fault drill: a job ran elsewhere meanwhile" grep -q "fault drill node-06: a job submitted meanwhile ran on node-0[1-5] " <<<"$out"
check "fault drill: node-06 back in service" grep -q "fault drill node-06: back to IDLE" <<<"$out"
check "after the drill node-06 is idle" bash -c '[[ $1 == IDLE* && $1 != *NOT_RESPONDING* ]]' _ "$(node_field node-06 State)"

# ---------------------------------------------------------------- rollback
gxrun rollback "$work/lab.yaml" --node node-06 --to monitoring --state "$state"
check "rollback --to monitoring: exit 0" test "$rc" -eq 0
check "node-06 is gone from sinfo" bash -c '! "$1" ssh ctl -- sinfo -N -h -o %N </dev/null | grep -qx node-06' _ "$lab"
check "slurmd is gone from node-06" on node-06 "inactive absent" \
  "echo \$(systemctl is-active slurmd 2>/dev/null || true) \$(dpkg-query -W -f='\${db:Status-Abbrev}' slurmd 2>/dev/null | grep -q '^ii' && echo present || echo absent)"
check "node-05 is unaffected" bash -c '[[ $1 == IDLE* ]]' _ "$(node_field node-05 State)"
check "node-06's gres.conf line is gone from the controller, node-05's stays" \
  test "$(ctl "grep -c '^NodeName=node-0[56] ' /etc/slurm/gres.conf; grep -c '^NodeName=node-05 ' /etc/slurm/gres.conf")" = "$(printf '1\n1')"

# ---------------------------------------------------------------- GPUs that do not match
# node-06 with 4 of its 8 GPUs (the stand-in driver's COUNT): the spec's
# gpu:8 no longer matches what is there; the phase fails before any
# gres.conf line or slurmd, and names both counts.
"$lab" ssh node-06 -- "sed -i 's/^COUNT=.*//' /etc/nvidia-lab.conf && echo COUNT=4 >> /etc/nvidia-lab.conf && rm -f /dev/nvidia[4-7]" </dev/null
gxrun apply -y "$work/lab.yaml" --limit node-06 --until scheduler --state "$state"
check "4 GPUs against gpu:8: exit 3" test "$rc" -eq 3
check "  the step names both counts" \
  grep -q "node-06 has 4 GPU device files (/dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3) but scheduler.slurm.gres counts 8 GPUs" <<<"$out"
check "  no line for node-06 on the controller" bash -c '! "$1" ssh ctl -- grep -q "^NodeName=node-06 " /etc/slurm/gres.conf </dev/null' _ "$lab"
check "  node-06 not in sinfo" bash -c '! "$1" ssh ctl -- sinfo -N -h -o %N </dev/null | grep -qx node-06' _ "$lab"
"$lab" ssh node-06 -- "sed -i 's/^COUNT=4$/COUNT=8/' /etc/nvidia-lab.conf && /usr/lib/nvidia-lab/nvidia-lab-load" </dev/null

# ---------------------------------------------------------------- static node
# node-06 again, now as a static node: its NodeName line is written into the
# controller's slurm.conf by a step delegated to the controller (over its
# own SSH session), slurmctld restarted, the node held from the start.
# A static line names the node's hardware (lab nodes: 2 CPUs, ~24 GB).
static='.defaults.scheduler.slurm += {mode: "static", cpus: 2, real_memory_mb: 1024}'
spec_with "$work/static.yaml" "$static"
line='NodeName=node-06 NodeAddr=198.18.0.16 CPUs=2 RealMemory=1024 Gres=gpu:8 Feature=h200,lab'
conf_before=$(ctl "sha256sum /etc/slurm/slurm.conf /etc/slurm/gres.conf")
gxrun apply -y "$work/static.yaml" --limit node-06 --until scheduler --state "$state"
check "static: apply --until scheduler: exit 0" test "$rc" -eq 0
check "static: the controller's slurm.conf has node-06's line" ctl "grep -qxF '$line' /etc/slurm/slurm.conf"
check "static: node-06 is registered, not as a dynamic node"   bash -c '[[ -n $1 && $1 != *DYNAMIC* ]]' _ "$(node_field node-06 State)"
check "static: node-06 is in its maintenance reservation" eventually 10 in_maintenance node-06
job=$(user_job node-06)
sleep 3
check "static: a user job asking for node-06 stays pending under acceptance" test "$(job_state "$job")" = PENDING
gxrun apply -y "$work/static.yaml" --limit node-06 --state "$state"
check "static: acceptance passes (exit 0)" test "$rc" -eq 0
check "static: the user's job then runs" eventually 30 job_completed "$job"
out=$("$gx" apply -y "$work/static.yaml" --limit node-06 --state "$state" 2>&1)
check "static: second apply changes nothing" grep -q "1 node: 0 changed, 1 unchanged, 0 failed" <<<"$out"
run_id=$(sqlite3 "$state" 'select max(id) from runs')
# On ctl: the preflight's `true`, then the delegated check.
check "static: ... with one probe on the node and, on the controller, the preflight and the delegated check" \
  test "$(sqlite3 "$state" "select group_concat(node, ' ') from (select node from audit where run_id=$run_id order by node)")" = "ctl ctl node-06"

# A failure later in the phase rolls the controller back too: new features
# are written there, then a step added for the test fails.
cp -r "$repo/schemas" "$repo/playbooks" "$work/"
cat >>"$work/playbooks/60-scheduler.yaml" <<'FAIL'

  - id: failing-step-for-tests
    type: command
    when: scheduler.kind == 'slurm' and scheduler.slurm.mode == 'static'
    check: "false"
    run: echo "failing on purpose" >&2; exit 1
    rollback: "true"
FAIL
spec_with "$work/static-ndr.yaml" "$static"' | .defaults.scheduler.slurm.features += ["ndr"]'
gxrun --data-dir "$work" apply -y "$work/static-ndr.yaml" --limit node-06 --state "$state"
check "static: a failing step after the controller's change: exit 3" test "$rc" -eq 3
check "  the phase was rolled back" grep -q "node-06  scheduler  FAILED, rolled back .*failing-step-for-tests" <<<"$out"
check "  the controller has node-06's old line again" ctl "grep -qxF '$line' /etc/slurm/slurm.conf"
check "  and the node its old features" test "$(node_field node-06 AvailableFeatures)" = "h200,lab"
in_service() { [[ $(node_field "$1" State) == IDLE* && $(node_field "$1" State) != *DRAIN* && $(node_field "$1" State) != *MAINT* ]]; }
check "  node-06 still in service (the rollback waited for it)" in_service node-06

gxrun rollback "$work/static.yaml" --node node-06 --to monitoring --state "$state"
check "static: rollback --to monitoring: exit 0" test "$rc" -eq 0
check "static: node-06 is gone from sinfo" bash -c '! "$1" ssh ctl -- sinfo -N -h -o %N </dev/null | grep -qx node-06' _ "$lab"
check "static: the controller's slurm.conf and gres.conf are as before, byte for byte" \
  test "$(ctl "sha256sum /etc/slurm/slurm.conf /etc/slurm/gres.conf")" = "$conf_before"

# ---------------------------------------------------------------- configless: false
# node-06 as a dynamic node that keeps a copy of the controller's slurm.conf
# (read there when it differs), has its own gres.conf from its device
# files, and runs slurmd without --conf-server.
spec_with "$work/local-conf.yaml" '.defaults.scheduler.slurm.configless = false'
sums() { echo $("$@" "sha256sum /etc/slurm/slurm.conf" | cut -d' ' -f1); }
on_node06() { "$lab" ssh node-06 -- "$1" </dev/null; }
gxrun apply -y "$work/local-conf.yaml" --limit node-06 --state "$state"
check "configless false: apply exit 0" test "$rc" -eq 0
check "  node-06 has the controller's slurm.conf" test "$(sums on_node06)" = "$(sums ctl)"
check "  and its own gres.conf line from its device files" \
  test "$(on_node06 'grep -v "^#" /etc/slurm/gres.conf')" = 'NodeName=node-06 Name=gpu File=/dev/nvidia[0-7]'
check "  and no line on the controller" bash -c '! "$1" ssh ctl -- grep -q "^NodeName=node-06 " /etc/slurm/gres.conf </dev/null' _ "$lab"
check "  slurmd runs without --conf-server" \
  bash -c '[[ -n $1 && $1 != *--conf-server* ]]' _ "$(on_node06 'tr "\0" " " </proc/$(systemctl show -p MainPID --value slurmd)/cmdline')"
check "  node-06 idle in Slurm" test "$(ctl "sinfo -N -h -n node-06 -o %t")" = idle
out=$("$gx" apply -y "$work/local-conf.yaml" --limit node-06 --state "$state" 2>&1)
check "  second apply changes nothing" grep -q "1 node: 0 changed, 1 unchanged, 0 failed" <<<"$out"
ctl "cp -p /etc/slurm/slurm.conf /root/slurm.conf.gx-test && echo '# changed on the controller' >> /etc/slurm/slurm.conf"
plan=$("$gx" plan "$work/local-conf.yaml" --limit node-06 2>&1)
check "  the controller's slurm.conf changed: the plan says so" \
  grep -q "/etc/slurm/slurm.conf: content differs from /etc/slurm/slurm.conf on the controller" <<<"$plan"
out=$("$gx" apply -y "$work/local-conf.yaml" --limit node-06 --state "$state" 2>&1)
check "  and apply copies it again" test "$(sums on_node06)" = "$(sums ctl)"
ctl "cp -p /root/slurm.conf.gx-test /etc/slurm/slurm.conf && rm -f /root/slurm.conf.gx-test"
out=$("$gx" rollback "$work/local-conf.yaml" --node node-06 --to monitoring --state "$state" 2>&1)
rc=$?
check "  rollback --to monitoring: exit 0" test "$rc" -eq 0
check "  the copies are gone from node-06" on node-06 gone "test -e /etc/slurm/slurm.conf && echo there || echo gone"
check "  node-06 is gone from sinfo" bash -c '! "$1" ssh ctl -- sinfo -N -h -o %N </dev/null | grep -qx node-06' _ "$lab"


# ---------------------------------------------------------------- an allocation Slurm lost track of
# Slurm 22.05 loses track of a job that ends across a reconfigure on a
# dynamic node (docs/troubleshooting.md; why the scheduler playbook waits
# for gpuexpand's own jobs before one): node-05 stays ALLOCATED with no CPU
# held. doctor names it; a slurmctld restart with no job running clears it.
slurm_state() { ctl "scontrol show node node-05 -o" | grep -oE '(CPUAlloc|State)=[^ ]+' | xargs; }
for try in 1 2 3; do
  ctl "srun -Q -N 1 -w node-05 -t 2 hostname >/dev/null 2>&1 & sleep 0.0$((try * 2)); scontrol reconfigure; wait"
  sleep 2
  [[ $(slurm_state) == "CPUAlloc=0 State=ALLOCATED+DYNAMIC_NORM" ]] && break
done
if [[ $(slurm_state) != "CPUAlloc=0 State=ALLOCATED+DYNAMIC_NORM" ]]; then
  echo "skip - a lost allocation: three reconfigures 20-60 ms into a job left node-05 $(slurm_state), not ALLOCATED with no CPU (this Slurm may keep track)"
else
  check "a reconfigure 20 ms into a job: node-05 ALLOCATED, no CPU held, no job" test -z "$(ctl "squeue -h -w node-05")"
  gxrun doctor "$work/lab.yaml" --limit node-05 --state "$state"
  check "  doctor: a warning, not an error (exit 0)" test "$rc" -eq 0
  check "  doctor names it, from the controller's own words" \
    grep -q "^  warn  scheduler: Slurm has the node ALLOCATED+DYNAMIC_NORM with no CPU allocated: a job's end it lost track of$" <<<"$out"
  ctl "systemctl restart slurmctld"
  idle() { [[ $(slurm_state) == "CPUAlloc=0 State=IDLE+DYNAMIC_NORM" ]]; }
  check "  slurmctld restarted with no job running: node-05 idle again" eventually 60 idle
  gxrun doctor "$work/lab.yaml" --limit node-05 --state "$state"
  check "  and doctor has nothing to say about it" bash -c '! grep -q "lost track" <<<"$1"' _ "$out"
fi

# ---------------------------------------------------------------- the playbook's own check
# An operator's acceptance check, declared in 70-acceptance.yaml with a
# command and no C++: here the only check, so it works on node-05 in any
# state; verify runs it on the node and reports its exit and last line.
mkdir -p "$work/data"
cp -r "$repo/schemas" "$repo/playbooks" "$work/data/"
cat >"$work/data/playbooks/70-acceptance.yaml" <<'EOF'
phase: acceptance
order: 7
steps:
  - id: checks
    type: acceptance
    checks:
      - name: marker
        command: test -e /run/gx-marker-{{ node.name }} && echo marker of {{ node.name }} present
        timeout: 10
EOF
gxrun --data-dir "$work/data" verify "$work/lab.yaml" --limit node-05 --state "$work/own-check.db"
check "own check without its marker: verify exit 3" test "$rc" -eq 3
check "  the check failed with its exit status" grep -q "^node-05  FAIL  marker (.*): exit 1$" <<<"$out"
"$lab" ssh node-05 -- touch /run/gx-marker-node-05 </dev/null
gxrun --data-dir "$work/data" verify "$work/lab.yaml" --limit node-05 --state "$work/own-check.db"
check "with the marker: verify exit 0" test "$rc" -eq 0
check "  its last output line is the detail" grep -q "^node-05  pass  marker (.*): marker of node-05 present$" <<<"$out"
"$lab" ssh node-05 -- rm -f /run/gx-marker-node-05 </dev/null

finish
