#!/usr/bin/env bash
# The fault matrix against the lab's real nodes (node-05, node-06): each
# row makes one thing go wrong during an apply and checks what the operator
# sees (exit code, message), what the node ends as (completed, or rolled
# back to its checkpoint: checked on the node), that the store stays
# consistent, that the other node of the run is unaffected, and that the
# next apply converges. docs/reliability.md lists the rows and outcomes.
#
# Needs a running lab with at least 6 nodes (tests/lab/lab up --nodes 6).
# GPUEXPAND_BIN: the gpuexpand binary (default: build/test/src/gpuexpand, as scripts/test builds it).
# Last line: "N passed, M failed"; exit 0 only if nothing failed.
set -uo pipefail

# shellcheck source=tests/lab/test-lib.sh
source "$(dirname "$(readlink -f "$0")")/test-lib.sh"
state=$work/state.db
store_mnt=$work/store
# Whatever a row breaks is mended on the way out, failed or not.
mend() {
  "$lab" heal node-06 >/dev/null 2>&1
  "$lab" fast node-06 >/dev/null 2>&1
  "$lab" unfill node-06 >/dev/null 2>&1
  "$lab" start node-06 >/dev/null 2>&1
  "$lab" start ctl >/dev/null 2>&1
  ctl "systemctl start slurmctld" >/dev/null 2>&1
  mountpoint -q "$store_mnt" && umount "$store_mnt"
  rm -rf "$work"
}
trap mend EXIT

[[ -x "$gx" ]] || { echo "no gpuexpand binary at $gx"; bad "binary present"; finish; }
grep -q '^node-06 ' <<<"$("$lab" status 2>/dev/null)" || { bad "lab is up with 6 nodes (tests/lab/lab up --nodes 6)"; finish; }
"$lab" spec >"$work/lab.yaml"
nodes='node-[05-06]'

# Playbooks with one step added to the storage phase whose length each row
# sets on the node (/etc/gx-slow, seconds), so a fault lands mid-step: the
# step marks its start, the test waits for the mark, then breaks something.
cp -r "$repo/schemas" "$repo/playbooks" "$work/"
cat >>"$work/playbooks/40-storage.yaml" <<'SLOW'

  - id: slow-step-for-tests
    type: command
    check: test -e /var/lib/gpuexpand-test/slow-done
    run: "mkdir -p /var/lib/gpuexpand-test && touch /var/lib/gpuexpand-test/slow-started && sleep \"$(cat /etc/gx-slow 2>/dev/null || echo 0)\" && touch /var/lib/gpuexpand-test/slow-done"
    rollback: "rm -f /var/lib/gpuexpand-test/slow-done /var/lib/gpuexpand-test/slow-started"
SLOW
# Short connect timeout and keepalives, so an unreachable node and a cut
# link show within seconds (the defaults are 10 s and 15 s).
spec_with "$work/fault.yaml" '.ssh.connect_timeout = 5 | .ssh.keepalive_interval = 2'

work_for() { # NODE [SECONDS] — give NODE's storage phase the slow step to do, taking SECONDS
  sshn "$1" "rm -rf /var/lib/gpuexpand-test && echo ${2:-0} >/etc/gx-slow"
}
step_done() { on "$1" done "test -e /var/lib/gpuexpand-test/slow-done && echo done || echo absent"; }
step_undone() { on "$1" absent "test -e /var/lib/gpuexpand-test/slow-started && echo started || echo absent"; }
slow_started() { sshn "$1" "test -e /var/lib/gpuexpand-test/slow-started"; }
step_undone_but_started() { on "$1" "started absent" "for f in slow-started slow-done; do test -e /var/lib/gpuexpand-test/\$f && echo started || echo absent; done | xargs"; }
ctl() { "$lab" ssh ctl -- "$1" </dev/null; } # ctl 'ONE COMMAND LINE'
store_ok() { test "$(sqlite3 "$1" 'pragma integrity_check')" = ok; }
fault_apply() { # SPEC ARGS… — apply with the slow step's playbooks, up to the storage phase
  local spec=$1
  shift
  gxrun --data-dir "$work" apply -y "$spec" --until storage --state "$state" "$@"
}
in_background() { # LOG SPEC ARGS… — the same apply, in the background; sets $victim
  local log=$1 spec=$2
  shift 2
  "$gx" --data-dir "$work" apply -y "$spec" --until storage --state "$state" "$@" >"$log" 2>&1 &
  victim=$!
}

# ---------------------------------------------------------------- node down before the run
row_node_down() {
  work_for node-05
  work_for node-06
  "$lab" stop node-06 >/dev/null
  fault_apply "$work/fault.yaml" --limit "$nodes"
  check "node down: exit 3" test "$rc" -eq 3
  check "  node-06 named unreachable, with why" grep -q "node-06  UNREACHABLE: node-06 (198.18.0.16): " <<<"$out"
  check "  node-05 completed" step_done node-05
  check "  store consistent" store_ok "$state"
  "$lab" start node-06 >/dev/null
  fault_apply "$work/fault.yaml" --limit "$nodes"
  check "  once it is back, the next apply converges (exit 0)" test "$rc" -eq 0
  check "  node-06 completed" step_done node-06
}

# ---------------------------------------------------------------- link slowed
row_link_slowed() {
  work_for node-05
  work_for node-06
  "$lab" slow node-06 80ms >/dev/null
  fault_apply "$work/fault.yaml" --limit "$nodes"
  "$lab" fast node-06 >/dev/null
  check "link slowed: exit 0" test "$rc" -eq 0
  check "  node-06 completed" step_done node-06
  check "  node-05 completed" step_done node-05
  check "  store consistent" store_ok "$state"
}

# ---------------------------------------------------------------- sshd restarted mid-run
row_sshd_restart() {
  work_for node-05 2
  work_for node-06 4
  sshd_pid() { sshn node-06 "systemctl show -p MainPID --value ssh"; }
  before=$(sshd_pid)
  in_background "$work/sshd.log" "$work/fault.yaml" --limit "$nodes"
  check "sshd restart: the slow step started" eventually 60 slow_started node-06
  sshn node-06 "systemctl restart ssh"
  wait "$victim"
  rc=$?
  sed 's/^/    /' "$work/sshd.log"
  check "sshd restarted mid-step: exit 0 (the session outlives the listener)" test "$rc" -eq 0
  check "  sshd was restarted" test "$(sshd_pid)" != "$before"
  check "  node-06 completed" step_done node-06
  check "  node-05 completed (its sshd untouched)" step_done node-05
  check "  store consistent" store_ok "$state"
}

# ---------------------------------------------------------------- management link cut mid-command
row_link_cut() {
  work_for node-05 2
  work_for node-06 20
  in_background "$work/cut.log" "$work/fault.yaml" --limit "$nodes"
  check "link cut: the slow step started" eventually 60 slow_started node-06
  "$lab" cut node-06 >/dev/null
  wait "$victim"
  rc=$?
  sed 's/^/    /' "$work/cut.log"
  "$lab" heal node-06 >/dev/null
  check "link cut mid-command: exit 3" test "$rc" -eq 3
  check "  node-06: the lost connection is named, and that its rollback could not run" \
    grep -q "node-06: phase storage, step slow-step-for-tests: .*connection lost.*ROLLBACK FAILED" "$work/cut.log"
  check "  node-05 completed" step_done node-05
  check "  store consistent" store_ok "$state"
  sshn node-06 "echo 0 >/etc/gx-slow"
  fault_apply "$work/fault.yaml" --limit "$nodes"
  check "  healed, the next apply converges (exit 0)" test "$rc" -eq 0
  check "  node-06 completed" step_done node-06
}

# ---------------------------------------------------------------- node stops mid-phase
# node-06 powered off while its slow step runs: the run names the lost
# node and goes on with node-05; booted again, node-06 has the step's start
# but not its end (the phase never finished), and the next apply
# checkpoints the phase again and completes it.
row_node_stops() {
  work_for node-05 2
  work_for node-06 30
  in_background "$work/stops.log" "$work/fault.yaml" --limit "$nodes"
  check "node stops: the slow step started" eventually 60 slow_started node-06
  "$lab" stop node-06 >/dev/null
  wait "$victim"
  rc=$?
  sed 's/^/    /' "$work/stops.log"
  check "node stopped mid-phase: exit 3" test "$rc" -eq 3
  check "  node-06: the phase and step it stopped in are named, with the lost connection" \
    grep -qE "node-06: phase storage, step slow-step-for-tests: .*(connection lost|connection closed|reset)" "$work/stops.log"
  check "  node-05 completed" step_done node-05
  check "  store consistent" store_ok "$state"
  check "  the store has node-06 failed in storage" \
    test "$(sqlite3 "$state" "select status from phase_results where node = 'node-06' and phase = 'storage' order by rowid desc limit 1")" = failed
  "$lab" start node-06 >/dev/null
  check "  booted again, node-06 has the step's start but not its end" step_undone_but_started node-06
  sshn node-06 "echo 0 >/etc/gx-slow"
  fault_apply "$work/fault.yaml" --limit "$nodes"
  check "  the next apply converges (exit 0)" test "$rc" -eq 0
  check "  node-06 completed" step_done node-06
}

# ---------------------------------------------------------------- the link cut while a file's content is sent
# A 512 KiB file over node-06's slowed link (a 32 KB/s queue: 16 s): the
# link is cut while the node writes the temp file. The file is the old one
# (never half a file), the run names the lost connection; the node's
# `cat` waits for the rest until the command's limit (30 s here), and then
# the temp file goes with it; healed, the next apply writes it whole.
row_write_cut() {
  local big=$work/big target=/var/lib/gpuexpand-test/big.conf
  rm -rf "$big" && mkdir -p "$big" && cp -r "$work/schemas" "$work/playbooks" "$big/"
  {
    printf '\n  - id: big-file-for-tests\n    type: file\n    path: %s\n    mode: "0644"\n    content: |\n' "$target"
    for i in $(seq 1 8192); do printf '      line %05d of a big configuration file, 64 bytes each..........\n' "$i"; done
  } >>"$big/playbooks/40-storage.yaml"
  spec_with "$work/write-cut.yaml" '.ssh.connect_timeout = 5 | .ssh.keepalive_interval = 2 | .ssh.command_timeout = 30'
  local n
  for n in node-05 node-06; do
    work_for "$n"
    sshn "$n" "mkdir -p /var/lib/gpuexpand-test && printf 'before\n' >$target"
  done
  "$lab" slow node-06 80ms >/dev/null
  "$gx" --data-dir "$big" apply -y "$work/write-cut.yaml" --until storage --limit "$nodes" --state "$state" >"$work/write-cut.log" 2>&1 &
  victim=$!
  partial() { [[ $(sshn node-06 "cat /var/lib/gpuexpand-test/.gpuexpand.* 2>/dev/null | wc -c") -gt 0 ]]; }
  check "write cut: the temp file is being written" eventually 60 partial
  "$lab" cut node-06 >/dev/null
  wait "$victim"
  rc=$?
  sed 's/^/    /' "$work/write-cut.log" | grep -v '^      line '
  "$lab" heal node-06 >/dev/null
  "$lab" fast node-06 >/dev/null
  check "link cut mid-content: exit 3" test "$rc" -eq 3
  check "  the lost connection is named" grep -q "node-06: phase storage, step big-file-for-tests: .*connection lost" "$work/write-cut.log"
  check "  the file is the old one, whole" on node-06 before "cat $target"
  check "  node-05 (its link untouched) has the new one, whole" on node-05 "8192 $((8192 * 64))" "echo \$(wc -l <$target) \$(wc -c <$target)"
  no_temp() { [[ -z $(sshn node-06 "ls -A /var/lib/gpuexpand-test | grep '^[.]gpuexpand[.]'") ]]; }
  check "  at the command's limit the waiting write stops and its temp file goes" eventually 60 no_temp
  check "  store consistent" store_ok "$state"
  gxrun --data-dir "$big" apply -y "$work/write-cut.yaml" --until storage --limit node-06 --state "$state"
  check "  healed, the next apply converges (exit 0)" test "$rc" -eq 0
  check "  and writes the file whole" on node-06 "8192 $((8192 * 64))" "echo \$(wc -l <$target) \$(wc -c <$target)"
  sshn node-05 "rm -f $target"
  sshn node-06 "rm -f $target"
}

# ---------------------------------------------------------------- a step that hangs past its time limit
row_hung_step() {
  spec_with "$work/limit.yaml" '.ssh.connect_timeout = 5 | .ssh.command_timeout = 5'
  work_for node-05
  work_for node-06 61
  fault_apply "$work/limit.yaml" --limit "$nodes"
  check "hung step: exit 3" test "$rc" -eq 3
  check "  named as timed out, stopped on the node, rolled back" \
    grep -qE "node-06: phase storage, step slow-step-for-tests: .*timed out after [5-9] s \\(stopped on the node\\) \\(rolled back to the checkpoint\\)" <<<"$out"
  check "  nothing of it still runs on node-06" on node-06 0 "ps -eo args | grep -cx 'sleep 61'"
  check "  node-06 is back at its checkpoint" step_undone node-06
  check "  node-05 completed" step_done node-05
  check "  store consistent" store_ok "$state"
  sshn node-06 "echo 0 >/etc/gx-slow"
  fault_apply "$work/fault.yaml" --limit "$nodes"
  check "  the next apply converges (exit 0)" test "$rc" -eq 0
}

# ---------------------------------------------------------------- SIGTERM mid-step
# As a service manager stops it (apply-test.sh has SIGINT and SIGKILL):
# the running step finishes, its phase is rolled back, the run is recorded
# as interrupted.
row_sigterm() {
  work_for node-06 4
  in_background "$work/term.log" "$work/fault.yaml" --limit node-06
  check "SIGTERM: the slow step started" eventually 60 slow_started node-06
  kill -TERM "$victim"
  wait "$victim"
  rc=$?
  sed 's/^/    /' "$work/term.log"
  check "SIGTERM mid-step: exit 130" test "$rc" -eq 130
  check "  the phase was rolled back" grep -q "node-06  storage  FAILED, rolled back .*: interrupted" "$work/term.log"
  check "  node-06 is back at its checkpoint" step_undone node-06
  check "  the run is recorded as interrupted" \
    test "$(sqlite3 "$state" "select status || ' ' || exit_code from runs order by id desc limit 1")" = "interrupted 130"
  check "  store consistent" store_ok "$state"
  sshn node-06 "echo 0 >/etc/gx-slow"
  fault_apply "$work/fault.yaml" --limit node-06
  check "  the next apply converges (exit 0)" test "$rc" -eq 0
  check "  node-06 completed" step_done node-06
}

# ---------------------------------------------------------------- node disk full during a phase
row_disk_full() {
  local level=WARN-$$-$RANDOM # a value the node has not had yet
  spec_with "$work/nccl.yaml" --arg level "$level" '.ssh.connect_timeout = 5 | .defaults.network.nccl.env = {NCCL_DEBUG: $level}'
  before=$(sshn node-06 "sha256sum /etc/nccl.conf 2>&1")
  "$lab" fill node-06 >/dev/null
  gxrun apply -y "$work/nccl.yaml" --limit "$nodes" --until rdma --state "$state"
  "$lab" unfill node-06 >/dev/null
  check "disk full: exit 3" test "$rc" -eq 3
  check "  the message says the disk is full" grep -q "node-06: phase rdma: .*no space left on device" <<<"$out"
  check "  /etc/nccl.conf as it was" on node-06 "$before" "sha256sum /etc/nccl.conf 2>&1"
  check "  node-05 (its disk has room) has the new setting" on node-05 "NCCL_DEBUG=$level" "grep NCCL_DEBUG /etc/nccl.conf"
  check "  store consistent" store_ok "$state"
  gxrun apply -y "$work/nccl.yaml" --limit node-06 --until rdma --state "$state"
  check "  with room again, the next apply converges (exit 0)" test "$rc" -eq 0
  check "  /etc/nccl.conf has the new setting" on node-06 "NCCL_DEBUG=$level" "grep NCCL_DEBUG /etc/nccl.conf"
}

# ---------------------------------------------------------------- Slurm controller down during registration
# slurmctld stopped before the run, started again 12 s into it: the
# registration step waits for the controller (up to 60 s) and completes.
row_slurmctld_down() {
  spec_with "$work/features.yaml" '.ssh.connect_timeout = 5 | .defaults.scheduler.slurm.features += ["fault"]'
  ctl "systemctl stop slurmctld"
  "$gx" apply -y "$work/features.yaml" --limit node-06 --until scheduler --state "$state" >"$work/ctld.log" 2>&1 &
  victim=$!
  sleep 12
  ctl "systemctl start slurmctld"
  wait "$victim"
  rc=$?
  sed 's/^/    /' "$work/ctld.log"
  check "slurmctld down, back within the minute: exit 0" test "$rc" -eq 0
  check "  the run waited for it (12 s or more), then completed" \
    grep -qE "^1 node: 1 changed, .* \((1[2-9]|[2-9][0-9])\.[0-9] s\)" "$work/ctld.log"
  check "  the controller has the new feature" grep -q 'AvailableFeatures=[^ ]*fault' <<<"$(ctl "scontrol show node node-06 -o")"
  check "  store consistent" store_ok "$state"
}

# ---------------------------------------------------------------- the state store read-only, then full
# The store on a small tmpfs of its own: remounted read-only before a run,
# then filled during one.
row_store_faults() {
  mkdir -p "$store_mnt"
  mount -t tmpfs -o size=4m gx-fault-store "$store_mnt"
  local db=$store_mnt/state.db
  cp "$state" "$db"
  mount -o remount,ro "$store_mnt"
  work_for node-05
  gxrun --data-dir "$work" apply -y "$work/fault.yaml" --until storage --limit node-05 --state "$db"
  check "store read-only: exit 1" test "$rc" -eq 1
  check "  the message names the store and why" grep -q "$db.*read-only" <<<"$out"
  check "  nothing ran on node-05" step_undone node-05
  mount -o remount,rw "$store_mnt"
  check "  store consistent" store_ok "$db"

  work_for node-05 4
  "$gx" --data-dir "$work" apply -y "$work/fault.yaml" --until storage --limit node-05 --state "$db" >"$work/full.log" 2>&1 &
  victim=$!
  check "store full: the slow step started" eventually 60 slow_started node-05
  dd if=/dev/zero of="$store_mnt/fill" bs=64k 2>/dev/null
  wait "$victim"
  rc=$?
  sed 's/^/    /' "$work/full.log"
  check "store full mid-run: exit 1" test "$rc" -eq 1
  check "  the message says the store's disk is full" grep -q "error: state store $db: .*database or disk is full" "$work/full.log"
  check "  and that the run is not fully recorded" grep -q "is not fully recorded in the state store" "$work/full.log"
  check "  node-05 completed (the node does not depend on the record)" step_done node-05
  rm -f "$store_mnt/fill"
  check "  store consistent" store_ok "$db"
  gxrun --data-dir "$work" apply -y "$work/fault.yaml" --until storage --limit node-05 --state "$db"
  check "  with room again, the next apply takes the run over and converges (exit 0)" test "$rc" -eq 0
  check "  it says it takes the run over" grep -q "was interrupted and its process is gone: taking over its nodes" <<<"$out"
  umount "$store_mnt"
}

# ---------------------------------------------------------------- a damaged store, and a store from a newer gpuexpand
# Copies of the row's store: one with a page overwritten (its header
# intact, so SQLite opens it), one whose schema version is from the
# future. Each refused before any node is touched, and left as it was.
# apply with store DB on node-05: refused (exit 1) with a message matching
# PATTERN, nothing run on the node, the file byte for byte as it was.
refused_before_any_node() { # DB LABEL PATTERN
  local db=$1 label=$2 pattern=$3 before
  before=$(sha256sum <"$db")
  work_for node-05
  gxrun --data-dir "$work" apply -y "$work/fault.yaml" --until storage --limit node-05 --state "$db"
  check "$label: exit 1" test "$rc" -eq 1
  check "  the message: $pattern" grep -q "$pattern" <<<"$out"
  check "  nothing ran on node-05" step_undone node-05
  check "  the file is as it was (nothing written)" test "$(sha256sum <"$db")" = "$before"
}
row_store_damaged_or_newer() {
  local damaged=$work/damaged.db newer=$work/newer.db page
  cp "$state" "$damaged"
  page=$(sqlite3 "$damaged" 'pragma page_size')
  check "the store has pages past the first to damage" test "$(sqlite3 "$damaged" 'pragma page_count')" -ge 3
  head -c "$page" /dev/zero | tr '\0' 'w' | dd of="$damaged" bs="$page" seek=1 conv=notrunc status=none
  refused_before_any_node "$damaged" "damaged store" \
    "error: state store $damaged: it is damaged: SQLite's quick_check says .*Restore it from a backup, or move it aside"

  cp "$state" "$newer"
  sqlite3 "$newer" 'pragma user_version = 99'
  refused_before_any_node "$newer" "store from a newer gpuexpand" \
    "error: state store $newer: schema version 99 is newer than this gpuexpand understands ([0-9]*); upgrade gpuexpand"
  gxrun --data-dir "$work" status "$work/fault.yaml" --state "$newer"
  check "  status refuses it the same way (exit 1)" test "$rc" -eq 1
  check "  the row's own store is untouched by either (consistent)" store_ok "$state"
}

# ---------------------------------------------------------------- the storage server gone during the storage phase
# The share's server (ctl, also the Slurm controller and the package
# mirror) powered off while node-06 must mount the share again.
row_storage_server_gone() {
  sshn node-06 "umount /mnt/shared"
  "$lab" stop ctl >/dev/null
  gxrun apply -y "$work/fault.yaml" --limit node-06 --state "$state"
  check "controller down, a whole apply: refused before any node is touched (exit 1)" test "$rc" -eq 1
  check "  it names the controller" \
    grep -q "the Slurm controller ctl (198.18.0.10) cannot be reached (node-06 would register with it): " <<<"$out"
  gxrun apply -y "$work/fault.yaml" --limit node-06 --until storage --state "$state"
  "$lab" start ctl >/dev/null
  check "storage server gone, --until storage (no controller needed): exit 3" test "$rc" -eq 3
  check "  the mount is named as what failed, and the phase rolled back" \
    grep -q "node-06  storage  FAILED, rolled back .* at step .*mount" <<<"$out"
  check "  nothing is mounted at /mnt/shared" on node-06 no "mountpoint -q /mnt/shared && echo yes || echo no"
  check "  store consistent" store_ok "$state"
  gxrun apply -y "$work/fault.yaml" --limit node-06 --until storage --state "$state"
  check "  server back, the next apply converges (exit 0)" test "$rc" -eq 0
  check "  the share is mounted again" on node-06 yes "mountpoint -q /mnt/shared && echo yes || echo no"
}

# ---------------------------------------------------------------- the storage server gone mid-phase
# The share mounted by this very phase, then its server (ctl) gone while a
# later step of the phase writes on it, two ways: powered off (its sshd
# closes the connection: the write fails at once with EIO) and its link
# cut (nothing answers: the write hangs until the step's time limit, and
# the rollback must take back a mount where a stat would hang).
server_gone_mid_phase() { # stop|cut
  local how=$1 mid=$work/mid-phase
  if [[ ! -d $mid ]]; then
    mkdir -p "$mid" && cp -r "$repo/schemas" "$repo/playbooks" "$mid/"
    cat >>"$mid/playbooks/40-storage.yaml" <<'MID'

  - id: share-write-for-tests
    type: command
    check: test -e /var/lib/gpuexpand-test/share-written
    run: "mkdir -p /var/lib/gpuexpand-test && touch /var/lib/gpuexpand-test/slow-started && sleep 2 && echo written > /mnt/shared/.gx-mid-phase && touch /var/lib/gpuexpand-test/share-written"
    rollback: "rm -f /var/lib/gpuexpand-test/share-written /var/lib/gpuexpand-test/slow-started"
MID
    spec_with "$work/mid.yaml" '.ssh.connect_timeout = 5 | .ssh.keepalive_interval = 2 | .ssh.command_timeout = 15'
  fi
  sshn node-06 "umount /mnt/shared; rm -rf /var/lib/gpuexpand-test /mnt/shared/.gx-mid-phase; cp -p /etc/fstab /root/fstab.before-mid-phase"
  "$gx" --data-dir "$mid" apply -y "$work/mid.yaml" --until storage --limit node-06 --state "$state" >"$work/mid.log" 2>&1 &
  victim=$!
  check "storage server gone mid-phase ($how): the share mounted, the step writing on it started" \
    eventually 60 slow_started node-06
  if [[ $how == stop ]]; then "$lab" stop ctl >/dev/null; else "$lab" cut ctl >/dev/null; fi
  local started=$SECONDS
  wait "$victim"
  rc=$?
  local took=$((SECONDS - started))
  sed 's/^/    /' "$work/mid.log"
  check "  exit 3, within the step's limit and the rollback's ($took s)" test "$rc" -eq 3 -a "$took" -lt 90
  if [[ $how == stop ]]; then
    check "  the write's error named, the phase rolled back" grep -qE "node-06: phase storage, step share-write-for-tests: .*Input/output error \(rolled back to the checkpoint\)" "$work/mid.log"
  else
    # Not "(stopped on the node)": a process waiting on a FUSE request
    # that sshfs has sent cannot be killed until the request ends.
    check "  the step named as timed out, the phase rolled back" grep -qE "node-06: phase storage, step share-write-for-tests: .*timed out after [0-9]+ s.* \(rolled back to the checkpoint\)" "$work/mid.log"
  fi
  check "  the dead share is no longer mounted at /mnt/shared" \
    on node-06 no "awk '\$2 == \"/mnt/shared\" {m = 1} END {print m ? \"yes\" : \"no\"}' /proc/self/mounts"
  check "  fstab as it was before the phase" on node-06 same "cmp -s /etc/fstab /root/fstab.before-mid-phase && echo same"
  check "  store consistent" store_ok "$state"
  if [[ $how == stop ]]; then "$lab" start ctl >/dev/null; else "$lab" heal ctl >/dev/null; fi
  sshn node-06 "rm -rf /var/lib/gpuexpand-test /root/fstab.before-mid-phase"
  gxrun --data-dir "$mid" apply -y "$work/mid.yaml" --until storage --limit node-06 --state "$state"
  check "  server back, the next apply converges (exit 0)" test "$rc" -eq 0
  check "  the share is mounted again, and written" on node-06 written "cat /mnt/shared/.gx-mid-phase"
  sshn node-06 "rm -f /mnt/shared/.gx-mid-phase"
}
row_storage_server_gone_mid_phase() {
  server_gone_mid_phase stop
  server_gone_mid_phase cut
}

# Every row by default; or the rows named (e.g. `fault-test.sh link_cut`).
rows=("$@")
((${#rows[@]})) || rows=(node_down link_slowed node_stops sshd_restart link_cut write_cut hung_step sigterm disk_full slurmctld_down storage_server_gone storage_server_gone_mid_phase store_faults store_damaged_or_newer)
converged "$work/lab.yaml" "$nodes"
for row in "${rows[@]}"; do
  declare -F "row_$row" >/dev/null || { bad "no row named $row"; continue; }
  started=$SECONDS
  "row_$row"
  echo "# row $row: $((SECONDS - started)) s"
done
finish
