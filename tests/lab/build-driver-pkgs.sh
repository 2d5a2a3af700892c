#!/usr/bin/env bash
# Build the lab's stand-in "nvidia-driver" packages with dpkg-deb.
#
# Usage: build-driver-pkgs.sh OUTDIR VERSION...
#
# The package data comes from the real captures in
# tests/fixtures/tool-output/ (see SOURCES.md there): the --query-gpu field
# table from an H200 capture and the -q GPU block from an H100 capture.
set -euo pipefail

out=${1:?usage: build-driver-pkgs.sh OUTDIR VERSION...}
shift
src=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
fixtures=$src/../fixtures/tool-output
pkg=$src/driver-pkg

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

for version in "$@"; do
  root=$(mktemp -d)
  install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/nvidia-lab" "$root/usr/share/nvidia-lab" \
    "$root/lib/systemd/system" "$root/etc"
  sed -e "s/@VERSION@/$version/g" -e "s/@CUDA@/$(cuda_of "$version")/g" "$src/nvidia-smi.in" >"$root/usr/bin/nvidia-smi"
  install -m 0755 "$pkg/nvidia-persistenced" "$root/usr/bin/nvidia-persistenced"
  install -m 0755 "$pkg/nvidia-lab-load" "$root/usr/lib/nvidia-lab/nvidia-lab-load"
  install -m 0644 "$pkg/nvidia-lab-load.service" "$pkg/nvidia-persistenced.service" "$root/lib/systemd/system/"
  install -m 0644 "$pkg/nvidia-lab.conf" "$root/etc/nvidia-lab.conf"
  make_query_table "$root/usr/share/nvidia-lab/query-gpu.tsv"
  make_q_template "$root/usr/share/nvidia-lab/q-gpu.tmpl"
  chmod 0755 "$root/usr/bin/nvidia-smi"
  sed "s/@VERSION@/$version/g" "$pkg/control.in" >"$root/DEBIAN/control"
  echo /etc/nvidia-lab.conf >"$root/DEBIAN/conffiles"
  install -m 0755 "$pkg/postinst" "$pkg/prerm" "$pkg/postrm" "$root/DEBIAN/"
  chmod -R u+rwX,go+rX,go-w "$root"
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$out/nvidia-driver_${version}_amd64.deb" >/dev/null
  rm -rf "$root"
  echo "built $out/nvidia-driver_${version}_amd64.deb"
done
