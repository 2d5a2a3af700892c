#!/usr/bin/env bash
# Recipe of the controller node's extra layer, run by `lab` inside a
# non-booted systemd-nspawn over the base image with the lab mirror at
# /srv/gxlab-mirror. The result is cached and stacked over the base for
# the node `ctl` only: compute nodes stay bare.
#
# ctl runs: slurmctld (Slurm 22.05, dynamic nodes, configless), munged
# (its key is written per lab by `lab up`), sshd with /srv/shared as the
# cluster's shared storage (sshfs/FUSE: this kernel has no NFS), and nginx
# serving the lab mirror at http://198.18.0.10/gxlab/ (signed by the lab's
# key), the only package repository compute nodes can reach.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# Package scripts must not try to start daemons in a non-booted container.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod +x /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT

# The base knows no package source; this build (not a node) reads the
# mirror's files directly, and forgets the source again below.
echo 'deb [trusted=yes] file:/srv/gxlab-mirror ./' >/etc/apt/sources.list.d/gxlab-build.list
apt-get -q update
apt-get -q install -y --no-install-recommends slurmctld slurm-client munge nginx-light

# The mirror over HTTP. /srv/www is for what tests serve besides (a
# tampered copy of the repository, say).
rm -f /etc/nginx/sites-enabled/default
install -d -m 0755 /srv/www
cat >/etc/nginx/sites-available/gxlab <<'CONF'
server {
    listen 80 default_server;
    root /srv/www;
    location /gxlab/ {
        alias /srv/gxlab-mirror/;
    }
}
CONF
ln -sf ../sites-available/gxlab /etc/nginx/sites-enabled/gxlab
systemctl enable nginx.service

install -d -o slurm -g slurm -m 0755 /var/lib/slurm /var/lib/slurm/slurmctld /var/log/slurm
# Settings verified on this machine kind (LAB.md), controller ctl at 198.18.0.10.
cat >/etc/slurm/slurm.conf <<'CONF'
# gpuexpand lab controller. Compute nodes register dynamically
# (slurmd -Z --conf-server 198.18.0.10 --conf "Gres=gpu:8 Feature=h200").
ClusterName=lab
SlurmctldHost=ctl(198.18.0.10)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
GresTypes=gpu
MaxNodeCount=256
TreeWidth=65533
ReturnToService=2
# The lab's fault drill (gpuexpand verify --fault-drill) should take
# seconds: a silent slurmd is NOT_RESPONDING after ~15 s, DOWN after ~28 s
# (the default 300 s makes that ~110 s and ~400 s).
SlurmdTimeout=10
SlurmctldParameters=enable_configless
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
# Count-only GPU GRES is rejected (INVALID_REG): each node needs a gpu line
# naming its device files. gpuexpand writes one per node from the device
# files it finds (scheduler.slurm.gres_conf: from_facts); the stand-in
# driver package provides /dev/nvidia0..N-1 on each node (LAB.md).
cat >/etc/slurm/gres.conf <<'CONF'
AutoDetect=off
CONF
chmod 0644 /etc/slurm/slurm.conf /etc/slurm/gres.conf

systemctl enable munge.service slurmctld.service

# Shared storage served over SFTP by ctl's sshd (the storage phase mounts
# root@198.18.0.10:/srv/shared with sshfs).
install -d -m 0755 /srv/shared
echo "gpuexpand lab shared storage on ctl" >/srv/shared/README

rm -f /etc/apt/sources.list.d/gxlab-build.list
apt-get clean
rm -rf /var/lib/apt/lists/*
echo "ctl recipe done"
