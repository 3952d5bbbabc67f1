#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# deps.sh build|test: the Debian packages of one need, installed when missing (without
# recommends for "build": clang's alone would bring llvm-14-dev and more). `make demo` and
# `make deb` want only "build": the tool, the mock job and the package; `make test` wants "test"
# too (its QEMU guests' and the cross builds' packages: tools/vm/deps.sh, tools/cross/deps.sh).
set -eu

case ${1:-} in
# clang, llvm (llvm-strip), bpftool: the BPF objects and skeletons; gcc and g++ (the mock
# runtime is C++, the tool links libstdc++): the userspace; the -dev packages: the tool's
# libraries, static archives included (the packaged tool is linked statically)
build)	set -- "build deps" clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev \
		libcapstone-dev gcc g++ make ;;
# bats: e2e; libclang-rt-14-dev: libFuzzer; valgrind: check-sanitize; python3 and its
# modules: the trace checkers, check-deploy, the torch tests; lintian, debootstrap, man-db:
# the package's tests (tests/e2e/package.bats, manpage.bats); tmux: the status line on a
# terminal (longrun.bats). With recommends, as before the
# split: the tests were written on such a machine.
test)	export APT_RECOMMENDS=1
	set -- "test deps" bats pkg-config libclang-rt-14-dev valgrind python3 \
		python3-prometheus-client python3-yaml python3-torch lintian debootstrap man-db tmux ;;
*)	echo "usage: deps.sh build|test" >&2; exit 2 ;;
esac
exec sh "$(dirname "$0")/vm/apt-install.sh" "$@"
