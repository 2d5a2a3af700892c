#!/usr/bin/env bash
# Build the lab's stand-in GPU packages with dpkg-deb.
#
# Usage: build-driver-pkgs.sh OUTDIR VERSION...
#
# 1. "nvidia-driver" at each VERSION, named as the distribution names it
#    (gpu.source: distribution, the lab spec's default).
# 2. Always: NVIDIA's CUDA repository names and versions for two driver
#    branches (gpu.source: nvidia-cuda-repo), as in its ubuntu2204/x86_64
#    Packages index: nvidia-driver-BRANCH (VER-0ubuntu1), cuda-drivers-BRANCH
#    (VER-1, depending on nvidia-driver-BRANCH with a lower bound only, as
#    NVIDIA's does), nvidia-fabricmanager-BRANCH (VER-1, Provides, Conflicts
#    and Replaces nvidia-fabricmanager, as NVIDIA's control file has it) and
#    cuda-toolkit-MAJOR-MINOR. NVIDIA's debian12 repository has no 535
#    branch, so the two-branch lab takes the Ubuntu repository's names.
#    Every string and where it was read: tests/fixtures/nvidia-repo/SOURCES.md.
#
# Not drivers: the driver packages install an nvidia-smi emulator printing
# the real tool's formats from the captures in tests/fixtures/tool-output/
# (the --query-gpu field table from an H200 capture, the -q GPU block from
# an H100 capture), the device files Slurm's GRES needs and a tiny
# nvidia-persistenced; the fabric manager runs a stand-in daemon.
set -euo pipefail

out=${1:?usage: build-driver-pkgs.sh OUTDIR VERSION...}
shift
src=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
fixtures=$src/../fixtures/tool-output
pkg=$src/driver-pkg

# BRANCH DRIVER CUDA-NAME CUDA-VERSION, from NVIDIA's ubuntu2204 repository.
VENDOR_BRANCHES=(
  "535 535.183.01 12-2 12.2.2-1"
  "550 550.90.07 12-4 12.4.1-1"
)

cuda_of() { # the CUDA version each driver branch reports
  case $1 in
    535.*) echo 12.2 ;;
    550.*) echo 12.4 ;;
    560.*) echo 12.6 ;;
    570.*) echo 12.8 ;;
    *) echo 12.4 ;;
  esac
}

# field <TAB> CSV header <TAB> value, from the capture's command line + CSV.
make_query_table() {
  local cmd=$fixtures/nvidia-smi-query-gpu-allfields-590.48.01.cmd.txt
  local csv=$fixtures/nvidia-smi-query-gpu-allfields-h200x1-590.48.01.csv
  sed -E 's/.*--query-gpu=([^ ]+).*/\1/' "$cmd" | tr ',' '\n' >"$1.fields"
  sed -n 1p "$csv" | sed 's/, /\n/g' >"$1.headers"
  sed -n 2p "$csv" | sed 's/, /\n/g' >"$1.values"
  paste "$1.fields" "$1.headers" "$1.values" >"$1"
  rm -f "$1.fields" "$1.headers" "$1.values"
  [[ $(wc -l <"$1") -gt 200 ]] || { echo "query table too short" >&2; exit 1; }
}

# The first GPU block of the -q capture (up to the blank line before GPU 1).
make_q_template() {
  awk '/^GPU 0000/ { n++ } n == 1 && !/^$/ { print } n == 2 { exit }' \
    "$fixtures/nvidia-smi-q-text-h100x8-535.161.08.txt" >"$1"
}

# control FILE PACKAGE VERSION DESCRIPTION [FIELD: VALUE]...
control() {
  local file=$1 name=$2 version=$3 summary=$4
  shift 4
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: amd64"
    echo "Maintainer: gpuexpand lab <lab@gpuexpand.invalid>"
    echo "Section: non-free/libs"
    echo "Priority: optional"
    printf '%s\n' "$@"
    echo "Description: $summary"
    echo " gpuexpand lab stand-in, for tests only: named and versioned as the"
    echo " real package, it installs no NVIDIA software."
  } >"$file"
}

finish() { # ROOT DEB
  chmod -R u+rwX,go+rX,go-w "$1"
  dpkg-deb --root-owner-group -Zgzip --build "$1" "$out/$2" >/dev/null
  rm -rf "$1"
  echo "built $out/$2"
}

# driver PACKAGE PACKAGE-VERSION UPSTREAM-VERSION [CONTROL FIELD]...
driver() {
  local name=$1 version=$2 upstream=$3 root
  shift 3
  root=$(mktemp -d)
  install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/nvidia-lab" "$root/usr/share/nvidia-lab" \
    "$root/lib/systemd/system" "$root/etc"
  sed -e "s/@VERSION@/$upstream/g" -e "s/@CUDA@/$(cuda_of "$upstream")/g" "$src/nvidia-smi.in" >"$root/usr/bin/nvidia-smi"
  chmod 0755 "$root/usr/bin/nvidia-smi"
  echo "$upstream" >"$root/usr/share/nvidia-lab/version"
  install -m 0755 "$pkg/nvidia-persistenced" "$root/usr/bin/nvidia-persistenced"
  install -m 0755 "$pkg/nvidia-lab-load" "$root/usr/lib/nvidia-lab/nvidia-lab-load"
  install -m 0644 "$pkg/nvidia-lab-load.service" "$pkg/nvidia-persistenced.service" "$root/lib/systemd/system/"
  install -m 0644 "$pkg/nvidia-lab.conf" "$root/etc/nvidia-lab.conf"
  make_query_table "$root/usr/share/nvidia-lab/query-gpu.tsv"
  make_q_template "$root/usr/share/nvidia-lab/q-gpu.tmpl"
  control "$root/DEBIAN/control" "$name" "$version" "NVIDIA driver $upstream (lab stand-in: nvidia-smi emulator)" \
    "Installed-Size: 64" "$@"
  echo /etc/nvidia-lab.conf >"$root/DEBIAN/conffiles"
  install -m 0755 "$pkg/postinst" "$pkg/prerm" "$pkg/postrm" "$root/DEBIAN/"
  finish "$root" "${name}_${version}_amd64.deb"
}

# The distribution's name. Both kinds of driver package ship
# /usr/bin/nvidia-smi: only one may be installed (a lab-only relation).
for version in "$@"; do
  driver nvidia-driver "$version" "$version" "Provides: nvidia-smi, nvidia-persistenced" \
    "Conflicts: nvidia-driver-binary" "Replaces: nvidia-driver-binary"
done

for entry in "${VENDOR_BRANCHES[@]}"; do
  read -r branch upstream cuda_name cuda_version <<<"$entry"
  # As Ubuntu's nvidia-driver-BRANCH and its nvidia-utils/-compute-utils
  # twins do, one branch excludes the others through shared virtual names.
  driver "nvidia-driver-$branch" "$upstream-0ubuntu1" "$upstream" \
    "Provides: nvidia-driver-binary, nvidia-utils, nvidia-smi, nvidia-compute-utils, nvidia-persistenced" \
    "Conflicts: nvidia-driver-binary, nvidia-utils, nvidia-compute-utils, nvidia-driver" \
    "Replaces: nvidia-driver-binary, nvidia-utils, nvidia-compute-utils, nvidia-driver"

  root=$(mktemp -d)
  install -d "$root/DEBIAN"
  control "$root/DEBIAN/control" "cuda-drivers-$branch" "$upstream-1" "CUDA Driver meta-package, branch-specific" \
    "Installed-Size: 1" "Depends: nvidia-driver-$branch (>= $upstream)"
  finish "$root" "cuda-drivers-${branch}_${upstream}-1_amd64.deb"

  root=$(mktemp -d)
  install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system"
  install -m 0755 "$pkg/nv-fabricmanager" "$root/usr/bin/nv-fabricmanager"
  install -m 0644 "$pkg/nvidia-fabricmanager.service" "$root/lib/systemd/system/"
  control "$root/DEBIAN/control" "nvidia-fabricmanager-$branch" "$upstream-1" "Fabric Manager for NVSwitch based systems." \
    "Installed-Size: 8" "Depends: libc6 (>= 2.2.1)" "Provides: nvidia-fabricmanager" "Replaces: nvidia-fabricmanager" \
    "Conflicts: nvidia-fabricmanager"
  printf '#!/bin/sh\nset -e\n[ -d /run/systemd/system ] && systemctl daemon-reload || true\n' >"$root/DEBIAN/postinst"
  chmod 0755 "$root/DEBIAN/postinst"
  finish "$root" "nvidia-fabricmanager-${branch}_${upstream}-1_amd64.deb"

  root=$(mktemp -d)
  install -d "$root/DEBIAN" "$root/usr/local/cuda-${cuda_name/-/.}"
  echo "CUDA Version ${cuda_version%-*} (gpuexpand lab stand-in)" >"$root/usr/local/cuda-${cuda_name/-/.}/version.txt"
  control "$root/DEBIAN/control" "cuda-toolkit-$cuda_name" "$cuda_version" "CUDA Toolkit ${cuda_name/-/.} meta-package" \
    "Installed-Size: 1"
  finish "$root" "cuda-toolkit-${cuda_name}_${cuda_version}_amd64.deb"
done

# NVIDIA Container Toolkit 1.17.8 (NVIDIA's libnvidia-container repository):
# nvidia-container-toolkit-base carries nvidia-ctk (a stand-in, see
# driver-pkg/nvidia-ctk) and nvidia-container-runtime; nvidia-container-toolkit
# the runtime hook and depends on the base at the same version.
toolkit=1.17.8-1
root=$(mktemp -d)
install -d "$root/DEBIAN" "$root/usr/bin"
install -m 0755 "$pkg/nvidia-ctk" "$root/usr/bin/nvidia-ctk"
printf '#!/bin/sh\necho "nvidia-container-runtime: gpuexpand lab stand-in: no GPU containers here" >&2\nexit 1\n' \
  >"$root/usr/bin/nvidia-container-runtime"
chmod 0755 "$root/usr/bin/nvidia-container-runtime"
control "$root/DEBIAN/control" nvidia-container-toolkit-base "$toolkit" "NVIDIA Container Toolkit Base" "Installed-Size: 16"
finish "$root" "nvidia-container-toolkit-base_${toolkit}_amd64.deb"
root=$(mktemp -d)
install -d "$root/DEBIAN" "$root/usr/bin"
printf '#!/bin/sh\necho "nvidia-container-runtime-hook: gpuexpand lab stand-in" >&2\nexit 1\n' \
  >"$root/usr/bin/nvidia-container-runtime-hook"
chmod 0755 "$root/usr/bin/nvidia-container-runtime-hook"
control "$root/DEBIAN/control" nvidia-container-toolkit "$toolkit" "NVIDIA Container toolkit" "Installed-Size: 8" \
  "Depends: nvidia-container-toolkit-base (= $toolkit)"
finish "$root" "nvidia-container-toolkit_${toolkit}_amd64.deb"
