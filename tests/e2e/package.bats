#!/usr/bin/env bats
# The Debian package (`make deb`, mk/deb.mk): what it holds, lintian, and an install into a
# clean Debian bookworm root (debootstrap, made once under $BUILD/bookworm-root) where the
# installed tool, its man page and `list -p` against the mock job work, then a removal that
# leaves nothing behind. The root is reused through a throwaway overlay: every run starts clean.

load helpers

BROOT=$BUILD/bookworm-root

setup_file() {
	make -C "$ROOT" --no-print-directory BUILD="$BUILD" deb >&3
	sh "$ROOT/tools/debian-root.sh" bookworm "$BROOT" man-db >&3
}

deb_file() {
	ls "$BUILD"/deb/spyre-bpftrace_*_amd64.deb
}

@test "the amd64 package holds the static tool, the tables, the man page and the deploy examples, and depends on nothing" {
	[ "$(uname -m)" = x86_64 ] || skip "amd64 host only"
	deb=$(deb_file)
	[ "$(dpkg-deb -f "$deb" Architecture)" = amd64 ]
	[ -z "$(dpkg-deb -f "$deb" Depends)" ]
	[[ "$(dpkg-deb -f "$deb" Built-Using)" == *"libbpf (= "* ]]
	dpkg-deb -c "$deb" | awk '{ print $6 }' > "$BATS_TEST_TMPDIR/files"
	for f in ./usr/sbin/spyre-bpftrace ./usr/share/man/man8/spyre-bpftrace.8.gz \
		 ./usr/share/spyre-bpftrace/spyre-default.probes ./usr/share/spyre-bpftrace/torch.probes \
		 ./usr/share/doc/spyre-bpftrace/copyright ./usr/share/doc/spyre-bpftrace/changelog.gz \
		 ./usr/share/doc/spyre-bpftrace/examples/spyre-bpftrace.service \
		 ./usr/share/doc/spyre-bpftrace/examples/daemonset.yaml \
		 ./usr/share/bash-completion/completions/spyre-bpftrace; do
		grep -qx -- "$f" "$BATS_TEST_TMPDIR/files" || { echo "missing $f"; false; }
	done
	dpkg-deb -x "$deb" "$BATS_TEST_TMPDIR/x"
	file "$BATS_TEST_TMPDIR/x/usr/sbin/spyre-bpftrace" | grep -q 'statically linked'
	# the package's version (0.1+gitDATE.HASH[+dirty]) names the commit its tool reports
	ver=$(dpkg-deb -f "$deb" Version)
	hash=${ver##*.}
	[[ "$("$BATS_TEST_TMPDIR/x/usr/sbin/spyre-bpftrace" --version)" == \
		"spyre-bpftrace ${hash%+dirty}"* ]]
	# the shipped tables are the compiled-in ones
	cmp "$BATS_TEST_TMPDIR/x/usr/share/spyre-bpftrace/torch.probes" "$ROOT/user/resolve/torch.probes"
	# the example unit runs the packaged binary
	grep -q '^ExecStart=/usr/sbin/spyre-bpftrace ' \
		"$BATS_TEST_TMPDIR/x/usr/share/doc/spyre-bpftrace/examples/spyre-bpftrace.service"
}

@test "lintian finds nothing in the package but the tags its overrides explain" {
	command -v lintian >/dev/null || skip "no lintian (make deps-test installs it)"
	run lintian --pedantic "$(deb_file)"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$(echo "$output" | grep -v '^running with root privileges')" ]
	# what is overridden is said, with a reason, in the package
	grep -B1 -q statically-linked-binary "$ROOT/tools/deb/lintian-overrides"
}

@test "the package installs into a clean bookworm root, its tool, man page and list -p work there, and dpkg -r removes it all" {
	[ "$(uname -m)" = x86_64 ] || skip "amd64 host only"
	r=$BATS_TEST_TMPDIR/root
	mkdir -p "$r" "$BATS_TEST_TMPDIR/upper" "$BATS_TEST_TMPDIR/work"
	mount -t overlay overlay \
		-o "lowerdir=$BROOT,upperdir=$BATS_TEST_TMPDIR/upper,workdir=$BATS_TEST_TMPDIR/work" "$r"
	mount --bind /proc "$r/proc"
	mount --bind /sys "$r/sys"
	cp "$(deb_file)" "$r/tmp/p.deb"
	# nothing of ours there before
	[ ! -e "$r/usr/sbin/spyre-bpftrace" ]
	run chroot "$r" dpkg -i /tmp/p.deb
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(chroot "$r" spyre-bpftrace --version)" = "$("$TOOL" --version)" ]
	MANWIDTH=80 chroot "$r" man spyre-bpftrace > "$BATS_TEST_TMPDIR/man.txt" \
		2>"$BATS_TEST_TMPDIR/man.err"
	grep -q '^SYNOPSIS' "$BATS_TEST_TMPDIR/man.txt"
	grep -q -- '--nest-tolerance' "$BATS_TEST_TMPDIR/man.txt"
	# the mock job runs outside the root: the tool in it sees the job through /proc
	start_job
	run chroot "$r" spyre-bpftrace list -v -p "$JOB_PID"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"process $JOB_PID (mock-spyre-job): "* ]]
	[[ "$output" == *"flex::RuntimeStream::synchronize"* ]]
	stop_job
	run chroot "$r" dpkg -r spyre-bpftrace
	[ "$status" -eq 0 ]
	umount "$r/sys" "$r/proc"
	umount "$r"
	# what the install wrote is gone: left in the overlay are dpkg's and man-db's own records
	left=$(cd "$BATS_TEST_TMPDIR/upper" && find . ! -type d ! -path './var/lib/dpkg/*' \
		! -path './var/cache/man/*' ! -path './var/log/*' ! -path './tmp/*' \
		! -path './var/cache/debconf/*' ! -path './proc/*' ! -path './sys/*')
	echo "left: $left"
	[ -z "$left" ]
	# and dpkg knows it as removed
	! grep -q 'spyre-bpftrace' "$BATS_TEST_TMPDIR/upper/var/lib/dpkg/status" ||
		! grep -A1 '^Package: spyre-bpftrace' "$BATS_TEST_TMPDIR/upper/var/lib/dpkg/status" |
			grep -q 'install ok installed'
}

# The other architectures' packages: cross-built here (mk/cross.mk; their guests install and
# run them, tests/e2e/vm.bats), held to the same rules as amd64's.
@test "the s390x and ppc64el packages carry their architecture's static tool, depend on nothing and are lintian clean" {
	command -v lintian >/dev/null || skip "no lintian (make deps-test installs it)"
	local arch debarch machine deb bu
	for arch in s390x powerpc; do
		case $arch in
		s390x) debarch=s390x machine='IBM S/390' ;;
		powerpc) debarch=ppc64el machine='64-bit LSB .*PowerPC' ;;
		esac
		run make -s -C "$ROOT" ARCH=$arch deb
		echo "$output"
		[ "$status" -eq 0 ]
		deb=$(ls "$ROOT"/build-$arch/deb/spyre-bpftrace_*_$debarch.deb)
		[ "$(dpkg-deb -f "$deb" Architecture)" = $debarch ]
		[ -z "$(dpkg-deb -f "$deb" Depends)" ]
		# the static archives came from that architecture's .debs and cross toolchain
		bu=$(dpkg-deb -f "$deb" Built-Using)
		[[ "$bu" == *"libbpf (= "* && "$bu" == *"gcc-12-cross (= "* ]]
		rm -rf "$BATS_TEST_TMPDIR/$arch"
		dpkg-deb -x "$deb" "$BATS_TEST_TMPDIR/$arch"
		file "$BATS_TEST_TMPDIR/$arch/usr/sbin/spyre-bpftrace" |
			grep -E "$machine.*statically linked"
		# the man page is the one the amd64 build makes: generated, never empty
		zcat "$BATS_TEST_TMPDIR/$arch/usr/share/man/man8/spyre-bpftrace.8.gz" |
			grep -q -- 'nest\\-tolerance'
		run lintian --pedantic "$deb"
		echo "$output"
		[ "$status" -eq 0 ]
		[ -z "$(echo "$output" | grep -v '^running with root privileges')" ]
	done
}

teardown() {
	local r=$BATS_TEST_TMPDIR/root
	for m in "$r/sys" "$r/proc" "$r"; do
		mountpoint -q "$m" 2>/dev/null && umount -l "$m"
	done
	[ -n "${JOB_PID:-}" ] && kill -KILL "$JOB_PID" 2>/dev/null
	true
}
