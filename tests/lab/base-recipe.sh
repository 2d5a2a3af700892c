#!/usr/bin/env bash
# Recipe of the lab's base image: the read-only lower layer every node boots.
#
# Usage: base-recipe.sh ROOTFS [SUITE]   (run by `lab up`; ROOTFS must not exist yet;
#        SUITE: the Debian release, bookworm unless a node was asked for as another)
#
# `lab` hashes this file: any change here makes the next `lab up` build a
# fresh base (and, as they derive from it, a fresh mirror and controller
# layer). Keep it deterministic and minimal: nodes must start BARE, like
# servers out of the factory - no time sync, no scheduler, none of the
# packages the gpuexpand phases install (those come from the lab mirror).
set -euo pipefail

rootfs=${1:?usage: base-recipe.sh ROOTFS}
suite=${2:-bookworm}
mirror=${GXLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The package set LAB.md verified to boot under systemd-nspawn, nothing more.
# (openssh-server: gpuexpand's only way in. No chrony/systemd-timesyncd.)
include=systemd,systemd-sysv,dbus,openssh-server,iproute2,kmod,procps

debootstrap --variant=minbase --include="$include" "$suite" "$rootfs" "$mirror"

# --- sshd: per-node ed25519 host key only --------------------------------
# debootstrap generated host keys; every node would share them. `lab up`
# writes a fresh key per node into its upper layer instead.
rm -f "$rootfs"/etc/ssh/ssh_host_*
cat >"$rootfs/etc/ssh/sshd_config.d/10-gxlab.conf" <<'CONF'
# gpuexpand lab: key-only root login, one host key per node, no DNS lookups.
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
# Many parallel connections from gpuexpand (parallel: 256) must not be dropped.
MaxStartups 256:30:512
CONF

# --- apt: no package source at all ------------------------------------------
# Nodes have no route out, and like a server fresh from the factory on an
# isolated network they know no repository: gpuexpand's os.repositories
# must add the lab's (served by ctl over HTTP, signed with the lab's key).
: >"$rootfs/etc/apt/sources.list"
rm -f "$rootfs"/etc/apt/sources.list.d/*
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb

# --- systemd inside nspawn ----------------------------------------------
# console-getty makes the node end "degraded" under nspawn (LAB.md).
ln -sf /dev/null "$rootfs/etc/systemd/system/console-getty.service"
# Each node gets its own /etc/machine-id and /etc/hostname in its upper
# layer; an empty one here would make systemd treat every boot as first boot.
echo "uninitialized" >"$rootfs/etc/machine-id"
echo "localhost" >"$rootfs/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$rootfs/etc/hosts"

# --- the clock: a container cannot set it ---------------------------------
# chrony.service requires CAP_SYS_TIME, which nspawn nodes lack, so on a
# real server chronyd disciplines the clock and here it would be skipped.
# This drop-in (inert until the os-init phase installs chrony) lets it run
# with -x: it still syncs with the spec's servers and answers `chronyc
# sources`, but leaves the host's clock alone. A stand-in for hardware
# access, like the driver packages.
install -d "$rootfs/etc/systemd/system/chrony.service.d"
cat >"$rootfs/etc/systemd/system/chrony.service.d/gxlab.conf" <<'CONF'
[Unit]
ConditionCapability=
[Service]
ExecStart=
ExecStart=!/usr/sbin/chronyd $DAEMON_OPTS -x
CONF

install -d -m 0700 "$rootfs/root/.ssh"
echo "gxlab base recipe done"
