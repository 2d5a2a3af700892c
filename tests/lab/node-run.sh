#!/usr/bin/env bash
# Supervisor of one lab node: what `lab` starts (setsid unshare -m node-run.sh …)
# and records as the node's PID.
#
# Usage: node-run.sh NAME ROOT NETNS CGROUP [systemd-nspawn options…]
#
# Why a supervisor instead of exec'ing systemd-nspawn directly:
#  - It joins the node's own cgroups first, so every process of the node
#    (nspawn, the container's systemd and its services) can be found and
#    killed by cgroup, even after an unclean exit of `lab`.
#  - /run here is not a tmpfs, so nspawn refuses to boot unless
#    /run/systemd/nspawn is one (LAB.md, host fix 1); `lab` starts us in a
#    private mount namespace (unshare -m), so this tmpfs is ours alone.
#  - A reboot inside the node (`systemctl reboot`, the gpu-driver phase's
#    reboot step) makes nspawn exit with status 133; systemd-nspawn@.service
#    restarts it then (RestartForceExitStatus=133) and so do we.
#  - SIGTERM to us becomes SIGTERM to nspawn = an orderly poweroff of the node.
set -uo pipefail

name=$1 root=$2 netns=$3 cgroup=$4
shift 4

for hier in systemd unified; do
  echo $$ >"/sys/fs/cgroup/$hier/$cgroup/cgroup.procs"
done

mount -t tmpfs -o mode=0755,size=1M tmpfs /run/systemd/nspawn

stopping=0
child=
on_term() {
  stopping=1
  [[ -n $child ]] && kill -TERM "$child" 2>/dev/null
}
trap on_term TERM INT HUP

while :; do
  echo "node-run: $(date -u +%FT%TZ) booting $name"
  # nspawn itself runs inside the node's network namespace (nsenter --net;
  # not ip netns exec, which would remount /sys and hide the cgroup trees) as well as
  # being told to use it: only then is the node's /sys mounted for that
  # namespace (/sys/class/net shows eth0/eth1, not the host's links), while
  # nspawn still treats the network as private (CAP_NET_ADMIN for the phases'
  # MTU steps). /proc/sys is read-only but for net.*: SYSTEMD_NSPAWN_API_VFS_WRITABLE=network
  # (systemd's docs/ENVIRONMENT.md) leaves /proc/sys/net writable, and what
  # the node writes there is its own namespace's, never the host's.
  SYSTEMD_NSPAWN_API_VFS_WRITABLE=network nsenter --net="/run/netns/$netns" systemd-nspawn -q -D "$root" --boot --register=no --keep-unit \
    --network-namespace-path="/run/netns/$netns" --capability=CAP_NET_ADMIN -M "$name" --timezone=off \
    --console=passive "$@" </dev/null &
  child=$!
  rc=0
  wait "$child" || rc=$?
  # `wait` returns early when a trapped signal arrives: wait until nspawn is gone.
  while kill -0 "$child" 2>/dev/null; do
    rc=0
    wait "$child" || rc=$?
  done
  child=
  echo "node-run: $(date -u +%FT%TZ) $name exited with status $rc"
  if (( stopping == 0 && rc == 133 )); then
    continue # the node rebooted itself
  fi
  exit "$rc"
done
