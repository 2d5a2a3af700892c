#!/usr/bin/env bash
# `gpuexpand facts` against the lab's real sshd: facts from every node in
# one round trip each; a stopped node is reported unreachable while the
# others answer; unknown and changed host keys are refused; a bad key file
# and a wrong user give clear errors; hostile values in a spec keep their
# meaning on the node. Also prints the wall time of `facts` against the
# floor of N parallel `ssh NODE true` (informational, not asserted).
#
# Needs a running lab with at least 4 nodes. GPUEXPAND_BIN as in apply-test.sh.
# Last line: "N passed, M failed".
set -uo pipefail

# shellcheck source=tests/lab/test-lib.sh
source "$(dirname "$(readlink -f "$0")")/test-lib.sh"
trap 'rm -rf "$work"; "$lab" start node-04 >/dev/null 2>&1' EXIT

"$lab" status >/dev/null 2>&1 || { bad "lab is up"; finish; }
"$lab" spec >"$work/lab.yaml"
nodes=$(grep -c '^node-' <<<"$("$lab" status)")

out=$("$gx" facts "$work/lab.yaml" -o json 2>&1)
check "facts from every node: exit 0" test $? -eq 0
check "one facts document per node" test "$(jq '.nodes | length' <<<"$out")" -eq "$nodes"
check "each node reports its own factory hostname" \
  test "$(jq -r '[.nodes[].hostname] | unique | length' <<<"$out")" -eq "$nodes"
# Bare or converged (the test does not rely on the order of the lab tests):
# the GPUs as the node's driver reports them, or the driver's absence.
if sshn node-01 "command -v nvidia-smi" >/dev/null 2>&1; then
  check "node-01 has the driver: its 8 GPUs are reported" \
    test "$(jq -r '.nodes["node-01"].gpus.count' <<<"$out")" = 8
else
  check "node-01 is bare: the driver stand-in is reported absent" \
    test "$(jq -r '.nodes["node-01"].gpus.error' <<<"$out")" = "nvidia-smi is not installed"
fi
check "the compute interface is seen with its MTU" \
  test "$(jq -r '.nodes["node-01"].network.interfaces[] | select(.name == "eth1") | .mtu' <<<"$out")" -ge 1500

# A stopped node: named unreachable, the others unaffected.
"$lab" stop node-04 >/dev/null 2>&1
out=$("$gx" facts "$work/lab.yaml" 2>&1)
rc=$?
check "with node-04 stopped: exit 1" test "$rc" -eq 1
check "node-04 is named unreachable with the reason" grep -q "^unreachable: node-04 (198.18.0.14): " <<<"$out"
check "the other nodes answered" grep -q "$((nodes)) nodes: $((nodes - 1)) answered, 1 unreachable" <<<"$out"
"$lab" start node-04 >/dev/null 2>&1

# Host keys: unknown is refused without --accept-new-host-keys; changed is
# refused always, with both fingerprints.
spec_with "$work/unknown.yaml" --arg f "$work/empty_known_hosts" '.ssh.known_hosts = $f'
out=$("$gx" facts "$work/unknown.yaml" --limit node-01 2>&1)
check "unknown host key refused" grep -q "node-01 (198.18.0.11): host key ssh-ed25519 SHA256:.* is not in" <<<"$out"
out=$("$gx" facts "$work/unknown.yaml" --limit node-01 --accept-new-host-keys 2>&1)
check "accepted with --accept-new-host-keys" grep -q "1 answered, 0 unreachable" <<<"$out"
ssh-keygen -q -N '' -t ed25519 -f "$work/other" >/dev/null
awk -v k="$(cut -d' ' -f1,2 "$work/other.pub")" '$1 ~ /^198[.]18[.]0[.]11(,|$)/ {print $1, k; next} {print}' \
  "$client/known_hosts" >"$work/changed_known_hosts"
spec_with "$work/changed.yaml" --arg f "$work/changed_known_hosts" '.ssh.known_hosts = $f'
out=$("$gx" facts "$work/changed.yaml" --limit node-01 --accept-new-host-keys 2>&1)
check "changed host key refused even with --accept-new-host-keys" grep -q "HOST KEY CHANGED" <<<"$out"
check "both fingerprints are shown" test "$(grep -o 'SHA256:[A-Za-z0-9+/]*' <<<"$out" | sort -u | wc -l)" -eq 2

# Bad key file, wrong user.
spec_with "$work/badkey.yaml" --arg f "$work/no-such-key" '.ssh.identity_file = $f'
out=$("$gx" facts "$work/badkey.yaml" --limit node-01 2>&1)
check "a missing key file is named" grep -q "cannot use the key $work/no-such-key" <<<"$out"
spec_with "$work/user.yaml" '.ssh.user = "nobody"'
out=$("$gx" facts "$work/user.yaml" --limit node-01 2>&1)
check "a wrong user fails authentication, named" grep -q "authentication as nobody failed" <<<"$out"

# become: sudo as an unprivileged user. A sudo that wants a password is
# named as such (sudo -n never prompts); with NOPASSWD the probe runs.
# node-06: the apply tests only need it bare of gpuexpand's phases.
if grep -q '^node-06 ' <<<"$("$lab" status 2>/dev/null)"; then
  with_lab_source node-06 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q sudo >/dev/null'
  "$lab" ssh node-06 -- "(id ops >/dev/null 2>&1 || useradd -m -s /bin/bash ops) && echo ops:not-a-secret | chpasswd &&
    install -d -m 0700 -o ops -g ops /home/ops/.ssh && install -m 0600 -o ops -g ops /root/.ssh/authorized_keys /home/ops/.ssh/ &&
    echo 'ops ALL=(ALL) ALL' >/etc/sudoers.d/ops && chmod 0440 /etc/sudoers.d/ops" </dev/null
  spec_with "$work/sudo.yaml" '.ssh += {user: "ops", become: "sudo"}'
  out=$("$gx" facts "$work/sudo.yaml" --limit node-06 2>&1)
  rc=$?
  check "become: sudo with a password-asking sudo: exit 1" test "$rc" -eq 1
  check "it says sudo needs a password, for whom" \
    grep -q "unreachable: node-06 (198.18.0.16): sudo needs a password for ops (become: sudo requires NOPASSWD sudo on the node)" <<<"$out" ||
    sed 's/^/    /' <<<"$out"
  "$lab" ssh node-06 -- "echo 'ops ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/ops" </dev/null
  # (stderr apart: the controller, where user ops does not exist, cannot
  # answer the node's gres.conf check, and a warning says so.)
  out=$("$gx" facts "$work/sudo.yaml" --limit node-06 -o json 2>"$work/sudo.err")
  rc=$?
  check "with NOPASSWD sudo the probe runs through sudo: exit 0" test "$rc" -eq 0 || { sed 's/^/    /' <<<"$out"; sed 's/^/    /' "$work/sudo.err"; }
  check "  and returns the node's facts" test "$(jq -r '.nodes["node-06"].os.family' <<<"$out")" = debian
else
  bad "the sudo checks need node-06 (tests/lab/lab up --nodes 6)"
fi

# Hostile values: a mountpoint full of shell syntax is probed as one path.
spec_with "$work/hostile.yaml" --arg m "/mnt/x'; touch /tmp/gx-pwned; echo '" '.defaults.storage[0].mountpoint = $m'
out=$("$gx" facts "$work/hostile.yaml" --limit node-01 -o json 2>&1)
check "hostile path probed literally" \
  test "$(jq -r --arg p "/mnt/x'; touch /tmp/gx-pwned; echo '" '.nodes["node-01"].files | has($p)' <<<"$out")" = true
check "and nothing ran on the node" test "$(ssh -i "$client/id_ed25519" -o UserKnownHostsFile="$client/known_hosts" \
  -o StrictHostKeyChecking=yes -o BatchMode=yes root@198.18.0.11 'test -e /tmp/gx-pwned && echo yes || echo no')" = no

# facts --diff: two bare nodes of one image differ in nothing but what is
# theirs by design; a line added to one's /etc/hosts is the one difference.
if [[ $(sshn node-05 hostname) == srv-* && $(sshn node-06 hostname) == srv-* ]]; then
  out=$("$gx" facts "$work/lab.yaml" --diff node-05 node-06 2>&1)
  check "facts --diff of two bare nodes: no differences" grep -q "^No differences between node-05 and node-06 in [0-9]* facts$" <<<"$out" ||
    sed 's/^/    /' <<<"$out"
  sshn node-05 "cp /etc/hosts /etc/hosts.gx-saved && echo '198.18.0.99 extra-host' >>/etc/hosts"
  out=$("$gx" facts "$work/lab.yaml" --diff node-05 node-06 2>&1)
  sshn node-05 "mv /etc/hosts.gx-saved /etc/hosts"
  check "  a line added on node-05 is the one difference, shown on node-05's side" \
    grep -q '^files\./etc/hosts\.content .*198\.18\.0\.99 extra-host' <<<"$out" || sed 's/^/    /' <<<"$out"
  check "  and nothing else differs" grep -q '^1 fact differs (of [0-9]*)$' <<<"$out"
else
  echo "skip - facts --diff of two bare nodes: node-05 and node-06 are not both bare (a test applied to them first)"
fi

# The figure: facts over all nodes against N parallel `ssh NODE true`.
start=$(date +%s.%N)
for n in $(seq 1 "$nodes"); do
  ssh -i "$client/id_ed25519" -o IdentitiesOnly=yes -o UserKnownHostsFile="$client/known_hosts" \
    -o StrictHostKeyChecking=yes -o BatchMode=yes "root@198.18.0.$((10 + n))" true &
done
wait
floor=$(echo "$(date +%s.%N) - $start" | bc)
start=$(date +%s.%N)
"$gx" facts "$work/lab.yaml" >/dev/null 2>&1
facts=$(echo "$(date +%s.%N) - $start" | bc)
echo "figure: $nodes parallel 'ssh NODE true': ${floor} s; gpuexpand facts over $nodes nodes: ${facts} s"

finish
