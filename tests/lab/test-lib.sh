# Shared by the lab tests (sourced): where things are, TAP-like checks
# against the lab's nodes over plain ssh with the lab's key and strict host
# keys.
# Sets: $here (tests/lab), $repo, $lab (the lab script), $gx (the gpuexpand
# binary: GPUEXPAND_BIN, else the one scripts/test builds), $client (the
# lab's client material), $work (a temporary folder removed on exit; a test
# that needs more at exit sets its own trap and removes $work there too).

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
repo=$(cd "$here/../.." && pwd)
lab=$here/lab
gx=${GPUEXPAND_BIN:-$repo/build/test/src/gpuexpand}
client=${GXLAB_STATE:-/var/lib/gpuexpand-lab}/client
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

passed=0 failed=0
failed_checks=()  # named again at the end: CI shows a log's head and tail
notes=()          # said again at the end too: what a passing check saw on its way

# converged SPEC NODES — the precondition of a test section: NODES (a
# --limit) applied with SPEC, so the section does not depend on what the
# sections before it left (a node already there costs one round trip).
# Uses $state when the test set it.
converged() {
  local spec=$1 nodes=$2 log
  if ! log=$("$gx" apply -y "$spec" --limit "$nodes" --state "${state:-$work/state.db}" 2>&1); then
    bad "precondition: $nodes converged with $(basename "$spec")"
    sed 's/^/    /' <<<"$log"
    return 1
  fi
}

# spec_with OUT JQ_ARGS… — the lab's spec ($work/lab.yaml, written by the
# test) with a structured change, written as JSON (every JSON document is
# YAML, so it is a spec): variants are edits of the document, never text
# edits over YAML. E.g. spec_with "$work/mtu.yaml" '.defaults.network.mtu = 8000'
spec_with() {
  local out=$1
  shift
  python3 -c 'import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout, indent=1)' <"$work/lab.yaml" |
    jq "$@" >"$out"
}

# shellcheck source=tests/lab/lab-source.sh
source "$here/lab-source.sh"

ok() { passed=$((passed + 1)); echo "ok   - $*"; }
bad() { failed=$((failed + 1)); failed_checks+=("$*"); echo "FAIL - $*"; }
# detail TEXT — adds TEXT to the last failed check's line at the end (the
# finding or value that made it fail: CI's log keeps only the head and tail).
detail() { ((${#failed_checks[@]})) && failed_checks[-1]+=" [${1//$'\n'/; }]"; }
noted() { notes+=("${1//$'\n'/; }"); echo "note - $1"; }
check() { # DESCRIPTION COMMAND... — returns 1 when it failed (to show more)
  local what=$1
  shift
  if "$@"; then ok "$what"; else
    bad "$what"
    return 1
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  local what
  for what in "${notes[@]}"; do echo "  noted:  $what"; done
  for what in "${failed_checks[@]}"; do echo "  failed: $what"; done
  ((failed == 0))
  exit
}
sshn() { # NODE COMMAND — strict host keys, the lab's own known_hosts
  local node=$1
  shift
  local addr
  addr=$("$lab" addr "$node") || return 1
  ssh -i "$client/id_ed25519" -o IdentitiesOnly=yes -o UserKnownHostsFile="$client/known_hosts" \
    -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes \
    -o ConnectTimeout=5 -o LogLevel=ERROR "root@$addr" "$@" </dev/null
}
on() { # NODE EXPECTED COMMAND — the command's output equals EXPECTED
  local node=$1 expected=$2
  shift 2
  local got
  got=$(sshn "$node" "$@" 2>&1)
  [[ "$got" == "$expected" ]] || { echo "    $node: \`$*\` gave '$got', expected '$expected'"; return 1; }
}
gxrun() { # GPUEXPAND ARGS… — sets $out (stdout and stderr) and $rc, and shows the output indented
  out=$("$gx" "$@" 2>&1)
  rc=$?
  echo "$out" | sed 's/^/    /'
}
eventually() { # SECONDS COMMAND... — true once COMMAND succeeds within SECONDS
  local limit=$1
  shift
  local end=$((SECONDS + limit))
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 1
  done
}
