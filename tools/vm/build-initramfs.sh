#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# build-initramfs.sh OUT.cpio.gz TOOL MOCK_DIR KVER [MODROOT]
#
# The guest's whole userspace: static busybox, the guest scripts from tests/vm/, the static
# spyre-bpftrace (TOOL: the binary, or its Debian package, spyre-bpftrace_*.deb, which goes to
# /opt/spyre/pkg for the guest's step install to install with busybox's dpkg), and the mock job
# exactly as the host runs it (dynamic, with its libflex.so, libspyre_comms.so.1 and
# torch_spyre/_C.so beside it) plus the glibc/libstdc++ shared objects and ld-linux it needs, at
# their host paths. The mock must stay dynamic: the tracer looks for libflex.so in
# the job's /proc/PID/maps. Also the VFIO modules of kernel KVER and their dependencies, from
# MODROOT/lib/modules (default: the host's /lib/modules).
#
# VM_BENCH_DIR (only for the opt-in `perf` step, `make vm-perf-s390x`): the per-call bench of
# that build (callbench-nocf with its libbench-nocf.so, emptyprobe), to /opt/spyre/bench.
#
# Another architecture's guest (tools/cross, `make vm-s390x`): BUSYBOX names its static busybox,
# STRIP its strip, and VM_LIBROOT the directory with its glibc and libstdc++ (the cross
# compiler's, e.g. /usr/s390x-linux-gnu): ldd cannot run a foreign binary, so the job's shared
# objects are found from the NEEDED entries of its ELF files, and go to the guest's
# /lib/TRIPLE, where that glibc's loader looks first.
set -eu

out=${1:?usage: build-initramfs.sh OUT TOOL MOCK_DIR KVER}
tool=${2:?}
mockdir=${3:?}
kver=${4:?}
modroot=${5:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
root=$out.root
moddir=$modroot/lib/modules/$kver
# insmod order comes from modules.dep, dependencies first; the IOMMU backend is per arch
# (VM_VFIO_MODULES: powerpc's is vfio_iommu_spapr_tce)
VFIO_MODULES=${VM_VFIO_MODULES:-"vfio vfio_iommu_type1 vfio-pci"}

rm -rf "$root"
mkdir -p "$root/bin" "$root/opt/spyre/mock" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" \
	"$root/lib/modules"
busybox=${BUSYBOX:-$(command -v busybox)}
file -L "$busybox" | grep -q 'statically linked' || {
	echo "build-initramfs: $busybox is not static (install busybox-static)" >&2
	exit 1
}
cp "$busybox" "$root/bin/busybox"
install -m 0755 "$here/tests/vm/init.sh" "$root/init"
for f in "$here"/tests/vm/*.sh; do
	case $f in */init.sh) ;; *) install -m 0644 "$f" "$root/opt/spyre/" ;; esac
done

case $tool in
*.deb)
	# the package as a fleet node gets it; no loose tool beside it, so that a guest that failed
	# to install it cannot trace with something else
	dpkg-deb --fsys-tarfile "$tool" | tar -xOf - ./usr/sbin/spyre-bpftrace >"$root/tool.tmp"
	file "$root/tool.tmp" | grep -q 'statically linked' || {
		echo "build-initramfs: the tool in $tool is not static" >&2
		exit 1
	}
	rm "$root/tool.tmp"
	mkdir -p "$root/opt/spyre/pkg"
	cp "$tool" "$root/opt/spyre/pkg/"
	;;
*)
	file -L "$tool" | grep -q 'statically linked' || {
		echo "build-initramfs: $tool is not static" >&2
		exit 1
	}
	# debug info is not needed in the guest and costs initramfs size (TCG unpacks it slowly)
	${STRIP:-strip} -o "$root/opt/spyre/spyre-bpftrace" "$tool"
	;;
esac
mkdir -p "$root/opt/spyre/mock/torch_spyre"
cp "$mockdir/mock-spyre-job" "$mockdir/libflex.so" "$mockdir/libspyre_comms.so.1" \
	"$root/opt/spyre/mock/"
cp "$mockdir/torch_spyre/_C.so" "$root/opt/spyre/mock/torch_spyre/"
# the exception test jobs (tests/progs/throwjob.cpp; built beside the mock by `make`): the
# same C++ runtime libraries as the mock, or the unwinder linked in; stackjob and its
# libstackrt.so (step ustack), found beside it by its rpath $ORIGIN, need only the mock's libc
for f in throwjob throwjob-static entryjob stackjob libstackrt.so; do
	[ -x "$mockdir/../tests/$f" ] && cp "$mockdir/../tests/$f" "$root/opt/spyre/"
done
bench=
if [ -n "${VM_BENCH_DIR:-}" ]; then
	mkdir -p "$root/opt/spyre/bench"
	# the library stays a shared library (its uprobes resolve through the job's maps)
	cp "$VM_BENCH_DIR/callbench-nocf" "$VM_BENCH_DIR/libbench-nocf.so" "$root/opt/spyre/bench/"
	${STRIP:-strip} -o "$root/opt/spyre/bench/emptyprobe" "$VM_BENCH_DIR/emptyprobe"
	bench=$VM_BENCH_DIR/callbench-nocf
fi

# needed ELF...: the sonames the files need, each once, recursively (the foreign-arch ldd)
needed() {
	local seen= todo="$*" f so
	while [ -n "$todo" ]; do
		set -- $todo
		f=$1
		shift
		todo="$*"
		for so in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			case " $seen " in *" $so "*) continue ;; esac
			seen="$seen $so"
			# the mock's own
			[ -e "$mockdir/$so" ] || [ -e "$mockdir/torch_spyre/$so" ] && continue
			[ -n "$bench" ] && [ -e "$VM_BENCH_DIR/$so" ] && continue
			[ -e "$VM_LIBROOT/lib/$so" ] || {
				echo "build-initramfs: $so not in $VM_LIBROOT/lib" >&2
				return 1
			}
			echo "$so"
			todo="$todo $VM_LIBROOT/lib/$so"
		done
	done
}

interp=$(readelf -l "$mockdir/mock-spyre-job" |
	sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
if [ -n "${VM_LIBROOT:-}" ]; then
	triple=$(basename "$VM_LIBROOT")
	mkdir -p "$root/lib/$triple" "$root$(dirname "$interp")"
	for so in $(needed "$mockdir"/mock-spyre-job "$mockdir"/*.so* "$mockdir"/torch_spyre/*.so \
			$bench); do
		cp -L "$VM_LIBROOT/lib/$so" "$root/lib/$triple/"
	done
	cp -L "$VM_LIBROOT/lib/$(basename "$interp")" "$root$interp"
else
	# Shared objects of the job and of its libraries (ldd lists them all), minus the mock's
	# own; with the bench, those of callbench and emptyprobe (libbpf's), minus libbench.
	for f in "$mockdir/mock-spyre-job" ${bench:+"$bench" "$VM_BENCH_DIR/emptyprobe"}; do
		ldd "$f"
	done | awk '
		$2 == "=>" && $3 ~ /^\// { print $3 }
		$1 ~ /^\// { print $1 }' | sort -u | while read -r so; do
		case $so in "$mockdir"/* | "$(cd "$mockdir" && pwd)"/*) continue ;; esac
		if [ -n "$bench" ]; then
			case $so in "$VM_BENCH_DIR"/* | "$(cd "$VM_BENCH_DIR" && pwd)"/*) continue ;; esac
		fi
		mkdir -p "$root$(dirname "$so")"
		cp -L "$so" "$root$so"
	done
fi
[ -n "$interp" ] && [ -e "$root$interp" ] || {
	echo "build-initramfs: the job's dynamic loader ($interp) is not in the initramfs" >&2
	exit 1
}

# modules: each named module after everything it depends on, each once
if [ -f "$moddir/modules.dep" ]; then
	mkdir -p "$root/lib/modules/$kver"
	: >"$root/lib/modules/load-order"
	for m in $VFIO_MODULES; do
		path=$(cd "$moddir" && find kernel -name "$m.ko*" | head -n 1)
		[ -n "$path" ] || { echo "build-initramfs: no module $m in $moddir" >&2; exit 1; }
		deps=$(sed -n "s|^$path: *||p" "$moddir/modules.dep")
		# modules.dep lists what must be loaded last first: walk it backwards
		for p in $(echo "$deps" | tr ' ' '\n' | sed '/^$/d' | tac) $path; do
			grep -qx "$p" "$root/lib/modules/load-order" && continue
			mkdir -p "$root/lib/modules/$kver/$(dirname "$p")"
			case $p in
			*.xz) xz -dc "$moddir/$p" >"$root/lib/modules/$kver/${p%.xz}" ;;
			*.zst) zstd -qdc "$moddir/$p" >"$root/lib/modules/$kver/${p%.zst}" ;;
			*) cp "$moddir/$p" "$root/lib/modules/$kver/$p" ;;
			esac
			echo "$p" >>"$root/lib/modules/load-order"
		done
	done
	sed -i 's/\.\(xz\|zst\)$//' "$root/lib/modules/load-order"
fi

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
rm -rf "$root"
echo "build-initramfs: $out ($(du -k "$out" | cut -f1) KiB)"
