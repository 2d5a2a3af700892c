#!/bin/bash
# `gpuexpand facts` against its floor: the same nodes reached by N parallel
# `ssh NODE true` (OpenSSH, one handshake each, no remote work). Runs
# against the running lab (tests/lab/lab up); prints every round and the
# medians. Issue #4's goal: facts within 1.5x of the floor.
#
# Usage: bench/facts_vs_ssh.sh [--rounds N] [--limit HOSTLIST] [--gpuexpand PATH]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
rounds=7 limit= gx=$here/build/release/src/gpuexpand
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --limit) limit=$2; shift ;;
    --gpuexpand) gx=$2; shift ;;
    *) echo "usage: $0 [--rounds N] [--limit HOSTLIST] [--gpuexpand PATH]" >&2; exit 2 ;;
  esac
  shift
done
[[ -x $gx ]] || gx=$here/build/dev/src/gpuexpand
[[ -x $gx ]] || { echo "no gpuexpand binary: build first or pass --gpuexpand" >&2; exit 2; }

lab=$here/tests/lab/lab
client=/var/lib/gpuexpand-lab/client
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$lab" spec >"$work/lab.yaml"

# The nodes and their addresses, as gpuexpand selects them.
limit_args=()
[[ -n $limit ]] && limit_args=(--limit "$limit")
mapfile -t addresses < <("$gx" inventory "$work/lab.yaml" "${limit_args[@]}" -o json |
  jq -r '.nodes[].address')
((${#addresses[@]})) || { echo "no nodes selected (is the lab up?)" >&2; exit 2; }

now() { date +%s.%N; }
floors=() facts=()
for ((r = 1; r <= rounds; r++)); do
  start=$(now)
  for a in "${addresses[@]}"; do
    ssh -i "$client/id_ed25519" -o IdentitiesOnly=yes -o UserKnownHostsFile="$client/known_hosts" \
      -o StrictHostKeyChecking=yes -o BatchMode=yes "root@$a" true &
  done
  wait
  floor=$(echo "$(now) - $start" | bc)
  start=$(now)
  "$gx" facts "$work/lab.yaml" "${limit_args[@]}" --state "$work/state.db" >/dev/null
  took=$(echo "$(now) - $start" | bc)
  printf 'round %d: %d parallel ssh true %.3f s, gpuexpand facts %.3f s (%.2fx)\n' \
    "$r" "${#addresses[@]}" "$floor" "$took" "$(echo "$took / $floor" | bc -l)"
  floors+=("$floor") facts+=("$took")
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
mf=$(median "${floors[@]}") mt=$(median "${facts[@]}")
printf 'median over %d rounds, %d nodes: floor %.3f s, facts %.3f s (%.2fx)\n' \
  "$rounds" "${#addresses[@]}" "$mf" "$mt" "$(echo "$mt / $mf" | bc -l)"
