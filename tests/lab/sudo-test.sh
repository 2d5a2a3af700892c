#!/usr/bin/env bash
# `become: sudo` end to end: a full apply of a bare node (node-07) as an
# unprivileged user whose sudo rights are exactly the line docs/security.md
# gives, on the node and on the Slurm controller: every phase, Slurm
# registration and acceptance; then a second apply that changes nothing;
# the audit says every command ran as that user through sudo; doctor's
# path-MTU ping, which needs no root, ran as that user without it; and
# with the line taken away the node is named as needing it.
#
# Needs a running lab with at least 7 nodes (tests/lab/lab up --nodes 7).
# GPUEXPAND_BIN: the gpuexpand binary (default: build/test/src/gpuexpand, as scripts/test builds it).
# Last line: "N passed, M failed"; exit 0 only if nothing failed.
set -uo pipefail

# shellcheck source=tests/lab/test-lib.sh
source "$(dirname "$(readlink -f "$0")")/test-lib.sh"
state=$work/state.db

[[ -x "$gx" ]] || { echo "no gpuexpand binary at $gx"; bad "binary present"; finish; }
grep -q '^node-07 ' <<<"$("$lab" status 2>/dev/null)" || { bad "lab is up with 7 nodes (tests/lab/lab up --nodes 7)"; finish; }
"$lab" spec >"$work/lab.yaml"

# The sudoers line, read from the doc, so the doc cannot drift from what works.
sudoers=$(sed -n 's/^    \(ops ALL=(root) NOPASSWD: .*\)$/\1/p' "$repo/docs/security.md")
check "docs/security.md gives one sudoers line for user ops" test "$(wc -l <<<"$sudoers")" -eq 1 -a -n "$sudoers"

# The user, with the lab's key, and sudo (a Debian node without it has no
# way to become root but logging in as root) on node-07 and the controller.
for h in node-07 ctl; do
  with_lab_source "$h" 'command -v sudo >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q sudo >/dev/null 2>&1'
  "$lab" ssh "$h" -- "(id ops >/dev/null 2>&1 || useradd -m -s /bin/bash ops) &&
    install -d -m 0700 -o ops -g ops /home/ops/.ssh && install -m 0600 -o ops -g ops /root/.ssh/authorized_keys /home/ops/.ssh/ &&
    printf '%s\n' '$sudoers' >/etc/sudoers.d/ops && chmod 0440 /etc/sudoers.d/ops && visudo -cq" </dev/null
done
# The node's own name resolves, as Debian's installer leaves it (127.0.1.1).
# The lab's bare nodes lack that line, and then each sudo waits 20 s for the
# resolver before it runs anything, until os-init's first two steps; that
# costs this test a minute and proves nothing about sudo (docs/security.md
# has the figures).
"$lab" ssh node-07 -- 'grep -q "^127.0.1.1" /etc/hosts || printf "127.0.1.1\t%s\n" "$(hostname)" >>/etc/hosts' </dev/null
check "node-07 has no gpuexpand phase applied yet" on node-07 absent "test -e /etc/chrony/chrony.conf && echo there || echo absent"

spec_with "$work/sudo.yaml" '.ssh += {user: "ops", become: "sudo"}'
gxrun apply -y "$work/sudo.yaml" --limit node-07 --state "$state"
check "a full apply as ops through sudo: exit 0" test "$rc" -eq 0
check "  every phase ran, acceptance passed" grep -q "node-07  acceptance  5 passed, 0 failed" <<<"$out"
check "  node-07 is registered with the controller" \
  grep -q '^NodeName=node-07 ' <<<"$("$lab" ssh ctl -- "scontrol show node node-07 -o" </dev/null)"
run=$(sqlite3 "$state" "select max(id) from runs")
check "  the audit: every command of the run as ops through sudo" \
  test "$(sqlite3 "$state" "select group_concat(distinct user || '+' || sudo) from audit where run_id = $run")" = "ops+1"

gxrun apply -y "$work/sudo.yaml" --limit node-07 --state "$state"
check "the second apply as ops: nothing to change" grep -q "1 node: 0 changed, 1 unchanged" <<<"$out"

# Only commands that need root go through sudo: doctor's path-MTU ping
# (any user may ping: Debian's ping_group_range) runs as ops itself, the
# rest through sudo. node-08, where ops has no login, is the ping's peer.
gxrun doctor "$work/sudo.yaml" --limit 'node-0[7-8]' --state "$state"
run=$(sqlite3 "$state" "select max(id) from runs")
check "doctor as ops: one command on node-07 without sudo (the path-MTU ping), and it ran" \
  test "$(sqlite3 "$state" "select group_concat(user || '+' || exit_code) from audit where run_id = $run and node = 'node-07' and sudo = 0")" = "ops+0"
check "  its probe and its clock and kernel-log reading through sudo" \
  test "$(sqlite3 "$state" "select count(*) from audit where run_id = $run and node = 'node-07' and sudo = 1 and exit_code = 0")" -ge 2

"$lab" ssh node-07 -- "rm -f /etc/sudoers.d/ops" </dev/null
gxrun apply -y "$work/sudo.yaml" --limit node-07 --state "$state"
check "without the sudoers line: exit 3" test "$rc" -eq 3
check "  node-07 named as needing sudo without a password" \
  grep -q "node-07 (198.18.0.17): sudo needs a password for ops (become: sudo requires NOPASSWD sudo on the node)" <<<"$out"

finish
