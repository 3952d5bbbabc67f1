#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Debian packages the s390x and ppc64le cross builds and their tests need: the cross compilers
# (they bring each arch's libc6-dev), qemu-user-static (the unit tests run under it) and
# bookworm's system emulators (QEMU 7.2): the VM tests run bookworm-backports' QEMU 10, unpacked
# by tools/vm/qemu-backports.sh, on the shared libraries these bring (7.2 itself steps a probed
# s390x return wrong: docs/vm-test.md). The target's libraries (libbpf, libelf, zlib, ...) are not
# installed: tools/cross/sysroot.sh unpacks them into a private sysroot. Idempotent: apt runs
# only when something is missing.
set -eu

exec sh "$(dirname "$0")/../vm/apt-install.sh" "cross deps" gcc-s390x-linux-gnu \
	g++-s390x-linux-gnu gcc-powerpc64le-linux-gnu g++-powerpc64le-linux-gnu qemu-user-static \
	qemu-system-misc qemu-system-ppc
