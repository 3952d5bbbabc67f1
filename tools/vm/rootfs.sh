#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# rootfs.sh DIR TOOL KVER MODROOT: the guest of `make vm-next-torch` (opt-in, docs/vm-test.md):
# a Debian bookworm root with Debian's python3-torch and bpftrace on a disk image, and a small
# initramfs that mounts it and switch_roots into it.
#
#   DIR/root         debootstrap minbase (tools/debian-root.sh bookworm), then python3-torch and
#                    bpftrace installed in it with apt (chroot); made once, kept (~1.6 GB)
#   DIR/disk.img     ext4 image of DIR/root (mke2fs -d), with /opt/spyre: TOOL (the static
#                    spyre-bpftrace), bench/torchmm.py, tests/vm/torch-guest.sh (the guest's
#                    measuring script, run as PID 1 after switch_root), tests/vm/torch_report.py
#                    (its summary) and, with VM_BENCH_DIR, bench/emptyprobe; with
#                    VM_ALT_TOOL, a variant build of the tool (spyre-bpftrace.alt)
#   DIR/initramfs.cpio.gz  static busybox, tests/vm/torch-init.sh as /init, and the modules
#                    that reach the disk (virtio_blk, ext4 and what they need) of kernel KVER,
#                    from MODROOT/lib/modules, in modules.dep order (as build-initramfs.sh)
set -eu

dir=${1:?usage: rootfs.sh DIR TOOL KVER MODROOT}
tool=${2:?}
kver=${3:?}
modroot=${4:?}
here=$(cd "$(dirname "$0")/../.." && pwd)
root=$dir/root
moddir=$modroot/lib/modules/$kver

# 1. the root, once
sh "$here/tools/debian-root.sh" bookworm "$root"
if [ ! -e "$root/.torch" ]; then
	echo "rootfs: apt-get install python3-torch bpftrace in $root (once)"
	mount -t proc proc "$root/proc"
	trap 'umount "$root/proc" 2>/dev/null || true' EXIT
	chroot "$root" sh -c 'export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq &&
		apt-get install -y -qq --no-install-recommends python3-torch bpftrace' \
		>"$dir/apt.log" 2>&1 || { tail -20 "$dir/apt.log" >&2; exit 1; }
	umount "$root/proc"
	trap - EXIT
	rm -f "$root"/var/cache/apt/archives/*.deb
	rm -rf "$root"/var/lib/apt/lists/*
	touch "$root/.torch"
fi

# 2. what this build adds to it (small, rewritten every time)
file -L "$tool" | grep -q 'statically linked' || {
	echo "rootfs: $tool is not static" >&2
	exit 1
}
rm -rf "$root/opt/spyre"
mkdir -p "$root/opt/spyre" "$root/out"
strip -o "$root/opt/spyre/spyre-bpftrace" "$tool"
install -m 0755 "$here/tests/vm/torch-guest.sh" "$root/opt/spyre/torch-guest.sh"
install -m 0644 "$here/bench/torchmm.py" "$root/opt/spyre/torchmm.py"
install -m 0644 "$here/tests/vm/torch_report.py" "$root/opt/spyre/torch_report.py"
# VM_BENCH_DIR: bench/emptyprobe (linked against libbpf1, which bpftrace brings into the root)
# for the guest's phases of empty programs on the traced function
if [ -n "${VM_BENCH_DIR:-}" ] && [ -x "$VM_BENCH_DIR/emptyprobe" ]; then
	strip -o "$root/opt/spyre/emptyprobe" "$VM_BENCH_DIR/emptyprobe"
fi
# VM_ALT_TOOL: a variant build of the static tool, the guest's kind ours_alt
[ -n "${VM_ALT_TOOL:-}" ] && strip -o "$root/opt/spyre/spyre-bpftrace.alt" "$VM_ALT_TOOL"

# 3. the disk: the root's size plus room for the traces and /tmp
mb=$(($(du -sm "$root" | cut -f1) * 5 / 4 + 512))
rm -f "$dir/disk.img.tmp"
mke2fs -q -F -t ext4 -L spyre-root -d "$root" "$dir/disk.img.tmp" "${mb}M"
mv "$dir/disk.img.tmp" "$dir/disk.img"
echo "rootfs: $dir/disk.img ($mb MB)"

# 4. the initramfs: busybox, /init, the disk's modules
ir=$dir/initramfs.root
rm -rf "$ir"
mkdir -p "$ir/bin" "$ir/proc" "$ir/sys" "$ir/dev" "$ir/newroot" "$ir/lib/modules"
busybox=$(command -v busybox)
file -L "$busybox" | grep -q 'statically linked' || {
	echo "rootfs: $busybox is not static (install busybox-static)" >&2
	exit 1
}
cp "$busybox" "$ir/bin/busybox"
install -m 0755 "$here/tests/vm/torch-init.sh" "$ir/init"
: >"$ir/lib/modules/load-order"
for m in virtio_blk ext4; do
	path=$(cd "$moddir" && find kernel -name "$m.ko*" | head -n 1)
	if [ -z "$path" ]; then
		# built in: nothing to load
		grep -q "/$m.ko" "$moddir/modules.builtin" && continue
		echo "rootfs: no module $m in $moddir" >&2
		exit 1
	fi
	deps=$(sed -n "s|^$path: *||p" "$moddir/modules.dep")
	for p in $(echo "$deps" | tr ' ' '\n' | sed '/^$/d' | tac) $path; do
		q=$(echo "$p" | sed 's/\.\(xz\|zst\)$//')
		grep -qx "$q" "$ir/lib/modules/load-order" && continue
		mkdir -p "$ir/lib/modules/$(dirname "$q")"
		case $p in
		*.xz) xz -dc "$moddir/$p" >"$ir/lib/modules/$q" ;;
		*.zst) zstd -qdc "$moddir/$p" >"$ir/lib/modules/$q" ;;
		*) cp "$moddir/$p" "$ir/lib/modules/$q" ;;
		esac
		echo "$q" >>"$ir/lib/modules/load-order"
	done
done
mods=$(xargs -n 1 basename <"$ir/lib/modules/load-order" | tr '\n' ' ')
(cd "$ir" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$dir/initramfs.cpio.gz"
rm -rf "$ir"
echo "rootfs: $dir/initramfs.cpio.gz (modules: $mods)"
