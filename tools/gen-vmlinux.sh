#!/bin/sh
# Regenerate vmlinux/<arch>/vmlinux.h from a kernel BTF file, for CO-RE builds.
# usage: tools/gen-vmlinux.sh ARCH [BTF_FILE]   (default BTF: /sys/kernel/btf/vmlinux)
set -eu
arch=${1:?usage: gen-vmlinux.sh ARCH [BTF_FILE]}
btf=${2:-/sys/kernel/btf/vmlinux}
[ -r "$btf" ] || { echo "gen-vmlinux: cannot read BTF file $btf" >&2; exit 1; }
dir=$(dirname "$0")/../vmlinux/$arch
mkdir -p "$dir"
bpftool btf dump file "$btf" format c > "$dir/vmlinux.h.tmp"
mv "$dir/vmlinux.h.tmp" "$dir/vmlinux.h"
echo "wrote $dir/vmlinux.h from $btf"
